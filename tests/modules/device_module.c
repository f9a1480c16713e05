/* device_module.c - device modules for the C test of cell_device_load
 * (tests/test_device_load.c), one source built three ways:
 *   -DMODULE_testdev  libcell_testdev.so: the test device as a loadable
 *                     module; its entry registers TEST:0 and TEST:1.
 *   -DMODULE_noentry  libcell_noentry.so: a shared object without the
 *                     entry (cell_device_load must refuse it).
 *   -DMODULE_failing  libcell_failing.so: an entry that fails with a
 *                     message (cell_device_load must pass it on).
 * Built for the tests only, linked against nothing: the engine's symbols
 * come from the host that loads it (the test binary exports them). */
#include "cell_device.h"

#if defined(MODULE_testdev)
/* The test device's registration (src/ops/testdev.c), exported by the engine. */
CELL_API cell_status cell_testdev_register(int *id);
CELL_API cell_status cell_device_module_init(void);
CELL_API cell_status cell_device_module_init(void) { return cell_testdev_register(NULL); }
#elif defined(MODULE_failing)
CELL_API cell_status cell_device_module_init(void);
CELL_API cell_status cell_device_module_init(void) {
  return cell_error(CELL_ERR_RUNTIME, "failing module: no device here");
}
#else
CELL_API int cell_not_a_device_module(void);
CELL_API int cell_not_a_device_module(void) { return 42; }
#endif
