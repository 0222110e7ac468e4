/*
 * q_pair.h — pairs poll_start / poll_end records into polls (task, thread,
 * start, duration) for `d9 top-polls` and `d9 export`.
 *
 * A poll is identified by the ring generation that recorded it (one thread)
 * and the task id: a worker polls one task at a time, possibly nested
 * (block_on inside a poll), so per thread a short list of open polls is
 * kept. A poll_end with no open start (its start was before the window or
 * dropped) is counted as unpaired; a second poll_start of the same task on
 * the same thread replaces the first (its end was dropped) and is counted.
 *
 * A gap (a block of the thread that could not be read: rec == NULL from a
 * scan with q_filter.gaps) ends the thread's open polls and parks unpaired
 * (counted as broken): an end after a gap may belong to a later start lost
 * in it, and pairing across would invent a poll as long as the gap.
 *
 * With q_pair_track_parks(), worker_park / worker_unpark pairs on a thread
 * are paired the same way into "parked" intervals (task = Q_POLL_PARKED,
 * feed returns 2), for export.
 *
 * A poll still open after the scan (its process crashed or exited inside it,
 * is still in it, or the window ends first) gets its end from
 * q_pair_end_open(), the one rule every command uses (top-polls, d9 sql,
 * serve, the exports): the last record of its process, which it outlasted.
 *
 * Called from scan callbacks (q_scan.h) in time order. Memory: one entry per
 * thread seen plus the polls open at the same time, never per poll.
 */
#ifndef D9_COL_Q_PAIR_H
#define D9_COL_Q_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collector/query/q_scan.h"

struct q_poll {
    int64_t process_id;
    uint32_t pid, tid, ring, generation;
    uint64_t task;
    uint32_t loc;
    uint16_t runtime, worker;
    uint64_t start_ns, end_ns;      /* end_ns = 0 while unfinished */
    bool hidden;                    /* internal: a start q_pair_only() excludes */
};

struct q_pair_stats {
    uint64_t paired;
    uint64_t unpaired_ends;         /* poll_end without a poll_start */
    uint64_t replaced_starts;       /* poll_start of a task already open on that thread */
    uint64_t broken;                /* polls and parks open when a gap of their thread came */
    uint64_t gaps;                  /* gaps fed */
};

struct q_pair;

#define Q_POLL_PARKED UINT64_MAX  /* task id of a parked interval */

int q_pair_new(struct q_pair **out);
void q_pair_free(struct q_pair *p);

/* Also pair worker_park -> worker_unpark into parked intervals. */
void q_pair_track_parks(struct q_pair *p);

/* Deliver only the polls whose runtime is named runtime (exact, NULL = any)
 * and whose location text (q_loc_text: "file:line function", as top-polls
 * prints it) contains location (a case-sensitive substring, NULL = any).
 * The names are those of the poll_start's segment. Polls left out are still
 * paired (their ends are not "ends without a start") but never delivered,
 * nor listed by q_pair_next_open. The strings must outlive p. */
void q_pair_only(struct q_pair *p, const char *runtime, const char *location);

/* Feed one record (other types are ignored), or a gap of src's thread
 * (rec == NULL). Returns 1 and fills *done when rec closes a poll, 2 when it
 * closes a parked interval, 0 otherwise, -ENOMEM. */
int q_pair_feed(struct q_pair *p, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                   size_t len, struct q_poll *done);

/* Make *open (end_ns 0) an open poll or park (task Q_POLL_PARKED) of its
 * thread, as if its start had been fed: for a reader that found the polls
 * open at a window's start by looking back. 0 or -ENOMEM. */
int q_pair_seed(struct q_pair *p, const struct q_poll *open);

/* Polls still open after the last record: call with *it = 0 until it returns 0. */
int q_pair_next_open(const struct q_pair *p, size_t *it, struct q_poll *out);

const struct q_pair_stats *q_pair_stats(const struct q_pair *p);

/* Why a poll (or park) has no end in the data. */
enum q_open_why {
    Q_OPEN_ALIVE = 0,               /* its process has not ended as far as the store knows */
    Q_OPEN_CRASHED,                 /* its process crashed inside it */
    Q_OPEN_EXITED,                  /* its process exited inside it */
    Q_OPEN_ENDED,                   /* its process ended otherwise (quarantined, unknown) */
    Q_OPEN_WINDOW,                  /* its process went on past the window's end */
};

/* Ends a poll (or park) left open after the scan: p->end_ns = the last
 * record of its process that the store holds (the process was alive, so the
 * poll open, at least until then; not when the collector saw the death, up
 * to a drain interval later), or processes.last_ns where the index has no
 * block rows; cut at the window's end `to`; never before p->start_ns. The
 * duration is then a lower bound ("at least"). s NULL (no index): the end is
 * `to`. Returns why the poll is open. */
enum q_open_why q_pair_end_open(struct q_store *s, uint64_t to, struct q_poll *p);

/* "process crashed", "process exited", "process ended", "still open",
 * "open at the window's end": the reason as every command prints it. */
const char *q_pair_open_text(enum q_open_why why);

#endif /* D9_COL_Q_PAIR_H */
