/*
 * q_scan.h — the records of a window of a store, in time order: the one
 * scan every reader of records uses (the d9 subcommands, d9 sql's record
 * tables, d9 serve, the exports).
 *
 * Streaming with bounded memory: the index gives the DATA blocks that
 * overlap the window (per-block offsets, sorted by their first timestamp);
 * each block is read with one seek, and the records of the blocks that
 * overlap in time are merged with a small heap, so memory is the blocks in
 * flight, not the files. Segment files are untrusted: a block that fails
 * validation is skipped and counted (stats->bad_blocks), a file that
 * vanished (evicted since the query started) is counted too.
 *
 * Must never: write to the store, or load whole files.
 */
#ifndef D9_COL_Q_SCAN_H
#define D9_COL_Q_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collector/query/q_decode.h"
#include "collector/query/q_store.h"
#include "shm/d9_abi.h"

struct q_filter {
    uint64_t from, to;                  /* inclusive, CLOCK_MONOTONIC ns */
    uint32_t pid;                       /* 0 = all */
    uint32_t tid;                       /* 0 = all */
    uint32_t types;                     /* 1 << type; 0 = all */
    bool ring_order_only;               /* see q_scan */
    /* only the blocks of ring (a collector's pseudo ring: SYM_SEG_RING's
     * map snapshots) of the segments that meet [from, to], and every record
     * of them whatever its time: the snapshots that hold in the window */
    bool by_ring;
    uint32_t ring;
    /* deliver each DATA block that could not be read (corrupt, truncated,
     * its file gone) as a gap of its ring: fn gets rec == NULL and len 0,
     * src names the ring as the index has it (meta and thread may be NULL
     * or ""), in time order at the block's first time. For readers that
     * must not pair records across it (q_pair_feed). */
    bool gaps;
};

/* Who a record belongs to; valid during the callback only. */
struct q_rec_src {
    int64_t process_id;                 /* processes.id: (pid, start_time) */
    uint32_t pid, uid;                  /* uid: owner, from the segment header */
    const char *comm;
    uint32_t tid, ring, generation;
    const char *thread;                 /* thread name, "" when unknown */
    uint64_t segment_id;
    const struct q_meta_src *meta;    /* names for runtime/location/schema ids (NULL in a gap) */
    uint64_t gap_from, gap_to;          /* a gap (rec == NULL): the time range the index gives */
};

/* Return 0 to go on, 1 to stop the scan, <0 to abort with that error. */
typedef int (*q_rec_fn)(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                          size_t len);

struct q_scan_stats {
    uint64_t blocks;                    /* DATA blocks read */
    uint64_t records;                   /* records delivered */
    uint64_t lost;                      /* records the rings dropped (blocks in the window) */
    uint64_t bad_blocks;                /* blocks that failed validation, skipped */
    uint64_t missing_segments;          /* indexed files that could not be opened */
    uint64_t t_last;                    /* largest ts delivered */
};

/* Deliver the records matching f in timestamp order; equal timestamps
 * keep file order, so a thread's records come in ring order as long as its
 * clock does not step back across blocks. With f->ring_order_only, block by
 * block in the index's order instead, with no merge across threads: each
 * ring's records still come in the same order as in a merged scan (its
 * blocks are opened in the same order), but the rings are interleaved by
 * block, not by record; for a reader that pairs per thread and needs no
 * order across threads (grouping), at less cost. Returns 0 when done, 1 when fn stopped it, or -errno.
 * Problems with individual files are reported once each on stderr with
 * prog as prefix and counted in *st (may be NULL). */
int q_scan(struct q_store *s, const struct q_filter *f, q_rec_fn fn, void *arg,
             struct q_scan_stats *st, const char *prog);

/* This thread's cancellation test: while set, every scan of the thread
 * (q_scan, q_scan_next) calls fn(arg) before opening a block, every few
 * blocks, and ends with -ECANCELED when it returns true. fn NULL clears it.
 * For d9 serve's workers (serve_pool.c): a request whose client has gone
 * stops reading instead of running to its end. */
void q_scan_set_cancel(bool (*fn)(void *arg), void *arg);

/* Records delivered by every scan of the calling thread since it started
 * (a counter that only grows): d9 serve's request log (D9_SERVE_LOG)
 * takes the difference around a request. */
uint64_t q_scan_thread_records(void);

/* While paused (true), the calling thread's scans do not consult its
 * cancellation test (work worth finishing for a later request: d9 serve's
 * look-back, serve_edge.h); false resumes. q_scan_set_cancel resumes too. */
void q_scan_pause_cancel(bool pause);

/* The calling thread's cancellation test, asked now (paused or not);
 * false when none is set. */
bool q_scan_cancelled(void);

/* The same scan pulled one record at a time (what q_scan loops
 * over; the SQL virtual tables step it from xNext). q_scan_next
 * returns 1 with *src, *rec, *len valid until the next call, 0 at the end,
 * or -errno. *st (may be NULL) is updated as records are delivered. */
struct q_scan_it;
int q_scan_open(struct q_store *s, const struct q_filter *f,
                        struct q_scan_stats *st, const char *prog, struct q_scan_it **out);
int q_scan_next(struct q_scan_it *it, struct q_rec_src *src,
                        const struct d9_rec_hdr **rec, size_t *len);
void q_scan_close(struct q_scan_it *it);

/* q_scan_next without the copy of *src: *src points at the scan's own,
 * valid (like *rec) until the next call or q_scan_close. */
int q_scan_step(struct q_scan_it *it, const struct q_rec_src **src,
                const struct d9_rec_hdr **rec, size_t *len);

#endif /* D9_COL_Q_SCAN_H */
