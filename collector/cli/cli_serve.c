/*
 * cli_serve.c — `d9 serve`: a small HTTP server in the CLI that sends one
 * self-contained page (serve_page.html, compiled in; no internet at run
 * time) and answers its JSON API (serve_api.h) from the store.
 *
 * HTTP is Debian's libmicrohttpd with one internal epoll thread for all
 * socket I/O (an idle or slow client costs a descriptor, never a thread);
 * API requests are suspended and answered by serve_pool.h's workers, each
 * with its own store handle, so a cheap request never waits behind an
 * expensive one and this thread never reads the store. Requests are
 * untrusted: the Host and Origin headers must name this server
 * (serve_guard.h: no DNS rebinding), only GET and HEAD, no body, at most
 * SERVE_MAX_ARGS query arguments (each validated by serve_api_param),
 * bounded connection memory, a connection limit and a timeout; anything
 * else is a 4xx. Binds to loopback unless told otherwise, and warns when
 * told otherwise. The main thread waits for SIGINT/SIGTERM.
 *
 * Called by main.c. Must never write to the store.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/cli/cli.h"
#include "collector/cli/cli_live.h"
#include "collector/lazy/lazy.h"
#include "collector/serve/serve_api.h"
#include "collector/serve/serve_guard.h"
#include "collector/serve/serve_pool.h"
#include "collector/query/q_store.h"

#define SERVE_LISTEN_DEFAULT  CLI_SERVE_LISTEN
#define SERVE_MAX_ARGS        16u
/* Connections: one internal epoll thread does all socket I/O, so an idle or
 * slow client costs a descriptor and its (lazily touched) memory pool, not a
 * thread; the limit is set by descriptors. Idle connections close after the
 * timeout. Listening beyond loopback, one address may hold at most
 * SERVE_PER_IP_LIMIT (on loopback every client is 127.0.0.1: no per-IP cap). */
#define SERVE_CONN_LIMIT      8192u
#define SERVE_CONN_MIN        64u       /* when the descriptor limit allows no more */
#define SERVE_FD_RESERVE      (64u + 2u * SERVE_POOL_WORKERS_MAX + Q_READER_CACHE * SERVE_POOL_WORKERS_MAX)
#define SERVE_PER_IP_LIMIT    256u
#define SERVE_BACKLOG         1024
#define SERVE_TIMEOUT_S       15u
#define SERVE_CONN_MEMORY     (64u * 1024u)     /* per connection: request line + headers */

static const char page[] =
#include "collector/serve/serve_page.h"
    ;

static const char usage[] =
"NAME\n"
"    d9 serve - browse the store in a web browser: timeline, top polls, events\n"
"\n"
"SYNOPSIS\n"
"    d9 [--store DIR] serve [--listen ADDR:PORT] [--allow-host NAME]... [--threads N]\n"
"\n"
"DESCRIPTION\n"
"    Serves one self-contained page (no internet needed) and a JSON API over\n"
"    the store, then runs until interrupted (Ctrl-C). Open the printed URL.\n"
"    The page lists the processes (live and past) and draws, per worker\n"
"    thread, the polls coloured by location, parked spans, wakes as arrows\n"
"    from the waker to the wakee's next poll, queue depth and scheduling\n"
"    delay, CPU / off-CPU sample ticks and custom events as markers (fields\n"
"    on hover). Drag to pan, wheel to zoom, from the whole store down to\n"
"    single records: the server aggregates per pixel column, so every answer\n"
"    stays a few thousand items, read through the block index. Below: the\n"
"    longest polls, the scheduling-delay histogram per worker, a flame\n"
"    graph of the window (CPU or off-CPU samples) and the custom events\n"
"    (filter by name and field). With \"follow\" on, the\n"
"    view moves with the newest data every second (a running collector)\n"
"    and tracks the newest live process; a page opened before any process\n"
"    draws the first one when it appears.\n"
"\n"
"    API (GET, JSON): /api/processes; /api/timeline?pid=&width=[&from=&to=];\n"
"    /api/events?pid=[&from=&to=&event=&field=&value=&limit=];\n"
"    /api/flame?pid=[&from=&to=&kind=cpu|off];\n"
"    /api/workers?pid=[&from=&to=] (the facts of d9 sched per worker);\n"
"    /api/findings?pid=[&from=&to=&limit=] (d9 findings, ranked);\n"
"    /api/triggers?[pid=&from=&to=&limit=] (the index's triggers with their\n"
"    kept windows: the timeline's trigger markers). Times are\n"
"    CLOCK_MONOTONIC ns. Bad arguments (more than 16 of them too) are 400,\n"
"    an unknown pid 404, a foreign Host or Origin 403. Details:\n"
"    docs/serve.md.\n"
"\n"
"OPTIONS\n"
"    --listen ADDR:PORT  IPv4 address and port to listen on (default\n"
"                        " SERVE_LISTEN_DEFAULT ", loopback only; port 0 picks\n"
"                        a free one). Binding another address (0.0.0.0, a LAN\n"
"                        address) lets everyone who can reach it read the whole\n"
"                        store without authentication or encryption: process\n"
"                        names and command paths, thread names, function names\n"
"                        and every custom-event field your programs recorded;\n"
"                        a warning on stderr says so at start.\n"
"    --allow-host NAME   also answer requests whose Host header is NAME\n"
"                        (repeatable, up to 16). By default only an IP address,\n"
"                        \"localhost\" and our port are answered: a request\n"
"                        naming another host (DNS rebinding: a web page that\n"
"                        resolves its own name to this address) or coming\n"
"                        from another site (Origin header) gets 403 with the\n"
"                        reason. Give the host's name when listening on a LAN\n"
"                        address and browsing to it by name.\n"
CLI_HELP_NO_FLUSH_SERVE
"    --threads N         worker threads answering API requests (default 4,\n"
"                        1..64), each with its own store handle. Flame graphs,\n"
"                        findings and the events table never take the last\n"
"                        one, so a timeline is not held behind them; a\n"
"                        request whose client has gone stops reading.\n"
"                        Connections are served by one more\n"
"                        thread; idle and slow clients cost no worker.\n"
"\n"
CLI_HELP_COMMON "\n"
"EXAMPLES\n"
"    d9 serve                          # then open http://127.0.0.1:8009/\n"
"    d9 --store ./d9-demo-store serve --listen 127.0.0.1:0\n"
"    d9 serve --listen 192.168.1.20:8009 --allow-host myhost.lan\n"
"\n"
CLI_HELP_EXIT;

struct serve {
    struct serve_pool *pool;
    struct serve_guard guard;
    const struct cli_env *env;
    struct cli_live *live;          /* NULL with --no-flush */
};

/* A request's life: the URI seen (MHD's URI callback), headers complete,
 * queued to the workers (the connection suspended), answered. */
enum req_state { REQ_NEW = 0, REQ_HEADERS, REQ_QUEUED };

struct req {
    enum req_state state;
    bool too_many_args;
    struct MHD_Connection *c;
    struct serve_job job;
};

struct arg_ctx {
    struct serve_params p;
    unsigned n;
    bool bad;
    char why[96];
};

static enum MHD_Result on_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                              const char *value)
{
    (void)kind;
    struct arg_ctx *a = cls;
    if (++a->n > SERVE_MAX_ARGS) {
        snprintf(a->why, sizeof a->why, "too many arguments (at most %u)", SERVE_MAX_ARGS);
        a->bad = true;
        return MHD_NO;
    }
    if (serve_api_param(&a->p, key, value, a->why, sizeof a->why) < 0) {
        a->bad = true;
        return MHD_NO;
    }
    return MHD_YES;
}

/* MHD's URI callback: runs on the raw request target before MHD records
 * the query arguments. libmicrohttpd 0.9 keeps every argument in the
 * connection's memory pool and, when they do not fit, fails the request
 * without closing the connection (the client hangs until the timeout). So
 * a query of more than SERVE_MAX_ARGS arguments is cut here, in MHD's own
 * writable buffer (the text after '?'), and answered 400 by on_request. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    struct req *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->c = c;
    char *q = strchr(uri, '?');
    if (q && q[1]) {
        unsigned n = 1;
        for (const char *p = q + 1; *p && n <= SERVE_MAX_ARGS; p++)
            n += *p == '&';
        if (n > SERVE_MAX_ARGS) {
            r->too_many_args = true;
            q[1] = 0;
        }
    }
    return r;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    struct req *r = *con_cls;
    if (r) {
        free(r->job.body);
        free(r);
    }
    *con_cls = NULL;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, char *body, size_t len,
                             const char *type, bool must_free)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, body, must_free ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (must_free)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; script-src 'unsafe-inline'; "
                            "style-src 'unsafe-inline'; img-src 'self' data:");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result error_reply(struct MHD_Connection *c, unsigned status, const char *msg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return MHD_NO;
    fputs("{\"error\":", f);
    q_text_json(f, msg, strlen(msg));
    fputs("}\n", f);
    fclose(f);
    return reply(c, status, buf, len, "application/json", true);
}

/* A worker finished (or dropped) the job: wake the connection. */
static void job_done(struct serve_job *j)
{
    struct req *r = j->arg;
    MHD_resume_connection(r->c);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    (void)upload_data;
    struct serve *sv = cls;
    struct req *r = *con_cls;
    if (!r)                         /* on_uri could not allocate */
        return MHD_NO;
    if (r->state == REQ_NEW) {      /* headers only so far: wait for the body, if any */
        r->state = REQ_HEADERS;
        return MHD_YES;
    }
    if (*upload_data_size) {        /* a body: never wanted */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->state == REQ_QUEUED) {   /* resumed by job_done */
        if (r->job.status == 0)
            return MHD_NO;          /* the client left, or we are stopping: close */
        char *body = r->job.body;
        r->job.body = NULL;
        return reply(c, (unsigned)r->job.status, body, r->job.len, "application/json", true);
    }
    char why[160];
    if (serve_guard_check(&sv->guard, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host"),
                          MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin"), why,
                          sizeof why) < 0)
        return error_reply(c, MHD_HTTP_FORBIDDEN, why);
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return error_reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET");
    if (strcmp(url, "/") == 0 || strcmp(url, "/index.html") == 0)
        return reply(c, MHD_HTTP_OK, (char *)page, sizeof page - 1, "text/html; charset=utf-8",
                     false);
    if (strncmp(url, "/api/", 5) != 0 || strlen(url) >= sizeof r->job.path)
        return error_reply(c, MHD_HTTP_NOT_FOUND, "not found");
    if (r->too_many_args) {
        snprintf(why, sizeof why, "too many arguments (at most %u)", SERVE_MAX_ARGS);
        return error_reply(c, MHD_HTTP_BAD_REQUEST, why);
    }
    struct arg_ctx a;
    memset(&a, 0, sizeof a);
    serve_api_params_init(&a.p);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, on_arg, &a);
    if (a.bad)
        return error_reply(c, MHD_HTTP_BAD_REQUEST, a.why);
    cli_live_poke(sv->live);        /* a reader is here: keep live data sealed */
    struct serve_job *j = &r->job;
    snprintf(j->path, sizeof j->path, "%s", url);
    j->p = a.p;
    j->heavy = serve_pool_is_heavy(url);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    j->fd = ci ? ci->connect_fd : -1;
    j->done = job_done;
    j->arg = r;
    r->state = REQ_QUEUED;
    MHD_suspend_connection(c);      /* before submit: a worker may resume it at once */
    serve_pool_submit(sv->pool, j);
    return MHD_YES;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    /* our own MHD_NO for a request whose client left (a superseded zoom
     * step): expected, once per cancelled request, not worth a line */
    if (strstr(line, "Application reported internal error"))
        return;
    fprintf(stderr, "d9 serve: %s", line);
}

struct serve_opts {
    char listen[64];
    unsigned workers;
    struct serve_guard guard;       /* names from --allow-host; the port is set at bind */
};

enum { OPT_LISTEN = CLI_OPT_FIRST_PRIVATE, OPT_ALLOW_HOST, OPT_THREADS };

static int serve_opt(struct cli_env *env, void *arg, int opt, const char *val)
{
    struct serve_opts *o = arg;
    switch (opt) {
    case OPT_LISTEN:
        if (strlen(val) >= sizeof o->listen)
            return cli_usage_error(env, "--listen: too long"), -1;
        snprintf(o->listen, sizeof o->listen, "%s", val);
        return 0;
    case OPT_ALLOW_HOST: {
        int rc = serve_guard_allow(&o->guard, val);
        if (rc == -ENOSPC)
            return cli_usage_error(env, "--allow-host: at most %u names",
                                   SERVE_GUARD_NAMES_MAX), -1;
        if (rc < 0)
            return cli_usage_error(env, "--allow-host %s: not a host name (letters, digits, "
                                   "'-' and '.')", val), -1;
        return 0;
    }
    case OPT_THREADS: {
        uint64_t n;
        if (q_text_parse_u64(val, &n) < 0 || n < 1 || n > SERVE_POOL_WORKERS_MAX)
            return cli_usage_error(env, "--threads %s: expected 1..%u", val,
                                   SERVE_POOL_WORKERS_MAX), -1;
        o->workers = (unsigned)n;
        return 0;
    }
    }
    return cli_usage_error(env, "unknown option"), -1;
}

/* "a.b.c.d:port" -> sin. 0 or -EINVAL. */
static int parse_listen(const char *s, struct sockaddr_in *sin)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s)
        return -EINVAL;
    char host[48];
    size_t hl = (size_t)(colon - s);
    if (hl >= sizeof host)
        return -EINVAL;
    memcpy(host, s, hl);
    host[hl] = 0;
    uint64_t port;
    if (q_text_parse_u64(colon + 1, &port) < 0 || port > 65535)
        return -EINVAL;
    memset(sin, 0, sizeof *sin);
    sin->sin_family = AF_INET;
    sin->sin_port = htons((uint16_t)port);
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof host, "127.0.0.1");
    return inet_pton(AF_INET, host, &sin->sin_addr) == 1 ? 0 : -EINVAL;
}

/* The listening socket, bound here so its port (port 0: the kernel's pick)
 * is known before the first request is checked. fd or -errno. */
static int bind_listen(struct sockaddr_in *sin)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    socklen_t sl = sizeof *sin;
    if (bind(fd, (struct sockaddr *)sin, sizeof *sin) < 0 || listen(fd, SERVE_BACKLOG) < 0 ||
        getsockname(fd, (struct sockaddr *)sin, &sl) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

/* Raise the soft open-file limit toward SERVE_CONN_LIMIT + SERVE_FD_RESERVE
 * (the hard limit caps it); the connection limit is what then fits. */
static unsigned conn_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return SERVE_CONN_MIN;
    rlim_t want = (rlim_t)SERVE_CONN_LIMIT + SERVE_FD_RESERVE;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        rlim_t cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        struct rlimit nl = { .rlim_cur = cur, .rlim_max = rl.rlim_max };
        if (setrlimit(RLIMIT_NOFILE, &nl) == 0)
            rl.rlim_cur = cur;
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
        return SERVE_CONN_LIMIT;
    if (rl.rlim_cur <= (rlim_t)SERVE_CONN_MIN + SERVE_FD_RESERVE)
        return SERVE_CONN_MIN;
    return (unsigned)(rl.rlim_cur - SERVE_FD_RESERVE);
}

CLI_DECLARE_CMD(serve)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP, CLI_OPTE_STORE, { "listen", 1, NULL, OPT_LISTEN },
        { "allow-host", 1, NULL, OPT_ALLOW_HOST }, { "threads", 1, NULL, OPT_THREADS },
        CLI_OPTE_NO_FLUSH, CLI_OPTE_END,
    };
    struct cli_args a;
    static struct serve_opts o;     /* large (the allowed names): not on the stack */
    memset(&o, 0, sizeof o);
    snprintf(o.listen, sizeof o.listen, "%s", SERVE_LISTEN_DEFAULT);
    o.workers = SERVE_POOL_WORKERS_DEFAULT;
    cli_args_init(&a);
    int rc = cli_getopt(env, &a, argc, argv, opts, usage, serve_opt, &o);
    if (rc != 0)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (lazy_need(LAZY_MHD) < 0)
        return cli_fail(env, "cannot start the HTTP server: %s", lazy_error(LAZY_MHD));
    struct sockaddr_in sin;
    if (parse_listen(o.listen, &sin) < 0)
        return cli_usage_error(env, "--listen %s: expected IPv4ADDR:PORT", o.listen);
    struct q_store *s;
    if (!a.no_flush)
        cli_live_refresh(env);
    rc = cli_open_store(env, &s);
    if (!s)
        return rc;
    char why[Q_PATH_MAX + 300];
    static struct serve sv;
    memset(&sv, 0, sizeof sv);
    sv.env = env;
    if (serve_pool_start(&sv.pool, q_store_dir(s), o.workers, why, sizeof why) < 0) {
        q_store_close(s);
        return cli_fail(env, "%s", why);
    }
    q_store_close(s);               /* each worker has its own */
    int lfd = bind_listen(&sin);
    if (lfd < 0) {
        serve_pool_stop(sv.pool);
        return cli_fail(env, "cannot listen on %s: %s", o.listen, strerror(-lfd));
    }
    sv.guard = o.guard;
    sv.guard.port = ntohs(sin.sin_port);
    /* the server threads inherit this mask: signals reach sigwait below */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    bool loopback = (ntohl(sin.sin_addr.s_addr) >> 24) == IN_LOOPBACKNET;
    if (!a.no_flush)
        sv.live = cli_live_start(env);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, NULL,
        NULL, on_request, &sv,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_LISTEN_SOCKET, lfd,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
        MHD_OPTION_CONNECTION_LIMIT, conn_limit(),
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, loopback ? 0u : (unsigned)SERVE_PER_IP_LIMIT,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)SERVE_TIMEOUT_S,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVE_CONN_MEMORY,
        MHD_OPTION_END);
    if (!d) {
        close(lfd);
        cli_live_stop(sv.live);
        serve_pool_stop(sv.pool);
        return cli_fail(env, "cannot start the HTTP server on %s", o.listen);
    }
    char addr[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sin.sin_addr, addr, sizeof addr);
    if (!loopback)
        cli_warn(env, "listening on %s, not loopback: anyone who can reach it can read the "
                 "whole store (no authentication, no encryption)", addr);
    printf("d9 serve: http://%s:%u/ (store %s; Ctrl-C stops)\n", addr,
           (unsigned)ntohs(sin.sin_port), env->store);
    fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    serve_pool_stop(sv.pool);       /* resumes every suspended connection */
    MHD_stop_daemon(d);
    cli_live_stop(sv.live);
    close(lfd);
    return CLI_EXIT_OK;
}
