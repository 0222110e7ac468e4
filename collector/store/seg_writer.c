/*
 * seg_writer.c — writes one segment file (d9collectd's drain, tests and
 * benchmarks). Format and API contract: seg.h, seg_writer.h.
 *
 * Blocks are staged in a SEG_WRITE_BUF buffer and written with pwrite(2) at
 * the offset where the file's whole blocks end ("flushed"), so the writer
 * always knows exactly which bytes are on disk. Invariant between calls:
 * file[0, flushed) holds the header and whole blocks only, and file + buffer
 * is a valid unsealed segment. A failed write truncates the file back to
 * `flushed` and keeps the buffer, so a failed call leaves no partial block
 * behind (ENOSPC is survivable). Every SEG_WRITEBACK_STEP flushed bytes,
 * writeback of them is started (sync_file_range, no wait), so the seal's
 * fsync waits for the last few MiB, not for the whole segment: the drain
 * loop stalls in that fsync while the rings fill (measured in
 * tests/bench/README.md).
 * Sealing appends the footer, fsyncs, renames without replacing and fsyncs
 * the directory; a failed seal takes the footer back off and leaves the
 * unsealed segment for the caller to retry, drop (seg_writer_free) or keep
 * for salvage (seg_writer_abandon).
 *
 * Live rollups (seg_writer_rollup_*, optional): every block appended is fed
 * to a struct rollup as it is appended (META entries and unpacked DATA
 * records by the writer itself; a packed block's records by its caller,
 * run by run, between reserve and commit), so the seal's rollups need no
 * read-back of the file. Invariant: while the rollups are live, what was fed
 * is exactly the blocks appended, in order; anything that could break it (a
 * reservation dropped or failed after records were fed for it, a commit
 * whose raw bytes or thread differ from what was fed, a feed that failed)
 * turns them off for the segment ("interrupted"), and the caller computes
 * them from the sealed file instead (rollup_file: the same bytes). With a
 * pipe (ru_pipe.h) every feed goes to the pipe's thread instead of being
 * computed here; the rules and the bytes are the same.
 *
 * Must never: leave a partial block in the file, or overwrite an existing
 * segment (rename is RENAME_NOREPLACE).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "collector/store/crc32c.h"
#include "collector/store/pack.h"
#include "collector/store/rollup.h"
#include "collector/store/ru_pipe.h"
#include "collector/store/seg_writer.h"
#include "shm/clock.h"
#include "shm/record.h"

static void copy_str(char *dst, size_t cap, const char *src)
{
    memset(dst, 0, cap);
    if (src) {
        size_t n = strnlen(src, cap - 1);
        memcpy(dst, src, n);
    }
}

struct seg_writer {
    int fd, dirfd;
    int err;                    /* sticky: the writer may only be freed */
    int sealed;
    uint8_t *buf;
    size_t buf_len;
    uint64_t flushed;           /* file[0, flushed) = header + whole blocks */
    uint64_t wb_started;        /* writeback started for file[0, wb_started) */
    size_t resv_at, resv_len;   /* open seg_writer_data_reserve: buf offset, bytes (0 = none) */
    struct seg_acc acc;
    struct seg_block_info *blocks;
    uint32_t nblocks, cap_blocks;
    uint32_t nindexed;          /* blocks[0, nindexed) are index rows already */
    uint64_t opened_ns;
    struct seg_file_hdr hdr;
    char name[256];             /* final base name */
    char tmp_name[256];
    char path[PATH_MAX];        /* current path (tmp, then final) */
    char final_path[sizeof(((struct seg_summary *)0)->path)];
    struct seg_summary sum;
    struct rollup *ru;          /* live rollups fed here (NULL: off, interrupted or piped) */
    struct ru_pipe *pipe;       /* or fed through this pipe ... */
    struct ru_stream *rs;       /* ... as this stream (NULL: off or interrupted) */
    int ru_state;               /* SEG_RU_* */
    size_t ru_fed;              /* raw record bytes fed for the open reservation */
    uint32_t ru_ring, ru_gen;   /* their thread */
};

enum { SEG_RU_OFF = 0, SEG_RU_LIVE = 1, SEG_RU_INTERRUPTED = 2 };

/* The live rollups end unfinished (here, or on the pipe's thread). */
static void ru_end(struct seg_writer *w)
{
    if (w->rs)
        ru_pipe_drop(w->pipe, w->rs);
    w->rs = NULL;
    rollup_free(w->ru);
    w->ru = NULL;
}

/* Live rollups cannot be trusted any more: off for this segment. */
static void ru_interrupt(struct seg_writer *w)
{
    if (w->ru_state == SEG_RU_LIVE) {
        ru_end(w);
        w->ru_state = SEG_RU_INTERRUPTED;
    }
}

static int ru_meta(struct seg_writer *w, const uint8_t *entries, size_t len)
{
    return w->rs ? ru_pipe_meta(w->pipe, w->rs, entries, len)
                 : rollup_feed_meta(w->ru, entries, len);
}

static int ru_records(struct seg_writer *w, uint32_t ring, uint32_t generation,
                      const uint8_t *records, size_t len)
{
    return w->rs ? ru_pipe_records(w->pipe, w->rs, ring, generation, records, len)
                 : rollup_feed_records(w->ru, ring, generation, records, len);
}

/* The open reservation ends without a commit: records fed for it are in
 * no block. */
static void resv_end(struct seg_writer *w)
{
    w->resv_len = 0;
    if (w->ru_fed) {
        w->ru_fed = 0;
        ru_interrupt(w);
    }
}

/* A block just appended, fed by the writer itself (META, unpacked DATA). */
static void ru_feed_block(struct seg_writer *w, const struct seg_block_hdr *h,
                          const void *payload)
{
    if (w->ru_state != SEG_RU_LIVE || !h->len)
        return;
    int e = 0;
    if (h->kind == SEG_BLK_META)
        e = ru_meta(w, payload, h->len);
    else if (h->kind == SEG_BLK_DATA)
        e = ru_records(w, h->ring, h->generation, payload, h->len);
    if (e < 0)
        ru_interrupt(w);
}

/* Write the buffer at `flushed`. On failure the file is cut back to
 * `flushed` and the buffer kept: nothing partial remains. */
static int w_flush(struct seg_writer *w)
{
    if (w->err)
        return w->err;
    resv_end(w);                /* an open reservation does not survive a flush */
    if (w->buf_len == 0)
        return 0;
    int r = seg_pwrite_all(w->fd, w->buf, w->buf_len, w->flushed);
    if (r < 0) {
        if (ftruncate(w->fd, (off_t)w->flushed) < 0)
            w->err = r;         /* cannot restore: give up on this segment */
        return r;
    }
    w->flushed += w->buf_len;
    w->buf_len = 0;
    if (w->flushed > w->wb_started && w->flushed - w->wb_started >= SEG_WRITEBACK_STEP) {
        /* a hint: a file system without it (or an error) leaves the work to
         * the seal's fsync, which reports any write error */
        (void)sync_file_range(w->fd, (off_t)w->wb_started, (off_t)(w->flushed - w->wb_started),
                              SYNC_FILE_RANGE_WRITE);
        w->wb_started = w->flushed;
    }
    return 0;
}

static int w_reserve_blocks(struct seg_writer *w, uint32_t more)
{
    if (w->nblocks + (uint64_t)more <= w->cap_blocks)
        return 0;
    uint64_t cap = w->cap_blocks ? w->cap_blocks : 64;
    while (cap < w->nblocks + (uint64_t)more)
        cap *= 2;
    if (cap > UINT32_MAX)
        return -EOVERFLOW;
    struct seg_block_info *nb = realloc(w->blocks, (size_t)cap * sizeof *nb);
    if (!nb)
        return -ENOMEM;
    w->blocks = nb;
    w->cap_blocks = (uint32_t)cap;
    return 0;
}

/* Append one block; all-or-nothing (see the file comment). */
static int w_put_block(struct seg_writer *w, struct seg_block_hdr *h, const void *payload,
                       const uint64_t counts[D9_REC_TYPE_COUNT])
{
    static const uint64_t no_counts[D9_REC_TYPE_COUNT];
    if (w->err)
        return w->err;
    if (w->sealed)
        return -EINVAL;
    resv_end(w);                /* nor another block */
    h->magic = SEG_BLOCK_MAGIC;
    h->flags = 0;
    h->crc32c = crc32c_update(0, payload, h->len);
    int r = w_reserve_blocks(w, 1);
    if (r < 0)
        return r;
    size_t total = SEG_BLOCK_HDR_SIZE + (size_t)h->len;
    if (total > SEG_WRITE_BUF - w->buf_len && (r = w_flush(w)) < 0)
        return r;
    uint64_t offset = w->flushed + w->buf_len;
    if (total <= SEG_WRITE_BUF) {
        memcpy(w->buf + w->buf_len, h, SEG_BLOCK_HDR_SIZE);
        if (h->len)
            memcpy(w->buf + w->buf_len + SEG_BLOCK_HDR_SIZE, payload, h->len);
        w->buf_len += total;
    } else {
        /* larger than the buffer (which is empty now): straight to the file */
        struct iovec iov[2] = {
            { .iov_base = h, .iov_len = SEG_BLOCK_HDR_SIZE },
            { .iov_base = (void *)payload, .iov_len = h->len },
        };
        r = seg_pwritev_all(w->fd, iov, 2, w->flushed);
        if (r < 0) {
            if (ftruncate(w->fd, (off_t)w->flushed) < 0)
                w->err = r;
            return r;
        }
        w->flushed += total;
    }
    seg_block_info_set(&w->blocks[w->nblocks++], h, offset);
    seg_acc_add(&w->acc, h, counts ? counts : no_counts);
    ru_feed_block(w, h, payload);
    return 0;
}

/* Validate meta entries in [0, len) and return how many bytes of whole
 * entries starting at 0 fit in max bytes (*n = their count). */
static int meta_chunk(const uint8_t *p, size_t len, size_t max, size_t *used, uint32_t *n)
{
    size_t off = 0, last = 0;
    uint32_t cnt = 0;
    struct shm_meta_entry e;
    for (;;) {
        int r = shm_meta_next(p, len, &off, &e);
        if (r < 0)
            return -EINVAL;
        if (r == 0 || off > max)
            break;
        last = off;
        cnt++;
    }
    *used = last;
    *n = cnt;
    return 0;
}

int seg_writer_add_meta(struct seg_writer *w, const uint8_t *entries, size_t len)
{
    if (!w || (len && !entries) || len % 8 != 0)
        return -EINVAL;
    /* validate everything first so that bad input writes nothing */
    size_t off = 0;
    struct shm_meta_entry e;
    int r;
    while ((r = shm_meta_next(entries, len, &off, &e)) == 1)
        ;
    if (r < 0)
        return -EINVAL;
    int multi = len > SEG_BLOCK_MAX;
    while (len > 0) {
        size_t used;
        uint32_t n;
        if ((r = meta_chunk(entries, len, SEG_BLOCK_MAX, &used, &n)) < 0)
            return r;
        struct seg_block_hdr h = { .kind = SEG_BLK_META, .len = (uint32_t)used, .nrec = n };
        if ((r = w_put_block(w, &h, entries, NULL)) < 0) {
            if (multi)
                w->err = r;
            return r;
        }
        entries += used;
        len -= used;
    }
    return 0;
}

/* Validate the records in [off, len) that fit one block and gather its
 * stats into h/counts. Returns where the block ends, or -EINVAL. */
static long data_chunk(const uint8_t *records, size_t len, size_t off, struct seg_block_hdr *h,
                       uint64_t counts[D9_REC_TYPE_COUNT])
{
    size_t start = off;
    while (off < len) {
        int n = shm_record_check(records + off, len - off);
        if (n < 0)
            return -EINVAL;
        if (off + (size_t)n - start > SEG_BLOCK_MAX)
            break;
        struct d9_rec_hdr rh;
        memcpy(&rh, records + off, sizeof rh);
        if (h->nrec == 0 || rh.ts < h->t_first)
            h->t_first = rh.ts;
        if (h->nrec == 0 || rh.ts > h->t_last)
            h->t_last = rh.ts;
        h->nrec++;
        counts[rh.type]++;
        off += (size_t)n;
    }
    h->len = (uint32_t)(off - start);
    return (long)off;
}

int seg_writer_add_data(struct seg_writer *w, uint32_t tid, uint32_t ring, uint32_t generation,
                        uint64_t lost, const uint8_t *records, size_t len)
{
    if (!w || (len && !records) || len % D9_REC_ALIGN != 0 || len > LONG_MAX)
        return -EINVAL;
    if (len == 0 && lost == 0)
        return 0;
    int multi = len > SEG_BLOCK_MAX;
    if (multi) {
        /* everything must be valid before anything is written */
        for (long off = 0; (size_t)off < len;) {
            struct seg_block_hdr h = { 0 };
            uint64_t counts[D9_REC_TYPE_COUNT] = { 0 };
            if ((off = data_chunk(records, len, (size_t)off, &h, counts)) < 0)
                return -EINVAL;
        }
    }
    size_t off = 0;
    do {
        struct seg_block_hdr h = { .kind = SEG_BLK_DATA, .tid = tid, .ring = ring,
                                   .generation = generation, .lost = lost };
        uint64_t counts[D9_REC_TYPE_COUNT] = { 0 };
        size_t start = off;
        long end = data_chunk(records, len, off, &h, counts);
        if (end < 0)
            return -EINVAL;     /* single block: nothing written yet */
        off = (size_t)end;
        int r = w_put_block(w, &h, len ? records + start : NULL, counts);
        if (r < 0) {
            if (multi && start > 0)
                w->err = r;
            return r;
        }
        lost = 0;
    } while (off < len);
    return 0;
}

int seg_writer_data_reserve(struct seg_writer *w, size_t max, uint8_t **payload)
{
    if (!w || !payload || max == 0 || max % D9_REC_ALIGN != 0 ||
        max > SEG_WRITE_BUF - SEG_BLOCK_HDR_SIZE || max > SEG_BLOCK_MAX)
        return -EINVAL;
    *payload = NULL;
    if (w->err)
        return w->err;
    if (w->sealed)
        return -EINVAL;
    int r;
    resv_end(w);                /* a reservation left open is dropped */
    if (SEG_BLOCK_HDR_SIZE + max > SEG_WRITE_BUF - w->buf_len && (r = w_flush(w)) < 0)
        return r;
    w->resv_at = w->buf_len;
    w->resv_len = max;
    *payload = w->buf + w->buf_len + SEG_BLOCK_HDR_SIZE;
    return 0;
}

int seg_writer_data_commit(struct seg_writer *w, uint32_t tid, uint32_t ring,
                           uint32_t generation, uint64_t lost, size_t len,
                           const struct seg_data_stats *st, uint32_t crc, uint16_t flags)
{
    if (!w)
        return -EINVAL;
    /* what was fed for this reservation must be this block's records */
    size_t fed = w->ru_fed;
    w->ru_fed = 0;
    if (w->ru_state == SEG_RU_LIVE && w->resv_len && len <= w->resv_len) {
        long raw = (long)len;
        if (flags & SEG_BF_PACKED)
            raw = len ? pack_raw_len(w->buf + w->resv_at + SEG_BLOCK_HDR_SIZE, len) : -1;
        if (raw < 0 || (size_t)raw != fed || (fed && (ring != w->ru_ring || generation != w->ru_gen)))
            ru_interrupt(w);
    } else if (fed) {
        ru_interrupt(w);
    }
    if (!st || w->resv_len == 0 || w->resv_at != w->buf_len || len > w->resv_len ||
        len % D9_REC_ALIGN != 0 || (len == 0) != (st->nrec == 0) ||
        (flags & ~SEG_BF_PACKED) != 0 || (flags && len == 0)) {
        if (fed)
            ru_interrupt(w);
        return -EINVAL;
    }
    w->resv_len = 0;
    if (len == 0 && lost == 0)
        return 0;
    int r = w->err ? w->err : w_reserve_blocks(w, 1);
    if (r < 0) {
        if (fed)
            ru_interrupt(w);
        return r;
    }
    struct seg_block_hdr h = { .magic = SEG_BLOCK_MAGIC, .kind = SEG_BLK_DATA, .tid = tid,
                               .ring = ring, .generation = generation, .lost = lost,
                               .len = (uint32_t)len, .crc32c = crc, .nrec = st->nrec,
                               .t_first = st->t_min, .t_last = st->t_max, .flags = flags };
    uint64_t offset = w->flushed + w->buf_len;
    memcpy(w->buf + w->buf_len, &h, SEG_BLOCK_HDR_SIZE);
    w->buf_len += SEG_BLOCK_HDR_SIZE + len;
    seg_block_info_set(&w->blocks[w->nblocks++], &h, offset);
    seg_acc_add(&w->acc, &h, st->counts);
    return 0;
}

int seg_writer_add_thread_end(struct seg_writer *w, uint32_t tid, uint32_t ring,
                              uint32_t generation, uint64_t t_ns)
{
    if (!w)
        return -EINVAL;
    struct seg_block_hdr h = { .kind = SEG_BLK_THREAD_END, .tid = tid, .ring = ring,
                               .generation = generation, .t_first = t_ns, .t_last = t_ns };
    return w_put_block(w, &h, NULL, NULL);
}

int seg_writer_add_exit(struct seg_writer *w, const struct seg_exit *e)
{
    if (!w || !e || e->reason < SEG_EXIT_CLEAN || e->reason > SEG_EXIT_LAST)
        return -EINVAL;
    struct seg_exit copy = *e;
    struct seg_block_hdr h = { .kind = SEG_BLK_EXIT, .len = sizeof copy,
                               .t_first = e->t_ns, .t_last = e->t_ns };
    return w_put_block(w, &h, &copy, NULL);
}

int seg_writer_add_trigger(struct seg_writer *w, const struct seg_trigger *t)
{
    if (!w || !t || t->win_t0_ns > t->win_t1_ns)
        return -EINVAL;
    struct seg_trigger copy = *t;
    copy.reserved = 0;
    struct seg_block_hdr h = { .kind = SEG_BLK_TRIGGER, .len = sizeof copy, .tid = t->pid,
                               .t_first = t->t_ns, .t_last = t->t_ns };
    return w_put_block(w, &h, &copy, NULL);
}

uint64_t seg_writer_bytes(const struct seg_writer *w)
{
    return w ? w->flushed + w->buf_len : 0;
}

uint64_t seg_writer_opened_ns(const struct seg_writer *w)
{
    return w ? w->opened_ns : 0;
}

uint64_t seg_writer_id(const struct seg_writer *w)
{
    return w ? w->hdr.segment_id : 0;
}

uint32_t seg_writer_unindexed(const struct seg_writer *w, const struct seg_block_info **first)
{
    if (!w || w->sealed || w->nindexed >= w->nblocks) {
        *first = NULL;
        return 0;
    }
    *first = w->blocks + w->nindexed;
    return w->nblocks - w->nindexed;
}

uint32_t seg_writer_indexed(const struct seg_writer *w)
{
    return w ? w->nindexed : 0;
}

void seg_writer_mark_indexed(struct seg_writer *w, uint32_t n)
{
    if (w && n <= w->nblocks - w->nindexed)
        w->nindexed += n;
}

const char *seg_writer_path(const struct seg_writer *w)
{
    return w ? w->path : NULL;
}

int seg_writer_flush(struct seg_writer *w)
{
    if (!w || w->sealed)
        return -EINVAL;
    return w_flush(w);
}

static int join_path(char *out, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int seg_writer_open(struct seg_writer **out, const char *dir, uint64_t segment_id,
                    const struct seg_proc_info *proc, const uint8_t *meta, size_t meta_len)
{
    if (!out || !dir || !proc || (meta_len && !meta) || meta_len % 8 != 0)
        return -EINVAL;
    *out = NULL;
    struct seg_writer *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    w->fd = w->dirfd = -1;
    int r = seg_file_name(w->name, sizeof w->name, proc->pid, proc->start_time, segment_id);
    if (r == 0) {
        int n = snprintf(w->tmp_name, sizeof w->tmp_name, "%s%s", SEG_TMP_PREFIX, w->name);
        r = n < 0 || (size_t)n >= sizeof w->tmp_name ? -ENAMETOOLONG : 0;
    }
    if (r == 0)
        r = join_path(w->final_path, sizeof w->final_path, dir, w->name);
    if (r == 0)
        r = join_path(w->path, sizeof w->path, dir, w->tmp_name);
    if (r < 0)
        goto fail;
    if (!(w->buf = malloc(SEG_WRITE_BUF))) {
        r = -ENOMEM;
        goto fail;
    }
    w->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (w->dirfd < 0) {
        r = -errno;
        goto fail;
    }
    /* the final name must be free too, or the seal would fail after all the work */
    struct stat st;
    if (fstatat(w->dirfd, w->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        r = -EEXIST;
        goto fail;
    }
    w->fd = openat(w->dirfd, w->tmp_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
    if (w->fd < 0) {
        r = -errno;
        goto fail;
    }

    struct seg_file_hdr *h = &w->hdr;
    memcpy(h->magic, SEG_MAGIC, sizeof h->magic);
    h->version = SEG_VERSION;
    h->hdr_size = SEG_HDR_SIZE;
    h->segment_id = segment_id;
    h->pid = proc->pid;
    h->uid = proc->uid;
    h->start_time = proc->start_time;
    w->opened_ns = shm_mono_ns();
    h->created_ns = w->opened_ns;
    h->created_realtime_ns = seg_realtime_ns();
    h->clock_source = proc->clock_source;
    h->ns_per_tick = proc->ns_per_tick;
    h->cal_tsc0 = proc->cal_tsc0;
    h->cal_ns0 = proc->cal_ns0;
    copy_str(h->host, sizeof h->host, proc->host);
    copy_str(h->comm, sizeof h->comm, proc->comm);
    copy_str(h->exe, sizeof h->exe, proc->exe);
    if (proc->keep) {
        h->flags |= SEG_F_KEPT;
        h->keep = *proc->keep;
        h->keep.reason[SEG_KEEP_REASON_MAX - 1] = 0;
    }
    memcpy(w->buf, h, SEG_HDR_SIZE);
    w->buf_len = SEG_HDR_SIZE;

    if ((r = seg_writer_add_meta(w, meta, meta_len)) < 0 || (r = w_flush(w)) < 0)
        goto fail;
    *out = w;
    return 0;
fail:
    seg_writer_free(w);
    return r;
}

/* Undo a footer that may have reached the file: back to whole blocks. */
static void w_unfooter(struct seg_writer *w, uint64_t blocks_end)
{
    if (ftruncate(w->fd, (off_t)blocks_end) < 0 && !w->err)
        w->err = -EIO;
    w->flushed = blocks_end;
}

int seg_writer_seal(struct seg_writer *w, struct seg_summary *sum)
{
    if (!w || w->sealed)
        return -EINVAL;
    if (w->err)
        return w->err;
    resv_end(w);
    struct seg_footer f;
    seg_acc_footer(&w->acc, &f);
    int r = 0;
    if (SEG_FOOTER_SIZE > SEG_WRITE_BUF - w->buf_len && (r = w_flush(w)) < 0)
        return r;                       /* nothing changed */
    uint64_t blocks_end = w->flushed + w->buf_len;
    memcpy(w->buf + w->buf_len, &f, SEG_FOOTER_SIZE);
    w->buf_len += SEG_FOOTER_SIZE;
    if ((r = w_flush(w)) < 0) {
        w->buf_len -= SEG_FOOTER_SIZE;  /* file cut back, blocks still buffered */
        return r;
    }
    if (fsync(w->fd) < 0) {
        /* the kernel may have dropped dirty pages: nothing on disk can be
         * trusted any more, but keep what is there for salvage */
        r = -errno;
        w_unfooter(w, blocks_end);
        w->err = r;
        return r;
    }
    if ((r = seg_rename_noreplace(w->dirfd, w->tmp_name, w->name)) < 0) {
        w_unfooter(w, blocks_end);
        return r;
    }
    snprintf(w->path, sizeof w->path, "%s", w->final_path);
    close(w->fd);
    w->fd = -1;
    if ((r = seg_fsync_dir(w->dirfd)) < 0) {
        /* sealed and complete under its final name, only the rename may not
         * be durable: keep it (a restart or d9 fsck indexes it) */
        w->sealed = -1;
        w->err = r;
        return r;
    }
    w->sealed = 1;
    struct seg_summary *s = &w->sum;
    memset(s, 0, sizeof *s);
    s->segment_id = w->hdr.segment_id;
    snprintf(s->path, sizeof s->path, "%s", w->final_path);
    s->pid = w->hdr.pid;
    s->uid = w->hdr.uid;
    s->start_time = w->hdr.start_time;
    s->bytes = w->flushed;
    s->nrecords = f.nrecords;
    s->lost = f.lost;
    s->t_min = f.t_min;
    s->t_max = f.t_max;
    memcpy(s->counts, f.counts, sizeof s->counts);
    s->blocks = w->blocks;
    s->nblocks = w->nblocks;
    s->nblocks_indexed = w->nindexed;
    s->hdr_flags = w->hdr.flags;
    s->keep = w->hdr.keep;
    s->sealed_ns = shm_mono_ns();
    if (sum)
        *sum = *s;
    return 0;
}

static void w_release(struct seg_writer *w, int keep_file)
{
    if (w->fd >= 0) {
        close(w->fd);
        if (!keep_file && w->sealed == 0 && w->dirfd >= 0)
            unlinkat(w->dirfd, w->tmp_name, 0);
    }
    if (w->dirfd >= 0)
        close(w->dirfd);
    free(w->buf);
    free(w->blocks);
    ru_end(w);
    free(w);
}

int seg_writer_rollup_start(struct seg_writer *w, struct ru_pipe *pipe)
{
    if (!w || w->sealed || w->ru_state != SEG_RU_OFF)
        return -EINVAL;
    for (uint32_t i = 0; i < w->nblocks; i++)
        if (w->blocks[i].kind != SEG_BLK_META)
            return -EBUSY;          /* records appended already: not fed */
    int r = pipe ? ru_pipe_open(pipe, &w->rs) : rollup_new(&w->ru);
    if (r < 0)
        return r;
    w->pipe = pipe;
    w->ru_state = SEG_RU_LIVE;
    /* the META blocks written so far (the open's): read back (the file is
     * opened O_RDWR for this), they are few */
    uint8_t *tmp = NULL;
    for (uint32_t i = 0; i < w->nblocks && r == 0; i++) {
        const struct seg_block_info *b = &w->blocks[i];
        size_t plen = b->len - SEG_BLOCK_HDR_SIZE;
        uint64_t at = b->offset + SEG_BLOCK_HDR_SIZE;
        const uint8_t *payload;
        if (at >= w->flushed) {
            payload = w->buf + (at - w->flushed);
        } else {
            uint8_t *t = realloc(tmp, plen ? plen : 1);
            if (!t) {
                r = -ENOMEM;
                break;
            }
            tmp = t;
            ssize_t n = pread(w->fd, tmp, plen, (off_t)at);
            if (n != (ssize_t)plen) {
                r = n < 0 ? -errno : -EIO;
                break;
            }
            payload = tmp;
        }
        r = ru_meta(w, payload, plen);
    }
    free(tmp);
    if (r < 0) {
        ru_end(w);
        w->ru_state = SEG_RU_OFF;
    }
    return r;
}

int seg_writer_rollup_feed(struct seg_writer *w, uint32_t ring, uint32_t generation,
                           const uint8_t *records, size_t len)
{
    if (!w)
        return -EINVAL;
    if (w->ru_state != SEG_RU_LIVE)
        return 0;
    if (w->resv_len == 0 || (w->ru_fed && (ring != w->ru_ring || generation != w->ru_gen))) {
        ru_interrupt(w);
        return -EINVAL;
    }
    int e = ru_records(w, ring, generation, records, len);
    if (e < 0) {
        ru_interrupt(w);
        return e;
    }
    w->ru_ring = ring;
    w->ru_gen = generation;
    w->ru_fed += len;
    return 0;
}

int seg_writer_rollup_live(const struct seg_writer *w)
{
    return w && w->ru_state == SEG_RU_LIVE;
}

uint8_t *seg_writer_rollup_slot(struct seg_writer *w)
{
    return w && w->ru_state == SEG_RU_LIVE && w->rs && w->resv_len ? ru_pipe_slot(w->pipe) : NULL;
}

int seg_writer_rollup_finish(struct seg_writer *w, uint8_t **out, size_t *len)
{
    if (!w || !out || !len)
        return -EINVAL;
    if (w->ru_state != SEG_RU_LIVE)
        return w->ru_state == SEG_RU_OFF ? -ENODATA : -ESTALE;
    if (w->sealed != 1)
        return -EINVAL;
    int e;
    if (w->rs) {
        e = ru_pipe_finish(w->pipe, w->rs, out, len);
        w->rs = NULL;
    } else {
        e = rollup_finish(w->ru, out, len);
        rollup_free(w->ru);
        w->ru = NULL;
    }
    w->ru_state = SEG_RU_OFF;
    return e;
}

void seg_writer_free(struct seg_writer *w)
{
    if (w)
        w_release(w, 0);
}

void seg_writer_abandon(struct seg_writer *w)
{
    if (!w)
        return;
    if (w->fd >= 0 && !w->err)
        (void)w_flush(w);               /* best effort: more for seg_salvage */
    w_release(w, 1);
}

