/* cell_act.h - fused elementwise activations with numeric parameters
 * (MindSpore's nn activations: LeakyReLU, ELU, SeLU, CELU, Softsign, Mish,
 * ReLU6, HSwish, HSigmoid, LogSigmoid, Hardtanh, Tanhshrink, tanh GELU).
 * Each is one kernel forward and one kernel backward. */
#ifndef CELL_ACT_H
#define CELL_ACT_H
#include "cell.h"

typedef enum cell_act {
  CELL_ACT_LEAKY_RELU = 0, /* x > 0 ? x : p0 x                       */
  CELL_ACT_ELU,            /* x > 0 ? x : p0 (exp(x) - 1)             */
  CELL_ACT_SELU,           /* scale * elu(x, alpha), SELU's constants */
  CELL_ACT_CELU,           /* max(0, x) + min(0, p0 (exp(x/p0) - 1))  */
  CELL_ACT_SOFTSIGN,       /* x / (1 + |x|)                           */
  CELL_ACT_MISH,           /* x tanh(softplus(x))                     */
  CELL_ACT_HARDTANH,       /* clamp(x, p0, p1); ReLU6 is (0, 6)       */
  CELL_ACT_HSWISH,         /* x relu6(x + 3) / 6                      */
  CELL_ACT_HSIGMOID,       /* relu6(x + 3) / 6                        */
  CELL_ACT_LOGSIGMOID,     /* log(sigmoid(x))                         */
  CELL_ACT_TANHSHRINK,     /* x - tanh(x)                             */
  CELL_ACT_GELU_TANH,      /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
  CELL_ACT_COUNT
} cell_act;

/* out = act(x) for a float tensor x (any layout); p0, p1 are the
 * activation's numbers (alpha; min_val, max_val), unused ones ignored.
 * TypeError for a non-float x, ValueError for an unknown kind or a
 * parameter out of range (CELU's alpha 0, Hardtanh's min_val > max_val).
 * Recorded for autograd (one node whose backward is one kernel). */
CELL_API cell_status cell_op_activation(const cell_tensor *x, cell_act kind, double p0,
                                        double p1, cell_tensor **out);
/* The name of an activation kind ("leaky_relu", ...), NULL if unknown. */
CELL_API const char *cell_act_name(cell_act kind);

/* The CTC loss of each sample (Graves et al., log-space forward-backward,
 * PyTorch's formulation): log_probs (T, N, C) float log-probabilities;
 * targets (N, S) padded or 1-D (all targets concatenated), integer class
 * ids counting from index_base (1 in Lua), never blank; input_lengths and
 * target_lengths (N) integers. blank is 0-based here. out: loss (N) of
 * log_probs' dtype, infinite for an impossible alignment (0 with
 * zero_infinity, which also zeroes its gradient). Recorded for autograd
 * with respect to log_probs. ValueError for shapes and lengths out of
 * range, IndexError for a target out of range or equal to blank,
 * TypeError for a non-float log_probs or non-integer ids. */
CELL_API cell_status cell_op_ctc_loss(const cell_tensor *log_probs, const cell_tensor *targets,
                                      const cell_tensor *input_lengths,
                                      const cell_tensor *target_lengths, int64_t blank,
                                      int64_t index_base, int zero_infinity, cell_tensor **loss);

#endif
