/*
 * met_http.c — the --metrics endpoint over libmicrohttpd (see met_http.h).
 */
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "collector/daemon/met_http.h"
#include "collector/daemon/met_om.h"
#include "collector/daemon/met_text.h"
#include "collector/store/col_log.h"

#define MET_HTTP_BACKLOG 64

struct met_http {
    struct MHD_Daemon *d;
    int fd;
    unsigned port;
    pthread_mutex_t mu;         /* guards text, len, cap */
    char *text;
    size_t len, cap;
    int have_text;              /* a first render was published */
};

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[256];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && line[n - 1] == '\n')
        line[--n] = 0;
    col_debug("metrics: %s", line);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, void *body, size_t len,
                             enum MHD_ResponseMemoryMode mode, const char *type)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
    if (!r) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "Vary", "Accept");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result plain(struct MHD_Connection *c, unsigned status, const char *msg)
{
    return reply(c, status, (void *)msg, strlen(msg), MHD_RESPMEM_PERSISTENT,
                 "text/plain; charset=utf-8");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls)
{
    struct met_http *h = cls;
    (void)version;
    (void)upload_data;
    if (*upload_size)
        return MHD_NO;          /* a body: nothing here takes one; the connection is closed */
    if (!*con_cls) {            /* headers only so far: answer at the next call */
        *con_cls = h;
        return MHD_YES;
    }
    int head = strcmp(method, "HEAD") == 0;
    if (strcmp(method, "GET") != 0 && !head)
        return plain(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n");
    if (strcmp(url, MET_HTTP_PATH) != 0)
        return plain(c, MHD_HTTP_NOT_FOUND, "not found: the metrics are at " MET_HTTP_PATH "\n");
    pthread_mutex_lock(&h->mu);
    if (!h->have_text) {
        pthread_mutex_unlock(&h->mu);
        return plain(c, MHD_HTTP_SERVICE_UNAVAILABLE, "no metrics yet\n");
    }
    size_t len = h->len;
    char *copy = malloc(len ? len : 1);
    if (copy)
        memcpy(copy, h->text, len);
    pthread_mutex_unlock(&h->mu);
    if (!copy)
        return plain(c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
    if (!met_om_wanted(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT)))
        return reply(c, MHD_HTTP_OK, copy, len, MHD_RESPMEM_MUST_FREE, MET_TEXT_CONTENT_TYPE);
    /* OpenMetrics: rewritten here, on this thread, from the request's own copy */
    struct met_text om;
    met_text_init(&om);
    int rc = met_om_from_text(copy, len, &om);
    free(copy);
    if (rc) {
        met_text_free(&om);
        return plain(c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
    }
    return reply(c, MHD_HTTP_OK, om.buf, om.len, MHD_RESPMEM_MUST_FREE, MET_OM_CONTENT_TYPE);
}

int met_http_start(struct met_http **out, const struct sockaddr_in *sin, char *err,
                   size_t errcap)
{
    *out = NULL;
    struct met_http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errcap, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_init(&h->mu, NULL);
    h->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    struct sockaddr_in bound;
    socklen_t bl = sizeof bound;
    if (h->fd < 0 || setsockopt(h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(h->fd, (const struct sockaddr *)sin, sizeof *sin) < 0 ||
        listen(h->fd, MET_HTTP_BACKLOG) < 0 || getsockname(h->fd, (struct sockaddr *)&bound, &bl) < 0) {
        int e = errno;
        snprintf(err, errcap, "%s", strerror(e));
        if (h->fd >= 0)
            close(h->fd);
        pthread_mutex_destroy(&h->mu);
        free(h);
        return -e;
    }
    h->port = ntohs(bound.sin_port);
    h->d = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                            on_request, h,
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
                            MHD_OPTION_LISTEN_SOCKET, h->fd,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)MET_HTTP_CONN_LIMIT,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)MET_HTTP_TIMEOUT_S,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MET_HTTP_CONN_MEMORY,
                            MHD_OPTION_END);
    if (!h->d) {
        snprintf(err, errcap, "cannot start the HTTP server");
        close(h->fd);
        pthread_mutex_destroy(&h->mu);
        free(h);
        return -EIO;
    }
    *out = h;
    return 0;
}

void met_http_stop(struct met_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    close(h->fd);
    pthread_mutex_destroy(&h->mu);
    free(h->text);
    free(h);
}

unsigned met_http_port(const struct met_http *h)
{
    return h->port;
}

int met_http_publish(struct met_http *h, char **buf, size_t *len, size_t *cap)
{
    if (pthread_mutex_trylock(&h->mu) != 0)
        return -EBUSY;
    char *old = h->text;
    size_t old_cap = h->cap;
    h->text = *buf;
    h->len = *len;
    h->cap = *cap;
    h->have_text = 1;
    pthread_mutex_unlock(&h->mu);
    *buf = old;
    *len = 0;
    *cap = old_cap;
    return 0;
}
