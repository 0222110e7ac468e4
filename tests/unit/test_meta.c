/*
 * test_meta.c — the metadata log: append/decode round trips for runtimes,
 * locations and schemas, capacity exhaustion, and rejection of malformed
 * entries (unterminated strings, bad field types, overlong counts).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "shm/meta.h"

struct fx { struct d9_region_hdr hdr; uint8_t area[4096]; };

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    f->hdr.meta_size = sizeof f->area;
    *state = f;
    return 0;
}
static int teardown(void **state) { free(*state); return 0; }

static void append_runtime(struct fx *f, uint32_t id, const char *name)
{
    uint8_t buf[256];
    int n = shm_meta_encode_runtime(buf, sizeof buf, name);
    assert_true(n > 0);
    assert_int_equal(shm_meta_append(&f->hdr, f->area, D9_META_RUNTIME, id, buf, (size_t)n), 0);
}

static void test_runtime_location_schema_round_trip(void **state)
{
    struct fx *f = *state;
    uint8_t buf[1024];
    append_runtime(f, 1, "http");
    int n = shm_meta_encode_location(buf, sizeof buf, "src/server.c", 42, "handle");
    assert_int_equal(shm_meta_append(&f->hdr, f->area, D9_META_LOCATION, 1, buf, (size_t)n), 0);
    const uint8_t types[3] = { D9_FT_STR, D9_FT_U64, D9_FT_F64 };
    const char *names[3] = { "path", "status", "ms" };
    n = shm_meta_encode_schema(buf, sizeof buf, "http_request", 3, types, names);
    assert_int_equal(shm_meta_append(&f->hdr, f->area, D9_META_SCHEMA, 1, buf, (size_t)n), 0);

    size_t off = 0, len = atomic_load(&f->hdr.meta_head);
    assert_int_equal(len % 8, 0);
    struct shm_meta_entry e;
    assert_int_equal(shm_meta_next(f->area, len, &off, &e), 1);
    assert_int_equal(e.kind, D9_META_RUNTIME);
    assert_string_equal(e.name, "http");
    assert_int_equal(shm_meta_next(f->area, len, &off, &e), 1);
    assert_int_equal(e.kind, D9_META_LOCATION);
    assert_string_equal(e.name, "src/server.c");
    assert_string_equal(e.func, "handle");
    assert_int_equal(e.line, 42);
    assert_int_equal(shm_meta_next(f->area, len, &off, &e), 1);
    assert_int_equal(e.kind, D9_META_SCHEMA);
    assert_string_equal(e.name, "http_request");
    assert_int_equal(e.nfields, 3);
    assert_string_equal(e.fields[0].name, "path");
    assert_int_equal(e.fields[0].type, D9_FT_STR);
    assert_string_equal(e.fields[2].name, "ms");
    assert_int_equal(shm_meta_next(f->area, len, &off, &e), 0);
}

/* A loaded object's executable segment: addresses, offset, build id, path. */
static void test_object_round_trip_and_bad_objects_rejected(void **state)
{
    struct fx *f = *state;
    uint8_t buf[512];
    const uint8_t bid[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3 };
    struct d9_meta_object o = { .start = 0x400000, .end = 0x401000, .pgoff = 0x1000,
                                .build_id_len = 20 };
    int n = shm_meta_encode_object(buf, sizeof buf, &o, bid, "/usr/bin/prog");
    assert_true(n > 0);
    assert_int_equal(shm_meta_append(&f->hdr, f->area, D9_META_OBJECT, 1, buf, (size_t)n), 0);
    size_t off = 0, len = atomic_load(&f->hdr.meta_head);
    struct shm_meta_entry e;
    assert_int_equal(shm_meta_next(f->area, len, &off, &e), 1);
    assert_int_equal(e.kind, D9_META_OBJECT);
    assert_true(e.start == 0x400000 && e.end == 0x401000 && e.pgoff == 0x1000);
    assert_int_equal(e.build_id_len, 20);
    assert_memory_equal(e.build_id, bid, 20);
    assert_string_equal(e.name, "/usr/bin/prog");

    /* empty range, build id longer than the ABI allows: refused by both sides */
    struct d9_meta_object empty = { .start = 0x1000, .end = 0x1000 };
    assert_int_equal(shm_meta_encode_object(buf, sizeof buf, &empty, bid, "/x"), -EINVAL);
    uint8_t raw[64] = { 0 };
    struct d9_meta_hdr mh = { .len = 48, .kind = D9_META_OBJECT, .id = 1 };
    struct d9_meta_object bad = { .start = 1, .end = 2, .build_id_len = D9_BUILD_ID_MAX + 1 };
    memcpy(raw, &mh, sizeof mh);
    memcpy(raw + sizeof mh, &bad, sizeof bad);
    off = 0;
    assert_int_equal(shm_meta_next(raw, sizeof mh + 40, &off, &e), -EBADMSG);
}

static void test_full_log_counts_lost(void **state)
{
    struct fx *f = *state;
    uint8_t name[64];
    int appended = 0;
    for (uint32_t i = 1; i < 1000; i++) {
        snprintf((char *)name, sizeof name, "runtime-%u", i);
        if (shm_meta_append(&f->hdr, f->area, D9_META_RUNTIME, i, name,
                            strlen((char *)name) + 1) == 0)
            appended++;
    }
    assert_true(appended > 0 && appended < 999);
    assert_int_equal(atomic_load(&f->hdr.meta_lost), 999 - appended);
    size_t off = 0;
    struct shm_meta_entry e;
    int seen = 0;
    while (shm_meta_next(f->area, atomic_load(&f->hdr.meta_head), &off, &e) == 1)
        seen++;
    assert_int_equal(seen, appended);
}

static void test_unterminated_string_rejected(void **state)
{
    struct fx *f = *state;
    uint8_t raw[8] = { 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h' };
    assert_int_equal(shm_meta_append(&f->hdr, f->area, D9_META_RUNTIME, 1, raw, sizeof raw), 0);
    /* the appender pads to 8 with zeros; overwrite the pad to lose the NUL */
    size_t len = atomic_load(&f->hdr.meta_head);
    memset(f->area + 8, 'x', len - 8);
    size_t off = 0;
    struct shm_meta_entry e;
    assert_int_equal(shm_meta_next(f->area, len, &off, &e), -EBADMSG);
    assert_int_equal(off, 0);
}

static void test_bad_field_type_and_count_rejected(void **state)
{
    struct fx *f = *state;
    uint8_t buf[256];
    const uint8_t types[1] = { D9_FT_U64 };
    const char *names[1] = { "x" };
    int n = shm_meta_encode_schema(buf, sizeof buf, "s", 1, types, names);
    buf[4 + 2] = 77;                            /* field type after "s\0" */
    shm_meta_append(&f->hdr, f->area, D9_META_SCHEMA, 1, buf, (size_t)n);
    size_t off = 0;
    struct shm_meta_entry e;
    assert_int_equal(shm_meta_next(f->area, atomic_load(&f->hdr.meta_head), &off, &e), -EBADMSG);

    uint16_t many = D9_SCHEMA_MAX_FIELDS + 1;
    memcpy(f->area + 8, &many, 2);
    off = 0;
    assert_int_equal(shm_meta_next(f->area, atomic_load(&f->hdr.meta_head), &off, &e), -EBADMSG);
}

static void test_entry_length_beyond_log_rejected(void **state)
{
    struct fx *f = *state;
    append_runtime(f, 1, "rt");
    struct d9_meta_hdr mh;
    memcpy(&mh, f->area, sizeof mh);
    mh.len = 4000;
    memcpy(f->area, &mh, sizeof mh);
    size_t off = 0;
    struct shm_meta_entry e;
    assert_int_equal(shm_meta_next(f->area, atomic_load(&f->hdr.meta_head), &off, &e), -EBADMSG);
    mh.len = 16;
    mh.id = 0;                                  /* ids start at 1 */
    memcpy(f->area, &mh, sizeof mh);
    assert_int_equal(shm_meta_next(f->area, atomic_load(&f->hdr.meta_head), &off, &e), -EBADMSG);
}

static void test_encode_rejects_bad_names(void **state)
{
    (void)state;
    uint8_t buf[512];
    char longname[D9_NAME_MAX + 2];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    assert_int_equal(shm_meta_encode_runtime(buf, sizeof buf, ""), -EINVAL);
    assert_int_equal(shm_meta_encode_runtime(buf, sizeof buf, longname), -EINVAL);
    assert_int_equal(shm_meta_encode_runtime(buf, 2, "abc"), -ENAMETOOLONG);
    const uint8_t types[1] = { 9 };
    const char *names[1] = { "f" };
    assert_int_equal(shm_meta_encode_schema(buf, sizeof buf, "s", 1, types, names), -EINVAL);
}

static void test_long_location_path_keeps_tail(void **state)
{
    (void)state;
    char path[1024];
    memset(path, 'd', sizeof path);
    strcpy(path + sizeof path - 10, "/file.c");
    uint8_t buf[1024];
    int n = shm_meta_encode_location(buf, sizeof buf, path, 1, "f");
    assert_true(n > 0);
    const char *file = (const char *)buf + 4;
    assert_int_equal(strlen(file), D9_NAME_MAX * 4);
    assert_string_equal(file + strlen(file) - 7, "/file.c");
}

static void test_code_location_round_trips_its_address(void **state)
{
    struct fx *f = *state;
    uint8_t buf[256];
    char func[D9_LOC_CODE_FUNC_MAX];
    const uint64_t addrs[] = { 0x1, 0x55d0c0ffee10ull, UINT64_MAX };
    for (unsigned i = 0; i < 3; i++) {
        int n = shm_meta_encode_location(buf, sizeof buf, D9_LOC_CODE_FILE, 0,
                                         shm_meta_code_func(addrs[i], func));
        assert_true(n > 0);
        assert_int_equal(shm_meta_append(&f->hdr, f->area, D9_META_LOCATION, i + 1, buf,
                                         (size_t)n), 0);
    }
    size_t off = 0;
    struct shm_meta_entry e;
    uint64_t addr;
    for (unsigned i = 0; i < 3; i++) {
        assert_int_equal(shm_meta_next(f->area, atomic_load(&f->hdr.meta_head), &off, &e), 1);
        assert_int_equal(shm_meta_code_addr(&e, &addr), 1);
        assert_true(addr == addrs[i]);
    }
}

static void test_source_locations_and_bad_addresses_are_not_code_locations(void **state)
{
    (void)state;
    uint64_t addr;
    struct shm_meta_entry src = { .kind = D9_META_LOCATION, .id = 1, .name = "a.c", .func = "0x10" };
    assert_int_equal(shm_meta_code_addr(&src, &addr), 0);
    const char *bad[] = { "", "0x", "10", "0x1g", "0X10", "0x10000000000000000" };
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct shm_meta_entry e = { .kind = D9_META_LOCATION, .id = 1, .name = D9_LOC_CODE_FILE,
                                    .func = bad[i] };
        assert_int_equal(shm_meta_code_addr(&e, &addr), 0);
    }
    struct shm_meta_entry l7 = { .kind = D9_META_LOCATION, .id = 1, .name = D9_LOC_CODE_FILE,
                                 .func = "0x10", .line = 7 };
    assert_int_equal(shm_meta_code_addr(&l7, &addr), 0);
}

static void test_trampoline_entries_name_their_callback_location(void **state)
{
    (void)state;
    uint64_t at = 0;
    uint32_t loc = 0;
    struct shm_meta_entry t = { .kind = D9_META_LOCATION, .id = 9, .name = D9_LOC_TRAMP_FILE,
                                .func = "0x7f0012345670", .line = 4 };
    assert_int_equal(shm_meta_tramp(&t, &at, &loc), 1);
    assert_true(at == 0x7f0012345670ull);
    assert_int_equal(loc, 4);
    uint64_t addr;
    assert_int_equal(shm_meta_code_addr(&t, &addr), 0);        /* not a code location */
    struct shm_meta_entry no_loc = t, code = t, bad = t;
    no_loc.line = 0;
    code.name = D9_LOC_CODE_FILE;
    bad.func = "0x12z";
    assert_int_equal(shm_meta_tramp(&no_loc, &at, &loc), 0);
    assert_int_equal(shm_meta_tramp(&code, &at, &loc), 0);
    assert_int_equal(shm_meta_tramp(&bad, &at, &loc), 0);
    assert_int_equal(shm_meta_tramp(NULL, &at, &loc), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_code_location_round_trips_its_address, setup, teardown),
        cmocka_unit_test(test_source_locations_and_bad_addresses_are_not_code_locations),
        cmocka_unit_test(test_trampoline_entries_name_their_callback_location),
        cmocka_unit_test_setup_teardown(test_runtime_location_schema_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_object_round_trip_and_bad_objects_rejected, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_full_log_counts_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unterminated_string_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_field_type_and_count_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entry_length_beyond_log_rejected, setup, teardown),
        cmocka_unit_test(test_encode_rejects_bad_names),
        cmocka_unit_test(test_long_location_path_keeps_tail),
    };
    return cmocka_run_group_tests_name("meta", tests, NULL, NULL);
}
