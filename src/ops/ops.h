/* ops.h - helpers shared by the op families (internal). */
#ifndef CELL_OPS_OPS_H
#define CELL_OPS_OPS_H
#include "../core/tensor.h"
#include <math.h>

/* t itself (retained) when it already has dtype dt, else a converted copy. */
cell_status cell_as_dtype(const cell_tensor *t, cell_dtype dt, cell_tensor **out);
/* cell_release4 and cell_dtype_can_cast are core's (tensor.h, dtype.h). */

/* PyTorch's div(a, b, rounding_mode = "floor") for floats, in double (its
 * CPU kernel's div_floor): a / b where b == 0 (+-inf or NaN), a signed
 * zero where the quotient is zero; floor_divide (binary.c) and the fused
 * kernels (ew.c) share it. */
static inline double cell_floor_div(double a, double b) {
  if (b == 0) return a / b;
  double m = fmod(a, b), d = (a - m) / b;
  if (m != 0 && ((b < 0) != (m < 0))) d -= 1.0;
  if (d == 0) return copysign(0.0, a / b);
  double f = floor(d);
  return d - f > 0.5 ? f + 1.0 : f;
}
#endif
