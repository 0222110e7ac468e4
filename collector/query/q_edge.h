/*
 * q_edge.h — one segment's rollups counted only inside a window's edge
 * ranges (rollup_only), reading only the DATA blocks those ranges need
 * instead of the whole file: q_agg's edges (collector/query/q_agg.h).
 *
 * Blocks come from the index (idx_read_segment_blocks: offset, kind,
 * thread, time range), as for every scan of records (q_scan.h), and are
 * fed in file order, as rollup_file feeds them: every META block (the
 * schemas of the custom events after it), and per thread (ring,
 * generation):
 *   - the blocks whose time range meets a range;
 *   - after them, the thread's next blocks while something counted still
 *     waits on a later record (rollup_pending: a poll started in a range
 *     not yet ended or replaced, a park in a range not yet unparked), up to
 *     the thread's last block of the segment (then what is still open is
 *     unfinished, as in the whole file);
 *   - with lookback, also every block of the thread before the first one
 *     that meets a range. Only busy_ns needs it: a poll's busy time depends
 *     on the polls open below it on its thread (rollup.h), which can have
 *     started anywhere earlier in the segment. Every other fact of a range
 *     (polls, unfinished, sums, maxima, histograms, parks, parked and wait
 *     time, wake and event counts) depends only on records at or after its
 *     own, so without lookback those are exact and busy_ns is not.
 * So with lookback the answer equals rollup_file_only over the whole file
 * (the raw scan) exactly, and without it every fact but busy_ns does;
 * both except the wake->poll delays (a wake counted in a range is paired
 * only with a poll start in the blocks read). File order across threads
 * matters where threads share an entry: a worker run by two threads (one
 * took it over) keeps the first sampled cpu_ns fed (rollup.h).
 *
 * Called by q_agg.c. Must never: write to the store, or use a block whose
 * header does not match its index row (returns -EBADMSG: the caller reads
 * the whole file instead, which names the problem). A block whose header
 * matches but whose payload does not check is left out alone (with skip),
 * as the record scans leave it out.
 */
#ifndef D9_COL_Q_EDGE_H
#define D9_COL_Q_EDGE_H

#include <stddef.h>
#include <stdint.h>
#include "collector/query/q_store.h"
#include "collector/store/rollup.h"

#define Q_EDGE_LOOKBACK 1u
#define Q_EDGE_POLLS    2u

struct q_edge_stats {
    uint64_t blocks;                /* the segment's DATA blocks (index) */
    uint64_t read;                  /* of them, read */
};

/* The rollup bytes (malloc'ed into *out, rollup_encode's format) of
 * segment_id (path: its file) counted only inside r[0, n) (n 1..
 * ROLLUP_ONLY_MAX). flags: Q_EDGE_LOOKBACK (the look-back above: busy_ns
 * exact); Q_EDGE_POLLS (the poll entries only, one per location with
 * worker 0, rollup_polls_only: the other record kinds are not paired or
 * counted, and a thread's later blocks are read only while a counted poll
 * is open). 0, -ENOENT (the index lists no DATA block of it: read the
 * file), -EBADMSG (a block does not match the index or does not
 * check), or another -errno. With skip, a DATA block that does not check
 * but whose header matches its index row is left out instead (skip is
 * told; rollup_file_only's rule, and q_scan.c's), not the segment. */
int q_edge_rollup(struct q_store *s, uint64_t segment_id, const char *path,
                  const struct rollup_range *r, unsigned n, unsigned flags,
                  rollup_skip_fn skip, void *arg, uint8_t **out, size_t *len,
                  struct q_edge_stats *st);

#endif /* D9_COL_Q_EDGE_H */
