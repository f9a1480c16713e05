/* states.c - several Lua states with cell, drawing random numbers one
 * after the other and at the same time on several threads: each state's
 * draws (rand, randn, randint, dropout, initializers, a layer's weights)
 * must be bit-identical to what the state draws alone, because each state
 * has a generator of its own (cell.set_seed seeds it and nothing else).
 *
 *   usage: test_states   (CELL_LUA_DIR=lua when run from the repository;
 *          make test runs it; spec/rng_spec.lua checks its lines)
 * Prints one line per check, "ok ..." or "FAIL ...", and exits 1 on any
 * failure. Three runs of NSTATES states, each seeded differently:
 *   alone:       one state at a time, on this thread (the reference);
 *   interleaved: all states open at once on this thread, one step of each
 *                in turn, with this thread's own generator drawing and
 *                reseeding between steps;
 *   threads:     each state on a thread of its own, all drawing at once. */
#include "cell_lua.h"

#include <lauxlib.h>
#include <lualib.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if LUA_VERSION_NUM >= 502
#define lua_objlen lua_rawlen
#endif

#define NSTATES 4
#define STEPS 40

/* Each state runs this chunk with (cell, seed): it returns step(), which
 * draws one round into the list `out`, and out itself. */
static const char *const chunk =
    "local cell, seed = ...\n"
    "cell.set_seed(seed)\n"
    "local out = {}\n"
    "local function step()\n"
    "  out[#out + 1] = cell.rand({ 67 })\n"
    "  out[#out + 1] = cell.randn({ 33 }, cell.float64)\n"
    "  out[#out + 1] = cell.randint(-50, 50, { 20 })\n"
    "  out[#out + 1] = cell.ops.dropout(cell.ones({ 64 }), 0.3, true)\n"
    "  out[#out + 1] = cell.initializer('normal', { 4, 3 }):init_data()\n"
    "  out[#out + 1] = cell.nn.Dense(5, 3).weight\n"
    "end\n"
    "return step, out\n";

typedef struct {
  unsigned long long seed;
  lua_State *L;
  int step_ref, out_ref;
  char *bytes; /* every tensor of out, concatenated */
  size_t n, cap;
  char err[256];
  int *start; /* threads wait for *start, to draw at the same time */
} run;

static int fail(run *r, const char *what) {
  snprintf(r->err, sizeof r->err, "%s: %s", what, r->L ? lua_tostring(r->L, -1) : "no state");
  return 0;
}

static int open_state(run *r) {
  r->L = luaL_newstate();
  if (!r->L) return fail(r, "luaL_newstate");
  luaL_openlibs(r->L);
  if (cell_openlibs(r->L) != 0) return fail(r, "cell_openlibs");
  if (luaL_loadstring(r->L, chunk) != 0) return fail(r, "load");
  lua_insert(r->L, -2);
  lua_pushinteger(r->L, (lua_Integer)r->seed);
  if (lua_pcall(r->L, 2, 2, 0) != 0) return fail(r, "chunk");
  r->out_ref = luaL_ref(r->L, LUA_REGISTRYINDEX);
  r->step_ref = luaL_ref(r->L, LUA_REGISTRYINDEX);
  return 1;
}

static int step(run *r) {
  lua_rawgeti(r->L, LUA_REGISTRYINDEX, r->step_ref);
  return lua_pcall(r->L, 0, 0, 0) == 0 || fail(r, "step");
}

static int append(run *r, const void *p, size_t n) {
  if (r->n + n > r->cap) {
    size_t cap = (r->cap ? 2 * r->cap : 1 << 16) + n;
    char *b = realloc(r->bytes, cap);
    if (!b) return 0;
    r->bytes = b;
    r->cap = cap;
  }
  memcpy(r->bytes + r->n, p, n);
  r->n += n;
  return 1;
}

/* Copy out the bytes of every tensor drawn, and close the state. */
static int collect(run *r) {
  lua_State *L = r->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, r->out_ref);
  int n = (int)lua_objlen(L, -1), ok = 1;
  for (int i = 1; i <= n && ok; i++) {
    lua_rawgeti(L, -1, i);
    /* On the CPU first: under CELL_DEVICE the tensors live on a device
     * whose memory the host may not read. */
    cell_tensor *t = cell_test_tensor(L, -1), *h = NULL;
    ok = t && cell_tensor_move_to(t, 0, &h) == CELL_OK && cell_tensor_is_contiguous(h) &&
         append(r, cell_tensor_data_ptr(h), cell_tensor_nbytes(h));
    cell_tensor_release(h);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (!ok) snprintf(r->err, sizeof r->err, "collect: not a contiguous tensor, or out of memory");
  lua_close(L);
  r->L = NULL;
  return ok;
}

static void *alone(void *arg) {
  run *r = arg;
  while (r->start && !__atomic_load_n(r->start, __ATOMIC_ACQUIRE)) sched_yield();
  int ok = open_state(r);
  for (int s = 0; s < STEPS && ok; s++) ok = step(r);
  if (r->L) collect(r); /* closes the state, whatever happened */
  return NULL;
}

/* This thread's own generator, reseeded and drawn from between steps. */
static void disturb(int k) {
  int64_t n = 100;
  cell_tensor *t = NULL;
  cell_set_seed((unsigned long long)k);
  if (cell_tensor_randn(CELL_DTYPE_F32, 1, &n, &t) == CELL_OK) cell_tensor_release(t);
}

static int failures;
static void report(int ok, const char *what, const char *err) {
  printf("%s %s", ok ? "ok" : "FAIL", what);
  if (!ok && err && *err) printf(" (%s)", err);
  printf("\n");
  failures += !ok;
}

static void compare(const char *name, run *ref, run *got) {
  for (int i = 0; i < NSTATES; i++) {
    int ok = !got[i].err[0] && got[i].n == ref[i].n && got[i].n > 0 &&
             memcmp(got[i].bytes, ref[i].bytes, ref[i].n) == 0;
    char what[128];
    snprintf(what, sizeof what, "%s: state %d draws what it draws alone", name, i + 1);
    report(ok, what, got[i].err);
  }
}

static void reset(run *rs, int *start) {
  for (int i = 0; i < NSTATES; i++) {
    free(rs[i].bytes);
    memset(&rs[i], 0, sizeof rs[i]);
    rs[i].seed = 100u + 7919u * (unsigned)i;
    rs[i].start = start;
  }
}

int main(void) {
  static run ref[NSTATES], got[NSTATES];
  reset(ref, NULL);
  for (int i = 0; i < NSTATES; i++) {
    alone(&ref[i]);
    char what[64];
    snprintf(what, sizeof what, "alone: state %d", i + 1);
    report(!ref[i].err[0] && ref[i].n > 0, what, ref[i].err);
  }
  int differ = 1;
  for (int i = 1; i < NSTATES; i++)
    differ &= ref[i].n != ref[0].n || memcmp(ref[i].bytes, ref[0].bytes, ref[0].n) != 0;
  report(differ, "alone: seeds give different streams", NULL);

  reset(got, NULL);
  int ok = 1;
  for (int i = 0; i < NSTATES; i++) ok = ok && open_state(&got[i]);
  for (int s = 0; s < STEPS && ok; s++)
    for (int i = 0; i < NSTATES && ok; i++) {
      disturb(s * NSTATES + i);
      ok = step(&got[i]);
    }
  for (int i = 0; i < NSTATES; i++)
    if (got[i].L) collect(&got[i]);
  compare("interleaved", ref, got);

  int start = 0;
  reset(got, &start);
  pthread_t th[NSTATES];
  int started[NSTATES];
  for (int i = 0; i < NSTATES; i++) started[i] = pthread_create(&th[i], NULL, alone, &got[i]) == 0;
  __atomic_store_n(&start, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < NSTATES; i++) {
    if (started[i]) pthread_join(th[i], NULL);
    else snprintf(got[i].err, sizeof got[i].err, "pthread_create failed");
  }
  compare("threads", ref, got);

  reset(ref, NULL);
  reset(got, NULL);
  printf("%d failed\n", failures);
  return failures ? 1 : 0;
}
