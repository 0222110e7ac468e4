/*
 * ctl_client.c — the control channel's request client (see ctl_client.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <zmq.h>
#include "collector/ctl/ctl_client.h"
#include "collector/lazy/lazy.h"
#include "shm/paths.h"

int ctl_client_request(const char *endpoint, const D9__Request *req, D9__Reply **reply,
                int timeout_ms)
{
    *reply = NULL;
    char path[PATH_MAX];
    if (paths_ipc_path(endpoint, path, sizeof path) == 0) {
        struct stat st;
        if (stat(path, &st) != 0)
            return -ENOENT;
    }
    if (lazy_need(LAZY_ZMQ) < 0)
        return -ELIBACC;            /* `d9` opens libzmq here (lazy.h) */
    void *ctx = zmq_ctx_new();
    if (!ctx)
        return -ENOMEM;
    int rc = 0;
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    uint8_t *buf = NULL;
    if (!s) {
        rc = -errno;
        goto out;
    }
    int linger = 0;
    int64_t maxmsg = 64 * 1024 * 1024;  /* a status of many processes can be large */
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    if (zmq_connect(s, endpoint) != 0) {
        rc = -errno;
        goto out;
    }
    size_t len = d9__request__get_packed_size(req);
    buf = malloc(len ? len : 1);
    if (!buf) {
        rc = -ENOMEM;
        goto out;
    }
    d9__request__pack(req, buf);
    zmq_pollitem_t pi = { .socket = s, .events = ZMQ_POLLOUT };
    if (zmq_poll(&pi, 1, timeout_ms) <= 0) {
        rc = -ETIMEDOUT;
        goto out;
    }
    if (zmq_send(s, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(s, buf, len, ZMQ_DONTWAIT) < 0) {
        rc = -errno;
        goto out;
    }
    for (;;) {
        pi.events = ZMQ_POLLIN;
        int n = zmq_poll(&pi, 1, timeout_ms);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = n < 0 ? -errno : -ETIMEDOUT;
            goto out;
        }
        break;
    }
    /* [empty][reply] */
    zmq_msg_t f;
    zmq_msg_init(&f);
    if (zmq_msg_recv(&f, s, 0) < 0) {
        rc = -errno;
        zmq_msg_close(&f);
        goto out;
    }
    if (zmq_msg_size(&f) == 0 && zmq_msg_more(&f)) {
        zmq_msg_close(&f);
        zmq_msg_init(&f);
        if (zmq_msg_recv(&f, s, 0) < 0) {
            rc = -errno;
            zmq_msg_close(&f);
            goto out;
        }
    }
    *reply = d9__reply__unpack(NULL, zmq_msg_size(&f), zmq_msg_data(&f));
    zmq_msg_close(&f);
    if (!*reply)
        rc = -EBADMSG;
out:
    free(buf);
    if (s)
        zmq_close(s);
    zmq_ctx_term(ctx);
    return rc;
}

void ctl_client_reply_free(D9__Reply *reply)
{
    if (reply)
        d9__reply__free_unpacked(reply, NULL);
}
