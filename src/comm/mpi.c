/* mpi.c - cell.comm_mpi: the MPI calls under cell.communication; this half
 * holds errors, communicators, tensors as buffers, the lifecycle and the
 * module (mpi_coll.c the collectives).
 *
 * A Lua C module above the engine: it links MPI and nothing of cell. It
 * reaches tensors only through their Lua interface (cell.core.is_tensor,
 * t.device, t:is_contiguous(), t:numel(), t.dtype, t:data_ptr()), and only
 * CPU tensors that are contiguous: lua/cell/communication/ moves others
 * through the host first. Every call checks its arguments, so no value a
 * script passes can make it touch memory that is not a tensor's.
 *
 * Failures: communicators return MPI's errors (MPI_ERRORS_RETURN), raised as
 * "RuntimeError: <op>: MPI: <text>". A process that exits with a nonzero
 * status after init (an uncaught Lua error) calls MPI_Abort from an exit
 * handler, so mpirun ends every rank instead of leaving them waiting in a
 * collective; those ranks print why on SIGTERM. A zero exit finalizes. */
#include "half.h"
#include "mpi_impl.h"
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int luaopen_cell_comm_mpi(lua_State *L) __attribute__((visibility("default")));

int cm_rank = -1;
static int g_inited;      /* this module called MPI_Init */
double cm_timeout;        /* CELL_COMM_TIMEOUT: seconds a call may wait, 0 for ever */

/* --- errors ---------------------------------------------------------------- */

int cm_fail(lua_State *L, const char *what, int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  if (MPI_Error_string(rc, text, &n) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", rc);
  return luaL_error(L, "RuntimeError: %s: MPI: %s", what, text);
}

void cm_need_init(lua_State *L, const char *what) {
  int on = 0, off = 0;
  MPI_Initialized(&on);
  MPI_Finalized(&off);
  if (!on || off)
    luaL_error(L, "RuntimeError: %s: cell.communication is not initialized (call cell.communication.init() "
                  "first%s)", what, off ? "; it was released" : "");
}

/* A call waits at most cm_timeout seconds (when set): past that the other
 * ranks are not taking part (stuck, or in another call) and the job ends. */
void cm_wait_bounded(lua_State *L, const char *what, MPI_Request *req) {
  double t0 = MPI_Wtime();
  for (;;) {
    int done = 0;
    int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) cm_fail(L, what, rc);
    if (done) return;
    if (MPI_Wtime() - t0 > cm_timeout) {
      fprintf(stderr,
              "cell.communication: rank %d: %s did not complete within %g s (CELL_COMM_TIMEOUT): another rank is "
              "not taking part (stuck, or in another call); aborting the job\n", cm_rank, what, cm_timeout);
      fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    sched_yield();
  }
}

/* --- exit and signals ------------------------------------------------------ */

static void on_term(int sig) {
  char msg[160];
  int n = snprintf(msg, sizeof msg,
                   "cell.communication: rank %d: ended by signal %d: another rank failed (its error is printed "
                   "above) or mpirun was interrupted\n", cm_rank, sig);
  if (n > 0) {
    ssize_t w = write(2, msg, (size_t)n);
    (void)w;
  }
  _exit(128 + sig);
}

static void on_process_exit(int status, void *arg) {
  (void)arg;
  int on = 0, off = 0;
  MPI_Initialized(&on);
  MPI_Finalized(&off);
  if (!on || off || !g_inited) return;
  if (status != 0) {
    fprintf(stderr, "cell.communication: rank %d exits with status %d: aborting the job on every rank\n", cm_rank,
            status);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status);
    return;
  }
  cell_comm_half_free();
  MPI_Finalize();
}

/* --- communicators ---------------------------------------------------------- */

comm_ud *cm_check_comm(lua_State *L, int idx, const char *what) {
  comm_ud *c = luaL_testudata(L, idx, COMM_MT);
  if (!c) luaL_error(L, "TypeError: %s: argument #%d must be a communicator", what, idx);
  if (c->comm == MPI_COMM_NULL) luaL_error(L, "RuntimeError: %s: the group was destroyed", what);
  cm_need_init(L, what);
  return c;
}

static void push_comm(lua_State *L, MPI_Comm comm, int owned) {
  comm_ud *c = lua_newuserdata(L, sizeof *c);
  c->comm = comm;
  c->owned = owned;
  luaL_setmetatable(L, COMM_MT);
}

static int comm_gc(lua_State *L) {
  comm_ud *c = luaL_checkudata(L, 1, COMM_MT);
  int off = 0;
  MPI_Finalized(&off);
  if (c->owned && c->comm != MPI_COMM_NULL && !off) MPI_Comm_free(&c->comm);
  c->comm = MPI_COMM_NULL;
  return 0;
}

/* --- tensors ------------------------------------------------------------------ */

static MPI_Datatype mpi_type(int d) {
  switch (d) {
  case 0: return MPI_FLOAT;
  case 1: return MPI_DOUBLE;
  case 2: case 3: return MPI_UINT16_T;
  case 4: return MPI_INT8_T;
  case 5: return MPI_UINT8_T;
  case 6: return MPI_INT32_T;
  case 7: return MPI_INT64_T;
  case 9: return MPI_INT16_T;
  default: return MPI_C_BOOL;
  }
}

/* Upvalue 1: K (tensor_buf.c), what cell.core gave when the module loaded. */
void cm_get_buf(lua_State *L, int idx, const char *what, buf *b) {
  cm_tbuf tb;
  cm_tbuf_get(L, lua_upvalueindex(1), idx, what, "CPU", "MPI", &tb);
  b->ptr = tb.ptr;
  b->count = tb.count;
  b->dtype = tb.dtype;
  b->mpi = mpi_type(tb.dtype);
  b->esize = tb.esize;
}

MPI_Op cm_get_op(lua_State *L, int idx, const char *what, int dtype) {
  const char *s = luaL_checkstring(L, idx);
  int k = strcmp(s, "sum") == 0 ? 0 : strcmp(s, "prod") == 0 ? 1 : strcmp(s, "max") == 0 ? 2
        : strcmp(s, "min") == 0 ? 3 : -1;
  if (k < 0) luaL_error(L, "ValueError: %s: unknown reduce op '%s'", what, s);
  if (dtype == 2 || dtype == 3) {
    MPI_Op op = cell_comm_half_op(dtype - 2, k);
    if (op == MPI_OP_NULL) luaL_error(L, "RuntimeError: %s: MPI_Op_create failed", what);
    return op;
  }
  if (dtype == 8) return (k == 0 || k == 2) ? MPI_LOR : MPI_LAND; /* bool: or / and */
  switch (k) {
  case 0: return MPI_SUM;
  case 1: return MPI_PROD;
  case 2: return MPI_MAX;
  default: return MPI_MIN;
  }
}

int cm_check_int(lua_State *L, int idx, const char *what, const char *name) {
  lua_Number v = luaL_checknumber(L, idx);
  if (v != (lua_Number)(int)v) luaL_error(L, "TypeError: %s: %s must be an integer", what, name);
  return (int)v;
}

/* --- lifecycle ---------------------------------------------------------------- */

/* init() -> rank, size, local_rank */
static int l_init(lua_State *L) {
  int on = 0, off = 0;
  MPI_Finalized(&off);
  if (off) return luaL_error(L, "RuntimeError: init: MPI was finalized (release) in this process; it cannot start again");
  const char *tv = getenv("CELL_COMM_TIMEOUT");
  if (tv && *tv) {
    char *end;
    double v = strtod(tv, &end);
    if (*end != '\0' || !(v >= 0) || v > 1e9)
      return luaL_error(L, "ValueError: init: CELL_COMM_TIMEOUT must be a number of seconds (0: no bound), but is '%s'",
                        tv);
    cm_timeout = v;
  }
  MPI_Initialized(&on);
  if (!on) {
    int provided;
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) return cm_fail(L, "init", rc);
    g_inited = 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &cm_rank);
    on_exit(on_process_exit, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
  }
  int rank, size, local = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm node;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
  }
  lua_pushinteger(L, rank);
  lua_pushinteger(L, size);
  lua_pushinteger(L, local);
  return 3;
}

static int l_initialized(lua_State *L) {
  int on = 0, off = 0;
  MPI_Initialized(&on);
  MPI_Finalized(&off);
  lua_pushboolean(L, on && !off);
  return 1;
}

static int l_finalize(lua_State *L) {
  int on = 0, off = 0;
  MPI_Initialized(&on);
  MPI_Finalized(&off);
  if (on && !off) {
    cell_comm_half_free();
    CHECK(L, "release", MPI_Finalize());
  }
  return 0;
}

static int l_abort(lua_State *L) {
  const char *msg = luaL_optstring(L, 1, "aborted");
  int code = (int)luaL_optinteger(L, 2, 1);
  fprintf(stderr, "cell.communication: rank %d: %s\n", cm_rank, msg);
  fflush(stderr);
  int on = 0, off = 0;
  MPI_Initialized(&on);
  MPI_Finalized(&off);
  if (on && !off) MPI_Abort(MPI_COMM_WORLD, code);
  _exit(code);
}

static int l_world(lua_State *L) {
  cm_need_init(L, "world");
  push_comm(L, MPI_COMM_WORLD, 0);
  return 1;
}

/* group(comm, {ranks of comm, 0-based}) -> comm: collective over those ranks only. */
static int l_group(lua_State *L) {
  comm_ud *c = cm_check_comm(L, 1, "create_group");
  luaL_checktype(L, 2, LUA_TTABLE);
  int n = (int)lua_rawlen(L, 2);
  int size;
  MPI_Comm_size(c->comm, &size);
  if (n < 1 || n > size) return luaL_error(L, "ValueError: create_group: %d ranks for a world of %d", n, size);
  int *ranks = lua_newuserdata(L, sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 2, i + 1);
    ranks[i] = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  MPI_Group wg, g;
  CHECK(L, "create_group", MPI_Comm_group(c->comm, &wg));
  int rc = MPI_Group_incl(wg, n, ranks, &g);
  MPI_Group_free(&wg);
  if (rc != MPI_SUCCESS) return cm_fail(L, "create_group", rc);
  MPI_Comm nc;
  rc = MPI_Comm_create_group(c->comm, g, 32767, &nc); /* a tag send/recv never use */
  MPI_Group_free(&g);
  if (rc != MPI_SUCCESS) return cm_fail(L, "create_group", rc);
  MPI_Comm_set_errhandler(nc, MPI_ERRORS_RETURN);
  push_comm(L, nc, 1);
  return 1;
}

static int l_free(lua_State *L) {
  comm_ud *c = cm_check_comm(L, 1, "destroy_group");
  if (c->owned) CHECK(L, "destroy_group", MPI_Comm_free(&c->comm));
  c->comm = MPI_COMM_NULL;
  return 0;
}

static int l_rank(lua_State *L) {
  comm_ud *c = cm_check_comm(L, 1, "get_rank");
  int r, s;
  MPI_Comm_rank(c->comm, &r);
  MPI_Comm_size(c->comm, &s);
  lua_pushinteger(L, r);
  lua_pushinteger(L, s);
  return 2;
}

static int l_wtime(lua_State *L) {
  lua_pushnumber(L, MPI_Wtime());
  return 1;
}

static int l_version(lua_State *L) {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int n = 0;
  MPI_Get_library_version(v, &n);
  lua_pushlstring(L, v, (size_t)n);
  return 1;
}

static const luaL_Reg funcs[] = {{"init", l_init},
                                 {"initialized", l_initialized},
                                 {"finalize", l_finalize},
                                 {"abort", l_abort},
                                 {"world", l_world},
                                 {"group", l_group},
                                 {"free", l_free},
                                 {"rank", l_rank},
                                 {"wtime", l_wtime},
                                 {"version", l_version},
                                 {NULL, NULL}};

int luaopen_cell_comm_mpi(lua_State *L) {
  luaL_newmetatable(L, COMM_MT);
  lua_pushcfunction(L, comm_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  luaL_newmetatable(L, REQ_MT);
  lua_pushcfunction(L, cm_req_gc);
  lua_setfield(L, -2, "__gc");
  lua_newtable(L);
  lua_pushcfunction(L, cm_req_wait);
  lua_setfield(L, -2, "wait");
  lua_pushcfunction(L, cm_req_test);
  lua_setfield(L, -2, "test");
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);

  lua_newtable(L); /* the module */
  cm_tbuf_push_k(L); /* K: what cell.core gives now */
  luaL_setfuncs(L, funcs, 1);
  lua_getfield(L, -1, "init"); /* any function: its upvalue is K */
  lua_getupvalue(L, -1, 1);
  lua_remove(L, -2);
  luaL_setfuncs(L, cm_coll_funcs, 1);
  return 1;
}
