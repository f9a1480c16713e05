/* dtype.c - dtype names, sizes and MindSpore's type promotion. */
#include "dtype.h"
#include <strings.h>

static const struct {
  const char *name, *lower;
  int size;
  int rank; /* order within the promotion lattice */
} info[CELL_DTYPE_COUNT] = {
    [CELL_DTYPE_F32] = {"Float32", "float32", 4, 6},
    [CELL_DTYPE_F64] = {"Float64", "float64", 8, 7},
    [CELL_DTYPE_F16] = {"Float16", "float16", 2, 5},
    [CELL_DTYPE_BF16] = {"BFloat16", "bfloat16", 2, 5},
    [CELL_DTYPE_I8] = {"Int8", "int8", 1, 1},
    [CELL_DTYPE_U8] = {"UInt8", "uint8", 1, 1},
    [CELL_DTYPE_I16] = {"Int16", "int16", 2, 2},
    [CELL_DTYPE_I32] = {"Int32", "int32", 4, 3},
    [CELL_DTYPE_I64] = {"Int64", "int64", 8, 4},
    [CELL_DTYPE_BOOL] = {"Bool", "bool", 1, 0},
};

const char *cell_dtype_name(cell_dtype d) {
  return (unsigned)d < CELL_DTYPE_COUNT ? info[d].name : "Unknown";
}

int cell_dtype_size(cell_dtype d) { return (unsigned)d < CELL_DTYPE_COUNT ? info[d].size : 0; }

int cell_dtype_is_float(cell_dtype d) {
  return d == CELL_DTYPE_F32 || d == CELL_DTYPE_F64 || d == CELL_DTYPE_F16 ||
         d == CELL_DTYPE_BF16;
}

cell_dtype cell_dtype_from_name(const char *name) {
  if (!name) return CELL_DTYPE_COUNT;
  for (int i = 0; i < CELL_DTYPE_COUNT; i++)
    if (strcasecmp(name, info[i].lower) == 0) return (cell_dtype)i;
  return CELL_DTYPE_COUNT;
}

cell_dtype cell_dtype_promote(cell_dtype a, cell_dtype b) {
  if ((unsigned)a >= CELL_DTYPE_COUNT || (unsigned)b >= CELL_DTYPE_COUNT) return CELL_DTYPE_COUNT;
  if (a == b) return a;
  /* Mixed signed/unsigned bytes: int16, the smallest type holding both
   * (PyTorch and MindSpore). */
  if ((a == CELL_DTYPE_I8 && b == CELL_DTYPE_U8) || (a == CELL_DTYPE_U8 && b == CELL_DTYPE_I8))
    return CELL_DTYPE_I16;
  /* float16 with bfloat16: neither holds the other, so float32. */
  if ((a == CELL_DTYPE_F16 && b == CELL_DTYPE_BF16) || (a == CELL_DTYPE_BF16 && b == CELL_DTYPE_F16))
    return CELL_DTYPE_F32;
  return info[a].rank >= info[b].rank ? a : b;
}

cell_dtype cell_dtype_promote_scalar(cell_dtype t, int scalar_is_float) {
  if (scalar_is_float) return cell_dtype_is_float(t) ? t : CELL_DTYPE_F32;
  return t == CELL_DTYPE_BOOL ? CELL_DTYPE_I64 : t;
}

/* Whether a value of dtype from may be stored into to by an in-place op:
 * never float into integer, nor anything but bool into bool. */
int cell_dtype_can_cast(cell_dtype from, cell_dtype to) {
  if (cell_dtype_is_float(from) && !cell_dtype_is_float(to)) return 0;
  if (to == CELL_DTYPE_BOOL && from != CELL_DTYPE_BOOL) return 0;
  return 1;
}

double cell_element_get_f64(cell_dtype dt, const void *p) { return cell_load_f64(dt, p); }
long long cell_element_get_i64(cell_dtype dt, const void *p) { return cell_load_i64(dt, p); }
void cell_element_set_f64(cell_dtype dt, void *p, double v) { cell_store_f64(dt, p, v); }
void cell_element_set_i64(cell_dtype dt, void *p, long long v) { cell_store_i64(dt, p, v); }
