/* mpi_coll.c - cell.comm_mpi's collectives (all_reduce and its
 * non-blocking form with its request type, all_gather, reduce_scatter,
 * broadcast, reduce, barrier), point to point (send, recv), and the
 * headers that check every rank passes the same shapes. */
#include "mpi_impl.h"
#include <stdio.h>
#include <string.h>

/* --- collectives ---------------------------------------------------------------- */

static void same_kind(lua_State *L, const char *what, const buf *a, const buf *b, int ratio_num, int ratio_den) {
  if (a->dtype != b->dtype)
    luaL_error(L, "TypeError: %s: input is %s but output is %s", what, cm_dtypes[a->dtype].name, cm_dtypes[b->dtype].name);
  if ((long long)a->count * ratio_num != (long long)b->count * ratio_den)
    luaL_error(L, "ValueError: %s: output has %d elements, expected %lld", what, b->count,
               (long long)a->count * ratio_num / ratio_den);
}

/* allreduce(comm, src, dst, op): dst may be src (in place). */
static int l_allreduce(lua_State *L) {
  comm_ud *c = cm_check_comm(L, 1, "all_reduce");
  buf s, d;
  cm_get_buf(L, 2, "all_reduce", &s);
  cm_get_buf(L, 3, "all_reduce", &d);
  same_kind(L, "all_reduce", &s, &d, 1, 1);
  MPI_Op op = cm_get_op(L, 4, "all_reduce", s.dtype);
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
  comm_ud *c = cm_check_comm(L, 1, "all_reduce");
  buf d;
  cm_get_buf(L, 2, "all_reduce", &d);
  MPI_Op op = cm_get_op(L, 3, "all_reduce", d.dtype);
  req_ud *r = lua_newuserdata(L, sizeof *r);
  r->req = MPI_REQUEST_NULL;
  r->ref = LUA_NOREF;
  luaL_setmetatable(L, REQ_MT);
  lua_pushvalue(L, 2);
  r->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  CHECK(L, "all_reduce", MPI_Iallreduce(MPI_IN_PLACE, d.ptr, d.count, d.mpi, op, c->comm, &r->req));
  return 1;
}

int cm_req_wait(lua_State *L) {
  req_ud *r = luaL_checkudata(L, 1, REQ_MT);
  if (r->req != MPI_REQUEST_NULL) {
    if (cm_timeout > 0)
      cm_wait_bounded(L, "all_reduce (DistributedGradReducer)", &r->req);
    else
      CHECK(L, "wait", MPI_Wait(&r->req, MPI_STATUS_IGNORE));
  }
  luaL_unref(L, LUA_REGISTRYINDEX, r->ref);
  r->ref = LUA_NOREF;
  return 0;
}

int cm_req_test(lua_State *L) {
  req_ud *r = luaL_checkudata(L, 1, REQ_MT);
  int done = 1;
  if (r->req != MPI_REQUEST_NULL) CHECK(L, "test", MPI_Test(&r->req, &done, MPI_STATUS_IGNORE));
  lua_pushboolean(L, done);
  return 1;
}

/* A request collected while running: wait for it (its buffer must outlive
 * MPI's use; the registry reference kept the tensor alive until here). */
int cm_req_gc(lua_State *L) {
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
  comm_ud *c = cm_check_comm(L, 1, "all_gather");
  int size;
  MPI_Comm_size(c->comm, &size);
  buf s, d;
  cm_get_buf(L, 2, "all_gather", &s);
  cm_get_buf(L, 3, "all_gather", &d);
  same_kind(L, "all_gather", &s, &d, size, 1);
  RUN(L, "all_gather", MPI_Allgather(s.ptr, s.count, s.mpi, d.ptr, s.count, s.mpi, c->comm),
      MPI_Iallgather(s.ptr, s.count, s.mpi, d.ptr, s.count, s.mpi, c->comm, &req_));
  return 0;
}

/* reduce_scatter(comm, src, dst, op): dst holds src's elements / size. */
static int l_reduce_scatter(lua_State *L) {
  comm_ud *c = cm_check_comm(L, 1, "reduce_scatter");
  int size;
  MPI_Comm_size(c->comm, &size);
  buf s, d;
  cm_get_buf(L, 2, "reduce_scatter", &s);
  cm_get_buf(L, 3, "reduce_scatter", &d);
  same_kind(L, "reduce_scatter", &s, &d, 1, size);
  MPI_Op op = cm_get_op(L, 4, "reduce_scatter", s.dtype);
  RUN(L, "reduce_scatter", MPI_Reduce_scatter_block(s.ptr, d.ptr, d.count, d.mpi, op, c->comm),
      MPI_Ireduce_scatter_block(s.ptr, d.ptr, d.count, d.mpi, op, c->comm, &req_));
  return 0;
}

static int check_root(lua_State *L, comm_ud *c, int idx, const char *what) {
  int size;
  MPI_Comm_size(c->comm, &size);
  int root = cm_check_int(L, idx, what, "root");
  if (root < 0 || root >= size)
    luaL_error(L, "ValueError: %s: root %d is not a rank of the group (0..%d)", what, root, size - 1);
  return root;
}

/* bcast(comm, src, dst, root): root's src arrives in every rank's dst
 * (root copies src into dst first, unless they are one buffer). */
static int l_bcast(lua_State *L) {
  comm_ud *c = cm_check_comm(L, 1, "broadcast");
  buf s, d;
  cm_get_buf(L, 2, "broadcast", &s);
  cm_get_buf(L, 3, "broadcast", &d);
  same_kind(L, "broadcast", &s, &d, 1, 1);
  int root = check_root(L, c, 4, "broadcast");
  int me;
  MPI_Comm_rank(c->comm, &me);
  if (me == root && s.ptr != d.ptr) memmove(d.ptr, s.ptr, (size_t)d.count * (size_t)d.esize);
  RUN(L, "broadcast", MPI_Bcast(d.ptr, d.count, d.mpi, root, c->comm),
      MPI_Ibcast(d.ptr, d.count, d.mpi, root, c->comm, &req_));
  return 0;
}

/* reduce(comm, src, dst, op, root): dst is written on root only. */
static int l_reduce(lua_State *L) {
  comm_ud *c = cm_check_comm(L, 1, "reduce");
  buf s, d;
  cm_get_buf(L, 2, "reduce", &s);
  cm_get_buf(L, 3, "reduce", &d);
  same_kind(L, "reduce", &s, &d, 1, 1);
  MPI_Op op = cm_get_op(L, 4, "reduce", s.dtype);
  int root = check_root(L, c, 5, "reduce");
  int me;
  MPI_Comm_rank(c->comm, &me);
  const void *src = (me == root && s.ptr == d.ptr) ? MPI_IN_PLACE : s.ptr;
  RUN(L, "reduce", MPI_Reduce(src, d.ptr, s.count, s.mpi, op, root, c->comm),
      MPI_Ireduce(src, d.ptr, s.count, s.mpi, op, root, c->comm, &req_));
  return 0;
}

static int l_barrier(lua_State *L) {
  comm_ud *c = cm_check_comm(L, 1, "barrier");
  RUN(L, "barrier", MPI_Barrier(c->comm), MPI_Ibarrier(c->comm, &req_));
  return 0;
}

static int check_peer(lua_State *L, comm_ud *c, int idx, const char *what) {
  int size, me;
  MPI_Comm_size(c->comm, &size);
  MPI_Comm_rank(c->comm, &me);
  int p = cm_check_int(L, idx, what, "the peer rank");
  if (p < 0 || p >= size) luaL_error(L, "ValueError: %s: rank %d is not in the group (0..%d)", what, p, size - 1);
  if (p == me) luaL_error(L, "ValueError: %s: rank %d cannot %s itself", what, p, what);
  return p;
}

/* send(comm, t, dest, tag) / recv(comm, t, src, tag) */
static int l_send(lua_State *L) {
  comm_ud *c = cm_check_comm(L, 1, "send");
  buf d;
  cm_get_buf(L, 2, "send", &d);
  int dest = check_peer(L, c, 3, "send");
  int tag = cm_check_int(L, 4, "send", "sr_tag");
  RUN(L, "send", MPI_Send(d.ptr, d.count, d.mpi, dest, tag, c->comm),
      MPI_Isend(d.ptr, d.count, d.mpi, dest, tag, c->comm, &req_));
  return 0;
}

static int l_recv(lua_State *L) {
  comm_ud *c = cm_check_comm(L, 1, "recv");
  buf d;
  cm_get_buf(L, 2, "recv", &d);
  int src = check_peer(L, c, 3, "recv");
  int tag = cm_check_int(L, 4, "recv", "sr_tag");
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
  comm_ud *c = cm_check_comm(L, 1, what);
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
  comm_ud *c = cm_check_comm(L, 1, "send");
  long long h[HEADER_LEN];
  read_header(L, 2, h);
  int dest = check_peer(L, c, 3, "send");
  int tag = cm_check_int(L, 4, "send", "sr_tag");
  RUN(L, "send", MPI_Send(h, HEADER_LEN, MPI_LONG_LONG, dest, tag, c->comm),
      MPI_Isend(h, HEADER_LEN, MPI_LONG_LONG, dest, tag, c->comm, &req_));
  return 0;
}

static int l_recv_header(lua_State *L) {
  comm_ud *c = cm_check_comm(L, 1, "recv");
  int src = check_peer(L, c, 2, "recv");
  int tag = cm_check_int(L, 3, "recv", "sr_tag");
  long long h[HEADER_LEN];
  RUN(L, "recv", MPI_Recv(h, HEADER_LEN, MPI_LONG_LONG, src, tag, c->comm, MPI_STATUS_IGNORE),
      MPI_Irecv(h, HEADER_LEN, MPI_LONG_LONG, src, tag, c->comm, &req_));
  push_header(L, h);
  return 1;
}

const luaL_Reg cm_coll_funcs[] = {{"allreduce", l_allreduce},
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
                                  {NULL, NULL}};
