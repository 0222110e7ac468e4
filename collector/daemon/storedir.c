/*
 * storedir.c — the daemon's store directory: index, recovery, sealing,
 * rotation and retention (see storedir.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collector/daemon/crashpt.h"
#include "collector/store/reindex.h"
#include "collector/store/rollup.h"
#include "collector/store/ru_pipe.h"
#include "collector/store/store_lock.h"
#include "collector/store/idx.h"
#include "collector/store/idx_read.h"
#include "collector/store/seg_reader.h"
#include "collector/store/seg_salvage.h"
#include "collector/daemon/storedir.h"
#include "shm/clock.h"

/* Create path's missing parents (parent_mode) and path itself (mode; the
 * umask cannot take its bits: it is chmod-ed once created). */
static int mkdir_p(const char *path, mode_t parent_mode, mode_t mode)
{
    char tmp[CONFIG_PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return -ENAMETOOLONG;
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/' || !p[1])
            continue;
        *p = 0;
        if (mkdir(tmp, parent_mode) != 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(tmp, mode & 0777) == 0)
        chmod(tmp, mode);
    else if (errno != EEXIST)
        return -errno;
    return 0;
}

/* Creating a file is the only reliable writability test (root, read-only mounts). */
static int probe_writable(const char *dir)
{
    char path[CONFIG_PATH_MAX];
    if (snprintf(path, sizeof path, "%s/.probe.%ld", dir, (long)getpid()) >= (int)sizeof path)
        return -ENAMETOOLONG;
    /* O_EXCL | O_NOFOLLOW: never truncate or remove a file that was there */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (write(fd, "d9", 2) != 2)
        rc = errno ? -errno : -EIO;
    close(fd);
    unlink(path);
    return rc;
}

static int refresh_totals(struct storedir *s)
{
    uint64_t b = 0;
    int rc = idx_total_bytes(s->idx, &b);
    if (rc == 0)
        s->indexed_bytes = b;
    return rc;
}

int storedir_open(struct storedir *s, const char *dir, uint64_t cap_bytes,
                  char *err, size_t errcap)
{
    memset(s, 0, sizeof *s);
    s->cap_bytes = cap_bytes;
    const char *ru = getenv(STOREDIR_ROLLUPS_ENV);
    s->rollups = !ru ? STOREDIR_RU_LIVE
                     : !strcmp(ru, "off") ? STOREDIR_RU_OFF
                     : !strcmp(ru, "readback") ? STOREDIR_RU_READBACK
                     : !strcmp(ru, "inline") ? STOREDIR_RU_INLINE : STOREDIR_RU_LIVE;
    int rc = mkdir_p(dir, STOREDIR_PARENT_MODE, STOREDIR_DIR_MODE);
    if (rc) {
        snprintf(err, errcap, "cannot create store directory %s: %s", dir, strerror(-rc));
        return rc;
    }
    if (!realpath(dir, s->dir)) {
        rc = -errno;
        snprintf(err, errcap, "cannot resolve store directory %s: %s", dir, strerror(-rc));
        return rc;
    }
    struct stat st;
    if (stat(s->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errcap, "store %s is not a directory", s->dir);
        return -ENOTDIR;
    }
    if ((rc = probe_writable(s->dir))) {
        snprintf(err, errcap, "store directory %s is not writable: %s", s->dir, strerror(-rc));
        return rc;
    }
    if (gethostname(s->host, sizeof s->host) != 0)
        snprintf(s->host, sizeof s->host, "unknown");
    s->host[sizeof s->host - 1] = 0;
    /* the silent variant: its reason (path, step, SQLite's message) becomes
     * our one error line instead of a second, vaguer one after its own */
    char why[CONFIG_PATH_MAX];
    if ((rc = idx_open_ex(&s->idx, s->dir, 0, why, sizeof why))) {
        if (why[0])
            snprintf(err, errcap, "cannot open index: %s", why);
        else
            snprintf(err, errcap, "cannot open index %s/%s: %s", s->dir, IDX_FILE_NAME,
                     strerror(-rc));
        s->idx = NULL;
        return rc;
    }
    if ((rc = idx_next_segment_id(s->idx, &s->next_segment_id)) || (rc = refresh_totals(s))) {
        if (idx_errmsg(s->idx))
            snprintf(err, errcap, "cannot read index: %s", idx_errmsg(s->idx));
        else
            snprintf(err, errcap, "cannot read index %s/%s: %s", s->dir, IDX_FILE_NAME,
                     strerror(-rc));
        idx_close(s->idx);
        s->idx = NULL;
        return rc;
    }
    if (s->next_segment_id == 0)
        s->next_segment_id = 1;
    return 0;
}

/* A file the store holds: index.sqlite[-wal|-shm], .lock, *.d9seg, .tmp.* */
static int is_store_file(const char *name)
{
    size_t n = strlen(name), il = strlen(IDX_FILE_NAME), sl = strlen(SEG_FILE_SUFFIX);
    if (strncmp(name, IDX_FILE_NAME, il) == 0)
        return !name[il] || !strcmp(name + il, "-wal") || !strcmp(name + il, "-shm");
    if (!strcmp(name, STORE_LOCK_FILE))
        return 1;
    if (!strncmp(name, SEG_TMP_PREFIX, strlen(SEG_TMP_PREFIX)))
        return 1;
    return name[0] != '.' && n > sl && !strcmp(name + n - sl, SEG_FILE_SUFFIX);
}

int storedir_secure(struct storedir *s, gid_t gid, char *err, size_t errcap)
{
    int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        int e = -errno;
        snprintf(err, errcap, "cannot open store directory %s: %s", s->dir, strerror(-e));
        return e;
    }
    struct stat st;
    if (fstat(dfd, &st) != 0 || st.st_uid != geteuid()) {
        col_warn("store %s is owned by uid %u, not by this collector (uid %u): its mode and "
                 "group are left as they are (0%o, gid %u)", s->dir, (unsigned)st.st_uid,
                 (unsigned)geteuid(), (unsigned)(st.st_mode & 07777), (unsigned)st.st_gid);
        close(dfd);
        return 0;
    }
    int rc = 0;
    /* the group first: a chown by a non-root owner clears the setgid bit */
    if ((st.st_gid != gid && fchown(dfd, (uid_t)-1, gid) != 0) ||
        ((st.st_mode & 07777) != STOREDIR_DIR_MODE && fchmod(dfd, STOREDIR_DIR_MODE) != 0)) {
        rc = -errno;
        snprintf(err, errcap, "cannot give store directory %s to group %u (mode 0%o): %s%s",
                 s->dir, (unsigned)gid, STOREDIR_DIR_MODE, strerror(-rc),
                 rc == -EPERM ? " (a collector not run as root may only use a group it is a "
                                "member of)" : "");
        close(dfd);
        return rc;
    }
    if ((st.st_mode & 07777) != STOREDIR_DIR_MODE || st.st_gid != gid)
        col_info("store %s: mode 0%o gid %u (was 0%o gid %u)", s->dir, STOREDIR_DIR_MODE,
                 (unsigned)gid, (unsigned)(st.st_mode & 07777), (unsigned)st.st_gid);
    int lfd = dup(dfd);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d) {
        rc = -errno;
        if (lfd >= 0)
            close(lfd);
        snprintf(err, errcap, "cannot list store %s: %s", s->dir, strerror(-rc));
        close(dfd);
        return rc;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat fs;
        if (!is_store_file(de->d_name) ||
            fstatat(dfd, de->d_name, &fs, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(fs.st_mode) ||
            fs.st_uid != geteuid())
            continue;       /* not ours: left alone */
        /* by name, never through a file descriptor: closing any descriptor
         * of a file drops every fcntl lock this process holds on it, SQLite's
         * on the index among them. The name cannot be swapped for a link
         * between the check and the change: the directory is ours and 2750
         * by now, nobody else may create or rename in it. */
        if ((fs.st_gid != gid &&
             fchownat(dfd, de->d_name, (uid_t)-1, gid, AT_SYMLINK_NOFOLLOW) != 0) ||
            ((fs.st_mode & 07777) != STOREDIR_FILE_MODE &&
             fchmodat(dfd, de->d_name, STOREDIR_FILE_MODE, 0) != 0))
            col_warn("store %s: cannot give %s to group %u (mode 0%o): %s", s->dir,
                     de->d_name, (unsigned)gid, STOREDIR_FILE_MODE, strerror(errno));
    }
    closedir(d);
    close(dfd);
    return 0;
}

void storedir_close(struct storedir *s)
{
    ru_pipe_free(s->ru_pipe);       /* every writer is gone: every stream ended */
    s->ru_pipe = NULL;
    if (s->idx)
        idx_close(s->idx);
    s->idx = NULL;
}

static int is_indexed(struct storedir *s, const char *relpath)
{
    int rc = idx_read_segment_has_path(s->idx, relpath);
    return rc < 0 ? -EIO : rc;
}

static uint64_t id_of(const char *name)
{
    uint32_t pid;
    uint64_t start, id;
    if (strncmp(name, SEG_TMP_PREFIX, strlen(SEG_TMP_PREFIX)) == 0)
        name += strlen(SEG_TMP_PREFIX);
    return seg_parse_file_name(name, &pid, &start, &id) == 0 ? id : 0;
}

/* Sealed segment files in the store without an index row (their seal's
 * index commit failed: a full disk, a locked or damaged index) get one,
 * from the file. Returns how many were indexed. */
static uint64_t reindex_sealed(struct storedir *s)
{
    DIR *d = opendir(s->dir);
    if (!d) {
        col_warn("cannot list store %s to re-index sealed segments: %s", s->dir,
                 strerror(errno));
        return 0;
    }
    struct dirent *de;
    uint64_t done = 0;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name), sl = strlen(SEG_FILE_SUFFIX);
        if (de->d_name[0] == '.' || n <= sl || strcmp(de->d_name + n - sl, SEG_FILE_SUFFIX))
            continue;
        if (!id_of(de->d_name) || is_indexed(s, de->d_name) != 0)
            continue;
        char path[CONFIG_PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", s->dir, de->d_name) >= (int)sizeof path)
            continue;
        struct seg_summary sum;
        memset(&sum, 0, sizeof sum);
        int rc = seg_salvage_summarize(path, &sum);
        if (rc) {
            col_warn("segment %s has no index row and cannot be read (%s); left for d9 fsck",
                     path, strerror(-rc));
            continue;
        }
        rc = reindex_summary(s->idx, s->dir, path, &sum);
        if (rc)
            col_warn("cannot re-index %s: %s", path, strerror(-rc));
        else
            done++;
        seg_salvage_release(&sum);
    }
    closedir(d);
    s->segments_reindexed += done;
    return done;
}

int storedir_recover(struct storedir *s)
{
    DIR *d = opendir(s->dir);
    if (!d) {
        col_err("cannot list store %s: %s", s->dir, strerror(errno));
        return -errno;
    }
    struct dirent *de;
    uint64_t max_id = 0;
    /* pass 0: block rows of segments a previous run never sealed (their
     * temp files are salvaged below and indexed again, whole) */
    uint64_t orphans = 0;
    int orc = idx_drop_orphan_blocks(s->idx, &orphans);
    if (orc)
        col_warn("store %s: cannot delete unsealed segments' block rows: %s", s->dir,
                 idx_errmsg(s->idx));
    else if (orphans)
        col_info("store %s: deleted %" PRIu64 " block rows of segments never sealed", s->dir,
                 orphans);
    /* pass 1: temp files left by a crash (salvage before anything is written) */
    while ((de = readdir(d))) {
        uint64_t id = id_of(de->d_name);
        if (id > max_id)
            max_id = id;
        if (strncmp(de->d_name, SEG_TMP_PREFIX, strlen(SEG_TMP_PREFIX)) != 0 || !id)
            continue;
        char path[CONFIG_PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", s->dir, de->d_name) >= (int)sizeof path)
            continue;
        struct stat lst;
        if (lstat(path, &lst) != 0 || !S_ISREG(lst.st_mode)) {
            col_warn("%s is not a regular file; not ours, left alone", path);
            continue;
        }
        struct seg_summary sum;
        memset(&sum, 0, sizeof sum);
        int rc = seg_salvage(path, &sum);
        if (rc == -ENODATA) {
            col_info("removing empty temp segment %s (no data blocks)", path);
            unlink(path);
            continue;
        }
        if (rc) {
            col_warn("cannot salvage temp segment %s: %s; left for d9 fsck", path,
                     strerror(-rc));
            continue;
        }
        rc = reindex_summary(s->idx, s->dir, sum.path, &sum);
        if (rc)
            col_warn("salvaged %s but cannot index it: %s", sum.path, strerror(-rc));
        else
            col_info("salvaged %s: %" PRIu64 " records from a crashed collector", sum.path,
                     sum.nrecords);
        s->segments_salvaged++;
        seg_salvage_release(&sum);
    }
    closedir(d);
    /* pass 2: sealed files without an index row */
    reindex_sealed(s);
    uint64_t next = 0;
    if (idx_next_segment_id(s->idx, &next) == 0 && next > s->next_segment_id)
        s->next_segment_id = next;
    if (max_id + 1 > s->next_segment_id)
        s->next_segment_id = max_id + 1;
    refresh_totals(s);
    if (s->segments_salvaged || s->segments_reindexed)
        col_info("store %s: salvaged %" PRIu64 ", re-indexed %" PRIu64 " segments", s->dir,
                 s->segments_salvaged, s->segments_reindexed);
    return storedir_enforce_cap(s);
}

int storedir_writer_open(struct storedir *s, const struct seg_proc_info *pi,
                         const uint8_t *meta, size_t meta_len, struct seg_writer **w)
{
    int rc = seg_writer_open(w, s->dir, s->next_segment_id, pi, meta, meta_len);
    if (rc == 0) {
        s->next_segment_id++;
        int ru = 0;
        if (s->rollups == STOREDIR_RU_LIVE && !s->ru_pipe && (ru = ru_pipe_new(&s->ru_pipe)))
            col_warn("store %s: no rollup thread (%s): the drain computes the rollups itself",
                     s->dir, strerror(-ru));
        if (s->rollups == STOREDIR_RU_LIVE || s->rollups == STOREDIR_RU_INLINE)
            ru = seg_writer_rollup_start(*w, s->rollups == STOREDIR_RU_LIVE ? s->ru_pipe : NULL);
        if (ru < 0)     /* the seal reads them back */
            col_debug("store %s: no live rollups for %s (%s)", s->dir, seg_writer_path(*w),
                      strerror(-ru));
    }
    else if (rc == -EEXIST)
        s->next_segment_id++;   /* a stray file holds that id: skip it next time */
    return rc;
}

int storedir_enforce_cap(struct storedir *s)
{
    while (s->indexed_bytes > s->cap_bytes) {
        uint64_t id;
        char rel[512];
        int unshipped = 0;
        int rc = -ENOENT;
        if (s->keep_unshipped)              /* shipped ones first: they are safe elsewhere */
            rc = idx_oldest_shipped_segment(s->idx, &id, rel, sizeof rel);
        if (rc == -ENOENT) {
            rc = idx_oldest_segment(s->idx, &id, rel, sizeof rel);
            unshipped = s->keep_unshipped;
        }
        if (rc == -ENOENT)
            break;
        if (rc) {
            col_log_limited(&s->err_rl, COL_LOG_WARN, "retention: cannot find the oldest "
                            "segment: %s", strerror(-rc));
            return rc;
        }
        /* rows first: d9 must never find a row whose file we removed */
        if ((rc = idx_segment_delete(s->idx, id))) {
            col_log_limited(&s->err_rl, COL_LOG_WARN, "retention: cannot delete segment %"
                            PRIu64 " from the index: %s", id, strerror(-rc));
            return rc;
        }
        char path[CONFIG_PATH_MAX];
        if (strchr(rel, '/') || rel[0] == '.') {
            col_warn("retention: index row %" PRIu64 " has an unexpected path '%s'; not "
                     "deleting it", id, rel);
        } else {
            if (snprintf(path, sizeof path, "%s/%s", s->dir, rel) < (int)sizeof path &&
                unlink(path) != 0 && errno != ENOENT)
                col_warn("retention: cannot remove %s: %s", path, strerror(errno));
        }
        s->segments_evicted++;
        if (unshipped) {
            s->evicted_unshipped++;
            col_log_limited(&s->err_rl, COL_LOG_WARN, "retention: store over its cap (--store-mb) "
                            "with nothing shipped left to delete: deleted segment %" PRIu64
                            " (%s) before it was shipped (%" PRIu64 " so far)", id, rel,
                            s->evicted_unshipped);
        }
        if ((rc = refresh_totals(s)))
            return rc;
        col_debug("retention: evicted segment %" PRIu64 " (%s); store now %" PRIu64 " bytes",
                  id, rel, s->indexed_bytes);
    }
    return 0;
}

int storedir_index_blocks(struct storedir *s, struct seg_writer *w, uint32_t min_rows)
{
    const struct seg_block_info *b;
    uint32_t n = seg_writer_unindexed(w, &b);
    if (n == 0 || n < min_rows)
        return 0;
    int rc = idx_blocks_add(s->idx, seg_writer_id(w), b, n);
    if (rc) {
        col_log_limited(&s->err_rl, COL_LOG_WARN, "store %s: cannot index %" PRIu32 " blocks of "
                        "%s now (%s): the seal will", s->dir, n, seg_writer_path(w),
                        idx_errmsg(s->idx));
        return rc;
    }
    seg_writer_mark_indexed(w, n);
    return 0;
}

int storedir_seal(struct storedir *s, struct seg_writer *w, int64_t process_id, uint32_t pid,
                  uint64_t records)
{
    struct seg_summary sum;
    memset(&sum, 0, sizeof sum);
    uint64_t now = shm_mono_ns();
    uint64_t id = seg_writer_id(w);
    int had_rows = seg_writer_indexed(w) > 0;
    int rc = seg_writer_seal(w, &sum);
    uint64_t t_file = shm_mono_ns();
    if (rc) {
        /* the file goes with the writer: so do the rows written for it */
        if (had_rows && idx_blocks_drop(s->idx, id))
            col_warn("store %s: cannot delete the block rows of unsealed segment %" PRIu64
                     ": %s (start-up recovery will)", s->dir, id, idx_errmsg(s->idx));
        s->dropped_records += records;
        /* sum is not filled when the seal fails: the caller's pid */
        storedir_write_failed(s, rc, "segment seal", pid, now);
        seg_writer_free(w);
        return rc;
    }
    crashpt(CRASHPT_RENAMED);
    /* the rollups: fed while the segment was written, or (the feeding
     * interrupted, or a bench's READBACK) computed from the sealed file by
     * the function every re-index uses: the same bytes; without them
     * readers scan this segment's records */
    uint8_t *ru = NULL;
    size_t ru_len = 0;
    int ru_rc = 0;
    const char *ru_how = "off";
    if (s->rollups != STOREDIR_RU_OFF && seg_writer_rollup_finish(w, &ru, &ru_len) == 0) {
        s->rollups_live++;
        ru_how = "live";
    } else if (s->rollups != STOREDIR_RU_OFF) {
        ru_rc = rollup_file(sum.path, &ru, &ru_len);
        s->rollups_readback++;
        ru_how = "read back";
    }
    if (ru_rc < 0)
        col_log_limited(&s->err_rl, COL_LOG_WARN, "store %s: no rollups for %s (%s): queries "
                        "scan its records", s->dir, sum.path, strerror(-ru_rc));
    uint64_t t_ru = shm_mono_ns();
    rc = idx_segment_commit_rollup(s->idx, process_id, &sum, s->dir, ru, ru_len);
    free(ru);
    uint64_t t_idx = shm_mono_ns();
    if (rc) {
        /* the file is sealed and whole: the first seal whose commit works
         * again re-indexes it (or the next start-up) */
        storedir_write_failed(s, rc, "index commit", pid, now);
        s->unindexed_seals = 1;
    } else {
        s->indexed_bytes += sum.bytes;
        storedir_write_ok(s);
        if (s->unindexed_seals) {
            s->unindexed_seals = 0;
            uint64_t n = reindex_sealed(s);
            if (n) {
                refresh_totals(s);
                col_info("store %s: indexed %" PRIu64 " segments sealed while the index "
                         "could not be written", s->dir, n);
            }
        }
        crashpt(CRASHPT_INDEXED);
        if (s->on_sealed)
            s->on_sealed(s->on_sealed_arg);
    }
    s->segments_sealed++;
    col_debug("sealed %s: %" PRIu64 " records, %" PRIu64 " bytes, %" PRIu32 " blocks; file %.2f ms, "
              "rollups (%s) %.2f ms (%zu bytes), index %.2f ms", sum.path, sum.nrecords, sum.bytes,
              sum.nblocks, (double)(t_file - now) / 1e6, ru_how, (double)(t_ru - t_file) / 1e6, ru_len,
              (double)(t_idx - t_ru) / 1e6);
    seg_writer_free(w);
    storedir_enforce_cap(s);
    return rc;
}

void storedir_write_failed(struct storedir *s, int err, const char *what, uint32_t pid,
                           uint64_t now_ns)
{
    s->write_errors++;
    s->failing = 1;
    s->last_error = err;
    s->retry_after_ns = now_ns + STOREDIR_WRITE_RETRY_NS;
    col_log_limited(&s->err_rl, COL_LOG_ERROR, "store %s: %s for pid %u failed: %s; ring "
                    "data is kept and the write retried", s->dir, what, pid, strerror(-err));
}

void storedir_write_ok(struct storedir *s)
{
    if (!s->failing)
        return;
    s->failing = 0;
    s->retry_after_ns = 0;
    col_info("store %s: writes succeed again", s->dir);
}

int storedir_writable(const struct storedir *s, uint64_t now_ns)
{
    return !s->failing || now_ns >= s->retry_after_ns;
}

int storedir_rotate_due(uint64_t bytes, uint64_t opened_ns, uint64_t now_ns,
                        uint64_t max_bytes, uint64_t max_age_ns)
{
    if (max_bytes && bytes >= max_bytes)
        return 1;
    /* a clock that appears to go back (opened_ns > now) is not "old" */
    if (max_age_ns && now_ns > opened_ns && now_ns - opened_ns >= max_age_ns)
        return 1;
    return 0;
}
