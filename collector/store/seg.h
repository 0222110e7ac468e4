/*
 * seg.h — trace segment files: the collector's durable output.
 *
 * One segment holds the records of one traced process over a span of time.
 * It is self-describing: d9 decodes it with nothing but the file.
 *
 * File format v4 (little-endian, every struct 8-byte aligned; v3 files,
 * the same without SEG_BLK_TRIGGER, are read too; a file of another version
 * is refused with one message naming both versions):
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
 *                 CLOCK_MONOTONIC ns; or, with flags SEG_BF_PACKED, the
 *                 same records packed (collector/store/pack.h), 3-8x smaller: what
 *                 the drain writes. lost = records the ring dropped since
 *                 the previous block of the same ring generation.
 *   SEG_BLK_EXIT  payload = struct seg_exit: the process ended (clean/crash).
 *   SEG_BLK_THREAD_END payload empty: the thread of (ring, generation) ended.
 *   SEG_BLK_TRIGGER payload = struct seg_trigger: a trigger the collector
 *                 saw for the process (any source: marker, shell, poll,
 *                 crash, sched, lost), with its verdict and kept window as
 *                 of its firing; t_first = t_last = its time, tid = pid.
 *                 A re-index rebuilds the index's triggers rows from them
 *                 (reindex.h). Since version 4.
 * Each block header carries a CRC-32C of its payload.
 *
 * Sealing: written as <dir>/.tmp.<name>, footer appended, fsync(file),
 * rename to <dir>/<name>, fsync(dir). A file without a valid footer is not a
 * sealed segment (d9 fsck may salvage its whole blocks).
 *
 * Readers validate everything: a segment file is untrusted input.
 *
 * This header is the format and what the three modules that handle it share
 * (seg.c): seg_writer.h writes a file, seg_reader.h reads and verifies
 * one, seg_salvage.h recovers files whose index rows are missing.
 */
#ifndef D9_COL_SEG_H
#define D9_COL_SEG_H

#include <stddef.h>
#include <stdint.h>
#include "shm/d9_abi.h"
#include "shm/meta.h"
#include "collector/store/crc32c.h"

#define SEG_MAGIC        "D9SEG001"
#define SEG_END_MAGIC    "D9SEGEND"
#define SEG_VERSION      4u       /* written (4: SEG_BLK_TRIGGER blocks; 3: custom
                                     records carry their task, D9_ABI_VERSION 2) */
#define SEG_VERSION_OLDEST 3u     /* the oldest version read */
#define SEG_HDR_SIZE     512u
#define SEG_BLOCK_MAGIC  0x4b423944u    /* "D9BK" */
#define SEG_FILE_SUFFIX  ".d9seg"
#define SEG_BLOCK_MAX    (16u * 1024u * 1024u)

enum seg_block_kind {
    SEG_BLK_META = 1,
    SEG_BLK_DATA = 2,
    SEG_BLK_EXIT = 3,
    SEG_BLK_THREAD_END = 4,
    SEG_BLK_TRIGGER = 5,        /* version 4 */
};

/* A SEG_BLK_TRIGGER payload: strings NUL-padded (readers still end them
 * themselves); source and verdict are trigd.h's names. */
#define SEG_TRIG_NAME_MAX   16u
#define SEG_TRIG_REASON_MAX 256u
struct seg_trigger {
    uint64_t t_ns;
    uint64_t win_t0_ns, win_t1_ns;  /* its kept window when it fired; 0, 0: none */
    uint32_t pid;
    uint32_t reserved;
    char source[SEG_TRIG_NAME_MAX];
    char verdict[SEG_TRIG_NAME_MAX];
    char reason[SEG_TRIG_REASON_MAX];
};
_Static_assert(sizeof(struct seg_trigger) % 8 == 0, "block payloads are 8-byte multiples");

/* A kept window's segment (flags SEG_F_KEPT): the flight recorder
 * (--retain triggered) cut it out of the segment source_segment, keeping the
 * records of [t0_ns, t1_ns], the window of the trigger at trig_ns from
 * trig_pid (ntrig triggers merged into it; reason the first one's, cut to
 * SEG_KEEP_REASON_MAX - 1 bytes, NUL-padded: readers still end it themselves). Zero in every other segment (these bytes were reserved). */
#define SEG_KEEP_REASON_MAX 48u
struct seg_keep {
    uint64_t trig_ns;
    uint64_t t0_ns, t1_ns;      /* inclusive */
    uint32_t trig_pid;
    uint32_t ntrig;
    uint64_t source_segment;
    char reason[SEG_KEEP_REASON_MAX];
};
_Static_assert(sizeof(struct seg_keep) == 88, "seg_keep fills the header's reserved bytes");

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
    struct seg_keep keep;       /* SEG_F_KEPT; else zero */
};

/* seg_block_hdr.flags */
#define SEG_BF_PACKED    1u     /* DATA payload packed (collector/store/pack.h) */

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
/* EXEC: the program called execve(2): the pid lives on in another program,
 * the image the agent ran in ended (code -1). Readers before it refused the
 * value as a malformed exit block. */
enum seg_exit_reason { SEG_EXIT_CLEAN = 1, SEG_EXIT_CRASHED = 2, SEG_EXIT_UNKNOWN = 3,
                       SEG_EXIT_EXEC = 4 };
#define SEG_EXIT_LAST SEG_EXIT_EXEC     /* the highest reason a reader accepts */

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
    uint32_t hdr_flags;         /* seg_file_hdr.flags (SEG_F_SALVAGED, SEG_F_KEPT) */
    struct seg_keep keep;       /* seg_file_hdr.keep (SEG_F_KEPT) */
    uint64_t sealed_ns;         /* CLOCK_MONOTONIC at seal (from mtime for seg_salvage_summarize) */
};

/*
 * Details of the format and the API:
 *
 * File names: a sealed segment is <dir>/<pid>-<start_time>-<segment_id>.d9seg
 * (decimal numbers, see seg_file_name); while written it is
 * <dir>/.tmp.<that name>. seg_footer.magic is SEG_FOOTER_MAGIC; the footer
 * crc32c chains crc32c_update over each block's crc32c (4 bytes LE) in file
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
 */
#define SEG_FOOTER_MAGIC "D9FOOTER"
#define SEG_TMP_PREFIX   ".tmp."
#define SEG_F_SALVAGED   1u             /* seg_file_hdr.flags: rebuilt by seg_salvage */
#define SEG_F_KEPT       2u             /* seg_file_hdr.flags: a kept window (struct seg_keep) */
#define SEG_WRITE_BUF    (1u << 20)     /* writer buffer, flushed with write(2) */
#define SEG_WRITEBACK_STEP (1u << 20)   /* start writeback after every this many bytes flushed */
#define SEG_META_IDS_MAX 65536u         /* reader keeps metadata ids 1..this per kind */
#define SEG_BLOCK_HDR_SIZE ((uint32_t)sizeof(struct seg_block_hdr))

/* "<pid>-<start_time>-<segment_id>.d9seg" into out; -ENAMETOOLONG if cap is short. */
int seg_file_name(char *out, size_t cap, uint32_t pid, uint64_t start_time, uint64_t segment_id);
/* Parse a sealed segment's base name (no directory); -EINVAL if it is not one. */
int seg_parse_file_name(const char *name, uint32_t *pid, uint64_t *start_time,
                        uint64_t *segment_id);

/* Running totals of blocks that become a footer and a summary. Writer,
 * reader and salvage all sum blocks with seg_acc_add, so a footer written by
 * one is the footer the reader expects. counts: records per type of a DATA
 * block (NULL for none). */
struct seg_acc {
    uint32_t nblocks;
    uint32_t crc;               /* chain of block crcs */
    uint64_t nrecords, lost, t_min, t_max, data_bytes;
    uint64_t counts[D9_REC_TYPE_COUNT];
    int have_time;
};
void seg_acc_add(struct seg_acc *a, const struct seg_block_hdr *h,
                 const uint64_t counts[D9_REC_TYPE_COUNT]);
void seg_acc_footer(const struct seg_acc *a, struct seg_footer *f);
/* The index row of a block whose header is h at offset. */
void seg_block_info_set(struct seg_block_info *bi, const struct seg_block_hdr *h, uint64_t offset);

/* Durable-write helpers of the writer and salvage: 0 or -errno. */
uint64_t seg_realtime_ns(void);         /* CLOCK_REALTIME in ns */
struct iovec;
int seg_pwritev_all(int fd, struct iovec *iov, int n, uint64_t off);
int seg_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
int seg_fsync_dir(int dirfd);           /* EINVAL / EROFS count as done */
/* rename within dirfd without replacing an existing file (link+unlink on
 * file systems without RENAME_NOREPLACE). */
int seg_rename_noreplace(int dirfd, const char *from, const char *to);

#endif /* D9_COL_SEG_H */
