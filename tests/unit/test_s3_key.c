/*
 * test_s3_key.c — the bucket layout and the manifest (collector/s3/s3_key.c):
 * keys follow PREFIX/HOST/YYYY-MM-DD/PID-START/ID, host names are made safe,
 * a manifest written parses back to the same fields and threads, and a
 * damaged one (or one with a damaged or oversized thread list) is refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
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

static void parquet_keys_are_hive_partitions_of_table_day_and_host(void **state)
{
    (void)state;
    struct s3_key_manifest m = sample();
    char key[256];
    assert_int_equal(s3_key_parquet(&m, "polls", key, sizeof key), 0);
    assert_string_equal(key, "parquet/table=polls/date=2025-12-04/host=web-1.example/9.parquet");
    /* a custom table's name and the host stay inside their partition */
    strcpy(m.host, "a/b");
    assert_int_equal(s3_key_parquet(&m, "my/../t=1", key, sizeof key), 0);
    assert_string_equal(key, "parquet/table=my_.._t_1/date=2025-12-04/host=a_b/9.parquet");
    assert_int_equal(s3_key_parquet(&m, "..", key, sizeof key), -EINVAL);
    assert_int_equal(s3_key_parquet(&m, "", key, sizeof key), -EINVAL);
    assert_int_equal(s3_key_parquet(&m, "polls", key, 20), -ENAMETOOLONG);
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
    assert_int_equal(s3_key_manifest_write(&m, NULL, json, sizeof json), 0);
    assert_non_null(strstr(json, "\"segment_id\": 9"));
    assert_non_null(strstr(json, "\"comm\": \"srv \\\"q\\\"\\\\\\u0001\""));
    assert_null(strstr(json, "threads"));
    assert_int_equal(s3_key_manifest_parse(json, strlen(json), &back, NULL), 0);
    assert_memory_equal(&m, &back, sizeof m);
    assert_int_equal(s3_key_manifest_write(&m, NULL, json, 20), -ENAMETOOLONG);
}

/* --retain triggered: a kept window's manifest names its trigger, and
 * reads back with it; one without the keys is not kept. */
static void a_kept_window_manifest_names_its_trigger(void **state)
{
    (void)state;
    struct s3_key_manifest m = sample(), back;
    m.kept = 1;
    m.trigger_t_ns = 5000000000ull;
    m.trigger_t0_ns = 4000000000ull;
    m.trigger_t1_ns = 5500000000ull;
    m.trigger_pid = 4242;
    m.trigger_count = 2;
    m.trigger_source_segment = 7;
    snprintf(m.trigger_reason, sizeof m.trigger_reason, "marker: slow \"request\"");
    char json[S3_KEY_MANIFEST_MAX];
    assert_int_equal(s3_key_manifest_write(&m, NULL, json, sizeof json), 0);
    assert_non_null(strstr(json, "\"trigger_t_ns\": 5000000000"));
    assert_non_null(strstr(json, "\"trigger_t0_ns\": 4000000000"));
    assert_non_null(strstr(json, "\"trigger_t1_ns\": 5500000000"));
    assert_non_null(strstr(json, "\"trigger_reason\": \"marker: slow \\\"request\\\"\""));
    assert_int_equal(s3_key_manifest_parse(json, strlen(json), &back, NULL), 0);
    assert_memory_equal(&m, &back, sizeof m);
    m = sample();
    assert_int_equal(s3_key_manifest_write(&m, NULL, json, sizeof json), 0);
    assert_null(strstr(json, "trigger"));
    assert_int_equal(s3_key_manifest_parse(json, strlen(json), &back, NULL), 0);
    assert_int_equal(back.kept, 0);
}

static struct s3_key_threads threads, back_threads;

static void threads_round_trip_with_their_names_escaped(void **state)
{
    (void)state;
    struct s3_key_manifest m = sample(), back;
    char json[S3_KEY_MANIFEST_MAX];
    memset(&threads, 0, sizeof threads);
    threads.n = 3;
    threads.t[0] = (struct s3_key_thread){ .tid = 4242, .ring = 0, .generation = 1, .name = "main" };
    threads.t[1] = (struct s3_key_thread){ .tid = 4243, .ring = 7, .generation = 4294967295u,
                                           .name = "w\"\\\n\x7f/0123456789" };   /* 16 bytes */
    threads.t[2] = (struct s3_key_thread){ .tid = 1, .ring = 4294967295u, .generation = 0,
                                           .name = "\xc3\xa9t\xc3\xa9" };
    assert_int_equal(strlen(threads.t[1].name), S3_KEY_THREAD_NAME_MAX);
    assert_int_equal(s3_key_manifest_write(&m, &threads, json, sizeof json), 0);
    assert_non_null(strstr(json, "{\"tid\": 4242, \"ring\": 0, \"generation\": 1, \"name\": \"main\"}"));
    assert_non_null(strstr(json, "\"name\": \"w\\\"\\\\\\u000a\x7f/0123456789\""));
    assert_int_equal(s3_key_manifest_parse(json, strlen(json), &back, &back_threads), 0);
    assert_memory_equal(&m, &back, sizeof m);
    assert_int_equal(back_threads.n, 3);
    for (uint32_t i = 0; i < 3; i++) {
        assert_int_equal(back_threads.t[i].tid, threads.t[i].tid);
        assert_int_equal(back_threads.t[i].ring, threads.t[i].ring);
        assert_int_equal(back_threads.t[i].generation, threads.t[i].generation);
        assert_string_equal(back_threads.t[i].name, threads.t[i].name);
    }
    /* checked even when not kept */
    assert_int_equal(s3_key_manifest_parse(json, strlen(json), &back, NULL), 0);
    /* an empty list is a list */
    threads.n = 0;
    assert_int_equal(s3_key_manifest_write(&m, &threads, json, sizeof json), 0);
    assert_non_null(strstr(json, "\"threads\": []"));
    back_threads.n = 99;
    assert_int_equal(s3_key_manifest_parse(json, strlen(json), &back, &back_threads), 0);
    assert_int_equal(back_threads.n, 0);
}

static void a_manifest_without_threads_has_none(void **state)
{
    (void)state;
    const char *j = "{\"format\": 1, \"host\": \"h\", \"segment_id\": 3}";
    struct s3_key_manifest m;
    back_threads.n = 5;
    assert_int_equal(s3_key_manifest_parse(j, strlen(j), &m, &back_threads), 0);
    assert_int_equal(back_threads.n, 0);
}

static void the_most_threads_fit_in_a_manifest(void **state)
{
    (void)state;
    struct s3_key_manifest m = sample(), back;
    static char json[S3_KEY_MANIFEST_MAX];
    memset(&threads, 0, sizeof threads);
    threads.n = S3_KEY_THREADS_MAX;
    for (uint32_t i = 0; i < threads.n; i++) {
        threads.t[i] = (struct s3_key_thread){ .tid = 4294967295u, .ring = 4294967295u,
                                               .generation = 4294967295u };
        memset(threads.t[i].name, 0x01, S3_KEY_THREAD_NAME_MAX);  /* 6 bytes each escaped */
    }
    memset(m.host, 'h', sizeof m.host - 1);
    memset(m.comm, 0x01, sizeof m.comm - 1);
    memset(m.boot_id, 0x01, sizeof m.boot_id - 1);
    assert_int_equal(s3_key_manifest_write(&m, &threads, json, sizeof json), 0);
    assert_int_equal(s3_key_manifest_parse(json, strlen(json), &back, &back_threads), 0);
    assert_int_equal(back_threads.n, S3_KEY_THREADS_MAX);
    threads.n = S3_KEY_THREADS_MAX + 1;                      /* the writer caps too */
    assert_int_equal(s3_key_manifest_write(&m, &threads, json, sizeof json), -EINVAL);
    threads.n = 1;
    threads.t[0].name[0] = '\0';
    assert_int_equal(s3_key_manifest_write(&m, &threads, json, sizeof json), -EINVAL);
}

static void oversized_thread_lists_are_refused(void **state)
{
    (void)state;
    static char json[S3_KEY_MANIFEST_MAX];
    struct s3_key_manifest m;
    size_t o = (size_t)snprintf(json, sizeof json,
                                "{\"format\": 1, \"host\": \"h\", \"segment_id\": 3, \"threads\": [");
    for (int i = 0; i <= S3_KEY_THREADS_MAX; i++)
        o += (size_t)snprintf(json + o, sizeof json - o, "%s{\"tid\":1,\"ring\":%d,"
                              "\"generation\":1,\"name\":\"t\"}", i ? "," : "", i);
    o += (size_t)snprintf(json + o, sizeof json - o, "]}");
    assert_true(o < sizeof json);
    back_threads.n = 7;
    assert_int_equal(s3_key_manifest_parse(json, o, &m, &back_threads), -EBADMSG);
    assert_int_equal(back_threads.n, 0);                     /* nothing of it kept */
    /* one fewer is fine */
    char *last = strrchr(json, '{');
    strcpy(last - 1, "]}");
    assert_int_equal(s3_key_manifest_parse(json, strlen(json), &m, &back_threads), 0);
    assert_int_equal(back_threads.n, S3_KEY_THREADS_MAX);
}

static void damaged_thread_lists_are_refused(void **state)
{
    (void)state;
#define HEAD "{\"format\": 1, \"host\": \"h\", \"segment_id\": 3, \"threads\": "
#define T(body) HEAD "[{\"tid\": 1, \"ring\": 2, " body "}]}"
    static const char *const bad[] = {
        HEAD "[}",
        HEAD "[{\"tid\": 1, \"ring\": 2, \"generation\": 3, \"name\": \"a\"}",     /* no ] */
        HEAD "[{\"tid\": 1, \"ring\": 2, \"generation\": 3, \"name\": \"a\"},]}",  /* trailing , */
        HEAD "{\"tid\": 1}}",                                 /* not an array */
        HEAD "\"x\"}",
        HEAD "[[]]}",
        HEAD "[{}]}",
        HEAD "[1]}",
        T("\"generation\": 3"),                               /* no name */
        T("\"name\": \"a\""),                                 /* no generation */
        T("\"generation\": 3, \"name\": \"\""),               /* empty name */
        T("\"generation\": 3, \"name\": \"0123456789abcdefg\""),   /* 17 bytes */
        T("\"generation\": 3, \"name\": \"a\\u0000\""),
        T("\"generation\": 3, \"name\": \"a\x01\""),          /* raw control byte */
        T("\"generation\": 3, \"name\": \"a\\x\""),
        T("\"generation\": 4294967296, \"name\": \"a\""),     /* over 32 bits */
        T("\"generation\": -1, \"name\": \"a\""),
        T("\"generation\": 3, \"name\": 5"),
        T("\"generation\": 3, \"name\": \"a\", \"x\": {}"),
        "{\"format\": 1, \"host\": \"h\", \"segment_id\": 3, \"other\": []}",  /* arrays: threads only */
    };
#undef T
#undef HEAD
    struct s3_key_manifest m;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        back_threads.n = 1;
        assert_int_equal(s3_key_manifest_parse(bad[i], strlen(bad[i]), &m, &back_threads), -EBADMSG);
        assert_int_equal(back_threads.n, 0);
    }
    /* unknown keys inside a thread are skipped; 16 escaped bytes fit */
    const char *ok = "{\"format\": 1, \"host\": \"h\", \"segment_id\": 3, \"threads\": "
                     "[{\"future\": \"x\", \"tid\": 1, \"ring\": 2, \"generation\": 3, \"n\": 9,"
                     " \"name\": \"\\u0001\\u0001\\u0001\\u0001\\u0001\\u0001\\u0001\\u0001"
                     "\\u0001\\u0001\\u0001\\u0001\\u0001\\u0001\\u0001\\u0001\"}]}";
    assert_int_equal(s3_key_manifest_parse(ok, strlen(ok), &m, &back_threads), 0);
    assert_int_equal(back_threads.n, 1);
    assert_int_equal(strlen(back_threads.t[0].name), 16);
}

static void unknown_keys_are_skipped(void **state)
{
    (void)state;
    const char *j = "{\"format\": 1, \"host\": \"h\", \"segment_id\": 3, \"future\": \"x\","
                    " \"count\": 7}";
    struct s3_key_manifest m;
    assert_int_equal(s3_key_manifest_parse(j, strlen(j), &m, NULL), 0);
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
        assert_int_equal(s3_key_manifest_parse(bad[i], strlen(bad[i]), &m, NULL), -EBADMSG);
    char big[S3_KEY_MANIFEST_MAX + 2];
    memset(big, ' ', sizeof big);
    assert_int_equal(s3_key_manifest_parse(big, sizeof big, &m, NULL), -EBADMSG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_stem_is_host_day_process_and_id),
        cmocka_unit_test(host_names_cannot_leave_their_folder),
        cmocka_unit_test(parquet_keys_are_hive_partitions_of_table_day_and_host),
        cmocka_unit_test(a_manifest_round_trips),
        cmocka_unit_test(a_kept_window_manifest_names_its_trigger),
        cmocka_unit_test(unknown_keys_are_skipped),
        cmocka_unit_test(damaged_manifests_are_refused),
        cmocka_unit_test(threads_round_trip_with_their_names_escaped),
        cmocka_unit_test(a_manifest_without_threads_has_none),
        cmocka_unit_test(the_most_threads_fit_in_a_manifest),
        cmocka_unit_test(oversized_thread_lists_are_refused),
        cmocka_unit_test(damaged_thread_lists_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
