/* ew.h - a small elementwise interpreter for gradient formulas (internal).
 *
 * cell_ew runs one formula over up to three operands (a, b, c, each
 * broadcast to the result's shape, any float dtype and stride layout) in one
 * pass: operands load as doubles in chunks (cell_load_run), the formula runs
 * on the chunk, and the result is stored in the result's dtype. Autograd's
 * rules (src/autograd/rules_math.c) build their gradients with it, so a rule
 * makes one tensor instead of a chain of temporaries. A device runs it as
 * one of its kernels. */
#ifndef CELL_OPS_EW_H
#define CELL_OPS_EW_H
#include "../core/tensor.h"

/* Operands are called a, b, c (each may be absent); k0, k1 are numbers. */
typedef enum {
  EW_NONE = 0,
  /* unary rules: a = g, b = x (input), c = y (output) */
  EW_ABS,
  EW_NEG,
  EW_EXP,
  EW_LOG,
  EW_LOG1P,
  EW_SQRT,
  EW_RSQRT,
  EW_SIN,
  EW_COS,
  EW_TANH,
  EW_SIGMOID,
  EW_RELU,
  EW_GELU,
  EW_SILU,
  /* the others */
  EW_CLAMP,      /* (g, x): g where k0 <= x <= k1 */
  EW_SEL_TRUE,   /* (g, cond): g where cond */
  EW_SEL_FALSE,  /* (g, cond): g where !cond */
  EW_SCALE,      /* (a): a * k0 */
  EW_MUL,        /* (a, b): a * b */
  EW_DIV,        /* (a, b): a / b */
  EW_EQ,         /* (a, b): a == b */
  EW_ABS_EQ,     /* (a, b): |a| == b */
  EW_IS_ZERO,    /* (a): a == 0 */
  EW_ZERO_TO_ONE,/* (a): a == 0 ? 1 : a */
  EW_PROD,       /* (gw, x, zeros): see prod_grad */
  EW_PICK,       /* (gc, x, y): x == y ? gc : 0 */
  EW_PICK_ABS,   /* (gc, x, y): |x| == y ? gc * sign(x) : 0 */
  EW_STD_SCALE,  /* (g, std): std == 0 ? 0 : g / (k0 * std) */
  EW_DEV,        /* (gs, x, mean): gs * (x - mean) */
  EW_NORM_SCALE, /* (g, norm): norm == 0 ? 0 : g / norm^(k0 - 1) */
  EW_NORM,       /* (gs, x): x == 0 ? 0 : gs * sign(x) |x|^(k0 - 1) */
  /* issue 13's elementwise math: unary (g, x, y) as above */
  EW_ERF,
  EW_ERFC,
  EW_TAN,        /* uses y */
  EW_ATAN,
  EW_ASIN,
  EW_ACOS,
  EW_SINH,
  EW_COSH,
  EW_LOG2,
  EW_LOG10,
  EW_EXP2,       /* uses y */
  EW_EXPM1,      /* uses y */
  EW_SQUARE,
  EW_RECIPROCAL, /* uses y */
  EW_SOFTPLUS,   /* (g, x): k0 = beta, k1 = threshold */
  EW_FINITE,     /* (g, x): g where x is finite (nan_to_num) */
  /* binary (g, a, b): the gradient for a or for b */
  EW_ATAN2_A,    /* g b / (a^2 + b^2) */
  EW_ATAN2_B,    /* -g a / (a^2 + b^2) */
  EW_REM_B,      /* -g floor(a / b) (remainder) */
  EW_FMOD_B      /* -g trunc(a / b) (fmod) */
} ew_op;

/* The kernel ew (a row of kernel_list.h: cell_k_ew, the CPU's cell_cpu_ew)
 * makes a new contiguous tensor of dtype dt and the given shape: op over
 * the operands a, b, c (NULL when unused), each broadcast to that shape;
 * k0, k1 are the formula's numbers. RuntimeError when an operand does not
 * broadcast to shape. */

#endif
