/*
 * main.c — main of the `d9` CLI: global options, then dispatch to a
 * subcommand from the table below. Each subcommand lives in its own file
 * collector/cli/cli_<name>.c and is declared here by one D9_COMMANDS line.
 *
 * d9 reads the store (index + segments, via q_store.h) and talks to the
 * collector's control endpoint (status, flush). Only `fsck --repair`
 * (cli_fsck.c) ever writes to a store.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/cli/cli.h"
#include "collector/cli/cli_s3store.h"
#include "collector/sql/sql_guard.h"

#ifndef D9_VERSION
#define D9_VERSION "dev"
#endif

/* X(function suffix, name as typed, one-line summary) */
#define D9_COMMANDS(X)                                                                   \
    X(status, "status", "live collector status: processes, rings, lag, lost, bytes")    \
    X(flush, "flush", "ask the collector to seal open segments now")                     \
    X(ps, "ps", "processes seen in the store (alive, exited, crashed)")                  \
    X(segments, "segments", "segment files of the store, with time range and counts")    \
    X(events, "events", "decoded records, filtered by pid/tid/type/time")                \
    X(top_polls, "top-polls", "longest task polls, with the location of each poll")     \
    X(sched, "sched", "scheduling delay and CPU time per worker")                        \
    X(findings, "findings", "what is wrong in a window, ranked, with evidence and links") \
    X(export, "export", "trace file: Chrome JSON or Perfetto protobuf (--format)")    \
    X(flame, "flame", "CPU / off-CPU profile as folded stacks (flame graphs)")         \
    X(serve, "serve", "web UI and JSON API over the store (timeline, top polls, events)") \
    X(sql, "sql", "SQL over the recorded events (virtual tables; --schema lists them)") \
    X(fsck, "fsck", "check that index and segment files agree; --repair fixes them")    \
    X(pull, "pull", "fetch a host's shipped segments from S3 into a local store")       \
    X(trigger, "trigger", "keep the window around now for a traced process (--pid)")

#define D9_DECLARE(fn, name, summary) CLI_DECLARE_CMD(fn);
D9_COMMANDS(D9_DECLARE)
#define D9_ROW(fn, name, summary) { name, summary, cli_##fn##_cmd },
static const struct cli_cmd commands[] = { D9_COMMANDS(D9_ROW) };
#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* global options of main only (the common ones are cli.h's) */
enum {
    MAIN_OPT_S3_ENDPOINT = CLI_OPT_FIRST_PRIVATE + 50,
    MAIN_OPT_S3_REGION,
    MAIN_OPT_HOST,
    MAIN_OPT_CACHE,
    MAIN_OPT_DEBUG_DIR,
};

static void usage(FILE *f)
{
    fprintf(f,
"NAME\n"
"    d9 - query the telemetry recorded by d9collectd\n"
"\n"
"SYNOPSIS\n"
"    d9 [--store DIR] [--endpoint EP] <command> [options]\n"
"    d9 --store s3://BUCKET[/PREFIX] [--host H] [--cache DIR] <command> ...\n"
"    d9 <command> --help\n"
"    d9 --version\n"
"\n"
"DESCRIPTION\n"
"    d9 reads a store directory written by d9collectd: an SQLite index\n"
"    (index.sqlite) and segment files. It works on a live store while the\n"
"    collector writes (read-only, WAL) and on a copied directory. The\n"
"    status and flush commands talk to the running collector instead.\n"
"\n"
"COMMANDS\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "    %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
"\n"
"GLOBAL OPTIONS\n"
"    --store DIR     store directory (also accepted after the command).\n"
"                    Default: $D9_STORE, else /var/lib/dial9 when run as root,\n"
"                    else ./d9-store.\n"
"    --endpoint EP   collector control endpoint, for status and flush (also\n"
"                    accepted after those two). Default:\n"
"                    $DIAL9_COLLECTOR, else ipc:///run/dial9/collector.sock as\n"
"                    root, else ipc://$XDG_RUNTIME_DIR/dial9/collector.sock\n"
"                    (ipc:///tmp/dial9-UID/collector.sock without XDG_RUNTIME_DIR).\n"
"    --store s3://BUCKET[/PREFIX]\n"
"                    a bucket d9collectd --ship uploads to: the command runs on\n"
"                    a local cache that is first brought up to date by a pull\n"
"                    (see d9 pull), filtered by the command's own --pid and\n"
"                    --since (--since then counts back from now); others pull\n"
"                    the whole prefix. Works for ps, segments, events,\n"
"                    top-polls, sched, export, flame, sql and serve.\n"
"    --host H        with --store s3://: the host's segments (needed when\n"
"                    the prefix holds several hosts).\n"
"    --cache DIR     with --store s3://: the cache directory. Default:\n"
"                    $XDG_CACHE_HOME/d9/s3/ENDPOINT/BUCKET/PREFIX[/@HOST],\n"
"                    else ~/.cache/d9/s3/...\n"
"    --debug-dir DIR where frames' debug files are looked for by build-id\n"
"                    (DIR/xx/yyyy.debug; default /usr/lib/debug/.build-id,\n"
"                    or $D9_DEBUG_DIR): a library with only .dynsym (libc)\n"
"                    is named from its debug file (Debian: libc6-dbg).\n"
"    --s3-endpoint URL  S3-compatible server (default: AWS); --s3-region R\n"
"                    region to sign for. Credentials: see d9 pull --help.\n"
"    -h, --help      this help.  --version  print the version.\n"
"\n"
"EXAMPLES\n"
"    d9 status                         # is the collector running, what is it tracing\n"
"    d9 flush && d9 ps                 # seal what is buffered, list processes\n"
"    d9 top-polls --since 5m           # the 20 longest polls of the last 5 minutes\n"
"    d9 events --pid 1234 --type custom --format jsonl --limit 100\n"
"    d9 export --pid 1234 -o trace.json   # open in https://ui.perfetto.dev\n"
"    d9 --store /tmp/copied-store ps   # a store copied from another host\n"
"    d9 --store s3://traces/fleet --host web-1 top-polls   # a host's shipped traces\n"
"\n"
CLI_HELP_EXIT);
}

int main(int argc, char **argv)
{
    struct cli_env env;
    memset(&env, 0, sizeof env);
    env.prog = "d9";
    /* No file name from a store, a flag or `d9 sql` is taken for a URI
     * ("file:...?mode=rwc"): code that means one passes SQLITE_OPEN_URI.
     * Fails only once SQLite has started, and nothing starts it before. */
    if (sql_guard_uri_off() < 0)
        return cli_fail(&env, "SQLite started before d9 could turn URI file names off");
    if (cli_env_defaults(&env) < 0)
        return cli_fail(&env, "$%s or $%s is too long", CLI_STORE_ENV, CLI_ENDPOINT_ENV);

    static const struct option opts[] = {
        { "store", 1, NULL, CLI_OPT_STORE },
        { "endpoint", 1, NULL, CLI_OPT_ENDPOINT },
        { "help", 0, NULL, 'h' },
        { "version", 0, NULL, 'V' },
        { "s3-endpoint", 1, NULL, MAIN_OPT_S3_ENDPOINT },
        { "s3-region", 1, NULL, MAIN_OPT_S3_REGION },
        { "host", 1, NULL, MAIN_OPT_HOST },
        { "cache", 1, NULL, MAIN_OPT_CACHE },
        { "debug-dir", 1, NULL, MAIN_OPT_DEBUG_DIR },
        { NULL, 0, NULL, 0 },
    };
    struct cli_args dummy;
    cli_args_init(&dummy);
    opterr = 0;
    int c;
    /* '+': stop at the command name; its options are parsed by the command */
    while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            usage(stdout);
            return CLI_EXIT_OK;
        case 'V':
            printf("d9 %s\n", D9_VERSION);
            return CLI_EXIT_OK;
        case MAIN_OPT_S3_ENDPOINT:
            env.s3_endpoint = optarg;
            break;
        case MAIN_OPT_S3_REGION:
            env.s3_region = optarg;
            break;
        case MAIN_OPT_HOST:
            env.s3_host = optarg;
            break;
        case MAIN_OPT_CACHE:
            env.cache = optarg;
            break;
        case MAIN_OPT_DEBUG_DIR:
            env.debug_dir = optarg;
            break;
        default:
            if (cli_common_opt(&env, &dummy, c, argv) != 0)
                return CLI_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        char names[512] = "";
        size_t o = 0;
        for (size_t i = 0; i < NCOMMANDS && o < sizeof names; i++)
            o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "",
                                  commands[i].name);
        return cli_usage_error(&env, "no command given (one of: %s)", names);
    }
    const char *name = argv[optind];
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (strcmp(commands[i].name, name) != 0)
            continue;
        env.cmd = commands[i].name;
        int sub_argc = argc - optind;
        char **sub_argv = argv + optind;
        int rc = cli_s3store_prepare(&env, sub_argc, &sub_argv);
        if (rc != CLI_EXIT_OK)
            return rc;
        optind = 0;                 /* glibc: full re-initialisation for the new argv */
        opterr = 0;
        return commands[i].run(&env, sub_argc, sub_argv);
    }
    return cli_usage_error(&env, "unknown command '%s'", name);
}
