/* cell_vision.h - public C API: images. PNG and JPEG decoding (libpng,
 * libjpeg-turbo), image folders, and the vision transforms of
 * cell.dataset.vision as per-sample ops (cell_sample_op, cell_data.h) that
 * a pipeline's worker threads run without Lua.
 * The conventions at the top of cell.h apply.
 *
 * Images are HWC: {H, W, C} (or {H, W}, one channel), uint8 or float, on
 * the CPU; the transforms take any contiguous or strided tensor (a copy
 * is made when needed) and give new CPU tensors (or the input itself,
 * retained, when they leave it unchanged). Random transforms draw from
 * the per-sample stream of (rng_seed, sample_index) (cell_data_rng), so a
 * sample's augmentation is the same whichever worker runs it.
 * Errors from apply carry the transform's name ("RandomCrop: ...") and a
 * status: ValueError for shapes and values, TypeError for dtypes,
 * RuntimeError for an image that does not decode. */
#ifndef CELL_VISION_H
#define CELL_VISION_H
#include "cell.h"
#include "cell_data.h"

/* --- decoding ------------------------------------------------------------- */
typedef enum cell_image_kind { CELL_IMAGE_UNKNOWN = 0, CELL_IMAGE_PNG, CELL_IMAGE_JPEG } cell_image_kind;
/* The format of an encoded image from its first bytes (its signature). */
CELL_API int cell_image_format(const void *buf, size_t n);
/* Decode PNG or JPEG bytes buf[0..n) into a {H, W, 3} uint8 RGB tensor,
 * as OpenCV's IMREAD_COLOR does (MindSpore's Decode): grey repeated in
 * the three channels, palettes expanded, 16-bit samples cut to 8, alpha
 * dropped, CMYK JPEGs converted. name (NULL: "<memory>") names the image
 * in messages. RuntimeError: not a PNG or JPEG, or corrupt or truncated
 * data ("Decode: NAME: corrupt JPEG image: WHY"); ValueError: more than
 * 2^28 pixels; MemoryError. */
CELL_API cell_status cell_image_decode(const void *buf, size_t n, const char *name, cell_tensor **out);
/* A regular file's bytes as a 1-D uint8 tensor. ValueError naming the
 * path: missing, unreadable, not a regular file, over 2 GiB. */
CELL_API cell_status cell_file_read_bytes(const char *path, cell_tensor **out);
/* cell_file_read_bytes, then cell_image_decode with the path as name. */
CELL_API cell_status cell_image_load(const char *path, cell_tensor **out);

/* An image folder: dir's subfolders (sorted by name, hidden ones skipped)
 * are the classes; each class's regular files (sorted, hidden skipped)
 * whose names end in one of exts (case-insensitive; n_ext 0: any) are its
 * samples, in class order. Free with cell_image_folder_free. ValueError
 * naming dir when it cannot be read; MemoryError. */
typedef struct cell_image_folder {
  int num_classes;
  char **classes;    /* folder names */
  int64_t num_files;
  char **files;      /* "dir/class/file" */
  int *class_of;     /* 0-based index into classes, per file */
} cell_image_folder;
CELL_API cell_status cell_image_folder_scan(const char *dir, const char *const *exts, int n_ext,
                                            cell_image_folder **out);
CELL_API void cell_image_folder_free(cell_image_folder *f);
/* An op reading the files paths[0..n) (copied): a sample holding the
 * integer i (any shape with one element) becomes file i's bytes (1-D
 * uint8), or its decoded image when decode. IndexError for i outside
 * [0, n); the errors of cell_file_read_bytes and cell_image_decode, which
 * name the file. What ImageFolderDataset's image column runs first. */
CELL_API cell_status cell_image_reader(int64_t n, const char *const *paths, int decode, cell_sample_op **out);

/* --- transforms as per-sample ops ---------------------------------------------
 * Each constructor validates its arguments (ValueError naming the bad one)
 * and returns a new op (free with op->destroy(op)). */
typedef enum cell_vision_inter {
  CELL_INTER_NEAREST = 0, /* OpenCV's INTER_NEAREST: source floor(x * in / out) */
  CELL_INTER_BILINEAR,    /* half-pixel centres, no antialiasing (OpenCV's INTER_LINEAR,
                             PyTorch's bilinear with align_corners=False) */
  CELL_INTER_BICUBIC,     /* cubic convolution with a = -0.75 over 4 x 4 taps, half-pixel
                             centres, no antialiasing (OpenCV's INTER_CUBIC, PyTorch's bicubic
                             with align_corners=False); not clamped to the input's range */
  CELL_INTER_COUNT
} cell_vision_inter;
typedef enum cell_vision_border {
  CELL_BORDER_CONSTANT = 0, /* the fill value */
  CELL_BORDER_EDGE,         /* the edge pixel repeated */
  CELL_BORDER_REFLECT,      /* mirrored without repeating the edge: 2 1 | 0 1 2 */
  CELL_BORDER_SYMMETRIC,    /* mirrored with the edge repeated: 1 0 | 0 1 2 */
  CELL_BORDER_COUNT
} cell_vision_border;

/* Decode: a 1-D uint8 tensor of PNG/JPEG bytes to {H, W, 3} uint8. */
CELL_API cell_status cell_vision_decode(cell_sample_op **out);
/* Resize to h x w; w == 0: the shorter edge to h, the other edge
 * floor(h * longer / shorter). uint8 results are rounded to nearest. */
CELL_API cell_status cell_vision_resize(int64_t h, int64_t w, cell_vision_inter inter, cell_sample_op **out);
/* RandomCrop: pad by padding = {left, top, right, bottom} (NULL: none)
 * with mode (fill[c] per channel for CONSTANT; fill NULL: 0), then when
 * pad_if_needed and the image is still narrower (shorter) than w (h),
 * pad both sides by the difference; then an h x w window at a uniform
 * position. ValueError from apply when the padded image is smaller. */
CELL_API cell_status cell_vision_random_crop(int64_t h, int64_t w, const int64_t *padding, int pad_if_needed,
                                             const double *fill, cell_vision_border mode,
                                             cell_sample_op **out);
/* RandomHorizontalFlip (vertical 0) / RandomVerticalFlip (1) with
 * probability prob in [0, 1]. */
CELL_API cell_status cell_vision_random_flip(int vertical, double prob, cell_sample_op **out);
/* RandomResizedCrop: a window of area fraction in [scale[0], scale[1]]
 * and aspect ratio w / h log-uniform in [ratio[0], ratio[1]] (up to
 * max_attempts tries, then a centre crop clamped to the ratios), resized
 * to h x w. */
CELL_API cell_status cell_vision_random_resized_crop(int64_t h, int64_t w, const double *scale,
                                                     const double *ratio, cell_vision_inter inter,
                                                     int max_attempts, cell_sample_op **out);
/* Normalize: (x - mean[c]) / std[c] per channel (n == 1: one for all) as
 * float32; channels last when is_hwc, first ({C, H, W}) otherwise. */
CELL_API cell_status cell_vision_normalize(int n, const double *mean, const double *std, int is_hwc,
                                           cell_sample_op **out);
/* HWC2CHW: {H, W, C} to {C, H, W} (a {H, W} image is left as it is). */
CELL_API cell_status cell_vision_hwc2chw(cell_sample_op **out);
/* RandomRotation: counter-clockwise by an angle uniform in [deg_min,
 * deg_max] degrees about center ({x, y} in pixels; NULL: the image's
 * centre ((W-1)/2, (H-1)/2)); expand: grow the output to hold the whole
 * rotated image; pixels from outside the image take fill (NULL: 0). */
CELL_API cell_status cell_vision_random_rotation(double deg_min, double deg_max, cell_vision_inter inter,
                                                 int expand, const double *center, const double *fill,
                                                 cell_sample_op **out);
/* ColorJitter (MindSpore's RandomColorAdjust) on {H, W, 3} RGB: factors
 * uniform in each [lo, hi] range, applied in this order: brightness
 * (x * f), contrast (blend with the mean grey level), saturation (blend
 * with each pixel's grey, 0.299 R + 0.587 G + 0.114 B), hue (shift in HSV
 * by a fraction of the circle, [-0.5, 0.5]). Values clamp to [0, 255]
 * for uint8 (rounded), [0, 1] for floats. NULL ranges: no change. */
CELL_API cell_status cell_vision_color_jitter(const double *brightness, const double *contrast,
                                              const double *saturation, const double *hue,
                                              cell_sample_op **out);
/* ToTensor: {H, W, C} (or {H, W}) to {C, H, W} of dtype dt (a float
 * type), every value divided by 255. */
CELL_API cell_status cell_vision_to_tensor(cell_dtype dt, cell_sample_op **out);
/* Rescale: x * rescale + shift (computed in double, rounded once) as
 * float32, the shape kept ({H, W} or {H, W, C}). ValueError: rescale or
 * shift not finite or outside float32's range (MindSpore's check_float32). */
CELL_API cell_status cell_vision_rescale(double rescale, double shift, cell_sample_op **out);
/* CenterCrop: the h x w window at the image's centre, top (H - h) / 2
 * and left (W - w) / 2 rounded down; where the image is smaller than the
 * crop it is first padded with zeros, (d + 1) / 2 before and d / 2 after
 * (d = h - H, or w - W), as MindSpore's CenterCropOp. From apply,
 * ValueError when that padding is 3 times the image's size or more
 * (MindSpore's limit). */
CELL_API cell_status cell_vision_center_crop(int64_t h, int64_t w, cell_sample_op **out);

#endif
