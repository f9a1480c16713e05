/* nccl.c - the NCCL layer of cell.cuda, built into the module where nccl.h
 * is found (make cuda): cell.communication's transport for GPU tensors.
 * It has the MPI module's calls -- allreduce(comm, src, dst, op),
 * allgather(comm, src, dst), reduce_scatter(comm, src, dst, op),
 * bcast(comm, src, dst, root), reduce(comm, src, dst, op, root), send(comm, t,
 * peer, tag), recv(comm, t, peer, tag) -- so one Lua front end drives both
 * (lua/cell/communication/transport.lua). MPI bootstraps it: group rank 0's
 * unique_id() travels to the others over the group's MPI communicator, and
 * the shape-check headers go over MPI too. NCCL has no tags: messages
 * between two ranks match in the order they are posted.
 *
 * Tensors are read through their Lua interface (src/comm/tensor_buf.c), as
 * the MPI module reads them; each must be a contiguous GPU tensor on the
 * communicator's device. A call is queued on that device's stream -- the
 * one every kernel of cell.cuda runs on, so it follows the kernels that
 * made its input -- and then waited for, so it returns with its result in
 * place as an MPI call does. With CELL_COMM_TIMEOUT (seconds) the wait is
 * bounded: past it the communicator is aborted (ncclCommAbort) and the call
 * raises, and the rank's nonzero exit ends the job through MPI. */
#include "../comm/tensor_buf.h"
#include "gpu.h"
/* nccl.h declares a few functions with () for (void) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NCCL_COMM_MT "cell.comm_nccl.Comm"

int luaopen_cell_comm_nccl(lua_State *L);

typedef struct {
  ncclComm_t comm;
  int ordinal; /* the CUDA device of every buffer */
  int nranks, rank;
  int dead; /* destroyed or aborted */
  double timeout;
} nccl_ud;

static int nccl_fail(lua_State *L, const char *what, ncclResult_t r, nccl_ud *c) {
  const char *last = c ? ncclGetLastError(c->comm) : NULL;
  return luaL_error(L, "RuntimeError: %s: NCCL: %s%s%s", what, ncclGetErrorString(r), last && *last ? ": " : "",
                    last && *last ? last : "");
}

static int cuda_fail(lua_State *L, const char *what, cudaError_t e) {
  return luaL_error(L, "RuntimeError: %s: CUDA: %s", what, cudaGetErrorString(e));
}

static nccl_ud *check_comm(lua_State *L, int idx, const char *what) {
  nccl_ud *c = luaL_testudata(L, idx, NCCL_COMM_MT);
  if (!c) luaL_error(L, "TypeError: %s: argument #%d must be an NCCL communicator", what, idx);
  if (c->dead) luaL_error(L, "RuntimeError: %s: the NCCL communicator was destroyed or aborted", what);
  return c;
}

/* NCCL's type for cm_dtypes[d]; -1 for bool and int16, which NCCL lacks
 * (cell.communication sends those through MPI). */
static int nccl_type(int d) {
  switch (d) {
  case 0: return ncclFloat32;
  case 1: return ncclFloat64;
  case 2: return ncclFloat16;
  case 3: return ncclBfloat16;
  case 4: return ncclInt8;
  case 5: return ncclUint8;
  case 6: return ncclInt32;
  case 7: return ncclInt64;
  default: return -1;
  }
}

/* The tensor at idx as a buffer on c's device, with its NCCL type. */
static ncclDataType_t get_buf(lua_State *L, nccl_ud *c, int idx, const char *what, cm_tbuf *b) {
  cm_tbuf_get(L, lua_upvalueindex(1), idx, what, "GPU", "NCCL", b);
  if (b->device != c->ordinal)
    luaL_error(L, "ValueError: %s: argument #%d is on GPU:%d, but the group's NCCL communicator is on GPU:%d", what,
               idx, b->device, c->ordinal);
  int t = nccl_type(b->dtype);
  if (t < 0) luaL_error(L, "TypeError: %s: NCCL has no %s type", what, cm_dtypes[b->dtype].name);
  return (ncclDataType_t)t;
}

static ncclRedOp_t get_op(lua_State *L, int idx, const char *what) {
  const char *s = luaL_checkstring(L, idx);
  if (strcmp(s, "sum") == 0) return ncclSum;
  if (strcmp(s, "prod") == 0) return ncclProd;
  if (strcmp(s, "max") == 0) return ncclMax;
  if (strcmp(s, "min") == 0) return ncclMin;
  if (strcmp(s, "mean") == 0) return ncclAvg;
  luaL_error(L, "ValueError: %s: unknown reduce op '%s'", what, s);
  return ncclSum;
}

static int check_rank(lua_State *L, nccl_ud *c, int idx, const char *what, const char *name) {
  lua_Number v = luaL_checknumber(L, idx);
  int r = (int)v;
  if ((lua_Number)r != v || r < 0 || r >= c->nranks)
    luaL_error(L, "ValueError: %s: %s %g is not a rank of the group (0..%d)", what, name, (double)v, c->nranks - 1);
  return r;
}

static void same_kind(lua_State *L, const char *what, const cm_tbuf *a, const cm_tbuf *b, long long num,
                      long long den) {
  if (a->dtype != b->dtype)
    luaL_error(L, "TypeError: %s: input is %s but output is %s", what, cm_dtypes[a->dtype].name,
               cm_dtypes[b->dtype].name);
  if ((long long)a->count * num != (long long)b->count * den)
    luaL_error(L, "ValueError: %s: output has %d elements, expected %lld", what, b->count,
               (long long)a->count * num / den);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Wait for what was queued on the device's stream up to event ev (NULL:
 * everything queued); bounded by c->timeout (when set), then the
 * communicator is aborted and the call raises. */
static void wait_event(lua_State *L, nccl_ud *c, gpu_ctx *g, cudaEvent_t ev, const char *what) {
  double t0 = now();
  for (;;) {
    cudaError_t e = ev ? cudaEventQuery(ev) : cudaStreamQuery(g->stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) cuda_fail(L, what, e);
    ncclResult_t async = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(c->comm, &async);
    if (r != ncclSuccess) nccl_fail(L, what, r, c);
    if (async != ncclSuccess && async != ncclInProgress) {
      ncclCommAbort(c->comm);
      c->dead = 1;
      nccl_fail(L, what, async, NULL);
    }
    if (c->timeout > 0 && now() - t0 > c->timeout) {
      ncclCommAbort(c->comm);
      c->dead = 1;
      luaL_error(L, "RuntimeError: %s did not complete within %g s (CELL_COMM_TIMEOUT): another rank is not taking "
                    "part (stuck, or in another call); the NCCL communicator was aborted", what, c->timeout);
    }
    sched_yield();
  }
}

static void wait_done(lua_State *L, nccl_ud *c, gpu_ctx *g, const char *what) { wait_event(L, c, g, NULL, what); }

/* Queue `call` on c's device stream, then wait for it. */
#define RUN(L, c, what, call)                                   \
  do {                                                          \
    gpu_ctx *g_ = &gpu_ctxs[(c)->ordinal];                      \
    cudaError_t e_ = cudaSetDevice((c)->ordinal);               \
    if (e_ != cudaSuccess) cuda_fail(L, what, e_);              \
    cudaStream_t stream = g_->stream;                           \
    ncclResult_t r_ = (call);                                   \
    if (r_ != ncclSuccess && r_ != ncclInProgress) nccl_fail(L, what, r_, c); \
    wait_done(L, c, g_, what);                                  \
  } while (0)

/* --- lifecycle ---------------------------------------------------------------- */

static int l_unique_id(lua_State *L) {
  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess) return nccl_fail(L, "init", r, NULL);
  lua_pushlstring(L, id.internal, NCCL_UNIQUE_ID_BYTES);
  return 1;
}

/* comm_init(id, nranks, rank, ordinal) -> communicator */
static int l_comm_init(lua_State *L) {
  size_t n = 0;
  const char *s = luaL_checklstring(L, 1, &n);
  if (n != NCCL_UNIQUE_ID_BYTES)
    return luaL_error(L, "ValueError: init: an NCCL unique id has %d bytes, but got %d", NCCL_UNIQUE_ID_BYTES, (int)n);
  int nranks = (int)luaL_checkinteger(L, 2);
  int rank = (int)luaL_checkinteger(L, 3);
  int ordinal = (int)luaL_checkinteger(L, 4);
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return luaL_error(L, "ValueError: init: rank %d of %d ranks", rank, nranks);
  if (ordinal < 0 || ordinal >= gpu_count)
    return luaL_error(L, "ValueError: init: GPU:%d is not a device (%d GPUs)", ordinal, gpu_count);
  ncclUniqueId id;
  memcpy(id.internal, s, NCCL_UNIQUE_ID_BYTES);
  nccl_ud *c = lua_newuserdata(L, sizeof *c);
  memset(c, 0, sizeof *c);
  c->dead = 1;
  luaL_setmetatable(L, NCCL_COMM_MT);
  cudaError_t e = cudaSetDevice(ordinal);
  if (e != cudaSuccess) return cuda_fail(L, "init", e);
  ncclResult_t r = ncclCommInitRank(&c->comm, nranks, id, rank);
  if (r != ncclSuccess) return nccl_fail(L, "init", r, NULL);
  c->dead = 0;
  c->ordinal = ordinal;
  c->nranks = nranks;
  c->rank = rank;
  const char *tv = getenv("CELL_COMM_TIMEOUT");
  c->timeout = tv && *tv ? strtod(tv, NULL) : 0;
  if (!(c->timeout >= 0)) c->timeout = 0;
  return 1;
}

static int l_free(lua_State *L) {
  nccl_ud *c = luaL_checkudata(L, 1, NCCL_COMM_MT);
  if (!c->dead) {
    c->dead = 1;
    ncclResult_t r = ncclCommDestroy(c->comm);
    if (r != ncclSuccess) return nccl_fail(L, "destroy_group", r, NULL);
  }
  return 0;
}

static int comm_gc(lua_State *L) {
  nccl_ud *c = luaL_checkudata(L, 1, NCCL_COMM_MT);
  if (!c->dead) {
    c->dead = 1;
    ncclCommDestroy(c->comm);
  }
  return 0;
}

static int l_version(lua_State *L) {
  int v = 0;
  ncclGetVersion(&v);
  lua_pushinteger(L, v);
  return 1;
}

/* --- collectives ---------------------------------------------------------------- */

/* What every two-buffer collective (all_reduce, all_gather, reduce_scatter,
 * broadcast, reduce) reads first: the communicator (argument 1), the input
 * and output tensors (2, 3) on its device, of one dtype, the output holding
 * the group size times the input's elements for a gather, a group size'th
 * of them for a scatter, as many otherwise. */
typedef struct {
  nccl_ud *c;
  cm_tbuf s, d;
  ncclDataType_t t;
} coll_args;

static void coll_begin(lua_State *L, const char *what, int gather, int scatter, coll_args *a) {
  a->c = check_comm(L, 1, what);
  a->t = get_buf(L, a->c, 2, what, &a->s);
  get_buf(L, a->c, 3, what, &a->d);
  same_kind(L, what, &a->s, &a->d, gather ? a->c->nranks : 1, scatter ? a->c->nranks : 1);
}

static int l_allreduce(lua_State *L) {
  coll_args a;
  coll_begin(L, "all_reduce", 0, 0, &a);
  ncclRedOp_t op = get_op(L, 4, "all_reduce");
  RUN(L, a.c, "all_reduce", ncclAllReduce(a.s.ptr, a.d.ptr, (size_t)a.s.count, a.t, op, a.c->comm, stream));
  return 0;
}

/* --- the gradient reducer's calls (lua/cell/nn/distributed.lua) ---------------- */

#define NCCL_REQ_MT "cell.comm_nccl.Request"

/* A queued all-reduce: the event recorded after it on the stream, and a
 * registry reference to its communicator (kept alive until the request is). */
typedef struct {
  cudaEvent_t ev;
  int comm_ref;
  int done;
} nccl_req;

/* pack(dst, parts): the contiguous tensors of the list `parts`, one after
 * another, copied into dst (a contiguous tensor of their dtype on their
 * GPU) from its first element, device to device on the GPU's stream. */
static int l_pack(lua_State *L) {
  cm_tbuf d;
  cm_tbuf_get(L, lua_upvalueindex(1), 1, "DistributedGradReducer", "GPU", "NCCL", &d);
  luaL_checktype(L, 2, LUA_TTABLE);
  int n = (int)lua_rawlen(L, 2);
  if (d.device < 0 || d.device >= gpu_count)
    return luaL_error(L, "ValueError: DistributedGradReducer: GPU:%d is not a device (%d GPUs)", d.device, gpu_count);
  gpu_ctx *g = &gpu_ctxs[d.device];
  cudaError_t e = cudaSetDevice(d.device);
  if (e != cudaSuccess) return cuda_fail(L, "DistributedGradReducer", e);
  long long off = 0;
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 2, i);
    cm_tbuf s;
    cm_tbuf_get(L, lua_upvalueindex(1), lua_gettop(L), "DistributedGradReducer", "GPU", "NCCL", &s);
    if (s.dtype != d.dtype || s.device != d.device)
      return luaL_error(L, "ValueError: DistributedGradReducer: gradient %d is %s on GPU:%d, but the bucket is %s on "
                           "GPU:%d", i, cm_dtypes[s.dtype].name, s.device, cm_dtypes[d.dtype].name, d.device);
    if (off + s.count > d.count)
      return luaL_error(L, "ValueError: DistributedGradReducer: the gradients have more than the bucket's %d elements",
                        d.count);
    if (s.count > 0) {
      e = cudaMemcpyAsync((char *)d.ptr + off * d.esize, s.ptr, (size_t)s.count * (size_t)s.esize,
                          cudaMemcpyDeviceToDevice, g->stream);
      if (e != cudaSuccess) return cuda_fail(L, "DistributedGradReducer", e);
    }
    off += s.count;
    lua_pop(L, 1);
  }
  return 0;
}

/* iallreduce(comm, t, op) -> request: t all-reduced in place, queued on the
 * device's stream behind the kernels that made it; request:wait() waits
 * (bounded by CELL_COMM_TIMEOUT as every call), request:test() says
 * whether it is done. */
static int l_iallreduce(lua_State *L) {
  nccl_ud *c = check_comm(L, 1, "all_reduce");
  cm_tbuf b;
  ncclDataType_t t = get_buf(L, c, 2, "all_reduce", &b);
  ncclRedOp_t op = get_op(L, 3, "all_reduce");
  nccl_req *r = lua_newuserdata(L, sizeof *r);
  r->ev = NULL;
  r->comm_ref = LUA_NOREF;
  r->done = 1;
  luaL_setmetatable(L, NCCL_REQ_MT);
  gpu_ctx *g = &gpu_ctxs[c->ordinal];
  cudaError_t e = cudaSetDevice(c->ordinal);
  if (e != cudaSuccess) return cuda_fail(L, "all_reduce", e);
  e = cudaEventCreateWithFlags(&r->ev, cudaEventDisableTiming);
  if (e != cudaSuccess) {
    r->ev = NULL;
    return cuda_fail(L, "all_reduce", e);
  }
  ncclResult_t nr = ncclAllReduce(b.ptr, b.ptr, (size_t)b.count, t, op, c->comm, g->stream);
  if (nr != ncclSuccess && nr != ncclInProgress) return nccl_fail(L, "all_reduce", nr, c);
  e = cudaEventRecord(r->ev, g->stream);
  if (e != cudaSuccess) {
    /* not known when it ends: wait for the whole stream before the buffer can go */
    wait_done(L, c, g, "all_reduce");
    return cuda_fail(L, "all_reduce", e);
  }
  lua_pushvalue(L, 1);
  r->comm_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  r->done = 0;
  return 1;
}

static nccl_ud *req_comm(lua_State *L, nccl_req *r) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, r->comm_ref);
  nccl_ud *c = luaL_testudata(L, -1, NCCL_COMM_MT);
  lua_pop(L, 1); /* the request holds the reference */
  return c;
}

static int req_wait(lua_State *L) {
  nccl_req *r = luaL_checkudata(L, 1, NCCL_REQ_MT);
  if (r->done) return 0;
  nccl_ud *c = req_comm(L, r);
  if (!c) return luaL_error(L, "RuntimeError: all_reduce (DistributedGradReducer): the request has no communicator");
  r->done = 1; /* an error below (a timeout, an abort) ends it too */
  if (c->dead) return luaL_error(L, "RuntimeError: all_reduce (DistributedGradReducer): the NCCL communicator was "
                                    "destroyed or aborted");
  wait_event(L, c, &gpu_ctxs[c->ordinal], r->ev, "all_reduce (DistributedGradReducer)");
  return 0;
}

static int req_test(lua_State *L) {
  nccl_req *r = luaL_checkudata(L, 1, NCCL_REQ_MT);
  if (!r->done && r->ev) {
    cudaError_t e = cudaEventQuery(r->ev);
    if (e == cudaSuccess) r->done = 1;
    else if (e != cudaErrorNotReady) return cuda_fail(L, "all_reduce (DistributedGradReducer)", e);
  }
  lua_pushboolean(L, r->done);
  return 1;
}

/* A request collected: its event and reference go. The buffer it reduces
 * is safe without a wait: its memory is reused only by work queued later
 * on the same stream. */
static int req_gc(lua_State *L) {
  nccl_req *r = luaL_checkudata(L, 1, NCCL_REQ_MT);
  if (r->ev) {
    cudaEventDestroy(r->ev);
    r->ev = NULL;
  }
  if (r->comm_ref != LUA_NOREF) {
    luaL_unref(L, LUA_REGISTRYINDEX, r->comm_ref);
    r->comm_ref = LUA_NOREF;
  }
  r->done = 1;
  return 0;
}

static int l_allgather(lua_State *L) {
  coll_args a;
  coll_begin(L, "all_gather", 1, 0, &a);
  RUN(L, a.c, "all_gather", ncclAllGather(a.s.ptr, a.d.ptr, (size_t)a.s.count, a.t, a.c->comm, stream));
  return 0;
}

static int l_reduce_scatter(lua_State *L) {
  coll_args a;
  coll_begin(L, "reduce_scatter", 0, 1, &a);
  ncclRedOp_t op = get_op(L, 4, "reduce_scatter");
  RUN(L, a.c, "reduce_scatter",
      ncclReduceScatter(a.s.ptr, a.d.ptr, (size_t)a.d.count, a.t, op, a.c->comm, stream));
  return 0;
}

static int l_bcast(lua_State *L) {
  coll_args a;
  coll_begin(L, "broadcast", 0, 0, &a);
  int root = check_rank(L, a.c, 4, "broadcast", "root");
  RUN(L, a.c, "broadcast", ncclBroadcast(a.s.ptr, a.d.ptr, (size_t)a.d.count, a.t, root, a.c->comm, stream));
  return 0;
}

static int l_reduce(lua_State *L) {
  coll_args a;
  coll_begin(L, "reduce", 0, 0, &a);
  ncclRedOp_t op = get_op(L, 4, "reduce");
  int root = check_rank(L, a.c, 5, "reduce", "root");
  RUN(L, a.c, "reduce", ncclReduce(a.s.ptr, a.d.ptr, (size_t)a.s.count, a.t, op, root, a.c->comm, stream));
  return 0;
}

static int peer_of(lua_State *L, nccl_ud *c, int idx, const char *what) {
  int p = check_rank(L, c, idx, what, "the peer rank");
  if (p == c->rank) luaL_error(L, "ValueError: %s: rank %d cannot %s itself", what, p, what);
  return p;
}

/* send(comm, t, peer, tag) / recv(comm, t, peer, tag): the tag is checked
 * and unused (NCCL matches messages in order). */
static int point_to_point(lua_State *L, int is_send) {
  const char *what = is_send ? "send" : "recv";
  nccl_ud *c = check_comm(L, 1, what);
  cm_tbuf b;
  ncclDataType_t t = get_buf(L, c, 2, what, &b);
  int p = peer_of(L, c, 3, what);
  luaL_checknumber(L, 4);
  if (is_send) RUN(L, c, what, ncclSend(b.ptr, (size_t)b.count, t, p, c->comm, stream));
  else RUN(L, c, what, ncclRecv(b.ptr, (size_t)b.count, t, p, c->comm, stream));
  return 0;
}

static int l_send(lua_State *L) { return point_to_point(L, 1); }
static int l_recv(lua_State *L) { return point_to_point(L, 0); }

static const luaL_Reg funcs[] = {{"unique_id", l_unique_id},
                                 {"comm_init", l_comm_init},
                                 {"free", l_free},
                                 {"version", l_version},
                                 {"allreduce", l_allreduce},
                                 {"allgather", l_allgather},
                                 {"reduce_scatter", l_reduce_scatter},
                                 {"bcast", l_bcast},
                                 {"reduce", l_reduce},
                                 {"send", l_send},
                                 {"recv", l_recv},
                                 {"pack", l_pack},
                                 {"iallreduce", l_iallreduce},
                                 {NULL, NULL}};

/* Loaded by cell.communication (package.loadlib on cell.cuda's file), after
 * cell.cuda itself, which found the devices. */
__attribute__((visibility("default"))) int luaopen_cell_comm_nccl(lua_State *L) {
  if (luaL_newmetatable(L, NCCL_COMM_MT)) {
    lua_pushcfunction(L, comm_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  if (luaL_newmetatable(L, NCCL_REQ_MT)) {
    lua_pushcfunction(L, req_gc);
    lua_setfield(L, -2, "__gc");
    lua_newtable(L);
    lua_pushcfunction(L, req_wait);
    lua_setfield(L, -2, "wait");
    lua_pushcfunction(L, req_test);
    lua_setfield(L, -2, "test");
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  lua_newtable(L);
  cm_tbuf_push_k(L);
  luaL_setfuncs(L, funcs, 1);
  lua_pushinteger(L, NCCL_UNIQUE_ID_BYTES);
  lua_setfield(L, -2, "ID_BYTES");
  return 1;
}
