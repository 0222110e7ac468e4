/*
 * test_fsck.c — store consistency check and repair (collector/store/fsck.c), as a
 * specification: what each kind of damage is reported as, what --repair
 * does about it, and that a repaired store checks clean.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "collector/store/fsck.h"
#include "collector/store/store_lock.h"
#include "collector/store/idx_int.h"
#include "collector/store/idx_read.h"
#include "collector/store/rollup.h"
#include "collector/store/seg_writer.h"
#include "collector/store/sym.h"
#include "shm/meta.h"
#include "tests/unit/meta_entry.h"

struct fx {
    char dir[64];
};

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st; (void)flag; (void)f;
    return remove(p);
}

static int setup(void **state)
{
    struct fx *fx = calloc(1, sizeof *fx);
    strcpy(fx->dir, "/tmp/d9fscktest.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    struct idx *x;                  /* a store: a directory with a d9 index */
    assert_int_equal(idx_open(&x, fx->dir), 0);
    idx_close(x);
    *state = fx;
    return 0;
}

/* The fixture's directory without its index: no longer a store. */
static void remove_index(struct fx *fx)
{
    static const char *const sfx[] = { "", "-wal", "-shm" };
    for (int i = 0; i < 3; i++) {
        char p[128];
        snprintf(p, sizeof p, "%s/%s%s", fx->dir, IDX_FILE_NAME, sfx[i]);
        unlink(p);
    }
}

static int teardown(void **state)
{
    struct fx *fx = *state;
    nftw(fx->dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
    free(fx);
    return 0;
}

static void fmt(char *out, size_t cap, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *out, size_t cap, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(out, cap, f, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < cap);
}

static const struct seg_proc_info proc = {
    .pid = 4242, .uid = 1000, .start_time = 777, .clock_source = D9_CLOCK_MONOTONIC,
    .host = "h", .comm = "worker", .exe = "/bin/worker",
};

/* Write a sealed segment (runtime meta, one data block on ring 0, thread
 * end, exit if id is odd) into the store; index it if indexed. Returns the
 * byte offset where its thread-end block starts. */
static uint64_t write_segment(struct fx *fx, uint64_t id, int indexed)
{
    uint8_t meta[64];
    size_t ml = meta_entry_runtime(meta, 1, "rt-main");
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, id, &proc, meta, ml), 0);
    uint8_t data[320];
    size_t len = 0;
    for (int i = 0; i < 10; i++) {
        struct d9_rec_poll_end r = { .h = { .len = sizeof r, .type = D9_REC_POLL_END,
                                            .seq = (uint32_t)i, .ts = id * 1000 + (uint64_t)i } };
        memcpy(data + len, &r, sizeof r);
        len += sizeof r;
    }
    assert_int_equal(seg_writer_add_data(w, 77, 0, 3, 1, data, len), 0);
    uint64_t te = seg_writer_bytes(w);
    assert_int_equal(seg_writer_add_thread_end(w, 77, 0, 3, id * 1000 + 50), 0);
    if (id % 2) {
        struct seg_exit ex = { .t_ns = id * 1000 + 60, .reason = SEG_EXIT_CRASHED, .code = 6 };
        assert_int_equal(seg_writer_add_exit(w, &ex), 0);
    }
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    if (indexed) {
        struct idx *x;
        assert_int_equal(idx_open(&x, fx->dir), 0);
        struct idx_process p = { .pid = proc.pid, .uid = proc.uid, .start_time = proc.start_time,
                                 .comm = "worker" };
        int64_t pid_row;
        assert_int_equal(idx_process_upsert(x, &p, &pid_row), 0);
        uint8_t *ru;
        size_t ru_len;
        assert_int_equal(rollup_file(sum.path, &ru, &ru_len), 0);   /* as the collector's seal */
        assert_int_equal(idx_segment_commit_rollup(x, pid_row, &sum, fx->dir, ru, ru_len), 0);
        free(ru);
        idx_close(x);
    }
    seg_writer_free(w);
    return te;
}

static void seg_path(struct fx *fx, uint64_t id, char *out, size_t cap)
{
    fmt(out, cap, "%s/4242-777-%llu.d9seg", fx->dir, (unsigned long long)id);
}

static int64_t q_int(struct fx *fx, const char *sql)
{
    struct idx *x;
    assert_int_equal(idx_open_readonly(&x, fx->dir), 0);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(idx_db(x), sql, -1, &s, NULL), SQLITE_OK);
    int64_t v = -1;
    if (sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    idx_close(x);
    return v;
}

static void exec_sql(struct fx *fx, const char *sql)
{
    struct idx *x;
    assert_int_equal(idx_open(&x, fx->dir), 0);
    assert_int_equal(sqlite3_exec(idx_db(x), sql, NULL, NULL, NULL), SQLITE_OK);
    idx_close(x);
}

static struct fsck_report check(struct fx *fx, int repair)
{
    struct fsck_report r;
    assert_int_equal(fsck_run(fx->dir, repair, &r), 0);
    return r;
}

static void assert_clean(struct fx *fx)
{
    struct fsck_report r = check(fx, 0);
    assert_int_equal(fsck_problems(&r), 0);
    assert_int_equal(r.ok, r.rows);
}

/* Child process that holds path open until killed. */
static pid_t hold_open(const char *path)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(path, O_RDONLY);
        char c = fd >= 0 ? 'y' : 'n';
        if (write(p[1], &c, 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    char c = 0;
    assert_int_equal(read(p[0], &c, 1), 1);
    assert_int_equal(c, 'y');
    close(p[0]);
    close(p[1]);
    return pid;
}

static void stop(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* ---- tests ------------------------------------------------------------------- */

static void test_consistent_store_checks_clean(void **state)
{
    struct fx *fx = *state;
    write_segment(fx, 1, 1);
    write_segment(fx, 2, 1);
    struct fsck_report r = check(fx, 0);
    assert_int_equal(r.rows, 2);
    assert_int_equal(r.files, 2);
    assert_int_equal(r.ok, 2);
    assert_int_equal(fsck_problems(&r), 0);
}

static void test_missing_or_stale_rollups_are_reported_and_rebuilt(void **state)
{
    struct fx *fx = *state;
    write_segment(fx, 1, 1);
    write_segment(fx, 2, 1);
    assert_int_equal(check(fx, 0).bad_rollups, 0);
    struct idx *x;
    assert_int_equal(idx_open(&x, fx->dir), 0);
    assert_int_equal(sqlite3_exec(x->db, "DELETE FROM rollups WHERE segment_id = 1;"
                                  " UPDATE rollups SET data = x'00' WHERE segment_id = 2",
                                  NULL, NULL, NULL), SQLITE_OK);
    idx_close(x);
    struct fsck_report r = check(fx, 0);
    assert_int_equal(r.bad_rollups, 2);
    assert_true(fsck_problems(&r) >= 2);
    r = check(fx, 1);
    assert_int_equal(r.rollups_rebuilt, 2);
    assert_int_equal(q_int(fx, "SELECT count(*) FROM rollups"), 2);
    assert_int_equal(check(fx, 0).bad_rollups, 0);
}

static void test_missing_file_is_reported_and_its_row_deleted(void **state)
{
    struct fx *fx = *state;
    char p[128];
    write_segment(fx, 1, 1);
    write_segment(fx, 2, 1);
    seg_path(fx, 2, p, sizeof p);
    assert_int_equal(unlink(p), 0);
    struct fsck_report r = check(fx, 0);
    assert_int_equal(r.missing, 1);
    assert_int_equal(r.ok, 1);
    assert_int_equal(q_int(fx, "SELECT count(*) FROM segments"), 2);  /* check changes nothing */
    r = check(fx, 1);
    assert_int_equal(r.rows_deleted, 1);
    assert_int_equal(q_int(fx, "SELECT count(*) FROM blocks WHERE segment_id = 2"), 0);
    assert_clean(fx);
}

static void flip_byte(const char *path, uint64_t off)
{
    int fd = open(path, O_RDWR);
    char c;
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &c, 1, (off_t)off), 1);
    c ^= 1;
    assert_int_equal(pwrite(fd, &c, 1, (off_t)off), 1);
    close(fd);
}

static void test_corrupt_indexed_file_is_quarantined(void **state)
{
    struct fx *fx = *state;
    char p[128], q[160];
    write_segment(fx, 1, 1);
    seg_path(fx, 1, p, sizeof p);
    /* a block header: where the next block starts is unknown */
    flip_byte(p, (uint64_t)q_int(fx, "SELECT offset FROM blocks WHERE kind = 2"));
    struct fsck_report r = check(fx, 0);
    assert_int_equal(r.corrupt, 1);
    assert_int_equal(r.damaged, 0);
    r = check(fx, 1);
    assert_int_equal(r.rows_deleted, 1);
    assert_int_equal(r.quarantined, 1);
    fmt(q, sizeof q, "%s%s", p, FSCK_CORRUPT_SUFFIX);
    assert_int_equal(access(q, F_OK), 0);       /* kept for the user */
    assert_int_equal(access(p, F_OK), -1);
    assert_clean(fx);
}

static void test_damaged_data_block_payload_keeps_the_file(void **state)
{
    struct fx *fx = *state;
    char p[128];
    write_segment(fx, 1, 1);
    seg_path(fx, 1, p, sizeof p);
    /* a payload byte: the block's checksum fails, its header holds; the
     * readers leave out that block only, so the file stays */
    flip_byte(p, (uint64_t)q_int(fx, "SELECT offset FROM blocks WHERE kind = 2") +
                 SEG_BLOCK_HDR_SIZE + 4);
    struct fsck_report r = check(fx, 0);
    assert_int_equal(r.damaged, 1);
    assert_int_equal(r.corrupt, 0);
    assert_int_equal(fsck_problems(&r), r.bad_rollups);     /* the damage itself: nothing to do */
    r = check(fx, 1);
    assert_int_equal(r.rows_deleted, 0);
    assert_int_equal(r.quarantined, 0);
    assert_int_equal(access(p, F_OK), 0);
    r = check(fx, 0);
    assert_int_equal(fsck_problems(&r), 0);
    assert_int_equal(r.damaged, 1);
    assert_int_equal(q_int(fx, "SELECT count(*) FROM segments"), 1);
}

static void test_row_disagreeing_with_its_file_is_reindexed(void **state)
{
    struct fx *fx = *state;
    write_segment(fx, 1, 1);
    exec_sql(fx, "UPDATE segments SET records = 3");
    struct fsck_report r = check(fx, 0);
    assert_int_equal(r.mismatched, 1);
    r = check(fx, 1);
    assert_int_equal(r.reindexed, 1);
    assert_int_equal(q_int(fx, "SELECT records FROM segments"), 10);
    assert_clean(fx);
}

static void test_sealed_file_without_row_is_indexed_from_its_contents(void **state)
{
    struct fx *fx = *state;
    write_segment(fx, 1, 1);
    write_segment(fx, 3, 0);
    struct fsck_report r = check(fx, 0);
    assert_int_equal(r.orphans, 1);
    r = check(fx, 1);
    assert_int_equal(r.reindexed, 1);
    assert_int_equal(q_int(fx, "SELECT count(*) FROM segments"), 2);
    assert_int_equal(q_int(fx, "SELECT count(*) FROM blocks WHERE segment_id = 3"), 4);
    assert_int_equal(q_int(fx, "SELECT count(*) FROM rollups WHERE segment_id = 3"), 1);
    assert_int_equal(q_int(fx, "SELECT count(*) FROM threads WHERE tid = 77 AND ring = 0"
                               " AND generation = 3 AND ended = 1"), 1);
    assert_int_equal(q_int(fx, "SELECT count(*) FROM runtimes WHERE name = 'rt-main'"), 1);
    assert_int_equal(q_int(fx, "SELECT exit_code FROM processes WHERE state = 'crashed'"), 6);
    assert_clean(fx);
}

static void test_reindex_makes_no_thread_of_the_collectors_pseudo_rings(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 5, &proc, NULL, 0), 0);
    static const uint32_t rings[] = { 0, SYM_SEG_RING, SYM_SEG_RING + 1 };
    for (size_t k = 0; k < 3; k++) {
        /* the pseudo rings' records come first: they must not move the process's
         * first record (d9 ps FIRST SEEN) before its threads' */
        struct d9_rec_poll_end r = { .h = { .len = sizeof r, .type = D9_REC_POLL_END,
                                            .ts = k == 0 ? 9000 : 8000 + k } };
        assert_int_equal(seg_writer_add_data(w, k ? 0 : 77, rings[k], k ? 0 : 1, 0,
                                             (const uint8_t *)&r, sizeof r), 0);
    }
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    seg_writer_free(w);
    struct fsck_report r = check(fx, 1);
    assert_int_equal(r.reindexed, 1);
    assert_int_equal(q_int(fx, "SELECT count(*) FROM blocks WHERE segment_id = 5"), 3);
    assert_int_equal(q_int(fx, "SELECT count(*) FROM threads"), 1);
    assert_int_equal(q_int(fx, "SELECT first_ns FROM threads WHERE tid = 77 AND ring = 0"), 9000);
    assert_clean(fx);
}

/* What a directory looks like, down to the byte and the nanosecond: every
 * entry's name, type and mode, size, inode, mtime and ctime, a hash of its
 * contents, and the directory's own mtime. Two snapshots that are equal
 * mean nothing was created, removed, written or renamed in it. */
static void snapshot(const char *dir, char *out, size_t cap)
{
    char cmd[512];
    fmt(cmd, sizeof cmd,
        "cd '%s' && stat -c '%%n %%F %%a %%s %%i %%.9Y %%.9Z' . && "
        "find . -mindepth 1 -printf '%%p %%y %%m %%s %%i %%T@ %%C@\n' | sort && "
        "find . -mindepth 1 -type f -exec md5sum {} + | sort", dir);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = 0;
    assert_int_equal(pclose(f), 0);
    assert_true(n > 0 && n < cap - 1);
}

/* fsck (check and repair) refuses dir with -ENOENT and leaves it exactly as it was. */
static void assert_refused_untouched(const char *dir)
{
    static char before[16384], after[16384];
    snapshot(dir, before, sizeof before);
    struct timespec pause_ts = { 0, 20 * 1000 * 1000 };   /* a later write gets a later mtime */
    nanosleep(&pause_ts, NULL);
    struct fsck_report r;
    assert_int_equal(fsck_run(dir, 0, &r), -ENOENT);
    assert_int_equal(fsck_run(dir, 1, &r), -ENOENT);
    snapshot(dir, after, sizeof after);
    assert_string_equal(before, after);
}

/* Segment files (sealed and temp) without a d9 index: not a store, so not
 * touched; a collector started on it rebuilds the index (storedir's test). */
static void test_segments_without_an_index_are_refused_and_left_byte_for_byte(void **state)
{
    struct fx *fx = *state;
    char p[128], tmp[160];
    remove_index(fx);
    write_segment(fx, 1, 0);
    write_segment(fx, 2, 0);
    seg_path(fx, 2, p, sizeof p);
    fmt(tmp, sizeof tmp, "%s/.tmp.4242-777-2.d9seg", fx->dir);
    assert_int_equal(rename(p, tmp), 0);
    assert_refused_untouched(fx->dir);
}

/* An index.sqlite that is some other program's database (journal or WAL
 * mode): refused before anything is created, the lock file included. */
static void test_foreign_database_named_index_sqlite_is_refused_and_left_byte_for_byte(void **state)
{
    struct fx *fx = *state;
    write_segment(fx, 1, 0);
    for (int wal = 0; wal < 2; wal++) {
        char ip[128];
        fmt(ip, sizeof ip, "%s/%s", fx->dir, IDX_FILE_NAME);
        remove_index(fx);
        sqlite3 *db;
        assert_int_equal(sqlite3_open(ip, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, wal ? "PRAGMA journal_mode=WAL; CREATE TABLE notes(x);"
                                              : "CREATE TABLE notes(x); INSERT INTO notes VALUES(1);",
                                      NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_close(db), SQLITE_OK);
        assert_refused_untouched(fx->dir);
    }
}

/* index.sqlite as a link (to a real d9 index elsewhere) or a directory:
 * refused, and neither the directory nor the link's target changes. */
static void test_index_that_is_not_a_regular_file_is_refused_and_left_byte_for_byte(void **state)
{
    struct fx *fx = *state;
    char other[96], ip[128], link_to[128];
    remove_index(fx);
    fmt(other, sizeof other, "%s/elsewhere", fx->dir);
    fmt(ip, sizeof ip, "%s/%s", other, IDX_FILE_NAME);
    assert_int_equal(mkdir(other, 0700), 0);
    struct idx *x;
    assert_int_equal(idx_open(&x, other), 0);
    idx_close(x);
    char store[96];
    fmt(store, sizeof store, "%s/store", fx->dir);
    assert_int_equal(mkdir(store, 0700), 0);
    fmt(link_to, sizeof link_to, "%s/%s", store, IDX_FILE_NAME);
    assert_int_equal(symlink(ip, link_to), 0);
    assert_refused_untouched(fx->dir);         /* both: the link's directory and its target's */
    assert_int_equal(unlink(link_to), 0);
    assert_int_equal(mkdir(link_to, 0700), 0);
    assert_refused_untouched(store);
}

/* A collector killed right after it created its index leaves the schema in
 * index.sqlite-wal only (never checkpointed): still a store. */
static void test_store_whose_schema_is_only_in_the_wal_is_a_store(void **state)
{
    struct fx *fx = *state;
    remove_index(fx);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct idx *x;
        _exit(idx_open(&x, fx->dir) == 0 ? 0 : 1);  /* killed: no close, no checkpoint */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(status, 0);
    char ip[128], wal[136];
    fmt(ip, sizeof ip, "%s/%s", fx->dir, IDX_FILE_NAME);
    fmt(wal, sizeof wal, "%s-wal", ip);
    char uri[192];                          /* the main file alone, -wal ignored */
    fmt(uri, sizeof uri, "file:%s?immutable=1", ip);
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL),
                     SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 0);  /* the schema is in the -wal only */
    sqlite3_finalize(st);
    sqlite3_close(db);
    assert_int_equal(access(wal, F_OK), 0);
    write_segment(fx, 1, 0);
    struct fsck_report r = check(fx, 0);
    assert_int_equal(r.orphans, 1);
    r = check(fx, 1);
    assert_int_equal(r.reindexed, 1);
    assert_clean(fx);
}

static void test_directory_that_is_not_a_store_is_refused_and_left_alone(void **state)
{
    struct fx *fx = *state;
    char other[160], ip[192], lk[192];
    remove_index(fx);
    fmt(other, sizeof other, "%s/notes", fx->dir);
    FILE *f = fopen(other, "w");
    assert_non_null(f);
    fputs("not a segment\n", f);
    fclose(f);
    struct fsck_report r;
    assert_int_equal(fsck_run(fx->dir, 1, &r), -ENOENT);
    assert_int_equal(fsck_run(fx->dir, 0, &r), -ENOENT);
    fmt(ip, sizeof ip, "%s/%s", fx->dir, IDX_FILE_NAME);
    fmt(lk, sizeof lk, "%s/%s", fx->dir, STORE_LOCK_FILE);
    assert_int_equal(access(ip, F_OK), -1);
    assert_int_equal(access(lk, F_OK), -1);
}

static int count_seg(void *arg, const struct idx_read_segment *r)
{
    (void)r;
    (*(unsigned *)arg)++;
    return 0;
}

/* A segment written before the drain clamped stamps: records stamped below
 * the boot origin converted to negative times. fsck reports it; readers
 * still select it for any window. */
static void test_segment_with_an_impossible_time_range_is_reported(void **state)
{
    struct fx *fx = *state;
    const uint64_t id = (UINT64_C(1) << 63) / 1000 + 1;    /* id * 1000 >= 2^63 */
    write_segment(fx, id, 1);
    write_segment(fx, 2, 1);
    struct fsck_report r = check(fx, 0);
    assert_int_equal(r.ok, 2);
    assert_int_equal(r.bad_times, 1);
    assert_int_equal(fsck_problems(&r), 1);
    struct idx *x;
    assert_int_equal(idx_open_readonly(&x, fx->dir), 0);
    unsigned n = 0;
    assert_true(idx_read_segments_window(x, 0, 1000, 5000, count_seg, &n) >= 0);
    idx_close(x);
    assert_int_equal(n, 2);
}

static void test_crashed_temp_file_is_salvaged_and_indexed(void **state)
{
    struct fx *fx = *state;
    char p[128], tmp[160];
    uint64_t te = write_segment(fx, 5, 0);
    seg_path(fx, 5, p, sizeof p);
    fmt(tmp, sizeof tmp, "%s/.tmp.4242-777-5.d9seg", fx->dir);
    assert_int_equal(rename(p, tmp), 0);
    assert_int_equal(truncate(tmp, (off_t)te + 20), 0);  /* cut inside the thread-end block */
    struct fsck_report r = check(fx, 0);
    assert_int_equal(r.temps, 1);
    assert_int_equal(access(tmp, F_OK), 0);
    r = check(fx, 1);
    assert_int_equal(r.salvaged, 1);
    assert_int_equal(r.reindexed, 1);
    assert_int_equal(access(tmp, F_OK), -1);
    assert_int_equal(access(p, F_OK), 0);
    assert_int_equal(q_int(fx, "SELECT records FROM segments WHERE id = 5"), 10);
    assert_clean(fx);
}

static void test_salvage_replaces_block_rows_written_before_the_crash(void **state)
{
    struct fx *fx = *state;
    char p[128], tmp[160], sql[256];
    write_segment(fx, 5, 0);
    seg_path(fx, 5, p, sizeof p);
    fmt(tmp, sizeof tmp, "%s/.tmp.4242-777-5.d9seg", fx->dir);
    assert_int_equal(rename(p, tmp), 0);
    /* the collector had indexed the segment's first block while writing it
     * (idx_blocks_add), then died before the seal */
    fmt(sql, sizeof sql, "INSERT INTO blocks(segment_id, offset, len, kind, tid, ring, generation,"
        " nrec, t_first, t_last, lost) VALUES(5, %u, 8, 1, 0, 0, 0, 1, 0, 0, 0)", SEG_HDR_SIZE);
    exec_sql(fx, sql);
    struct fsck_report r = check(fx, 1);
    assert_int_equal(r.salvaged, 1);
    assert_int_equal(r.reindexed, 1);
    assert_int_equal(q_int(fx, "SELECT records FROM segments WHERE id = 5"), 10);
    assert_int_equal(q_int(fx, "SELECT count(*) FROM blocks WHERE segment_id = 5 AND len = 8"), 0);
    assert_clean(fx);
}

static void test_temp_file_with_nothing_recoverable_is_removed(void **state)
{
    struct fx *fx = *state;
    char tmp[160];
    fmt(tmp, sizeof tmp, "%s/.tmp.4242-777-9.d9seg", fx->dir);
    int fd = open(tmp, O_WRONLY | O_CREAT, 0600);
    assert_int_equal(write(fd, "D9SEG0", 6), 6);
    close(fd);
    struct fsck_report r = check(fx, 1);
    assert_int_equal(r.temps, 1);
    assert_int_equal(r.temps_removed, 1);
    assert_int_equal(access(tmp, F_OK), -1);
    assert_clean(fx);
}

static void test_temp_file_open_in_another_process_is_left_alone(void **state)
{
    struct fx *fx = *state;
    char p[128], tmp[160];
    write_segment(fx, 5, 0);
    seg_path(fx, 5, p, sizeof p);
    fmt(tmp, sizeof tmp, "%s/.tmp.4242-777-5.d9seg", fx->dir);
    assert_int_equal(rename(p, tmp), 0);
    pid_t child = hold_open(tmp);
    struct fsck_report r;
    int e = fsck_run(fx->dir, 1, &r);
    stop(child);
    assert_int_equal(e, 0);
    assert_int_equal(r.temps_in_use, 1);
    assert_int_equal(r.temps, 0);
    assert_int_equal(r.salvaged, 0);
    assert_int_equal(access(tmp, F_OK), 0);
}

static void test_repair_refuses_while_the_index_is_in_use(void **state)
{
    struct fx *fx = *state;
    char ip[128];
    write_segment(fx, 1, 1);
    fmt(ip, sizeof ip, "%s/%s", fx->dir, IDX_FILE_NAME);
    pid_t child = hold_open(ip);
    struct fsck_report r;
    int busy = fsck_run(fx->dir, 1, &r);
    int chk = fsck_run(fx->dir, 0, &r);
    stop(child);
    assert_int_equal(busy, -EBUSY);
    assert_int_equal(chk, 0);
    assert_int_equal(r.ok, 1);
}

static void test_repair_refuses_while_the_store_lock_is_held(void **state)
{
    struct fx *fx = *state;
    write_segment(fx, 1, 1);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        char c = store_lock(fx->dir) >= 0 ? 'y' : 'n';
        if (write(p[1], &c, 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    char c = 0;
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    close(p[1]);
    struct fsck_report r;
    int locked = store_lock(fx->dir);
    int busy = fsck_run(fx->dir, 1, &r);
    int chk = fsck_run(fx->dir, 0, &r);
    stop(child);
    assert_int_equal(c, 'y');
    assert_int_equal(locked, -EBUSY);
    assert_int_equal(busy, -EBUSY);
    assert_int_equal(chk, 0);
    int fd = store_lock(fx->dir);       /* free again once the holder is gone */
    assert_true(fd >= 0);
    close(fd);
}

static int lines;
static void count_line(void *arg, const char *path, const char *what)
{
    (void)arg;
    assert_non_null(path);
    assert_true(strlen(what) > 0);
    lines++;
}

static void test_every_finding_is_reported_as_a_line(void **state)
{
    struct fx *fx = *state;
    char p[128];
    write_segment(fx, 1, 1);
    write_segment(fx, 2, 1);
    write_segment(fx, 3, 0);
    seg_path(fx, 2, p, sizeof p);
    unlink(p);
    struct fsck_report r;
    lines = 0;
    assert_int_equal(fsck_run_ex(fx->dir, 0, &r, count_line, NULL), 0);
    assert_int_equal(fsck_problems(&r), 2);
    assert_int_equal(lines, 2);
    assert_int_equal(fsck_run("/nonexistent/store", 0, &r), -ENOENT);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_consistent_store_checks_clean),
        T(test_missing_file_is_reported_and_its_row_deleted),
        T(test_corrupt_indexed_file_is_quarantined),
        T(test_damaged_data_block_payload_keeps_the_file),
        T(test_row_disagreeing_with_its_file_is_reindexed),
        T(test_missing_or_stale_rollups_are_reported_and_rebuilt),
        T(test_sealed_file_without_row_is_indexed_from_its_contents),
        T(test_reindex_makes_no_thread_of_the_collectors_pseudo_rings),
        T(test_segments_without_an_index_are_refused_and_left_byte_for_byte),
        T(test_foreign_database_named_index_sqlite_is_refused_and_left_byte_for_byte),
        T(test_index_that_is_not_a_regular_file_is_refused_and_left_byte_for_byte),
        T(test_store_whose_schema_is_only_in_the_wal_is_a_store),
        T(test_directory_that_is_not_a_store_is_refused_and_left_alone),
        T(test_segment_with_an_impossible_time_range_is_reported),
        T(test_crashed_temp_file_is_salvaged_and_indexed),
        T(test_salvage_replaces_block_rows_written_before_the_crash),
        T(test_temp_file_with_nothing_recoverable_is_removed),
        T(test_temp_file_open_in_another_process_is_left_alone),
        T(test_repair_refuses_while_the_index_is_in_use),
        T(test_repair_refuses_while_the_store_lock_is_held),
        T(test_every_finding_is_reported_as_a_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
