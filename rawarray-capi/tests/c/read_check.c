/* Reads every file of a manifest through the C API and compares what it gets with what the
   Rust reader got (the manifest's expected bytes and metadata, written by tests/c_api.rs):
   the header's facts, the storage, the whole array, and a box in both orders.

   Manifest: one file per line,
     ARRAY path expected eltype elbyte big_endian storage codec filters ndims d0 d1 ... nchunks c0 ...
     RAGGED path expected rows
     ERROR path status
   (codec and filters are "-" when there are none). */
#include "check.h"

#include <stdint.h>

static uint64_t product(const uint64_t *d, size_t n) {
  uint64_t p = 1;
  for (size_t i = 0; i < n; i++) p *= d[i];
  return p;
}

/* The box start..start+count of the array `all` (dims in the file's order, first fastest),
   copied out element by element: the truth the library's box read is compared with. */
static void cut_box(const unsigned char *all, const uint64_t *dims, size_t nd, uint64_t elbyte,
                    const uint64_t *start, const uint64_t *count, unsigned char *out) {
  uint64_t n = product(count, nd);
  uint64_t idx[64] = {0};
  for (uint64_t k = 0; k < n; k++) {
    uint64_t off = 0, stride = 1;
    for (size_t i = 0; i < nd; i++) {
      off += (start[i] + idx[i]) * stride;
      stride *= dims[i];
    }
    memcpy(out + k * elbyte, all + off * elbyte, elbyte);
    for (size_t i = 0; i < nd; i++) {
      if (++idx[i] < count[i]) break;
      idx[i] = 0;
    }
  }
}

static void check_array(FILE *m) {
  char path[4096], expected[4096], codec[64], filters[256];
  unsigned long long eltype, elbyte, ndims, nchunks, chunks[64], dims[64];
  int big, storage;
  EXPECT(fscanf(m, "%4095s %4095s %llu %llu %d %d %63s %255s %llu", path, expected, &eltype,
                &elbyte, &big, &storage, codec, filters, &ndims) == 9,
         "a manifest ARRAY line");
  EXPECT(ndims <= 64, "ndims");
  for (size_t i = 0; i < ndims; i++) EXPECT(fscanf(m, "%llu", &dims[i]) == 1, "dims");
  EXPECT(fscanf(m, "%llu", &nchunks) == 1, "nchunks");
  for (size_t i = 0; i < nchunks; i++) EXPECT(fscanf(m, "%llu", &chunks[i]) == 1, "chunks");

  ra_file *f = NULL;
  CHECK(ra_open(path, &f));
  uint64_t et = 99, eb = 0, data_bytes = 0;
  size_t nd = 99;
  int be = -1, st = -1;
  CHECK(ra_file_eltype(f, &et));
  CHECK(ra_file_elbyte(f, &eb));
  CHECK(ra_file_ndims(f, &nd));
  CHECK(ra_file_big_endian(f, &be));
  CHECK(ra_file_storage(f, &st));
  CHECK(ra_file_data_bytes(f, &data_bytes));
  EXPECT(et == eltype && eb == elbyte, "%s: type %llu/%llu, expected %llu/%llu", path,
         (unsigned long long)et, (unsigned long long)eb, eltype, elbyte);
  EXPECT(nd == ndims && be == big && st == storage, "%s: ndims %zu big %d storage %d", path,
         nd, be, st);
  uint64_t fd[64], cd[64];
  if (nd > 0) {
    /* Too small a buffer is an error naming what is needed. */
    EXPECT(ra_file_dims(f, RA_ORDER_FILE, fd, nd - 1) == RA_ERR_USAGE, "small dims buffer");
    EXPECT(strstr(ra_last_error_message(), "needed") != NULL, "%s", ra_last_error_message());
  }
  CHECK(ra_file_dims(f, RA_ORDER_FILE, fd, 64));
  CHECK(ra_file_dims(f, RA_ORDER_C, cd, 64));
  for (size_t i = 0; i < nd; i++) {
    EXPECT(fd[i] == dims[i], "%s: dim %zu is %llu, expected %llu", path, i,
           (unsigned long long)fd[i], dims[i]);
    EXPECT(cd[nd - 1 - i] == dims[i], "%s: C-order dim %zu", path, i);
  }
  const char *c = NULL, *fl = NULL;
  CHECK(ra_file_codec(f, &c));
  CHECK(ra_file_filters(f, &fl));
  if (storage == RA_STORAGE_CHUNKED) {
    EXPECT(c != NULL && strcmp(c, codec) == 0, "%s: codec %s, expected %s", path, c ? c : "NULL",
           codec);
    EXPECT(strcmp(fl, strcmp(filters, "-") == 0 ? "" : filters) == 0,
           "%s: filters '%s', expected '%s'", path, fl, filters);
    uint64_t ch[64];
    CHECK(ra_file_chunks(f, RA_ORDER_FILE, ch, 64));
    for (size_t i = 0; i < nchunks; i++)
      EXPECT(ch[i] == chunks[i], "%s: chunk %zu is %llu", path, i, (unsigned long long)ch[i]);
  } else {
    EXPECT(c == NULL, "%s: a codec on a file that is not chunked", path);
    EXPECT(ra_file_chunks(f, RA_ORDER_FILE, fd, 64) == RA_ERR_USAGE, "chunks of a plain file");
  }

  size_t want_len = 0;
  unsigned char *want = slurp(expected, &want_len);
  EXPECT(data_bytes == want_len, "%s: %llu data bytes, Rust read %zu", path,
         (unsigned long long)data_bytes, want_len);
  unsigned char *all = malloc(want_len + 1);
  /* A buffer of the wrong size is refused, never overrun. */
  EXPECT(ra_read_all(f, all, want_len + 1) == RA_ERR_USAGE, "%s: a buffer one byte too big", path);
  CHECK(ra_read_all(f, all, want_len));
  EXPECT(memcmp(all, want, want_len) == 0, "%s: the values differ from Rust's", path);

  if (nd > 0 && nd <= 64 && want_len > 0) {
    uint64_t start[64], count[64], cstart[64], ccount[64];
    for (size_t i = 0; i < nd; i++) {
      start[i] = fd[i] / 3;
      count[i] = fd[i] - start[i] > 1 ? (fd[i] - start[i]) / 2 + 1 : fd[i] - start[i];
      cstart[nd - 1 - i] = start[i];
      ccount[nd - 1 - i] = count[i];
    }
    uint64_t bytes = product(count, nd) * eb;
    unsigned char *got = malloc(bytes + 1), *truth = malloc(bytes + 1);
    cut_box(all, fd, nd, eb, start, count, truth);
    CHECK(ra_read_box(f, RA_ORDER_FILE, start, count, nd, got, bytes));
    EXPECT(memcmp(got, truth, bytes) == 0, "%s: the box differs (file order)", path);
    memset(got, 0, bytes);
    CHECK(ra_read_box(f, RA_ORDER_C, cstart, ccount, nd, got, bytes));
    EXPECT(memcmp(got, truth, bytes) == 0, "%s: the box differs (C order)", path);
    /* A box past the array's end is an error naming the dim. */
    uint64_t past[64];
    memcpy(past, count, sizeof past);
    past[nd - 1] = fd[nd - 1] + 1;
    EXPECT(ra_read_box(f, RA_ORDER_FILE, start, past, nd, got, bytes) == RA_ERR_USAGE,
           "%s: a box past the end", path);
    EXPECT(strstr(ra_last_error_message(), "dim") != NULL, "%s", ra_last_error_message());
    free(got);
    free(truth);
  }
  /* Record files: the schema's fields, and records read packed. */
  size_t nfields = 0;
  CHECK(ra_file_nfields(f, &nfields));
  if (nfields > 0 && nd > 0) {
    uint64_t rb = 0, packed = 0;
    CHECK(ra_file_record_bytes(f, &rb));
    for (size_t i = 0; i < nfields; i++) {
      ra_field_info fi;
      CHECK(ra_file_field(f, i, &fi));
      EXPECT(fi.offset == packed, "%s: field %s at %llu, packed at %llu", path, fi.name,
             (unsigned long long)fi.offset, (unsigned long long)packed);
      packed += fi.elbyte * fi.count;
    }
    EXPECT(packed == rb, "%s: fields pack to %llu, records are %llu", path,
           (unsigned long long)packed, (unsigned long long)rb);
    const char *schema = NULL;
    CHECK(ra_file_schema_json(f, &schema));
    EXPECT(schema != NULL && strstr(schema, "\"record\"") != NULL, "%s: schema", path);
    uint64_t n = fd[nd - 1];
    if (n > 2) {
      unsigned char *two = malloc(2 * rb);
      CHECK(ra_read_records(f, NULL, 1, 2, two, 2 * rb));
      EXPECT(memcmp(two, want + rb, 2 * rb) == 0, "%s: records 1..3 differ", path);
      EXPECT(ra_read_records(f, NULL, n - 1, 2, two, 2 * rb) == RA_ERR_USAGE, "records past the end");
      free(two);
    }
  }
  printf("ok %s\n", path);
  free(all);
  free(want);
  ra_close(f);
}

static void check_ragged(FILE *m) {
  char path[4096], expected[4096];
  unsigned long long rows;
  EXPECT(fscanf(m, "%4095s %4095s %llu", path, expected, &rows) == 3, "a RAGGED line");
  ra_ragged *r = NULL;
  CHECK(ra_ragged_open(path, &r));
  ra_ragged_info info;
  CHECK(ra_ragged_describe(r, &info));
  EXPECT(info.rows == rows, "%s: %llu rows, expected %llu", path,
         (unsigned long long)info.rows, rows);
  /* The expected file: per row, its length in values (u64) then its bytes. */
  size_t len = 0, at = 0;
  unsigned char *want = slurp(expected, &len);
  for (uint64_t k = 0; k < rows; k++) {
    uint64_t n = 0, got_n = 0;
    memcpy(&n, want + at, 8);
    at += 8;
    CHECK(ra_ragged_row_len(r, k, &got_n));
    EXPECT(got_n == n, "%s: row %llu has %llu values, expected %llu", path,
           (unsigned long long)k, (unsigned long long)got_n, (unsigned long long)n);
    uint64_t bytes = n * info.value_bytes;
    unsigned char *row = malloc(bytes + 1);
    CHECK(ra_ragged_read_row(r, k, row, bytes));
    EXPECT(memcmp(row, want + at, bytes) == 0, "%s: row %llu differs", path, (unsigned long long)k);
    at += bytes;
    free(row);
  }
  EXPECT(at == len, "%s: rows left over", path);
  uint64_t n = 0;
  EXPECT(ra_ragged_row_len(r, rows, &n) == RA_ERR_USAGE, "%s: a row past the last", path);
  printf("ok %s (ragged, %llu rows%s)\n", path, rows, info.text ? ", text" : "");
  free(want);
  ra_ragged_close(r);
}

static void check_error(FILE *m) {
  char path[4096];
  int status;
  EXPECT(fscanf(m, "%4095s %d", path, &status) == 2, "an ERROR line");
  ra_file *f = (ra_file *)1;
  int st = ra_open(path, &f);
  EXPECT(st == status, "%s: status %d, expected %d (%s)", path, st, status,
         ra_last_error_message());
  EXPECT(f == NULL, "a failed open leaves NULL");
  EXPECT(strstr(ra_last_error_message(), path) != NULL, "the message names the path: %s",
         ra_last_error_message());
  printf("ok %s (refused: %s)\n", path, ra_last_error_message());
}

int main(int argc, char **argv) {
  EXPECT(argc == 2, "usage: read_check MANIFEST");
  const char *v = NULL;
  uint32_t abi = 0;
  CHECK(ra_version(&v));
  CHECK(ra_abi_version(&abi));
  EXPECT(abi == RA_ABI_VERSION, "ABI %u, header %d", abi, RA_ABI_VERSION);
  FILE *m = fopen(argv[1], "r");
  EXPECT(m != NULL, "cannot open %s", argv[1]);
  char kind[16];
  int files = 0;
  while (fscanf(m, "%15s", kind) == 1) {
    if (strcmp(kind, "ARRAY") == 0) check_array(m);
    else if (strcmp(kind, "RAGGED") == 0) check_ragged(m);
    else if (strcmp(kind, "ERROR") == 0) check_error(m);
    else EXPECT(0, "manifest kind %s", kind);
    files++;
  }
  fclose(m);
  /* NULL everywhere is an error, never a crash. */
  EXPECT(ra_open(NULL, NULL) == RA_ERR_USAGE, "NULL path");
  EXPECT(strstr(ra_last_error_message(), "path") != NULL, "%s", ra_last_error_message());
  EXPECT(ra_read_all(NULL, NULL, 0) == RA_ERR_USAGE, "NULL file");
  EXPECT(ra_last_error_status() == RA_ERR_USAGE, "the last status");
  ra_close(NULL);
  printf("librawarray %s: %d files read as Rust reads them\n", v, files);
  return 0;
}
