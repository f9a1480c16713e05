/* mpi_impl.h - what the two halves of cell.comm_mpi share: errors and
 * the bounded wait (RUN), communicators, and tensors as MPI buffers. mpi.c
 * holds these and the lifecycle; mpi_coll.c the collectives, point to
 * point and the shape-check headers. Internal to the module. */
#ifndef CELL_COMM_MPI_IMPL_H
#define CELL_COMM_MPI_IMPL_H
#include "tensor_buf.h"
#include <mpi.h>

#define COMM_MT "cell.comm_mpi.Comm"
#define REQ_MT "cell.comm_mpi.Request"
#define HIDDEN __attribute__((visibility("hidden")))

extern int cm_rank;       /* this process's world rank, -1 before init */
extern double cm_timeout; /* CELL_COMM_TIMEOUT: seconds a call may wait, 0 for ever */

/* Raise "RuntimeError: <what>: MPI: <text>" for MPI's error rc. */
HIDDEN int cm_fail(lua_State *L, const char *what, int rc);
/* Raise unless MPI is initialized and not finalized. */
HIDDEN void cm_need_init(lua_State *L, const char *what);
/* Wait for req, at most cm_timeout seconds (then abort the job). */
HIDDEN void cm_wait_bounded(lua_State *L, const char *what, MPI_Request *req);

#define CHECK(L, what, call)                         \
  do {                                               \
    int rc_ = (call);                                \
    if (rc_ != MPI_SUCCESS) cm_fail(L, what, rc_);   \
  } while (0)

/* The blocking call, or (with a timeout) its non-blocking form waited for
 * with a bound. `nb` is the non-blocking call, writing &req_. */
#define RUN(L, what, blocking, nb)              \
  do {                                          \
    if (cm_timeout > 0) {                       \
      MPI_Request req_ = MPI_REQUEST_NULL;      \
      CHECK(L, what, nb);                       \
      cm_wait_bounded(L, what, &req_);          \
    } else {                                    \
      CHECK(L, what, blocking);                 \
    }                                           \
  } while (0)

typedef struct {
  MPI_Comm comm;
  int owned; /* made by create_group: freed by free() or collection */
} comm_ud;

/* The communicator at idx (raises when it is not one, or was destroyed). */
HIDDEN comm_ud *cm_check_comm(lua_State *L, int idx, const char *what);

/* A CPU contiguous tensor as an MPI buffer. */
typedef struct {
  void *ptr;
  int count;
  int dtype; /* index in cm_dtypes */
  MPI_Datatype mpi;
  int esize;
} buf;

/* The tensor at idx as a buffer (raises for anything else). Needs the
 * module's upvalue 1 (what cell.core gave at load). */
HIDDEN void cm_get_buf(lua_State *L, int idx, const char *what, buf *b);
/* The reduce op named at idx ("sum", "prod", "max", "min") for dtype. */
HIDDEN MPI_Op cm_get_op(lua_State *L, int idx, const char *what, int dtype);
/* The integer at idx (raises "TypeError: what: name must be an integer"). */
HIDDEN int cm_check_int(lua_State *L, int idx, const char *what, const char *name);

/* mpi_coll.c: the functions it adds to the module, and the request type's. */
extern const luaL_Reg cm_coll_funcs[];
HIDDEN int cm_req_gc(lua_State *L);
HIDDEN int cm_req_wait(lua_State *L);
HIDDEN int cm_req_test(lua_State *L);

#endif
