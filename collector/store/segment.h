/*
 * segment.h — trace segment files: the collector's durable output.
 *
 * One segment holds the records of one traced process over a span of time.
 * It is self-describing: d9 decodes it with nothing but the file.
 *
 * File format v2 (little-endian, every struct 8-byte aligned; v1 files, the
 * same without packed blocks, are still read):
 *
 *   struct seg_file_hdr                       fixed SEG_HDR_SIZE bytes
 *   block*                                    struct seg_block_hdr + payload
 *   struct seg_footer                         fixed, at end - SEG_FOOTER_SIZE
 *
 * Blocks:
 *   SEG_BLK_META  payload = metadata entries in the region's metadata-log
 *                 framing (shm/meta.h). The writer emits every entry known at
 *                 open as the first block and new entries before the first
 *                 data block that needs them, so a reader scanning forward
 *                 always knows a schema before an event uses it.
 *   SEG_BLK_DATA  payload = records of one thread (ring, generation) in ring
 *                 framing (shm/d9_abi.h), PADs removed, ts converted to
 *                 CLOCK_MONOTONIC ns; or, with flags SEG_BF_PACKED (v2), the
 *                 same records packed (collector/store/pack.h), 3-8x smaller: what
 *                 the drain writes. lost = records the ring dropped since
 *                 the previous block of the same ring generation.
 *   SEG_BLK_EXIT  payload = struct seg_exit: the process ended (clean/crash).
 *   SEG_BLK_THREAD_END payload empty: the thread of (ring, generation) ended.
 * Each block header carries a CRC-32C of its payload.
 *
 * Sealing: written as <dir>/.tmp.<name>, footer appended, fsync(file),
 * rename to <dir>/<name>, fsync(dir). A file without a valid footer is not a
 * sealed segment (d9 fsck may salvage its whole blocks).
 *
 * Readers validate everything: a segment file is untrusted input.
 */
#ifndef D9_COL_SEGMENT_H
#define D9_COL_SEGMENT_H

#include <stddef.h>
#include <stdint.h>
#include "shm/d9_abi.h"
#include "shm/meta.h"

#define SEG_MAGIC        "D9SEG001"
#define SEG_END_MAGIC    "D9SEGEND"
#define SEG_VERSION      2u       /* written; 1 is still read */
#define SEG_VERSION_MIN  1u
#define SEG_HDR_SIZE     512u
#define SEG_BLOCK_MAGIC  0x4b423944u    /* "D9BK" */
#define SEG_FILE_SUFFIX  ".d9seg"
#define SEG_BLOCK_MAX    (16u * 1024u * 1024u)

enum seg_block_kind {
    SEG_BLK_META = 1,
    SEG_BLK_DATA = 2,
    SEG_BLK_EXIT = 3,
    SEG_BLK_THREAD_END = 4,
};

struct seg_file_hdr {
    char magic[8];              /* SEG_MAGIC */
    uint32_t version;           /* SEG_VERSION */
    uint32_t hdr_size;          /* SEG_HDR_SIZE */
    uint64_t segment_id;        /* unique per store, increasing */
    uint32_t pid;
    uint32_t uid;
    uint64_t start_time;        /* process start (clock ticks since boot) */
    uint64_t created_ns;        /* CLOCK_MONOTONIC when the segment was opened */
    uint64_t created_realtime_ns; /* CLOCK_REALTIME at the same moment */
    uint32_t clock_source;      /* the region's original clock (enum d9_clock_source) */
    uint32_t flags;
    double ns_per_tick;         /* calibration used for conversion (0 = none) */
    uint64_t cal_tsc0;
    uint64_t cal_ns0;
    char host[64];              /* NUL-padded */
    char comm[16];
    char exe[256];
    uint8_t _reserved[SEG_HDR_SIZE - 424];
};

/* seg_block_hdr.flags */
#define SEG_BF_PACKED    1u     /* DATA payload packed (collector/store/pack.h); format >= 2 */

struct seg_block_hdr {
    uint32_t magic;             /* SEG_BLOCK_MAGIC */
    uint16_t kind;              /* enum seg_block_kind */
    uint16_t flags;             /* SEG_BF_* */
    uint32_t len;               /* payload bytes, multiple of 8, <= SEG_BLOCK_MAX */
    uint32_t crc32c;            /* of the payload */
    uint32_t tid;
    uint32_t ring;
    uint32_t generation;
    uint32_t nrec;
    uint64_t t_first;           /* ns, CLOCK_MONOTONIC; 0 for META */
    uint64_t t_last;
    uint64_t lost;
};

struct seg_exit {
    uint64_t t_ns;              /* when the collector saw the end */
    int32_t reason;             /* enum seg_exit_reason */
    int32_t code;               /* exit status or signal when known, else -1 */
};
enum seg_exit_reason { SEG_EXIT_CLEAN = 1, SEG_EXIT_CRASHED = 2, SEG_EXIT_UNKNOWN = 3 };

struct seg_footer {
    char magic[8];              /* "D9FOOTER" */
    uint32_t nblocks;
    uint32_t crc32c;            /* CRC-32C over the sequence of block crcs */
    uint64_t nrecords;
    uint64_t t_min;
    uint64_t t_max;
    uint64_t lost;
    uint64_t counts[D9_REC_TYPE_COUNT];  /* records per type */
    uint64_t data_bytes;        /* bytes of blocks (headers included) */
    char end_magic[8];          /* SEG_END_MAGIC */
};
#define SEG_FOOTER_SIZE sizeof(struct seg_footer)

_Static_assert(sizeof(struct seg_file_hdr) == SEG_HDR_SIZE, "seg hdr");
_Static_assert(sizeof(struct seg_block_hdr) == 56, "seg block hdr");
_Static_assert(sizeof(struct seg_footer) % 8 == 0, "seg footer");

/* What the writer knows about the process a segment belongs to. */
struct seg_proc_info {
    uint32_t pid, uid;
    uint64_t start_time;
    uint32_t clock_source;
    double ns_per_tick;
    uint64_t cal_tsc0, cal_ns0;
    const char *host, *comm, *exe;
};

/* One block as the index records it (per-block offsets for time seeks). */
struct seg_block_info {
    uint64_t offset;            /* of the block header in the file */
    uint32_t len;               /* header + payload */
    uint16_t kind;
    uint32_t tid, ring, generation, nrec;
    uint64_t t_first, t_last, lost;
};

/* Summary of a sealed segment, handed to the index. */
struct seg_summary {
    uint64_t segment_id;
    char path[512];             /* final path */
    uint32_t pid, uid;
    uint64_t start_time;
    uint64_t bytes;             /* file size */
    uint64_t nrecords, lost, t_min, t_max;
    uint64_t counts[D9_REC_TYPE_COUNT];
    struct seg_block_info *blocks;  /* owned by the writer until seg_writer_free */
    uint32_t nblocks;
    uint32_t nblocks_indexed;   /* blocks[0, this) are already index rows (seg_writer_mark_indexed) */
    /* added (storage): */
    uint32_t hdr_flags;         /* seg_file_hdr.flags (SEG_F_SALVAGED) */
    uint64_t sealed_ns;         /* CLOCK_MONOTONIC at seal (from mtime for seg_summarize) */
};

/*
 * Details of the format and the API (added by storage, all additive):
 *
 * File names: a sealed segment is <dir>/<pid>-<start_time>-<segment_id>.d9seg
 * (decimal numbers, see seg_file_name); while written it is
 * <dir>/.tmp.<that name>. seg_footer.magic is SEG_FOOTER_MAGIC; the footer
 * crc32c chains seg_crc32c over each block's crc32c (4 bytes LE) in file
 * order; data_bytes == file size - SEG_HDR_SIZE - SEG_FOOTER_SIZE.
 *
 * Block header fields: META: nrec = number of entries, tid/ring/generation/
 * t_first, t_last, lost = 0. DATA: nrec = records, t_first/t_last = smallest/largest ts
 * of its records; len and crc32c are those of the payload as stored (packed
 * or not). EXIT: payload struct seg_exit, t_first = t_last = t_ns.
 * THREAD_END: no payload, t_first = t_last = t_ns. flags = 0 except
 * SEG_BF_PACKED on DATA blocks.
 * Footer t_min/t_max span every timestamp of the segment (records, thread
 * ends, exit); both 0 when there is none. counts[D9_REC_PAD] is always 0.
 *
 * Writer errors: every call returns 0 or -errno. A failed add that appends
 * one block (payload <= SEG_BLOCK_MAX) leaves the segment exactly as before
 * the call (the file is truncated back to its last whole block; records
 * already accepted stay buffered), so the caller may go on or seal. A DATA
 * payload > SEG_BLOCK_MAX is split at record boundaries into several blocks;
 * if such a call fails midway the writer refuses further adds (drop it).
 * Invalid input (a record shm_record_check rejects, a PAD, a bad metadata
 * entry, len % 8 != 0) is -EINVAL and writes nothing.
 */
#define SEG_FOOTER_MAGIC "D9FOOTER"
#define SEG_TMP_PREFIX   ".tmp."
#define SEG_F_SALVAGED   1u             /* seg_file_hdr.flags: rebuilt by seg_salvage */
#define SEG_WRITE_BUF    (1u << 20)     /* writer buffer, flushed with write(2) */
#define SEG_WRITEBACK_STEP (1u << 20)   /* start writeback of every 4 MiB flushed */
#define SEG_META_IDS_MAX 65536u         /* reader keeps metadata ids 1..this per kind */

struct seg_writer;

/* "<pid>-<start_time>-<segment_id>.d9seg" into out; -ENAMETOOLONG if cap is short. */
int seg_file_name(char *out, size_t cap, uint32_t pid, uint64_t start_time, uint64_t segment_id);
/* Parse a sealed segment's base name (no directory); -EINVAL if it is not one. */
int seg_parse_file_name(const char *name, uint32_t *pid, uint64_t *start_time,
                        uint64_t *segment_id);

/* Path of the file being written (temp name until sealed, final name after). */
const char *seg_writer_path(const struct seg_writer *w);
/* Write buffered blocks to the file now (no fsync). Same error rules as adds. */
int seg_writer_flush(struct seg_writer *w);

/*
 * Recover <dir>/.tmp.<name> left by a crashed collector: keep the header and
 * every whole, valid block up to the first bad one, truncate the rest, append
 * a footer, set SEG_F_SALVAGED, fsync, rename to <dir>/<name>, fsync(dir) and
 * fill *sum (sum->blocks is malloc'ed: seg_summary_release). Errors: -EINVAL
 * (not a temp segment name), -EBADMSG (header unreadable), -ENODATA (no
 * block besides metadata: nothing worth keeping; the caller may unlink it),
 * -EEXIST (the final name exists), -errno from I/O. Never modifies anything
 * on error except the truncation of garbage past the last good block.
 */
int seg_salvage(const char *tmp_path, struct seg_summary *sum);
/* Read and verify a whole sealed segment and build its summary (to re-index
 * a file that has no index rows). sum->blocks: seg_summary_release. */
int seg_summarize(const char *path, struct seg_summary *sum);
/* Free the blocks of a summary filled by seg_salvage / seg_summarize. */
void seg_summary_release(struct seg_summary *sum);

/* Open <dir>/.tmp.<name> for a new segment. Writes the header and a META
 * block with meta[0, meta_len) (may be 0). Errors: -errno (ENOSPC, EACCES...).
 * -EEXIST when the temp or the final name already exists (segment id in use). */
int seg_writer_open(struct seg_writer **out, const char *dir, uint64_t segment_id,
                    const struct seg_proc_info *proc, const uint8_t *meta, size_t meta_len);

/* Append metadata entries (already validated) as a META block. */
int seg_writer_add_meta(struct seg_writer *w, const uint8_t *entries, size_t len);

/* Append a DATA block of validated, converted records (ring framing, no PADs).
 * Computes nrec, per-type counts, t_first/t_last and the crc. */
int seg_writer_add_data(struct seg_writer *w, uint32_t tid, uint32_t ring, uint32_t generation,
                        uint64_t lost, const uint8_t *records, size_t len);

/* Statistics of a run of records, gathered by the caller in the same walk
 * that produced the records (the collector's timestamp conversion). */
struct seg_data_stats {
    uint32_t nrec;
    uint64_t t_min, t_max;      /* smallest / largest ts (0 when nrec == 0) */
    uint64_t counts[D9_REC_TYPE_COUNT];
};

/* A DATA block written in place, for the drain: no copy between the ring
 * reader and the writer's buffer, and no second walk over the records.
 * seg_writer_data_reserve() makes room for max payload bytes (a multiple of
 * 8, at most SEG_WRITE_BUF - the block header) in the writer's buffer,
 * flushing it first if needed (the same error rules as an add: a failed
 * flush leaves the segment as it was), and points *payload there. The
 * caller fills [0, len) with records it validated itself (ring framing, no
 * PADs, converted timestamps), then seg_writer_data_commit() appends them as
 * one block with the caller's stats and CRC-32C (seg_crc32c over the
 * payload), which must describe the records exactly: the block header and
 * the index are built from them. Nothing else may be added in between; a
 * reservation is dropped by the next reserve, or by a commit with len 0 and
 * lost 0. len == 0 with lost > 0 writes a record-less block. */
int seg_writer_data_reserve(struct seg_writer *w, size_t max, uint8_t **payload);
/* flags: 0 (records in ring framing) or SEG_BF_PACKED (a packed payload of
 * len bytes, collector/store/pack.h; its stats describe the records it unpacks to). */
int seg_writer_data_commit(struct seg_writer *w, uint32_t tid, uint32_t ring,
                           uint32_t generation, uint64_t lost, size_t len,
                           const struct seg_data_stats *st, uint32_t crc, uint16_t flags);

int seg_writer_add_thread_end(struct seg_writer *w, uint32_t tid, uint32_t ring,
                              uint32_t generation, uint64_t t_ns);
int seg_writer_add_exit(struct seg_writer *w, const struct seg_exit *e);

/* Bytes written so far (for size-based rotation). */
uint64_t seg_writer_bytes(const struct seg_writer *w);
uint64_t seg_writer_opened_ns(const struct seg_writer *w);
uint64_t seg_writer_id(const struct seg_writer *w);

/* Index rows while writing: the blocks appended since the last
 * seg_writer_mark_indexed (*first: valid until the next add), so the seal
 * does not have to insert thousands of rows at once. Rows of a segment that
 * is never sealed are orphans (no segments row): readers join on segments,
 * and start-up recovery deletes them. The seal's summary says how many
 * leading blocks are already rows (nblocks_indexed). */
uint32_t seg_writer_unindexed(const struct seg_writer *w, const struct seg_block_info **first);
void seg_writer_mark_indexed(struct seg_writer *w, uint32_t n);
uint32_t seg_writer_indexed(const struct seg_writer *w);   /* blocks marked so far */

/* Footer, fsync, rename, fsync(dir). On success fills *sum (valid until
 * seg_writer_free). On failure (-errno) the segment stays unsealed as it
 * was before the call (whole blocks, no footer, temp name): seal may be
 * retried, seg_writer_free removes the temp file (as before: a caller that
 * always frees after a failed seal sees no change), seg_writer_abandon keeps
 * it for seg_salvage. After an fsync failure only free/abandon are allowed.
 * If only the final fsync(dir) fails, the file is whole under its final
 * name and is kept (index it on restart / d9 fsck). */
int seg_writer_seal(struct seg_writer *w, struct seg_summary *sum);

/* Drop an unsealed segment (unlinks the temp file) or free a sealed one. */
void seg_writer_free(struct seg_writer *w);
/* Free the writer but keep an unsealed temp file on disk (buffered blocks
 * are written first, best effort) for seg_salvage at the next start. */
void seg_writer_abandon(struct seg_writer *w);

/* ---- reading -------------------------------------------------------------- */

struct seg_reader;

/* Metadata decoded from META blocks seen so far. */
struct seg_meta_table;

/* Open and validate header and footer (flags: SEG_OPEN_PARTIAL accepts a
 * file without a footer and reads whole blocks up to the first bad one). */
#define SEG_OPEN_PARTIAL 1u
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

/* Position at a block offset taken from the index (META blocks before it
 * must have been read, or call seg_reader_load_meta first). */
int seg_reader_seek(struct seg_reader *r, uint64_t offset);

/* Read every META block of the file (so seeking straight into data works). */
int seg_reader_load_meta(struct seg_reader *r);

/* Iterate the records of a DATA block: 1 = *rec set, 0 = end, -EBADMSG. */
int seg_block_next_record(const struct seg_block *b, size_t *off, const struct d9_rec_hdr **rec);

/* Metadata lookups (NULL when unknown). */
const char *seg_meta_runtime(const struct seg_reader *r, uint32_t id);
const struct shm_meta_entry *seg_meta_location(const struct seg_reader *r, uint32_t id);
const struct shm_meta_entry *seg_meta_schema(const struct seg_reader *r, uint32_t id);

/* CRC-32C (Castagnoli), used for blocks. */
uint32_t seg_crc32c(uint32_t crc, const void *buf, size_t len);

#endif /* D9_COL_SEGMENT_H */
