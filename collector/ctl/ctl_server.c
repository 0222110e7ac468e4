/*
 * ctl_server.c — the control channel's ROUTER server over libzmq (see ctl_server.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>
#include "collector/ctl/ctl_client.h"
#include "collector/ctl/ctl_server.h"
#include "shm/paths.h"

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

int ctl_server_open(struct ctl_server *c, const char *endpoint, char *err, size_t errcap)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    int rc;
    if (paths_ipc_path(endpoint, c->ipc_path, sizeof c->ipc_path) == 0) {
        if ((rc = mkdir_parents(c->ipc_path))) {
            snprintf(err, errcap, "cannot create the directory of %s: %s", c->ipc_path,
                     strerror(-rc));
            return rc;
        }
    } else {
        c->ipc_path[0] = 0;
    }
    c->zctx = zmq_ctx_new();
    if (!c->zctx) {
        snprintf(err, errcap, "cannot create a ZeroMQ context: %s", zmq_strerror(errno));
        return -ENOMEM;
    }
    c->sock = zmq_socket(c->zctx, ZMQ_ROUTER);
    if (!c->sock) {
        rc = -errno;
        snprintf(err, errcap, "cannot create a ZeroMQ socket: %s", zmq_strerror(-rc));
        ctl_server_close(c);
        return rc;
    }
    int linger = 0, hwm = CTL_SERVER_SNDHWM;
    int64_t maxmsg = CTL_SERVER_MSG_MAX;
    zmq_setsockopt(c->sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(c->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(c->sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(c->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    if (c->ipc_path[0]) {
        /* a stale socket file from a crashed collector: connect would fail, bind
         * replaces it; a live collector is detected by asking it */
        struct stat st;
        if (lstat(c->ipc_path, &st) == 0 && (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid())) {
            snprintf(err, errcap, "cannot bind control endpoint %s: %s already exists and is "
                     "not a socket of ours (binding would replace it; left alone)", endpoint,
                     c->ipc_path);
            ctl_server_close(c);
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
                ctl_server_close(c);
                return -EADDRINUSE;
            }
        }
    }
    if (zmq_bind(c->sock, endpoint) != 0) {
        rc = -errno;
        snprintf(err, errcap, "cannot bind control endpoint %s: %s", endpoint,
                 zmq_strerror(-rc));
        ctl_server_close(c);
        return rc;
    }
    struct stat bst;
    if (c->ipc_path[0] && lstat(c->ipc_path, &bst) == 0 && S_ISSOCK(bst.st_mode)) {
        c->ipc_dev = (uint64_t)bst.st_dev;
        c->ipc_ino = (uint64_t)bst.st_ino;
    }
    if (c->ipc_path[0] && chmod(c->ipc_path, CTL_SERVER_SOCK_MODE) != 0)
        col_warn("cannot make %s connectable by every user: %s", c->ipc_path, strerror(errno));
    size_t fl = sizeof c->fd;
    if (zmq_getsockopt(c->sock, ZMQ_FD, &c->fd, &fl) != 0) {
        rc = -errno;
        snprintf(err, errcap, "cannot get the ZeroMQ socket fd: %s", zmq_strerror(-rc));
        ctl_server_close(c);
        return rc;
    }
    return 0;
}

void ctl_server_close(struct ctl_server *c)
{
    if (c->sock)
        zmq_close(c->sock);
    if (c->zctx)
        zmq_ctx_term(c->zctx);
    c->sock = c->zctx = NULL;
    c->fd = -1;
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

/* One decimal field of at most 32 bits in [s, e): 0 or -EINVAL. */
static int field_u32(const char *s, const char *e, uint32_t *out)
{
    uint64_t v = 0;
    if (s == e)
        return -EINVAL;
    for (const char *p = s; p < e; p++) {
        if (*p < '0' || *p > '9')
            return -EINVAL;
        v = v * 10 + (uint64_t)(*p - '0');
        if (v > UINT32_MAX)
            return -EINVAL;
    }
    *out = (uint32_t)v;
    return 0;
}

int ctl_server_peer_cred(const char *peer_address, uint32_t *uid, uint32_t *pid)
{
    if (!peer_address)
        return -EINVAL;
    /* the last three ':'-separated fields, read from the right */
    const char *end = peer_address + strlen(peer_address), *cut[4];
    cut[0] = end;
    for (int i = 1; i < 4; i++) {
        const char *p = cut[i - 1];
        while (p > peer_address && p[-1] != ':')
            p--;
        if (p == peer_address)
            return -EINVAL;     /* fewer than three separators */
        cut[i] = p - 1;         /* the ':' before field 3 - i */
    }
    uint32_t u, g, pd;
    if (field_u32(cut[3] + 1, cut[2], &u) || field_u32(cut[2] + 1, cut[1], &g) ||
        field_u32(cut[1] + 1, cut[0], &pd))
        return -EINVAL;
    *uid = u;
    *pid = pd;
    return 0;
}

int ctl_server_may_see(const struct ctl_server_msg *m, uint32_t owner_uid)
{
    return m->cred_known && (m->uid == 0 || m->uid == owner_uid);
}

/* The sender's credentials: the kernel's, through libzmq, on ipc:// only
 * (a TCP peer's address is an IP address, IPv6 ones have colons too). */
static void peer_cred(const struct ctl_server *c, zmq_msg_t *frame, struct ctl_server_msg *m)
{
    m->cred_known = 0;
    m->uid = m->pid = 0;
    if (!c->ipc_path[0])
        return;
    if (ctl_server_peer_cred(zmq_msg_gets(frame, "Peer-Address"), &m->uid, &m->pid) == 0)
        m->cred_known = 1;
    else
        m->uid = m->pid = 0;
}

static void malformed(struct ctl_server *c, const char *why, size_t nframes)
{
    c->malformed++;
    col_log_limited(&c->rl, COL_LOG_WARN, "control: dropped a malformed message (%s, %zu "
                    "frames); %llu so far", why, nframes, (unsigned long long)c->malformed);
}

int ctl_server_recv(struct ctl_server *c, struct ctl_server_msg *m)
{
    for (;;) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, c->sock, ZMQ_DONTWAIT) < 0) {
            int e = errno;
            zmq_msg_close(&part);
            if (e == EAGAIN || e == EINTR)
                return 0;
            return -e;
        }
        /* collect the frames of one message: keep the first three, count the rest */
        size_t nframes = 1;
        zmq_msg_t frames[3];
        frames[0] = part;
        int more = zmq_msg_more(&frames[0]);
        while (more) {
            zmq_msg_t x;
            zmq_msg_init(&x);
            if (zmq_msg_recv(&x, c->sock, ZMQ_DONTWAIT) < 0) {
                zmq_msg_close(&x);
                break;
            }
            more = zmq_msg_more(&x);
            if (nframes < 3)
                frames[nframes] = x;
            else
                zmq_msg_close(&x);
            nframes++;
        }
        size_t kept = nframes < 3 ? nframes : 3;
        const char *why = NULL;
        D9__Request *req = NULL;
        if (nframes != 3)
            why = "expected [identity][empty][request]";
        else if (zmq_msg_size(&frames[1]) != 0)
            why = "non-empty delimiter frame";
        else if (zmq_msg_size(&frames[0]) > CTL_SERVER_IDENT_MAX)
            why = "identity too long";
        else if (!(req = d9__request__unpack(NULL, zmq_msg_size(&frames[2]),
                                              zmq_msg_data(&frames[2]))))
            why = "undecodable d9.Request";
        else if (req->body_case == D9__REQUEST__BODY__NOT_SET)
            why = "d9.Request without a body";
        if (!why) {
            m->ident_len = zmq_msg_size(&frames[0]);
            memcpy(m->ident, zmq_msg_data(&frames[0]), m->ident_len);
            m->req = req;
            peer_cred(c, &frames[2], m);
            c->requests++;
        } else if (req) {
            d9__request__free_unpacked(req, NULL);
        }
        for (size_t i = 0; i < kept; i++)
            zmq_msg_close(&frames[i]);
        if (!why)
            return 1;
        malformed(c, why, nframes);
    }
}

int ctl_server_reply(struct ctl_server *c, const struct ctl_server_msg *m, const D9__Reply *reply)
{
    size_t len = d9__reply__get_packed_size(reply);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return -ENOMEM;
    d9__reply__pack(reply, buf);
    int rc = 0;
    if (zmq_send(c->sock, m->ident, m->ident_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(c->sock, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(c->sock, buf, len, ZMQ_DONTWAIT) < 0)
        rc = -errno;
    free(buf);
    return rc;
}

void ctl_server_msg_done(struct ctl_server_msg *m)
{
    if (m->req)
        d9__request__free_unpacked(m->req, NULL);
    m->req = NULL;
}
