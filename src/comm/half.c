/* half.c - user-defined MPI reductions over float16 and bfloat16 words. */
#include "half.h"
#include <stdint.h>
#include <string.h>

static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu, bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else { /* subnormal: normalise */
      exp = 127 - 15 + 1;
      while (!(man & 0x400u)) {
        man <<= 1;
        exp--;
      }
      bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static uint16_t f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
  if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to inf */
  if (absx < 0x38800000u) { /* subnormal or zero in half */
    if (absx < 0x33000000u) return (uint16_t)sign;
    uint32_t man = (absx & 0x7fffffu) | 0x800000u;
    int shift = 126 - (int)(absx >> 23); /* value = man * 2^(e - 150) = r * 2^-24 */
    uint32_t r = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) r++;
    return (uint16_t)(sign | r);
  }
  uint32_t r = ((absx >> 13) - ((127 - 15) << 10));
  uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) r++;
  return (uint16_t)(sign | r);
}

static float bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static uint16_t f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

static float combine(int op, float a, float b) {
  switch (op) {
  case 0: return a + b;
  case 1: return a * b;
  case 2: return (a != a || a > b) ? a : b; /* NaN propagates */
  default: return (a != a || a < b) ? a : b;
  }
}

#define HALF_FN(name, kind, op)                                                              \
  static void name(void *in, void *inout, int *len, MPI_Datatype *dt) {                     \
    (void)dt;                                                                               \
    const uint16_t *a = in;                                                                 \
    uint16_t *b = inout;                                                                    \
    for (int i = 0; i < *len; i++) {                                                        \
      if (kind == 0)                                                                        \
        b[i] = f32_to_f16(combine(op, f16_to_f32(a[i]), f16_to_f32(b[i])));                 \
      else                                                                                  \
        b[i] = f32_to_bf16(combine(op, bf16_to_f32(a[i]), bf16_to_f32(b[i])));              \
    }                                                                                       \
  }
HALF_FN(h_sum, 0, 0)
HALF_FN(h_prod, 0, 1)
HALF_FN(h_max, 0, 2)
HALF_FN(h_min, 0, 3)
HALF_FN(b_sum, 1, 0)
HALF_FN(b_prod, 1, 1)
HALF_FN(b_max, 1, 2)
HALF_FN(b_min, 1, 3)

static MPI_User_function *const fns[2][4] = {{h_sum, h_prod, h_max, h_min}, {b_sum, b_prod, b_max, b_min}};
static MPI_Op ops[2][4];
static int made[2][4];

MPI_Op cell_comm_half_op(int kind, int op) {
  if (!made[kind][op]) {
    if (MPI_Op_create(fns[kind][op], 1, &ops[kind][op]) != MPI_SUCCESS) return MPI_OP_NULL;
    made[kind][op] = 1;
  }
  return ops[kind][op];
}

void cell_comm_half_free(void) {
  for (int k = 0; k < 2; k++)
    for (int o = 0; o < 4; o++)
      if (made[k][o]) {
        MPI_Op_free(&ops[k][o]);
        made[k][o] = 0;
      }
}
