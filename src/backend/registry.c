/* registry.c - backends in the order they are asked. */
#include "backend.h"

static const cell_backend *const registry[] = {&cell_backend_small, &cell_backend_blas, &cell_backend_bf16, &cell_backend_lowp, &cell_backend_cpu};

const cell_backend *cell_backend_for_gemm(const cell_gemm *g) {
  for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
    if (registry[i]->supports_gemm(g)) return registry[i];
  return &cell_backend_cpu;
}

cell_status cell_gemm_run(const cell_gemm *g) { return cell_backend_for_gemm(g)->gemm(g); }

const char *cell_gemm_backend_name(cell_dtype dt, int64_t m, int64_t n, int64_t k) {
  cell_gemm g = {dt, m, n, k, NULL, k, 1, NULL, n, 1, NULL, n, 1, 0};
  return cell_backend_for_gemm(&g)->name;
}

const char *cell_gemm_kernel_name(void) {
  int isa = cell_sgemm_isa();
  return isa == 2 ? "cell-avx512" : isa == 1 ? "cell-avx2" : "openblas";
}
