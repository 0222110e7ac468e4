/*
 * serve_guard.h — which requests `d9 serve` answers at all: the Host and
 * Origin headers against the listen address and the names the user allows.
 *
 * Why: a web page on any site can make the browser resolve its own name to
 * 127.0.0.1 (DNS rebinding) and then read `http://evil.example:PORT/api/...`
 * as same-origin; the only trace of the attack on our side is the Host
 * header, which names the attacker's domain. So a request is answered only
 * when its Host is
 *   - an IP address literal (IPv4 dotted quad or [IPv6]): no attacker can
 *     serve his page from our address, so a literal is never a rebinding;
 *   - "localhost" (browsers resolve it to loopback themselves);
 *   - or a name given with --allow-host (compared without case and without
 *     one trailing dot);
 * and its port, when it names one, is the port we listen on (no port: only
 * when we listen on 80). A request with an Origin header (browsers send it
 * on cross-origin requests and on anything but GET/HEAD) is answered only
 * when the Origin is http://HOST[:PORT] with a HOST and port passing the
 * same rule; "null" and other schemes are refused. A refusal is a 403 whose
 * reason is one line.
 *
 * Called by cli_serve.c (per request) and tests/unit/test_serve_guard.c,
 * tests/fuzz/fuzz_serve_guard.c. Headers are untrusted bytes: any length,
 * any content; nothing is copied past SERVE_GUARD_NAME_MAX. Pure: no I/O,
 * no allocation after setup, no global state (called from any thread).
 */
#ifndef D9_COL_SERVE_GUARD_H
#define D9_COL_SERVE_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SERVE_GUARD_NAME_MAX   254u    /* a DNS name's longest text form + NUL */
#define SERVE_GUARD_NAMES_MAX  16u     /* --allow-host given at most this often */
#define SERVE_GUARD_HTTP_PORT  80u     /* a Host without a port means this one */

struct serve_guard {
    uint16_t port;                      /* the port we listen on */
    unsigned n;
    char names[SERVE_GUARD_NAMES_MAX][SERVE_GUARD_NAME_MAX];
};

void serve_guard_init(struct serve_guard *g, uint16_t port);

/* Allow one more host name. 0, -EINVAL (not a host name: empty, too long,
 * characters other than letters, digits, '-' and '.') or -ENOSPC. */
int serve_guard_allow(struct serve_guard *g, const char *name);

/* May this request be answered? host and origin are the header values
 * (NULL when absent). 0, or -EPERM with a one-line reason in why. */
int serve_guard_check(const struct serve_guard *g, const char *host, const char *origin,
                      char *why, size_t whycap);

#endif /* D9_COL_SERVE_GUARD_H */
