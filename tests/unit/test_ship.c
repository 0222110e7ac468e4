/*
 * test_ship.c — collector/daemon/ship.c's rule for when the upload threads
 * compete for CPU (ship_catching_up): idle CPU time only while the backlog
 * is short and young; competing past half the store cap or once the oldest
 * waiting segment is older than SHIP_CATCHUP_AGE_NS; back to idle only
 * under a quarter of the cap. The threads' policy on a live collector is
 * checked by tests/integration/test_ship.sh. Also the drain's load
 * (ship_drain_load_note): saturated when the loop slept under a tenth of a
 * SHIP_DRAIN_WINDOW_NS window, judged once per window.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "collector/daemon/ship.h"

#define MIB (1ULL << 20)

static void test_short_backlog_stays_idle(void **state)
{
    (void)state;
    assert_int_equal(ship_catching_up(0, 0, 0, 1024 * MIB), 0);
    assert_int_equal(ship_catching_up(0, 512 * MIB, 0, 1024 * MIB), 0);   /* half: not past it */
    assert_int_equal(ship_catching_up(0, 300 * MIB, SHIP_CATCHUP_AGE_NS, 1024 * MIB), 0);
}

static void test_past_half_the_cap_competes_until_under_a_quarter(void **state)
{
    (void)state;
    assert_int_equal(ship_catching_up(0, 512 * MIB + 1, 0, 1024 * MIB), 1);
    assert_int_equal(ship_catching_up(1, 300 * MIB, 0, 1024 * MIB), 1);   /* hysteresis */
    assert_int_equal(ship_catching_up(1, 256 * MIB + 1, 0, 1024 * MIB), 1);
    assert_int_equal(ship_catching_up(1, 256 * MIB, 0, 1024 * MIB), 0);
    assert_int_equal(ship_catching_up(0, 300 * MIB, 0, 1024 * MIB), 0);   /* from idle: no */
}

static void test_an_old_segment_competes_whatever_the_bytes(void **state)
{
    (void)state;
    assert_int_equal(ship_catching_up(0, 1, SHIP_CATCHUP_AGE_NS + 1, 1024 * MIB), 1);
    assert_int_equal(ship_catching_up(0, 1, SHIP_CATCHUP_AGE_NS + 1, 0), 1);
    assert_int_equal(ship_catching_up(1, 1, SHIP_CATCHUP_AGE_NS, 1024 * MIB), 0);
}

static void test_no_cap_means_only_age_counts(void **state)
{
    (void)state;
    assert_int_equal(ship_catching_up(0, UINT64_MAX, 0, 0), 0);
    assert_int_equal(ship_catching_up(1, UINT64_MAX, 0, 0), 0);
}

#define MS 1000000ULL

static void test_a_drain_that_barely_sleeps_is_saturated(void **state)
{
    (void)state;
    struct ship_drain_load l = { 0 };
    ship_drain_load_note(&l, 1000 * MS, 0);             /* starts the window */
    assert_int_equal(l.saturated, 0);
    for (uint64_t t = 1001; t < 1100; t++)
        ship_drain_load_note(&l, t * MS, MS / 20);      /* 5 % asleep */
    assert_int_equal(l.saturated, 0);                   /* judged only at the window's end */
    ship_drain_load_note(&l, 1100 * MS, MS / 20);
    assert_int_equal(l.saturated, 1);
    for (uint64_t t = 1101; t <= 1200; t++)             /* stays until the next window says */
        ship_drain_load_note(&l, t * MS, 0);
    assert_int_equal(l.saturated, 1);
}

static void test_a_drain_that_sleeps_a_tenth_or_more_is_not(void **state)
{
    (void)state;
    struct ship_drain_load l = { 0 };
    ship_drain_load_note(&l, 1000 * MS, 0);
    for (uint64_t t = 1001; t <= 1100; t++)
        ship_drain_load_note(&l, t * MS, 0);
    assert_int_equal(l.saturated, 1);
    for (uint64_t t = 1101; t <= 1200; t++)
        ship_drain_load_note(&l, t * MS, MS / 10);      /* exactly a tenth: not saturated */
    assert_int_equal(l.saturated, 0);
    ship_drain_load_note(&l, 1300 * MS, 100 * MS);      /* one long sleep: idle */
    assert_int_equal(l.saturated, 0);
}

static void test_a_clock_going_back_restarts_the_window(void **state)
{
    (void)state;
    struct ship_drain_load l = { 0 };
    ship_drain_load_note(&l, 1000 * MS, 0);
    ship_drain_load_note(&l, 500 * MS, 0);
    assert_int_equal(l.window_start, 500 * MS);
    assert_int_equal(l.slept, 0);
    assert_int_equal(l.saturated, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_short_backlog_stays_idle),
        cmocka_unit_test(test_past_half_the_cap_competes_until_under_a_quarter),
        cmocka_unit_test(test_an_old_segment_competes_whatever_the_bytes),
        cmocka_unit_test(test_no_cap_means_only_age_counts),
        cmocka_unit_test(test_a_drain_that_barely_sleeps_is_saturated),
        cmocka_unit_test(test_a_drain_that_sleeps_a_tenth_or_more_is_not),
        cmocka_unit_test(test_a_clock_going_back_restarts_the_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
