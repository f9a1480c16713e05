/* cell_lua.h - embedding cell in a C host that runs Lua (Lua 5.4 or LuaJIT).
 *
 * Link the host with the library built for its Lua (`pkg-config --cflags
 * --libs cell-lua5.4`, or cell-luajit), which holds the engine, cell.core
 * and these functions: instead of libcell, not beside it (two engines in
 * one process would not share tensors). A host that needs no Lua uses
 * cell.h and libcell alone. A LuaJIT host whose scripts use cell.ffi also
 * links with -Wl,-E, so that the FFI finds the engine's functions in the
 * executable (cell.ffi checks it binds the very engine cell.core runs).
 *
 * Call order:
 *   lua_State *L = luaL_newstate();
 *   luaL_openlibs(L);                  the standard libraries, package first
 *   if (cell_openlibs(L) != 0) { ... lua_tostring(L, -1) says why ... }
 *   lua_setglobal(L, "cell");          optional: cell_openlibs sets no global
 *   ... cell_push_tensor / cell_check_tensor from then on ...
 *   lua_close(L);                      releases every tensor Lua held
 * cell_openlibs may be called again (on the same state it is cheap and
 * leaves the same module); the tensor functions need it called first.
 *
 * Ownership across the boundary: cell_push_tensor gives Lua a reference of
 * its own (the host keeps and still releases its own); cell_check_tensor
 * lends the host Lua's reference, valid while the Lua value is alive (keep
 * it on the stack, in the registry, or cell_tensor_retain it).
 *
 * Random numbers: each lua_State has a generator of its own (cell.h,
 * cell_generator), which cell.set_seed seeds and its rand, randn, randint,
 * dropout and initializers draw from, on whatever thread runs the state.
 * The host's own C calls (cell_tensor_rand, ...) draw from the calling
 * thread's current generator: another stream, which Lua does not move.
 *
 * Errors: cell_openlibs reports by its result, as lua_pcall does. The
 * tensor functions follow the lauxlib convention: a bad argument raises a
 * Lua error, so call them where an error can be caught (inside a C function
 * Lua called, or under lua_pcall). Engine failures raise as
 * "ValueError: ...", "TypeError: ..." (cell_lua_error). */
#ifndef CELL_LUA_H
#define CELL_LUA_H

#include "cell.h"
#include <lua.h>

/* Make `require "cell"` work in L and load it. Puts the engine linked into
 * the host (cell.core) in package.preload, so no cell/core.so is loaded
 * beside it: the host and its Lua code share one engine, one allocator,
 * one tensor type. Then makes sure package.path finds the Lua files (the
 * cell/ folder of init.lua, nn/, ...): if it already does (the host set it,
 * or LUA_PATH), it is left alone; otherwise the first of these folders that
 * holds cell/init.lua is put in front of it: $CELL_LUA_DIR, the folder
 * the library was built to install them in (share/lua/<version> under its
 * PREFIX), and the folders beside the running executable, as the `cell`
 * executable looks (../share/lua/<version>, ../lua). Finally runs
 * require "cell" (protected).
 * Returns 0 (LUA_OK) with the cell module on the stack; or a nonzero Lua
 * status with an error message on the stack: the package library is not
 * open, the Lua files were not found (the message lists where it looked),
 * or loading them failed. */
CELL_API int cell_openlibs(lua_State *L);

/* Push t as a Lua tensor (NULL pushes nil). Lua takes a reference of its
 * own: t is borrowed. A tensor made by cell_tensor_wrap over host memory
 * reaches Lua without a copy; its release callback runs when both the
 * host and Lua's collector are done with it. Raises a Lua error when
 * cell_openlibs (or require "cell.core") has not run in L. */
CELL_API void cell_push_tensor(lua_State *L, cell_tensor *t);

/* The tensor at stack index idx (a Tensor or a Parameter), borrowed from
 * Lua. cell_check_tensor raises "TypeError: expected a Tensor, got <type>"
 * (as an argument error: "bad argument #idx to ...") for any other value,
 * and "RuntimeError: this tensor was freed" for one released by t:free();
 * cell_test_tensor returns NULL for both. */
CELL_API cell_tensor *cell_check_tensor(lua_State *L, int idx);
CELL_API cell_tensor *cell_test_tensor(lua_State *L, int idx);

/* Raise the engine's last error in L as "<ExceptionName>: <message>", the
 * way cell's own functions do; for a host's C functions that call the
 * engine: `if (cell_op_matmul(a, b, &c)) return cell_lua_error(L);`.
 * Does not return. */
CELL_API int cell_lua_error(lua_State *L);

/* The module loader itself, for hosts that manage package.preload on their
 * own (what cell_openlibs puts there). Returns the cell.core table. */
CELL_API int luaopen_cell_core(lua_State *L);

#endif
