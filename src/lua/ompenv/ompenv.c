/* ompenv.c - the Lua module cell.ompenv: OpenMP's wait policy, set before
 * OpenMP is loaded. lua/cell/init.lua requires it before cell.core.
 *
 * OpenMP's runtime (GCC's libgomp, loaded with cell.core) reads its wait
 * policy from the environment once, when it is loaded. By default its idle
 * workers spin for a while after each parallel region; on a machine whose
 * cores other busy processes share, a 2-thread training step then waits at
 * every region's end for a worker the OS has not run, and ran several times
 * slower than on one thread (a CIFAR-size CNN: 270 ms against 40 ms, with
 * OMP_WAIT_POLICY=passive 37-64 ms). Sleeping at once costs a wake-up at
 * every region, though: on a quiet machine an MLP's 2-thread forward took
 * 0.245 ms passive against 0.205 ms spinning. So, unless the user chose a
 * policy (OMP_WAIT_POLICY or GOMP_SPINCOUNT in the environment), this sets
 * GOMP_SPINCOUNT=10000: idle workers spin that many rounds (tens of
 * microseconds, enough to bridge one op to the next within a step) and then
 * sleep (measured: as fast as spinning on a quiet machine, no spinning left
 * between steps). The module links no
 * OpenMP itself (else its runtime would load, and read the environment,
 * before this runs). The cell executable does the same before main
 * (src/repl/main.c). */
#define _POSIX_C_SOURCE 200112L
#include <lua.h>
#include <stdlib.h>

/* The default spin count (src/repl/main.c sets the same). */
#define CELL_OMP_SPINCOUNT "10000"

__attribute__((visibility("default"))) int luaopen_cell_ompenv(lua_State *L);

__attribute__((visibility("default"))) int luaopen_cell_ompenv(lua_State *L) {
  int set = 0;
  if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT"))
    set = setenv("GOMP_SPINCOUNT", CELL_OMP_SPINCOUNT, 0) == 0;
  lua_pushboolean(L, set);
  return 1;
}
