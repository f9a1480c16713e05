/* attention.h - the fused scaled dot-product attention kernels (internal):
 * they compute and never record; src/autograd/rules_attention.c wraps them
 * for the public API (include/cell_attention.h).
 *
 * q {..., L, E}, k {..., S, E}, v {..., S, Ev} share their leading
 * ("batch-head") dimensions and one float dtype; the mask, when given, is
 * bool (true: the key takes part) or float (added to the scores) and
 * broadcasts to {..., L, S}. The forward runs row by row over key blocks
 * with an online softmax, so it never holds an L x S matrix; it returns the
 * output and the log-sum-exp of each row (float64 {..., L}), from which the
 * backward recomputes the probabilities block by block. Dropout of the
 * probabilities draws from the engine's counter-based generator: element
 * (h, i, j) uses word idx % 4 of Philox block first + idx / 4, idx =
 * (h * L + i) * S + j, so the backward regenerates the same mask. */
#ifndef CELL_OPS_ATTENTION_H
#define CELL_OPS_ATTENTION_H
#include "cell.h"

typedef struct cell_sdpa_args {
  double scale;         /* the scores are scale * q . k */
  int causal;           /* keep key j for query i only when j <= i */
  double p;             /* dropout probability of the attention weights */
  uint64_t seed, first; /* the generator position (set by the forward when p > 0) */
  /* The attention weights {nbh, L, S} (float32, contiguous), or NULL: the
   * CPU's float32 forward keeps them, when asked for lse, without dropout
   * and up to CELL_SDPA_KEEP_BYTES, and hands the reference to the caller
   * here; the backward reads them instead of recomputing Q K^T and its
   * softmax (a tiny GPT's heads: 4% of a training step). */
  cell_tensor *probs;
} cell_sdpa_args;

/* The most bytes of attention weights a forward keeps for the backward
 * (PyTorch's attention keeps them all; beyond this, the backward
 * recomputes them block by block). */
#define CELL_SDPA_KEEP_BYTES ((int64_t)32 << 20)

/* Output {..., L, Ev} in q's dtype and lse {..., L} (float64; may be NULL).
 * With p > 0 the forward reserves the generator blocks and writes seed and
 * first into *a; a->probs is set as described above (the caller owns it). */
cell_status cell_k_sdpa(const cell_tensor *q, const cell_tensor *k, const cell_tensor *v,
                        const cell_tensor *mask, cell_sdpa_args *a, cell_tensor **out,
                        cell_tensor **lse);
/* The gradients of q, k, v and of a float mask (each may be NULL: not
 * computed; gm needs a float mask) from the output's gradient g, the saved
 * inputs, output and lse (and a->probs when the forward kept them). The
 * mask's gradient has its shape, summed over the dimensions it broadcasts
 * along. */
cell_status cell_k_sdpa_backward(const cell_tensor *g, const cell_tensor *q, const cell_tensor *k,
                                 const cell_tensor *v, const cell_tensor *mask,
                                 const cell_tensor *o, const cell_tensor *lse,
                                 const cell_sdpa_args *a, cell_tensor **gq, cell_tensor **gk,
                                 cell_tensor **gv, cell_tensor **gm);

/* The bfloat16/float16 forms (attention_lowp.c): whether q, k, v are
 * narrow and their heads have at most dense_max scores, and the forward and
 * backward (no mask gradient) computed in float32 and rounded once. */
int cell_sdpa_lowp_applies(const cell_tensor *q, const cell_tensor *k, const cell_tensor *v, int64_t dense_max);
cell_status cell_sdpa_lowp(const cell_tensor *q, const cell_tensor *k, const cell_tensor *v,
                           const cell_tensor *mask, cell_sdpa_args *a, cell_tensor **out, cell_tensor **lse);
cell_status cell_sdpa_backward_lowp(const cell_tensor *g, const cell_tensor *q, const cell_tensor *k,
                                    const cell_tensor *v, const cell_tensor *mask, const cell_tensor *o,
                                    const cell_tensor *lse, const cell_sdpa_args *a, cell_tensor **gq,
                                    cell_tensor **gk, cell_tensor **gv);

#endif
