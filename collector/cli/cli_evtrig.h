/*
 * cli_evtrig.h — the triggers that are not ring records (`d9 trigger --pid`,
 * long polls, crashes: rows of the index's triggers table only, idx_trig.h)
 * as marker rows of `d9 events`, merged in time order with the records.
 *
 * Each prints as a custom event "d9_trigger" (the name of the agent's
 * marker, so --type custom and --event d9_trigger select them) of thread 0
 * with the fields source, reason and verdict. Markers (source "marker")
 * are not repeated: their ring record is the row.
 *
 * Called by cli_events.c: cli_evtrig_load before the scan, cli_evtrig_flush
 * with each record's time (rows before it are printed first) and with
 * UINT64_MAX after the scan. Rows are bounded (CLI_EVTRIG_MAX; more are
 * counted and dropped).
 */
#ifndef D9_CLI_EVTRIG_H
#define D9_CLI_EVTRIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_EVTRIG_MAX 100000u

struct q_store;

struct cli_evtrig {
    struct cli_evtrig_row *rows;
    size_t n, next, dropped;
    bool jsonl;
    int64_t boot;
    bool wall;
};

/* Loads the non-marker triggers of pid (0: all) in [from, to], by time.
 * 0 or -errno (then none are loaded; an old store without the table has
 * none). */
int cli_evtrig_load(struct cli_evtrig *e, struct q_store *s, uint32_t pid, uint64_t from,
                    uint64_t to);
/* Prints the rows not yet printed whose time is <= ts, at most max (0: no
 * limit) of them; returns how many were printed. */
uint64_t cli_evtrig_flush(struct cli_evtrig *e, FILE *out, uint64_t ts, uint64_t max);
void cli_evtrig_free(struct cli_evtrig *e);

#endif
