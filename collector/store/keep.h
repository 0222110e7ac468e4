/*
 * keep.h — a kept window cut out of a sealed segment: the flight
 * recorder's (--retain triggered) one file operation.
 *
 * keep_cut reads a sealed segment (untrusted: through seg_reader, every
 * block and record checked) and writes a new sealed segment of the same
 * process holding only what lies in the window [t0_ns, t1_ns] of a struct
 * seg_keep: every metadata entry (so the records decode alone), the DATA
 * records whose timestamp is inside, packed again (pack.h) in blocks of at
 * most KEEP_CHUNK raw bytes per thread, and the thread ends, the triggers
 * (SEG_BLK_TRIGGER) and the process exit inside. The new file's header carries SEG_F_KEPT and the seg_keep
 * (trigger, bounds, reason, source segment), so the index row made from it
 * (idx_segment_commit, or any re-index) names its trigger.
 *
 * Called by: collector/daemon/flight.c (the collector's flight recorder);
 * tests/unit/test_keep.c. The caller indexes the new segment and only then
 * deletes the source (rows first, then the file).
 * Invariants: the new file is sealed like every segment (seg_writer: temp
 * name, fsync, rename, dir fsync) or not there at all; every record in it has
 * t0_ns <= ts <= t1_ns; the source is never written.
 * Must never: trust the source file, or write anything when the window
 * holds nothing of it (-ENODATA).
 */
#ifndef D9_COL_KEEP_H
#define D9_COL_KEEP_H

#include <stdint.h>
#include "collector/store/seg.h"
#include "collector/store/seg_writer.h"

#define KEEP_CHUNK (256u * 1024u)   /* raw record bytes per DATA block written */

/* Cut k's window out of the sealed segment src into a new segment new_id in
 * dir (k->source_segment is set by the caller). On success *out is the sealed
 * writer and *sum its summary (valid until seg_writer_free(*out)).
 * -ENODATA: nothing of the window in src (no file written); -EBADMSG: src
 * is corrupt; else -errno of the read or the write (no file left behind). */
int keep_cut(const char *src, const char *dir, uint64_t new_id, const struct seg_keep *k,
             struct seg_writer **out, struct seg_summary *sum);

/* 1 when a segment's [t_min, t_max] and the window [t0, t1] overlap. */
int keep_overlaps(uint64_t t_min, uint64_t t_max, uint64_t t0, uint64_t t1);

#endif /* D9_COL_KEEP_H */
