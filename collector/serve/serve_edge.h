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

/* The kept state of k at the latest time T with T <= at and at - T <= reach:
 * true with *t, open[0..*n) and *partial; false when none. */
bool serve_edge_get(const struct serve_edge_key *k, uint64_t at, uint64_t reach, uint64_t *t,
                    struct q_poll open[SERVE_EDGE_OPEN_MAX], size_t *n, bool *partial);

/* Keep the state of k at time t (n <= SERVE_EDGE_OPEN_MAX, else ignored). */
void serve_edge_put(const struct serve_edge_key *k, uint64_t t, const struct q_poll *open,
                    size_t n, bool partial);

/* Forget everything (tests). */
void serve_edge_clear(void);

#endif /* D9_COL_SERVE_EDGE_H */
