/* host.c - a C host that runs Lua scripts with cell in them: the Lua side
 * of cell's embedding API (cell_lua.h).
 *
 * A game keeps its state in C and asks a Lua "brain" script what to do each
 * frame. The host:
 *   1. opens cell into its own lua_State (cell_openlibs) - the engine linked
 *      into the host is the one Lua uses;
 *   2. wraps its sensor buffer as a tensor without copying, with a release
 *      callback, and hands it to Lua (cell_push_tensor);
 *   3. gives Lua a C function of its own, host.gain(t, g), that checks its
 *      argument (cell_check_tensor), calls the engine and raises engine
 *      errors as Lua errors (cell_lua_error);
 *   4. reads the tensor the script returns (cell_check_tensor) in place;
 *   5. shows that misuse from Lua is an error the script can catch, and the
 *      host goes on.
 * Each step prints a line that spec/embed_spec.lua checks.
 *
 *   usage: host [SCRIPT]   (default: the brain script built in below)
 *   build: cc host.c $(pkg-config --cflags --libs cell-lua5.4) -Wl,-E -o host
 *          (`make` builds it in build/<lua>/embed/; -Wl,-E exports the
 *          engine's functions, which a LuaJIT script's cell.ffi binds) */
#include "cell_lua.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <string.h>

/* The default brain: a linear policy over the sensors, softened. */
static const char *const brain =
    "local cell = ...\n"
    "local w = cell.tensor({ { 1, 0, 0, 0 }, { 0, 0, 1, 1 }, { -1, 1, 0, 0 } })\n"
    "local brain = {}\n"
    "function brain.think(sensors)\n"
    "  local scores = w:matmul(host.gain(sensors, 2))\n"
    "  return scores:relu()\n"
    "end\n"
    "function brain.misuse()\n"
    "  local ok1, e1 = pcall(host.gain, 'not a tensor', 2)\n"
    "  local ok2, e2 = pcall(host.gain, cell.zeros({ 2 }), cell.zeros({ 3 }))\n"
    "  return e1, e2\n"
    "end\n"
    "return brain\n";

static int released = 0;
static void on_release(void *ctx, void *data) {
  (void)data;
  (*(int *)ctx)++;
}

/* host.gain(t, g): t * g, g a number or a tensor. An engine error (shapes
 * that do not broadcast) is raised as "ValueError: ...". */
static int host_gain(lua_State *L) {
  cell_tensor *t = cell_check_tensor(L, 1), *r = NULL;
  cell_status s;
  cell_tensor *g = cell_test_tensor(L, 2);
  if (g) s = cell_op_binary(CELL_OP_MUL, t, g, &r);
  else s = cell_op_binary_scalar(CELL_OP_MUL, t, luaL_checknumber(L, 2), 1, 0, &r);
  if (s != CELL_OK) return cell_lua_error(L);
  cell_push_tensor(L, r); /* Lua takes its own reference ... */
  cell_tensor_release(r); /* ... and the host drops its one */
  return 1;
}

static int report(lua_State *L, const char *what) {
  if (what) fprintf(stderr, "host: %s: %s\n", what, lua_tostring(L, -1));
  else fprintf(stderr, "host: %s\n", lua_tostring(L, -1));
  lua_close(L);
  return 1;
}

int main(int argc, char **argv) {
  lua_State *L = luaL_newstate();
  if (!L) return 1;
  luaL_openlibs(L);
  if (cell_openlibs(L) != 0) return report(L, NULL); /* the message names cell_openlibs */
  int cellmod = lua_gettop(L);
  lua_getfield(L, cellmod, "version");
  printf("opened: cell %s\n", lua_tostring(L, -1));
  lua_pop(L, 1);

  lua_newtable(L); /* the host's own functions, as a global table */
  lua_pushcfunction(L, host_gain);
  lua_setfield(L, -2, "gain");
  lua_setglobal(L, "host");

  if (argc > 1 ? luaL_loadfile(L, argv[1]) : luaL_loadstring(L, brain)) return report(L, "loading the brain");
  lua_pushvalue(L, cellmod);
  if (lua_pcall(L, 1, 1, 0) != 0) return report(L, "running the brain");
  int brain_idx = lua_gettop(L);

  /* The game's sensors, owned by the game; Lua sees them without a copy. */
  float sensors[4] = {0.5f, 0.25f, 1.0f, 2.0f};
  cell_tensor *view = NULL;
  int64_t shape[1] = {4};
  if (cell_tensor_wrap(sensors, CELL_DTYPE_F32, 1, shape, NULL, on_release, &released, &view) != CELL_OK) {
    fprintf(stderr, "host: wrap: %s\n", cell_last_error());
    lua_close(L);
    return 1;
  }
  for (int frame = 1; frame <= 2; frame++) {
    lua_getfield(L, brain_idx, "think");
    cell_push_tensor(L, view);
    if (lua_pcall(L, 1, 1, 0) != 0) return report(L, "think");
    cell_tensor *action = cell_test_tensor(L, -1);
    if (!action || cell_tensor_dtype(action) != CELL_DTYPE_F32 || !cell_tensor_is_contiguous(action)) {
      fprintf(stderr, "host: think did not return a contiguous float32 tensor\n");
      lua_close(L);
      return 1;
    }
    const float *a = cell_tensor_data_ptr(action); /* read in place */
    printf("frame %d: action", frame);
    for (long long i = 0; i < cell_tensor_numel(action); i++) printf(" %g", a[i]);
    printf("\n");
    lua_pop(L, 1);
    sensors[0] += 1.0f; /* the game moves on; Lua sees the new values next frame */
  }

  lua_getfield(L, brain_idx, "misuse");
  if (lua_pcall(L, 0, 2, 0) != 0) return report(L, "misuse");
  printf("misuse 1: %s\n", lua_tostring(L, -2));
  printf("misuse 2: %s\n", lua_tostring(L, -1));
  lua_pop(L, 2);

  /* The host's reference goes; Lua may still hold one until it is closed. */
  cell_tensor_release(view);
  lua_close(L);
  printf("closed: release callback ran %d time%s\n", released, released == 1 ? "" : "s");
  return released == 1 ? 0 : 1;
}
