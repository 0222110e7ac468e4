/*
 * cli_sched.c — `d9 sched`: per worker (process, runtime, worker id), from
 * its worker_park / worker_unpark and poll_start / poll_end records (a
 * worker that never parks, in a saturated pool, is still a worker: its polls
 * are its activity) and the CPU profile's samples of its thread:
 *   - scheduling delay: each sampled record carries sched_wait_ns, the
 *     run-queue wait of the thread (schedstat) since its previous sampled
 *     park/unpark (the agent reads schedstat at most once per
 *     DIAL9_SCHED_SAMPLE_US; the records in between are flagged
 *     D9_WORKER_UNSAMPLED and skipped here); count, sum, p50, p99 and max
 *     of those deltas (percentiles from a log-linear histogram: within
 *     1/16 = 6%);
 *   - CPU time: last cpu_ns - first cpu_ns of the sampled park/unpark
 *     records, which covers only the time between the first and the last
 *     of them; where the worker stops parking (a saturated pool) the CPU
 *     profile's samples of the thread (cpu_sample weights, from perf or the
 *     agent's sampler) cover more, and the larger of the two is shown;
 *   - parked time: sum of unpark.ts - park.ts, and busy % of the span, the
 *     first to the last record of the worker, polls included.
 *
 * Called by main.c. Memory: one histogram (~4 KiB) per worker, never per
 * record.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/cli/cli.h"
#include "collector/query/q_names.h"
#include "collector/query/q_scan.h"

static const char usage[] =
"NAME\n"
"    d9 sched - scheduling delay and CPU time per worker\n"
"\n"
"SYNOPSIS\n"
"    d9 [--store DIR] sched [--pid PID] [--since DUR | --from NS --to NS | --last]\n"
"                           [--format text|jsonl]\n"
"\n"
"DESCRIPTION\n"
"    Reads worker_park, worker_unpark, poll_start and poll_end records and\n"
"    the CPU profile's samples. A worker that polls but never parks (a\n"
"    saturated pool) is listed too. Per worker:\n"
"    PARKS          times the worker went to sleep\n"
"    POLLS          polls the worker started\n"
"    WAITS          sched_wait samples: park/unpark records at which the\n"
"                   agent read the kernel's schedstat (at most one per\n"
"                   DIAL9_SCHED_SAMPLE_US per thread, default 1 ms; 0 =\n"
"                   every park/unpark)\n"
"    WAIT SUM/P50/P99/MAX\n"
"                   time the thread sat runnable on a CPU run queue, not\n"
"                   running (kernel schedstat), per interval between two\n"
"                   samples. SUM is exact whatever the sampling; P50/P99/MAX\n"
"                   are per wake-up only with DIAL9_SCHED_SAMPLE_US=0.\n"
"                   High values: the host is oversubscribed or the worker\n"
"                   competes with other threads. P50/P99 are within 6%.\n"
"    CPU            thread CPU time used in the window: last - first cpu_ns\n"
"                   of the sampled park/unpark records (the kernel updates\n"
"                   it at every tick and switch, so it may lag by one tick),\n"
"                   or, when the thread's CPU profile samples add up to more\n"
"                   (a worker that stops parking), their total weight\n"
"                   (within a few samples' period)\n"
"    PARKED         time spent parked (unpark - park)\n"
"    BUSY           1 - PARKED / SPAN (SPAN = first to last park, unpark or\n"
"                   poll record of the worker)\n"
"\n"
"OPTIONS\n"
"    --pid PID       only workers of this process.\n"
"    --format FMT    text (default) or jsonl.\n"
"\n"
CLI_HELP_WINDOW "\n" CLI_HELP_COMMON "\n"
"EXAMPLES\n"
"    d9 sched --pid 1234\n"
"    d9 sched --since 5m --format jsonl\n"
"\n"
CLI_HELP_EXIT;

/* log-linear histogram: values < 16 exact, then 16 sub-buckets per power of two */
#define HIST_SUB_BITS 4u
#define HIST_SUB      (1u << HIST_SUB_BITS)
#define HIST_BUCKETS  (HIST_SUB + (64u - HIST_SUB_BITS) * HIST_SUB)

struct worker {
    int64_t process_id;
    uint32_t pid, tid, ring, generation;
    uint16_t runtime, worker;
    uint64_t parks, unparks, waits, polls;
    uint64_t wait_sum, wait_max;
    uint64_t cpu_first, cpu_last;
    bool have_cpu;
    uint64_t t_first, t_last;
    uint64_t park_ts;               /* 0 = not parked */
    uint64_t parked_ns;
    uint32_t *hist;
};

/* CPU profile weight per thread of a process */
struct thread_cpu {
    int64_t process_id;
    uint32_t tid;
    uint64_t weight_ns;
};

struct sched_ctx {
    struct worker *w;
    size_t n, cap, last;
    struct thread_cpu *t;
    size_t tn, tcap;
};

static unsigned bucket_of(uint64_t v)
{
    if (v < HIST_SUB)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v);       /* >= HIST_SUB_BITS */
    unsigned sub = (unsigned)(v >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1);
    return HIST_SUB + (e - HIST_SUB_BITS) * HIST_SUB + sub;
}

static uint64_t bucket_mid(unsigned b)
{
    if (b < HIST_SUB)
        return b;
    unsigned e = (b - HIST_SUB) / HIST_SUB + HIST_SUB_BITS;
    uint64_t sub = (b - HIST_SUB) % HIST_SUB;
    uint64_t lo = (1ull << e) + (sub << (e - HIST_SUB_BITS));
    uint64_t width = 1ull << (e - HIST_SUB_BITS);
    return lo + width / 2;
}

static uint64_t percentile(const struct worker *w, double q)
{
    if (w->waits == 0)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)(w->waits - 1)) + 1, seen = 0;
    for (unsigned b = 0; b < HIST_BUCKETS; b++) {
        seen += w->hist[b];
        if (seen >= rank) {
            uint64_t v = bucket_mid(b);
            return v > w->wait_max ? w->wait_max : v;
        }
    }
    return w->wait_max;
}

static struct worker *find(struct sched_ctx *c, const struct q_rec_src *src, uint16_t rt,
                           uint16_t wk)
{
    if (c->last < c->n) {
        struct worker *w = &c->w[c->last];
        if (w->process_id == src->process_id && w->runtime == rt && w->worker == wk)
            return w;
    }
    for (size_t i = 0; i < c->n; i++) {
        struct worker *w = &c->w[i];
        if (w->process_id == src->process_id && w->runtime == rt && w->worker == wk) {
            c->last = i;
            return w;
        }
    }
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 16;
        struct worker *n = realloc(c->w, nc * sizeof *n);
        if (!n)
            return NULL;
        c->w = n;
        c->cap = nc;
    }
    struct worker *w = &c->w[c->n];
    memset(w, 0, sizeof *w);
    w->hist = calloc(HIST_BUCKETS, sizeof *w->hist);
    if (!w->hist)
        return NULL;
    w->process_id = src->process_id;
    w->pid = src->pid;
    w->tid = src->tid;
    w->ring = src->ring;
    w->generation = src->generation;
    w->runtime = rt;
    w->worker = wk;
    c->last = c->n++;
    return w;
}

static void seen_at(struct worker *w, const struct q_rec_src *src, uint64_t ts)
{
    if (w->t_first == 0 || ts < w->t_first)
        w->t_first = ts;
    if (ts > w->t_last)
        w->t_last = ts;
    w->tid = src->tid;
}

static int on_cpu_sample(struct sched_ctx *c, const struct q_rec_src *src,
                         const struct d9_rec_hdr *rec, size_t len)
{
    struct d9_rec_stack st;
    if (len < sizeof st)
        return 0;
    memcpy(&st, rec, sizeof st);
    for (size_t i = 0; i < c->tn; i++) {
        if (c->t[i].process_id == src->process_id && c->t[i].tid == st.tid) {
            c->t[i].weight_ns += st.weight;
            return 0;
        }
    }
    if (c->tn == c->tcap) {
        size_t nc = c->tcap ? c->tcap * 2 : 16;
        struct thread_cpu *n = realloc(c->t, nc * sizeof *n);
        if (!n)
            return -ENOMEM;
        c->t = n;
        c->tcap = nc;
    }
    c->t[c->tn++] = (struct thread_cpu){ src->process_id, st.tid, st.weight };
    return 0;
}

/* A poll is activity of its worker: the worker exists and was busy. */
static int on_poll(struct sched_ctx *c, const struct q_rec_src *src,
                   const struct d9_rec_hdr *rec, size_t len)
{
    uint16_t rt, wk;
    if (rec->type == D9_REC_POLL_START && len == sizeof(struct d9_rec_poll_start)) {
        struct d9_rec_poll_start r;
        memcpy(&r, rec, sizeof r);
        rt = r.runtime;
        wk = r.worker;
    } else if (rec->type == D9_REC_POLL_END && len == sizeof(struct d9_rec_poll_end)) {
        struct d9_rec_poll_end r;
        memcpy(&r, rec, sizeof r);
        rt = r.runtime;
        wk = r.worker;
    } else {
        return 0;
    }
    struct worker *w = find(c, src, rt, wk);
    if (!w)
        return -ENOMEM;
    seen_at(w, src, rec->ts);
    w->polls += rec->type == D9_REC_POLL_START;
    return 0;
}

static int on_record(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                     size_t len)
{
    struct sched_ctx *c = arg;
    if (rec->type == D9_REC_CPU_SAMPLE)
        return on_cpu_sample(c, src, rec, len);
    if (rec->type == D9_REC_POLL_START || rec->type == D9_REC_POLL_END)
        return on_poll(c, src, rec, len);
    struct d9_rec_worker r;
    if (len != sizeof r)
        return 0;
    memcpy(&r, rec, sizeof r);
    struct worker *w = find(c, src, r.runtime, r.worker);
    if (!w)
        return -ENOMEM;
    seen_at(w, src, r.h.ts);
    if (!(r.flags & D9_WORKER_UNSAMPLED)) {
        /* unsampled records carry nothing: their wait is in the next sampled one */
        if (!w->have_cpu) {
            w->cpu_first = r.cpu_ns;
            w->have_cpu = true;
        }
        if (r.cpu_ns > w->cpu_last)
            w->cpu_last = r.cpu_ns;
        w->waits++;
        w->wait_sum += r.sched_wait_ns;
        if (r.sched_wait_ns > w->wait_max)
            w->wait_max = r.sched_wait_ns;
        w->hist[bucket_of(r.sched_wait_ns)]++;
    }
    if (r.h.type == D9_REC_WORKER_PARK) {
        w->parks++;
        w->park_ts = r.h.ts;
    } else {
        w->unparks++;
        if (w->park_ts && r.h.ts >= w->park_ts)
            w->parked_ns += r.h.ts - w->park_ts;
        w->park_ts = 0;
    }
    return 0;
}

static int by_key(const void *x, const void *y)
{
    const struct worker *a = x, *b = y;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->process_id != b->process_id)
        return a->process_id < b->process_id ? -1 : 1;
    if (a->runtime != b->runtime)
        return a->runtime < b->runtime ? -1 : 1;
    return a->worker < b->worker ? -1 : a->worker > b->worker;
}

/* CPU profile weight of the worker's thread, when one thread ran the worker */
static uint64_t profile_cpu(const struct sched_ctx *c, const struct worker *w)
{
    for (size_t i = 0; i < c->tn; i++)
        if (c->t[i].process_id == w->process_id && c->t[i].tid == w->tid)
            return c->t[i].weight_ns;
    return 0;
}

static void print(struct q_store *s, const struct cli_args *a, struct sched_ctx *c)
{
    struct q_names *names = NULL;
    q_names_open(s, &names);
    qsort(c->w, c->n, sizeof *c->w, by_key);
    if (a->format == CLI_FMT_TEXT)
        printf("%-8s %-10s %6s %-8s %7s %7s %7s %10s %9s %9s %9s %10s %10s %5s\n", "PID",
               "RUNTIME", "WORKER", "TID", "PARKS", "POLLS", "WAITS", "WAIT SUM", "P50", "P99", "MAX", "CPU",
               "PARKED", "BUSY");
    for (size_t i = 0; i < c->n; i++) {
        const struct worker *w = &c->w[i];
        char rt[80];
        if (names)
            q_names_runtime(names, w->process_id, w->runtime, rt, sizeof rt);
        else
            snprintf(rt, sizeof rt, "#%u", (unsigned)w->runtime);
        uint64_t cpu = w->cpu_last > w->cpu_first ? w->cpu_last - w->cpu_first : 0;
        uint64_t prof = profile_cpu(c, w);
        if (prof > cpu)
            cpu = prof;
        uint64_t span = w->t_last - w->t_first;
        double busy = span ? 100.0 * (1.0 - (double)w->parked_ns / (double)span) : 0.0;
        if (busy < 0)
            busy = 0;
        uint64_t p50 = percentile(w, 0.50), p99 = percentile(w, 0.99);
        if (a->format == CLI_FMT_JSONL) {
            printf("{\"pid\":%" PRIu32 ",\"runtime\":", w->pid);
            q_text_json(stdout, rt, strlen(rt));
            printf(",\"worker\":%u,\"tid\":%" PRIu32 ",\"parks\":%" PRIu64 ",\"unparks\":%" PRIu64
                   ",\"polls\":%" PRIu64 ",\"waits\":%" PRIu64 ",\"sched_wait_sum_ns\":%" PRIu64
                   ",\"sched_wait_p50_ns\":%" PRIu64 ",\"sched_wait_p99_ns\":%" PRIu64
                   ",\"sched_wait_max_ns\":%" PRIu64 ",\"cpu_ns\":%" PRIu64
                   ",\"parked_ns\":%" PRIu64 ",\"span_ns\":%" PRIu64 ",\"busy_pct\":%.1f}\n",
                   (unsigned)w->worker, w->tid, w->parks, w->unparks, w->polls, w->waits,
                   w->wait_sum,
                   p50, p99, w->wait_max, cpu, w->parked_ns, span, busy);
            continue;
        }
        char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
        printf("%-8" PRIu32 " ", w->pid);
        q_text_escaped(stdout, rt, strlen(rt), false);
        int pad = 10 - (int)strlen(rt);
        printf("%*s %6u %-8" PRIu32 " %7" PRIu64 " %7" PRIu64 " %7" PRIu64
               " %10s %9s %9s %9s %10s %10s %4.0f%%\n",
               pad > 0 ? pad : 0, "", (unsigned)w->worker, w->tid, w->parks, w->polls, w->waits,
               cli_fmt_dur(w->wait_sum, b1, sizeof b1), cli_fmt_dur(p50, b2, sizeof b2),
               cli_fmt_dur(p99, b3, sizeof b3), cli_fmt_dur(w->wait_max, b4, sizeof b4),
               cli_fmt_dur(cpu, b5, sizeof b5), cli_fmt_dur(w->parked_ns, b6, sizeof b6), busy);
    }
    q_names_close(names);
}

CLI_DECLARE_CMD(sched)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP, CLI_OPTE_STORE, CLI_OPTE_PID, CLI_OPTE_WINDOW, CLI_OPTE_FORMAT,
        CLI_OPTE_END,
    };
    struct cli_args a;
    struct q_store *s;
    int rc = cli_begin(env, &a, argc, argv, opts, usage, &s);
    if (!s)
        return rc;
    struct sched_ctx c = { 0 };
    struct q_filter f = {
        .pid = a.pid,
        .types = 1u << D9_REC_WORKER_PARK | 1u << D9_REC_WORKER_UNPARK |
                 1u << D9_REC_POLL_START | 1u << D9_REC_POLL_END | 1u << D9_REC_CPU_SAMPLE,
    };
    q_store_window_resolve(s, &a.win, a.pid, &f.from, &f.to);
    struct q_scan_stats st;
    int r = q_scan(s, &f, on_record, &c, &st, "d9 sched");
    if (r < 0) {
        rc = cli_fail(env, "%s: scan failed (error %d)", env->store, r);
    } else if (c.n == 0) {
        char w[160];
        fprintf(stderr, "d9 sched: no worker park/unpark or poll records in %s\n",
                cli_window_text(&a.win, q_store_live(s), w, sizeof w));
    } else {
        print(s, &a, &c);
    }
    for (size_t i = 0; i < c.n; i++)
        free(c.w[i].hist);
    free(c.w);
    free(c.t);
    q_store_close(s);
    return rc;
}
