/*
 * cli.h — what every `d9` subcommand shares: the command table entry, the
 * global settings (store, endpoint), option parsing of the common flags
 * (--pid, --tid, --since/--from/--to/--last, --limit, --format, --store,
 * --endpoint, --help), number/duration parsing, and output helpers (times,
 * durations, byte counts, JSON strings).
 *
 * Called by main.c (main, dispatch) and every collector/cli/cli_<name>.c.
 * Adding a subcommand = one new file defining `CLI_DECLARE_CMD(name) { ... }`
 * plus one line in the D9_COMMANDS table of main.c.
 *
 * Conventions every subcommand follows:
 *   - `--help` prints the man-page-style usage on stdout and exits 0;
 *   - a bad argument prints ONE line "d9 <cmd>: <what is wrong>" and the hint
 *     "Try 'd9 <cmd> --help'." on stderr and exits CLI_EXIT_USAGE (2);
 *   - runtime failures (no store, collector unreachable, corrupt index) print
 *     one line with the path/endpoint and exit CLI_EXIT_FAIL (1);
 *   - an empty result is not an error: it says so on stderr and exits 0.
 *
 * Must never: write to the store (d9 is a reader; fsck --repair is the one
 * documented exception), keep global state (the
 * settings travel in struct cli_env), or print partial lines on error.
 */
#ifndef D9_COL_CLI_H
#define D9_COL_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "collector/query/q_store.h"
#include "collector/query/q_text.h"

enum cli_exit {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAIL = 1,
    CLI_EXIT_USAGE = 2,
};

#define CLI_PATH_MAX        4096
#define CLI_STORE_ENV       "D9_STORE"          /* overrides the default store */
#define CLI_ENDPOINT_ENV    "DIAL9_COLLECTOR"   /* overrides the default endpoint */
#define CLI_DEBUG_DIR_ENV   "D9_DEBUG_DIR"      /* where debug files are (--debug-dir) */
#define CLI_TIMEOUT_MS      2000                /* collector requests (status, flush) */
#define CLI_LIMIT_DEFAULT   20                  /* top-polls, findings */
#define CLI_SERVE_LISTEN    "127.0.0.1:8009"    /* d9 serve's default address (findings' links) */
/* The --endpoint option in the help of the commands that ask the collector
 * (status, flush, trigger). */
#define CLI_HELP_ENDPOINT \
"    --endpoint EP   collector endpoint (default: $DIAL9_COLLECTOR, else\n" \
"                    ipc:///run/dial9/collector.sock as root, else\n" \
"                    ipc://$XDG_RUNTIME_DIR/dial9/collector.sock, or\n" \
"                    ipc:///tmp/dial9-UID/collector.sock without XDG_RUNTIME_DIR).\n"

/* Settings resolved by main() from global flags, environment and defaults. */
struct cli_env {
    const char *prog;               /* "d9" */
    const char *cmd;                /* subcommand name, for messages */
    char store[CLI_PATH_MAX];
    char endpoint[CLI_PATH_MAX];
    /* d9 pull and --store s3://... (cli_s3store.h): the global --s3-endpoint,
     * --s3-region, --host and --cache; NULL = default */
    const char *s3_endpoint, *s3_region, *s3_host, *cache;
    /* --debug-dir or $D9_DEBUG_DIR: the build-id tree of debug files; NULL =
     * /usr/lib/debug/.build-id */
    const char *debug_dir;
};

/* Signature of a subcommand: argv[0] is the subcommand name. Returns an
 * enum cli_exit value. Expands to a prototype plus the definition's head,
 * so `CLI_DECLARE_CMD(ps) { ... }` defines it and `CLI_DECLARE_CMD(ps);`
 * declares it. */
#define CLI_DECLARE_CMD(fn)                                                  \
    int cli_##fn##_cmd(struct cli_env *env, int argc, char **argv);             \
    int cli_##fn##_cmd(struct cli_env *env, int argc, char **argv)

struct cli_cmd {
    const char *name;               /* as typed: "top-polls" */
    const char *summary;            /* one line for `d9 --help` */
    int (*run)(struct cli_env *env, int argc, char **argv);
};

/* Fill env->store/endpoint from $D9_STORE / $DIAL9_COLLECTOR or the
 * collector's defaults. 0 or -ENAMETOOLONG. */
int cli_env_defaults(struct cli_env *env);

/* ---- common options --------------------------------------------------------
 * Subcommands list the ones they accept in their getopt_long table with the
 * CLI_OPT_* entries and hand every option they do not handle themselves to
 * cli_common_opt(). */
enum cli_opt_id {
    CLI_OPT_HELP = 'h',
    CLI_OPT_STORE = 1000,
    CLI_OPT_ENDPOINT,
    CLI_OPT_PID,
    CLI_OPT_TID,
    CLI_OPT_SINCE,
    CLI_OPT_FROM,
    CLI_OPT_TO,
    CLI_OPT_LAST,
    CLI_OPT_LIMIT,
    CLI_OPT_FORMAT,
    CLI_OPT_TYPE,
    CLI_OPT_OUTPUT,
    CLI_OPT_NO_FLUSH,               /* reading commands: no live refresh (cli_live.h) */
    CLI_OPT_FIRST_PRIVATE = 1100,   /* subcommand-specific ids start here */
};

#define CLI_OPTE_HELP     { "help", 0, NULL, CLI_OPT_HELP }
#define CLI_OPTE_STORE    { "store", 1, NULL, CLI_OPT_STORE }
#define CLI_OPTE_ENDPOINT { "endpoint", 1, NULL, CLI_OPT_ENDPOINT }
#define CLI_OPTE_PID      { "pid", 1, NULL, CLI_OPT_PID }
#define CLI_OPTE_TID      { "tid", 1, NULL, CLI_OPT_TID }
#define CLI_OPTE_SINCE    { "since", 1, NULL, CLI_OPT_SINCE }
#define CLI_OPTE_FROM     { "from", 1, NULL, CLI_OPT_FROM }
#define CLI_OPTE_TO       { "to", 1, NULL, CLI_OPT_TO }
#define CLI_OPTE_LAST     { "last", 0, NULL, CLI_OPT_LAST }
#define CLI_OPTE_WINDOW   CLI_OPTE_SINCE, CLI_OPTE_FROM, CLI_OPTE_TO, CLI_OPTE_LAST
#define CLI_OPTE_LIMIT    { "limit", 1, NULL, CLI_OPT_LIMIT }
#define CLI_OPTE_FORMAT   { "format", 1, NULL, CLI_OPT_FORMAT }
#define CLI_OPTE_TYPE     { "type", 1, NULL, CLI_OPT_TYPE }
#define CLI_OPTE_OUTPUT   { "output", 1, NULL, 'o' }
#define CLI_OPTE_NO_FLUSH { "no-flush", 0, NULL, CLI_OPT_NO_FLUSH }
#define CLI_OPTE_END      { NULL, 0, NULL, 0 }

enum cli_format { CLI_FMT_TEXT = 0, CLI_FMT_JSONL = 1 };

/* Parsed common options (defaults set by cli_args_init). */
struct cli_args {
    uint32_t pid;                   /* 0 = every process */
    uint32_t tid;                   /* 0 = every thread */
    struct q_window win;
    uint64_t limit;                 /* 0 = no limit */
    bool limit_set;
    enum cli_format format;
    uint32_t types;                 /* bit (1 << type); 0 = every type */
    const char *output;             /* -o FILE, NULL = stdout */
    bool no_flush;                  /* --no-flush: no live refresh before reading */
    bool help;
};

void cli_args_init(struct cli_args *a);

/*
 * Handle one common option as returned by getopt_long (reads optarg, optind
 * and optopt). The caller sets opterr = 0 and optind = 1 first. Returns
 * 0 when handled, 1 when opt is not a common option, or -1 after printing a
 * usage error (the caller exits CLI_EXIT_USAGE). '?' and ':' from getopt are
 * reported here too (unknown option / missing argument).
 */
int cli_common_opt(struct cli_env *env, struct cli_args *a, int opt, char **argv);

/* A subcommand's own options: return 0, or -1 after cli_usage_error. */
struct option;
typedef int (*cli_private_fn)(struct cli_env *env, void *arg, int opt, const char *val);

/*
 * The whole option loop of a subcommand: getopt_long over opts (short
 * options: 'h' and, when listed, 'o'), common options handled by
 * cli_common_opt, the others (ids >= CLI_OPT_FIRST_PRIVATE or private short
 * letters) by priv. Then cli_args_finish. Returns 0 to go on, 1 when --help
 * was printed (exit 0), -1 after a usage error (exit CLI_EXIT_USAGE).
 */
int cli_getopt(struct cli_env *env, struct cli_args *a, int argc, char **argv,
               const struct option *opts, const char *usage, cli_private_fn priv, void *arg);

/* After getopt: reject positional arguments; check window consistency.
 * 0 or -1 after printing a usage error. */
int cli_args_finish(struct cli_env *env, struct cli_args *a, int argc, char **argv, int first);

/* Print "d9 <cmd>: <msg>\nTry 'd9 <cmd> --help'." on stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const struct cli_env *env, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Print "d9 <cmd>: <msg>" on stderr; returns CLI_EXIT_FAIL. */
int cli_fail(const struct cli_env *env, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Why a request to the collector failed (ctl_client_request's negative
 * errno), as the end of a "cannot reach the collector at ..." line. */
const char *cli_ctl_why(int rc);
/* One request to the collector at env->endpoint, for the commands whose
 * answer is one line (flush, trigger): prints the reply's message (else
 * ok_text) on stdout, or one line on stderr when the collector cannot be
 * reached or answers an error. Returns CLI_EXIT_OK or CLI_EXIT_FAIL. */
struct D9__Request;
int cli_ctl_say(const struct cli_env *env, const struct D9__Request *req, int timeout_ms,
                const char *ok_text);
/* Print "d9 <cmd>: warning: <msg>" on stderr. */
void cli_warn(const struct cli_env *env, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

struct q_store;
/* The warning after a scan whose blocks reported lost records: how many,
 * and why (the drop causes of the processes of pid in [from, to]). */
void cli_warn_lost(struct q_store *s, const struct cli_env *env, uint32_t pid, uint64_t from,
                   uint64_t to, uint64_t lost);

/* Open the store for reading, printing one line on failure (returns
 * CLI_EXIT_FAIL then) and CLI_EXIT_OK on success. */
int cli_open_store(const struct cli_env *env, struct q_store **out);

/* The common start of a subcommand that only takes common options and reads
 * the store: cli_args_init, cli_getopt (no private options), the live
 * refresh (cli_live.h) when opts lists --no-flush and it was not given,
 * cli_open_store.
 * On return *s is the open store (rc CLI_EXIT_OK: go on), or NULL and rc is
 * what the subcommand returns (--help printed, usage error, no store). */
int cli_begin(struct cli_env *env, struct cli_args *a, int argc, char **argv,
              const struct option *opts, const char *usage, struct q_store **s);

/* "window: everything" / "window: last 5m (live, counted back from now)". */
const char *cli_window_text(const struct q_window *w, bool live, char *buf, size_t cap);

/* ---- parsing (pure) --------------------------------------------------------- */
/* Duration: "<n>[ns|us|ms|s|m|h|d]" (no unit = seconds), e.g. 30s, 5m, 2h,
 * 1d, 250ms, 1.5s. Must be > 0. 0 or -EINVAL/-ERANGE. */
int cli_parse_duration(const char *s, uint64_t *ns);
/* Comma list of record type names (shm_record_type_name) into a bit mask.
 * On error *bad points at the offending name (copied into badbuf). */
int cli_parse_types(const char *s, uint32_t *mask, char *badbuf, size_t badcap);

/* ---- output helpers --------------------------------------------------------- */
/* "12.3ms", "850us", "1.20s", "2m03s"; cap >= 16. */
const char *cli_fmt_dur(uint64_t ns, char *buf, size_t cap);
/* "1.5 MiB"; cap >= 16. */
const char *cli_fmt_bytes(uint64_t bytes, char *buf, size_t cap);

/* Shared help text fragments. */
#define CLI_HELP_WINDOW \
"TIME WINDOW\n" \
"    All times are CLOCK_MONOTONIC nanoseconds (host-wide; what the index\n" \
"    stores). Without a window option every record in the store is used.\n" \
"    --since DUR     the last DUR: 30s, 5m, 2h, 1d, 250ms (no unit = seconds).\n" \
"                    On a live store (written during this boot) DUR counts back\n" \
"                    from now; on a store from another boot (a copied directory)\n" \
"                    \"now\" means nothing, so DUR counts back from the newest\n" \
"                    record of the selection (after --pid) instead.\n" \
"    --from NS       start of the window, absolute monotonic ns (inclusive).\n" \
"    --to NS         end of the window, absolute monotonic ns (inclusive).\n" \
"    --last          the whole store (the default; overrides the others).\n"

#define CLI_HELP_COMMON \
"COMMON OPTIONS\n" \
"    --store DIR     store directory (default: $D9_STORE, else /var/lib/dial9\n" \
"                    as root, else ./d9-store). May be a copy from another host.\n" \
"    -h, --help      print this help and exit.\n"

#define CLI_HELP_EXIT \
"EXIT STATUS\n" \
"    0   success (an empty result is a success: it is reported on stderr)\n" \
"    1   runtime error: no store or index, corrupt index, collector unreachable\n" \
"    2   bad usage: unknown option, bad value\n"

#endif /* D9_COL_CLI_H */
