#define _DEFAULT_SOURCE /* usleep */
/* Record files from C: a struct with padding, described field by field with its offsets,
   appended, flushed, reopened, held by one process while another is refused, and killed
   between flushes (tests/c_api.rs drives the modes).

   records_check MODE PATH ARGS...
     write PATH N FLUSH STORAGE      N records, a flush every FLUSH, then close
     hang PATH FLUSH STORAGE         records forever, a flush every FLUSH, "flushed K" after each
     hold PATH                       create, say "holding", wait for a line on stdin, close
     try PATH                        open for appending: must be refused while held
     append PATH M                   reopen, append M more records, close
     check PATH MIN                  at least MIN records, every one as written, read as structs */
#include "check.h"

#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

typedef struct {
  uint64_t step;
  float position[3];
  double energy; /* 4 bytes of padding before it */
  uint8_t flag;  /* and 7 after it: sizeof is 40, the packed record 29 */
} sample;

static sample make(uint64_t i) {
  sample s;
  memset(&s, 0xAB, sizeof s); /* padding bytes that must not reach the file */
  s.step = i;
  s.position[0] = (float)i;
  s.position[1] = 0.5f * (float)i;
  s.position[2] = -(float)i;
  s.energy = 1.0 / (1.0 + (double)i);
  s.flag = (uint8_t)(i % 3);
  return s;
}

static ra_record_type *sample_type(void) {
  ra_record_type *t = NULL;
  CHECK(ra_record_type_new("Sample", sizeof(sample), &t));
  CHECK(ra_record_type_add(t, "step", RA_UINT, 8, 1, offsetof(sample, step)));
  CHECK(ra_record_type_add(t, "position", RA_FLOAT, 4, 3, offsetof(sample, position)));
  CHECK(ra_record_type_add(t, "energy", RA_FLOAT, 8, 1, offsetof(sample, energy)));
  CHECK(ra_record_type_add(t, "flag", RA_UINT, 1, 1, offsetof(sample, flag)));
  uint64_t packed = 0;
  CHECK(ra_record_type_packed_bytes(t, &packed));
  EXPECT(packed == 29, "packed %llu", (unsigned long long)packed);
  /* Fields that overlap or leave the struct are refused, naming the field. */
  EXPECT(ra_record_type_add(t, "bad", RA_FLOAT, 8, 1, 36) == RA_ERR_USAGE, "outside");
  EXPECT(strstr(ra_last_error_message(), "\"bad\"") != NULL, "%s", ra_last_error_message());
  EXPECT(ra_record_type_add(t, "bad", RA_FLOAT, 4, 1, 4) == RA_ERR_USAGE, "overlap");
  EXPECT(strstr(ra_last_error_message(), "step") != NULL, "%s", ra_last_error_message());
  return t;
}

static ra_write_options *storage(const char *name) {
  ra_write_options *o = NULL;
  CHECK(ra_write_options_for_name(name, &o));
  CHECK(ra_write_options_params_json(o, "{\"dt\": 0.25, \"code\": \"C\"}"));
  return o;
}

static void say(const char *fmt, unsigned long long v) {
  printf(fmt, v);
  putchar('\n');
  fflush(stdout);
}

int main(int argc, char **argv) {
  EXPECT(argc >= 3, "usage: records_check MODE PATH ARGS...");
  const char *mode = argv[1], *path = argv[2];
  ra_record_type *t = sample_type();
  ra_records *w = NULL;
  if (strcmp(mode, "write") == 0 || strcmp(mode, "hang") == 0) {
    int hang = strcmp(mode, "hang") == 0;
    uint64_t n = hang ? UINT64_MAX : strtoull(argv[3], NULL, 10);
    uint64_t every = strtoull(argv[hang ? 3 : 4], NULL, 10);
    ra_write_options *o = storage(argv[hang ? 4 : 5]);
    CHECK(ra_records_create(path, t, o, &w));
    ra_write_options_free(o);
    for (uint64_t i = 0; i < n; i++) {
      sample s = make(i);
      CHECK(ra_records_append(w, &s, 1));
      if ((i + 1) % every == 0) {
        CHECK(ra_records_flush(w));
        say("flushed %llu", i + 1);
        if (hang) usleep(1000);
      }
    }
    uint64_t len = 0;
    CHECK(ra_records_len(w, &len));
    EXPECT(len == n, "len %llu", (unsigned long long)len);
    CHECK(ra_records_close(w));
  } else if (strcmp(mode, "hold") == 0) {
    ra_write_options *o = storage("plain");
    CHECK(ra_records_create(path, t, o, &w));
    ra_write_options_free(o);
    sample s[4] = {make(0), make(1), make(2), make(3)};
    CHECK(ra_records_append(w, s, 4));
    CHECK(ra_records_flush(w));
    say("holding %llu", 4);
    char line[16];
    EXPECT(fgets(line, sizeof line, stdin) != NULL, "a line on stdin");
    CHECK(ra_records_close(w));
  } else if (strcmp(mode, "try") == 0) {
    int st = ra_records_open(path, t, NULL, &w);
    EXPECT(st == RA_ERR_USAGE && w == NULL, "status %d", st);
    EXPECT(strstr(ra_last_error_message(), path) != NULL, "names the path: %s",
           ra_last_error_message());
    printf("refused: %s\n", ra_last_error_message());
  } else if (strcmp(mode, "append") == 0) {
    uint64_t m = strtoull(argv[3], NULL, 10), len = 0;
    CHECK(ra_records_open(path, t, NULL, &w));
    CHECK(ra_records_len(w, &len));
    sample *s = malloc((m ? m : 1) * sizeof(sample));
    for (uint64_t i = 0; i < m; i++) s[i] = make(len + i);
    CHECK(ra_records_append(w, s, m));
    free(s);
    CHECK(ra_records_close(w));
    say("appended to %llu", len + m);
  } else if (strcmp(mode, "check") == 0) {
    uint64_t min = strtoull(argv[3], NULL, 10), n = 0, rb = 0;
    ra_file *f = NULL;
    CHECK(ra_open(path, &f));
    size_t nd = 0;
    CHECK(ra_file_ndims(f, &nd));
    CHECK(ra_file_dims(f, RA_ORDER_FILE, &n, 1));
    CHECK(ra_file_record_bytes(f, &rb));
    EXPECT(nd == 1 && rb == 29 && n >= min, "ndims %zu, %llu records of %llu bytes", nd,
           (unsigned long long)n, (unsigned long long)rb);
    size_t nf = 0;
    CHECK(ra_file_nfields(f, &nf));
    EXPECT(nf == 4, "%zu fields", nf);
    ra_field_info fi;
    CHECK(ra_file_field(f, 1, &fi));
    EXPECT(strcmp(fi.name, "position") == 0 && fi.count == 3 && fi.offset == 8 &&
               fi.eltype == RA_FLOAT && fi.elbyte == 4, "field 1: %s", fi.name);
    const char *params = NULL;
    CHECK(ra_file_params_json(f, &params));
    EXPECT(params && strstr(params, "\"code\":\"C\""), "params %s", params ? params : "NULL");
    sample *s = malloc((n ? n : 1) * sizeof(sample));
    CHECK(ra_read_records(f, t, 0, n, s, n * sizeof(sample)));
    for (uint64_t i = 0; i < n; i++) {
      sample e = make(i);
      EXPECT(s[i].step == e.step && memcmp(s[i].position, e.position, sizeof e.position) == 0 &&
                 s[i].energy == e.energy && s[i].flag == e.flag,
             "record %llu differs", (unsigned long long)i);
    }
    /* Packed, the records are the file's bytes: 29 each. */
    unsigned char packed[29 * 2];
    if (n >= 2) {
      CHECK(ra_read_records(f, NULL, n - 2, 2, packed, sizeof packed));
      uint64_t step = 0;
      memcpy(&step, packed + 29, 8);
      EXPECT(step == n - 1, "the last record's step");
    }
    /* A type whose fields differ from the file's schema is refused, naming the field. */
    ra_record_type *other = NULL;
    CHECK(ra_record_type_new("Sample", sizeof(sample), &other));
    CHECK(ra_record_type_add(other, "step", RA_UINT, 8, 1, 0));
    CHECK(ra_record_type_add(other, "position", RA_FLOAT, 8, 3, 8));
    EXPECT(ra_read_records(f, other, 0, 1, s, sizeof(sample)) != RA_OK, "another type");
    printf("mismatch: %s\n", ra_last_error_message());
    ra_record_type_free(other);
    free(s);
    ra_close(f);
    say("records %llu", n);
  } else {
    EXPECT(0, "mode %s", mode);
  }
  ra_record_type_free(t);
  return 0;
}
