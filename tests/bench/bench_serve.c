/*
 * bench_serve.c — `d9 serve`'s answers on a large store (make bench):
 * builds a synthetic store of N records (default 50 M: 4 worker threads of
 * back-to-back polls, segments of 4 M records) with the segment writer and
 * the index, then times what the page asks for, in process (the HTTP layer
 * only copies the buffer): the first paint (/api/processes plus the
 * whole-store timeline at 1600 px) and zooms (windows of 1/10 .. 1/100000
 * of the store at 1600 px), the findings panel (/api/findings of the whole
 * store and of a 1/100 window), and reports the peak RSS.
 *
 * Usage: bench_serve DIR [RECORDS]   (DIR must not exist; with
 * BENCH_SERVE_BUILD_ONLY set in the environment it only builds). Prints
 * "serve.<key> <value>" lines and a short table.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include "collector/serve/serve_api.h"
#include "collector/query/q_store.h"
#include "collector/store/idx.h"
#include "collector/store/seg_writer.h"
#include "shm/meta.h"

#define THREADS        4u
#define BLOCK_RECS     2048u
#define SEG_RECS       (4u * 1000u * 1000u)
#define T0             1000000000000ull
#define PERIOD_NS      2000u       /* a poll starts every PERIOD_NS on each thread */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_serve: %s: %d\n", what, rc);
    exit(1);
}

static uint64_t build(const char *dir, uint64_t records)
{
    struct idx *x;
    int rc = idx_open(&x, dir);
    if (rc < 0)
        die("idx_open", rc);
    struct seg_proc_info pi = { .pid = 4242, .uid = 0, .start_time = 1,
                                .clock_source = D9_CLOCK_MONOTONIC, .host = "bench",
                                .comm = "bench", .exe = "/bench" };
    struct idx_process p = { .pid = 4242, .start_time = 1, .comm = "bench", .exe = "/bench",
                             .first_ns = T0 };
    int64_t row;
    if ((rc = idx_process_upsert(x, &p, &row)) < 0)
        die("process", rc);
    uint8_t meta[64];
    uint8_t payload[32];
    int pl = shm_meta_encode_runtime(payload, sizeof payload, "rt");
    struct d9_meta_hdr mh = { .len = (uint16_t)((sizeof mh + (size_t)pl + 7) & ~7u),
                              .kind = D9_META_RUNTIME, .id = 1 };
    memset(meta, 0, sizeof meta);
    memcpy(meta, &mh, sizeof mh);
    memcpy(meta + sizeof mh, payload, (size_t)pl);
    uint8_t *buf = malloc(BLOCK_RECS * 32u);
    if (!buf)
        die("malloc", -ENOMEM);
    uint64_t done = 0, seg_id = 0, pair[THREADS] = { 0 }, t_last = T0;
    while (done < records) {
        struct seg_writer *w;
        if ((rc = seg_writer_open(&w, dir, ++seg_id, &pi, meta, mh.len)) < 0)
            die("seg_writer_open", rc);
        uint64_t in_seg = 0;
        while (in_seg < SEG_RECS && done < records) {
            for (uint32_t th = 0; th < THREADS && done < records; th++) {
                size_t n = 0;
                for (uint32_t i = 0; i < BLOCK_RECS / 2; i++, pair[th]++) {
                    uint64_t s = T0 + pair[th] * PERIOD_NS + th * 7u;
                    struct d9_rec_poll_start a = { .h = { 32, D9_REC_POLL_START, 0, s },
                                                   .task = pair[th] % 1000u + 1, .loc = 0,
                                                   .runtime = 1, .worker = (uint16_t)th };
                    struct d9_rec_poll_end e = { .h = { 32, D9_REC_POLL_END, 0,
                                                        s + 800 + (pair[th] % 7u) * 100 },
                                                 .task = a.task, .runtime = 1,
                                                 .worker = (uint16_t)th };
                    memcpy(buf + n, &a, 32);
                    memcpy(buf + n + 32, &e, 32);
                    n += 64;
                    t_last = e.h.ts > t_last ? e.h.ts : t_last;
                }
                if ((rc = seg_writer_add_data(w, 5000 + th, th, 1, 0, buf, n)) < 0)
                    die("add_data", rc);
                done += BLOCK_RECS;
                in_seg += BLOCK_RECS;
            }
        }
        struct seg_summary sum;
        if ((rc = seg_writer_seal(w, &sum)) < 0)
            die("seal", rc);
        if ((rc = idx_segment_commit(x, row, &sum, dir)) < 0)
            die("commit", rc);
        seg_writer_free(w);
    }
    for (uint32_t th = 0; th < THREADS; th++) {
        char name[16];
        snprintf(name, sizeof name, "worker-%u", th);
        idx_thread_upsert(x, row, 5000 + th, th, 1, name, T0, t_last, 0);
    }
    idx_runtime_upsert(x, row, 1, "rt");
    free(buf);
    idx_close(x);
    return done;
}

static double timed(struct q_store *s, const char *path, struct serve_params *p,
                    size_t *bytes, char *mode, size_t modecap)
{
    char *body = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&body, &len);
    double t = now_ms();
    int st = serve_api(s, path, p, f);
    fclose(f);
    t = now_ms() - t;
    if (st != 200)
        die(body ? body : path, st);
    *bytes = len;
    const char *m = strstr(body, "\"mode\":\"");
    if (mode)
        snprintf(mode, modecap, "%.*s", m ? (int)strcspn(m + 8, "\"") : 1, m ? m + 8 : "-");
    free(body);
    return t;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        die("usage: bench_serve DIR [RECORDS]", -EINVAL);
    uint64_t want = argc > 2 ? strtoull(argv[2], NULL, 10) : 50000000ull;
    if (mkdir(argv[1], 0700) < 0)
        die("mkdir DIR (must not exist)", -errno);
    double t = now_ms();
    uint64_t n = build(argv[1], want);
    printf("serve.records %" PRIu64 "\nserve.build_s %.1f\n", n, (now_ms() - t) / 1e3);
    if (getenv("BENCH_SERVE_BUILD_ONLY"))       /* the store for bench_serve_zoom.sh */
        return 0;
    long rss0 = rss_kb();
    struct q_store *s;
    char why[256];
    double t_open = now_ms();
    if (q_store_open(&s, argv[1], why, sizeof why) < 0)
        die(why, -1);
    struct serve_params p;
    serve_api_params_init(&p);
    size_t bytes, b2;
    char mode[16];
    double tp = timed(s, "/api/processes", &p, &bytes, NULL, 0);
    p.pid = 4242;
    p.has_pid = true;
    p.width = 1600;
    double tt = timed(s, "/api/timeline", &p, &b2, mode, sizeof mode);
    double first = now_ms() - t_open;
    printf("serve.first_paint_ms %.1f\nserve.processes_ms %.1f\nserve.overview_ms %.1f\n"
           "serve.overview_mode %s\nserve.overview_bytes %zu\n", first, tp, tt, mode, b2);
    uint64_t span = (n / THREADS / 2) * PERIOD_NS;
    for (uint64_t div = 10; div <= 100000; div *= 10) {
        double best = 1e9, worst = 0;
        for (int rep = 0; rep < 3; rep++) {
            /* a different place each time: no cache of the previous answer helps */
            uint64_t w = span / div;
            p.has_from = p.has_to = true;
            p.from = T0 + (span - w) / 7 * (uint64_t)(rep + 1) % (span - w);
            p.to = p.from + w;
            double z = timed(s, "/api/timeline", &p, &b2, mode, sizeof mode);
            best = z < best ? z : best;
            worst = z > worst ? z : worst;
        }
        printf("serve.zoom_1_%" PRIu64 "_ms %.1f\nserve.zoom_1_%" PRIu64 "_worst_ms %.1f\n"
               "serve.zoom_1_%" PRIu64 "_mode %s\nserve.zoom_1_%" PRIu64 "_bytes %zu\n",
               div, best, div, worst, div, mode, div, b2);
    }
    /* the worst zoom: a window just small enough to be scanned */
    {
        uint64_t w = (uint64_t)((double)span * ((double)SERVE_API_SCAN_MAX * 0.98 / (double)n));
        p.from = T0 + span / 3;
        p.to = p.from + w;
        double z = timed(s, "/api/timeline", &p, &b2, mode, sizeof mode);
        printf("serve.zoom_scan_max_ms %.1f\nserve.zoom_scan_max_mode %s\n", z, mode);
    }
    /* the page's findings panel: /api/findings of the whole store (it reads
     * every record of the process), then of a 1/100 window */
    {
        p.has_from = p.has_to = false;
        double f = timed(s, "/api/findings", &p, &b2, NULL, 0);
        printf("serve.findings_all_ms %.1f\nserve.findings_all_bytes %zu\n", f, b2);
        p.has_from = p.has_to = true;
        p.from = T0 + span / 3;
        p.to = p.from + span / 100;
        f = timed(s, "/api/findings", &p, &b2, NULL, 0);
        printf("serve.findings_1_100_ms %.1f\nserve.findings_1_100_bytes %zu\n", f, b2);
    }
    printf("serve.rss_before_queries_kb %ld\nserve.rss_peak_kb %ld\n", rss0, rss_kb());
    q_store_close(s);
    return 0;
}
