/*
 * test_s3_key.c — the bucket layout and the manifest (collector/s3/s3_key.c):
 * keys follow PREFIX/HOST/YYYY-MM-DD/PID-START/ID, host names are made safe,
 * a manifest written parses back to the same fields, and a damaged one is
 * refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>
#include "collector/s3/s3_key.h"

static struct s3_key_manifest sample(void)
{
    struct s3_key_manifest m = {
        .format = S3_KEY_MANIFEST_FORMAT, .host = "web-1.example", .boot_id = "b00t",
        .pid = 4242, .start_time = 777, .comm = "srv \"q\"\\\x01", .segment_id = 9,
        .t_min_ns = 5000000000ull, .t_max_ns = 6000000000ull,
        .boot_realtime_ns = 1764806400000000000ull,   /* 2025-12-04 00:00:00 UTC */
        .records = 10, .lost = 1, .bytes = 4096, .crc32c = 0xdeadbeef,
        .sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    };
    return m;
}

static void the_stem_is_host_day_process_and_id(void **state)
{
    (void)state;
    struct s3_key_manifest m = sample();
    char stem[256];
    assert_int_equal(s3_key_stem(&m, stem, sizeof stem), 0);
    assert_string_equal(stem, "web-1.example/2025-12-04/4242-777/9");
    m.t_min_ns += 86400ull * 1000000000ull;             /* a day later by its first record */
    assert_int_equal(s3_key_stem(&m, stem, sizeof stem), 0);
    assert_string_equal(stem, "web-1.example/2025-12-05/4242-777/9");
    assert_int_equal(s3_key_stem(&m, stem, 10), -ENAMETOOLONG);
}

static void host_names_cannot_leave_their_folder(void **state)
{
    (void)state;
    struct s3_key_manifest m = sample();
    char stem[256];
    strcpy(m.host, "a/../b c");
    assert_int_equal(s3_key_stem(&m, stem, sizeof stem), 0);
    assert_string_equal(stem, "a_.._b_c/2025-12-04/4242-777/9");
    strcpy(m.host, "..");
    assert_int_equal(s3_key_stem(&m, stem, sizeof stem), -EINVAL);
    m.host[0] = '\0';
    assert_int_equal(s3_key_stem(&m, stem, sizeof stem), -EINVAL);
}

static void a_manifest_round_trips(void **state)
{
    (void)state;
    struct s3_key_manifest m = sample(), back;
    char json[S3_KEY_MANIFEST_MAX];
    assert_int_equal(s3_key_manifest_write(&m, json, sizeof json), 0);
    assert_non_null(strstr(json, "\"segment_id\": 9"));
    assert_non_null(strstr(json, "\"comm\": \"srv \\\"q\\\"\\\\\\u0001\""));
    assert_int_equal(s3_key_manifest_parse(json, strlen(json), &back), 0);
    assert_memory_equal(&m, &back, sizeof m);
    assert_int_equal(s3_key_manifest_write(&m, json, 20), -ENAMETOOLONG);
}

static void unknown_keys_are_skipped(void **state)
{
    (void)state;
    const char *j = "{\"format\": 1, \"host\": \"h\", \"segment_id\": 3, \"future\": \"x\","
                    " \"count\": 7}";
    struct s3_key_manifest m;
    assert_int_equal(s3_key_manifest_parse(j, strlen(j), &m), 0);
    assert_string_equal(m.host, "h");
    assert_int_equal(m.segment_id, 3);
}

static void damaged_manifests_are_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "{}",                                                   /* no format, host, id */
        "{\"format\": 2, \"host\": \"h\", \"segment_id\": 3}",  /* another format */
        "{\"format\": 1, \"host\": \"h\", \"segment_id\": -3}",
        "{\"format\": 1, \"host\": \"h\", \"segment_id\": 03}",
        "{\"format\": 1, \"host\": \"h\", \"segment_id\": 18446744073709551616}",
        "{\"format\": 1, \"host\": \"h\", \"segment_id\": 3",
        "{\"format\": 1, \"host\": \"h\", \"segment_id\": 3} x",
        "{\"format\": 1, \"host\": \"h\\u0000\", \"segment_id\": 3}",
        "{\"format\": 1, \"host\": \"h\\q\", \"segment_id\": 3}",
        "{\"format\": 1, \"host\": {\"a\": 1}, \"segment_id\": 3}",
    };
    struct s3_key_manifest m;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(s3_key_manifest_parse(bad[i], strlen(bad[i]), &m), -EBADMSG);
    char big[S3_KEY_MANIFEST_MAX + 2];
    memset(big, ' ', sizeof big);
    assert_int_equal(s3_key_manifest_parse(big, sizeof big, &m), -EBADMSG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_stem_is_host_day_process_and_id),
        cmocka_unit_test(host_names_cannot_leave_their_folder),
        cmocka_unit_test(a_manifest_round_trips),
        cmocka_unit_test(unknown_keys_are_skipped),
        cmocka_unit_test(damaged_manifests_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
