/*
 * cli_trigger.c — `d9 trigger --pid PID [--reason TEXT]`: ask the running
 * collector to fire a trigger for a traced process now (d9.Trigger), as
 * d9_trigger(reason) does from inside the program. The collector answers
 * with the trigger's verdict (kept, merged, debounced, rate-limited) and
 * the window it keeps.
 *
 * Called by main.c. Uses ctl_client_request (collector/ctl/ctl_client.h).
 * Never touches the store itself.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "collector/cli/cli.h"
#include "collector/ctl/ctl_client.h"

#define TRIGGER_REASON_MAX 255u      /* the collector's TRIGD_REASON_MAX */

enum { TRIGGER_OPT_REASON = CLI_OPT_FIRST_PRIVATE };

static const char usage[] =
"NAME\n"
"    d9 trigger - keep the window of time around now for a traced process\n"
"\n"
"SYNOPSIS\n"
"    d9 [--endpoint EP] trigger --pid PID [--reason TEXT]\n"
"\n"
"DESCRIPTION\n"
"    Fires a trigger of PID at the collector's clock now, as the program's\n"
"    own d9_trigger(reason) would: the collector keeps the window\n"
"    [now - lookback, now + lookforward] (d9collectd --trigger-lookback-ms,\n"
"    --trigger-lookforward-ms), subject to its debounce and rate limit, and\n"
"    records the trigger with its verdict (kept, merged, debounced,\n"
"    rate-limited) in the index: d9 sql's triggers table, d9 findings.\n"
"    Prints the verdict and the kept window. A user may trigger only its\n"
"    own processes (root: any).\n"
"\n"
"OPTIONS\n"
"    --pid PID       the traced process (required).\n"
"    --reason TEXT   why (at most 255 bytes). Default: empty.\n"
CLI_HELP_ENDPOINT
"    -h, --help      this help.\n"
"\n"
"EXAMPLES\n"
"    d9 trigger --pid 1234 --reason 'slow checkout seen by the load balancer'\n"
"\n"
"EXIT STATUS\n"
"    0   the collector recorded the trigger (whatever its verdict)\n"
"    1   the collector is not reachable, or PID is not a live traced process\n"
"        the caller may see\n"
"    2   bad usage\n";

static int trigger_opt(struct cli_env *env, void *arg, int opt, const char *val)
{
    const char **reason = arg;
    if (opt != TRIGGER_OPT_REASON)
        return -1;
    if (strlen(val) > TRIGGER_REASON_MAX) {
        cli_usage_error(env, "--reason: at most %u bytes", TRIGGER_REASON_MAX);
        return -1;
    }
    *reason = val;
    return 0;
}

CLI_DECLARE_CMD(trigger)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP, CLI_OPTE_ENDPOINT, CLI_OPTE_STORE, CLI_OPTE_PID,
        { "reason", 1, NULL, TRIGGER_OPT_REASON }, CLI_OPTE_END,
    };
    struct cli_args a;
    cli_args_init(&a);
    const char *reason = "";
    int rc = cli_getopt(env, &a, argc, argv, opts, usage, trigger_opt, &reason);
    if (rc != 0)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (!a.pid) {
        cli_usage_error(env, "trigger needs --pid PID");
        return CLI_EXIT_USAGE;
    }
    D9__Trigger tg = D9__TRIGGER__INIT;
    tg.pid = a.pid;
    tg.reason = (char *)reason;
    D9__Request req = D9__REQUEST__INIT;
    req.body_case = D9__REQUEST__BODY_TRIGGER;
    req.trigger = &tg;
    return cli_ctl_say(env, &req, CLI_TIMEOUT_MS, "triggered");
}
