/*
 * fsck.h — check (and repair) that a store's index and its segment files
 * agree. Called by `d9 fsck [--repair]` (collector/cli/cli_fsck.c).
 *
 * Checks: every segments row has its file, and the file is a whole, valid
 * segment whose header/footer agree with the row (id, bytes, records, time
 * range, block rows); every sealed file in the store directory has a row;
 * temp files (.tmp.*) left by a crashed collector; each row's rollups are
 * the ones its file's readable blocks give. A file whose only damage is
 * DATA blocks that do not check (headers intact) is "damaged", not
 * corrupt: kept, since the readers leave out those blocks and only those;
 * its rollups (made at the seal, counting them) differ and are rebuilt by
 * a repair, so the rollups, the edges and the record scans agree.
 * Repairs (repair != 0): delete rows whose file is missing or corrupt;
 * re-index rows that disagree with a good file; index sealed files without
 * a row (reindex.h: process, threads, runtimes, exit and segment rows,
 * from the file alone); salvage temp files (seg_salvage) and index them; remove temp
 * files with nothing recoverable; rename corrupt segment files to
 * <name>.corrupt (never deleted: the user decides).
 *
 * Temp files that a running process holds open (a live collector) are never
 * touched, and --repair refuses to run (-EBUSY) while another process holds
 * the store lock (store_lock.h) or has the index open (seen through
 * /proc/<pid>/fd, so only for processes this user may inspect).
 */
#ifndef D9_COL_FSCK_H
#define D9_COL_FSCK_H

#include <stdint.h>

struct idx;

struct fsck_report {
    /* found */
    uint64_t rows;              /* segment rows in the index */
    uint64_t files;             /* sealed segment files in the store dir */
    uint64_t ok;                /* rows whose file is whole and agrees */
    uint64_t missing;           /* rows whose file is gone */
    uint64_t mismatched;        /* rows that disagree with their (valid) file */
    uint64_t corrupt;           /* segment files that fail verification */
    uint64_t damaged;           /* segment files whose only damage is DATA blocks that do
                                 * not check (their headers do): kept, readers leave out
                                 * those blocks; the rollups must count the rest.
                                 * Not a problem once they do (fsck_problems) */
    uint64_t orphans;           /* valid sealed files without a row */
    uint64_t temps;             /* temp files left by a crashed writer */
    uint64_t temps_in_use;      /* temp files open in a running process (left alone) */
    uint64_t bad_times;         /* segments with an impossible time range (a stamp that
                                 * converted below zero, inverted): kept, readers cope */
    uint64_t bad_rollups;       /* whole segments whose rollups are missing, do not check
                                 * or differ from the ones their records give */
    /* done (repair only) */
    uint64_t rows_deleted;
    uint64_t reindexed;         /* files (re-)indexed */
    uint64_t salvaged;          /* temp files recovered into sealed segments */
    uint64_t temps_removed;     /* temp files with nothing recoverable */
    uint64_t quarantined;       /* corrupt files renamed to *.corrupt */
    uint64_t rollups_rebuilt;   /* rollups written from their segment's records */
    uint64_t errors;            /* repairs that failed */
};

#define FSCK_CORRUPT_SUFFIX ".corrupt"

/* One finding or action, as a line for the user: path and what about it. */
typedef void (*fsck_fn)(void *arg, const char *path, const char *what);

/* Check (repair = 0) or repair a store. 0 when the check ran, whatever it
 * found (see fsck_problems); -errno when it could not run: not a store
 * (-ENOENT: no d9 index in it, idx_probe; nothing there is created or
 * changed, segment files or not: a lost index is rebuilt by a collector
 * started on the store), index unreadable, or -EBUSY for a repair of a
 * store in use. */
int fsck_run(const char *store_dir, int repair, struct fsck_report *out);
int fsck_run_ex(const char *store_dir, int repair, struct fsck_report *out, fsck_fn fn,
                void *arg);

/* Problems found (missing + mismatched + corrupt + orphans + temps + bad_times +
 * bad_rollups). Not damaged: nothing a repair can change (the blocks are
 * lost; the file is kept for the rest), reported like temps_in_use. */
uint64_t fsck_problems(const struct fsck_report *r);

#endif /* D9_COL_FSCK_H */
