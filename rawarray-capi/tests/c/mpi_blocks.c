/* Four MPI ranks write one chunked file from C (tests/c_api.rs runs it under mpirun): each
   rank opens the file with ra_blocks_open_or_create (exactly one creates it), writes its slab
   of whole chunks, and finishes. The array, float a[NT][NY][NX], holds t*10000 + y*100 + x. */
#include "check.h"

#include <mpi.h>
#include <stdint.h>

enum { NX = 24, NY = 16, NT = 8, CT = 2 };

/* OpenMPI keeps memory until exit: leaks at exit are its, not this program's (AddressSanitizer
   still checks every access). The launcher need not pass the setting on. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_leaks=0"; }

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT(argc == 2, "usage: mpi_blocks PATH");
  EXPECT(NT % (CT * size) == 0, "%d ranks: each takes whole chunks", size);

  ra_write_options *o = NULL;
  CHECK(ra_write_options_for_name("zstd", &o));
  const uint64_t chunks[3] = {CT, NY, NX}; /* C order: one chunk is CT planes */
  CHECK(ra_write_options_chunks(o, RA_ORDER_C, chunks, 3));
  CHECK(ra_write_options_threads(o, 1));
  const uint64_t dims[3] = {NT, NY, NX};
  ra_blocks *b = NULL;
  CHECK(ra_blocks_open_or_create(argv[1], RA_FLOAT, 4, RA_ORDER_C, dims, 3, o, &b));
  ra_write_options_free(o);
  int created = 0;
  CHECK(ra_blocks_created(b, &created));

  uint64_t planes = NT / size, t0 = planes * rank;
  float *slab = malloc(planes * NY * NX * sizeof(float));
  for (uint64_t t = 0; t < planes; t++)
    for (int y = 0; y < NY; y++)
      for (int x = 0; x < NX; x++)
        slab[(t * NY + y) * NX + x] = (float)((t0 + t) * 10000 + y * 100 + x);
  const uint64_t start[3] = {t0, 0, 0}, count[3] = {planes, NY, NX};
  CHECK(ra_blocks_write(b, RA_ORDER_C, start, count, 3, slab, planes * NY * NX * sizeof(float)));
  /* A block off the chunk grid is refused, naming the grid. */
  const uint64_t off[3] = {t0, 1, 0}, one[3] = {1, 1, NX};
  int st = ra_blocks_write(b, RA_ORDER_C, off, one, 3, slab, NX * sizeof(float));
  EXPECT(st != RA_OK && strstr(ra_last_error_message(), "chunk grid") != NULL,
         "a block off the grid: status %d: %s", st, ra_last_error_message());
  free(slab);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(ra_blocks_finish(b));
  printf("rank %d of %d: planes %llu..%llu created=%d\n", rank, size, (unsigned long long)t0,
         (unsigned long long)(t0 + planes), created);
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
