/*
 * test_q_scan_cancel.c — q_scan_set_cancel (q_scan.h): a scan of a store of
 * many blocks consults the thread's cancellation test and ends with
 * -ECANCELED, having delivered fewer records, when it says so; a test that
 * says no, or none, leaves the scan whole; the test is per thread and
 * cleared by NULL.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "collector/query/q_scan.h"
#include "collector/query/q_store.h"
#include "collector/store/idx.h"
#include "collector/store/seg_writer.h"

#define BLOCKS 40u
#define PER_BLOCK 100u

static char dir[64];
static struct q_store *store;

static int setup(void **st)
{
    (void)st;
    snprintf(dir, sizeof dir, "/tmp/d9-qsc-XXXXXX");
    assert_non_null(mkdtemp(dir));
    struct idx *x;
    assert_int_equal(idx_open(&x, dir), 0);
    struct seg_proc_info pi = { .pid = 300, .start_time = 1, .clock_source = D9_CLOCK_MONOTONIC,
                                .host = "h", .comm = "c", .exe = "/c" };
    struct idx_process p = { .pid = 300, .start_time = 1, .comm = "c", .exe = "/c",
                             .first_ns = 1000 };
    int64_t row;
    assert_int_equal(idx_process_upsert(x, &p, &row), 0);
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, dir, 1, &pi, NULL, 0), 0);
    static uint8_t buf[PER_BLOCK * 32];
    uint64_t ts = 1000;
    for (unsigned b = 0; b < BLOCKS; b++) {
        for (unsigned i = 0; i < PER_BLOCK; i++, ts += 10) {
            struct d9_rec_poll_start r = { .h = { 32, D9_REC_POLL_START, 0, ts }, .task = i + 1,
                                           .runtime = 1 };
            memcpy(buf + i * 32, &r, 32);
        }
        assert_int_equal(seg_writer_add_data(w, 301, 0, 1, 0, buf, sizeof buf), 0);
    }
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    assert_int_equal(idx_segment_commit(x, row, &sum, dir), 0);
    seg_writer_free(w);
    idx_close(x);
    char why[128];
    assert_int_equal(q_store_open(&store, dir, why, sizeof why), 0);
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    q_store_close(store);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int count(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec, size_t len)
{
    (void)src, (void)rec, (void)len;
    (*(uint64_t *)arg)++;
    return 0;
}

struct ask {
    unsigned calls;
    bool answer;
};

static bool asked(void *arg)
{
    struct ask *a = arg;
    a->calls++;
    return a->answer;
}

static int scan(uint64_t *n)
{
    struct q_filter f = { .from = 0, .to = UINT64_MAX, .pid = 300 };
    *n = 0;
    return q_scan(store, &f, count, n, NULL, "test");
}

static void a_scan_without_a_test_is_whole(void **st)
{
    (void)st;
    uint64_t n;
    assert_int_equal(scan(&n), 0);
    assert_int_equal(n, BLOCKS * PER_BLOCK);
}

static void a_test_that_says_stop_ends_the_scan(void **st)
{
    (void)st;
    struct ask a = { 0, true };
    q_scan_set_cancel(asked, &a);
    uint64_t n;
    assert_int_equal(scan(&n), -ECANCELED);
    q_scan_set_cancel(NULL, NULL);
    assert_true(a.calls >= 1);
    assert_true(n < BLOCKS * PER_BLOCK);
}

static void a_test_that_says_go_on_is_consulted_and_the_scan_is_whole(void **st)
{
    (void)st;
    struct ask a = { 0, false };
    q_scan_set_cancel(asked, &a);
    uint64_t n;
    assert_int_equal(scan(&n), 0);
    q_scan_set_cancel(NULL, NULL);
    assert_true(a.calls >= 2);      /* every few blocks of the 40 */
    assert_int_equal(n, BLOCKS * PER_BLOCK);
    struct ask b = { 0, true };     /* cleared: never asked again */
    q_scan_set_cancel(asked, &b);
    q_scan_set_cancel(NULL, NULL);
    assert_int_equal(scan(&n), 0);
    assert_int_equal(b.calls, 0);
    assert_int_equal(n, BLOCKS * PER_BLOCK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_scan_without_a_test_is_whole),
        cmocka_unit_test(a_test_that_says_stop_ends_the_scan),
        cmocka_unit_test(a_test_that_says_go_on_is_consulted_and_the_scan_is_whole),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
