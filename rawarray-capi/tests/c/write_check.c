/* Writes arrays through the C API, one file per storage kind, into the folder argv[1]; the test
   (tests/c_api.rs) reads them back with Rust, numpy (the Python package) and `ra`.
   float a[NZ][NY][NX] holds x + 100 y + 10000 z: the file of dims [NX, NY, NZ]. */
#include "check.h"

#include <stdint.h>

enum { NX = 40, NY = 30, NZ = 20 };
static float a[NZ][NY][NX];
static double line[1000];
static int32_t grid[7][11];

static char *join(const char *dir, const char *name) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", dir, name);
  return buf;
}

static void write_f32(const char *dir, const char *name, ra_write_options *o) {
  const uint64_t dims[3] = {NZ, NY, NX};
  CHECK(ra_write(join(dir, name), RA_FLOAT, 4, RA_ORDER_C, dims, 3, a, sizeof a, o));
  printf("wrote %s\n", name);
}

int main(int argc, char **argv) {
  EXPECT(argc == 2, "usage: write_check DIR");
  const char *dir = argv[1];
  for (int z = 0; z < NZ; z++)
    for (int y = 0; y < NY; y++)
      for (int x = 0; x < NX; x++) a[z][y][x] = (float)(x + 100 * y + 10000 * z);
  for (int i = 0; i < 1000; i++) line[i] = i * 0.125 - 3.0;
  for (int j = 0; j < 7; j++)
    for (int i = 0; i < 11; i++) grid[j][i] = (j - 3) * 1000 + i;

  /* Plain, by NULL options and by name. */
  write_f32(dir, "c_plain.ra", NULL);
  ra_write_options *o = NULL;
  CHECK(ra_write_options_for_name("lz4-whole", &o));
  write_f32(dir, "c_lz4whole.ra", o);
  ra_write_options_free(o);

  /* Chunked: codec, level, filters, chunks (C order), threads, byte streams, trailer
     parameters. */
  CHECK(ra_write_options_new(&o));
  CHECK(ra_write_options_codec(o, "zstd"));
  CHECK(ra_write_options_level(o, 5));
  CHECK(ra_write_options_filters(o, "shuffle"));
  const uint64_t chunks[3] = {5, NY, NX};
  CHECK(ra_write_options_chunks(o, RA_ORDER_C, chunks, 3));
  CHECK(ra_write_options_threads(o, 2));
  CHECK(ra_write_options_split(o, 1)); /* byte streams, which chunks under 32 KiB lack by default */
  CHECK(ra_write_options_stream_crcs(o, 1)); /* a CRC per stream, which arrays lack by default */
  CHECK(ra_write_options_params_json(o, "{\"units\": \"K\", \"dt\": 0.5}"));
  write_f32(dir, "c_zstd.ra", o);
  ra_write_options_free(o);

  CHECK(ra_write_options_for_name("lz4", &o));
  CHECK(ra_write_options_filters(o, "bitshuffle"));
  write_f32(dir, "c_lz4.ra", o);
  ra_write_options_free(o);

  CHECK(ra_write_options_for_name("pco", &o));
  CHECK(ra_write_options_filters(o, ""));
  write_f32(dir, "c_pco.ra", o);
  ra_write_options_free(o);

  CHECK(ra_write_options_new(&o));
  CHECK(ra_write_options_big_endian(o, 1));
  write_f32(dir, "c_big.ra", o);
  ra_write_options_free(o);

  /* Other element types and orders. */
  const uint64_t n = 1000;
  CHECK(ra_write(join(dir, "c_f64.ra"), RA_FLOAT, 8, RA_ORDER_FILE, &n, 1, line, sizeof line, NULL));
  const uint64_t gdims[2] = {11, 7}; /* the file's order: int32_t grid[7][11] */
  CHECK(ra_write_options_for_name("zstd", &o));
  CHECK(ra_write_options_filters(o, "delta,shuffle"));
  CHECK(ra_write(join(dir, "c_i32.ra"), RA_INT, 4, RA_ORDER_FILE, gdims, 2, grid, sizeof grid, o));
  ra_write_options_free(o);

  /* Errors name what is wrong, and a failed write leaves the old file as it was. */
  const uint64_t dims[3] = {NZ, NY, NX};
  EXPECT(ra_write(join(dir, "c_plain.ra"), RA_FLOAT, 4, RA_ORDER_C, dims, 3, a, sizeof a - 4,
                  NULL) == RA_ERR_USAGE, "a short buffer");
  EXPECT(strstr(ra_last_error_message(), "data_bytes") != NULL, "%s", ra_last_error_message());
  EXPECT(ra_write_options_for_name("gzip", &o) == RA_ERR_USAGE && o == NULL, "an unknown codec");
  EXPECT(strstr(ra_last_error_message(), "zstd") != NULL, "the names: %s", ra_last_error_message());
  CHECK(ra_write_options_for_name("lz4", &o));
  CHECK(ra_write_options_level(o, 9));
  int st = ra_write(join(dir, "c_plain.ra"), RA_FLOAT, 4, RA_ORDER_C, dims, 3, a, sizeof a, o);
  EXPECT(st == RA_ERR_USAGE, "lz4 takes no level: %d", st);
  EXPECT(strstr(ra_last_error_message(), "level") != NULL, "%s", ra_last_error_message());
  EXPECT(ra_write_options_params_json(o, "{not json") == RA_ERR_USAGE, "bad JSON");
  EXPECT(ra_write_options_filters(o, "shuffle,wobble") == RA_ERR_USAGE, "an unknown filter");
  EXPECT(strstr(ra_last_error_message(), "wobble") != NULL, "%s", ra_last_error_message());
  ra_write_options_free(o);
  CHECK(ra_write_options_for_name("zstd", &o));
  CHECK(ra_write_options_split(o, 0));
  CHECK(ra_write_options_stream_crcs(o, 1));
  st = ra_write(join(dir, "c_plain.ra"), RA_FLOAT, 4, RA_ORDER_C, dims, 3, a, sizeof a, o);
  EXPECT(st == RA_ERR_USAGE, "stream CRCs without byte streams: %d", st);
  EXPECT(strstr(ra_last_error_message(), "stream_crcs") != NULL, "%s", ra_last_error_message());
  ra_write_options_free(o);
  EXPECT(ra_write(join(dir, "c_bad.ra"), 9, 4, RA_ORDER_C, dims, 3, a, sizeof a, NULL) ==
             RA_ERR_USAGE, "an eltype that does not exist");
  EXPECT(ra_write(join(dir, "c_bad.ra"), RA_FLOAT, 3, RA_ORDER_C, dims, 3, a, sizeof a, NULL) ==
             RA_ERR_USAGE, "a 3-byte float");
  EXPECT(ra_write(join(dir, "no/such/dir/c.ra"), RA_FLOAT, 4, RA_ORDER_C, dims, 3, a, sizeof a,
                  NULL) == RA_ERR_IO, "a missing folder");

  /* What was written reads back through the C API too. */
  ra_file *f = NULL;
  CHECK(ra_open(join(dir, "c_zstd.ra"), &f));
  static float back[NZ][NY][NX];
  CHECK(ra_read_all(f, back, sizeof back));
  EXPECT(memcmp(back, a, sizeof a) == 0, "c_zstd.ra reads back");
  const char *params = NULL;
  CHECK(ra_file_params_json(f, &params));
  EXPECT(params && strstr(params, "\"units\":\"K\""), "params %s", params ? params : "NULL");
  int split = -1, crcs = -1;
  CHECK(ra_file_split(f, &split));
  CHECK(ra_file_stream_crcs(f, &crcs));
  EXPECT(split == 1 && crcs == 1, "c_zstd.ra: byte streams %d, stream CRCs %d", split, crcs);
  ra_close(f);
  CHECK(ra_open(join(dir, "c_lz4.ra"), &f));
  CHECK(ra_file_split(f, &split));
  CHECK(ra_file_stream_crcs(f, &crcs));
  EXPECT(split == 0 && crcs == 0, "c_lz4.ra: byte streams %d, stream CRCs %d", split, crcs);
  ra_close(f);
  printf("write_check: done\n");
  return 0;
}
