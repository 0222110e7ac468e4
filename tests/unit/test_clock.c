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
#include <stdint.h>
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

/* A stamp is the producer's word: any 64-bit value converts to a defined
 * result (no signed overflow, no out-of-range float conversion: UBSan
 * watches), saturated at 0 and UINT64_MAX, and on the right side of the
 * calibration point. */
static void test_extreme_stamps_convert_to_saturated_defined_times(void **state)
{
    (void)state;
    struct shm_clock_cal c;
    /* a host up 3 days, calibrated at a TSC of about 2^50 */
    const uint64_t tsc0 = 1ull << 50, ns0 = 3ull * 86400 * 1000000000ull;
    assert_int_equal(shm_clock_cal_from_pairs(&c, tsc0, ns0, tsc0 + 3000000, ns0 + 1000000), 0);
    assert_int_equal(shm_clock_to_ns(&c, 0), 0);                /* before boot: 0, not the future */
    assert_int_equal(shm_clock_to_ns(&c, 1), 0);
    assert_int_equal(shm_clock_to_ns(&c, UINT64_MAX), UINT64_MAX);
    /* 2^63 ticks at 3 GHz: 97 years on, still computed (not wrapped negative) */
    uint64_t far = shm_clock_to_ns(&c, (uint64_t)INT64_MAX);
    assert_true(far > ns0 + 3000000000000000000ull && far < UINT64_MAX);
    assert_true(shm_clock_to_ns(&c, (uint64_t)INT64_MAX + 1) >= far);
    assert_int_equal(shm_clock_to_ns(&c, tsc0), ns0);
    assert_int_equal(shm_clock_to_ns(&c, tsc0 + 3), ns0 + 1);
    assert_int_equal(shm_clock_to_ns(&c, tsc0 - 3), ns0 - 1);
    /* the slowest and fastest clocks allowed, at both ends */
    static const uint64_t t[] = { 0, 1, tsc0 / 2, (uint64_t)INT64_MAX, (uint64_t)INT64_MAX + 1,
                                  UINT64_MAX - 1, UINT64_MAX };
    struct shm_clock_cal slow, fast;
    assert_int_equal(shm_clock_cal_from_pairs(&slow, tsc0, ns0, tsc0 + 1000, ns0 + 9999), 0);
    assert_int_equal(shm_clock_cal_from_pairs(&fast, tsc0, ns0, tsc0 + 19000, ns0 + 1000), 0);
    uint64_t prev_s = 0, prev_f = 0;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        uint64_t s = shm_clock_to_ns(&slow, t[i]), f = shm_clock_to_ns(&fast, t[i]);
        assert_true(s >= prev_s);       /* monotonic in the stamp */
        assert_true(f >= prev_f);
        assert_true(t[i] < tsc0 ? s < ns0 && f < ns0 : s >= ns0 && f >= ns0);
        prev_s = s;
        prev_f = f;
    }
    /* a calibration point near the top of the range: no wrap past UINT64_MAX */
    assert_int_equal(shm_clock_cal_from_pairs(&c, 1000, UINT64_MAX - 2000000, 3001000,
                                              UINT64_MAX - 1000000), 0);
    assert_int_equal(shm_clock_to_ns(&c, UINT64_MAX), UINT64_MAX);
    assert_int_equal(shm_clock_to_ns(&c, 0), UINT64_MAX - 2000000 - 333);
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
        cmocka_unit_test(test_extreme_stamps_convert_to_saturated_defined_times),
        cmocka_unit_test(test_measured_calibration_tracks_monotonic),
    };
    return cmocka_run_group_tests_name("clock", tests, NULL, NULL);
}
