/*
 * ctl_zmtp.c — ZMTP 3.0 server-side decoding and the server's hello (see
 * ctl_zmtp.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "collector/ctl/ctl_zmtp.h"

enum { PH_GREETING, PH_HANDSHAKE, PH_OPEN };

/* frame flags (RFC 23) */
#define F_MORE     0x01u
#define F_LONG     0x02u
#define F_COMMAND  0x04u
#define F_RESERVED 0xf8u

/* greeting layout */
#define G_SIG_END     9         /* signature: 0xFF, 8 bytes padding, 0x7F */
#define G_MAJOR       10
#define G_MECH        12
#define G_MECH_LEN    20
#define ZMTP_MAJOR    3

static const uint8_t hello[] = {
    /* greeting: signature, version 3.0, mechanism NULL, as-server 0, filler */
    0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 3, 0,
    'N', 'U', 'L', 'L', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* READY: a short command of 28 bytes: name, then Socket-Type = ROUTER */
    F_COMMAND, 28, 5, 'R', 'E', 'A', 'D', 'Y',
    11, 'S', 'o', 'c', 'k', 'e', 't', '-', 'T', 'y', 'p', 'e', 0, 0, 0, 6,
    'R', 'O', 'U', 'T', 'E', 'R',
};
_Static_assert(sizeof hello == CTL_ZMTP_GREETING_SIZE + 2 + 28, "hello layout");

const uint8_t *ctl_zmtp_hello(size_t *len)
{
    *len = sizeof hello;
    return hello;
}

size_t ctl_zmtp_frame_hdr(uint8_t out[CTL_ZMTP_HDR_MAX], uint64_t size, int more)
{
    uint8_t f = more ? F_MORE : 0;
    if (size <= UINT8_MAX) {
        out[0] = f;
        out[1] = (uint8_t)size;
        return 2;
    }
    out[0] = f | F_LONG;
    for (int i = 0; i < 8; i++)
        out[1 + i] = (uint8_t)(size >> (8 * (7 - i)));
    return 9;
}

void ctl_zmtp_init(struct ctl_zmtp *z, size_t frame_max)
{
    memset(z, 0, sizeof *z);
    z->phase = PH_GREETING;
    z->frame_max = frame_max;
}

void ctl_zmtp_free(struct ctl_zmtp *z)
{
    free(z->buf);
    z->buf = NULL;
    z->cap = 0;
}

int ctl_zmtp_partial(const struct ctl_zmtp *z)
{
    return z->phase != PH_OPEN || z->hdr_got > 0 || z->in_frame || z->nframes > 0;
}

int ctl_zmtp_open(const struct ctl_zmtp *z)
{
    return z->phase == PH_OPEN;
}

static int fail(struct ctl_zmtp *z, const char *why)
{
    z->error = why;
    return CTL_ZMTP_ERROR;
}

/* The greeting so far (got bytes): 0, or a protocol error. */
static int check_greeting(struct ctl_zmtp *z, size_t got)
{
    const uint8_t *g = z->greeting;
    if (got > 0 && g[0] != 0xff)
        return fail(z, "not a ZMTP peer (bad signature)");
    if (got > G_SIG_END && !(g[G_SIG_END] & 1))
        return fail(z, "a ZMTP 1.0 peer (3.0 or later needed)");
    if (got > G_MAJOR && g[G_MAJOR] < ZMTP_MAJOR)
        return fail(z, "a ZMTP 1.0 or 2.0 peer (3.0 or later needed)");
    if (got == CTL_ZMTP_GREETING_SIZE) {
        static const uint8_t null_mech[G_MECH_LEN] = { 'N', 'U', 'L', 'L' };
        if (memcmp(g + G_MECH, null_mech, G_MECH_LEN) != 0)
            return fail(z, "a security mechanism other than NULL");
    }
    return 0;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The peer's handshake command in buf[0, len): READY with an acceptable
 * Socket-Type, or a protocol error. */
static int check_ready(struct ctl_zmtp *z, const uint8_t *b, size_t len)
{
    if (len < 1 || len < 1u + b[0])
        return fail(z, "a malformed handshake command");
    size_t nl = b[0];
    if (nl == 5 && !memcmp(b + 1, "ERROR", 5))
        return fail(z, "the peer sent ERROR");
    if (nl != 5 || memcmp(b + 1, "READY", 5) != 0)
        return fail(z, "a handshake command other than READY");
    size_t p = 1 + nl;
    int type_ok = 0, type_seen = 0;
    while (p < len) {
        size_t kl = b[p++];
        if (kl == 0 || kl > len - p)
            return fail(z, "a malformed READY property name");
        const uint8_t *k = b + p;
        p += kl;
        if (len - p < 4)
            return fail(z, "a malformed READY property");
        uint32_t vl = be32(b + p);
        p += 4;
        if (vl > len - p)
            return fail(z, "a READY property longer than the command");
        const uint8_t *v = b + p;
        p += vl;
        if (kl == 11 && !memcmp(k, "Socket-Type", 11)) {
            type_seen++;
            type_ok = (vl == 6 && !memcmp(v, "DEALER", 6)) || (vl == 3 && !memcmp(v, "REQ", 3)) ||
                      (vl == 6 && !memcmp(v, "ROUTER", 6));
        }
    }
    if (type_seen != 1 || !type_ok)
        return fail(z, "a socket type a ROUTER does not talk to");
    return 0;
}

/* Make room for a kept body of size bytes: 0 or -ENOMEM. */
static int reserve(struct ctl_zmtp *z, uint64_t size)
{
    if (size <= z->cap)
        return 0;
    size_t cap = size < 256 ? 256 : (size_t)size;
    uint8_t *n = realloc(z->buf, cap);
    if (!n)
        return -ENOMEM;
    z->buf = n;
    z->cap = cap;
    return 0;
}

/* A frame header is complete: check it and set up its body. */
static int begin_frame(struct ctl_zmtp *z)
{
    uint8_t f = z->hdr[0];
    uint64_t size = 0;
    if (f & F_LONG)
        for (int i = 1; i <= 8; i++)
            size = size << 8 | z->hdr[i];
    else
        size = z->hdr[1];
    z->flags = f;
    z->size = size;
    z->got = 0;
    z->keep = 0;
    if (z->phase == PH_HANDSHAKE) {
        if (!(f & F_COMMAND) || (f & F_MORE))
            return fail(z, "a message before the handshake");
        if (size > CTL_ZMTP_CMD_MAX)
            return fail(z, "a handshake command over the size limit");
        z->keep = 1;
    } else if (f & F_COMMAND) {
        if (z->nframes > 0)
            return fail(z, "a command inside a message");
        if (size > z->frame_max)
            return fail(z, "a command over the size limit");
    } else {
        if (size > z->frame_max)
            return fail(z, "a frame over the size limit");
        if (z->nframes == 0)
            z->first_len = size;
        z->keep = z->nframes == 1;     /* the second frame: the request */
        if (z->nframes < UINT32_MAX)
            z->nframes++;
    }
    if (z->keep && reserve(z, size) < 0)
        return fail(z, "out of memory");
    z->in_frame = 1;
    return 0;
}

/* The current frame's body is complete: an event, or CTL_ZMTP_MORE to go on. */
static int end_frame(struct ctl_zmtp *z, struct ctl_zmtp_msg *m)
{
    z->in_frame = 0;
    z->hdr_got = 0;
    if (z->phase == PH_HANDSHAKE) {
        if (check_ready(z, z->buf, (size_t)z->size) < 0)
            return CTL_ZMTP_ERROR;
        z->phase = PH_OPEN;
        return CTL_ZMTP_READY;
    }
    if (z->flags & F_COMMAND)
        return CTL_ZMTP_MORE;          /* skipped */
    if (z->keep)
        z->second_len = (size_t)z->size;
    if (z->flags & F_MORE)
        return CTL_ZMTP_MORE;
    m->nframes = z->nframes;
    m->first_len = z->first_len;
    m->second = z->nframes >= 2 ? z->buf : NULL;
    m->second_len = z->nframes >= 2 ? z->second_len : 0;
    z->nframes = 0;
    z->first_len = 0;
    z->second_len = 0;
    return CTL_ZMTP_MESSAGE;
}

int ctl_zmtp_feed(struct ctl_zmtp *z, const uint8_t *in, size_t len, size_t *used,
                  struct ctl_zmtp_msg *m)
{
    size_t p = 0;
    *used = 0;
    if (z->error)
        return CTL_ZMTP_ERROR;
    /* a large buffer from the last message is not kept while idle */
    if (!z->in_frame && z->nframes == 0 && z->cap > CTL_ZMTP_KEEP_MAX)
        ctl_zmtp_free(z);
    while (p < len) {
        if (z->phase == PH_GREETING) {
            size_t take = CTL_ZMTP_GREETING_SIZE - z->greeting_got;
            if (take > len - p)
                take = len - p;
            memcpy(z->greeting + z->greeting_got, in + p, take);
            z->greeting_got += take;
            p += take;
            if (check_greeting(z, z->greeting_got) < 0)
                return CTL_ZMTP_ERROR;
            if (z->greeting_got == CTL_ZMTP_GREETING_SIZE)
                z->phase = PH_HANDSHAKE;
            continue;
        }
        if (!z->in_frame) {
            size_t need = z->hdr_got == 0 ? 1 : (z->hdr[0] & F_LONG) ? CTL_ZMTP_HDR_MAX : 2;
            while (z->hdr_got < need && p < len) {
                z->hdr[z->hdr_got++] = in[p++];
                if (z->hdr_got == 1) {
                    if (z->hdr[0] & F_RESERVED) {
                        *used = p;
                        return fail(z, "reserved frame flag bits set");
                    }
                    need = (z->hdr[0] & F_LONG) ? CTL_ZMTP_HDR_MAX : 2;
                }
            }
            if (z->hdr_got < need)
                break;
            if (begin_frame(z) < 0) {
                *used = p;
                return CTL_ZMTP_ERROR;
            }
        }
        uint64_t left = z->size - z->got;
        size_t take = left < (uint64_t)(len - p) ? (size_t)left : len - p;
        if (z->keep && take)
            memcpy(z->buf + z->got, in + p, take);
        z->got += take;
        p += take;
        if (z->got == z->size) {
            int ev = end_frame(z, m);
            if (ev != CTL_ZMTP_MORE) {
                *used = p;
                return ev;
            }
        }
    }
    *used = p;
    return CTL_ZMTP_MORE;
}
