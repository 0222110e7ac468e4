/*
 * test_trig.c — triggers and kept windows (collector/daemon/trig.h) with
 * known timings: a trigger keeps [t - lookback, t + lookforward];
 * overlapping windows merge; a trigger within the debounce is dropped; the
 * rate limit caps a minute; the flight recorder drops only data outside
 * kept windows and past the lookback; --trigger-field rules parse and bad
 * ones are refused; bad configuration is refused with a
 * message naming the key.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "collector/daemon/trig.h"

#define MS 1000000ull
#define S  1000000000ull

static struct trig_state st;

static void setup_cfg(uint32_t back, uint32_t fwd, uint32_t deb, uint32_t rate, enum trig_retain r)
{
    struct trig_cfg c;
    trig_cfg_default(&c);
    c.lookback_ms = back;
    c.lookforward_ms = fwd;
    c.debounce_ms = deb;
    c.rate_per_min = rate;
    c.retain = r;
    assert_int_equal(trig_cfg_check(&c, NULL, 0), 0);
    trig_init(&st, &c);
}

static void window_bounds_are_lookback_and_lookforward(void **state)
{
    (void)state;
    setup_cfg(10000, 2000, 0, 100, TRIG_RETAIN_TRIGGERED);
    assert_int_equal(trig_fire(&st, 7, 100 * S), TRIG_KEPT);
    assert_int_equal(st.nwin, 1);
    assert_int_equal(st.win[0].t0_ns, 90 * S);
    assert_int_equal(st.win[0].t1_ns, 102 * S);
    assert_int_equal(st.win[0].trig_ns, 100 * S);
    assert_int_equal(st.win[0].pid, 7);
    assert_true(trig_kept(&st, 90 * S, 90 * S));
    assert_true(trig_kept(&st, 102 * S, 103 * S));
    assert_false(trig_kept(&st, 90 * S - 1, 90 * S - 1));
    assert_false(trig_kept(&st, 102 * S + 1, 110 * S));
}

static void defaults_are_stated(void **state)
{
    (void)state;
    struct trig_cfg c;
    trig_cfg_default(&c);
    assert_int_equal(c.lookback_ms, 10000);
    assert_int_equal(c.lookforward_ms, 2000);
    assert_int_equal(c.debounce_ms, 1000);
    assert_int_equal(c.rate_per_min, 30);
    assert_int_equal(c.retain, TRIG_RETAIN_ALL);
    assert_int_equal(c.crash, 0);
    assert_int_equal(trig_cfg_check(&c, NULL, 0), 0);
}

static void overlapping_windows_merge(void **state)
{
    (void)state;
    setup_cfg(10000, 2000, 0, 100, TRIG_RETAIN_TRIGGERED);
    assert_int_equal(trig_fire(&st, 1, 100 * S), TRIG_KEPT);
    assert_int_equal(trig_fire(&st, 1, 105 * S), TRIG_MERGED);   /* [95,107] overlaps [90,102] */
    assert_int_equal(st.nwin, 1);
    assert_int_equal(st.win[0].t0_ns, 90 * S);
    assert_int_equal(st.win[0].t1_ns, 107 * S);
    assert_int_equal(st.win[0].trig_ns, 100 * S);
    assert_int_equal(st.win[0].ntrig, 2);
    assert_int_equal(trig_fire(&st, 1, 200 * S), TRIG_KEPT);     /* far: its own window */
    assert_int_equal(st.nwin, 2);
    /* one trigger between the two bridges them into one window */
    assert_int_equal(trig_fire(&st, 1, 150 * S), TRIG_KEPT);     /* [140,152]: alone */
    assert_int_equal(st.nwin, 3);
    setup_cfg(60000, 60000, 0, 100, TRIG_RETAIN_TRIGGERED);
    trig_fire(&st, 1, 100 * S);                                   /* [40,160] */
    trig_fire(&st, 1, 300 * S);                                   /* [240,360] */
    assert_int_equal(st.nwin, 2);
    assert_int_equal(trig_fire(&st, 1, 200 * S), TRIG_MERGED);   /* [140,260] bridges */
    assert_int_equal(st.nwin, 1);
    assert_int_equal(st.win[0].t0_ns, 40 * S);
    assert_int_equal(st.win[0].t1_ns, 360 * S);
    assert_int_equal(st.win[0].ntrig, 3);
}

static void windows_stay_sorted_when_fired_out_of_order(void **state)
{
    (void)state;
    setup_cfg(1000, 1000, 0, 100, TRIG_RETAIN_TRIGGERED);
    trig_fire(&st, 1, 50 * S);
    trig_fire(&st, 2, 10 * S);
    trig_fire(&st, 3, 30 * S);
    assert_int_equal(st.nwin, 3);
    assert_int_equal(st.win[0].trig_ns, 10 * S);
    assert_int_equal(st.win[1].trig_ns, 30 * S);
    assert_int_equal(st.win[2].trig_ns, 50 * S);
}

static void debounce_drops_close_triggers_of_one_pid(void **state)
{
    (void)state;
    setup_cfg(1000, 1000, 500, 100, TRIG_RETAIN_TRIGGERED);
    assert_int_equal(trig_fire(&st, 9, 10 * S), TRIG_KEPT);
    assert_int_equal(trig_fire(&st, 9, 10 * S + 499 * MS), TRIG_DEBOUNCED);
    assert_int_equal(st.debounced, 1);
    assert_int_equal(st.win[0].t1_ns, 11 * S);   /* a debounced trigger does not grow the window */
    assert_int_equal(trig_fire(&st, 9, 10 * S + 500 * MS), TRIG_MERGED);
    /* another pid is not debounced by pid 9 */
    assert_int_equal(trig_fire(&st, 10, 10 * S + 600 * MS), TRIG_MERGED);
    assert_int_equal(st.fired, 3);
}

static void rate_limit_caps_a_minute(void **state)
{
    (void)state;
    setup_cfg(1000, 1000, 0, 3, TRIG_RETAIN_TRIGGERED);
    assert_int_not_equal(trig_fire(&st, 1, 10 * S), TRIG_RATE_LIMITED);
    assert_int_not_equal(trig_fire(&st, 1, 20 * S), TRIG_RATE_LIMITED);
    assert_int_not_equal(trig_fire(&st, 1, 30 * S), TRIG_RATE_LIMITED);
    assert_int_equal(trig_fire(&st, 1, 40 * S), TRIG_RATE_LIMITED);
    assert_int_equal(st.rate_limited, 1);
    assert_int_equal(st.nwin, 3);
    /* a minute after the first, one more is allowed */
    assert_int_not_equal(trig_fire(&st, 1, 70 * S), TRIG_RATE_LIMITED);
}

static void flight_recorder_drops_only_unkept_data_past_the_lookback(void **state)
{
    (void)state;
    setup_cfg(10000, 2000, 0, 100, TRIG_RETAIN_TRIGGERED);
    trig_fire(&st, 1, 100 * S);                               /* keeps [90,102] */
    /* before its lookback passed, data may still be kept by a later trigger */
    assert_false(trig_droppable(&st, 50 * S, 60 * S, 65 * S));
    assert_true(trig_droppable(&st, 50 * S, 60 * S, 71 * S));
    assert_false(trig_droppable(&st, 85 * S, 95 * S, 500 * S)); /* overlaps the window */
    assert_true(trig_droppable(&st, 103 * S, 110 * S, 500 * S));
    /* retain all never drops */
    setup_cfg(10000, 2000, 0, 100, TRIG_RETAIN_ALL);
    assert_false(trig_droppable(&st, 50 * S, 60 * S, 500 * S));
}

static void expire_forgets_old_windows(void **state)
{
    (void)state;
    setup_cfg(1000, 1000, 0, 100, TRIG_RETAIN_TRIGGERED);
    trig_fire(&st, 1, 10 * S);
    trig_fire(&st, 1, 20 * S);
    assert_int_equal(trig_expire(&st, 15 * S), 1);
    assert_int_equal(st.nwin, 1);
    assert_int_equal(st.win[0].trig_ns, 20 * S);
}

static void full_window_table_forgets_the_oldest(void **state)
{
    (void)state;
    setup_cfg(1, 0, 0, TRIG_RATE_MAX, TRIG_RETAIN_TRIGGERED);
    /* rate slots cap accepted triggers per minute: space them a minute apart */
    for (unsigned i = 0; i < TRIG_WIN_MAX + 5; i++)
        assert_int_equal(trig_fire(&st, 1, (uint64_t)(i + 1) * 61 * S), TRIG_KEPT);
    assert_int_equal(st.nwin, TRIG_WIN_MAX);
    assert_int_equal(st.forgotten, 5);
    assert_int_equal(st.win[0].trig_ns, 6ull * 61 * S);
    for (unsigned i = 1; i < st.nwin; i++)
        assert_true(st.win[i - 1].t1_ns < st.win[i].t0_ns);
}

static void config_keys_parse_and_bad_ones_are_refused(void **state)
{
    (void)state;
    struct trig_cfg c;
    char err[256];
    trig_cfg_default(&c);
    assert_int_equal(trig_cfg_set(&c, "retain", "triggered", err, sizeof err), 0);
    assert_int_equal(c.retain, TRIG_RETAIN_TRIGGERED);
    assert_int_equal(trig_cfg_set(&c, "trigger-lookback-ms", "30000", err, sizeof err), 0);
    assert_int_equal(c.lookback_ms, 30000);
    assert_int_equal(trig_cfg_set(&c, "trigger-poll-ms", "50", err, sizeof err), 0);
    assert_int_equal(c.poll_ms, 50);
    assert_int_equal(trig_cfg_set(&c, "trigger-crash", "yes", err, sizeof err), 0);
    assert_int_equal(c.crash, 1);
    assert_int_equal(trig_cfg_set(&c, "trigger-sched-ms", "20", err, sizeof err), 0);
    assert_int_equal(c.sched_ms, 20);
    assert_int_equal(trig_cfg_set(&c, "trigger-lost", "yes", err, sizeof err), 0);
    assert_int_equal(c.lost, 1);
    assert_int_equal(trig_cfg_set(&c, "trigger-lost", "no", err, sizeof err), 0);
    assert_int_equal(c.lost, 0);
    assert_int_equal(trig_cfg_set(&c, "trigger-lost", "maybe", err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "trigger-lost"));
    assert_int_equal(trig_cfg_set(&c, "trigger-sched-ms", "99999999", err, sizeof err), -EINVAL);
    assert_int_equal(c.sched_ms, 20);

    assert_int_equal(trig_cfg_set(&c, "trigger-fieldx", "1", err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "unknown trigger key 'trigger-fieldx'"));
    assert_int_equal(trig_cfg_set(&c, "trigger-lookback-ms", "99999999", err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "trigger-lookback-ms"));
    assert_int_equal(trig_cfg_set(&c, "trigger-lookback-ms", "0", err, sizeof err), -EINVAL);
    assert_int_equal(trig_cfg_set(&c, "trigger-lookback-ms", "-5", err, sizeof err), -EINVAL);
    assert_int_equal(trig_cfg_set(&c, "trigger-lookback-ms", "12x", err, sizeof err), -EINVAL);
    assert_int_equal(trig_cfg_set(&c, "trigger-rate", "0", err, sizeof err), -EINVAL);
    assert_int_equal(trig_cfg_set(&c, "retain", "some", err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "retain"));
    assert_int_equal(trig_cfg_set(&c, "trigger-crash", "maybe", err, sizeof err), -EINVAL);
    assert_int_equal(c.lookback_ms, 30000);   /* refused values change nothing */

    c.lookback_ms = TRIG_WINDOW_MAX_MS + 1;
    assert_int_equal(trig_cfg_check(&c, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "lookback"));
}

static void field_rules_parse_and_bad_syntax_is_refused(void **state)
{
    (void)state;
    struct trig_cfg c;
    char err[256];
    trig_cfg_default(&c);
    assert_int_equal(trig_cfg_set(&c, "trigger-field", "req.latency_ms>200", err, sizeof err), 0);
    assert_int_equal(trig_cfg_set(&c, "trigger-field", "a.b.c <= -1.5", err, sizeof err), 0);
    assert_int_equal(c.nfield, 2);
    assert_string_equal(c.field[0].schema, "req");
    assert_string_equal(c.field[0].field, "latency_ms");
    assert_int_equal(c.field[0].op, TRIG_OP_GT);
    assert_true(c.field[0].value == 200.0);
    assert_string_equal(c.field[0].text, "req.latency_ms>200");
    assert_string_equal(c.field[1].schema, "a.b");     /* the field after the last '.' */
    assert_string_equal(c.field[1].field, "c");
    assert_int_equal(c.field[1].op, TRIG_OP_LE);
    assert_string_equal(c.field[1].text, "a.b.c<=-1.5");
    assert_true(trig_field_match(&c.field[0], 200.5));
    assert_false(trig_field_match(&c.field[0], 200.0));
    assert_true(trig_field_match(&c.field[1], -1.5));
    assert_int_equal(trig_cfg_check(&c, err, sizeof err), 0);

    static const char *const bad[] = {
        "latency_ms>200", "req.>200", ".ms>200", "req.ms", "req.ms=200", "req.ms>",
        "req.ms>abc", "req.ms>200ms", "req.ms>nan", "req.ms>inf", "req.ms>>2", "req ms>2",
        "req.ms>1e999",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(trig_cfg_set(&c, "trigger-field", bad[i], err, sizeof err), -EINVAL);
        assert_non_null(strstr(err, "trigger-field"));
        assert_null(strchr(err, '\n'));
    }
    assert_int_equal(c.nfield, 2);              /* refused rules change nothing */
    while (c.nfield < TRIG_FIELD_MAX)
        assert_int_equal(trig_cfg_set(&c, "trigger-field", "x.y>1", err, sizeof err), 0);
    assert_int_equal(trig_cfg_set(&c, "trigger-field", "x.y>1", err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "at most"));
    assert_int_equal(trig_cfg_set(&c, "trigger-field", "", err, sizeof err), 0);
    assert_int_equal(c.nfield, 0);              /* empty: no rules */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(window_bounds_are_lookback_and_lookforward),
        cmocka_unit_test(defaults_are_stated),
        cmocka_unit_test(overlapping_windows_merge),
        cmocka_unit_test(windows_stay_sorted_when_fired_out_of_order),
        cmocka_unit_test(debounce_drops_close_triggers_of_one_pid),
        cmocka_unit_test(rate_limit_caps_a_minute),
        cmocka_unit_test(flight_recorder_drops_only_unkept_data_past_the_lookback),
        cmocka_unit_test(expire_forgets_old_windows),
        cmocka_unit_test(full_window_table_forgets_the_oldest),
        cmocka_unit_test(config_keys_parse_and_bad_ones_are_refused),
        cmocka_unit_test(field_rules_parse_and_bad_syntax_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
