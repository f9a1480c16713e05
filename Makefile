# cell - the one build. `make`, `make test`, `make asan`, `make tsan`, `make bench`, `make docs`,
# `make install PREFIX=...`, `make deps`. Overridable: LUA (lua5.4|luajit),
# PREFIX, LUA_INCDIR, CC, CFLAGS, LDFLAGS.

LUA ?= lua5.4
# The rockspec passes LuaRocks' own Lua (ROCK_LUA=$(LUA), its interpreter,
# and ROCK_LUA_INCDIR=$(LUA_INCDIR)), so `luarocks make` builds for the Lua
# whose tree it installs into: lua5.4 for --lua-version=5.4, LuaJIT for 5.1
# (the 5.1 tree is LuaJIT's; cell does not run on Lua 5.1 itself).
ifneq ($(ROCK_LUA),)
  LUA = $(if $(findstring 5.4,$(notdir $(ROCK_LUA))),lua5.4,luajit)
  ifeq ($(LUA),lua5.4)
    LUA_INCDIR ?= $(ROCK_LUA_INCDIR)
  else
    LUA_INCDIR ?= $(if $(wildcard $(ROCK_LUA_INCDIR)/luajit.h),$(ROCK_LUA_INCDIR),/usr/include/luajit-2.1)
  endif
endif
PREFIX ?= /usr/local
CC ?= cc
CFLAGS ?= -O2 -g
LDFLAGS ?=

ifeq ($(LUA),luajit)
  LUA_INCDIR ?= /usr/include/luajit-2.1
  LUA_LIB ?= -lluajit-5.1
  LUA_VERSION = 5.1
  LUA_BIN = luajit
else
  LUA_INCDIR ?= /usr/include/lua5.4
  LUA_LIB ?= -llua5.4
  LUA_VERSION = 5.4
  LUA_BIN = lua5.4
endif
BLAS_INCDIR ?= /usr/include/x86_64-linux-gnu
# OpenBLAS's OpenMP build where it is installed (Debian: libopenblas-openmp-dev):
# its gemms then run on the same OpenMP threads as cell's own loops, one pool
# instead of two sets of workers spinning against each other on a small
# machine, and cell_set_num_threads(1) leaves no BLAS thread behind. Else the
# default libopenblas (the pthread build, with its own threads), and always
# under clang, whose OpenMP is LLVM's libomp, not the libgomp that build uses.
BLAS_OMP_DIR ?= /usr/lib/x86_64-linux-gnu/openblas-openmp
BLAS_OMP = $(if $(findstring clang,$(CC)),,$(wildcard $(BLAS_OMP_DIR)/libopenblas.so))
BLAS_LIB ?= $(if $(BLAS_OMP),-L$(BLAS_OMP_DIR) -Wl$(comma)-rpath$(comma)$(BLAS_OMP_DIR) -lopenblas,-lopenblas)
comma := ,
# src/io: zlib reads gzip'd data sets (safetensors headers are parsed by
# src/io itself); libpng and libjpeg-turbo decode images (cell.dataset.vision).
# The image libraries are compiled against (their headers) but not linked:
# src/io/codecs.c dlopen()s them at the first decode, so a program that
# decodes no image never maps them.
# The rockspec passes the -I and -L flags LuaRocks finds; the defaults suit
# Debian, where all live in the compiler's own search paths.
IO_CFLAGS ?=
IO_LIBS ?= -lz -ldl

# Flags the build needs, kept apart from the user's CFLAGS.
WARN = -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes -Werror=implicit-function-declaration
MANDATORY = -std=gnu99 -fPIC -fvisibility=hidden -ffunction-sections -fopenmp -Iinclude -I$(BLAS_INCDIR) $(IO_CFLAGS) $(WARN)
ALL_CFLAGS = $(MANDATORY) $(CFLAGS)
LIBS = $(BLAS_LIB) $(IO_LIBS) -lm -lpthread -fopenmp

BUILD ?= build
ENGINE_SRC = $(wildcard src/core/*.c src/ops/*.c src/backend/*.c src/autograd/*.c src/io/*.c)
BIND_SRC = $(wildcard src/lua/*.c)
REPL_SRC = $(wildcard src/repl/*.c)
ENGINE_OBJ = $(ENGINE_SRC:%.c=$(BUILD)/%.o)
BIND_OBJ = $(BIND_SRC:%.c=$(BUILD)/$(LUA)/%.o)
REPL_OBJ = $(REPL_SRC:%.c=$(BUILD)/$(LUA)/%.o)
HEADERS = $(filter-out src/cuda/%,$(wildcard include/*.h src/*/*.h))
# cell.h includes the family headers (cell_conv.h, cell_io.h, ...): install all.
PUBLIC_HEADERS = $(wildcard include/*.h)

LIBCELL_A = $(BUILD)/libcell.a
LIBCELL_SO = $(BUILD)/libcell.so
MODULE = $(BUILD)/$(LUA)/cell/core.so
# cell.ompenv (src/lua/ompenv/ompenv.c): sets OpenMP's wait policy before
# cell.core loads OpenMP, so it is linked without OpenMP (no -fopenmp).
OMPENV_MODULE = $(BUILD)/$(LUA)/cell/ompenv.so
# One executable per host Lua, so a LuaJIT build does not replace the 5.4 one.
# Other builds (make asan) keep theirs under their own folder.
CELL_BIN = $(if $(filter build,$(BUILD)),bin,$(BUILD)/bin)/cell$(if $(filter luajit,$(LUA)),-luajit,)
CTEST = $(BUILD)/test_engine
# The binding and the engine as one static library, for C hosts that embed
# Lua (cell_lua.h) in a single binary, and the embedding examples
# (examples/embed/): game_loop needs no Lua, host is built for each Lua.
LIBCELL_LUA = $(BUILD)/$(LUA)/libcell-$(LUA).a
EMBED_GAME = $(BUILD)/embed/game_loop
EMBED_HOST = $(BUILD)/$(LUA)/embed/host
# Lua states drawing random numbers alone, interleaved and on threads at
# once (tests/lua/states.c; spec/rng_spec.lua runs it, make tsan too).
TEST_STATES = $(BUILD)/$(LUA)/test_states
CELL_VERSION = $(shell sed -n 's/^\#define CELL_VERSION "\(.*\)"$$/\1/p' include/cell.h)

# cell.communication's MPI layer (src/comm): a Lua module of its own, built
# only where mpicc reports MPI's flags (Open MPI from Debian: libopenmpi-dev);
# libcell and cell.core never link MPI. COMM_MODULE is empty elsewhere.
MPI_CFLAGS ?= $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS ?= $(shell mpicc --showme:link 2>/dev/null)
COMM_SRC = $(wildcard src/comm/*.c)
COMM_OBJ = $(COMM_SRC:%.c=$(BUILD)/$(LUA)/%.o)
COMM_MODULE = $(if $(MPI_LIBS),$(BUILD)/$(LUA)/cell/comm_mpi.so,)
MPIRUN ?= mpirun --oversubscribe $(if $(filter 0,$(shell id -u)),--allow-run-as-root,)

# cell.cuda (src/cuda): the GPU device module, built by `make cuda` only
# (nvcc on the PATH or in /usr/local/cuda); `make` and libcell never touch
# CUDA. Host C with -Werror, device code with nvcc -Werror all-warnings;
# links cudart, cuBLAS and cuDNN. CUDA_ARCH: sm_90 (H100/H200) plus its PTX.
NVCC ?= $(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc))
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
# NCCL (cell.communication's transport for GPU tensors): src/cuda/nccl.c
# joins cell.cuda where nccl.h is found, with src/comm/tensor_buf.c (the
# tensor-as-buffer code it shares with the MPI module); elsewhere it is left out.
NCCL_H ?= $(firstword $(wildcard $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h))
CUDA_C = $(filter-out $(if $(NCCL_H),,src/cuda/nccl.c),$(wildcard src/cuda/*.c))
CUDA_OBJ = $(patsubst %.c,$(BUILD)/$(LUA)/%.o,$(CUDA_C)) $(patsubst %.cu,$(BUILD)/$(LUA)/%.cu.o,$(wildcard src/cuda/*.cu)) $(if $(NCCL_H),$(BUILD)/$(LUA)/src/cuda/comm_tensor_buf.o,)
CUDA_MODULE = $(BUILD)/$(LUA)/cell/cuda.so
# The devices and kernels without Lua: libcell_cuda.so beside libcell.so, the
# module C hosts load with cell_device_load("cuda"); cell/cuda.so (lcuda.c,
# and the NCCL layer with the tensor-buffer code, which speak Lua) is the
# Lua face over it.
CUDA_LIB = $(BUILD)/libcell_cuda.so
CUDA_LUA_OBJ = $(BUILD)/$(LUA)/src/cuda/lcuda.o $(if $(NCCL_H),$(BUILD)/$(LUA)/src/cuda/nccl.o $(BUILD)/$(LUA)/src/cuda/comm_tensor_buf.o,)
CUDA_LIB_OBJ = $(filter-out $(CUDA_LUA_OBJ),$(CUDA_OBJ))
CUDA_LIBS = -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudnn -lcublas -lcudart -lstdc++ $(if $(NCCL_H),-lnccl,)

.PHONY: all cuda test-cuda bench-cuda test ctest test-mpi bench-mpi test-device spec asan tsan tsan-spec tsan-spec-only fuzz bench install uninstall deps bench-deps clean demo rock-check embed bench-embed docs FORCE

all: $(LIBCELL_A) $(LIBCELL_SO) $(MODULE) $(OMPENV_MODULE) $(COMM_MODULE) $(CELL_BIN) $(LIBCELL_LUA) $(EMBED_GAME) $(EMBED_HOST) $(TEST_STATES)

$(BUILD)/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/$(LUA)/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -I$(LUA_INCDIR) -c $< -o $@

$(LIBCELL_A): $(ENGINE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# nodelete: Lua unloads C modules at lua_close, and unloading the OpenMP
# runtime under its live worker threads crashes the process at exit.
# TEXT_LAYOUT: src/layout.ld gathers the code the loader runs at load (the
# multi-ISA kernels' resolvers) and the code every op runs, each in one
# place, so a run makes less of the engine's code resident (peak RSS).
TEXT_LAYOUT = -Wl,-T,$(CURDIR)/src/layout.ld
$(LIBCELL_SO): $(ENGINE_OBJ) src/layout.ld
	$(CC) -shared $(LDFLAGS) $(TEXT_LAYOUT) -Wl,-soname,libcell.so -Wl,-z,nodelete -o $@ $(ENGINE_OBJ) $(LIBS)

# The module links libcell.so, so that C hosts, Lua and LuaJIT's FFI share
# one engine binary (one allocator, one set of tensors). It finds it beside
# itself ($ORIGIN: `make install` and the rock put a copy there) or two
# folders up (build/: build/<lua>/cell/core.so). STATIC=1 links the engine
# into the module instead, for a single file to embed.
STATIC ?=
MODULE_ENGINE = $(if $(STATIC),$(LIBCELL_A),$(LIBCELL_SO) -Wl,-rpath,'$$ORIGIN:$$ORIGIN/../..')
$(MODULE): $(BIND_OBJ) $(if $(STATIC),$(LIBCELL_A),$(LIBCELL_SO))
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) $(if $(STATIC),$(TEXT_LAYOUT)) -Wl,-z,nodelete -o $@ $(BIND_OBJ) $(MODULE_ENGINE) $(LIBS)

$(OMPENV_MODULE): src/lua/ompenv/ompenv.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu99 -fPIC $(WARN) $(CFLAGS) -I$(LUA_INCDIR) -shared $(LDFLAGS) -o $@ $<

$(BUILD)/$(LUA)/src/comm/%.o: src/comm/%.c $(wildcard src/comm/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(MPI_CFLAGS) -I$(LUA_INCDIR) -c $< -o $@

$(BUILD)/$(LUA)/cell/comm_mpi.so: $(COMM_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-z,nodelete -o $@ $(COMM_OBJ) $(MPI_LIBS)

$(BUILD)/$(LUA)/src/cuda/%.o: src/cuda/%.c $(HEADERS) $(wildcard src/cuda/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Werror -I$(CUDA_HOME)/include -I$(LUA_INCDIR) -c $< -o $@

$(BUILD)/$(LUA)/src/cuda/comm_tensor_buf.o: src/comm/tensor_buf.c src/comm/tensor_buf.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Werror -I$(LUA_INCDIR) -c $< -o $@

$(BUILD)/$(LUA)/src/cuda/%.cu.o: src/cuda/%.cu src/cuda/gpu_kern.h src/cuda/gpu_philox.h src/cuda/gpu_grid.cuh
	@mkdir -p $(dir $@)
	$(NVCC) -O2 -std=c++17 $(CUDA_ARCH) -Werror all-warnings -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra,-Werror -c $< -o $@

$(CUDA_LIB): $(CUDA_LIB_OBJ) $(LIBCELL_SO)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libcell_cuda.so -Wl,-z,nodelete -o $@ $(CUDA_LIB_OBJ) $(LIBCELL_SO) -Wl,-rpath,'$$ORIGIN' $(CUDA_LIBS) -lpthread

$(CUDA_MODULE): $(CUDA_LUA_OBJ) $(CUDA_LIB) $(LIBCELL_SO)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-z,nodelete -o $@ $(CUDA_LUA_OBJ) $(CUDA_LIB) $(LIBCELL_SO) -Wl,-rpath,'$$ORIGIN:$$ORIGIN/../..' $(CUDA_LIBS) -lpthread

cuda: all
	@[ -n "$(NVCC)" ] || { echo "cuda: nvcc not found (install the CUDA toolkit)"; exit 1; }
	$(MAKE) --no-print-directory $(CUDA_MODULE) $(BENCH_CUDA_GEMM)

# cuBLAS called directly (bench/cuda_gemm.c), the reference for
# bench/cuda_gemm.lua's figures through cell.cuda (needs a GPU to run).
BENCH_CUDA_GEMM = $(BUILD)/bench_cuda_gemm
$(BENCH_CUDA_GEMM): bench/cuda_gemm.c
	$(CC) -std=gnu99 -O2 -Wall -Wextra -Werror -I$(CUDA_HOME)/include $< -o $@ $(CUDA_LIBS)
bench-cuda: cuda $(BENCH_CUDA_GEMM)
	$(BENCH_CUDA_GEMM)
	$(SPEC_ENV) $(CELL_BIN) bench/cuda_gemm.lua

# cell.cuda's specs (spec/cuda/*_cuda.lua): on a machine without a GPU they
# check the module loads and refuses the device, and print how many GPU
# specs they skipped. `make test` runs them too when cuda.so was built.
# tests/cuda/load_cuda.c: a C host (libcell.so, no Lua) loads the GPU with
# cell_device_load("cuda"); without a GPU it checks the RuntimeError.
# tests/cuda/emulate_kernels.sh: the pooling, batch norm and attention
# kernels run on the host (one-thread emulation) against the CPU engine;
# tests/cuda/host_gpu.sh: the GPU specs against the module built with its
# device code on the host and fake CUDA libraries (no GPU needed).
CUDA_LOAD_TEST = $(BUILD)/test_load_cuda
$(CUDA_LOAD_TEST): tests/cuda/load_cuda.c $(HEADERS) $(LIBCELL_SO)
	$(CC) $(ALL_CFLAGS) -Werror $< -o $@ $(LIBCELL_SO) -Wl,-rpath,'$$ORIGIN' -lm
test-cuda: cuda $(CUDA_LOAD_TEST)
	$(CUDA_LOAD_TEST)
	BUILD=$(BUILD) sh tests/cuda/emulate_kernels.sh
	BUILD=$(BUILD) LUA=$(LUA) CUDA_HOME=$(CUDA_HOME) sh tests/cuda/host_gpu.sh
	$(SPEC_ENV) $(LUA_BIN) /usr/bin/busted --pattern=_cuda spec/cuda

$(CELL_BIN): $(REPL_OBJ) $(BIND_OBJ) $(LIBCELL_A)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(REPL_OBJ) $(BIND_OBJ) $(LIBCELL_A) $(LUA_LIB) -lreadline $(LIBS) -ldl -Wl,-E

$(LIBCELL_LUA): $(BIND_OBJ) $(ENGINE_OBJ)
	rm -f $@ && ar rcs $@ $^

# cell_openlibs looks for the Lua files where `make install` puts them; the
# stamp changes (and lembed.o is rebuilt) when LUA_SHARE does, as in
# `make install PREFIX=...` after a plain `make`.
LUA_SHARE_STAMP = $(BUILD)/$(LUA)/lua-share.stamp
$(LUA_SHARE_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(LUA_SHARE)' | cmp -s - $@ 2>/dev/null || echo '$(LUA_SHARE)' >$@
$(BUILD)/$(LUA)/src/lua/lembed.o: $(LUA_SHARE_STAMP)
$(BUILD)/$(LUA)/src/lua/lembed.o: ALL_CFLAGS += -DCELL_LUA_DIR='"$(LUA_SHARE)"'
# The optimizer steps' vector loops take sqrt as one instruction (src/ops/optim.c).
$(BUILD)/src/ops/optim.o: ALL_CFLAGS += -fno-math-errno
FORCE:

$(EMBED_GAME): examples/embed/game_loop.c $(HEADERS) $(LIBCELL_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $< -o $@ $(LIBCELL_A) $(LIBS)

# -Wl,-E: a LuaJIT script's cell.ffi finds the engine in the executable.
$(EMBED_HOST): examples/embed/host.c $(HEADERS) $(LIBCELL_LUA)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -I$(LUA_INCDIR) $(LDFLAGS) $< -o $@ $(LIBCELL_LUA) $(LUA_LIB) $(LIBS) -ldl -Wl,-E

$(TEST_STATES): tests/lua/states.c $(HEADERS) $(LIBCELL_LUA)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -I$(LUA_INCDIR) $(LDFLAGS) $< -o $@ $(LIBCELL_LUA) $(LUA_LIB) $(LIBS) -ldl

# The device modules cell_device_load's test loads (tests/modules): linked
# against nothing, they take the engine from the test binary (-Wl,-E).
TEST_MODULES = $(patsubst %,$(BUILD)/test_modules/libcell_%.so,testdev noentry failing)
$(BUILD)/test_modules/libcell_%.so: tests/modules/device_module.c include/cell.h include/cell_device.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DMODULE_$* -shared $(LDFLAGS) $< -o $@

$(CTEST): $(wildcard tests/*.c) $(wildcard tests/*.h) $(LIBCELL_A) $(TEST_MODULES)
	$(CC) $(ALL_CFLAGS) -Isrc -DCELL_TEST_MODULES='"$(CURDIR)/$(BUILD)/test_modules"' $(wildcard tests/*.c) -o $@ $(LIBCELL_A) $(LIBS) -Wl,-E

# Specs run against the freshly built module and the source Lua files.
SPEC_ENV = LUA_PATH="lua/?.lua;lua/?/init.lua;spec/?.lua;spec/?/init.lua;;" LUA_CPATH="$(BUILD)/$(LUA)/?.so;;" CELL_BIN="$(CURDIR)/$(CELL_BIN)" CELL_LUA="$(LUA_BIN)" CELL_TEST_DEVICE=1

# Every function src/layout.ld names exists in the objects (a renamed one
# would leave its group unseen). The names are GCC's (clang inlines some
# whole, tensor_over, leaving nothing to place), so not under clang.
LAYOUT_NAMES_CHECK = $(if $(findstring clang,$(CC)),,sh tests/layout_names.sh --self-test src/layout.ld $(ENGINE_OBJ))
test: all $(CTEST)
	sh tests/layering.sh
	$(LAYOUT_NAMES_CHECK)
	$(CTEST)
	$(MAKE) --no-print-directory embed
	sh tests/specs_selftest.sh $(LUA_BIN)
	$(SPEC_ENV) sh tests/specs.sh $(LUA_BIN)
	@if [ -f $(CUDA_MODULE) ]; then $(SPEC_ENV) $(LUA_BIN) /usr/bin/busted --pattern=_cuda spec/cuda; fi
	@if [ -n "$(COMM_MODULE)" ]; then $(MAKE) --no-print-directory test-mpi; \
	else echo "test: skipped test-mpi: MPI not found (no mpicc): install libopenmpi-dev and openmpi-bin (make deps)"; fi

ctest: $(CTEST)
	$(CTEST)

# cell.communication on MPI (needs libopenmpi-dev and openmpi-bin): the
# specs of spec/mpi/*_mpi.lua run by busted on each of 2 ranks (a failure
# on any rank fails the job: its exit aborts the others), then
# spec/mpi/launch_jobs.lua starts whole jobs (a rank raising mid-step,
# 3 ranks) from one process. timeout: a hang fails rather than waits.
test-mpi: all
	@[ -n "$(COMM_MODULE)" ] || { echo "test-mpi: MPI not found (no mpicc): install libopenmpi-dev and openmpi-bin (make deps)"; exit 1; }
	$(SPEC_ENV) timeout 600 $(MPIRUN) -np 2 $(LUA_BIN) /usr/bin/busted --pattern=_mpi spec/mpi
	$(SPEC_ENV) MPIRUN="$(MPIRUN)" $(LUA_BIN) /usr/bin/busted --pattern=_jobs spec/mpi

# The specs again with every tensor on the test device (src/ops/testdev.c):
# its memory faults when host code touches it without the device's copies.
# DEVICE_SPECS: the whole suite (spec/) unless narrowed, e.g.
# `make test-device DEVICE_SPECS=spec/tensor_spec.lua`; files added to it
# are under spec/ and run once. Specs tagged #cpu cannot run there (each
# says why: the host's own memory, the CPU allocator's counts).
DEVICE_SPECS ?= spec
DEVICE_RUN = $(if $(filter spec spec/,$(DEVICE_SPECS)),spec,$(DEVICE_SPECS))
test-device: all
	$(SPEC_ENV) CELL_DEVICE=TEST sh tests/specs.sh $(LUA_BIN) --exclude-tags=cpu $(DEVICE_RUN)

spec: all $(CTEST)
	$(SPEC_ENV) sh tests/specs.sh $(LUA_BIN)

# AddressSanitizer + UBSan over the C tests and the whole spec suite, with
# leak detection in both. The Lua interpreter is not instrumented, so the
# runtime is preloaded. tests/lsan.supp names the leaks that belong to
# the interpreter and the libraries under it, each with why; none of ours.
LSAN_ENV = LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0
asan:
	$(MAKE) BUILD=build-asan CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  LDFLAGS="-fsanitize=address,undefined" all build-asan/test_engine
	ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 $(LSAN_ENV) build-asan/test_engine
	ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 $(LSAN_ENV) SPEC_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" \
	  $(MAKE) --no-print-directory BUILD=build-asan spec-only

spec-only:
	$(SPEC_ENV) sh tests/specs.sh $(LUA_BIN)

# ThreadSanitizer over the C tests (tests/test_rng.c runs 4 generators on 4
# threads at once, tests/test_autograd_threads.c 4 backward passes, the
# kernels run their OpenMP loops on 2 threads) and the
# Lua states on threads (tests/lua/states.c). Built with clang, so that
# OpenMP is LLVM's libomp: it loads its Archer tool under TSan, which tells
# TSan about OpenMP's barriers and hand-offs. gcc's libgomp is not built
# with TSan, so each parallel loop would be reported as a race (a false
# report) and only OMP_NUM_THREADS=1 would pass, checking no parallel loop.
# ignore_noninstrumented_modules=1: TSan then skips the accesses made by
# libraries not built with it (OpenBLAS's worker threads, libomp's own
# locks, the Lua interpreter); our code's accesses are all checked.
# allocator_may_return_null=1: some tests ask for sizes no allocator can
# give, on purpose, and expect a MemoryError.
TSAN_CC ?= clang
TSAN_ENV = TSAN_OPTIONS="halt_on_error=1 ignore_noninstrumented_modules=1 allocator_may_return_null=1"
TSAN_FLAGS = CC=$(TSAN_CC) CFLAGS="-O1 -g -fsanitize=thread -fno-omit-frame-pointer -Wno-pass-failed" \
  LDFLAGS="-fsanitize=thread"
tsan:
	$(MAKE) BUILD=build-tsan $(TSAN_FLAGS) build-tsan/test_engine build-tsan/$(LUA)/test_states
	$(TSAN_ENV) build-tsan/test_engine
	$(TSAN_ENV) CELL_LUA_DIR=lua build-tsan/$(LUA)/test_states
	$(MAKE) --no-print-directory tsan-spec

# ThreadSanitizer over the specs of the threaded parts: the data
# pipeline's worker threads (spec/dataset/workers_spec.lua, pipeline_spec.lua,
# image_folder_spec.lua, vision_spec.lua) and the kernels' OpenMP loops at 2
# threads (spec/ops/threads_spec.lua; its OpenMP wait-policy checks start
# plain lua5.4 and are left out). busted runs in the cell executable built
# with TSan (a Lua 5.4 interpreter with the engine built in and clang's TSan
# runtime linked in): clang's shared TSan runtime cannot be preloaded into
# the plain interpreter (it crashes at start), and gcc's TSan would need
# libgomp, whose barriers TSan does not see. With clang, OpenMP is libomp,
# which loads Archer, so parallel loops need no suppressions;
# tests/tsan.supp is there for reports that are not cell's (each entry with
# why; none today). TSAN_SPECS narrows or widens the list; about half a
# minute of CPU.
TSAN_SPECS ?= spec/dataset/workers_spec.lua spec/dataset/pipeline_spec.lua spec/dataset/image_folder_spec.lua \
  spec/dataset/vision_spec.lua spec/ops/threads_spec.lua
tsan-spec:
	$(MAKE) --no-print-directory BUILD=build-tsan LUA=lua5.4 $(TSAN_FLAGS) build-tsan/bin/cell build-tsan/lua5.4/cell/ompenv.so
	$(MAKE) --no-print-directory BUILD=build-tsan LUA=lua5.4 tsan-spec-only

tsan-spec-only:
	$(SPEC_ENV) OMP_NUM_THREADS=2 \
	  TSAN_OPTIONS="halt_on_error=1 ignore_noninstrumented_modules=1 allocator_may_return_null=1 suppressions=$(CURDIR)/tests/tsan.supp" \
	  $(CELL_BIN) /usr/bin/busted --filter-out="wait policy" $(TSAN_SPECS)

# libFuzzer targets (tests/fuzz/) over the engine built with clang, ASan and
# UBSan: the safetensors reader, the IDX reader (plain and gzip'd input) and
# the IDX reader behind a valid gzip layer, the PNG/JPEG decoders and the vision
# transforms (fuzz_images). Each runs FUZZ_SECONDS, seeded
# with the committed fixtures; new inputs go to build-fuzz/corpus-*, crashes
# to build-fuzz/ (crash-*), and a crash fails the target (tests/fuzz/run.sh).
# The targets run a processor each, as many at once as there are.
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_TARGETS = safetensors idx idx_gz images
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# Coverage (what steers libFuzzer) and -O1 only where the targets aim: the
# readers, decoders and transforms (src/io) and the tensors they make
# (src/core). The rest of the engine keeps ASan and UBSan but at -O0: its
# kernels are not what the fuzzers explore, and at -O1 under UBSan they took
# most of the build (src/ops/conv_direct.c alone 105 s of a 2m50 build).
FUZZ_STEERED = build-fuzz/src/io/% build-fuzz/src/core/%
ifeq ($(BUILD),build-fuzz)
$(filter-out $(FUZZ_STEERED),$(ENGINE_OBJ)): override CFLAGS = -O0 -g $(FUZZ_SAN)
endif
fuzz:
	$(MAKE) --no-print-directory BUILD=build-fuzz CC=$(FUZZ_CC) CFLAGS="-O1 -g -fsanitize=fuzzer-no-link $(FUZZ_SAN)" \
	  build-fuzz/libcell.a
	for t in $(FUZZ_TARGETS); do \
	  $(FUZZ_CC) $(ALL_CFLAGS) -O1 -g -Isrc -fsanitize=fuzzer $(FUZZ_SAN) tests/fuzz/fuzz_$$t.c \
	    -o build-fuzz/fuzz_$$t build-fuzz/libcell.a $(LIBS) || exit 1; \
	done
	printf '%s\n' $(FUZZ_TARGETS) | xargs -P $$(nproc) -I{} sh tests/fuzz/run.sh $(FUZZ_SECONDS) {}

# bench/matmul.c calls the engine and OpenBLAS directly, without Lua.
BENCH_MATMUL = $(BUILD)/bench_matmul
$(BENCH_MATMUL): bench/matmul.c $(LIBCELL_A)
	$(CC) $(ALL_CFLAGS) bench/matmul.c -o $@ $(LIBCELL_A) $(LIBS)

bench: all $(BENCH_MATMUL)
	$(SPEC_ENV) BUILD=$(BUILD) sh bench/run.sh

# cell.communication's figures (2 ranks): all_reduce against MPI_Allreduce
# from C (bench/allreduce.c) and on the same buffers from Lua
# (bench/allreduce.lua), 1 KB to 16 MB; then the LeNet step's weak scaling
# (bench/ddp_step.lua: 1 rank, then 2, each with its own batch of 64).
BENCH_ALLREDUCE = $(BUILD)/bench_allreduce
$(BENCH_ALLREDUCE): bench/allreduce.c
	$(CC) -O2 $(MPI_CFLAGS) $< -o $@ $(MPI_LIBS)
bench-mpi: all $(BENCH_ALLREDUCE)
	$(MPIRUN) -np 2 $(BENCH_ALLREDUCE)
	$(MPIRUN) -np 2 $(CELL_BIN) bench/allreduce.lua
	$(MPIRUN) -np 1 $(CELL_BIN) bench/ddp_step.lua
	$(MPIRUN) -np 2 $(CELL_BIN) bench/ddp_step.lua

# The embedding examples, run: the C game loop (10,000 batch-1 steps of the
# MLP 784-256-10 in EMBED_CKPT: the one examples/mlp.lua trained and saved,
# else an untrained one examples/embed/save_model.lua saves) and the C host
# running a Lua script.
EMBED_CKPT ?= $(firstword $(wildcard build/demo/mlp.safetensors) $(BUILD)/embed/mlp.safetensors)
embed: all
	@[ -f "$(EMBED_CKPT)" ] || $(SPEC_ENV) $(LUA_BIN) examples/embed/save_model.lua "$(EMBED_CKPT)"
	$(EMBED_GAME) "$(EMBED_CKPT)" 10000
	CELL_LUA_DIR=lua $(EMBED_HOST)

# Batch-1 MLP forward: C, LuaJIT (FFI and module), Lua 5.4 and PyTorch.
bench-embed: all
	BUILD=$(BUILD) sh bench/embed.sh

# The main job: LeNet-5 on Fashion-MNIST for two epochs (a synthetic set when
# the data set is not installed), saved to build/demo/lenet.safetensors and
# reloaded. DEMO_EPOCHS overrides the epoch count.
DEMO_EPOCHS ?= 2
demo: all
	$(CELL_BIN) examples/fashion_mnist.lua $(DEMO_EPOCHS) "" $(BUILD)/demo/lenet.safetensors

# The documentation as HTML (docs/build.lua runs cmark-gfm over docs/*.md and
# checks every link of the result); docs/reference/ is also what the REPL's
# ?name reads, installed beside the Lua files.
docs:
	$(LUA_BIN) docs/build.lua docs $(BUILD)/docs

# Install locations; each may be overridden on its own (the rockspec points
# them into LuaRocks' tree: LUA_SHARE=$(LUADIR) LUA_CLIB=$(LIBDIR) ...).
LUA_SHARE ?= $(PREFIX)/share/lua/$(LUA_VERSION)
LUA_CLIB ?= $(PREFIX)/lib/lua/$(LUA_VERSION)
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
# Every Lua file under lua/cell/, subpackages (cell/nn/...) included.
LUA_FILES = $(shell find lua/cell -name '*.lua' 2>/dev/null)
install: all
	install -d $(DESTDIR)$(LUA_SHARE)/cell $(DESTDIR)$(LUA_CLIB)/cell $(DESTDIR)$(BINDIR) \
	  $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)
	for f in $(LUA_FILES:lua/%=%); do \
	  install -D -m 644 "lua/$$f" "$(DESTDIR)$(LUA_SHARE)/$$f" || exit 1; \
	done
	install -d $(DESTDIR)$(LUA_SHARE)/cell/docs/reference
	install -m 644 docs/reference/*.md $(DESTDIR)$(LUA_SHARE)/cell/docs/reference/
	install -m 755 $(MODULE) $(DESTDIR)$(LUA_CLIB)/cell/core.so
	install -m 755 $(OMPENV_MODULE) $(DESTDIR)$(LUA_CLIB)/cell/ompenv.so
	$(if $(STATIC),,install -m 755 $(LIBCELL_SO) $(DESTDIR)$(LUA_CLIB)/cell/libcell.so)
	$(if $(COMM_MODULE),install -m 755 $(COMM_MODULE) $(DESTDIR)$(LUA_CLIB)/cell/comm_mpi.so)
	install -m 755 $(CELL_BIN) $(DESTDIR)$(BINDIR)/$(notdir $(CELL_BIN))
	install -m 644 $(LIBCELL_A) $(LIBCELL_SO) $(DESTDIR)$(LIBDIR)/
	install -m 644 $(PUBLIC_HEADERS) $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 $(LIBCELL_LUA) $(DESTDIR)$(LIBDIR)/
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	  -e 's|@VERSION@|$(CELL_VERSION)|g' -e 's|@LIBS@|$(LIBS)|g' cell.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/cell.pc
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	  -e 's|@VERSION@|$(CELL_VERSION)|g' -e 's|@LUA@|$(LUA)|g' -e 's|@LUA_PC@|$(LUA)|g' -e 's|@LIBS@|$(LIBS)|g' \
	  -e 's|@LUA_SHARE@|$(LUA_SHARE)|g' cell-lua.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/cell-$(LUA).pc

uninstall:
	rm -rf $(DESTDIR)$(LUA_SHARE)/cell $(DESTDIR)$(LUA_CLIB)/cell $(DESTDIR)$(BINDIR)/$(notdir $(CELL_BIN))
	rm -f $(DESTDIR)$(LIBDIR)/libcell.a $(DESTDIR)$(LIBDIR)/libcell.so $(DESTDIR)$(LIBDIR)/libcell-$(LUA).a
	rm -f $(DESTDIR)$(LIBDIR)/pkgconfig/cell.pc $(DESTDIR)$(LIBDIR)/pkgconfig/cell-$(LUA).pc
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/,$(notdir $(PUBLIC_HEADERS)))

# Debian packages the build and tests need; installed only when missing.
DEPS = build-essential pkg-config liblua5.4-dev lua5.4 libluajit-5.1-dev luajit libopenblas-dev libopenblas-openmp-dev \
  zlib1g-dev libreadline-dev lua-busted luarocks dataset-fashion-mnist tmux cmark-gfm
# cell.communication: Open MPI (the comm module is built only where it is found).
DEPS += libopenmpi-dev openmpi-bin
# examples/char_lstm.lua and examples/tiny_gpt.lua: the fortunes corpus.
DEPS += fortunes
# make tsan and make fuzz: clang, its sanitizer and libFuzzer runtimes and LLVM's OpenMP
# (with Archer, for tsan).
DEPS += clang libclang-rt-dev libomp-dev
# spec/train/report_spec.lua: the HTML training report rendered in headless Chromium.
DEPS += chromium
# cell.dataset.vision: PNG and JPEG decoding.
DEPS += libpng-dev libjpeg62-turbo-dev
# make bench's PyTorch side (bench/torch/, run by Debian's /usr/bin/python3);
# make bench leaves its lines out where these are missing.
BENCH_DEPS = python3-torch python3-numpy
# Installs the Debian packages $(1) that are not installed yet.
define install_missing
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "$(2): all installed"; fi
endef
deps:
	$(call install_missing,$(DEPS),deps)
bench-deps:
	$(call install_missing,$(BENCH_DEPS),bench-deps)

# The rock builds offline into a temporary tree and loads from it.
rock-check:
	sh rocks/check.sh

clean:
	rm -rf build build-asan build-tsan build-clang build-fuzz bin
