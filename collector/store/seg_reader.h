/*
 * seg_reader.h — reads and verifies a segment file (format: seg.h).
 *
 * Called by: d9 (queries, fsck), seg_salvage.c, d9collectd's re-indexing,
 * tests, fuzz_segment.
 *
 * Invariant: everything in a file is checked before it is used; a file is
 * untrusted input.
 */
#ifndef D9_COL_SEG_READER_H
#define D9_COL_SEG_READER_H

#include <stddef.h>
#include <stdint.h>
#include "collector/store/seg.h"

struct seg_reader;

/* Metadata decoded from META blocks seen so far. */
struct seg_meta_table;

/* Open and validate header and footer (flags: SEG_OPEN_PARTIAL accepts a
 * file without a footer and reads whole blocks up to the first bad one). */
#define SEG_OPEN_PARTIAL 1u
#define SEG_OPEN_NO_FOOTER 0x100u     /* ignore the footer (salvage writes a new one) */
int seg_reader_open(struct seg_reader **out, const char *path, unsigned flags);
void seg_reader_close(struct seg_reader *r);
const struct seg_file_hdr *seg_reader_header(const struct seg_reader *r);
const struct seg_footer *seg_reader_footer(const struct seg_reader *r);  /* NULL if partial */

/* Same, over bytes in memory (copied; for fuzzing and tests). */
int seg_reader_open_mem(struct seg_reader **out, const uint8_t *buf, size_t len, unsigned flags);
/* Same as seg_reader_open, with a one-line reason for a failure in why. */
int seg_reader_open_ex(struct seg_reader **out, const char *path, unsigned flags,
                       char *why, size_t why_cap);
/* Why the last call failed, or (SEG_OPEN_PARTIAL) why reading stopped
 * early; NULL when nothing went wrong. */
const char *seg_reader_error(const struct seg_reader *r);
/* File size seen at open; metadata entries ignored so far (id > SEG_META_IDS_MAX;
 * counted each time a META block holding one is read). */
uint64_t seg_reader_size(const struct seg_reader *r);
uint32_t seg_reader_meta_dropped(const struct seg_reader *r);

/* A block as read: header copy + payload pointer valid until the next call.
 * DATA blocks also give their records in ring framing (unpacked when the
 * block is packed): read records through these, not through payload. */
struct seg_block {
    struct seg_block_hdr h;
    uint64_t offset;
    const uint8_t *payload;     /* h.len bytes as stored */
    const uint8_t *records;     /* DATA: records_len bytes of ring-framed records */
    uint32_t records_len;
};

/* Next block (validates magic, kind, len and crc; META blocks also update
 * the reader's metadata table). 1 = got one, 0 = end, -EBADMSG corrupt.
 * Also checks every record / metadata entry of the block against the block
 * header (nrec, t_first, t_last) and, read from the start without seeking,
 * the footer's block count, crc chain and totals at the end. With
 * SEG_OPEN_PARTIAL a bad block ends the file (0; seg_reader_error says why). */
int seg_reader_next(struct seg_reader *r, struct seg_block *b);
/* After seg_reader_next failed (-EBADMSG) on a DATA block whose header
 * still checks (a damaged payload: crc, records), step over it: 0 and b =
 * its header and offset (no payload), the next call reads the block after
 * it; seg_reader_error still says what was wrong with it. The footer's
 * totals are no longer checked (a block is missing from them).
 * -EBADMSG when the header itself is bad (where the next block starts is
 * unknown: only an index's offsets can go on, by seg_reader_seek) or the
 * block is not DATA (a damaged META block: the metadata after it would be
 * incomplete). */
int seg_reader_skip(struct seg_reader *r, struct seg_block *b);

/* Position at a block offset taken from the index (META blocks before it
 * must have been read, or call seg_reader_load_meta first). */
int seg_reader_seek(struct seg_reader *r, uint64_t offset);

/* Read every META block of the file (so seeking straight into data works). */
int seg_reader_load_meta(struct seg_reader *r);
/* The same from the META blocks at offs[0, n) only (the index's list of
 * them, idx_read_segment_meta: a block each instead of every block's
 * header). 0, or -EBADMSG / -EINVAL when an offset is not a META block
 * that checks: the metadata is then incomplete (close the reader and use
 * seg_reader_load_meta on a new one). */
int seg_reader_load_meta_at(struct seg_reader *r, const uint64_t *offs, size_t n);

/* Iterate the records of a DATA block: 1 = *rec set, 0 = end, -EBADMSG. */
int seg_reader_next_record(const struct seg_block *b, size_t *off, const struct d9_rec_hdr **rec);

/* Hand the caller the buffer that b->records (the last block read, a packed
 * DATA block) was unpacked into, instead of a copy: it is the caller's to
 * free(), and the reader unpacks the next packed block into a new one. NULL
 * when b->records is not that buffer (an unpacked block: the records are
 * the reader's payload buffer, copy them). For q_scan, which keeps each
 * block's records while the blocks that overlap it in time are read. */
uint8_t *seg_reader_take_records(struct seg_reader *r, const struct seg_block *b);

/* Metadata lookups (NULL when unknown). */
const char *seg_reader_runtime(const struct seg_reader *r, uint32_t id);
const struct shm_meta_entry *seg_reader_location(const struct seg_reader *r, uint32_t id);
const struct shm_meta_entry *seg_reader_schema(const struct seg_reader *r, uint32_t id);
/* Every loaded-object entry (D9_META_OBJECT) of the metadata read so far, by
 * id; fn returns non-zero to stop (returned). */
int seg_reader_each_object(const struct seg_reader *r,
                           int (*fn)(void *arg, const struct shm_meta_entry *e), void *arg);
/* The same for the location entries (D9_META_LOCATION). */
int seg_reader_each_location(const struct seg_reader *r,
                             int (*fn)(void *arg, const struct shm_meta_entry *e), void *arg);

/* Read every remaining block without keeping metadata (the walk of salvage
 * and re-indexing): appends each block's index row to sum->blocks (malloc'ed,
 * grown as needed), sums the blocks into *acc, sets *good_end to the end of
 * the last valid block and *n_nonmeta to the blocks other than META.
 * 0 or -errno (-EBADMSG corrupt, unless SEG_OPEN_PARTIAL). */
int seg_reader_scan(struct seg_reader *r, struct seg_summary *sum, struct seg_acc *acc,
                    uint64_t *good_end, uint32_t *n_nonmeta);
/* fstat of the file (-EBADF for a memory reader). */
struct stat;
int seg_reader_fstat(const struct seg_reader *r, struct stat *st);

#endif /* D9_COL_SEG_READER_H */
