/*
 * cli_sched.c — `d9 sched`: per worker (process, runtime, worker id) its
 * polls, parks, scheduling waits (count, sum, p50, p99, max), CPU time,
 * parked time and busy share in a window. The facts and their definitions
 * are q_sched.h's (the same d9 sql, d9 serve and the exports use); this
 * file scans, and prints them as a table or JSON lines.
 *
 * Called by main.c. Memory: q_sched's, one histogram per worker.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/cli/cli.h"
#include "collector/query/q_agg.h"
#include "collector/cli/cli_live.h"
#include "collector/query/q_names.h"
#include "collector/query/q_scan.h"
#include "collector/query/q_sched.h"

static const char usage[] =
"NAME\n"
"    d9 sched - scheduling delay and CPU time per worker\n"
"\n"
"SYNOPSIS\n"
"    d9 [--store DIR] sched [--pid PID] [--since DUR | --from NS --to NS | --last]\n"
"                           [--totals [--raw]] [--format text|jsonl]\n"
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
"    BUSY           time in polls / SPAN (a poll counts from its start to\n"
"                   its end, nested polls once; a poll without an end adds\n"
"                   nothing and stops no later poll from counting;\n"
"                   SPAN = from the worker's first\n"
"                   park, unpark or poll record to the last of its process:\n"
"                   a pool thread that ran one 5 ms job in a 1 s run is\n"
"                   busy 0.5 %, not 100 %)\n"
"\n"
"OPTIONS\n"
"    --pid PID       only workers of this process.\n"
"    --totals        only the totals per worker: POLLS, PARKS, WAITS, WAIT\n"
"                    SUM and WAIT MAX (as above), PARKED and BUSY time, CPU\n"
"                    (the last - first sampled cpu_ns; not the profile's\n"
"                    samples)\n"
"                    (per segment: a park or a poll open at a rotation adds\n"
"                    nothing), answered from the segments' 1 s rollups for\n"
"                    the seconds the window covers whole and from the\n"
"                    records of its two edges only: the same numbers as a\n"
"                    scan of every record, much faster on a long window. A\n"
"                    poll counts in the window of its start, a park in the\n"
"                    window of its park.\n"
"    --raw           with --totals: the same totals from every record of\n"
"                    the window, never the rollups (a check).\n"
"    --format FMT    text (default) or jsonl.\n"
CLI_HELP_NO_FLUSH
"\n"
CLI_HELP_WINDOW "\n" CLI_HELP_COMMON "\n"
"EXAMPLES\n"
"    d9 sched --pid 1234\n"
"    d9 sched --since 5m --format jsonl\n"
"    d9 sched --totals --since 1h\n"
"\n"
CLI_HELP_EXIT;

static int on_record(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                     size_t len)
{
    return q_sched_feed(arg, src, rec, len);
}

/* A worker's runtime as printed: its name, or "#N" without the names. */
static void runtime_name(struct q_names *names, int64_t process_id, uint16_t runtime, char *rt,
                         size_t cap)
{
    if (names)
        q_names_runtime(names, process_id, runtime, rt, cap);
    else
        snprintf(rt, cap, "#%u", (unsigned)runtime);
}

static void print(struct q_store *s, const struct cli_args *a, const struct q_sched_worker *w,
                  size_t n)
{
    struct q_names *names = NULL;
    q_names_open(s, &names);
    if (a->format == CLI_FMT_TEXT)
        printf("%-8s %-10s %6s %-8s %7s %7s %7s %10s %9s %9s %9s %10s %10s %5s\n", "PID",
               "RUNTIME", "WORKER", "TID", "PARKS", "POLLS", "WAITS", "WAIT SUM", "P50", "P99", "MAX", "CPU",
               "PARKED", "BUSY");
    for (size_t i = 0; i < n; i++, w++) {
        char rt[80];
        runtime_name(names, w->process_id, w->runtime, rt, sizeof rt);
        if (a->format == CLI_FMT_JSONL) {
            printf("{\"pid\":%" PRIu32 ",\"runtime\":", w->pid);
            q_text_json(stdout, rt, strlen(rt));
            printf(",\"worker\":%u,\"tid\":%" PRIu32 ",\"parks\":%" PRIu64 ",\"unparks\":%" PRIu64
                   ",\"polls\":%" PRIu64 ",\"waits\":%" PRIu64 ",\"sched_wait_sum_ns\":%" PRIu64
                   ",\"sched_wait_p50_ns\":%" PRIu64 ",\"sched_wait_p99_ns\":%" PRIu64
                   ",\"sched_wait_max_ns\":%" PRIu64 ",\"cpu_ns\":%" PRIu64
                   ",\"parked_ns\":%" PRIu64 ",\"span_ns\":%" PRIu64 ",\"busy_ns\":%" PRIu64
                   ",\"busy_pct\":%.1f}\n",
                   (unsigned)w->worker, w->tid, w->parks, w->unparks, w->polls, w->waits,
                   w->wait_sum_ns, w->wait_p50_ns, w->wait_p99_ns, w->wait_max_ns, w->cpu_ns,
                   w->parked_ns, w->span_ns, w->busy_ns, w->busy_pct);
            continue;
        }
        char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
        printf("%-8" PRIu32 " ", w->pid);
        q_text_escaped(stdout, rt, strlen(rt), false);
        int pad = 10 - (int)strlen(rt);
        printf("%*s %6u %-8" PRIu32 " %7" PRIu64 " %7" PRIu64 " %7" PRIu64
               " %10s %9s %9s %9s %10s %10s %4.0f%%\n",
               pad > 0 ? pad : 0, "", (unsigned)w->worker, w->tid, w->parks, w->polls, w->waits,
               cli_fmt_dur(w->wait_sum_ns, b1, sizeof b1), cli_fmt_dur(w->wait_p50_ns, b2, sizeof b2),
               cli_fmt_dur(w->wait_p99_ns, b3, sizeof b3), cli_fmt_dur(w->wait_max_ns, b4, sizeof b4),
               cli_fmt_dur(w->cpu_ns, b5, sizeof b5), cli_fmt_dur(w->parked_ns, b6, sizeof b6),
               w->busy_pct);
    }
    q_names_close(names);
}

static void print_totals(struct q_store *s, const struct cli_args *a,
                         const struct q_agg_worker *w, size_t n, const struct q_agg_stats *st,
                         bool raw)
{
    struct q_names *names = NULL;
    q_names_open(s, &names);
    if (a->format == CLI_FMT_TEXT)
        printf("%-8s %-10s %6s %9s %9s %9s %10s %9s %10s %10s %10s\n", "PID", "RUNTIME", "WORKER",
               "POLLS", "PARKS", "WAITS", "WAIT SUM", "MAX", "PARKED", "BUSY", "CPU");
    for (size_t i = 0; i < n; i++, w++) {
        char rt[80];
        runtime_name(names, w->process_id, w->runtime, rt, sizeof rt);
        uint64_t cpu = w->have_cpu ? w->cpu_last - w->cpu_first : 0;
        if (a->format == CLI_FMT_JSONL) {
            printf("{\"pid\":%" PRIu32 ",\"runtime\":", w->pid);
            q_text_json(stdout, rt, strlen(rt));
            printf(",\"worker\":%u,\"polls\":%" PRIu64 ",\"parks\":%" PRIu64 ",\"waits\":%" PRIu64
                   ",\"sched_wait_sum_ns\":%" PRIu64 ",\"sched_wait_max_ns\":%" PRIu64
                   ",\"parked_ns\":%" PRIu64 ",\"busy_ns\":%" PRIu64 ",\"cpu_ns\":%" PRIu64
                   "}\n",
                   (unsigned)w->worker, w->polls, w->parks, w->waits, w->wait_sum_ns,
                   w->wait_max_ns, w->parked_ns, w->busy_ns, cpu);
            continue;
        }
        char b1[32], b2[32], b3[32], b4[32], b5[32];
        printf("%-8" PRIu32 " ", w->pid);
        q_text_escaped(stdout, rt, strlen(rt), false);
        int pad = 10 - (int)strlen(rt);
        printf("%*s %6u %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %10s %9s %10s %10s %10s\n",
               pad > 0 ? pad : 0, "", (unsigned)w->worker, w->polls, w->parks, w->waits,
               cli_fmt_dur(w->wait_sum_ns, b1, sizeof b1), cli_fmt_dur(w->wait_max_ns, b2, sizeof b2),
               cli_fmt_dur(w->parked_ns, b3, sizeof b3), cli_fmt_dur(w->busy_ns, b4, sizeof b4),
               cli_fmt_dur(cpu, b5, sizeof b5));
    }
    if (a->format == CLI_FMT_TEXT) {
        if (raw)
            printf("from the records of %" PRIu64 " segments\n", st->scanned);
        else
            printf("from the rollups of %" PRIu64 " segments and the records of %" PRIu64
                   " (the window's edges: %" PRIu64 " of their %" PRIu64 " blocks read)\n",
                   st->segments, st->scanned, st->blocks_read, st->blocks);
    }
    q_names_close(names);
}

enum { SCHED_OPT_TOTALS = CLI_OPT_FIRST_PRIVATE, SCHED_OPT_RAW };

struct sched_opts {
    bool totals, raw;
};

static int priv(struct cli_env *env, void *arg, int opt, const char *val)
{
    struct sched_opts *o = arg;
    (void)val;
    if (opt == SCHED_OPT_TOTALS)
        o->totals = true;
    else if (opt == SCHED_OPT_RAW)
        o->raw = true;
    else
        return cli_usage_error(env, "unexpected option"), -1;
    return 0;
}

/* d9 sched --totals: the window's aggregates (q_agg.h). */
static int totals(struct cli_env *env, struct q_store *s, const struct cli_args *a, bool raw)
{
    uint64_t from, to;
    q_store_window_resolve(s, &a->win, a->pid, &from, &to);
    struct q_agg *g;
    struct q_agg_stats st;
    int r = q_agg_run(s, a->pid, from, to, raw ? Q_AGG_RAW : 0, "d9 sched", &g, &st);
    int rc = CLI_EXIT_OK;
    size_t n = 0;
    const struct q_agg_worker *w = r < 0 ? NULL : q_agg_workers(g, &n);
    if (r < 0) {
        rc = cli_fail(env, "%s: aggregate failed (error %d)", env->store, r);
    } else if (n == 0) {
        char wt[160];
        fprintf(stderr, "d9 sched: no worker park/unpark or poll records in %s\n",
                cli_window_text(&a->win, q_store_live(s), wt, sizeof wt));
    } else {
        print_totals(s, a, w, n, &st, raw);
    }
    q_agg_free(g);
    return rc;
}

CLI_DECLARE_CMD(sched)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP, CLI_OPTE_STORE, CLI_OPTE_PID, CLI_OPTE_WINDOW, CLI_OPTE_FORMAT,
        { "totals", 0, NULL, SCHED_OPT_TOTALS },
        { "raw", 0, NULL, SCHED_OPT_RAW },
        CLI_OPTE_NO_FLUSH, CLI_OPTE_END,
    };
    struct cli_args a;
    struct sched_opts o = { false, false };
    struct q_store *s = NULL;
    cli_args_init(&a);
    int rc = cli_getopt(env, &a, argc, argv, opts, usage, priv, &o);
    if (rc != 0)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (o.raw && !o.totals)
        return cli_usage_error(env, "--raw needs --totals");
    if (!a.no_flush)
        cli_live_refresh(env);
    rc = cli_open_store(env, &s);
    if (!s)
        return rc;
    if (o.totals) {
        rc = totals(env, s, &a, o.raw);
        q_store_close(s);
        return rc;
    }
    struct q_sched *c;
    if (q_sched_new(&c) < 0) {
        q_store_close(s);
        return cli_fail(env, "out of memory");
    }
    struct q_filter f = { .pid = a.pid, .types = Q_SCHED_TYPES };
    q_store_window_resolve(s, &a.win, a.pid, &f.from, &f.to);
    struct q_scan_stats st;
    int r = q_scan(s, &f, on_record, c, &st, "d9 sched");
    size_t n = 0;
    const struct q_sched_worker *w = r < 0 ? NULL : q_sched_workers(c, &n);
    if (r < 0) {
        rc = cli_fail(env, "%s: scan failed (error %d)", env->store, r);
    } else if (!w) {
        rc = cli_fail(env, "out of memory");
    } else if (n == 0) {
        char wt[160];
        fprintf(stderr, "d9 sched: no worker park/unpark or poll records in %s\n",
                cli_window_text(&a.win, q_store_live(s), wt, sizeof wt));
    } else {
        print(s, &a, w, n);
    }
    q_sched_free(c);
    q_store_close(s);
    return rc;
}
