/* Helpers of the C test programs: a failed call prints its status and the library's message. */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rawarray.h"

#define CHECK(call)                                                                         \
  do {                                                                                      \
    int st_ = (call);                                                                       \
    if (st_ != RA_OK) {                                                                     \
      fprintf(stderr, "%s:%d: %s: status %d: %s\n", __FILE__, __LINE__, #call, st_,      \
              ra_last_error_message());                                                     \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

#define EXPECT(cond, ...)                                                                   \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      fprintf(stderr, "%s:%d: expected %s: ", __FILE__, __LINE__, #cond);                \
      fprintf(stderr, __VA_ARGS__);                                                         \
      fputc('\n', stderr);                                                                  \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

/* The whole file at `path`, malloc'd; its length into *len. */
static inline unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  EXPECT(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
  EXPECT(buf != NULL, "out of memory");
  EXPECT(fread(buf, 1, (size_t)n, f) == (size_t)n, "short read of %s", path);
  fclose(f);
  *len = (size_t)n;
  return buf;
}

#endif
