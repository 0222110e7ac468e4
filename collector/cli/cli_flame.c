/*
 * cli_flame.c — `d9 flame`: CPU (or off-CPU) profile of a window, a process,
 * a thread or one task's polls, as folded stacks ("root;...;leaf COUNT"),
 * the input format of flamegraph.pl, inferno and speedscope. The folding
 * and naming are q_flame.h's; this file is the options and the messages.
 *
 * Called by main.c. Must never write to the store.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/cli/cli.h"
#include "collector/cli/cli_live.h"
#include "collector/query/q_flame.h"

static const char usage[] =
"NAME\n"
"    d9 flame - CPU and off-CPU profiles as folded stacks (flame graphs)\n"
"\n"
"SYNOPSIS\n"
"    d9 [--store DIR] flame [--pid PID] [--tid TID] [--task ID] [--off-cpu]\n"
"                           [--weight | --count] [--no-kernel] [--addresses]\n"
"                           [--since DUR | --from NS --to NS | --last] [-o FILE]\n"
"\n"
"DESCRIPTION\n"
"    Prints one line per distinct call stack, outermost frame first:\n"
"        main;worker_main;parse_request;memcpy 42\n"
"    the \"folded\" format read by flamegraph.pl, inferno-flamegraph and\n"
"    speedscope (d9 flame --pid 1234 > out.folded; flamegraph.pl out.folded\n"
"    > out.svg). Samples come from d9collectd's perf_event_open sampling\n"
"    (on-CPU at about --perf-freq Hz, default 99, taken on the scheduler\n"
"    tick where it can be: see d9collectd --perf-clock; off-CPU, 1 in N\n"
"    context switches, when the collector runs with --switch-period N), or\n"
"    from the agent's in-process fallback (DIAL9_SAMPLER=itimer) when perf\n"
"    is not permitted. Stacks are walked with frame pointers: build with\n"
"    -fno-omit-frame-pointer for complete stacks.\n"
"\n"
"    Frames are named at query time from the memory maps the collector\n"
"    recorded (for a process it never saw alive: the loaded objects the\n"
"    agent published at start and after dlopen) and the ELF files they\n"
"    name (.symtab, .dynsym; debug files\n"
"    under /usr/lib/debug/.build-id are used when the build-id matches).\n"
"    A frame whose file is missing or changed prints as file+0xOFFSET;\n"
"    kernel frames print as name_[k] when /proc/kallsyms is readable and\n"
"    the store comes from this boot, else [kernel].\n"
"\n"
"OPTIONS\n"
"    --pid PID       only samples of this process.\n"
"    --tid TID       only samples of this thread.\n"
"    --task ID       only samples taken while task ID was being polled on\n"
"                    the sampled thread (between its poll_start and\n"
"                    poll_end): the profile of one task.\n"
"    --off-cpu       off-CPU profile: where threads went to sleep or were\n"
"                    preempted (sampled context switches) instead of where\n"
"                    they ran. Implies --weight.\n"
"    --weight        sum each sample's weight in nanoseconds (CPU: the CPU\n"
"                    time a sample stands for, its period; off-CPU: the time\n"
"                    until the thread ran again, times the collector's\n"
"                    --switch-period N, since 1 switch in N is sampled: the\n"
"                    off-CPU time it stands for).\n"
"    --count         count samples (the default for CPU profiles).\n"
"    --no-kernel     drop kernel frames.\n"
"    --addresses     print raw addresses (0x...) instead of names.\n"
"    -o, --output FILE  write to FILE instead of standard output.\n"
CLI_HELP_NO_FLUSH
"\n"
CLI_HELP_WINDOW "\n" CLI_HELP_COMMON "\n"
"EXAMPLES\n"
"    d9 flame --pid 1234 --since 30s > cpu.folded\n"
"    d9 flame --pid 1234 --task 77 | flamegraph.pl > task77.svg\n"
"    d9 flame --pid 1234 --off-cpu > offcpu.folded\n"
"\n"
CLI_HELP_EXIT;

enum {
    OPT_TASK = CLI_OPT_FIRST_PRIVATE,
    OPT_OFFCPU,
    OPT_WEIGHT,
    OPT_COUNT,
    OPT_NO_KERNEL,
    OPT_ADDRESSES,
};

struct flame_opts {
    struct q_flame_opts q;
    int weight;                 /* -1 unset, 0 count, 1 weight */
};

static int priv(struct cli_env *env, void *arg, int opt, const char *val)
{
    struct flame_opts *o = arg;
    switch (opt) {
    case OPT_TASK:
        if (q_text_parse_u64(val, &o->q.task) != 0) {
            cli_usage_error(env, "--task: '%s' is not a task id", val);
            return -1;
        }
        o->q.have_task = true;
        return 0;
    case OPT_OFFCPU:
        o->q.off_cpu = true;
        return 0;
    case OPT_WEIGHT:
        o->weight = 1;
        return 0;
    case OPT_COUNT:
        o->weight = 0;
        return 0;
    case OPT_NO_KERNEL:
        o->q.no_kernel = true;
        return 0;
    case OPT_ADDRESSES:
        o->q.addresses = true;
        return 0;
    default:
        cli_usage_error(env, "unexpected option");
        return -1;
    }
}

CLI_DECLARE_CMD(flame)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP, CLI_OPTE_STORE, CLI_OPTE_PID, CLI_OPTE_TID, CLI_OPTE_WINDOW,
        CLI_OPTE_OUTPUT,
        { "task", 1, NULL, OPT_TASK },
        { "off-cpu", 0, NULL, OPT_OFFCPU },
        { "weight", 0, NULL, OPT_WEIGHT },
        { "count", 0, NULL, OPT_COUNT },
        { "no-kernel", 0, NULL, OPT_NO_KERNEL },
        { "addresses", 0, NULL, OPT_ADDRESSES },
        CLI_OPTE_NO_FLUSH, CLI_OPTE_END,
    };
    struct flame_opts o = { .weight = -1 };
    struct cli_args a;
    cli_args_init(&a);
    int rc = cli_getopt(env, &a, argc, argv, opts, usage, priv, &o);
    if (rc != 0)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    o.q.weight = o.weight < 0 ? o.q.off_cpu : o.weight == 1;
    o.q.tid = a.tid;            /* by the sample's tid, not the block's: perf blocks hold many */
    struct q_flame *f;
    if (q_flame_new(&f, &o.q) < 0)
        return cli_fail(env, "out of memory");

    FILE *out = stdout;
    if (a.output && strcmp(a.output, "-") != 0) {
        out = fopen(a.output, "w");
        if (!out) {
            int e = errno;
            q_flame_free(f);
            return cli_fail(env, "-o %s: %s", a.output, strerror(e));
        }
    }
    struct q_store *s;
    if (!a.no_flush)
        cli_live_refresh(env);
    if ((rc = cli_open_store(env, &s)) != CLI_EXIT_OK) {
        if (out != stdout)
            fclose(out);
        q_flame_free(f);
        return rc;
    }

    uint64_t from, to;
    q_store_window_resolve(s, &a.win, a.pid, &from, &to);
    struct q_scan_stats st;
    int r = q_flame_run(f, s, a.pid, from, to, &st, "d9 flame");
    struct q_flame_counts n;
    q_flame_counts(f, &n);
    if (r < 0) {
        rc = cli_fail(env, "%s: scan failed (error %d)", env->store, r);
    } else if (n.stacks == 0) {
        char w[160];
        fprintf(stderr, "d9 flame: no %s samples%s in %s%s%s\n",
                o.q.off_cpu ? "off-CPU" : "CPU", o.q.have_task ? " inside the task's polls" : "",
                cli_window_text(&a.win, q_store_live(s), w, sizeof w),
                st.blocks == 0 ? " (no indexed blocks: unsealed data needs 'd9 flush')" : "",
                o.q.off_cpu && st.blocks ? " (off-CPU samples need d9collectd --switch-period N)"
                                         : "");
    } else {
        if (q_flame_print(f, out) < 0) {
            rc = cli_fail(env, "out of memory");
        } else {
            if (fflush(out) != 0)
                rc = cli_fail(env, "%s: write error", out == stdout ? "standard output" : a.output);
            fprintf(stderr, "d9 flame: %" PRIu64 " samples, %" PRIu64 " kept, %" PRIu64 " stacks, "
                    "%" PRIu64 " processes%s\n", n.samples, n.kept, n.stacks, n.processes,
                    n.maps == 0 && !o.q.addresses ? " (no memory maps recorded: raw addresses)"
                                                  : "");
        }
    }
    if (st.lost && r >= 0)
        cli_warn_lost(s, env, a.pid, from, to, st.lost);
    if (out != stdout && fclose(out) != 0 && rc == CLI_EXIT_OK)
        rc = cli_fail(env, "-o %s: write error", a.output);
    q_flame_free(f);            /* before the store: its names read through it */
    q_store_close(s);
    return rc;
}
