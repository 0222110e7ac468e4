/*
 * test_idx_read.c — idx_read.c's queries when a step of SQLite fails
 * (collector/store/idx_read.c): a listing whose statement fails after its
 * first row returns -EIO with the reason in idx_errmsg, never a short list
 * that looks complete; idx_read_time_range tells a failed step (-EIO) from
 * a store without segments (-ENOENT).
 *
 * The failure is injected on the index's own connection (idx_int.h, white
 * box): sqlite3_interrupt from inside the listing's callback, while its
 * statement is running, so its next step answers SQLITE_INTERRUPT; or a
 * progress handler that interrupts every statement.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "collector/store/idx_int.h"
#include "collector/store/idx_read.h"
#include "collector/store/seg.h"
#include "tests/unit/idx_fixture.h"

/* One process (id 1) with two segments; segment 1 has three DATA blocks
 * and two META blocks. */
static int setup(void **state)
{
    idx_fx_setup(state);
    struct fx *fx = *state;
    assert_int_equal(sqlite3_exec(fx->x->db,
        "INSERT INTO processes(id, pid, start_time, uid, comm, exe, first_ns, last_ns, state,"
        " records, lost) VALUES(1, 100, 1, 0, 'p', '/p', 10, 1000, 'exited', 3, 0);"
        "INSERT INTO segments(id, process_id, path, t_min, t_max, bytes, records, lost)"
        " VALUES(1, 1, 'a.d9seg', 10, 500, 100, 3, 0), (2, 1, 'b.d9seg', 501, 1000, 100, 0, 0);"
        "INSERT INTO blocks(segment_id, offset, len, kind, tid, ring, generation, nrec, t_first,"
        " t_last, lost) VALUES(1, 512, 8, 1, 0, 0, 0, 0, 0, 0, 0),"
        " (1, 600, 8, 2, 7, 0, 1, 1, 10, 20, 0), (1, 700, 8, 2, 7, 0, 1, 1, 30, 40, 0),"
        " (1, 800, 8, 1, 0, 0, 0, 0, 0, 0, 0), (1, 900, 8, 2, 7, 0, 1, 1, 50, 60, 0);",
        NULL, NULL, NULL), SQLITE_OK);
    return 0;
}

/* A listing's callback: counts its rows; with interrupt set, interrupts
 * the statement that is running after the first. */
struct calls {
    struct fx *fx;
    int n, interrupt;
};

static void row(struct calls *c)
{
    if (c->n++ == 0 && c->interrupt)
        sqlite3_interrupt(c->fx->x->db);
}

static int on_offset(void *arg, uint64_t offset)
{
    (void)offset;
    row(arg);
    return 0;
}

static int on_stat(void *arg, const struct idx_read_block_stat *b)
{
    (void)b;
    row(arg);
    return 0;
}

static int on_path(void *arg, const char *path)
{
    (void)path;
    row(arg);
    return 0;
}

/* The error a listing returns says what failed and why. */
static void says_interrupted(struct fx *fx)
{
    const char *m = idx_errmsg(fx->x);
    assert_non_null(m);
    assert_non_null(strstr(m, "interrupt"));
}

static void test_block_offsets_report_a_step_that_fails(void **state)
{
    struct fx *fx = *state;
    struct calls c = { fx, 0, 0 };
    assert_int_equal(idx_read_block_offsets(fx->x, 1, SEG_BLK_DATA, on_offset, &c), 3);
    c = (struct calls){ fx, 0, 1 };
    assert_int_equal(idx_read_block_offsets(fx->x, 1, SEG_BLK_DATA, on_offset, &c), -EIO);
    assert_int_equal(c.n, 1);
    says_interrupted(fx);
}

static void test_block_stats_report_a_step_that_fails(void **state)
{
    struct fx *fx = *state;
    struct calls c = { fx, 0, 0 };
    assert_int_equal(idx_read_block_stats(fx->x, 1, 0, 1000, on_stat, &c), 3);
    c = (struct calls){ fx, 0, 1 };
    assert_int_equal(idx_read_block_stats(fx->x, 1, 0, 1000, on_stat, &c), -EIO);
    assert_int_equal(c.n, 1);
    says_interrupted(fx);
}

static void test_process_segments_report_a_step_that_fails(void **state)
{
    struct fx *fx = *state;
    struct calls c = { fx, 0, 0 };
    assert_int_equal(idx_read_process_segments(fx->x, 1, on_path, &c), 2);
    c = (struct calls){ fx, 0, 1 };
    assert_int_equal(idx_read_process_segments(fx->x, 1, on_path, &c), -EIO);
    assert_int_equal(c.n, 1);
    says_interrupted(fx);
}

static int interrupt_all(void *arg)
{
    (void)arg;
    return 1;
}

/* A failed step is no "no segments": -EIO, not -ENOENT; the connection
 * works again once the fault is gone. */
static void test_time_range_tells_a_failed_step_from_none(void **state)
{
    struct fx *fx = *state;
    uint64_t t0 = 0, t1 = 0;
    assert_int_equal(idx_read_time_range(fx->x, 0, &t0, &t1), 0);
    assert_int_equal(t0, 10);
    assert_int_equal(t1, 1000);
    assert_int_equal(idx_read_time_range(fx->x, 999, &t0, &t1), -ENOENT);
    sqlite3_progress_handler(fx->x->db, 1, interrupt_all, NULL);
    assert_int_equal(idx_read_time_range(fx->x, 0, &t0, &t1), -EIO);
    says_interrupted(fx);
    sqlite3_progress_handler(fx->x->db, 0, NULL, NULL);
    assert_int_equal(idx_read_time_range(fx->x, 0, &t0, &t1), 0);
}

/* The same fault on the first step of each listing: -EIO, not an empty
 * list. */
static void test_a_listing_whose_first_step_fails_is_no_empty_list(void **state)
{
    struct fx *fx = *state;
    struct calls c = { fx, 0, 0 };
    sqlite3_progress_handler(fx->x->db, 1, interrupt_all, NULL);
    assert_int_equal(idx_read_block_offsets(fx->x, 1, SEG_BLK_META, on_offset, &c), -EIO);
    assert_int_equal(idx_read_block_stats(fx->x, 1, 0, 1000, on_stat, &c), -EIO);
    assert_int_equal(idx_read_process_segments(fx->x, 1, on_path, &c), -EIO);
    assert_int_equal(c.n, 0);
    sqlite3_progress_handler(fx->x->db, 0, NULL, NULL);
    assert_int_equal(idx_read_block_offsets(fx->x, 1, SEG_BLK_META, on_offset, &c), 2);
}

int main(void)
{
    const struct CMUnitTest t[] = {
        cmocka_unit_test_setup_teardown(test_block_offsets_report_a_step_that_fails, setup,
                                        idx_fx_teardown),
        cmocka_unit_test_setup_teardown(test_block_stats_report_a_step_that_fails, setup,
                                        idx_fx_teardown),
        cmocka_unit_test_setup_teardown(test_process_segments_report_a_step_that_fails, setup,
                                        idx_fx_teardown),
        cmocka_unit_test_setup_teardown(test_time_range_tells_a_failed_step_from_none, setup,
                                        idx_fx_teardown),
        cmocka_unit_test_setup_teardown(test_a_listing_whose_first_step_fails_is_no_empty_list,
                                        setup, idx_fx_teardown),
    };
    return cmocka_run_group_tests(t, NULL, NULL);
}
