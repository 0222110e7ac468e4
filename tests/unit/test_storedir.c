/*
 * test_storedir.c — the collector's store (collector/daemon/storedir.c) as a
 * specification: opening, sealing + indexing, retention order, crash
 * recovery (salvage of temp segments, re-indexing of orphan files, block
 * rows of segments never sealed), block rows indexed while writing, the
 * write-error back-off, and who may read the store (modes and group).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>
#include "collector/store/idx_int.h"
#include "collector/store/idx_read.h"
#include "collector/store/col_log.h"
#include "collector/store/seg_writer.h"
#include "collector/store/rollup.h"
#include "collector/daemon/storedir.h"
#include "shm/d9_abi.h"
#include "shm/meta.h"
#include "tests/unit/meta_entry.h"

#define BIG_CAP (1ULL << 30)

struct fx {
    char dir[64];
    struct storedir st;
};

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st; (void)flag; (void)f;
    return remove(p);
}

static int setup(void **state)
{
    struct fx *fx = calloc(1, sizeof *fx);
    strcpy(fx->dir, "/tmp/d9storetest.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    col_log_init("test_storedir", COL_LOG_ERROR);
    char err[256];
    assert_int_equal(storedir_open(&fx->st, fx->dir, BIG_CAP, err, sizeof err), 0);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fx *fx = *state;
    storedir_close(&fx->st);
    nftw(fx->dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
    free(fx);
    return 0;
}

static const struct seg_proc_info proc = {
    .pid = 4242, .uid = 0, .start_time = 777, .clock_source = D9_CLOCK_MONOTONIC,
    .host = "testhost", .comm = "worker", .exe = "/usr/bin/worker",
};

/* A writer holding n poll_start records stamped from t0. */
static struct seg_writer *writer_with(struct fx *fx, unsigned n, uint64_t t0)
{
    struct seg_writer *w = NULL;
    assert_int_equal(storedir_writer_open(&fx->st, &proc, NULL, 0, &w), 0);
    struct d9_rec_poll_start recs[64];
    assert_true(n <= 64);
    memset(recs, 0, sizeof recs);
    for (unsigned i = 0; i < n; i++) {
        recs[i].h.len = sizeof recs[i];
        recs[i].h.type = D9_REC_POLL_START;
        recs[i].h.seq = i;
        recs[i].h.ts = t0 + i;
        recs[i].task = i;
    }
    assert_int_equal(seg_writer_add_data(w, 1, 0, 1, 0, (const uint8_t *)recs,
                                         n * sizeof recs[0]), 0);
    return w;
}

static int64_t process_row(struct fx *fx)
{
    struct idx_process ip = { .pid = proc.pid, .uid = proc.uid, .start_time = proc.start_time,
                              .comm = proc.comm, .exe = proc.exe, .first_ns = 1 };
    int64_t id = 0;
    assert_int_equal(idx_process_upsert(fx->st.idx, &ip, &id), 0);
    return id;
}

static int count_files(const char *dir, const char *prefix, const char *suffix)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name), sl = strlen(suffix);
        if (strncmp(de->d_name, prefix, strlen(prefix)) == 0 && l > sl &&
            strcmp(de->d_name + l - sl, suffix) == 0)
            n++;
    }
    closedir(d);
    return n;
}

static uint64_t rows(struct fx *fx)
{
    uint64_t b = 0;
    assert_int_equal(idx_total_bytes(fx->st.idx, &b), 0);
    return b;
}

/* stderr of a stretch of the test, into a file of the fixture dir */
struct capture {
    int fd, saved;
};

static void capture_begin(struct fx *fx, struct capture *c)
{
    char path[256];
    snprintf(path, sizeof path, "%s/stderr.txt", fx->dir);
    c->fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(c->fd >= 0);
    unlink(path);
    fflush(stderr);
    c->saved = dup(2);
    assert_true(c->saved >= 0);
    assert_true(dup2(c->fd, 2) == 2);
}

static void capture_end(struct capture *c, char *out, size_t cap)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    ssize_t n = pread(c->fd, out, cap - 1, 0);
    out[n > 0 ? n : 0] = 0;
    close(c->fd);
}

static void an_unusable_store_path_fails_with_one_message_naming_it(void **state)
{
    struct fx *fx = *state;
    char file[128], sub[160], err[512] = "";
    snprintf(file, sizeof file, "%s/plainfile", fx->dir);
    fclose(fopen(file, "w"));
    snprintf(sub, sizeof sub, "%s/store", file);
    struct storedir s2;
    assert_true(storedir_open(&s2, sub, BIG_CAP, err, sizeof err) < 0);
    assert_non_null(strstr(err, sub));
    assert_null(strchr(err, '\n'));
}

static void an_index_that_is_not_sqlite_fails_with_one_line_naming_it(void **state)
{
    struct fx *fx = *state;
    char store[160], ipath[200], err[1024] = "", log[1024];
    snprintf(store, sizeof store, "%s/badstore", fx->dir);
    assert_int_equal(mkdir(store, 0755), 0);
    snprintf(ipath, sizeof ipath, "%s/%s", store, IDX_FILE_NAME);
    FILE *f = fopen(ipath, "w");
    assert_non_null(f);
    for (int i = 0; i < 256; i++)
        fputs("this is not an SQLite database\n", f);
    fclose(f);
    struct storedir s2;
    struct capture c;
    capture_begin(fx, &c);
    int rc = storedir_open(&s2, store, BIG_CAP, err, sizeof err);
    capture_end(&c, log, sizeof log);
    assert_true(rc < 0);
    assert_string_equal(log, "");           /* the caller prints err: one line in all */
    assert_non_null(strstr(err, "cannot open index: "));
    assert_non_null(strstr(err, IDX_FILE_NAME));
    assert_null(strchr(err, '\n'));
    unlink(ipath);
    rmdir(store);
}

static void sealing_indexes_the_segment_with_its_size(void **state)
{
    struct fx *fx = *state;
    int64_t pid_row = process_row(fx);
    struct seg_writer *w = writer_with(fx, 10, 100);
    uint64_t id = seg_writer_id(w);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", seg_writer_path(w));
    assert_int_equal(storedir_seal(&fx->st, w, pid_row, 4242, 10), 0);
    /* with its rollups, the bytes every re-index of the file computes */
    uint8_t *ru, *want;
    size_t ru_len, want_len;
    assert_int_equal(idx_read_rollup(fx->st.idx, id, &ru, &ru_len), 1);
    char *slash = strrchr(path, '/');
    assert_non_null(slash);
    char sealed[PATH_MAX];
    snprintf(sealed, sizeof sealed, "%.*s/%s", (int)(slash - path), path,
             slash + 1 + strlen(SEG_TMP_PREFIX));
    assert_int_equal(rollup_file(sealed, &want, &want_len), 0);
    assert_int_equal(ru_len, want_len);
    assert_memory_equal(ru, want, ru_len);
    free(ru);
    free(want);
    assert_int_equal(count_files(fx->dir, "", SEG_FILE_SUFFIX), 1);
    assert_int_equal(count_files(fx->dir, SEG_TMP_PREFIX, SEG_FILE_SUFFIX), 0);
    assert_true(rows(fx) > 0);
    assert_int_equal(fx->st.indexed_bytes, rows(fx));
    assert_int_equal(fx->st.segments_sealed, 1);
}

/* Seal w with writes past the segment header refused (EFBIG); returns what
 * storedir_seal returned and the stderr it printed in out. */
static int seal_failing(struct fx *fx, struct seg_writer *w, int64_t pid_row, uint32_t pid,
                        char *out, size_t cap)
{
    struct capture c;
    capture_begin(fx, &c);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = SEG_HDR_SIZE;
    void (*oldsig)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = storedir_seal(&fx->st, w, pid_row, pid, 10);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, oldsig);
    capture_end(&c, out, cap);
    return rc;
}

static void a_failed_seal_is_logged_with_the_traced_process_pid(void **state)
{
    struct fx *fx = *state;
    int64_t pid_row = process_row(fx);
    char log[1024];
    assert_true(seal_failing(fx, writer_with(fx, 10, 100), pid_row, 4242, log, sizeof log) < 0);
    assert_non_null(strstr(log, "segment seal for pid 4242 failed"));
    assert_int_equal(fx->st.dropped_records, 10);
}

static void retention_evicts_the_oldest_segments_first(void **state)
{
    struct fx *fx = *state;
    int64_t pid_row = process_row(fx);
    uint64_t ids[3];
    for (int i = 0; i < 3; i++) {
        ids[i] = fx->st.next_segment_id;
        assert_int_equal(storedir_seal(&fx->st, writer_with(fx, 8, 1000u * (i + 1)), pid_row, 4242, 8), 0);
    }
    uint64_t one = rows(fx) / 3;
    fx->st.cap_bytes = 2 * one;             /* room for two */
    assert_int_equal(storedir_enforce_cap(&fx->st), 0);
    assert_int_equal(fx->st.segments_evicted, 1);
    uint64_t oldest;
    char path[256];
    assert_int_equal(idx_oldest_segment(fx->st.idx, &oldest, path, sizeof path), 0);
    assert_int_equal(oldest, ids[1]);      /* the first one went */
    assert_int_equal(count_files(fx->dir, "", SEG_FILE_SUFFIX), 2);
    assert_true(rows(fx) <= fx->st.cap_bytes);
}

static void recovery_salvages_a_temp_segment_left_by_a_crashed_collector(void **state)
{
    struct fx *fx = *state;
    pid_t child = fork();
    if (child == 0) {
        /* the "collector" writes and flushes, then dies without sealing */
        struct seg_writer *w = writer_with(fx, 20, 50);
        _exit(seg_writer_flush(w) == 0 ? 0 : 1);
    }
    int status;
    waitpid(child, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(count_files(fx->dir, SEG_TMP_PREFIX, SEG_FILE_SUFFIX), 1);
    assert_int_equal(storedir_recover(&fx->st), 0);
    assert_int_equal(fx->st.segments_salvaged, 1);
    assert_int_equal(count_files(fx->dir, SEG_TMP_PREFIX, SEG_FILE_SUFFIX), 0);
    assert_int_equal(count_files(fx->dir, "", SEG_FILE_SUFFIX), 1);
    assert_true(rows(fx) > 0);
}

static uint64_t block_rows(struct fx *fx, uint64_t segment_id)
{
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(idx_db(fx->st.idx), "SELECT count(*), count(DISTINCT offset)"
                                        " FROM blocks WHERE segment_id = ?1", -1, &q, NULL),
                     SQLITE_OK);
    sqlite3_bind_int64(q, 1, (sqlite3_int64)segment_id);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    uint64_t n = (uint64_t)sqlite3_column_int64(q, 0);
    assert_int_equal(sqlite3_column_int64(q, 1), (sqlite3_int64)n);     /* no row twice */
    sqlite3_finalize(q);
    return n;
}

static void blocks_indexed_while_writing_are_committed_once_by_the_seal(void **state)
{
    struct fx *fx = *state;
    int64_t pid_row = process_row(fx);
    uint64_t id = fx->st.next_segment_id;
    struct seg_writer *w = writer_with(fx, 5, 10);
    /* below the batch: nothing yet */
    assert_int_equal(storedir_index_blocks(&fx->st, w, 2), 0);
    assert_int_equal(block_rows(fx, id), 0);
    assert_int_equal(storedir_index_blocks(&fx->st, w, 1), 0);
    assert_int_equal(block_rows(fx, id), 1);
    assert_int_equal(rows(fx), 0);          /* no segment row: readers see nothing yet */
    struct d9_rec_poll_start r = { .h = { .len = sizeof r, .type = D9_REC_POLL_START,
                                          .seq = 5, .ts = 20 } };
    assert_int_equal(seg_writer_add_data(w, 1, 0, 1, 0, (const uint8_t *)&r, sizeof r), 0);
    assert_int_equal(storedir_seal(&fx->st, w, pid_row, 4242, 6), 0);
    assert_int_equal(block_rows(fx, id), 2);
    assert_true(rows(fx) > 0);
}

static void recovery_drops_the_block_rows_of_a_segment_never_sealed(void **state)
{
    struct fx *fx = *state;
    uint64_t id = fx->st.next_segment_id;
    struct seg_writer *w = writer_with(fx, 20, 50);
    assert_int_equal(storedir_index_blocks(&fx->st, w, 0), 0);
    assert_int_equal(seg_writer_flush(w), 0);
    seg_writer_abandon(w);                  /* the collector stops here, temp file kept */
    assert_int_equal(block_rows(fx, id), 1);
    /* salvage indexes the file's blocks again: the old rows must be gone
     * first, or the commit fails on (segment_id, offset) */
    assert_int_equal(storedir_recover(&fx->st), 0);
    assert_int_equal(fx->st.segments_salvaged, 1);
    assert_true(rows(fx) > 0);
    assert_int_equal(block_rows(fx, id), 1);
}

static void recovery_indexes_sealed_files_that_have_no_row(void **state)
{
    struct fx *fx = *state;
    int64_t pid_row = process_row(fx);
    uint64_t id = fx->st.next_segment_id;
    assert_int_equal(storedir_seal(&fx->st, writer_with(fx, 5, 10), pid_row, 4242, 5), 0);
    assert_int_equal(idx_segment_delete(fx->st.idx, id), 0);  /* a crash between seal and commit */
    assert_int_equal(rows(fx), 0);
    assert_int_equal(storedir_recover(&fx->st), 0);
    assert_int_equal(fx->st.segments_reindexed, 1);
    assert_true(rows(fx) > 0);
}

struct seen {
    int runtimes, threads, ended;
    char runtime[32], state[16];
};

static int seen_runtime(void *arg, const struct idx_read_runtime *r)
{
    struct seen *s = arg;
    s->runtimes++;
    snprintf(s->runtime, sizeof s->runtime, "%s", r->name);
    return 0;
}

static int seen_thread(void *arg, const struct idx_read_thread *r)
{
    struct seen *s = arg;
    s->threads++;
    s->ended += r->ended != 0;
    return 0;
}

static int seen_process(void *arg, const struct idx_read_process *r)
{
    snprintf(((struct seen *)arg)->state, sizeof ((struct seen *)arg)->state, "%s", r->state);
    return 0;
}

/* The file alone says which runtimes, threads and end the process had:
 * recovery indexes them as fsck --repair and d9 pull do (reindex.h). */
static void recovery_indexes_a_file_s_runtimes_threads_and_process_end(void **state)
{
    struct fx *fx = *state;
    uint8_t meta[64];
    size_t ml = meta_entry_runtime(meta, 3, "tokio");
    uint64_t id = fx->st.next_segment_id;
    struct seg_writer *w = NULL;
    assert_int_equal(storedir_writer_open(&fx->st, &proc, meta, ml, &w), 0);
    struct d9_rec_poll_start r = { .h = { sizeof r, D9_REC_POLL_START, 0, 100 }, .task = 1 };
    assert_int_equal(seg_writer_add_data(w, 11, 0, 1, 0, (const uint8_t *)&r, sizeof r), 0);
    r.h.ts = 150;
    assert_int_equal(seg_writer_add_data(w, 12, 1, 1, 0, (const uint8_t *)&r, sizeof r), 0);
    assert_int_equal(seg_writer_add_thread_end(w, 11, 0, 1, 160), 0);
    struct seg_exit ex = { .t_ns = 200, .reason = SEG_EXIT_CRASHED, .code = 11 };
    assert_int_equal(seg_writer_add_exit(w, &ex), 0);
    int64_t pid_row = process_row(fx);
    assert_int_equal(storedir_seal(&fx->st, w, pid_row, proc.pid, 2), 0);
    /* a crash between the seal and its commit, on a fresh index */
    assert_int_equal(idx_segment_delete(fx->st.idx, id), 0);
    assert_int_equal(storedir_recover(&fx->st), 0);
    assert_int_equal(fx->st.segments_reindexed, 1);
    struct seen s = { 0 };
    assert_true(idx_read_runtimes(fx->st.idx, proc.pid, 0, seen_runtime, &s) >= 0);
    assert_true(idx_read_threads(fx->st.idx, proc.pid, 0, seen_thread, &s) >= 0);
    assert_true(idx_read_processes_window(fx->st.idx, proc.pid, 0, UINT64_MAX, seen_process,
                                          &s) >= 0);
    assert_int_equal(s.runtimes, 1);
    assert_string_equal(s.runtime, "tokio");
    assert_int_equal(s.threads, 2);
    assert_int_equal(s.ended, 1);
    assert_string_equal(s.state, "crashed");
}

/* A seal whose index commit fails (the disk full under the index) leaves a
 * whole sealed file without a row; the next seal whose commit works indexes
 * it too, so its records are back in queries without a restart. */
static void a_seal_whose_commit_failed_is_indexed_by_the_next_good_one(void **state)
{
    struct fx *fx = *state;
    int64_t pid_row = process_row(fx);
    sqlite3 *db = idx_db(fx->st.idx);
    assert_int_equal(sqlite3_exec(db, "CREATE TEMP TRIGGER no_room BEFORE INSERT ON main.segments "
                                  "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
                                  NULL, NULL, NULL), SQLITE_OK);
    char log[1024];
    struct capture c;
    capture_begin(fx, &c);
    int rc = storedir_seal(&fx->st, writer_with(fx, 5, 10), pid_row, 4242, 5);
    capture_end(&c, log, sizeof log);
    assert_true(rc < 0);
    assert_non_null(strstr(log, "index commit for pid 4242 failed"));
    assert_int_equal(count_files(fx->dir, "", SEG_FILE_SUFFIX), 1);
    assert_int_equal(rows(fx), 0);
    assert_int_equal(sqlite3_exec(db, "DROP TRIGGER temp.no_room", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(storedir_seal(&fx->st, writer_with(fx, 5, 20), pid_row, 4242, 5), 0);
    assert_int_equal(count_files(fx->dir, "", SEG_FILE_SUFFIX), 2);
    assert_int_equal(fx->st.segments_reindexed, 1);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*), sum(bytes) FROM segments", -1, &st,
                                        NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int64(st, 0), 2);
    assert_int_equal((uint64_t)sqlite3_column_int64(st, 1), fx->st.indexed_bytes);
    sqlite3_finalize(st);
}

static void new_segment_ids_skip_every_id_found_on_disk(void **state)
{
    struct fx *fx = *state;
    int64_t pid_row = process_row(fx);
    uint64_t id = fx->st.next_segment_id;
    assert_int_equal(storedir_seal(&fx->st, writer_with(fx, 5, 10), pid_row, 4242, 5), 0);
    assert_int_equal(idx_segment_delete(fx->st.idx, id), 0);
    /* reopen as after a restart: the index alone would hand out id again */
    storedir_close(&fx->st);
    char err[256];
    assert_int_equal(storedir_open(&fx->st, fx->dir, BIG_CAP, err, sizeof err), 0);
    assert_int_equal(storedir_recover(&fx->st), 0);
    assert_true(fx->st.next_segment_id > id);
}

static void a_failed_write_blocks_writes_until_the_retry_time(void **state)
{
    struct fx *fx = *state;
    const uint64_t now = 5000000000ULL;
    assert_true(storedir_writable(&fx->st, now));
    storedir_write_failed(&fx->st, -ENOSPC, "data block", 1, now);
    assert_int_equal(fx->st.write_errors, 1);
    assert_false(storedir_writable(&fx->st, now + 1));
    assert_true(storedir_writable(&fx->st, now + STOREDIR_WRITE_RETRY_NS));
    storedir_write_ok(&fx->st);
    assert_true(storedir_writable(&fx->st, now + 1));
}

/* A new store: directory 2750, index (and its -wal, -shm) 0640, whatever the umask. */
static void a_new_store_is_private_to_its_user_and_group(void **state)
{
    (void)state;
    char dir[64] = "/tmp/d9storemode.XXXXXX", sub[128], err[256], p[192];
    assert_non_null(mkdtemp(dir));
    snprintf(sub, sizeof sub, "%s/a/store", dir);
    mode_t um = umask(0);           /* the widest umask: modes must not depend on it */
    struct storedir st;
    int rc = storedir_open(&st, sub, BIG_CAP, err, sizeof err);
    umask(um);
    assert_int_equal(rc, 0);
    struct stat sb;
    assert_int_equal(stat(sub, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, STOREDIR_DIR_MODE);
    snprintf(p, sizeof p, "%s/a", dir);
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, STOREDIR_PARENT_MODE);
    static const char *const files[] = { "index.sqlite", "index.sqlite-wal", "index.sqlite-shm" };
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", sub, files[i]);
        assert_int_equal(stat(p, &sb), 0);
        assert_int_equal(sb.st_mode & 07777, STOREDIR_FILE_MODE);
    }
    storedir_close(&st);
    nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

static mode_t mode_of(const char *dir, const char *name, gid_t *gid)
{
    char p[512];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    assert_int_equal(lstat(p, &sb), 0);
    *gid = sb.st_gid;
    return sb.st_mode & 07777;
}

/* A store made before the rule (0755, files 0644) is made private again,
 * for the group asked; what is not a store file of ours is left alone. */
static void securing_a_store_tightens_its_directory_and_files_for_the_group(void **state)
{
    struct fx *fx = *state;
    gid_t want = geteuid() == 0 ? 65533 : getegid();
    char p[512], err[256];
    assert_int_equal(storedir_seal(&fx->st, writer_with(fx, 3, 1000), process_row(fx), 4242, 3), 0);
    char seg[NAME_MAX + 1] = "";
    DIR *d = opendir(fx->dir);
    for (struct dirent *de; (de = readdir(d));)
        if (strstr(de->d_name, SEG_FILE_SUFFIX) && de->d_name[0] != '.')
            snprintf(seg, sizeof seg, "%s", de->d_name);
    closedir(d);
    assert_true(seg[0]);
    chmod(fx->dir, 0755);
    snprintf(p, sizeof p, "%s/index.sqlite", fx->dir);
    chmod(p, 0644);
    snprintf(p, sizeof p, "%s/%s", fx->dir, seg);
    chmod(p, 0644);
    snprintf(p, sizeof p, "%s/notes.txt", fx->dir);         /* not a store file */
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
    assert_true(fd >= 0);
    close(fd);
    snprintf(p, sizeof p, "%s/777-1-777.d9seg", fx->dir);   /* a link: never followed */
    char target[128];
    snprintf(target, sizeof target, "%s/notes.txt", fx->dir);
    assert_int_equal(symlink(target, p), 0);
    assert_int_equal(storedir_secure(&fx->st, want, err, sizeof err), 0);
    gid_t g;
    assert_int_equal(mode_of(fx->dir, ".", &g), STOREDIR_DIR_MODE);
    assert_int_equal(g, want);
    assert_int_equal(mode_of(fx->dir, "index.sqlite", &g), STOREDIR_FILE_MODE);
    assert_int_equal(g, want);
    assert_int_equal(mode_of(fx->dir, seg, &g), STOREDIR_FILE_MODE);
    assert_int_equal(g, want);
    assert_int_equal(mode_of(fx->dir, "notes.txt", &g), 0644);
}

/* A user that is not root may not give its store to a group it is not in. */
static void securing_for_a_foreign_group_fails_with_one_line(void **state)
{
    struct fx *fx = *state;
    char err[256] = "";
    if (geteuid() == 0) {
        pid_t k = fork();
        assert_true(k >= 0);
        if (k == 0) {
            if (chown(fx->dir, 65534, 65534) != 0 || setgroups(0, NULL) != 0 ||
                setgid(65534) != 0 || setuid(65534) != 0)
                _exit(3);
            int rc = storedir_secure(&fx->st, 65533, err, sizeof err);
            _exit(rc == -EPERM && strstr(err, "member") && strstr(err, fx->dir) ? 0 : 4);
        }
        int st;
        assert_int_equal(waitpid(k, &st, 0), k);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
    } else {
        assert_int_equal(storedir_secure(&fx->st, 0, err, sizeof err), -EPERM);
        assert_non_null(strstr(err, fx->dir));
    }
}

/* Securing the store while its index is open must not drop SQLite's locks
 * (closing any descriptor of a file drops the process's fcntl locks on
 * it): another connection that closes must still see a live writer and
 * leave the -wal and -shm in place. */
static void securing_the_store_keeps_the_open_index_s_locks(void **state)
{
    struct fx *fx = *state;
    char err[256], p[512];
    process_row(fx);                            /* something in the WAL */
    assert_int_equal(storedir_secure(&fx->st, getegid(), err, sizeof err), 0);
    if (system("command -v sqlite3 >/dev/null 2>&1") != 0) {
        skip();                                 /* the other connection is sqlite3's CLI */
        return;
    }
    /* another program (not a fork: that would share this process's SQLite
     * state): on close it checkpoints and deletes the WAL if it believes
     * itself the last connection, and our later writes go to a deleted file */
    snprintf(p, sizeof p, "sqlite3 '%s/index.sqlite' 'SELECT count(*) FROM processes' "
             ">/dev/null", fx->dir);
    assert_int_equal(system(p), 0);
    snprintf(p, sizeof p, "%s/index.sqlite-wal", fx->dir);
    assert_int_equal(access(p, F_OK), 0);
    snprintf(p, sizeof p, "%s/index.sqlite-shm", fx->dir);
    assert_int_equal(access(p, F_OK), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(an_unusable_store_path_fails_with_one_message_naming_it, setup, teardown),
        cmocka_unit_test_setup_teardown(an_index_that_is_not_sqlite_fails_with_one_line_naming_it, setup, teardown),
        cmocka_unit_test_setup_teardown(sealing_indexes_the_segment_with_its_size, setup, teardown),
        cmocka_unit_test_setup_teardown(a_failed_seal_is_logged_with_the_traced_process_pid, setup, teardown),
        cmocka_unit_test_setup_teardown(retention_evicts_the_oldest_segments_first, setup, teardown),
        cmocka_unit_test_setup_teardown(recovery_salvages_a_temp_segment_left_by_a_crashed_collector, setup, teardown),
        cmocka_unit_test_setup_teardown(recovery_indexes_sealed_files_that_have_no_row, setup, teardown),
        cmocka_unit_test_setup_teardown(recovery_indexes_a_file_s_runtimes_threads_and_process_end,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(blocks_indexed_while_writing_are_committed_once_by_the_seal, setup, teardown),
        cmocka_unit_test_setup_teardown(recovery_drops_the_block_rows_of_a_segment_never_sealed, setup, teardown),
        cmocka_unit_test_setup_teardown(new_segment_ids_skip_every_id_found_on_disk, setup, teardown),
        cmocka_unit_test_setup_teardown(a_failed_write_blocks_writes_until_the_retry_time, setup, teardown),
        cmocka_unit_test_setup_teardown(a_seal_whose_commit_failed_is_indexed_by_the_next_good_one, setup, teardown),
        cmocka_unit_test(a_new_store_is_private_to_its_user_and_group),
        cmocka_unit_test_setup_teardown(securing_a_store_tightens_its_directory_and_files_for_the_group, setup, teardown),
        cmocka_unit_test_setup_teardown(securing_for_a_foreign_group_fails_with_one_line, setup, teardown),
        cmocka_unit_test_setup_teardown(securing_the_store_keeps_the_open_index_s_locks, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
