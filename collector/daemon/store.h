/*
 * store.h — the collector's store directory: opening it and its SQLite
 * index, start-up recovery, sealing + indexing segments, and retention.
 *
 * Called by d9collectd.c (open/recover/close), proc.c and drain.c (writer
 * open, seal, write-error accounting), on the drain thread only.
 *
 * Invariants:
 *   - A segment is sealed (seg_writer_seal: fsync + rename + dir fsync) and
 *     then indexed (idx_segment_commit) in the same step, so an indexed
 *     segment always exists whole on disk.
 *   - Retention deletes the index rows of a segment first, then unlinks its
 *     file: d9 never sees a row whose file is gone because of us.
 *   - After a write error (ENOSPC, EIO, ...) no new write is attempted
 *     before COL_WRITE_RETRY_NS has passed; the collector keeps running.
 * Must never: delete a file it did not index or find as its own temp file,
 * or let a failed write leave the index inconsistent.
 */
#ifndef D9_COL_STORE_H
#define D9_COL_STORE_H

#include <stdint.h>
#include "collector/daemon/config.h"
#include "collector/store/col_log.h"
#include "collector/store/seg_writer.h"

struct idx;

#define COL_WRITE_RETRY_NS 1000000000ULL   /* wait 1 s after a write error */
#define COL_HOST_MAX 64

struct col_store {
    char dir[COL_PATH_MAX];         /* absolute */
    char host[COL_HOST_MAX];
    struct idx *idx;
    uint64_t next_segment_id;
    uint64_t cap_bytes;             /* --store-mb */
    uint64_t segment_max_bytes;     /* --segment-mb (0 = no size rotation), set by main */
    uint64_t indexed_bytes;         /* bytes of indexed segments (kept in step with idx) */
    uint64_t segments_sealed;       /* by this collector run */
    uint64_t segments_evicted;
    uint64_t segments_salvaged;     /* temp files recovered at start-up */
    uint64_t segments_reindexed;    /* sealed files found without an index row */
    uint64_t write_errors;
    uint64_t dropped_records;       /* consumed records lost with a segment that failed to seal */
    uint64_t retry_after_ns;        /* no writes before this (0 = ok) */
    int failing;                    /* the last write failed */
    struct col_ratelimit err_rl;
};

/* Create dir if needed (0755), check it is writable, open the index. On
 * failure err holds one line ("store DIR is not writable: ..."). */
int col_store_open(struct col_store *s, const char *dir, uint64_t cap_bytes,
                   char *err, size_t errcap);
void col_store_close(struct col_store *s);

/* Start-up recovery: delete block rows whose segment was never sealed
 * (COL_INDEX_BATCH), salvage .tmp.* segments left by a crash into sealed,
 * indexed segments; index sealed files that have no row; enforce the cap. */
int col_store_recover(struct col_store *s);

/* Open a new segment writer for a process (fresh segment id). */
int col_store_writer_open(struct col_store *s, const struct seg_proc_info *pi,
                          const uint8_t *meta, size_t meta_len, struct seg_writer **w);

/* Index the blocks w has appended since the last call once there are at
 * least min_rows of them (0: any), so the seal commits only the last few:
 * a seal that inserted every block row of a 64 MiB segment at once stalled
 * the drain loop for 6-7 ms, while a 1 MiB ring fills in 4 ms at 8 M
 * events/s. A failure is logged (rate-limited) and the rows wait for the
 * seal. 0 or -errno. */
#define COL_INDEX_BATCH 64u
int col_store_index_blocks(struct col_store *s, struct seg_writer *w, uint32_t min_rows);

/* Seal w, index it under process_id, free w (in every case), enforce the
 * cap. records is the number of records the writer holds (counted as
 * dropped if sealing fails); pid (the traced process) is for the log line
 * of a failure. 0 or -errno. */
int col_store_seal(struct col_store *s, struct seg_writer *w, int64_t process_id, uint32_t pid,
                   uint64_t records);

/* Evict the oldest segments until the indexed bytes fit the cap. */
int col_store_enforce_cap(struct col_store *s);

/* Account a failed write: count it, log (rate-limited) and back off. */
void col_store_write_failed(struct col_store *s, int err, const char *what, uint32_t pid,
                            uint64_t now_ns);
/* A write succeeded: clears the failing state (logs that writes resumed). */
void col_store_write_ok(struct col_store *s);
/* 1 if writes may be attempted at now_ns. */
int col_store_writable(const struct col_store *s, uint64_t now_ns);

#endif /* D9_COL_STORE_H */
