/*
 * cli_serve.c — `d9 serve`: a small HTTP server in the CLI that sends one
 * self-contained page (serve_page.html, compiled in; no internet at run
 * time) and answers its JSON API (serve_api.h) from the store.
 *
 * HTTP is Debian's libmicrohttpd: one internal polling thread answers the
 * requests one at a time, so the store handle is only ever used by that
 * thread; the main thread waits for SIGINT/SIGTERM. Requests are untrusted:
 * only GET and HEAD, no body, at most SERVE_MAX_ARGS query arguments (each
 * validated by serve_api_param), bounded connection memory, a connection
 * limit and a timeout; anything else is a 4xx. Binds to loopback unless
 * told otherwise.
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/cli/cli.h"
#include "collector/serve/serve_api.h"
#include "collector/query/q_store.h"

#define SERVE_LISTEN_DEFAULT  "127.0.0.1:8009"
#define SERVE_MAX_ARGS        16u
#define SERVE_CONN_LIMIT      32u
#define SERVE_TIMEOUT_S       30u
#define SERVE_CONN_MEMORY     (64u * 1024u)     /* per connection: request line + headers */

static const char page[] =
#include "collector/serve/serve_page.h"
    ;

static const char usage[] =
"NAME\n"
"    d9 serve - browse the store in a web browser: timeline, top polls, events\n"
"\n"
"SYNOPSIS\n"
"    d9 [--store DIR] serve [--listen ADDR:PORT]\n"
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
"    view moves with the newest data every second (a running collector).\n"
"\n"
"    API (GET, JSON): /api/processes; /api/timeline?pid=&width=[&from=&to=];\n"
"    /api/events?pid=[&from=&to=&event=&field=&value=&limit=];\n"
"    /api/flame?pid=[&from=&to=&kind=cpu|off];\n"
"    /api/workers?pid=[&from=&to=] (the facts of d9 sched per worker). Times are\n"
"    CLOCK_MONOTONIC ns. Bad arguments are 400, an unknown pid 404.\n"
"\n"
"OPTIONS\n"
"    --listen ADDR:PORT  IPv4 address and port to listen on (default\n"
"                        " SERVE_LISTEN_DEFAULT ", loopback only; port 0 picks\n"
"                        a free one). Binding another address (0.0.0.0, a LAN\n"
"                        address) lets everyone who can reach it read the whole\n"
"                        store without authentication or encryption: process\n"
"                        names and command paths, thread names, function names\n"
"                        and every custom-event field your programs recorded.\n"
"\n"
CLI_HELP_COMMON "\n"
"EXAMPLES\n"
"    d9 serve                          # then open http://127.0.0.1:8009/\n"
"    d9 --store ./d9-demo-store serve --listen 127.0.0.1:0\n"
"\n"
CLI_HELP_EXIT;

struct serve {
    struct q_store *s;
    const struct cli_env *env;
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
        snprintf(a->why, sizeof a->why, "too many arguments");
        a->bad = true;
        return MHD_NO;
    }
    if (serve_api_param(&a->p, key, value, a->why, sizeof a->why) < 0) {
        a->bad = true;
        return MHD_NO;
    }
    return MHD_YES;
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    (void)upload_data;
    struct serve *sv = cls;
    static int first_call_marker;
    if (*con_cls == NULL) {         /* headers only so far: wait for the body, if any */
        *con_cls = &first_call_marker;
        return MHD_YES;
    }
    if (*upload_data_size) {        /* a body: never wanted */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return error_reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET");
    if (strcmp(url, "/") == 0 || strcmp(url, "/index.html") == 0)
        return reply(c, MHD_HTTP_OK, (char *)page, sizeof page - 1, "text/html; charset=utf-8",
                     false);
    if (strncmp(url, "/api/", 5) != 0)
        return error_reply(c, MHD_HTTP_NOT_FOUND, "not found");
    struct arg_ctx a;
    memset(&a, 0, sizeof a);
    serve_api_params_init(&a.p);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, on_arg, &a);
    if (a.bad)
        return error_reply(c, MHD_HTTP_BAD_REQUEST, a.why);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return error_reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    int status = serve_api(sv->s, url, &a.p, f);
    if (fclose(f) != 0) {
        free(buf);
        return error_reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    }
    return reply(c, (unsigned)status, buf, len, "application/json", true);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    fputs("d9 serve: ", stderr);
    vfprintf(stderr, fmt, ap);
}

struct serve_opts {
    char listen[64];
};

enum { OPT_LISTEN = CLI_OPT_FIRST_PRIVATE };

static int serve_opt(struct cli_env *env, void *arg, int opt, const char *val)
{
    struct serve_opts *o = arg;
    if (opt != OPT_LISTEN)
        return cli_usage_error(env, "unknown option"), -1;
    if (strlen(val) >= sizeof o->listen)
        return cli_usage_error(env, "--listen: too long"), -1;
    snprintf(o->listen, sizeof o->listen, "%s", val);
    return 0;
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

CLI_DECLARE_CMD(serve)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP, CLI_OPTE_STORE, { "listen", 1, NULL, OPT_LISTEN }, CLI_OPTE_END,
    };
    struct cli_args a;
    struct serve_opts o = { .listen = SERVE_LISTEN_DEFAULT };
    cli_args_init(&a);
    int rc = cli_getopt(env, &a, argc, argv, opts, usage, serve_opt, &o);
    if (rc != 0)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    struct sockaddr_in sin;
    if (parse_listen(o.listen, &sin) < 0)
        return cli_usage_error(env, "--listen %s: expected IPv4ADDR:PORT", o.listen);
    struct q_store *s;
    rc = cli_open_store(env, &s);
    if (!s)
        return rc;
    /* the server thread inherits this mask: signals reach sigwait below */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    struct serve sv = { .s = s, .env = env };
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, &sv,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sin,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)SERVE_CONN_LIMIT,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)SERVE_TIMEOUT_S,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVE_CONN_MEMORY,
        MHD_OPTION_END);
    if (!d) {
        q_store_close(s);
        return cli_fail(env, "cannot listen on %s (in use, or not an address of this host?)",
                        o.listen);
    }
    const union MHD_DaemonInfo *inf = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char addr[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sin.sin_addr, addr, sizeof addr);
    printf("d9 serve: http://%s:%u/ (store %s; Ctrl-C stops)\n", addr,
           inf ? (unsigned)inf->port : (unsigned)ntohs(sin.sin_port), env->store);
    fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    MHD_stop_daemon(d);
    q_store_close(s);
    return CLI_EXIT_OK;
}
