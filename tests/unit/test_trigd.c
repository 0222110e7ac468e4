/*
 * test_trigd.c — the collector's triggers (collector/daemon/trigd.c): what
 * the drain's chunks fire (a d9_trigger marker with its reason, a poll
 * longer than --trigger-poll-ms at its end, nested polls as one, a poll
 * whose end was lost silencing no later one, a sampled
 * scheduling wait longer than --trigger-sched-ms at its stamp, records
 * lost with --trigger-lost yes, a custom event's field over a
 * --trigger-field threshold), hostile
 * marker lengths, and the counts by source and verdict; a typed marker's
 * fields as the JSON of its index row (with an index: idx_fixture.h).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "collector/daemon/trigd.h"
#include "collector/store/idx_trig.h"
#include "shm/d9_abi.h"
#include "shm/meta.h"
#include "tests/unit/idx_fixture.h"

#define MS 1000000ull

/* The ring's seq: each record takes the next; a test skips some to show a
 * drop (d9_abi.h: a gap in seq is exactly a drop). */
static uint32_t seq;

static size_t put_hdr(uint8_t *b, uint16_t len, uint16_t type, uint64_t ts)
{
    struct d9_rec_hdr h;
    memset(&h, 0, sizeof h);
    h.len = len;
    h.type = type;
    h.seq = seq++;
    h.ts = ts;
    memcpy(b, &h, sizeof h);
    return len;
}

/* A marker of schema id with reason r (payload_len forged when plen != 0). */
static size_t put_marker(uint8_t *b, uint32_t id, const char *r, uint32_t plen, uint64_t ts)
{
    uint32_t sl = (uint32_t)strlen(r);
    uint32_t pay = (4 + sl + 7) & ~7u;
    size_t len = sizeof(struct d9_rec_custom) + pay;
    memset(b, 0, len);
    put_hdr(b, (uint16_t)len, D9_REC_CUSTOM, ts);
    struct d9_rec_custom c;
    memcpy(&c, b, sizeof c);
    c.schema = id;
    c.payload_len = plen ? plen : pay;
    memcpy(b, &c, sizeof c);
    memcpy(b + sizeof c, &sl, 4);
    memcpy(b + sizeof c + 4, r, sl);
    return len;
}

static size_t put_poll(uint8_t *b, uint16_t type, uint64_t task, uint64_t ts)
{
    memset(b, 0, sizeof(struct d9_rec_poll_start));
    memcpy(b + offsetof(struct d9_rec_poll_start, task), &task, sizeof task);
    return put_hdr(b, sizeof(struct d9_rec_poll_start), type, ts);
}

/* A worker park/unpark record with this sampled wait (flags: D9_WORKER_*). */
static size_t put_worker(uint8_t *b, uint16_t type, uint64_t wait_ns, uint32_t flags, uint64_t ts)
{
    struct d9_rec_worker w;
    memset(&w, 0, sizeof w);
    put_hdr(b, sizeof w, type, ts);
    memcpy(&w.h, b, sizeof w.h);
    w.flags = flags;
    w.sched_wait_ns = wait_ns;
    memcpy(b, &w, sizeof w);
    return sizeof w;
}

/* A process whose metadata named nothing. */
static const struct trigd_proc none;

/* Tells tp that its metadata named schema `name` with id and these fields. */
static void meta_schema(struct trigd_proc *tp, uint32_t id, const char *name, unsigned nf,
                        const uint8_t *types, const char *const *names)
{
    struct shm_meta_entry e;
    memset(&e, 0, sizeof e);
    e.kind = D9_META_SCHEMA;
    e.id = id;
    e.name = name;
    e.nfields = (uint16_t)nf;
    for (unsigned i = 0; i < nf; i++) {
        e.fields[i].type = types[i];
        e.fields[i].name = names[i];
    }
    trigd_meta(tp, 42, &e);
}

/* A process with the d9_trigger schema as id. */
static struct trigd_proc marker_proc(uint32_t id)
{
    struct trigd_proc tp;
    memset(&tp, 0, sizeof tp);
    static const uint8_t t[] = { D9_FT_STR };
    static const char *const nm[] = { "reason" };
    meta_schema(&tp, id, "d9_trigger", 1, t, nm);
    return tp;
}

/* A custom event of schema id: a STR field s, then a numeric one w. */
static size_t put_str_num(uint8_t *b, uint32_t id, const char *str, uint64_t w, uint64_t ts)
{
    uint32_t sl = (uint32_t)strlen(str);
    uint32_t sw = (4 + sl + 7) & ~7u;
    size_t len = sizeof(struct d9_rec_custom) + sw + 8;
    memset(b, 0, len);
    put_hdr(b, (uint16_t)len, D9_REC_CUSTOM, ts);
    struct d9_rec_custom c;
    memcpy(&c, b, sizeof c);
    c.schema = id;
    c.payload_len = sw + 8;
    memcpy(b, &c, sizeof c);
    memcpy(b + sizeof c, &sl, 4);
    memcpy(b + sizeof c + 4, str, sl);
    memcpy(b + sizeof c + sw, &w, 8);
    return len;
}

static void start(uint32_t poll_ms)
{
    struct trig_cfg c;
    trig_cfg_default(&c);
    c.debounce_ms = 0;
    c.rate_per_min = 6000;
    c.poll_ms = poll_ms;
    trigd_init(&c);
    trigd_set_index(NULL);
}

static void test_a_marker_of_the_trigger_schema_fires_at_its_stamp(void **state)
{
    (void)state;
    start(0);
    uint8_t b[512];
    size_t n = put_marker(b, 7, "slow", 0, 5000 * MS);
    n += put_marker(b + n, 8, "other schema", 0, 6000 * MS);
    struct trigd_ring r = { 0 };
    struct trigd_proc tp = marker_proc(7);
    assert_true(trigd_wants(&tp));
    trigd_feed(42, 1, &tp, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_MARKER, TRIG_KEPT), 1);
    const struct trig_state *s = trigd_state();
    assert_int_equal(s->nwin, 1);
    assert_int_equal(s->win[0].trig_ns, 5000 * MS);
    assert_int_equal(s->win[0].pid, 42);
    /* without the schema in the metadata nothing fires */
    assert_false(trigd_wants(&none));
    trigd_feed(42, 1, &none, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_MARKER, TRIG_KEPT) +
                     trigd_count(TRIGD_SRC_MARKER, TRIG_MERGED), 1);
}

static void test_a_typed_trigger_schema_with_more_fields_is_a_marker_too(void **state)
{
    (void)state;
    start(0);
    struct trigd_proc tp = marker_proc(7);
    static const uint8_t t[] = { D9_FT_STR, D9_FT_U64 };
    static const char *const nm[] = { "reason", "latency_ms" };
    meta_schema(&tp, 9, "d9_trigger", 2, t, nm);        /* D9_TRIGGER_EVENT's */
    static const uint8_t tn[] = { D9_FT_U64 };
    meta_schema(&tp, 10, "d9_trigger", 1, tn, nm + 1);  /* no reason first: not a marker */
    assert_int_equal(tp.nbind, 2);
    uint8_t b[512];
    size_t n = put_str_num(b, 9, "slow", 250, 5000 * MS);
    n += put_str_num(b + n, 10, "x", 1, 6000 * MS);
    struct trigd_ring r = { 0 };
    trigd_feed(42, 1, &tp, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_MARKER, TRIG_KEPT), 1);
    assert_int_equal(trigd_state()->win[0].trig_ns, 5000 * MS);
    trigd_proc_free(&tp);
}

/* A typed marker: reason, then a STR, a U64, an I64, an F64 and a BOOL. */
static size_t put_typed(uint8_t *b, uint32_t id, const char *str, uint32_t forged_sl, double f,
                        uint64_t ts)
{
    uint32_t sl = (uint32_t)strlen(str);
    uint32_t sw = (4 + sl + 7) & ~7u;
    size_t plen = 8 + sw + 4 * 8, len = sizeof(struct d9_rec_custom) + plen;
    memset(b, 0, len);
    put_hdr(b, (uint16_t)len, D9_REC_CUSTOM, ts);
    struct d9_rec_custom c;
    memcpy(&c, b, sizeof c);
    c.schema = id;
    c.payload_len = (uint32_t)plen;
    memcpy(b, &c, sizeof c);
    uint8_t *p = b + sizeof c;
    memcpy(p, "\1\0\0\0r", 5);            /* reason "r" */
    p += 8;
    uint32_t put_sl = forged_sl ? forged_sl : sl;
    memcpy(p, &put_sl, 4);
    memcpy(p + 4, str, sl);
    p += sw;
    uint64_t u = 250, i = (uint64_t)-7, bo = 1;
    memcpy(p, &u, 8);
    memcpy(p + 8, &i, 8);
    memcpy(p + 16, &f, 8);
    memcpy(p + 24, &bo, 8);
    return len;
}

struct fields_seen {
    unsigned n;
    char f[4][256];
};

static int fields_of(void *arg, const struct idx_trigger *t)
{
    struct fields_seen *fs = arg;
    if (fs->n < 4)
        snprintf(fs->f[fs->n++], sizeof fs->f[0], "%s", t->fields ? t->fields : "(null)");
    return 0;
}

static void test_a_typed_markers_fields_are_indexed_as_json_in_schema_order(void **state)
{
    struct fx *fx = *state;
    start(0);
    trigd_set_index(fx->x);
    struct trigd_proc tp = marker_proc(7);
    static const uint8_t t[] = { D9_FT_STR, D9_FT_STR, D9_FT_U64, D9_FT_I64, D9_FT_F64,
                                 D9_FT_BOOL };
    static const char *const nm[] = { "reason", "path", "ms", "delta", "ratio", "ok" };
    meta_schema(&tp, 9, "d9_trigger", 6, t, nm);
    uint8_t b[1024];
    size_t n = put_typed(b, 9, "/a\"b\\\n\x7f", 0, 0.5, 5000 * MS);
    n += put_typed(b + n, 9, "/x", 0, INFINITY, 6000 * MS);          /* inf: null */
    n += put_typed(b + n, 9, "/y", 300, 1.0, 7000 * MS);     /* a forged string length */
    n += put_marker(b + n, 7, "plain", 0, 8000 * MS);
    struct trigd_ring r = { 0 };
    trigd_feed(42, 1, &tp, &r, b, n);
    struct fields_seen fs = { 0 };
    assert_int_equal(idx_trig_foreach(fx->x, 0, 0, UINT64_MAX, fields_of, &fs), 0);
    assert_int_equal(fs.n, 4);
    assert_string_equal(fs.f[0], "{\"path\":\"/a\\\"b\\\\\\u000a\\u007f\",\"ms\":250,"
                                 "\"delta\":-7,\"ratio\":0.5,\"ok\":true}");
    assert_string_equal(fs.f[1], "{\"path\":\"/x\",\"ms\":250,\"delta\":-7,\"ratio\":null,"
                                 "\"ok\":true}");
    assert_string_equal(fs.f[2], "{}");         /* the fields stop at the bad string */
    assert_string_equal(fs.f[3], "(null)");     /* a plain marker has none */
    trigd_set_index(NULL);
    trigd_proc_free(&tp);
}

static void test_a_marker_with_a_forged_length_still_fires_with_an_empty_reason(void **state)
{
    (void)state;
    start(0);
    uint8_t b[512];
    size_t n = put_marker(b, 7, "abc", 4000, 5000 * MS);   /* payload past the record */
    struct trigd_ring r = { 0 };
    struct trigd_proc tp = marker_proc(7);
    trigd_feed(42, 1, &tp, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_MARKER, TRIG_KEPT), 1);
}

static void test_a_long_outermost_poll_fires_at_its_end_and_a_short_one_not(void **state)
{
    (void)state;
    start(50);
    uint8_t b[512];
    size_t n = 0;
    n += put_poll(b + n, D9_REC_POLL_START, 1, 1000 * MS);
    n += put_poll(b + n, D9_REC_POLL_END, 1, 1010 * MS);         /* 10 ms */
    n += put_poll(b + n, D9_REC_POLL_START, 1, 2000 * MS);
    n += put_poll(b + n, D9_REC_POLL_START, 2, 2001 * MS);       /* nested */
    n += put_poll(b + n, D9_REC_POLL_END, 2, 2002 * MS);
    struct trigd_ring r = { 0 };
    trigd_feed(42, 1, &none, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_POLL, TRIG_KEPT), 0);
    assert_int_equal(r.nopen, 1);
    /* the outer end comes in the next chunk: 200 ms after its start */
    n = put_poll(b, D9_REC_POLL_END, 1, 2200 * MS);
    trigd_feed(42, 1, &none, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_POLL, TRIG_KEPT), 1);
    assert_int_equal(trigd_state()->win[0].trig_ns, 2200 * MS);
    /* a stray end without a start fires nothing */
    trigd_feed(42, 1, &none, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_POLL, TRIG_KEPT) +
                     trigd_count(TRIGD_SRC_POLL, TRIG_MERGED), 1);
}

static void test_of_properly_nested_long_polls_only_the_outermost_fires(void **state)
{
    (void)state;
    start(50);
    uint8_t b[512];
    size_t n = 0;
    n += put_poll(b + n, D9_REC_POLL_START, 1, 1000 * MS);
    n += put_poll(b + n, D9_REC_POLL_START, 2, 1001 * MS);
    n += put_poll(b + n, D9_REC_POLL_END, 2, 1300 * MS);        /* 299 ms, inside 1 */
    n += put_poll(b + n, D9_REC_POLL_END, 1, 1400 * MS);        /* 400 ms */
    struct trigd_ring r = { 0 };
    trigd_feed(42, 1, &none, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_POLL, TRIG_KEPT), 1);
    assert_int_equal(trigd_state()->nwin, 1);
    assert_int_equal(trigd_state()->win[0].trig_ns, 1400 * MS);
    assert_int_equal(r.nopen, 0);
}

static void test_a_long_poll_after_a_poll_whose_end_was_lost_fires(void **state)
{
    (void)state;
    start(50);
    uint8_t b[512];
    size_t n = 0;
    n += put_poll(b + n, D9_REC_POLL_START, 1, 1000 * MS);
    seq++;                                                      /* its end: dropped */
    n += put_poll(b + n, D9_REC_POLL_START, 2, 2000 * MS);
    n += put_poll(b + n, D9_REC_POLL_END, 2, 2200 * MS);        /* 200 ms */
    struct trigd_ring r = { 0 };
    trigd_feed(42, 1, &none, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_POLL, TRIG_KEPT), 1);
    assert_int_equal(trigd_state()->win[0].trig_ns, 2200 * MS);
    /* and every later long poll of the ring still fires */
    n = put_poll(b, D9_REC_POLL_START, 3, 60000 * MS);
    n += put_poll(b + n, D9_REC_POLL_END, 3, 60100 * MS);
    trigd_feed(42, 1, &none, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_POLL, TRIG_KEPT), 2);
    assert_int_equal(r.nopen, 1);                               /* task 1, not sure */
}

static void test_a_new_start_of_an_open_task_replaces_it(void **state)
{
    (void)state;
    start(50);
    uint8_t b[512];
    size_t n = 0;
    n += put_poll(b + n, D9_REC_POLL_START, 1, 1000 * MS);
    n += put_poll(b + n, D9_REC_POLL_START, 1, 5000 * MS);      /* its end was lost */
    n += put_poll(b + n, D9_REC_POLL_END, 1, 5010 * MS);        /* 10 ms, not 4010 */
    n += put_poll(b + n, D9_REC_POLL_START, 2, 6000 * MS);
    n += put_poll(b + n, D9_REC_POLL_END, 2, 6100 * MS);        /* 100 ms: outermost */
    struct trigd_ring r = { 0 };
    trigd_feed(42, 1, &none, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_POLL, TRIG_KEPT), 1);
    assert_int_equal(trigd_state()->win[0].trig_ns, 6100 * MS);
    assert_int_equal(r.nopen, 0);
}

static void test_counts_are_by_source_and_verdict(void **state)
{
    (void)state;
    struct trig_cfg c;
    trig_cfg_default(&c);
    trigd_init(&c);                 /* debounce 1 s */
    struct trig_win w;
    assert_int_equal(trigd_fire(1, 0, 10000 * MS, TRIGD_SRC_SHELL, "a", &w), TRIG_KEPT);
    assert_int_equal(w.t0_ns, 0);
    assert_int_equal(w.t1_ns, 12000 * MS);
    assert_int_equal(trigd_fire(1, 0, 10001 * MS, TRIGD_SRC_SHELL, "b", &w), TRIG_DEBOUNCED);
    assert_int_equal(w.t1_ns, 0);
    assert_int_equal(trigd_fire(2, 0, 10002 * MS, TRIGD_SRC_CRASH, NULL, &w), TRIG_MERGED);
    assert_int_equal(trigd_count(TRIGD_SRC_SHELL, TRIG_KEPT), 1);
    assert_int_equal(trigd_count(TRIGD_SRC_SHELL, TRIG_DEBOUNCED), 1);
    assert_int_equal(trigd_count(TRIGD_SRC_CRASH, TRIG_MERGED), 1);
    assert_int_equal(trigd_count(99, 0), 0);
    assert_string_equal(trigd_source_name(TRIGD_SRC_POLL), "poll");
    assert_string_equal(trigd_verdict_name(TRIG_RATE_LIMITED), "rate-limited");
}

static void test_a_sampled_sched_wait_over_the_threshold_fires_at_its_stamp(void **state)
{
    (void)state;
    struct trig_cfg c;
    trig_cfg_default(&c);
    c.debounce_ms = 0;
    c.rate_per_min = 6000;
    c.sched_ms = 20;
    trigd_init(&c);
    trigd_set_index(NULL);
    assert_true(trigd_wants(&none));
    uint8_t b[512];
    size_t n = 0;
    n += put_worker(b + n, D9_REC_WORKER_PARK, 5 * MS, 0, 1000 * MS);       /* under */
    n += put_worker(b + n, D9_REC_WORKER_UNPARK, 20 * MS, 0, 1500 * MS);    /* at: not over */
    n += put_worker(b + n, D9_REC_WORKER_UNPARK, 90 * MS, D9_WORKER_UNSAMPLED, 2000 * MS);
    n += put_worker(b + n, D9_REC_WORKER_UNPARK, 30 * MS, 0, 3000 * MS);    /* over */
    struct trigd_ring r = { 0 };
    trigd_feed(42, 1, &none, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_SCHED, TRIG_KEPT), 1);
    assert_int_equal(trigd_state()->nwin, 1);
    assert_int_equal(trigd_state()->win[0].trig_ns, 3000 * MS);
    /* a park over it fires too */
    n = put_worker(b, D9_REC_WORKER_PARK, 25 * MS, 0, 60000 * MS);
    trigd_feed(42, 1, &none, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_SCHED, TRIG_KEPT), 2);
    assert_string_equal(trigd_source_name(TRIGD_SRC_SCHED), "sched");
    /* off (0): nothing looked at, nothing fired */
    start(0);
    assert_false(trigd_wants(&none));
    trigd_feed(42, 1, &none, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_SCHED, TRIG_KEPT), 0);
}

static void test_lost_records_fire_when_on_and_are_debounced(void **state)
{
    (void)state;
    struct trig_cfg c;
    trig_cfg_default(&c);           /* debounce 1 s */
    trigd_init(&c);
    trigd_set_index(NULL);
    assert_int_equal(trigd_lost(42, 1, 0, 5, 1000 * MS), -1);   /* off */
    assert_int_equal(trigd_count(TRIGD_SRC_LOST, TRIG_KEPT), 0);
    c.lost = 1;
    trigd_init(&c);
    assert_int_equal(trigd_lost(42, 1, 0, 0, 1000 * MS), -1);   /* nothing lost */
    assert_int_equal(trigd_lost(42, 1, 3, 5, 2000 * MS), TRIG_KEPT);
    assert_int_equal(trigd_state()->win[0].trig_ns, 2000 * MS);
    assert_int_equal(trigd_lost(42, 1, 3, 7, 2100 * MS), TRIG_DEBOUNCED);
    assert_int_equal(trigd_count(TRIGD_SRC_LOST, TRIG_KEPT), 1);
    assert_int_equal(trigd_count(TRIGD_SRC_LOST, TRIG_DEBOUNCED), 1);
    assert_string_equal(trigd_source_name(TRIGD_SRC_LOST), "lost");
}

/* Debounce 0: each event over the threshold fires. */
static void start_field(const char *rule)
{
    struct trig_cfg c;
    trig_cfg_default(&c);
    c.debounce_ms = 0;
    c.rate_per_min = 6000;
    char err[256];
    assert_int_equal(trig_cfg_set(&c, "trigger-field", rule, err, sizeof err), 0);
    trigd_init(&c);
    trigd_set_index(NULL);
}

static const uint8_t str_u64[] = { D9_FT_STR, D9_FT_U64 };
static const char *const path_ms[] = { "path", "ms" };

static void test_a_field_over_its_threshold_fires_at_the_events_stamp(void **state)
{
    (void)state;
    start_field("req.ms>200");
    struct trigd_proc tp;
    memset(&tp, 0, sizeof tp);
    meta_schema(&tp, 3, "req", 2, str_u64, path_ms);
    meta_schema(&tp, 4, "other", 2, str_u64, path_ms);
    assert_int_equal(tp.nbind, 1);
    assert_true(trigd_wants(&tp));
    uint8_t b[1024];
    size_t n = 0;
    n += put_str_num(b + n, 3, "/a", 150, 1000 * MS);
    n += put_str_num(b + n, 3, "/a-longer-path", 200, 2000 * MS);      /* at: not over */
    n += put_str_num(b + n, 3, "/b", 250, 3000 * MS);                  /* over */
    n += put_str_num(b + n, 4, "/c", 900, 4000 * MS);                  /* another schema */
    n += put_str_num(b + n, 3, "/d/e/f/g/h/i/j", 201, 5000 * MS);      /* over */
    struct trigd_ring r = { 0 };
    trigd_feed(42, 1, &tp, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_FIELD, TRIG_KEPT) +
                     trigd_count(TRIGD_SRC_FIELD, TRIG_MERGED), 2);
    assert_int_equal(trigd_state()->win[0].trig_ns, 3000 * MS);
    assert_string_equal(trigd_source_name(TRIGD_SRC_FIELD), "field");
}

static void test_signed_and_float_fields_compare_by_value(void **state)
{
    (void)state;
    static const uint8_t t[] = { D9_FT_STR, D9_FT_I64 };
    start_field("q.v < -5");
    struct trigd_proc tp;
    memset(&tp, 0, sizeof tp);
    meta_schema(&tp, 3, "q", 2, t, (const char *const[]){ "s", "v" });
    uint8_t b[512];
    size_t n = put_str_num(b, 3, "", (uint64_t)(int64_t)-4, 1000 * MS);
    n += put_str_num(b + n, 3, "", (uint64_t)(int64_t)-6, 2000 * MS);  /* a huge u64 */
    struct trigd_ring r = { 0 };
    trigd_feed(42, 1, &tp, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_FIELD, TRIG_KEPT), 1);
    assert_int_equal(trigd_state()->win[0].trig_ns, 2000 * MS);

    static const uint8_t tf[] = { D9_FT_STR, D9_FT_F64 };
    start_field("q.v>=2.5");
    memset(&tp, 0, sizeof tp);
    meta_schema(&tp, 3, "q", 2, tf, (const char *const[]){ "s", "v" });
    double x = 2.4, y = 2.5;
    uint64_t wx, wy;
    memcpy(&wx, &x, 8);
    memcpy(&wy, &y, 8);
    n = put_str_num(b, 3, "", wx, 1000 * MS);
    n += put_str_num(b + n, 3, "", wy, 2000 * MS);
    trigd_feed(42, 1, &tp, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_FIELD, TRIG_KEPT), 1);
    assert_int_equal(trigd_state()->win[0].trig_ns, 2000 * MS);
}

static void test_a_schema_without_the_field_or_with_a_string_field_fires_nothing(void **state)
{
    (void)state;
    start_field("req.path>1");          /* "path" is a string */
    struct trigd_proc tp;
    memset(&tp, 0, sizeof tp);
    meta_schema(&tp, 3, "req", 2, str_u64, path_ms);
    assert_int_equal(tp.nbind, 0);
    start_field("req.nope>1");
    meta_schema(&tp, 3, "req", 2, str_u64, path_ms);
    assert_int_equal(tp.nbind, 0);
    assert_false(trigd_wants(&tp));
    uint8_t b[512];
    size_t n = put_str_num(b, 3, "/a", 999, 1000 * MS);
    struct trigd_ring r = { 0 };
    trigd_feed(42, 1, &tp, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_FIELD, TRIG_KEPT), 0);
}

static void test_a_field_event_with_a_hostile_string_length_fires_nothing(void **state)
{
    (void)state;
    start_field("req.ms>0");
    struct trigd_proc tp;
    memset(&tp, 0, sizeof tp);
    meta_schema(&tp, 3, "req", 2, str_u64, path_ms);
    uint8_t b[512];
    size_t n = put_str_num(b, 3, "/a", 999, 1000 * MS);
    uint32_t sl = 4000;                 /* the string claims more than the record */
    memcpy(b + sizeof(struct d9_rec_custom), &sl, 4);
    struct trigd_ring r = { 0 };
    trigd_feed(42, 1, &tp, &r, b, n);
    sl = 8;                             /* the string swallows the number */
    memcpy(b + sizeof(struct d9_rec_custom), &sl, 4);
    trigd_feed(42, 1, &tp, &r, b, n);
    assert_int_equal(trigd_count(TRIGD_SRC_FIELD, TRIG_KEPT), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_marker_of_the_trigger_schema_fires_at_its_stamp),
        cmocka_unit_test(test_a_marker_with_a_forged_length_still_fires_with_an_empty_reason),
        cmocka_unit_test(test_a_typed_trigger_schema_with_more_fields_is_a_marker_too),
        cmocka_unit_test(test_a_long_outermost_poll_fires_at_its_end_and_a_short_one_not),
        cmocka_unit_test(test_of_properly_nested_long_polls_only_the_outermost_fires),
        cmocka_unit_test(test_a_long_poll_after_a_poll_whose_end_was_lost_fires),
        cmocka_unit_test(test_a_new_start_of_an_open_task_replaces_it),
        cmocka_unit_test(test_counts_are_by_source_and_verdict),
        cmocka_unit_test(test_a_sampled_sched_wait_over_the_threshold_fires_at_its_stamp),
        cmocka_unit_test(test_lost_records_fire_when_on_and_are_debounced),
        cmocka_unit_test(test_a_field_over_its_threshold_fires_at_the_events_stamp),
        cmocka_unit_test(test_signed_and_float_fields_compare_by_value),
        cmocka_unit_test(test_a_schema_without_the_field_or_with_a_string_field_fires_nothing),
        cmocka_unit_test(test_a_field_event_with_a_hostile_string_length_fires_nothing),
        cmocka_unit_test_setup_teardown(test_a_typed_markers_fields_are_indexed_as_json_in_schema_order,
                                        idx_fx_setup, idx_fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
