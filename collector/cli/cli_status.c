/*
 * cli_status.c — `d9 status`: the running collector's view, asked live over
 * the control endpoint (d9.StatusRequest): collector totals, then per
 * traced process its state, records, bytes, lag and lost, and with
 * --rings every ring (thread) with its lag and drops.
 *
 * Called by main.c. Uses ctl_client_request (collector/ctl/ctl_client.h); never touches the
 * store. Unreachable collector: one line naming the endpoint, exit 1.
 * Never waits longer than CLI_TIMEOUT_MS per step.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "collector/cli/cli.h"
#include "collector/ctl/ctl_client.h"
#include "shm/d9_abi.h"

static const char usage[] =
"NAME\n"
"    d9 status - ask the running collector what it is doing\n"
"\n"
"SYNOPSIS\n"
"    d9 [--endpoint EP] status [--pid PID] [--rings] [--format text|jsonl]\n"
"\n"
"DESCRIPTION\n"
"    Sends a StatusRequest to d9collectd and prints its reply: version,\n"
"    store, uptime, records and bytes written, records lost by rings, store\n"
"    size and segments, quarantined rings, rejected regions, write errors,\n"
"    timestamps and drop counters of traced processes that could not be\n"
"    true, control connections (open, refused, closed by the collector),\n"
"    shipping (--ship: shipped, backlog, refused, failed attempts) and its\n"
"    Parquet companions (--ship-parquet: files uploaded, segments staged,\n"
"    segments shipped without them), the flight recorder (--retain\n"
"    triggered: segments settled, windows cut, bytes kept and dropped);\n"
"    then one line per traced process: PID, COMM, STATE, RECORDS, BYTES\n"
"    written, LAG (bytes in its rings not drained yet), LOST, rings in use,\n"
"    threads without a ring (untraced) and the CPU sampler in use.\n"
"    The collector knows who asks (the kernel's credentials of the ipc://\n"
"    connection): root sees every traced process, any other user only its\n"
"    own (a 'view' line says so); the totals are the collector's.\n"
"    The collector must answer within 2 seconds.\n"
"\n"
"OPTIONS\n"
"    --pid PID       only this process.\n"
"    --rings         also one line per ring: index, tid, thread, state, lag,\n"
"                    lost, quarantined.\n"
"    --format FMT    text (default) or jsonl (one object: the whole status).\n"
CLI_HELP_ENDPOINT
"    -h, --help      this help.\n"
"\n"
"EXAMPLES\n"
"    d9 status\n"
"    d9 status --pid 1234 --rings\n"
"    DIAL9_COLLECTOR=ipc:///tmp/t/c.sock d9 status\n"
"\n"
"EXIT STATUS\n"
"    0   the collector answered\n"
"    1   the collector is not reachable, did not answer in time, or failed\n"
"    2   bad usage\n";

#define STATUS_OPT_RINGS CLI_OPT_FIRST_PRIVATE

static const char *ring_state(uint32_t s)
{
    switch (s) {
    case D9_RING_FREE: return "free";
    case D9_RING_CLAIMING: return "claiming";
    case D9_RING_OWNED: return "owned";
    case D9_RING_RELEASED: return "released";
    default: return "?";
    }
}

static int priv(struct cli_env *env, void *arg, int opt, const char *val)
{
    (void)env;
    (void)val;
    if (opt != STATUS_OPT_RINGS)
        return -1;
    *(bool *)arg = true;
    return 0;
}

static void jstr(const char *k, const char *v, bool comma)
{
    printf("%s\"%s\":", comma ? "," : "", k);
    q_text_json(stdout, v ? v : "", v ? strlen(v) : 0);
}

static void print_json(const D9__CollectorStatus *cs, bool rings)
{
    printf("{\"pid\":%" PRIu32, cs->pid);
    jstr("version", cs->version, true);
    jstr("store", cs->store, true);
    printf(",\"uptime_ns\":%" PRIu64 ",\"records\":%" PRIu64 ",\"bytes_written\":%" PRIu64
           ",\"lost\":%" PRIu64 ",\"segments\":%" PRIu64 ",\"store_bytes\":%" PRIu64
           ",\"quarantined_rings\":%" PRIu64 ",\"rejected_regions\":%" PRIu64
           ",\"write_errors\":%" PRIu64 ",\"dropped_records\":%" PRIu64,
           cs->uptime_ns, cs->records, cs->bytes_written, cs->lost, cs->segments,
           cs->store_bytes, cs->quarantined_rings, cs->rejected_regions, cs->write_errors,
           cs->dropped_records);
    printf(",\"bad_stamps\":%" PRIu64 ",\"bad_counters\":%" PRIu64 ",\"malformed_messages\":%"
           PRIu64 ",\"ctl_connections\":%" PRIu64 ",\"ctl_refused\":%" PRIu64 ",\"ctl_closed\":%"
           PRIu64, cs->bad_stamps, cs->bad_counters, cs->malformed_messages, cs->ctl_connections,
           cs->ctl_refused, cs->ctl_closed);
    printf(",\"writes_failing\":%s", cs->writes_failing ? "true" : "false");
    printf(",\"own_only\":%s,\"caller_uid\":%" PRIu32 ",\"caller_unknown\":%s",
           cs->own_only ? "true" : "false", cs->caller_uid, cs->caller_unknown ? "true" : "false");
    jstr("write_error", cs->writes_failing ? cs->write_error : "", true);
    if (cs->ship_url && *cs->ship_url) {
        fputs(",\"ship\":{", stdout);
        jstr("url", cs->ship_url, false);
        printf(",\"backlog\":%" PRIu64 ",\"backlog_bytes\":%" PRIu64 ",\"shipped\":%" PRIu64
               ",\"shipped_bytes\":%" PRIu64 ",\"failed\":%" PRIu64 ",\"failures\":%" PRIu64
               ",\"evicted_unshipped\":%" PRIu64 ",\"catching_up\":%s,\"waiting_for_drain\":%s", cs->ship_backlog,
               cs->ship_backlog_bytes, cs->ship_shipped, cs->ship_shipped_bytes, cs->ship_failed,
               cs->ship_failures, cs->ship_evicted_unshipped, cs->ship_catching_up ? "true" : "false",
               cs->ship_waiting_for_drain ? "true" : "false");
        if (cs->ship_parquet)
            printf(",\"parquet\":{\"staged\":%" PRIu64 ",\"staged_bytes\":%" PRIu64
                   ",\"segments\":%" PRIu64 ",\"uploaded\":%" PRIu64 ",\"skipped\":%" PRIu64
                   ",\"failed\":%" PRIu64 "}", cs->ship_pq_staged, cs->ship_pq_staged_bytes,
                   cs->ship_pq_segments, cs->ship_pq_uploaded, cs->ship_pq_skipped,
                   cs->ship_pq_failed);
        jstr("last_error", cs->ship_error, true);
        fputc('}', stdout);
    }
    if (cs->flight)
        printf(",\"flight\":{\"settled_segments\":%" PRIu64 ",\"windows_cut\":%" PRIu64
               ",\"kept_bytes\":%" PRIu64 ",\"dropped_bytes\":%" PRIu64 "}", cs->flight_settled,
               cs->flight_windows, cs->flight_kept_bytes, cs->flight_dropped_bytes);
    fputs(",\"processes\":[", stdout);
    for (size_t i = 0; i < cs->n_processes; i++) {
        const D9__ProcessStatus *p = cs->processes[i];
        printf("%s{\"pid\":%" PRIu32 ",\"uid\":%" PRIu32, i ? "," : "", p->pid, p->uid);
        jstr("comm", p->comm, true);
        jstr("exe", p->exe, true);
        jstr("state", p->state, true);
        jstr("sampler", p->sampler, true);
        printf(",\"records\":%" PRIu64 ",\"bytes_written\":%" PRIu64 ",\"lost\":%" PRIu64
               ",\"lag_bytes\":%" PRIu64 ",\"rings_in_use\":%" PRIu32
               ",\"threads_untraced\":%" PRIu32, p->records, p->bytes_written, p->lost,
               p->lag_bytes, p->rings_in_use, p->threads_untraced);
        printf(",\"bad_stamps\":%" PRIu64 ",\"bad_counters\":%" PRIu64, p->bad_stamps,
               p->bad_counters);
        if (rings) {
            fputs(",\"rings\":[", stdout);
            for (size_t j = 0; j < p->n_rings; j++) {
                const D9__RingStatus *r = p->rings[j];
                printf("%s{\"index\":%" PRIu32 ",\"tid\":%" PRIu32, j ? "," : "", r->index,
                       r->tid);
                jstr("thread_name", r->thread_name, true);
                printf(",\"state\":\"%s\",\"lag_bytes\":%" PRIu64 ",\"lost\":%" PRIu64
                       ",\"quarantined\":%s}", ring_state(r->state), r->lag_bytes, r->lost,
                       r->quarantined ? "true" : "false");
            }
            fputc(']', stdout);
        }
        fputc('}', stdout);
    }
    fputs("]}\n", stdout);
}

static void print_text(const D9__CollectorStatus *cs, bool rings)
{
    char b1[32], b2[32], d[32];
    printf("collector  pid %" PRIu32 ", version %s, up %s\n", cs->pid,
           cs->version && *cs->version ? cs->version : "?",
           cli_fmt_dur(cs->uptime_ns, d, sizeof d));
    printf("store      %s: %" PRIu64 " segments, %s\n", cs->store ? cs->store : "?",
           cs->segments, cli_fmt_bytes(cs->store_bytes, b1, sizeof b1));
    printf("written    %" PRIu64 " records, %s\n", cs->records,
           cli_fmt_bytes(cs->bytes_written, b2, sizeof b2));
    if (cs->writes_failing) {
        uint64_t waiting = 0;
        for (size_t i = 0; i < cs->n_processes; i++)
            waiting += cs->processes[i]->lag_bytes;
        printf("WRITES     FAILING: %s; %s wait in the rings (not persisted yet; full rings "
               "drop new records)\n", cs->write_error && *cs->write_error ? cs->write_error : "?",
               cli_fmt_bytes(waiting, d, sizeof d));
    }
    if (cs->ship_url && *cs->ship_url) {
        printf("shipping   to %s: %" PRIu64 " shipped (%s), backlog %" PRIu64 " (%s%s), %" PRIu64
               " refused, %" PRIu64 " failed attempts, %" PRIu64 " deleted unshipped\n",
               cs->ship_url, cs->ship_shipped, cli_fmt_bytes(cs->ship_shipped_bytes, b1, sizeof b1),
               cs->ship_backlog, cli_fmt_bytes(cs->ship_backlog_bytes, b2, sizeof b2),
               !cs->ship_backlog ? ""
               : cs->ship_catching_up ? ", catching up"
               : cs->ship_waiting_for_drain ? ", waiting: the drain is saturated"
               : ", uploading in idle CPU time",
               cs->ship_failed, cs->ship_failures, cs->ship_evicted_unshipped);
        if (cs->ship_parquet)
            printf("parquet    %" PRIu64 " files uploaded for %" PRIu64 " segments this run, %"
                   PRIu64 " segments staged (%s), %" PRIu64 " shipped without them (%" PRIu64
                   " over the cap, %" PRIu64 " failed exports)\n", cs->ship_pq_uploaded,
                   cs->ship_pq_segments, cs->ship_pq_staged,
                   cli_fmt_bytes(cs->ship_pq_staged_bytes, b1, sizeof b1),
                   cs->ship_pq_skipped + cs->ship_pq_failed, cs->ship_pq_skipped,
                   cs->ship_pq_failed);
        if (cs->ship_error && *cs->ship_error)
            printf("SHIP ERROR %s\n", cs->ship_error);
    }
    if (cs->flight)
        printf("flight     --retain triggered: %" PRIu64 " segments settled, %" PRIu64
               " windows cut (%s kept), %s dropped\n", cs->flight_settled, cs->flight_windows,
               cli_fmt_bytes(cs->flight_kept_bytes, b1, sizeof b1),
               cli_fmt_bytes(cs->flight_dropped_bytes, b2, sizeof b2));
    printf("lost       %" PRIu64 " records dropped by the agents (d9 ps: why), %" PRIu64
           " not persisted by the collector\n", cs->lost, cs->dropped_records);
    printf("problems   %" PRIu64 " quarantined rings, %" PRIu64 " rejected regions, %" PRIu64
           " write errors, %" PRIu64 " bad timestamps, %" PRIu64 " rings with impossible drop "
           "counters\n", cs->quarantined_rings, cs->rejected_regions, cs->write_errors,
           cs->bad_stamps, cs->bad_counters);
    printf("control    %" PRIu64 " connections, %" PRIu64 " refused, %" PRIu64 " closed by the "
           "collector (idle, slow or broken), %" PRIu64 " malformed messages\n",
           cs->ctl_connections, cs->ctl_refused, cs->ctl_closed, cs->malformed_messages);
    if (cs->caller_unknown)
        printf("view       no processes: the collector cannot tell who is asking (not an "
               "ipc:// endpoint)\n");
    else if (cs->own_only)
        printf("view       only the processes of uid %" PRIu32 " (root sees all)\n",
               cs->caller_uid);
    if (cs->n_processes == 0) {
        printf("no traced processes%s\n", cs->own_only ? " of yours" : "");
        return;
    }
    printf("\n%-8s %-16s %-11s %10s %10s %10s %8s %5s %8s %s\n", "PID", "COMM", "STATE",
           "RECORDS", "BYTES", "LAG", "LOST", "RINGS", "UNTRACED", "SAMPLER");
    for (size_t i = 0; i < cs->n_processes; i++) {
        const D9__ProcessStatus *p = cs->processes[i];
        char comm[17];
        snprintf(comm, sizeof comm, "%s", p->comm ? p->comm : "");
        printf("%-8" PRIu32 " ", p->pid);
        q_text_escaped(stdout, comm, strlen(comm), false);
        printf("%*s %-11s %10" PRIu64 " %10s %10s %8" PRIu64 " %5" PRIu32 " %8" PRIu32 " %s\n",
               16 - (int)strlen(comm), "", p->state ? p->state : "?", p->records,
               cli_fmt_bytes(p->bytes_written, b1, sizeof b1),
               cli_fmt_bytes(p->lag_bytes, b2, sizeof b2), p->lost, p->rings_in_use,
               p->threads_untraced, p->sampler && *p->sampler ? p->sampler : "-");
        if (!rings)
            continue;
        for (size_t j = 0; j < p->n_rings; j++) {
            const D9__RingStatus *r = p->rings[j];
            char name[17];
            snprintf(name, sizeof name, "%s", r->thread_name ? r->thread_name : "");
            printf("    ring %-4" PRIu32 " tid %-8" PRIu32 " %-16s %-9s lag %-10s lost %" PRIu64
                   "%s\n", r->index, r->tid, name, ring_state(r->state),
                   cli_fmt_bytes(r->lag_bytes, b1, sizeof b1), r->lost,
                   r->quarantined ? " QUARANTINED" : "");
        }
    }
}

/* Shared with flush: a readable reason for a ctl_client_request failure. */
CLI_DECLARE_CMD(status)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP, CLI_OPTE_ENDPOINT, CLI_OPTE_STORE, CLI_OPTE_PID, CLI_OPTE_FORMAT,
        { "rings", 0, NULL, STATUS_OPT_RINGS }, CLI_OPTE_END,
    };
    struct cli_args a;
    bool rings = false;
    cli_args_init(&a);
    int rc = cli_getopt(env, &a, argc, argv, opts, usage, priv, &rings);
    if (rc != 0)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    D9__StatusRequest sr = D9__STATUS_REQUEST__INIT;
    sr.pid = a.pid;
    D9__Request req = D9__REQUEST__INIT;
    req.body_case = D9__REQUEST__BODY_STATUS;
    req.status = &sr;
    D9__Reply *rep = NULL;
    int r = ctl_client_request(env->endpoint, &req, &rep, CLI_TIMEOUT_MS);
    if (r < 0)
        return cli_fail(env, "cannot reach the collector at %s: %s", env->endpoint, cli_ctl_why(r));
    if (rep->error != 0) {
        rc = cli_fail(env, "the collector at %s answered: %s", env->endpoint,
                      rep->message && *rep->message ? rep->message : strerror(-rep->error));
    } else if (!rep->status) {
        rc = cli_fail(env, "the collector at %s sent a reply without a status", env->endpoint);
    } else if (a.format == CLI_FMT_JSONL) {
        print_json(rep->status, rings);
    } else {
        print_text(rep->status, rings);
    }
    ctl_client_reply_free(rep);
    return rc;
}
