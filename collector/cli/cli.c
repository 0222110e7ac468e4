/*
 * cli.c — shared pieces of the d9 CLI (see cli.h): defaults, common
 * option handling, number/duration/type-list parsing and output formatting.
 *
 * Called by main.c and every cli_<name>.c. Pure helpers except the messages
 * on stderr and the environment lookups in cli_env_defaults.
 * Never exits the process: errors are returned to the subcommand.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "collector/cli/cli.h"
#include "collector/cli/cli_live.h"
#include "collector/ctl/ctl_client.h"
#include "collector/lazy/lazy.h"
#include "collector/query/q_store.h"
#include "shm/paths.h"
#include "shm/record.h"

int cli_env_defaults(struct cli_env *env)
{
    const char *s = getenv(CLI_STORE_ENV);
    if (s && *s) {
        if (strlen(s) >= sizeof env->store)
            return -ENAMETOOLONG;
        strcpy(env->store, s);
    } else if (paths_default_store((uint32_t)geteuid(), env->store, sizeof env->store) < 0) {
        return -ENAMETOOLONG;
    }
    const char *dbg = getenv(CLI_DEBUG_DIR_ENV);
    env->debug_dir = dbg && *dbg ? dbg : NULL;
    const char *e = getenv(CLI_ENDPOINT_ENV);
    if (e && *e) {
        if (strlen(e) >= sizeof env->endpoint)
            return -ENAMETOOLONG;
        strcpy(env->endpoint, e);
    } else if (paths_default_endpoint((uint32_t)geteuid(), getenv("XDG_RUNTIME_DIR"), env->endpoint,
                                      sizeof env->endpoint) < 0) {
        return -ENAMETOOLONG;
    }
    return 0;
}

void cli_args_init(struct cli_args *a)
{
    memset(a, 0, sizeof *a);
    a->win.kind = Q_WIN_ALL;
    a->win.from_ns = 0;
    a->win.to_ns = UINT64_MAX;
    a->format = CLI_FMT_TEXT;
}

static void vmsg(const struct cli_env *env, const char *what, const char *fmt, va_list ap)
{
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    if (env->cmd)
        fprintf(stderr, "%s %s: %s%s\n", env->prog, env->cmd, what, line);
    else
        fprintf(stderr, "%s: %s%s\n", env->prog, what, line);
}

int cli_usage_error(const struct cli_env *env, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg(env, "", fmt, ap);
    va_end(ap);
    if (env->cmd)
        fprintf(stderr, "Try '%s %s --help'.\n", env->prog, env->cmd);
    else
        fprintf(stderr, "Try '%s --help'.\n", env->prog);
    return CLI_EXIT_USAGE;
}

int cli_fail(const struct cli_env *env, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg(env, "", fmt, ap);
    va_end(ap);
    return CLI_EXIT_FAIL;
}

const char *cli_ctl_why(int rc)
{
    switch (rc) {
    case -ENOENT: return "no collector socket (is d9collectd running? see --endpoint)";
    case -ETIMEDOUT: return "no answer in time (is d9collectd running? a stale socket?)";
    case -ECONNREFUSED: return "connection refused (is d9collectd running?)";
    case -EBADMSG: return "undecodable reply";
    case -ELIBACC: return lazy_error(LAZY_ZMQ);     /* libzmq could not be opened */
    default: return strerror(-rc);
    }
}

int cli_ctl_say(const struct cli_env *env, const struct D9__Request *req, int timeout_ms,
                const char *ok_text)
{
    D9__Reply *rep = NULL;
    int r = ctl_client_request(env->endpoint, req, &rep, timeout_ms);
    if (r < 0)
        return cli_fail(env, "cannot reach the collector at %s: %s", env->endpoint, cli_ctl_why(r));
    int rc = CLI_EXIT_OK;
    if (rep->error != 0)
        rc = cli_fail(env, "%s", rep->message && *rep->message ? rep->message
                                                              : strerror(-rep->error));
    else
        printf("%s\n", rep->message && *rep->message ? rep->message : ok_text);
    ctl_client_reply_free(rep);
    return rc;
}

void cli_warn(const struct cli_env *env, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg(env, "warning: ", fmt, ap);
    va_end(ap);
}

static int set_str(const struct cli_env *env, char *dst, size_t cap, const char *opt,
                   const char *v)
{
    if (!v || !*v) {
        cli_usage_error(env, "%s: empty value", opt);
        return -1;
    }
    if (strlen(v) >= cap) {
        cli_usage_error(env, "%s: value too long (%zu bytes, at most %zu)", opt, strlen(v),
                        cap - 1);
        return -1;
    }
    strcpy(dst, v);
    return 0;
}

static int parse_id(const struct cli_env *env, const char *opt, const char *v, uint32_t *out)
{
    uint64_t n;
    if (q_text_parse_u64(v, &n) < 0 || n == 0 || n > UINT32_MAX) {
        cli_usage_error(env, "%s: expected a positive integer, got '%s'", opt, v);
        return -1;
    }
    *out = (uint32_t)n;
    return 0;
}

int cli_common_opt(struct cli_env *env, struct cli_args *a, int opt, char **argv)
{
    uint64_t n;
    char bad[64];
    switch (opt) {
    case CLI_OPT_HELP:
        a->help = true;
        return 0;
    case CLI_OPT_STORE:
        return set_str(env, env->store, sizeof env->store, "--store", optarg);
    case CLI_OPT_ENDPOINT:
        return set_str(env, env->endpoint, sizeof env->endpoint, "--endpoint", optarg);
    case CLI_OPT_PID:
        return parse_id(env, "--pid", optarg, &a->pid);
    case CLI_OPT_TID:
        return parse_id(env, "--tid", optarg, &a->tid);
    case CLI_OPT_SINCE:
        if (cli_parse_duration(optarg, &n) < 0) {
            cli_usage_error(env, "--since: expected a duration like 30s, 5m, 2h, 1d, got '%s'",
                            optarg);
            return -1;
        }
        if (a->win.kind != Q_WIN_ALL) {
            cli_usage_error(env, "--since cannot be combined with --from/--to");
            return -1;
        }
        a->win.kind = Q_WIN_SINCE;
        a->win.since_ns = n;
        return 0;
    case CLI_OPT_FROM:
    case CLI_OPT_TO: {
        const char *name = opt == CLI_OPT_FROM ? "--from" : "--to";
        if (q_text_parse_u64(optarg, &n) < 0) {
            cli_usage_error(env, "%s: expected monotonic nanoseconds (an integer), got '%s'",
                            name, optarg);
            return -1;
        }
        if (a->win.kind == Q_WIN_SINCE) {
            cli_usage_error(env, "%s cannot be combined with --since", name);
            return -1;
        }
        a->win.kind = Q_WIN_RANGE;
        if (opt == CLI_OPT_FROM)
            a->win.from_ns = n;
        else
            a->win.to_ns = n;
        return 0;
    }
    case CLI_OPT_LAST:
        /* whole store; wins over anything else given */
        a->win.kind = Q_WIN_ALL;
        a->win.from_ns = 0;
        a->win.to_ns = UINT64_MAX;
        a->win.since_ns = 0;
        return 0;
    case CLI_OPT_LIMIT:
        if (q_text_parse_u64(optarg, &n) < 0 || n == 0) {
            cli_usage_error(env, "--limit: expected a positive integer, got '%s'", optarg);
            return -1;
        }
        a->limit = n;
        a->limit_set = true;
        return 0;
    case CLI_OPT_FORMAT:
        if (strcmp(optarg, "text") == 0) {
            a->format = CLI_FMT_TEXT;
        } else if (strcmp(optarg, "jsonl") == 0 || strcmp(optarg, "json") == 0) {
            a->format = CLI_FMT_JSONL;
        } else {
            cli_usage_error(env, "--format: expected 'text' or 'jsonl', got '%s'", optarg);
            return -1;
        }
        return 0;
    case CLI_OPT_TYPE:
        if (cli_parse_types(optarg, &a->types, bad, sizeof bad) < 0) {
            cli_usage_error(env, "--type: unknown record type '%s' (known: poll_start, "
                            "poll_end, wake, worker_park, worker_unpark, task_spawn, "
                            "task_terminate, queue_depth, custom, cpu_sample, sched_switch)",
                            bad);
            return -1;
        }
        return 0;
    case CLI_OPT_NO_FLUSH:
        a->no_flush = true;
        return 0;
    case 'o':
        if (!optarg || !*optarg) {
            cli_usage_error(env, "-o: empty file name");
            return -1;
        }
        a->output = optarg;
        return 0;
    case ':':
        cli_usage_error(env, "option '%s' needs a value", argv[optind - 1]);
        return -1;
    case '?':
        if (optopt)
            cli_usage_error(env, "unknown option '-%c'", optopt);
        else
            cli_usage_error(env, "unknown option '%s'", argv[optind - 1]);
        return -1;
    default:
        return 1;
    }
}

int cli_getopt(struct cli_env *env, struct cli_args *a, int argc, char **argv,
               const struct option *opts, const char *usage, cli_private_fn priv, void *arg)
{
    char shorts[16] = ":h";
    size_t ns = 2;
    for (const struct option *o = opts; o->name && ns + 2 < sizeof shorts; o++) {
        if (o->val == 'o') {
            shorts[ns++] = (char)o->val;
            shorts[ns++] = ':';
        }
    }
    shorts[ns] = 0;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
        bool common = c == 'h' || c == 'o' || c == ':' || c == '?' ||
                      (c >= CLI_OPT_STORE && c < CLI_OPT_FIRST_PRIVATE);
        if (!common) {
            if (!priv || priv(env, arg, c, optarg) < 0) {
                if (!priv)
                    cli_usage_error(env, "unexpected option");
                return -1;
            }
            continue;
        }
        if (cli_common_opt(env, a, c, argv) != 0)
            return -1;
    }
    if (a->help) {
        fputs(usage, stdout);
        return 1;
    }
    return cli_args_finish(env, a, argc, argv, optind);
}

int cli_open_store(const struct cli_env *env, struct q_store **out)
{
    char why[CLI_PATH_MAX + 256];
    if (q_store_open(out, env->store, why, sizeof why) < 0)
        return cli_fail(env, "%s", why);
    q_store_set_debug_dir(*out, env->debug_dir);
    return CLI_EXIT_OK;
}

int cli_begin(struct cli_env *env, struct cli_args *a, int argc, char **argv,
              const struct option *opts, const char *usage, struct q_store **s)
{
    *s = NULL;
    cli_args_init(a);
    int rc = cli_getopt(env, a, argc, argv, opts, usage, NULL, NULL);
    if (rc != 0)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    bool live = false;
    for (const struct option *o = opts; o->name; o++)
        live |= o->val == CLI_OPT_NO_FLUSH;
    if (live && !a->no_flush)
        cli_live_refresh(env);
    return cli_open_store(env, s);
}

const char *cli_window_text(const struct q_window *w, bool live, char *buf, size_t cap)
{
    char d[32];
    switch (w->kind) {
    case Q_WIN_ALL:
        snprintf(buf, cap, "the whole store");
        break;
    case Q_WIN_SINCE:
        snprintf(buf, cap, "the last %s (%s)", cli_fmt_dur(w->since_ns, d, sizeof d),
                 live ? "before now" : "before the newest record: store from another boot");
        break;
    case Q_WIN_RANGE:
        if (w->to_ns == UINT64_MAX)
            snprintf(buf, cap, "from %" PRIu64 " ns on", w->from_ns);
        else
            snprintf(buf, cap, "%" PRIu64 "..%" PRIu64 " ns", w->from_ns, w->to_ns);
        break;
    }
    return buf;
}

int cli_args_finish(struct cli_env *env, struct cli_args *a, int argc, char **argv, int first)
{
    if (first < argc) {
        cli_usage_error(env, "unexpected argument '%s'", argv[first]);
        return -1;
    }
    if (a->win.kind == Q_WIN_RANGE && a->win.from_ns > a->win.to_ns) {
        cli_usage_error(env, "--from %" PRIu64 " is after --to %" PRIu64, a->win.from_ns,
                        a->win.to_ns);
        return -1;
    }
    return 0;
}

/* ---- parsing ---------------------------------------------------------------- */

int cli_parse_duration(const char *s, uint64_t *ns)
{
    static const struct { const char *suffix; double ns; } units[] = {
        { "ns", 1.0 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
        { "m", 60e9 }, { "min", 60e9 }, { "h", 3600e9 }, { "d", 86400e9 }, { "", 1e9 },
    };
    if (!s || !((*s >= '0' && *s <= '9') || *s == '.'))
        return -EINVAL;
    const char *p = s;
    bool digits = false, dot = false;
    for (; (*p >= '0' && *p <= '9') || (*p == '.' && !dot); p++) {
        if (*p == '.')
            dot = true;
        else
            digits = true;
    }
    if (!digits || p - s > 30)
        return -EINVAL;
    char num[32];
    memcpy(num, s, (size_t)(p - s));
    num[p - s] = 0;
    double v = strtod(num, NULL);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(p, units[i].suffix) != 0)
            continue;
        double r = v * units[i].ns;
        if (!(r >= 1.0))
            return -EINVAL;
        if (r >= 1.8e19)
            return -ERANGE;
        *ns = (uint64_t)llround(r);
        return 0;
    }
    return -EINVAL;
}

int cli_parse_types(const char *s, uint32_t *mask, char *badbuf, size_t badcap)
{
    uint32_t m = 0;
    const char *p = s ? s : "";
    if (badcap)
        badbuf[0] = 0;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char name[64];
        int t = -1;
        if (n > 0 && n < sizeof name) {
            memcpy(name, p, n);
            name[n] = 0;
            t = shm_record_type_from_name(name);
        }
        if (t <= 0 || t >= 32) {
            if (badcap) {
                size_t k = n < badcap - 1 ? n : badcap - 1;
                memcpy(badbuf, p, k);
                badbuf[k] = 0;
            }
            return -EINVAL;
        }
        m |= 1u << t;
        if (!comma)
            break;
        p = comma + 1;
    }
    *mask = m;
    return 0;
}

/* ---- output ----------------------------------------------------------------- */

const char *cli_fmt_dur(uint64_t ns, char *buf, size_t cap)
{
    if (ns < 1000)
        snprintf(buf, cap, "%" PRIu64 "ns", ns);
    else if (ns < 1000000)
        snprintf(buf, cap, "%.1fus", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, cap, "%.2fms", (double)ns / 1e6);
    else if (ns < 60000000000ull)
        snprintf(buf, cap, "%.3fs", (double)ns / 1e9);
    else
        snprintf(buf, cap, "%" PRIu64 "m%02" PRIu64 "s", (uint64_t)(ns / 60000000000ull),
                 (uint64_t)((ns / 1000000000ull) % 60));
    return buf;
}

const char *cli_fmt_bytes(uint64_t bytes, char *buf, size_t cap)
{
    static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    double v = (double)bytes;
    unsigned u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%" PRIu64 " B", bytes);
    else
        snprintf(buf, cap, "%.1f %s", v, units[u]);
    return buf;
}

void cli_warn_lost(struct q_store *s, const struct cli_env *env, uint32_t pid, uint64_t from,
                   uint64_t to, uint64_t lost)
{
    struct idx_read_drops d;
    char why[160];
    if (q_store_drops(s, 0, pid, from, to, &d) == 0 && d.lost)
        cli_warn(env, "%" PRIu64 " records were dropped in the blocks read (the process%s "
                 "dropped: %s)", lost, pid ? "" : "es", q_store_drops_text(&d, why, sizeof why));
    else
        cli_warn(env, "%" PRIu64 " records were dropped in the blocks read", lost);
}
