/*
 * segment.c — segment files: writer (d9collectd), reader (d9collectd, d9,
 * fsck, fuzzers) and crash salvage. Format and API contract: segment.h.
 *
 * Writer. Blocks are staged in a SEG_WRITE_BUF buffer and written with
 * pwrite(2) at the offset where the file's whole blocks end ("flushed"), so
 * the writer always knows exactly which bytes are on disk. Invariant between
 * calls: file[0, flushed) holds the header and whole blocks only, and
 * file + buffer is a valid unsealed segment. A failed write truncates the
 * file back to `flushed` and keeps the buffer, so a failed call leaves no
 * partial block behind (ENOSPC is survivable). Every SEG_WRITEBACK_STEP
 * flushed bytes, writeback of them is started (sync_file_range, no wait), so
 * the seal's fsync waits for the last few MiB, not for the whole segment:
 * the drain loop stalls in that fsync while the rings fill (a 64 MiB
 * segment's fsync took 50 ms on the development VM's ext4, a 1 MiB ring
 * fills in 4 ms at 8 M events/s). Sealing appends the footer,
 * fsyncs, renames without replacing and fsyncs the directory; a failed seal
 * takes the footer back off and leaves the unsealed segment for the caller
 * to retry, drop (seg_writer_free) or keep for salvage (seg_writer_abandon).
 *
 * Reader. The file is untrusted: everything is read with pread(2) into
 * private buffers (never mmap: the file may be truncated underneath), every
 * length is checked against the bytes that remain before it is used, and
 * no allocation is larger than the file, except the unpacked records of a
 * packed DATA block (at most SEG_BLOCK_MAX, and at most D9_REC_MAX per
 * record its header counts). Metadata tables are bounded by
 * SEG_META_IDS_MAX per kind.
 *
 * Must never: read outside a buffer, trust a length, allocate from an
 * unchecked length field, leave a partial block in a writer's file, or
 * overwrite an existing segment (rename is RENAME_NOREPLACE).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "collector/store/crc32c.h"
#include "collector/store/pack.h"
#include "collector/store/segment.h"
#include "shm/clock.h"
#include "shm/record.h"

#define BLK_HDR_SIZE ((uint32_t)sizeof(struct seg_block_hdr))
#define OPEN_IGNORE_FOOTER 0x100u       /* internal: salvage rebuilds the footer */

_Static_assert(sizeof(struct seg_exit) % 8 == 0, "seg exit");
_Static_assert(SEG_HDR_SIZE % 8 == 0 && SEG_FOOTER_SIZE % 8 == 0, "alignment");

/* ---- shared: footer accumulation --------------------------------------- */

/* Running totals that become the footer and the summary. */
struct seg_acc {
    uint32_t nblocks;
    uint32_t crc;               /* chain of block crcs */
    uint64_t nrecords, lost, t_min, t_max, data_bytes;
    uint64_t counts[D9_REC_TYPE_COUNT];
    int have_time;
};

static void acc_add(struct seg_acc *a, const struct seg_block_hdr *h,
                    const uint64_t counts[D9_REC_TYPE_COUNT])
{
    a->nblocks++;
    a->crc = seg_crc32c(a->crc, &h->crc32c, sizeof h->crc32c);
    a->data_bytes += BLK_HDR_SIZE + (uint64_t)h->len;
    a->lost += h->lost;
    if (h->kind == SEG_BLK_DATA) {
        a->nrecords += h->nrec;
        for (int t = 0; t < D9_REC_TYPE_COUNT; t++)
            a->counts[t] += counts[t];
    }
    if (h->kind != SEG_BLK_META && (h->kind != SEG_BLK_DATA || h->nrec > 0)) {
        if (!a->have_time || h->t_first < a->t_min)
            a->t_min = h->t_first;
        if (!a->have_time || h->t_last > a->t_max)
            a->t_max = h->t_last;
        a->have_time = 1;
    }
}

static void acc_footer(const struct seg_acc *a, struct seg_footer *f)
{
    memset(f, 0, sizeof *f);
    memcpy(f->magic, SEG_FOOTER_MAGIC, sizeof f->magic);
    memcpy(f->end_magic, SEG_END_MAGIC, sizeof f->end_magic);
    f->nblocks = a->nblocks;
    f->crc32c = a->crc;
    f->nrecords = a->nrecords;
    f->t_min = a->t_min;
    f->t_max = a->t_max;
    f->lost = a->lost;
    memcpy(f->counts, a->counts, sizeof f->counts);
    f->data_bytes = a->data_bytes;
}

static void block_info(struct seg_block_info *bi, const struct seg_block_hdr *h, uint64_t offset)
{
    bi->offset = offset;
    bi->len = BLK_HDR_SIZE + h->len;
    bi->kind = h->kind;
    bi->tid = h->tid;
    bi->ring = h->ring;
    bi->generation = h->generation;
    bi->nrec = h->nrec;
    bi->t_first = h->t_first;
    bi->t_last = h->t_last;
    bi->lost = h->lost;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    memset(dst, 0, cap);
    if (src) {
        size_t n = strnlen(src, cap - 1);
        memcpy(dst, src, n);
    }
}

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Complete pwrite of an iovec at off: 0 or -errno. */
static int pwritev_all(int fd, struct iovec *iov, int n, uint64_t off)
{
    while (n > 0) {
        ssize_t w = pwritev(fd, iov, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (w == 0)
            return -EIO;
        off += (uint64_t)w;
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
    return len ? pwritev_all(fd, &iov, 1, off) : 0;
}

static int fsync_dir(int dirfd)
{
    if (fsync(dirfd) < 0 && errno != EINVAL && errno != EROFS)
        return -errno;
    return 0;
}

/* rename without replacing an existing file; falls back to link+unlink on
 * file systems without RENAME_NOREPLACE. */
static int rename_noreplace(int dirfd, const char *from, const char *to)
{
    if (renameat2(dirfd, from, dirfd, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -errno;
    if (linkat(dirfd, from, dirfd, to, 0) < 0)
        return -errno;
    if (unlinkat(dirfd, from, 0) < 0) {
        int e = -errno;
        unlinkat(dirfd, to, 0);
        return e;
    }
    return 0;
}

int seg_file_name(char *out, size_t cap, uint32_t pid, uint64_t start_time, uint64_t segment_id)
{
    int n = snprintf(out, cap, "%" PRIu32 "-%" PRIu64 "-%" PRIu64 "%s", pid, start_time,
                     segment_id, SEG_FILE_SUFFIX);
    if (n < 0 || (size_t)n >= cap)
        return -ENAMETOOLONG;
    return 0;
}

/* Strict decimal: digits only, no sign, no leading junk, fits 64 bits. */
static const char *parse_u64(const char *s, uint64_t *v)
{
    uint64_t x = 0;
    const char *p = s;
    while (*p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');
        if (x > (UINT64_MAX - d) / 10)
            return NULL;
        x = x * 10 + d;
        p++;
    }
    if (p == s || p - s > 20)
        return NULL;
    *v = x;
    return p;
}

int seg_parse_file_name(const char *name, uint32_t *pid, uint64_t *start_time,
                        uint64_t *segment_id)
{
    uint64_t a, b, c;
    const char *p = parse_u64(name, &a);
    if (!p || *p++ != '-' || !(p = parse_u64(p, &b)) || *p++ != '-' ||
        !(p = parse_u64(p, &c)) || strcmp(p, SEG_FILE_SUFFIX) != 0 || a > UINT32_MAX)
        return -EINVAL;
    if (pid)
        *pid = (uint32_t)a;
    if (start_time)
        *start_time = b;
    if (segment_id)
        *segment_id = c;
    return 0;
}

/* ---- writer --------------------------------------------------------------- */

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
};

/* Write the buffer at `flushed`. On failure the file is cut back to
 * `flushed` and the buffer kept: nothing partial remains. */
static int w_flush(struct seg_writer *w)
{
    if (w->err)
        return w->err;
    w->resv_len = 0;            /* an open reservation does not survive a flush */
    if (w->buf_len == 0)
        return 0;
    int r = pwrite_all(w->fd, w->buf, w->buf_len, w->flushed);
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
    w->resv_len = 0;            /* nor another block */
    h->magic = SEG_BLOCK_MAGIC;
    h->flags = 0;
    h->crc32c = seg_crc32c(0, payload, h->len);
    int r = w_reserve_blocks(w, 1);
    if (r < 0)
        return r;
    size_t total = BLK_HDR_SIZE + (size_t)h->len;
    if (total > SEG_WRITE_BUF - w->buf_len && (r = w_flush(w)) < 0)
        return r;
    uint64_t offset = w->flushed + w->buf_len;
    if (total <= SEG_WRITE_BUF) {
        memcpy(w->buf + w->buf_len, h, BLK_HDR_SIZE);
        if (h->len)
            memcpy(w->buf + w->buf_len + BLK_HDR_SIZE, payload, h->len);
        w->buf_len += total;
    } else {
        /* larger than the buffer (which is empty now): straight to the file */
        struct iovec iov[2] = {
            { .iov_base = h, .iov_len = BLK_HDR_SIZE },
            { .iov_base = (void *)payload, .iov_len = h->len },
        };
        r = pwritev_all(w->fd, iov, 2, w->flushed);
        if (r < 0) {
            if (ftruncate(w->fd, (off_t)w->flushed) < 0)
                w->err = r;
            return r;
        }
        w->flushed += total;
    }
    block_info(&w->blocks[w->nblocks++], h, offset);
    acc_add(&w->acc, h, counts ? counts : no_counts);
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
        max > SEG_WRITE_BUF - BLK_HDR_SIZE || max > SEG_BLOCK_MAX)
        return -EINVAL;
    *payload = NULL;
    if (w->err)
        return w->err;
    if (w->sealed)
        return -EINVAL;
    int r;
    if (BLK_HDR_SIZE + max > SEG_WRITE_BUF - w->buf_len && (r = w_flush(w)) < 0)
        return r;
    w->resv_at = w->buf_len;
    w->resv_len = max;
    *payload = w->buf + w->buf_len + BLK_HDR_SIZE;
    return 0;
}

int seg_writer_data_commit(struct seg_writer *w, uint32_t tid, uint32_t ring,
                           uint32_t generation, uint64_t lost, size_t len,
                           const struct seg_data_stats *st, uint32_t crc, uint16_t flags)
{
    if (!w || !st || w->resv_len == 0 || w->resv_at != w->buf_len || len > w->resv_len ||
        len % D9_REC_ALIGN != 0 || (len == 0) != (st->nrec == 0) ||
        (flags & ~SEG_BF_PACKED) != 0 || (flags && len == 0))
        return -EINVAL;
    w->resv_len = 0;
    if (len == 0 && lost == 0)
        return 0;
    if (w->err)
        return w->err;
    int r = w_reserve_blocks(w, 1);
    if (r < 0)
        return r;
    struct seg_block_hdr h = { .magic = SEG_BLOCK_MAGIC, .kind = SEG_BLK_DATA, .tid = tid,
                               .ring = ring, .generation = generation, .lost = lost,
                               .len = (uint32_t)len, .crc32c = crc, .nrec = st->nrec,
                               .t_first = st->t_min, .t_last = st->t_max, .flags = flags };
    uint64_t offset = w->flushed + w->buf_len;
    memcpy(w->buf + w->buf_len, &h, BLK_HDR_SIZE);
    w->buf_len += BLK_HDR_SIZE + len;
    block_info(&w->blocks[w->nblocks++], &h, offset);
    acc_add(&w->acc, &h, st->counts);
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
    if (!w || !e || e->reason < SEG_EXIT_CLEAN || e->reason > SEG_EXIT_UNKNOWN)
        return -EINVAL;
    struct seg_exit copy = *e;
    struct seg_block_hdr h = { .kind = SEG_BLK_EXIT, .len = sizeof copy,
                               .t_first = e->t_ns, .t_last = e->t_ns };
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
    w->fd = openat(w->dirfd, w->tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
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
    h->created_realtime_ns = realtime_ns();
    h->clock_source = proc->clock_source;
    h->ns_per_tick = proc->ns_per_tick;
    h->cal_tsc0 = proc->cal_tsc0;
    h->cal_ns0 = proc->cal_ns0;
    copy_str(h->host, sizeof h->host, proc->host);
    copy_str(h->comm, sizeof h->comm, proc->comm);
    copy_str(h->exe, sizeof h->exe, proc->exe);
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
    struct seg_footer f;
    acc_footer(&w->acc, &f);
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
    if ((r = rename_noreplace(w->dirfd, w->tmp_name, w->name)) < 0) {
        w_unfooter(w, blocks_end);
        return r;
    }
    snprintf(w->path, sizeof w->path, "%s", w->final_path);
    close(w->fd);
    w->fd = -1;
    if ((r = fsync_dir(w->dirfd)) < 0) {
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
    free(w);
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

/* ---- reader --------------------------------------------------------------- */

struct meta_item {
    struct shm_meta_entry e;    /* pointers into raw */
    uint8_t raw[];
};

struct meta_kind {
    struct meta_item **by_id;   /* index = id, [0, cap) */
    uint32_t cap;
};

struct seg_reader {
    int fd;                     /* -1 for memory readers */
    const uint8_t *mem;         /* private copy for memory readers */
    uint64_t size;              /* bytes of the file at open */
    uint64_t data_end;          /* where blocks end (footer or size) */
    uint64_t pos;
    unsigned flags;
    int have_footer;
    int stopped;                /* partial: a bad block ended the file */
    struct seg_file_hdr hdr;
    struct seg_footer footer;
    uint8_t *buf;               /* payload buffer */
    size_t buf_cap;
    uint8_t *dec;               /* a packed DATA block's records, unpacked */
    size_t dec_cap;
    /* sequential verification against the footer */
    int sequential;
    struct seg_acc acc;
    struct meta_kind meta[D9_META_SCHEMA + 1];
    uint32_t meta_dropped;
    char err[200];
    int has_err;
};

static int r_fail(struct seg_reader *r, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int r_fail(struct seg_reader *r, uint64_t off, const char *fmt, ...)
{
    int n = snprintf(r->err, sizeof r->err, "offset %" PRIu64 ": ", off);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof r->err)
        vsnprintf(r->err + n, sizeof r->err - (size_t)n, fmt, ap);
    va_end(ap);
    r->has_err = 1;
    return -EBADMSG;
}

/* Read exactly len bytes at off (off + len <= size was checked by the
 * caller); a file that shrank underneath is corrupt, not a crash. */
static int r_read(struct seg_reader *r, uint64_t off, void *dst, size_t len)
{
    if (off > r->size || len > r->size - off)
        return r_fail(r, off, "read of %zu bytes past the end of the file", len);
    if (r->mem) {
        memcpy(dst, r->mem + off, len);
        return 0;
    }
    uint8_t *p = dst;
    while (len > 0) {
        ssize_t n = pread(r->fd, p, len, (off_t)off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int e = -errno;
            snprintf(r->err, sizeof r->err, "offset %" PRIu64 ": read: %s", off, strerror(-e));
            r->has_err = 1;
            return e;
        }
        if (n == 0)
            return r_fail(r, off, "file truncated while reading");
        p += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

/* Make *buf (of *cap bytes) hold at least len bytes; its contents are not kept. */
static int r_grow(uint8_t **buf, size_t *cap, size_t len)
{
    if (*buf && len <= *cap)
        return 0;
    size_t c = *cap ? *cap : 4096;
    while (c < len)
        c *= 2;
    free(*buf);
    *cap = 0;
    if (!(*buf = malloc(c)))
        return -ENOMEM;
    *cap = c;
    return 0;
}

static int r_reserve(struct seg_reader *r, size_t len)
{
    return r_grow(&r->buf, &r->buf_cap, len);
}

static int check_header(struct seg_reader *r)
{
    if (r->size < SEG_HDR_SIZE)
        return r_fail(r, 0, "file of %" PRIu64 " bytes is shorter than a segment header",
                      r->size);
    int e = r_read(r, 0, &r->hdr, sizeof r->hdr);
    if (e < 0)
        return e;
    if (memcmp(r->hdr.magic, SEG_MAGIC, sizeof r->hdr.magic) != 0)
        return r_fail(r, 0, "not a d9 segment (bad magic)");
    if (r->hdr.version < SEG_VERSION_MIN || r->hdr.version > SEG_VERSION) {
        r_fail(r, 0, "segment format version %" PRIu32 " (this d9 reads %u..%u)",
               r->hdr.version, SEG_VERSION_MIN, SEG_VERSION);
        return r->hdr.version > SEG_VERSION ? -ENOTSUP : -EBADMSG;
    }
    if (r->hdr.hdr_size != SEG_HDR_SIZE)
        return r_fail(r, 0, "header size %" PRIu32 " (expected %u)", r->hdr.hdr_size,
                      SEG_HDR_SIZE);
    /* strings are handed to callers: make sure they end */
    r->hdr.host[sizeof r->hdr.host - 1] = 0;
    r->hdr.comm[sizeof r->hdr.comm - 1] = 0;
    r->hdr.exe[sizeof r->hdr.exe - 1] = 0;
    return 0;
}

static int check_footer(struct seg_reader *r)
{
    uint64_t off = r->size - SEG_FOOTER_SIZE;
    struct seg_footer *f = &r->footer;
    if (r->size < (uint64_t)SEG_HDR_SIZE + SEG_FOOTER_SIZE)
        return r_fail(r, r->size, "no room for a footer");
    int e = r_read(r, off, f, sizeof *f);
    if (e < 0)
        return e;
    if (memcmp(f->magic, SEG_FOOTER_MAGIC, sizeof f->magic) != 0 ||
        memcmp(f->end_magic, SEG_END_MAGIC, sizeof f->end_magic) != 0)
        return r_fail(r, off, "no footer (unsealed or truncated segment)");
    uint64_t data = r->size - SEG_HDR_SIZE - SEG_FOOTER_SIZE;
    if (f->data_bytes != data)
        return r_fail(r, off, "footer says %" PRIu64 " data bytes, file has %" PRIu64,
                      f->data_bytes, data);
    if ((uint64_t)f->nblocks * BLK_HDR_SIZE > data)
        return r_fail(r, off, "footer block count %" PRIu32 " does not fit", f->nblocks);
    if (f->counts[D9_REC_PAD] != 0)
        return r_fail(r, off, "footer counts pad records");
    /* the fewest bytes a record takes: a header in ring framing, 2 packed */
    uint64_t most = data / (r->hdr.version >= 2 ? 2u : D9_REC_HDR_SIZE);
    uint64_t sum = 0;
    for (int t = 0; t < D9_REC_TYPE_COUNT; t++) {
        if (f->counts[t] > most)
            return r_fail(r, off, "footer count of type %d too large", t);
        sum += f->counts[t];
    }
    if (sum != f->nrecords || f->nrecords > most)
        return r_fail(r, off, "footer record total %" PRIu64 " inconsistent", f->nrecords);
    if (f->t_min > f->t_max)
        return r_fail(r, off, "footer time range reversed");
    return 0;
}

static int reader_init(struct seg_reader *r, unsigned flags, char *why, size_t why_cap)
{
    r->flags = flags;
    r->pos = SEG_HDR_SIZE;
    r->sequential = 1;
    int e = check_header(r);
    if (e == 0) {
        r->data_end = r->size;
        if (!(flags & OPEN_IGNORE_FOOTER)) {
            e = check_footer(r);
            if (e == 0) {
                r->have_footer = 1;
                r->data_end = r->size - SEG_FOOTER_SIZE;
            } else if (e == -EBADMSG && (flags & SEG_OPEN_PARTIAL)) {
                e = 0;
                r->has_err = 0;     /* a missing footer is what partial means */
            }
        }
    }
    if (e < 0 && why && why_cap)
        snprintf(why, why_cap, "%s", r->has_err ? r->err : strerror(-e));
    return e;
}

static int reader_new(struct seg_reader **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return -ENOMEM;
    (*out)->fd = -1;
    return 0;
}

int seg_reader_open_ex(struct seg_reader **out, const char *path, unsigned flags, char *why,
                       size_t why_cap)
{
    if (why && why_cap)
        why[0] = 0;
    if (!out || !path)
        return -EINVAL;
    struct seg_reader *r;
    int e = reader_new(&r);
    if (e < 0)
        return e;
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (r->fd < 0 || fstat(r->fd, &st) < 0) {
        e = -errno;
        if (why && why_cap)
            snprintf(why, why_cap, "%s", strerror(-e));
        seg_reader_close(r);
        return e;
    }
    if (!S_ISREG(st.st_mode)) {
        if (why && why_cap)
            snprintf(why, why_cap, "not a regular file");
        seg_reader_close(r);
        return -EINVAL;
    }
    r->size = (uint64_t)st.st_size;
    if ((e = reader_init(r, flags, why, why_cap)) < 0) {
        seg_reader_close(r);
        return e;
    }
    *out = r;
    return 0;
}

int seg_reader_open(struct seg_reader **out, const char *path, unsigned flags)
{
    return seg_reader_open_ex(out, path, flags, NULL, 0);
}

int seg_reader_open_mem(struct seg_reader **out, const uint8_t *buf, size_t len, unsigned flags)
{
    if (!out || (len && !buf))
        return -EINVAL;
    struct seg_reader *r;
    int e = reader_new(&r);
    if (e < 0)
        return e;
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy) {
        seg_reader_close(r);
        return -ENOMEM;
    }
    if (len)
        memcpy(copy, buf, len);
    r->mem = copy;
    r->size = len;
    if ((e = reader_init(r, flags, NULL, 0)) < 0) {
        seg_reader_close(r);
        return e;
    }
    *out = r;
    return 0;
}

void seg_reader_close(struct seg_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    free((void *)r->mem);
    free(r->buf);
    free(r->dec);
    for (size_t k = 0; k < sizeof r->meta / sizeof r->meta[0]; k++) {
        for (uint32_t i = 0; i < r->meta[k].cap; i++)
            free(r->meta[k].by_id[i]);
        free(r->meta[k].by_id);
    }
    free(r);
}

const struct seg_file_hdr *seg_reader_header(const struct seg_reader *r)
{
    return r ? &r->hdr : NULL;
}

const struct seg_footer *seg_reader_footer(const struct seg_reader *r)
{
    return r && r->have_footer ? &r->footer : NULL;
}

const char *seg_reader_error(const struct seg_reader *r)
{
    return r && r->has_err ? r->err : NULL;
}

uint64_t seg_reader_size(const struct seg_reader *r)
{
    return r ? r->size : 0;
}

uint32_t seg_reader_meta_dropped(const struct seg_reader *r)
{
    return r ? r->meta_dropped : 0;
}

/* Keep a copy of one validated entry (first definition of an id wins). */
static int meta_store(struct seg_reader *r, const uint8_t *entry, uint16_t len)
{
    struct d9_meta_hdr mh;
    memcpy(&mh, entry, sizeof mh);
    if (mh.kind < D9_META_RUNTIME || mh.kind > D9_META_SCHEMA || mh.id == 0 ||
        mh.id > SEG_META_IDS_MAX) {
        r->meta_dropped++;
        return 0;
    }
    struct meta_kind *k = &r->meta[mh.kind];
    if (mh.id < k->cap && k->by_id[mh.id])
        return 0;
    if (mh.id >= k->cap) {
        uint32_t cap = k->cap ? k->cap : 64;
        while (cap <= mh.id)
            cap *= 2;
        if (cap > SEG_META_IDS_MAX + 1)
            cap = SEG_META_IDS_MAX + 1;
        struct meta_item **nb = realloc(k->by_id, (size_t)cap * sizeof *nb);
        if (!nb)
            return -ENOMEM;
        memset(nb + k->cap, 0, (size_t)(cap - k->cap) * sizeof *nb);
        k->by_id = nb;
        k->cap = cap;
    }
    struct meta_item *it = malloc(sizeof *it + len);
    if (!it)
        return -ENOMEM;
    memcpy(it->raw, entry, len);
    size_t off = 0;
    if (shm_meta_next(it->raw, len, &off, &it->e) != 1) {   /* validated by the caller */
        free(it);
        return -EBADMSG;
    }
    k->by_id[mh.id] = it;
    return 0;
}

/* Validate a META payload (every entry, count == nrec) and, if store, keep it. */
static int check_meta_payload(struct seg_reader *r, const struct seg_block_hdr *h,
                              const uint8_t *p, uint64_t off, int store)
{
    size_t pos = 0;
    uint32_t n = 0;
    struct shm_meta_entry e;
    int rc;
    while ((rc = shm_meta_next(p, h->len, &pos, &e)) == 1)
        n++;
    if (rc < 0)
        return r_fail(r, off, "bad metadata entry at payload byte %zu", pos);
    if (n != h->nrec)
        return r_fail(r, off, "metadata block holds %" PRIu32 " entries, header says %" PRIu32,
                      n, h->nrec);
    if (!store)
        return 0;
    pos = 0;
    while (pos < h->len) {
        struct d9_meta_hdr mh;
        memcpy(&mh, p + pos, sizeof mh);
        if ((rc = meta_store(r, p + pos, mh.len)) < 0)
            return rc == -EBADMSG ? r_fail(r, off, "metadata entry re-decode failed") : rc;
        pos += mh.len;
    }
    return 0;
}

/* Validate the records of a DATA block (p[0, len), ring framing): records,
 * nrec, time range; fill counts. */
static int check_data_records(struct seg_reader *r, const struct seg_block_hdr *h,
                              const uint8_t *p, size_t plen, uint64_t off, uint64_t counts[])
{
    uint32_t n = 0;
    uint64_t tmin = 0, tmax = 0;
    for (size_t pos = 0; pos < plen;) {
        int len = shm_record_check(p + pos, plen - pos);
        if (len < 0)
            return r_fail(r, off, "bad record at payload byte %zu", pos);
        struct d9_rec_hdr rh;
        memcpy(&rh, p + pos, sizeof rh);
        if (n == 0 || rh.ts < tmin)
            tmin = rh.ts;
        if (n == 0 || rh.ts > tmax)
            tmax = rh.ts;
        counts[rh.type]++;
        n++;
        pos += (size_t)len;
    }
    if (n != h->nrec)
        return r_fail(r, off, "data block holds %" PRIu32 " records, header says %" PRIu32, n,
                      h->nrec);
    if (tmin != h->t_first || tmax != h->t_last)
        return r_fail(r, off, "data block time range disagrees with its records");
    return 0;
}

/* Point b->records at the DATA block's records: the payload itself, or
 * (packed) the payload unpacked into r->dec. The unpacked size is bounded by
 * SEG_BLOCK_MAX and by what nrec records can hold. */
static int data_records(struct seg_reader *r, struct seg_block *b, uint64_t off)
{
    if (!(b->h.flags & SEG_BF_PACKED)) {
        b->records = b->payload;
        b->records_len = b->h.len;
        return 0;
    }
    long raw = pack_raw_len(b->payload, b->h.len);
    if (raw < 0 || (uint64_t)raw > SEG_BLOCK_MAX || (uint64_t)raw > (uint64_t)b->h.nrec * D9_REC_MAX)
        return r_fail(r, off, "packed data block announces an impossible size");
    int e = r_grow(&r->dec, &r->dec_cap, (size_t)raw);
    if (e < 0)
        return e;
    long n = pack_unpack(b->payload, b->h.len, b->h.nrec, r->dec, r->dec_cap);
    if (n < 0)
        return r_fail(r, off, "packed data block does not unpack");
    b->records = r->dec;
    b->records_len = (uint32_t)n;
    return 0;
}

/* Check a block header read at off (bounds, magic, kind, fixed fields). */
static int check_block_hdr(struct seg_reader *r, const struct seg_block_hdr *h, uint64_t off)
{
    if (h->magic != SEG_BLOCK_MAGIC)
        return r_fail(r, off, "bad block magic 0x%08" PRIx32, h->magic);
    if (h->kind < SEG_BLK_META || h->kind > SEG_BLK_THREAD_END)
        return r_fail(r, off, "unknown block kind %u", h->kind);
    int packed = h->flags == SEG_BF_PACKED && h->kind == SEG_BLK_DATA && r->hdr.version >= 2;
    if (h->flags != 0 && !packed)
        return r_fail(r, off, "unknown block flags 0x%x", h->flags);
    if (h->len % 8 != 0 || h->len > SEG_BLOCK_MAX)
        return r_fail(r, off, "bad block length %" PRIu32, h->len);
    if (h->len > r->data_end - off - BLK_HDR_SIZE)
        return r_fail(r, off, "block of %" PRIu32 " bytes runs past the end of the data",
                      h->len);
    if (h->t_first > h->t_last)
        return r_fail(r, off, "block time range reversed");
    switch (h->kind) {
    case SEG_BLK_META:
        if (h->tid || h->ring || h->generation || h->t_first || h->t_last || h->lost)
            return r_fail(r, off, "metadata block with thread fields set");
        break;
    case SEG_BLK_DATA:
        /* a record is at least 16 bytes in ring framing, 2 (tag, control) packed */
        if (h->nrec > (packed ? (h->len > PACK_PREFIX ? (h->len - PACK_PREFIX) / 2 : 0)
                              : h->len / D9_REC_HDR_SIZE))
            return r_fail(r, off, "data block record count %" PRIu32 " too large", h->nrec);
        break;
    case SEG_BLK_EXIT:
        if (h->len != sizeof(struct seg_exit) || h->nrec != 0 || h->t_first != h->t_last)
            return r_fail(r, off, "malformed exit block");
        break;
    case SEG_BLK_THREAD_END:
        if (h->len != 0 || h->nrec != 0 || h->t_first != h->t_last)
            return r_fail(r, off, "malformed thread-end block");
        break;
    }
    return 0;
}

/* Bad data at off: -EBADMSG, or in partial mode the end of the file. */
static int r_bad(struct seg_reader *r, int e)
{
    if (e == -EBADMSG && (r->flags & SEG_OPEN_PARTIAL)) {
        r->stopped = 1;
        return 0;
    }
    return e;
}

/* Read and fully validate the block at r->pos. With want_payload == 0
 * only META payloads are read (seg_reader_load_meta). */
static int read_block(struct seg_reader *r, struct seg_block *b, int want_payload, int store_meta,
                      uint64_t counts[D9_REC_TYPE_COUNT])
{
    uint64_t off = r->pos;
    if (off % 8 != 0 || r->data_end - off < BLK_HDR_SIZE)
        return r_bad(r, r_fail(r, off, "%" PRIu64 " stray bytes after the last block",
                               r->data_end - off));
    int e = r_read(r, off, &b->h, sizeof b->h);
    if (e < 0)
        return r_bad(r, e);
    if ((e = check_block_hdr(r, &b->h, off)) < 0)
        return r_bad(r, e);
    b->offset = off;
    b->payload = NULL;
    b->records = NULL;
    b->records_len = 0;
    if (want_payload || b->h.kind == SEG_BLK_META) {
        if ((e = r_reserve(r, b->h.len ? b->h.len : 8)) < 0)
            return e;
        if ((e = r_read(r, off + BLK_HDR_SIZE, r->buf, b->h.len)) < 0)
            return r_bad(r, e);
        uint32_t crc = seg_crc32c(0, r->buf, b->h.len);
        if (crc != b->h.crc32c)
            return r_bad(r, r_fail(r, off, "block crc mismatch (stored 0x%08" PRIx32
                                   ", computed 0x%08" PRIx32 ")", b->h.crc32c, crc));
        b->payload = r->buf;
        if (b->h.kind == SEG_BLK_META)
            e = check_meta_payload(r, &b->h, r->buf, off, store_meta);
        else if (b->h.kind == SEG_BLK_DATA && (e = data_records(r, b, off)) == 0)
            e = check_data_records(r, &b->h, b->records, b->records_len, off, counts);
        else if (b->h.kind == SEG_BLK_EXIT) {
            struct seg_exit x;
            memcpy(&x, r->buf, sizeof x);
            if (x.reason < SEG_EXIT_CLEAN || x.reason > SEG_EXIT_UNKNOWN || x.t_ns != b->h.t_first)
                e = r_fail(r, off, "malformed exit record");
        }
        if (e < 0)
            return r_bad(r, e);
    }
    r->pos = off + BLK_HDR_SIZE + b->h.len;
    return 1;
}

/* End of the blocks: in a sequential read, the footer must match them. */
static int check_end(struct seg_reader *r)
{
    if (!r->have_footer || !r->sequential)
        return 0;
    r->sequential = 0;          /* check once */
    const struct seg_footer *f = &r->footer;
    const struct seg_acc *a = &r->acc;
    uint64_t off = r->data_end;
    if (a->nblocks != f->nblocks)
        return r_bad(r, r_fail(r, off, "footer counts %" PRIu32 " blocks, file has %" PRIu32,
                               f->nblocks, a->nblocks));
    if (a->crc != f->crc32c)
        return r_bad(r, r_fail(r, off, "footer crc chain mismatch"));
    if (a->nrecords != f->nrecords || a->lost != f->lost || a->t_min != f->t_min ||
        a->t_max != f->t_max || memcmp(a->counts, f->counts, sizeof a->counts) != 0)
        return r_bad(r, r_fail(r, off, "footer totals disagree with the blocks"));
    return 0;
}

int seg_reader_next(struct seg_reader *r, struct seg_block *b)
{
    if (!r || !b)
        return -EINVAL;
    if (r->stopped)
        return 0;
    if (r->pos >= r->data_end) {
        int e = check_end(r);
        return e < 0 ? e : 0;
    }
    uint64_t counts[D9_REC_TYPE_COUNT] = { 0 };
    int e = read_block(r, b, 1, 1, counts);
    if (e == 1 && r->sequential)
        acc_add(&r->acc, &b->h, counts);
    return e;
}

int seg_reader_seek(struct seg_reader *r, uint64_t offset)
{
    if (!r)
        return -EINVAL;
    if (offset < SEG_HDR_SIZE || offset >= r->data_end || offset % 8 != 0)
        return -EINVAL;
    r->pos = offset;
    r->stopped = 0;
    r->sequential = 0;
    return 0;
}

int seg_reader_load_meta(struct seg_reader *r)
{
    if (!r)
        return -EINVAL;
    uint64_t saved = r->pos;
    int saved_stopped = r->stopped;
    r->pos = SEG_HDR_SIZE;
    r->stopped = 0;
    int e = 0;
    while (r->pos < r->data_end) {
        struct seg_block b;
        uint64_t counts[D9_REC_TYPE_COUNT] = { 0 };
        if ((e = read_block(r, &b, 0, 1, counts)) <= 0)
            break;
        e = 0;
    }
    r->pos = saved;
    r->stopped = saved_stopped;
    return e < 0 ? e : 0;
}

int seg_block_next_record(const struct seg_block *b, size_t *off, const struct d9_rec_hdr **rec)
{
    if (!b || !off || !rec)
        return -EINVAL;
    if (b->h.kind != SEG_BLK_DATA || !b->records)
        return 0;
    if (*off >= b->records_len)
        return *off == b->records_len ? 0 : -EBADMSG;
    if (*off % D9_REC_ALIGN != 0)
        return -EBADMSG;
    int n = shm_record_check(b->records + *off, b->records_len - *off);
    if (n < 0)
        return -EBADMSG;
    *rec = (const struct d9_rec_hdr *)(const void *)(b->records + *off);
    *off += (size_t)n;
    return 1;
}

static const struct meta_item *meta_get(const struct seg_reader *r, uint16_t kind, uint32_t id)
{
    if (!r || id == 0 || id >= r->meta[kind].cap)
        return NULL;
    return r->meta[kind].by_id[id];
}

const char *seg_meta_runtime(const struct seg_reader *r, uint32_t id)
{
    const struct meta_item *it = meta_get(r, D9_META_RUNTIME, id);
    return it ? it->e.name : NULL;
}

const struct shm_meta_entry *seg_meta_location(const struct seg_reader *r, uint32_t id)
{
    const struct meta_item *it = meta_get(r, D9_META_LOCATION, id);
    return it ? &it->e : NULL;
}

const struct shm_meta_entry *seg_meta_schema(const struct seg_reader *r, uint32_t id)
{
    const struct meta_item *it = meta_get(r, D9_META_SCHEMA, id);
    return it ? &it->e : NULL;
}

/* ---- summaries and salvage ------------------------------------------------ */

void seg_summary_release(struct seg_summary *sum)
{
    if (!sum)
        return;
    free(sum->blocks);
    sum->blocks = NULL;
    sum->nblocks = 0;
}

static uint64_t mtime_to_mono(const struct stat *st)
{
    uint64_t mt = (uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec;
    uint64_t now_rt = realtime_ns(), now_mono = shm_mono_ns();
    uint64_t age = now_rt > mt ? now_rt - mt : 0;
    return now_mono > age ? now_mono - age : 0;
}

/* Walk every block of r (already opened) into sum; *good_end = end of the
 * last valid block. */
static int summarize_blocks(struct seg_reader *r, struct seg_summary *sum, struct seg_acc *acc,
                            uint64_t *good_end, uint32_t *n_nonmeta)
{
    uint32_t cap = 0;
    struct seg_block b;
    int e;
    *good_end = SEG_HDR_SIZE;
    *n_nonmeta = 0;
    for (;;) {
        uint64_t counts[D9_REC_TYPE_COUNT] = { 0 };
        if (r->pos >= r->data_end) {
            e = check_end(r);
            break;
        }
        if ((e = read_block(r, &b, 1, 0, counts)) <= 0)
            break;
        if (sum->nblocks == cap) {
            uint32_t ncap = cap ? cap * 2 : 64;
            struct seg_block_info *nb = realloc(sum->blocks, (size_t)ncap * sizeof *nb);
            if (!nb) {
                e = -ENOMEM;
                break;
            }
            sum->blocks = nb;
            cap = ncap;
        }
        block_info(&sum->blocks[sum->nblocks++], &b.h, b.offset);
        acc_add(&r->acc, &b.h, counts);
        if (b.h.kind != SEG_BLK_META)
            (*n_nonmeta)++;
        *good_end = r->pos;
    }
    *acc = r->acc;
    return e < 0 ? e : 0;
}

static void fill_summary(struct seg_summary *sum, const struct seg_file_hdr *h,
                         const struct seg_acc *a, uint64_t bytes)
{
    sum->segment_id = h->segment_id;
    sum->pid = h->pid;
    sum->uid = h->uid;
    sum->start_time = h->start_time;
    sum->bytes = bytes;
    sum->nrecords = a->nrecords;
    sum->lost = a->lost;
    sum->t_min = a->t_min;
    sum->t_max = a->t_max;
    memcpy(sum->counts, a->counts, sizeof sum->counts);
    sum->hdr_flags = h->flags;
}

int seg_summarize(const char *path, struct seg_summary *sum)
{
    if (!path || !sum)
        return -EINVAL;
    memset(sum, 0, sizeof *sum);
    if (strlen(path) >= sizeof sum->path)
        return -ENAMETOOLONG;
    struct seg_reader *r;
    int e = seg_reader_open(&r, path, 0);
    if (e < 0)
        return e;
    struct seg_acc acc;
    uint64_t end;
    uint32_t nonmeta;
    e = summarize_blocks(r, sum, &acc, &end, &nonmeta);
    struct stat st;
    if (e == 0 && fstat(r->fd, &st) < 0)
        e = -errno;
    if (e == 0) {
        fill_summary(sum, &r->hdr, &acc, r->size);
        snprintf(sum->path, sizeof sum->path, "%s", path);
        sum->sealed_ns = mtime_to_mono(&st);
    }
    seg_reader_close(r);
    if (e < 0)
        seg_summary_release(sum);
    return e;
}

int seg_salvage(const char *tmp_path, struct seg_summary *sum)
{
    if (!tmp_path || !sum)
        return -EINVAL;
    memset(sum, 0, sizeof *sum);
    const char *slash = strrchr(tmp_path, '/');
    const char *base = slash ? slash + 1 : tmp_path;
    size_t plen = strlen(SEG_TMP_PREFIX), blen = strlen(base);
    size_t slen = strlen(SEG_FILE_SUFFIX);
    if (blen <= plen + slen || strncmp(base, SEG_TMP_PREFIX, plen) != 0 ||
        strcmp(base + blen - slen, SEG_FILE_SUFFIX) != 0)
        return -EINVAL;
    char dir[PATH_MAX];
    size_t dlen = slash ? (size_t)(slash - tmp_path) : 0;
    if (dlen + 2 > sizeof dir)
        return -ENAMETOOLONG;
    if (slash) {
        memcpy(dir, tmp_path, dlen ? dlen : 1);   /* "/x" -> "/" */
        dir[dlen ? dlen : 1] = 0;
    } else {
        strcpy(dir, ".");
    }
    const char *final_name = base + plen;
    if (snprintf(sum->path, sizeof sum->path, "%.*s%s", (int)(base - tmp_path), tmp_path,
                 final_name) >= (int)sizeof sum->path)
        return -ENAMETOOLONG;

    struct seg_reader *r;
    int e = seg_reader_open(&r, tmp_path, SEG_OPEN_PARTIAL | OPEN_IGNORE_FOOTER);
    if (e < 0)
        return e;
    struct seg_acc acc;
    uint64_t good_end;
    uint32_t nonmeta;
    int dirfd = -1, fd = -1;
    e = summarize_blocks(r, sum, &acc, &good_end, &nonmeta);
    if (e == 0 && nonmeta == 0)
        e = -ENODATA;
    struct seg_file_hdr hdr = r->hdr;
    seg_reader_close(r);
    if (e < 0)
        goto out;

    dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        e = -errno;
        goto out;
    }
    struct stat st;
    if (fstatat(dirfd, final_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        e = -EEXIST;
        goto out;
    }
    fd = openat(dirfd, base, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        e = -errno;
        goto out;
    }
    struct seg_footer f;
    acc_footer(&acc, &f);
    hdr.flags |= SEG_F_SALVAGED;
    if (ftruncate(fd, (off_t)good_end) < 0)
        e = -errno;
    if (e == 0)
        e = pwrite_all(fd, &f, sizeof f, good_end);
    if (e == 0)
        e = pwrite_all(fd, &hdr.flags, sizeof hdr.flags, offsetof(struct seg_file_hdr, flags));
    if (e == 0 && fsync(fd) < 0)
        e = -errno;
    if (e < 0) {
        if (ftruncate(fd, (off_t)good_end) == 0)    /* drop our footer again */
            (void)fsync(fd);
        goto out;
    }
    if ((e = rename_noreplace(dirfd, base, final_name)) < 0 || (e = fsync_dir(dirfd)) < 0)
        goto out;
    fill_summary(sum, &hdr, &acc, good_end + SEG_FOOTER_SIZE);
    sum->sealed_ns = shm_mono_ns();
out:
    if (fd >= 0)
        close(fd);
    if (dirfd >= 0)
        close(dirfd);
    if (e < 0)
        seg_summary_release(sum);
    return e;
}
