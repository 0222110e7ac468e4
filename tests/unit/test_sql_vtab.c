/*
 * test_sql_vtab.c — the d9 SQL virtual tables (sql_vtab.c) against a store
 * built here with the segment writer and the index: every table's rows
 * (counts and values), push-down of pid and time to the block index
 * (blocks counted), poll pairing past a window, custom-event tables with
 * every field type and the name rules, corrupt and truncated segments under
 * a query, and SQL errors.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <unistd.h>
#include <cmocka.h>
#include "collector/query/q_store.h"
#include "collector/sql/sql_vtab.h"
#include "collector/store/idx.h"
#include "collector/store/seg.h"
#include "collector/store/seg_reader.h"
#include "collector/store/seg_writer.h"
#include "shm/meta.h"

#define B100 1000000ull         /* time base of pid 100 */
#define B200 5000000ull         /* of pid 200 */

struct fixture {
    char dir[64];
    char seg[2][600];           /* segment files of pid 100, 200 */
    struct q_store *s;
    sqlite3 *db;
    struct sql_vtab *v;
};

/* ---- building records ------------------------------------------------------------- */

struct buf {
    uint8_t b[4096];
    size_t n;
};

static void put(struct buf *b, const void *rec, size_t len)
{
    assert_true(b->n + len <= sizeof b->b);
    memcpy(b->b + b->n, rec, len);
    b->n += len;
}

static struct d9_rec_hdr hdr(size_t len, uint16_t type, uint64_t ts)
{
    return (struct d9_rec_hdr){ (uint16_t)len, type, 0, ts };
}

static void poll_start(struct buf *b, uint64_t ts, uint64_t task, uint32_t loc)
{
    struct d9_rec_poll_start r = { hdr(sizeof r, D9_REC_POLL_START, ts), task, loc, 1, 0 };
    put(b, &r, sizeof r);
}

static void poll_end(struct buf *b, uint64_t ts, uint64_t task)
{
    struct d9_rec_poll_end r = { hdr(sizeof r, D9_REC_POLL_END, ts), task, 1, 0, 0 };
    put(b, &r, sizeof r);
}

static void task_rec(struct buf *b, uint16_t type, uint64_t ts, uint64_t task, uint32_t loc)
{
    struct d9_rec_task r = { hdr(sizeof r, type, ts), task, loc, 1, 0 };
    put(b, &r, sizeof r);
}

static void worker_rec(struct buf *b, uint16_t type, uint64_t ts, uint64_t cpu, uint64_t wait)
{
    struct d9_rec_worker r = { hdr(sizeof r, type, ts), 1, 0, 0, cpu, wait };
    put(b, &r, sizeof r);
}

static void stack_rec(struct buf *b, uint16_t type, uint64_t ts, uint32_t tid,
                      const uint64_t *ips, uint16_t n)
{
    struct d9_rec_stack r = { hdr(sizeof r + 8u * n, type, ts), tid, n, 0, 10000 };
    put(b, &r, sizeof r);
    put(b, ips, 8u * n);
}

/* custom record: fields given as (type, value) already laid out by the caller */
static void custom_rec(struct buf *b, uint64_t ts, uint32_t schema, const uint8_t *payload,
                       size_t plen)
{
    size_t len = (sizeof(struct d9_rec_custom) + plen + 7) & ~(size_t)7;
    uint8_t rec[512] = { 0 };
    struct d9_rec_custom c = { hdr(len, D9_REC_CUSTOM, ts), schema, (uint32_t)plen, D9_TASK_NONE };
    memcpy(rec, &c, sizeof c);
    memcpy(rec + sizeof c, payload, plen);
    put(b, rec, len);
}

static size_t pl_u64(uint8_t *p, size_t off, uint64_t v)
{
    memcpy(p + off, &v, 8);
    return off + 8;
}

static size_t pl_f64(uint8_t *p, size_t off, double v)
{
    memcpy(p + off, &v, 8);
    return off + 8;
}

static size_t pl_str(uint8_t *p, size_t off, const char *s)
{
    uint32_t n = (uint32_t)strlen(s);
    memcpy(p + off, &n, 4);
    memcpy(p + off + 4, s, n);
    off += 4 + n;
    while (off % 8)
        p[off++] = 0;
    return off;
}

static void meta_entry(struct buf *b, uint16_t kind, uint32_t id, const uint8_t *payload, int n)
{
    assert_true(n > 0);
    struct d9_meta_hdr h = { (uint16_t)((sizeof h + (size_t)n + 7) & ~7u), kind, id };
    uint8_t e[600] = { 0 };
    memcpy(e, &h, sizeof h);
    memcpy(e + sizeof h, payload, (size_t)n);
    put(b, e, h.len);
}

/*
 * pid P (base B), runtime 1, location 1 "a.c":10 spawn_a:
 *   ring 0 (tid P+1) block A: poll 1 [B+100, B+300], spawn 2 at B+150, wake at
 *     B+350, queue depth 5 (global) at B+400, park [B+500, B+600] (cpu 1000,
 *     wait 77), request_done at B+650
 *   ring 0 block B: poll 2 [B+10000, B+10200], terminate 2 at B+10300,
 *     poll 3 from B+10400 (never ends), cpu samples at B+10500 (stack X)
 *     and B+10520 (stack Y), an off-CPU sample at B+10550 (stack X)
 *   ring 1 (tid P+2) block: poll 9 [B+200, B+20000]
 */
static void add_process(struct fixture *fx, struct idx *x, int k)
{
    uint32_t pid = k == 0 ? 100 : 200;
    uint64_t B = k == 0 ? B100 : B200;
    struct seg_proc_info pi = { .pid = pid, .start_time = pid * 10u,
                                .clock_source = D9_CLOCK_MONOTONIC, .host = "h",
                                .comm = k == 0 ? "alpha" : "beta", .exe = "/bin/x" };
    struct buf meta = { .n = 0 };
    uint8_t p[512];
    meta_entry(&meta, D9_META_RUNTIME, 1, p,
               shm_meta_encode_runtime(p, sizeof p, k == 0 ? "rt1" : "rt2"));
    meta_entry(&meta, D9_META_LOCATION, 1, p,
               shm_meta_encode_location(p, sizeof p, "a.c", 10, "spawn_a"));
    if (k == 0) {
        static const uint8_t ty[] = { D9_FT_STR, D9_FT_U64, D9_FT_F64, D9_FT_I64, D9_FT_BOOL };
        static const char *const nm[] = { "path", "status", "latency_ms", "delta", "ok" };
        meta_entry(&meta, D9_META_SCHEMA, 1, p,
                   shm_meta_encode_schema(p, sizeof p, "request_done", 5, ty, nm));
    } else {
        static const uint8_t ty[] = { D9_FT_STR, D9_FT_I64, D9_FT_STR };
        static const char *const nm[] = { "path", "status", "region" };
        meta_entry(&meta, D9_META_SCHEMA, 1, p,
                   shm_meta_encode_schema(p, sizeof p, "request_done", 3, ty, nm));
        static const uint8_t ty2[] = { D9_FT_U64 };
        static const char *const nm2[] = { "pid" };
        meta_entry(&meta, D9_META_SCHEMA, 2, p,
                   shm_meta_encode_schema(p, sizeof p, "polls", 1, ty2, nm2));
    }
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, (uint64_t)k + 1, &pi, meta.b, meta.n), 0);

    struct buf a = { .n = 0 };
    poll_start(&a, B + 100, 1, 1);
    task_rec(&a, D9_REC_TASK_SPAWN, B + 150, 2, 1);
    poll_end(&a, B + 300, 1);
    struct d9_rec_wake wk = { hdr(sizeof wk, D9_REC_WAKE, B + 350), 1, 2, 1, 1, 0 };
    put(&a, &wk, sizeof wk);
    struct d9_rec_queue_depth qd = { hdr(sizeof qd, D9_REC_QUEUE_DEPTH, B + 400), 5, 1,
                                     D9_WORKER_NONE, 0 };
    put(&a, &qd, sizeof qd);
    worker_rec(&a, D9_REC_WORKER_PARK, B + 500, 1000, 5);
    worker_rec(&a, D9_REC_WORKER_UNPARK, B + 600, 1010, 77);
    size_t o = 0;
    if (k == 0) {
        o = pl_str(p, o, "/a");
        o = pl_u64(p, o, 200);
        o = pl_f64(p, o, 1.5);
        o = pl_u64(p, o, (uint64_t)-3);
        o = pl_u64(p, o, 1);
    } else {
        o = pl_str(p, o, "/b");
        o = pl_u64(p, o, (uint64_t)-1);
        o = pl_str(p, o, "eu");
    }
    custom_rec(&a, B + 650, 1, p, o);
    if (k == 1) {
        o = pl_u64(p, 0, 4242);
        custom_rec(&a, B + 660, 2, p, o);
    }
    assert_int_equal(seg_writer_add_data(w, pid + 1, 0, 1, 0, a.b, a.n), 0);

    struct buf bb = { .n = 0 };
    poll_start(&bb, B + 10000, 2, 1);
    poll_end(&bb, B + 10200, 2);
    task_rec(&bb, D9_REC_TASK_TERMINATE, B + 10300, 2, 0);
    poll_start(&bb, B + 10400, 3, 1);
    static const uint64_t sx[] = { 0x1000, 0x2000 }, sy[] = { 0x3000 };
    stack_rec(&bb, D9_REC_CPU_SAMPLE, B + 10500, pid + 1, sx, 2);
    stack_rec(&bb, D9_REC_CPU_SAMPLE, B + 10520, pid + 2, sy, 1);
    stack_rec(&bb, D9_REC_SCHED_SWITCH, B + 10550, pid + 1, sx, 2);
    assert_int_equal(seg_writer_add_data(w, pid + 1, 0, 1, 0, bb.b, bb.n), 0);

    struct buf c = { .n = 0 };
    poll_start(&c, B + 200, 9, 1);
    poll_end(&c, B + 20000, 9);
    assert_int_equal(seg_writer_add_data(w, pid + 2, 1, 1, 0, c.b, c.n), 0);

    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    struct idx_process ip = { .pid = pid, .start_time = pid * 10u, .comm = pi.comm,
                              .exe = "/bin/x", .first_ns = B + 100 };
    int64_t row;
    assert_int_equal(idx_process_upsert(x, &ip, &row), 0);
    assert_int_equal(idx_thread_upsert(x, row, pid + 1, 0, 1, "w0", B + 100, B + 10550, 0), 0);
    assert_int_equal(idx_thread_upsert(x, row, pid + 2, 1, 1, "w1", B + 200, B + 20000, 1), 0);
    assert_int_equal(idx_runtime_upsert(x, row, 1, k == 0 ? "rt1" : "rt2"), 0);
    assert_int_equal(idx_segment_commit(x, row, &sum, fx->dir), 0);
    snprintf(fx->seg[k], sizeof fx->seg[k], "%s", sum.path);
    seg_writer_free(w);
}

static void connect_sql(struct fixture *fx)
{
    char why[512];
    assert_int_equal(q_store_open(&fx->s, fx->dir, why, sizeof why), 0);
    assert_int_equal(sqlite3_open(":memory:", &fx->db), SQLITE_OK);
    if (sql_vtab_attach(fx->db, fx->s, "test_sql_vtab", &fx->v, why, sizeof why) != 0)
        fail_msg("attach: %s", why);
}

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof *fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/d9tsql.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    struct idx *x;
    assert_int_equal(idx_open(&x, fx->dir), 0);
    add_process(fx, x, 0);
    add_process(fx, x, 1);
    idx_close(x);
    connect_sql(fx);
    *state = fx;
    return 0;
}

static void disconnect_sql(struct fixture *fx)
{
    sqlite3_close(fx->db);
    sql_vtab_free(fx->v);
    q_store_close(fx->s);
    fx->db = NULL;
    fx->v = NULL;
    fx->s = NULL;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    disconnect_sql(fx);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->dir);
    assert_int_equal(system(cmd), 0);
    free(fx);
    return 0;
}

/* The rows of q as one string: values '|'-separated, rows ';'-terminated,
 * NULL as "N". */
static const char *rows(struct fixture *fx, const char *q)
{
    static char out[8192];
    size_t n = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(fx->db, q, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", q, sqlite3_errmsg(fx->db));
    int rc;
    out[0] = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const char *t = sqlite3_column_type(st, i) == SQLITE_NULL
                                ? "N" : (const char *)sqlite3_column_text(st, i);
            n += (size_t)snprintf(out + n, sizeof out - n, "%s%s", i ? "|" : "", t);
            assert_true(n < sizeof out);
        }
        n += (size_t)snprintf(out + n, sizeof out - n, ";");
    }
    if (rc != SQLITE_DONE)
        fail_msg("%s: %s", q, sqlite3_errmsg(fx->db));
    sqlite3_finalize(st);
    return out;
}

static int64_t one(struct fixture *fx, const char *q)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(fx->db, q, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", q, sqlite3_errmsg(fx->db));
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* ---- tables ------------------------------------------------------------------------- */

static void index_tables_list_processes_threads_runtimes_segments(void **state)
{
    struct fixture *fx = *state;
    assert_string_equal(rows(fx, "select pid, comm, start_time, first_ns from processes "
                                 "order by pid"),
                        "100|alpha|1000|1000100;200|beta|2000|5000100;");
    assert_string_equal(rows(fx, "select pid, tid, ring, name, ended from threads "
                                 "order by pid, tid"),
                        "100|101|0|w0|0;100|102|1|w1|1;200|201|0|w0|0;200|202|1|w1|1;");
    assert_string_equal(rows(fx, "select pid, runtime_id, name from runtimes order by pid"),
                        "100|1|rt1;200|1|rt2;");
    assert_string_equal(rows(fx, "select pid, id, records, t_min, t_max from segments "
                                 "order by id"),
                        "100|1|17|1000100|1020000;200|2|18|5000100|5020000;");
    assert_string_equal(rows(fx, "select pid, loc, file, line, func, location from locations "
                                 "where pid = 200"),
                        "200|1|a.c|10|spawn_a|a.c:10 spawn_a;");
}

/* An unfinished poll: end_ns NULL, dur_ns up to its process's last record
 * (1020000, a lower bound, as top-polls ranks it), unfinished = why. */
static void polls_pair_starts_and_ends_and_bound_the_unfinished(void **state)
{
    struct fixture *fx = *state;
    assert_string_equal(rows(fx, "select tid, runtime, worker, task, loc, location, start_ns, "
                                 "end_ns, dur_ns, unfinished from polls where pid = 100 "
                                 "order by task"),
                        "101|rt1|0|1|1|a.c:10 spawn_a|1000100|1000300|200|N;"
                        "101|rt1|0|2|1|a.c:10 spawn_a|1010000|1010200|200|N;"
                        "101|rt1|0|3|1|a.c:10 spawn_a|1010400|N|9600|still open;"
                        "102|rt1|0|9|1|a.c:10 spawn_a|1000200|1020000|19800|N;");
    assert_int_equal(one(fx, "select count(*) from polls"), 8);
}

static void polls_started_in_a_window_are_followed_to_their_end(void **state)
{
    struct fixture *fx = *state;
    /* task 9 starts in the window and ends 19 us after it: its end is found */
    sql_vtab_stats_reset(fx->v);
    assert_string_equal(rows(fx, "select task, end_ns from polls where pid = 100 and "
                                 "start_ns between 1000000 and 1001000 order by task"),
                        "1|1000300;9|1020000;");
    /* the window read ring 0's first block and ring 1's block; the extension
     * past the window read what overlaps it until task 9 closed */
    assert_in_range(sql_vtab_stats(fx->v)->blocks, 2, 4);
}

static void parks_carry_cpu_and_sched_wait(void **state)
{
    struct fixture *fx = *state;
    assert_string_equal(rows(fx, "select pid, tid, runtime, worker, start_ns, end_ns, dur_ns, "
                                 "cpu_ns, sched_wait_ns, park_wait_ns from parks order by pid"),
                        "100|101|rt1|0|1000500|1000600|100|1000|77|5;"
                        "200|201|rt2|0|5000500|5000600|100|1000|77|5;");
}

/* One definition of a scheduling wait (q_sched.h): the park's sample and the
 * unpark's, in sched_waits row by row and in workers summed. */
static void sched_waits_and_workers_count_park_and_unpark_samples(void **state)
{
    struct fixture *fx = *state;
    assert_string_equal(rows(fx, "select ts_ns, runtime, worker, kind, wait_ns, cpu_ns "
                                 "from sched_waits where pid = 100"),
                        "1000500|rt1|0|park|5|1000;1000600|rt1|0|unpark|77|1010;");
    assert_string_equal(rows(fx, "select pid, runtime, worker, parks, unparks, waits, wait_sum_ns, "
                                 "wait_max_ns, parked_ns from workers where pid = 100"),
                        "100|rt1|0|1|1|2|82|77|100;");
}

static void record_tables_decode_their_fields(void **state)
{
    struct fixture *fx = *state;
    assert_string_equal(rows(fx, "select pid, tid, ts_ns, runtime, waker, wakee, target_worker "
                                 "from wakes"),
                        "100|101|1000350|rt1|1|2|1;200|201|5000350|rt2|1|2|1;");
    assert_string_equal(rows(fx, "select ts_ns, runtime, task, loc, location from spawns "
                                 "where pid = 200"),
                        "5000150|rt2|2|1|a.c:10 spawn_a;");
    assert_string_equal(rows(fx, "select ts_ns, task from terminates where pid = 100"),
                        "1010300|2;");
    assert_string_equal(rows(fx, "select ts_ns, runtime, worker, depth from queue_depths "
                                 "where pid = 100"),
                        "1000400|rt1|N|5;");
}

static void cpu_samples_and_stacks_share_stack_ids(void **state)
{
    struct fixture *fx = *state;
    assert_string_equal(rows(fx, "select tid, ts_ns, kind, weight_ns, nframes from cpu_samples "
                                 "where pid = 100"),
                        "101|1010500|cpu|10000|2;102|1010520|cpu|10000|1;"
                        "101|1010550|off_cpu|10000|2;");
    /* the same frames in one process: one stack; in another process: another */
    assert_int_equal(one(fx, "select count(distinct stack_id) from cpu_samples"), 4);
    assert_int_equal(one(fx, "select count(*) from cpu_samples a join cpu_samples b "
                             "on a.pid = 100 and b.pid = 100 and a.kind = 'cpu' and "
                             "b.kind = 'off_cpu' and a.stack_id = b.stack_id"), 1);
    assert_string_equal(rows(fx, "select depth, address, pid from stacks where stack_id = "
                                 "(select stack_id from cpu_samples where pid = 100 and "
                                 "kind = 'off_cpu') order by depth"),
                        "0|4096|100;1|8192|100;");
    assert_int_equal(one(fx, "select count(*) from stacks"), 6);
    assert_int_equal(one(fx, "select count(*) from stacks where frame is null"), 0);
    /* tid selects the sampled thread, not the block's */
    assert_int_equal(one(fx, "select count(*) from cpu_samples where tid = 102"), 1);
}

static void events_hold_every_record_with_json_fields(void **state)
{
    struct fixture *fx = *state;
    assert_int_equal(one(fx, "select count(*) from events"), 35);
    assert_int_equal(one(fx, "select count(*) from events where type = 'poll_start'"), 8);
    assert_string_equal(rows(fx, "select type, event, thread, json_extract(fields, '$.wakee'), "
                                 "json_extract(fields, '$.runtime') from events "
                                 "where pid = 100 and ts_ns = 1000350"),
                        "wake|N|w0|2|rt1;");
    assert_string_equal(rows(fx, "select event, json_extract(fields, '$.path') from events "
                                 "where type = 'custom' and pid = 100"),
                        "request_done|/a;");
    /* rows come in time order: no sort needed for ORDER BY ts_ns */
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(fx->db, "select ts_ns from events order by ts_ns", -1,
                                        &st, NULL), SQLITE_OK);
    int64_t last = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        assert_true(sqlite3_column_int64(st, 0) >= last);
        last = sqlite3_column_int64(st, 0);
    }
    assert_int_equal(sqlite3_stmt_status(st, SQLITE_STMTSTATUS_SORT, 0), 0);
    sqlite3_finalize(st);
}

static void custom_event_tables_have_typed_columns_and_union_fields(void **state)
{
    struct fixture *fx = *state;
    /* every field type; pid 200's schema has no latency/delta/ok, and a region */
    assert_string_equal(rows(fx, "select pid, tid, ts_ns, path, status, latency_ms, delta, ok, "
                                 "region, typeof(latency_ms), typeof(ok) from request_done "
                                 "order by pid"),
                        "100|101|1000650|/a|200|1.5|-3|1|N|real|integer;"
                        "200|201|5000650|/b|-1|N|N|N|eu|null|null;");
    /* declared types: status differs between the schemas (u64 vs i64): no type */
    assert_string_equal(rows(fx, "select name, type from pragma_table_info('request_done')"),
                        "pid|INTEGER;tid|INTEGER;ts_ns|INTEGER;task|INTEGER;path|TEXT;status|;"
                        "latency_ms|REAL;delta|INTEGER;ok|INTEGER;region|TEXT;");
    /* a name taken by a built-in table gets "event_", a field named pid gets "f_" */
    assert_string_equal(rows(fx, "select pid, f_pid from event_polls"), "200|4242;");
}

/* sql_vtab_attach_lazy: the built-in tables answer as the created ones, with no schema
 * and no custom table; sql_vtab_attach_tables then leaves the connection as
 * sql_vtab_attach does: the same schema rows, the custom tables, "d9" the only module. */
static void lazy_attach_answers_as_attach_and_completes_to_it(void **state)
{
    struct fixture *fx = *state;
    const char *polls = "select pid, task, start_ns, end_ns from polls order by pid, start_ns";
    char want[8192], schema[8192];
    snprintf(want, sizeof want, "%s", rows(fx, polls));
    snprintf(schema, sizeof schema, "%s", rows(fx, "select type, name, sql from sqlite_schema "
                                                   "order by rowid"));
    disconnect_sql(fx);
    char why[512];
    assert_int_equal(q_store_open(&fx->s, fx->dir, why, sizeof why), 0);
    assert_int_equal(sqlite3_open(":memory:", &fx->db), SQLITE_OK);
    if (sql_vtab_attach_lazy(fx->db, fx->s, "test_sql_vtab", &fx->v, why, sizeof why) != 0)
        fail_msg("attach_lazy: %s", why);
    assert_string_equal(rows(fx, polls), want);
    assert_int_equal(one(fx, "select count(*) from main.processes"), 2);
    assert_int_equal(one(fx, "select count(*) from sqlite_schema"), 0);
    sqlite3_stmt *st = NULL;
    assert_int_not_equal(sqlite3_prepare_v2(fx->db, "select * from request_done", -1, &st, NULL),
                         SQLITE_OK);
    assert_null(st);
    for (int i = 0; i < 2; i++)     /* the second call does nothing */
        if (sql_vtab_attach_tables(fx->db, fx->v, why, sizeof why) != 0)
            fail_msg("attach_tables: %s", why);
    assert_string_equal(rows(fx, "select type, name, sql from sqlite_schema order by rowid"),
                        schema);
    assert_string_equal(rows(fx, polls), want);
    assert_string_equal(rows(fx, "select pid, path from request_done order by pid"),
                        "100|/a;200|/b;");
    assert_string_equal(rows(fx, "select name from pragma_module_list where name in "
                                 "('d9', 'polls', 'processes')"), "d9;");
}

/* ---- push-down ------------------------------------------------------------------------ */

static void pid_and_time_constraints_read_only_matching_blocks(void **state)
{
    struct fixture *fx = *state;
    sql_vtab_stats_reset(fx->v);
    assert_int_equal(one(fx, "select count(*) from events"), 35);
    assert_int_equal(sql_vtab_stats(fx->v)->blocks, 6);
    sql_vtab_stats_reset(fx->v);
    assert_int_equal(one(fx, "select count(*) from events where pid = 200"), 18);
    assert_int_equal(sql_vtab_stats(fx->v)->blocks, 3);
    /* ring 0's second block and ring 1's long block overlap this window */
    sql_vtab_stats_reset(fx->v);
    assert_int_equal(one(fx, "select count(*) from events where pid = 100 and "
                             "ts_ns >= 1010000 and ts_ns < 1010400"), 3);
    assert_int_equal(sql_vtab_stats(fx->v)->blocks, 2);
    sql_vtab_stats_reset(fx->v);
    assert_int_equal(one(fx, "select count(*) from events where ts_ns between 1000100 and 1000160"),
                     2);
    assert_int_equal(sql_vtab_stats(fx->v)->blocks, 1);
    /* tid selects the blocks of that thread */
    sql_vtab_stats_reset(fx->v);
    assert_int_equal(one(fx, "select count(*) from events where tid = 102"), 2);
    assert_int_equal(sql_vtab_stats(fx->v)->blocks, 1);
    /* runtime narrows to the one process that has it */
    sql_vtab_stats_reset(fx->v);
    assert_int_equal(one(fx, "select count(*) from polls where runtime = 'rt2'"), 4);
    assert_int_equal(sql_vtab_stats(fx->v)->blocks, 3);
    /* an event only pid 200 defines reads only pid 200's blocks */
    sql_vtab_stats_reset(fx->v);
    assert_int_equal(one(fx, "select count(*) from event_polls"), 1);
    assert_int_equal(sql_vtab_stats(fx->v)->blocks, 3);
    /* nothing can match: no block is read */
    sql_vtab_stats_reset(fx->v);
    assert_int_equal(one(fx, "select count(*) from events where pid = 100 and pid = 200"), 0);
    assert_int_equal(one(fx, "select count(*) from events where ts_ns < 0"), 0);
    assert_int_equal(one(fx, "select count(*) from polls where runtime = 'nope'"), 0);
    assert_int_equal(one(fx, "select count(*) from event_polls where pid = 100"), 0);
    assert_int_equal(sql_vtab_stats(fx->v)->blocks, 0);
    /* a constraint that is not a number is left to SQLite, and still right */
    assert_int_equal(one(fx, "select count(*) from events where pid = '100'"), 17);
    assert_int_equal(one(fx, "select count(*) from events where ts_ns > 1010549.5 and "
                             "ts_ns <= 5000100.0"), 3);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* rows() with its rows sorted (a scan's order is not part of the answer) */
static void sorted_rows(struct fixture *fx, const char *q, char *out, size_t cap)
{
    char buf[8192];
    snprintf(buf, sizeof buf, "%s", rows(fx, q));
    char *v[512];
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ";", &save); t && n < 512;
         t = strtok_r(NULL, ";", &save))
        v[n++] = t;
    qsort(v, n, sizeof v[0], cmp_str);
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; i < n; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s;", v[i]);
    assert_true(o < cap);
}

/* Push-down may only narrow what is read, never the answer: every
 * constraint gives the same rows on the virtual table as on a plain copy
 * of it (odd values included: NULL, text, reals, out of range). */
static void pushed_constraints_answer_as_sqlite_does(void **state)
{
    struct fixture *fx = *state;
    static const char *const tables[] = { "events", "polls", "parks", "cpu_samples", "stacks",
                                          "request_done", "threads", "processes" };
    static const char *const where[] = {
        "pid = 100", "pid = '200'", "pid = 100.0", "pid = 100.5", "pid = NULL", "pid = 'x'",
        "pid = 1e20", "pid = -1", "pid = 0", "tid = 101", "tid = 202.0", "tid = x'00'",
        "ts_ns > 1010549.5", "ts_ns >= 1010550", "ts_ns < 1000151", "ts_ns <= 1000150.9",
        "ts_ns = 1000350", "ts_ns = 1000350.5", "ts_ns between -5 and 1e30",
        "ts_ns > 9223372036854775807", "ts_ns < -9223372036854775807", "ts_ns > 'abc'",
        "start_ns between 1000000 and 1001000", "start_ns > 1010000 and start_ns < 5000000",
        "runtime = 'rt2'", "runtime = NULL", "runtime = 'nope'", "type = 'wake'",
        "type = 'nope'", "type = NULL", "stack_id = -1", "stack_id = 'x'",
        "stack_id = (select min(stack_id) from cpu_samples)", "pid = 100 and pid = 200",
        "pid in (100, 200)", "pid = 100 or tid = 202",
    };
    char q[512], qc[512];
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
        snprintf(q, sizeof q, "create temp table copy_%s as select * from %s", tables[t],
                 tables[t]);
        assert_int_equal(sqlite3_exec(fx->db, q, NULL, NULL, NULL), SQLITE_OK);
        for (size_t w = 0; w < sizeof where / sizeof where[0]; w++) {
            snprintf(q, sizeof q, "select * from %s where %s", tables[t], where[w]);
            sqlite3_stmt *st;
            if (sqlite3_prepare_v2(fx->db, q, -1, &st, NULL) != SQLITE_OK)
                continue;           /* no such column in this table */
            sqlite3_finalize(st);
            char got[8192], want[8192];
            sorted_rows(fx, q, got, sizeof got);
            snprintf(qc, sizeof qc, "select * from copy_%s where %s", tables[t], where[w]);
            sorted_rows(fx, qc, want, sizeof want);
            if (strcmp(got, want) != 0)
                fail_msg("%s:\n  vtab: %s\n  copy: %s", q, got, want);
        }
    }
}

/* Polls grouped or ordered by loc or location come from the table in that
 * order (no sorter in the plan) and answer as SQLite does on a plain copy:
 * the same groups, aggregates, unfinished polls and rowids. */
static void polls_grouped_by_location_are_served_in_order(void **state)
{
    struct fixture *fx = *state;
    static const char *const qs[] = {
        "select location, count(*), max(dur_ns), min(start_ns), count(end_ns) from %s "
        "group by location",
        "select loc, count(*), sum(dur_ns) from %s group by loc",
        "select location, task, start_ns, end_ns from %s order by location",
        "select pid, location, count(*) from %s where pid = 200 group by location",
        "select location, count(*) from %s where start_ns between 1000000 and 1001000 "
        "group by location",
        "select location, count(*) from %s where start_ns > 9000000 group by location",
        "select rowid, location, task from %s order by location",
    };
    assert_int_equal(sqlite3_exec(fx->db, "create temp table copy_polls as "
                                  "select rowid as rowid, * from polls", NULL, NULL, NULL),
                     SQLITE_OK);
    char q[512], qc[512], plan[600];
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        snprintf(q, sizeof q, qs[i], "polls");
        snprintf(plan, sizeof plan, "explain query plan %s", q);
        if (strstr(rows(fx, plan), "B-TREE"))
            fail_msg("%s: sorts: %s", q, rows(fx, plan));
        char got[8192], want[8192];
        sorted_rows(fx, q, got, sizeof got);
        snprintf(qc, sizeof qc, qs[i], "copy_polls");
        sorted_rows(fx, qc, want, sizeof want);
        if (strcmp(got, want) != 0)
            fail_msg("%s:\n  vtab: %s\n  copy: %s", q, got, want);
    }
    /* descending or by two keys: SQLite sorts, as before */
    assert_non_null(strstr(rows(fx, "explain query plan select * from polls "
                                    "order by location desc"), "B-TREE"));
    assert_non_null(strstr(rows(fx, "explain query plan select location, tid, count(*) "
                                    "from polls group by location, tid"), "B-TREE"));
}

/* ---- bad input --------------------------------------------------------------------------- */

static void corrupt_block_under_a_query_is_skipped_and_counted(void **state)
{
    struct fixture *fx = *state;
    disconnect_sql(fx);
    struct seg_reader *r;
    assert_int_equal(seg_reader_open(&r, fx->seg[0], 0), 0);
    struct seg_block b;
    uint64_t off = 0;
    while (seg_reader_next(r, &b) == 1)
        if (b.h.kind == SEG_BLK_DATA) {
            off = b.offset;
            break;
        }
    seg_reader_close(r);
    assert_true(off > 0);
    FILE *f = fopen(fx->seg[0], "r+b");
    assert_non_null(f);
    fseek(f, (long)(off + sizeof(struct seg_block_hdr) + 24), SEEK_SET);
    fputc(0x5a, f);
    fclose(f);
    connect_sql(fx);
    sql_vtab_stats_reset(fx->v);
    /* pid 100 loses block A (8 records); everything else is there */
    assert_int_equal(one(fx, "select count(*) from events"), 27);
    assert_int_equal(sql_vtab_stats(fx->v)->bad_blocks, 1);
    assert_int_equal(one(fx, "select count(*) from polls where pid = 100"), 3);
}

static void truncated_segment_under_a_query_is_skipped_and_counted(void **state)
{
    struct fixture *fx = *state;
    disconnect_sql(fx);
    assert_int_equal(truncate(fx->seg[1], 700), 0);
    connect_sql(fx);
    sql_vtab_stats_reset(fx->v);
    assert_int_equal(one(fx, "select count(*) from events"), 17);
    assert_int_equal(sql_vtab_stats(fx->v)->missing_segments, 1);
    assert_int_equal(one(fx, "select count(*) from polls where pid = 200"), 0);
    assert_int_equal(one(fx, "select count(*) from stacks where pid = 200"), 0);
}

static void sql_errors_carry_sqlite_message(void **state)
{
    struct fixture *fx = *state;
    sqlite3_stmt *st;
    assert_int_not_equal(sqlite3_prepare_v2(fx->db, "select nope from polls", -1, &st, NULL),
                         SQLITE_OK);
    assert_string_equal(sqlite3_errmsg(fx->db), "no such column: nope");
    assert_int_not_equal(sqlite3_exec(fx->db, "delete from polls", NULL, NULL, NULL), SQLITE_OK);
    assert_non_null(strstr(sqlite3_errmsg(fx->db), "polls"));
}

int main(void)
{
#define T_(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T_(index_tables_list_processes_threads_runtimes_segments),
        T_(polls_pair_starts_and_ends_and_bound_the_unfinished),
        T_(polls_started_in_a_window_are_followed_to_their_end),
        T_(polls_grouped_by_location_are_served_in_order),
        T_(parks_carry_cpu_and_sched_wait),
        T_(sched_waits_and_workers_count_park_and_unpark_samples),
        T_(record_tables_decode_their_fields),
        T_(cpu_samples_and_stacks_share_stack_ids),
        T_(events_hold_every_record_with_json_fields),
        T_(custom_event_tables_have_typed_columns_and_union_fields),
        T_(lazy_attach_answers_as_attach_and_completes_to_it),
        T_(pid_and_time_constraints_read_only_matching_blocks),
        T_(pushed_constraints_answer_as_sqlite_does),
        T_(corrupt_block_under_a_query_is_skipped_and_counted),
        T_(truncated_segment_under_a_query_is_skipped_and_counted),
        T_(sql_errors_carry_sqlite_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
