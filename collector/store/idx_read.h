/*
 * idx_read.h — the questions readers ask the index (schema: idx.h):
 * d9's listings, time windows, the blocks of a window in time order and the
 * names of threads and processes; the collector's and fsck's lookups
 * (is a segment indexed, how many, how many drops a ring already wrote).
 *
 * Called by: collector/query/q_store.c (d9), collector/daemon (start-up
 * recovery, resuming ring counters, status), collector/store/fsck.c.
 *
 * Invariants: every function works on a read-only handle and leaves no
 * statement un-reset (no read transaction outlives a call, except a block
 * cursor's, until idx_read_blocks_window_close). Strings handed to callbacks or
 * in a cursor's row are valid until the callback returns / the next call.
 * Errors: 0 or a negative errno (-EIO for SQLite failures, -ENOENT when
 * there is no such row); the index is untrusted input to its readers
 * (paths in it are checked by the caller before use).
 *
 * Must never: write to the index.
 */
#ifndef D9_COL_IDX_READ_H
#define D9_COL_IDX_READ_H

#include <stddef.h>
#include <stdint.h>
#include "collector/store/idx.h"
#include "shm/d9_abi.h"

/* SQL: a stored time range no writer can have produced honestly (a stamp
 * that converted below zero is a negative INT; an inverted range). Segments
 * indexed before the drain clamped stamps may have one: readers select
 * such rows for every window (their records are then filtered one by one)
 * and d9 fsck reports them. */
#define IDX_BAD_RANGE(lo, hi) "(" lo " < 0 OR " hi " < 0 OR " hi " < " lo ")"

/* meta value of key into out: 0, -ENOENT (no such key), -EIO. */
int idx_read_meta_get(struct idx *x, const char *key, char *out, size_t cap);

/* A pid of an 'alive' process (pid 0 = any; else that pid): 1 and *alive_pid
 * set, 0 when there is none, -EIO. */
int idx_read_alive_pid(struct idx *x, uint32_t pid, uint32_t *alive_pid);

/* Smallest t_min / largest t_max of the segments of pid (0 = all):
 * 0, -ENOENT when there are none, -EIO. */
int idx_read_time_range(struct idx *x, uint32_t pid, uint64_t *tmin, uint64_t *tmax);

/* A processes row with its segment totals. */
struct idx_read_process {
    int64_t id;
    uint32_t pid, uid;
    uint64_t start_time;
    const char *comm, *exe, *state;     /* never NULL ("" when unknown) */
    uint64_t first_ns, last_ns;
    uint64_t rec_first_ns, rec_last_ns; /* the threads' first and last record, 0 = none */
    int has_exit_code;
    int64_t exit_code;
    uint64_t records, lost;
    uint64_t segments, bytes;
};
/* Processes of pid (0 = all) whose [first_ns, last_ns] meets [from, to], by
 * first_ns. fn returns 0 to go on, non-zero to stop (a negative value is
 * returned as the error). Returns the number of rows delivered, or -errno. */
int idx_read_processes_window(struct idx *x, uint32_t pid, uint64_t from, uint64_t to,
                         int (*fn)(void *arg, const struct idx_read_process *r), void *arg);

/* Drops by cause, summed over the processes of pid (0 = all) whose
 * [first_ns, last_ns] meets [from, to] (process_id > 0: that process only).
 * Each process's causes are clamped into its lost (mismatch <= lost,
 * too_big <= lost - mismatch), so full = lost - mismatch - too_big >= 0.
 * bad_stamps: records kept with their neighbour's time (not drops). 0, or
 * -errno; a store whose index predates the drops table reports every drop
 * as full. */
struct idx_read_drops {
    uint64_t lost, full, mismatch, too_big, no_ring, bad_stamps;
};
int idx_read_drops(struct idx *x, int64_t process_id, uint32_t pid, uint64_t from, uint64_t to,
                   struct idx_read_drops *out);

/* A segments row with its process. */
struct idx_read_segment {
    uint64_t id;
    const char *path;                   /* relative to the store */
    int64_t process_id;
    uint32_t pid;
    const char *comm;
    uint64_t t_min, t_max, bytes, records, lost;
    uint64_t counts[D9_REC_TYPE_COUNT]; /* the program's records per type */
    uint64_t maps;                      /* the collector's "d9.map" records (sym.h): in
                                           records, not in counts[D9_REC_CUSTOM] */
};
/* Segments of pid (0 = all) that meet [from, to], by t_min. Same contract
 * as idx_read_processes_window. */
int idx_read_segments_window(struct idx *x, uint32_t pid, uint64_t from, uint64_t to,
                        int (*fn)(void *arg, const struct idx_read_segment *r), void *arg);

/* A threads row with its process's pid. */
struct idx_read_thread {
    int64_t process_id;
    uint32_t pid, tid, ring, generation;
    const char *name;                   /* never NULL */
    uint64_t first_ns, last_ns;         /* 0 = unknown */
    int ended;
};
/* Threads (ring generations) of pid and of process_id (processes.id;
 * 0 = any, for either), by process, tid, then first_ns. Same contract as
 * idx_read_processes_window. */
int idx_read_threads(struct idx *x, uint32_t pid, int64_t process_id,
                     int (*fn)(void *arg, const struct idx_read_thread *r), void *arg);

/* The named threads that have blocks in segment segment_id (their
 * ring generations' rows of the segment's process), by ring then
 * generation; only tid, ring, generation and name are set. Same contract
 * as idx_read_processes_window. */
int idx_read_segment_threads(struct idx *x, uint64_t segment_id,
                             int (*fn)(void *arg, const struct idx_read_thread *r), void *arg);

/* A runtimes row with its process's pid. */
struct idx_read_runtime {
    int64_t process_id;
    uint32_t pid, runtime_id;
    const char *name;                   /* never NULL */
};
/* Runtimes of pid and of process_id (0 = any), by process then id. Same
 * contract. */
int idx_read_runtimes(struct idx *x, uint32_t pid, int64_t process_id,
                      int (*fn)(void *arg, const struct idx_read_runtime *r), void *arg);

/* The DATA blocks that meet a window, by t_first (then segment, offset):
 * the order d9's scan merges them in. */
struct idx_read_window {
    uint64_t from, to;                  /* inclusive */
    uint32_t pid, tid;                  /* 0 = all */
    /* only the blocks of ring (a pseudo ring's: the collector's map
     * snapshots), from every segment that meets the window, whatever the
     * blocks' own times (a segment's snapshot is written when it opens) */
    int by_ring;
    uint32_t ring;
};
struct idx_read_block {
    uint64_t segment_id, offset, t_first;
    const char *path;                   /* of the segment, relative to the store */
    int64_t process_id;
    uint32_t pid;
    const char *comm;
    uint32_t tid, ring, generation;     /* as indexed: what a block that fails to read held */
    uint64_t t_last;
};
struct idx_read_cursor;
int idx_read_blocks_window_open(struct idx *x, const struct idx_read_window *w,
                           struct idx_read_cursor **out);
/* 1 = *b set (valid until the next call), 0 = no more, -EIO. */
int idx_read_blocks_window_next(struct idx_read_cursor *c, struct idx_read_block *b);
void idx_read_blocks_window_close(struct idx_read_cursor *c);

/* What the index knows of the DATA blocks of one process (processes.id)
 * that meet [from, to]: thread, ring, record count, time range; no file is
 * read. In no particular order; fn as in idx_read_processes_window. */
struct idx_read_block_stat {
    uint32_t tid, ring;
    uint64_t nrec, t_first, t_last;
};
int idx_read_block_stats(struct idx *x, int64_t process_id, uint64_t from, uint64_t to,
                         int (*fn)(void *arg, const struct idx_read_block_stat *b), void *arg);

/* Offsets of the blocks of one kind of a segment, in file order; fn as in
 * idx_read_processes_window. Returns the number of rows delivered, or -errno. */
int idx_read_block_offsets(struct idx *x, uint64_t segment_id, uint16_t kind,
                      int (*fn)(void *arg, uint64_t offset), void *arg);

/* Paths of a process's segments, newest first; fn as in idx_read_processes_window. */
int idx_read_process_segments(struct idx *x, int64_t process_id,
                         int (*fn)(void *arg, const char *path), void *arg);

/* threads.name of (process, ring, generation) / processes.comm into buf
 * ("" when unknown); 0, -ENOENT (no row), -EIO. */
int idx_read_thread_name(struct idx *x, int64_t process_id, uint32_t ring, uint32_t generation,
                    char *buf, size_t cap);
int idx_read_process_comm(struct idx *x, int64_t process_id, char *buf, size_t cap);
/* How a process's data ends, for what is left open in it (a poll whose end
 * never came): state ("alive", "exited", "crashed", "quarantined"; "" when
 * unknown), rec_last_ns = the last record time of its data blocks (0 when the
 * index holds no block rows for it) and last_ns = processes.last_ns, which
 * for an ended process is when the collector saw the end (later than the
 * death by up to a drain interval). 0, -ENOENT (no row), -EIO. */
#define IDX_STATE_MAX 16
struct idx_read_process_end {
    char state[IDX_STATE_MAX];
    uint64_t rec_last_ns, last_ns;
};
int idx_read_process_end(struct idx *x, int64_t process_id, struct idx_read_process_end *out);
/* SQLite's data_version of x's connection: it changes when another
 * connection (the collector) commits to the index, so an answer read at
 * one value still holds at the same value. 0 or -EIO. */
int idx_read_data_version(struct idx *x, int64_t *out);

/* Drops of ring slots [first, first + n) of process_id written in indexed
 * segments, over all their generations, into lost[0..n) (0 where none), in
 * one query. 0 or -errno (every lost[i] = 0 then). */
int idx_read_rings_lost(struct idx *x, int64_t process_id, uint32_t first, uint32_t n,
                        uint64_t *lost);

/* The last DATA block with records of each ring slot [0, n) of process_id in
 * indexed segments (the highest segment id, then offset: a process's
 * segments are written one after another): where a restarted collector
 * finds the last record an earlier run persisted. last[i].found = 0 where
 * the slot has none. 0 or -errno (every found = 0 then). */
struct idx_ring_last {
    int found;
    uint32_t generation;
    uint64_t segment_id, offset;
    char path[256];             /* the segment's path relative to the store */
};
int idx_read_rings_last(struct idx *x, int64_t process_id, uint32_t n, struct idx_ring_last *last);

/* Is there a segments row with this relative path / this id now?
 * 1 yes, 0 no, -EIO. */
int idx_read_segment_has_path(struct idx *x, const char *relpath);
int idx_read_segment_has_id(struct idx *x, uint64_t id);
/* Number of segments rows. */
int idx_read_segment_count(struct idx *x, uint64_t *n);
/* The rollups row of a segment (rollup.h; unchecked bytes: decode them with
 * rollup_decode): 1 with a malloc'ed copy in *out (NULL and *len 0 for an
 * empty value), 0 when there is none, -errno. */
int idx_read_rollup(struct idx *x, uint64_t segment_id, uint8_t **out, size_t *len);

/* The DATA and META blocks of one segment as the index has them, in file
 * order (offset): where each is, its kind (SEG_BLK_DATA or SEG_BLK_META),
 * and for DATA its thread (ring, generation) and time range. For readers
 * that read only some of a segment's blocks (q_edge.c: the META blocks
 * carry the schemas that decode later custom events). fn as in
 * idx_read_processes_window; returns the number of rows, or -errno. */
struct idx_read_seg_block {
    uint64_t offset;
    uint32_t kind;
    uint32_t ring, generation;
    uint64_t t_first, t_last;
};
int idx_read_segment_blocks(struct idx *x, uint64_t segment_id,
                            int (*fn)(void *arg, const struct idx_read_seg_block *b), void *arg);
/* The file offsets of the META blocks of the segment whose path (as the
 * segments table holds it) is path, in file order: for
 * seg_reader_load_meta_at. Returns how many, or -errno. */
int idx_read_segment_meta(struct idx *x, const char *path,
                          int (*fn)(void *arg, uint64_t offset), void *arg);

#endif /* D9_COL_IDX_READ_H */
