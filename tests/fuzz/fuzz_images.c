/* fuzz_images.c - libFuzzer target: the input is a PNG or JPEG file,
 * decoded from memory (src/io/image.c); what decodes must be {H, W, 3}
 * uint8 and goes through the vision transforms (Resize, RandomCrop with
 * reflection, RandomRotation with expand, ColorJitter, Normalize), whose
 * shapes are checked. Seeded with spec/fixtures/images (good and corrupt
 * files); no engine block outlives the input. */
#include "fuzz_common.h"
#include "cell_vision.h"

/* op on *img, replacing it; the output's shape must be {h, w, c}
 * (0: any) when it succeeds. */
static void step(cell_sample_op *op, cell_tensor **img, int64_t h, int64_t w, int64_t c, uint64_t index) {
  cell_tensor *o = NULL;
  if (cell_sample_op_run(op, *img, 7, index, &o) != CELL_OK) return;
  if ((h && cell_tensor_dim(o, 0) != h) || (w && cell_tensor_dim(o, 1) != w) || cell_tensor_dim(o, 2) != c)
    FUZZ_FAIL("%s gave %lld x %lld x %lld", op->name, cell_tensor_dim(o, 0), cell_tensor_dim(o, 1),
              cell_tensor_dim(o, 2));
  cell_tensor_release(*img);
  *img = o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_setup();
  long live = cell_alloc_live_blocks();
  cell_tensor *img = NULL;
  if (cell_image_decode(data, size, "fuzz", &img) == CELL_OK) {
    if (cell_tensor_ndim(img) != 3 || cell_tensor_dim(img, 2) != 3 || cell_tensor_dtype(img) != CELL_DTYPE_U8)
      FUZZ_FAIL("decoded to %d dimensions of %s", cell_tensor_ndim(img), cell_dtype_name(cell_tensor_dtype(img)));
    if (cell_tensor_numel(img) <= 3 * 4096) { /* transforms on small images only: speed */
      int64_t pad[4] = {3, 1, 0, 2};
      double b[2] = {0.5, 1.5}, hue[2] = {-0.5, 0.5}, mean[1] = {128}, sd[1] = {64};
      cell_sample_op *ops[5] = {NULL};
      cell_vision_resize(5, 0, CELL_INTER_BILINEAR, &ops[0]);
      cell_vision_random_crop(4, 6, pad, 1, NULL, CELL_BORDER_REFLECT, &ops[1]);
      cell_vision_random_rotation(-180, 180, CELL_INTER_BILINEAR, 1, NULL, NULL, &ops[2]);
      cell_vision_color_jitter(b, b, b, hue, &ops[3]);
      cell_vision_normalize(1, mean, sd, 1, &ops[4]);
      for (int i = 0; i < 5; i++)
        if (!ops[i]) FUZZ_FAIL("op %d not made", i);
      step(ops[0], &img, 0, 0, 3, size);
      step(ops[1], &img, 4, 6, 3, size);
      step(ops[2], &img, 0, 0, 3, size);
      step(ops[3], &img, 0, 0, 3, size);
      step(ops[4], &img, 0, 0, 3, size);
      for (int i = 0; i < 5; i++) ops[i]->destroy(ops[i]);
    }
  }
  cell_tensor_release(img);
  fuzz_check_live(live, "images");
  return 0;
}
