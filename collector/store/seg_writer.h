/*
 * seg_writer.h — writes one segment file (format: seg.h).
 *
 * Called by: d9collectd's drain (collector/daemon/drain.c) and profiler
 * (prof.c); tests and benchmarks that make segments.
 *
 * Errors: every call returns 0 or -errno. A failed add that appends one
 * block (payload <= SEG_BLOCK_MAX) leaves the segment exactly as before the
 * call (the file is truncated back to its last whole block; records
 * already accepted stay buffered), so the caller may go on or seal. A DATA
 * payload > SEG_BLOCK_MAX is split at record boundaries into several blocks;
 * if such a call fails midway the writer refuses further adds (drop it).
 * Invalid input (a record shm_record_check rejects, a PAD, a bad metadata
 * entry, len % 8 != 0) is -EINVAL and writes nothing.
 *
 * Must never: leave a partial block behind, or replace an existing segment.
 */
#ifndef D9_COL_SEG_WRITER_H
#define D9_COL_SEG_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include "collector/store/seg.h"

/* What the writer knows about the process a segment belongs to. */
struct seg_proc_info {
    uint32_t pid, uid;
    uint64_t start_time;
    uint32_t clock_source;
    double ns_per_tick;
    uint64_t cal_tsc0, cal_ns0;
    const char *host, *comm, *exe;
    const struct seg_keep *keep;    /* NULL, or a kept window's segment (SEG_F_KEPT) */
};

struct seg_writer;

/* Path of the file being written (temp name until sealed, final name after). */
const char *seg_writer_path(const struct seg_writer *w);
/* Write buffered blocks to the file now (no fsync). Same error rules as adds. */
int seg_writer_flush(struct seg_writer *w);

/* Open <dir>/.tmp.<name> for a new segment. Writes the header and a META
 * block with meta[0, meta_len) (may be 0). Errors: -errno (ENOSPC, EACCES...).
 * -EEXIST when the temp or the final name already exists (segment id in use). */
int seg_writer_open(struct seg_writer **out, const char *dir, uint64_t segment_id,
                    const struct seg_proc_info *proc, const uint8_t *meta, size_t meta_len);

/* Append metadata entries (already validated) as a META block. */
int seg_writer_add_meta(struct seg_writer *w, const uint8_t *entries, size_t len);

/* Append a DATA block of validated, converted records (ring framing, no PADs).
 * Computes nrec, per-type counts, t_first/t_last and the crc. */
int seg_writer_add_data(struct seg_writer *w, uint32_t tid, uint32_t ring, uint32_t generation,
                        uint64_t lost, const uint8_t *records, size_t len);

/* Statistics of a run of records, gathered by the caller in the same walk
 * that produced the records (the collector's timestamp conversion). */
struct seg_data_stats {
    uint32_t nrec;
    uint64_t t_min, t_max;      /* smallest / largest ts (0 when nrec == 0) */
    uint64_t counts[D9_REC_TYPE_COUNT];
};

/* A DATA block written in place, for the drain: no copy between the ring
 * reader and the writer's buffer, and no second walk over the records.
 * seg_writer_data_reserve() makes room for max payload bytes (a multiple of
 * 8, at most SEG_WRITE_BUF - the block header) in the writer's buffer,
 * flushing it first if needed (the same error rules as an add: a failed
 * flush leaves the segment as it was), and points *payload there. The
 * caller fills [0, len) with records it validated itself (ring framing, no
 * PADs, converted timestamps), then seg_writer_data_commit() appends them as
 * one block with the caller's stats and CRC-32C (crc32c_update over the
 * payload), which must describe the records exactly: the block header and
 * the index are built from them. Nothing else may be added in between; a
 * reservation is dropped by the next reserve, or by a commit with len 0 and
 * lost 0. len == 0 with lost > 0 writes a record-less block. */
int seg_writer_data_reserve(struct seg_writer *w, size_t max, uint8_t **payload);
/* flags: 0 (records in ring framing) or SEG_BF_PACKED (a packed payload of
 * len bytes, collector/store/pack.h; its stats describe the records it unpacks to). */
int seg_writer_data_commit(struct seg_writer *w, uint32_t tid, uint32_t ring,
                           uint32_t generation, uint64_t lost, size_t len,
                           const struct seg_data_stats *st, uint32_t crc, uint16_t flags);

int seg_writer_add_thread_end(struct seg_writer *w, uint32_t tid, uint32_t ring,
                              uint32_t generation, uint64_t t_ns);
int seg_writer_add_exit(struct seg_writer *w, const struct seg_exit *e);
/* A SEG_BLK_TRIGGER block (seg.h): a trigger of the process. 0 or -errno. */
int seg_writer_add_trigger(struct seg_writer *w, const struct seg_trigger *t);

/* Bytes written so far (for size-based rotation). */
uint64_t seg_writer_bytes(const struct seg_writer *w);
uint64_t seg_writer_opened_ns(const struct seg_writer *w);
uint64_t seg_writer_id(const struct seg_writer *w);

/* Index rows while writing: the blocks appended since the last
 * seg_writer_mark_indexed (*first: valid until the next add), so the seal
 * does not have to insert thousands of rows at once. Rows of a segment that
 * is never sealed are orphans (no segments row): readers join on segments,
 * and start-up recovery deletes them. The seal's summary says how many
 * leading blocks are already rows (nblocks_indexed). */
uint32_t seg_writer_unindexed(const struct seg_writer *w, const struct seg_block_info **first);
void seg_writer_mark_indexed(struct seg_writer *w, uint32_t n);
uint32_t seg_writer_indexed(const struct seg_writer *w);   /* blocks marked so far */

/* Footer, fsync, rename, fsync(dir). On success fills *sum (valid until
 * seg_writer_free). On failure (-errno) the segment stays unsealed as it
 * was before the call (whole blocks, no footer, temp name): seal may be
 * retried, seg_writer_free removes the temp file (as before: a caller that
 * always frees after a failed seal sees no change), seg_writer_abandon keeps
 * it for seg_salvage. After an fsync failure only free/abandon are allowed.
 * If only the final fsync(dir) fails, the file is whole under its final
 * name and is kept (index it on restart / d9 fsck). */
int seg_writer_seal(struct seg_writer *w, struct seg_summary *sum);

/* Live rollups (rollup.h): the seal's rollups fed while the segment is
 * written, so that they need no read-back of the file.
 * seg_writer_rollup_start: right after open (only META blocks written so
 * far; -EBUSY otherwise); from then on every block appended is fed: META
 * and seg_writer_add_data's records by the writer, a reserved block's
 * records by the caller with seg_writer_rollup_feed (ring framing, run by
 * run in order, each run exactly once, between seg_writer_data_reserve and
 * seg_writer_data_commit; the commit checks that the raw bytes fed are the
 * block's). Anything that breaks "fed = appended" (a reservation dropped
 * after a feed, a failed feed or commit) interrupts them for the segment:
 * seg_writer_rollup_live() is then 0. seg_writer_rollup_finish, after a
 * successful seal: the rollups' bytes (malloc'ed; rollup_file's bytes for
 * the sealed file), or -ENODATA (never started) / -ESTALE (interrupted):
 * compute them with rollup_file instead.
 * pipe: NULL, the rollups are computed here, in each feed; else every feed
 * is handed to the pipe's thread (ru_pipe.h; same rules, same bytes), and
 * seg_writer_rollup_finish waits for it; a feed the thread rejects is seen
 * there (-ESTALE), not by seg_writer_rollup_feed. seg_writer_rollup_slot: while a
 * reservation is open and the rollups are live and piped, a RU_PIPE_SLOT-
 * byte buffer that seg_writer_rollup_feed hands over without a copy when
 * the records are read into it (valid until that feed); else NULL. */
struct ru_pipe;
int seg_writer_rollup_start(struct seg_writer *w, struct ru_pipe *pipe);
uint8_t *seg_writer_rollup_slot(struct seg_writer *w);
int seg_writer_rollup_feed(struct seg_writer *w, uint32_t ring, uint32_t generation,
                           const uint8_t *records, size_t len);
int seg_writer_rollup_live(const struct seg_writer *w);
int seg_writer_rollup_finish(struct seg_writer *w, uint8_t **out, size_t *len);

/* Drop an unsealed segment (unlinks the temp file) or free a sealed one. */
void seg_writer_free(struct seg_writer *w);
/* Free the writer but keep an unsealed temp file on disk (buffered blocks
 * are written first, best effort) for seg_salvage at the next start. */
void seg_writer_abandon(struct seg_writer *w);

#endif /* D9_COL_SEG_WRITER_H */
