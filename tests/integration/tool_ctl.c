/*
 * tool_ctl.c — talks to d9collectd's control socket for the integration
 * tests (the d9 CLI does the same for users).
 *
 *   tool_ctl ENDPOINT status [PID]   print CollectorStatus as key=value lines
 *   tool_ctl ENDPOINT flush [PID]    drain + seal now; exit 0 when the reply says 0
 *   tool_ctl ENDPOINT garbage        send malformed messages of every kind we
 *                                    can think of (random bytes, wrong frame
 *                                    counts, non-empty delimiter, empty
 *                                    Request, truncated protobuf, oversized)
 * Status lines: the collector totals, then per process "proc.PID.KEY=VALUE"
 * and per ring "ring.PID.INDEX.KEY=VALUE". Linked with libcol.a.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>
#include "collector/ctl/ctl_client.h"

#define TIMEOUT_MS 20000

static int send_frames(void *s, const void *const *parts, const size_t *lens, int n)
{
    for (int i = 0; i < n; i++)
        if (zmq_send(s, parts[i], lens[i], i + 1 < n ? ZMQ_SNDMORE : 0) < 0)
            return -errno;
    return 0;
}

static int garbage(const char *endpoint)
{
    void *ctx = zmq_ctx_new();
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 2000;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect(s, endpoint) != 0) {
        fprintf(stderr, "connect: %s\n", zmq_strerror(errno));
        return 1;
    }
    unsigned char rnd[512];
    srand(42);
    for (size_t i = 0; i < sizeof rnd; i++)
        rnd[i] = (unsigned char)rand();
    /* a valid Request, to be cut short */
    D9__Request req = D9__REQUEST__INIT;
    D9__Hello h = D9__HELLO__INIT;
    h.region_path = (char *)"../../etc/passwd";
    h.comm = (char *)"evil";
    req.body_case = D9__REQUEST__BODY_HELLO;
    req.hello = &h;
    uint8_t pk[256];
    size_t pl = d9__request__pack(&req, pk);
    D9__Request empty = D9__REQUEST__INIT;
    uint8_t ek[16];
    size_t el = d9__request__pack(&empty, ek);
    size_t big = 1u << 20;
    uint8_t *huge = calloc(1, big);
    int sent = 0;
    {   /* 1: random bytes, no delimiter */
        const void *p[] = { rnd }; size_t l[] = { sizeof rnd };
        sent += send_frames(s, p, l, 1) == 0;
    }
    {   /* 2: delimiter + random bytes */
        const void *p[] = { "", rnd }; size_t l[] = { 0, 100 };
        sent += send_frames(s, p, l, 2) == 0;
    }
    {   /* 3: non-empty delimiter */
        const void *p[] = { "x", pk }; size_t l[] = { 1, pl };
        sent += send_frames(s, p, l, 2) == 0;
    }
    {   /* 4: too many frames */
        const void *p[] = { "", pk, pk, pk }; size_t l[] = { 0, pl, pl, pl };
        sent += send_frames(s, p, l, 4) == 0;
    }
    {   /* 5: truncated protobuf */
        const void *p[] = { "", pk }; size_t l[] = { 0, pl / 2 };
        sent += send_frames(s, p, l, 2) == 0;
    }
    {   /* 6: a Request without a body */
        const void *p[] = { "", ek }; size_t l[] = { 0, el };
        sent += send_frames(s, p, l, 2) == 0;
    }
    {   /* 7: only a delimiter */
        const void *p[] = { "" }; size_t l[] = { 0 };
        sent += send_frames(s, p, l, 1) == 0;
    }
    {   /* 8: oversized (libzmq drops the connection) */
        const void *p[] = { "", huge }; size_t l[] = { 0, big };
        sent += send_frames(s, p, l, 2) == 0;
    }
    {   /* 9: a well-formed hello whose path escapes the shm dir */
        const void *p[] = { "", pk }; size_t l[] = { 0, pl };
        sent += send_frames(s, p, l, 2) == 0;
    }
    free(huge);
    zmq_close(s);
    zmq_ctx_term(ctx);
    printf("sent=%d\n", sent);
    return 0;
}

static void print_status(const D9__CollectorStatus *c)
{
    printf("pid=%" PRIu32 "\nversion=%s\nstore=%s\nrecords=%" PRIu64 "\nbytes_written=%" PRIu64
           "\nlost=%" PRIu64 "\nsegments=%" PRIu64 "\nstore_bytes=%" PRIu64
           "\nquarantined_rings=%" PRIu64 "\nrejected_regions=%" PRIu64 "\nwrite_errors=%" PRIu64
           "\ndropped_records=%" PRIu64 "\nmalformed_messages=%" PRIu64 "\nprocesses=%zu\n"
           "writes_failing=%d\nown_only=%d\ncaller_uid=%" PRIu32 "\ncaller_unknown=%d\n"
           "ctl_connections=%" PRIu64 "\nctl_refused=%" PRIu64 "\nctl_closed=%" PRIu64
           "\nbad_stamps=%" PRIu64 "\nbad_counters=%" PRIu64 "\n",
           c->pid, c->version, c->store, c->records, c->bytes_written, c->lost, c->segments,
           c->store_bytes, c->quarantined_rings, c->rejected_regions, c->write_errors,
           c->dropped_records, c->malformed_messages, c->n_processes, (int)c->writes_failing,
           (int)c->own_only, c->caller_uid, (int)c->caller_unknown, c->ctl_connections,
           c->ctl_refused, c->ctl_closed, c->bad_stamps, c->bad_counters);
    if (c->ship_url && *c->ship_url)
        printf("ship.url=%s\nship.backlog=%" PRIu64 "\nship.shipped=%" PRIu64 "\nship.failed=%"
               PRIu64 "\nship.failures=%" PRIu64 "\nship.evicted_unshipped=%" PRIu64
               "\nship.catching_up=%d\nship.waiting_for_drain=%d\nship.error=%s\n", c->ship_url,
               c->ship_backlog, c->ship_shipped, c->ship_failed, c->ship_failures,
               c->ship_evicted_unshipped, (int)c->ship_catching_up, (int)c->ship_waiting_for_drain,
               c->ship_error ? c->ship_error : "");
    for (size_t i = 0; i < c->n_processes; i++) {
        const D9__ProcessStatus *p = c->processes[i];
        printf("proc.%u.state=%s\nproc.%u.records=%" PRIu64 "\nproc.%u.lost=%" PRIu64
               "\nproc.%u.lag_bytes=%" PRIu64 "\nproc.%u.rings_in_use=%u\nproc.%u.comm=%s\n"
               "proc.%u.bad_stamps=%" PRIu64 "\nproc.%u.bad_counters=%" PRIu64 "\n",
               p->pid, p->state, p->pid, p->records, p->pid, p->lost, p->pid, p->lag_bytes,
               p->pid, p->rings_in_use, p->pid, p->comm, p->pid, p->bad_stamps, p->pid,
               p->bad_counters);
        for (size_t k = 0; k < p->n_rings; k++) {
            const D9__RingStatus *r = p->rings[k];
            printf("ring.%u.%u.tid=%u\nring.%u.%u.name=%s\nring.%u.%u.lag_bytes=%" PRIu64
                   "\nring.%u.%u.quarantined=%d\n", p->pid, r->index, r->tid, p->pid, r->index,
                   r->thread_name, p->pid, r->index, r->lag_bytes, p->pid, r->index,
                   (int)r->quarantined);
        }
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: tool_ctl ENDPOINT status|flush|garbage [PID]\n");
        return 2;
    }
    const char *ep = argv[1], *cmd = argv[2];
    uint32_t pid = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 0;
    if (!strcmp(cmd, "garbage"))
        return garbage(ep);
    D9__Request req = D9__REQUEST__INIT;
    D9__StatusRequest sr = D9__STATUS_REQUEST__INIT;
    D9__Flush fl = D9__FLUSH__INIT;
    if (!strcmp(cmd, "status")) {
        sr.pid = pid;
        req.body_case = D9__REQUEST__BODY_STATUS;
        req.status = &sr;
    } else if (!strcmp(cmd, "flush")) {
        fl.pid = pid;
        req.body_case = D9__REQUEST__BODY_FLUSH;
        req.flush = &fl;
    } else {
        fprintf(stderr, "tool_ctl: unknown command %s\n", cmd);
        return 2;
    }
    D9__Reply *rep = NULL;
    int rc = ctl_client_request(ep, &req, &rep, TIMEOUT_MS);
    if (rc) {
        fprintf(stderr, "tool_ctl: %s: %s\n", ep, strerror(-rc));
        return 1;
    }
    printf("error=%d\nmessage=%s\n", rep->error, rep->message ? rep->message : "");
    if (rep->status)
        print_status(rep->status);
    int ok = rep->error == 0;
    if (!ok && rep->message && *rep->message)
        fprintf(stderr, "tool_ctl: %s\n", rep->message);
    ctl_client_reply_free(rep);
    return ok ? 0 : 1;
}
