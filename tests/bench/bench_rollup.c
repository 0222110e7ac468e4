/*
 * bench_rollup.c — what the rollups cost the collector at the seal, per
 * record: for every sealed segment of a store, paired and interleaved,
 *   read  = the validating read of the file (seg_reader: every block read,
 *           CRC-checked and unpacked), the floor of any read-back;
 *   rollup = rollup_file (that read plus the aggregation and the encoding),
 *           which the collector runs once per seal;
 *   v3     = the same with rollups version 3 (rollup3_file: rollup.c at the
 *           commit before version 4, built beside it by bench.mk), so the
 *           cost of version 4 is measured in the same run; v3 and v4 run in
 *           alternating order round by round.
 * Prints one line per round and the medians, in ns per record, and the
 * rollups' bytes (both versions) beside the segments' bytes.
 *
 * Usage: bench_rollup STORE_DIR [ROUNDS]. Never part of make test.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include "collector/store/rollup.h"
#include "collector/store/seg_reader.h"

#define MAX_SEGS 4096

/* rollups version 3 (tests/bench/bench.mk: ROLLUP3_REV) */
int rollup3_file(const char *path, uint8_t **out, size_t *len);

/* Every segment through fn; bytes of the rollups into *bytes. 0 or -1. */
static int rollup_all(int (*fn)(const char *, uint8_t **, size_t *), char **segs, size_t n,
                      uint64_t *bytes)
{
    *bytes = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t *b;
        size_t len;
        if (fn(segs[i], &b, &len) < 0)
            return -1;
        *bytes += len;
        free(b);
    }
    return 0;
}
#define DEFAULT_ROUNDS 5

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int read_all(const char *path, uint64_t *nrec)
{
    struct seg_reader *r;
    if (seg_reader_open(&r, path, 0) < 0)
        return -1;
    struct seg_block b;
    int e;
    while ((e = seg_reader_next(r, &b)) == 1)
        if (b.h.kind == SEG_BLK_DATA)
            *nrec += b.h.nrec;
    seg_reader_close(r);
    return e;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_rollup STORE_DIR [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : DEFAULT_ROUNDS;
    if (rounds < 1 || rounds > 100)
        rounds = DEFAULT_ROUNDS;
    static char *segs[MAX_SEGS];
    size_t n = 0;
    uint64_t seg_bytes = 0;
    DIR *d = opendir(argv[1]);
    if (!d) {
        perror(argv[1]);
        return 1;
    }
    struct dirent *de;
    while ((de = readdir(d)) && n < MAX_SEGS) {
        size_t l = strlen(de->d_name);
        if (l > 6 && strcmp(de->d_name + l - 6, ".d9seg") == 0 && de->d_name[0] != '.') {
            size_t cap = strlen(argv[1]) + l + 2;
            segs[n] = malloc(cap);
            snprintf(segs[n], cap, "%s/%s", argv[1], de->d_name);
            struct stat st;
            if (stat(segs[n], &st) == 0)
                seg_bytes += (uint64_t)st.st_size;
            n++;
        }
    }
    closedir(d);
    double rd[100], ru[100], r3[100];
    uint64_t records = 0, ru_bytes = 0, r3_bytes = 0;
    for (int k = 0; k < rounds; k++) {
        uint64_t nrec = 0;
        double t0 = now_s();
        for (size_t i = 0; i < n; i++)
            if (read_all(segs[i], &nrec) < 0)
                return 1;
        double t1 = now_s(), t2, t3;
        if (nrec == 0)
            return 1;
        if (k % 2 == 0) {
            if (rollup_all(rollup_file, segs, n, &ru_bytes) < 0)
                return 1;
            t2 = now_s();
            if (rollup_all(rollup3_file, segs, n, &r3_bytes) < 0)
                return 1;
            t3 = now_s();
            ru[k] = (t2 - t1) * 1e9 / (double)nrec;
            r3[k] = (t3 - t2) * 1e9 / (double)nrec;
        } else {
            if (rollup_all(rollup3_file, segs, n, &r3_bytes) < 0)
                return 1;
            t2 = now_s();
            if (rollup_all(rollup_file, segs, n, &ru_bytes) < 0)
                return 1;
            t3 = now_s();
            r3[k] = (t2 - t1) * 1e9 / (double)nrec;
            ru[k] = (t3 - t2) * 1e9 / (double)nrec;
        }
        records = nrec;
        rd[k] = (t1 - t0) * 1e9 / (double)nrec;
        printf("round %d: read %.1f ns/record, rollup_file v3 %.1f, v4 %.1f ns/record\n", k + 1,
               rd[k], r3[k], ru[k]);
    }
    qsort(rd, (size_t)rounds, sizeof rd[0], cmp_d);
    qsort(ru, (size_t)rounds, sizeof ru[0], cmp_d);
    qsort(r3, (size_t)rounds, sizeof r3[0], cmp_d);
    printf("segments %zu, records %llu\n", n, (unsigned long long)records);
    printf("read: median %.1f (min %.1f, max %.1f) ns/record\n", rd[rounds / 2], rd[0], rd[rounds - 1]);
    printf("rollup_file v3: median %.1f (min %.1f, max %.1f) ns/record\n", r3[rounds / 2], r3[0],
           r3[rounds - 1]);
    printf("rollup_file v4: median %.1f (min %.1f, max %.1f) ns/record\n", ru[rounds / 2], ru[0],
           ru[rounds - 1]);
    printf("rollup bytes v3 %llu = %.3f %%, v4 %llu = %.3f %% of segment bytes %llu\n",
           (unsigned long long)r3_bytes, 100.0 * (double)r3_bytes / (double)seg_bytes,
           (unsigned long long)ru_bytes, 100.0 * (double)ru_bytes / (double)seg_bytes,
           (unsigned long long)seg_bytes);
    return 0;
}
