/*
 * reindex.h — index one sealed segment file of a store from its contents:
 * the process row (pid, uid, start time, comm, exe from the header), the
 * segment and its block rows, its rollups (rollup_file, as the collector's
 * seal computes them), the runtimes of its metadata, its threads
 * (ring generations with their first and last record, ended or not) and the
 * process's end (its EXIT block). The one way every writer but the drain
 * indexes a file: the collector's start-up recovery (salvaged temp files,
 * sealed files whose index commit failed), `d9 fsck --repair` and `d9 pull`.
 *
 * Called by: collector/daemon/storedir.c, collector/store/fsck.c,
 * collector/cli/cli_pull.c. The file is untrusted (read through
 * seg_reader); the caller holds the store lock (store_lock.h). Must never:
 * write to the segment file, or leave half a file's rows (the extras go in
 * one transaction after the segment's own).
 */
#ifndef D9_COL_REINDEX_H
#define D9_COL_REINDEX_H

#include "collector/store/seg.h"

struct idx;

/* Index the sealed, valid segment at path (inside store_dir). 0, -EEXIST if
 * its segment id or path is already indexed, -errno (the file unreadable,
 * the index failing). */
int reindex_file(struct idx *x, const char *store_dir, const char *path);

/* The same for a file whose summary the caller already has (a salvage, a
 * seg_salvage_summarize). */
int reindex_summary(struct idx *x, const char *store_dir, const char *path,
                    const struct seg_summary *sum);

#endif /* D9_COL_REINDEX_H */
