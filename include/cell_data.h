/* cell_data.h - public C API: data pipelines. Per-sample transforms that
 * worker threads run without Lua (cell_sample_op), their per-sample random
 * streams, and a pipeline that reads rows of in-memory columns, applies
 * each column's transforms, stacks batches and keeps a bounded queue of
 * them ready ahead of the consumer.
 * Included by cell.h users who want it (#include "cell_data.h"); the
 * conventions at the top of cell.h apply. Sample and batch numbers in
 * messages count from 1 within an epoch ("sample 17"). */
#ifndef CELL_DATA_H
#define CELL_DATA_H
#include "cell.h"

/* --- per-sample randomness ------------------------------------------------
 * A transform's random draws for one sample depend only on (seed, sample
 * index) through the engine's counter-based generator (Philox4x32-10): the
 * same pipeline gives the same augmentations whatever the number of
 * workers and whichever worker runs the sample. A stream is a small value:
 * no allocation, no lock. */
typedef struct cell_data_rng {
  uint64_t key;      /* the seed mixed with the sample index */
  uint64_t counter;  /* the next block */
  uint32_t words[4]; /* the current block */
  int used;          /* words of it already handed out (4: draw a new block) */
} cell_data_rng;
/* Start the stream of (seed, sample_index, stream). A transform passes
 * the rng_seed and sample_index its apply got (the pipeline has mixed the
 * transform's place in its chain into rng_seed already, so two random
 * transforms of one sample draw different numbers) and stream 0, or 1, 2,
 * ... for further independent streams of its own. */
CELL_API void cell_data_rng_init(cell_data_rng *r, uint64_t seed, uint64_t sample_index,
                                 uint64_t stream);
CELL_API uint32_t cell_data_rng_u32(cell_data_rng *r);
/* Uniform in [0, 1) (53 bits). */
CELL_API double cell_data_rng_uniform(cell_data_rng *r);
/* Uniform integer in [lo, hi] (inclusive; lo when hi <= lo). */
CELL_API int64_t cell_data_rng_int(cell_data_rng *r, int64_t lo, int64_t hi);

/* --- per-sample transforms ---------------------------------------------------
 * A transform is a descriptor that any worker thread may run: apply reads
 * one sample's tensor `in` (on the CPU, contiguous; borrowed: apply must
 * not release it, nor keep it) and sets *out to a new reference: a new
 * tensor, or `in` itself retained (cell_tensor_retain) when it changes it
 * in place or not at all. in is the worker's own: no other thread sees it
 * while apply runs, so apply may write into it. rng_seed and sample_index
 * seed its random draws: cell_data_rng_init(&r, rng_seed, sample_index, 0). On failure apply
 * returns a status other than CELL_OK and writes a message to err (errlen
 * bytes, NUL-terminated; no exception name: "RandomCrop: the crop 32 x 32
 * is larger than the image 28 x 28"); *out is then left unset. apply must
 * be thread-safe: several workers call it at once with different samples,
 * so it reads params and never writes them. The pipeline adds which sample
 * and column failed. Tensors an op makes must be on the CPU whatever the
 * default device (cell_set_device): cell_tensor_empty, or
 * cell_tensor_full_on(0, ...), not cell_tensor_full (the pipeline moves an
 * output found elsewhere back to the CPU, at a cost). destroy frees params and the op itself (called once,
 * by whoever owns the op: the Lua binding when the Lua value is
 * collected). name is static or owned by params.
 * The Lua binding wraps an op as a userdata (src/lua/ldata.h:
 * lc_push_sample_op takes ownership, lc_check_sample_op borrows); such a
 * value is what cell.dataset's map runs on worker threads. */
typedef struct cell_sample_op {
  const char *name;
  cell_status (*apply)(const struct cell_sample_op *op, cell_tensor *in, cell_tensor **out,
                       uint64_t rng_seed, uint64_t sample_index, char *err, size_t errlen);
  void (*destroy)(struct cell_sample_op *op);
  void *params;
} cell_sample_op;

/* Run op on one sample on the calling thread: apply, with the sample and
 * op named in the engine's error on failure (ValueError etc. from the
 * op's status; cell_last_error reads "NAME: MESSAGE"). For the Lua path
 * of a pipeline and for tests. */
CELL_API cell_status cell_sample_op_run(const cell_sample_op *op, cell_tensor *in,
                                        uint64_t rng_seed, uint64_t sample_index,
                                        cell_tensor **out);

/* Ops of the engine's own (cell.dataset.transforms): each returns a new op
 * (free with op->destroy(op)) or a status.
 * TypeCast: the sample converted to dtype dt (TypeError: unknown dtype).
 * OneHot: a sample of integer class ids (any shape, each in
 * [index_base, index_base + num_classes)) to one more trailing dimension of
 * num_classes, 1 at the id and 0 elsewhere, in dtype dt (ValueError: an id
 * out of range, naming it; num_classes < 1; TypeError: float input with a
 * fraction). smoothing (MindSpore's OneHot smoothing_rate, in [0, 1)) puts
 * 1 - smoothing + smoothing / num_classes at the id and
 * smoothing / num_classes elsewhere. */
CELL_API cell_status cell_sample_op_typecast(cell_dtype dt, cell_sample_op **out);
/* Fill: every element of the sample set to value (its shape and dtype
 * kept). */
CELL_API cell_status cell_sample_op_fill(double value, cell_sample_op **out);
/* RandomApply: the n ops ops[0..n) in order with probability prob (in
 * [0, 1]), else the sample unchanged; RandomChoice: one of the n ops,
 * chosen uniformly. The draws come from the sample's stream, so they are
 * the same whatever the worker. The ops are borrowed: they must outlive
 * the new op (the Lua binding keeps them referenced by its value); n in
 * [1, 64] (ValueError otherwise, and for prob outside [0, 1]). */
CELL_API cell_status cell_sample_op_random_apply(int n, const cell_sample_op *const *ops, double prob,
                                                 cell_sample_op **out);
CELL_API cell_status cell_sample_op_random_choice(int n, const cell_sample_op *const *ops,
                                                  cell_sample_op **out);
CELL_API cell_status cell_sample_op_onehot(int64_t num_classes, int64_t index_base,
                                           double smoothing, cell_dtype dt,
                                           cell_sample_op **out);

/* --- pipelines ------------------------------------------------------------
 * A pipeline reads samples from columns (tensors whose dimension 0 indexes
 * samples, all of one length; moved to the CPU and made contiguous once,
 * at creation), runs each column's ops on every sample, and hands out
 * either samples (batch_size 0) or batches (each column's samples stacked
 * on a new dimension 0; samples of a column must agree in shape and dtype
 * within a batch, else ValueError "batch: sample 17 column 'image' has
 * shape (3, 30, 32), expected (3, 32, 32)"). With num_workers > 0 that many
 * threads produce the outputs ahead of the consumer, at most `prefetch`
 * outputs ready or in progress at a time (the bounded queue); outputs come
 * out in order whatever the number of workers, and each sample's
 * randomness depends only on (seed, its position in the epoch), so the
 * results are the same for any num_workers (0: the consumer's thread
 * produces each output when asked). */
typedef struct cell_data_pipeline cell_data_pipeline;

/* A pipeline over ncols columns named names[0..ncols) (copied; names are
 * what errors print). Columns are retained (and copied to the CPU when
 * they live on another device). ValueError: ncols < 1 or > 64, a 0-D
 * column, columns of different lengths, a NULL name. */
CELL_API cell_status cell_data_pipeline_new(int ncols, cell_tensor *const *columns,
                                            const char *const *names,
                                            cell_data_pipeline **out);
/* Append op to column col's chain (ops run in the order added). The op is
 * borrowed: it must outlive the pipeline (the Lua binding keeps the op's
 * value referenced by the pipeline's). IndexError: col out of range;
 * RuntimeError: an epoch is running. At most 32 ops per column. */
CELL_API cell_status cell_data_pipeline_add_op(cell_data_pipeline *p, int col,
                                               const cell_sample_op *op);
/* Start an epoch over the samples order[0..n) (0-based rows; copied),
 * stopping one that is running first. batch_size 0: one output per
 * sample (each column's sample as it leaves its ops); >= 1: batches,
 * the last partial one dropped when drop_remainder. seed: the epoch's
 * random seed (ops of position k in a chain get a seed mixed from it and
 * k; sample i of the epoch gets sample_index i). num_workers in [0, 64];
 * prefetch >= 1 (outputs queued ahead; ignored without workers).
 * IndexError: a row out of range (naming it); ValueError: bad counts;
 * RuntimeError: threads could not be started. */
CELL_API cell_status cell_data_pipeline_start(cell_data_pipeline *p, const int64_t *order,
                                              int64_t n, int64_t batch_size,
                                              int drop_remainder, uint64_t seed,
                                              int num_workers, int prefetch);
/* The next output: outs[0..ncols) get new references (CPU tensors); *done
 * is set to 1 (and outs untouched) after the last one. An op's or a
 * batch's failure is returned here, in order (the outputs before it come
 * out first), naming the sample and column; the epoch is then over
 * (later calls say done). RuntimeError: no epoch started. */
CELL_API cell_status cell_data_pipeline_next(cell_data_pipeline *p, cell_tensor **outs,
                                             int *done);
/* The number of outputs the running epoch hands out in all. */
CELL_API int64_t cell_data_pipeline_length(const cell_data_pipeline *p);
/* Nanoseconds cell_data_pipeline_next has spent waiting for workers (or,
 * without workers, making the outputs itself) since
 * the pipeline was made (or since the last call with reset != 0, which
 * zeroes it after reading), and the outputs it handed out in that time. */
CELL_API uint64_t cell_data_pipeline_wait_ns(cell_data_pipeline *p, int reset, int64_t *outputs);
/* Stop the workers (outputs not taken are dropped) and free everything:
 * the columns' references, the order, the threads. NULL: nothing. */
CELL_API void cell_data_pipeline_free(cell_data_pipeline *p);

#endif
