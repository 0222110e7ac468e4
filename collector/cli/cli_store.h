/*
 * cli_store.h — read-only access to a d9 store for the CLI: open the SQLite
 * index (live, while d9collectd writes in WAL mode, or a copied directory),
 * resolve time windows, list processes and segments, and scan the records
 * of a window in time order.
 *
 * Called by the cli_<name>.c subcommands. The store is a directory holding
 * index.sqlite (schema in collector/store/idx.h) and segment files whose paths
 * the index gives relative to the directory, so a copied store works
 * anywhere.
 *
 * Scanning (cli_store_scan) is streaming with bounded memory: the index gives the
 * DATA blocks that overlap the window (per-block offsets, sorted by their
 * first timestamp); each block is read with one seek, and the records of
 * the blocks that overlap in time are merged with a small heap, so memory is
 * the blocks in flight, not the files. Segment files are untrusted: a block
 * that fails validation is skipped and counted (stats->bad_blocks), a file
 * that vanished (evicted since the query started) is counted too.
 *
 * Must never: write to the store, hold a write lock, or load whole files.
 */
#ifndef D9_COL_CLI_STORE_H
#define D9_COL_CLI_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collector/cli/cli.h"
#include "collector/cli/cli_decode.h"
#include "shm/d9_abi.h"

/* Tolerance when comparing the store's boot offset (CLOCK_REALTIME -
 * CLOCK_MONOTONIC at collector start) with ours to decide "same boot". */
#define CLI_BOOT_TOLERANCE_NS   (60ull * 1000000000ull)
#define CLI_DB_BUSY_MS          2000    /* wait this long for the writer's locks */
#define CLI_READER_CACHE        16      /* open segment files kept while scanning */

struct cli_store;

/* Open <dir>/index.sqlite read-only. On failure returns -errno with a
 * one-line reason in why (path included). */
int cli_store_open(struct cli_store **out, const char *dir, char *why, size_t whycap);
void cli_store_close(struct cli_store *s);
const char *cli_store_dir(const struct cli_store *s);

/* Wall clock: *boot_realtime_ns such that wall = mono + it. false if unknown. */
bool cli_store_wall(const struct cli_store *s, int64_t *boot_realtime_ns);
/* true when the store was written during this boot (see CLI_HELP_WINDOW). */
bool cli_store_live(const struct cli_store *s);

/* Hint for empty results: " (pid N is still running: data the collector
 * has not sealed yet is not visible; run 'd9 flush')" when a process of the
 * selection (pid, 0 = any) is alive in a live store, else "". */
const char *cli_store_unsealed_hint(struct cli_store *s, uint32_t pid);

/* Smallest t_min / largest t_max of the segments of pid (0 = all).
 * 0, or -ENOENT when there are none. */
int cli_store_time_range(struct cli_store *s, uint32_t pid, uint64_t *tmin, uint64_t *tmax);

/* Pure window arithmetic (unit-tested): spec -> [*from, *to] inclusive.
 * SINCE counts back from now_ns when live, else from newest_ns (when
 * have_newest; otherwise the window is everything). */
void cli_store_window_compute(const struct cli_window_spec *w, bool live, uint64_t now_ns,
                        bool have_newest, uint64_t newest_ns, uint64_t *from, uint64_t *to);
/* The same against a store (reads liveness, newest record of pid, now). */
int cli_store_window_resolve(struct cli_store *s, const struct cli_window_spec *w, uint32_t pid,
                       uint64_t *from, uint64_t *to);

/* ---- drops by cause -------------------------------------------------------- */
struct cli_drops {
    uint64_t lost;                      /* every cause, as processes.lost */
    uint64_t full, mismatch, too_big;   /* of lost: ring full, values not matching the
                                           schema, event larger than a record */
    uint64_t no_ring;                   /* events of threads without a ring (not in lost) */
};
/* Summed over process_id (> 0), or over the processes of pid (0 = all) seen
 * in [from, to]. 0 or -errno. */
int cli_store_drops(struct cli_store *s, int64_t process_id, uint32_t pid, uint64_t from,
                    uint64_t to, struct cli_drops *out);
/* "2 ring full, 3 type mismatch, 1 too large, 4 no ring": the causes with a
 * count, "none" when there is none. Returns buf. */
const char *cli_store_drops_text(const struct cli_drops *d, char *buf, size_t cap);

/* ---- listings ------------------------------------------------------------- */
struct cli_proc_row {
    int64_t id;
    uint32_t pid, uid;
    uint64_t start_time;
    const char *comm, *exe, *state;     /* never NULL ("" when unknown) */
    uint64_t first_ns, last_ns;         /* the process as the collector saw it */
    uint64_t rec_first_ns, rec_last_ns; /* its threads' first and last record, 0 = none */
    bool has_exit_code;
    int64_t exit_code;
    uint64_t records, lost;
    uint64_t segments, bytes;
};
typedef int (*cli_proc_fn)(void *arg, const struct cli_proc_row *r);
/* Processes of pid (0 = all) whose [first_ns, last_ns] meets [from, to],
 * by first_ns. fn returns 0 to go on, 1 to stop, <0 error (returned).
 * Returns the number of rows delivered, or -errno. */
int cli_store_processes(struct cli_store *s, uint32_t pid, uint64_t from, uint64_t to,
                        cli_proc_fn fn, void *arg);

/* DATA blocks of a process (processes.id) meeting [from, to], from the
 * index only (idx_read_block_stats): for overviews of windows too large to
 * scan. Same contract as cli_store_processes. */
struct cli_block_stat {
    uint32_t tid, ring;
    uint64_t nrec, t_first, t_last;
};
int cli_store_block_stats(struct cli_store *s, int64_t process_id, uint64_t from, uint64_t to,
                          int (*fn)(void *arg, const struct cli_block_stat *b), void *arg);

struct cli_seg_row {
    uint64_t id;
    const char *path;                   /* relative to the store */
    int64_t process_id;
    uint32_t pid;
    const char *comm;
    uint64_t t_min, t_max, bytes, records, lost;
    uint64_t counts[D9_REC_TYPE_COUNT];
};
typedef int (*cli_seg_fn)(void *arg, const struct cli_seg_row *r);
int cli_store_segments(struct cli_store *s, uint32_t pid, uint64_t from, uint64_t to,
                       cli_seg_fn fn, void *arg);

struct cli_thread_row {
    int64_t process_id;
    uint32_t pid, tid, ring, generation;
    const char *name;                   /* never NULL */
    uint64_t first_ns, last_ns;         /* 0 = unknown */
    bool ended;
};
typedef int (*cli_thread_fn)(void *arg, const struct cli_thread_row *r);
/* Threads (ring generations) of pid and of process_id (processes.id; 0 =
 * any, for either), by process, tid, then first_ns. Same return rules. */
int cli_store_threads(struct cli_store *s, uint32_t pid, int64_t process_id, cli_thread_fn fn,
                      void *arg);

struct cli_runtime_row {
    int64_t process_id;
    uint32_t pid, runtime_id;
    const char *name;                   /* never NULL */
};
typedef int (*cli_runtime_fn)(void *arg, const struct cli_runtime_row *r);
/* Runtimes of pid and of process_id (0 = any), by process then id. Same
 * return rules. */
int cli_store_runtimes(struct cli_store *s, uint32_t pid, int64_t process_id, cli_runtime_fn fn,
                       void *arg);

/* ---- record scan ----------------------------------------------------------- */
struct cli_filter {
    uint64_t from, to;                  /* inclusive, CLOCK_MONOTONIC ns */
    uint32_t pid;                       /* 0 = all */
    uint32_t tid;                       /* 0 = all */
    uint32_t types;                     /* 1 << type; 0 = all */
    bool ring_order_only;               /* see cli_store_scan */
};

/* Who a record belongs to; valid during the callback only. */
struct cli_rec_src {
    int64_t process_id;                 /* processes.id: (pid, start_time) */
    uint32_t pid, uid;                  /* uid: owner, from the segment header */
    const char *comm;
    uint32_t tid, ring, generation;
    const char *thread;                 /* thread name, "" when unknown */
    uint64_t segment_id;
    const struct cli_meta_src *meta;    /* names for runtime/location/schema ids */
};

/* Return 0 to go on, 1 to stop the scan, <0 to abort with that error. */
typedef int (*cli_rec_fn)(void *arg, const struct cli_rec_src *src, const struct d9_rec_hdr *rec,
                          size_t len);

struct cli_scan_stats {
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
int cli_store_scan(struct cli_store *s, const struct cli_filter *f, cli_rec_fn fn, void *arg,
             struct cli_scan_stats *st, const char *prog);

/* The same scan pulled one record at a time (what cli_store_scan loops
 * over; the SQL virtual tables step it from xNext). cli_store_scan_next
 * returns 1 with *src, *rec, *len valid until the next call, 0 at the end,
 * or -errno. *st (may be NULL) is updated as records are delivered. */
struct cli_scan_it;
int cli_store_scan_open(struct cli_store *s, const struct cli_filter *f,
                        struct cli_scan_stats *st, const char *prog, struct cli_scan_it **out);
int cli_store_scan_next(struct cli_scan_it *it, struct cli_rec_src *src,
                        const struct d9_rec_hdr **rec, size_t *len);
void cli_store_scan_close(struct cli_scan_it *it);

/* ---- names after a scan ---------------------------------------------------
 * Resolve ids of a process (runtime, location, thread, comm) when no scan
 * callback is running: opens the newest segment of the process once (its
 * metadata is a superset of the older ones) and caches the reader. */
struct cli_names;
int cli_store_names_open(struct cli_store *s, struct cli_names **out);
void cli_store_names_close(struct cli_names *n);
/* The loaded objects the agent published for process_id (D9_META_OBJECT
 * entries of its segments' metadata): what symbolizes its stacks when the
 * collector recorded no memory maps. fn returns non-zero to stop. */
int cli_store_names_objects(struct cli_names *n, int64_t process_id,
                            int (*fn)(void *arg, const struct shm_meta_entry *e), void *arg);
/* Each returns buf, filled with the name or "#<id>" / "?" when unknown. */
const char *cli_store_names_location(struct cli_names *n, int64_t process_id, uint32_t loc,
                                     char *buf, size_t cap);
const char *cli_store_names_runtime(struct cli_names *n, int64_t process_id, uint16_t rt, char *buf,
                              size_t cap);
const char *cli_store_names_thread(struct cli_names *n, int64_t process_id, uint32_t ring,
                             uint32_t generation, char *buf, size_t cap);
const char *cli_store_names_comm(struct cli_names *n, int64_t process_id, char *buf, size_t cap);
/* A metadata entry (D9_META_LOCATION or D9_META_SCHEMA) of the process by
 * id, from its newest segment; NULL when unknown. Valid until
 * cli_store_names_close. */
const struct shm_meta_entry *cli_store_names_meta(struct cli_names *n, int64_t process_id,
                                                  uint16_t kind, uint32_t id);
/* processes.last_ns of the process (its last record indexed), 0 if unknown. */
uint64_t cli_store_names_last_ns(struct cli_names *n, int64_t process_id);

#endif /* D9_COL_CLI_STORE_H */
