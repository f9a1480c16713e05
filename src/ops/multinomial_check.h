/* multinomial_check.h - the checks of multinomial's probability rows,
 * shared by the CPU kernel (random.c) and the GPU module (src/cuda), which
 * checks a host copy, so both raise the same errors before any counter of
 * the random stream is reserved. */
#ifndef CELL_OPS_MULTINOMIAL_CHECK_H
#define CELL_OPS_MULTINOMIAL_CHECK_H

#include "cell.h"
#include <math.h>
#include <stdint.h>

/* p: rows x k probabilities (contiguous float64). Every one finite and at
 * least 0, each row's sum positive and finite, and without replacement at
 * least num_samples nonzero categories a row; rows are numbered from
 * index_base in messages. */
static inline cell_status cell_multinomial_check(const double *p, int64_t rows, int64_t k, int64_t num_samples,
                                                 int replacement, int64_t index_base) {
  for (int64_t i = 0; i < rows; i++) {
    double sum = 0;
    int64_t nonzero = 0;
    for (int64_t j = 0; j < k; j++) {
      double v = p[i * k + j];
      if (!(v >= 0) || isinf(v))
        return cell_error(CELL_ERR_VALUE,
                          "multinomial: row %lld of the probabilities holds %g: every probability must be finite "
                          "and at least 0",
                          (long long)(i + index_base), v);
      sum += v;
      nonzero += v > 0;
    }
    if (!(sum > 0) || isinf(sum))
      return cell_error(CELL_ERR_VALUE,
                        "multinomial: row %lld of the probabilities sums to %g: the sum must be positive and finite",
                        (long long)(i + index_base), sum);
    if (!replacement && nonzero < num_samples)
      return cell_error(CELL_ERR_VALUE,
                        "multinomial: row %lld has %lld categories of nonzero probability, too few for %lld "
                        "samples without replacement",
                        (long long)(i + index_base), (long long)nonzero, (long long)num_samples);
  }
  return CELL_OK;
}

#endif
