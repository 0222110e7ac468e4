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
 * is created 0755 and the socket file made 0666 (CTL_SERVER_SOCK_MODE) so
 * every local user's agent can connect, and every user can ask about its
 * own processes (the identity of an agent is never taken from a message:
 * the region file decides, see discover.h).
 *
 * Who asks: on an ipc:// endpoint the kernel's SO_PEERCRED of the
 * connection, which libzmq appends to an AF_UNIX peer's "Peer-Address"
 * message property as ":UID:GID:PID" (checked with Debian's libzmq5 by
 * tests/unit/test_ctl.c). ctl_server_recv copies it into the message
 * (cred_known, uid, pid); on other transports, or when the property is
 * missing or malformed, the caller is unknown. ctl_server_may_see is the
 * one rule the request handlers apply: root sees every process, a known
 * uid its own, an unknown caller none.
 *
 * libzmq unlinks whatever is at an ipc path before it binds, so
 * ctl_server_open binds only where nothing is, or over a stale socket
 * (S_IFSOCK, owned by our euid, no collector answering); anything else (a
 * device node, a regular file, a symlink, another user's socket) is refused
 * with -EEXIST. The bound socket's inode is kept, and ctl_server_unlink
 * removes the path only while it still names that socket.
 *
 * Must never: block the server on a slow peer, let a message allocate
 * more than CTL_SERVER_MSG_MAX, or bind over or remove a file it did not
 * create.
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
#define CTL_SERVER_SOCK_MODE   0666        /* every user connects; requests are filtered */

struct ctl_server {
    void *zctx;
    void *sock;
    int fd;                     /* ZMQ_FD, for poll(2) */
    char ipc_path[PATH_MAX];    /* "" unless ipc:// (then peers have credentials) */
    uint64_t ipc_dev, ipc_ino;  /* the socket file we bound (0: none) */
    uint64_t requests;
    uint64_t malformed;
    struct col_ratelimit rl;
};

/* One received request. */
struct ctl_server_msg {
    uint8_t ident[CTL_SERVER_IDENT_MAX];
    size_t ident_len;
    D9__Request *req;           /* owned; ctl_server_msg_done frees it */
    int cred_known;             /* 1: uid and pid are the kernel's word for the peer */
    uint32_t uid, pid;          /* the peer's at connect time (SO_PEERCRED) */
};

/* Bind. On failure err holds one line ("cannot bind ENDPOINT: ..."). */
int ctl_server_open(struct ctl_server *c, const char *endpoint, char *err, size_t errcap);
void ctl_server_close(struct ctl_server *c);
/* Remove the ipc socket file if the path still names the one we bound. */
void ctl_server_unlink(struct ctl_server *c);

/* Next well-formed request: 1 = *m filled, 0 = none pending (malformed ones
 * are consumed and counted on the way), -errno on a socket error. */
int ctl_server_recv(struct ctl_server *c, struct ctl_server_msg *m);
/* Reply to m (non-blocking; a lost reply is not an error for us). */
int ctl_server_reply(struct ctl_server *c, const struct ctl_server_msg *m, const D9__Reply *reply);
void ctl_server_msg_done(struct ctl_server_msg *m);

/* The credentials at the end of a libzmq AF_UNIX "Peer-Address"
 * ("HOST:UID:GID:PID"): 0 and *uid, *pid set, or -EINVAL when the last
 * three fields are not three decimal numbers that fit 32 bits. */
int ctl_server_peer_cred(const char *peer_address, uint32_t *uid, uint32_t *pid);
/* 1 when the sender of m may see and flush a process owned by owner_uid:
 * root always, a known uid its own processes, an unknown caller never. */
int ctl_server_may_see(const struct ctl_server_msg *m, uint32_t owner_uid);

#endif /* D9_DAEMON_CTL_SERVER_H */
