/*
 * cli_polls.h — pairs poll_start / poll_end records into polls (task, thread,
 * start, duration) for `d9 top-polls` and `d9 export`.
 *
 * A poll is identified by the ring generation that recorded it (one thread)
 * and the task id: a worker polls one task at a time, possibly nested
 * (block_on inside a poll), so per thread a short list of open polls is
 * kept. A poll_end with no open start (its start was before the window or
 * dropped) is counted as unpaired; a second poll_start of the same task on
 * the same thread replaces the first (its end was dropped) and is counted.
 *
 * With cli_polls_track_parks(), worker_park / worker_unpark pairs on a thread
 * are paired the same way into "parked" intervals (task = CLI_POLL_PARKED,
 * feed returns 2), for export.
 *
 * Called from scan callbacks (cli_store.h) in time order. Memory: one entry per
 * thread seen plus the polls open at the same time, never per poll.
 */
#ifndef D9_COL_CLI_POLLS_H
#define D9_COL_CLI_POLLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collector/cli/cli_store.h"

struct cli_poll {
    int64_t process_id;
    uint32_t pid, tid, ring, generation;
    uint64_t task;
    uint32_t loc;
    uint16_t runtime, worker;
    uint64_t start_ns, end_ns;      /* end_ns = 0 while unfinished */
};

struct cli_polls_stats {
    uint64_t paired;
    uint64_t unpaired_ends;         /* poll_end without a poll_start */
    uint64_t replaced_starts;       /* poll_start of a task already open on that thread */
};

struct cli_polls;

#define CLI_POLL_PARKED UINT64_MAX  /* task id of a parked interval */

int cli_polls_new(struct cli_polls **out);
void cli_polls_free(struct cli_polls *p);

/* Also pair worker_park -> worker_unpark into parked intervals. */
void cli_polls_track_parks(struct cli_polls *p);

/* Feed one record (other types are ignored). Returns 1 and fills *done when
 * rec closes a poll, 2 when it closes a parked interval, 0 otherwise, -ENOMEM. */
int cli_polls_feed(struct cli_polls *p, const struct cli_rec_src *src, const struct d9_rec_hdr *rec,
                   size_t len, struct cli_poll *done);

/* Polls still open after the last record: call with *it = 0 until it returns 0. */
int cli_polls_next_open(const struct cli_polls *p, size_t *it, struct cli_poll *out);

const struct cli_polls_stats *cli_polls_stats(const struct cli_polls *p);

#endif /* D9_COL_CLI_POLLS_H */
