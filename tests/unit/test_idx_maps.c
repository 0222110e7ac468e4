/*
 * test_idx_maps.c — the map blocks' partial index of the store's index
 * (collector/store/idx.c blocks_maps) and the per-segment maps count it
 * serves (idx_read_segments_window, `d9 segments`' "maps"): every writable
 * open creates it, the count's query uses it, and the count is the same
 * without it (an older index opened read-only).
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
#include <cmocka.h>
#include "collector/store/idx_int.h"
#include "collector/store/idx_read.h"
#include "collector/store/seg.h"
#include "collector/store/sym.h"
#include "tests/unit/idx_fixture.h"

static int64_t q_int(struct idx *x, const char *sql)
{
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(idx_db(x), sql, -1, &s, NULL), SQLITE_OK);
    int64_t v = -1;
    if (sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

static const char has_index[] =
    "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'blocks_maps'";

/* Segment 5 of pid 4242: two program blocks (ring 0, 3 records each), two
 * map blocks (SYM_SEG_RING, 4 + 5 records) and a metadata block; the
 * footer's custom count holds the 9 maps and 2 program custom events. */
static void add_segment(struct fx *fx)
{
    struct idx_process p = { .pid = 4242, .uid = 1000, .start_time = 777, .comm = "worker",
                             .exe = "/bin/worker", .first_ns = 500 };
    int64_t pid = 0;
    assert_int_equal(idx_process_upsert(fx->x, &p, &pid), 0);
    static struct seg_block_info b[5] = {
        { .offset = 64, .len = 100, .kind = SEG_BLK_META, .nrec = 7 },
        { .offset = 164, .len = 100, .kind = SEG_BLK_DATA, .ring = SYM_SEG_RING, .nrec = 4,
          .t_first = 1000, .t_last = 1000 },
        { .offset = 264, .len = 100, .kind = SEG_BLK_DATA, .tid = 100, .ring = 0,
          .generation = 1, .nrec = 3, .t_first = 1001, .t_last = 1003 },
        { .offset = 364, .len = 100, .kind = SEG_BLK_DATA, .ring = SYM_SEG_RING, .nrec = 5,
          .t_first = 1004, .t_last = 1004 },
        { .offset = 464, .len = 100, .kind = SEG_BLK_DATA, .tid = 100, .ring = 0,
          .generation = 1, .nrec = 3, .t_first = 1005, .t_last = 1008 },
    };
    struct seg_summary s = { .segment_id = 5, .pid = 4242, .uid = 1000, .start_time = 777,
                             .bytes = 600, .nrecords = 15, .t_min = 1000, .t_max = 1008,
                             .blocks = b, .nblocks = 5, .sealed_ns = 2000 };
    snprintf(s.path, sizeof s.path, "%s/4242-777-5.d9seg", fx->dir);
    s.counts[D9_REC_POLL_START] = 4;
    s.counts[D9_REC_CUSTOM] = 11;
    assert_int_equal(idx_segment_commit(fx->x, pid, &s, fx->dir), 0);
}

struct got {
    unsigned rows;
    uint64_t maps, custom, records;
};

static int on_segment(void *arg, const struct idx_read_segment *r)
{
    struct got *g = arg;
    g->rows++;
    g->maps = r->maps;
    g->custom = r->counts[D9_REC_CUSTOM];
    g->records = r->records;
    return 0;
}

static struct got read_segments(struct idx *x)
{
    struct got g = { 0 };
    assert_int_equal(idx_read_segments_window(x, 0, 0, UINT64_MAX, on_segment, &g), 1);
    return g;
}

/* The SQL of the segments listing, caught as it runs (SQLITE_TRACE_STMT). */
static char seg_sql[4096];

static int on_trace(unsigned type, void *ctx, void *p, void *xsql)
{
    (void)type; (void)ctx; (void)xsql;
    const char *sql = sqlite3_sql(p);
    if (sql && strstr(sql, "FROM segments s JOIN processes") && strlen(sql) < sizeof seg_sql)
        strcpy(seg_sql, sql);
    return 0;
}

/* Does SQLite's plan for the listing read blocks through blocks_maps? */
static int plan_uses_index(struct idx *x)
{
    char q[sizeof seg_sql + 32];
    snprintf(q, sizeof q, "EXPLAIN QUERY PLAN %s", seg_sql);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(idx_db(x), q, -1, &s, NULL), SQLITE_OK);
    int uses = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *d = (const char *)sqlite3_column_text(s, 3);
        if (d && strstr(d, "blocks_maps"))
            uses = 1;
    }
    sqlite3_finalize(s);
    return uses;
}

static void test_writable_open_creates_the_map_blocks_index(void **state)
{
    struct fx *fx = *state;
    assert_int_equal(q_int(fx->x, has_index), 1);
    /* an index made before it: the next writable open adds it */
    assert_int_equal(sqlite3_exec(idx_db(fx->x), "DROP INDEX blocks_maps", NULL, NULL, NULL),
                     SQLITE_OK);
    idx_close(fx->x);
    struct idx *ro;
    assert_int_equal(idx_open_readonly(&ro, fx->dir), 0);
    assert_int_equal(q_int(ro, has_index), 0);          /* readers never write */
    idx_close(ro);
    assert_int_equal(idx_open(&fx->x, fx->dir), 0);
    assert_int_equal(q_int(fx->x, has_index), 1);
}

static void test_maps_count_reads_the_map_blocks_through_the_index(void **state)
{
    struct fx *fx = *state;
    add_segment(fx);
    seg_sql[0] = 0;
    assert_int_equal(sqlite3_trace_v2(idx_db(fx->x), SQLITE_TRACE_STMT, on_trace, NULL),
                     SQLITE_OK);
    struct got g = read_segments(fx->x);
    sqlite3_trace_v2(idx_db(fx->x), 0, NULL, NULL);
    assert_int_equal(g.rows, 1);
    assert_int_equal(g.maps, 9);
    assert_int_equal(g.custom, 2);
    assert_int_equal(g.records, 15);
    assert_true(seg_sql[0] != 0);
    assert_true(plan_uses_index(fx->x));
}

static void test_maps_count_is_the_same_without_the_index(void **state)
{
    struct fx *fx = *state;
    add_segment(fx);
    struct got with = read_segments(fx->x);
    assert_int_equal(sqlite3_exec(idx_db(fx->x), "DROP INDEX blocks_maps", NULL, NULL, NULL),
                     SQLITE_OK);
    idx_close(fx->x);
    fx->x = NULL;
    struct idx *ro;
    assert_int_equal(idx_open_readonly(&ro, fx->dir), 0);
    struct got without = read_segments(ro);
    idx_close(ro);
    assert_int_equal(without.maps, 9);
    assert_int_equal(without.maps, with.maps);
    assert_int_equal(without.custom, with.custom);
    assert_int_equal(without.records, with.records);
    assert_int_equal(idx_open(&fx->x, fx->dir), 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, idx_fx_setup, idx_fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_writable_open_creates_the_map_blocks_index),
        T(test_maps_count_reads_the_map_blocks_through_the_index),
        T(test_maps_count_is_the_same_without_the_index),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
