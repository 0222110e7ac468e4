/*
 * test_q_agg.c — collector/query/q_agg.c's split of a window into the 1 s
 * buckets it covers whole (answered from the rollups) and its edges
 * (answered from the records): every nanosecond of [from, to] is in exactly
 * one of them, and the edges are as short as the buckets allow. The
 * answers themselves are checked against raw scans in
 * tests/integration/test_aggs.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "collector/query/q_agg.h"

#define B ROLLUP_BUCKET_NS

static unsigned edges(uint64_t from, uint64_t to, struct rollup_range r[2], uint64_t *lo,
                      uint64_t *hi)
{
    return q_agg_edges(from, to, r, lo, hi);
}

/* Edges inside two buckets: both edges, the buckets between them whole. */
static void test_a_window_cutting_two_buckets_has_two_edges(void **state)
{
    (void)state;
    struct rollup_range r[2];
    uint64_t lo, hi;
    assert_int_equal(edges(10 * B + 250, 14 * B + 7, r, &lo, &hi), 2);
    assert_int_equal(lo, 11 * B);
    assert_int_equal(hi, 13 * B);
    assert_int_equal(r[0].from, 10 * B + 250);
    assert_int_equal(r[0].to, 11 * B - 1);
    assert_int_equal(r[1].from, 14 * B);
    assert_int_equal(r[1].to, 14 * B + 7);
}

/* Aligned on buckets: no edge at all (no segment file is read). */
static void test_a_bucket_aligned_window_has_no_edge(void **state)
{
    (void)state;
    struct rollup_range r[2];
    uint64_t lo, hi;
    assert_int_equal(edges(2 * B, 5 * B - 1, r, &lo, &hi), 0);
    assert_int_equal(lo, 2 * B);
    assert_int_equal(hi, 4 * B);
}

/* Inside one bucket, or across one edge without a whole bucket: the window
 * is one edge, no bucket whole. */
static void test_a_window_without_a_whole_bucket_is_one_edge(void **state)
{
    (void)state;
    struct rollup_range r[2];
    uint64_t lo, hi;
    assert_int_equal(edges(2 * B + 100, 2 * B + 900, r, &lo, &hi), 1);
    assert_true(lo > hi);
    assert_int_equal(r[0].from, 2 * B + 100);
    assert_int_equal(r[0].to, 2 * B + 900);
    assert_int_equal(edges(2 * B + 100, 3 * B + 900, r, &lo, &hi), 1);
    assert_true(lo > hi);
    assert_int_equal(edges(0, B - 2, r, &lo, &hi), 1);   /* bucket 0 is not whole */
    assert_true(lo > hi);
}

/* The whole store (0 .. UINT64_MAX): no overflow; the last edge lies past
 * every record. An empty window has nothing. */
static void test_the_open_window_and_an_empty_one(void **state)
{
    (void)state;
    struct rollup_range r[2];
    uint64_t lo, hi;
    assert_int_equal(edges(0, UINT64_MAX, r, &lo, &hi), 1);
    assert_int_equal(lo, 0);
    assert_true(hi <= UINT64_MAX - (B - 1));
    assert_int_equal(r[0].from, hi + B);
    assert_int_equal(r[0].to, UINT64_MAX);
    assert_int_equal(edges(UINT64_MAX - 5, UINT64_MAX, r, &lo, &hi), 1);
    assert_true(lo > hi);
    assert_int_equal(edges(7, 6, r, &lo, &hi), 0);
    assert_true(lo > hi);
}

/* For many windows: the edges and the whole buckets cover [from, to]
 * exactly once. */
static void test_edges_and_whole_buckets_partition_the_window(void **state)
{
    (void)state;
    const uint64_t pts[] = { 0, 1, B - 1, B, B + 1, 3 * B - 1, 3 * B, 3 * B + 123456, 7 * B };
    const size_t n = sizeof pts / sizeof pts[0];
    for (size_t i = 0; i < n; i++)
        for (size_t j = i; j < n; j++) {
            uint64_t from = pts[i], to = pts[j];
            struct rollup_range r[2];
            uint64_t lo, hi, total = 0;
            unsigned k = edges(from, to, r, &lo, &hi);
            for (unsigned e = 0; e < k; e++) {
                assert_true(r[e].from >= from && r[e].to <= to && r[e].from <= r[e].to);
                assert_true(lo > hi || r[e].to < lo || r[e].from > hi + B - 1);
                total += r[e].to - r[e].from + 1;
            }
            if (lo <= hi) {
                assert_true(lo % B == 0 && hi % B == 0 && lo >= from && hi + B - 1 <= to);
                total += hi - lo + B;
            }
            assert_int_equal(total, to - from + 1);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_window_cutting_two_buckets_has_two_edges),
        cmocka_unit_test(test_a_bucket_aligned_window_has_no_edge),
        cmocka_unit_test(test_a_window_without_a_whole_bucket_is_one_edge),
        cmocka_unit_test(test_the_open_window_and_an_empty_one),
        cmocka_unit_test(test_edges_and_whole_buckets_partition_the_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
