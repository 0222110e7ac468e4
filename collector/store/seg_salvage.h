/*
 * seg_salvage.h — recovery of segment files that have no index rows: a temp
 * file left by a crashed collector, or a sealed file whose rows were lost.
 *
 * Called by: d9collectd at start-up (collector/daemon/store.c), d9 fsck
 * (fsck.c), fuzz_salvage.
 */
#ifndef D9_COL_SEG_SALVAGE_H
#define D9_COL_SEG_SALVAGE_H

#include "collector/store/seg.h"

/*
 * Recover <dir>/.tmp.<name> left by a crashed collector: keep the header and
 * every whole, valid block up to the first bad one, truncate the rest, append
 * a footer, set SEG_F_SALVAGED, fsync, rename to <dir>/<name>, fsync(dir) and
 * fill *sum (sum->blocks is malloc'ed: seg_salvage_release). Errors: -EINVAL
 * (not a temp segment name), -EBADMSG (header unreadable), -ENODATA (no
 * block besides metadata: nothing worth keeping; the caller may unlink it),
 * -EEXIST (the final name exists), -errno from I/O. Never modifies anything
 * on error except the truncation of garbage past the last good block.
 */
int seg_salvage(const char *tmp_path, struct seg_summary *sum);
/* Read and verify a whole sealed segment and build its summary (to re-index
 * a file that has no index rows). sum->blocks: seg_salvage_release. */
int seg_salvage_summarize(const char *path, struct seg_summary *sum);
/* Free the blocks of a summary filled by seg_salvage / seg_salvage_summarize. */
void seg_salvage_release(struct seg_summary *sum);

#endif /* D9_COL_SEG_SALVAGE_H */
