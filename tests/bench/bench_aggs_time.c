/*
 * bench_aggs_time.c — the aggregate questions of a window timed in process
 * (no d9 start-up, the store opened once): q_agg_run for the locations
 * (Q_AGG_LOCS: `d9 top-polls --by-location`, d9 sql's location_stats), for
 * the workers (`d9 sched --totals`), each also with Q_AGG_RAW (every
 * segment of the window read whole: for a window that covers no 1 s bucket
 * whole, what the edges cost before they read block by block), and d9
 * serve's /api/workers, and beside them the floor: the merged scan of the
 * window's poll records alone (q_scan, nothing counted), what any answer
 * from the records costs. Interleaved rounds, CPU ms of the process
 * (user + system: on a shared machine wall time is mostly the others'
 * load), median [min .. max], and the wall ms median beside.
 * Part of tests/bench/bench_aggs.sh; never part of make test.
 *
 * Usage: bench_aggs_time STORE PID FROM TO [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "collector/query/q_agg.h"
#include "collector/query/q_scan.h"
#include "collector/serve/serve_api.h"

#define MAX_ROUNDS 64

static double now_ms(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int on_rec(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec, size_t len)
{
    (void)src, (void)rec, (void)len;
    ++*(uint64_t *)arg;
    return 0;
}

static int by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: bench_aggs_time STORE PID FROM TO [ROUNDS]\n");
        return 2;
    }
    uint32_t pid = (uint32_t)strtoul(argv[2], NULL, 10);
    uint64_t from = strtoull(argv[3], NULL, 10), to = strtoull(argv[4], NULL, 10);
    int rounds = argc > 5 ? atoi(argv[5]) : 5;
    if (rounds < 1 || rounds > MAX_ROUNDS)
        rounds = 5;
    struct q_store *s;
    char why[256];
    if (q_store_open(&s, argv[1], why, sizeof why) < 0) {
        fprintf(stderr, "bench_aggs_time: %s\n", why);
        return 1;
    }
    static const struct {
        const char *name;
        unsigned flags;             /* UINT32_MAX: /api/workers */
    } q[] = {
        { "locations (blocks)", Q_AGG_LOCS },
        { "locations (--raw: whole segments)", Q_AGG_LOCS | Q_AGG_RAW },
        { "workers (blocks, look-back)", 0 },
        { "workers (--raw: whole segments)", Q_AGG_RAW },
        { "d9 serve /api/workers", UINT32_MAX },
        { "floor: q_scan of the poll records", UINT32_MAX - 1 },
    };
    enum { NQ = sizeof q / sizeof q[0] };
    double ms[NQ][MAX_ROUNDS], wall[NQ][MAX_ROUNDS];
    uint64_t read[NQ] = { 0 }, blocks[NQ] = { 0 };
    for (int r = 0; r < rounds; r++) {
        for (unsigned k = 0; k < NQ; k++) {
            unsigned i = r % 2 ? NQ - 1 - k : k;    /* the order alternates */
            double t = now_ms(CLOCK_PROCESS_CPUTIME_ID), tw = now_ms(CLOCK_MONOTONIC);
            if (q[i].flags == UINT32_MAX - 1) {
                struct q_filter f = { .from = from, .to = to, .pid = pid,
                                      .types = 1u << D9_REC_POLL_START | 1u << D9_REC_POLL_END };
                uint64_t n = 0;
                if (q_scan(s, &f, on_rec, &n, NULL, "bench_aggs_time") < 0) {
                    fprintf(stderr, "bench_aggs_time: q_scan failed\n");
                    return 1;
                }
            } else if (q[i].flags == UINT32_MAX) {
                struct serve_params p;
                serve_api_params_init(&p);
                p.pid = pid;
                p.has_pid = p.has_from = p.has_to = true;
                p.from = from;
                p.to = to;
                char *body = NULL;
                size_t len = 0;
                FILE *f = open_memstream(&body, &len);
                int st = f ? serve_api(s, "/api/workers", &p, f) : 500;
                if (f)
                    fclose(f);
                free(body);
                if (st != 200) {
                    fprintf(stderr, "bench_aggs_time: /api/workers: %d\n", st);
                    return 1;
                }
            } else {
                struct q_agg *g;
                struct q_agg_stats st;
                if (q_agg_run(s, pid, from, to, q[i].flags, "bench_aggs_time", &g, &st) < 0) {
                    fprintf(stderr, "bench_aggs_time: q_agg_run failed\n");
                    return 1;
                }
                q_agg_free(g);
                read[i] = st.blocks_read;
                blocks[i] = st.blocks;
            }
            ms[i][r] = now_ms(CLOCK_PROCESS_CPUTIME_ID) - t;
            wall[i][r] = now_ms(CLOCK_MONOTONIC) - tw;
        }
    }
    for (unsigned i = 0; i < NQ; i++) {
        qsort(ms[i], (size_t)rounds, sizeof ms[i][0], by_double);
        qsort(wall[i], (size_t)rounds, sizeof wall[i][0], by_double);
        printf("  %-36s CPU %6.1f ms [%.1f .. %.1f]  wall %6.1f ms", q[i].name,
               ms[i][(rounds - 1) / 2], ms[i][0], ms[i][rounds - 1], wall[i][(rounds - 1) / 2]);
        if (blocks[i])
            printf("   blocks read %llu of %llu", (unsigned long long)read[i],
                   (unsigned long long)blocks[i]);
        printf("\n");
    }
    q_store_close(s);
    return 0;
}
