/*
 * q_store.h — a d9 store opened for reading: the SQLite index (live, while
 * d9collectd writes in WAL mode, or a copied directory), its time windows,
 * and the index's listings (processes, segments, threads, runtimes, drops).
 * The records themselves are read by q_scan.h, names by q_names.h.
 *
 * Called by every reader of a store: the d9 subcommands, d9 sql's tables,
 * d9 serve, the exports. The store is a directory holding index.sqlite
 * (schema in collector/store/idx.h) and segment files whose paths the index
 * gives relative to the directory, so a copied store works anywhere.
 *
 * Must never: write to the store, hold a write lock, or load whole files.
 */
#ifndef D9_COL_Q_STORE_H
#define D9_COL_Q_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collector/store/idx_read.h"
#include "shm/d9_abi.h"

#define Q_PATH_MAX            4096    /* a store directory or file path */
/* Tolerance when comparing the store's boot offset (CLOCK_REALTIME -
 * CLOCK_MONOTONIC at collector start) with ours to decide "same boot". */
#define Q_BOOT_TOLERANCE_NS   (60ull * 1000000000ull)
#define Q_DB_BUSY_MS          2000    /* wait this long for the writer's locks */
#define Q_READER_CACHE        16      /* open segment files kept while scanning */

/* A time window as typed; resolved against a store by q_store_window_resolve
 * because "--since" depends on whether the store is live. */
enum q_window_kind {
    Q_WIN_ALL = 0,                  /* default and --last: everything */
    Q_WIN_SINCE = 1,                /* --since DUR */
    Q_WIN_RANGE = 2,                /* --from and/or --to */
};
struct q_window {
    enum q_window_kind kind;
    uint64_t since_ns;
    uint64_t from_ns;               /* 0 = open */
    uint64_t to_ns;                 /* UINT64_MAX = open */
};

struct q_store;

/* Open <dir>/index.sqlite read-only. On failure returns -errno with a
 * one-line reason in why (path included). */
int q_store_open(struct q_store **out, const char *dir, char *why, size_t whycap);
void q_store_close(struct q_store *s);
/* The warning for a damaged block that a reader leaves out (and nothing
 * else of its segment): "PROG: warning: DIR/PATH: block at offset N
 * unreadable (WHY), skipped", the one q_scan.c prints. q_store_skip_note is
 * a rollup_skip_fn (collector/store/rollup.h) taking a q_skip_note. */
struct q_skip_note {
    const char *prog, *dir, *path;
};
void q_store_skip_note(void *arg, uint64_t offset, const char *why);
const char *q_store_dir(const struct q_store *s);
/* A read of the index that failed (-EIO) where the caller goes on without
 * it, its answer then missing what (e.g. "names left unresolved"): says so
 * on stderr, "d9: warning: <idx_errmsg> (WHAT)", the first time only for s,
 * so a failing index is one line, not one per process. */
void q_store_index_warn(struct q_store *s, const char *what);
/* The index handle, for the other readers of query/ (q_scan, q_names,
 * q_loc): read-only, owned by s. */
struct idx *q_store_idx(struct q_store *s);
/* idx_read_process_end of process_id, remembered for the last process asked
 * while the index is unchanged (idx_read_data_version): the readers ask it
 * once per poll left open, and each answer scans the process's block rows. */
int q_store_process_end(struct q_store *s, int64_t process_id, struct idx_read_process_end *out);
/* Where the readers of this store look for debug files by build-id
 * (DIR/xx/yyyy.debug; "" = sym.h's SYM_DEBUG_DIR). */
void q_store_set_debug_dir(struct q_store *s, const char *dir);
const char *q_store_debug_dir(const struct q_store *s);

/* Wall clock: *boot_realtime_ns such that wall = mono + it. false if unknown. */
bool q_store_wall(const struct q_store *s, int64_t *boot_realtime_ns);
/* true when the store was written during this boot (see CLI_HELP_WINDOW). */
bool q_store_live(const struct q_store *s);

/* Hint for empty results: " (pid N is still running: data the collector
 * has not sealed yet is not visible; run 'd9 flush')" when a process of the
 * selection (pid, 0 = any) is alive in a live store, else "". */
const char *q_store_unsealed_hint(struct q_store *s, uint32_t pid);

/* Smallest t_min / largest t_max of the segments of pid (0 = all).
 * 0, or -ENOENT when there are none. */
int q_store_time_range(struct q_store *s, uint32_t pid, uint64_t *tmin, uint64_t *tmax);

/* Pure window arithmetic (unit-tested): spec -> [*from, *to] inclusive.
 * SINCE counts back from now_ns when live, else from newest_ns (when
 * have_newest; otherwise the window is everything). */
void q_store_window_compute(const struct q_window *w, bool live, uint64_t now_ns,
                        bool have_newest, uint64_t newest_ns, uint64_t *from, uint64_t *to);
/* The same against a store (reads liveness, newest record of pid, now). */
int q_store_window_resolve(struct q_store *s, const struct q_window *w, uint32_t pid,
                       uint64_t *from, uint64_t *to);

/* ---- the index's listings ---------------------------------------------------
 * The rows are the index module's own (idx_read.h), handed through as they
 * are; fn returns 0 to go on, non-zero to stop (a negative value is returned
 * as the error). Each returns the number of rows delivered, or -errno. */

/* Drops by cause, summed over process_id (> 0), or over the processes of
 * pid (0 = all) seen in [from, to]. 0 or -errno. */
int q_store_drops(struct q_store *s, int64_t process_id, uint32_t pid, uint64_t from,
                  uint64_t to, struct idx_read_drops *out);
/* "2 ring full, 3 type mismatch, 1 too large, 4 no ring": the causes with a
 * count, "none" when there is none. Returns buf. */
const char *q_store_drops_text(const struct idx_read_drops *d, char *buf, size_t cap);

/* Processes of pid (0 = all) whose [first_ns, last_ns] meets [from, to],
 * by first_ns. */
int q_store_processes(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to,
                      int (*fn)(void *arg, const struct idx_read_process *r), void *arg);

/* DATA blocks of a process (processes.id) meeting [from, to], from the
 * index only: for overviews of windows too large to scan. */
int q_store_block_stats(struct q_store *s, int64_t process_id, uint64_t from, uint64_t to,
                        int (*fn)(void *arg, const struct idx_read_block_stat *b), void *arg);

/* Segments of pid (0 = all) that meet [from, to], by t_min. */
int q_store_segments(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to,
                     int (*fn)(void *arg, const struct idx_read_segment *r), void *arg);

/* Threads (ring generations) of pid and of process_id (processes.id; 0 =
 * any, for either), by process, tid, then first_ns. */
int q_store_threads(struct q_store *s, uint32_t pid, int64_t process_id,
                    int (*fn)(void *arg, const struct idx_read_thread *r), void *arg);

/* Runtimes of pid and of process_id (0 = any), by process then id. */
int q_store_runtimes(struct q_store *s, uint32_t pid, int64_t process_id,
                     int (*fn)(void *arg, const struct idx_read_runtime *r), void *arg);

#endif /* D9_COL_Q_STORE_H */
