/*
 * q_agg.h — aggregates of a window (per worker: polls, parks, waits, busy
 * and parked time; per location: polls, unfinished, total, max, quantiles)
 * answered from the segments' rollups (collector/store/rollup.h) where the
 * window covers their 1 s buckets whole, and from the records at its edges.
 *
 * The window [from, to] (inclusive, as q_scan's) splits into the buckets it
 * covers whole, taken from the stored rollups (q_rollup_each: a segment
 * without valid rollups is answered from its records there), and at most
 * two edge ranges (from .. the first whole bucket, the last whole bucket ..
 * to; or [from, to] itself when it covers no bucket whole). Each segment
 * that meets an edge range is read once with the rollups' own code, counting
 * only inside the ranges (rollup_only): a poll belongs to the window of its
 * start, a park interval to its park's, a wait to its record's, and pairing
 * still sees every record of the segment. So the answer equals a raw scan
 * (raw = 1: every segment of the window read that way, no stored rollups)
 * exactly, counts, sums, maxima, histograms and CPU first/last alike,
 * wherever the edges cut polls or buckets (tests/integration/
 * tool_store_edges.c checks it over random windows); quantiles are the
 * histogram's, within 6.25 % of the true value on both paths. A block
 * damaged after the seal is the exception: the whole buckets' rollups,
 * made before, count its records; an edge that needs it falls back to the
 * whole file, which stops there, so the segment's edge is left out (one
 * line on stderr, counted in missing), as raw leaves the whole segment. A window that covers the store's buckets whole (the
 * whole store) reads no segment file. An edge reads only the blocks it
 * needs (q_edge.h): those that meet it, then a thread's next blocks while
 * a poll or park counted in it waits for its end, and, for busy_ns, every
 * block of the thread before it in the segment (a poll's busy time depends
 * on the polls open below it, started anywhere earlier); with Q_AGG_LOCS
 * (locations only) no block before it, and only the polls counted, one
 * entry per location (q_edge.h's Q_EDGE_POLLS).
 *
 * Polls are paired per segment (rollup.h): a poll whose end is in the next
 * segment after a rotation is unfinished, on both paths.
 *
 * Called by `d9 sched --totals`, `d9 top-polls --by-location`, d9 sql's
 * location_stats (collector/sql/sql_rollup.c) and d9 serve's /api/workers
 * (collector/serve/serve_workers.c). Must
 * never: write to the store, or keep memory per record (per worker and per
 * location, with one histogram of about 4 KiB per location).
 */
#ifndef D9_COL_Q_AGG_H
#define D9_COL_Q_AGG_H

#include <stdint.h>
#include "collector/query/q_store.h"
#include "collector/store/rollup.h"

struct q_agg_worker {
    int64_t process_id;
    uint32_t pid;
    uint16_t runtime, worker;
    uint64_t polls, busy_ns, parks, parked_ns, waits, wait_sum_ns, wait_max_ns;
    uint64_t cpu_first, cpu_last;   /* have_cpu: min first, max last sampled cpu_ns (rollups v4) */
    int have_cpu;
};

struct q_agg_loc {
    int64_t process_id;
    uint32_t pid;
    uint16_t runtime;
    uint32_t loc;
    uint64_t count, unfinished, sum_ns, max_ns, p50_ns, p90_ns, p99_ns, p999_ns;
};

struct q_agg_stats {
    uint64_t segments;              /* segments whose stored rollups answered whole buckets */
    uint64_t scanned;               /* segments whose records were read (edges, or raw) */
    uint64_t missing;               /* segments left out: neither rollups nor records readable */
    uint64_t blocks, blocks_read;   /* DATA blocks of the edges' segments (index), and read */
};

struct q_agg;

/* Aggregate pid's (0 = all) window [from, to]. flags: Q_AGG_RAW: from the
 * records of every segment (each file read whole), never the stored
 * rollups; Q_AGG_LOCS: the locations only (no workers listed: the edges
 * then skip the look-back busy_ns needs). prog prefixes stderr lines.
 * 0 or -errno (*out NULL). */
#define Q_AGG_RAW  1u
#define Q_AGG_LOCS 2u
int q_agg_run(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to, unsigned flags,
              const char *prog, struct q_agg **out, struct q_agg_stats *st);
void q_agg_free(struct q_agg *a);

/* Workers by pid, process, runtime, worker; locations by sum_ns (largest
 * first), then pid, process, runtime, loc. Valid until q_agg_free. */
const struct q_agg_worker *q_agg_workers(const struct q_agg *a, size_t *n);
const struct q_agg_loc *q_agg_locs(const struct q_agg *a, size_t *n);

/* The ranges of [from, to] outside the buckets it covers whole (0, 1 or 2
 * into r); *whole_lo and *whole_hi: the first and last whole bucket's start
 * (whole_lo > whole_hi: none). Pure, for tests. */
unsigned q_agg_edges(uint64_t from, uint64_t to, struct rollup_range r[2], uint64_t *whole_lo,
                     uint64_t *whole_hi);

#endif /* D9_COL_Q_AGG_H */
