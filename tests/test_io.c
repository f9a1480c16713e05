/* test_io.c - the file readers and writers (src/io): safetensors round trips
 * for every dtype, the committed hand-written and malformed fixtures, the
 * atomic save (missing and read-only folders, a write that fails half-way,
 * an interrupt, replacing a file), IDX files good and bad, and failed
 * allocations in each (fail the Nth for N = 1, 2, ... until success: each
 * a clean MemoryError, no leak, no file left behind). Run from the
 * repository root (the fixtures' paths are relative to it). */
#include "check.h"
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define ST_DIR "spec/fixtures/safetensors"
#define IDX_DIR "spec/fixtures/idx"

static char tmpdir[256];

/* buf (a char array) = the path of name in the temporary folder. */
#define TMP(buf, name) snprintf(buf, sizeof buf, "%s/%s", tmpdir, name)

/* Files in the temporary folder whose name holds ".tmp." (left-over
 * temporary files of a save). */
static int temporaries(void) {
  DIR *d = opendir(tmpdir);
  int n = 0;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));)
    if (strstr(e->d_name, ".tmp.")) n++;
  closedir(d);
  return n;
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* One tensor of every dtype (values exact in each), a 0-D, an empty and a
 * transposed one. */
#define NT 12
static void make_tensors(cell_tensor **ts, const char **names) {
  static const char *const nm[NT] = {"f32", "f64", "f16", "bf16", "i8", "u8", "i32", "i64", "bool",
                                     "scalar", "empty", "strided"};
  int64_t s23[2] = {2, 3}, s0[2] = {0, 4};
  double v[6] = {-1.25, 0.5, 2, 100, 0, 3};
  for (int k = 0; k < NDT; k++) ts[k] = from(all_dtypes[k], 2, s23, v);
  ts[9] = from(CELL_DTYPE_F64, 0, NULL, v + 3);
  ts[10] = from(CELL_DTYPE_F32, 2, s0, v);
  cell_tensor *base = from(CELL_DTYPE_I64, 2, s23, v);
  cell_tensor_transpose(base, 0, 1, &ts[11]);
  cell_tensor_release(base);
  for (int k = 0; k < NT; k++) names[k] = nm[k];
}

static int same_tensor(const cell_tensor *a, const cell_tensor *b) {
  if (!a || !b || a->dtype != b->dtype || !cell_shape_equal(a->ndim, a->shape, b->ndim, b->shape)) return 0;
  for (int64_t i = 0; i < cell_tensor_numel(a); i++)
    if (flat(a, i) != flat(b, i)) return 0;
  return 1;
}

static void test_round_trip(void) {
  cell_tensor *ts[NT];
  const char *names[NT];
  make_tensors(ts, names);
  const char *keys[2] = {"format", "note"}, *vals[2] = {"pt", "a \"quoted\"\nline"};
  char path[512];
  TMP(path, "all.safetensors");
  REQUIRE_OK(cell_safetensors_save(path, NT, names, ts, 2, keys, vals));
  CHECK(temporaries() == 0);
  CHECK(file_size(path) > 0 && (file_size(path) - 0) > 8);
  cell_safetensors *st = NULL;
  REQUIRE_OK(cell_safetensors_load(path, &st));
  CHECK(st->count == NT && st->meta_count == 2);
  for (int k = 0; k < NT && k < st->count; k++) {
    CHECKF(strcmp(st->names[k], names[k]) == 0, "name %d is %s", k, st->names[k]);
    CHECKF(same_tensor(st->tensors[k], ts[k]), "tensor %s", names[k]);
    CHECK(cell_tensor_is_contiguous(st->tensors[k]));
  }
  CHECK(st->meta_count == 2 && strcmp(st->meta_keys[1], "note") == 0 &&
        strcmp(st->meta_values[1], vals[1]) == 0);
  /* a kept tensor outlives the result */
  cell_tensor *kept = st->tensors[0];
  st->tensors[0] = NULL;
  cell_safetensors_free(st);
  CHECK(flat(kept, 0) == -1.25);
  cell_tensor_release(kept);
  /* no tensors, no metadata: the smallest file */
  REQUIRE_OK(cell_safetensors_save(path, 0, NULL, NULL, 0, NULL, NULL));
  CHECK(file_size(path) == 16); /* 8 + "{}" padded to 8 */
  REQUIRE_OK(cell_safetensors_load(path, &st));
  CHECK(st->count == 0 && st->meta_count == 0);
  cell_safetensors_free(st);
  for (int k = 0; k < NT; k++) cell_tensor_release(ts[k]);
}

static void test_fixtures(void) {
  cell_safetensors *st = NULL;
  REQUIRE_OK(cell_safetensors_load(ST_DIR "/hand_written.safetensors", &st));
  /* the header's order, which is not the data's */
  CHECK(st->count == 11 && strcmp(st->names[0], "zero_d") == 0 && strcmp(st->names[10], "flags") == 0);
  for (int i = 0; i < st->count; i++) {
    const cell_tensor *t = st->tensors[i];
    if (strcmp(st->names[i], "brain") == 0) CHECK(t->dtype == CELL_DTYPE_BF16 && flat(t, 2) == 0.15625);
    if (strcmp(st->names[i], "long") == 0) {
      int64_t idx = 1;
      CHECK(t->dtype == CELL_DTYPE_I64 && *(int64_t *)cell_tensor_data_ptr(t) == -(INT64_C(1) << 40));
      (void)idx;
    }
    if (strcmp(st->names[i], "nothing") == 0) CHECK(cell_tensor_numel(t) == 0 && t->ndim == 1);
    if (strcmp(st->names[i], "zero_d") == 0) CHECK(t->ndim == 0 && flat(t, 0) == 7.25);
  }
  CHECK(st->meta_count == 2 && strcmp(st->meta_keys[1], "written_by") == 0);
  cell_safetensors_free(st);
  REQUIRE_OK(cell_safetensors_load(ST_DIR "/torch_bytes.safetensors", &st));
  CHECK(st->count == 11 && strcmp(st->names[0], "double") == 0); /* 8-byte dtypes first */
  cell_safetensors_free(st);
  /* every malformed file: a ValueError naming the file, nothing leaked */
  DIR *d = opendir(ST_DIR);
  int seen = 0;
  long base = cell_alloc_live_blocks();
  for (struct dirent *e; d && (e = readdir(d));) {
    if (strncmp(e->d_name, "bad_", 4) != 0) continue;
    char path[512];
    snprintf(path, sizeof path, ST_DIR "/%s", e->d_name);
    st = NULL;
    cell_status s = cell_safetensors_load(path, &st);
    char want[600];
    snprintf(want, sizeof want, "safetensors: %s: ", path);
    CHECKF(s == CELL_ERR_VALUE && st == NULL && strncmp(cell_last_error(), want, strlen(want)) == 0,
           "%s gave status %d", e->d_name, (int)s);
    seen++;
  }
  if (d) closedir(d);
  CHECK(seen >= 30);
  CHECK(cell_alloc_live_blocks() == base);
  char missing[512];
  TMP(missing, "missing.safetensors");
  CHECK(cell_safetensors_load(missing, &st) == CELL_ERR_VALUE);
  CHECK_MSG("cannot open: No such file or directory");
  CHECK(cell_safetensors_load(tmpdir, &st) == CELL_ERR_VALUE);
  CHECK_MSG("not a regular file");
}

static void test_bad_arguments(void) {
  int64_t s[1] = {2};
  double v[2] = {1, 2};
  cell_tensor *t = from(CELL_DTYPE_F32, 1, s, v);
  cell_tensor *two[2] = {t, t};
  char path[512];
  TMP(path, "args.safetensors");
  const char *dup[2] = {"w", "w"}, *empty[1] = {""}, *meta[1] = {"__metadata__"}, *bad8[1] = {"\xff"};
  CHECK(cell_safetensors_save(path, 2, dup, two, 0, NULL, NULL) == CELL_ERR_VALUE);
  CHECK_MSG("tensor name 'w' appears twice");
  CHECK(cell_safetensors_save(path, 1, empty, two, 0, NULL, NULL) == CELL_ERR_VALUE);
  CHECK_MSG("tensor 1 has an empty name");
  CHECK(cell_safetensors_save(path, 1, meta, two, 0, NULL, NULL) == CELL_ERR_VALUE);
  CHECK_MSG("reserved for the metadata");
  CHECK(cell_safetensors_save(path, 1, bad8, two, 0, NULL, NULL) == CELL_ERR_VALUE);
  CHECK_MSG("is not valid UTF-8");
  const char *k2[2] = {"a", "a"}, *v2[2] = {"1", "2"}, *ok[1] = {"w"};
  CHECK(cell_safetensors_save(path, 1, ok, two, 2, k2, v2) == CELL_ERR_VALUE);
  CHECK_MSG("metadata key 'a' appears twice");
  CHECK(cell_safetensors_save("", 1, ok, two, 0, NULL, NULL) == CELL_ERR_VALUE);
  CHECK(file_size(path) == -1 && temporaries() == 0);
  cell_tensor_release(t);
}

/* The save is atomic: failures leave the target as it was and no
 * temporary file; success replaces the target whole. */
static void test_atomic_save(void) {
  int64_t big[1] = {1 << 18}, small[1] = {3};
  cell_tensor *b = NULL, *s = NULL;
  REQUIRE_OK(cell_tensor_full(CELL_DTYPE_F32, 1, big, 1.5, &b));
  REQUIRE_OK(cell_tensor_full(CELL_DTYPE_F32, 1, small, 2.5, &s));
  const char *nm[1] = {"w"};
  char path[512];
  TMP(path, "atomic.safetensors");
  REQUIRE_OK(cell_safetensors_save(path, 1, nm, &b, 0, NULL, NULL));
  long big_size = file_size(path);
  CHECK(big_size > (1 << 20));
  REQUIRE_OK(cell_safetensors_save(path, 1, nm, &s, 0, NULL, NULL)); /* smaller: no stale tail */
  CHECK(file_size(path) == 8 + 56 + 12);
  cell_safetensors *st = NULL;
  REQUIRE_OK(cell_safetensors_load(path, &st));
  CHECK(st->count == 1 && cell_tensor_numel(st->tensors[0]) == 3 && flat(st->tensors[0], 2) == 2.5);
  cell_safetensors_free(st);
  REQUIRE_OK(cell_safetensors_save(path, 1, nm, &b, 0, NULL, NULL));
  /* a folder that does not exist */
  char other[512];
  TMP(other, "no/such/dir/x.safetensors");
  CHECK(cell_safetensors_save(other, 1, nm, &s, 0, NULL, NULL) == CELL_ERR_RUNTIME);
  CHECK_MSG("cannot create a file in its folder: No such file or directory");
  /* a folder nobody may write, root included */
  struct stat pst;
  if (stat("/proc/self", &pst) == 0) {
    CHECK(cell_safetensors_save("/proc/cell_test.safetensors", 1, nm, &s, 0, NULL, NULL) == CELL_ERR_RUNTIME);
    CHECK_MSG("cannot create a file in its folder");
  }
  /* a directory in the way of the rename */
  TMP(other, "adir.safetensors");
  mkdir(other, 0755);
  CHECK(cell_safetensors_save(other, 1, nm, &s, 0, NULL, NULL) == CELL_ERR_RUNTIME);
  CHECK_MSG("cannot replace the file: Is a directory");
  rmdir(other);
  CHECK(temporaries() == 0);
  /* a write that fails half-way (the file size limit): the old file stays */
  struct rlimit old, lim;
  void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
  if (getrlimit(RLIMIT_FSIZE, &old) == 0) {
    lim = old;
    lim.rlim_cur = 1 << 16;
    if (setrlimit(RLIMIT_FSIZE, &lim) == 0) {
      cell_tensor *b2 = NULL;
      REQUIRE_OK(cell_tensor_full(CELL_DTYPE_F32, 1, big, 7, &b2));
      CHECK(cell_safetensors_save(path, 1, nm, &b2, 0, NULL, NULL) == CELL_ERR_RUNTIME);
      CHECK_MSG("File too large");
      setrlimit(RLIMIT_FSIZE, &old);
      cell_tensor_release(b2);
      CHECK(file_size(path) == big_size && temporaries() == 0);
      REQUIRE_OK(cell_safetensors_load(path, &st));
      CHECK(flat(st->tensors[0], 12345) == 1.5);
      cell_safetensors_free(st);
    }
  }
  signal(SIGXFSZ, prev);
  /* an interrupt: the save stops, the old file stays */
  cell_interrupt(1);
  CHECK(cell_safetensors_save(path, 1, nm, &s, 0, NULL, NULL) == CELL_ERR_INTERRUPT);
  cell_interrupt(0);
  CHECK(file_size(path) == big_size && temporaries() == 0);
  cell_interrupt(1);
  CHECK(cell_safetensors_load(path, &st) == CELL_ERR_INTERRUPT);
  cell_interrupt(0);
  cell_tensor_release(b);
  cell_tensor_release(s);
}

/* Fail the Nth allocation of each call for N = 1, 2, ... until it works. */
static void test_failed_allocations(void) {
  cell_tensor *ts[NT];
  const char *names[NT];
  make_tensors(ts, names);
  char path[512];
  TMP(path, "alloc.safetensors");
  const char *keys[1] = {"k"}, *vals[1] = {"v"};
  REQUIRE_OK(cell_safetensors_save(path, NT, names, ts, 1, keys, vals));
  long size = file_size(path);
  for (int what = 0; what < 4; what++) {
    long base = cell_alloc_live_blocks();
    int succeeded = 0, clean = 1;
    long n;
    for (n = 1; n < 500 && !succeeded; n++) {
      cell_safetensors *st = NULL;
      cell_tensor *t = NULL;
      cell_alloc_fail_after(n);
      cell_status s = what == 0   ? cell_safetensors_load(path, &st)
                      : what == 1 ? cell_safetensors_save(path, NT, names, ts, 1, keys, vals)
                      : what == 2 ? cell_idx_load(IDX_DIR "/good_u8.idx.gz", &t)
                                  : cell_idx_load_as(IDX_DIR "/good_i16.idx", CELL_DTYPE_F32, 0.5, &t);
      cell_alloc_fail_after(0);
      if (s == CELL_OK) {
        succeeded = 1;
        cell_safetensors_free(st);
        cell_tensor_release(t);
      } else if (s != CELL_ERR_MEMORY || st || t || !strstr(cell_last_error(), "out of memory")) {
        clean = 0;
        fprintf(stderr, "case %d, failing allocation %ld: status %d: %s\n", what, n, (int)s, cell_last_error());
      }
      if (cell_alloc_live_blocks() != base) {
        clean = 0;
        fprintf(stderr, "case %d: leak after failing allocation %ld\n", what, n);
      }
      if (file_size(path) != size || temporaries() != 0) {
        clean = 0;
        fprintf(stderr, "case %d: the file changed after failing allocation %ld\n", what, n);
      }
    }
    CHECKF(succeeded && clean && n > 2, "case %d", what);
  }
  for (int k = 0; k < NT; k++) cell_tensor_release(ts[k]);
}

static void test_idx(void) {
  static const struct {
    const char *file;
    cell_dtype dt;
    int n;
    double v[3];
  } good[] = {
      {"good_i8", CELL_DTYPE_I8, 2, {-1, 127}},        {"good_i16", CELL_DTYPE_I32, 3, {-2, 300, -32768}},
      {"good_i32", CELL_DTYPE_I32, 2, {-5, 70000}},    {"good_f32", CELL_DTYPE_F32, 2, {1.5, -0.25}},
      {"good_f64", CELL_DTYPE_F64, 1, {3.141592653589793}},
  };
  for (size_t k = 0; k < sizeof good / sizeof good[0]; k++)
    for (int z = 0; z < 2; z++) {
      char path[256];
      snprintf(path, sizeof path, IDX_DIR "/%s.idx%s", good[k].file, z ? ".gz" : "");
      cell_tensor *t = NULL;
      REQUIRE_OK(cell_idx_load(path, &t));
      int ok = t->dtype == good[k].dt && t->ndim == 1 && t->shape[0] == good[k].n;
      for (int i = 0; ok && i < good[k].n; i++) ok = flat(t, i) == good[k].v[i];
      CHECKF(ok, "%s", path);
      cell_tensor_release(t);
    }
  cell_tensor *t = NULL;
  REQUIRE_OK(cell_idx_load(IDX_DIR "/good_u8.idx.gz", &t));
  CHECK(t->dtype == CELL_DTYPE_U8 && t->ndim == 3 && t->shape[0] == 3 && t->shape[2] == 2);
  CHECK(flat(t, 11) == (11 * 20) % 256 && flat(t, 5) == 100);
  cell_tensor_release(t);
  REQUIRE_OK(cell_idx_load_as(IDX_DIR "/good_u8.idx", CELL_DTYPE_F32, 1.0 / 255, &t));
  CHECK(t->dtype == CELL_DTYPE_F32 && NEAR(flat(t, 5), 100.0 / 255, 1e-7));
  cell_tensor_release(t);
  CHECK(cell_idx_load_as(IDX_DIR "/good_u8.idx", CELL_DTYPE_I32, 0.5, &t) == CELL_ERR_VALUE);
  CHECK_MSG("needs a floating-point dtype");
  /* every bad file: a ValueError naming it */
  DIR *d = opendir(IDX_DIR);
  int seen = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    if (strncmp(e->d_name, "good_", 5) == 0 || e->d_name[0] == '.' || strncmp(e->d_name, "mini", 4) == 0) continue;
    char path[512], want[600];
    snprintf(path, sizeof path, IDX_DIR "/%s", e->d_name);
    snprintf(want, sizeof want, "idx: %s: ", path);
    t = NULL;
    cell_status s = cell_idx_load(path, &t);
    CHECKF(s == CELL_ERR_VALUE && !t && strncmp(cell_last_error(), want, strlen(want)) == 0, "%s: status %d",
           e->d_name, (int)s);
    seen++;
  }
  if (d) closedir(d);
  CHECK(seen >= 14);
  CHECK(cell_idx_load(IDX_DIR "/no_such_file", &t) == CELL_ERR_VALUE);
  CHECK_MSG("cannot open: No such file or directory");
  /* the real data, when installed */
  const char *real = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
  if (file_size(real) > 0) {
    REQUIRE_OK(cell_idx_load(real, &t));
    CHECK(t->ndim == 1 && t->shape[0] == 10000 && flat(t, 0) == 9 && flat(t, 1) == 2);
    cell_tensor_release(t);
  }
}

void test_io_all(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/cell-test-io.XXXXXX");
  if (!mkdtemp(tmpdir)) {
    failed++;
    fprintf(stderr, "test_io: cannot make a temporary folder\n");
    return;
  }
  test_round_trip();
  test_fixtures();
  test_bad_arguments();
  test_atomic_save();
  test_failed_allocations();
  test_idx();
  /* clean up the folder */
  DIR *d = opendir(tmpdir);
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[512];
    TMP(path, e->d_name);
    unlink(path);
  }
  if (d) closedir(d);
  rmdir(tmpdir);
}
