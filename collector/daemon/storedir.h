/*
 * storedir.h — the daemon's side of its store directory: opening it and its
 * SQLite index, start-up recovery, opening, sealing + indexing segments,
 * the rotation rule, retention, and write-error back-off. (The formats
 * themselves, segment files and index.sqlite, are collector/store/'s.)
 *
 * Called by d9collectd.c (open/recover/close, rotation), drain.c (writer
 * open, seal, write-error accounting), prof.c and proc.c (write-error
 * accounting), on the drain thread only. Calls collector/store/ only.
 *
 * Invariants:
 *   - A segment is sealed (seg_writer_seal: fsync + rename + dir fsync) and
 *     then indexed (idx_segment_commit) in the same step, so an indexed
 *     segment always exists whole on disk.
 *   - Retention deletes the index rows of a segment first, then unlinks its
 *     file: d9 never sees a row whose file is gone because of us.
 *   - After a write error (ENOSPC, EIO, ...) no new write is attempted
 *     before STOREDIR_WRITE_RETRY_NS has passed; the collector keeps running.
 * Must never: delete a file it did not index or find as its own temp file,
 * or let a failed write leave the index inconsistent.
 */
#ifndef D9_DAEMON_STOREDIR_H
#define D9_DAEMON_STOREDIR_H

#include <stdint.h>
#include <sys/types.h>
#include "collector/daemon/config.h"
#include "collector/store/col_log.h"
#include "collector/store/seg_writer.h"

struct idx;
struct ru_pipe;

#define STOREDIR_WRITE_RETRY_NS 1000000000ULL   /* wait 1 s after a write error */
#define STOREDIR_HOST_MAX 64

/* How the seal gets a segment's rollups (rollup.h). LIVE, the default: fed
 * while the segment is written (seg_writer_rollup_*), on the store's rollup
 * thread (ru_pipe.h: the drain only hands each chunk over), read back from
 * the sealed file only when the feeding was interrupted. INLINE: fed the
 * same way but computed on the drain thread itself. READBACK: always read
 * back (rollup_file). OFF: none (readers scan the records). The last three
 * exist for the drain-cost bench's baselines only, chosen by the
 * environment variable STOREDIR_ROLLUPS_ENV (off|readback|inline|live), on
 * no command line. */
enum storedir_rollups { STOREDIR_RU_LIVE = 0, STOREDIR_RU_INLINE, STOREDIR_RU_READBACK,
                        STOREDIR_RU_OFF };
#define STOREDIR_ROLLUPS_ENV "D9_BENCH_ROLLUPS"

struct storedir {
    char dir[CONFIG_PATH_MAX];         /* absolute */
    char host[STOREDIR_HOST_MAX];
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
    int unindexed_seals;            /* a seal's index commit failed since the last re-index */
    int last_error;                 /* its -errno */
    int keep_unshipped;             /* shipping: retention deletes shipped segments first */
    uint64_t evicted_unshipped;     /* segments the cap deleted before they were shipped */
    enum storedir_rollups rollups;  /* STOREDIR_RU_* (LIVE unless a bench asks) */
    uint64_t rollups_live, rollups_readback;    /* seals by each path */
    struct ru_pipe *ru_pipe;        /* LIVE: the rollup thread (made at the first segment) */
    void (*on_sealed)(void *arg);   /* called after a segment is indexed (NULL: none) */
    void *on_sealed_arg;
    struct col_ratelimit err_rl;
};

/* Who may read the store: the collector's euid (writes) and the members of
 * the store's group (read), nobody else. The directory is
 * STOREDIR_DIR_MODE: group members traverse and list it, others cannot
 * even look up a name in it; its setgid bit gives every file created in
 * it the directory's group. Files are created 0640 (segments by
 * seg_writer, the index by idx_open, whose -wal and -shm SQLite creates
 * with the index's mode and owner; the lock by store_lock). */
#define STOREDIR_DIR_MODE   02750
#define STOREDIR_FILE_MODE  0640
#define STOREDIR_PARENT_MODE 0755   /* missing parents of the store */

/* Create dir if needed (STOREDIR_DIR_MODE; missing parents
 * STOREDIR_PARENT_MODE), check it is writable, open the index. On
 * failure err holds one line ("store DIR is not writable: ..."). */
int storedir_open(struct storedir *s, const char *dir, uint64_t cap_bytes,
                  char *err, size_t errcap);
/* Give the store to group gid: the directory gets gid and
 * STOREDIR_DIR_MODE, and its files of ours (index.sqlite and its -wal and
 * -shm, .lock, segments and temp segments; regular files owned by our euid,
 * never followed through a link) gid and STOREDIR_FILE_MODE, so a store
 * created before this rule, or for another group, is private again.
 * A directory owned by another uid is left as it is (one warning). Never
 * opens those files: the index may be open (closing a descriptor of a file
 * drops the process's fcntl locks on it, SQLite's too).
 * 0, or -errno with err holding one line (a non-root collector may only
 * use a group it is a member of: -EPERM). */
int storedir_secure(struct storedir *s, gid_t gid, char *err, size_t errcap);
void storedir_close(struct storedir *s);

/* Start-up recovery: delete block rows whose segment was never sealed
 * (STOREDIR_INDEX_BATCH), salvage .tmp.* segments left by a crash into sealed,
 * indexed segments; index sealed files that have no row; enforce the cap. */
int storedir_recover(struct storedir *s);

/* Open a new segment writer for a process (fresh segment id). */
int storedir_writer_open(struct storedir *s, const struct seg_proc_info *pi,
                         const uint8_t *meta, size_t meta_len, struct seg_writer **w);

/* Index the blocks w has appended since the last call once there are at
 * least min_rows of them (0: any), so the seal commits only the last few:
 * a seal that inserts every block row of a large segment at once stalls the
 * drain loop for longer than a fast ring takes to fill. A failure is logged (rate-limited) and the rows wait for the
 * seal. 0 or -errno. */
#define STOREDIR_INDEX_BATCH 64u
int storedir_index_blocks(struct storedir *s, struct seg_writer *w, uint32_t min_rows);

/* Seal w, index it under process_id, free w (in every case), enforce the
 * cap. records is the number of records the writer holds (counted as
 * dropped if sealing fails); pid (the traced process) is for the log line
 * of a failure. 0 or -errno. */
int storedir_seal(struct storedir *s, struct seg_writer *w, int64_t process_id, uint32_t pid,
                  uint64_t records);

/* Evict the oldest segments until the indexed bytes fit the cap. */
int storedir_enforce_cap(struct storedir *s);

/* Account a failed write: count it, log (rate-limited) and back off. */
void storedir_write_failed(struct storedir *s, int err, const char *what, uint32_t pid,
                           uint64_t now_ns);
/* A write succeeded: clears the failing state (logs that writes resumed). */
void storedir_write_ok(struct storedir *s);
/* 1 if writes may be attempted at now_ns. */
int storedir_writable(const struct storedir *s, uint64_t now_ns);

/* Rotation: 1 when a segment of bytes opened at opened_ns must be sealed at
 * now_ns (max_bytes or max_age_ns reached; 0 = no limit of that kind). */
int storedir_rotate_due(uint64_t bytes, uint64_t opened_ns, uint64_t now_ns,
                        uint64_t max_bytes, uint64_t max_age_ns);

#endif /* D9_DAEMON_STOREDIR_H */
