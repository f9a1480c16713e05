/* codecs.h - libpng and libjpeg(-turbo), loaded on first use (internal to
 * src/io).
 *
 * The engine does not link the image libraries: a program that never
 * decodes an image (most training scripts, every C host that runs a model)
 * does not map them, and `require "cell"` stays as small as it was before
 * cell.dataset.vision. The first PNG (or JPEG) decode dlopen()s the library
 * whose headers the engine was compiled against (libpng16.so.16,
 * libjpeg.so.62 on Debian) and fills the table below; both libraries check
 * at run time that the loaded version matches those headers. */
#ifndef CELL_IO_CODECS_H
#define CELL_IO_CODECS_H
#include "cell.h"
#include <stdio.h> /* jpeglib.h uses FILE */
#include <jpeglib.h>
#include <jerror.h>
#include <png.h>

/* The functions src/io/image.c calls, as X(name). */
#define CELL_PNG_FUNCTIONS(X)                                                                                   \
  X(png_create_read_struct) X(png_create_info_struct) X(png_destroy_read_struct) X(png_set_longjmp_fn)        \
  X(png_longjmp) X(png_error) X(png_get_io_ptr) X(png_get_error_ptr) X(png_set_read_fn) X(png_set_user_limits) \
  X(png_read_info) X(png_get_image_width) X(png_get_image_height) X(png_get_color_type) X(png_get_bit_depth)   \
  X(png_set_strip_16) X(png_set_palette_to_rgb) X(png_set_expand_gray_1_2_4_to_8) X(png_set_gray_to_rgb)       \
  X(png_set_strip_alpha) X(png_set_interlace_handling) X(png_read_update_info) X(png_get_rowbytes)              \
  X(png_read_image) X(png_read_end)
#define CELL_JPEG_FUNCTIONS(X)                                                                              \
  X(jpeg_std_error) X(jpeg_CreateDecompress) X(jpeg_mem_src) X(jpeg_read_header) X(jpeg_start_decompress) \
  X(jpeg_read_scanlines) X(jpeg_finish_decompress) X(jpeg_destroy_decompress)

/* One pointer per function, with the function's own type. */
typedef struct cell_codecs {
#define CELL_CODEC_POINTER(f) __typeof__(&f) f;
  CELL_PNG_FUNCTIONS(CELL_CODEC_POINTER)
  CELL_JPEG_FUNCTIONS(CELL_CODEC_POINTER)
#undef CELL_CODEC_POINTER
} cell_codecs;

/* The table, filled by the calls below; read it only after one of them
 * returned CELL_OK (the PNG half after cell_codecs_png, the JPEG half after
 * cell_codecs_jpeg). */
extern cell_codecs cell_codec;

/* Load libpng (or libjpeg) once per process, from any thread. A library
 * that cannot be loaded is a RuntimeError naming it and dlopen's reason,
 * with `what` (the file being decoded) in front; the next call says the
 * same. */
cell_status cell_codecs_png(const char *what);
cell_status cell_codecs_jpeg(const char *what);

#endif
