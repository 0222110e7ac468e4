/*
 * serve_edge.h — what d9 serve's timelines found open at their windows'
 * start, kept per thread so that the next window a little later (a zoom in,
 * a pan right) reads only the records between the two starts instead of
 * looking back again.
 *
 * A timeline's look-back (serve_api.c: lookback) reads a thread's records
 * before the window's start until its state there is known (a park, a
 * gap, its first record, or the read bound: "partial"); on busy workers
 * that never park that is up to SERVE_API_EDGE_MAX records, for every
 * window however small. The state it ends with at time T (the polls and
 * parks open there, and whether it was partial) is put here; a later
 * window starting at T' >= T (T' - T within the caller's reach) seeds a
 * pairing with it and reads only [T, T'): q_pair is a stream, so that is
 * the state a look-back reading across T would end with, partial when the
 * first one was (unless a park or gap in [T, T') settles it).
 *
 * The thread's loop-work state at T (q_loopwork_thr) is kept with it, so
 * loop work open at the window's start is drawn whole from a kept state too.
 *
 * A look-back in progress is claimed (serve_edge_take): a second request
 * that would use its state waits for it instead of reading the same
 * records at the same time (the page's next zoom step, while the one it
 * superseded still looks back: its look-back is not cancelled, so its
 * work is kept for the next steps).
 *
 * Keyed by the store's directory, the process row and its first and last
 * record time (a process with new records is looked back afresh), and the
 * thread. States seen with a gap, or with more than SERVE_EDGE_OPEN_MAX
 * polls open, are not kept. A fixed table of SERVE_EDGE_SLOTS entries,
 * least recently used replaced; one mutex (serve_pool's workers share it).
 *
 * Called by serve_api.c only. Never reads the store.
 */
#ifndef D9_COL_SERVE_EDGE_H
#define D9_COL_SERVE_EDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collector/query/q_loopwork.h"
#include "collector/query/q_pair.h"

#define SERVE_EDGE_SLOTS     256u
#define SERVE_EDGE_OPEN_MAX  32u

struct serve_edge_key {
    uint64_t dir_hash;              /* serve_edge_dir_hash(q_store_dir) */
    int64_t process_id;
    uint64_t proc_first, proc_last;
    uint32_t tid;
};

uint64_t serve_edge_dir_hash(const char *dir);

enum serve_edge_got {
    SERVE_EDGE_FOUND,               /* *t, open[0..*n), *partial: a kept state */
    SERVE_EDGE_CLAIMED,             /* none: look back, then serve_edge_release(k, at) */
    SERVE_EDGE_GONE                 /* gone() said so while waiting for a claim */
};

/* The kept state of k at the latest time T with T <= at and at - T <= reach.
 * When there is none but another thread's claim at such a T is in
 * progress, waits for it (asking gone() every SERVE_EDGE_WAIT_MS, at most
 * SERVE_EDGE_WAIT_MAX_MS in all) and looks again; when there is none at
 * all, claims (k, at). */
#define SERVE_EDGE_WAIT_MS      20u
#define SERVE_EDGE_WAIT_MAX_MS  30000u
enum serve_edge_got serve_edge_take(const struct serve_edge_key *k, uint64_t at, uint64_t reach,
                                    uint64_t *t, struct q_poll open[SERVE_EDGE_OPEN_MAX],
                                    size_t *n, bool *partial, struct q_loopwork_thr *lw,
                                    bool (*gone)(void));

/* End the claim (k, at) (none: nothing), waking its waiters. */
void serve_edge_release(const struct serve_edge_key *k, uint64_t at);

/* Keep the state of k at time t (n <= SERVE_EDGE_OPEN_MAX, else ignored),
 * with the thread's loop-work state there (lw; NULL: none, and a take gives
 * lw->used == false). */
void serve_edge_put(const struct serve_edge_key *k, uint64_t t, const struct q_poll *open,
                    size_t n, bool partial, const struct q_loopwork_thr *lw);

/* Forget everything (tests). */
void serve_edge_clear(void);

#endif /* D9_COL_SERVE_EDGE_H */
