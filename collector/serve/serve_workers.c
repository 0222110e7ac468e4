/*
 * serve_workers.c — /api/workers from the rollups plus the window's edges,
 * and the facts the rollups lack from a scan of a small window (see
 * serve_workers.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include "collector/query/q_agg.h"
#include "collector/query/q_names.h"
#include "collector/query/q_scan.h"
#include "collector/query/q_sched.h"
#include "collector/query/q_text.h"
#include "collector/serve/serve_api.h"
#include "collector/serve/serve_workers.h"

static int fail(FILE *out, int status, const char *msg)
{
    fputs("{\"error\":", out);
    q_text_json(out, msg, strlen(msg));
    fputs("}\n", out);
    return status;
}

/* The index's count of the records of pid's processes in the window. */
struct count {
    struct q_store *s;
    uint64_t from, to, n;
    int err;
};

static int count_block(void *arg, const struct idx_read_block_stat *b)
{
    struct count *c = arg;
    c->n += b->nrec;
    return 0;
}

static int count_process(void *arg, const struct idx_read_process *r)
{
    struct count *c = arg;
    int e = q_store_block_stats(c->s, r->id, c->from, c->to, count_block, c);
    return e < 0 ? e : 0;
}

static int on_sched(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                    size_t len)
{
    return q_sched_feed(arg, src, rec, len);
}

static const struct q_sched_worker *raw_of(const struct q_sched_worker *w, size_t n,
                                           const struct q_agg_worker *a)
{
    struct q_sched_key k = { a->pid, a->process_id, a->runtime, a->worker };
    for (size_t i = 0; i < n; i++)
        if (q_sched_key_cmp(k, (struct q_sched_key){ w[i].pid, w[i].process_id, w[i].runtime,
                                                     w[i].worker }) == 0)
            return &w[i];
    return NULL;
}

static void put_u64(FILE *out, const char *key, const uint64_t *v)
{
    if (v)
        fprintf(out, ",\"%s\":%" PRIu64, key, *v);
    else
        fprintf(out, ",\"%s\":null", key);
}

int serve_workers(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to, FILE *out)
{
    struct count c = { s, from, to, 0, 0 };
    int r = q_store_processes(s, pid, from, to, count_process, &c);
    bool scan = r >= 0 && c.n <= SERVE_API_SCAN_MAX;
    struct q_agg *g = NULL;
    struct q_agg_stats st;
    r = q_agg_run(s, pid, from, to, 0, "d9 serve", &g, &st);
    if (r < 0)
        return fail(out, 500, r == -ENOMEM ? "out of memory" : "cannot read the store");
    struct q_sched *sc = NULL;
    const struct q_sched_worker *rw = NULL;
    size_t nraw = 0;
    if (scan) {
        struct q_filter f = { .from = from, .to = to, .pid = pid, .types = Q_SCHED_TYPES };
        struct q_scan_stats sst;
        if (q_sched_new(&sc) < 0 || q_scan(s, &f, on_sched, sc, &sst, "d9 serve") < 0 ||
            !(rw = q_sched_workers(sc, &nraw))) {
            q_sched_free(sc);
            q_agg_free(g);
            return fail(out, 500, "cannot read the store");
        }
    }
    struct q_names *names = NULL;
    if (q_names_open(s, &names) < 0) {
        q_sched_free(sc);
        q_agg_free(g);
        return fail(out, 500, "out of memory");
    }
    size_t n;
    const struct q_agg_worker *w = q_agg_workers(g, &n);
    fprintf(out, "{\"pid\":%" PRIu32 ",\"from\":%" PRIu64 ",\"to\":%" PRIu64 ",\"scanned\":%s,"
            "\"rollup_segments\":%" PRIu64 ",\"edge_segments\":%" PRIu64 ",\"workers\":[",
            pid, from, to, scan ? "true" : "false", st.segments, st.scanned);
    for (size_t i = 0; i < n; i++, w++) {
        const struct q_sched_worker *x = scan ? raw_of(rw, nraw, w) : NULL;
        char rt[80];
        q_names_runtime(names, w->process_id, w->runtime, rt, sizeof rt);
        fprintf(out, "%s\n{\"runtime\":", i ? "," : "");
        q_text_json(out, rt, strlen(rt));
        fprintf(out, ",\"worker\":%u", (unsigned)w->worker);
        if (x)
            fprintf(out, ",\"tid\":%" PRIu32, x->tid);
        else
            fputs(",\"tid\":null", out);
        fprintf(out, ",\"polls\":%" PRIu64 ",\"parks\":%" PRIu64, w->polls, w->parks);
        put_u64(out, "unparks", x ? &x->unparks : NULL);
        fprintf(out, ",\"waits\":%" PRIu64 ",\"sched_wait_sum_ns\":%" PRIu64, w->waits,
                w->wait_sum_ns);
        put_u64(out, "sched_wait_p50_ns", x ? &x->wait_p50_ns : NULL);
        put_u64(out, "sched_wait_p99_ns", x ? &x->wait_p99_ns : NULL);
        fprintf(out, ",\"sched_wait_max_ns\":%" PRIu64, w->wait_max_ns);
        put_u64(out, "cpu_ns", x ? &x->cpu_ns : NULL);
        fprintf(out, ",\"parked_ns\":%" PRIu64, w->parked_ns);
        put_u64(out, "span_ns", x ? &x->span_ns : NULL);
        fprintf(out, ",\"busy_ns\":%" PRIu64, w->busy_ns);
        if (x && x->span_ns)
            fprintf(out, ",\"busy_pct\":%.1f}", 100.0 * (double)w->busy_ns / (double)x->span_ns);
        else
            fputs(x ? ",\"busy_pct\":0.0}" : ",\"busy_pct\":null}", out);
    }
    fputs("\n]}\n", out);
    q_names_close(names);
    q_sched_free(sc);
    q_agg_free(g);
    return 200;
}
