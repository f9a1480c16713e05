# cell - the one build. `make`, `make test`, `make asan`, `make bench`,
# `make install PREFIX=...`, `make deps`. Overridable: LUA (lua5.4|luajit),
# PREFIX, LUA_INCDIR, CC, CFLAGS, LDFLAGS.

LUA ?= lua5.4
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
BLAS_LIB ?= -lopenblas

# Flags the build needs, kept apart from the user's CFLAGS.
WARN = -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes -Werror=implicit-function-declaration
MANDATORY = -std=gnu99 -fPIC -fvisibility=hidden -fopenmp -Iinclude -I$(BLAS_INCDIR) $(WARN)
ALL_CFLAGS = $(MANDATORY) $(CFLAGS)
LIBS = $(BLAS_LIB) -lm -lpthread -fopenmp

BUILD ?= build
ENGINE_SRC = $(wildcard src/core/*.c src/ops/*.c src/backend/*.c src/autograd/*.c)
BIND_SRC = $(wildcard src/lua/*.c)
REPL_SRC = $(wildcard src/repl/*.c)
ENGINE_OBJ = $(ENGINE_SRC:%.c=$(BUILD)/%.o)
BIND_OBJ = $(BIND_SRC:%.c=$(BUILD)/$(LUA)/%.o)
REPL_OBJ = $(REPL_SRC:%.c=$(BUILD)/$(LUA)/%.o)
HEADERS = $(wildcard include/*.h src/*/*.h)

LIBCELL_A = $(BUILD)/libcell.a
LIBCELL_SO = $(BUILD)/libcell.so
MODULE = $(BUILD)/$(LUA)/cell/core.so
# One executable per host Lua, so a LuaJIT build does not replace the 5.4 one.
# Other builds (make asan) keep theirs under their own folder.
CELL_BIN = $(if $(filter build,$(BUILD)),bin,$(BUILD)/bin)/cell$(if $(filter luajit,$(LUA)),-luajit,)
CTEST = $(BUILD)/test_engine

.PHONY: all test ctest spec asan bench install uninstall deps clean demo rock-check

all: $(LIBCELL_A) $(LIBCELL_SO) $(MODULE) $(CELL_BIN)

$(BUILD)/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/$(LUA)/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -I$(LUA_INCDIR) -c $< -o $@

$(LIBCELL_A): $(ENGINE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBCELL_SO): $(ENGINE_OBJ)
	$(CC) -shared $(LDFLAGS) -o $@ $^ $(LIBS)

# The module links the engine in, so it needs no libcell.so at run time.
# nodelete: Lua unloads C modules at lua_close, and unloading the OpenMP
# runtime under its live worker threads crashes the process at exit.
$(MODULE): $(BIND_OBJ) $(LIBCELL_A)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-z,nodelete -o $@ $(BIND_OBJ) $(LIBCELL_A) $(LIBS)

$(CELL_BIN): $(REPL_OBJ) $(BIND_OBJ) $(LIBCELL_A)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(REPL_OBJ) $(BIND_OBJ) $(LIBCELL_A) $(LUA_LIB) -lreadline $(LIBS) -ldl -Wl,-E

$(CTEST): $(wildcard tests/*.c) $(wildcard tests/*.h) $(LIBCELL_A)
	$(CC) $(ALL_CFLAGS) -Isrc $(wildcard tests/*.c) -o $@ $(LIBCELL_A) $(LIBS)

# Specs run against the freshly built module and the source Lua files.
SPEC_ENV = LUA_PATH="lua/?.lua;lua/?/init.lua;spec/?.lua;spec/?/init.lua;;" LUA_CPATH="$(BUILD)/$(LUA)/?.so;;" CELL_BIN="$(CURDIR)/$(CELL_BIN)" CELL_LUA="$(LUA_BIN)"

test: all $(CTEST)
	$(CTEST)
	$(SPEC_ENV) $(LUA_BIN) /usr/bin/busted

ctest: $(CTEST)
	$(CTEST)

spec: all
	$(SPEC_ENV) $(LUA_BIN) /usr/bin/busted

# AddressSanitizer + UBSan over the C tests and the whole spec suite. The
# Lua interpreter is not instrumented, so the runtime is preloaded.
asan:
	$(MAKE) BUILD=build-asan CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  LDFLAGS="-fsanitize=address,undefined" all build-asan/test_engine
	ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 build-asan/test_engine
	ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" \
	  $(MAKE) --no-print-directory BUILD=build-asan spec-only

spec-only:
	$(SPEC_ENV) $(LUA_BIN) /usr/bin/busted

# bench/matmul.c calls the engine and OpenBLAS directly, without Lua.
BENCH_MATMUL = $(BUILD)/bench_matmul
$(BENCH_MATMUL): bench/matmul.c $(LIBCELL_A)
	$(CC) $(ALL_CFLAGS) bench/matmul.c -o $@ $(LIBCELL_A) $(LIBS)

bench: all $(BENCH_MATMUL)
	$(SPEC_ENV) BUILD=$(BUILD) sh bench/run.sh

demo: all
	$(CELL_BIN) examples/tour.lua

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
	install -m 755 $(MODULE) $(DESTDIR)$(LUA_CLIB)/cell/core.so
	install -m 755 $(CELL_BIN) $(DESTDIR)$(BINDIR)/cell
	install -m 644 $(LIBCELL_A) $(LIBCELL_SO) $(DESTDIR)$(LIBDIR)/
	install -m 644 include/cell.h include/cell_ffi.h $(DESTDIR)$(INCLUDEDIR)/

uninstall:
	rm -rf $(DESTDIR)$(LUA_SHARE)/cell $(DESTDIR)$(LUA_CLIB)/cell $(DESTDIR)$(BINDIR)/cell
	rm -f $(DESTDIR)$(LIBDIR)/libcell.a $(DESTDIR)$(LIBDIR)/libcell.so
	rm -f $(DESTDIR)$(INCLUDEDIR)/cell.h $(DESTDIR)$(INCLUDEDIR)/cell_ffi.h

# Debian packages the build and tests need; installed only when missing.
DEPS = build-essential pkg-config liblua5.4-dev lua5.4 libluajit-5.1-dev luajit libopenblas-dev \
  zlib1g-dev libcjson-dev libreadline-dev lua-busted luarocks
deps:
	@missing=""; for p in $(DEPS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "deps: all installed"; fi

# The rock builds offline into a temporary tree and loads from it.
rock-check:
	sh rocks/check.sh

clean:
	rm -rf build build-asan bin
