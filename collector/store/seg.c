/*
 * seg.c — what the segment writer, reader and salvage share: file
 * names, the running totals that become a footer (and must match it on
 * read), block index rows, and the durable-write helpers. The format itself
 * is described in seg.h.
 *
 * Called by: seg_writer.c, seg_reader.c, seg_salvage.c; the daemon and
 * fsck for file names.
 *
 * Invariant: seg_acc_add is the one definition of how blocks add up to a
 * footer; the writer and salvage build footers with it and the reader
 * verifies footers with it, so the three cannot disagree.
 *
 * Must never: replace an existing file (seg_rename_noreplace), or accept a
 * file name that is not exactly <pid>-<start_time>-<segment_id>.d9seg.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "collector/store/crc32c.h"
#include "collector/store/seg.h"

_Static_assert(sizeof(struct seg_exit) % 8 == 0, "seg exit");
_Static_assert(SEG_HDR_SIZE % 8 == 0 && SEG_FOOTER_SIZE % 8 == 0, "alignment");

/* ---- footer accumulation ------------------------------------------------- */


void seg_acc_add(struct seg_acc *a, const struct seg_block_hdr *h,
                    const uint64_t counts[D9_REC_TYPE_COUNT])
{
    a->nblocks++;
    a->crc = crc32c_update(a->crc, &h->crc32c, sizeof h->crc32c);
    a->data_bytes += SEG_BLOCK_HDR_SIZE + (uint64_t)h->len;
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

void seg_acc_footer(const struct seg_acc *a, struct seg_footer *f)
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

void seg_block_info_set(struct seg_block_info *bi, const struct seg_block_hdr *h, uint64_t offset)
{
    bi->offset = offset;
    bi->len = SEG_BLOCK_HDR_SIZE + h->len;
    bi->kind = h->kind;
    bi->tid = h->tid;
    bi->ring = h->ring;
    bi->generation = h->generation;
    bi->nrec = h->nrec;
    bi->t_first = h->t_first;
    bi->t_last = h->t_last;
    bi->lost = h->lost;
}

/* ---- durable writes ------------------------------------------------------ */

uint64_t seg_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}


/* Complete pwrite of an iovec at off: 0 or -errno. */
int seg_pwritev_all(int fd, struct iovec *iov, int n, uint64_t off)
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

int seg_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
    return len ? seg_pwritev_all(fd, &iov, 1, off) : 0;
}

int seg_fsync_dir(int dirfd)
{
    if (fsync(dirfd) < 0 && errno != EINVAL && errno != EROFS)
        return -errno;
    return 0;
}

/* rename without replacing an existing file; falls back to link+unlink on
 * file systems without RENAME_NOREPLACE. */
int seg_rename_noreplace(int dirfd, const char *from, const char *to)
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

/* ---- file names ---------------------------------------------------------- */

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

