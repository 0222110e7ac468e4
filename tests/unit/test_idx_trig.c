/*
 * test_idx_trig.c — the index's triggers table (collector/store/idx_trig.c)
 * and schema versions 4 and 5: rows with and without a window, a merge that
 * grows the windows it swallowed, the pid and time filter, a typed
 * trigger's fields (version 5), a version 3 index read as having no
 * triggers and a version 4 one as triggers without fields, both upgraded by
 * a writer's open.
 */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "collector/store/idx_int.h"
#include "collector/store/idx_trig.h"
#include "tests/unit/idx_fixture.h"

struct rows {
    size_t n;
    struct {
        uint32_t pid;
        uint64_t t, w0, w1;
        char source[16], reason[32], verdict[16], fields[64];
        int has_fields;
    } r[8];
};

static int collect(void *arg, const struct idx_trigger *t)
{
    struct rows *rs = arg;
    if (rs->n == 8)
        return 1;
    rs->r[rs->n].pid = t->pid;
    rs->r[rs->n].t = t->t_ns;
    rs->r[rs->n].w0 = t->win_t0_ns;
    rs->r[rs->n].w1 = t->win_t1_ns;
    snprintf(rs->r[rs->n].source, sizeof rs->r[0].source, "%s", t->source);
    snprintf(rs->r[rs->n].reason, sizeof rs->r[0].reason, "%s", t->reason);
    snprintf(rs->r[rs->n].verdict, sizeof rs->r[0].verdict, "%s", t->verdict);
    rs->r[rs->n].has_fields = t->fields != NULL;
    snprintf(rs->r[rs->n].fields, sizeof rs->r[0].fields, "%s", t->fields ? t->fields : "");
    rs->n++;
    return 0;
}

static void add(struct idx *x, uint32_t pid, uint64_t t, const char *verdict, uint64_t w0,
                uint64_t w1)
{
    struct idx_trigger row = { .pid = pid, .process_id = 0, .t_ns = t, .source = "marker",
                               .reason = "why", .verdict = verdict, .win_t0_ns = w0,
                               .win_t1_ns = w1 };
    assert_int_equal(idx_trig_add(x, &row), 0);
}

static void test_a_trigger_row_keeps_its_fields_and_a_debounced_one_has_no_window(void **state)
{
    struct fx *fx = *state;
    add(fx->x, 10, 1000, "kept", 900, 1100);
    add(fx->x, 10, 1001, "debounced", 0, 0);
    struct rows rs = { 0 };
    assert_int_equal(idx_trig_foreach(fx->x, 0, 0, UINT64_MAX, collect, &rs), 0);
    assert_int_equal(rs.n, 2);
    assert_int_equal(rs.r[0].pid, 10);
    assert_int_equal(rs.r[0].t, 1000);
    assert_string_equal(rs.r[0].source, "marker");
    assert_string_equal(rs.r[0].reason, "why");
    assert_string_equal(rs.r[0].verdict, "kept");
    assert_int_equal(rs.r[0].w0, 900);
    assert_int_equal(rs.r[0].w1, 1100);
    assert_string_equal(rs.r[1].verdict, "debounced");
    assert_int_equal(rs.r[1].w0, 0);
    assert_int_equal(rs.r[1].w1, 0);
    sqlite3 *db = idx_db(fx->x);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM triggers WHERE win_t0 IS NULL",
                                        -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(s, 0), 1);
    sqlite3_finalize(s);
}

static void test_a_merge_gives_every_swallowed_window_the_merged_bounds(void **state)
{
    struct fx *fx = *state;
    add(fx->x, 10, 1000, "kept", 900, 1100);
    add(fx->x, 11, 5000, "kept", 4900, 5100);      /* apart */
    add(fx->x, 12, 1150, "merged", 900, 1200);     /* grows the first */
    struct rows rs = { 0 };
    assert_int_equal(idx_trig_foreach(fx->x, 0, 0, UINT64_MAX, collect, &rs), 0);
    assert_int_equal(rs.n, 3);
    assert_int_equal(rs.r[0].w1, 1200);            /* by time: 1000, 1150, 5000 */
    assert_int_equal(rs.r[1].w1, 1200);
    assert_int_equal(rs.r[2].w0, 4900);
    assert_int_equal(rs.r[2].w1, 5100);
}

static void test_foreach_filters_by_pid_and_time(void **state)
{
    struct fx *fx = *state;
    add(fx->x, 10, 1000, "kept", 900, 1100);
    add(fx->x, 11, 2000, "kept", 1900, 2100);
    add(fx->x, 10, 3000, "kept", 2900, 3100);
    struct rows rs = { 0 };
    assert_int_equal(idx_trig_foreach(fx->x, 10, 0, 2500, collect, &rs), 0);
    assert_int_equal(rs.n, 1);
    assert_int_equal(rs.r[0].t, 1000);
}

static void restore(struct idx *x, uint32_t pid, uint64_t t, const char *verdict, uint64_t w0,
                    uint64_t w1)
{
    struct idx_trigger row = { .pid = pid, .t_ns = t, .source = "marker", .reason = "why",
                               .verdict = verdict, .win_t0_ns = w0, .win_t1_ns = w1 };
    assert_int_equal(idx_trig_restore(x, &row), 0);
}

/* A re-index reads the merge's rows in file order, not firing order: the
 * merged window (the union) comes out the same, and a row read twice is
 * one row. */
static void test_restored_rows_merge_in_any_order_without_duplicates(void **state)
{
    struct fx *fx = *state;
    restore(fx->x, 12, 1150, "merged", 900, 1200);  /* the later, grown window first */
    restore(fx->x, 11, 5000, "kept", 4900, 5100);   /* apart */
    restore(fx->x, 10, 1000, "kept", 900, 1100);    /* then the first, smaller one */
    restore(fx->x, 10, 1000, "kept", 900, 1100);    /* read again: nothing */
    restore(fx->x, 10, 1001, "debounced", 0, 0);
    struct rows rs = { 0 };
    assert_int_equal(idx_trig_foreach(fx->x, 0, 0, UINT64_MAX, collect, &rs), 0);
    assert_int_equal(rs.n, 4);
    assert_int_equal(rs.r[0].t, 1000);
    assert_int_equal(rs.r[0].w0, 900);
    assert_int_equal(rs.r[0].w1, 1200);             /* not shrunk back to 1100 */
    assert_string_equal(rs.r[1].verdict, "debounced");
    assert_int_equal(rs.r[1].w1, 0);
    assert_int_equal(rs.r[2].w1, 1200);
    assert_int_equal(rs.r[3].w0, 4900);
    assert_int_equal(rs.r[3].w1, 5100);
}

/* By overlap: a row outside the range whose window reaches into it. */
static void test_foreach_overlap_adds_windows_reaching_in(void **state)
{
    struct fx *fx = *state;
    add(fx->x, 10, 1000, "kept", 900, 2000);
    add(fx->x, 10, 1500, "debounced", 0, 0);
    add(fx->x, 11, 3000, "kept", 2900, 3100);
    struct rows rs = { 0 };
    assert_int_equal(idx_trig_foreach(fx->x, 0, 1600, 2500, collect, &rs), 0);
    assert_int_equal(rs.n, 0);
    assert_int_equal(idx_trig_foreach_overlap(fx->x, 0, 1600, 2500, collect, &rs), 0);
    assert_int_equal(rs.n, 1);
    assert_int_equal(rs.r[0].t, 1000);
    rs.n = 0;
    assert_int_equal(idx_trig_foreach_overlap(fx->x, 11, 1600, 2500, collect, &rs), 0);
    assert_int_equal(rs.n, 0);
}

/* A store written before the triggers: version 3, no table. */
static void make_version_3(struct fx *fx)
{
    assert_int_equal(sqlite3_exec(idx_db(fx->x), "DROP TABLE triggers; UPDATE meta SET value ="
                                  " '3' WHERE key = 'schema_version'", NULL, NULL, NULL),
                     SQLITE_OK);
    idx_close(fx->x);
    fx->x = NULL;
}

static long long version_of(struct idx *x)
{
    sqlite3_stmt *s;
    long long v = -1;
    if (sqlite3_prepare_v2(idx_db(x), "SELECT value FROM meta WHERE key = 'schema_version'", -1,
                           &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

static void test_a_version_3_store_reads_as_having_no_triggers(void **state)
{
    struct fx *fx = *state;
    make_version_3(fx);
    char why[512];
    struct idx *ro = NULL;
    assert_int_equal(idx_open_ex(&ro, fx->dir, IDX_OPEN_READONLY, why, sizeof why), 0);
    struct rows rs = { 0 };
    assert_int_equal(idx_trig_foreach(ro, 0, 0, UINT64_MAX, collect, &rs), 0);
    assert_int_equal(rs.n, 0);
    assert_int_equal(version_of(ro), 3);    /* a reader changes nothing */
    idx_close(ro);
}

static void test_a_writer_upgrades_a_version_3_store_to_5(void **state)
{
    struct fx *fx = *state;
    make_version_3(fx);
    assert_int_equal(idx_open(&fx->x, fx->dir), 0);
    assert_int_equal(version_of(fx->x), IDX_SCHEMA_VERSION);
    assert_int_equal(IDX_SCHEMA_VERSION, 5);
    add(fx->x, 10, 1000, "kept", 900, 1100);
    struct rows rs = { 0 };
    assert_int_equal(idx_trig_foreach(fx->x, 0, 0, UINT64_MAX, collect, &rs), 0);
    assert_int_equal(rs.n, 1);
}

static void add_fields(struct idx *x, uint64_t t, const char *fields)
{
    struct idx_trigger row = { .pid = 10, .t_ns = t, .source = "marker", .reason = "slow",
                               .verdict = "debounced", .fields = fields };
    assert_int_equal(idx_trig_add(x, &row), 0);
}

static void test_a_typed_trigger_keeps_its_fields_and_others_have_none(void **state)
{
    struct fx *fx = *state;
    add_fields(fx->x, 1000, "{\"latency_ms\":250,\"path\":\"/k\"}");
    add_fields(fx->x, 1001, NULL);
    add_fields(fx->x, 1002, "");        /* empty: none */
    struct rows rs = { 0 };
    assert_int_equal(idx_trig_foreach(fx->x, 0, 0, UINT64_MAX, collect, &rs), 0);
    assert_int_equal(rs.n, 3);
    assert_true(rs.r[0].has_fields);
    assert_string_equal(rs.r[0].fields, "{\"latency_ms\":250,\"path\":\"/k\"}");
    assert_false(rs.r[1].has_fields);
    assert_false(rs.r[2].has_fields);
}

/* A store written before the fields: version 4, a triggers table without
 * the column, one row in it. */
static void make_version_4(struct fx *fx)
{
    assert_int_equal(sqlite3_exec(idx_db(fx->x), "ALTER TABLE triggers DROP COLUMN fields;"
                                  " INSERT INTO triggers(pid, t_ns, source, reason, verdict)"
                                  " VALUES(10, 1000, 'shell', 'old', 'kept');"
                                  " UPDATE meta SET value = '4' WHERE key = 'schema_version'",
                                  NULL, NULL, NULL), SQLITE_OK);
    idx_close(fx->x);
    fx->x = NULL;
}

static void test_a_version_4_store_reads_as_triggers_without_fields(void **state)
{
    struct fx *fx = *state;
    make_version_4(fx);
    char why[512];
    struct idx *ro = NULL;
    assert_int_equal(idx_open_ex(&ro, fx->dir, IDX_OPEN_READONLY, why, sizeof why), 0);
    struct rows rs = { 0 };
    assert_int_equal(idx_trig_foreach(ro, 0, 0, UINT64_MAX, collect, &rs), 0);
    assert_int_equal(rs.n, 1);
    assert_string_equal(rs.r[0].reason, "old");
    assert_false(rs.r[0].has_fields);
    assert_int_equal(version_of(ro), 4);    /* a reader changes nothing */
    idx_close(ro);
}

static void test_a_writer_upgrades_a_version_4_store_to_5_keeping_its_rows(void **state)
{
    struct fx *fx = *state;
    make_version_4(fx);
    assert_int_equal(idx_open(&fx->x, fx->dir), 0);
    assert_int_equal(version_of(fx->x), 5);
    add_fields(fx->x, 2000, "{\"n\":1}");
    struct rows rs = { 0 };
    assert_int_equal(idx_trig_foreach(fx->x, 0, 0, UINT64_MAX, collect, &rs), 0);
    assert_int_equal(rs.n, 2);
    assert_string_equal(rs.r[0].reason, "old");
    assert_false(rs.r[0].has_fields);
    assert_string_equal(rs.r[1].fields, "{\"n\":1}");
}

static void test_a_version_2_store_is_still_refused(void **state)
{
    struct fx *fx = *state;
    assert_int_equal(sqlite3_exec(idx_db(fx->x), "UPDATE meta SET value = '2' WHERE key ="
                                  " 'schema_version'", NULL, NULL, NULL), SQLITE_OK);
    idx_close(fx->x);
    fx->x = NULL;
    char why[512];
    struct idx *x = NULL;
    assert_int_equal(idx_open_ex(&x, fx->dir, 0, why, sizeof why), -EPROTONOSUPPORT);
    assert_null(x);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, idx_fx_setup, idx_fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_a_trigger_row_keeps_its_fields_and_a_debounced_one_has_no_window),
        T(test_a_merge_gives_every_swallowed_window_the_merged_bounds),
        T(test_foreach_filters_by_pid_and_time),
        T(test_restored_rows_merge_in_any_order_without_duplicates),
        T(test_foreach_overlap_adds_windows_reaching_in),
        T(test_a_version_3_store_reads_as_having_no_triggers),
        T(test_a_writer_upgrades_a_version_3_store_to_5),
        T(test_a_typed_trigger_keeps_its_fields_and_others_have_none),
        T(test_a_version_4_store_reads_as_triggers_without_fields),
        T(test_a_writer_upgrades_a_version_4_store_to_5_keeping_its_rows),
        T(test_a_version_2_store_is_still_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
