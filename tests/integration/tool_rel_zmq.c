/*
 * tool_rel_zmq.c — sends ONE hostile control message of a given kind to
 * d9collectd, for tests/integration/test_rel_bad_input.sh (which checks the
 * collector's reaction to each kind separately: counter, log line, still
 * answering).
 *
 *   tool_rel_zmq ENDPOINT KIND
 *
 * Malformed kinds (the collector must drop and count them):
 *   random        one frame of random bytes (no delimiter)
 *   delim-random  delimiter + 200 random bytes (undecodable protobuf)
 *   frames4       delimiter + 3 copies of a valid request (wrong frame count)
 *   empty         a single empty frame
 *   nonempty-delim  "x" instead of the empty delimiter
 *   truncated     a valid Hello cut in half
 *   unknown-fields  valid protobuf: only unknown field numbers (no body)
 * Kinds the transport itself refuses (libzmq drops the peer):
 *   huge          one 8 MiB frame (over the collector's ZMQ_MAXMSGSIZE)
 * Valid protobuf with bogus values (must be answered or ignored, no crash):
 *   hello-traversal   Hello{region_path="../../etc/passwd", comm of 4000 bytes}
 *   goodbye-bogus     Goodbye{pid=1, start_time=12345}
 *   status-bogus-pid  StatusRequest{pid=4294967295}: prints the reply error
 *   flush-bogus-pid   Flush{pid=4294967295}: prints the reply error
 * Exit 0 when sent (and, for status/flush, answered), 1 otherwise.
 * Linked with libcol.a. Test helper only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>
#include "collector/ctl/ctl_client.h"
#include "collector/ctl/ctl_server.h"

#define REL_ZMQ_TIMEOUT_MS 5000
#define REL_ZMQ_HUGE       (8u << 20)
#define REL_ZMQ_LINGER_MS  2000

static int send_parts(const char *ep, const void *const *parts, const size_t *lens, int n)
{
    void *ctx = zmq_ctx_new();
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int linger = REL_ZMQ_LINGER_MS;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    int rc = 0;
    if (zmq_connect(s, ep) != 0) {
        fprintf(stderr, "tool_rel_zmq: connect %s: %s\n", ep, zmq_strerror(errno));
        rc = 1;
    }
    for (int i = 0; !rc && i < n; i++)
        if (zmq_send(s, parts[i], lens[i], i + 1 < n ? ZMQ_SNDMORE : 0) < 0) {
            fprintf(stderr, "tool_rel_zmq: send: %s\n", zmq_strerror(errno));
            rc = 1;
        }
    zmq_close(s);
    zmq_ctx_term(ctx);
    return rc;
}

static int request(const char *ep, D9__Request *req)
{
    D9__Reply *rep = NULL;
    int rc = ctl_client_request(ep, req, &rep, REL_ZMQ_TIMEOUT_MS);
    if (rc) {
        fprintf(stderr, "tool_rel_zmq: no reply from %s: %s\n", ep, strerror(-rc));
        return 1;
    }
    printf("error=%d message=%s\n", rep->error, rep->message ? rep->message : "");
    ctl_client_reply_free(rep);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: tool_rel_zmq ENDPOINT KIND\n");
        return 2;
    }
    const char *ep = argv[1], *k = argv[2];
    uint8_t rnd[256];
    srand(7);
    for (size_t i = 0; i < sizeof rnd; i++)
        rnd[i] = (uint8_t)rand();
    D9__Request req = D9__REQUEST__INIT;
    D9__Hello h = D9__HELLO__INIT;
    static char longcomm[4001];
    memset(longcomm, 'A', sizeof longcomm - 1);
    h.region_path = (char *)"../../etc/passwd";
    h.comm = longcomm;
    h.pid = 1;
    req.body_case = D9__REQUEST__BODY_HELLO;
    req.hello = &h;
    static uint8_t pk[8192];
    size_t pl = d9__request__pack(&req, pk);
    /* field 99 (varint 1) and field 100 (length-delimited "zz"): unknown to d9.Request */
    static const uint8_t unknown[] = { 0x98, 0x06, 0x01, 0xa2, 0x06, 0x02, 'z', 'z' };

    if (!strcmp(k, "random")) {
        const void *p[] = { rnd }; size_t l[] = { sizeof rnd };
        return send_parts(ep, p, l, 1);
    } else if (!strcmp(k, "delim-random")) {
        const void *p[] = { "", rnd }; size_t l[] = { 0, 200 };
        return send_parts(ep, p, l, 2);
    } else if (!strcmp(k, "frames4")) {
        const void *p[] = { "", pk, pk, pk }; size_t l[] = { 0, pl, pl, pl };
        return send_parts(ep, p, l, 4);
    } else if (!strcmp(k, "empty")) {
        const void *p[] = { "" }; size_t l[] = { 0 };
        return send_parts(ep, p, l, 1);
    } else if (!strcmp(k, "nonempty-delim")) {
        const void *p[] = { "x", pk }; size_t l[] = { 1, pl };
        return send_parts(ep, p, l, 2);
    } else if (!strcmp(k, "truncated")) {
        const void *p[] = { "", pk }; size_t l[] = { 0, pl / 2 };
        return send_parts(ep, p, l, 2);
    } else if (!strcmp(k, "unknown-fields")) {
        const void *p[] = { "", unknown }; size_t l[] = { 0, sizeof unknown };
        return send_parts(ep, p, l, 2);
    } else if (!strcmp(k, "huge")) {
        uint8_t *big = calloc(1, REL_ZMQ_HUGE);
        if (!big)
            return 1;
        const void *p[] = { "", big }; size_t l[] = { 0, REL_ZMQ_HUGE };
        int rc = send_parts(ep, p, l, 2);
        free(big);
        return rc;
    } else if (!strcmp(k, "hello-traversal")) {
        const void *p[] = { "", pk }; size_t l[] = { 0, pl };
        return send_parts(ep, p, l, 2);
    } else if (!strcmp(k, "goodbye-bogus")) {
        D9__Goodbye g = D9__GOODBYE__INIT;
        g.pid = 1;
        g.start_time = 12345;
        D9__Request r2 = D9__REQUEST__INIT;
        r2.body_case = D9__REQUEST__BODY_GOODBYE;
        r2.goodbye = &g;
        uint8_t b[64];
        size_t bl = d9__request__pack(&r2, b);
        const void *p[] = { "", b }; size_t l[] = { 0, bl };
        return send_parts(ep, p, l, 2);
    } else if (!strcmp(k, "status-bogus-pid")) {
        D9__StatusRequest sr = D9__STATUS_REQUEST__INIT;
        sr.pid = 4294967295u;
        D9__Request r2 = D9__REQUEST__INIT;
        r2.body_case = D9__REQUEST__BODY_STATUS;
        r2.status = &sr;
        return request(ep, &r2);
    } else if (!strcmp(k, "flush-bogus-pid")) {
        D9__Flush f = D9__FLUSH__INIT;
        f.pid = 4294967295u;
        D9__Request r2 = D9__REQUEST__INIT;
        r2.body_case = D9__REQUEST__BODY_FLUSH;
        r2.flush = &f;
        return request(ep, &r2);
    }
    fprintf(stderr, "tool_rel_zmq: unknown kind %s\n", k);
    return 2;
}
