/*
 * seg_salvage.c — recovery of segment files whose index rows are missing:
 * seg_salvage seals the temp file a crashed collector left behind (whole
 * valid blocks kept, the rest cut off, a new footer appended, marked
 * SEG_F_SALVAGED); seg_salvage_summarize rebuilds the summary of a sealed
 * file so it can be indexed again. API: seg_salvage.h.
 *
 * Called by: d9collectd at start-up (collector/daemon/store.c), d9 fsck
 * (fsck.c), fuzz_salvage.
 *
 * Invariant: a salvaged file is a valid sealed segment (its footer is built
 * with seg_acc_footer from the same walk that the reader verifies).
 *
 * Must never: modify anything on error except cutting garbage past the last
 * good block, or replace an existing final name (RENAME_NOREPLACE).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collector/store/seg_reader.h"
#include "collector/store/seg_salvage.h"
#include "shm/clock.h"

void seg_salvage_release(struct seg_summary *sum)
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
    uint64_t now_rt = seg_realtime_ns(), now_mono = shm_mono_ns();
    uint64_t age = now_rt > mt ? now_rt - mt : 0;
    return now_mono > age ? now_mono - age : 0;
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
    if (h->flags & SEG_F_KEPT) {    /* untrusted: the reason is ended here */
        sum->keep = h->keep;
        sum->keep.reason[SEG_KEEP_REASON_MAX - 1] = 0;
    }
}

int seg_salvage_summarize(const char *path, struct seg_summary *sum)
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
    e = seg_reader_scan(r, sum, &acc, &end, &nonmeta);
    struct stat st;
    if (e == 0)
        e = seg_reader_fstat(r, &st);
    if (e == 0) {
        fill_summary(sum, seg_reader_header(r), &acc, seg_reader_size(r));
        snprintf(sum->path, sizeof sum->path, "%s", path);
        sum->sealed_ns = mtime_to_mono(&st);
    }
    seg_reader_close(r);
    if (e < 0)
        seg_salvage_release(sum);
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
    int e = seg_reader_open(&r, tmp_path, SEG_OPEN_PARTIAL | SEG_OPEN_NO_FOOTER);
    if (e < 0)
        return e;
    struct seg_acc acc;
    uint64_t good_end;
    uint32_t nonmeta;
    int dirfd = -1, fd = -1;
    e = seg_reader_scan(r, sum, &acc, &good_end, &nonmeta);
    if (e == 0 && nonmeta == 0)
        e = -ENODATA;
    struct seg_file_hdr hdr = *seg_reader_header(r);
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
    seg_acc_footer(&acc, &f);
    hdr.flags |= SEG_F_SALVAGED;
    if (ftruncate(fd, (off_t)good_end) < 0)
        e = -errno;
    if (e == 0)
        e = seg_pwrite_all(fd, &f, sizeof f, good_end);
    if (e == 0)
        e = seg_pwrite_all(fd, &hdr.flags, sizeof hdr.flags, offsetof(struct seg_file_hdr, flags));
    if (e == 0 && fsync(fd) < 0)
        e = -errno;
    if (e < 0) {
        if (ftruncate(fd, (off_t)good_end) == 0)    /* drop our footer again */
            (void)fsync(fd);
        goto out;
    }
    if ((e = seg_rename_noreplace(dirfd, base, final_name)) < 0 || (e = seg_fsync_dir(dirfd)) < 0)
        goto out;
    fill_summary(sum, &hdr, &acc, good_end + SEG_FOOTER_SIZE);
    sum->sealed_ns = shm_mono_ns();
out:
    if (fd >= 0)
        close(fd);
    if (dirfd >= 0)
        close(dirfd);
    if (e < 0)
        seg_salvage_release(sum);
    return e;
}
