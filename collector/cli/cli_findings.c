/*
 * cli_findings.c — `d9 findings`: what is wrong in a window, ranked, each
 * with its evidence and a link into `d9 serve`. The rules, the thresholds'
 * defaults and the ranking are q_find.h's; this file parses the thresholds,
 * runs q_find_run (with the rollups' filter, q_findru.h; --raw without) and
 * prints the findings as text or JSON lines.
 *
 * Called by main.c. Memory: q_find's (per location, worker, queue, open
 * task; never per record).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/cli/cli.h"
#include "collector/cli/cli_live.h"
#include "collector/query/q_find.h"

#define FIND_URL_MAX   512u
#define FIND_PCT_MAX   100u

#define STR_(x) #x
#define STR(x) STR_(x)

static const char usage[] =
"NAME\n"
"    d9 findings - what is wrong in a window, ranked, with evidence\n"
"\n"
"SYNOPSIS\n"
"    d9 [--store DIR] findings [--pid PID] [--since DUR | --from NS --to NS | --last]\n"
"                              [--format text|jsonl] [--limit N] [THRESHOLDS]\n"
"                              [--serve-url URL] [--raw]\n"
"\n"
"DESCRIPTION\n"
"    Reads the window once and reports, per kind (the segments' rollups\n"
"    first tell which processes and workers can hold a long poll or wait:\n"
"    the others skip that work; every record of the window is still read):\n"
"    crash          a process that crashed with a poll unfinished (the poll\n"
"                   never ended; its end is in the window)\n"
"    lost-records   a process whose rings dropped records (in its whole life:\n"
"                   the index keeps drops per process), by cause (ring\n"
"                   full, type mismatch, too large, no ring)\n"
"    long-poll      polls of one location lasting >= --long-poll, with the\n"
"                   CPU samples of the poll's thread inside them by\n"
"                   innermost function (the top " STR(Q_FIND_FRAMES) ")\n"
"    sched-delay    a worker's scheduling wait samples >= --sched-wait: the\n"
"                   thread was runnable but not running (the wait d9 sched\n"
"                   counts: every sampled park and unpark)\n"
"    wake-delay     a task polled >= --wake-delay after its wake, per\n"
"                   location of the poll that answered it\n"
"    imbalance      a worker busy >= --busy-pct of its span while another\n"
"                   worker of its runtime was busy <= --idle-pct and parked\n"
"    queue-growth   a queue whose depth rose by >= --queue-growth\n"
"    task-leak      tasks spawned in the window and never terminated in it,\n"
"                   spawned >= --leak-age before their process's last record,\n"
"                   per spawn location\n"
"    loop-work      a worker's loop work lasting >= --loop-work: its thread\n"
"                   outside its callbacks and outside its wait (work between\n"
"                   two uv_run calls, as Neovim's scheduled work; d9\n"
"                   top-polls --loop-work lists them), with the CPU samples\n"
"                   inside by innermost function (the top " STR(Q_FIND_FRAMES) ")\n"
"    trigger        a trigger the collector recorded that kept a window (a\n"
"                   d9_trigger() marker, d9 trigger --pid, a long poll, a\n"
"                   crash: d9 sql's triggers table); its range is the kept\n"
"                   window; ranked last (no time lost)\n"
"\n"
"RANKING\n"
"    Crashes first, then lost records (they make every other finding of the\n"
"    process incomplete), then by TIME LOST, largest first:\n"
"      long-poll     the sum of the long polls' durations\n"
"      sched-delay   the sum of the wait samples over the threshold\n"
"      wake-delay    the sum of the delays over the threshold\n"
"      imbalance     the worker's busy time minus its runtime's mean\n"
"      queue-growth  the time the depth took to rise\n"
"      task-leak     the age of the oldest leaked task\n"
"      loop-work     the sum of the loop-work intervals' durations\n"
"      crash         from the unfinished poll's start to the last record\n"
"    Triggers last (no time lost), by time.\n"
"\n"
"OUTPUT\n"
"    text: per finding its rank, kind, pid, time lost and where (location,\n"
"    or runtime and worker), then the evidence, then a link into d9 serve\n"
"    and the time range of the worst instance. The viewer page opens the\n"
"    link's pid and time range; its findings panel lists the same findings.\n"
"    jsonl: one object per finding: rank, kind, pid, tid, runtime, worker,\n"
"    loc, where, task, count, of, total_ns, max_ns, lost_ns, from_ns, to_ns,\n"
"    (long-poll, loop-work: samples, frames [{name, samples}]), evidence, url.\n"
"\n"
"OPTIONS\n"
"    --pid PID            only this process.\n"
"    --format FMT         text (default) or jsonl.\n"
"    --limit N            how many findings to print (default 20).\n"
"    --serve-url URL      base of the links (default http://" CLI_SERVE_LISTEN ",\n"
"                         d9 serve's default address).\n"
"    --raw                the same findings without the rollups' filter (every\n"
"                         poll and wait tracked in full; for tests and timing).\n"
"\n"
"THRESHOLDS\n"
"    --long-poll DUR      a long poll (default 10ms).\n"
"    --sched-wait DUR     a scheduling wait sample (default 1ms).\n"
"    --wake-delay DUR     wake -> poll (default 100us).\n"
"    --busy-pct N         a busy worker, % of its span (default 90).\n"
"    --idle-pct N         an idle worker, % of its span (default 50).\n"
"    --queue-growth N     a depth rise, in tasks (default 100).\n"
"    --leak-age DUR       a task's age before it counts as leaked (default 1s).\n"
"    --lost-min N         records lost before it is a finding (default 1).\n"
"    --loop-work DUR      a loop-work interval (default 10ms).\n"
CLI_HELP_NO_FLUSH
"\n"
CLI_HELP_WINDOW "\n" CLI_HELP_COMMON "\n"
"EXAMPLES\n"
"    d9 findings --since 5m\n"
"    d9 findings --pid 1234 --long-poll 2ms --format jsonl\n"
"\n"
CLI_HELP_EXIT;

enum {
    OPT_LONG_POLL = CLI_OPT_FIRST_PRIVATE,
    OPT_SCHED_WAIT,
    OPT_WAKE_DELAY,
    OPT_BUSY_PCT,
    OPT_IDLE_PCT,
    OPT_QUEUE_GROWTH,
    OPT_LEAK_AGE,
    OPT_LOST_MIN,
    OPT_SERVE_URL,
    OPT_LOOP_WORK,
    OPT_RAW,
};

struct find_args {
    struct q_find_opts q;
    const char *url;
    bool raw;
};

static const char *opt_name(int opt)
{
    switch (opt) {
    case OPT_LONG_POLL: return "--long-poll";
    case OPT_SCHED_WAIT: return "--sched-wait";
    case OPT_WAKE_DELAY: return "--wake-delay";
    case OPT_BUSY_PCT: return "--busy-pct";
    case OPT_IDLE_PCT: return "--idle-pct";
    case OPT_QUEUE_GROWTH: return "--queue-growth";
    case OPT_LEAK_AGE: return "--leak-age";
    case OPT_LOOP_WORK: return "--loop-work";
    default: return "--lost-min";
    }
}

static int priv(struct cli_env *env, void *arg, int opt, const char *val)
{
    struct find_args *o = arg;
    uint64_t *dur = NULL, *num = NULL, n;
    double *pct = NULL;
    switch (opt) {
    case OPT_RAW: o->raw = true; return 0;
    case OPT_LONG_POLL: dur = &o->q.long_poll_ns; break;
    case OPT_SCHED_WAIT: dur = &o->q.sched_wait_ns; break;
    case OPT_WAKE_DELAY: dur = &o->q.wake_delay_ns; break;
    case OPT_LEAK_AGE: dur = &o->q.leak_age_ns; break;
    case OPT_LOOP_WORK: dur = &o->q.loop_work_ns; break;
    case OPT_BUSY_PCT: pct = &o->q.busy_pct; break;
    case OPT_IDLE_PCT: pct = &o->q.idle_pct; break;
    case OPT_QUEUE_GROWTH: num = &o->q.queue_growth; break;
    case OPT_LOST_MIN: num = &o->q.lost_min; break;
    case OPT_SERVE_URL:
        if (!*val || strlen(val) > FIND_URL_MAX / 2) {
            cli_usage_error(env, "--serve-url: expected a URL of at most %u bytes",
                            FIND_URL_MAX / 2);
            return -1;
        }
        o->url = val;
        return 0;
    default:
        cli_usage_error(env, "unexpected option");
        return -1;
    }
    if (dur) {
        if (cli_parse_duration(val, dur) != 0 || (opt == OPT_LOOP_WORK && *dur == 0)) {
            cli_usage_error(env, "%s: expected a duration like 10ms, got '%s'", opt_name(opt), val);
            return -1;
        }
        return 0;
    }
    if (q_text_parse_u64(val, &n) != 0 || n == 0 || (pct && n > FIND_PCT_MAX)) {
        cli_usage_error(env, "%s: expected %s, got '%s'", opt_name(opt),
                        pct ? "a percentage from 1 to 100" : "a positive integer", val);
        return -1;
    }
    if (pct)
        *pct = (double)n;
    else
        *num = n;
    return 0;
}

static void link_of(const struct find_args *o, const struct q_finding *x, char *buf, size_t cap)
{
    size_t l = strlen(o->url);
    snprintf(buf, cap, "%s%s?pid=%" PRIu32 "&from=%" PRIu64 "&to=%" PRIu64, o->url,
             l && o->url[l - 1] == '/' ? "" : "/", x->pid, x->from_ns, x->to_ns);
}

static void print_text(const struct find_args *o, const struct q_finding *x, unsigned rank)
{
    char lost[32], span[32], url[FIND_URL_MAX];
    if (x->kind == Q_FIND_LOST || x->kind == Q_FIND_TRIGGER)
        snprintf(lost, sizeof lost, "-");
    else
        cli_fmt_dur(x->lost_ns, lost, sizeof lost);
    printf("%4u %-13s %-8" PRIu32 " %10s  ", rank, q_find_kind_name(x->kind), x->pid, lost);
    q_text_escaped(stdout, x->where, strlen(x->where), false);
    fputs("\n     ", stdout);
    q_text_escaped(stdout, x->evidence, strlen(x->evidence), false);
    link_of(o, x, url, sizeof url);
    printf("\n     view ");
    q_text_escaped(stdout, url, strlen(url), false);
    printf("  (range %" PRIu64 "..%" PRIu64 ", %s)\n", x->from_ns, x->to_ns,
           cli_fmt_dur(x->to_ns - x->from_ns, span, sizeof span));
}

CLI_DECLARE_CMD(findings)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP, CLI_OPTE_STORE, CLI_OPTE_PID, CLI_OPTE_WINDOW, CLI_OPTE_FORMAT,
        CLI_OPTE_LIMIT,
        { "long-poll", 1, NULL, OPT_LONG_POLL },
        { "sched-wait", 1, NULL, OPT_SCHED_WAIT },
        { "wake-delay", 1, NULL, OPT_WAKE_DELAY },
        { "busy-pct", 1, NULL, OPT_BUSY_PCT },
        { "idle-pct", 1, NULL, OPT_IDLE_PCT },
        { "queue-growth", 1, NULL, OPT_QUEUE_GROWTH },
        { "leak-age", 1, NULL, OPT_LEAK_AGE },
        { "lost-min", 1, NULL, OPT_LOST_MIN },
        { "serve-url", 1, NULL, OPT_SERVE_URL },
        { "loop-work", 1, NULL, OPT_LOOP_WORK },
        { "raw", 0, NULL, OPT_RAW },
        CLI_OPTE_NO_FLUSH, CLI_OPTE_END,
    };
    struct find_args o = { .url = "http://" CLI_SERVE_LISTEN };
    q_find_opts_default(&o.q);
    struct cli_args a;
    cli_args_init(&a);
    int rc = cli_getopt(env, &a, argc, argv, opts, usage, priv, &o);
    if (rc != 0)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (o.q.idle_pct >= o.q.busy_pct)
        return cli_usage_error(env, "--idle-pct %.0f must be below --busy-pct %.0f",
                               o.q.idle_pct, o.q.busy_pct);
    struct q_store *s;
    if (!a.no_flush)
        cli_live_refresh(env);
    if ((rc = cli_open_store(env, &s)) != CLI_EXIT_OK)
        return rc;
    struct q_find *f;
    if (q_find_new(&f, &o.q) < 0) {
        q_store_close(s);
        return cli_fail(env, "out of memory");
    }
    q_find_raw(f, o.raw);
    uint64_t from, to;
    q_store_window_resolve(s, &a.win, a.pid, &from, &to);
    struct q_scan_stats st;
    int r = q_find_run(f, s, a.pid, from, to, &st, "d9 findings");
    size_t n = 0;
    const struct q_finding *v = q_find_list(f, &n);
    uint64_t limit = a.limit_set ? a.limit : CLI_LIMIT_DEFAULT;
    char wt[160];
    cli_window_text(&a.win, q_store_live(s), wt, sizeof wt);
    if (r < 0) {
        rc = cli_fail(env, "%s: %s (error %d)", env->store,
                      r == -ENOMEM ? "out of memory" : "scan failed", r);
    } else if (n == 0) {
        fprintf(stderr, "d9 findings: nothing found in %s (%" PRIu64 " records read)%s\n", wt,
                st.records, st.blocks == 0 ? q_store_unsealed_hint(s, a.pid) : "");
    } else {
        if (a.format == CLI_FMT_TEXT)
            printf("%4s %-13s %-8s %10s  %s\n", "RANK", "KIND", "PID", "TIME LOST", "WHERE");
        for (size_t i = 0; i < n && i < limit; i++) {
            if (a.format == CLI_FMT_JSONL) {
                char url[FIND_URL_MAX];
                link_of(&o, &v[i], url, sizeof url);
                q_find_json(stdout, &v[i], (unsigned)(i + 1), url);
                putchar('\n');
            } else {
                print_text(&o, &v[i], (unsigned)(i + 1));
            }
        }
        if (fflush(stdout) != 0)
            rc = cli_fail(env, "standard output: write error");
        fprintf(stderr, "d9 findings: %zu finding%s in %s (%" PRIu64 " records read)%s\n", n,
                n == 1 ? "" : "s", wt, st.records,
                n > limit ? "; more with --limit" : "");
    }
    q_find_free(f);
    q_store_close(s);
    return rc;
}
