/*
 * control.h — the control channel of d9collectd (ZMQ_ROUTER) and the C
 * client helper used by the d9 CLI (`d9 status`, `d9 flush`) and tests.
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
 * Client: col_request() connects, sends one Request and waits up to
 * timeout_ms for its Reply. Must never: block the server on a slow peer,
 * or let a message allocate more than COL_CTL_MSG_MAX.
 */
#ifndef D9_COL_CONTROL_H
#define D9_COL_CONTROL_H

#include <stddef.h>
#include <stdint.h>
#include "collector/config.h"
#include "collector/log.h"
#include "proto/d9.pb-c.h"

#define COL_CTL_MSG_MAX     65536       /* larger messages are dropped by libzmq */
#define COL_CTL_IDENT_MAX   256
#define COL_CTL_SNDHWM      1000
#define COL_REQUEST_TIMEOUT_MS_DEFAULT 5000

struct col_ctl {
    void *zctx;
    void *sock;
    int fd;                     /* ZMQ_FD, for poll(2) */
    char ipc_path[COL_PATH_MAX];/* "" unless ipc:// */
    uint64_t requests;
    uint64_t malformed;
    struct col_ratelimit rl;
};

/* One received request. */
struct col_ctl_msg {
    uint8_t ident[COL_CTL_IDENT_MAX];
    size_t ident_len;
    D9__Request *req;           /* owned; col_ctl_msg_done frees it */
};

/* Bind. On failure err holds one line ("cannot bind ENDPOINT: ..."). */
int col_ctl_open(struct col_ctl *c, const char *endpoint, char *err, size_t errcap);
void col_ctl_close(struct col_ctl *c);

/* Next well-formed request: 1 = *m filled, 0 = none pending (malformed ones
 * are consumed and counted on the way), -errno on a socket error. */
int col_ctl_recv(struct col_ctl *c, struct col_ctl_msg *m);
/* Reply to m (non-blocking; a lost reply is not an error for us). */
int col_ctl_reply(struct col_ctl *c, const struct col_ctl_msg *m, const D9__Reply *reply);
void col_ctl_msg_done(struct col_ctl_msg *m);

/*
 * Client helper: send req to the collector at endpoint and wait for the
 * reply. On success *reply is set (free with col_reply_free) and 0 returned
 * (check (*reply)->error for the collector's verdict). Errors: -ENOENT the
 * ipc socket does not exist (collector not running), -ETIMEDOUT no reply in
 * timeout_ms, -EBADMSG undecodable reply, -errno from libzmq.
 */
int col_request(const char *endpoint, const D9__Request *req, D9__Reply **reply,
                int timeout_ms);
void col_reply_free(D9__Reply *reply);

#endif /* D9_COL_CONTROL_H */
