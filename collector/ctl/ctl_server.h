/*
 * ctl_server.h — the server side of d9collectd's control channel; the
 * client is collector/ctl/ctl_client.h (libzmq DEALERs: agents, d9).
 *
 * Server (d9collectd.c, drain thread): bound at --endpoint, ipc://PATH or
 * tcp://HOST:PORT. It speaks ZMTP 3.0 as a ROUTER (collector/ctl/ctl_zmtp.h)
 * over sockets it accepts and reads itself, on one epoll set: libzmq's own
 * listener aborts the process when accept(2) fails with EMFILE, and the
 * socket is open to every local user, so a user holding connections could
 * kill the collector. A request is two frames [empty][d9.Request]; the reply
 * [empty][d9.Reply] goes back on the same connection, sent without blocking
 * (a peer that does not read its replies is not read from either, and is
 * closed when its reply has waited CTL_SERVER_WRITE_NS). Anything else —
 * wrong frame count, non-empty delimiter, undecodable payload, a Request
 * with no body — is counted in `malformed`, logged rate-limited, and
 * dropped; a protocol error (ctl_zmtp.h) or a frame over CTL_SERVER_MSG_MAX
 * closes the connection.
 *
 * Connections are a bounded resource, shared fairly:
 *   - at most conn_max at once: a quarter of RLIMIT_NOFILE, at most
 *     CTL_SERVER_CONN_MAX (perf events leave PERF_FD_RESERVE descriptors to
 *     the rest of the collector, control connections included);
 *   - at most uid_max of them (a quarter of conn_max) per peer uid (the
 *     kernel's SO_PEERCRED on ipc://; every tcp:// peer is one unknown
 *     user); root is not capped per uid. A new connection over a cap takes
 *     the place of the longest idle handshaken connection of the same uid
 *     (the whole table's when the table is full) idle for
 *     CTL_SERVER_EVICT_IDLE_NS, so a user's many idle agents never lock
 *     that user's `d9 status` out; else it is refused (closed at once);
 *   - a connection must finish its handshake within CTL_SERVER_HANDSHAKE_NS
 *     and a message within CTL_SERVER_MSG_NS of its first byte, and one idle
 *     for CTL_SERVER_IDLE_NS is closed (agents reconnect by themselves);
 *   - accept never fails the process: with no descriptor left it gives up a
 *     spare one (/dev/null, held for this) to accept and close the pending
 *     connection, and stops accepting for CTL_SERVER_PAUSE_NS;
 *   - at most CTL_SERVER_BATCH requests are handed out per ctl_server_tick,
 *     so a flood of requests cannot keep the drain loop from draining.
 * Refused connections are counted in `refused`, connections the server
 * closed (deadlines, idle, protocol errors, eviction) in `closed`; both are
 * in `d9 status`.
 *
 * Who asks: on ipc:// the kernel's SO_PEERCRED of the connection, taken at
 * accept (cred_known, uid, pid); on tcp:// the caller is unknown.
 * ctl_server_may_see is the one rule the request handlers apply: root sees
 * every process, a known uid its own, an unknown caller none. For ipc:// the
 * socket's directory is created 0755 and the socket made 0666
 * (CTL_SERVER_SOCK_MODE) so every local user's agent can connect.
 *
 * ctl_server_open binds only where nothing is, or over a stale socket
 * (S_IFSOCK, owned by our euid, no collector answering); anything else (a
 * device node, a regular file, a symlink, another user's socket) is refused
 * with -EEXIST. The bound socket's inode is kept, and ctl_server_unlink
 * removes the path only while it still names that socket.
 *
 * Must never: block on a peer, abort on a peer's behaviour or on running out
 * of descriptors, let a connection hold more than a message of
 * CTL_SERVER_MSG_MAX and one reply, or bind over or remove a file it did not
 * create.
 */
#ifndef D9_DAEMON_CTL_SERVER_H
#define D9_DAEMON_CTL_SERVER_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include "collector/store/col_log.h"
#include "proto/d9.pb-c.h"

#define CTL_SERVER_MSG_MAX       65536u    /* a larger frame closes the connection */
#define CTL_SERVER_SOCK_MODE     0666      /* every user connects; requests are filtered */
#define CTL_SERVER_CONN_MAX      1024u     /* connections at once, whatever the fd limit */
#define CTL_SERVER_CONN_MIN      8u        /* ... and at least, however low it is */
#define CTL_SERVER_CONN_FD_DIV   4u        /* conn_max = RLIMIT_NOFILE / this */
#define CTL_SERVER_UID_DIV       4u        /* uid_max = conn_max / this */
#define CTL_SERVER_BACKLOG       128
#define CTL_SERVER_IN_BUF        4096u     /* bytes read from a connection at a time */
#define CTL_SERVER_BATCH         64u       /* requests handed out per tick */
#define CTL_SERVER_EVENTS        64        /* epoll events taken at a time ... */
#define CTL_SERVER_POLL_ROUNDS   4         /* ... at most this many times per ctl_server_recv */
#define CTL_SERVER_HANDSHAKE_NS  (5ull * 1000000000ull)
#define CTL_SERVER_MSG_NS        (5ull * 1000000000ull)
#define CTL_SERVER_WRITE_NS      (5ull * 1000000000ull)
#define CTL_SERVER_IDLE_NS       (600ull * 1000000000ull)
#define CTL_SERVER_EVICT_IDLE_NS (1000000000ull)
#define CTL_SERVER_PAUSE_NS      (100ull * 1000000ull)
#define CTL_SERVER_SWEEP_NS      (250ull * 1000000ull)
#define CTL_SERVER_UID_UNKNOWN   UINT32_MAX   /* the bucket of peers without credentials */
#define CTL_SERVER_IDENT_LEN     8            /* slot and generation of the connection */

struct ctl_conn;

struct ctl_server {
    int fd;                     /* epoll set, for poll(2): readable when there is work */
    int listen_fd;
    int wake_fd;                /* eventfd in the set: requests left in our buffers */
    int spare_fd;               /* given up to accept and drop a connection on EMFILE */
    int listening;              /* listen_fd is in the set (not paused) */
    char ipc_path[PATH_MAX];    /* "" unless ipc:// (then peers have credentials) */
    char bound[PATH_MAX + 16];  /* the endpoint as bound (tcp: the port chosen) */
    uint64_t ipc_dev, ipc_ino;  /* the socket file we bound (0: none) */
    struct ctl_conn **conns;    /* conn_max slots */
    uint32_t conn_max, uid_max, nconns;
    uint32_t rr;                /* round-robin cursor over the slots */
    uint32_t pending;           /* connections with input to decode */
    uint32_t budget;            /* requests left to hand out before the next tick */
    uint64_t paused_until, next_sweep;
    uint64_t requests, malformed;
    uint64_t refused;           /* connections refused: caps, no descriptor */
    uint64_t closed;            /* connections the server closed: deadlines, idle, errors */
    struct col_ratelimit rl, rl_conn;
};

/* One received request. */
struct ctl_server_msg {
    uint8_t ident[CTL_SERVER_IDENT_LEN];
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
/* The endpoint as bound ("tcp://127.0.0.1:PORT" for a tcp port "*" or 0). */
const char *ctl_server_endpoint(const struct ctl_server *c);

/* Next well-formed request: 1 = *m filled, 0 = none pending now (malformed
 * ones are consumed and counted on the way; also 0 once CTL_SERVER_BATCH
 * requests were handed out since the last tick), -errno on a failure of
 * the epoll set itself. */
int ctl_server_recv(struct ctl_server *c, struct ctl_server_msg *m);
/* Reply to m (non-blocking; a lost reply is not an error for us): 0, or
 * -ENOTCONN when its connection is gone. */
int ctl_server_reply(struct ctl_server *c, const struct ctl_server_msg *m, const D9__Reply *reply);
void ctl_server_msg_done(struct ctl_server_msg *m);
/* Once per loop pass (now: CLOCK_MONOTONIC ns): deadlines, idle
 * connections, the end of an accept pause, a new request budget. */
void ctl_server_tick(struct ctl_server *c, uint64_t now);
/* Connections open now. */
uint32_t ctl_server_connections(const struct ctl_server *c);

/* 1 when the sender of m may see and flush a process owned by owner_uid:
 * root always, a known uid its own processes, an unknown caller never. */
int ctl_server_may_see(const struct ctl_server_msg *m, uint32_t owner_uid);

#endif /* D9_DAEMON_CTL_SERVER_H */
