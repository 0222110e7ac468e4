/*
 * test_idx.c — the SQLite index of a store (collector/store/idx.c), as a
 * specification: schema, upserts, atomic segment commits, read-only access,
 * schema version checks.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "collector/store/idx_int.h"
#include "collector/store/idx_read.h"
#include "collector/store/seg_writer.h"
#include "tests/unit/idx_fixture.h"

/* snprintf without gcc's truncation guesses on fixture paths */
static void fmt(char *out, size_t cap, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *out, size_t cap, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(out, cap, f, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < cap);
}

static sqlite3 *db(struct fx *fx)
{
    return idx_db(fx->x);
}

/* First column of the first row of sql as int64 (-1 if no row). */
static int64_t q_int(sqlite3 *d, const char *sql)
{
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(d, sql, -1, &s, NULL), SQLITE_OK);
    int64_t v = -1;
    if (sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_type(s, 0) == SQLITE_NULL ? -2 : sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* Rows of sql joined as "a|b,c|d". */
static void q_text(sqlite3 *d, const char *sql, char *out, size_t cap)
{
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(d, sql, -1, &s, NULL), SQLITE_OK);
    size_t n = 0;
    out[0] = 0;
    int row = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        for (int c = 0; c < sqlite3_column_count(s); c++) {
            const unsigned char *t = sqlite3_column_text(s, c);
            n += (size_t)snprintf(out + n, cap - n, "%s%s", c ? "|" : (row ? "," : ""),
                                  t ? (const char *)t : "NULL");
        }
        row++;
    }
    sqlite3_finalize(s);
}

static const struct seg_proc_info proc = {
    .pid = 4242, .uid = 1000, .start_time = 777, .clock_source = D9_CLOCK_MONOTONIC,
    .host = "h", .comm = "worker", .exe = "/bin/worker",
};

static int64_t add_process(struct fx *fx)
{
    struct idx_process p = { .pid = 4242, .uid = 1000, .start_time = 777, .comm = "worker",
                             .exe = "/bin/worker", .first_ns = 500 };
    int64_t id = 0;
    assert_int_equal(idx_process_upsert(fx->x, &p, &id), 0);
    assert_true(id > 0);
    return id;
}

/* A real sealed segment in the store with two data blocks. */
static struct seg_writer *make_segment(struct fx *fx, uint64_t id, uint64_t t0,
                                       struct seg_summary *sum)
{
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, id, &proc, NULL, 0), 0);
    for (int b = 0; b < 2; b++) {
        uint8_t data[96];
        size_t len = 0;
        for (int i = 0; i < 3; i++) {
            struct d9_rec_poll_end r = { .h = { .len = sizeof r, .type = D9_REC_POLL_END,
                                                .seq = (uint32_t)i,
                                                .ts = t0 + (uint64_t)(b * 10 + i) } };
            memcpy(data + len, &r, sizeof r);
            len += sizeof r;
        }
        assert_int_equal(seg_writer_add_data(w, 100 + (uint32_t)b, (uint32_t)b, 1, 2, data, len),
                         0);
    }
    assert_int_equal(seg_writer_seal(w, sum), 0);
    return w;
}

/* ---- schema ------------------------------------------------------------------ */

static void expect_columns(sqlite3 *d, const char *table, const char *cols)
{
    char sql[128], got[1024];
    fmt(sql, sizeof sql, "SELECT name FROM pragma_table_info('%s') ORDER BY cid", table);
    q_text(d, sql, got, sizeof got);
    assert_string_equal(got, cols);
}

static void test_open_creates_the_documented_schema(void **state)
{
    struct fx *fx = *state;
    sqlite3 *d = db(fx);
    expect_columns(d, "meta", "key,value");
    expect_columns(d, "processes", "id,pid,start_time,uid,comm,exe,first_ns,last_ns,state,"
                                   "exit_code,records,lost");
    expect_columns(d, "threads", "id,process_id,tid,ring,generation,name,first_ns,last_ns,ended");
    expect_columns(d, "runtimes", "process_id,runtime_id,name");
    expect_columns(d, "segments", "id,process_id,path,t_min,t_max,bytes,records,lost,sealed_ns,"
                                  "n_poll_start,n_poll_end,n_wake,n_worker_park,n_worker_unpark,"
                                  "n_task_spawn,n_task_terminate,n_queue_depth,n_custom,"
                                  "n_cpu_sample,n_sched_switch");
    expect_columns(d, "blocks", "segment_id,offset,len,kind,tid,ring,generation,nrec,t_first,"
                                "t_last,lost");
    expect_columns(d, "uploads", "segment_id,state,attempts,last_error,next_ns,updated_ns");
    expect_columns(d, "drops", "process_id,mismatch,too_big,no_ring,bad_stamps");
    expect_columns(d, "rollups", "segment_id,data");
    expect_columns(d, "kept", "segment_id,trig_ns,t0_ns,t1_ns,trig_pid,ntrig,source_segment,"
                              "reason");
    expect_columns(d, "triggers",
                   "id,pid,process_id,t_ns,source,reason,verdict,win_t0,win_t1,fields");
    char got[512];
    q_text(d, "SELECT m.tbl_name || '(' || group_concat(i.name) || ')' FROM sqlite_master m,"
              " pragma_index_info(m.name) i WHERE m.type = 'index' AND m.sql IS NOT NULL"
              " GROUP BY m.name ORDER BY 1", got, sizeof got);
    assert_string_equal(got, "blocks(segment_id,nrec),blocks(segment_id,t_first),processes(pid),"
                             "segments(process_id,t_min),segments(t_min,t_max),"
                             "triggers(t_ns)");
    assert_int_equal(q_int(d, "SELECT count(*) FROM pragma_foreign_key_list('threads')"
                              " WHERE \"table\" = 'processes' AND \"from\" = 'process_id'"), 1);
}

static void test_open_sets_wal_full_sync_and_foreign_keys(void **state)
{
    struct fx *fx = *state;
    char mode[16];
    q_text(db(fx), "PRAGMA journal_mode", mode, sizeof mode);
    assert_string_equal(mode, "wal");
    assert_int_equal(q_int(db(fx), "PRAGMA synchronous"), 2);  /* FULL */
    assert_int_equal(q_int(db(fx), "PRAGMA foreign_keys"), 1);
    assert_true(q_int(db(fx), "PRAGMA busy_timeout") >= 1000);
}

static void test_meta_holds_version_host_created_and_boot_identity(void **state)
{
    struct fx *fx = *state;
    assert_int_equal(q_int(db(fx), "SELECT value FROM meta WHERE key = 'schema_version'"),
                     IDX_SCHEMA_VERSION);
    assert_true(q_int(db(fx), "SELECT value FROM meta WHERE key = 'created'") > 0);
    assert_true(q_int(db(fx), "SELECT value FROM meta WHERE key = 'boot_realtime_ns'") > 0);
    assert_true(q_int(db(fx), "SELECT length(value) FROM meta WHERE key = 'host'") > 0);
    char boot[64] = "", got[64];
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        assert_non_null(fgets(boot, sizeof boot, f));
        boot[strcspn(boot, "\n")] = 0;
        fclose(f);
        q_text(db(fx), "SELECT value FROM meta WHERE key = 'boot_id'", got, sizeof got);
        assert_string_equal(got, boot);
    }
}

static void test_foreign_open_keeps_the_origins_boot_identity(void **state)
{
    struct fx *fx = *state;
    assert_int_equal(idx_set_origin(fx->x, "web-1", "b00t-1d", 123456789), 0);
    idx_close(fx->x);
    /* a store rebuilt from another host's segments: reopening keeps the origin's */
    assert_int_equal(idx_open_ex(&fx->x, fx->dir, IDX_OPEN_FOREIGN, NULL, 0), 0);
    char got[256];
    q_text(db(fx), "SELECT value FROM meta WHERE key IN ('boot_id', 'boot_realtime_ns', 'host')"
                   " ORDER BY key", got, sizeof got);
    assert_string_equal(got, "b00t-1d,123456789,web-1");
    /* without a boot id the previous one stays */
    assert_int_equal(idx_set_origin(fx->x, "web-1", NULL, 5), 0);
    q_text(db(fx), "SELECT value FROM meta WHERE key IN ('boot_id', 'boot_realtime_ns')"
                   " ORDER BY key", got, sizeof got);
    assert_string_equal(got, "b00t-1d,5");
    /* a normal open (the collector's) refreshes them again */
    idx_close(fx->x);
    assert_int_equal(idx_open(&fx->x, fx->dir), 0);
    assert_true(q_int(db(fx), "SELECT value FROM meta WHERE key = 'boot_realtime_ns'") > 5);
}

static void test_set_origin_needs_a_writable_index(void **state)
{
    struct fx *fx = *state;
    struct idx *ro;
    assert_int_equal(idx_open_readonly(&ro, fx->dir), 0);
    assert_int_equal(idx_set_origin(ro, "web-1", "b", 1), -EINVAL);
    idx_close(ro);
    assert_int_equal(idx_set_origin(fx->x, NULL, "b", 1), -EINVAL);
}

static void test_reopening_keeps_rows_and_restores_wal(void **state)
{
    struct fx *fx = *state;
    int64_t pid = add_process(fx);
    assert_int_equal(sqlite3_exec(db(fx), "PRAGMA journal_mode=DELETE", NULL, NULL, NULL),
                     SQLITE_OK);
    idx_close(fx->x);
    assert_int_equal(idx_open(&fx->x, fx->dir), 0);
    assert_int_equal(q_int(db(fx), "SELECT count(*) FROM processes"), 1);
    assert_int_equal(add_process(fx), pid);
    char mode[16];
    q_text(db(fx), "PRAGMA journal_mode", mode, sizeof mode);
    assert_string_equal(mode, "wal");
}

static void test_newer_schema_version_is_refused_with_a_clear_error(void **state)
{
    struct fx *fx = *state;
    assert_int_equal(sqlite3_exec(db(fx), "UPDATE meta SET value = '99' WHERE key ="
                                          " 'schema_version'", NULL, NULL, NULL), SQLITE_OK);
    idx_close(fx->x);
    fx->x = NULL;
    char why[512];
    struct idx *x;
    assert_int_equal(idx_open_ex(&x, fx->dir, 0, why, sizeof why), -EPROTONOSUPPORT);
    assert_non_null(strstr(why, "version 99 is newer"));
    assert_int_equal(idx_open_ex(&x, fx->dir, IDX_OPEN_READONLY, why, sizeof why),
                     -EPROTONOSUPPORT);
    assert_null(x);
    /* nothing was written by the refused opens */
    sqlite3 *d;
    char path[128];
    fmt(path, sizeof path, "%s/%s", fx->dir, IDX_FILE_NAME);
    assert_int_equal(sqlite3_open(path, &d), SQLITE_OK);
    assert_int_equal(q_int(d, "SELECT value FROM meta WHERE key = 'schema_version'"), 99);
    sqlite3_close(d);
}

static void test_foreign_database_is_refused(void **state)
{
    struct fx *fx = *state;
    char dir[128], path[192];
    fmt(dir, sizeof dir, "%s/other", fx->dir);
    mkdir(dir, 0700);
    fmt(path, sizeof path, "%s/%s", dir, IDX_FILE_NAME);
    sqlite3 *d;
    assert_int_equal(sqlite3_open(path, &d), SQLITE_OK);
    assert_int_equal(sqlite3_exec(d, "CREATE TABLE t(a)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(d);
    struct idx *x;
    char why[512];
    assert_int_equal(idx_open_ex(&x, dir, 0, why, sizeof why), -EBADMSG);
    assert_non_null(strstr(why, "not a d9 index"));
    int fd = open(path, O_WRONLY | O_TRUNC);
    assert_int_equal(write(fd, "garbage garbage garbage garbage garbage garbage garbage!!!!"
                               "garbage garbage garbage garbage garbage garbage garbage!!!!",
                           118), 118);
    close(fd);
    assert_int_equal(idx_open_ex(&x, dir, 0, why, sizeof why), -EBADMSG);
}

/* ---- processes, threads, runtimes -------------------------------------------- */

static void test_process_upsert_is_idempotent_and_refreshes(void **state)
{
    struct fx *fx = *state;
    int64_t id = add_process(fx);
    struct idx_process p = { .pid = 4242, .uid = 1000, .start_time = 777, .comm = "renamed",
                             .first_ns = 100 };
    int64_t id2;
    assert_int_equal(idx_process_upsert(fx->x, &p, &id2), 0);
    assert_int_equal(id2, id);
    char got[256];
    q_text(db(fx), "SELECT comm, exe, first_ns, state, exit_code, records, lost FROM processes",
           got, sizeof got);
    assert_string_equal(got, "renamed|/bin/worker|100|alive|NULL|0|0");
    p.start_time = 778;         /* pid reuse: a different process */
    assert_int_equal(idx_process_upsert(fx->x, &p, &id2), 0);
    assert_true(id2 != id);
}

/* A (pid, start) row never changes owner, and the collector adopting a
 * region never reopens a finished process: a region planted after root's
 * process died, under its pid and start time, cannot rewrite its row. */
static void test_a_process_row_keeps_its_uid_and_an_ended_one_is_not_adopted(void **state)
{
    struct fx *fx = *state;
    int64_t id = add_process(fx), id2 = 0;
    struct idx_process forged = { .pid = 4242, .uid = 65534, .start_time = 777, .comm = "forged",
                                  .first_ns = 1 };
    assert_int_equal(idx_process_upsert(fx->x, &forged, &id2), -EEXIST);
    assert_int_equal(idx_process_adopt(fx->x, &forged, &id2), -EEXIST);
    assert_int_equal(id2, 0);
    char got[256];
    q_text(db(fx), "SELECT uid, comm, first_ns, state FROM processes", got, sizeof got);
    assert_string_equal(got, "1000|worker|500|alive");
    /* alive: the collector may adopt it again (a restart) */
    struct idx_process same = { .pid = 4242, .uid = 1000, .start_time = 777 };
    assert_int_equal(idx_process_adopt(fx->x, &same, &id2), 0);
    assert_int_equal(id2, id);
    assert_int_equal(idx_process_end(fx->x, id, 9000, "crashed", 11), 0);
    id2 = 0;
    assert_int_equal(idx_process_adopt(fx->x, &same, &id2), -EALREADY);
    assert_int_equal(id2, 0);
    /* re-indexing one of its segments still finds the row */
    assert_int_equal(idx_process_upsert(fx->x, &same, &id2), 0);
    assert_int_equal(id2, id);
    q_text(db(fx), "SELECT uid, state, exit_code FROM processes", got, sizeof got);
    assert_string_equal(got, "1000|crashed|11");
}

static void test_process_end_records_state_and_code(void **state)
{
    struct fx *fx = *state;
    int64_t id = add_process(fx);
    assert_int_equal(idx_process_end(fx->x, id, 9000, "crashed", 11), 0);
    char got[128];
    q_text(db(fx), "SELECT state, exit_code, last_ns FROM processes", got, sizeof got);
    assert_string_equal(got, "crashed|11|9000");
    assert_int_equal(idx_process_end(fx->x, id, 9500, "exited", -1), 0);
    q_text(db(fx), "SELECT state, exit_code, last_ns FROM processes", got, sizeof got);
    assert_string_equal(got, "exited|NULL|9500");
    assert_int_equal(idx_process_end(fx->x, id + 100, 1, "exited", 0), -ENOENT);
    assert_int_equal(idx_process_end(fx->x, id, 1, "zombie", 0), -EINVAL);
}

/* An older index is refused, names both versions and the remedy, and is
 * left as it was. */
static void test_an_older_schema_version_is_refused_and_left_unchanged(void **state)
{
    struct fx *fx = *state;
    assert_int_equal(sqlite3_exec(db(fx), "UPDATE meta SET value = '1' WHERE key ="
                                          " 'schema_version'; DROP TABLE drops", NULL, NULL,
                                  NULL), SQLITE_OK);
    idx_close(fx->x);
    fx->x = NULL;
    char why[512], want[64];
    struct idx *x;
    assert_int_equal(idx_open_ex(&x, fx->dir, 0, why, sizeof why), -EPROTONOSUPPORT);
    fmt(want, sizeof want, "version 1 is older than this d9's (%d)", IDX_SCHEMA_VERSION);
    assert_non_null(strstr(why, want));
    assert_non_null(strstr(why, "rebuilds the index from the segments"));
    assert_int_equal(idx_open_ex(&x, fx->dir, IDX_OPEN_READONLY, why, sizeof why),
                     -EPROTONOSUPPORT);
    assert_null(x);
    sqlite3 *d;
    char path[128];
    fmt(path, sizeof path, "%s/%s", fx->dir, IDX_FILE_NAME);
    assert_int_equal(sqlite3_open(path, &d), SQLITE_OK);
    assert_int_equal(q_int(d, "SELECT count(*) FROM sqlite_master WHERE name = 'drops'"), 0);
    sqlite3_close(d);
}

/* A cause never exceeds the total, whatever the table holds (a store
 * written before the collector clamped a hostile producer's counters). */
static void test_drop_causes_are_read_clamped_into_the_process_s_lost(void **state)
{
    struct fx *fx = *state;
    int64_t id = add_process(fx);
    assert_int_equal(sqlite3_exec(db(fx), "UPDATE processes SET lost = 246983", NULL, NULL, NULL),
                     SQLITE_OK);
    struct idx_drops w = { .mismatch = 6537443251081707520ull, .too_big = UINT64_MAX };
    assert_int_equal(idx_process_drops(fx->x, id, &w), 0);
    assert_int_equal(q_int(db(fx), "SELECT too_big FROM drops"), INT64_MAX);    /* saturated */
    struct idx_read_drops d;
    assert_int_equal(idx_read_drops(fx->x, id, 0, 0, INT64_MAX, &d), 0);
    assert_int_equal(d.lost, 246983);
    assert_int_equal(d.mismatch, 246983);
    assert_int_equal(d.too_big, 0);
    assert_int_equal(d.full, 0);
    /* a negative value written by anyone reads as none */
    assert_int_equal(sqlite3_exec(db(fx), "UPDATE drops SET mismatch = -5, too_big = 7", NULL,
                                  NULL, NULL), SQLITE_OK);
    assert_int_equal(idx_read_drops(fx->x, id, 0, 0, INT64_MAX, &d), 0);
    assert_int_equal(d.mismatch, 0);
    assert_int_equal(d.too_big, 7);
    assert_int_equal(d.full, 246983 - 7);
}

/* The index and its WAL files are opened by SQLite by name: a FIFO there
 * must be refused before SQLite blocks on it, a symlink never followed. */
static void test_an_index_or_wal_that_is_a_fifo_or_a_link_is_refused(void **state)
{
    struct fx *fx = *state;
    idx_close(fx->x);
    fx->x = NULL;
    char p[128], t[128], why[512];
    fmt(p, sizeof p, "%s/index.sqlite-wal", fx->dir);
    unlink(p);
    assert_int_equal(mkfifo(p, 0600), 0);
    struct idx *x = NULL;
    alarm(10);          /* a regression blocks in open(2): end it as a failure */
    assert_int_equal(idx_open_ex(&x, fx->dir, IDX_OPEN_READONLY, why, sizeof why), -EINVAL);
    assert_non_null(strstr(why, "index.sqlite-wal is a FIFO"));
    assert_int_equal(idx_open_ex(&x, fx->dir, 0, why, sizeof why), -EINVAL);
    alarm(0);
    unlink(p);
    fmt(p, sizeof p, "%s/index.sqlite", fx->dir);
    fmt(t, sizeof t, "%s/real.sqlite", fx->dir);
    assert_int_equal(rename(p, t), 0);
    assert_int_equal(symlink(t, p), 0);
    assert_int_equal(idx_open_ex(&x, fx->dir, IDX_OPEN_READONLY, why, sizeof why), -ELOOP);
    assert_non_null(strstr(why, "symbolic link"));
    assert_null(x);
}

static void test_thread_upsert_merges_and_needs_its_process(void **state)
{
    struct fx *fx = *state;
    int64_t id = add_process(fx);
    assert_int_equal(idx_thread_upsert(fx->x, id, 10, 0, 1, "worker-0", 100, 200, 0), 0);
    assert_int_equal(idx_thread_upsert(fx->x, id, 10, 0, 1, NULL, 50, 300, 1), 0);
    assert_int_equal(idx_thread_upsert(fx->x, id, 10, 0, 1, NULL, 0, 0, 0), 0);
    assert_int_equal(idx_thread_upsert(fx->x, id, 11, 0, 2, "worker-1", 400, 0, 0), 0);
    char got[256];
    q_text(db(fx), "SELECT tid, ring, generation, name, first_ns, last_ns, ended FROM threads"
                   " ORDER BY id", got, sizeof got);
    assert_string_equal(got, "10|0|1|worker-0|50|300|1,11|0|2|worker-1|400|NULL|0");
    assert_int_equal(idx_thread_upsert(fx->x, id + 100, 10, 0, 1, "x", 1, 2, 0), -ENOENT);
}

static void test_thread_names_set_names_only_matching_rows(void **state)
{
    struct fx *fx = *state;
    int64_t id = add_process(fx);
    assert_int_equal(idx_thread_upsert(fx->x, id, 100, 0, 1, NULL, 10, 20, 0), 0);
    assert_int_equal(idx_thread_upsert(fx->x, id, 101, 1, 1, NULL, 10, 20, 0), 0);
    const struct idx_thread_name t[] = {
        { 100, 0, 1, "w0" },
        { 101, 1, 1, "w1" },
        { 999, 1, 1, "not-its-tid" },        /* same ring generation, another tid */
        { 100, 0, 2, "no-row" },             /* a generation the store has not */
        { 100, 0, 1, "" },                   /* no name: skipped, not blanked */
        { 101, 1, 1, NULL },
    };
    size_t n = sizeof t / sizeof t[0];
    assert_int_equal(idx_thread_names_set(fx->x, 4242, 777, t, n), 2);
    char got[256];
    q_text(db(fx), "SELECT tid, ring, generation, name FROM threads ORDER BY id", got, sizeof got);
    assert_string_equal(got, "100|0|1|w0,101|1|1|w1");
    assert_int_equal(idx_thread_names_set(fx->x, 4242, 777, t, n), 0);     /* idempotent */
    assert_int_equal(idx_thread_names_set(fx->x, 4242, 778, t, n), 0);     /* another process */
    const struct idx_thread_name later = { 100, 0, 1, "renamed" };
    assert_int_equal(idx_thread_names_set(fx->x, 4242, 777, &later, 1), 1);
    q_text(db(fx), "SELECT name FROM threads ORDER BY id", got, sizeof got);
    assert_string_equal(got, "renamed,w1");
    assert_int_equal(idx_thread_names_set(fx->x, 4242, 777, NULL, 1), -EINVAL);
}

static int collect_thread(void *arg, const struct idx_read_thread *r)
{
    char *out = arg;
    size_t o = strlen(out);
    snprintf(out + o, 256 - o, "%s%u|%u|%u|%s", o ? "," : "", r->tid, r->ring, r->generation,
             r->name);
    return 0;
}

static void test_segment_threads_are_the_named_ones_with_blocks(void **state)
{
    struct fx *fx = *state;
    int64_t pid = add_process(fx);
    struct seg_summary sum;
    struct seg_writer *w = make_segment(fx, 5, 1000, &sum);   /* rings 0 and 1, generation 1 */
    assert_int_equal(idx_segment_commit(fx->x, pid, &sum, fx->dir), 0);
    assert_int_equal(idx_thread_upsert(fx->x, pid, 101, 1, 1, "w1", 1010, 1012, 0), 0);
    assert_int_equal(idx_thread_upsert(fx->x, pid, 100, 0, 1, NULL, 1000, 1002, 0), 0);
    assert_int_equal(idx_thread_upsert(fx->x, pid, 102, 2, 1, "no-blocks", 1, 2, 0), 0);
    assert_int_equal(idx_thread_upsert(fx->x, pid, 103, 1, 2, "later-gen", 1, 2, 0), 0);
    char got[256] = "";
    assert_int_equal(idx_read_segment_threads(fx->x, 5, collect_thread, got), 1);
    assert_string_equal(got, "101|1|1|w1");
    got[0] = '\0';
    assert_int_equal(idx_read_segment_threads(fx->x, 6, collect_thread, got), 0);
    assert_string_equal(got, "");
    seg_writer_free(w);
}

static void test_runtime_upsert_renames(void **state)
{
    struct fx *fx = *state;
    int64_t id = add_process(fx);
    assert_int_equal(idx_runtime_upsert(fx->x, id, 1, "rt-a"), 0);
    assert_int_equal(idx_runtime_upsert(fx->x, id, 1, "rt-b"), 0);
    assert_int_equal(idx_runtime_upsert(fx->x, id, 2, "rt-c"), 0);
    char got[128];
    q_text(db(fx), "SELECT runtime_id, name FROM runtimes ORDER BY 1", got, sizeof got);
    assert_string_equal(got, "1|rt-b,2|rt-c");
}

/* ---- segments ---------------------------------------------------------------- */

static void test_segment_commit_inserts_segment_blocks_and_counters(void **state)
{
    struct fx *fx = *state;
    int64_t pid = add_process(fx);
    struct seg_summary sum;
    struct seg_writer *w = make_segment(fx, 5, 1000, &sum);
    assert_int_equal(idx_segment_commit(fx->x, pid, &sum, fx->dir), 0);
    char got[512], expect[512];
    q_text(db(fx), "SELECT id, process_id, path, t_min, t_max, bytes, records, lost,"
                   " n_poll_end, n_poll_start, sealed_ns > 0 FROM segments", got, sizeof got);
    fmt(expect, sizeof expect, "5|%lld|4242-777-5.d9seg|1000|1012|%llu|6|4|6|0|1",
             (long long)pid, (unsigned long long)sum.bytes);
    assert_string_equal(got, expect);
    q_text(db(fx), "SELECT offset, len, kind, tid, ring, generation, nrec, t_first, t_last, lost"
                   " FROM blocks WHERE segment_id = 5 ORDER BY offset", got, sizeof got);
    fmt(expect, sizeof expect, "%u|152|2|100|0|1|3|1000|1002|2,%u|152|2|101|1|1|3|1010|1012|2",
             SEG_HDR_SIZE, SEG_HDR_SIZE + 152);
    assert_string_equal(got, expect);
    q_text(db(fx), "SELECT records, lost, first_ns, last_ns FROM processes", got, sizeof got);
    assert_string_equal(got, "6|4|500|1012");
    seg_writer_free(w);
}

static int collect_seg_block(void *arg, const struct idx_read_seg_block *b)
{
    char *out = arg;
    size_t n = strlen(out);
    snprintf(out + n, 512 - n, "%s%llu|%u|%u|%u", n ? "," : "", (unsigned long long)b->offset,
             b->kind, b->ring, b->generation);
    return 0;
}

/* q_edge feeds a segment's blocks as the whole file does: in file order,
 * with the META blocks that define the schemas of the events after them */
static void test_segment_blocks_are_data_and_meta_in_file_order(void **state)
{
    struct fx *fx = *state;
    int64_t pid = add_process(fx);
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 7, &proc, NULL, 0), 0);
    struct d9_rec_poll_end r = { .h = { .len = sizeof r, .type = D9_REC_POLL_END, .ts = 1000 } };
    assert_int_equal(seg_writer_add_data(w, 101, 1, 1, 0, (const uint8_t *)&r, sizeof r), 0);
    uint8_t meta[16] = { 16, 0, D9_META_RUNTIME, 0, 1, 0, 0, 0, 'r', 't' };
    assert_int_equal(seg_writer_add_meta(w, meta, sizeof meta), 0);
    r.h.ts = 1001;
    assert_int_equal(seg_writer_add_data(w, 100, 0, 2, 0, (const uint8_t *)&r, sizeof r), 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    assert_int_equal(idx_segment_commit(fx->x, pid, &sum, fx->dir), 0);
    char got[512] = "", expect[512];
    assert_int_equal(idx_read_segment_blocks(fx->x, 7, collect_seg_block, got), 3);
    q_text(db(fx), "SELECT group_concat(offset || '|' || kind || '|' || ring || '|' || generation)"
                   " FROM (SELECT * FROM blocks WHERE segment_id = 7 ORDER BY offset)",
           expect, sizeof expect);
    assert_string_equal(got, expect);
    q_text(db(fx), "SELECT group_concat(kind) FROM (SELECT kind FROM blocks"
                   " WHERE segment_id = 7 ORDER BY offset)", got, sizeof got);
    fmt(expect, sizeof expect, "%u,%u,%u", SEG_BLK_DATA, SEG_BLK_META, SEG_BLK_DATA);
    assert_string_equal(got, expect);
    seg_writer_free(w);
}

static void test_segment_paths_are_stored_relative_to_the_store(void **state)
{
    struct fx *fx = *state;
    int64_t pid = add_process(fx);
    char sub[128], alias[160];
    fmt(sub, sizeof sub, "%s/segments", fx->dir);
    mkdir(sub, 0700);
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, sub, 6, &proc, NULL, 0), 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    fmt(alias, sizeof alias, "%s/./", fx->dir);     /* same dir, different spelling */
    assert_int_equal(idx_segment_commit(fx->x, pid, &sum, alias), 0);
    char got[128];
    q_text(db(fx), "SELECT path FROM segments", got, sizeof got);
    assert_string_equal(got, "segments/4242-777-6.d9seg");
    seg_writer_free(w);

    char rel[64];
    assert_int_equal(idx_relative_path("/a/b", "/a/b/c/d.d9seg", rel, sizeof rel), 0);
    assert_string_equal(rel, "c/d.d9seg");
    assert_int_equal(idx_relative_path("/a/b/", "/a/b//d.d9seg", rel, sizeof rel), 0);
    assert_string_equal(rel, "d.d9seg");
    assert_int_equal(idx_relative_path(".", "./x.d9seg", rel, sizeof rel), 0);
    assert_string_equal(rel, "x.d9seg");
    assert_int_equal(idx_relative_path("/a/b", "/a/bc/d.d9seg", rel, sizeof rel), -EINVAL);
}

static void test_segment_outside_the_store_is_refused(void **state)
{
    struct fx *fx = *state;
    int64_t pid = add_process(fx);
    struct seg_summary sum;
    struct seg_writer *w = make_segment(fx, 5, 1000, &sum);
    strcpy(sum.path, "/elsewhere/4242-777-5.d9seg");
    assert_int_equal(idx_segment_commit(fx->x, pid, &sum, fx->dir), -EINVAL);
    assert_int_equal(q_int(db(fx), "SELECT count(*) FROM segments"), 0);
    seg_writer_free(w);
}

static void expect_no_segment_rows(struct fx *fx)
{
    assert_int_equal(q_int(db(fx), "SELECT count(*) FROM segments"), 0);
    assert_int_equal(q_int(db(fx), "SELECT count(*) FROM blocks"), 0);
    assert_int_equal(q_int(db(fx), "SELECT coalesce(sum(records), 0) FROM processes"), 0);
    assert_int_not_equal(sqlite3_get_autocommit(db(fx)), 0);    /* no open transaction */
}

static void test_commit_for_a_missing_process_leaves_no_rows(void **state)
{
    struct fx *fx = *state;
    int64_t pid = add_process(fx);
    struct seg_summary sum;
    struct seg_writer *w = make_segment(fx, 5, 1000, &sum);
    assert_int_equal(idx_segment_commit(fx->x, pid + 1, &sum, fx->dir), -ENOENT);
    assert_non_null(strstr(idx_errmsg(fx->x), "no process row"));
    expect_no_segment_rows(fx);
    seg_writer_free(w);
}

static void test_commit_failing_on_a_later_block_leaves_no_rows(void **state)
{
    struct fx *fx = *state;
    int64_t pid = add_process(fx);
    struct seg_summary sum;
    struct seg_writer *w = make_segment(fx, 5, 1000, &sum);
    struct seg_summary bad = sum;
    struct seg_block_info blocks[2] = { sum.blocks[0], sum.blocks[0] };    /* same offset */
    bad.blocks = blocks;
    assert_int_equal(idx_segment_commit(fx->x, pid, &bad, fx->dir), -EEXIST);
    expect_no_segment_rows(fx);
    /* and the good summary still goes in afterwards */
    assert_int_equal(idx_segment_commit(fx->x, pid, &sum, fx->dir), 0);
    assert_int_equal(q_int(db(fx), "SELECT count(*) FROM blocks"), 2);
    seg_writer_free(w);
}

static void test_committing_a_segment_twice_is_refused_and_counts_once(void **state)
{
    struct fx *fx = *state;
    int64_t pid = add_process(fx);
    struct seg_summary sum;
    struct seg_writer *w = make_segment(fx, 5, 1000, &sum);
    assert_int_equal(idx_segment_commit(fx->x, pid, &sum, fx->dir), 0);
    assert_int_equal(idx_segment_commit(fx->x, pid, &sum, fx->dir), -EEXIST);
    assert_int_equal(q_int(db(fx), "SELECT records FROM processes"), 6);
    assert_int_equal(q_int(db(fx), "SELECT count(*) FROM blocks"), 2);
    seg_writer_free(w);
}

static void test_blocks_added_before_the_seal_are_inserted_once(void **state)
{
    struct fx *fx = *state;
    int64_t pid = add_process(fx);
    struct seg_summary sum;
    struct seg_writer *w = make_segment(fx, 5, 1000, &sum);
    /* as if the first block had been indexed while the segment was written */
    assert_int_equal(idx_blocks_add(fx->x, 5, sum.blocks, 1), 0);
    assert_int_equal(q_int(db(fx), "PRAGMA synchronous"), 2);  /* FULL again */
    assert_int_equal(q_int(db(fx), "SELECT count(*) FROM blocks b JOIN segments s"
                                   " ON s.id = b.segment_id"), 0);  /* invisible to readers */
    sum.nblocks_indexed = 1;
    assert_int_equal(idx_segment_commit(fx->x, pid, &sum, fx->dir), 0);
    char got[256], expect[256];
    q_text(db(fx), "SELECT offset FROM blocks WHERE segment_id = 5 ORDER BY offset", got,
           sizeof got);
    fmt(expect, sizeof expect, "%u,%u", SEG_HDR_SIZE, SEG_HDR_SIZE + 152);
    assert_string_equal(got, expect);
    /* more leading rows than blocks is a caller bug */
    sum.nblocks_indexed = sum.nblocks + 1;
    assert_int_equal(idx_segment_commit(fx->x, pid, &sum, fx->dir), -EINVAL);
    seg_writer_free(w);
}

static void test_blocks_add_is_all_or_nothing_and_checks_its_arguments(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    struct seg_writer *w = make_segment(fx, 6, 1000, &sum);
    assert_int_equal(idx_blocks_add(fx->x, 0, sum.blocks, 1), -EINVAL);
    assert_int_equal(idx_blocks_add(fx->x, 6, NULL, 1), -EINVAL);
    assert_int_equal(idx_blocks_add(fx->x, 6, NULL, 0), 0);
    assert_int_equal(idx_blocks_add(fx->x, 6, sum.blocks + 1, 1), 0);
    /* block 0 is new, block 1 is there already: neither goes in */
    assert_true(idx_blocks_add(fx->x, 6, sum.blocks, 2) < 0);
    assert_int_equal(q_int(db(fx), "SELECT count(*) FROM blocks WHERE segment_id = 6"), 1);
    assert_int_equal(q_int(db(fx), "PRAGMA synchronous"), 2);
    assert_int_equal(idx_blocks_add(fx->x, 6, sum.blocks, 1), 0);
    assert_int_equal(q_int(db(fx), "SELECT count(*) FROM blocks WHERE segment_id = 6"), 2);
    assert_int_equal(idx_blocks_drop(fx->x, 6), 0);
    assert_int_equal(q_int(db(fx), "SELECT count(*) FROM blocks WHERE segment_id = 6"), 0);
    seg_writer_free(w);
}

static void test_orphan_block_rows_are_dropped_and_sealed_ones_kept(void **state)
{
    struct fx *fx = *state;
    int64_t pid = add_process(fx);
    struct seg_summary a, b;
    struct seg_writer *wa = make_segment(fx, 5, 1000, &a);
    struct seg_writer *wb = make_segment(fx, 9, 2000, &b);
    assert_int_equal(idx_segment_commit(fx->x, pid, &a, fx->dir), 0);
    assert_int_equal(idx_blocks_add(fx->x, 9, b.blocks, b.nblocks), 0);    /* never sealed */
    uint64_t n = 0;
    assert_int_equal(idx_drop_orphan_blocks(fx->x, &n), 0);
    assert_int_equal(n, b.nblocks);
    assert_int_equal(q_int(db(fx), "SELECT count(*) FROM blocks WHERE segment_id = 9"), 0);
    assert_int_equal(q_int(db(fx), "SELECT count(*) FROM blocks WHERE segment_id = 5"),
                     a.nblocks);
    assert_int_equal(idx_drop_orphan_blocks(fx->x, NULL), 0);
    seg_writer_free(wa);
    seg_writer_free(wb);
}

static void test_delete_next_id_total_and_oldest(void **state)
{
    struct fx *fx = *state;
    int64_t pid = add_process(fx);
    uint64_t id, bytes;
    char path[64];
    assert_int_equal(idx_next_segment_id(fx->x, &id), 0);
    assert_int_equal(id, 1);
    assert_int_equal(idx_total_bytes(fx->x, &bytes), 0);
    assert_int_equal(bytes, 0);
    assert_int_equal(idx_oldest_segment(fx->x, &id, path, sizeof path), -ENOENT);
    struct seg_summary a, b;
    struct seg_writer *wa = make_segment(fx, 7, 5000, &a);
    struct seg_writer *wb = make_segment(fx, 3, 1000, &b);  /* lower id, but newer below */
    assert_int_equal(idx_segment_commit(fx->x, pid, &a, fx->dir), 0);
    assert_int_equal(idx_segment_commit(fx->x, pid, &b, fx->dir), 0);
    assert_int_equal(idx_next_segment_id(fx->x, &id), 0);
    assert_int_equal(id, 8);
    assert_int_equal(idx_total_bytes(fx->x, &bytes), 0);
    assert_int_equal(bytes, a.bytes + b.bytes);
    assert_int_equal(idx_oldest_segment(fx->x, &id, path, sizeof path), 0);
    assert_int_equal(id, 3);                            /* smallest t_max */
    assert_string_equal(path, "4242-777-3.d9seg");
    assert_int_equal(idx_oldest_segment(fx->x, &id, path, 5), -ENAMETOOLONG);
    assert_int_equal(idx_segment_delete(fx->x, 3), 0);
    assert_int_equal(idx_segment_delete(fx->x, 3), -ENOENT);
    assert_int_equal(q_int(db(fx), "SELECT count(*) FROM blocks WHERE segment_id = 3"), 0);
    assert_int_equal(q_int(db(fx), "SELECT count(*) FROM blocks WHERE segment_id = 7"), 2);
    assert_int_equal(idx_oldest_segment(fx->x, &id, path, sizeof path), 0);
    assert_int_equal(id, 7);
    seg_writer_free(wa);
    seg_writer_free(wb);
}

static void test_upload_state_pending_until_shipped_and_gone_with_its_segment(void **state)
{
    struct fx *fx = *state;
    int64_t pid = add_process(fx);
    struct seg_summary a, b;
    struct idx_upload u;
    struct idx_upload_totals t;
    uint64_t id;
    char path[64];
    struct seg_writer *wa = make_segment(fx, 7, 5000, &a);
    struct seg_writer *wb = make_segment(fx, 3, 1000, &b);
    assert_int_equal(idx_segment_commit(fx->x, pid, &a, fx->dir), 0);
    assert_int_equal(idx_segment_commit(fx->x, pid, &b, fx->dir), 0);
    /* no row: pending, never tried, oldest id first, with what a manifest needs */
    assert_int_equal(idx_upload_next(fx->x, 0, NULL, 0, &u), 0);
    assert_int_equal(u.segment_id, 3);
    assert_int_equal(u.attempts, 0);
    assert_int_equal(u.pid, 4242);
    assert_int_equal(u.start_time, 777);
    assert_int_equal(u.bytes, b.bytes);
    assert_string_equal(u.path, "4242-777-3.d9seg");
    uint64_t busy = 3;                  /* in flight elsewhere: the next one */
    assert_int_equal(idx_upload_next(fx->x, 0, &busy, 1, &u), 0);
    assert_int_equal(u.segment_id, 7);
    /* a failed attempt waits for its time; a shipped one is never offered again */
    assert_int_equal(idx_upload_set(fx->x, 3, "pending", 1, "HTTP 503", 1000), 0);
    assert_int_equal(idx_upload_set(fx->x, 7, "shipped", 1, NULL, 0), 0);
    assert_int_equal(idx_upload_next(fx->x, 999, NULL, 0, &u), -ENOENT);
    assert_int_equal(idx_upload_next(fx->x, 1000, NULL, 0, &u), 0);
    assert_int_equal(u.segment_id, 3);
    assert_int_equal(u.attempts, 1);
    assert_int_equal(idx_upload_set(fx->x, 3, "failed", 2, "NoSuchBucket", 5000), 0);
    assert_int_equal(idx_upload_set(fx->x, 3, "lost", 2, NULL, 0), -EINVAL);
    assert_int_equal(idx_upload_totals(fx->x, &t), 0);
    assert_int_equal(t.backlog, 1);
    assert_int_equal(t.backlog_bytes, b.bytes);
    assert_int_equal(t.shipped, 1);
    assert_int_equal(t.shipped_bytes, a.bytes);
    assert_int_equal(t.failed, 1);
    assert_true(b.sealed_ns != 0);      /* the backlog's oldest seal: the unshipped one's */
    assert_int_equal(t.oldest_sealed_ns, b.sealed_ns);
    /* retention's choice: the shipped one, although it is the newer */
    assert_int_equal(idx_oldest_shipped_segment(fx->x, &id, path, sizeof path), 0);
    assert_int_equal(id, 7);
    /* the state goes with its segment, and none can be set for a missing one */
    assert_int_equal(idx_segment_delete(fx->x, 7), 0);
    assert_int_equal(q_int(db(fx), "SELECT count(*) FROM uploads WHERE segment_id = 7"), 0);
    assert_int_equal(idx_upload_set(fx->x, 7, "shipped", 1, NULL, 0), -ENOENT);
    assert_int_equal(idx_oldest_shipped_segment(fx->x, &id, path, sizeof path), -ENOENT);
    seg_writer_free(wa);
    seg_writer_free(wb);
}

static int count_row(void *arg, const struct idx_segment_row *r)
{
    int *n = arg;
    assert_int_equal(r->nblocks, 2);
    assert_int_equal(r->records, 6);
    (*n)++;
    return 0;
}

static void test_segment_foreach_lists_every_row(void **state)
{
    struct fx *fx = *state;
    int64_t pid = add_process(fx);
    struct seg_summary a, b;
    struct seg_writer *wa = make_segment(fx, 1, 5000, &a);
    struct seg_writer *wb = make_segment(fx, 2, 1000, &b);
    assert_int_equal(idx_segment_commit(fx->x, pid, &a, fx->dir), 0);
    assert_int_equal(idx_segment_commit(fx->x, pid, &b, fx->dir), 0);
    int n = 0;
    assert_int_equal(idx_segment_foreach(fx->x, count_row, &n), 0);
    assert_int_equal(n, 2);
    seg_writer_free(wa);
    seg_writer_free(wb);
}

/* ---- read-only access ------------------------------------------------------ */

static void test_readonly_open_needs_an_existing_index(void **state)
{
    struct fx *fx = *state;
    char dir[128];
    fmt(dir, sizeof dir, "%s/empty", fx->dir);
    mkdir(dir, 0700);
    struct idx *x;
    char why[512];
    assert_int_equal(idx_open_ex(&x, dir, IDX_OPEN_READONLY, why, sizeof why), -ENOENT);
    assert_non_null(strstr(why, "no index"));
    assert_int_equal(access(dir, F_OK), 0);
    char path[128];
    fmt(path, sizeof path, "%s/%s", dir, IDX_FILE_NAME);
    assert_int_equal(access(path, F_OK), -1);       /* not created */
}

static void test_readonly_reads_while_the_writer_writes_and_cannot_write(void **state)
{
    struct fx *fx = *state;
    int64_t pid = add_process(fx);
    struct idx *ro;
    assert_int_equal(idx_open_readonly(&ro, fx->dir), 0);
    assert_int_equal(q_int(idx_db(ro), "SELECT count(*) FROM processes"), 1);
    /* the reader holds a read transaction open; the writer still commits */
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(idx_db(ro), "SELECT id FROM processes", -1, &s, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    struct seg_summary sum;
    struct seg_writer *w = make_segment(fx, 5, 1000, &sum);
    assert_int_equal(idx_segment_commit(fx->x, pid, &sum, fx->dir), 0);
    sqlite3_finalize(s);
    assert_int_equal(q_int(idx_db(ro), "SELECT count(*) FROM segments"), 1);
    struct idx_process p = { .pid = 1, .start_time = 1 };
    int64_t id;
    assert_int_equal(idx_process_upsert(ro, &p, &id), -EROFS);
    assert_int_not_equal(sqlite3_exec(idx_db(ro), "DELETE FROM segments", NULL, NULL, NULL),
                         SQLITE_OK);
    assert_int_equal(q_int(db(fx), "SELECT count(*) FROM segments"), 1);
    idx_close(ro);
    seg_writer_free(w);
}

static void copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY);
    if (in < 0)
        return;
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(out >= 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        assert_int_equal(write(out, buf, (size_t)n), n);
    close(in);
    close(out);
}

static void test_readonly_works_on_a_copied_store(void **state)
{
    struct fx *fx = *state;
    int64_t pid = add_process(fx);
    struct seg_summary sum;
    struct seg_writer *w = make_segment(fx, 5, 1000, &sum);
    assert_int_equal(idx_segment_commit(fx->x, pid, &sum, fx->dir), 0);
    char copy[128], from[192], to[192];
    fmt(copy, sizeof copy, "%s/copy", fx->dir);
    mkdir(copy, 0700);
    const char *files[] = { IDX_FILE_NAME, IDX_FILE_NAME "-wal" };    /* no -shm */
    for (int i = 0; i < 2; i++) {
        fmt(from, sizeof from, "%s/%s", fx->dir, files[i]);
        fmt(to, sizeof to, "%s/%s", copy, files[i]);
        copy_file(from, to);
    }
    struct idx *ro;
    assert_int_equal(idx_open_readonly(&ro, copy), 0);
    assert_int_equal(q_int(idx_db(ro), "SELECT count(*) FROM segments"), 1);
    idx_close(ro);
    /* and on read-only media, if we may mount one */
    if (geteuid() == 0 && mount(copy, copy, NULL, MS_BIND, NULL) == 0) {
        int e = mount(NULL, copy, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL);
        int ok = e == 0 ? idx_open_readonly(&ro, copy) : -1;
        int64_t n = ok == 0 ? q_int(idx_db(ro), "SELECT count(*) FROM blocks") : -1;
        if (ok == 0)
            idx_close(ro);
        umount2(copy, MNT_DETACH);
        assert_int_equal(ok, 0);
        assert_int_equal(n, 2);
    }
    seg_writer_free(w);
}

/* Where a restarted collector finds each ring's last stored record: the
 * newest segment's (by id, not by commit order) last block with records. */
static void test_each_ring_s_last_block_with_records_is_the_newest(void **state)
{
    struct fx *fx = *state;
    int64_t pid = add_process(fx);
    struct seg_summary a, b;
    struct seg_writer *wa = make_segment(fx, 7, 5000, &a);
    struct seg_writer *wb = make_segment(fx, 3, 1000, &b);
    assert_int_equal(idx_segment_commit(fx->x, pid, &a, fx->dir), 0);
    assert_int_equal(idx_segment_commit(fx->x, pid, &b, fx->dir), 0);
    struct idx_ring_last last[3];
    assert_int_equal(idx_read_rings_last(fx->x, pid, 3, last), 0);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(last[r].found, 1);
        assert_int_equal(last[r].generation, 1);
        assert_int_equal(last[r].segment_id, 7);
        assert_int_equal(last[r].offset, SEG_HDR_SIZE + (uint64_t)r * 152);
        assert_string_equal(last[r].path, "4242-777-7.d9seg");
    }
    assert_int_equal(last[2].found, 0);
    /* a process without segments has none; bad arguments are refused */
    assert_int_equal(idx_read_rings_last(fx->x, pid + 1, 3, last), 0);
    assert_int_equal(last[0].found, 0);
    assert_int_equal(idx_read_rings_last(fx->x, pid, 0, last), -EINVAL);
    seg_writer_free(wa);
    seg_writer_free(wb);
}

/* Retry times from another boot (CLOCK_MONOTONIC starts again) are due now;
 * near ones and shipped segments are left alone. */
static void test_upload_retry_times_past_the_longest_backoff_are_due_now(void **state)
{
    struct fx *fx = *state;
    int64_t pid = add_process(fx);
    struct seg_summary a, b, c;
    struct seg_writer *wa = make_segment(fx, 3, 1000, &a);
    struct seg_writer *wb = make_segment(fx, 5, 2000, &b);
    struct seg_writer *wc = make_segment(fx, 7, 3000, &c);
    assert_int_equal(idx_segment_commit(fx->x, pid, &a, fx->dir), 0);
    assert_int_equal(idx_segment_commit(fx->x, pid, &b, fx->dir), 0);
    assert_int_equal(idx_segment_commit(fx->x, pid, &c, fx->dir), 0);
    assert_int_equal(idx_upload_set(fx->x, 3, "pending", 5, "refused", 9000000000000000000ull), 0);
    assert_int_equal(idx_upload_set(fx->x, 5, "failed", 2, "NoSuchBucket", 1500), 0);
    assert_int_equal(idx_upload_set(fx->x, 7, "shipped", 1, NULL, 9000000000000000000ull), 0);
    uint64_t moved = 99;
    assert_int_equal(idx_upload_clamp_next(fx->x, 1000, 5000, &moved), 0);
    assert_int_equal(moved, 1);
    char got[256];
    q_text(db(fx), "SELECT segment_id, next_ns FROM uploads ORDER BY segment_id", got, sizeof got);
    assert_string_equal(got, "3|1000,5|1500,7|9000000000000000000");
    seg_writer_free(wa);
    seg_writer_free(wb);
    seg_writer_free(wc);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, idx_fx_setup, idx_fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_open_creates_the_documented_schema),
        T(test_open_sets_wal_full_sync_and_foreign_keys),
        T(test_meta_holds_version_host_created_and_boot_identity),
        T(test_reopening_keeps_rows_and_restores_wal),
        T(test_newer_schema_version_is_refused_with_a_clear_error),
        T(test_foreign_database_is_refused),
        T(test_process_upsert_is_idempotent_and_refreshes),
        T(test_process_end_records_state_and_code),
        T(test_a_process_row_keeps_its_uid_and_an_ended_one_is_not_adopted),
        T(test_an_older_schema_version_is_refused_and_left_unchanged),
        T(test_drop_causes_are_read_clamped_into_the_process_s_lost),
        T(test_an_index_or_wal_that_is_a_fifo_or_a_link_is_refused),
        T(test_thread_upsert_merges_and_needs_its_process),
        T(test_runtime_upsert_renames),
        T(test_thread_names_set_names_only_matching_rows),
        T(test_segment_threads_are_the_named_ones_with_blocks),
        T(test_segment_commit_inserts_segment_blocks_and_counters),
        T(test_segment_blocks_are_data_and_meta_in_file_order),
        T(test_segment_paths_are_stored_relative_to_the_store),
        T(test_segment_outside_the_store_is_refused),
        T(test_commit_for_a_missing_process_leaves_no_rows),
        T(test_commit_failing_on_a_later_block_leaves_no_rows),
        T(test_committing_a_segment_twice_is_refused_and_counts_once),
        T(test_blocks_added_before_the_seal_are_inserted_once),
        T(test_blocks_add_is_all_or_nothing_and_checks_its_arguments),
        T(test_orphan_block_rows_are_dropped_and_sealed_ones_kept),
        T(test_delete_next_id_total_and_oldest),
        T(test_segment_foreach_lists_every_row),
        T(test_upload_state_pending_until_shipped_and_gone_with_its_segment),
        T(test_readonly_open_needs_an_existing_index),
        T(test_readonly_reads_while_the_writer_writes_and_cannot_write),
        T(test_readonly_works_on_a_copied_store),
        T(test_foreign_open_keeps_the_origins_boot_identity),
        T(test_set_origin_needs_a_writable_index),
        T(test_each_ring_s_last_block_with_records_is_the_newest),
        T(test_upload_retry_times_past_the_longest_backoff_are_due_now),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
