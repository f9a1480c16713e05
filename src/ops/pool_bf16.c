/* pool_bf16.c - max pooling on bfloat16 (pool_bf16.h). Under mixed
 * precision the pools sat between float32 copies: the input widened and
 * the output rounded back (exact both ways, since a maximum is one of its
 * inputs), and the same for the gradient, four passes over a layer's
 * activations and four forks per layer. Here the windows read bfloat16
 * and compare in float32 (the same order as float32's), and the gradient
 * adds into a float32 plane, rounded once, as float32's result was. */
#include "pool_bf16.h"
#include "../core/dtype.h"
#include "../core/iter.h"
#include <math.h>
#include <string.h>

#define SCRATCH 16384 /* float32 positions of the gradient's stack plane */

static int pool_par(int64_t work) { return work >= 16 * CELL_ITER_GRAIN && cell_ctx()->num_threads > 1; }

/* One plane: every output's window, positions hs + i * dh inside the input. */
static void max_plane(const cell_conv_geom *g, const uint16_t *src, uint16_t *dst, int64_t *id) {
  for (int64_t oh = 0; oh < g->oh; oh++) {
    int64_t hs = oh * g->sh - g->pt;
    for (int64_t ow = 0; ow < g->ow; ow++) {
      int64_t ws = ow * g->sw - g->pl, bi = -1;
      float best = -INFINITY;
      uint16_t bv = cell_float_to_bf16(-INFINITY);
      for (int64_t i = 0; i < g->kh; i++) {
        int64_t ih = hs + i * g->dh;
        if (ih < 0 || ih >= g->h) continue;
        const uint16_t *row = src + ih * g->w;
        for (int64_t j = 0; j < g->kw; j++) {
          int64_t iw = ws + j * g->dw;
          if (iw < 0 || iw >= g->w) continue;
          float v = cell_bf16_to_float(row[iw]);
          if (bi < 0 || v > best || v != v) {
            best = v;
            bv = row[iw];
            bi = ih * g->w + iw;
          }
        }
      }
      if (bi < 0) bi = 0; /* a window wholly in the padding (not reachable) */
      dst[oh * g->ow + ow] = bv;
      id[oh * g->ow + ow] = bi;
    }
  }
}

/* The 2 x 2 windows at stride 2 with no padding (every window inside the
 * input): the four candidates in window order, selected without branches
 * over a row of outputs (vectorised; the generic form's compares were a
 * fifth of a mixed-precision CNN step). The maximum is stored rounded from
 * its float32 widening, which gives it back (a NaN as a quiet NaN). */
CELL_CLONES_V3 static void max_plane_2x2(const cell_conv_geom *g, const uint16_t *src, uint16_t *dst, int64_t *id) {
  const int64_t W = g->w, OW = g->ow;
  for (int64_t oh = 0; oh < g->oh; oh++) {
    const uint16_t *r0 = src + 2 * oh * W, *r1 = r0 + W;
    uint16_t *d = dst + oh * OW;
    int64_t *ix = id + oh * OW, base = 2 * oh * W;
    _Pragma("omp simd") for (int64_t ow = 0; ow < OW; ow++) {
      float a = cell_bf16_to_float(r0[2 * ow]), b = cell_bf16_to_float(r0[2 * ow + 1]);
      float c = cell_bf16_to_float(r1[2 * ow]), e = cell_bf16_to_float(r1[2 * ow + 1]);
      float best = a;
      int64_t at = base + 2 * ow;
      int tb = b > best || b != b;
      best = tb ? b : best;
      at = tb ? base + 2 * ow + 1 : at;
      int tc = c > best || c != c;
      best = tc ? c : best;
      at = tc ? base + W + 2 * ow : at;
      int te = e > best || e != e;
      best = te ? e : best;
      at = te ? base + W + 2 * ow + 1 : at;
      d[ow] = cell_float_to_bf16(best); /* exact: one of the inputs */
      ix[ow] = at;
    }
  }
}

void cell_bf16_max_pool_fwd(const cell_conv_geom *g, const uint16_t *x, uint16_t *y, int64_t *idx) {
  const int64_t HW = g->h * g->w, OP = g->oh * g->ow;
  int fast = g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->dh == 1 && g->dw == 1 && g->pt == 0 &&
             g->pl == 0 && 2 * g->oh <= g->h && 2 * g->ow <= g->w;
  CELL_FOR(pool_par(g->n * g->c * OP * g->kh * g->kw), int64_t, pl, g->n * g->c, {
    if (fast) max_plane_2x2(g, x + pl * HW, y + pl * OP, idx + pl * OP);
    else max_plane(g, x + pl * HW, y + pl * OP, idx + pl * OP);
  });
}

int cell_bf16_max_pool_bwd_fits(int64_t hw) { return hw > 0 && hw <= SCRATCH; }

void cell_bf16_max_pool_bwd(int64_t planes, int64_t hw, int64_t op, const uint16_t *gy, const int64_t *idx,
                            uint16_t *gx, int64_t *bad) {
  CELL_FOR(pool_par(planes * (op + hw) / 4), int64_t, pl, planes, {
    uint16_t *dst = gx + pl * hw;
    const uint16_t *src = gy + pl * op;
    const int64_t *id = idx + pl * op;
    int64_t wrong = -1;
    for (int64_t q = 0; q < op; q++)
      if (id[q] < 0 || id[q] >= hw) wrong = id[q];
    if (wrong != -1) {
      memset(dst, 0, sizeof(uint16_t) * (size_t)hw);
      _Pragma("omp atomic write") *bad = wrong;
    } else {
      float acc[SCRATCH];
      memset(acc, 0, sizeof(float) * (size_t)hw);
      for (int64_t q = 0; q < op; q++) acc[id[q]] += cell_bf16_to_float(src[q]);
      _Pragma("omp simd") for (int64_t i = 0; i < hw; i++) dst[i] = cell_float_to_bf16(acc[i]);
    }
  });
}
