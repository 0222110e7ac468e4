/*
 * test_q_decode.c — q_decode.c: every record type to fields, text and JSON
 * lines; custom events by schema; hostile payloads; escaping.
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
#include "collector/cli/cli.h"
#include "collector/query/q_decode.h"

/* ---- a fake metadata source ---------------------------------------------- */
static struct shm_meta_entry loc7 = { .kind = D9_META_LOCATION, .id = 7, .name = "src/http.c",
                                      .func = "handle_req", .line = 42 };
static struct shm_meta_entry schema3 = {
    .kind = D9_META_SCHEMA, .id = 3, .name = "order", .nfields = 5,
    .fields = { { D9_FT_STR, "item" }, { D9_FT_U64, "qty" }, { D9_FT_F64, "price" },
                { D9_FT_I64, "delta" }, { D9_FT_BOOL, "ok" } },
};
static const char *fake_rt(const void *ctx, uint32_t id)
{
    (void)ctx;
    return id == 1 ? "http" : NULL;
}
static const struct shm_meta_entry *fake_loc(const void *ctx, uint32_t id)
{
    (void)ctx;
    return id == 7 ? &loc7 : NULL;
}
static const struct shm_meta_entry *fake_schema(const void *ctx, uint32_t id)
{
    (void)ctx;
    return id == 3 ? &schema3 : NULL;
}
static const struct q_meta_src META = { fake_rt, fake_loc, fake_schema, NULL };
static const struct q_line_ctx LINE = { .pid = 100, .tid = 101, .comm = "app", .thread = "w0" };

static struct d9_rec_hdr hdr(uint16_t type, size_t len, uint64_t ts)
{
    return (struct d9_rec_hdr){ .len = (uint16_t)len, .type = type, .seq = 1, .ts = ts };
}

/* Decode and render a record; returns a malloc'ed line (text or JSON). */
static char *render(const void *rec, size_t len, bool json)
{
    struct q_decoded d;
    assert_int_equal(q_decode(rec, len, &META, &d), 0);
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_non_null(f);
    if (json)
        q_decode_print_json(f, &LINE, &d);
    else
        q_decode_print_text(f, &LINE, &d);
    fclose(f);
    return buf;
}

static void assert_contains(const char *hay, const char *needle)
{
    if (!strstr(hay, needle))
        fail_msg("'%s' not found in '%s'", needle, hay);
}

/* ---- built-in types -------------------------------------------------------- */
static void poll_start_names_runtime_and_location(void **state)
{
    (void)state;
    struct d9_rec_poll_start r = { .h = hdr(D9_REC_POLL_START, sizeof r, 5000000123ull),
                                   .task = 17, .loc = 7, .runtime = 1, .worker = 2 };
    char *t = render(&r, sizeof r, false);
    assert_contains(t, "mono 5.000000123s 100/101 poll_start task=17 runtime=http worker=2 "
                       "loc=\"src/http.c:42 handle_req\"\n");
    free(t);
    char *j = render(&r, sizeof r, true);
    assert_contains(j, "{\"ts_ns\":5000000123,\"pid\":100,\"tid\":101,\"comm\":\"app\","
                       "\"thread\":\"w0\",\"type\":\"poll_start\",\"task\":17,"
                       "\"runtime\":\"http\",\"worker\":2,\"loc\":\"src/http.c:42 handle_req\"}\n");
    free(j);
}

static void unknown_ids_are_shown_by_number(void **state)
{
    (void)state;
    struct d9_rec_poll_start r = { .h = hdr(D9_REC_POLL_START, sizeof r, 1), .task = 1,
                                   .loc = 99, .runtime = 5, .worker = 0 };
    char *t = render(&r, sizeof r, false);
    assert_contains(t, "runtime=#5 worker=0 loc=#99");
    free(t);
}

static void poll_end_has_task_runtime_worker(void **state)
{
    (void)state;
    struct d9_rec_poll_end r = { .h = hdr(D9_REC_POLL_END, sizeof r, 1), .task = 17,
                                 .runtime = 1, .worker = 3 };
    char *t = render(&r, sizeof r, false);
    assert_contains(t, " poll_end task=17 runtime=http worker=3\n");
    free(t);
}

static void wake_without_target_says_none(void **state)
{
    (void)state;
    struct d9_rec_wake r = { .h = hdr(D9_REC_WAKE, sizeof r, 1), .waker = 4, .wakee = 9,
                             .runtime = 1, .target_worker = D9_WORKER_NONE };
    char *t = render(&r, sizeof r, false);
    assert_contains(t, " wake waker=4 wakee=9 runtime=http target_worker=none\n");
    free(t);
}

static void park_and_unpark_carry_cpu_and_sched_wait(void **state)
{
    (void)state;
    struct d9_rec_worker r = { .h = hdr(D9_REC_WORKER_PARK, sizeof r, 1), .runtime = 1,
                               .worker = 0, .cpu_ns = 1234, .sched_wait_ns = 55 };
    char *t = render(&r, sizeof r, false);
    assert_contains(t, " worker_park runtime=http worker=0 cpu_ns=1234 sched_wait_ns=55\n");
    free(t);
    r.h.type = D9_REC_WORKER_UNPARK;
    char *j = render(&r, sizeof r, true);
    assert_contains(j, "\"type\":\"worker_unpark\",\"runtime\":\"http\",\"worker\":0,"
                       "\"cpu_ns\":1234,\"sched_wait_ns\":55}");
    free(j);
}

static void unsampled_park_has_no_cpu_or_wait_fields(void **state)
{
    (void)state;
    struct d9_rec_worker r = { .h = hdr(D9_REC_WORKER_PARK, sizeof r, 1), .runtime = 1,
                               .worker = 2, .flags = D9_WORKER_UNSAMPLED };
    char *t = render(&r, sizeof r, false);
    assert_contains(t, " worker_park runtime=http worker=2\n");
    assert_null(strstr(t, "cpu_ns"));
    free(t);
    char *j = render(&r, sizeof r, true);
    assert_contains(j, "\"type\":\"worker_park\",\"runtime\":\"http\",\"worker\":2}");
    free(j);
}

static void spawn_has_location_terminate_does_not(void **state)
{
    (void)state;
    struct d9_rec_task r = { .h = hdr(D9_REC_TASK_SPAWN, sizeof r, 1), .task = 8, .loc = 7,
                             .runtime = 1 };
    char *t = render(&r, sizeof r, false);
    assert_contains(t, " task_spawn task=8 runtime=http loc=\"src/http.c:42 handle_req\"\n");
    free(t);
    r.h.type = D9_REC_TASK_TERMINATE;
    r.loc = 0;
    t = render(&r, sizeof r, false);
    assert_contains(t, " task_terminate task=8 runtime=http\n");
    free(t);
}

static void queue_depth_of_global_queue(void **state)
{
    (void)state;
    struct d9_rec_queue_depth r = { .h = hdr(D9_REC_QUEUE_DEPTH, sizeof r, 1), .depth = 12,
                                    .runtime = 1, .worker = D9_WORKER_NONE };
    char *t = render(&r, sizeof r, false);
    assert_contains(t, " queue_depth depth=12 runtime=http worker=global\n");
    free(t);
    r.worker = 4;
    char *j = render(&r, sizeof r, true);
    assert_contains(j, "\"depth\":12,\"runtime\":\"http\",\"worker\":4}");
    free(j);
}

static void cpu_sample_lists_instruction_pointers(void **state)
{
    (void)state;
    struct {
        struct d9_rec_stack s;
        uint64_t ips[2];
    } r = { .s = { .h = hdr(D9_REC_CPU_SAMPLE, sizeof r, 1), .tid = 7, .nframes = 2,
                   .flags = D9_STACK_KERNEL, .weight = 10101 },
            .ips = { 0x401000, 0xffffffff81000000ull } };
    char *t = render(&r, sizeof r, false);
    assert_contains(t, " cpu_sample sampled_tid=7 weight_ns=10101 nframes=2 kernel=yes "
                       "ips=0x401000,0xffffffff81000000\n");
    free(t);
    char *j = render(&r, sizeof r, true);
    assert_contains(j, "\"ips\":[\"0x401000\",\"0xffffffff81000000\"]");
    free(j);
}

static void bad_framing_is_rejected(void **state)
{
    (void)state;
    struct d9_rec_poll_end r = { .h = hdr(D9_REC_POLL_END, sizeof r + 8, 1) };
    struct q_decoded d;
    assert_int_equal(q_decode(&r, sizeof r, &META, &d), -EBADMSG);     /* len > avail */
    r.h.len = sizeof r;
    r.h.type = 77;
    assert_int_equal(q_decode(&r, sizeof r, &META, &d), -EBADMSG);     /* unknown type */
    assert_int_equal(q_decode(&r, 8, &META, &d), -EBADMSG);            /* short */
}

/* ---- custom events --------------------------------------------------------- */

/* Build a custom record with the "order" schema's payload. */
static size_t build_order(uint8_t *buf, size_t cap, const char *item, uint32_t item_len_claim,
                          size_t cut)
{
    uint8_t payload[512];
    size_t o = 0;
    uint32_t n = (uint32_t)strlen(item);
    memcpy(payload + o, &item_len_claim, 4);
    o += 4;
    memcpy(payload + o, item, n);
    o += n;
    while (o % 8)
        payload[o++] = 0;
    uint64_t qty = 3;
    double price = 2.5;
    int64_t delta = -5;
    uint64_t ok = 1;
    memcpy(payload + o, &qty, 8), o += 8;
    memcpy(payload + o, &price, 8), o += 8;
    memcpy(payload + o, &delta, 8), o += 8;
    memcpy(payload + o, &ok, 8), o += 8;
    if (cut)
        o -= cut;
    struct d9_rec_custom c = { .schema = 3, .payload_len = (uint32_t)o };
    size_t len = (sizeof c + o + 7) & ~(size_t)7;
    assert_true(len <= cap);
    memset(buf, 0, len);
    c.h = hdr(D9_REC_CUSTOM, len, 1);
    memcpy(buf, &c, sizeof c);
    memcpy(buf + sizeof c, payload, o);
    return len;
}

static void custom_fields_are_decoded_by_name(void **state)
{
    (void)state;
    uint8_t rec[256];
    size_t len = build_order(rec, sizeof rec, "widget", 6, 0);
    char *t = render(rec, len, false);
    assert_contains(t, " custom order item=widget qty=3 price=2.5 delta=-5 ok=true\n");
    free(t);
    char *j = render(rec, len, true);
    assert_contains(j, "\"type\":\"custom\",\"event\":\"order\",\"fields\":{\"item\":\"widget\","
                       "\"qty\":3,\"price\":2.5,\"delta\":-5,\"ok\":true}}\n");
    free(j);
}

static void custom_string_with_spaces_and_quotes_is_quoted_and_escaped(void **state)
{
    (void)state;
    uint8_t rec[256];
    size_t len = build_order(rec, sizeof rec, "a \"b\"\n", 6, 0);
    char *t = render(rec, len, false);
    assert_contains(t, "item=\"a \\\"b\\\"\\x0a\"");
    free(t);
    char *j = render(rec, len, true);
    assert_contains(j, "\"item\":\"a \\\"b\\\"\\n\"");
    free(j);
}

static void invalid_utf8_becomes_replacement_character_in_json(void **state)
{
    (void)state;
    uint8_t rec[256];
    size_t len = build_order(rec, sizeof rec, "x\xff\xc3\xa9y", 5, 0);
    char *j = render(rec, len, true);
    assert_contains(j, "\"item\":\"x\\ufffd\xc3\xa9y\"");
    free(j);
}

static void custom_string_longer_than_payload_is_an_error_not_an_overread(void **state)
{
    (void)state;
    uint8_t rec[256];
    size_t len = build_order(rec, sizeof rec, "widget", 4000, 0);
    struct q_decoded d;
    assert_int_equal(q_decode(rec, len, &META, &d), 0);
    assert_non_null(d.error);
    assert_int_equal(d.nfields, 0);
    char *t = render(rec, len, false);
    assert_contains(t, "error=\"string field longer than the payload\"");
    free(t);
}

static void custom_payload_shorter_than_schema_keeps_decoded_fields(void **state)
{
    (void)state;
    uint8_t rec[256];
    size_t len = build_order(rec, sizeof rec, "widget", 6, 8);     /* drop "ok" */
    struct q_decoded d;
    assert_int_equal(q_decode(rec, len, &META, &d), 0);
    assert_string_equal(d.error, "payload shorter than its schema");
    assert_int_equal(d.nfields, 4);
    assert_non_null(q_decode_field(&d, "delta"));
    assert_null(q_decode_field(&d, "ok"));
}

static void custom_with_unknown_schema_reports_it(void **state)
{
    (void)state;
    uint8_t rec[256];
    size_t len = build_order(rec, sizeof rec, "widget", 6, 0);
    struct d9_rec_custom c;
    memcpy(&c, rec, sizeof c);
    c.schema = 44;
    memcpy(rec, &c, sizeof c);
    char *t = render(rec, len, false);
    assert_contains(t, " custom ? schema=44 payload_len=");
    assert_contains(t, "error=\"unknown schema\"");
    free(t);
    char *j = render(rec, len, true);
    assert_contains(j, "\"schema\":44,");
    assert_contains(j, "\"fields\":{},\"error\":\"unknown schema\"}");
    free(j);
}

static void non_finite_float_is_null_in_json(void **state)
{
    (void)state;
    uint8_t rec[256];
    size_t len = build_order(rec, sizeof rec, "w", 1, 0);
    /* price is the second 8-byte field after the 8-byte padded string */
    double nan = __builtin_nan("");
    memcpy(rec + sizeof(struct d9_rec_custom) + 8 + 8, &nan, 8);
    char *j = render(rec, len, true);
    assert_contains(j, "\"price\":null");
    free(j);
}

static void wall_clock_time_when_the_boot_offset_is_known(void **state)
{
    (void)state;
    struct d9_rec_poll_end r = { .h = hdr(D9_REC_POLL_END, sizeof r, 1500000000ull) };
    struct q_decoded d;
    assert_int_equal(q_decode(&r, sizeof r, &META, &d), 0);
    struct q_line_ctx lc = LINE;
    lc.have_wall = true;
    lc.boot_realtime_ns = 0;
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    setenv("TZ", "UTC", 1);
    q_decode_print_json(f, &lc, &d);
    fclose(f);
    assert_contains(buf, "\"time\":\"1970-01-01 00:00:01.500000000\"");
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(poll_start_names_runtime_and_location),
        cmocka_unit_test(unknown_ids_are_shown_by_number),
        cmocka_unit_test(poll_end_has_task_runtime_worker),
        cmocka_unit_test(wake_without_target_says_none),
        cmocka_unit_test(park_and_unpark_carry_cpu_and_sched_wait),
        cmocka_unit_test(unsampled_park_has_no_cpu_or_wait_fields),
        cmocka_unit_test(spawn_has_location_terminate_does_not),
        cmocka_unit_test(queue_depth_of_global_queue),
        cmocka_unit_test(cpu_sample_lists_instruction_pointers),
        cmocka_unit_test(bad_framing_is_rejected),
        cmocka_unit_test(custom_fields_are_decoded_by_name),
        cmocka_unit_test(custom_string_with_spaces_and_quotes_is_quoted_and_escaped),
        cmocka_unit_test(invalid_utf8_becomes_replacement_character_in_json),
        cmocka_unit_test(custom_string_longer_than_payload_is_an_error_not_an_overread),
        cmocka_unit_test(custom_payload_shorter_than_schema_keeps_decoded_fields),
        cmocka_unit_test(custom_with_unknown_schema_reports_it),
        cmocka_unit_test(non_finite_float_is_null_in_json),
        cmocka_unit_test(wall_clock_time_when_the_boot_offset_is_known),
    };
    return cmocka_run_group_tests_name("decode", tests, NULL, NULL);
}
