/* gpu_kern.h - the CUDA kernels of gpu_ew.cu, callable from C (internal).
 * Raw device pointers and counts only: the .cu side sees no engine header.
 * Each launches on stream s and returns the launch's cudaError_t as int. */
#ifndef CELL_CUDA_GPU_KERN_H
#define CELL_CUDA_GPU_KERN_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Binary op codes (the engine's cell_binop values these kernels run). */
enum { GPUK_ADD = 0, GPUK_SUB = 1, GPUK_MUL = 2, GPUK_DIV = 3, GPUK_MAXIMUM = 5, GPUK_MINIMUM = 6 };
/* Comparison codes (cell_binop values; the result is bool). */
enum { GPUK_EQ = 7, GPUK_NE = 8, GPUK_LT = 9, GPUK_LE = 10, GPUK_GT = 11, GPUK_GE = 12 };
/* Unary op codes (cell_unop values). */
enum { GPUK_ABS = 0, GPUK_NEG = 1, GPUK_EXP = 2, GPUK_LOG = 3, GPUK_SQRT = 5, GPUK_TANH = 9,
       GPUK_SIGMOID = 10, GPUK_RELU = 11, GPUK_GELU = 12, GPUK_SILU = 13 };
/* The float math ops computed in double and rounded once (the CPU's
 * double libm calls): cell_unop's log1p, rsqrt, sin, cos, floor, ceil,
 * round, sign, erf ... reciprocal. */
enum { GPUK_LOG1P = 4, GPUK_RSQRT = 6, GPUK_SIN = 7, GPUK_COS = 8, GPUK_FLOOR = 14, GPUK_CEIL = 15, GPUK_ROUND = 16,
       GPUK_SIGN = 17, GPUK_ERF = 19, GPUK_ERFC, GPUK_TAN, GPUK_ATAN, GPUK_ASIN, GPUK_ACOS, GPUK_SINH, GPUK_COSH,
       GPUK_LOG2, GPUK_LOG10, GPUK_EXP2, GPUK_EXPM1, GPUK_SQUARE, GPUK_RECIPROCAL };

/* out[i] = a[i] op b[i] over n contiguous elements of dt (float32,
 * float64, int32, int64; out may be a). */
int gpuk_binary(void *stream, int dt, int op, const void *a, const void *b, void *out, int64_t n);
/* out[i] = a[i] op s, or s op a[i] when reversed (s converted to dt). */
int gpuk_binary_scalar(void *stream, int dt, int op, const void *a, double s, int reversed, void *out, int64_t n);
/* out[i] = op(a[i]) (float32 or float64; out may be a). */
int gpuk_unary(void *stream, int dt, int op, const void *a, void *out, int64_t n);
/* n bytes at dst: the psize-byte pattern repeated (psize 1, 2, 4 or 8). */
int gpuk_fill(void *stream, void *dst, size_t n, const void *pattern, size_t psize);

/* --- gpu_nn.cu ------------------------------------------------------------------- */

/* Dtype codes (cell_dtype's values) and reduction codes (cell_redop's). */
enum { GPUK_F32 = 0, GPUK_F64 = 1, GPUK_F16 = 2, GPUK_BF16 = 3, GPUK_I8 = 4, GPUK_U8 = 5, GPUK_I32 = 6,
       GPUK_I64 = 7, GPUK_BOOL = 8, GPUK_I16 = 9 };
enum { GPUK_RED_SUM = 0, GPUK_RED_MEAN = 1, GPUK_RED_PROD = 2, GPUK_RED_MAX = 3, GPUK_RED_MIN = 4 };

#define GPUK_MAX_DIMS 16
/* A strided layout in elements (shape and stride per dimension). */
typedef struct gpuk_layout {
  int ndim;
  int64_t shape[GPUK_MAX_DIMS], stride[GPUK_MAX_DIMS];
} gpuk_layout;

/* SGD's scalars (optim.c's sgd_ctx) and Adam's (adam_ctx). */
typedef struct gpuk_sgd_args {
  double lr, momentum, keep, wd, gs;
  int nesterov, first;
} gpuk_sgd_args;
typedef struct gpuk_adam_args {
  double b1, b2, omb1, omb2, eps, wd, gs, decay, neg_step_size, bc2_sqrt;
  int decoupled;
} gpuk_adam_args;

/* out (n contiguous elements of dtype odt) = in (layout, dtype idt). */
int gpuk_copy_cast(void *stream, gpuk_layout in_layout, int idt, const void *in, int odt, void *out, int64_t n);
/* Contiguous x seen as (outer, r, inner); out (outer, inner) = op over r
 * (float32 / float64, accumulated in double; max / min need r >= 1). */
int gpuk_reduce(void *stream, int dt, int op, const void *x, void *out, int64_t outer, int64_t r, int64_t inner);
/* max (is_min 0) or min over r: values (may be NULL) and int64 indices + base. */
int gpuk_argext(void *stream, int dt, int is_min, const void *x, void *vals, long long *idx, int64_t outer,
                int64_t r, int64_t inner, long long base);
/* (log-)softmax over n of (outer, n, inner), and its backward from y. */
int gpuk_softmax(void *stream, int dt, const void *x, void *y, int64_t outer, int64_t n, int64_t inner, int log);
int gpuk_softmax_backward(void *stream, int dt, const void *y, const void *g, void *gx, int64_t outer, int64_t n,
                          int64_t inner, int log);
/* Layer norm of rows of d (w, b: float64 or NULL); mean and rstd float64. */
int gpuk_layer_norm(void *stream, int dt, const void *x, const double *w, const double *b, void *y, double *mean,
                    double *rstd, int64_t rows, int64_t d, double eps);
/* Its backward: gx (may be NULL), gw and gb (float64, may be NULL). */
int gpuk_layer_norm_backward(void *stream, int dt, const void *g, const void *x, const double *w,
                             const double *mean, const double *rstd, void *gx, double *gw, double *gb,
                             int64_t rows, int64_t d);
/* Embedding rows for n ids (idt: GPUK_I32 or GPUK_I64); *bad (device
 * memory, set to ~0 first) gets 1 + the first position out of range. */
int gpuk_embedding(void *stream, int dt, int idt, const void *ids, const void *w, void *out, int64_t n,
                   int64_t vocab, int64_t dim, long long base, unsigned long long *bad);
/* gw (zeroed) += the rows of g at the ids, atomically; padding skipped. */
int gpuk_embedding_backward(void *stream, int dt, int idt, const void *ids, const void *g, void *gw, int64_t n,
                            int64_t vocab, int64_t dim, long long base, int has_pad, long long pad);
/* y = x * scale where the engine's Philox word is >= threshold, else 0. */
int gpuk_dropout(void *stream, int dt, const void *x, void *y, int64_t n, unsigned long long seed,
                 unsigned long long first, unsigned long long threshold, double scale);
/* Fused steps over n contiguous elements (buf may be NULL: no momentum). */
int gpuk_sgd(void *stream, int dt, void *p, const void *g, void *buf, int64_t n, gpuk_sgd_args c);
int gpuk_adam(void *stream, int dt, void *p, const void *g, void *m, void *v, int64_t n, gpuk_adam_args c);

/* --- gpu_loss.cu: cross-entropy and nll_loss over {n, c, inner} rows ---------------- */

/* Class ids (int64, one per row) to cls (0-based, -1 ignored) and wrow
 * (the row's class weight, 0 ignored; w NULL: ones); *bad (set to ~0
 * first) gets 1 + the first row whose id is out of range. */
int gpuk_ce_classes(void *stream, const long long *target, long long *cls, double *wrow, const double *w,
                    int64_t rows, int64_t c, int has_ignore, long long ignore, long long base,
                    unsigned long long *bad);
/* lse[r] and the row's loss v[r] (label smoothing ls folded in); probs
 * (dtype tdt, the logits' layout) or cls; wsum: device pointer to the sum
 * of the class weights. */
int gpuk_ce_forward(void *stream, int dt, int tdt, const void *x, const long long *cls, const void *probs,
                    const double *w, const double *wsum, double *lse, double *v, int64_t rows, int64_t c,
                    int64_t inner, double ls);
/* The logits' gradient gx and (probabilities) the target's gt (may be
 * NULL); g: float64, one per row (per_row) or one times kscale. */
int gpuk_ce_backward(void *stream, int dt, int tdt, const void *x, const long long *cls, const void *probs,
                     const double *w, const double *wsum, const double *lse, const double *g, int per_row,
                     double kscale, void *gx, void *gt, int64_t rows, int64_t c, int64_t inner, double ls);
int gpuk_nll_forward(void *stream, int dt, const void *x, const long long *cls, const double *w, double *v,
                     int64_t rows, int64_t c, int64_t inner);
/* gx zeroed by the caller. */
int gpuk_nll_backward(void *stream, int dt, const long long *cls, const double *w, const double *g, int per_row,
                      double kscale, void *gx, int64_t rows, int64_t c, int64_t inner);
/* out[i] = in[i] * k as dtype odt (float32 or float64). */
int gpuk_scale_cast(void *stream, const double *in, int odt, void *out, int64_t n, double k);

/* --- gpu_grad.cu: autograd's gradient formulas and comparisons ----------------------- */

/* The formulas' codes (ew.h's ew_op values the GPU runs). */
enum {
  GPUK_EW_ABS = 1, GPUK_EW_NEG, GPUK_EW_EXP, GPUK_EW_LOG, GPUK_EW_LOG1P, GPUK_EW_SQRT, GPUK_EW_RSQRT, GPUK_EW_SIN,
  GPUK_EW_COS, GPUK_EW_TANH, GPUK_EW_SIGMOID, GPUK_EW_RELU, GPUK_EW_GELU, GPUK_EW_SILU, GPUK_EW_CLAMP,
  GPUK_EW_SEL_TRUE, GPUK_EW_SEL_FALSE, GPUK_EW_SCALE, GPUK_EW_MUL, GPUK_EW_DIV, GPUK_EW_EQ, GPUK_EW_ABS_EQ,
  GPUK_EW_IS_ZERO, GPUK_EW_ZERO_TO_ONE, GPUK_EW_PICK = 26, GPUK_EW_PICK_ABS, GPUK_EW_STD_SCALE, GPUK_EW_DEV,
  GPUK_EW_NORM_SCALE, GPUK_EW_NORM, GPUK_EW_SQUARE = 44, GPUK_EW_RECIPROCAL, GPUK_EW_SOFTPLUS, GPUK_EW_FINITE
};
/* Whether gpuk_ew runs formula op. */
int gpuk_ew_supported(int op);
/* out = formula op of a, b, c (n contiguous elements of dt, float32 or
 * float64; an absent operand NULL). */
int gpuk_ew(void *stream, int dt, int op, double k0, double k1, const void *a, const void *b, const void *c,
            void *out, int64_t n);
/* out (bool) = a op b over n elements of int64 (is_int) or float64. */
int gpuk_compare(void *stream, int op, int is_int, const void *a, const void *b, unsigned char *out, int64_t n);

/* --- gpu_attn.cu: scaled dot-product attention (no mask tensor, no dropout) ---------- */

/* q {H, L, E}, k {H, S, E}, v {H, S, Ev} contiguous of dt; out {H, L, Ev};
 * lse {H L}; P: H L S doubles of scratch. */
int gpuk_sdpa(void *stream, int dt, const void *q, const void *k, const void *v, void *out, double *lse, double *P,
              int64_t H, int64_t L, int64_t S, int64_t E, int64_t Ev, double scale, int causal);
/* The gradients gq, gk, gv (each may be NULL) from g {H, L, Ev}, the
 * output o and lse; D: H L doubles, P and dS: H L S doubles of scratch. */
int gpuk_sdpa_backward(void *stream, int dt, const void *g, const void *q, const void *k, const void *v,
                       const void *o, const double *lse, double *D, double *P, double *dS, void *gq, void *gk,
                       void *gv, int64_t H, int64_t L, int64_t S, int64_t E, int64_t Ev, double scale, int causal);

/* --- gpu_cnn.cu: batch norm and 2-D pooling ------------------------------------------ */

/* Batch norm over x seen as (n, c, inner), contiguous; statistics, weight
 * and bias float64 (w, b may be NULL: ones, zeros). mean / var: each
 * channel's mean and biased variance. */
int gpuk_bn_stats(void *stream, int dt, const void *x, double *mean, double *var, int64_t n, int64_t c,
                  int64_t inner);
/* y = (x - mean) / sqrt(var + eps) w + b. */
int gpuk_bn_apply(void *stream, int dt, const void *x, void *y, const double *mean, const double *var,
                  const double *w, const double *b, int64_t n, int64_t c, int64_t inner, double eps);
/* running[i * stride] = momentum running + (1 - momentum) v[i] scale
 * (running: float32 or float64). */
int gpuk_bn_blend(void *stream, int dt, void *running, int64_t stride, const double *v, int64_t n,
                  double momentum, double scale);
/* gw, gb (may be NULL) and gx (may be NULL); k: 3 c doubles of scratch. */
int gpuk_bn_backward(void *stream, int dt, const void *g, const void *x, const double *mean,
                     const double *var, const double *w, void *gx, double *gw, double *gb, double *k,
                     int64_t n, int64_t c, int64_t inner, double eps, int training);

/* y (m contiguous rows of n) += b (n) per row: linear's bias. */
int gpuk_add_bias(void *stream, int dt, void *y, const void *b, int64_t m, int64_t n);

/* A pooling's geometry (pool.c's cell_conv_geom): planes of h x w to
 * planes of oh x ow, kernel, stride, padding (top, bottom, left, right)
 * and dilation. */
typedef struct gpuk_pool {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, pt, pb, pl, pr, dh, dw;
} gpuk_pool;
/* Max pooling: y and each maximum's position in its plane (int64). */
int gpuk_max_pool(void *stream, int dt, gpuk_pool p, const void *x, void *y, long long *idx);
/* gx (zeroed by the caller) += gy at the positions (atomically); *bad
 * (set to ~0 first) gets 1 + the first output whose position is outside
 * [0, hw). */
int gpuk_max_pool_backward(void *stream, int dt, const void *gy, const long long *idx, void *gx,
                           int64_t planes, int64_t op, int64_t hw, unsigned long long *bad);
int gpuk_avg_pool(void *stream, int dt, gpuk_pool p, int count_include_pad, const void *x, void *y);
/* gx (every element written) from gy. */
int gpuk_avg_pool_backward(void *stream, int dt, gpuk_pool p, int count_include_pad, const void *gy, void *gx);

/* --- gpu_index.cu: where, cat / stack, index_select, gather / scatter ------------------ */

/* out[i] = cond[i] ? a[i a_step] : b[i] over n contiguous elements of es
 * bytes (cond: bool; a_step 0: a is one value). */
int gpuk_where(void *stream, int es, const unsigned char *cond, const void *a, int64_t a_step, const void *b,
               void *out, int64_t n);
/* in (outer, size, inner) into out (outer, total, inner) from position at
 * of the middle dimension; contiguous, es-byte elements. */
int gpuk_place(void *stream, int es, const void *in, void *out, int64_t outer, int64_t size, int64_t inner,
               int64_t total, int64_t at);
/* out (outer, k, inner) = a (outer, size, inner) at positions idx[j] - base
 * (k int64 ids); *bad (set to ~0 first) gets 1 + the first j out of range. */
int gpuk_index_select(void *stream, int es, const void *a, const long long *idx, void *out, int64_t outer,
                      int64_t size, int64_t inner, int64_t k, long long base, unsigned long long *bad);
/* shape.c's index walk over the n elements of idx (int64, contiguous, of
 * shape L.shape): the target's element at the index's multi-index with
 * dim replaced by idx - base (L.stride: the target's strides, tstride its
 * stride along dim, tsize its size there) and lin's at the multi-index
 * (ls.stride). mode 0: lin = tgt (gather), 1: tgt = lin (scatter), 2:
 * tgt += lin atomically (dt float32, float64, int32 or int64), 3: only
 * the range check; *bad (set to ~0 first) gets 1 + the first element out
 * of range (which is never followed). */
int gpuk_index_walk(void *stream, int mode, int dt, int es, const long long *idx, gpuk_layout L, gpuk_layout ls,
                    int dim, int64_t tsize, int64_t tstride, long long base, void *lin, void *tgt, int64_t n,
                    unsigned long long *bad);

/* out (layout L: a strided view's shape and strides, es-byte elements) =
 * in (n contiguous elements in row-major order). */
int gpuk_put(void *stream, int es, gpuk_layout L, const void *in, void *out, int64_t n);
/* tril / triu: out = x (n contiguous es-byte elements, matrices of R rows
 * of C) with the elements off the kept triangle zeroed. */
int gpuk_triangle(void *stream, int es, const void *x, void *out, int64_t R, int64_t C, long long diagonal, int upper,
                  int64_t n);
/* pad: out's shape and each dim's padding before (negative: cropped). */
typedef struct gpuk_pad_args {
  int ndim;
  int64_t out[GPUK_MAX_DIMS], before[GPUK_MAX_DIMS];
} gpuk_pad_args;
/* out (n contiguous elements of es bytes, shape P.out) = in (layout L, its
 * shape and strides) placed at P.before, value[0] elsewhere. */
int gpuk_pad(void *stream, int es, gpuk_layout L, gpuk_pad_args P, const void *in, const void *value, void *out,
             int64_t n);

/* --- gpu_stats.cu: variance and norms, scans, ramps ------------------------------------- */

/* What gpuk_moments folds a row into. */
enum { GPUK_MOM_VAR = 0, GPUK_MOM_ASUM, GPUK_MOM_SSQ, GPUK_MOM_PSUM, GPUK_MOM_AMAX };
/* out[q] for each of rows contiguous float64 rows of r: the variance over
 * max(0, r - ddof) (its root when take_sqrt; NaN for r 0), sum |x|,
 * sqrt(sum x^2), (sum |x|^p)^(1/p) or max |x| (NaN wins). */
int gpuk_moments(void *stream, int kind, const double *x, double *out, int64_t rows, int64_t r, double p,
                 int64_t ddof, int take_sqrt);
/* y = the cumulative sum (prod 0) or product of x along the middle dim of
 * contiguous (outer, len, inner), from the end when reverse; float64
 * (is_int 0) or int64 (wrapping). */
int gpuk_scan(void *stream, int is_int, int prod, int reverse, const void *x, void *y, int64_t outer, int64_t len,
              int64_t inner);
/* out[i] = start + i step (the last = last_v when has_last), n float64. */
int gpuk_ramp(void *stream, double *out, int64_t n, double start, double step, int has_last, double last_v);

/* --- gpu_sort.cu: sort, argsort, topk --------------------------------------------------- */

/* Each line (o, q) of contiguous (outer, len, inner) ordered as sort.c
 * orders it (flip: descending), its first k into vals (es-byte elements
 * copied from x; may be NULL) and idx (int64 positions + base), both
 * (outer, k, inner); kx: x's values as float64 (is_int 0) or int64; K, P,
 * K2, P2: outer len inner words of scratch each. */
int gpuk_sort(void *stream, int es, int is_int, int flip, const void *x, const void *kx, int64_t outer, int64_t len,
              int64_t inner, int64_t k, unsigned long long *K, long long *P, unsigned long long *K2, long long *P2,
              void *vals, long long *idx, long long base);

/* median from sorted lines (vals es-byte elements, idx their indices, both
 * (outer, len, inner)): ov, oi (outer inner each) = the element at
 * (len - 1) / 2, or the line's first NaN when vf (the sorted values as
 * float64; NULL for integers) ends with one. */
int gpuk_median_pick(void *stream, int es, const void *vals, const double *vf, const long long *idx, void *ov,
                     long long *oi, int64_t outer, int64_t len, int64_t inner);

/* --- gpu_optim.cu: the fused steps of optim_step (not Lamb, LARS) --------------------- */

/* The kinds (cell_optim_kind's values). */
enum { GPUK_OPTIM_RMSPROP = 1, GPUK_OPTIM_ADAGRAD, GPUK_OPTIM_ADADELTA, GPUK_OPTIM_ADAMAX, GPUK_OPTIM_LAMB,
       GPUK_OPTIM_LARS, GPUK_OPTIM_ADAMWD, GPUK_OPTIM_FTRL, GPUK_OPTIM_ASGD, GPUK_OPTIM_RPROP, GPUK_OPTIM_AMSGRAD,
       GPUK_OPTIM_NESTEROV, GPUK_OPTIM_LION };
/* cell_optim_config's fields and optim_extra.c's per-step scalars. */
typedef struct gpuk_optim_args {
  int kind, flags;
  long long step;
  double lr, wd, grad_scale, h[4];
  double bc1, bc2s, eta, mu;
} gpuk_optim_args;
/* One step over n contiguous elements of dt (float32 / float64): p, its
 * gradient g and the states s0..s2 (each may be NULL: reads 0, not written). */
int gpuk_optim(void *stream, int dt, gpuk_optim_args c, void *p, const void *g, void *s0, void *s1, void *s2,
               int64_t n);

/* --- gpu_act.cu: pointwise ops with parameters, logsumexp, roll, random fills ---------- */

/* gpuk_pointwise's codes: cell_act.h's kinds 0..11 (forward), the same
 * plus GPUK_PW_ACT_GRAD (g times the derivative), softplus (k0 beta, k1
 * threshold) and nan_to_num (k0, k1, k2: the replacements of NaN, +inf,
 * -inf). */
enum { GPUK_PW_ACT_GRAD = 16, GPUK_PW_SOFTPLUS = 32, GPUK_PW_NAN_TO_NUM = 33 };
/* out = op(x) or g op'(x) over n contiguous elements of dt (float32 or
 * float64; g NULL for the forward ones), computed in double. */
int gpuk_pointwise(void *stream, int dt, int op, double k0, double k1, double k2, const void *x, const void *g,
                   void *out, int64_t n);
/* out[r] = logsumexp of contiguous row r of len (dt float32 or float64). */
int gpuk_logsumexp(void *stream, int dt, const void *x, void *out, int64_t rows, int64_t len);
/* roll's shift per dimension (0 <= shift < size). */
typedef struct gpuk_roll_args {
  int64_t shift[GPUK_MAX_DIMS];
} gpuk_roll_args;
/* out (n contiguous es-byte elements over L.shape) = in rolled: element
 * (i_d) of out is in's (i_d - shift_d mod size_d), in's strides L.stride. */
int gpuk_roll(void *stream, int es, gpuk_layout L, gpuk_roll_args R, const void *in, void *out, int64_t n);
/* The random fills' kinds. */
enum { GPUK_RAND_UNIFORM = 0, GPUK_RAND_NORMAL = 1, GPUK_RAND_INT = 2, GPUK_RAND_BERNOULLI = 3 };
/* n draws of the engine's Philox stream from block first under seed (two
 * elements per block, as src/ops/create.c and random.c): uniform
 * floor(u scale) / scale, normal (Box-Muller; pa, pb non-NULL: pa + pb z,
 * the means and deviations per element) and bernoulli (u < pa[j], or <
 * scale when pa is NULL: 1 or 0) into fo (float64), integer low + the high
 * 64 bits of r range into io (int64). */
int gpuk_rand(void *stream, int kind, unsigned long long seed, unsigned long long first, double scale,
              long long low, unsigned long long range, const double *pa, const double *pb, double *fo,
              long long *io, int64_t n);
/* multinomial: ns draws per row of k float64 weights w (valid: checked
 * by the caller) into o (rows ns int64, + base), src/ops/random.c's
 * draws from Philox block first + row ns + t; cdf: rows k doubles of
 * scratch. */
int gpuk_multinomial(void *stream, const double *w, double *cdf, long long *o, int64_t rows, int64_t k, int64_t ns,
                     int replacement, unsigned long long seed, unsigned long long first, long long base);
/* gx = cumprod's gradient along the middle dim of contiguous float64
 * (outer, len, inner) x and g (src/ops/scan.c's formula, exact with zeros). */
int gpuk_cumprod_backward(void *stream, const double *x, const double *g, double *gx, int64_t outer, int64_t len,
                          int64_t inner);
/* *bad (set to ~0 first) = 1 + the first i with x[i] outside [lo, hi]
 * (NaN counts as outside). */
int gpuk_first_outside(void *stream, const double *x, int64_t n, double lo, double hi, unsigned long long *bad);

/* bce_with_logits over n contiguous float64 elements (w, pw: NULL for
 * ones): the per-element loss into o0 (backward 0), else k g (g NULL:
 * ones) times the gradients of x, y, weight, pos_weight into o0..o3
 * (each may be NULL). */
int gpuk_bce(void *stream, int backward, const double *x, const double *y, const double *w, const double *pw,
             const double *g, double k, double *o0, double *o1, double *o2, double *o3, int64_t n);

/* unique over n sorted elements: f = 1 where a group starts (keys: int64
 * ki, or float64 kf when ki is NULL; NaN starts a group of its own). */
int gpuk_unique_starts(void *stream, const long long *ki, const double *kf, long long *f, int64_t n);
/* From the starts' prefix sum pos: out[g] = group g's first sorted value
 * (es-byte sv), inv[idx[i]] = i's group + base (inv may be NULL), cnt[g]
 * += 1 per element (zeroed by the caller; may be NULL). */
int gpuk_unique(void *stream, int es, const void *sv, const long long *idx, const long long *pos, void *out,
                long long *inv, unsigned long long *cnt, long long base, int64_t n);

/* --- gpu_interp.cu: interpolate (nearest, linear, bilinear, bicubic) ------------------- */

/* planes of h x w to oh x ow; kh, kw taps per output row / column; chans
 * and gs (the output gradient's strides of N, C, H, W): the backward's. */
typedef struct gpuk_interp {
  int64_t planes, chans, h, w, oh, ow, gs[4];
  int kh, kw;
} gpuk_interp;
/* Forward (in: contiguous planes; out: contiguous) or backward (in: the
 * output gradient through A.gs; out: gx, zeroed by the caller, added to
 * atomically), dt float32 or float64. hi / hw: oh kh positions and
 * weights (row-major per output row), wi / ww: ow kw. */
int gpuk_interpolate(void *stream, int dt, int backward, gpuk_interp A, const long long *hi, const double *hw,
                     const long long *wi, const double *ww, const void *in, void *out);

/* --- gpu_fold.cu: unfold (im2col) and fold (col2im) ------------------------------------- */

/* n samples of c channels of h x w, a kh x kw window (stride, top / left
 * padding, dilation) giving oh x ow blocks. */
typedef struct gpuk_fold_geom {
  int64_t n, c, h, w, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow;
} gpuk_fold_geom;
/* unfold (fold 0): x (n, c, h, w) to out (n, c kh kw, oh ow); fold: x
 * (n, c kh kw, oh ow) to out (n, c, h, w), every element written;
 * contiguous, dt float32 or float64. */
int gpuk_fold(void *stream, int dt, int fold, gpuk_fold_geom G, const void *x, void *out);

/* --- gpu_masked.cu: nonzero, masked_select, masked_scatter ------------------------------ */

/* f[i] = x[i] != 0 (int64 0 / 1) over n float64 elements. */
int gpuk_flags(void *stream, const double *x, long long *f, int64_t n);
/* nonzero: for each i with f[i], row pos[i] - 1 of out (L.ndim int64
 * columns) = i's index over L.shape, plus base. */
int gpuk_nonzero(void *stream, gpuk_layout L, const long long *f, const long long *pos, long long *out,
                 long long base, int64_t n);
/* es-byte elements: masked_select (scatter 0: out[pos[i] - 1] = a[i] where
 * f[i]) or masked_scatter (out[i] = f[i] ? src[pos[i] - 1] : a[i]). */
int gpuk_masked(void *stream, int es, int scatter, const long long *f, const long long *pos, const void *a,
                const void *src, void *out, int64_t n);

/* --- gpu_conv3d.cu: conv3d forward, input and weight gradients (direct kernels) ------- */

/* src/ops/conv.h's cell_conv3d_geom: input (n, c, d, h, w), o output
 * channels, the kernel, groups, stride and dilation (depth, height,
 * width), padding (front, back, top, bottom, left, right), the output. */
typedef struct gpuk_c3_geom {
  int64_t n, c, d, h, w, o, kd, kh, kw, groups, s[3], dl[3], pd[6], od, oh, ow;
} gpuk_c3_geom;
enum { GPUK_C3_FWD = 0, GPUK_C3_DATA = 1, GPUK_C3_WEIGHT = 2 };
/* GPUK_C3_FWD: out (n, o, od, oh, ow) = p0 (the input) conv p1 (the
 * weight) + b (per o; may be NULL); GPUK_C3_DATA: out (n, c, d, h, w) =
 * the adjoint applied to p0 (n, o, od, oh, ow) with weight p1, + b (per
 * c; may be NULL); GPUK_C3_WEIGHT: out (the weight's shape) = the weight
 * gradient of p0 (the output gradient) and p1 (the input). Every element
 * of out written; contiguous, dt float32 or float64. */
int gpuk_conv3d(void *stream, int dt, int which, gpuk_c3_geom G, const void *p0, const void *p1, const void *b,
                void *out);

/* --- gpu_ctc.cu: the CTC loss, one thread per sample ---------------------------------- */

/* T steps, N samples, C classes (blank 0-based), SP = 2 max(target
 * length) + 1. */
typedef struct gpuk_ctc_args {
  int64_t T, N, C, SP, blank;
  int zero_infinity;
} gpuk_ctc_args;
/* lp (T, N, C) float64 log-probabilities; tg the targets (0-based, sample
 * n's from toff[n]), il / tl the lengths (valid: checked by the caller);
 * alpha, beta: N T SP doubles of scratch, g: N C; gall (T, N, C, zeroed by
 * the caller) = the gradient, lv (N) = the losses. */
int gpuk_ctc(void *stream, gpuk_ctc_args A, const double *lp, const long long *tg, const long long *il,
             const long long *tl, const long long *toff, double *alpha, double *beta, double *g, double *gall,
             double *lv);

#ifdef __cplusplus
}
#endif
#endif
