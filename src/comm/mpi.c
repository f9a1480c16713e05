/* mpi.c - cell.comm_mpi: the MPI calls under cell.communication.
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
#include <lauxlib.h>
#include <lua.h>
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if LUA_VERSION_NUM < 502
#define lua_rawlen(L, i) lua_objlen(L, (i))
#define lua_absindex(L, i) ((i) > 0 || (i) <= LUA_REGISTRYINDEX ? (i) : lua_gettop(L) + (i) + 1)
#endif

#define COMM_MT "cell.comm_mpi.Comm"
#define REQ_MT "cell.comm_mpi.Request"

int luaopen_cell_comm_mpi(lua_State *L) __attribute__((visibility("default")));

static int g_rank = -1;
static int g_inited;      /* this module called MPI_Init */
static double g_timeout;  /* CELL_COMM_TIMEOUT: seconds a call may wait, 0 for ever */

/* --- errors ---------------------------------------------------------------- */

static int mpi_fail(lua_State *L, const char *what, int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  if (MPI_Error_string(rc, text, &n) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", rc);
  return luaL_error(L, "RuntimeError: %s: MPI: %s", what, text);
}

#define CHECK(L, what, call)                      \
  do {                                            \
    int rc_ = (call);                             \
    if (rc_ != MPI_SUCCESS) mpi_fail(L, what, rc_); \
  } while (0)

static void need_init(lua_State *L, const char *what) {
  int on = 0, off = 0;
  MPI_Initialized(&on);
  MPI_Finalized(&off);
  if (!on || off)
    luaL_error(L, "RuntimeError: %s: cell.communication is not initialized (call cell.communication.init() "
                  "first%s)", what, off ? "; it was released" : "");
}

/* A call waits at most g_timeout seconds (when set): past that the other
 * ranks are not taking part (stuck, or in another call) and the job ends. */
static void wait_bounded(lua_State *L, const char *what, MPI_Request *req) {
  double t0 = MPI_Wtime();
  for (;;) {
    int done = 0;
    int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) mpi_fail(L, what, rc);
    if (done) return;
    if (MPI_Wtime() - t0 > g_timeout) {
      fprintf(stderr,
              "cell.communication: rank %d: %s did not complete within %g s (CELL_COMM_TIMEOUT): another rank is "
              "not taking part (stuck, or in another call); aborting the job\n", g_rank, what, g_timeout);
      fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    sched_yield();
  }
}

/* The blocking call, or (with a timeout) its non-blocking form waited for
 * with a bound. `nb` is the non-blocking call, writing &req_. */
#define RUN(L, what, blocking, nb)              \
  do {                                          \
    if (g_timeout > 0) {                        \
      MPI_Request req_ = MPI_REQUEST_NULL;      \
      CHECK(L, what, nb);                       \
      wait_bounded(L, what, &req_);             \
    } else {                                    \
      CHECK(L, what, blocking);                 \
    }                                           \
  } while (0)

/* --- exit and signals ------------------------------------------------------ */

static void on_term(int sig) {
  char msg[160];
  int n = snprintf(msg, sizeof msg,
                   "cell.communication: rank %d: ended by signal %d: another rank failed (its error is printed "
                   "above) or mpirun was interrupted\n", g_rank, sig);
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
    fprintf(stderr, "cell.communication: rank %d exits with status %d: aborting the job on every rank\n", g_rank,
            status);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status);
    return;
  }
  cell_comm_half_free();
  MPI_Finalize();
}

/* --- communicators ---------------------------------------------------------- */

typedef struct {
  MPI_Comm comm;
  int owned; /* made by create_group: freed by free() or collection */
} comm_ud;

static comm_ud *check_comm(lua_State *L, int idx, const char *what) {
  comm_ud *c = luaL_testudata(L, idx, COMM_MT);
  if (!c) luaL_error(L, "TypeError: %s: argument #%d must be a communicator", what, idx);
  if (c->comm == MPI_COMM_NULL) luaL_error(L, "RuntimeError: %s: the group was destroyed", what);
  need_init(L, what);
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

typedef struct {
  void *ptr;
  int count;
  int dtype; /* index in DTYPES */
  MPI_Datatype mpi;
  int esize;
} buf;

static const struct {
  const char *name;
  int size;
} DTYPES[] = {{"float32", 4}, {"float64", 8}, {"float16", 2}, {"bfloat16", 2}, {"int8", 1},
              {"uint8", 1},   {"int32", 4},   {"int64", 8},   {"bool", 1},    {"int16", 2}};
#define NDTYPES ((int)(sizeof DTYPES / sizeof DTYPES[0]))

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

/* Upvalue 1: a table of what the module took from cell.core when it
 * loaded: is_tensor, the tensors' own __index (from their metatable, not
 * the public Tensor table a script may change), the methods numel,
 * is_contiguous and data_ptr it gave then, and dtypes[dtype object] = index
 * in DTYPES. */
static void push_k(lua_State *L, const char *name) { lua_getfield(L, lua_upvalueindex(1), name); }

static void call_k(lua_State *L, const char *name, int idx) {
  push_k(L, name);
  lua_pushvalue(L, idx);
  lua_call(L, 1, 1);
}

static void get_buf(lua_State *L, int idx, const char *what, buf *b) {
  idx = lua_absindex(L, idx);
  call_k(L, "is_tensor", idx);
  int ok = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (!ok) luaL_error(L, "TypeError: %s: argument #%d must be a Tensor, but got %s", what, idx, luaL_typename(L, idx));
  push_k(L, "index");
  lua_pushvalue(L, idx);
  lua_pushstring(L, "device");
  lua_call(L, 2, 1);
  const char *dev = lua_tostring(L, -1);
  if (!dev || strcmp(dev, "CPU") != 0)
    luaL_error(L, "ValueError: %s: argument #%d is on %s; the MPI layer takes CPU tensors", what, idx,
               dev ? dev : "?");
  lua_pop(L, 1);
  call_k(L, "is_contiguous", idx);
  ok = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (!ok) luaL_error(L, "ValueError: %s: argument #%d must be contiguous", what, idx);
  call_k(L, "numel", idx);
  lua_Number n = lua_tonumber(L, -1);
  lua_pop(L, 1);
  if (n > 2147483647.0)
    luaL_error(L, "ValueError: %s: a tensor of %.0f elements is more than one MPI call moves (2^31 - 1)", what, n);
  push_k(L, "dtypes");
  push_k(L, "index");
  lua_pushvalue(L, idx);
  lua_pushstring(L, "dtype");
  lua_call(L, 2, 1);
  lua_rawget(L, -2);
  b->dtype = lua_isnumber(L, -1) ? (int)lua_tointeger(L, -1) : -1;
  lua_pop(L, 2);
  if (b->dtype < 0 || b->dtype >= NDTYPES) luaL_error(L, "TypeError: %s: unsupported dtype", what);
  call_k(L, "data_ptr", idx);
  b->ptr = lua_touserdata(L, -1);
  lua_pop(L, 1);
  b->count = (int)n;
  b->mpi = mpi_type(b->dtype);
  b->esize = DTYPES[b->dtype].size;
}

static MPI_Op get_op(lua_State *L, int idx, const char *what, int dtype) {
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

static int check_int(lua_State *L, int idx, const char *what, const char *name) {
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
    g_timeout = v;
  }
  MPI_Initialized(&on);
  if (!on) {
    int provided;
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) return mpi_fail(L, "init", rc);
    g_inited = 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
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
  fprintf(stderr, "cell.communication: rank %d: %s\n", g_rank, msg);
  fflush(stderr);
  int on = 0, off = 0;
  MPI_Initialized(&on);
  MPI_Finalized(&off);
  if (on && !off) MPI_Abort(MPI_COMM_WORLD, code);
  _exit(code);
}

static int l_world(lua_State *L) {
  need_init(L, "world");
  push_comm(L, MPI_COMM_WORLD, 0);
  return 1;
}

/* group(comm, {ranks of comm, 0-based}) -> comm: collective over those ranks only. */
static int l_group(lua_State *L) {
  comm_ud *c = check_comm(L, 1, "create_group");
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
  if (rc != MPI_SUCCESS) return mpi_fail(L, "create_group", rc);
  MPI_Comm nc;
  rc = MPI_Comm_create_group(c->comm, g, 32767, &nc); /* a tag send/recv never use */
  MPI_Group_free(&g);
  if (rc != MPI_SUCCESS) return mpi_fail(L, "create_group", rc);
  MPI_Comm_set_errhandler(nc, MPI_ERRORS_RETURN);
  push_comm(L, nc, 1);
  return 1;
}

static int l_free(lua_State *L) {
  comm_ud *c = check_comm(L, 1, "destroy_group");
  if (c->owned) CHECK(L, "destroy_group", MPI_Comm_free(&c->comm));
  c->comm = MPI_COMM_NULL;
  return 0;
}

static int l_rank(lua_State *L) {
  comm_ud *c = check_comm(L, 1, "get_rank");
  int r, s;
  MPI_Comm_rank(c->comm, &r);
  MPI_Comm_size(c->comm, &s);
  lua_pushinteger(L, r);
  lua_pushinteger(L, s);
  return 2;
}

/* --- collectives ---------------------------------------------------------------- */

static void same_kind(lua_State *L, const char *what, const buf *a, const buf *b, int ratio_num, int ratio_den) {
  if (a->dtype != b->dtype)
    luaL_error(L, "TypeError: %s: input is %s but output is %s", what, DTYPES[a->dtype].name, DTYPES[b->dtype].name);
  if ((long long)a->count * ratio_num != (long long)b->count * ratio_den)
    luaL_error(L, "ValueError: %s: output has %d elements, expected %lld", what, b->count,
               (long long)a->count * ratio_num / ratio_den);
}

/* allreduce(comm, src, dst, op): dst may be src (in place). */
static int l_allreduce(lua_State *L) {
  comm_ud *c = check_comm(L, 1, "all_reduce");
  buf s, d;
  get_buf(L, 2, "all_reduce", &s);
  get_buf(L, 3, "all_reduce", &d);
  same_kind(L, "all_reduce", &s, &d, 1, 1);
  MPI_Op op = get_op(L, 4, "all_reduce", s.dtype);
  const void *src = s.ptr == d.ptr ? MPI_IN_PLACE : s.ptr;
  RUN(L, "all_reduce", MPI_Allreduce(src, d.ptr, d.count, d.mpi, op, c->comm),
      MPI_Iallreduce(src, d.ptr, d.count, d.mpi, op, c->comm, &req_));
  return 0;
}

typedef struct {
  MPI_Request req;
  int ref; /* the tensor, kept alive in the registry until done */
} req_ud;

/* iallreduce(comm, t, op) -> request: in place, non-blocking. */
static int l_iallreduce(lua_State *L) {
  comm_ud *c = check_comm(L, 1, "all_reduce");
  buf d;
  get_buf(L, 2, "all_reduce", &d);
  MPI_Op op = get_op(L, 3, "all_reduce", d.dtype);
  req_ud *r = lua_newuserdata(L, sizeof *r);
  r->req = MPI_REQUEST_NULL;
  r->ref = LUA_NOREF;
  luaL_setmetatable(L, REQ_MT);
  lua_pushvalue(L, 2);
  r->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  CHECK(L, "all_reduce", MPI_Iallreduce(MPI_IN_PLACE, d.ptr, d.count, d.mpi, op, c->comm, &r->req));
  return 1;
}

static int req_wait(lua_State *L) {
  req_ud *r = luaL_checkudata(L, 1, REQ_MT);
  if (r->req != MPI_REQUEST_NULL) {
    if (g_timeout > 0)
      wait_bounded(L, "all_reduce (DistributedGradReducer)", &r->req);
    else
      CHECK(L, "wait", MPI_Wait(&r->req, MPI_STATUS_IGNORE));
  }
  luaL_unref(L, LUA_REGISTRYINDEX, r->ref);
  r->ref = LUA_NOREF;
  return 0;
}

static int req_test(lua_State *L) {
  req_ud *r = luaL_checkudata(L, 1, REQ_MT);
  int done = 1;
  if (r->req != MPI_REQUEST_NULL) CHECK(L, "test", MPI_Test(&r->req, &done, MPI_STATUS_IGNORE));
  lua_pushboolean(L, done);
  return 1;
}

/* A request collected while running: wait for it (its buffer must outlive
 * MPI's use; the registry reference kept the tensor alive until here). */
static int req_gc(lua_State *L) {
  req_ud *r = luaL_checkudata(L, 1, REQ_MT);
  int off = 0;
  MPI_Finalized(&off);
  if (r->req != MPI_REQUEST_NULL && !off) MPI_Wait(&r->req, MPI_STATUS_IGNORE);
  if (r->ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, r->ref);
  r->ref = LUA_NOREF;
  return 0;
}

/* allgather(comm, src, dst): dst holds size * src's elements, rank order. */
static int l_allgather(lua_State *L) {
  comm_ud *c = check_comm(L, 1, "all_gather");
  int size;
  MPI_Comm_size(c->comm, &size);
  buf s, d;
  get_buf(L, 2, "all_gather", &s);
  get_buf(L, 3, "all_gather", &d);
  same_kind(L, "all_gather", &s, &d, size, 1);
  RUN(L, "all_gather", MPI_Allgather(s.ptr, s.count, s.mpi, d.ptr, s.count, s.mpi, c->comm),
      MPI_Iallgather(s.ptr, s.count, s.mpi, d.ptr, s.count, s.mpi, c->comm, &req_));
  return 0;
}

/* reduce_scatter(comm, src, dst, op): dst holds src's elements / size. */
static int l_reduce_scatter(lua_State *L) {
  comm_ud *c = check_comm(L, 1, "reduce_scatter");
  int size;
  MPI_Comm_size(c->comm, &size);
  buf s, d;
  get_buf(L, 2, "reduce_scatter", &s);
  get_buf(L, 3, "reduce_scatter", &d);
  same_kind(L, "reduce_scatter", &s, &d, 1, size);
  MPI_Op op = get_op(L, 4, "reduce_scatter", s.dtype);
  RUN(L, "reduce_scatter", MPI_Reduce_scatter_block(s.ptr, d.ptr, d.count, d.mpi, op, c->comm),
      MPI_Ireduce_scatter_block(s.ptr, d.ptr, d.count, d.mpi, op, c->comm, &req_));
  return 0;
}

static int check_root(lua_State *L, comm_ud *c, int idx, const char *what) {
  int size;
  MPI_Comm_size(c->comm, &size);
  int root = check_int(L, idx, what, "root");
  if (root < 0 || root >= size)
    luaL_error(L, "ValueError: %s: root %d is not a rank of the group (0..%d)", what, root, size - 1);
  return root;
}

/* bcast(comm, t, root): in place. */
static int l_bcast(lua_State *L) {
  comm_ud *c = check_comm(L, 1, "broadcast");
  buf d;
  get_buf(L, 2, "broadcast", &d);
  int root = check_root(L, c, 3, "broadcast");
  RUN(L, "broadcast", MPI_Bcast(d.ptr, d.count, d.mpi, root, c->comm),
      MPI_Ibcast(d.ptr, d.count, d.mpi, root, c->comm, &req_));
  return 0;
}

/* reduce(comm, src, dst, op, root): dst is written on root only. */
static int l_reduce(lua_State *L) {
  comm_ud *c = check_comm(L, 1, "reduce");
  buf s, d;
  get_buf(L, 2, "reduce", &s);
  get_buf(L, 3, "reduce", &d);
  same_kind(L, "reduce", &s, &d, 1, 1);
  MPI_Op op = get_op(L, 4, "reduce", s.dtype);
  int root = check_root(L, c, 5, "reduce");
  int me;
  MPI_Comm_rank(c->comm, &me);
  const void *src = (me == root && s.ptr == d.ptr) ? MPI_IN_PLACE : s.ptr;
  RUN(L, "reduce", MPI_Reduce(src, d.ptr, s.count, s.mpi, op, root, c->comm),
      MPI_Ireduce(src, d.ptr, s.count, s.mpi, op, root, c->comm, &req_));
  return 0;
}

static int l_barrier(lua_State *L) {
  comm_ud *c = check_comm(L, 1, "barrier");
  RUN(L, "barrier", MPI_Barrier(c->comm), MPI_Ibarrier(c->comm, &req_));
  return 0;
}

static int check_peer(lua_State *L, comm_ud *c, int idx, const char *what) {
  int size, me;
  MPI_Comm_size(c->comm, &size);
  MPI_Comm_rank(c->comm, &me);
  int p = check_int(L, idx, what, "the peer rank");
  if (p < 0 || p >= size) luaL_error(L, "ValueError: %s: rank %d is not in the group (0..%d)", what, p, size - 1);
  if (p == me) luaL_error(L, "ValueError: %s: rank %d cannot %s itself", what, p, what);
  return p;
}

/* send(comm, t, dest, tag) / recv(comm, t, src, tag) */
static int l_send(lua_State *L) {
  comm_ud *c = check_comm(L, 1, "send");
  buf d;
  get_buf(L, 2, "send", &d);
  int dest = check_peer(L, c, 3, "send");
  int tag = check_int(L, 4, "send", "sr_tag");
  RUN(L, "send", MPI_Send(d.ptr, d.count, d.mpi, dest, tag, c->comm),
      MPI_Isend(d.ptr, d.count, d.mpi, dest, tag, c->comm, &req_));
  return 0;
}

static int l_recv(lua_State *L) {
  comm_ud *c = check_comm(L, 1, "recv");
  buf d;
  get_buf(L, 2, "recv", &d);
  int src = check_peer(L, c, 3, "recv");
  int tag = check_int(L, 4, "recv", "sr_tag");
  RUN(L, "recv", MPI_Recv(d.ptr, d.count, d.mpi, src, tag, c->comm, MPI_STATUS_IGNORE),
      MPI_Irecv(d.ptr, d.count, d.mpi, src, tag, c->comm, &req_));
  return 0;
}

/* --- headers: the shape checks ------------------------------------------------------ */

#define HEADER_LEN 16

static void read_header(lua_State *L, int idx, long long *h) {
  luaL_checktype(L, idx, LUA_TTABLE);
  for (int i = 0; i < HEADER_LEN; i++) {
    lua_rawgeti(L, idx, i + 1);
    h[i] = (long long)lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
}

static void push_header(lua_State *L, const long long *h) {
  lua_createtable(L, HEADER_LEN, 0);
  for (int i = 0; i < HEADER_LEN; i++) {
    lua_pushnumber(L, (lua_Number)h[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

/* headers(comm, {16 numbers} [, what]) -> {per rank: {16 numbers}} (an
 * allgather); `what` names the collective it checks, in messages. */
static int l_headers(lua_State *L) {
  const char *what = luaL_optstring(L, 3, "check");
  comm_ud *c = check_comm(L, 1, what);
  long long h[HEADER_LEN];
  read_header(L, 2, h);
  int size;
  MPI_Comm_size(c->comm, &size);
  long long *all = lua_newuserdata(L, sizeof(long long) * HEADER_LEN * (size_t)size);
  RUN(L, what, MPI_Allgather(h, HEADER_LEN, MPI_LONG_LONG, all, HEADER_LEN, MPI_LONG_LONG, c->comm),
      MPI_Iallgather(h, HEADER_LEN, MPI_LONG_LONG, all, HEADER_LEN, MPI_LONG_LONG, c->comm, &req_));
  lua_createtable(L, size, 0);
  for (int r = 0; r < size; r++) {
    push_header(L, all + (size_t)r * HEADER_LEN);
    lua_rawseti(L, -2, r + 1);
  }
  return 1;
}

/* send_header(comm, {16}, dest, tag) / recv_header(comm, src, tag) -> {16} */
static int l_send_header(lua_State *L) {
  comm_ud *c = check_comm(L, 1, "send");
  long long h[HEADER_LEN];
  read_header(L, 2, h);
  int dest = check_peer(L, c, 3, "send");
  int tag = check_int(L, 4, "send", "sr_tag");
  RUN(L, "send", MPI_Send(h, HEADER_LEN, MPI_LONG_LONG, dest, tag, c->comm),
      MPI_Isend(h, HEADER_LEN, MPI_LONG_LONG, dest, tag, c->comm, &req_));
  return 0;
}

static int l_recv_header(lua_State *L) {
  comm_ud *c = check_comm(L, 1, "recv");
  int src = check_peer(L, c, 2, "recv");
  int tag = check_int(L, 3, "recv", "sr_tag");
  long long h[HEADER_LEN];
  RUN(L, "recv", MPI_Recv(h, HEADER_LEN, MPI_LONG_LONG, src, tag, c->comm, MPI_STATUS_IGNORE),
      MPI_Irecv(h, HEADER_LEN, MPI_LONG_LONG, src, tag, c->comm, &req_));
  push_header(L, h);
  return 1;
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
                                 {"allreduce", l_allreduce},
                                 {"iallreduce", l_iallreduce},
                                 {"allgather", l_allgather},
                                 {"reduce_scatter", l_reduce_scatter},
                                 {"bcast", l_bcast},
                                 {"reduce", l_reduce},
                                 {"barrier", l_barrier},
                                 {"send", l_send},
                                 {"recv", l_recv},
                                 {"headers", l_headers},
                                 {"send_header", l_send_header},
                                 {"recv_header", l_recv_header},
                                 {"wtime", l_wtime},
                                 {"version", l_version},
                                 {NULL, NULL}};

int luaopen_cell_comm_mpi(lua_State *L) {
  luaL_newmetatable(L, COMM_MT);
  lua_pushcfunction(L, comm_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  luaL_newmetatable(L, REQ_MT);
  lua_pushcfunction(L, req_gc);
  lua_setfield(L, -2, "__gc");
  lua_newtable(L);
  lua_pushcfunction(L, req_wait);
  lua_setfield(L, -2, "wait");
  lua_pushcfunction(L, req_test);
  lua_setfield(L, -2, "test");
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);

  lua_newtable(L); /* the module */
  lua_newtable(L); /* K: what cell.core gives now */
  int k = lua_gettop(L);
  lua_getglobal(L, "require");
  lua_pushstring(L, "cell.core");
  lua_call(L, 1, 1);
  int core = lua_gettop(L);
  lua_getfield(L, core, "is_tensor");
  lua_setfield(L, k, "is_tensor");
  /* a tensor, for its metatable's __index and its methods */
  lua_getfield(L, core, "empty");
  lua_createtable(L, 1, 0);
  lua_pushinteger(L, 1);
  lua_rawseti(L, -2, 1);
  lua_call(L, 1, 1);
  int t = lua_gettop(L);
  if (!lua_getmetatable(L, t)) return luaL_error(L, "RuntimeError: cell.comm_mpi: cell.core's tensors have no metatable");
  lua_getfield(L, -1, "__index");
  lua_setfield(L, k, "index");
  lua_pop(L, 1);
  static const char *const methods[] = {"numel", "is_contiguous", "data_ptr"};
  for (int i = 0; i < 3; i++) {
    lua_getfield(L, k, "index");
    lua_pushvalue(L, t);
    lua_pushstring(L, methods[i]);
    lua_call(L, 2, 1);
    lua_setfield(L, k, methods[i]);
  }
  lua_newtable(L); /* dtypes */
  for (int i = 0; i < NDTYPES; i++) {
    lua_getfield(L, core, DTYPES[i].name);
    lua_pushinteger(L, i);
    lua_rawset(L, -3);
  }
  lua_setfield(L, k, "dtypes");
  lua_settop(L, k);
  luaL_setfuncs(L, funcs, 1);
  return 1;
}
