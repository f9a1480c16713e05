/* error.c - the engine's error channel: a status and a thread-local message. */
#include "cell.h"
#include <stdarg.h>
#include <stdio.h>

static __thread char err_msg[1024];
static __thread cell_status err_status;

cell_status cell_error(cell_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err_msg, sizeof err_msg, fmt, ap);
  va_end(ap);
  err_status = status;
  return status;
}

void cell_error_clear(void) {
  err_msg[0] = '\0';
  err_status = CELL_OK;
}

const char *cell_last_error(void) { return err_msg; }
cell_status cell_last_status(void) { return err_status; }

const char *cell_status_name(cell_status s) {
  static const char *const names[CELL_STATUS_COUNT] = {
      [CELL_OK] = "OK",
      [CELL_ERR_VALUE] = "ValueError",
      [CELL_ERR_TYPE] = "TypeError",
      [CELL_ERR_INDEX] = "IndexError",
      [CELL_ERR_MEMORY] = "MemoryError",
      [CELL_ERR_RUNTIME] = "RuntimeError",
      [CELL_ERR_NOTIMPL] = "NotImplementedError",
      [CELL_ERR_INTERRUPT] = "KeyboardInterrupt",
  };
  _Static_assert(sizeof names / sizeof names[0] == CELL_STATUS_COUNT, "status names");
  if ((unsigned)s >= CELL_STATUS_COUNT) return "RuntimeError";
  return names[s];
}
