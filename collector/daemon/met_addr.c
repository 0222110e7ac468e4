/*
 * met_addr.c — the --metrics address (see met_addr.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "collector/daemon/met_addr.h"

#define MET_ADDR_HOST_MAX 16u       /* "255.255.255.255" and its NUL */
#define MET_ADDR_PORT_MAX 65535u
#define MET_ADDR_LOOPBACK "127.0.0.1"

/* Digits only, no sign, 0..65535. 0 or -EINVAL. */
static int parse_port(const char *s, uint16_t *port)
{
    uint32_t v = 0;
    if (!*s)
        return -EINVAL;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -EINVAL;
        v = v * 10u + (uint32_t)(*p - '0');
        if (v > MET_ADDR_PORT_MAX)
            return -EINVAL;
    }
    *port = (uint16_t)v;
    return 0;
}

int met_addr_parse(const char *s, struct sockaddr_in *sin)
{
    char host[MET_ADDR_HOST_MAX];
    const char *colon = strrchr(s, ':');
    const char *port_s = colon ? colon + 1 : s;
    if (colon) {
        size_t hl = (size_t)(colon - s);
        if (hl == 0 || hl >= sizeof host)
            return -EINVAL;
        memcpy(host, s, hl);
        host[hl] = 0;
        if (strcmp(host, "localhost") == 0)
            memcpy(host, MET_ADDR_LOOPBACK, sizeof MET_ADDR_LOOPBACK);
    } else {
        memcpy(host, MET_ADDR_LOOPBACK, sizeof MET_ADDR_LOOPBACK);
    }
    uint16_t port;
    if (parse_port(port_s, &port))
        return -EINVAL;
    memset(sin, 0, sizeof *sin);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    /* inet_pton takes dotted quads only (no "1", no hex, no octal) */
    return inet_pton(AF_INET, host, &sin->sin_addr) == 1 ? 0 : -EINVAL;
}

bool met_addr_loopback(const struct sockaddr_in *sin)
{
    return (ntohl(sin->sin_addr.s_addr) >> 24) == IN_LOOPBACKNET;
}
