/*
 * test_cli_s3path.c — cli_s3path.c: the bucket's key layout as `d9 pull`
 * reads it, the prefixes it lists for --host/--since, its key and manifest
 * filters, local names, the cache directory and --from/--until times.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "collector/cli/cli_s3path.h"

#define MAN ".manifest.json"
#define NS 1000000000ll
/* 2026-12-04T10:00:00Z */
#define T_DEC4_10H (1796378400ll * NS)

static void strip_requires_the_prefix_and_a_slash(void **state)
{
    (void)state;
    assert_string_equal(cli_s3path_strip("fleet", "fleet/h/x"), "h/x");
    assert_string_equal(cli_s3path_strip("a/b", "a/b/h"), "h");
    assert_string_equal(cli_s3path_strip("", "h/x"), "h/x");
    assert_null(cli_s3path_strip("fleet", "fleetX/h"));
    assert_null(cli_s3path_strip("fleet", "other/h"));
}

static void segment_and_manifest_keys_parse(void **state)
{
    (void)state;
    struct cli_s3path_key k;
    assert_int_equal(cli_s3path_parse("web-1/2026-12-04/4242-99887/17.d9seg", MAN, &k),
                     CLI_S3PATH_SEGMENT);
    assert_string_equal(k.host, "web-1");
    assert_string_equal(k.day, "2026-12-04");
    assert_int_equal(k.pid, 4242);
    assert_int_equal(k.start_time, 99887);
    assert_int_equal(k.segment_id, 17);
    assert_int_equal(cli_s3path_parse("web-1/2026-12-04/4242-99887/17" MAN, MAN, &k),
                     CLI_S3PATH_MANIFEST);
    assert_int_equal(k.segment_id, 17);
}

static void keys_off_the_layout_are_ignored(void **state)
{
    (void)state;
    static const char *bad[] = {
        "web-1/2026-12-04/4242-99887/17.d9segx",
        "web-1/2026-12-04/4242-99887/17.txt",
        "web-1/2026-12-4/4242-99887/17.d9seg",       /* day */
        "web-1/2026-12-04/4242/17.d9seg",            /* no start */
        "web-1/2026-12-04/0-5/17.d9seg",             /* pid 0 */
        "web-1/2026-12-04/4294967296-5/17.d9seg",    /* pid > 32 bits */
        "web-1/2026-12-04/42x-5/17.d9seg",
        "web-1/2026-12-04/42-5/0.d9seg",             /* id 0 */
        "web-1/2026-12-04/42-5/a17.d9seg",
        "web-1/2026-12-04/42-5/sub/17.d9seg",        /* extra level */
        ".hidden/2026-12-04/42-5/17.d9seg",          /* host with a leading dot */
        "/2026-12-04/42-5/17.d9seg",                 /* empty host */
        "2026-12-04/42-5/17.d9seg",                  /* no host */
        "web-1/2026-12-04/42-5/99999999999999999999999.d9seg",
        "web-1/2026-12-04/42-5/17" MAN "x",
        "",
    };
    struct cli_s3path_key k;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (cli_s3path_parse(bad[i], MAN, &k) != CLI_S3PATH_OTHER)
            fail_msg("parsed: %s", bad[i]);
    }
    /* no manifest suffix known: only segments */
    assert_int_equal(cli_s3path_parse("h/2026-12-04/42-5/17" MAN, NULL, &k), CLI_S3PATH_OTHER);
}

static void a_host_too_long_for_a_segment_header_is_ignored(void **state)
{
    (void)state;
    char key[256];
    char host[CLI_S3PATH_HOST_MAX + 1];
    memset(host, 'h', sizeof host - 1);
    host[sizeof host - 1] = 0;
    snprintf(key, sizeof key, "%s/2026-12-04/42-5/17.d9seg", host);
    struct cli_s3path_key k;
    assert_int_equal(cli_s3path_parse(key, MAN, &k), CLI_S3PATH_OTHER);
}

static void day_is_utc(void **state)
{
    (void)state;
    char d[11];
    cli_s3path_day(T_DEC4_10H, d);
    assert_string_equal(d, "2026-12-04");
    cli_s3path_day(T_DEC4_10H + 14 * 3600 * NS - 1, d);
    assert_string_equal(d, "2026-12-04");
    cli_s3path_day(T_DEC4_10H + 14 * 3600 * NS, d);
    assert_string_equal(d, "2026-12-05");
}

static size_t prefixes(const char *prefix, const char *host, int64_t from, int64_t to,
                       char *out, size_t cap)
{
    size_t n = 99;
    assert_int_equal(cli_s3path_prefixes(prefix, host, from, to, T_DEC4_10H, out, cap, &n), 0);
    return n;
}

static void without_a_host_the_whole_prefix_is_listed(void **state)
{
    (void)state;
    char out[256];
    assert_int_equal(prefixes("fleet", NULL, T_DEC4_10H - 3600 * NS, INT64_MAX, out, sizeof out), 1);
    assert_string_equal(out, "fleet/");
    assert_int_equal(prefixes("", NULL, 0, INT64_MAX, out, sizeof out), 1);
    assert_string_equal(out, "");
}

static void a_host_without_a_window_lists_the_host(void **state)
{
    (void)state;
    char out[256];
    assert_int_equal(prefixes("fleet", "web-1", 0, INT64_MAX, out, sizeof out), 1);
    assert_string_equal(out, "fleet/web-1/");
    assert_int_equal(prefixes("", "web-1", 0, INT64_MAX, out, sizeof out), 1);
    assert_string_equal(out, "web-1/");
}

static void since_lists_the_days_of_the_window_and_the_day_before(void **state)
{
    (void)state;
    char out[512];
    /* --since 1h at 10:00: days 12-03 (a segment opened before midnight) and 12-04 */
    size_t n = prefixes("fleet", "web-1", T_DEC4_10H - 3600 * NS, INT64_MAX, out, sizeof out);
    assert_int_equal(n, 2);
    assert_string_equal(out, "fleet/web-1/2026-12-03/");
    assert_string_equal(out + strlen(out) + 1, "fleet/web-1/2026-12-04/");
    /* a closed window of three days */
    n = prefixes("p", "h", T_DEC4_10H - 2 * CLI_S3PATH_NS_PER_DAY, T_DEC4_10H - 3600 * NS, out,
                 sizeof out);
    assert_int_equal(n, 4);
    const char *p = out;
    static const char *want[] = { "p/h/2026-12-01/", "p/h/2026-12-02/", "p/h/2026-12-03/",
                                  "p/h/2026-12-04/" };
    for (size_t i = 0; i < 4; i++, p += strlen(p) + 1)
        assert_string_equal(p, want[i]);
}

static void a_long_window_lists_the_whole_host(void **state)
{
    (void)state;
    char out[256];
    assert_int_equal(prefixes("p", "h", T_DEC4_10H - 90 * CLI_S3PATH_NS_PER_DAY, INT64_MAX, out,
                              sizeof out), 1);
    assert_string_equal(out, "p/h/");
}

static void prefixes_report_a_short_buffer(void **state)
{
    (void)state;
    char out[20];
    size_t n;
    assert_int_equal(cli_s3path_prefixes("fleet", "web-1", T_DEC4_10H - 3600 * NS, INT64_MAX,
                                         T_DEC4_10H, out, sizeof out, &n), -ENAMETOOLONG);
}

static void key_filter_checks_host_and_day(void **state)
{
    (void)state;
    struct cli_s3path_key k;
    assert_int_equal(cli_s3path_parse("web-1/2026-12-03/4-5/6.d9seg", MAN, &k), CLI_S3PATH_SEGMENT);
    assert_true(cli_s3path_keep_key(&k, NULL, 0, INT64_MAX));
    assert_true(cli_s3path_keep_key(&k, "web-1", 0, INT64_MAX));
    assert_false(cli_s3path_keep_key(&k, "web-2", 0, INT64_MAX));
    /* opened the day before the window: may hold records in it */
    assert_true(cli_s3path_keep_key(&k, NULL, T_DEC4_10H - 3600 * NS, INT64_MAX));
    /* two days before: no */
    assert_false(cli_s3path_keep_key(&k, NULL, T_DEC4_10H + CLI_S3PATH_NS_PER_DAY, INT64_MAX));
    /* opened after the window ended */
    assert_false(cli_s3path_keep_key(&k, NULL, 0, T_DEC4_10H - 2 * CLI_S3PATH_NS_PER_DAY));
    /* a day no int64 of ns can hold, or before 1970: cannot tell, the
     * manifest decides (and nothing overflows) */
    static const char *far[] = { "web-1/4216-09-09/4-5/6.d9seg", "web-1/2262-04-10/4-5/6.d9seg",
                                 "web-1/0001-01-01/4-5/6.d9seg" };
    for (size_t i = 0; i < sizeof far / sizeof far[0]; i++) {
        if (cli_s3path_parse(far[i], MAN, &k) != CLI_S3PATH_SEGMENT)
            continue;                   /* refused by the parser: as good */
        assert_true(cli_s3path_keep_key(&k, NULL, T_DEC4_10H, T_DEC4_10H + 1));
    }
}

static void range_filter_checks_pid_and_overlap(void **state)
{
    (void)state;
    assert_true(cli_s3path_keep_range(0, 0, INT64_MAX, 7, 100, 200));
    assert_true(cli_s3path_keep_range(7, 0, INT64_MAX, 7, 100, 200));
    assert_false(cli_s3path_keep_range(8, 0, INT64_MAX, 7, 100, 200));
    assert_true(cli_s3path_keep_range(0, 200, 300, 7, 100, 200));     /* touches the start */
    assert_true(cli_s3path_keep_range(0, 50, 100, 7, 100, 200));      /* touches the end */
    assert_false(cli_s3path_keep_range(0, 201, 300, 7, 100, 200));
    assert_false(cli_s3path_keep_range(0, 0, 99, 7, 100, 200));
    assert_true(cli_s3path_keep_range(0, 500, 600, 7, 200, 100));     /* inverted: kept */
}

static void local_name_is_the_collectors(void **state)
{
    (void)state;
    struct cli_s3path_key k;
    char name[64];
    assert_int_equal(cli_s3path_parse("h/2026-12-04/4242-99887/17.d9seg", MAN, &k),
                     CLI_S3PATH_SEGMENT);
    assert_int_equal(cli_s3path_local_name(&k, name, sizeof name), 0);
    assert_string_equal(name, "4242-99887-17.d9seg");
    assert_int_equal(cli_s3path_local_name(&k, name, 8), -ENAMETOOLONG);
}

static void cache_dir_is_per_endpoint_bucket_prefix_and_host(void **state)
{
    (void)state;
    char d[512];
    assert_int_equal(cli_s3path_cache_dir("/c", "/home/u", "http://127.0.0.1:4569", "b",
                                          "fleet/eu", NULL, d, sizeof d), 0);
    assert_string_equal(d, "/c/d9/s3/127.0.0.1_4569/b/fleet/eu");
    assert_int_equal(cli_s3path_cache_dir(NULL, "/home/u", NULL, "b", "", "web-1", d, sizeof d),
                     0);
    assert_string_equal(d, "/home/u/.cache/d9/s3/aws/b/@web-1");
    assert_int_equal(cli_s3path_cache_dir("", "/home/u", NULL, "b", "p", NULL, d, sizeof d), 0);
    assert_string_equal(d, "/home/u/.cache/d9/s3/aws/b/p");
}

static void cache_dir_never_leaves_its_root(void **state)
{
    (void)state;
    char d[512];
    assert_int_equal(cli_s3path_cache_dir("/c", NULL, "https://e/x", "b", "../../etc/./x y",
                                          NULL, d, sizeof d), 0);
    assert_string_equal(d, "/c/d9/s3/e/b/_../_../etc/_./x_y");
    assert_int_equal(cli_s3path_cache_dir("rel", NULL, NULL, "b", "p", NULL, d, sizeof d),
                     -ENOENT);
    assert_int_equal(cli_s3path_cache_dir(NULL, NULL, NULL, "b", "p", NULL, d, sizeof d),
                     -ENOENT);
    assert_int_equal(cli_s3path_cache_dir("/c", NULL, NULL, "b", "p", NULL, d, 12),
                     -ENAMETOOLONG);
}

static void times_parse_as_utc(void **state)
{
    (void)state;
    int64_t t;
    assert_int_equal(cli_s3path_parse_time("2026-12-04T10:00:00Z", false, &t), 0);
    assert_true(t == T_DEC4_10H);
    assert_int_equal(cli_s3path_parse_time("2026-12-04 10:00", false, &t), 0);
    assert_true(t == T_DEC4_10H);
    assert_int_equal(cli_s3path_parse_time("2026-12-04T10:00", true, &t), 0);
    assert_true(t == T_DEC4_10H + 60 * NS - 1);
    assert_int_equal(cli_s3path_parse_time("2026-12-04", false, &t), 0);
    assert_true(t == T_DEC4_10H - 10 * 3600 * NS);
    assert_int_equal(cli_s3path_parse_time("2026-12-04", true, &t), 0);
    assert_true(t == T_DEC4_10H + 14 * 3600 * NS - 1);
    assert_int_equal(cli_s3path_parse_time("@1796378400", false, &t), 0);
    assert_true(t == T_DEC4_10H);
}

static void bad_times_are_refused(void **state)
{
    (void)state;
    static const char *bad[] = { "", "yesterday", "2026-13-01", "2026-02-30", "2026-12-04T25:00",
                                 "2026-12-04T10", "2026-12-04x", "@", "@12a", "1796378400",
                                 "2026-12-04T10:00:00+01:00",
                                 /* past the last ns an int64 holds (2262-04-11) */
                                 "5999-01-01", "2262-04-12", "@9223372036", "@99999999999" };
    int64_t t;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        for (int end = 0; end < 2; end++)
            if (cli_s3path_parse_time(bad[i], end, &t) != -EINVAL)
                fail_msg("accepted: %s (end %d)", bad[i], end);
    /* the last whole day and second that fit */
    assert_int_equal(cli_s3path_parse_time("2262-04-10", true, &t), 0);
    assert_int_equal(cli_s3path_parse_time("@9223372035", true, &t), 0);
    assert_true(t == 9223372035999999999ll);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(strip_requires_the_prefix_and_a_slash),
        cmocka_unit_test(segment_and_manifest_keys_parse),
        cmocka_unit_test(keys_off_the_layout_are_ignored),
        cmocka_unit_test(a_host_too_long_for_a_segment_header_is_ignored),
        cmocka_unit_test(day_is_utc),
        cmocka_unit_test(without_a_host_the_whole_prefix_is_listed),
        cmocka_unit_test(a_host_without_a_window_lists_the_host),
        cmocka_unit_test(since_lists_the_days_of_the_window_and_the_day_before),
        cmocka_unit_test(a_long_window_lists_the_whole_host),
        cmocka_unit_test(prefixes_report_a_short_buffer),
        cmocka_unit_test(key_filter_checks_host_and_day),
        cmocka_unit_test(range_filter_checks_pid_and_overlap),
        cmocka_unit_test(local_name_is_the_collectors),
        cmocka_unit_test(cache_dir_is_per_endpoint_bucket_prefix_and_host),
        cmocka_unit_test(cache_dir_never_leaves_its_root),
        cmocka_unit_test(times_parse_as_utc),
        cmocka_unit_test(bad_times_are_refused),
    };
    return cmocka_run_group_tests_name("cli_s3path", tests, NULL, NULL);
}
