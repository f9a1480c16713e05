/* load_cuda.c - a C host that loads the GPU without Lua:
 * cell_device_load("cuda") finds libcell_cuda.so beside libcell.so. With a
 * GPU it registers GPU:0 and a product and a softmax run there and match
 * the CPU's; without one the load is a RuntimeError naming CUDA's reason
 * and nothing is registered. A second load registers nothing more. Exits
 * 0 when every check passed. Built and run by `make test-cuda`. */
#include "cell.h"
#include "cell_device.h"
#include "cell_nn.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static int failed;
#define CHECK(c)                                                                                  \
  do {                                                                                            \
    if (!(c)) {                                                                                   \
      failed++;                                                                                   \
      fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, #c,      \
              cell_last_error());                                                                 \
    }                                                                                             \
  } while (0)

/* max |a - b| over two float32 CPU tensors of n elements. */
static double maxdiff(const cell_tensor *a, const cell_tensor *b, int64_t n) {
  const float *x = cell_tensor_data_ptr(a), *y = cell_tensor_data_ptr(b);
  double m = 0;
  for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)x[i] - (double)y[i]));
  return m;
}

int main(void) {
  int before = cell_device_count(), gpu = -1;
  cell_status s = cell_device_load("cuda");
  if (s != CELL_OK) {
    printf("load_cuda: no GPU: %s\n", cell_last_error());
    CHECK(s == CELL_ERR_RUNTIME);
    CHECK(strstr(cell_last_error(), "device_load: cuda: no CUDA device: ") != NULL);
    CHECK(cell_device_count() == before);
    CHECK(cell_device_find("GPU", 0, &gpu) == CELL_ERR_VALUE);
  } else {
    CHECK(cell_device_find("GPU", 0, &gpu) == CELL_OK);
    int after = cell_device_count();
    CHECK(after > before);
    CHECK(cell_device_load("cuda") == CELL_OK && cell_device_count() == after);
    int64_t shape[2] = {33, 65};
    cell_tensor *a, *g, *p, *pg, *back, *sm, *smg, *smb;
    CHECK(cell_tensor_randn(CELL_DTYPE_F32, 2, shape, &a) == CELL_OK);
    CHECK(cell_tensor_move_to(a, gpu, &g) == CELL_OK);
    cell_tensor *at;
    CHECK(cell_tensor_transpose(a, 0, 1, &at) == CELL_OK);
    cell_tensor *gt;
    CHECK(cell_tensor_move_to(at, gpu, &gt) == CELL_OK);
    CHECK(cell_op_matmul(a, at, &p) == CELL_OK);
    CHECK(cell_op_matmul(g, gt, &pg) == CELL_OK);
    CHECK(cell_tensor_device(pg) == gpu);
    CHECK(cell_tensor_move_to(pg, 0, &back) == CELL_OK);
    CHECK(maxdiff(p, back, 33 * 33) < 1e-3);
    CHECK(cell_op_softmax(a, 1, &sm) == CELL_OK);
    CHECK(cell_op_softmax(g, 1, &smg) == CELL_OK);
    CHECK(cell_tensor_move_to(smg, 0, &smb) == CELL_OK);
    CHECK(maxdiff(sm, smb, 33 * 65) < 1e-6);
    printf("load_cuda: GPU:0 registered as device %d; matmul and softmax match the CPU\n", gpu);
  }
  printf("load_cuda: %s\n", failed ? "FAILED" : "ok");
  return failed ? 1 : 0;
}
