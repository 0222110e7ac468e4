/*
 * test_clock.c — TSC calibration: pair validation, a measured calibration
 * that agrees with CLOCK_MONOTONIC, and the identity mapping for
 * CLOCK_MONOTONIC sources.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include "shm/clock.h"

static void test_pairs_must_advance_and_be_plausible(void **state)
{
    (void)state;
    struct shm_clock_cal c;
    assert_int_equal(shm_clock_cal_from_pairs(&c, 100, 100, 100, 200), -EINVAL);
    assert_int_equal(shm_clock_cal_from_pairs(&c, 100, 200, 200, 100), -EINVAL);
    /* 1 tick per 50 ns = 20 MHz: below the 100 MHz floor */
    assert_int_equal(shm_clock_cal_from_pairs(&c, 0, 0, 1000, 50000), -EINVAL);
    assert_int_equal(shm_clock_cal_from_pairs(&c, 1000, 5000, 3001000, 1005000), 0);
    /* 3 GHz: 3 ticks per ns */
    assert_int_equal(shm_clock_to_ns(&c, 4000), 6000);
    assert_int_equal(shm_clock_to_ns(&c, 1000), 5000);
}

static void test_identity_when_no_calibration(void **state)
{
    (void)state;
    struct shm_clock_cal c = { 0 };
    assert_int_equal(shm_clock_to_ns(&c, 123456789), 123456789);
}

static void test_measured_calibration_tracks_monotonic(void **state)
{
    (void)state;
    if (!shm_tsc_invariant())
        skip();
    struct shm_clock_cal c;
    assert_int_equal(shm_clock_calibrate(&c, 20), 0);
    uint64_t t = shm_rdtsc();
    uint64_t n = shm_mono_ns();
    uint64_t conv = shm_clock_to_ns(&c, t);
    int64_t err = (int64_t)(conv - n);
    /* a generous bound: this checks the mapping, not the machine's timing */
    assert_true(err > -1000000 && err < 1000000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs_must_advance_and_be_plausible),
        cmocka_unit_test(test_identity_when_no_calibration),
        cmocka_unit_test(test_measured_calibration_tracks_monotonic),
    };
    return cmocka_run_group_tests_name("clock", tests, NULL, NULL);
}
