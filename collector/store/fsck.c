/*
 * fsck.c — consistency check and repair of a store (see fsck.h).
 *
 * Called by `d9 fsck` (collector/cli/cli_fsck.c) on a store, with the collector
 * normally stopped. Reads everything it judges through the validating
 * segment reader; writes only through idx_* (one index connection) and
 * seg_salvage, plus unlink of temp files with nothing recoverable and
 * rename of corrupt files to *.corrupt.
 *
 * Invariants: a check (repair = 0) opens the index read-only and changes
 * nothing. On a live store (the collector running) the view is not one
 * snapshot: before a row is called missing or a file unindexed, the index
 * is asked again, so a segment evicted (row, then file) or sealed (file,
 * then row) during the scan is not reported. A repair never deletes a segment file, never touches a temp file
 * that some process holds open, and refuses to run while another process
 * has the index open. Segment files are looked for in the store directory
 * itself (where d9collectd writes them); rows may point anywhere inside it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collector/store/fsck.h"
#include "collector/store/reindex.h"
#include "collector/store/rollup.h"
#include "collector/store/store_lock.h"
#include "collector/store/idx.h"
#include "collector/store/idx_read.h"
#include "collector/store/seg_reader.h"
#include "collector/store/seg_salvage.h"

struct fsck {
    const char *store;
    int repair;
    struct idx *x;
    struct fsck_report *rep;
    fsck_fn fn;
    void *arg;
    struct idx_segment_row *rows;
    size_t nrows, caprows;
    /* (dev, ino) of files other processes hold open */
    struct open_file { dev_t dev; ino_t ino; pid_t pid; } *open;
    size_t nopen, capopen;
    int scanned;
};

static void say(struct fsck *f, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(struct fsck *f, const char *path, const char *fmt, ...)
{
    if (!f->fn)
        return;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    f->fn(f->arg, path, what);
}

uint64_t fsck_problems(const struct fsck_report *r)
{
    return r->missing + r->mismatched + r->corrupt + r->orphans + r->temps + r->bad_times +
           r->bad_rollups;
}

/* ---- who has what open ------------------------------------------------------ */

static void scan_open_files(struct fsck *f)
{
    DIR *proc = opendir("/proc");
    if (!proc)
        return;
    pid_t self = getpid();
    struct dirent *pe;
    while ((pe = readdir(proc))) {
        char *end;
        long pid = strtol(pe->d_name, &end, 10);
        if (*end || pid <= 0 || pid == self)
            continue;
        char fddir[64];
        snprintf(fddir, sizeof fddir, "/proc/%ld/fd", pid);
        DIR *fds = opendir(fddir);
        if (!fds)
            continue;       /* gone, or not ours to inspect */
        struct dirent *fe;
        while ((fe = readdir(fds))) {
            if (fe->d_name[0] == '.')
                continue;
            struct stat st;
            if (fstatat(dirfd(fds), fe->d_name, &st, 0) != 0 || !S_ISREG(st.st_mode))
                continue;
            if (f->nopen == f->capopen) {
                size_t cap = f->capopen ? f->capopen * 2 : 256;
                void *n = realloc(f->open, cap * sizeof *f->open);
                if (!n)
                    break;
                f->open = n;
                f->capopen = cap;
            }
            f->open[f->nopen++] = (struct open_file){ st.st_dev, st.st_ino, (pid_t)pid };
        }
        closedir(fds);
    }
    closedir(proc);
}

/* pid of another process holding path open, or 0. The /proc scan is done
 * once, on first use (a check of a store without temp files needs none). */
static pid_t opened_by(struct fsck *f, const char *path)
{
    if (!f->scanned) {
        scan_open_files(f);
        f->scanned = 1;
    }
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;
    for (size_t i = 0; i < f->nopen; i++)
        if (f->open[i].dev == st.st_dev && f->open[i].ino == st.st_ino)
            return f->open[i].pid;
    return 0;
}

/* ---- verification -------------------------------------------------------------- */

struct verdict {
    int err;
    char why[256];
    uint32_t damaged;               /* DATA blocks that do not check, headers that do */
    char damaged_why[256];          /* the first one's */
    struct seg_file_hdr hdr;
    struct seg_footer footer;
    uint64_t size;
};

/* Read and verify a whole sealed segment. 0 if valid, counting in
 * v->damaged the DATA blocks whose payload does not check but whose header
 * does (seg_reader_skip): the readers leave out those blocks and only those
 * (q_scan.c, rollup_file_only), so the file is kept. Anything else that
 * does not check (a header, a META block, the file's header or footer)
 * makes the file corrupt. After a skipped block the footer's totals are
 * not checked (they count the block). */
static int verify(const char *path, struct verdict *v)
{
    memset(v, 0, sizeof *v);
    struct seg_reader *r;
    v->err = seg_reader_open_ex(&r, path, 0, v->why, sizeof v->why);
    if (v->err < 0)
        return v->err;
    v->hdr = *seg_reader_header(r);
    v->footer = *seg_reader_footer(r);
    v->size = seg_reader_size(r);
    struct seg_block b;
    int e;
    while ((e = seg_reader_next(r, &b)) != 0) {
        if (e == 1)
            continue;
        if (e != -EBADMSG || seg_reader_skip(r, &b) < 0)
            break;
        if (v->damaged++ == 0)
            snprintf(v->damaged_why, sizeof v->damaged_why, "%s",
                     seg_reader_error(r) ? seg_reader_error(r) : strerror(-e));
    }
    if (e < 0) {
        v->err = e;
        snprintf(v->why, sizeof v->why, "%s",
                 seg_reader_error(r) ? seg_reader_error(r) : strerror(-e));
    }
    seg_reader_close(r);
    return v->err;
}

/* Why row and file disagree ("" when they agree). */
static void compare(const struct idx_segment_row *row, const struct verdict *v, char *why,
                    size_t cap)
{
    why[0] = 0;
    if (row->id != v->hdr.segment_id)
        snprintf(why, cap, "row id %" PRIu64 ", file says segment %" PRIu64, row->id,
                 v->hdr.segment_id);
    else if (row->bytes != v->size)
        snprintf(why, cap, "row says %" PRIu64 " bytes, file has %" PRIu64, row->bytes, v->size);
    else if (row->records != v->footer.nrecords)
        snprintf(why, cap, "row says %" PRIu64 " records, footer %" PRIu64, row->records,
                 v->footer.nrecords);
    else if (row->t_min != v->footer.t_min || row->t_max != v->footer.t_max)
        snprintf(why, cap, "row time range differs from the footer's");
    else if (row->nblocks != v->footer.nblocks)
        snprintf(why, cap, "%" PRIu64 " block rows, file has %" PRIu32 " blocks", row->nblocks,
                 v->footer.nblocks);
}

/* ---- the passes ------------------------------------------------------------------ */

static int collect_row(void *arg, const struct idx_segment_row *r)
{
    struct fsck *f = arg;
    if (f->nrows == f->caprows) {
        size_t cap = f->caprows ? f->caprows * 2 : 256;
        void *n = realloc(f->rows, cap * sizeof *f->rows);
        if (!n)
            return -ENOMEM;
        f->rows = n;
        f->caprows = cap;
    }
    f->rows[f->nrows++] = *r;
    return 0;
}

static int row_has_path(const struct fsck *f, const char *rel)
{
    for (size_t i = 0; i < f->nrows; i++)
        if (strcmp(f->rows[i].path, rel) == 0)
            return 1;
    return 0;
}

/* Fresh look at the index (a live collector commits while we scan): is
 * there a row with this id (path NULL) or this path now? */
static int indexed_now(const struct fsck *f, uint64_t id, const char *rel)
{
    if (!f->x)
        return 0;
    return (rel ? idx_read_segment_has_path(f->x, rel) : idx_read_segment_has_id(f->x, id)) == 1;
}

static int join(char *out, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);
    return n >= 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

static void quarantine(struct fsck *f, const char *path)
{
    char to[PATH_MAX];
    struct stat st;
    if (snprintf(to, sizeof to, "%s%s", path, FSCK_CORRUPT_SUFFIX) >= (int)sizeof to ||
        lstat(to, &st) == 0 || rename(path, to) != 0) {
        f->rep->errors++;
        say(f, path, "cannot rename to %s%s", path, FSCK_CORRUPT_SUFFIX);
        return;
    }
    f->rep->quarantined++;
    say(f, path, "renamed to %s", to);
}

static void delete_row(struct fsck *f, const struct idx_segment_row *row)
{
    int e = idx_segment_delete(f->x, row->id);
    if (e < 0) {
        f->rep->errors++;
        say(f, row->path, "cannot delete index row: %s", strerror(-e));
    } else {
        f->rep->rows_deleted++;
    }
}

static void reindex(struct fsck *f, const char *path)
{
    int e = reindex_file(f->x, f->store, path);
    if (e < 0) {
        f->rep->errors++;
        const char *m = idx_errmsg(f->x);
        say(f, path, "cannot index: %s", m ? m : strerror(-e));
    } else {
        f->rep->reindexed++;
        say(f, path, "indexed");
    }
}

static void skip_quiet(void *arg, uint64_t offset, const char *why)
{
    (void)arg, (void)offset, (void)why;     /* verify() reported them */
}

/* The row's rollups against the ones its file's readable blocks give
 * (rollup_file_only with a skip, the readers' rule): missing, not checking,
 * or different (stale, or made before a block was damaged) is a finding;
 * repair writes the file's. */
static void check_rollup(struct fsck *f, const struct idx_segment_row *row, const char *path,
                         int damaged)
{
    uint8_t *want = NULL, *have = NULL;
    size_t want_len = 0, have_len = 0;
    char why[160] = "";
    if (rollup_file_only(path, NULL, 0, skip_quiet, NULL, &want, &want_len) < 0) {
        free(want);
        return;                         /* verify() passed: only out of memory */
    }
    struct rollup_view v;
    int e = idx_read_rollup(f->x, row->id, &have, &have_len);
    if (e == 0)
        snprintf(why, sizeof why, "has no rollups");
    else if (e < 0)
        snprintf(why, sizeof why, "rollups unreadable");
    else if (rollup_decode(have, have_len, &v, why + 9, sizeof why - 9) < 0)
        memcpy(why, "rollups: ", 9);
    else if (have_len != want_len || memcmp(have, want, want_len) != 0)
        snprintf(why, sizeof why, "rollups differ from the ones its %srecords give",
                 damaged ? "readable " : "");
    if (why[0]) {
        f->rep->bad_rollups++;
        say(f, row->path, "segment %" PRIu64 " %s%s", row->id, why,
            f->repair ? " (rebuilt)" : "");
        if (f->repair) {
            if (idx_rollup_set(f->x, row->id, want, want_len) < 0)
                f->rep->errors++;
            else
                f->rep->rollups_rebuilt++;
        }
    }
    free(want);
    free(have);
}

static void check_rows(struct fsck *f)
{
    for (size_t i = 0; i < f->nrows; i++) {
        const struct idx_segment_row *row = &f->rows[i];
        char path[PATH_MAX];
        struct stat st;
        if (join(path, sizeof path, f->store, row->path) < 0 || lstat(path, &st) != 0) {
            if (!indexed_now(f, row->id, NULL)) {
                f->rep->rows--;         /* evicted meanwhile: row first, then file */
                continue;
            }
            f->rep->missing++;
            say(f, row->path, "indexed segment %" PRIu64 " has no file%s", row->id,
                f->repair ? " (row deleted)" : "");
            if (f->repair)
                delete_row(f, row);
            continue;
        }
        struct verdict v;
        if (verify(path, &v) < 0) {
            f->rep->corrupt++;
            say(f, row->path, "indexed segment %" PRIu64 " is corrupt: %s", row->id, v.why);
            if (f->repair) {
                delete_row(f, row);
                quarantine(f, path);
            }
            continue;
        }
        char why[256];
        compare(row, &v, why, sizeof why);
        if (why[0]) {
            f->rep->mismatched++;
            say(f, row->path, "index row disagrees with the file: %s", why);
            if (f->repair) {
                delete_row(f, row);
                reindex(f, path);
            }
            continue;
        }
        if (v.damaged) {
            f->rep->damaged++;
            say(f, row->path, "indexed segment %" PRIu64 " has %" PRIu32 " unreadable data "
                "block%s (%s): kept, readers leave out those blocks only", row->id, v.damaged,
                v.damaged == 1 ? "" : "s", v.damaged_why);
        } else {
            f->rep->ok++;
        }
        check_rollup(f, row, path, v.damaged != 0);
        if ((int64_t)row->t_min < 0 || (int64_t)row->t_max < 0 || row->t_max < row->t_min) {
            f->rep->bad_times++;
            say(f, row->path, "segment %" PRIu64 " has an impossible time range (%" PRId64
                " .. %" PRId64 " ns): records with forged or broken stamps, stored before "
                "the collector clamped them; kept (readers include it in every window)",
                row->id, (int64_t)row->t_min, (int64_t)row->t_max);
        }
    }
}

static int is_temp_name(const char *name)
{
    size_t n = strlen(name), pl = strlen(SEG_TMP_PREFIX), sl = strlen(SEG_FILE_SUFFIX);
    return n > pl + sl && strncmp(name, SEG_TMP_PREFIX, pl) == 0 &&
           strcmp(name + n - sl, SEG_FILE_SUFFIX) == 0;
}

static void check_temp(struct fsck *f, const char *name, const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        say(f, name, "not a regular file: not a temp segment, left alone");
        return;
    }
    pid_t pid = opened_by(f, path);
    if (pid) {
        f->rep->temps_in_use++;
        say(f, name, "being written by pid %d (left alone)", (int)pid);
        return;
    }
    f->rep->temps++;
    if (!f->repair) {
        say(f, name, "temp segment left by a crashed collector (--repair salvages it)");
        return;
    }
    struct seg_summary sum;
    int e = seg_salvage(path, &sum);
    if (e == -ENODATA || e == -EBADMSG) {
        if (unlink(path) == 0) {
            f->rep->temps_removed++;
            say(f, name, "nothing recoverable (%s): removed",
                e == -ENODATA ? "no data blocks" : "no valid header");
        } else {
            f->rep->errors++;
            say(f, name, "cannot remove: %s", strerror(errno));
        }
        return;
    }
    if (e < 0) {
        f->rep->errors++;
        say(f, name, "cannot salvage: %s", strerror(-e));
        return;
    }
    f->rep->salvaged++;
    say(f, name, "salvaged %" PRIu64 " records in %" PRIu32 " blocks into %s", sum.nrecords,
        sum.nblocks, sum.path);
    e = reindex_summary(f->x, f->store, sum.path, &sum);
    if (e < 0) {
        f->rep->errors++;
        const char *m = idx_errmsg(f->x);
        say(f, sum.path, "cannot index: %s", m ? m : strerror(-e));
    } else {
        f->rep->reindexed++;
    }
    seg_salvage_release(&sum);
}

static int check_files(struct fsck *f)
{
    DIR *d = opendir(f->store);
    if (!d)
        return -errno;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *name = de->d_name;
        char path[PATH_MAX];
        if (join(path, sizeof path, f->store, name) < 0)
            continue;
        struct stat st;
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (is_temp_name(name)) {
            check_temp(f, name, path);
            continue;
        }
        if (seg_parse_file_name(name, NULL, NULL, NULL) != 0)
            continue;
        f->rep->files++;
        if (row_has_path(f, name))
            continue;       /* checked with the rows */
        struct verdict v;
        if (verify(path, &v) < 0) {
            f->rep->corrupt++;
            say(f, name, "segment without index row is corrupt: %s", v.why);
            if (f->repair)
                quarantine(f, path);
            continue;
        }
        if (indexed_now(f, 0, name)) {
            f->rep->rows++;             /* sealed and indexed while we scanned */
            f->rep->ok++;
            continue;
        }
        f->rep->orphans++;
        if (f->repair)
            reindex(f, path);
        else
            say(f, name, "sealed segment %" PRIu64 " has no index row (--repair indexes it)",
                v.hdr.segment_id);
    }
    closedir(d);
    return 0;
}

int fsck_run_ex(const char *store_dir, int repair, struct fsck_report *out, fsck_fn fn,
                void *arg)
{
    if (!store_dir || !out)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    struct fsck f = { .store = store_dir, .repair = repair, .rep = out, .fn = fn, .arg = arg };
    struct stat st;
    if (stat(store_dir, &st) != 0)
        return -errno;
    if (!S_ISDIR(st.st_mode))
        return -ENOTDIR;
    char ipath[PATH_MAX];
    int e = join(ipath, sizeof ipath, store_dir, IDX_FILE_NAME);
    /* a store is a directory with a d9 index; anywhere else nothing is
     * created or changed (a lost index is rebuilt by a collector's start-up) */
    if (e == 0 && idx_probe(store_dir, NULL, 0) < 0)
        return -ENOENT;
    pid_t user = e == 0 && repair ? opened_by(&f, ipath) : 0;
    if (e == 0 && repair && user) {
        say(&f, ipath, "in use by pid %d: stop the collector before --repair", (int)user);
        e = -EBUSY;
    }
    char why[512] = "";
    /* an index that cannot be opened (another schema version, not SQLite)
     * is refused before the lock: a refused directory gains no .lock */
    if (e == 0 && repair) {
        e = idx_open_ex(&f.x, store_dir, IDX_OPEN_READONLY, why, sizeof why);
        if (e < 0)
            say(&f, ipath, "%s", why);
        idx_close(f.x);
        f.x = NULL;
    }
    int lock = -1;
    if (e == 0 && repair && (lock = store_lock(store_dir)) < 0) {
        e = lock;
        say(&f, store_dir, e == -EBUSY ? "locked by a running collector: stop it before --repair"
                                       : "cannot take the store lock: %s", strerror(-e));
    }
    if (e == 0) {
        e = idx_open_ex(&f.x, store_dir, repair ? 0 : IDX_OPEN_READONLY, why, sizeof why);
        if (e < 0)
            say(&f, ipath, "%s", why);
    }
    /* block rows a collector wrote for a segment it never sealed (see
     * idx_blocks_add): the temp file's salvage below indexes it again, whole */
    uint64_t orphans = 0;
    if (e == 0 && repair && f.x && idx_drop_orphan_blocks(f.x, &orphans) == 0 && orphans)
        say(&f, ipath, "deleted %" PRIu64 " block rows of segments never sealed", orphans);
    if (e == 0 && f.x && (e = idx_segment_foreach(f.x, collect_row, &f)) < 0)
        say(&f, ipath, "cannot list segments: %s",
            idx_errmsg(f.x) ? idx_errmsg(f.x) : strerror(-e));
    if (e == 0) {
        out->rows = f.nrows;
        check_rows(&f);
        if ((e = check_files(&f)) < 0)
            say(&f, store_dir, "cannot list: %s", strerror(-e));
    }
    idx_close(f.x);
    if (lock >= 0)
        close(lock);
    free(f.rows);
    free(f.open);
    return e;
}

int fsck_run(const char *store_dir, int repair, struct fsck_report *out)
{
    return fsck_run_ex(store_dir, repair, out, NULL, NULL);
}
