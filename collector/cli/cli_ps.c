/*
 * cli_ps.c — `d9 ps`: the processes a store has seen, from the index
 * (processes table): pid, comm, state (alive/exited/crashed/exec/quarantined,
 * and "noloop", shown as "preloaded, no supported loop found"),
 * first/last seen, records, lost, segments and bytes.
 *
 * Called by main.c. Reads the index only (no segment file is opened).
 * Never writes the store; strings from the index are escaped on output.
 * Stored times are claims (segments written before the drain clamped
 * stamps, or a hostile writer): one the process cannot have recorded is
 * shown as '?' (null in jsonl), and so is a SPAN that ends before it starts.
 */
#include <getopt.h>
#include <inttypes.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/cli/cli.h"
#include "collector/cli/cli_live.h"
#include "collector/query/q_store.h"

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
"    PID, COMM, STATE (alive, exited(CODE), crashed(SIGNAL), exec (it called\n"
"    execve: the traced program ended, the pid runs another), quarantined,\n"
"    no loop: a note under the table says \"preloaded, no supported loop\n"
"    found\" (libd9preload.so with DIAL9_LOG set found no loop it traces:\n"
"    nothing recorded; jsonl state \"noloop\");\n"
"    the exit code or the signal in parentheses when known), FIRST SEEN and\n"
"    LAST SEEN: the first and last record of the process's threads (local\n"
"    wall-clock time when the store knows its boot time), SPAN between them,\n"
"    RECORDS stored, LOST (records dropped, whatever the cause; a\n"
"    \"why records were lost\" list after the table says which), segment\n"
"    files and their total size.\n"
"    A time the process cannot have recorded (before it started, after now,\n"
"    at or before boot) is shown as '?' (null in jsonl), and so is a SPAN\n"
"    that would end before it starts: such times come from stores written\n"
"    by older collectors or from damaged or forged files (d9 fsck).\n"
"    With a window, only processes active during it are listed.\n"
"\n"
"OPTIONS\n"
"    --pid PID       only this pid.\n"
"    --format FMT    text (default, aligned columns) or jsonl (one JSON\n"
"                    object per process).\n"
CLI_HELP_NO_FLUSH
"\n"
CLI_HELP_WINDOW "\n" CLI_HELP_COMMON "\n"
"EXAMPLES\n"
"    d9 ps\n"
"    d9 ps --since 10m --format jsonl\n"
"\n"
CLI_HELP_EXIT;

/* How far after this reader's clock a stored stamp may lie (the
 * collector's clock read and calibration error, with room to spare). */
#define PS_TS_SLACK_NS 1000000000ull

struct ps_note {                        /* lines printed under the table */
    char *text;
    size_t len, cap;
};

struct ps_ctx {
    struct cli_args *a;
    struct q_store *s;
    struct ps_note why;                 /* text: one "why lost" line per process */
    struct ps_note noloop;              /* text: one line per process without a loop */
    int64_t boot;
    bool wall;
    bool live;                          /* the store is of this boot */
    uint64_t now_mono, now_wall;        /* when ps started */
    uint64_t suspended;                 /* CLOCK_BOOTTIME - CLOCK_MONOTONIC now */
    uint64_t tick;                      /* ns per clock tick (process start times) */
    unsigned rows;
};

static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    if (clock_gettime(c, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A stored time the process can have recorded: not 0 (unknown), a
 * monotonic time after boot (below 2^63: no negative INT), and the drain's
 * bounds (drain.h) as far as this reader can know them: on a store of this
 * boot not before the process started (its start in clock ticks, less a
 * tick, a millisecond and the time the host was suspended) nor after now;
 * on any store whose boot wall time is known, not after the wall clock. */
static bool ps_time_ok(const struct ps_ctx *c, const struct idx_read_process *r, uint64_t t)
{
    if (t == 0 || t > (uint64_t)INT64_MAX)
        return false;
    if (c->live) {
        if (t > c->now_mono + PS_TS_SLACK_NS)
            return false;
        if (c->tick && r->start_time && r->start_time <= UINT64_MAX / c->tick) {
            uint64_t start = r->start_time * c->tick, margin = c->suspended + c->tick + 1000000u;
            if (start > margin && t < start - margin)
                return false;
        }
    }
    if (c->wall && c->now_wall) {
        int64_t w = c->boot + (int64_t)t;       /* both below 2^63 */
        if (w > 0 && (uint64_t)w > c->now_wall + PS_TS_SLACK_NS)
            return false;
    }
    return true;
}

/* Add a line to a note printed under the table (dropped when out of memory). */
static void note_add(struct ps_note *o, const char *line)
{
    size_t n = strlen(line);
    if (o->len + n + 1 > o->cap) {
        size_t cap = (o->cap + n + 1) * 2;
        char *nb = realloc(o->text, cap);
        if (!nb)
            return;
        o->text = nb;
        o->cap = cap;
    }
    memcpy(o->text + o->len, line, n + 1);
    o->len += n;
}

/* exited(CODE); crashed(SIGNAL): a crash's exit_code is the signal number */
static void state_text(const struct idx_read_process *r, char *buf, size_t cap)
{
    if (strcmp(r->state, "noloop") == 0) {
        snprintf(buf, cap, "no loop");      /* the note under the table says it whole */
        return;
    }
    const char *sig = NULL;
    if (r->has_exit_code && strcmp(r->state, "crashed") == 0 && r->exit_code > 0 &&
        r->exit_code < 65)
        sig = sigabbrev_np((int)r->exit_code);
    if (sig)
        snprintf(buf, cap, "%s(SIG%s)", r->state, sig);
    else if (r->has_exit_code)
        snprintf(buf, cap, "%s(%" PRId64 ")", r->state, r->exit_code);
    else
        snprintf(buf, cap, "%s", *r->state ? r->state : "?");
}

/* v, or null when it is impossible */
static void ps_json_u64(uint64_t v, bool impossible)
{
    if (impossible)
        fputs("null", stdout);
    else
        printf("%" PRIu64, v);
}

static int ps_row(void *arg, const struct idx_read_process *r)
{
    struct ps_ctx *c = arg;
    char st[48], t0[48], t1[48], dur[32], b[32];
    state_text(r, st, sizeof st);
    /* the records' range; the collector's view (adoption, end noticed) only
     * for a process that recorded nothing */
    uint64_t first = r->rec_first_ns ? r->rec_first_ns : r->first_ns;
    uint64_t last = r->rec_last_ns ? r->rec_last_ns : r->last_ns;
    bool first_ok = ps_time_ok(c, r, first), last_ok = ps_time_ok(c, r, last);
    if (first_ok)
        q_text_time(first, c->boot, c->wall, 3, true, t0, sizeof t0);
    else
        snprintf(t0, sizeof t0, "%s", first ? "?" : "-");   /* impossible; unknown */
    if (last_ok)
        q_text_time(last, c->boot, c->wall, 3, true, t1, sizeof t1);
    else
        snprintf(t1, sizeof t1, "%s", last ? "?" : "-");
    /* a span needs both ends, in order (one record: 0) */
    bool span_ok = first_ok && last_ok && last >= first;
    bool span_bad = first && last && !span_ok;      /* else unknown (0) or fine */
    uint64_t span = span_ok ? last - first : 0;
    struct idx_read_drops d = { 0 };
    char why[160] = "none";
    if ((r->lost || c->a->format == CLI_FMT_JSONL) && q_store_drops(c->s, r->id, 0, 0,
                                                                      UINT64_MAX, &d) == 0)
        q_store_drops_text(&d, why, sizeof why);
    if (c->a->format == CLI_FMT_JSONL) {
        printf("{\"pid\":%" PRIu32 ",\"start_time\":%" PRIu64 ",\"uid\":%" PRIu32 ",\"comm\":",
               r->pid, r->start_time, r->uid);
        q_text_json(stdout, r->comm, strlen(r->comm));
        fputs(",\"exe\":", stdout);
        q_text_json(stdout, r->exe, strlen(r->exe));
        fputs(",\"state\":", stdout);
        q_text_json(stdout, r->state, strlen(r->state));
        if (r->has_exit_code)
            printf(",\"exit_code\":%" PRId64, r->exit_code);
        fputs(",\"first_ns\":", stdout);
        ps_json_u64(first, first && !first_ok);
        fputs(",\"last_ns\":", stdout);
        ps_json_u64(last, last && !last_ok);
        fputs(",\"span_ns\":", stdout);
        ps_json_u64(span, span_bad);
        printf(",\"records\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"segments\":%" PRIu64
               ",\"bytes\":%" PRIu64, r->records, r->lost, r->segments, r->bytes);
        printf(",\"lost_full\":%" PRIu64 ",\"lost_mismatch\":%" PRIu64 ",\"lost_too_big\":%"
               PRIu64 ",\"lost_no_ring\":%" PRIu64 "}\n", d.full, d.mismatch, d.too_big,
               d.no_ring);
    } else {
        if (c->rows == 0)
            printf("%-8s %-6s %-16s %-13s %-23s %-23s %9s %10s %8s %4s %10s\n", "PID", "UID",
                   "COMM", "STATE", "FIRST SEEN", "LAST SEEN", "SPAN", "RECORDS", "LOST", "SEGS",
                   "BYTES");
        printf("%-8" PRIu32 " %-6" PRIu32 " ", r->pid, r->uid);
        char comm[17];
        snprintf(comm, sizeof comm, "%s", r->comm);
        q_text_escaped(stdout, comm, strlen(comm), false);
        printf("%*s %-13s %-23s %-23s %9s %10" PRIu64 " %8" PRIu64 " %4" PRIu64 " %10s\n",
               16 - (int)strlen(comm), "", st, t0, t1,
               span_bad ? "?" : cli_fmt_dur(span, dur, sizeof dur), r->records, r->lost, r->segments,
               cli_fmt_bytes(r->bytes, b, sizeof b));
        char line[256];
        if (r->lost || d.no_ring) {
            snprintf(line, sizeof line, "pid %" PRIu32 ": lost %" PRIu64 " (%s)\n", r->pid,
                     r->lost, why);
            note_add(&c->why, line);
        }
        if (strcmp(r->state, "noloop") == 0) {
            snprintf(line, sizeof line, "pid %" PRIu32 ": preloaded, no supported loop found "
                     "(nothing traced)\n", r->pid);
            note_add(&c->noloop, line);
        }
    }
    c->rows++;
    return 0;
}

CLI_DECLARE_CMD(ps)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP, CLI_OPTE_STORE, CLI_OPTE_PID, CLI_OPTE_WINDOW, CLI_OPTE_FORMAT,
        CLI_OPTE_NO_FLUSH, CLI_OPTE_END,
    };
    struct cli_args a;
    struct q_store *s;
    int rc = cli_begin(env, &a, argc, argv, opts, usage, &s);
    if (!s)
        return rc;
    struct ps_ctx c = { .a = &a, .s = s };
    c.wall = q_store_wall(s, &c.boot);
    c.live = q_store_live(s);
    c.now_mono = clock_ns(CLOCK_MONOTONIC);
    c.now_wall = clock_ns(CLOCK_REALTIME);
    uint64_t boottime = clock_ns(CLOCK_BOOTTIME);
    c.suspended = boottime > c.now_mono ? boottime - c.now_mono : 0;
    long hz = sysconf(_SC_CLK_TCK);
    c.tick = hz > 0 ? 1000000000u / (uint64_t)hz : 0;
    uint64_t from, to;
    q_store_window_resolve(s, &a.win, a.pid, &from, &to);
    int n = q_store_processes(s, a.pid, from, to, ps_row, &c);
    if (n < 0) {
        rc = cli_fail(env, "%s: cannot query the index (error %d)", env->store, n);
    } else if (n == 0) {
        char w[128];
        fprintf(stderr, "d9 ps: no processes%s in %s\n", a.pid ? " with that pid" : "",
                cli_window_text(&a.win, q_store_live(s), w, sizeof w));
    }
    if (c.why.len)
        printf("why records were lost:\n%s", c.why.text);
    if (c.noloop.len)
        fputs(c.noloop.text, stdout);
    free(c.why.text);
    free(c.noloop.text);
    q_store_close(s);
    return rc;
}
