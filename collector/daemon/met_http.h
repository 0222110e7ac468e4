/*
 * met_http.h — the --metrics HTTP endpoint: GET /metrics answers the last
 * text the drain thread published (Prometheus 0.0.4, or OpenMetrics 1.0).
 *
 * Threads: libmicrohttpd runs its own thread (one epoll thread for every
 * connection); the drain thread never waits for it. The drain thread
 * renders the text (met.h) into its own buffer and met_http_publish swaps
 * it with the published one under a mutex taken with trylock: when a
 * request is copying the text at that moment, the publish is skipped and
 * tried again at the next one, so the drain never blocks on a scrape. A
 * request copies the published text under the mutex (a memcpy) and sends
 * the copy.
 *
 * The requests are hostile input: only the method, the path and the
 * Accept header are looked at (GET or HEAD, "/metrics" exactly, query
 * ignored; anything else 404, other methods 405; an Accept that prefers
 * OpenMetrics gets the text rewritten by met_om.h, on this thread, from the
 * request's copy), nothing else is parsed beyond what libmicrohttpd does,
 * connections are bounded (MET_HTTP_CONN_LIMIT, MET_HTTP_TIMEOUT_S,
 * MET_HTTP_CONN_MEMORY) and a request that sends a body is closed
 * without an answer.
 *
 * Called by d9collectd.c. Must never: block the drain thread, or answer
 * with anything but the published text.
 */
#ifndef D9_DAEMON_MET_HTTP_H
#define D9_DAEMON_MET_HTTP_H

#include <netinet/in.h>
#include <stddef.h>

#define MET_HTTP_CONN_LIMIT  64u    /* scrapers are few */
#define MET_HTTP_TIMEOUT_S   10u    /* idle or slow connections are closed */
#define MET_HTTP_CONN_MEMORY (32u * 1024u)
#define MET_HTTP_PATH        "/metrics"

struct met_http;

/* Listen on *sin (bound here: the error is known at start-up) and serve.
 * 0 or -errno with one line in err. */
int met_http_start(struct met_http **out, const struct sockaddr_in *sin, char *err,
                   size_t errcap);
void met_http_stop(struct met_http *h);
/* The port listened on (the kernel's pick for port 0). */
unsigned met_http_port(const struct met_http *h);

/* Offer *buf (len bytes, malloc'd) as the published text. On success the
 * server owns it and buf, len and cap get the previous buffer back (or NULL)
 * for the next render; -EBUSY (a request is copying: try at the next
 * publish) leaves them alone. */
int met_http_publish(struct met_http *h, char **buf, size_t *len, size_t *cap);

#endif /* D9_DAEMON_MET_HTTP_H */
