/*
 * cli_ps.c — `d9 ps`: the processes a store has seen, from the index
 * (processes table): pid, comm, state (alive/exited/crashed/quarantined),
 * first/last seen, records, lost, segments and bytes.
 *
 * Called by main.c. Reads the index only (no segment file is opened).
 * Never writes the store; strings from the index are escaped on output.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "collector/cli/cli.h"
#include "collector/cli/cli_store.h"

static const char usage[] =
"NAME\n"
"    d9 ps - list the processes recorded in the store\n"
"\n"
"SYNOPSIS\n"
"    d9 [--store DIR] ps [--pid PID] [--since DUR | --from NS --to NS | --last]\n"
"                        [--format text|jsonl]\n"
"\n"
"DESCRIPTION\n"
"    One line per traced process (a pid reused later is a separate process):\n"
"    PID, COMM, STATE (alive, exited, crashed, quarantined; exit status or\n"
"    signal in parentheses when known), first and last record seen (local\n"
"    wall-clock time when the store knows its boot time), RECORDS stored,\n"
"    LOST (dropped by full rings), segment files and their total size.\n"
"    With a window, only processes active during it are listed.\n"
"\n"
"OPTIONS\n"
"    --pid PID       only this pid.\n"
"    --format FMT    text (default, aligned columns) or jsonl (one JSON\n"
"                    object per process).\n"
"\n"
CLI_HELP_WINDOW "\n" CLI_HELP_COMMON "\n"
"EXAMPLES\n"
"    d9 ps\n"
"    d9 ps --since 10m --format jsonl\n"
"\n"
CLI_HELP_EXIT;

struct ps_ctx {
    struct cli_args *a;
    int64_t boot;
    bool wall;
    unsigned rows;
};

static void state_text(const struct cli_proc_row *r, char *buf, size_t cap)
{
    if (r->has_exit_code)
        snprintf(buf, cap, "%s(%" PRId64 ")", r->state, r->exit_code);
    else
        snprintf(buf, cap, "%s", *r->state ? r->state : "?");
}

static int ps_row(void *arg, const struct cli_proc_row *r)
{
    struct ps_ctx *c = arg;
    char st[48], t0[48], t1[48], dur[32], b[32];
    state_text(r, st, sizeof st);
    if (r->first_ns)
        cli_fmt_time(r->first_ns, c->boot, c->wall, 3, true, t0, sizeof t0);
    else
        snprintf(t0, sizeof t0, "-");       /* unknown */
    if (r->last_ns)
        cli_fmt_time(r->last_ns, c->boot, c->wall, 3, true, t1, sizeof t1);
    else
        snprintf(t1, sizeof t1, "-");
    uint64_t span = r->last_ns > r->first_ns ? r->last_ns - r->first_ns : 0;
    if (c->a->format == CLI_FMT_JSONL) {
        printf("{\"pid\":%" PRIu32 ",\"start_time\":%" PRIu64 ",\"uid\":%" PRIu32 ",\"comm\":",
               r->pid, r->start_time, r->uid);
        cli_json_str(stdout, r->comm, strlen(r->comm));
        fputs(",\"exe\":", stdout);
        cli_json_str(stdout, r->exe, strlen(r->exe));
        fputs(",\"state\":", stdout);
        cli_json_str(stdout, r->state, strlen(r->state));
        if (r->has_exit_code)
            printf(",\"exit_code\":%" PRId64, r->exit_code);
        printf(",\"first_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64 ",\"records\":%" PRIu64
               ",\"lost\":%" PRIu64 ",\"segments\":%" PRIu64 ",\"bytes\":%" PRIu64 "}\n",
               r->first_ns, r->last_ns, r->records, r->lost, r->segments, r->bytes);
    } else {
        if (c->rows == 0)
            printf("%-8s %-16s %-13s %-23s %-23s %9s %10s %8s %4s %10s\n", "PID", "COMM",
                   "STATE", "FIRST SEEN", "LAST SEEN", "SPAN", "RECORDS", "LOST", "SEGS",
                   "BYTES");
        printf("%-8" PRIu32 " ", r->pid);
        char comm[17];
        snprintf(comm, sizeof comm, "%s", r->comm);
        cli_text_str(stdout, comm, strlen(comm), false);
        printf("%*s %-13s %-23s %-23s %9s %10" PRIu64 " %8" PRIu64 " %4" PRIu64 " %10s\n",
               16 - (int)strlen(comm), "", st, t0, t1,
               cli_fmt_dur(span, dur, sizeof dur), r->records, r->lost, r->segments,
               cli_fmt_bytes(r->bytes, b, sizeof b));
    }
    c->rows++;
    return 0;
}

CLI_DECLARE_CMD(ps)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP, CLI_OPTE_STORE, CLI_OPTE_PID, CLI_OPTE_WINDOW, CLI_OPTE_FORMAT,
        CLI_OPTE_END,
    };
    struct cli_args a;
    struct cli_store *s;
    int rc = cli_begin(env, &a, argc, argv, opts, usage, &s);
    if (!s)
        return rc;
    struct ps_ctx c = { .a = &a };
    c.wall = cli_store_wall(s, &c.boot);
    uint64_t from, to;
    cli_store_window_resolve(s, &a.win, a.pid, &from, &to);
    int n = cli_store_processes(s, a.pid, from, to, ps_row, &c);
    if (n < 0) {
        rc = cli_fail(env, "%s: cannot query the index (error %d)", env->store, n);
    } else if (n == 0) {
        char w[128];
        fprintf(stderr, "d9 ps: no processes%s in %s\n", a.pid ? " with that pid" : "",
                cli_window_text(&a.win, cli_store_live(s), w, sizeof w));
    }
    cli_store_close(s);
    return rc;
}
