/*
 * control.h — the agent's side of the control channel to d9collectd.
 *
 * A ZMQ_DEALER connected to DIAL9_COLLECTOR that sends
 * [empty delimiter][d9.Request] messages (hello at start, goodbye at
 * shutdown). Every send is ZMQ_DONTWAIT and the socket is ZMQ_IMMEDIATE:
 * with no collector connected a send fails at once with -EAGAIN and nothing
 * is queued, so closing never waits for a collector that is not there (the
 * caller retries the hello; the collector also finds regions by scanning).
 *
 * Called only from the agent's housekeeping thread (zmq sockets are not
 * thread-safe). Never called on a record path. libzmq is loaded by the
 * first ag_control_open (zmqlib.h), not linked, and the agent calls that
 * only once ag_control_reachable found a collector listening. The pack functions are pure
 * and used by the unit tests.
 */
#ifndef D9_AGENT_CONTROL_H
#define D9_AGENT_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#define AG_CONTROL_LINGER_MS 200    /* upper bound on the close at exit */
#define AG_CONTROL_SNDHWM    16     /* a handful of control messages at most */
#define AG_CONTROL_MSG_MAX   2048u  /* a packed Request always fits (paths <= 256) */

struct ag_zmqlib;

struct ag_control {
    const struct ag_zmqlib *zmq;    /* libzmq's functions (zmqlib.h), set by a successful load */
    void *ctx;
    void *sock;                 /* NULL = not connected */
};

struct ag_hello_info {
    uint32_t pid, uid;
    uint64_t start_time;
    const char *region_path, *comm, *exe;
};

/* Create a context and a DEALER connected to endpoint, loading libzmq
 * first (zmqlib.h). 0 or -errno: -ENOENT / -ENOSYS libzmq not loadable (the
 * agent goes on without a control channel). */
int ag_control_open(struct ag_control *c, const char *endpoint);

/* Send [empty][msg] without waiting. 0, -EAGAIN (queue full / would block),
 * -ENOTCONN (not open), other -errno. */
int ag_control_send(struct ag_control *c, const uint8_t *msg, size_t len);

/* Close the socket and the context, waiting at most linger_ms for queued
 * messages to leave (AG_CONTROL_LINGER_MS at most is sane). Idempotent. */
void ag_control_close(struct ag_control *c, int linger_ms);

/* Whether a collector listens at endpoint now, without zmq: for ipc://PATH
 * one non-blocking connect(2) of a Unix stream socket, closed at once (the
 * collector drops a connection that sends nothing). 1 a listener is there
 * (connected, or its backlog is full), 0 nobody (no socket file, refused),
 * -EPROTONOSUPPORT for an endpoint that is not ipc:// (the caller cannot
 * tell). Never blocks. Used by the housekeeping thread before it opens the
 * channel (libzmq loads only once this is not 0) and at exit. */
int ag_control_reachable(const char *endpoint);

/* Pack a Request{hello} / Request{goodbye} into buf; returns its length or -ENOBUFS. */
long ag_control_pack_hello(const struct ag_hello_info *h, uint8_t *buf, size_t cap);
long ag_control_pack_goodbye(uint32_t pid, uint64_t start_time, int32_t exit_code,
                             uint8_t *buf, size_t cap);

#endif /* D9_AGENT_CONTROL_H */
