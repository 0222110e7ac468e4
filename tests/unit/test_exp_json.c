/*
 * test_exp_json.c — exp_json.c: the Chrome trace-event document is well-formed
 * JSON (checked with python3 -m json.tool) and has the documented shape:
 * "X" polls and parks, "i" instants, "C" counters, "M" names, µs times,
 * CPU samples with their stacks, wake flows to the wakee's next poll.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "collector/export/exp_json.h"
#include "collector/query/q_sym.h"

static struct shm_meta_entry loc5 = { .kind = D9_META_LOCATION, .id = 5, .name = "a.c",
                                      .func = "serve", .line = 10 };
static struct shm_meta_entry sch2 = { .kind = D9_META_SCHEMA, .id = 2, .name = "req",
                                      .nfields = 1, .fields = { { D9_FT_U64, "code" } } };
static struct shm_meta_entry sch9 = { .kind = D9_META_SCHEMA, .id = 9, .name = "d9.map",
                                      .nfields = 1, .fields = { { D9_FT_U64, "start" } } };
static const char *rt(const void *c, uint32_t id) { (void)c; return id == 1 ? "web" : NULL; }
static const struct shm_meta_entry *loc(const void *c, uint32_t id)
{
    (void)c;
    return id == 5 ? &loc5 : NULL;
}
static const struct shm_meta_entry *sch(const void *c, uint32_t id)
{
    (void)c;
    return id == 2 ? &sch2 : id == 9 ? &sch9 : NULL;
}
static const struct q_meta_src META = { rt, loc, sch, NULL };
static const struct q_rec_src SRC = { .process_id = 1, .pid = 42, .comm = "srv\"x", .tid = 43,
                                        .ring = 0, .generation = 1, .thread = "w0",
                                        .meta = &META };

struct doc {
    char path[64];
    FILE *f;
    struct exp_json *x;
    struct q_sym *sym;
    char *text;
};

static void doc_begin(struct doc *d)
{
    snprintf(d->path, sizeof d->path, "/tmp/d9te.XXXXXX");
    int fd = mkstemp(d->path);
    assert_true(fd >= 0);
    d->f = fdopen(fd, "w+");
    assert_int_equal(q_sym_new(&d->sym, NULL), 0);
    assert_int_equal(exp_json_begin(&d->x, d->f, d->sym), 0);
}

static void feed(struct doc *d, const void *rec, size_t len)
{
    assert_int_equal(exp_json_record(d->x, &SRC, rec, len), 0);
}

static void doc_end(struct doc *d, uint64_t t_end, struct exp_json_stats *st)
{
    assert_int_equal(exp_json_finish(d->x, NULL, t_end, st), 0);
    fseek(d->f, 0, SEEK_END);
    long n = ftell(d->f);
    rewind(d->f);
    d->text = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(d->text, 1, (size_t)n, d->f), (size_t)n);
    fclose(d->f);
}

static void doc_free(struct doc *d)
{
    unlink(d->path);
    free(d->text);
    q_sym_free(d->sym);
}

static void assert_valid_json(const struct doc *d)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "python3 -m json.tool '%s' >/dev/null", d->path);
    if (system(cmd) != 0)
        fail_msg("not valid JSON:\n%s", d->text);
}

static void assert_contains(const char *hay, const char *needle)
{
    if (!strstr(hay, needle))
        fail_msg("'%s' not found in:\n%s", needle, hay);
}

#define HDR(type, rec, ts) ((struct d9_rec_hdr){ sizeof(rec), (type), 0, (ts) })

static void empty_export_is_a_valid_document(void **state)
{
    (void)state;
    struct doc d;
    doc_begin(&d);
    struct exp_json_stats st;
    doc_end(&d, 0, &st);
    assert_valid_json(&d);
    assert_contains(d.text, "{\"traceEvents\":[");
    assert_int_equal(st.events, 0);
    doc_free(&d);
}

static void poll_pair_becomes_a_complete_event_in_microseconds(void **state)
{
    (void)state;
    struct doc d;
    doc_begin(&d);
    struct d9_rec_poll_start s = { .task = 7, .loc = 5, .runtime = 1, .worker = 2 };
    s.h = HDR(D9_REC_POLL_START, s, 1000001500ull);
    struct d9_rec_poll_end e = { .task = 7, .runtime = 1, .worker = 2 };
    e.h = HDR(D9_REC_POLL_END, e, 1000004750ull);
    feed(&d, &s, sizeof s);
    feed(&d, &e, sizeof e);
    struct exp_json_stats st;
    doc_end(&d, 0, &st);
    assert_valid_json(&d);
    assert_contains(d.text, "{\"name\":\"serve\",\"cat\":\"poll\",\"ph\":\"X\",\"ts\":1000001.500,"
                            "\"pid\":42,\"tid\":43,\"dur\":3.250,\"args\":{\"task\":7,"
                            "\"runtime\":\"web\",\"worker\":2,\"loc\":\"a.c:10 serve\"}}");
    assert_int_equal(st.polls, 1);
    doc_free(&d);
}

static void process_and_thread_are_named_once(void **state)
{
    (void)state;
    struct doc d;
    doc_begin(&d);
    struct d9_rec_wake w = { .waker = 1, .wakee = 2, .runtime = 1, .target_worker = 0 };
    w.h = HDR(D9_REC_WAKE, w, 10);
    feed(&d, &w, sizeof w);
    feed(&d, &w, sizeof w);
    doc_end(&d, 0, NULL);
    assert_valid_json(&d);
    assert_contains(d.text, "{\"name\":\"process_name\",\"ph\":\"M\",\"ts\":0.000,\"pid\":42,"
                            "\"tid\":42,\"args\":{\"name\":\"srv\\\"x\"}}");
    assert_contains(d.text, "\"name\":\"thread_name\",\"ph\":\"M\"");
    assert_contains(d.text, "\"args\":{\"name\":\"w0 (43)\"}");
    const char *first = strstr(d.text, "process_name");
    assert_null(strstr(first + 1, "process_name"));
    doc_free(&d);
}

static void wakes_and_custom_events_are_instants_with_args(void **state)
{
    (void)state;
    struct doc d;
    doc_begin(&d);
    struct d9_rec_wake w = { .waker = 1, .wakee = 2, .runtime = 1, .target_worker = 3 };
    w.h = HDR(D9_REC_WAKE, w, 10);
    feed(&d, &w, sizeof w);
    struct {
        struct d9_rec_custom c;
        uint64_t code;
    } c = { .c = { .schema = 2, .payload_len = 8 }, .code = 404 };
    c.c.h = HDR(D9_REC_CUSTOM, c, 20);
    feed(&d, &c, sizeof c);
    struct exp_json_stats st;
    doc_end(&d, 0, &st);
    assert_valid_json(&d);
    assert_contains(d.text, "{\"name\":\"wake\",\"cat\":\"wake\",\"ph\":\"i\",\"ts\":0.010,"
                            "\"pid\":42,\"tid\":43,\"s\":\"t\",\"args\":{\"waker\":1,\"wakee\":2,"
                            "\"runtime\":\"web\",\"target_worker\":3}}");
    assert_contains(d.text, "{\"name\":\"req\",\"cat\":\"custom\",\"ph\":\"i\",\"ts\":0.020,"
                            "\"pid\":42,\"tid\":43,\"s\":\"t\",\"args\":{\"code\":404}}");
    assert_int_equal(st.instants, 2);
    doc_free(&d);
}

static void queue_depth_is_a_counter_per_queue(void **state)
{
    (void)state;
    struct doc d;
    doc_begin(&d);
    struct d9_rec_queue_depth q = { .depth = 5, .runtime = 1, .worker = D9_WORKER_NONE };
    q.h = HDR(D9_REC_QUEUE_DEPTH, q, 30);
    feed(&d, &q, sizeof q);
    q.worker = 1;
    feed(&d, &q, sizeof q);
    doc_end(&d, 0, NULL);
    assert_valid_json(&d);
    assert_contains(d.text, "{\"name\":\"queue web global\",\"cat\":\"queue\",\"ph\":\"C\"");
    assert_contains(d.text, "{\"name\":\"queue web w1\",\"cat\":\"queue\",\"ph\":\"C\"");
    assert_contains(d.text, "\"args\":{\"depth\":5}}");
    doc_free(&d);
}

static void park_unpark_becomes_a_parked_slice(void **state)
{
    (void)state;
    struct doc d;
    doc_begin(&d);
    struct d9_rec_worker p = { .runtime = 1, .worker = 0 };
    p.h = HDR(D9_REC_WORKER_PARK, p, 2000);
    feed(&d, &p, sizeof p);
    p.h.type = D9_REC_WORKER_UNPARK;
    p.h.ts = 9000;
    feed(&d, &p, sizeof p);
    struct exp_json_stats st;
    doc_end(&d, 0, &st);
    assert_valid_json(&d);
    assert_contains(d.text, "{\"name\":\"parked\",\"cat\":\"park\",\"ph\":\"X\",\"ts\":2.000,"
                            "\"pid\":42,\"tid\":43,\"dur\":7.000");
    assert_int_equal(st.parks, 1);
    doc_free(&d);
}

static void unfinished_poll_is_closed_at_the_end_and_flagged(void **state)
{
    (void)state;
    struct doc d;
    doc_begin(&d);
    struct d9_rec_poll_start s = { .task = 9, .loc = 5, .runtime = 1 };
    s.h = HDR(D9_REC_POLL_START, s, 1000);
    feed(&d, &s, sizeof s);
    struct exp_json_stats st;
    doc_end(&d, 6000, &st);
    assert_valid_json(&d);
    assert_contains(d.text, "\"dur\":5.000");
    assert_contains(d.text, "\"unfinished\":true");
    assert_int_equal(st.unfinished, 1);
    doc_free(&d);
}

static void off_cpu_stacks_and_collector_events_are_left_out(void **state)
{
    (void)state;
    struct doc d;
    doc_begin(&d);
    struct d9_rec_stack k = { .tid = 43, .nframes = 0 };
    k.h = HDR(D9_REC_SCHED_SWITCH, k, 10);
    feed(&d, &k, sizeof k);
    struct {
        struct d9_rec_custom c;
        uint64_t start;
    } m = { .c = { .schema = 9, .payload_len = 8 }, .start = 1 };
    m.c.h = HDR(D9_REC_CUSTOM, m, 20);
    feed(&d, &m, sizeof m);
    struct exp_json_stats st;
    doc_end(&d, 0, &st);
    assert_valid_json(&d);
    assert_int_equal(st.events, 0);
    assert_int_equal(st.skipped, 2);
    doc_free(&d);
}

static void cpu_sample_is_an_instant_on_its_thread_with_the_stack(void **state)
{
    (void)state;
    struct doc d;
    doc_begin(&d);
    /* innermost first, as recorded; the 0 ends the frame-pointer chain */
    struct {
        struct d9_rec_stack k;
        uint64_t ips[3];
    } k = { .k = { .tid = 77, .nframes = 3, .weight = 10101010 },
            .ips = { 0x401000, 0x402000, 0 } };
    k.k.h = HDR(D9_REC_CPU_SAMPLE, k, 5000);
    feed(&d, &k, sizeof k);
    struct exp_json_stats st;
    doc_end(&d, 0, &st);
    assert_valid_json(&d);
    /* no memory maps: frames in no mapping are "[unknown]", as d9 flame names
     * them (q_sym.h); the thread is the sample's, not the block's */
    assert_contains(d.text, "{\"name\":\"[unknown]\",\"cat\":\"cpu\",\"ph\":\"i\",\"ts\":5.000,"
                            "\"pid\":42,\"tid\":77,\"s\":\"t\",\"args\":{\"weight_ns\":10101010,"
                            "\"stack\":[\"[unknown]\",\"[unknown]\"]}}");
    assert_int_equal(st.samples, 1);
    doc_free(&d);
}

static void a_wake_flow_ends_at_the_wakees_next_poll(void **state)
{
    (void)state;
    struct doc d;
    doc_begin(&d);
    struct d9_rec_wake w = { .waker = 1, .wakee = 2, .runtime = 1, .target_worker = 0 };
    w.h = HDR(D9_REC_WAKE, w, 10000);
    feed(&d, &w, sizeof w);
    struct d9_rec_poll_start other = { .task = 3, .runtime = 1 };
    other.h = HDR(D9_REC_POLL_START, other, 20000);
    feed(&d, &other, sizeof other);             /* not the wakee: no flow end */
    struct d9_rec_poll_start s = { .task = 2, .runtime = 1 };
    s.h = HDR(D9_REC_POLL_START, s, 50000);
    feed(&d, &s, sizeof s);
    s.h.ts = 90000;
    feed(&d, &s, sizeof s);                     /* a later poll: the flow has ended */
    struct exp_json_stats st;
    doc_end(&d, 100000, &st);
    assert_valid_json(&d);
    assert_contains(d.text, "{\"name\":\"wake\",\"cat\":\"wake\",\"ph\":\"s\",\"ts\":10.000,"
                            "\"pid\":42,\"tid\":43,\"id\":1}");
    assert_contains(d.text, "{\"name\":\"wake\",\"cat\":\"wake\",\"ph\":\"f\",\"ts\":50.000,"
                            "\"pid\":42,\"tid\":43,\"bp\":\"e\",\"id\":1}");
    const char *fin = strstr(d.text, "\"ph\":\"f\"");
    assert_null(strstr(fin + 1, "\"ph\":\"f\""));
    assert_int_equal(st.flows, 1);
    doc_free(&d);
}

static void many_pending_wakes_each_end_at_their_own_wakee(void **state)
{
    (void)state;
    struct doc d;
    doc_begin(&d);
    enum { N = 500 };
    for (uint64_t t = 1; t <= N; t++) {
        struct d9_rec_wake w = { .waker = 0, .wakee = t * 977, .runtime = 1 };
        w.h = HDR(D9_REC_WAKE, w, t);
        feed(&d, &w, sizeof w);
    }
    for (uint64_t t = N; t >= 1; t--) {        /* polled in the other order */
        struct d9_rec_poll_start s = { .task = t * 977, .runtime = 1 };
        s.h = HDR(D9_REC_POLL_START, s, 1000 + t);
        feed(&d, &s, sizeof s);
        struct d9_rec_poll_end e = { .task = t * 977, .runtime = 1 };
        e.h = HDR(D9_REC_POLL_END, e, 2000 + t);
        feed(&d, &e, sizeof e);
    }
    struct exp_json_stats st;
    doc_end(&d, 0, &st);
    assert_valid_json(&d);
    assert_int_equal(st.flows, N);
    char want[96];
    snprintf(want, sizeof want, "\"ph\":\"f\",\"ts\":%u.%03u,\"pid\":42,\"tid\":43,\"bp\":\"e\","
             "\"id\":%u}", (1000 + 7) / 1000, (1000 + 7) % 1000, 7);
    assert_contains(d.text, want);              /* task 7*977, woken 7th, flow id 7 */
    doc_free(&d);
}

static void hostile_strings_keep_the_document_valid(void **state)
{
    (void)state;
    static struct shm_meta_entry evil = { .kind = D9_META_SCHEMA, .id = 2,
                                          .name = "q\"\\\n\x01\xff", .nfields = 0 };
    sch2 = evil;
    struct doc d;
    doc_begin(&d);
    struct d9_rec_custom c = { .schema = 2, .payload_len = 0 };
    c.h = HDR(D9_REC_CUSTOM, c, 20);
    feed(&d, &c, sizeof c);
    doc_end(&d, 0, NULL);
    assert_valid_json(&d);
    assert_contains(d.text, "\"name\":\"q\\\"\\\\\\n\\u0001\\ufffd\"");
    doc_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty_export_is_a_valid_document),
        cmocka_unit_test(poll_pair_becomes_a_complete_event_in_microseconds),
        cmocka_unit_test(process_and_thread_are_named_once),
        cmocka_unit_test(wakes_and_custom_events_are_instants_with_args),
        cmocka_unit_test(queue_depth_is_a_counter_per_queue),
        cmocka_unit_test(park_unpark_becomes_a_parked_slice),
        cmocka_unit_test(unfinished_poll_is_closed_at_the_end_and_flagged),
        cmocka_unit_test(off_cpu_stacks_and_collector_events_are_left_out),
        cmocka_unit_test(cpu_sample_is_an_instant_on_its_thread_with_the_stack),
        cmocka_unit_test(a_wake_flow_ends_at_the_wakees_next_poll),
        cmocka_unit_test(many_pending_wakes_each_end_at_their_own_wakee),
        cmocka_unit_test(hostile_strings_keep_the_document_valid),
    };
    return cmocka_run_group_tests_name("export", tests, NULL, NULL);
}
