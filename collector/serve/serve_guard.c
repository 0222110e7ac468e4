/*
 * serve_guard.c — the Host / Origin rule of d9 serve (see serve_guard.h).
 *
 * A header value is split into host and port in place of a bounded copy;
 * the host is then an IP literal (inet_pton decides), "localhost" or an
 * allowed name. Nothing of the header is echoed in a reason: the reasons
 * are fixed text.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "collector/serve/serve_guard.h"

#define GUARD_HTTP_SCHEME  "http://"
#define GUARD_PORT_MAX     65535u

void serve_guard_init(struct serve_guard *g, uint16_t port)
{
    memset(g, 0, sizeof *g);
    g->port = port;
}

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.';
}

/* len bytes of s, without one trailing dot, as a host name: true when every
 * byte is a name character and the length fits. */
static bool valid_name(const char *s, size_t len)
{
    if (len && s[len - 1] == '.')
        len--;
    if (len == 0 || len >= SERVE_GUARD_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!name_char(s[i]))
            return false;
    return true;
}

int serve_guard_allow(struct serve_guard *g, const char *name)
{
    size_t len = strlen(name);
    if (!valid_name(name, len))
        return -EINVAL;
    if (g->n >= SERVE_GUARD_NAMES_MAX)
        return -ENOSPC;
    if (name[len - 1] == '.')
        len--;
    memcpy(g->names[g->n], name, len);
    g->names[g->n][len] = 0;
    g->n++;
    return 0;
}

static bool same_name(const char *a, const char *b, size_t blen)
{
    if (blen && b[blen - 1] == '.')
        blen--;
    return strlen(a) == blen && strncasecmp(a, b, blen) == 0;
}

/* "host[:port]" or "[v6][:port]" (len bytes, not NUL-terminated): true when
 * the host is one we answer for and the port ours. */
static bool host_ok(const struct serve_guard *g, const char *s, size_t len)
{
    const char *host = s, *port = NULL;
    size_t hlen = len, plen = 0;
    bool v6 = false;
    if (len && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close)
            return false;
        host = s + 1;
        hlen = (size_t)(close - host);
        size_t rest = len - (size_t)(close + 1 - s);
        if (rest) {
            if (close[1] != ':')
                return false;
            port = close + 2;
            plen = rest - 1;
        }
        v6 = true;
    } else {
        const char *colon = memchr(s, ':', len);
        if (colon) {
            hlen = (size_t)(colon - s);
            port = colon + 1;
            plen = len - hlen - 1;
        }
    }
    /* the port: digits only, our port; absent: only when we listen on 80 */
    unsigned long pv = SERVE_GUARD_HTTP_PORT;
    if (port) {
        if (plen == 0 || plen > 5)
            return false;
        pv = 0;
        for (size_t i = 0; i < plen; i++) {
            if (port[i] < '0' || port[i] > '9')
                return false;
            pv = pv * 10 + (unsigned long)(port[i] - '0');
        }
        if (pv > GUARD_PORT_MAX)
            return false;
    }
    if (pv != g->port)
        return false;
    char buf[SERVE_GUARD_NAME_MAX];
    if (hlen == 0 || hlen >= sizeof buf)
        return false;
    memcpy(buf, host, hlen);
    buf[hlen] = 0;
    unsigned char addr[sizeof(struct in6_addr)];
    if (v6)
        return inet_pton(AF_INET6, buf, addr) == 1;
    if (inet_pton(AF_INET, buf, addr) == 1)
        return true;
    if (!valid_name(buf, hlen))
        return false;
    if (same_name("localhost", buf, hlen))
        return true;
    for (unsigned i = 0; i < g->n; i++)
        if (same_name(g->names[i], buf, hlen))
            return true;
    return false;
}

int serve_guard_check(const struct serve_guard *g, const char *host, const char *origin,
                      char *why, size_t whycap)
{
    if (!host) {
        snprintf(why, whycap, "no Host header");
        return -EPERM;
    }
    if (!host_ok(g, host, strlen(host))) {
        snprintf(why, whycap, "Host header names a host this server does not answer for "
                 "(use its address or localhost, or start d9 serve with --allow-host NAME)");
        return -EPERM;
    }
    if (!origin)
        return 0;
    size_t sl = strlen(GUARD_HTTP_SCHEME), ol = strlen(origin);
    if (ol <= sl || strncasecmp(origin, GUARD_HTTP_SCHEME, sl) != 0 ||
        !host_ok(g, origin + sl, ol - sl)) {
        snprintf(why, whycap, "cross-origin request refused (Origin is not this server: "
                 "allow its host name with --allow-host NAME)");
        return -EPERM;
    }
    return 0;
}
