-- cell-scm-1.rockspec - builds cell from a checkout with `luarocks make`;
-- the Makefile does the work (build.type = "make"), so the rock and
-- `make install` cannot drift apart. Releases are cut from
-- rocks/cell-VERSION.rockspec.in (see rocks/README.md).
rockspec_format = "3.0"
package = "cell"
version = "scm-1"

source = {
  -- A checkout is built in place by `luarocks make`; nothing is fetched.
  url = "git+file:///dev/null",
}

description = {
  summary = "A deep-learning framework for Lua on a C engine",
  detailed = [[
cell gives Lua tensors, automatic differentiation and MindSpore-style
neural-network cells. A C engine owns tensors, kernels and memory and sends
matrix products to OpenBLAS; a thin binding (cell.core) exposes it to Lua 5.4
and LuaJIT; the modelling layer is written in Lua. The rock also installs
`cell`, a Lua 5.4 interpreter with the engine built in and a REPL
(`cell-luajit` when built for LuaRocks' 5.1 tree, which is LuaJIT's).
]],
  labels = { "deep-learning", "tensor", "neural-network", "autograd" },
}

dependencies = {
  "lua >= 5.1",
}

-- On Debian and Ubuntu cblas.h lives in the multiarch directory, which
-- LuaRocks does not search: pass OPENBLAS_INCDIR=/usr/include/x86_64-linux-gnu
-- (rocks/check.sh does), or set it once in the LuaRocks config's `variables`.
external_dependencies = {
  OPENBLAS = {
    header = "cblas.h",
    library = "openblas",
  },
  -- gzip'd data sets are read with zlib (safetensors headers are parsed by
  -- src/io/safetensors_read.c itself: see its header comment).
  ZLIB = {
    header = "zlib.h",
    library = "z",
  },
  -- cell.dataset.vision decodes images with libpng and libjpeg-turbo.
  PNG = {
    header = "png.h",
    library = "png",
  },
  JPEG = {
    header = "jpeglib.h",
    library = "jpeg",
  },
}

build = {
  type = "make",
  build_variables = {
    CFLAGS = "$(CFLAGS)",
    -- LuaRocks' own Lua: the Makefile builds for it (lua5.4 for
    -- --lua-version=5.4, LuaJIT for the 5.1 tree) and installs `cell`
    -- (Lua 5.4) or `cell-luajit` accordingly.
    ROCK_LUA = "$(LUA)",
    ROCK_LUA_INCDIR = "$(LUA_INCDIR)",
    BLAS_INCDIR = "$(OPENBLAS_INCDIR)",
    BLAS_LIB = "-L$(OPENBLAS_LIBDIR) -lopenblas",
    IO_CFLAGS = "-I$(ZLIB_INCDIR) -I$(PNG_INCDIR) -I$(JPEG_INCDIR)",
    IO_LIBS = "-L$(ZLIB_LIBDIR) -lz -L$(PNG_LIBDIR) -lpng -L$(JPEG_LIBDIR) -ljpeg",
  },
  install_variables = {
    -- the same Lua as the build, or `make install` would build another
    ROCK_LUA = "$(LUA)",
    ROCK_LUA_INCDIR = "$(LUA_INCDIR)",
    PREFIX = "$(PREFIX)",
    LUA_SHARE = "$(LUADIR)",
    LUA_CLIB = "$(LIBDIR)",
    BINDIR = "$(BINDIR)",
    -- The C library and headers stay inside the rock's own directory:
    -- LuaRocks deploys everything in $(LIBDIR) onto package.cpath.
    LIBDIR = "$(PREFIX)/engine/lib",
    INCLUDEDIR = "$(PREFIX)/engine/include",
  },
}

-- `luarocks test` runs the whole spec suite (busted, configured by .busted)
-- in the checkout, against the module `luarocks make` just built there.
test = {
  type = "busted",
  flags = { "--cpath=build/lua5.4/?.so" },
}
