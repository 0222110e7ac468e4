/*
 * cli_segments.c — `d9 segments`: the segment files of a store from the
 * index: id, pid, time range, bytes, records, lost, per-type counts, path.
 *
 * Called by main.c. Reads the index only. Never opens or writes segment
 * files; paths from the index are printed escaped.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "collector/cli/cli.h"
#include "collector/query/q_store.h"
#include "shm/record.h"

static const char usage[] =
"NAME\n"
"    d9 segments - list the segment files of the store\n"
"\n"
"SYNOPSIS\n"
"    d9 [--store DIR] segments [--pid PID] [--since DUR | --from NS --to NS | --last]\n"
"                              [--format text|jsonl]\n"
"\n"
"DESCRIPTION\n"
"    One line per sealed, indexed segment overlapping the window, oldest\n"
"    first: ID, PID, first and last record time, SPAN, BYTES (file size),\n"
"    RECORDS, LOST (records dropped before reaching it, any cause) and PATH\n"
"    (relative to the store). jsonl adds the per-type counts of the\n"
"    program's records (\"counts\"; custom: its own custom events) and\n"
"    \"maps\", the collector's memory-map records (d9.map, used to name\n"
"    stack frames): RECORDS = the sum of the counts + maps.\n"
"    Data the collector has not sealed yet is not listed: run 'd9 flush'.\n"
"\n"
"OPTIONS\n"
"    --pid PID       only segments of this pid.\n"
"    --format FMT    text (default) or jsonl.\n"
"\n"
CLI_HELP_WINDOW "\n" CLI_HELP_COMMON "\n"
"EXAMPLES\n"
"    d9 segments --pid 1234\n"
"    d9 segments --since 1h --format jsonl\n"
"\n"
CLI_HELP_EXIT;

struct seg_ctx {
    struct cli_args *a;
    int64_t boot;
    bool wall;
    unsigned rows;
    uint64_t bytes, records, lost;
};

static int seg_row(void *arg, const struct idx_read_segment *r)
{
    struct seg_ctx *c = arg;
    char t0[48], t1[48], dur[32], b[32];
    q_text_time(r->t_min, c->boot, c->wall, 3, true, t0, sizeof t0);
    q_text_time(r->t_max, c->boot, c->wall, 3, true, t1, sizeof t1);
    if (c->a->format == CLI_FMT_JSONL) {
        printf("{\"id\":%" PRIu64 ",\"pid\":%" PRIu32 ",\"comm\":", r->id, r->pid);
        q_text_json(stdout, r->comm, strlen(r->comm));
        fputs(",\"path\":", stdout);
        q_text_json(stdout, r->path, strlen(r->path));
        printf(",\"t_min\":%" PRIu64 ",\"t_max\":%" PRIu64 ",\"bytes\":%" PRIu64
               ",\"records\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"counts\":{",
               r->t_min, r->t_max, r->bytes, r->records, r->lost);
        for (int t = 1; t < D9_REC_TYPE_COUNT; t++)
            printf("%s\"%s\":%" PRIu64, t > 1 ? "," : "", shm_record_type_name((uint16_t)t),
                   r->counts[t]);
        printf("},\"maps\":%" PRIu64 "}\n", r->maps);
    } else {
        if (c->rows == 0)
            printf("%-6s %-8s %-23s %-23s %9s %10s %10s %8s  %s\n", "ID", "PID", "FIRST",
                   "LAST", "SPAN", "BYTES", "RECORDS", "LOST", "PATH");
        printf("%-6" PRIu64 " %-8" PRIu32 " %-23s %-23s %9s %10s %10" PRIu64 " %8" PRIu64 "  ",
               r->id, r->pid, t0, t1,
               cli_fmt_dur(r->t_max > r->t_min ? r->t_max - r->t_min : 0, dur, sizeof dur),
               cli_fmt_bytes(r->bytes, b, sizeof b), r->records, r->lost);
        q_text_escaped(stdout, r->path, strlen(r->path), false);
        fputc('\n', stdout);
    }
    c->rows++;
    c->bytes += r->bytes;
    c->records += r->records;
    c->lost += r->lost;
    return 0;
}

CLI_DECLARE_CMD(segments)
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
    struct seg_ctx c = { .a = &a };
    c.wall = q_store_wall(s, &c.boot);
    uint64_t from, to;
    q_store_window_resolve(s, &a.win, a.pid, &from, &to);
    int n = q_store_segments(s, a.pid, from, to, seg_row, &c);
    char w[128], b[32];
    if (n < 0) {
        rc = cli_fail(env, "%s: cannot query the index (error %d)", env->store, n);
    } else if (n == 0) {
        fprintf(stderr, "d9 segments: no segments%s in %s (unsealed data: run 'd9 flush')\n",
                a.pid ? " for that pid" : "",
                cli_window_text(&a.win, q_store_live(s), w, sizeof w));
    } else if (a.format == CLI_FMT_TEXT) {
        printf("%u segments, %s, %" PRIu64 " records, %" PRIu64 " lost\n", c.rows,
               cli_fmt_bytes(c.bytes, b, sizeof b), c.records, c.lost);
    }
    q_store_close(s);
    return rc;
}
