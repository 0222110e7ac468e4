/*
 * ctl_server.h — the server side of d9collectd's control channel (ZMQ_ROUTER);
 * the client is collector/ctl/ctl_client.h.
 *
 * Server (d9collectd.c, drain thread): bound at --endpoint. A request is
 * three frames [identity][empty][d9.Request]; the reply is
 * [identity][empty][d9.Reply], sent without blocking (a peer that does not
 * read its replies loses them, it never stalls the collector). Anything
 * else — wrong frame count, non-empty delimiter, oversized or undecodable
 * payload, a Request with no body — is counted in `malformed`, logged
 * rate-limited, and dropped. For ipc:// endpoints the socket's directory
 * is created 0755 and the socket file made 0777 so every local user's agent
 * can connect (the identity of an agent is never taken from a message: the
 * region file decides, see discover.h).
 *
 * Must never: block the server on a slow peer, or let a message allocate
 * more than CTL_SERVER_MSG_MAX.
 */
#ifndef D9_DAEMON_CTL_SERVER_H
#define D9_DAEMON_CTL_SERVER_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include "collector/store/col_log.h"
#include "proto/d9.pb-c.h"

#define CTL_SERVER_MSG_MAX     65536       /* larger messages are dropped by libzmq */
#define CTL_SERVER_IDENT_MAX   256
#define CTL_SERVER_SNDHWM      1000

struct ctl_server {
    void *zctx;
    void *sock;
    int fd;                     /* ZMQ_FD, for poll(2) */
    char ipc_path[PATH_MAX];    /* "" unless ipc:// */
    uint64_t requests;
    uint64_t malformed;
    struct col_ratelimit rl;
};

/* One received request. */
struct ctl_server_msg {
    uint8_t ident[CTL_SERVER_IDENT_MAX];
    size_t ident_len;
    D9__Request *req;           /* owned; ctl_server_msg_done frees it */
};

/* Bind. On failure err holds one line ("cannot bind ENDPOINT: ..."). */
int ctl_server_open(struct ctl_server *c, const char *endpoint, char *err, size_t errcap);
void ctl_server_close(struct ctl_server *c);

/* Next well-formed request: 1 = *m filled, 0 = none pending (malformed ones
 * are consumed and counted on the way), -errno on a socket error. */
int ctl_server_recv(struct ctl_server *c, struct ctl_server_msg *m);
/* Reply to m (non-blocking; a lost reply is not an error for us). */
int ctl_server_reply(struct ctl_server *c, const struct ctl_server_msg *m, const D9__Reply *reply);
void ctl_server_msg_done(struct ctl_server_msg *m);

#endif /* D9_DAEMON_CTL_SERVER_H */
