/* test_io.c - the file readers and writers (src/io): safetensors round trips
 * for every dtype, the committed hand-written and malformed fixtures, the
 * atomic save (missing and read-only folders, a write that fails half-way,
 * an interrupt, replacing a file), IDX files good and bad, and failed
 * allocations in each (fail the Nth for N = 1, 2, ... until success: each
 * a clean MemoryError, no leak, no file left behind). Run from the
 * repository root (the fixtures' paths are relative to it). */
#include "check.h"
#include "io/io.h"
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
  CHECK(st->count == 12 && strcmp(st->names[0], "zero_d") == 0 && strcmp(st->names[11], "flags") == 0);
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
  CHECK(st->count == 12 && strcmp(st->names[0], "double") == 0); /* 8-byte dtypes first */
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

/* Fail the Nth allocation of each call for N = 1, 2, ... until it works.
 * The safetensors header is parsed with the engine's allocator, so the first
 * failures land inside the parser: each must be a MemoryError ("out of
 * memory"), never "not valid JSON". */
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
      {"good_i8", CELL_DTYPE_I8, 2, {-1, 127}},        {"good_i16", CELL_DTYPE_I16, 3, {-2, 300, -32768}},
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

/* A safetensors file of n zero-size F32 tensors "tNNNNNNN" (the header
 * small, the tensors not); returns its size. */
static long many_empty(const char *path, int n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  long h = 2 + (long)n * 60 - 1; /* {} and n entries of 59 bytes, commas between */
  long pad = (8 - h % 8) % 8;
  unsigned char len[8];
  for (int i = 0; i < 8; i++) len[i] = (unsigned char)(((unsigned long)(h + pad) >> (8 * i)) & 0xff);
  fwrite(len, 1, 8, f);
  fputc('{', f);
  for (int i = 1; i <= n; i++)
    fprintf(f, "%s\"t%07d\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}", i > 1 ? "," : "", i);
  fputc('}', f);
  for (long i = 0; i < pad; i++) fputc(' ', f);
  fclose(f);
  return file_size(path);
}

/* Bytes the engine's allocator had handed out at most during fn, beyond
 * what it held before. */
static unsigned long long peak_during_load(const char *path, cell_status *s) {
  cell_alloc_stats a, b;
  cell_alloc_get_stats(&a);
  cell_alloc_reset_peak();
  cell_safetensors *st = NULL;
  *s = cell_safetensors_load(path, &st);
  cell_alloc_get_stats(&b);
  cell_safetensors_free(st);
  return b.peak - a.in_use;
}

/* Loading takes at most 4 times the file plus 64 MiB, whatever the header
 * holds (1.7 million empty tensors in a 100 MB header took 3.2 GB once);
 * beyond that, a ValueError naming the bound. */
static void test_memory_bound(void) {
  char path[512];
  TMP(path, "many.safetensors");
  struct { int n, ok; } cases[] = {{300000, 0}, {20000, 1}};
  for (int k = 0; k < 2; k++) {
    long size = many_empty(path, cases[k].n);
    unsigned long long bound = 4ull * (unsigned long long)size + (64ull << 20);
    cell_status s;
    unsigned long long peak = peak_during_load(path, &s);
    CHECKF(peak <= bound, "%d tensors: %llu bytes at the peak, over %llu", cases[k].n, peak, bound);
    if (cases[k].ok) {
      CHECK(s == CELL_OK);
    } else {
      char want[160];
      snprintf(want, sizeof want, "loading it would take more than %llu bytes of memory (%d tensors: ", bound,
               cases[k].n);
      CHECK(s == CELL_ERR_VALUE && strstr(cell_last_error(), want));
    }
  }
  /* one big tensor: the data itself, no more */
  int64_t shape[1] = {4 << 20};
  cell_tensor *t = NULL;
  REQUIRE_OK(cell_tensor_full(CELL_DTYPE_F32, 1, shape, 0, &t));
  const char *nm[1] = {"big"};
  REQUIRE_OK(cell_safetensors_save(path, 1, nm, &t, 0, NULL, NULL));
  cell_tensor_release(t);
  cell_status s;
  unsigned long long peak = peak_during_load(path, &s);
  CHECK(s == CELL_OK && peak < (unsigned long long)file_size(path) / 4 * 5 + (1u << 20)); /* size classes round up by a quarter at most */
  unlink(path);
}

/* What loads from memory saves to memory and loads again equal (the fuzz
 * targets' round trip), for every dtype and shape of make_tensors. */
static void test_memory_round_trip(void) {
  cell_tensor *ts[NT];
  const char *names[NT];
  make_tensors(ts, names);
  const char *keys[1] = {"k"}, *vals[1] = {"v"};
  char *p = NULL, *q = NULL;
  size_t n = 0, m = 0;
  REQUIRE_OK(cell_st_save_mem("mem", NT, names, ts, 1, keys, vals, &p, &n));
  cell_safetensors *st = NULL;
  REQUIRE_OK(cell_st_load_mem("mem", p, n, &st));
  CHECK(st->count == NT);
  for (int k = 0; k < NT && k < st->count; k++) CHECK(same_tensor(st->tensors[k], ts[k]));
  REQUIRE_OK(cell_st_save_mem("mem", st->count, (const char *const *)st->names, st->tensors, st->meta_count,
                              (const char *const *)st->meta_keys, (const char *const *)st->meta_values, &q, &m));
  CHECK(m == n && memcmp(p, q, n) == 0);
  cell_safetensors_free(st);
  cell_dealloc(p);
  cell_dealloc(q);
  for (int k = 0; k < NT; k++) cell_tensor_release(ts[k]);
  /* the file's bytes, read from memory, are read the same */
  FILE *f = fopen(IDX_DIR "/good_u8.idx.gz", "rb");
  char buf[4096];
  size_t got = f ? fread(buf, 1, sizeof buf, f) : 0;
  if (f) fclose(f);
  cell_tensor *t = NULL, *u = NULL;
  REQUIRE_OK(cell_idx_load_mem("mem", buf, got, CELL_DTYPE_COUNT, 1, &t));
  REQUIRE_OK(cell_idx_load(IDX_DIR "/good_u8.idx.gz", &u));
  CHECK(same_tensor(t, u));
  cell_tensor_release(t);
  cell_tensor_release(u);
}

/* A FIFO (or any non-file) is refused before it is read: opening one for
 * reading used to wait for a writer forever. */
static void test_not_regular(void) {
  char path[512];
  TMP(path, "pipe");
  CHECK(mkfifo(path, 0600) == 0);
  cell_safetensors *st = NULL;
  cell_tensor *t = NULL;
  CHECK(cell_safetensors_load(path, &st) == CELL_ERR_VALUE);
  CHECK_MSG("not a regular file (a FIFO)");
  CHECK(cell_idx_load(path, &t) == CELL_ERR_VALUE);
  CHECK_MSG("not a regular file (a FIFO)");
  CHECK(cell_safetensors_load("/dev/null", &st) == CELL_ERR_VALUE);
  CHECK_MSG("not a regular file (a character device)");
  unlink(path);
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
  test_memory_bound();
  test_memory_round_trip();
  test_not_regular();
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
