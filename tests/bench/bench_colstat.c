/*
 * bench_colstat.c — asks a running d9collectd for its cumulative counters
 * (optionally after a flush) and prints them as one line:
 *
 *   colstat records=R bytes=B lost=L dropped=D write_errors=W segments=S
 *
 * run-bench.sh takes the difference of two such lines around a load run to
 * get what the collector persisted (records, segment bytes) independent of
 * store retention. Uses the collector's own client helper (ctl_client_request).
 * Who runs it: tests/bench/run-bench.sh only.
 */
#include <stdio.h>
#include <string.h>
#include "collector/ctl/ctl_client.h"

#define COLSTAT_TIMEOUT_MS 20000

static int ask(const char *endpoint, D9__Request *req, D9__Reply **rep)
{
    int rc = ctl_client_request(endpoint, req, rep, COLSTAT_TIMEOUT_MS);
    if (rc < 0) {
        fprintf(stderr, "bench_colstat: %s: %s\n", endpoint, strerror(-rc));
        return rc;
    }
    if ((*rep)->error) {
        fprintf(stderr, "bench_colstat: collector says %d: %s\n", (*rep)->error,
                (*rep)->message ? (*rep)->message : "");
        ctl_client_reply_free(*rep);
        return (*rep = NULL, -1);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || !strcmp(argv[1], "--help") ||
        (argc == 3 && strcmp(argv[2], "--flush"))) {
        fprintf(argc < 2 ? stderr : stdout,
                "usage: bench_colstat ENDPOINT [--flush]\n"
                "  Prints d9collectd's cumulative records/bytes/lost counters on one line;\n"
                "  with --flush, asks it to drain and seal everything first.\n");
        return argc < 2 ? 2 : 0;
    }
    D9__Reply *rep = NULL;
    if (argc == 3) {
        D9__Flush fl = D9__FLUSH__INIT;
        D9__Request req = D9__REQUEST__INIT;
        req.body_case = D9__REQUEST__BODY_FLUSH;
        req.flush = &fl;
        if (ask(argv[1], &req, &rep) < 0)
            return 1;
        ctl_client_reply_free(rep);
    }
    D9__StatusRequest sr = D9__STATUS_REQUEST__INIT;
    D9__Request req = D9__REQUEST__INIT;
    req.body_case = D9__REQUEST__BODY_STATUS;
    req.status = &sr;
    if (ask(argv[1], &req, &rep) < 0)
        return 1;
    const D9__CollectorStatus *s = rep->status;
    if (!s) {
        fprintf(stderr, "bench_colstat: reply without status\n");
        ctl_client_reply_free(rep);
        return 1;
    }
    printf("colstat records=%llu bytes=%llu lost=%llu dropped=%llu write_errors=%llu "
           "segments=%llu\n",
           (unsigned long long)s->records, (unsigned long long)s->bytes_written,
           (unsigned long long)s->lost, (unsigned long long)s->dropped_records,
           (unsigned long long)s->write_errors, (unsigned long long)s->segments);
    ctl_client_reply_free(rep);
    return 0;
}
