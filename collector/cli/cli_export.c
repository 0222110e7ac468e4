/*
 * cli_export.c — `d9 export`: a window of records as Chrome trace-event
 * JSON (exp_json.h) for chrome://tracing and the Perfetto UI, or as
 * Perfetto's native protobuf trace (exp_perfetto.h, --format perfetto),
 * or every table of d9 sql as a Parquet file (cli_parquet.h, --format
 * parquet, -o DIR).
 *
 * Called by main.c. Streams: scan (q_store.c) -> exp_json_record or
 * exp_perfetto_record -> FILE.
 * Writes to -o FILE through a temporary file renamed at the end, so a
 * failed export never leaves a truncated FILE behind; "-" or no -o = stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collector/cli/cli.h"
#include "collector/cli/cli_live.h"
#include "collector/cli/cli_parquet.h"
#include "collector/export/exp_perfetto.h"
#include "collector/export/exp_json.h"
#include "collector/query/q_sym.h"
#include "collector/query/q_scan.h"

static const char usage[] =
"NAME\n"
"    d9 export - write a trace file (Chrome JSON, Perfetto) or Parquet tables\n"
"\n"
"SYNOPSIS\n"
"    d9 [--store DIR] export [--pid PID] [--since DUR | --from NS --to NS | --last]\n"
"                            [--format json|perfetto] [-o FILE]\n"
"    d9 [--store DIR] export --format parquet -o DIR [--row-group-rows N]\n"
"                            [--pid PID] [window]\n"
"\n"
"DESCRIPTION\n"
"    Writes {\"traceEvents\":[...]} as loaded by chrome://tracing and\n"
"    https://ui.perfetto.dev: polls as complete (\"X\") slices named after\n"
"    the polled function, parked workers as \"parked\" slices, wakes,\n"
"    spawns, terminations and custom events as instants (\"i\") with their\n"
"    fields as args, queue depths as counters (\"C\"), each scheduling-wait\n"
"    sample (a sampled park or unpark, as d9 sched counts them) as a point\n"
"    of the counter \"sched_wait <runtime> w<N>\" (ns), and process/thread\n"
"    names (\"M\"). Each wake also starts a flow arrow (\"s\") that ends at\n"
"    the wakee's next poll (\"f\"). CPU samples are instants of category\n"
"    \"cpu\" on the sampled thread, named after the innermost frame, with\n"
"    the whole stack (outermost first, named as d9 flame names frames) in\n"
"    args. ts/dur are microseconds of CLOCK_MONOTONIC, so several\n"
"    processes of one host line up. Polls or parks still open at the end\n"
"    are closed at the last record of their process (or the window's end)\n"
"    and flagged \"unfinished\" with \"unfinished_why\" (\"process crashed\",\n"
"    \"process exited\", ...), as d9 top-polls shows them.\n"
"    Without --pid every process of the window is exported; large windows\n"
"    make large files (about 150 bytes per record).\n"
"\n"
"    --format perfetto writes Perfetto's native protobuf trace instead\n"
"    (open it at https://ui.perfetto.dev or with trace_processor): a track\n"
"    per process, thread and queue counter; polls and parked spans as\n"
"    slices; wakes as flows from the waker to the wakee's next poll; wait\n"
"    samples as \"sched_wait\" counter tracks; custom\n"
"    events as instants with their fields; CPU samples as PerfSample\n"
"    packets with symbolized, interned callstacks; off-CPU samples as\n"
"    \"off_cpu\" instants. Names are interned and times delta-encoded, so\n"
"    the file is several times smaller than the JSON.\n"
"    For speedscope (https://speedscope.app), open the output of d9 flame:\n"
"    folded stacks are one of the formats it imports.\n"
"\n"
"    --format parquet writes every table of d9 sql (d9 sql --schema lists\n"
"    them) as DIR/TABLE.parquet, for DuckDB, Athena/Trino, Spark or pandas:\n"
"    the same columns, types and rows as d9 sql (INTEGER -> INT64, REAL ->\n"
"    DOUBLE, TEXT -> UTF-8 string; every column nullable). Record tables\n"
"    hold the window's rows (by ts_ns; polls and parks by start_ns, ended\n"
"    past the window as in d9 sql), stacks the frames of the window's\n"
"    cpu_samples, the listings (processes, threads, workers, ...) their rows\n"
"    for --pid or all. Pages are zstd-compressed, low-cardinality strings\n"
"    dictionary-encoded, and every row group has min/max statistics, so\n"
"    engines skip row groups by time and pid. DIR is created if missing;\n"
"    each file is replaced atomically when complete.\n"
"\n"
"OPTIONS\n"
"    --pid PID           only this process.\n"
"    --format FMT        json (default), perfetto or parquet.\n"
"    -o, --output FILE   write to FILE (replaced atomically when complete);\n"
"                        default or \"-\": standard output. With parquet:\n"
"                        the directory of the tables (required).\n"
"    --row-group-rows N  parquet: rows per row group (default 1048576, fewer\n"
"                        if the values pass 64 MiB): smaller groups let engines\n"
"                        skip more by their min/max statistics.\n"
CLI_HELP_NO_FLUSH
"\n"
CLI_HELP_WINDOW "\n" CLI_HELP_COMMON "\n"
"EXAMPLES\n"
"    d9 export --pid 1234 --since 10s -o trace.json\n"
"    d9 export --last > all.json\n"
"    d9 export --format perfetto --since 1m -o trace.pftrace\n"
"    d9 export --format parquet --since 1h -o tables/\n"
"    duckdb -c \"SELECT max(dur_ns) FROM 'tables/polls.parquet'\"\n"
"\n"
CLI_HELP_EXIT;

static int on_record(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                     size_t len)
{
    return exp_json_record(arg, src, rec, len);
}

static int on_record_perfetto(void *arg, const struct q_rec_src *src,
                              const struct d9_rec_hdr *rec, size_t len)
{
    return exp_perfetto_record(arg, src, rec, len);
}

enum { OPT_FORMAT = CLI_OPT_FIRST_PRIVATE, OPT_ROW_GROUP };

enum export_fmt { FMT_JSON, FMT_PERFETTO, FMT_PARQUET };

struct export_opts {
    enum export_fmt fmt;
    unsigned long row_group_rows;       /* 0: the writer's default */
};

#define EXPORT_ROW_GROUP_MAX (1ul << 26)

static int export_opt(struct cli_env *env, void *arg, int opt, const char *val)
{
    struct export_opts *o = arg;
    enum export_fmt *fmt = &o->fmt;
    if (opt == OPT_ROW_GROUP) {
        char *end;
        errno = 0;
        unsigned long n = strtoul(val, &end, 10);
        if (errno || *end || end == val || val[0] == '-' || n == 0 || n > EXPORT_ROW_GROUP_MAX)
            return cli_usage_error(env, "--row-group-rows: '%s' is not a number of rows "
                                   "from 1 to %lu", val, EXPORT_ROW_GROUP_MAX), -1;
        o->row_group_rows = n;
        return 0;
    }
    if (opt != OPT_FORMAT)
        return cli_usage_error(env, "unknown option"), -1;
    if (strcmp(val, "json") == 0)
        *fmt = FMT_JSON;
    else if (strcmp(val, "perfetto") == 0)
        *fmt = FMT_PERFETTO;
    else if (strcmp(val, "parquet") == 0)
        *fmt = FMT_PARQUET;
    else
        return cli_usage_error(env, "--format: '%s' is not json, perfetto or parquet", val), -1;
    return 0;
}

/* --format parquet: every table of d9 sql into -o DIR. */
static int export_parquet(struct cli_env *env, struct q_store *s, const struct cli_args *a,
                          const struct export_opts *o)
{
    struct cli_parquet_req rq = { .dir = a->output, .pid = a->pid, .log = stderr,
                                  .opts.row_group_rows = o->row_group_rows };
    q_store_window_resolve(s, &a->win, a->pid, &rq.from, &rq.to);
    struct cli_parquet_stats st;
    char why[512];
    int r = cli_parquet_export(s, &rq, &st, why, sizeof why);
    if (r < 0)
        return cli_fail(env, "%s", why);
    fprintf(stderr, "d9 export: %u tables, %" PRIu64 " rows, %" PRIu64 " bytes of Parquet in %s\n",
            st.tables, st.rows, st.bytes, a->output);
    if (st.bad_blocks || st.missing_segments)
        cli_warn(env, "%" PRIu64 " corrupt blocks and %" PRIu64 " unreadable segments skipped",
                 st.bad_blocks, st.missing_segments);
    return CLI_EXIT_OK;
}

CLI_DECLARE_CMD(export)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP, CLI_OPTE_STORE, CLI_OPTE_PID, CLI_OPTE_WINDOW, CLI_OPTE_OUTPUT,
        { "format", 1, NULL, OPT_FORMAT }, { "row-group-rows", 1, NULL, OPT_ROW_GROUP },
        CLI_OPTE_NO_FLUSH, CLI_OPTE_END,
    };
    struct cli_args a;
    struct q_store *s = NULL;
    struct export_opts eo = { .fmt = FMT_JSON };
    cli_args_init(&a);
    int rc = cli_getopt(env, &a, argc, argv, opts, usage, export_opt, &eo);
    if (rc != 0)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    const enum export_fmt fmt = eo.fmt;
    if (fmt != FMT_PARQUET && eo.row_group_rows)
        return cli_usage_error(env, "--row-group-rows is for --format parquet");
    if (fmt == FMT_PARQUET && (!a.output || strcmp(a.output, "-") == 0))
        return cli_usage_error(env, "--format parquet writes a directory: give it with -o DIR");
    bool perfetto = fmt == FMT_PERFETTO;
    if (!a.no_flush)
        cli_live_refresh(env);
    rc = cli_open_store(env, &s);
    if (!s)
        return rc;
    if (fmt == FMT_PARQUET) {
        rc = export_parquet(env, s, &a, &eo);
        q_store_close(s);
        return rc;
    }

    FILE *out = stdout;
    char tmp[CLI_PATH_MAX + 32] = "";
    bool to_file = a.output && strcmp(a.output, "-") != 0;
    if (to_file) {
        if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", a.output) >= (int)sizeof tmp) {
            q_store_close(s);
            return cli_fail(env, "-o %s: path too long", a.output);
        }
        int fd = mkstemp(tmp);
        if (fd >= 0) {
            /* mkstemp makes 0600; give FILE the mode a plain create would */
            mode_t um = umask(0);
            umask(um);
            fchmod(fd, 0666 & ~um);
        }
        if (fd < 0 || !(out = fdopen(fd, "w"))) {
            int e = errno;
            if (fd >= 0)
                close(fd);
            q_store_close(s);
            return cli_fail(env, "-o %s: cannot create: %s", a.output, strerror(e));
        }
    }
    struct exp_json *x = NULL;
    struct exp_perfetto *px = NULL;
    struct q_sym *sym = NULL;
    if (q_sym_new(&sym, s) < 0 ||
        (perfetto ? exp_perfetto_begin(&px, out, sym) < 0 : exp_json_begin(&x, out, sym) < 0)) {
        if (to_file) {
            fclose(out);
            unlink(tmp);
        }
        q_sym_free(sym);
        q_store_close(s);
        return cli_fail(env, "out of memory");
    }
    struct q_filter f = {
        .pid = a.pid,
        /* off-CPU stacks are for d9 flame --off-cpu */
        .types = ~(1u << D9_REC_SCHED_SWITCH | 1u << D9_REC_PAD),
        .gaps = true,               /* never pair a poll across a block not read */
    };
    q_store_window_resolve(s, &a.win, a.pid, &f.from, &f.to);
    /* pass 1: the memory maps that name the window's CPU samples */
    int r = q_sym_load(sym, a.pid, f.from, f.to, "d9 export");
    struct q_scan_stats st;
    memset(&st, 0, sizeof st);
    if (r >= 0)
        r = perfetto ? q_scan(s, &f, on_record_perfetto, px, &st, "d9 export")
                     : q_scan(s, &f, on_record, x, &st, "d9 export");
    struct exp_json_stats es = { 0 };
    struct exp_perfetto_stats ps = { 0 };
    /* polls still open end at their process's last record (q_pair_end_open) */
    int fr = perfetto ? exp_perfetto_finish(px, s, f.to, &ps) : exp_json_finish(x, s, f.to, &es);
    if (to_file) {
        if (fclose(out) != 0 && fr == 0)
            fr = -EIO;
    } else {
        fflush(stdout);
    }
    if (r < 0 || fr < 0) {
        if (to_file)
            unlink(tmp);
        rc = r < 0 ? cli_fail(env, "%s: scan failed (error %d)", env->store, r)
                   : cli_fail(env, "%s: write error", to_file ? a.output : "standard output");
    } else if (to_file && rename(tmp, a.output) < 0) {
        int e = errno;
        unlink(tmp);
        rc = cli_fail(env, "-o %s: %s", a.output, strerror(e));
    } else {
        if (st.records == 0) {
            char w[160];
            fprintf(stderr, "d9 export: no records in %s; wrote an empty trace\n",
                    cli_window_text(&a.win, q_store_live(s), w, sizeof w));
        } else if (perfetto) {
            fprintf(stderr, "d9 export: %" PRIu64 " records -> %" PRIu64 " packets, %" PRIu64
                    " bytes (%" PRIu64 " polls, %" PRIu64 " parked, %" PRIu64 " instants, %"
                    PRIu64 " counters, %" PRIu64 " samples, %" PRIu64 " wake flows)%s%s\n",
                    st.records, ps.packets, ps.bytes, ps.polls, ps.parks, ps.instants,
                    ps.counters, ps.samples, ps.flows, to_file ? " in " : "",
                    to_file ? a.output : "");
        } else {
            fprintf(stderr, "d9 export: %" PRIu64 " records -> %" PRIu64 " trace events (%" PRIu64
                    " polls, %" PRIu64 " parked, %" PRIu64 " instants, %" PRIu64 " counters, %" PRIu64
                    " wake flows, %" PRIu64 " CPU samples)%s%s\n",
                    st.records, es.events, es.polls, es.parks, es.instants, es.counters,
                    es.flows, es.samples,
                    to_file ? " in " : "", to_file ? a.output : "");
        }
        if (st.bad_blocks || st.missing_segments)
            cli_warn(env, "%" PRIu64 " corrupt blocks and %" PRIu64 " unreadable segments skipped",
                     st.bad_blocks, st.missing_segments);
    }
    q_sym_free(sym);
    q_store_close(s);
    return rc;
}
