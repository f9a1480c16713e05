/* pool_bf16.h - max pooling on bfloat16 as it lies (pool_bf16.c): the
 * selection needs no float32 copies of the input, and the gradient's
 * scatter adds in float32 per plane, rounded once (internal). */
#ifndef CELL_OPS_POOL_BF16_H
#define CELL_OPS_POOL_BF16_H
#include "conv.h"

/* y and idx (each g->n * g->c planes of g->oh * g->ow) from x (planes of
 * g->h * g->w): the same selection as the float32 kernels (the first
 * largest in window order, a NaN taken and kept). */
void cell_bf16_max_pool_fwd(const cell_conv_geom *g, const uint16_t *x, uint16_t *y, int64_t *idx);

/* Whether the backward below takes planes of hw positions (its float32
 * scratch plane lives on the stack). */
int cell_bf16_max_pool_bwd_fits(int64_t hw);

/* gx (planes of hw) = gy (planes of op) added at the saved positions in
 * float32, each sum rounded once; a plane with a position outside
 * [0, hw) is left zero and that position goes to *bad (else untouched). */
void cell_bf16_max_pool_bwd(int64_t planes, int64_t hw, int64_t op, const uint16_t *gy, const int64_t *idx,
                            uint16_t *gx, int64_t *bad);
#endif
