/*
 * cli_flush.c — `d9 flush`: ask the running collector to drain every ring
 * and seal the open segments now (d9.Flush), so that queries see the
 * newest data. The collector answers when the segments are sealed and
 * indexed.
 *
 * Called by main.c. Uses ctl_client_request (collector/ctl/ctl_client.h). Never touches
 * the store itself: the collector does the sealing.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "collector/cli/cli.h"
#include "collector/ctl/ctl_client.h"

#define FLUSH_TIMEOUT_MS 10000      /* draining and fsyncing can take a while */

static const char usage[] =
"NAME\n"
"    d9 flush - seal the collector's open segments now\n"
"\n"
"SYNOPSIS\n"
"    d9 [--endpoint EP] flush [--pid PID]\n"
"\n"
"DESCRIPTION\n"
"    The collector drains the rings of every traced process (or of PID),\n"
"    seals their open segments (fsync + rename) and indexes them, then\n"
"    answers. Afterwards ps, events, top-polls, sched and export see\n"
"    everything recorded up to the flush. Processes that have exited are\n"
"    finished (their last records and exit are written) at the same time.\n"
"    Waits up to 10 seconds for the answer.\n"
"\n"
"OPTIONS\n"
"    --pid PID       only this process.\n"
CLI_HELP_ENDPOINT
"    -h, --help      this help.\n"
"\n"
"EXAMPLES\n"
"    d9 flush && d9 top-polls\n"
"    d9 flush --pid 1234\n"
"\n"
"EXIT STATUS\n"
"    0   flushed\n"
"    1   the collector is not reachable, did not answer, or could not write\n"
"    2   bad usage\n";

CLI_DECLARE_CMD(flush)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP, CLI_OPTE_ENDPOINT, CLI_OPTE_STORE, CLI_OPTE_PID, CLI_OPTE_END,
    };
    struct cli_args a;
    cli_args_init(&a);
    int rc = cli_getopt(env, &a, argc, argv, opts, usage, NULL, NULL);
    if (rc != 0)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    D9__Flush fl = D9__FLUSH__INIT;
    fl.pid = a.pid;
    D9__Request req = D9__REQUEST__INIT;
    req.body_case = D9__REQUEST__BODY_FLUSH;
    req.flush = &fl;
    return cli_ctl_say(env, &req, FLUSH_TIMEOUT_MS, "flushed");
}
