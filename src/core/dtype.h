/* dtype.h - element types: sizes, conversions, scalar load/store (internal). */
#ifndef CELL_CORE_DTYPE_H
#define CELL_CORE_DTYPE_H
#include "cell.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float cell_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else { /* subnormal: normalise */
      exp = 127 - 15 + 1;
      while (!(man & 0x400)) {
        man <<= 1;
        exp--;
      }
      man &= 0x3ff;
      bits = sign | (exp << 23) | (man << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* Round to nearest even, with overflow to infinity and subnormals. */
static inline uint16_t cell_float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504 */
  if (ax < 0x38800000u) {                                    /* subnormal or zero */
    if (ax < 0x33000000u) return (uint16_t)sign;
    uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e; /* 14..24 */
    uint32_t half_m = m >> shift, rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_m & 1))) half_m++;
    return (uint16_t)(sign | half_m);
  }
  uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u); /* round to nearest even */
  return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

static inline float cell_bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static inline uint16_t cell_float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  /* a select, not a branch, so that loops over it vectorise */
  uint32_t nan = (x >> 16) | 0x40u;                    /* quiet NaN */
  uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16; /* to nearest even */
  return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

/* Saturating double -> int64 (NaN -> 0), so conversions never hit UB. */
static inline int64_t cell_d2i64(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

/* Element at p as double / as int64, and stores from them. Integer stores
 * wrap modulo 2^bits, as C casts through int64 do; a double stored to int32
 * or int64 saturates at the type's range (NaN gives 0), so +inf is never
 * -1 nor 3e9 a negative number. */
static inline double cell_load_f64(cell_dtype dt, const void *p) {
  switch (dt) {
  case CELL_DTYPE_F32: return *(const float *)p;
  case CELL_DTYPE_F64: return *(const double *)p;
  case CELL_DTYPE_F16: return cell_half_to_float(*(const uint16_t *)p);
  case CELL_DTYPE_BF16: return cell_bf16_to_float(*(const uint16_t *)p);
  case CELL_DTYPE_I8: return *(const int8_t *)p;
  case CELL_DTYPE_U8: return *(const uint8_t *)p;
  case CELL_DTYPE_I16: return *(const int16_t *)p;
  case CELL_DTYPE_I32: return *(const int32_t *)p;
  case CELL_DTYPE_I64: return (double)*(const int64_t *)p;
  case CELL_DTYPE_BOOL: return *(const uint8_t *)p ? 1.0 : 0.0;
  default: return 0.0;
  }
}

static inline int64_t cell_load_i64(cell_dtype dt, const void *p) {
  switch (dt) {
  case CELL_DTYPE_I8: return *(const int8_t *)p;
  case CELL_DTYPE_U8: return *(const uint8_t *)p;
  case CELL_DTYPE_I16: return *(const int16_t *)p;
  case CELL_DTYPE_I32: return *(const int32_t *)p;
  case CELL_DTYPE_I64: return *(const int64_t *)p;
  case CELL_DTYPE_BOOL: return *(const uint8_t *)p ? 1 : 0;
  default: return cell_d2i64(cell_load_f64(dt, p));
  }
}

static inline void cell_store_i64(cell_dtype dt, void *p, int64_t v) {
  switch (dt) {
  case CELL_DTYPE_F32: *(float *)p = (float)v; break;
  case CELL_DTYPE_F64: *(double *)p = (double)v; break;
  case CELL_DTYPE_F16: *(uint16_t *)p = cell_float_to_half((float)v); break;
  case CELL_DTYPE_BF16: *(uint16_t *)p = cell_float_to_bf16((float)v); break;
  case CELL_DTYPE_I8: *(int8_t *)p = (int8_t)(uint8_t)(uint64_t)v; break;
  case CELL_DTYPE_U8: *(uint8_t *)p = (uint8_t)(uint64_t)v; break;
  case CELL_DTYPE_I16: *(int16_t *)p = (int16_t)(uint16_t)(uint64_t)v; break;
  case CELL_DTYPE_I32: *(int32_t *)p = (int32_t)(uint32_t)(uint64_t)v; break;
  case CELL_DTYPE_I64: *(int64_t *)p = v; break;
  case CELL_DTYPE_BOOL: *(uint8_t *)p = v != 0; break;
  default: break;
  }
}

static inline void cell_store_f64(cell_dtype dt, void *p, double v) {
  switch (dt) {
  case CELL_DTYPE_F32: *(float *)p = (float)v; break;
  case CELL_DTYPE_F64: *(double *)p = v; break;
  case CELL_DTYPE_F16: *(uint16_t *)p = cell_float_to_half((float)v); break;
  case CELL_DTYPE_BF16: *(uint16_t *)p = cell_float_to_bf16((float)v); break;
  case CELL_DTYPE_BOOL: *(uint8_t *)p = v != 0; break;
  case CELL_DTYPE_I32:
    *(int32_t *)p = v != v                 ? 0
                    : v >= 2147483647.0    ? INT32_MAX
                    : v <= -2147483648.0   ? INT32_MIN
                                           : (int32_t)v;
    break;
  default: cell_store_i64(dt, p, cell_d2i64(v)); break;
  }
}

/* Strided runs: the one place a kernel loads n elements of dtype dt that
 * lie s bytes apart from p into doubles (or int64s), or stores doubles back
 * (arguments in that order: dtype, pointer, stride, count, buffer).
 * Contiguous float32/float64 runs use OpenMP's simd directive (GCC's -O2
 * cost model leaves these loops scalar); the other dtypes convert one
 * element at a time through a switch hoisted out of the loop. */
#define CELL_RUN_PRAGMA_(x) _Pragma(#x)
#define CELL_RUN_(T, EXPR, CONTIG_SIMD)                                   \
  do {                                                                    \
    if (CONTIG_SIMD && s == (int64_t)sizeof(T)) {                         \
      CELL_RUN_PRAGMA_(omp simd)                                          \
      for (int64_t i = 0; i < n; i++) {                                   \
        T v_ = ((const T *)p)[i];                                         \
        o[i] = (EXPR);                                                    \
      }                                                                   \
    } else {                                                              \
      for (int64_t i = 0; i < n; i++) {                                   \
        T v_ = *(const T *)(p + i * s);                                   \
        o[i] = (EXPR);                                                    \
      }                                                                   \
    }                                                                     \
  } while (0)

static inline void cell_load_run(cell_dtype dt, const char *p, int64_t s, int64_t n, double *o) {
  switch (dt) {
  case CELL_DTYPE_F32: CELL_RUN_(float, (double)v_, 1); break;
  case CELL_DTYPE_F64: CELL_RUN_(double, v_, 1); break;
  case CELL_DTYPE_F16: CELL_RUN_(uint16_t, (double)cell_half_to_float(v_), 0); break;
  case CELL_DTYPE_BF16: CELL_RUN_(uint16_t, (double)cell_bf16_to_float(v_), 1); break; /* lane ops */
  case CELL_DTYPE_I8: CELL_RUN_(int8_t, (double)v_, 0); break;
  case CELL_DTYPE_U8: CELL_RUN_(uint8_t, (double)v_, 0); break;
  case CELL_DTYPE_I16: CELL_RUN_(int16_t, (double)v_, 0); break;
  case CELL_DTYPE_I32: CELL_RUN_(int32_t, (double)v_, 0); break;
  case CELL_DTYPE_I64: CELL_RUN_(int64_t, (double)v_, 0); break;
  case CELL_DTYPE_BOOL: CELL_RUN_(uint8_t, v_ ? 1.0 : 0.0, 0); break;
  default:
    for (int64_t i = 0; i < n; i++) o[i] = cell_load_f64(dt, p + i * s);
    break;
  }
}

/* The same as int64 (exact for the integer dtypes and bool). */
static inline void cell_load_run_i64(cell_dtype dt, const char *p, int64_t s, int64_t n,
                                     int64_t *o) {
  switch (dt) {
  case CELL_DTYPE_I8: CELL_RUN_(int8_t, (int64_t)v_, 0); break;
  case CELL_DTYPE_U8: CELL_RUN_(uint8_t, (int64_t)v_, 0); break;
  case CELL_DTYPE_I16: CELL_RUN_(int16_t, (int64_t)v_, 0); break;
  case CELL_DTYPE_I32: CELL_RUN_(int32_t, (int64_t)v_, 0); break;
  case CELL_DTYPE_I64: CELL_RUN_(int64_t, v_, 0); break;
  case CELL_DTYPE_BOOL: CELL_RUN_(uint8_t, (int64_t)(v_ != 0), 0); break;
  default:
    for (int64_t i = 0; i < n; i++) o[i] = cell_load_i64(dt, p + i * s);
    break;
  }
}
#undef CELL_RUN_

static inline void cell_store_run(cell_dtype dt, char *p, int64_t s, int64_t n, const double *v) {
  if (dt == CELL_DTYPE_F32) {
    if (s == 4)
      CELL_RUN_PRAGMA_(omp simd) for (int64_t i = 0; i < n; i++) ((float *)p)[i] = (float)v[i];
    else
      for (int64_t i = 0; i < n; i++) *(float *)(p + i * s) = (float)v[i];
  } else if (dt == CELL_DTYPE_F64) {
    if (s == 8)
      CELL_RUN_PRAGMA_(omp simd) for (int64_t i = 0; i < n; i++) ((double *)p)[i] = v[i];
    else
      for (int64_t i = 0; i < n; i++) *(double *)(p + i * s) = v[i];
  } else if (dt == CELL_DTYPE_BF16 && s == 2) { /* as cell_store_f64, in lanes (mixed precision) */
    CELL_RUN_PRAGMA_(omp simd) for (int64_t i = 0; i < n; i++) ((uint16_t *)p)[i] = cell_float_to_bf16((float)v[i]);
  } else {
    for (int64_t i = 0; i < n; i++) cell_store_f64(dt, p + i * s, v[i]);
  }
}

static inline int cell_dtype_is_int(cell_dtype d) {
  return d == CELL_DTYPE_I8 || d == CELL_DTYPE_U8 || d == CELL_DTYPE_I16 || d == CELL_DTYPE_I32 ||
         d == CELL_DTYPE_I64;
}

/* Whether an in-place op may store a dt `from` result into a `to` tensor:
 * never float into integer, nor anything but bool into bool. */
int cell_dtype_can_cast(cell_dtype from, cell_dtype to);

#endif
