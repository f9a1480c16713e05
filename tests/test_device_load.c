/* test_device_load.c - cell_device_load: a device module (the test device
 * built as libcell_testdev.so, tests/modules) loaded at run time, an op run
 * on its device, and the errors: a malformed name, a missing module, a
 * shared object without the entry, an entry that fails, a second load. */
#include "check.h"
#include "cell_device.h"

#ifndef CELL_TEST_MODULES
#error "CELL_TEST_MODULES: the folder of the test device modules (the Makefile sets it)"
#endif

void test_device_load_all(void) {
  CHECK(setenv("CELL_DEVICE_PATH", "/nonexistent-folder:" CELL_TEST_MODULES, 1) == 0);
  int before = cell_device_count(), id;
  int had = cell_device_find("TEST", 0, &id) == CELL_OK;

  /* Errors first: none of them registers anything. */
  CHECK(cell_device_load(NULL) == CELL_ERR_VALUE);
  CHECK(cell_device_load("") == CELL_ERR_VALUE);
  CHECK(cell_device_load("bad name") == CELL_ERR_VALUE);
  CHECK(strstr(cell_last_error(), "device_load: bad module name 'bad name'") != NULL);
  CHECK(cell_device_load("nonexistent") == CELL_ERR_RUNTIME);
  CHECK(strstr(cell_last_error(), "cannot load device module 'nonexistent' (libcell_nonexistent.so") != NULL);
  CHECK(cell_device_load("noentry") == CELL_ERR_RUNTIME);
  CHECK(strstr(cell_last_error(), "libcell_noentry.so is not a device module: it has no cell_device_module_init") != NULL);
  CHECK(cell_device_load("failing") == CELL_ERR_RUNTIME);
  CHECK(strstr(cell_last_error(), "device_load: failing: failing module: no device here") != NULL);
  CHECK(cell_device_load(CELL_TEST_MODULES "/libcell_absent.so") == CELL_ERR_RUNTIME);
  CHECK(cell_device_count() == before);

  /* The module loads and registers its devices (unless another test
   * registered the test device first: then nothing new). */
  CHECK_OK(cell_device_load("testdev"));
  CHECK_OK(cell_device_find("TEST", 0, &id));
  int test1;
  CHECK_OK(cell_device_find("TEST", 1, &test1));
  CHECK(test1 == id + 1);
  CHECK(cell_device_count() == (had ? before : before + 2));
  int after = cell_device_count();

  /* Loaded twice, by name or by path: nothing registered again. */
  CHECK_OK(cell_device_load("testdev"));
  CHECK_OK(cell_device_load(CELL_TEST_MODULES "/libcell_testdev.so"));
  CHECK(cell_device_count() == after);

  /* An op on the loaded device gives the CPU's values. */
  cell_tensor *a, *d, *s, *back;
  CHECK_OK(cell_tensor_arange(1, 5, 1, CELL_DTYPE_F32, &a));
  CHECK_OK(cell_tensor_move_to(a, id, &d));
  CHECK(cell_tensor_device(d) == id);
  CHECK_OK(cell_op_binary(CELL_OP_MUL, d, d, &s));
  CHECK(cell_tensor_device(s) == id);
  CHECK_OK(cell_tensor_move_to(s, 0, &back));
  const float *v = cell_tensor_data_ptr(back);
  CHECK(v[0] == 1 && v[1] == 4 && v[2] == 9 && v[3] == 16);
  cell_tensor_release(back);
  cell_tensor_release(s);
  cell_tensor_release(d);
  cell_tensor_release(a);
  unsetenv("CELL_DEVICE_PATH");
}
