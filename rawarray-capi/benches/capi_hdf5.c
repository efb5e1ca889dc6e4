/* The C side of benches/capi.rs: the same array and records written and read through
   librawarray's C API and through HDF5's C library, each timed (best of REPS), one line per
   measurement: "api case seconds". The data is what benches/capi.rs times through the Rust API.

   capi_hdf5 DIR REPS */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rawarray.h"

enum { NX = 512, NY = 512, NZ = 256 }; /* 64 Mi floats: 256 MiB */
#define NREC (3u << 20)                /* 3 Mi records */
#define BATCH 1024u                    /* records a call */
#define FLUSH (64u << 10)              /* records a flush */

typedef struct {
  uint64_t step;
  float position[3];
  double energy; /* 4 bytes of padding before it: 32 bytes a struct, 28 packed */
} sample;

#define CHECK(call)                                                                  \
  do {                                                                               \
    if ((call) != RA_OK) {                                                           \
      fprintf(stderr, "%s: %s\n", #call, ra_last_error_message());                 \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)
/* Not H5CHECK: H5Fpublic.h defines that name itself (inside H5F_ACC_RDONLY and the rest). */
#define H5TRY(x)                                                                     \
  do {                                                                               \
    if ((x) < 0) {                                                                   \
      fprintf(stderr, "HDF5: %s failed\n", #x);                                     \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Durability, equal on both sides. By default (durable = 0) every write makes a new file (the
   last one is removed first, as a program writing a series of snapshots does) and nothing is
   synced: HDF5 never syncs, and librawarray syncs a whole-array write only when it replaces a
   file (record flushes do not sync unless asked). With durable = 1 an array write replaces the
   last file: librawarray then syncs before its rename, and HDF5's file is synced after close.
   With durable = 2 HDF5 replaces the last file as librawarray does, so that a crash never
   costs the old one: it writes a temporary file, syncs it, renames it over the last file and
   syncs the folder (librawarray's write is the same as with durable = 1). */
static int durable = 0;

static void sync_file(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0 || fsync(fd) != 0) {
    perror(path);
    exit(1);
  }
  close(fd);
}

static float *field;
static sample *recs, *back;
static char dir[4096];

static void sync_dir(void) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0 || fsync(fd) != 0) {
    perror(dir);
    exit(1);
  }
  close(fd);
}

static const char *at(const char *name) {
  static char buf[4][4200];
  static int k = 0;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
  return buf[k];
}

/* ---- librawarray ---- */

static void ra_write_array(int compressed) {
  ra_write_options *o = NULL;
  CHECK(ra_write_options_for_name(compressed ? "zstd" : "plain", &o));
  const uint64_t dims[3] = {NZ, NY, NX};
  const char *path = at(compressed ? "capi_z.ra" : "capi.ra");
  if (!durable) unlink(path);
  CHECK(ra_write(path, RA_FLOAT, 4, RA_ORDER_C, dims, 3, field, (uint64_t)NX * NY * NZ * 4, o));
  ra_write_options_free(o);
}

static void ra_read_array(int compressed) {
  ra_file *f = NULL;
  CHECK(ra_open(at(compressed ? "capi_z.ra" : "capi.ra"), &f));
  CHECK(ra_read_all(f, field, (uint64_t)NX * NY * NZ * 4));
  ra_close(f);
}

static ra_record_type *sample_type(void) {
  ra_record_type *t = NULL;
  CHECK(ra_record_type_new("Sample", sizeof(sample), &t));
  CHECK(ra_record_type_add(t, "step", RA_UINT, 8, 1, offsetof(sample, step)));
  CHECK(ra_record_type_add(t, "position", RA_FLOAT, 4, 3, offsetof(sample, position)));
  CHECK(ra_record_type_add(t, "energy", RA_FLOAT, 8, 1, offsetof(sample, energy)));
  return t;
}

static void ra_write_records(int compressed) {
  ra_record_type *t = sample_type();
  ra_write_options *o = NULL;
  CHECK(ra_write_options_for_name(compressed ? "zstd" : "plain", &o));
  ra_records *w = NULL;
  const char *path = at(compressed ? "capi_rz.ra" : "capi_r.ra");
  unlink(path);
  CHECK(ra_records_create(path, t, o, &w));
  for (uint32_t i = 0; i < NREC; i += BATCH) {
    CHECK(ra_records_append(w, recs + i, BATCH));
    if ((i + BATCH) % FLUSH == 0) CHECK(ra_records_flush(w));
  }
  CHECK(ra_records_close(w));
  ra_write_options_free(o);
  ra_record_type_free(t);
}

static void ra_read_records_all(int compressed) {
  ra_record_type *t = sample_type();
  ra_file *f = NULL;
  CHECK(ra_open(at(compressed ? "capi_rz.ra" : "capi_r.ra"), &f));
  CHECK(ra_read_records(f, t, 0, NREC, back, (uint64_t)NREC * sizeof(sample)));
  ra_close(f);
  ra_record_type_free(t);
}

/* ---- HDF5: contiguous plain, or chunked with shuffle + deflate (its built-in equivalent of
   byte shuffle + a codec), chunks of about 1 MiB as librawarray's default ---- */

static void h5_write_array(int compressed) {
  const char *final = at(compressed ? "h5_z.h5" : "h5.h5");
  const char *path = durable == 2 ? at(compressed ? "h5_z.h5.tmp" : "h5.h5.tmp") : final;
  if (!durable) unlink(path);
  hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t dims[3] = {NZ, NY, NX};
  hid_t space = H5Screate_simple(3, dims, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (compressed) {
    hsize_t chunk[3] = {1, NY, NX};
    H5TRY(H5Pset_chunk(dcpl, 3, chunk));
    H5TRY(H5Pset_shuffle(dcpl));
    H5TRY(H5Pset_deflate(dcpl, 1));
  }
  hid_t ds = H5Dcreate2(file, "field", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  H5TRY(H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, field));
  H5Dclose(ds);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Fclose(file);
  if (durable) sync_file(path);
  if (durable == 2) {
    if (rename(path, final) != 0) {
      fprintf(stderr, "rename %s -> %s: ", path, final);
      perror(NULL);
      exit(1);
    }
    sync_dir();
  }
}

static void h5_read_array(int compressed) {
  hid_t file = H5Fopen(at(compressed ? "h5_z.h5" : "h5.h5"), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(file, "field", H5P_DEFAULT);
  H5TRY(H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, field));
  H5Dclose(ds);
  H5Fclose(file);
}

static hid_t h5_sample_type(int packed) {
  hid_t t = H5Tcreate(H5T_COMPOUND, packed ? 28 : sizeof(sample));
  hsize_t three = 3;
  hid_t f3 = H5Tarray_create2(H5T_NATIVE_FLOAT, 1, &three);
  H5TRY(H5Tinsert(t, "step", packed ? 0 : offsetof(sample, step), H5T_NATIVE_UINT64));
  H5TRY(H5Tinsert(t, "position", packed ? 8 : offsetof(sample, position), f3));
  H5TRY(H5Tinsert(t, "energy", packed ? 20 : offsetof(sample, energy), H5T_NATIVE_DOUBLE));
  H5Tclose(f3);
  return t;
}

/* Appended as a running program appends: an extendible dataset grown by a batch at a time,
   flushed as often as librawarray's records are. */
static void h5_write_records(int compressed) {
  const char *path = at(compressed ? "h5_rz.h5" : "h5_r.h5");
  unlink(path);
  hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t zero = 0, unlimited = H5S_UNLIMITED, chunk = 1u << 15;
  hid_t space = H5Screate_simple(1, &zero, &unlimited);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5TRY(H5Pset_chunk(dcpl, 1, &chunk));
  if (compressed) {
    H5TRY(H5Pset_shuffle(dcpl));
    H5TRY(H5Pset_deflate(dcpl, 1));
  }
  hid_t file_type = h5_sample_type(1), mem_type = h5_sample_type(0);
  hid_t ds = H5Dcreate2(file, "samples", file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  H5Sclose(space);
  hsize_t n = BATCH;
  hid_t mem = H5Screate_simple(1, &n, NULL);
  for (uint32_t i = 0; i < NREC; i += BATCH) {
    hsize_t size = i + BATCH, start = i;
    H5TRY(H5Dset_extent(ds, &size));
    hid_t fs = H5Dget_space(ds);
    H5TRY(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &n, NULL));
    H5TRY(H5Dwrite(ds, mem_type, mem, fs, H5P_DEFAULT, recs + i));
    H5Sclose(fs);
    if ((i + BATCH) % FLUSH == 0) H5TRY(H5Fflush(file, H5F_SCOPE_LOCAL));
  }
  H5Sclose(mem);
  H5Tclose(file_type);
  H5Tclose(mem_type);
  H5Dclose(ds);
  H5Pclose(dcpl);
  H5Fclose(file);
}

static void h5_read_records(int compressed) {
  hid_t file = H5Fopen(at(compressed ? "h5_rz.h5" : "h5_r.h5"), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(file, "samples", H5P_DEFAULT);
  hid_t mem_type = h5_sample_type(0);
  H5TRY(H5Dread(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, back));
  H5Tclose(mem_type);
  H5Dclose(ds);
  H5Fclose(file);
}

static void timed(const char *api, const char *what, int compressed, int reps, void (*f)(int)) {
  double best = 1e300;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    f(compressed);
    double t = now() - t0;
    if (t < best) best = t;
  }
  printf("%s %s%s_%s %.4f\n", api, what, durable == 2 ? "_replaced" : durable ? "_synced" : "",
         compressed ? "compressed" : "plain", best);
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: capi_hdf5 DIR REPS\n");
    return 2;
  }
  snprintf(dir, sizeof dir, "%s", argv[1]);
  int reps = atoi(argv[2]);
  field = malloc((size_t)NX * NY * NZ * 4);
  recs = malloc((size_t)NREC * sizeof(sample));
  back = calloc(NREC, sizeof(sample)); /* padding compared too: zero */
  /* The values benches/capi.rs writes through the Rust API. */
  for (size_t k = 0; k < (size_t)NX * NY * NZ; k++) field[k] = (float)((k % 1000) * 0.5 + k / 262144);
  memset(recs, 0, (size_t)NREC * sizeof(sample));
  for (uint32_t i = 0; i < NREC; i++) {
    recs[i].step = i;
    recs[i].position[0] = (float)i * 0.001f;
    recs[i].position[1] = (float)(i % 1000);
    recs[i].position[2] = -1.0f;
    recs[i].energy = (double)(i % 4096) * 0.25;
  }
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  for (int c = 0; c <= 1; c++) {
    timed("capi", "array_write", c, reps, ra_write_array);
    timed("capi", "array_read", c, reps, ra_read_array);
    timed("hdf5", "array_write", c, reps, h5_write_array);
    timed("hdf5", "array_read", c, reps, h5_read_array);
    durable = 1;
    timed("capi", "array_write", c, reps, ra_write_array);
    timed("hdf5", "array_write", c, reps, h5_write_array);
    durable = 2;
    timed("capi", "array_write", c, reps, ra_write_array);
    timed("hdf5", "array_write", c, reps, h5_write_array);
    durable = 0;
    timed("capi", "records_write", c, reps, ra_write_records);
    timed("capi", "records_read", c, reps, ra_read_records_all);
    if (memcmp(back, recs, (size_t)NREC * sizeof(sample)) != 0) {
      fprintf(stderr, "records read back differ\n");
      return 1;
    }
    timed("hdf5", "records_write", c, reps, h5_write_records);
    timed("hdf5", "records_read", c, reps, h5_read_records);
    if (memcmp(back, recs, (size_t)NREC * sizeof(sample)) != 0) {
      fprintf(stderr, "HDF5 records read back differ\n");
      return 1;
    }
  }
  free(field);
  free(recs);
  free(back);
  return 0;
}
