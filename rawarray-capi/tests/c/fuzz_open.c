/* Hostile files through the C API: each seed file is mutated over and over (bits flipped,
   header words set to edge values, cut short, grown with junk, ranges overwritten), and every
   open-and-read call is made on the result. Each must return a status: a crash, an
   AddressSanitizer finding, or RA_ERR_INTERNAL (a panic caught at the boundary) fails the run.

   fuzz_open OUT_DIR ITERATIONS SEED_FILE... */
#include "check.h"

#include <stdint.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) { /* xorshift64*: the same mutations on every run */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545F4914F6CDD1Dull;
}

static const uint64_t edges[] = {0, 1, 2, 3, 4, 7, 8, 12, 16, 255, 1024, 1025, 65536,
                                 0x7FFFFFFFull, 0xFFFFFFFFull, 1ull << 40, 1ull << 62,
                                 0x7FFFFFFFFFFFFFFFull, 0xFFFFFFFFFFFFFFFFull};

static size_t mutate(unsigned char *buf, size_t len, size_t cap) {
  int kinds = 1 + (int)(next() % 3);
  for (int k = 0; k < kinds; k++) {
    switch (next() % 6) {
      case 0: /* flip bits */
        for (int i = 0; i < 1 + (int)(next() % 8) && len > 0; i++)
          buf[next() % len] ^= (unsigned char)(1u << (next() % 8));
        break;
      case 1: { /* a header word (or one near the data's end) to an edge value */
        size_t words = len / 8;
        if (words == 0) break;
        size_t w = next() % 2 ? next() % (words < 12 ? words : 12) : next() % words;
        uint64_t v = edges[next() % (sizeof edges / sizeof edges[0])];
        if (next() % 4 == 0) v += next() % 3 - 1;
        memcpy(buf + 8 * w, &v, 8);
        break;
      }
      case 2: /* cut short */
        if (len > 0) len = next() % len;
        break;
      case 3: { /* junk after the end */
        size_t add = next() % 200;
        if (len + add > cap) add = cap - len;
        for (size_t i = 0; i < add; i++) buf[len + i] = (unsigned char)next();
        len += add;
        break;
      }
      case 4: { /* a range overwritten */
        if (len == 0) break;
        size_t at = next() % len, n = next() % 64;
        for (size_t i = at; i < at + n && i < len; i++) buf[i] = (unsigned char)next();
        break;
      }
      default: { /* a byte of the last 256 (trailer, chunk index) */
        if (len == 0) break;
        size_t back = next() % (len < 256 ? len : 256);
        buf[len - 1 - back] = (unsigned char)next();
      }
    }
  }
  return len;
}

static int internal = 0;
static void seen(int st, const char *what, const char *path) {
  if (st == RA_ERR_INTERNAL) {
    fprintf(stderr, "%s on %s: RA_ERR_INTERNAL: %s\n", what, path, ra_last_error_message());
    internal++;
  }
  EXPECT(st >= RA_OK && st <= RA_ERR_INTERNAL, "%s: status %d", what, st);
  if (st != RA_OK) EXPECT(ra_last_error_message()[0] != '\0', "%s: an error without a message", what);
}

static const uint64_t MAX_READ = 64ull << 20;

static int try_array(const char *path) {
  ra_file *f = NULL;
  int st = ra_open(path, &f);
  seen(st, "ra_open", path);
  if (st != RA_OK) {
    EXPECT(f == NULL, "a failed open leaves NULL");
    return 0;
  }
  uint64_t et, eb, bytes, rb, dims[1100], chunks[1100];
  size_t nd = 0, nf = 0;
  int be, storage;
  const char *s;
  seen(ra_file_eltype(f, &et), "eltype", path);
  seen(ra_file_elbyte(f, &eb), "elbyte", path);
  seen(ra_file_big_endian(f, &be), "big_endian", path);
  seen(ra_file_storage(f, &storage), "storage", path);
  seen(ra_file_ndims(f, &nd), "ndims", path);
  seen(ra_file_dims(f, RA_ORDER_C, dims, 1100), "dims", path);
  seen(ra_file_chunks(f, RA_ORDER_FILE, chunks, 1100), "chunks", path);
  seen(ra_file_codec(f, &s), "codec", path);
  seen(ra_file_filters(f, &s), "filters", path);
  seen(ra_file_trailer_json(f, &s), "trailer", path);
  seen(ra_file_schema_json(f, &s), "schema", path);
  seen(ra_file_warnings(f, &s), "warnings", path);
  seen(ra_file_nfields(f, &nf), "nfields", path);
  for (size_t i = 0; i < nf && i < 64; i++) {
    ra_field_info fi;
    seen(ra_file_field(f, i, &fi), "field", path);
  }
  seen(ra_file_data_bytes(f, &bytes), "data_bytes", path);
  if (bytes <= MAX_READ) {
    unsigned char *buf = malloc(bytes ? bytes : 1);
    seen(ra_read_all(f, buf, bytes), "read_all", path);
    free(buf);
  }
  if (nd > 0 && nd <= 1100) {
    uint64_t start[1100], count[1100], n = eb;
    for (size_t i = 0; i < nd; i++) {
      start[i] = dims[i] / 2;
      count[i] = dims[i] - start[i] > 0 ? 1 : 0;
      n *= count[i];
    }
    if (n <= MAX_READ) {
      unsigned char *buf = malloc(n ? n : 1);
      seen(ra_read_box(f, RA_ORDER_C, start, count, nd, buf, n), "read_box", path);
      free(buf);
    }
    if (ra_file_record_bytes(f, &rb) == RA_OK && rb <= MAX_READ && dims[0] > 0) {
      unsigned char *buf = malloc(rb ? rb : 1);
      seen(ra_read_records(f, NULL, 0, 1, buf, rb), "read_records", path);
      free(buf);
    }
  }
  ra_close(f);
  return 1;
}

static int try_ragged(const char *path) {
  ra_ragged *r = NULL;
  int st = ra_ragged_open(path, &r);
  seen(st, "ra_ragged_open", path);
  if (st != RA_OK) return 0;
  ra_ragged_info info;
  const char *s;
  seen(ra_ragged_describe(r, &info), "ragged_describe", path);
  seen(ra_ragged_schema_json(r, &s), "ragged_schema", path);
  for (uint64_t k = 0; k < info.rows && k < 16; k++) {
    uint64_t n = 0;
    int st2 = ra_ragged_row_len(r, k, &n);
    seen(st2, "ragged_row_len", path);
    if (st2 == RA_OK && n * info.value_bytes <= MAX_READ) {
      unsigned char *buf = malloc(n * info.value_bytes + 1);
      seen(ra_ragged_read_row(r, k, buf, n * info.value_bytes), "ragged_read_row", path);
      free(buf);
    }
  }
  ra_ragged_close(r);
  return 1;
}

int main(int argc, char **argv) {
  EXPECT(argc >= 4, "usage: fuzz_open OUT_DIR ITERATIONS SEED...");
  long iterations = strtol(argv[2], NULL, 10);
  char path[4096];
  snprintf(path, sizeof path, "%s/mutant.ra", argv[1]);
  long opened = 0, runs = 0;
  for (int s = 3; s < argc; s++) {
    size_t len = 0;
    unsigned char *seed = slurp(argv[s], &len);
    size_t cap = len + 4096;
    unsigned char *buf = malloc(cap);
    for (long i = 0; i < iterations; i++) {
      memcpy(buf, seed, len);
      size_t n = mutate(buf, len, cap);
      FILE *out = fopen(path, "wb");
      EXPECT(out != NULL, "cannot write %s", path);
      EXPECT(fwrite(buf, 1, n, out) == n, "short write");
      fclose(out);
      opened += try_array(path) + try_ragged(path);
      runs++;
      if (internal) {
        fprintf(stderr, "seed %s, mutation %ld: kept as %s.bad\n", argv[s], i, path);
        char bad[4200];
        snprintf(bad, sizeof bad, "%s.bad", path);
        rename(path, bad);
        return 1;
      }
    }
    free(buf);
    free(seed);
  }
  printf("fuzz: %ld mutants, %ld opened, no crash, no internal error\n", runs, opened);
  return 0;
}
