/*
 * cli_events.c — `d9 events`: decoded records of a window, in time order,
 * filtered by pid, tid and record type, as text lines or JSON lines.
 *
 * Called by main.c. Streams through q_store.c's scan (bounded memory) and
 * q_decode.c; stops reading as soon as --limit records were printed.
 * Never buffers records: memory does not grow with the window.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "collector/cli/cli.h"
#include "collector/cli/cli_evtrig.h"
#include "collector/cli/cli_live.h"
#include "collector/query/q_decode.h"
#include "collector/query/q_scan.h"

static const char usage[] =
"NAME\n"
"    d9 events - print decoded records\n"
"\n"
"SYNOPSIS\n"
"    d9 [--store DIR] events [--pid PID] [--tid TID] [--type LIST]\n"
"                            [--since DUR | --from NS --to NS | --last]\n"
"                            [--event NAMES] [--format text|jsonl] [--limit N]\n"
"\n"
"DESCRIPTION\n"
"    Prints the records of the window in timestamp order (ring order per\n"
"    thread), one per line. Custom events are decoded by their\n"
"    schema: event name and fields by name. Runtime and location ids are\n"
"    shown by name (file:line function) from the segment's metadata.\n"
"\n"
"    text:  TIME PID/TID uid=UID TYPE [EVENT] key=value ...   (UID: the owner of\n"
"           the process; TIME is local wall clock\n"
"           when the store knows its boot time, else \"mono <seconds>\")\n"
"    jsonl: {\"ts_ns\":..,\"time\":..,\"pid\":..,\"tid\":..,\"uid\":..,\"comm\":..,\"thread\":..,\n"
"            \"type\":..,<fields>,\"event\":..,\"fields\":{<custom fields>}}\n"
"\n"
"OPTIONS\n"
"    --pid PID       only records of this process.\n"
"    --tid TID       only records of this thread.\n"
"    --type LIST     comma-separated record types: poll_start, poll_end, wake,\n"
"                    worker_park, worker_unpark, task_spawn, task_terminate,\n"
"                    queue_depth, custom, cpu_sample, sched_switch. Default: all.\n"
"    --event NAMES   comma-separated custom event (schema) names: only those\n"
"                    custom events (implies --type custom unless --type lists\n"
"                    other types too). Custom events named d9.* are written by the\n"
"                    collector itself (e.g. d9.map, the memory maps used by\n"
"                    d9 flame) and are shown only when --event names them.\n"
"                    Triggers that are not records (d9 trigger --pid, long\n"
"                    polls, crashes: rows of the index) are listed as\n"
"                    custom d9_trigger events of thread 0 with the fields\n"
"                    reason, source and verdict, in time order.\n"
"    --format FMT    text (default) or jsonl.\n"
"    --limit N       stop after N records (default: no limit).\n"
CLI_HELP_NO_FLUSH
"\n"
CLI_HELP_WINDOW "\n" CLI_HELP_COMMON "\n"
"EXAMPLES\n"
"    d9 events --pid 1234 --limit 50\n"
"    d9 events --type custom --since 1m --format jsonl | jq .fields\n"
"    d9 events --event request_done --limit 10\n"
"    d9 events --type poll_start,poll_end --tid 1240\n"
"\n"
CLI_HELP_EXIT;

#define EV_OPT_EVENT     CLI_OPT_FIRST_PRIVATE
#define EV_INTERNAL      "d9."      /* prefix of collector-written custom events */

struct ev_ctx {
    struct cli_args *a;
    const char *events;             /* --event list, NULL = all but internal */
    int64_t boot;
    bool wall;
    uint64_t printed;
    uint64_t undecodable;
    struct cli_evtrig trig;         /* index-only triggers, merged by time */
};

/* Is the custom event called name selected by the --event list? */
static bool event_wanted(const char *list, const char *name)
{
    if (!list)
        return !name || strncmp(name, EV_INTERNAL, strlen(EV_INTERNAL)) != 0;
    if (!name)
        return false;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *comma = strchr(p, ',');
        size_t k = comma ? (size_t)(comma - p) : strlen(p);
        if (k == n && memcmp(p, name, n) == 0)
            return true;
        if (!comma)
            break;
        p = comma + 1;
    }
    return false;
}

static int ev_priv(struct cli_env *env, void *arg, int opt, const char *val)
{
    struct ev_ctx *c = arg;
    if (opt != EV_OPT_EVENT)
        return -1;
    if (!val || !*val || strstr(val, ",,") || val[strlen(val) - 1] == ',') {
        cli_usage_error(env, "--event: expected comma-separated event names, got '%s'",
                        val ? val : "");
        return -1;
    }
    c->events = val;
    return 0;
}

static int ev_record(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                     size_t len)
{
    struct ev_ctx *c = arg;
    struct q_decoded d;
    uint64_t lim = c->a->limit;
    c->printed += cli_evtrig_flush(&c->trig, stdout, rec->ts, lim ? lim - c->printed : 0);
    if (lim && c->printed >= lim)
        return 1;
    if (q_decode(rec, len, src->meta, &d) < 0) {
        c->undecodable++;
        return 0;
    }
    if (d.type == D9_REC_CUSTOM && !event_wanted(c->events, d.event))
        return 0;
    struct q_line_ctx lc = {
        .pid = src->pid, .tid = src->tid, .uid = src->uid, .show_uid = true,
        .comm = src->comm, .thread = src->thread,
        .boot_realtime_ns = c->boot, .have_wall = c->wall,
    };
    if (c->a->format == CLI_FMT_JSONL)
        q_decode_print_json(stdout, &lc, &d);
    else
        q_decode_print_text(stdout, &lc, &d);
    if (ferror(stdout))
        return -EIO;
    c->printed++;
    return c->a->limit && c->printed >= c->a->limit ? 1 : 0;
}

CLI_DECLARE_CMD(events)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP, CLI_OPTE_STORE, CLI_OPTE_PID, CLI_OPTE_TID, CLI_OPTE_TYPE,
        CLI_OPTE_WINDOW, CLI_OPTE_FORMAT, CLI_OPTE_LIMIT,
        { "event", 1, NULL, EV_OPT_EVENT }, CLI_OPTE_NO_FLUSH, CLI_OPTE_END,
    };
    struct cli_args a;
    cli_args_init(&a);
    struct ev_ctx c = { .a = &a };
    int rc = cli_getopt(env, &a, argc, argv, opts, usage, ev_priv, &c);
    if (rc != 0)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (c.events && a.types == 0)
        a.types = 1u << D9_REC_CUSTOM;
    struct q_store *s;
    if (!a.no_flush)
        cli_live_refresh(env);
    if ((rc = cli_open_store(env, &s)) != CLI_EXIT_OK)
        return rc;
    c.wall = q_store_wall(s, &c.boot);
    struct q_filter f = { .pid = a.pid, .tid = a.tid, .types = a.types };
    q_store_window_resolve(s, &a.win, a.pid, &f.from, &f.to);
    c.trig.jsonl = a.format == CLI_FMT_JSONL;
    c.trig.boot = c.boot;
    c.trig.wall = c.wall;
    if (a.tid == 0 && (a.types == 0 || (a.types & (1u << D9_REC_CUSTOM))) &&
        event_wanted(c.events, "d9_trigger") &&
        cli_evtrig_load(&c.trig, s, a.pid, f.from, f.to) < 0)
        cli_warn(env, "the index's triggers could not be read: shell, poll and crash "
                 "triggers are not listed");
    struct q_scan_stats st;
    int r = q_scan(s, &f, ev_record, &c, &st, "d9 events");
    if (r == 0 && (!a.limit || c.printed < a.limit))
        c.printed += cli_evtrig_flush(&c.trig, stdout, UINT64_MAX,
                                      a.limit ? a.limit - c.printed : 0);
    cli_evtrig_free(&c.trig);
    fflush(stdout);
    if (r < 0) {
        rc = r == -EIO && ferror(stdout) ? cli_fail(env, "write error on standard output")
                                         : cli_fail(env, "%s: scan failed (error %d)",
                                                    env->store, r);
    } else if (c.printed == 0) {
        char w[160];
        fprintf(stderr, "d9 events: no records match in %s%s\n",
                cli_window_text(&a.win, q_store_live(s), w, sizeof w),
                q_store_unsealed_hint(s, a.pid));
    }
    if (st.lost && r >= 0)
        cli_warn_lost(s, env, a.pid, f.from, f.to, st.lost);
    if (st.bad_blocks || st.missing_segments)
        cli_warn(env, "%" PRIu64 " corrupt blocks and %" PRIu64 " unreadable segments skipped",
                 st.bad_blocks, st.missing_segments);
    q_store_close(s);
    return rc;
}
