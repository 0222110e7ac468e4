/*
 * cli_live.h — live data for the reading commands: before a query, ask the
 * collector that writes the store to seal the open segments of its live
 * processes, so that `d9 ps`, `top-polls`, `sql`, ... and `d9 serve` see a
 * running process's records without a `d9 flush`.
 *
 * The one module that does it (called by cli_begin for the commands whose
 * option table lists --no-flush, by the other reading commands after their
 * option parsing, and by cli_serve.c through the refresher below). The request is
 * d9.Flush with min_age_ns = CLI_LIVE_MIN_AGE_NS (only segments opened at
 * least that long ago are sealed: queries in a loop seal at most one segment
 * per process per second) and store = the realpath of env->store (a
 * collector writing another store flushes nothing). It waits at most
 * CLI_LIVE_WAIT_MS per step of the request.
 *
 * Silent by design: no collector at the endpoint, another store, another
 * user's processes, a timeout or an error all leave the command to read
 * what is sealed, as without the refresh. Must never: print, fail the
 * command, or write to the store itself (the collector does the sealing).
 */
#ifndef D9_COL_CLI_LIVE_H
#define D9_COL_CLI_LIVE_H

#include "collector/cli/cli.h"

#define CLI_LIVE_MIN_AGE_NS 1000000000ull   /* seal open segments at least 1 s old */
#define CLI_LIVE_WAIT_MS    2000            /* bounded wait for the collector */

/* Ask the collector at env->endpoint to seal the old-enough open segments
 * of env->store's live processes. 1 when the collector did (and the store
 * now holds their records up to the request), 0 when it was skipped or
 * failed (silently). */
int cli_live_refresh(const struct cli_env *env);

/*
 * The rate-limited refresher of a long-running reader (d9 serve): a thread
 * that calls cli_live_refresh at most once per CLI_LIVE_PERIOD_MS, and only
 * after cli_live_poke was called since its last refresh (a request came
 * in). cli_live_poke is one atomic store: safe from any thread, never
 * blocks. cli_live_start returns NULL when the thread cannot be started
 * (then pokes are no-ops: the server reads what is sealed). cli_live_stop
 * wakes, joins and frees it (NULL is fine). env must outlive it.
 */
#define CLI_LIVE_PERIOD_MS  1000
struct cli_live;
struct cli_live *cli_live_start(const struct cli_env *env);
void cli_live_poke(struct cli_live *l);
void cli_live_stop(struct cli_live *l);

/* The --no-flush line of a reading command's --help. */
#define CLI_HELP_NO_FLUSH \
"    --no-flush      do not ask the running collector (at the global\n" \
"                    --endpoint) to seal its live processes' open segments\n" \
"                    first; by default segments at least 1 s old are sealed\n" \
"                    (waiting at most 2 s), so a running program's records are\n" \
"                    seen without d9 flush. Skipped when no collector writes\n" \
"                    this store.\n"

/* The same for d9 serve, which refreshes on its requests. */
#define CLI_HELP_NO_FLUSH_SERVE \
"    --no-flush          never ask the running collector to seal live\n" \
"                        processes' open segments. By default, at start and\n" \
"                        then at most once a second while API requests come\n" \
"                        in, segments at least 1 s old are sealed, so the page\n" \
"                        (and follow) shows a running program within about a\n" \
"                        second. Skipped when no collector writes this store.\n"

#endif /* D9_COL_CLI_LIVE_H */
