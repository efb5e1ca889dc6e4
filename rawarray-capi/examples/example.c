/* librawarray from C: write a 3-d float array compressed, read it back whole and as a box,
   and append records of a struct from a running program. Build and run:
     cc example.c $(pkg-config --cflags --libs rawarray) -o example && ./example /tmp */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "rawarray.h"

#define CHECK(call)                                                      \
  do {                                                                   \
    if ((call) != RA_OK) {                                               \
      fprintf(stderr, "librawarray: %s\n", ra_last_error_message());     \
      exit(1);                                                           \
    }                                                                    \
  } while (0)

enum { NZ = 16, NY = 64, NX = 64 };
static float field[NZ][NY][NX], back[NZ][NY][NX];

typedef struct {
  uint64_t step;
  double time;
  float position[3]; /* 4 bytes of padding after it: records are stored packed */
} sample;

int main(int argc, char **argv) {
  char path[4096], records[4096];
  snprintf(path, sizeof path, "%s/field.ra", argc > 1 ? argv[1] : ".");
  snprintf(records, sizeof records, "%s/run.ra", argc > 1 ? argv[1] : ".");
  for (int z = 0; z < NZ; z++)
    for (int y = 0; y < NY; y++)
      for (int x = 0; x < NX; x++) field[z][y][x] = (float)(x + y) / (1.0f + z);

  /* Write: chunked, zstd level 5 over byte shuffle, 4 planes a chunk, with parameters. */
  ra_write_options *opts = NULL;
  CHECK(ra_write_options_for_name("zstd", &opts));
  CHECK(ra_write_options_level(opts, 5));
  const uint64_t chunks[3] = {4, NY, NX};
  CHECK(ra_write_options_chunks(opts, RA_ORDER_C, chunks, 3));
  CHECK(ra_write_options_params_json(opts, "{\"units\": \"K\"}"));
  const uint64_t dims[3] = {NZ, NY, NX}; /* C order: as the array is declared */
  CHECK(ra_write(path, RA_FLOAT, 4, RA_ORDER_C, dims, 3, field, sizeof field, opts));
  ra_write_options_free(opts);

  /* Read: what the file holds, then all of it, then one plane. */
  ra_file *f = NULL;
  CHECK(ra_open(path, &f));
  uint64_t eltype, elbyte, file_dims[3];
  const char *codec, *params;
  CHECK(ra_file_eltype(f, &eltype));
  CHECK(ra_file_elbyte(f, &elbyte));
  CHECK(ra_file_dims(f, RA_ORDER_FILE, file_dims, 3));
  CHECK(ra_file_codec(f, &codec));
  CHECK(ra_file_params_json(f, &params));
  printf("%s: eltype %llu, %llu bytes, dims [%llu, %llu, %llu], %s, params %s\n", path,
         (unsigned long long)eltype, (unsigned long long)elbyte,
         (unsigned long long)file_dims[0], (unsigned long long)file_dims[1],
         (unsigned long long)file_dims[2], codec, params);
  CHECK(ra_read_all(f, back, sizeof back));
  static float plane[NY][NX];
  const uint64_t start[3] = {7, 0, 0}, count[3] = {1, NY, NX};
  CHECK(ra_read_box(f, RA_ORDER_C, start, count, 3, plane, sizeof plane));
  printf("field[7][3][5] = %g, read as a plane: %g\n", back[7][3][5], plane[3][5]);
  ra_close(f);

  /* Records: describe the struct field by field (name, type, count, offset), as H5Tinsert. */
  ra_record_type *type = NULL;
  CHECK(ra_record_type_new("Sample", sizeof(sample), &type));
  CHECK(ra_record_type_add(type, "step", RA_UINT, 8, 1, offsetof(sample, step)));
  CHECK(ra_record_type_add(type, "time", RA_FLOAT, 8, 1, offsetof(sample, time)));
  CHECK(ra_record_type_add(type, "position", RA_FLOAT, 4, 3, offsetof(sample, position)));
  ra_records *w = NULL;
  CHECK(ra_records_create(records, type, NULL, &w));
  for (uint64_t step = 0; step < 1000; step++) {
    sample s = {step, 0.01 * step, {1.0f * step, 2.0f, 3.0f}};
    CHECK(ra_records_append(w, &s, 1));
    if (step % 100 == 99) CHECK(ra_records_flush(w)); /* readers see them; a crash keeps them */
  }
  CHECK(ra_records_close(w));
  ra_record_type_free(type);
  printf("%s: 1000 records\n", records);
  return 0;
}
