/* test_device.c - the device layer: the registry, the test device (memory
 * the host cannot touch), moving tensors, mixed devices, a declined kernel,
 * and ops giving the CPU's results on the test device. */
#include "check.h"
#include "ops/device.h"
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* Whether reading p kills a child process: SIGSEGV, or under ASan its
 * report of the SEGV and a failing exit. A readable p exits 0. */
static int faults_on_read(const void *p) {
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGSEGV, SIG_DFL); /* die quietly, also under ASan's handler */
    signal(SIGBUS, SIG_DFL);
    volatile const char *q = p;
    char c = *q;
    (void)c;
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0);
}

void test_device_all(void) {
  int test, test1, cpu;
  CHECK_OK(cell_testdev_register(&test));
  CHECK_OK(cell_device_find("TEST", 1, &test1));
  CHECK_OK(cell_device_find("CPU", 0, &cpu));
  CHECK(cpu == 0 && test > 0 && test1 == test + 1);
  CHECK(cell_device_count() >= 3);
  CHECK(strcmp(cell_device_name(test), "TEST:0") == 0);
  CHECK(cell_device_name(99) == NULL);
  CHECK(cell_device_find("NOPE", 0, &cpu) == CELL_ERR_VALUE);
  CHECK(strstr(cell_last_error(), "NOPE:0") != NULL);
  CHECK(cell_device_register(cell_device_get(test), NULL) == CELL_ERR_VALUE);

  /* A CPU tensor moved to the test device: its memory faults on the host. */
  int64_t shape[2] = {2, 3};
  cell_tensor *a, *d, *back;
  CHECK_OK(cell_tensor_arange(1, 7, 1, CELL_DTYPE_F32, &a));
  cell_tensor *a2;
  CHECK_OK(cell_tensor_reshape(a, 2, shape, &a2));
  CHECK_OK(cell_tensor_move_to(a2, test, &d));
  CHECK(cell_tensor_device(d) == test && cell_tensor_device(a2) == 0);
  CHECK(faults_on_read(cell_tensor_data_ptr(d)));
  CHECK(!faults_on_read(cell_tensor_data_ptr(a2)));

  /* Ops on the device give the CPU's values, read through its copies. */
  cell_tensor *s, *m, *at;
  CHECK_OK(cell_op_binary(CELL_OP_MUL, d, d, &s));
  CHECK(cell_tensor_device(s) == test);
  double v;
  int64_t idx[2] = {1, 2};
  CHECK_OK(cell_tensor_get(s, idx, &v));
  CHECK(v == 36);
  CHECK_OK(cell_tensor_set(s, idx, 5));
  CHECK_OK(cell_tensor_get(s, idx, &v));
  CHECK(v == 5);
  CHECK_OK(cell_tensor_transpose(d, 0, 1, &at));
  CHECK_OK(cell_op_mm(d, at, &m)); /* [[14, 32], [32, 77]] */
  CHECK_OK(cell_tensor_move_to(m, 0, &back));
  CHECK(cell_tensor_device(back) == 0);
  const float *pb = cell_tensor_data_ptr(back);
  CHECK(pb[0] == 14 && pb[1] == 32 && pb[2] == 32 && pb[3] == 77);
  char *text;
  CHECK_OK(cell_tensor_format(m, &text));
  CHECK(strstr(text, "77") != NULL);
  free(text);

  /* Inputs on two devices: a ValueError naming both. */
  cell_tensor *bad = NULL;
  CHECK(cell_op_binary(CELL_OP_ADD, a2, d, &bad) == CELL_ERR_VALUE && bad == NULL);
  CHECK(strstr(cell_last_error(), "add: tensors on different devices: CPU and TEST:0") != NULL);

  /* TEST:1 declines mm: NotImplementedError naming the op and the device. */
  cell_tensor *d1;
  CHECK_OK(cell_tensor_move_to(d, test1, &d1));
  CHECK(cell_tensor_device(d1) == test1);
  CHECK(cell_op_mm(d1, d1, &bad) == CELL_ERR_NOTIMPL);
  CHECK(strstr(cell_last_error(), "mm is not supported on device TEST:1") != NULL);

  /* The default device: tensors made from nothing go there. */
  cell_tensor *z;
  CHECK_OK(cell_set_device(test));
  CHECK(cell_get_device() == test);
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F64, 2, shape, 2.5, &z));
  CHECK(cell_tensor_device(z) == test);
  CHECK_OK(cell_set_device(0));
  CHECK(cell_set_device(99) == CELL_ERR_VALUE);
  CHECK(cell_tensor_item(d1, &v) == CELL_ERR_VALUE); /* six elements */

  cell_tensor *ts[] = {a, a2, d, back, s, m, at, d1, z};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) cell_tensor_release(ts[i]);
}
