/*
 * ctl_server.c — the control channel's ROUTER server: its own listener,
 * connections and epoll set, ZMTP through ctl_zmtp.c (see ctl_server.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "collector/ctl/ctl_client.h"
#include "collector/ctl/ctl_server.h"
#include "collector/ctl/ctl_zmtp.h"
#include "shm/clock.h"
#include "shm/paths.h"

/* epoll data of the two fds that are not connections */
#define TAG_LISTEN UINT64_MAX
#define TAG_WAKE   (UINT64_MAX - 1)

struct ctl_conn {
    int fd;
    uint32_t slot, gen;
    int cred_known;
    uint32_t uid, pid;          /* uid CTL_SERVER_UID_UNKNOWN when !cred_known */
    uint64_t t_accept, t_active;
    uint64_t t_partial;         /* when the unfinished message (or handshake) began; 0: none */
    uint64_t t_out;             /* when the unsent output began waiting */
    int pending;                /* input in `in` to decode */
    struct ctl_zmtp z;
    uint8_t in[CTL_SERVER_IN_BUF];
    size_t in_pos, in_len;
    uint8_t *out;               /* a reply (or the hello) not sent yet */
    size_t out_pos, out_len;
};

static uint32_t g_gen;          /* generations of connection slots (a reply finds its own) */

/* ---- endpoint ------------------------------------------------------------------- */

static int mkdir_parents(const char *path)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return -ENAMETOOLONG;
    char *slash = strrchr(tmp, '/');
    if (!slash || slash == tmp)
        return 0;
    *slash = 0;
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0) {
        if (errno != EEXIST)
            return -errno;
    } else {
        chmod(tmp, 0755);   /* umask must not make it unreachable for agents */
    }
    return 0;
}

static int listen_ipc(struct ctl_server *c, char *err, size_t errcap)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    size_t n = strlen(c->ipc_path);
    if (n >= sizeof a.sun_path) {
        snprintf(err, errcap, "cannot bind control endpoint: %s is too long for a socket",
                 c->ipc_path);
        return -ENAMETOOLONG;
    }
    memcpy(a.sun_path, c->ipc_path, n + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct stat st;
    /* a stale socket of ours (checked by the caller): replace it */
    if (lstat(c->ipc_path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == geteuid())
        unlink(c->ipc_path);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, CTL_SERVER_BACKLOG) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    snprintf(c->bound, sizeof c->bound, "ipc://%s", c->ipc_path);
    return fd;
}

/* tcp://HOST:PORT, HOST a name or address ("*": every address; "[v6]"), PORT
 * a number or "*" (any free port). */
static int listen_tcp(struct ctl_server *c, const char *ep, char *err, size_t errcap)
{
    char host[256], port[16];
    const char *hp = ep + strlen("tcp://");
    const char *colon = strrchr(hp, ':');
    if (!colon || colon == hp || (size_t)(colon - hp) >= sizeof host ||
        strlen(colon + 1) >= sizeof port || !colon[1]) {
        snprintf(err, errcap, "bad control endpoint %s: expected tcp://HOST:PORT", ep);
        return -EINVAL;
    }
    memcpy(host, hp, (size_t)(colon - hp));
    host[colon - hp] = 0;
    snprintf(port, sizeof port, "%s", strcmp(colon + 1, "*") ? colon + 1 : "0");
    char *h = host;
    size_t hl = strlen(h);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h[hl - 1] = 0;
        h++;
    }
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE | AI_NUMERICSERV }, *res = NULL;
    int g = getaddrinfo(strcmp(h, "*") ? h : NULL, port, &hints, &res);
    if (g != 0) {
        snprintf(err, errcap, "cannot bind control endpoint %s: %s", ep, gai_strerror(g));
        return -EINVAL;
    }
    int fd = -1, e = -EADDRNOTAVAIL;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            e = -errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, CTL_SERVER_BACKLOG) != 0) {
            e = -errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errcap, "cannot bind control endpoint %s: %s", ep, strerror(-e));
        return e;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char ah[INET6_ADDRSTRLEN + 2] = "", ap[16] = "";
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 &&
        getnameinfo((struct sockaddr *)&ss, sl, ah, sizeof ah, ap, sizeof ap,
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0)
        snprintf(c->bound, sizeof c->bound, ss.ss_family == AF_INET6 ? "tcp://[%s]:%s"
                 : "tcp://%s:%s", ah, ap);
    else
        snprintf(c->bound, sizeof c->bound, "%s", ep);
    return fd;
}

/* conn_max and uid_max from the descriptor limit (see ctl_server.h). */
static void size_table(struct ctl_server *c)
{
    struct rlimit rl;
    uint64_t lim = CTL_SERVER_CONN_MAX * CTL_SERVER_CONN_FD_DIV;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < lim)
        lim = rl.rlim_cur;
    uint64_t n = lim / CTL_SERVER_CONN_FD_DIV;
    c->conn_max = n < CTL_SERVER_CONN_MIN ? CTL_SERVER_CONN_MIN : (uint32_t)n;
    uint32_t u = c->conn_max / CTL_SERVER_UID_DIV;
    c->uid_max = u < 2 ? 2 : u;
}

static int epoll_add(int ep, int fd, uint32_t events, uint64_t tag)
{
    struct epoll_event ev = { .events = events, .data.u64 = tag };
    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : -errno;
}

int ctl_server_open(struct ctl_server *c, const char *endpoint, char *err, size_t errcap)
{
    memset(c, 0, sizeof *c);
    c->fd = c->listen_fd = c->wake_fd = c->spare_fd = -1;
    int rc;
    int ipc = paths_ipc_path(endpoint, c->ipc_path, sizeof c->ipc_path) == 0;
    if (!ipc) {
        c->ipc_path[0] = 0;
        if (strncmp(endpoint, "tcp://", strlen("tcp://")) != 0) {
            snprintf(err, errcap, "cannot bind control endpoint %s: only ipc://PATH and "
                     "tcp://HOST:PORT are served", endpoint);
            return -EPROTONOSUPPORT;
        }
    } else if ((rc = mkdir_parents(c->ipc_path))) {
        snprintf(err, errcap, "cannot create the directory of %s: %s", c->ipc_path,
                 strerror(-rc));
        return rc;
    }
    if (ipc) {
        /* a stale socket file from a crashed collector may be replaced; a
         * live collector is detected by asking it; anything else is left */
        struct stat st;
        if (lstat(c->ipc_path, &st) == 0 && (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid())) {
            snprintf(err, errcap, "cannot bind control endpoint %s: %s already exists and is "
                     "not a socket of ours (binding would replace it; left alone)", endpoint,
                     c->ipc_path);
            return -EEXIST;
        }
        if (lstat(c->ipc_path, &st) == 0 && S_ISSOCK(st.st_mode)) {
            D9__Request req = D9__REQUEST__INIT;
            D9__StatusRequest sr = D9__STATUS_REQUEST__INIT;
            req.body_case = D9__REQUEST__BODY_STATUS;
            req.status = &sr;
            D9__Reply *rep = NULL;
            if (ctl_client_request(endpoint, &req, &rep, 500) == 0) {
                ctl_client_reply_free(rep);
                snprintf(err, errcap, "another collector is already running at %s", endpoint);
                return -EADDRINUSE;
            }
        }
    }
    err[0] = 0;
    c->listen_fd = ipc ? listen_ipc(c, err, errcap) : listen_tcp(c, endpoint, err, errcap);
    if (c->listen_fd < 0) {
        rc = c->listen_fd;
        c->listen_fd = -1;
        if (!err[0])
            snprintf(err, errcap, "cannot bind control endpoint %s: %s", endpoint, strerror(-rc));
        ctl_server_close(c);
        return rc;
    }
    struct stat bst;
    if (ipc && lstat(c->ipc_path, &bst) == 0 && S_ISSOCK(bst.st_mode)) {
        c->ipc_dev = (uint64_t)bst.st_dev;
        c->ipc_ino = (uint64_t)bst.st_ino;
    }
    if (ipc && chmod(c->ipc_path, CTL_SERVER_SOCK_MODE) != 0)
        col_warn("cannot make %s connectable by every user: %s", c->ipc_path, strerror(errno));
    size_table(c);
    c->conns = calloc(c->conn_max, sizeof *c->conns);
    c->fd = epoll_create1(EPOLL_CLOEXEC);
    c->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    rc = !c->conns ? -ENOMEM : c->fd < 0 || c->wake_fd < 0 ? -errno : 0;
    if (!rc)
        rc = epoll_add(c->fd, c->listen_fd, EPOLLIN, TAG_LISTEN);
    if (!rc)
        rc = epoll_add(c->fd, c->wake_fd, EPOLLIN, TAG_WAKE);
    if (rc) {
        snprintf(err, errcap, "cannot set up the control endpoint %s: %s", endpoint,
                 strerror(-rc));
        ctl_server_unlink(c);
        ctl_server_close(c);
        return rc;
    }
    c->listening = 1;
    c->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    c->budget = CTL_SERVER_BATCH;
    return 0;
}

const char *ctl_server_endpoint(const struct ctl_server *c)
{
    return c->bound;
}

uint32_t ctl_server_connections(const struct ctl_server *c)
{
    return c->nconns;
}

/* ---- connections ---------------------------------------------------------------- */

static void conn_close(struct ctl_server *c, struct ctl_conn *k)
{
    epoll_ctl(c->fd, EPOLL_CTL_DEL, k->fd, NULL);
    close(k->fd);
    if (k->pending)
        c->pending--;
    c->conns[k->slot] = NULL;
    c->nconns--;
    ctl_zmtp_free(&k->z);
    free(k->out);
    free(k);
}

/* The server closes k (not the peer): counted, and said once in a while. */
static void conn_drop(struct ctl_server *c, struct ctl_conn *k, const char *why)
{
    c->closed++;
    if (k->cred_known)
        col_log_limited(&c->rl_conn, COL_LOG_INFO, "control: closed a connection of uid %u "
                        "(pid %u): %s; %" PRIu64 " closed so far", k->uid, k->pid, why, c->closed);
    else
        col_log_limited(&c->rl_conn, COL_LOG_INFO, "control: closed a connection: %s; %" PRIu64
                        " closed so far", why, c->closed);
    conn_close(c, k);
}

static void set_pending(struct ctl_server *c, struct ctl_conn *k, int on)
{
    if (on && !k->pending)
        c->pending++;
    else if (!on && k->pending)
        c->pending--;
    k->pending = on;
}

/* Send what k->out holds: 0 (all sent, or the rest waits for EPOLLOUT) or
 * -errno (the peer is gone: close it). */
static int conn_flush(struct ctl_server *c, struct ctl_conn *k, uint64_t now)
{
    while (k->out_pos < k->out_len) {
        ssize_t n = send(k->fd, k->out + k->out_pos, k->out_len - k->out_pos,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!k->t_out) {
                k->t_out = now;
                struct epoll_event ev = { .events = EPOLLOUT, .data.u64 = k->slot };
                epoll_ctl(c->fd, EPOLL_CTL_MOD, k->fd, &ev);
            }
            return 0;
        }
        if (n <= 0)
            return n < 0 ? -errno : -EPIPE;
        k->out_pos += (size_t)n;
        k->t_active = now;
    }
    free(k->out);
    k->out = NULL;
    k->out_pos = k->out_len = 0;
    if (k->t_out) {
        k->t_out = 0;
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = k->slot };
        epoll_ctl(c->fd, EPOLL_CTL_MOD, k->fd, &ev);
    }
    set_pending(c, k, k->in_pos < k->in_len);
    return 0;
}

/* Queue buf (owned from here) on k and send what the socket takes. */
static int conn_send(struct ctl_server *c, struct ctl_conn *k, uint8_t *buf, size_t len,
                     uint64_t now)
{
    k->out = buf;
    k->out_pos = 0;
    k->out_len = len;
    set_pending(c, k, 0);           /* nothing is read while a reply waits */
    return conn_flush(c, k, now);
}

/* The longest idle handshaken connection of uid (any uid with all), idle
 * and between messages for CTL_SERVER_EVICT_IDLE_NS: the one a new
 * connection may replace. NULL: none. */
static struct ctl_conn *evictable(struct ctl_server *c, uint32_t uid, int all, uint64_t now)
{
    struct ctl_conn *best = NULL;
    for (uint32_t i = 0; i < c->conn_max; i++) {
        struct ctl_conn *k = c->conns[i];
        if (!k || (!all && k->uid != uid) || !ctl_zmtp_open(&k->z) || ctl_zmtp_partial(&k->z) ||
            k->out || k->pending || now - k->t_active < CTL_SERVER_EVICT_IDLE_NS)
            continue;
        if (!best || k->t_active < best->t_active)
            best = k;
    }
    return best;
}

static uint32_t count_uid(const struct ctl_server *c, uint32_t uid)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->conn_max; i++)
        n += c->conns[i] && c->conns[i]->uid == uid;
    return n;
}

static void refuse(struct ctl_server *c, int fd, int cred_known, uint32_t uid, const char *why)
{
    close(fd);
    c->refused++;
    if (cred_known)
        col_log_limited(&c->rl_conn, COL_LOG_WARN, "control: refused a connection of uid %u: "
                        "%s; %" PRIu64 " refused so far", uid, why, c->refused);
    else
        col_log_limited(&c->rl_conn, COL_LOG_WARN, "control: refused a connection: %s; %" PRIu64
                        " refused so far", why, c->refused);
}

/* A new connection fd: credentials, caps, a slot, the hello. */
static void admit(struct ctl_server *c, int fd, uint64_t now)
{
    int cred_known = 0;
    uint32_t uid = CTL_SERVER_UID_UNKNOWN, pid = 0;
    if (c->ipc_path[0]) {
        struct ucred cr;
        socklen_t l = sizeof cr;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) == 0 && l == sizeof cr) {
            cred_known = 1;
            uid = (uint32_t)cr.uid;
            pid = (uint32_t)cr.pid;
        }
    }
    if (uid != 0 && count_uid(c, uid) >= c->uid_max) {
        struct ctl_conn *old = evictable(c, uid, 0, now);
        if (!old) {
            refuse(c, fd, cred_known, uid, "its user holds as many as one user may");
            return;
        }
        conn_drop(c, old, "its user's idle connection, for a new one over the per-user cap");
    }
    if (c->nconns >= c->conn_max) {
        struct ctl_conn *old = evictable(c, 0, 1, now);
        if (!old) {
            refuse(c, fd, cred_known, uid, "the collector holds as many as it may");
            return;
        }
        conn_drop(c, old, "idle, for a new connection (the table was full)");
    }
    uint32_t slot = c->rr;
    for (uint32_t i = 0; i < c->conn_max && c->conns[slot]; i++)
        slot = (slot + 1) % c->conn_max;
    struct ctl_conn *k = calloc(1, sizeof *k);
    size_t hl;
    const uint8_t *hello = ctl_zmtp_hello(&hl);
    uint8_t *out = malloc(hl);
    if (!k || !out || c->conns[slot]) {
        free(k);
        free(out);
        refuse(c, fd, cred_known, uid, "out of memory");
        return;
    }
    memcpy(out, hello, hl);
    k->fd = fd;
    k->slot = slot;
    k->gen = ++g_gen;
    k->cred_known = cred_known;
    k->uid = uid;
    k->pid = pid;
    k->t_accept = k->t_active = k->t_partial = now;
    ctl_zmtp_init(&k->z, CTL_SERVER_MSG_MAX);
    if (epoll_add(c->fd, fd, EPOLLIN, slot) != 0) {
        ctl_zmtp_free(&k->z);
        free(k);
        free(out);
        refuse(c, fd, cred_known, uid, "cannot watch it");
        return;
    }
    c->conns[slot] = k;
    c->nconns++;
    if (conn_send(c, k, out, hl, now) < 0)
        conn_close(c, k);
}

/* The listener is readable: accept what is pending (a batch at a time). */
static void accept_some(struct ctl_server *c, uint64_t now)
{
    for (int i = 0; i < CTL_SERVER_EVENTS; i++) {
        int fd = accept4(c->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            admit(c, fd, now);
            continue;
        }
        int e = errno;
        if (e == EINTR || e == ECONNABORTED || e == EPROTO)
            continue;
        if (e == EMFILE || e == ENFILE) {
            /* out of descriptors: take the pending connection with the spare
             * one and close it (so the listener does not stay readable), then
             * stop accepting for a while */
            if (c->spare_fd >= 0) {
                close(c->spare_fd);
                int k = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC);
                if (k >= 0)
                    close(k);
                c->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
            }
            c->refused++;
            col_log_limited(&c->rl_conn, COL_LOG_WARN, "control: out of file descriptors (%s): "
                            "not accepting connections for %llu ms; %" PRIu64 " refused so far",
                            strerror(e), CTL_SERVER_PAUSE_NS / 1000000ull, c->refused);
            if (c->listening && epoll_ctl(c->fd, EPOLL_CTL_DEL, c->listen_fd, NULL) == 0)
                c->listening = 0;
            c->paused_until = now + CTL_SERVER_PAUSE_NS;
        } else if (e != EAGAIN && e != EWOULDBLOCK) {
            col_log_limited(&c->rl_conn, COL_LOG_WARN, "control: accept: %s", strerror(e));
        }
        return;
    }
}

/* k is readable: read what fits. */
static void conn_read(struct ctl_server *c, struct ctl_conn *k, uint64_t now)
{
    if (k->in_pos > 0) {
        memmove(k->in, k->in + k->in_pos, k->in_len - k->in_pos);
        k->in_len -= k->in_pos;
        k->in_pos = 0;
    }
    if (k->in_len == sizeof k->in)
        return;
    ssize_t n;
    do
        n = recv(k->fd, k->in + k->in_len, sizeof k->in - k->in_len, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n > 0) {
        k->in_len += (size_t)n;
        k->t_active = now;
        set_pending(c, k, 1);
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        conn_close(c, k);               /* the peer went away */
    }
}

/* Take what the epoll set has: 1 when there was something, 0 when not, or -errno. */
static int poll_events(struct ctl_server *c, uint64_t now)
{
    struct epoll_event ev[CTL_SERVER_EVENTS];
    int n = epoll_wait(c->fd, ev, CTL_SERVER_EVENTS, 0);
    if (n < 0)
        return errno == EINTR ? 0 : -errno;
    for (int i = 0; i < n; i++) {
        uint64_t tag = ev[i].data.u64;
        if (tag == TAG_LISTEN) {
            accept_some(c, now);
            continue;
        }
        if (tag == TAG_WAKE) {
            uint64_t v;
            if (read(c->wake_fd, &v, sizeof v) < 0 && errno != EAGAIN)
                return -errno;
            continue;
        }
        struct ctl_conn *k = tag < c->conn_max ? c->conns[tag] : NULL;
        if (!k)
            continue;                   /* closed earlier in this batch */
        if (ev[i].events & EPOLLOUT) {
            if (conn_flush(c, k, now) < 0)
                conn_close(c, k);
        } else if (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
            conn_read(c, k, now);
        }
    }
    return n > 0;
}

/* ---- requests ------------------------------------------------------------------- */

static void malformed(struct ctl_server *c, const char *why, uint32_t nframes)
{
    c->malformed++;
    col_log_limited(&c->rl, COL_LOG_WARN, "control: dropped a malformed message (%s, %" PRIu32
                    " frames); %llu so far", why, nframes, (unsigned long long)c->malformed);
}

/* Decode k's buffered input: 1 and *m for a request, 0 when it needs more
 * (or was closed). Malformed messages are counted on the way. */
static int conn_decode(struct ctl_server *c, struct ctl_conn *k, struct ctl_server_msg *m,
                       uint64_t now)
{
    while (k->pending && !k->out) {
        struct ctl_zmtp_msg zm;
        size_t used = 0;
        int ev = ctl_zmtp_feed(&k->z, k->in + k->in_pos, k->in_len - k->in_pos, &used, &zm);
        k->in_pos += used;
        if (k->in_pos == k->in_len) {          /* all of it decoded */
            k->in_pos = k->in_len = 0;
            set_pending(c, k, 0);
        }
        if (ev == CTL_ZMTP_ERROR) {
            conn_drop(c, k, k->z.error);
            return 0;
        }
        k->t_partial = ctl_zmtp_partial(&k->z) ? (k->t_partial ? k->t_partial : now) : 0;
        if (ev != CTL_ZMTP_MESSAGE)
            continue;
        static const uint8_t none[1];
        const char *why = NULL;
        D9__Request *req = NULL;
        if (zm.nframes != 2)
            why = "expected [empty][request]";
        else if (zm.first_len != 0)
            why = "non-empty delimiter frame";
        else if (!(req = d9__request__unpack(NULL, zm.second_len,
                                             zm.second ? zm.second : none)))
            why = "undecodable d9.Request";
        else if (req->body_case == D9__REQUEST__BODY__NOT_SET)
            why = "d9.Request without a body";
        if (why) {
            if (req)
                d9__request__free_unpacked(req, NULL);
            malformed(c, why, zm.nframes);
            continue;
        }
        memcpy(m->ident, &k->slot, sizeof k->slot);
        memcpy(m->ident + sizeof k->slot, &k->gen, sizeof k->gen);
        m->ident_len = CTL_SERVER_IDENT_LEN;
        m->req = req;
        m->cred_known = k->cred_known;
        m->uid = k->cred_known ? k->uid : 0;
        m->pid = k->pid;
        c->requests++;
        return 1;
    }
    return 0;
}

/* Leaving with input in our buffers: keep the set readable so the caller
 * comes back. 0 or -errno. */
static int wake_if_pending(struct ctl_server *c)
{
    uint64_t one = 1;
    if (c->pending && write(c->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
        return -errno;
    return 0;
}

int ctl_server_recv(struct ctl_server *c, struct ctl_server_msg *m)
{
    memset(m, 0, sizeof *m);
    uint64_t now = shm_mono_ns();
    if (now >= c->next_sweep)
        ctl_server_tick(c, now);
    /* a flood of connections must not keep the caller here: a few rounds of
     * events per call, then back to the loop (the set stays readable) */
    for (int round = 0; round < CTL_SERVER_POLL_ROUNDS; round++) {
        if (c->budget == 0)
            return wake_if_pending(c);
        if (c->pending) {
            for (uint32_t i = 0; i < c->conn_max && c->pending; i++) {
                uint32_t s = (c->rr + i) % c->conn_max;
                struct ctl_conn *k = c->conns[s];
                if (!k || !k->pending || k->out)
                    continue;
                if (conn_decode(c, k, m, now) == 1) {
                    c->rr = (s + 1) % c->conn_max;     /* one request per connection per turn */
                    c->budget--;
                    return 1;
                }
            }
        }
        int rc = poll_events(c, now);
        if (rc <= 0 && !c->pending)
            return rc;
    }
    return wake_if_pending(c);
}

int ctl_server_reply(struct ctl_server *c, const struct ctl_server_msg *m, const D9__Reply *reply)
{
    uint32_t slot, gen;
    if (m->ident_len != CTL_SERVER_IDENT_LEN)
        return -ENOTCONN;
    memcpy(&slot, m->ident, sizeof slot);
    memcpy(&gen, m->ident + sizeof slot, sizeof gen);
    struct ctl_conn *k = slot < c->conn_max ? c->conns[slot] : NULL;
    if (!k || k->gen != gen)
        return -ENOTCONN;           /* gone since: the reply is lost, as the peer is */
    if (k->out)
        return -EBUSY;              /* one reply at a time (never: nothing is read meanwhile) */
    size_t len = d9__reply__get_packed_size(reply);
    uint8_t h0[CTL_ZMTP_HDR_MAX], h1[CTL_ZMTP_HDR_MAX];
    size_t l0 = ctl_zmtp_frame_hdr(h0, 0, 1), l1 = ctl_zmtp_frame_hdr(h1, len, 0);
    uint8_t *buf = malloc(l0 + l1 + len);
    if (!buf)
        return -ENOMEM;
    memcpy(buf, h0, l0);
    memcpy(buf + l0, h1, l1);
    d9__reply__pack(reply, buf + l0 + l1);
    uint64_t now = shm_mono_ns();
    int rc = conn_send(c, k, buf, l0 + l1 + len, now);
    if (rc < 0)
        conn_close(c, k);
    return rc < 0 ? -ENOTCONN : 0;
}

void ctl_server_msg_done(struct ctl_server_msg *m)
{
    if (m->req)
        d9__request__free_unpacked(m->req, NULL);
    m->req = NULL;
}

void ctl_server_tick(struct ctl_server *c, uint64_t now)
{
    c->budget = CTL_SERVER_BATCH;
    if (!c->listening && c->listen_fd >= 0 && now >= c->paused_until &&
        epoll_add(c->fd, c->listen_fd, EPOLLIN, TAG_LISTEN) == 0)
        c->listening = 1;
    if (now < c->next_sweep || !c->conns)
        return;
    c->next_sweep = now + CTL_SERVER_SWEEP_NS;
    for (uint32_t i = 0; i < c->conn_max; i++) {
        struct ctl_conn *k = c->conns[i];
        if (!k)
            continue;
        if (!ctl_zmtp_open(&k->z) && now - k->t_accept > CTL_SERVER_HANDSHAKE_NS)
            conn_drop(c, k, "no handshake in time");
        else if (k->out && k->t_out && now - k->t_out > CTL_SERVER_WRITE_NS)
            conn_drop(c, k, "it does not read its replies");
        else if (ctl_zmtp_open(&k->z) && k->t_partial && now - k->t_partial > CTL_SERVER_MSG_NS)
            conn_drop(c, k, "a message not finished in time");
        else if (now - k->t_active > CTL_SERVER_IDLE_NS)
            conn_drop(c, k, "idle");
    }
}

int ctl_server_may_see(const struct ctl_server_msg *m, uint32_t owner_uid)
{
    return m->cred_known && (m->uid == 0 || m->uid == owner_uid);
}

void ctl_server_close(struct ctl_server *c)
{
    if (c->conns) {
        for (uint32_t i = 0; i < c->conn_max; i++)
            if (c->conns[i])
                conn_close(c, c->conns[i]);
        free(c->conns);
        c->conns = NULL;
    }
    if (c->fd >= 0)
        close(c->fd);
    if (c->listen_fd >= 0)
        close(c->listen_fd);
    if (c->wake_fd >= 0)
        close(c->wake_fd);
    if (c->spare_fd >= 0)
        close(c->spare_fd);
    c->fd = c->listen_fd = c->wake_fd = c->spare_fd = -1;
}

void ctl_server_unlink(struct ctl_server *c)
{
    struct stat st;
    if (!c->ipc_path[0] || !c->ipc_ino || lstat(c->ipc_path, &st) != 0)
        return;
    if (S_ISSOCK(st.st_mode) && (uint64_t)st.st_dev == c->ipc_dev &&
        (uint64_t)st.st_ino == c->ipc_ino)
        unlink(c->ipc_path);
    c->ipc_ino = 0;
}
