/*
 * control.c — DEALER socket and Request packing for the agent (see control.h).
 *
 * Runs on the agent's housekeeping thread only. Must never block the
 * application: every send is ZMQ_DONTWAIT, connect() is asynchronous in
 * zmq, and linger is bounded by AG_CONTROL_LINGER_MS. Errors are returned,
 * never logged here: a missing collector is the normal case.
 *
 * libzmq is called through zmqlib.h's table, loaded by the first
 * ag_control_open (zmq.h gives the constants only; the agent does not link
 * libzmq). A socket is open only after the table loaded, so the other
 * functions find it there.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <zmq.h>
#include "agent/control.h"
#include "agent/zmqlib.h"
#include "proto/d9.pb-c.h"
#include "shm/d9_abi.h"

#define AG_IPC_SCHEME "ipc://"

int ag_control_reachable(const char *endpoint)
{
    size_t pl = strlen(AG_IPC_SCHEME);
    if (!endpoint || strncmp(endpoint, AG_IPC_SCHEME, pl) != 0)
        return -EPROTONOSUPPORT;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    size_t n = strlen(endpoint + pl);
    if (n == 0 || n >= sizeof sa.sun_path)
        return 0;
    memcpy(sa.sun_path, endpoint + pl, n);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 ? 1
             : (errno == EAGAIN || errno == EINPROGRESS) ? 1 : 0;
    close(fd);
    return rc;
}

int ag_control_open(struct ag_control *c, const char *endpoint)
{
    memset(c, 0, sizeof *c);
    const struct ag_zmqlib *z = ag_zmqlib_get();
    if (!z)
        return ag_zmqlib_state();
    c->zmq = z;
    c->ctx = z->ctx_new();
    if (!c->ctx)
        return -(errno ? errno : ENOMEM);
    /* one I/O thread is plenty; no extra threads for a few messages */
    z->ctx_set(c->ctx, ZMQ_IO_THREADS, 1);
    void *s = z->socket(c->ctx, ZMQ_DEALER);
    if (!s) {
        int err = errno;
        z->ctx_term(c->ctx);
        c->ctx = NULL;
        return -err;
    }
    int linger = AG_CONTROL_LINGER_MS, hwm = AG_CONTROL_SNDHWM, immediate = 1;
    z->setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    z->setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
    /* queue only on a completed connection: no collector, no waiting */
    z->setsockopt(s, ZMQ_IMMEDIATE, &immediate, sizeof immediate);
    if (z->connect(s, endpoint) != 0) {
        int err = errno;
        z->close(s);
        z->ctx_term(c->ctx);
        c->ctx = NULL;
        return -err;
    }
    c->sock = s;
    return 0;
}

int ag_control_send(struct ag_control *c, const uint8_t *msg, size_t len)
{
    if (!c->sock)
        return -ENOTCONN;
    const struct ag_zmqlib *z = c->zmq;
    if (z->send(c->sock, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return -errno;
    /* zmq sends multipart messages atomically: once the first frame is
     * accepted the second one is too (same pipe, already reserved) */
    if (z->send(c->sock, msg, len, ZMQ_DONTWAIT) < 0)
        return -errno;
    return 0;
}

void ag_control_close(struct ag_control *c, int linger_ms)
{
    const struct ag_zmqlib *z = c->zmq;     /* set whenever sock or ctx is */
    if (c->sock) {
        int linger = linger_ms < 0 ? 0 : linger_ms > AG_CONTROL_LINGER_MS
                     ? AG_CONTROL_LINGER_MS : linger_ms;
        z->setsockopt(c->sock, ZMQ_LINGER, &linger, sizeof linger);
        z->close(c->sock);
        c->sock = NULL;
    }
    if (c->ctx) {
        z->ctx_term(c->ctx);
        c->ctx = NULL;
    }
}

static long pack_request(const D9__Request *req, uint8_t *buf, size_t cap)
{
    size_t n = d9__request__get_packed_size(req);
    if (n > cap)
        return -ENOBUFS;
    return (long)d9__request__pack(req, buf);
}

long ag_control_pack_hello(const struct ag_hello_info *h, uint8_t *buf, size_t cap)
{
    D9__Hello hello = D9__HELLO__INIT;
    hello.abi_version = D9_ABI_VERSION;
    hello.pid = h->pid;
    hello.uid = h->uid;
    hello.start_time = h->start_time;
    /* protobuf-c takes char *; it does not write through them when packing */
    hello.region_path = (char *)(h->region_path ? h->region_path : "");
    hello.comm = (char *)(h->comm ? h->comm : "");
    hello.exe = (char *)(h->exe ? h->exe : "");
    D9__Request req = D9__REQUEST__INIT;
    req.body_case = D9__REQUEST__BODY_HELLO;
    req.hello = &hello;
    return pack_request(&req, buf, cap);
}

long ag_control_pack_goodbye(uint32_t pid, uint64_t start_time, int32_t exit_code,
                             uint8_t *buf, size_t cap)
{
    D9__Goodbye bye = D9__GOODBYE__INIT;
    bye.pid = pid;
    bye.start_time = start_time;
    bye.exit_code = exit_code;
    D9__Request req = D9__REQUEST__INIT;
    req.body_case = D9__REQUEST__BODY_GOODBYE;
    req.goodbye = &bye;
    return pack_request(&req, buf, cap);
}
