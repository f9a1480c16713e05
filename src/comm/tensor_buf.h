/* tensor_buf.h - a cell tensor as a raw buffer, for the transports under
 * cell.communication: the MPI module (src/comm) and the NCCL layer of the
 * GPU module (src/cuda/nccl.c) share it. A tensor is reached only through
 * its Lua interface, as cell.core gave it when the module loaded
 * (is_tensor, the tensors' own __index, numel, is_contiguous, data_ptr),
 * so no value a script passes can make a transport touch memory that is
 * not a tensor's, and neither module links the binding. */
#ifndef CELL_COMM_TENSOR_BUF_H
#define CELL_COMM_TENSOR_BUF_H
#include <lauxlib.h>
#include <lua.h>

#if LUA_VERSION_NUM < 502
#define lua_rawlen(L, i) lua_objlen(L, (i))
#define lua_absindex(L, i) ((i) > 0 || (i) <= LUA_REGISTRYINDEX ? (i) : lua_gettop(L) + (i) + 1)
#endif

typedef struct {
  const char *name;
  int size;
} cm_dtype;

/* The dtypes a transport moves, by index: float32, float64, float16,
 * bfloat16, int8, uint8, int32, int64, bool, int16. */
extern const cm_dtype cm_dtypes[];
#define CM_NDTYPES 10

typedef struct {
  void *ptr;  /* the first element (a device address for a GPU tensor) */
  int count;  /* elements (at most 2^31 - 1) */
  int dtype;  /* index in cm_dtypes */
  int esize;  /* bytes per element */
  int device; /* the device's index ("GPU:1" -> 1; 0 for the CPU) */
} cm_tbuf;

/* Push the table K of what cell.core gives now (require "cell.core" must
 * work): a transport keeps it as the upvalue of its functions. */
void cm_tbuf_push_k(lua_State *L);
/* The tensor at idx as a buffer; k: K's index. It must be a contiguous
 * tensor on a device whose name is `kind` ("CPU", "GPU"); else raises
 * "ValueError: <what>: argument #<idx> is on <device>; the <layer> layer
 * takes <kind> tensors" (or TypeError for a non-tensor or a dtype not in
 * cm_dtypes). */
void cm_tbuf_get(lua_State *L, int k, int idx, const char *what, const char *kind, const char *layer, cm_tbuf *b);

#endif
