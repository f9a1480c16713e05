/* rng.c - the random generators: Philox4x32-10 blocks, generator objects
 * and each thread's current generator.
 *
 * The state of a stream is two words (seed, counter). It used to live in
 * the process-wide context, where two threads (two Lua states) drawing at
 * once raced on the counter's read-modify-write and drew overlapping
 * streams. Now each thread starts with a generator of its own, and a host
 * (the Lua binding for each lua_State) makes its own generator current for
 * the calls that draw. Thread-local, like the error message and grad mode:
 * nothing here is shared between threads. */
#include "rng.h"
#include "alloc.h"
#include <string.h>

/* The calling thread's own generator, and the one its draws use (NULL: its
 * own). Static TLS initialisers, so no thread needs a setup call. */
static __thread cell_generator thread_gen = {CELL_RNG_DEFAULT_SEED, 0};
static __thread cell_generator *current;

static cell_generator *current_gen(void) { return current ? current : &thread_gen; }

cell_status cell_generator_new(unsigned long long seed, cell_generator **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "generator_new: NULL argument");
  cell_generator *g = cell_alloc(sizeof *g);
  if (!g) return cell_error(CELL_ERR_MEMORY, "generator_new: out of memory");
  g->seed = seed;
  g->counter = 0;
  *out = g;
  return CELL_OK;
}

void cell_generator_free(cell_generator *g) {
  if (!g) return;
  if (current == g) current = NULL; /* never leave this thread a dangling one */
  cell_dealloc(g);
}

void cell_generator_seed(cell_generator *g, unsigned long long seed) {
  if (!g) g = current_gen();
  g->seed = seed;
  g->counter = 0;
}

cell_generator *cell_generator_use(cell_generator *g) {
  cell_generator *prev = current;
  current = g;
  return prev;
}

void cell_set_seed(unsigned long long seed) { cell_generator_seed(NULL, seed); }

uint64_t cell_rng_reserve(uint64_t n, uint64_t *seed) {
  cell_generator *g = current_gen();
  uint64_t first = g->counter;
  g->counter += n;
  *seed = g->seed;
  return first;
}

void cell_philox(uint64_t key, uint64_t counter, uint32_t out[4]) {
  uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* --- saved states -------------------------------------------------------------- */

static const unsigned char state_magic[8] = {'c', 'e', 'l', 'l', 'r', 'n', 'g', '1'};

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

void cell_generator_get_state(const cell_generator *g, unsigned char *state) {
  if (!state) return;
  if (!g) g = current_gen();
  memcpy(state, state_magic, sizeof state_magic);
  put_u64(state + 8, g->seed);
  put_u64(state + 16, g->counter);
}

cell_status cell_generator_set_state(cell_generator *g, const unsigned char *state, size_t n) {
  if (!state) return cell_error(CELL_ERR_VALUE, "set_rng_state: NULL state");
  if (n != CELL_RNG_STATE_BYTES)
    return cell_error(CELL_ERR_VALUE,
                      "set_rng_state: a generator state holds %d bytes, got %zu",
                      CELL_RNG_STATE_BYTES, n);
  if (memcmp(state, state_magic, sizeof state_magic))
    return cell_error(CELL_ERR_VALUE,
                      "set_rng_state: the bytes are not a generator state (their header is not "
                      "the one get_rng_state writes)");
  if (!g) g = current_gen();
  g->seed = get_u64(state + 8);
  g->counter = get_u64(state + 16);
  return CELL_OK;
}
