/*
 * test_rollup_v4.c — what rollups version 4 add (collector/store/rollup.h),
 * as a specification: wake->poll delays paired by q_wake.h's rule in time
 * order across threads whose blocks overlap in file order, custom events'
 * numeric fields per schema, field and second (u64, i64, f64, bool; str
 * fields and unknown schemas add nothing; a short payload counts the
 * fields before its end), a worker's CPU (first and largest sampled
 * cpu_ns per second), a reader edge path (rollup_finish) that pairs wakes
 * as the file computation does, and the new bytes checked before use.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/unit/rollup_fixture.h"
#include "collector/query/q_wake.h"
#include "collector/store/rollup.h"
#include "collector/store/seg_reader.h"
#include "collector/store/seg_writer.h"
#include "shm/meta.h"

#define S 1000000000ull
#define MS 1000000ull

static int setup(void **state)
{
    return fx_setup(state, "d9rollup4test");
}

static const struct seg_proc_info proc = {
    .pid = 4243, .uid = 1000, .start_time = 778, .clock_source = D9_CLOCK_MONOTONIC,
    .host = "testhost", .comm = "worker", .exe = "/usr/bin/worker",
};

static void poll_start(struct buf *x, uint64_t ts, uint64_t task)
{
    struct d9_rec_poll_start r = { .h = { .len = sizeof r, .type = D9_REC_POLL_START, .ts = ts },
                                   .task = task, .loc = 1, .runtime = 1, .worker = 0 };
    put(x, &r, sizeof r);
}

static void wake(struct buf *x, uint64_t ts, uint64_t task, uint16_t runtime)
{
    struct d9_rec_wake r = { .h = { .len = sizeof r, .type = D9_REC_WAKE, .ts = ts },
                             .waker = 0, .wakee = task, .runtime = runtime,
                             .target_worker = D9_WORKER_NONE };
    put(x, &r, sizeof r);
}

static void flush(struct seg_writer *w, struct buf *x, uint32_t ring)
{
    assert_int_equal(seg_writer_add_data(w, 100 + ring, ring, 1, 0, x->b, x->len), 0);
    x->len = 0;
}

static void rollups_of(struct seg_writer *w, uint8_t **buf, size_t *len, struct rollup_view *v)
{
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    seg_writer_free(w);
    assert_int_equal(rollup_file(sum.path, buf, len), 0);
    char why[160] = "";
    if (rollup_decode(*buf, *len, v, why, sizeof why) != 0)
        fail_msg("%s", why);
}

static int find_delay(const struct rollup_view *v, uint64_t bucket, uint16_t runtime,
                      struct rollup_delay *out)
{
    size_t off = 0;
    uint32_t i = 0;
    while (rollup_next_delay(v, &off, &i, out) == 1)
        if (out->bucket_ns == bucket && out->runtime == runtime)
            return 1;
    return 0;
}

/* Ring 0's block (poll starts) is written before ring 1's (wakes), though
 * the wakes come first in time: pairing in file order would pair none. */
static void test_delays_pair_in_time_order_as_q_wake_does(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    static struct buf a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    assert_int_equal(seg_writer_open(&w, fx->dir, 1, &proc, NULL, 0), 0);
    poll_start(&a, 1 * S + 150 * MS, 10);   /* answers the wake at 1.1 s: 50 ms */
    poll_start(&a, 1 * S + 350 * MS, 11);   /* answers the second wake of 11: 50 ms */
    poll_start(&a, 1 * S + 400 * MS, 10);   /* nothing pending: adds nothing */
    poll_start(&a, 2 * S + 100 * MS, 13);   /* before its wake: adds nothing */
    poll_start(&a, 2 * S + 600 * MS, 13);   /* answers 2.5 s: 100 ms */
    poll_start(&a, 2 * S + 700 * MS, 14);   /* answers runtime 2's wake at 1.95 s */
    flush(w, &a, 0);
    wake(&b, 1 * S + 100 * MS, 10, 1);
    wake(&b, 1 * S + 200 * MS, 11, 1);
    wake(&b, 1 * S + 300 * MS, 11, 1);      /* replaces the one at 1.2 s */
    wake(&b, 1 * S + 900 * MS, 12, 1);      /* never polled: adds nothing */
    wake(&b, 1 * S + 950 * MS, 14, 2);
    wake(&b, 2 * S + 500 * MS, 13, 1);
    flush(w, &b, 1);
    uint8_t *buf;
    size_t len;
    struct rollup_view v;
    rollups_of(w, &buf, &len, &v);
    assert_int_equal(v.ndelay, 3);
    struct rollup_delay d;
    assert_true(find_delay(&v, 1 * S, 1, &d));
    assert_int_equal(d.count, 2);
    assert_int_equal(d.sum_ns, 100 * MS);
    assert_int_equal(d.max_ns, 50 * MS);
    uint64_t p50 = rollup_bins_quantile(d.bins, d.nbins, d.count, d.max_ns, 0.5);
    assert_true(p50 >= 50 * MS - 50 * MS / 16 && p50 <= 50 * MS);
    assert_true(find_delay(&v, 1 * S, 2, &d));          /* the wake's second and runtime */
    assert_int_equal(d.count, 1);
    assert_int_equal(d.sum_ns, 750 * MS);
    assert_true(find_delay(&v, 2 * S, 1, &d));
    assert_int_equal(d.count, 1);
    assert_int_equal(d.sum_ns, 100 * MS);
    free(buf);
}

struct tev {                        /* a wake or a poll start of the random sequence */
    uint64_t ts, task;
    uint32_t seq;
    int wake;
};

static int by_time(const void *x, const void *y)
{
    const struct tev *a = x, *b = y;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

#define RAND_EV_MAX 20000u

/* Three threads, nev wakes and poll starts of ntasks tasks at pseudo-random
 * times (ties included), blocks of 16 records, written thread by thread:
 * the delays are q_wake's own over the same events in time order. */
static void random_sequence(void **state, unsigned nev, uint64_t ntasks)
{
    struct fx *fx = *state;
    static struct buf th[3];
    static struct tev ev[RAND_EV_MAX];
    unsigned n = 0;
    uint64_t rng = 0x2545f4914f6cdd1dull, t[3] = { 1 * S, 1 * S, 1 * S };
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 5, &proc, NULL, 0), 0);
    for (unsigned k = 0; k < 3; k++)
        memset(&th[k], 0, sizeof th[k]);
    assert_true(nev <= RAND_EV_MAX);
    for (unsigned i = 0; i < nev; i++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        unsigned k = (unsigned)(rng % 3);
        t[k] += (rng >> 8) % 4 * 100000;               /* 0 .. 0.3 ms: ties happen */
        uint64_t task = 1 + (rng >> 20) % ntasks;
        int is_wake = (rng >> 40) % 2;
        if (is_wake)
            wake(&th[k], t[k], task, 1);
        else
            poll_start(&th[k], t[k], task);
        if (th[k].seq % 16 == 0)
            flush(w, &th[k], k);
        ev[n++] = (struct tev){ t[k], task, 0, is_wake };
    }
    for (unsigned k = 0; k < 3; k++)
        if (th[k].len)
            flush(w, &th[k], k);
    uint8_t *buf;
    size_t len;
    struct rollup_view v;
    rollups_of(w, &buf, &len, &v);
    /* file order of ev: blocks of 16 per thread in the order flushed; for
     * equal times a time-ordered scan keeps file order, so give each event
     * its file position before sorting by time */
    static uint32_t pos_of[RAND_EV_MAX];
    {
        uint32_t filepos = 0;
        /* replay the generator to know each event's thread and its order */
        uint64_t r2 = 0x2545f4914f6cdd1dull;
        static unsigned thr_of[RAND_EV_MAX];
        for (unsigned i = 0; i < n; i++) {
            r2 ^= r2 << 13, r2 ^= r2 >> 7, r2 ^= r2 << 17;
            thr_of[i] = (unsigned)(r2 % 3);
        }
        /* blocks: thread k's events flushed each 16, at the time of its 16th */
        uint32_t pending[3][16], np[3] = { 0, 0, 0 };
        for (unsigned i = 0; i < n; i++) {
            unsigned k = thr_of[i];
            pending[k][np[k]++] = i;
            if (np[k] == 16) {
                for (unsigned j = 0; j < 16; j++)
                    pos_of[pending[k][j]] = filepos++;
                np[k] = 0;
            }
        }
        for (unsigned k = 0; k < 3; k++)
            for (unsigned j = 0; j < np[k]; j++)
                pos_of[pending[k][j]] = filepos++;
    }
    for (unsigned i = 0; i < n; i++)
        ev[i].seq = pos_of[i];
    qsort(ev, n, sizeof ev[0], by_time);
    struct q_wake *qw;
    assert_int_equal(q_wake_new(&qw), 0);
    uint64_t count = 0, sum = 0;
    for (unsigned i = 0; i < n; i++) {
        struct q_wake_pending p = { ev[i].ts, 0 };
        if (ev[i].wake) {
            assert_int_equal(q_wake_put(qw, 1, ev[i].task, &p), 0);
        } else if (q_wake_take(qw, 1, ev[i].task, &p) == 1) {
            count++;
            sum += ev[i].ts - p.ts;
        }
    }
    q_wake_free(qw);
    uint64_t got_n = 0, got_sum = 0;
    size_t off = 0;
    uint32_t i = 0;
    struct rollup_delay d;
    while (rollup_next_delay(&v, &off, &i, &d) == 1) {
        got_n += d.count;
        got_sum += d.sum_ns;
    }
    assert_true(count > 100);
    assert_int_equal(got_n, count);
    assert_int_equal(got_sum, sum);
    free(buf);
}

static void test_delays_equal_q_wake_over_a_random_sequence(void **state)
{
    random_sequence(state, 3000, 40);
}

/* Thousands of tasks pending at once: the pending-wake table grows, wraps
 * and drops taken wakes from the middle of its probe runs. */
static void test_delays_equal_q_wake_with_many_tasks_pending(void **state)
{
    random_sequence(state, RAND_EV_MAX, 3000);
}

/* schema 1 "req" { u64 bytes, str name, i64 delta, f64 ratio, bool ok } */
static size_t meta_schema(uint8_t *m, size_t cap)
{
    static const uint8_t types[] = { D9_FT_U64, D9_FT_STR, D9_FT_I64, D9_FT_F64, D9_FT_BOOL };
    static const char *const names[] = { "bytes", "name", "delta", "ratio", "ok" };
    return fx_schema_entry(m, cap, "req", 5, types, names);
}

/* A "req" event; nfields < 5: the payload ends after that many fields. */
static void req(struct buf *x, uint32_t schema, uint64_t ts, uint64_t bytes, int64_t delta,
                double ratio, uint64_t ok, unsigned nfields)
{
    uint8_t r[128];
    memset(r, 0, sizeof r);
    size_t off = sizeof(struct d9_rec_custom);
    memcpy(r + off, &bytes, 8);
    off += 8;
    uint32_t sl = 3;
    memcpy(r + off, &sl, 4);
    memcpy(r + off + 4, "abc", 3);
    off += 8;                                   /* 4 + 3, padded to 8 */
    if (nfields > 2) {
        memcpy(r + off, &delta, 8);
        off += 8;
    }
    if (nfields > 3) {
        memcpy(r + off, &ratio, 8);
        off += 8;
    }
    if (nfields > 4) {
        memcpy(r + off, &ok, 8);
        off += 8;
    }
    struct d9_rec_custom c = { .h = { .len = (uint16_t)off, .type = D9_REC_CUSTOM, .ts = ts },
                               .schema = schema,
                               .payload_len = (uint32_t)(off - sizeof c), .task = D9_TASK_NONE };
    memcpy(r, &c, sizeof c);
    put(x, r, off);
}

static int find_field(const struct rollup_view *v, uint64_t bucket, uint16_t field,
                      struct rollup_field *out)
{
    size_t off = 0;
    uint32_t i = 0;
    while (rollup_next_field(v, &off, &i, out) == 1)
        if (out->bucket_ns == bucket && out->schema == 1 && out->field == field)
            return 1;
    return 0;
}

static void test_numeric_fields_per_schema_field_and_second(void **state)
{
    struct fx *fx = *state;
    uint8_t meta[512];
    size_t mlen = meta_schema(meta, sizeof meta);
    struct seg_writer *w;
    static struct buf a;
    memset(&a, 0, sizeof a);
    assert_int_equal(seg_writer_open(&w, fx->dir, 2, &proc, meta, mlen), 0);
    for (int k = 0; k < 10; k++)
        req(&a, 1, 1 * S + (uint64_t)k * MS, 100 + (uint64_t)k, k - 5, k * 0.5, (uint64_t)k % 2, 5);
    req(&a, 1, 2 * S, 7, -3, 1e30, 0, 3);       /* ends after delta: no ratio, no ok */
    req(&a, 9, 2 * S + MS, 1000, 0, 0, 0, 5);   /* unknown schema: nothing */
    flush(w, &a, 0);
    uint8_t *buf;
    size_t len;
    struct rollup_view v;
    rollups_of(w, &buf, &len, &v);
    struct rollup_field f;
    assert_true(find_field(&v, 1 * S, 0, &f));
    assert_int_equal(f.type, D9_FT_U64);
    assert_int_equal(f.count, 10);
    assert_int_equal(f.sum.u, 1045);
    assert_int_equal(f.min.u, 100);
    assert_int_equal(f.max.u, 109);
    uint64_t p50 = rollup_bins_quantile(f.bins, f.nbins, f.count, f.max.u, 0.5);
    assert_true(p50 >= 100 && p50 <= 109);
    assert_false(find_field(&v, 1 * S, 1, &f));           /* str: nothing */
    assert_true(find_field(&v, 1 * S, 2, &f));
    assert_int_equal(f.type, D9_FT_I64);
    assert_int_equal(f.sum.i, -5);
    assert_int_equal(f.min.i, -5);
    assert_int_equal(f.max.i, 4);
    assert_true(find_field(&v, 1 * S, 3, &f));
    assert_int_equal(f.type, D9_FT_F64);
    assert_true(f.sum.f == 22.5 && f.min.f == 0.0 && f.max.f == 4.5);
    assert_true(find_field(&v, 1 * S, 4, &f));
    assert_int_equal(f.type, D9_FT_BOOL);
    assert_int_equal(f.sum.u, 5);
    assert_true(find_field(&v, 2 * S, 2, &f));           /* the short payload's fields */
    assert_int_equal(f.count, 1);
    assert_int_equal(f.sum.i, -3);
    assert_false(find_field(&v, 2 * S, 3, &f));
    assert_int_equal(v.nfield, 4 + 2);
    free(buf);
}

static void worker_rec(struct buf *x, uint64_t ts, int is_park, uint32_t flags, uint64_t cpu)
{
    struct d9_rec_worker r = { .h = { .len = sizeof r, .ts = ts,
                                      .type = is_park ? D9_REC_WORKER_PARK : D9_REC_WORKER_UNPARK },
                               .runtime = 1, .worker = 3, .flags = flags, .cpu_ns = cpu,
                               .sched_wait_ns = flags ? 0 : 10 };
    put(x, &r, sizeof r);
}

static void test_cpu_is_the_first_and_largest_sampled_cpu_ns_per_second(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    static struct buf a;
    memset(&a, 0, sizeof a);
    assert_int_equal(seg_writer_open(&w, fx->dir, 3, &proc, NULL, 0), 0);
    worker_rec(&a, 1 * S + 1 * MS, 1, D9_WORKER_UNSAMPLED, 0);  /* carries nothing */
    worker_rec(&a, 1 * S + 2 * MS, 0, 0, 5000);
    worker_rec(&a, 1 * S + 3 * MS, 1, 0, 9000);
    worker_rec(&a, 2 * S + 1 * MS, 0, D9_WORKER_UNSAMPLED, 0);  /* a second without samples */
    worker_rec(&a, 3 * S, 1, 0, 12000);
    flush(w, &a, 0);
    uint8_t *buf;
    size_t len;
    struct rollup_view v;
    rollups_of(w, &buf, &len, &v);
    assert_int_equal(v.nworker, 3);
    struct rollup_worker k;
    assert_int_equal(rollup_worker_at(&v, 0, &k), 0);
    assert_int_equal(k.flags, ROLLUP_WORKER_CPU);
    assert_int_equal(k.cpu_first, 5000);
    assert_int_equal(k.cpu_last, 9000);
    assert_int_equal(rollup_worker_at(&v, 1, &k), 0);
    assert_int_equal(k.flags, 0);
    assert_int_equal(k.cpu_first, 0);
    assert_int_equal(rollup_worker_at(&v, 2, &k), 0);
    assert_int_equal(k.cpu_first, 12000);
    assert_int_equal(k.cpu_last, 12000);
    free(buf);
}

/* Every byte of a rollup with delays, fields and CPU flipped, and every
 * shorter length, is refused; so is a version-3 header. */
static void test_version_4_bytes_are_checked_before_use(void **state)
{
    struct fx *fx = *state;
    uint8_t meta[512];
    size_t mlen = meta_schema(meta, sizeof meta);
    struct seg_writer *w;
    static struct buf a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    assert_int_equal(seg_writer_open(&w, fx->dir, 4, &proc, meta, mlen), 0);
    wake(&a, 1 * S, 5, 1);
    poll_start(&a, 1 * S + MS, 5);
    req(&a, 1, 1 * S + 2 * MS, 1, -1, 0.25, 1, 5);
    worker_rec(&a, 1 * S + 3 * MS, 1, 0, 100);
    flush(w, &a, 0);
    uint8_t *buf;
    size_t len;
    struct rollup_view v;
    rollups_of(w, &buf, &len, &v);
    assert_int_equal(v.ndelay, 1);
    assert_int_equal(v.nfield, 4);
    char why[160];
    for (size_t i = 0; i < len; i++) {
        buf[i] ^= 0x10;
        assert_int_equal(rollup_decode(buf, len, &v, why, sizeof why), -EBADMSG);
        buf[i] ^= 0x10;
    }
    for (size_t n = 0; n < len; n++)
        assert_int_equal(rollup_decode(buf, n, &v, why, sizeof why), -EBADMSG);
    buf[4] = 3;
    assert_int_equal(rollup_decode(buf, len, &v, why, sizeof why), -EBADMSG);
    assert_non_null(strstr(why, "version 3 is not supported"));
    free(buf);
}

/* A reader's edge path (rollup_new, rollup_only, rollup_feed_block,
 * rollup_finish: what q_edge.c uses) pairs wakes as rollup_file_only does
 * over the same records: same delays, same bytes. */
static void test_finish_pairs_wakes_as_the_file_computation(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    static struct buf a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    assert_int_equal(seg_writer_open(&w, fx->dir, 1, &proc, NULL, 0), 0);
    poll_start(&a, 1 * S + 150 * MS, 10);
    poll_start(&a, 1 * S + 350 * MS, 11);
    poll_start(&a, 2 * S + 600 * MS, 13);
    flush(w, &a, 0);
    wake(&b, 1 * S + 100 * MS, 10, 1);
    wake(&b, 1 * S + 300 * MS, 11, 1);
    wake(&b, 2 * S + 500 * MS, 13, 1);
    flush(w, &b, 1);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    seg_writer_free(w);
    const struct rollup_range r = { 1 * S, 2 * S - 1 };
    uint8_t *want, *got;
    size_t wlen, glen;
    assert_int_equal(rollup_file_only(sum.path, &r, 1, NULL, NULL, &want, &wlen), 0);
    struct seg_reader *sr;
    struct rollup *ru;
    assert_int_equal(seg_reader_open(&sr, sum.path, 0), 0);
    assert_int_equal(rollup_new(&ru), 0);
    assert_int_equal(rollup_only(ru, &r, 1), 0);
    struct seg_block blk;
    int e;
    while ((e = seg_reader_next(sr, &blk)) == 1)
        assert_int_equal(rollup_feed_block(ru, &blk), 0);
    assert_int_equal(e, 0);
    assert_int_equal(rollup_finish(ru, &got, &glen), 0);
    rollup_free(ru);
    seg_reader_close(sr);
    struct rollup_view v;
    char why[160] = "";
    if (rollup_decode(got, glen, &v, why, sizeof why) != 0)
        fail_msg("%s", why);
    assert_int_equal(v.ndelay, 1);                      /* the wakes inside the range */
    struct rollup_delay d;
    assert_true(find_delay(&v, 1 * S, 1, &d));
    assert_int_equal(d.count, 2);
    assert_int_equal(d.sum_ns, 100 * MS);
    assert_int_equal(glen, wlen);
    assert_memory_equal(got, want, wlen);
    free(want);
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_delays_pair_in_time_order_as_q_wake_does, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_delays_equal_q_wake_with_many_tasks_pending, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_delays_equal_q_wake_over_a_random_sequence, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_numeric_fields_per_schema_field_and_second, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_cpu_is_the_first_and_largest_sampled_cpu_ns_per_second,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_finish_pairs_wakes_as_the_file_computation, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_version_4_bytes_are_checked_before_use, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
