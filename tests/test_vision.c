/* test_vision.c - the image decoders and vision transforms (src/io/image.c,
 * src/io/vision_*.c) without Lua: decoding the committed fixtures, every
 * corrupt one a clean error naming the file, determinism of the random
 * ops for (seed, sample), and failed allocations in each op (fail the Nth
 * for N = 1, 2, ... until success: each a clean MemoryError, no leak).
 * Run from the repository root (the fixtures' paths are relative to it). */
#include "check.h"
#include "cell_vision.h"
#include "core/alloc.h"

#define IMG_DIR "spec/fixtures/images"

static void test_decode_files(void) {
  static const char *const good[] = {"rgb.png", "grey.png", "rgba.png", "palette.png", "grey16.png", "rgb.jpg",
                                     "grey.jpg"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    char path[256];
    snprintf(path, sizeof path, IMG_DIR "/decode/%s", good[i]);
    cell_tensor *t = NULL;
    CHECKF(cell_image_load(path, &t) == CELL_OK, "%s: %s", path, cell_last_error());
    CHECK(cell_tensor_ndim(t) == 3 && cell_tensor_dim(t, 2) == 3 && cell_tensor_dtype(t) == CELL_DTYPE_U8);
    cell_tensor_release(t);
  }
  static const char *const bad[] = {"truncated.png", "truncated.jpg", "truncated_scan.jpg", "header_only.png",
                                    "bad_crc.png",   "garbage.jpg",   "text.png",           "empty.png",
                                    "huge.png"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char path[256];
    snprintf(path, sizeof path, IMG_DIR "/bad/%s", bad[i]);
    cell_tensor *t = NULL;
    cell_status s = cell_image_load(path, &t);
    CHECKF(s == CELL_ERR_RUNTIME || s == CELL_ERR_VALUE, "%s: status %d", path, (int)s);
    CHECK(t == NULL);
    CHECK_MSG(path);
  }
  cell_tensor *t = NULL;
  CHECK(cell_image_load(IMG_DIR "/nope.png", &t) == CELL_ERR_VALUE);
  CHECK(cell_image_decode(NULL, 0, NULL, &t) == CELL_ERR_RUNTIME);
  CHECK(cell_image_format("\x89PNG\r\n\x1a\n", 8) == CELL_IMAGE_PNG);
}

static void test_folder(void) {
  cell_image_folder *f = NULL;
  const char *exts[] = {".png", ".jpg"};
  CHECK_OK(cell_image_folder_scan(IMG_DIR "/folder", exts, 2, &f));
  CHECK(f->num_classes == 3 && f->num_files == 5);
  CHECK(strcmp(f->classes[0], "cat") == 0 && f->class_of[4] == 1);
  cell_sample_op *rd = NULL;
  CHECK_OK(cell_image_reader(f->num_files, (const char *const *)f->files, 1, &rd));
  cell_image_folder_free(f);
  cell_tensor *i3 = NULL, *img = NULL;
  CHECK_OK(cell_tensor_full(CELL_DTYPE_I64, 0, NULL, 3, &i3));
  CHECK_OK(cell_sample_op_run(rd, i3, 0, 0, &img));
  CHECK(cell_tensor_dim(img, 0) == 6 && cell_tensor_dim(img, 2) == 3);
  cell_tensor_release(img);
  CHECK_OK(cell_tensor_fill_(i3, 9));
  CHECK(cell_sample_op_run(rd, i3, 0, 0, &img) == CELL_ERR_INDEX);
  cell_tensor_release(i3);
  rd->destroy(rd);
}

/* The ops under test, made fresh (op k of the list). */
static cell_sample_op *make_op(int k) {
  int64_t pad[4] = {2, 1, 0, 3};
  double b[2] = {0.5, 1.5}, hue[2] = {-0.2, 0.2}, mean[3] = {1, 2, 3}, sd[3] = {2, 2, 2};
  cell_sample_op *op = NULL;
  switch (k) {
  case 0: cell_vision_resize(5, 7, CELL_INTER_BILINEAR, &op); break;
  case 1: cell_vision_random_crop(6, 6, pad, 1, NULL, CELL_BORDER_SYMMETRIC, &op); break;
  case 2: cell_vision_random_flip(0, 1, &op); break;
  case 3: cell_vision_random_resized_crop(4, 4, NULL, NULL, CELL_INTER_BILINEAR, 10, &op); break;
  case 4: cell_vision_normalize(3, mean, sd, 1, &op); break;
  case 5: cell_vision_hwc2chw(&op); break;
  case 6: cell_vision_random_rotation(-40, 40, CELL_INTER_BILINEAR, 1, NULL, NULL, &op); break;
  case 7: cell_vision_color_jitter(b, b, b, hue, &op); break;
  case 8: cell_vision_to_tensor(CELL_DTYPE_F32, &op); break;
  case 9: cell_vision_resize(9, 4, CELL_INTER_BICUBIC, &op); break;
  case 10: cell_vision_random_rotation(-40, 40, CELL_INTER_BICUBIC, 1, NULL, NULL, &op); break;
  case 11: cell_vision_rescale(1.0 / 255, -0.5, &op); break;
  case 12: cell_vision_center_crop(3, 12, &op); break; /* cropped in height, padded in width */
  default: break;
  }
  return op;
}
#define NOPS 13

/* CenterCrop by hand, as MindSpore's CenterCropOp: a 2 x 3 image (1..6)
 * cropped to 4 x 2 is padded 1 row above and 1 below ((d + 1) / 2 before),
 * and its columns start at (3 - 2) / 2 = 0. Rescale: x * 0.5 - 1 as float32. */
static void test_center_crop_rescale(void) {
  int64_t shape[2] = {2, 3};
  cell_tensor *x = NULL, *y = NULL;
  CHECK_OK(cell_tensor_full(CELL_DTYPE_U8, 2, shape, 0, &x));
  uint8_t *px = cell_tensor_data_ptr(x);
  for (int i = 0; i < 6; i++) px[i] = (uint8_t)(i + 1);
  cell_sample_op *op = NULL;
  CHECK_OK(cell_vision_center_crop(4, 2, &op));
  CHECK_OK(cell_sample_op_run(op, x, 0, 0, &y));
  static const uint8_t want[8] = {0, 0, 1, 2, 4, 5, 0, 0};
  CHECK(cell_tensor_dim(y, 0) == 4 && cell_tensor_dim(y, 1) == 2 && cell_tensor_dtype(y) == CELL_DTYPE_U8 &&
        memcmp(cell_tensor_data_ptr(y), want, sizeof want) == 0);
  cell_tensor_release(y);
  op->destroy(op);
  CHECK_OK(cell_vision_rescale(0.5, -1, &op));
  CHECK_OK(cell_sample_op_run(op, x, 0, 0, &y));
  const float *py = cell_tensor_data_ptr(y);
  CHECK(cell_tensor_dtype(y) == CELL_DTYPE_F32 && cell_tensor_ndim(y) == 2 && py[0] == -0.5f && py[5] == 2.0f);
  cell_tensor_release(y);
  op->destroy(op);
  CHECK_OK(cell_vision_center_crop(9, 9, &op)); /* padding 7 >= 3 x 2 rows: refused */
  y = NULL;
  CHECK(cell_sample_op_run(op, x, 0, 0, &y) == CELL_ERR_VALUE && y == NULL);
  op->destroy(op);
  cell_tensor_release(x);
  op = NULL;
  CHECK(cell_vision_center_crop(0, 2, &op) == CELL_ERR_VALUE);
  CHECK(cell_vision_rescale(NAN, 0, &op) == CELL_ERR_VALUE);
  CHECK(cell_vision_rescale(1, 1e39, &op) == CELL_ERR_VALUE);
  CHECK(op == NULL);
}

/* Bicubic (a = -0.75) by hand: {0, 0, 1, 1} to 2 columns samples at 0.5
 * (taps at -1, 0, 1, 2) and 2.5 (taps at 1, 2, 3, 4), the edge taps
 * clamped; the weights at t = 0.5 are -0.09375, 0.59375, 0.59375,
 * -0.09375: -0.09375 and 1.09375, overshooting on both sides. */
static void test_bicubic(void) {
  int64_t shape[2] = {1, 4};
  cell_tensor *x = NULL, *y = NULL;
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 2, shape, 0, &x));
  float *px = cell_tensor_data_ptr(x);
  px[2] = px[3] = 1;
  cell_sample_op *op = NULL;
  CHECK_OK(cell_vision_resize(1, 2, CELL_INTER_BICUBIC, &op));
  CHECK_OK(cell_sample_op_run(op, x, 0, 0, &y));
  const float *py = cell_tensor_data_ptr(y);
  CHECK(cell_tensor_dim(y, 1) == 2 && fabsf(py[0] + 0.09375f) < 1e-6f && fabsf(py[1] - 1.09375f) < 1e-6f);
  cell_tensor_release(y);
  op->destroy(op);
  cell_tensor_release(x);
  CHECK(cell_vision_resize(3, 3, CELL_INTER_COUNT, &op) == CELL_ERR_VALUE);
}

static void test_ops(void) {
  cell_tensor *img = NULL;
  CHECK_OK(cell_image_load(IMG_DIR "/decode/rgb.png", &img));
  for (int k = 0; k < NOPS; k++) {
    cell_sample_op *op = make_op(k);
    CHECKF(op != NULL, "op %d: %s", k, cell_last_error());
    /* the same (seed, sample) gives the same output */
    cell_tensor *a = NULL, *b = NULL;
    CHECK_OK(cell_sample_op_run(op, img, 5, 17, &a));
    CHECK_OK(cell_sample_op_run(op, img, 5, 17, &b));
    CHECK(cell_tensor_nbytes(a) == cell_tensor_nbytes(b) &&
          memcmp(cell_tensor_data_ptr(a), cell_tensor_data_ptr(b), cell_tensor_nbytes(a)) == 0);
    cell_tensor_release(a);
    cell_tensor_release(b);
    /* failed allocations: a clean MemoryError each time, no leak */
    long base = cell_alloc_live_blocks();
    int succeeded = 0;
    for (long n = 1; n < 50 && !succeeded; n++) {
      cell_tensor *out = NULL;
      cell_alloc_fail_after(n);
      cell_status s = cell_sample_op_run(op, img, 1, 2, &out);
      cell_alloc_fail_after(0);
      if (s == CELL_OK) {
        succeeded = 1;
        cell_tensor_release(out);
      } else {
        CHECKF(s == CELL_ERR_MEMORY && out == NULL, "%s: status %d at allocation %ld", op->name, (int)s, n);
      }
      CHECKF(cell_alloc_live_blocks() == base, "%s: leak after failing allocation %ld", op->name, n);
    }
    CHECK(succeeded);
    op->destroy(op);
  }
  /* decoding under failed allocations */
  static const char *const files[] = {IMG_DIR "/decode/rgb.png", IMG_DIR "/decode/rgb.jpg"};
  for (int i = 0; i < 2; i++) {
    long base = cell_alloc_live_blocks();
    int succeeded = 0;
    for (long n = 1; n < 20 && !succeeded; n++) {
      cell_tensor *out = NULL;
      cell_alloc_fail_after(n);
      cell_status s = cell_image_load(files[i], &out);
      cell_alloc_fail_after(0);
      if (s == CELL_OK) succeeded = 1, cell_tensor_release(out);
      else CHECK(s == CELL_ERR_MEMORY && out == NULL);
      CHECK(cell_alloc_live_blocks() == base);
    }
    CHECK(succeeded);
  }
  /* argument checks */
  cell_sample_op *op = NULL;
  CHECK(cell_vision_resize(0, 3, CELL_INTER_BILINEAR, &op) == CELL_ERR_VALUE);
  CHECK(cell_vision_random_flip(0, 2, &op) == CELL_ERR_VALUE);
  CHECK(cell_vision_to_tensor(CELL_DTYPE_I32, &op) == CELL_ERR_TYPE);
  CHECK(op == NULL);
  cell_tensor_release(img);
}

void test_vision_all(void) {
  test_decode_files();
  test_folder();
  test_ops();
  test_bicubic();
  test_center_crop_rescale();
}
