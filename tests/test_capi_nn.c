/* test_capi_nn.c - misuse of the public nn-family C API (cell_nn.h,
 * cell_conv.h, cell_optim.h, cell_io.h): NULL handles, NULL outputs, wrong
 * dtypes and mismatched shapes give a status and a message, never a crash,
 * and leave the output untouched. */
#include "check.h"

/* An error status with a message, and the output left NULL. */
#define MISUSE(expr, out)                                                             \
  do {                                                                                \
    cell_tensor *sentinel_ = NULL;                                                    \
    (void)sentinel_;                                                                  \
    cell_status s_ = (expr);                                                          \
    CHECKF(s_ != CELL_OK, "%s succeeded", #expr);                                     \
    CHECKF(strlen(cell_last_error()) > 0, "%s left no message", #expr);               \
    CHECKF((out) == NULL, "%s wrote its output", #expr);                              \
  } while (0)

static cell_tensor *filled(cell_dtype dt, int ndim, const int64_t *shape, double v) {
  cell_tensor *t = NULL;
  if (cell_tensor_full(dt, ndim, shape, v, &t) != CELL_OK) return NULL;
  return t;
}

static void null_handles(void) {
  const int64_t s2[2] = {2, 3}, s4[4] = {1, 1, 4, 4}, sw[4] = {1, 1, 3, 3}, s1[1] = {2};
  cell_tensor *x = filled(CELL_DTYPE_F32, 2, s2, 1), *img = filled(CELL_DTYPE_F32, 4, s4, 1);
  cell_tensor *w = filled(CELL_DTYPE_F32, 4, sw, 1), *lab = filled(CELL_DTYPE_I64, 1, s1, 1);
  cell_tensor *out = NULL;
  const int64_t k[2] = {2, 2};
  MISUSE(cell_op_softmax(NULL, 0, &out), out);
  MISUSE(cell_op_softmax(x, 0, NULL), out);
  MISUSE(cell_op_log_softmax(NULL, 0, &out), out);
  MISUSE(cell_op_batch_norm(NULL, NULL, NULL, NULL, NULL, 0, 0.9, 1e-5, &out), out);
  MISUSE(cell_op_layer_norm(NULL, 1, NULL, NULL, 1e-5, &out), out);
  MISUSE(cell_op_layer_norm(x, 1, NULL, NULL, 1e-5, NULL), out);
  MISUSE(cell_op_dropout(NULL, 0.5, 1, &out), out);
  MISUSE(cell_op_embedding(NULL, x, 0, 0, 1, &out), out);
  MISUSE(cell_op_embedding(lab, NULL, 0, 0, 1, &out), out);
  MISUSE(cell_op_cross_entropy(NULL, lab, NULL, 0, 0, 0.0, CELL_REDUCTION_MEAN, 1, &out), out);
  MISUSE(cell_op_cross_entropy(x, NULL, NULL, 0, 0, 0.0, CELL_REDUCTION_MEAN, 1, &out), out);
  MISUSE(cell_op_nll_loss(NULL, lab, NULL, 0, 0, CELL_REDUCTION_MEAN, 1, &out), out);
  MISUSE(cell_op_mse_loss(NULL, x, CELL_REDUCTION_MEAN, &out), out);
  MISUSE(cell_op_l1_loss(x, NULL, CELL_REDUCTION_MEAN, &out), out);
  MISUSE(cell_op_bce_with_logits(NULL, x, NULL, NULL, CELL_REDUCTION_MEAN, &out), out);
  MISUSE(cell_op_mse_loss(x, x, (cell_reduction)7, &out), out);
  MISUSE(cell_op_conv2d(NULL, w, NULL, NULL, NULL, NULL, 1, &out), out);
  MISUSE(cell_op_conv2d(img, NULL, NULL, NULL, NULL, NULL, 1, &out), out);
  MISUSE(cell_op_conv2d(img, w, NULL, NULL, NULL, NULL, 1, NULL), out);
  MISUSE(cell_op_conv3d(NULL, w, NULL, NULL, NULL, NULL, 1, &out), out);
  MISUSE(cell_op_conv3d(img, w, NULL, NULL, NULL, NULL, 1, &out), out); /* not 5-D */
  MISUSE(cell_op_conv_transpose3d(NULL, w, NULL, NULL, NULL, NULL, NULL, 1, &out), out);
  MISUSE(cell_op_conv_transpose3d(img, NULL, NULL, NULL, NULL, NULL, NULL, 1, &out), out);
  {
    const int64_t v5[5] = {1, 1, 3, 3, 3}, k5[5] = {1, 1, 2, 2, 2};
    cell_tensor *vol = filled(CELL_DTYPE_F32, 5, v5, 1), *wk = filled(CELL_DTYPE_F32, 5, k5, 1);
    MISUSE(cell_op_conv3d(vol, wk, NULL, NULL, NULL, NULL, 1, NULL), out);
    MISUSE(cell_op_conv_transpose3d(vol, wk, NULL, NULL, NULL, NULL, NULL, 1, NULL), out);
    const int64_t st[3] = {1, 1, 1}, op[3] = {1, 0, 0};
    MISUSE(cell_op_conv_transpose3d(vol, wk, NULL, st, NULL, op, NULL, 1, &out), out);
    cell_tensor_release(vol);
    cell_tensor_release(wk);
  }
  MISUSE(cell_op_max_pool2d(NULL, k, NULL, NULL, &out), out);
  MISUSE(cell_op_max_pool2d(img, NULL, NULL, NULL, &out), out);
  MISUSE(cell_op_avg_pool2d(NULL, k, NULL, NULL, 1, &out), out);
  const int64_t d0[2] = {0, 1}, d4[2] = {4, 4};
  MISUSE(cell_op_max_pool2d_ex(NULL, k, NULL, NULL, NULL, 0, &out, NULL), out);
  MISUSE(cell_op_max_pool2d_ex(img, k, NULL, NULL, d0, 1, &out, NULL), out); /* dilation 0 */
  MISUSE(cell_op_max_pool2d_ex(img, k, NULL, NULL, d4, 0, &out, NULL), out); /* dilated past the input */
  MISUSE(cell_op_avg_pool2d_ex(NULL, k, NULL, NULL, 1, 1, &out), out);
  MISUSE(cell_op_avg_pool2d_ex(img, k, NULL, NULL, 1, 1, NULL), out);
  MISUSE(cell_op_nonzero(NULL, 0, &out), out);
  MISUSE(cell_op_masked_select(NULL, x, &out), out);
  MISUSE(cell_op_masked_select(x, x, &out), out); /* a mask that is not Bool */
  MISUSE(cell_op_masked_scatter(x, NULL, x, &out), out);
  MISUSE(cell_op_masked_scatter(x, x, NULL, &out), out);
  cell_sgd_config sgd = {0.1, 0, 0, 0, 1, 0, 1};
  cell_adam_config adam = {1e-3, 0.9, 0.999, 1e-8, 0, 1, 1, 0};
  CHECK(cell_optim_sgd_step(NULL, x, NULL, &sgd) != CELL_OK);
  CHECK(cell_optim_sgd_step(x, NULL, NULL, &sgd) != CELL_OK);
  CHECK(cell_optim_sgd_step(x, x, NULL, NULL) != CELL_OK);
  CHECK(cell_optim_adam_step(NULL, x, x, x, &adam) != CELL_OK);
  CHECK(cell_optim_adam_step(x, x, NULL, x, &adam) != CELL_OK);
  CHECK(cell_optim_adam_step(x, x, x, x, NULL) != CELL_OK);
  cell_safetensors *st = NULL;
  CHECK(cell_safetensors_load(NULL, &st) != CELL_OK && st == NULL);
  CHECK(cell_safetensors_load("/nonexistent/x.safetensors", NULL) != CELL_OK);
  CHECK(cell_safetensors_load("/nonexistent/x.safetensors", &st) != CELL_OK && st == NULL);
  cell_safetensors_free(NULL);
  CHECK(cell_safetensors_save(NULL, 0, NULL, NULL, 0, NULL, NULL) != CELL_OK);
  CHECK(cell_safetensors_save("/tmp/cell-capi-nn.safetensors", 1, NULL, &x, 0, NULL, NULL) != CELL_OK);
  MISUSE(cell_idx_load(NULL, &out), out);
  MISUSE(cell_idx_load("/nonexistent/x.idx", &out), out);
  MISUSE(cell_idx_load_as(NULL, CELL_DTYPE_F32, 1.0, &out), out);
  cell_tensor_release(x);
  cell_tensor_release(img);
  cell_tensor_release(w);
  cell_tensor_release(lab);
}

static void wrong_dtypes_and_shapes(void) {
  const int64_t s2[2] = {2, 3}, s3[1] = {4}, s4[4] = {1, 2, 4, 4}, sw[4] = {1, 3, 3, 3}, s1[1] = {2};
  cell_tensor *x = filled(CELL_DTYPE_F32, 2, s2, 1), *xi = filled(CELL_DTYPE_I32, 2, s2, 1);
  cell_tensor *v = filled(CELL_DTYPE_F32, 1, s3, 1), *img = filled(CELL_DTYPE_F32, 4, s4, 1);
  cell_tensor *w = filled(CELL_DTYPE_F32, 4, sw, 1), *flab = filled(CELL_DTYPE_F32, 1, s1, 1);
  cell_tensor *big = filled(CELL_DTYPE_I64, 1, s1, 9);
  cell_tensor *out = NULL;
  const int64_t k[2] = {5, 5};
  MISUSE(cell_op_softmax(xi, 1, &out), out);                         /* integer input */
  MISUSE(cell_op_softmax(x, 5, &out), out);                          /* dimension out of range */
  MISUSE(cell_op_mse_loss(x, v, CELL_REDUCTION_MEAN, &out), out);    /* shapes that do not broadcast */
  MISUSE(cell_op_cross_entropy(x, big, NULL, 0, 0, 0.0, CELL_REDUCTION_MEAN, 1, &out), out); /* label */
  MISUSE(cell_op_nll_loss(x, flab, NULL, 0, 0, CELL_REDUCTION_MEAN, 1, &out), out); /* float labels */
  MISUSE(cell_op_conv2d(img, w, NULL, NULL, NULL, NULL, 1, &out), out); /* channels 2 vs 3 */
  MISUSE(cell_op_conv2d(x, w, NULL, NULL, NULL, NULL, 1, &out), out);   /* not 4-D */
  MISUSE(cell_op_max_pool2d(img, k, NULL, NULL, &out), out);          /* kernel larger than input */
  MISUSE(cell_op_layer_norm(x, 3, NULL, NULL, 1e-5, &out), out);      /* more dims than the input */
  MISUSE(cell_op_dropout(x, 1.5, 1, &out), out);                      /* p outside [0, 1] */
  cell_sgd_config sgd = {0.1, 0, 0, 0, 1, 0, 1};
  CHECK(cell_optim_sgd_step(x, v, NULL, &sgd) != CELL_OK);            /* grad shape */
  CHECK(cell_optim_sgd_step(xi, xi, NULL, &sgd) != CELL_OK);          /* integer parameter */
  CHECK(strlen(cell_last_error()) > 0);
  cell_tensor_release(x);
  cell_tensor_release(xi);
  cell_tensor_release(v);
  cell_tensor_release(img);
  cell_tensor_release(w);
  cell_tensor_release(flab);
  cell_tensor_release(big);
}

void test_capi_nn_all(void) {
  null_handles();
  wrong_dtypes_and_shapes();
}
