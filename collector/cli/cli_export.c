/*
 * cli_export.c — `d9 export`: a window of records as Chrome trace-event
 * JSON (cli_trace.h) for chrome://tracing and the Perfetto UI.
 *
 * Called by main.c. Streams: scan (cli_store.c) -> cli_trace_record -> FILE.
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
#include "collector/cli/cli_trace.h"
#include "collector/cli/cli_store.h"

static const char usage[] =
"NAME\n"
"    d9 export - write a Chrome trace-event JSON file\n"
"\n"
"SYNOPSIS\n"
"    d9 [--store DIR] export [--pid PID] [--since DUR | --from NS --to NS | --last]\n"
"                            [-o FILE]\n"
"\n"
"DESCRIPTION\n"
"    Writes {\"traceEvents\":[...]} as loaded by chrome://tracing and\n"
"    https://ui.perfetto.dev: polls as complete (\"X\") slices named after\n"
"    the polled function, parked workers as \"parked\" slices, wakes,\n"
"    spawns, terminations and custom events as instants (\"i\") with their\n"
"    fields as args, queue depths as counters (\"C\"), and process/thread\n"
"    names (\"M\"). Each wake also starts a flow arrow (\"s\") that ends at\n"
"    the wakee's next poll (\"f\"). CPU samples are instants of category\n"
"    \"cpu\" on the sampled thread, named after the innermost frame, with\n"
"    the whole stack (outermost first, named as d9 flame names frames) in\n"
"    args. ts/dur are microseconds of CLOCK_MONOTONIC, so several\n"
"    processes of one host line up. Polls or parks still open at the end\n"
"    are closed at the last record and flagged \"unfinished\".\n"
"    Without --pid every process of the window is exported; large windows\n"
"    make large files (about 150 bytes per record).\n"
"\n"
"OPTIONS\n"
"    --pid PID           only this process.\n"
"    -o, --output FILE   write to FILE (replaced atomically when complete);\n"
"                        default or \"-\": standard output.\n"
"\n"
CLI_HELP_WINDOW "\n" CLI_HELP_COMMON "\n"
"EXAMPLES\n"
"    d9 export --pid 1234 --since 10s -o trace.json\n"
"    d9 export --last > all.json\n"
"\n"
CLI_HELP_EXIT;

static int on_map(void *arg, const struct cli_rec_src *src, const struct d9_rec_hdr *rec,
                  size_t len)
{
    return cli_trace_map(arg, src, rec, len);
}

static int on_record(void *arg, const struct cli_rec_src *src, const struct d9_rec_hdr *rec,
                     size_t len)
{
    return cli_trace_record(arg, src, rec, len);
}

CLI_DECLARE_CMD(export)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP, CLI_OPTE_STORE, CLI_OPTE_PID, CLI_OPTE_WINDOW, CLI_OPTE_OUTPUT,
        CLI_OPTE_END,
    };
    struct cli_args a;
    struct cli_store *s;
    int rc = cli_begin(env, &a, argc, argv, opts, usage, &s);
    if (!s)
        return rc;

    FILE *out = stdout;
    char tmp[CLI_PATH_MAX + 32] = "";
    bool to_file = a.output && strcmp(a.output, "-") != 0;
    if (to_file) {
        if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", a.output) >= (int)sizeof tmp) {
            cli_store_close(s);
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
            cli_store_close(s);
            return cli_fail(env, "-o %s: cannot create: %s", a.output, strerror(e));
        }
    }
    struct cli_export *x;
    if (cli_trace_begin(&x, out) < 0) {
        if (to_file) {
            fclose(out);
            unlink(tmp);
        }
        cli_store_close(s);
        return cli_fail(env, "out of memory");
    }
    /* pass 1: the memory maps that name the CPU samples' frames, whatever their time */
    struct cli_filter mf = { .from = 0, .to = UINT64_MAX, .pid = a.pid,
                             .types = 1u << D9_REC_CUSTOM };
    int r = cli_store_scan(s, &mf, on_map, x, NULL, "d9 export");
    struct cli_filter f = {
        .pid = a.pid,
        /* off-CPU stacks are for d9 flame --off-cpu */
        .types = ~(1u << D9_REC_SCHED_SWITCH | 1u << D9_REC_PAD),
    };
    cli_store_window_resolve(s, &a.win, a.pid, &f.from, &f.to);
    struct cli_scan_stats st;
    memset(&st, 0, sizeof st);
    if (r >= 0)
        r = cli_store_scan(s, &f, on_record, x, &st, "d9 export");
    struct cli_export_stats es;
    int fr = cli_trace_finish(x, st.t_last, &es);
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
                    cli_window_text(&a.win, cli_store_live(s), w, sizeof w));
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
    cli_store_close(s);
    return rc;
}
