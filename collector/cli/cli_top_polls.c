/*
 * cli_top_polls.c — `d9 top-polls`: the longest task polls of a window.
 *
 * Pairs poll_start/poll_end per thread by task id (q_pair.c) while
 * scanning only those two record types, keeps the N longest in a min-heap
 * (memory: N polls, whatever the window), and resolves names (location,
 * runtime, thread) only for the N printed. A poll still open at the end of
 * the data (process crashed or hung inside it) competes with its duration
 * up to the last record of its process (q_pair_end_open) and is marked
 * unfinished (">", with the reason).
 *
 * With --loop-work, the loop-work intervals of the window (q_loopwork.h:
 * a loop thread's time outside callbacks and outside its wait) compete in
 * the same list, named "[loop work]", with the CPU samples inside them.
 *
 * Called by main.c. Never keeps more than --limit polls, plus the polls
 * open at the same time.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/cli/cli.h"
#include "collector/query/q_agg.h"
#include "collector/query/q_loopwork.h"
#include "collector/cli/cli_live.h"
#include "collector/query/q_pair.h"
#include "collector/query/q_names.h"
#include "collector/query/q_scan.h"

static const char usage[] =
"NAME\n"
"    d9 top-polls - the longest task polls\n"
"\n"
"SYNOPSIS\n"
"    d9 [--store DIR] top-polls [--pid PID] [--tid TID] [--runtime NAME]\n"
"                               [--location TEXT] [--limit N]\n"
"                               [--loop-work [--loop-work-min DUR]]\n"
"                               [--since DUR | --from NS --to NS | --last]\n"
"                               [--by-location [--raw]] [--format text|jsonl]\n"
"\n"
"DESCRIPTION\n"
"    A poll is a poll_start .. poll_end pair of one task on one thread. The\n"
"    longest polls block their worker: every other task queued there waits.\n"
"    Listed longest first: DURATION, START time, PID/TID, RUNTIME, WORKER,\n"
"    TASK id and LOCATION (file:line function given to d9_poll_start, the\n"
"    task's spawn site by convention). A poll whose end is not in the store\n"
"    (the process crashed or exited inside it, or is still in it) counts up\n"
"    to the last record of its process (not to when the collector saw the\n"
"    end) and is shown as \">DURATION\" with \"unfinished\" and why:\n"
"    \"process crashed\", \"process exited\", \"process ended\", \"still open\"\n"
"    or \"open at the window's end\" (cut at the window's end). d9 sql's\n"
"    polls table, d9 serve and d9 export end them the same way.\n"
"    text ends with the number of polls in the window by runtime (every\n"
"    runtime of the selected processes: a program's own count of one\n"
"    runtime's polls is one of them) and how many of them are unfinished.\n"
"\n"
"OPTIONS\n"
"    --pid PID       only polls of this process.\n"
"    --tid TID       only polls on this thread (as d9 events --tid).\n"
"    --runtime NAME  only polls of the runtime of this name (exact, as the\n"
"                    RUNTIME column shows it: \"libuv\", \"libevent\", ...).\n"
"    --location TEXT only polls whose LOCATION contains TEXT (a case-\n"
"                    sensitive substring of \"file:line function\" as shown:\n"
"                    a file name, a function, \"file.c:42\").\n"
"                    The options combine (every one must match); the count\n"
"                    line then counts only the matching polls.\n"
"    --loop-work     list loop work among the polls: a loop thread's time\n"
"                    outside its callbacks and outside its wait (work a\n"
"                    program does between two uv_run calls, such as\n"
"                    Neovim's scheduled work; the loop's own dispatch),\n"
"                    from the record that leaves a callback or the wait to\n"
"                    the next that enters one, on threads that park. Shown\n"
"                    as LOCATION \"[loop work]\", TASK \"-\"; jsonl adds\n"
"                    \"loop_work\":true and \"cpu_samples\" (the thread's CPU\n"
"                    samples inside; d9 sql's loop_work and cpu_samples\n"
"                    tables name them). --runtime applies to them;\n"
"                    --location keeps them when TEXT is in \"[loop work]\".\n"
"    --loop-work-min DUR  the shortest loop work listed (default 1ms).\n"
"    --limit N       how many to list (default 20).\n"
"    --by-location   instead of single polls, per location (and process,\n"
"                    runtime), largest TOTAL first: POLLS (poll_start\n"
"                    records), UNFINISHED (no end in their segment: a poll\n"
"                    open at a rotation is one), TOTAL, MAX, MEAN, P50 and\n"
"                    P99 of the finished polls' durations (P50/P99 within\n"
"                    6%). A poll counts in the window of its start, whole.\n"
"                    Answered from the segments' 1 s rollups for the\n"
"                    seconds the window covers whole and from the records\n"
"                    of its two edges only: the same numbers as a scan of\n"
"                    every record. --runtime and --location filter the\n"
"                    rows; --tid does not combine with it.\n"
"    --raw           with --by-location: from every record of the window,\n"
"                    never the rollups (a check).\n"
"    --format FMT    text (default) or jsonl.\n"
CLI_HELP_NO_FLUSH
"\n"
CLI_HELP_WINDOW "\n" CLI_HELP_COMMON "\n"
"EXAMPLES\n"
"    d9 top-polls\n"
"    d9 top-polls --pid 1234 --since 30s --limit 5\n"
"    d9 top-polls --runtime libevent --location conn_read\n"
"    d9 top-polls --by-location --since 1h\n"
"    d9 top-polls --pid 1234 --loop-work --limit 5\n"
"\n"
CLI_HELP_EXIT;

struct top_entry {
    struct q_poll p;
    uint64_t dur;
    bool unfinished;
    enum q_open_why why;            /* when unfinished */
    bool loopwork;                  /* a loop-work interval (task 0, loc 0) */
    uint64_t samples;               /* loop work: CPU samples inside */
};

struct rt_count {                   /* polls of one runtime of one process */
    int64_t process_id;
    uint16_t runtime;
    uint64_t polls;
};

struct top_ctx {
    struct top_entry *h;            /* min-heap by dur */
    size_t n, cap, limit;
    uint64_t polls, unfinished, loopwork;
    bool with_loopwork;
    struct rt_count *rt;            /* polls by runtime: few (runtimes x processes) */
    size_t nrt, caprt;
};

static int count_runtime(struct top_ctx *c, const struct q_poll *p)
{
    for (size_t i = 0; i < c->nrt; i++)
        if (c->rt[i].process_id == p->process_id && c->rt[i].runtime == p->runtime) {
            c->rt[i].polls++;
            return 0;
        }
    if (c->nrt == c->caprt) {
        size_t nc = c->caprt ? c->caprt * 2 : 8;
        struct rt_count *n = realloc(c->rt, nc * sizeof *n);
        if (!n)
            return -ENOMEM;
        c->rt = n;
        c->caprt = nc;
    }
    c->rt[c->nrt++] = (struct rt_count){ p->process_id, p->runtime, 1 };
    return 0;
}

/* "114580 polls in the window (demo 111129, io 3451; 0 unfinished)": the
 * counts of runtimes of the same name in several processes are added. */
static void print_counts(struct q_names *names, const struct top_ctx *c)
{
    struct named { char name[80]; uint64_t polls; } *m = calloc(c->nrt ? c->nrt : 1, sizeof *m);
    size_t nm = 0;
    for (size_t i = 0; m && i < c->nrt; i++) {
        char rt[sizeof m->name];
        if (names)
            q_names_runtime(names, c->rt[i].process_id, c->rt[i].runtime, rt, sizeof rt);
        else
            snprintf(rt, sizeof rt, "#%u", (unsigned)c->rt[i].runtime);
        size_t j = 0;
        while (j < nm && strcmp(m[j].name, rt) != 0)
            j++;
        if (j == nm)
            snprintf(m[nm++].name, sizeof m->name, "%s", rt);
        m[j].polls += c->rt[i].polls;
    }
    printf("%" PRIu64 " polls in the window (", c->polls);
    for (size_t j = 0; j < nm; j++) {
        fputs(j ? ", " : "", stdout);
        q_text_escaped(stdout, m[j].name, strlen(m[j].name), false);
        printf(" %" PRIu64, m[j].polls);
    }
    printf("%s%" PRIu64 " unfinished)", nm ? "; " : "", c->unfinished);
    if (c->with_loopwork)
        printf(" and %" PRIu64 " loop-work intervals", c->loopwork);
    printf(", %zu longest shown\n", c->n);
    free(m);
}

static bool less(const struct top_entry *a, const struct top_entry *b)
{
    if (a->dur != b->dur)
        return a->dur < b->dur;
    return a->p.start_ns > b->p.start_ns;   /* later start = "smaller": earlier kept */
}

static void sift_down(struct top_ctx *c, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < c->n && less(&c->h[l], &c->h[m]))
            m = l;
        if (r < c->n && less(&c->h[r], &c->h[m]))
            m = r;
        if (m == i)
            return;
        struct top_entry t = c->h[m];
        c->h[m] = c->h[i];
        c->h[i] = t;
        i = m;
    }
}

static int push(struct top_ctx *c, const struct top_entry *ep)
{
    struct top_entry e = *ep;
    if (c->n < c->limit) {
        if (c->n == c->cap) {
            size_t nc = c->cap ? c->cap * 2 : 32;
            if (nc > c->limit)
                nc = c->limit;
            struct top_entry *h = realloc(c->h, nc * sizeof *h);
            if (!h)
                return -ENOMEM;
            c->h = h;
            c->cap = nc;
        }
        size_t i = c->n++;
        c->h[i] = e;
        while (i > 0 && less(&c->h[i], &c->h[(i - 1) / 2])) {
            struct top_entry t = c->h[(i - 1) / 2];
            c->h[(i - 1) / 2] = c->h[i];
            c->h[i] = t;
            i = (i - 1) / 2;
        }
        return 0;
    }
    if (less(&c->h[0], &e)) {
        c->h[0] = e;
        sift_down(c, 0);
    }
    return 0;
}

static int offer(struct top_ctx *c, const struct q_poll *p, bool unfinished,
                 enum q_open_why why)
{
    struct top_entry e = { .p = *p, .dur = p->end_ns - p->start_ns, .unfinished = unfinished,
                           .why = why };
    c->polls++;
    c->unfinished += unfinished;
    if (count_runtime(c, p) < 0)
        return -ENOMEM;
    return push(c, &e);
}

static int offer_loopwork(struct top_ctx *c, const struct q_loopwork_iv *w)
{
    struct top_entry e = {
        .p = { .process_id = w->process_id, .pid = w->pid, .tid = w->tid, .ring = w->ring,
               .generation = w->generation, .runtime = w->runtime, .worker = w->worker,
               .start_ns = w->start_ns, .end_ns = w->end_ns },
        .dur = w->end_ns - w->start_ns, .loopwork = true, .samples = w->samples,
    };
    c->loopwork++;
    return push(c, &e);
}

struct scan_arg {
    struct top_ctx *top;
    struct q_pair *polls;
    struct q_loopwork *lw;          /* --loop-work, else NULL */
    const char *runtime;            /* --runtime, NULL = any */
    bool lw_location;               /* --location keeps loop work */
};

/* A loop-work interval, offered when the filters keep it. */
static int on_loopwork(struct scan_arg *a, const struct q_rec_src *src,
                       const struct q_loopwork_iv *w)
{
    if (!a->lw_location)
        return 0;
    if (a->runtime) {
        const struct q_meta_src *m = src->meta;
        const char *rt = m && m->runtime ? m->runtime(m->ctx, w->runtime) : NULL;
        if (!rt || strcmp(rt, a->runtime) != 0)
            return 0;
    }
    return offer_loopwork(a->top, w);
}

static int on_record(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                     size_t len)
{
    struct scan_arg *a = arg;
    if (a->lw) {
        struct q_loopwork_iv w;
        int r = q_loopwork_feed(a->lw, src, rec, len, &w);
        if (r < 0 || (r == 1 && (r = on_loopwork(a, src, &w)) < 0))
            return r;
    }
    struct q_poll done;
    int rc = q_pair_feed(a->polls, src, rec, len, &done);
    if (rc == 1)
        return offer(a->top, &done, false, Q_OPEN_ALIVE);
    return rc < 0 ? rc : 0;
}

static int by_dur_desc(const void *x, const void *y)
{
    const struct top_entry *a = x, *b = y;
    return less(a, b) ? 1 : less(b, a) ? -1 : 0;
}

static void print(struct q_store *s, const struct cli_args *a, struct top_ctx *c)
{
    struct q_names *names = NULL;
    q_names_open(s, &names);
    int64_t boot;
    bool wall = q_store_wall(s, &boot);
    qsort(c->h, c->n, sizeof *c->h, by_dur_desc);
    if (a->format == CLI_FMT_TEXT)
        printf("%-4s %11s  %-18s %-15s %-10s %6s %10s  %s\n", "#", "DURATION", "START",
               "PID/TID", "RUNTIME", "WORKER", "TASK", "LOCATION");
    for (size_t i = 0; i < c->n; i++) {
        const struct top_entry *e = &c->h[i];
        char loc[Q_LOC_TEXT_MAX], rt[80], t[48], d[32], th[32], pt[32];
        if (e->loopwork)
            snprintf(loc, sizeof loc, "%s", Q_LOOPWORK_NAME);
        else if (names)
            q_names_location(names, e->p.process_id, e->p.loc, loc, sizeof loc);
        else
            snprintf(loc, sizeof loc, "#%u", e->p.loc);
        if (names) {
            q_names_runtime(names, e->p.process_id, e->p.runtime, rt, sizeof rt);
            q_names_thread(names, e->p.process_id, e->p.ring, e->p.generation, th,
                                   sizeof th);
        } else {
            snprintf(rt, sizeof rt, "#%u", (unsigned)e->p.runtime);
            th[0] = 0;
        }
        if (a->format == CLI_FMT_JSONL) {
            printf("{\"rank\":%zu,\"duration_ns\":%" PRIu64 ",\"start_ns\":%" PRIu64
                   ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"task\":%" PRIu64
                   ",\"worker\":%u,\"runtime\":", i + 1, e->dur, e->p.start_ns, e->p.pid,
                   e->p.tid, e->p.task, (unsigned)e->p.worker);
            q_text_json(stdout, rt, strlen(rt));
            fputs(",\"location\":", stdout);
            q_text_json(stdout, loc, strlen(loc));
            fputs(",\"thread\":", stdout);
            q_text_json(stdout, th, strlen(th));
            printf(",\"unfinished\":%s", e->unfinished ? "true" : "false");
            if (e->loopwork)
                printf(",\"loop_work\":true,\"cpu_samples\":%" PRIu64, e->samples);
            if (e->unfinished)
                printf(",\"unfinished_why\":\"%s\"", q_pair_open_text(e->why));
            fputs("}\n", stdout);
            continue;
        }
        char dd[40];
        snprintf(dd, sizeof dd, "%s%s", e->unfinished ? ">" : "", cli_fmt_dur(e->dur, d, sizeof d));
        snprintf(pt, sizeof pt, "%" PRIu32 "/%" PRIu32, e->p.pid, e->p.tid);
        q_text_time(e->p.start_ns, boot, wall, 6, false, t, sizeof t);
        printf("%-4zu %11s  %-18s %-15s ", i + 1, dd, t, pt);
        q_text_escaped(stdout, rt, strlen(rt), false);
        int pad = 10 - (int)strlen(rt);
        if (e->loopwork)
            printf("%*s %6u %10s  ", pad > 0 ? pad : 0, "", (unsigned)e->p.worker, "-");
        else
            printf("%*s %6u %10" PRIu64 "  ", pad > 0 ? pad : 0, "", (unsigned)e->p.worker,
                   e->p.task);
        q_text_escaped(stdout, loc, strlen(loc), false);
        if (e->unfinished)
            printf("  (unfinished, %s)", q_pair_open_text(e->why));
        fputs("\n", stdout);
    }
    q_names_close(names);
}

enum { TOP_OPT_RUNTIME = CLI_OPT_FIRST_PRIVATE, TOP_OPT_LOCATION, TOP_OPT_BY_LOCATION,
       TOP_OPT_RAW, TOP_OPT_LOOP_WORK, TOP_OPT_LOOP_WORK_MIN };

struct top_opts {
    const char *runtime, *location;     /* NULL = any */
    bool by_location, raw;
    bool loop_work;
    uint64_t loop_work_min;             /* 0 = q_loopwork's default */
};

static int priv(struct cli_env *env, void *arg, int opt, const char *val)
{
    struct top_opts *o = arg;
    switch (opt) {
    case TOP_OPT_BY_LOCATION:
        o->by_location = true;
        return 0;
    case TOP_OPT_RAW:
        o->raw = true;
        return 0;
    case TOP_OPT_RUNTIME:
        o->runtime = val;
        break;
    case TOP_OPT_LOCATION:
        o->location = val;
        break;
    case TOP_OPT_LOOP_WORK:
        o->loop_work = true;
        return 0;
    case TOP_OPT_LOOP_WORK_MIN:
        if (cli_parse_duration(val, &o->loop_work_min) != 0 || o->loop_work_min == 0) {
            cli_usage_error(env, "--loop-work-min: expected a duration like 1ms, got '%s'", val);
            return -1;
        }
        return 0;
    default:
        cli_usage_error(env, "unexpected option");
        return -1;
    }
    if (!val || !*val) {
        cli_usage_error(env, "--%s needs a non-empty value",
                        opt == TOP_OPT_RUNTIME ? "runtime" : "location");
        return -1;
    }
    return 0;
}

/* d9 top-polls --by-location: the window's aggregates per location (q_agg.h). */
static int by_location(struct cli_env *env, struct q_store *s, const struct cli_args *a,
                       const struct top_opts *o)
{
    uint64_t from, to;
    q_store_window_resolve(s, &a->win, a->pid, &from, &to);
    struct q_agg *g;
    struct q_agg_stats st;
    int r = q_agg_run(s, a->pid, from, to, (o->raw ? Q_AGG_RAW : 0) | Q_AGG_LOCS, "d9 top-polls",
                      &g, &st);
    if (r < 0)
        return cli_fail(env, "%s: aggregate failed (error %d)", env->store, r);
    size_t n, shown = 0;
    const struct q_agg_loc *l = q_agg_locs(g, &n);
    uint64_t limit = a->limit_set ? a->limit : CLI_LIMIT_DEFAULT;
    struct q_names *names = NULL;
    q_names_open(s, &names);
    if (a->format == CLI_FMT_TEXT)
        printf("%-8s %-10s %9s %10s %11s %10s %10s %10s %10s  %s\n", "PID", "RUNTIME", "POLLS",
               "UNFINISHED", "TOTAL", "MAX", "MEAN", "P50", "P99", "LOCATION");
    for (size_t i = 0; i < n && (!limit || shown < limit); i++, l++) {
        char loc[Q_LOC_TEXT_MAX], rt[80];
        if (names) {
            q_names_location(names, l->process_id, l->loc, loc, sizeof loc);
            q_names_runtime(names, l->process_id, l->runtime, rt, sizeof rt);
        } else {
            snprintf(loc, sizeof loc, "#%u", l->loc);
            snprintf(rt, sizeof rt, "#%u", (unsigned)l->runtime);
        }
        if ((o->runtime && strcmp(rt, o->runtime) != 0) ||
            (o->location && !strstr(loc, o->location)))
            continue;
        shown++;
        uint64_t done = l->count - l->unfinished;
        uint64_t mean = done ? l->sum_ns / done : 0;
        if (a->format == CLI_FMT_JSONL) {
            printf("{\"pid\":%" PRIu32 ",\"runtime\":", l->pid);
            q_text_json(stdout, rt, strlen(rt));
            fputs(",\"location\":", stdout);
            q_text_json(stdout, loc, strlen(loc));
            printf(",\"polls\":%" PRIu64 ",\"unfinished\":%" PRIu64 ",\"total_ns\":%" PRIu64
                   ",\"max_ns\":%" PRIu64 ",\"mean_ns\":%" PRIu64 ",\"p50_ns\":%" PRIu64
                   ",\"p99_ns\":%" PRIu64 "}\n", l->count, l->unfinished, l->sum_ns, l->max_ns,
                   mean, l->p50_ns, l->p99_ns);
            continue;
        }
        char b1[32], b2[32], b3[32], b4[32], b5[32];
        printf("%-8" PRIu32 " ", l->pid);
        q_text_escaped(stdout, rt, strlen(rt), false);
        int pad = 10 - (int)strlen(rt);
        printf("%*s %9" PRIu64 " %10" PRIu64 " %11s %10s %10s %10s %10s  ", pad > 0 ? pad : 0, "",
               l->count, l->unfinished, cli_fmt_dur(l->sum_ns, b1, sizeof b1),
               cli_fmt_dur(l->max_ns, b2, sizeof b2), cli_fmt_dur(mean, b3, sizeof b3),
               cli_fmt_dur(l->p50_ns, b4, sizeof b4), cli_fmt_dur(l->p99_ns, b5, sizeof b5));
        q_text_escaped(stdout, loc, strlen(loc), false);
        fputs("\n", stdout);
    }
    q_names_close(names);
    if (shown == 0) {
        char w[160];
        fprintf(stderr, "d9 top-polls: no polls%s in %s\n",
                o->runtime || o->location ? " matching --runtime/--location" : "",
                cli_window_text(&a->win, q_store_live(s), w, sizeof w));
    } else if (a->format == CLI_FMT_TEXT) {
        if (o->raw)
            printf("from the records of %" PRIu64 " segments\n", st.scanned);
        else
            printf("from the rollups of %" PRIu64 " segments and the records of %" PRIu64
                   " (the window's edges: %" PRIu64 " of their %" PRIu64 " blocks read)\n",
                   st.segments, st.scanned, st.blocks_read, st.blocks);
    }
    q_agg_free(g);
    return CLI_EXIT_OK;
}

CLI_DECLARE_CMD(top_polls)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP, CLI_OPTE_STORE, CLI_OPTE_PID, CLI_OPTE_TID, CLI_OPTE_WINDOW,
        CLI_OPTE_LIMIT, CLI_OPTE_FORMAT,
        { "runtime", 1, NULL, TOP_OPT_RUNTIME },
        { "location", 1, NULL, TOP_OPT_LOCATION },
        { "by-location", 0, NULL, TOP_OPT_BY_LOCATION },
        { "raw", 0, NULL, TOP_OPT_RAW },
        { "loop-work", 0, NULL, TOP_OPT_LOOP_WORK },
        { "loop-work-min", 1, NULL, TOP_OPT_LOOP_WORK_MIN },
        CLI_OPTE_NO_FLUSH, CLI_OPTE_END,
    };
    struct cli_args a;
    struct top_opts o = { NULL, NULL, false, false, false, 0 };
    struct q_store *s = NULL;
    cli_args_init(&a);
    int rc = cli_getopt(env, &a, argc, argv, opts, usage, priv, &o);
    if (rc != 0)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (o.raw && !o.by_location)
        return cli_usage_error(env, "--raw needs --by-location");
    if (o.by_location && a.tid)
        return cli_usage_error(env, "--tid does not combine with --by-location");
    if (o.by_location && o.loop_work)
        return cli_usage_error(env, "--loop-work does not combine with --by-location");
    if (o.loop_work_min && !o.loop_work)
        return cli_usage_error(env, "--loop-work-min needs --loop-work");
    if (!a.no_flush)
        cli_live_refresh(env);
    rc = cli_open_store(env, &s);
    if (!s)
        return rc;
    if (o.by_location) {
        rc = by_location(env, s, &a, &o);
        q_store_close(s);
        return rc;
    }
    struct top_ctx top = { .limit = a.limit_set ? a.limit : CLI_LIMIT_DEFAULT,
                           .with_loopwork = o.loop_work };
    struct scan_arg sa = { .top = &top, .runtime = o.runtime,
                           .lw_location = !o.location || strstr(Q_LOOPWORK_NAME, o.location) };
    if (q_pair_new(&sa.polls) < 0 ||
        (o.loop_work && q_loopwork_new(&sa.lw, o.loop_work_min) < 0)) {
        q_pair_free(sa.polls);
        q_store_close(s);
        return cli_fail(env, "out of memory");
    }
    q_pair_only(sa.polls, o.runtime, o.location);
    struct q_filter f = {
        .pid = a.pid,
        .tid = a.tid,
        .types = 1u << D9_REC_POLL_START | 1u << D9_REC_POLL_END |
                 (o.loop_work ? Q_LOOPWORK_TYPES : 0),
        .gaps = true,                   /* never pair a poll across a block not read */
    };
    q_store_window_resolve(s, &a.win, a.pid, &f.from, &f.to);
    struct q_scan_stats st;
    int r = q_scan(s, &f, on_record, &sa, &st, "d9 top-polls");
    /* polls never ended: at least until their process's last record */
    size_t it = 0;
    struct q_poll p;
    while (r >= 0 && q_pair_next_open(sa.polls, &it, &p)) {
        if (p.task == Q_POLL_PARKED)
            continue;
        enum q_open_why why = q_pair_end_open(s, f.to, &p);
        r = offer(&top, &p, true, why);
    }
    struct q_names *names = NULL;
    if (r < 0) {
        rc = cli_fail(env, "%s: scan failed (error %d)", env->store, r);
    } else if (top.n == 0) {
        char w[160];
        fprintf(stderr, "d9 top-polls: no polls%s%s in %s%s\n", o.loop_work ? " or loop work" : "",
                a.tid || o.runtime || o.location ? " matching --tid/--runtime/--location" : "",
                cli_window_text(&a.win, q_store_live(s), w, sizeof w),
                q_store_unsealed_hint(s, a.pid));
    } else {
        print(s, &a, &top);
        if (a.format == CLI_FMT_TEXT) {
            names = NULL;
            q_names_open(s, &names);
            print_counts(names, &top);
            q_names_close(names);
        }
    }
    const struct q_pair_stats *ps = q_pair_stats(sa.polls);
    /* at the edges of a window, halves of polls are expected: warn only
     * when the whole store was read */
    if (r >= 0 && a.win.kind == Q_WIN_ALL && (ps->unpaired_ends || ps->replaced_starts))
        cli_warn(env, "%" PRIu64 " poll ends without a start and %" PRIu64 " starts without an "
                 "end (records dropped?)", ps->unpaired_ends, ps->replaced_starts);
    if (r >= 0 && ps->broken)
        cli_warn(env, "%" PRIu64 " polls cut by blocks that could not be read are left out "
                 "(never paired across the gap)", ps->broken);
    if (st.lost && r >= 0)
        cli_warn_lost(s, env, a.pid, f.from, f.to, st.lost);
    q_pair_free(sa.polls);
    q_loopwork_free(sa.lw);
    free(top.h);
    free(top.rt);
    q_store_close(s);
    return rc;
}
