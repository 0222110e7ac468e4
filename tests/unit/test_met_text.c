/*
 * test_met_text.c — the Prometheus text writer (collector/daemon/met_text.c)
 * as a specification: family headers, samples, label escaping of hostile
 * text, seconds written exactly from nanoseconds, cumulative histograms.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "collector/daemon/met_text.h"

static void family_header_is_help_then_type(void **state)
{
    (void)state;
    struct met_text t;
    met_text_init(&t);
    met_text_family(&t, "d9_x_total", "counter", "Things.");
    assert_string_equal(t.buf, "# HELP d9_x_total Things.\n# TYPE d9_x_total counter\n");
    met_text_free(&t);
}

static void sample_without_labels_has_no_braces(void **state)
{
    (void)state;
    struct met_text t;
    met_text_init(&t);
    met_text_u64(&t, "d9_x", NULL, 0, 18446744073709551615ull);
    assert_string_equal(t.buf, "d9_x 18446744073709551615\n");
    met_text_free(&t);
}

static void seconds_are_exact_decimals_of_nanoseconds(void **state)
{
    (void)state;
    struct met_text t;
    met_text_init(&t);
    met_text_ns(&t, "a", NULL, 0, 0);
    met_text_ns(&t, "b", NULL, 0, 1);
    met_text_ns(&t, "c", NULL, 0, 1500000000ull);
    met_text_ns(&t, "d", NULL, 0, 3394105ull);
    met_text_ns(&t, "e", NULL, 0, 2000000000ull);
    assert_string_equal(t.buf, "a 0\nb 0.000000001\nc 1.5\nd 0.003394105\ne 2\n");
    met_text_free(&t);
}

static void label_values_are_escaped_and_hostile_bytes_replaced(void **state)
{
    (void)state;
    struct met_text t;
    met_text_init(&t);
    struct met_text_label l[2] = { { "comm", "a\"b\\c\nd\x01\xff\xc3\xa9" }, { "pid", "7" } };
    met_text_u64(&t, "d9_x", l, 2, 1);
    assert_string_equal(t.buf, "d9_x{comm=\"a\\\"b\\\\c\\nd____\",pid=\"7\"} 1\n");
    met_text_free(&t);
}

static void long_label_values_are_cut(void **state)
{
    (void)state;
    char big[MET_TEXT_LABEL_MAX * 2 + 1];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    struct met_text t;
    met_text_init(&t);
    struct met_text_label l = { "v", big };
    met_text_u64(&t, "m", &l, 1, 0);
    /* m{v="<MAX x>"} 0\n */
    assert_int_equal(strlen(t.buf), strlen("m{v=\"\"} 0\n") + MET_TEXT_LABEL_MAX);
    met_text_free(&t);
}

static void histogram_buckets_are_cumulative_with_inf_sum_and_count(void **state)
{
    (void)state;
    struct met_text t;
    met_text_init(&t);
    const uint64_t bounds[2] = { 1024, 1000000000ull };
    const uint64_t counts[3] = { 2, 3, 4 };
    struct met_text_label l = { "w", "0" };
    met_text_hist_ns(&t, "h", &l, 1, bounds, counts, 2, 5500000000ull);
    assert_string_equal(t.buf,
                        "h_bucket{w=\"0\",le=\"0.000001024\"} 2\n"
                        "h_bucket{w=\"0\",le=\"1\"} 5\n"
                        "h_bucket{w=\"0\",le=\"+Inf\"} 9\n"
                        "h_sum{w=\"0\"} 5.5\n"
                        "h_count{w=\"0\"} 9\n");
    met_text_free(&t);
}

static void summary_writes_sum_and_count(void **state)
{
    (void)state;
    struct met_text t;
    met_text_init(&t);
    met_text_summary_ns(&t, "s", NULL, 0, 6, 9296127);
    assert_string_equal(t.buf, "s_sum 0.009296127\ns_count 6\n");
    met_text_free(&t);
}

static void reset_keeps_nothing_of_the_old_text(void **state)
{
    (void)state;
    struct met_text t;
    met_text_init(&t);
    for (int i = 0; i < 1000; i++)
        met_text_u64(&t, "grow", NULL, 0, (uint64_t)i);
    assert_false(t.oom);
    met_text_reset(&t);
    assert_int_equal(t.len, 0);
    met_text_u64(&t, "z", NULL, 0, 1);
    assert_string_equal(t.buf, "z 1\n");
    met_text_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(family_header_is_help_then_type),
        cmocka_unit_test(sample_without_labels_has_no_braces),
        cmocka_unit_test(seconds_are_exact_decimals_of_nanoseconds),
        cmocka_unit_test(label_values_are_escaped_and_hostile_bytes_replaced),
        cmocka_unit_test(long_label_values_are_cut),
        cmocka_unit_test(histogram_buckets_are_cumulative_with_inf_sum_and_count),
        cmocka_unit_test(summary_writes_sum_and_count),
        cmocka_unit_test(reset_keeps_nothing_of_the_old_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
