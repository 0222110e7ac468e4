/*
 * idx.h — the SQLite index of a store: which processes, threads and
 * runtimes were seen, which segments hold their records and where each
 * block starts, so d9 answers time-window queries without scanning files.
 *
 * Writer: d9collectd only (one connection, WAL mode, synchronous=NORMAL is
 * not enough for us: FULL on commit of segment rows). Readers: d9 (any number,
 * read-only connections; WAL lets them read while the collector writes).
 * This header: open, writes, the collector's own lookups; readers' queries:
 * idx_read.h; the triggers table: idx_trig.h. Nothing outside idx.c / idx_read.c /
 * idx_trig.c runs SQL on the file.
 *
 * Crash consistency: a segment file is sealed (fsync + rename + dir fsync)
 * before its row is inserted, and its row plus its block rows are inserted
 * in one transaction. So after any crash, every indexed segment exists and
 * is whole; a sealed file with no row is re-indexed by `d9 fsck --repair`
 * (and by the collector at start-up), a row whose file is gone is removed.
 *
 * Schema (the contract with d9; bump IDX_SCHEMA_VERSION to change it):
 *
 *   meta(key TEXT PRIMARY KEY, value TEXT)             -- schema_version, host, created
 *   processes(id INTEGER PRIMARY KEY, pid INT, start_time INT, uid INT,
 *             comm TEXT, exe TEXT, first_ns INT, last_ns INT,
 *             state TEXT,          -- 'alive' | 'exited' | 'crashed' | 'exec' | 'quarantined'
 *                                  | 'noloop' (the preload found no loop: nothing recorded)
 *             exit_code INT,       -- NULL when unknown
 *             records INT, lost INT,
 *             UNIQUE(pid, start_time))
 *   threads(id INTEGER PRIMARY KEY, process_id INT REFERENCES processes(id),
 *           tid INT, ring INT, generation INT, name TEXT, first_ns INT, last_ns INT,
 *           ended INT, UNIQUE(process_id, ring, generation))
 *   runtimes(process_id INT, runtime_id INT, name TEXT, PRIMARY KEY(process_id, runtime_id))
 *   drops(process_id INT PRIMARY KEY, mismatch INT, too_big INT, no_ring INT,
 *         bad_stamps INT)        -- see idx_process_drops; exit_code is the
 *                                   signal number when state = 'crashed'
 *   segments(id INTEGER PRIMARY KEY,   -- == seg_file_hdr.segment_id
 *            process_id INT, path TEXT UNIQUE, -- relative to the store dir
 *            t_min INT, t_max INT, bytes INT, records INT, lost INT, sealed_ns INT,
 *            n_poll_start INT, n_poll_end INT, n_wake INT, n_worker_park INT,
 *            n_worker_unpark INT, n_task_spawn INT, n_task_terminate INT,
 *            n_queue_depth INT, n_custom INT, n_cpu_sample INT, n_sched_switch INT)
 *   blocks(segment_id INT, offset INT, len INT, kind INT, tid INT, ring INT,
 *          generation INT, nrec INT, t_first INT, t_last INT, lost INT,
 *          PRIMARY KEY(segment_id, offset))
 *   uploads(segment_id INTEGER PRIMARY KEY, state TEXT, -- 'pending' | 'shipped' | 'failed'
 *           attempts INT, last_error TEXT, next_ns INT, updated_ns INT)
 *                                -- see idx_upload_set: shipping to S3;
 *                                   no row = pending, never tried
 *   rollups(segment_id INTEGER PRIMARY KEY, data BLOB NOT NULL)
 *                                -- the segment's aggregates (collector/store/rollup.h),
 *                                   written in the segment's own transaction; no row =
 *                                   none (readers scan the records instead)
 *   triggers(...)              -- version 4: the collector's triggers (idx_trig.h);
 *                                   version 5: their fields column
 *   kept(segment_id INTEGER PRIMARY KEY, trig_ns INT, t0_ns INT, t1_ns INT, trig_pid INT,
 *        ntrig INT, source_segment INT, reason TEXT)
 *                                -- a kept window's segment (--retain triggered; seg.h's
 *                                   struct seg_keep, written with the segment's own row
 *                                   from its header, so every re-index restores it);
 *                                   version 4; every writable open creates it if
 *                                   missing;
 *                                   retention deletes these last; their records are not
 *                                   added again to processes.records
 *   indexes: segments(t_min, t_max), segments(process_id, t_min), blocks(segment_id, t_first),
 *            processes(pid); blocks_maps: blocks(segment_id, nrec) WHERE kind = DATA AND
 *            ring = SYM_SEG_RING (the map records' blocks, for the per-segment maps count;
 *            not versioned: every writable open creates it if missing, readers do
 *            without it)
 *
 * All times are CLOCK_MONOTONIC ns (host-wide). meta also holds
 * 'boot_realtime_ns' (CLOCK_REALTIME - CLOCK_MONOTONIC at collector start)
 * so d9 can print wall-clock times.
 */
#ifndef D9_COL_IDX_H
#define D9_COL_IDX_H

#include <stddef.h>
#include <stdint.h>
#include "collector/store/seg_writer.h"

#define IDX_SCHEMA_VERSION 5
/* Version 4 is version 5 without the triggers table's fields column, and
 * version 3 without the triggers table (idx_trig.h): readers read them as
 * having no fields, no triggers; a writer's open converts them (adds what
 * is missing and sets the version, in one transaction). Older ones are
 * refused. */
#define IDX_SCHEMA_VERSION_OLDEST 3
#define IDX_FILE_NAME      "index.sqlite"
/* A writer creates the index with this mode (SQLite would make it 0644 less
 * the umask); SQLite gives its -wal and -shm files the database's mode and
 * owner. Readable by its group: the store's readers (see storedir.h). */
#define IDX_FILE_MODE      0640

struct idx;

struct idx_process {
    uint32_t pid, uid;
    uint64_t start_time;
    const char *comm, *exe;
    uint64_t first_ns;
};

/* Open (creating if needed) <store>/index.sqlite for writing. */
int idx_open(struct idx **out, const char *store_dir);
/* Open an existing index read-only (d9). -ENOENT if there is none. */
int idx_open_readonly(struct idx **out, const char *store_dir);
void idx_close(struct idx *x);

/* Insert or refresh a process; *process_id gets its row id. A (pid,
 * start_time) row never changes its uid: -EEXIST (nothing written) when the
 * row is another uid's. Re-indexing a segment (fsck, start-up) uses this. */
int idx_process_upsert(struct idx *x, const struct idx_process *p, int64_t *process_id);
/* The collector adopting a region of (pid, start_time): as
 * idx_process_upsert, and -EALREADY (nothing written) when the row has
 * already ended (state other than 'alive'): a region found after its
 * process was finished (a forgery in the shm directory, or one a crashed
 * collector did not get to remove) never rewrites the finished process. */
int idx_process_adopt(struct idx *x, const struct idx_process *p, int64_t *process_id);
/* Record the end of a process: state 'exited', 'crashed' or 'exec', code or -1. */
int idx_process_end(struct idx *x, int64_t process_id, uint64_t end_ns, const char *state, int code);
/* Why a process's records were dropped, from its region's counters (which
 * only grow: the stored values never go down). processes.lost is the total;
 * lost - mismatch - too_big were dropped by full rings (the collector clamps
 * each ring's causes into its lost, readers clamp them into processes.lost).
 * no_ring counts events of threads that had no ring (not in lost).
 * bad_stamps counts records kept with the time of the record before them,
 * their own being impossible (see collector/daemon/drain.h); not in lost. */
struct idx_drops {
    uint64_t mismatch, too_big, no_ring, bad_stamps;
};
int idx_process_drops(struct idx *x, int64_t process_id, const struct idx_drops *d);
int idx_thread_upsert(struct idx *x, int64_t process_id, uint32_t tid, uint32_t ring,
                      uint32_t generation, const char *name, uint64_t first_ns, uint64_t last_ns,
                      int ended);
int idx_runtime_upsert(struct idx *x, int64_t process_id, uint32_t runtime_id, const char *name);
/* Names of threads rows of process (pid, start_time) that are already there
 * (a re-index makes them from the blocks, without names): each row that
 * matches tid, ring and generation gets its name, in one transaction; an
 * entry that matches no row, or has no name, is skipped. Idempotent. The
 * number of rows changed, or -errno. */
struct idx_thread_name {
    uint32_t tid, ring, generation;
    const char *name;
};
int idx_thread_names_set(struct idx *x, uint32_t pid, uint64_t start_time,
                         const struct idx_thread_name *t, size_t n);

/* Segment row + its block rows + process counters, in one transaction.
 * The first s->nblocks_indexed block rows are already in (idx_blocks_add). */
int idx_segment_commit(struct idx *x, int64_t process_id, const struct seg_summary *s,
                       const char *store_dir);
/* The same with the segment's rollups row (rollup.h; NULL = none) in the
 * same transaction. */
int idx_segment_commit_rollup(struct idx *x, int64_t process_id, const struct seg_summary *s,
                              const char *store_dir, const uint8_t *rollup, size_t rollup_len);
/* Replace a segment's rollups row (fsck --repair). */
int idx_rollup_set(struct idx *x, uint64_t segment_id, const uint8_t *data, size_t len);
/* Block rows of a segment still being written, in one transaction without
 * a WAL fsync (see seg_writer_unindexed). -EINVAL for a bad id or no blocks
 * pointer; a row already there (same segment, offset) fails the batch. */
int idx_blocks_add(struct idx *x, uint64_t segment_id, const struct seg_block_info *b,
                   uint32_t n);
/* Delete a segment's block rows (its file was given up before the seal). */
int idx_blocks_drop(struct idx *x, uint64_t segment_id);
/* Delete block rows without a segment row (a collector that stopped
 * before sealing); *dropped (may be NULL) = how many. */
int idx_drop_orphan_blocks(struct idx *x, uint64_t *dropped);
/* Remove a segment's rows (before its file is unlinked by eviction). */
int idx_segment_delete(struct idx *x, uint64_t segment_id);

/* Next segment id to use (max(id) + 1, at least 1). */
int idx_next_segment_id(struct idx *x, uint64_t *id);
/* Total bytes of indexed segments. */
int idx_total_bytes(struct idx *x, uint64_t *bytes);
/* Oldest segment (smallest t_max; kept windows only when no other is left): id
 * and relative path; -ENOENT if none. */
int idx_oldest_segment(struct idx *x, uint64_t *id, char *path, size_t cap);

/* Oldest segment whose upload state is 'shipped'; -ENOENT if none
 * (retention deletes those first while the collector ships). */
int idx_oldest_shipped_segment(struct idx *x, uint64_t *id, char *path, size_t cap);

/* ---- upload state (the collector's shipping to S3, collector/daemon/ship.c) ----
 * One row per segment in uploads, deleted with the segment. A segment with
 * no row is pending. next_ns (CLOCK_MONOTONIC) is when it may be tried next. */
struct idx_upload {
    uint64_t segment_id;
    char path[512];             /* relative to the store */
    uint64_t bytes, records, lost, t_min, t_max;
    uint32_t pid;
    uint64_t start_time;
    char comm[64];
    uint32_t attempts;          /* made so far (0: never tried) */
    int kept;                   /* a kept window's segment: keep says which */
    struct seg_keep keep;
};
/* The oldest segment not shipped whose next_ns <= now_ns and whose id is not
 * in skip[0..nskip) (uploads in flight); -ENOENT if none. */
int idx_upload_next(struct idx *x, uint64_t now_ns, const uint64_t *skip, size_t nskip,
                    struct idx_upload *out);
/* On this connection, idx_upload_next hands out kept windows' segments
 * only (the flight recorder ships nothing else). */
void idx_upload_kept_only(struct idx *x, int on);

/* ---- the flight recorder (--retain triggered, collector/daemon/flight.c) ----
 * Segments with id >= min_id (sealed by this collector run), not kept
 * windows themselves, whose t_max < before_ns: up to cap of them in id
 * order into rows, *n = how many. */
struct idx_flight_row {
    uint64_t id;
    int64_t process_id;
    char path[512];             /* relative to the store */
    uint64_t t_min, t_max, bytes;
};
int idx_flight_candidates(struct idx *x, uint64_t min_id, uint64_t before_ns,
                          struct idx_flight_row *rows, size_t cap, size_t *n);
/* Set a segment's state ("pending", "shipped", "failed"); -ENOENT when the
 * segment row is gone (retention deleted it meanwhile). */
int idx_upload_set(struct idx *x, uint64_t segment_id, const char *state, uint32_t attempts,
                   const char *last_error, uint64_t next_ns);
/* next_ns is CLOCK_MONOTONIC, which starts again at each boot: a segment
 * whose next try is more than max_wait_ns past now_ns (set before a reboot,
 * or by a clock that jumped) is due now. Called once when shipping starts;
 * *changed gets how many rows moved (may be NULL). 0 or -errno. */
int idx_upload_clamp_next(struct idx *x, uint64_t now_ns, uint64_t max_wait_ns, uint64_t *changed);
struct idx_upload_totals {
    uint64_t backlog, backlog_bytes;    /* indexed segments not shipped */
    uint64_t shipped, shipped_bytes;
    uint64_t failed;                    /* of the backlog, refused (state 'failed') */
    uint64_t oldest_sealed_ns;          /* CLOCK_MONOTONIC seal time of the backlog's oldest, 0 if none */
};
int idx_upload_totals(struct idx *x, struct idx_upload_totals *t);

/* Wait up to ms for another connection's lock (the open sets 5 s). */
int idx_busy_timeout(struct idx *x, int ms);

/* One transaction around several writes (d9 fsck re-indexing a segment's
 * runtimes, threads and exit): idx_begin takes the write lock (BEGIN
 * IMMEDIATE; -EBUSY when it cannot), idx_commit (-EIO on failure, the
 * caller then rolls back), idx_rollback. */
int idx_begin(struct idx *x);
int idx_commit(struct idx *x);
void idx_rollback(struct idx *x);

/* ---- contract details --------------------------------------------------------
 * meta keys: 'schema_version' (decimal), 'host' (gethostname at creation),
 * 'created' (CLOCK_REALTIME ns at creation, decimal), 'boot_realtime_ns'
 * and 'boot_id' (/proc/sys/kernel/random/boot_id; both refreshed by every
 * idx_open). processes.records / lost count everything
 * ever indexed for the process (segment eviction does not subtract).
 * processes.first_ns/last_ns and threads.first_ns/last_ns: NULL = unknown
 * (0 passed in means unknown). exit_code NULL when unknown (code < 0).
 * Errors: SQLite errors map to -errno (busy -EBUSY, full -ENOSPC, I/O -errno
 * of the failing system call, corrupt -EBADMSG, unique constraint -EEXIST,
 * missing process row -ENOENT); an index whose schema version differs from
 * IDX_SCHEMA_VERSION is -EPROTONOSUPPORT, nothing written to it (formats
 * change by a version bump, never by tables added in place), except
 * versions from IDX_SCHEMA_VERSION_OLDEST on (read as is, converted by a writer). An older one is
 * not converted: its message says to remove it, and d9collectd's start-up
 * recovery indexes every sealed segment without a row (reindex.h), which
 * rebuilds all but the thread names and the upload states. idx_open / idx_open_readonly print
 * one line on stderr when they fail ("<prog>: index: <path>: <reason>");
 * idx_open_ex is silent and hands the line back in why.
 * idx_open_readonly falls back to SQLite's immutable mode when the normal
 * read-only open fails in a directory it cannot write (a WAL index on
 * read-only media without its -shm file); in that mode commits still in the
 * -wal file are not seen (a collector that stopped cleanly leaves none). */
#define IDX_OPEN_READONLY 1u
/* A store rebuilt from another host's segments (d9 pull): writable, but
 * boot_realtime_ns and boot_id are not refreshed from this machine (they
 * are the origin's: idx_set_origin). */
#define IDX_OPEN_FOREIGN  2u
int idx_open_ex(struct idx **out, const char *store_dir, unsigned flags, char *why,
                size_t why_cap);
/* Whether store_dir holds a d9 index, decided without creating or changing
 * any file there (fsck refuses other directories before it writes): 0 when
 * store_dir/index.sqlite is a regular file with d9's schema version (any
 * version: the open reports a wrong one); -ENOENT when there is no such
 * file; -EBADMSG (why says what it is instead) when it is a link, not a
 * regular file, or a file that is not a d9 index. The file is read in
 * SQLite's immutable mode (no lock, no -wal or -shm created); only when that
 * finds no schema and a -wal file lies beside it (a crashed writer's
 * commits) is it opened read-only, as idx_open_ex does. */
int idx_probe(const char *store_dir, char *why, size_t why_cap);
/* Record where the segments of a store opened with IDX_OPEN_FOREIGN come
 * from: meta host, boot_id (skipped when NULL or "") and boot_realtime_ns,
 * so d9 prints the origin's wall-clock times and knows the store is not
 * from this boot. 0 or -errno. */
int idx_set_origin(struct idx *x, const char *host, const char *boot_id,
                   int64_t boot_realtime_ns);
/* The last error of a call on x as one line (path, step, SQLite's message). */
const char *idx_errmsg(const struct idx *x);
/* path made relative to store_dir (textually or after realpath); -EINVAL if
 * it is not inside store_dir. */
int idx_relative_path(const char *store_dir, const char *path, char *out, size_t cap);

/* Every segment row, in id order (for fsck). fn returns non-zero to stop;
 * that value is returned. */
struct idx_segment_row {
    uint64_t id;
    int64_t process_id;
    char path[512];             /* relative to the store */
    uint64_t bytes, records, lost, t_min, t_max;
    uint64_t nblocks;           /* rows in blocks */
};
typedef int (*idx_segment_fn)(void *arg, const struct idx_segment_row *r);
int idx_segment_foreach(struct idx *x, idx_segment_fn fn, void *arg);


#endif /* D9_COL_IDX_H */
