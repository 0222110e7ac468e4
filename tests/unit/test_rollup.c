/*
 * test_rollup.c — a segment's rollups (collector/store/rollup.c), as a
 * specification: what is counted where, pairing across blocks, nesting,
 * unfinished polls, workers' busy/parked time and waits, quantiles within
 * the stated error, and stored bytes checked before use.
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
#include "collector/store/rollup.h"
#include "collector/store/seg_reader.h"
#include "collector/store/seg_writer.h"

#define S 1000000000ull
#define MS 1000000ull
#define US 1000ull

static int setup(void **state)
{
    return fx_setup(state, "d9rolluptest");
}

static const struct seg_proc_info proc = {
    .pid = 4242, .uid = 1000, .start_time = 777, .clock_source = D9_CLOCK_MONOTONIC,
    .host = "testhost", .comm = "worker", .exe = "/usr/bin/worker",
};

static void start(struct buf *x, uint64_t ts, uint64_t task, uint32_t loc, uint16_t worker)
{
    struct d9_rec_poll_start r = { .h = { .len = sizeof r, .type = D9_REC_POLL_START,
                                          .seq = x->seq++, .ts = ts },
                                   .task = task, .loc = loc, .runtime = 1, .worker = worker };
    memcpy(x->b + x->len, &r, sizeof r);
    x->len += sizeof r;
}

static void end(struct buf *x, uint64_t ts, uint64_t task, uint16_t worker)
{
    struct d9_rec_poll_end r = { .h = { .len = sizeof r, .type = D9_REC_POLL_END,
                                        .seq = x->seq++, .ts = ts },
                                 .task = task, .runtime = 1, .worker = worker };
    memcpy(x->b + x->len, &r, sizeof r);
    x->len += sizeof r;
}

static void park(struct buf *x, uint64_t ts, int is_park, uint32_t flags, uint64_t wait)
{
    struct d9_rec_worker r = { .h = { .len = sizeof r, .seq = x->seq++, .ts = ts,
                                      .type = is_park ? D9_REC_WORKER_PARK : D9_REC_WORKER_UNPARK },
                               .runtime = 1, .worker = 0, .flags = flags, .sched_wait_ns = wait };
    memcpy(x->b + x->len, &r, sizeof r);
    x->len += sizeof r;
}

static void wake(struct buf *x, uint64_t ts, uint64_t wakee)
{
    struct d9_rec_wake r = { .h = { .len = sizeof r, .type = D9_REC_WAKE, .seq = x->seq++,
                                    .ts = ts },
                             .waker = 0, .wakee = wakee, .runtime = 1,
                             .target_worker = D9_WORKER_NONE };
    memcpy(x->b + x->len, &r, sizeof r);
    x->len += sizeof r;
}

static void flush(struct seg_writer *w, struct buf *x, uint32_t ring)
{
    assert_int_equal(seg_writer_add_data(w, 100 + ring, ring, 1, 0, x->b, x->len), 0);
    x->len = 0;
}

/* The known segment of the header comment of the first test. */
static void write_known(const char *dir, struct seg_summary *sum)
{
    struct seg_writer *w;
    static struct buf a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    assert_int_equal(seg_writer_open(&w, dir, 1, &proc, NULL, 0), 0);
    start(&a, 1 * S, 1, 1, 0);
    end(&a, 1 * S + 100 * US, 1, 0);
    start(&a, 1 * S + 500 * MS, 2, 2, 0);
    flush(w, &a, 0);                                    /* this poll ends in the next block */
    start(&b, 1 * S + 200 * MS, 1, 1, 1);
    end(&b, 1 * S + 200 * MS + 200 * US, 1, 1);
    flush(w, &b, 1);
    end(&a, 1 * S + 503 * MS, 2, 0);
    start(&a, 2 * S + 200 * MS, 3, 1, 0);               /* outer */
    start(&a, 2 * S + 300 * MS, 4, 2, 0);               /* nested inside it */
    end(&a, 2 * S + 400 * MS, 4, 0);
    end(&a, 2 * S + 900 * MS, 3, 0);
    start(&a, 2 * S + 950 * MS, 5, 1, 0);               /* never ends: unfinished */
    end(&a, 2 * S + 960 * MS, 9, 0);                    /* no start: adds nothing */
    park(&a, 3 * S, 1, 0, 500);
    park(&a, 3 * S + 400 * MS, 0, 0, 700);
    park(&a, 3 * S + 500 * MS, 1, D9_WORKER_UNSAMPLED, 0);
    flush(w, &a, 0);
    assert_int_equal(seg_writer_seal(w, sum), 0);
    seg_writer_free(w);
}

static int find_poll(const struct rollup_view *v, uint64_t bucket, uint16_t worker, uint32_t loc,
                     struct rollup_poll *out)
{
    size_t off = 0;
    uint32_t i = 0;
    while (rollup_next_poll(v, &off, &i, out) == 1)
        if (out->bucket_ns == bucket && out->worker == worker && out->loc == loc &&
            out->runtime == 1)
            return 1;
    return 0;
}

static int find_worker(const struct rollup_view *v, uint64_t bucket, uint16_t worker,
                       struct rollup_worker *out)
{
    for (uint32_t i = 0; i < v->nworker; i++) {
        assert_int_equal(rollup_worker_at(v, i, out), 0);
        if (out->bucket_ns == bucket && out->worker == worker && out->runtime == 1)
            return 1;
    }
    return 0;
}

static void expect_poll(const struct rollup_view *v, uint64_t bucket, uint16_t worker,
                        uint32_t loc, uint64_t count, uint64_t unfinished, uint64_t sum,
                        uint64_t max)
{
    struct rollup_poll p;
    assert_true(find_poll(v, bucket, worker, loc, &p));
    assert_int_equal(p.count, count);
    assert_int_equal(p.unfinished, unfinished);
    assert_int_equal(p.sum_ns, sum);
    assert_int_equal(p.max_ns, max);
}

/* Polls by the bucket of their start, paired across blocks, nested polls
 * each counted, an unfinished one in count only, an end without a start
 * ignored; workers' busy time from outermost polls, parked time from park
 * to unpark, waits from every sampled park and unpark. */
static void test_a_known_segment_rolls_up_to_its_definitions(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    write_known(fx->dir, &sum);
    uint8_t *buf;
    size_t len;
    assert_int_equal(rollup_file(sum.path, &buf, &len), 0);
    struct rollup_view v;
    char why[128];
    int rc = rollup_decode(buf, len, &v, why, sizeof why);
    if (rc != 0)
        fail_msg("%s", why);
    assert_int_equal(v.npoll, 5);
    expect_poll(&v, 1 * S, 0, 1, 1, 0, 100 * US, 100 * US);
    expect_poll(&v, 1 * S, 0, 2, 1, 0, 3 * MS, 3 * MS);
    expect_poll(&v, 1 * S, 1, 1, 1, 0, 200 * US, 200 * US);
    expect_poll(&v, 2 * S, 0, 1, 2, 1, 700 * MS, 700 * MS);
    expect_poll(&v, 2 * S, 0, 2, 1, 0, 100 * MS, 100 * MS);
    struct rollup_worker w;
    assert_true(find_worker(&v, 1 * S, 0, &w));
    assert_int_equal(w.polls, 2);
    assert_int_equal(w.busy_ns, 100 * US + 3 * MS);
    assert_true(find_worker(&v, 1 * S, 1, &w));
    assert_int_equal(w.busy_ns, 200 * US);
    assert_true(find_worker(&v, 2 * S, 0, &w));
    assert_int_equal(w.polls, 3);
    assert_int_equal(w.busy_ns, 700 * MS);             /* the nested poll is inside it */
    assert_true(find_worker(&v, 3 * S, 0, &w));
    assert_int_equal(w.parks, 2);
    assert_int_equal(w.parked_ns, 400 * MS);           /* the second park never closes */
    assert_int_equal(w.waits, 2);
    assert_int_equal(w.wait_sum_ns, 1200);
    assert_int_equal(w.wait_max_ns, 700);
    assert_int_equal(v.nworker, 4);
    free(buf);
}

/* The same file always gives the same bytes (the collector's seal and every
 * re-index compute the same rollups). */
static void test_rollups_of_a_file_are_deterministic(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    write_known(fx->dir, &sum);
    uint8_t *a, *b;
    size_t la, lb;
    assert_int_equal(rollup_file(sum.path, &a, &la), 0);
    assert_int_equal(rollup_file(sum.path, &b, &lb), 0);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    free(a);
    free(b);
}

/* p50 and p99 are within 1/(2 * ROLLUP_SUB) of the true value. */
static void test_quantiles_are_within_the_stated_error(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    static struct buf a;
    memset(&a, 0, sizeof a);
    assert_int_equal(seg_writer_open(&w, fx->dir, 2, &proc, NULL, 0), 0);
    uint64_t t = 5 * S;
    for (uint64_t i = 1; i <= 1000; i++) {          /* durations 1..1000 us, in one bucket */
        start(&a, t, i, 1, 0);
        end(&a, t + i * US, i, 0);
        t += i * US;
        if (a.len > sizeof a.b - 64)
            flush(w, &a, 0);
    }
    flush(w, &a, 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    seg_writer_free(w);
    uint8_t *buf;
    size_t len;
    assert_int_equal(rollup_file(sum.path, &buf, &len), 0);
    struct rollup_view v;
    assert_int_equal(rollup_decode(buf, len, &v, NULL, 0), 0);
    struct rollup_hist *h = calloc(1, sizeof *h);
    struct rollup_poll p;
    size_t off = 0;
    uint32_t i = 0, n = 0;
    uint64_t max = 0;
    while (rollup_next_poll(&v, &off, &i, &p) == 1) {
        rollup_hist_add(h, &p);
        max = p.max_ns > max ? p.max_ns : max;
        n++;
    }
    assert_int_equal(h->total, 1000);
    assert_int_equal(max, 1000 * US);
    double p50 = (double)rollup_hist_quantile(h, 0.5, max);
    double p99 = (double)rollup_hist_quantile(h, 0.99, max);
    assert_true(p50 >= 500e3 * (1 - 1.0 / 16) && p50 <= 500e3 * (1 + 1.0 / 16));
    assert_true(p99 >= 990e3 * (1 - 1.0 / 16) && p99 <= 990e3 * (1 + 1.0 / 16));
    assert_true(rollup_hist_quantile(h, 1.0, max) <= max);
    free(h);
    free(buf);
}

/* Bins: exact below ROLLUP_SUB, monotonic, each within its power of two. */
static void test_bins_are_monotonic_and_cover_every_value(void **state)
{
    (void)state;
    uint32_t prev = 0;
    for (uint64_t v = 0; v < 100000; v++) {
        uint32_t b = rollup_bin(v);
        assert_true(b >= prev);
        assert_true(b < ROLLUP_BINS);
        prev = b;
    }
    assert_int_equal(rollup_bin(7), 7);
    assert_true(rollup_bin(UINT64_MAX) == ROLLUP_BINS - 1);
}

/* Stored bytes are hostile: a flipped byte anywhere, a truncation at any
 * length, another version: refused with a reason, never a crash. */
static void test_stored_bytes_are_checked_before_use(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    write_known(fx->dir, &sum);
    uint8_t *buf;
    size_t len;
    assert_int_equal(rollup_file(sum.path, &buf, &len), 0);
    struct rollup_view v;
    char why[160];
    for (size_t i = 0; i < len; i++) {
        buf[i] ^= 0x10;
        assert_int_equal(rollup_decode(buf, len, &v, why, sizeof why), -EBADMSG);
        buf[i] ^= 0x10;
    }
    for (size_t n = 0; n < len; n++)
        assert_int_equal(rollup_decode(buf, n, &v, why, sizeof why), -EBADMSG);
    buf[4] = ROLLUP_VERSION + 1;
    assert_int_equal(rollup_decode(buf, len, &v, why, sizeof why), -EBADMSG);
    assert_non_null(strstr(why, "is not supported (this d9 reads version 4)"));
    free(buf);
}

/* q_pair's rule: an end closes the latest open start of its task and only
 * that one (a poll opened inside it stays open for its own end), however
 * deep the nesting; busy time is the union of the finished polls. */
static void test_an_end_closes_only_its_own_poll_as_q_pair_does(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    static struct buf a;
    memset(&a, 0, sizeof a);
    assert_int_equal(seg_writer_open(&w, fx->dir, 3, &proc, NULL, 0), 0);
    start(&a, 1 * S, 1, 1, 0);                          /* outer */
    start(&a, 1 * S + 10 * MS, 2, 2, 0);                /* inner */
    end(&a, 1 * S + 20 * MS, 1, 0);                     /* the outer one ends first */
    end(&a, 1 * S + 30 * MS, 2, 0);                     /* the inner one still has its end */
    for (uint64_t k = 0; k < 40; k++)                   /* 40 deep */
        start(&a, 2 * S + k * MS, 100 + k, 3, 0);
    for (uint64_t k = 40; k-- > 0;)
        end(&a, 2 * S + 100 * MS + (40 - k) * MS, 100 + k, 0);
    flush(w, &a, 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    seg_writer_free(w);
    uint8_t *buf;
    size_t len;
    assert_int_equal(rollup_file(sum.path, &buf, &len), 0);
    struct rollup_view v;
    assert_int_equal(rollup_decode(buf, len, &v, NULL, 0), 0);
    expect_poll(&v, 1 * S, 0, 1, 1, 0, 20 * MS, 20 * MS);
    expect_poll(&v, 1 * S, 0, 2, 1, 0, 20 * MS, 20 * MS);
    struct rollup_poll p;
    assert_true(find_poll(&v, 2 * S, 0, 3, &p));
    assert_int_equal(p.count, 40);
    assert_int_equal(p.unfinished, 0);
    struct rollup_worker wk;
    assert_true(find_worker(&v, 1 * S, 0, &wk));
    assert_int_equal(wk.busy_ns, 30 * MS);              /* the union: 1 s .. 1 s + 30 ms */
    free(buf);
}

/* Feed x's records to ru as one run of thread (ring 0, generation 1) and
 * empty x. */
static void feed_buf(struct rollup *ru, struct buf *x)
{
    assert_int_equal(rollup_feed_records(ru, 0, 1, x->b, x->len), 0);
    x->len = 0;
}

/* The rest of a fed, then the rollups' bytes (malloc'ed, decoded into v)
 * and the open-stack steps it took (*steps). Frees ru. */
static uint8_t *finish_counting_steps(struct rollup *ru, struct buf *a, struct rollup_view *v,
                                      uint64_t *steps)
{
    feed_buf(ru, a);
    *steps = rollup_open_steps(ru);
    uint8_t *buf;
    size_t len;
    assert_int_equal(rollup_finish(ru, &buf, &len), 0);
    rollup_free(ru);
    assert_int_equal(rollup_decode(buf, len, v, NULL, 0), 0);
    return buf;
}

/* A second start of a task open deep in the stack (its end lost) replaces
 * the first, as q_pair does: the old poll leaves from the bottom of
 * thousands open. Each such removal takes a few steps, not one per poll
 * open above it (that made a re-index of a segment with many lost ends
 * quadratic: fsck --repair ran for minutes). The counts are those of the
 * rule: every start counted, every replaced or never-ended one
 * unfinished. */
static void test_a_poll_leaving_deep_in_the_open_stack_takes_a_few_steps(void **state)
{
    (void)state;
    enum { N = 4096 };
    static struct buf a;
    memset(&a, 0, sizeof a);
    struct rollup *ru;
    assert_int_equal(rollup_new(&ru), 0);
    for (uint64_t round = 0; round < 2; round++) {
        for (uint64_t k = 0; k < N; k++) {
            if (a.len + sizeof(struct d9_rec_poll_start) > sizeof a.b)
                feed_buf(ru, &a);
            start(&a, 1 * S + (round * N + k) * US, 1 + k, 1, 0);  /* tasks 1..N, no end */
        }
    }
    /* then each of the open ones ends, newest first (no nesting cost) */
    for (uint64_t k = N; k-- > 0;) {
        if (a.len + sizeof(struct d9_rec_poll_end) > sizeof a.b)
            feed_buf(ru, &a);
        end(&a, 1 * S + (2 * N + (N - k)) * US, 1 + k, 0);
    }
    struct rollup_view v;
    uint64_t steps;
    uint8_t *buf = finish_counting_steps(ru, &a, &v, &steps);
    struct rollup_poll p;
    assert_true(find_poll(&v, 1 * S, 0, 1, &p));
    assert_int_equal(p.count, 2 * N);
    assert_int_equal(p.unfinished, N);                  /* the first start of each task */
    free(buf);
    if (steps > 8 * (uint64_t)N)
        fail_msg("%llu open-stack steps for %d polls leaving (at most %d expected)",
                 (unsigned long long)steps, 2 * N, 8 * N);
}

/* An end of a poll deep in the stack (thousands opened inside it, ends
 * oldest first) clears the pend of every poll above it and starts their
 * busy time there (q_pair's rule), lazily: a few steps per end, not one
 * per poll open above it. Every poll is counted finished, and the busy
 * time is the union: the first start to the last end. */
static void test_an_end_deep_in_the_open_stack_takes_a_few_steps(void **state)
{
    (void)state;
    enum { N = 4096 };
    static struct buf a;
    memset(&a, 0, sizeof a);
    struct rollup *ru;
    assert_int_equal(rollup_new(&ru), 0);
    for (uint64_t k = 0; k < N; k++) {
        if (a.len + sizeof(struct d9_rec_poll_start) > sizeof a.b)
            feed_buf(ru, &a);
        start(&a, 1 * S + k * US, 1 + k, 1, 0);         /* each inside the one before */
    }
    for (uint64_t k = 0; k < N; k++) {
        if (a.len + sizeof(struct d9_rec_poll_end) > sizeof a.b)
            feed_buf(ru, &a);
        end(&a, 1 * S + (N + k) * US, 1 + k, 0);        /* the outermost first */
    }
    struct rollup_view v;
    uint64_t steps;
    uint8_t *buf = finish_counting_steps(ru, &a, &v, &steps);
    struct rollup_poll p;
    assert_true(find_poll(&v, 1 * S, 0, 1, &p));
    assert_int_equal(p.count, N);
    assert_int_equal(p.unfinished, 0);
    struct rollup_worker wk;
    assert_true(find_worker(&v, 1 * S, 0, &wk));
    assert_int_equal(wk.busy_ns, (2 * N - 1) * US);
    free(buf);
    if (steps > 8 * (uint64_t)N)
        fail_msg("%llu open-stack steps for %d ends (at most %d expected)",
                 (unsigned long long)steps, N, 8 * N);
}

/* rollup_only: a poll counts by its start, whole (finished as in the full
 * rollups, its end after the range), a park interval by its park, a wait by
 * its record; records outside still pair. */
static void test_rollup_only_counts_inside_its_ranges(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    static struct buf a;
    memset(&a, 0, sizeof a);
    assert_int_equal(seg_writer_open(&w, fx->dir, 4, &proc, NULL, 0), 0);
    start(&a, 1 * S + 100 * MS, 1, 1, 0);               /* before the range */
    park(&a, 1 * S + 200 * MS, 1, 0, 5);                /* before the range */
    start(&a, 1 * S + 500 * MS, 2, 2, 0);               /* inside, ends after it */
    park(&a, 1 * S + 600 * MS, 0, 0, 7);                /* the unpark inside */
    end(&a, 1 * S + 900 * MS, 1, 0);
    end(&a, 2 * S + 300 * MS, 2, 0);
    flush(w, &a, 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    seg_writer_free(w);
    struct rollup_range r[3] = { { 1 * S + 400 * MS, 1 * S + 700 * MS }, { 5 * S, 6 * S },
                                 { 7 * S, 8 * S } };
    uint8_t *buf;
    size_t len;
    assert_int_equal(rollup_file_only(sum.path, r, 3, NULL, NULL, &buf, &len), -EINVAL);
    struct rollup_range bad = { 2 * S, 1 * S };
    assert_int_equal(rollup_file_only(sum.path, &bad, 1, NULL, NULL, &buf, &len), -EINVAL);
    assert_int_equal(rollup_file_only(sum.path, r, 2, NULL, NULL, &buf, &len), 0);
    struct rollup_view v;
    assert_int_equal(rollup_decode(buf, len, &v, NULL, 0), 0);
    assert_int_equal(v.npoll, 1);
    expect_poll(&v, 1 * S, 0, 2, 1, 0, 800 * MS, 800 * MS);
    struct rollup_worker wk;
    assert_int_equal(v.nworker, 1);
    assert_true(find_worker(&v, 1 * S, 0, &wk));
    assert_int_equal(wk.polls, 1);
    assert_int_equal(wk.parks, 0);
    assert_int_equal(wk.parked_ns, 0);                  /* its park is outside */
    assert_int_equal(wk.waits, 1);
    assert_int_equal(wk.wait_sum_ns, 7);
    /* the union [1.1 s, 2.3 s]: poll 1's time (to 1.9 s) goes with its start,
     * outside; poll 2's after poll 1's end (0.4 s) with its own, inside */
    assert_int_equal(wk.busy_ns, 400 * MS);
    free(buf);
}

/* A segment of every kind the rollups count: on two threads, polls of 40
 * locations with durations spread over many bins (nested ones, some never
 * ended, some ending in a later block), parks and wakes of the polled
 * tasks; blocks of about 100 records. */
static void write_mixed(const char *dir, struct seg_summary *sum)
{
    struct seg_writer *w;
    static struct buf x[2];
    memset(x, 0, sizeof x);
    assert_int_equal(seg_writer_open(&w, dir, 7, &proc, NULL, 0), 0);
    uint64_t rnd = 0x9e3779b97f4a7c15ull, t = 1 * S;
    for (uint32_t i = 0; i < 6000; i++) {
        rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
        struct buf *b = &x[i % 2];
        uint64_t task = 1 + (rnd >> 40) % 500, d = (rnd >> 8) % (1u << (rnd % 24));
        t += 1 + (rnd >> 20) % (2 * MS);
        wake(b, t, task);
        start(b, t + 5, task, 1 + (uint32_t)(rnd >> 20) % 40, (uint16_t)(i % 2));
        if (rnd % 7 == 0)
            start(b, t + 6, task + 1000, 1 + (uint32_t)(rnd >> 30) % 40, (uint16_t)(i % 2));
        if (rnd % 11 != 0)
            end(b, t + 5 + d, task, (uint16_t)(i % 2));
        if (rnd % 13 == 0) {
            park(b, t + 6 + d, 1, 0, rnd % 1000);
            park(b, t + 7 + d, 0, 0, rnd % 999);
        }
        if (b->len > 100 * 40)
            flush(w, b, i % 2);
    }
    for (uint32_t r = 0; r < 2; r++)
        if (x[r].len)
            flush(w, &x[r], r);
    assert_int_equal(seg_writer_seal(w, sum), 0);
    seg_writer_free(w);
}

/* Feed every block of path into a rollup counting inside r (n ranges),
 * polls only or not; its bytes into *out. */
static void feed_file(const char *path, const struct rollup_range *r, unsigned n, int polls_only,
                      uint8_t **out, size_t *len)
{
    struct seg_reader *sr;
    struct rollup *ru;
    assert_int_equal(seg_reader_open(&sr, path, 0), 0);
    assert_int_equal(rollup_new(&ru), 0);
    assert_int_equal(rollup_only(ru, r, n), 0);
    if (polls_only)
        assert_int_equal(rollup_polls_only(ru), 0);
    struct seg_block b;
    int e;
    while ((e = seg_reader_next(sr, &b)) == 1)
        assert_int_equal(rollup_feed_block(ru, &b), 0);
    assert_int_equal(e, 0);
    assert_int_equal(rollup_finish(ru, out, len), 0);
    rollup_free(ru);
    seg_reader_close(sr);
}

/* A location's entries of a decoded rollup merged over their workers, as
 * q_agg adds them per location. */
struct merged {
    uint64_t bucket, count, unfinished, sum, max;
    uint32_t loc;
    uint16_t runtime;
    uint64_t hist[ROLLUP_BINS];
};

static size_t merge_by_location(const struct rollup_view *v, struct merged *m, size_t cap)
{
    size_t n = 0, off = 0;
    uint32_t i = 0;
    struct rollup_poll p;
    while (rollup_next_poll(v, &off, &i, &p) == 1) {
        size_t k = 0;
        while (k < n && !(m[k].bucket == p.bucket_ns && m[k].loc == p.loc &&
                          m[k].runtime == p.runtime))
            k++;
        if (k == n) {
            assert_true(n < cap);
            memset(&m[n], 0, sizeof m[n]);
            m[n].bucket = p.bucket_ns, m[n].loc = p.loc, m[n].runtime = p.runtime;
            n++;
        }
        m[k].count += p.count;
        m[k].unfinished += p.unfinished;
        m[k].sum += p.sum_ns;
        if (p.max_ns > m[k].max)
            m[k].max = p.max_ns;
        for (uint32_t j = 0; j < p.nbins; j++) {
            uint32_t bin, c;
            memcpy(&bin, p.bins + 8 * j, 4);
            memcpy(&c, p.bins + 8 * j + 4, 4);
            m[k].hist[bin] += c;
        }
    }
    return n;
}

/* The polls-only rollup's bytes: one entry per location (worker 0), each
 * the full rollup's entries of that location merged over workers, and
 * nothing else. */
static void expect_polls_only_is_the_merged_full(const uint8_t *full, size_t lf,
                                                 const uint8_t *polls, size_t lp)
{
    struct rollup_view vf, vp;
    assert_int_equal(rollup_decode(full, lf, &vf, NULL, 0), 0);
    assert_int_equal(rollup_decode(polls, lp, &vp, NULL, 0), 0);
    assert_int_equal(vp.nworker, 0);
    assert_int_equal(vp.ncount, 0);
    assert_int_equal(vp.ndelay, 0);
    assert_int_equal(vp.nfield, 0);
    enum { CAP = 4400 };
    struct merged *mf = calloc(CAP, sizeof *mf), *mp = calloc(CAP, sizeof *mp);
    assert_non_null(mf);
    assert_non_null(mp);
    size_t nf = merge_by_location(&vf, mf, CAP), np = merge_by_location(&vp, mp, CAP);
    assert_int_equal(np, vp.npoll);             /* one entry a location */
    assert_int_equal(np, nf);
    size_t off = 0;
    uint32_t i = 0;
    struct rollup_poll p;
    while (rollup_next_poll(&vp, &off, &i, &p) == 1)
        assert_int_equal(p.worker, 0);
    for (size_t k = 0; k < np; k++) {
        size_t j = 0;
        while (j < nf && !(mf[j].bucket == mp[k].bucket && mf[j].loc == mp[k].loc &&
                           mf[j].runtime == mp[k].runtime))
            j++;
        assert_true(j < nf);
        assert_memory_equal(&mp[k], &mf[j], sizeof mp[k]);
    }
    free(mf);
    free(mp);
}

/* The poll entries of a polls-only rollup (the locations' edge scans) are
 * those of the full one merged per location, bins and unfinished polls
 * included, and nothing else is kept. */
static void test_polls_only_keeps_the_poll_entries_byte_for_byte(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    write_mixed(fx->dir, &sum);
    struct rollup_range r[2] = { { 1 * S + 300 * MS, 2 * S + 100 * MS }, { 4 * S, 4 * S + 7 * MS } };
    for (unsigned n = 0; n <= 2; n++) {
        uint8_t *full, *polls;
        size_t lf, lp;
        feed_file(sum.path, r, n, 0, &full, &lf);
        feed_file(sum.path, r, n, 1, &polls, &lp);
        struct rollup_view vf;
        assert_int_equal(rollup_decode(full, lf, &vf, NULL, 0), 0);
        assert_true(vf.npoll > (n ? 10u : 100u));
        assert_true(vf.nworker > 0 && vf.ncount > 0 && vf.ndelay > 0);
        expect_polls_only_is_the_merged_full(full, lf, polls, lp);
        free(full);
        free(polls);
    }
}

/* More poll entries than a polls-only rollup counts in arrays of their own
 * (the rest go to the shared bin table): the bytes are still the full
 * rollups' poll entries. */
static void test_polls_only_with_thousands_of_entries_equals_the_full_rollups(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    static struct buf a;
    memset(&a, 0, sizeof a);
    assert_int_equal(seg_writer_open(&w, fx->dir, 9, &proc, NULL, 0), 0);
    uint64_t t = 1 * S, rnd = 77;
    for (uint32_t i = 0; i < 3 * 2100; i++) {
        rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
        uint64_t d = 1 + (rnd >> 20) % (1u << (rnd % 20));
        start(&a, t, i + 1, 1 + i % 2100, 0);
        if (i + 1 < 3 * 2100)
            end(&a, t + d, i + 1, 0);           /* the last one stays open */
        t += d + 1;
        if (a.len > 1000 * 32)
            flush(w, &a, 0);
    }
    flush(w, &a, 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    seg_writer_free(w);
    uint8_t *full, *polls;
    size_t lf, lp;
    feed_file(sum.path, NULL, 0, 0, &full, &lf);
    feed_file(sum.path, NULL, 0, 1, &polls, &lp);
    struct rollup_view vf;
    assert_int_equal(rollup_decode(full, lf, &vf, NULL, 0), 0);
    assert_true(vf.npoll >= 2100);
    expect_polls_only_is_the_merged_full(full, lf, polls, lp);
    free(full);
    free(polls);
}

/* Every poll entry's bins come out sorted and equal to a histogram kept
 * here of the same polls (the encoder's sort of the bin table). */
static void test_the_encoded_bins_are_each_polls_histogram_in_order(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    static struct buf a;
    memset(&a, 0, sizeof a);
    assert_int_equal(seg_writer_open(&w, fx->dir, 8, &proc, NULL, 0), 0);
    enum { LOCS = 30, BUCKETS = 16 };
    static uint64_t want[BUCKETS][LOCS + 1][ROLLUP_BINS];
    memset(want, 0, sizeof want);
    uint64_t rnd = 12345, t = 1 * S;
    for (uint32_t i = 0; i < 5000; i++) {
        rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
        uint32_t loc = 1 + (uint32_t)(rnd % LOCS);
        uint64_t d = (rnd >> 16) % (1ull << (1 + (rnd >> 8) % 22));    /* 0 .. 4 ms */
        start(&a, t, i + 1, loc, 0);
        end(&a, t + d, i + 1, 0);
        assert_true(t / S < BUCKETS);
        want[t / S][loc][rollup_bin(d)]++;
        t += d + 1 * MS;
        if (a.len > 200 * 32)
            flush(w, &a, 0);
    }
    flush(w, &a, 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    seg_writer_free(w);
    uint8_t *buf;
    size_t len;
    assert_int_equal(rollup_file(sum.path, &buf, &len), 0);
    struct rollup_view v;
    assert_int_equal(rollup_decode(buf, len, &v, NULL, 0), 0);
    assert_true(v.npoll > 2 * LOCS);
    size_t off = 0;
    uint32_t i = 0;
    struct rollup_poll p;
    while (rollup_next_poll(&v, &off, &i, &p) == 1) {
        assert_true(p.loc >= 1 && p.loc <= LOCS);
        const uint64_t *h = want[p.bucket_ns / S][p.loc];
        uint32_t prev = 0;
        uint64_t total = 0;
        for (uint32_t k = 0; k < p.nbins; k++) {
            uint32_t bin, n;
            memcpy(&bin, p.bins + 8 * k, 4);
            memcpy(&n, p.bins + 8 * k + 4, 4);
            assert_true(k == 0 || bin > prev);
            assert_int_equal(n, h[bin]);
            total += n;
            prev = bin;
        }
        assert_int_equal(total, p.count);
    }
    free(buf);
}

/* A corrupt segment has no rollups (the reader's error), not wrong ones. */
static void test_a_corrupt_segment_gives_no_rollups(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    write_known(fx->dir, &sum);
    FILE *f = fopen(sum.path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, SEG_HDR_SIZE + SEG_BLOCK_HDR_SIZE + 8, SEEK_SET), 0);
    fputc(0x5a, f);
    fclose(f);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(rollup_file(sum.path, &buf, &len), -EBADMSG);
    assert_null(buf);
}

struct skips {
    unsigned n;
    uint64_t offset;
};

static void on_skip(void *arg, uint64_t offset, const char *why)
{
    struct skips *k = arg;
    assert_non_null(why);
    k->n++;
    k->offset = offset;
}

/* A DATA block whose payload is damaged after the seal: with a skip, that
 * block alone is left out (the record scans' rule): its thread's polls
 * open across it end there unfinished, as q_pair ends them at a gap (their
 * ends after it close nothing), and the blocks after it count as before.
 * Without a skip the file fails whole. */
static void test_a_damaged_block_is_left_out_alone_with_a_skip(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    static struct buf a;
    memset(&a, 0, sizeof a);
    assert_int_equal(seg_writer_open(&w, fx->dir, 5, &proc, NULL, 0), 0);
    start(&a, 1 * S + 100 * MS, 1, 1, 0);
    start(&a, 1 * S + 200 * MS, 2, 2, 0);
    flush(w, &a, 0);
    uint64_t bad = seg_writer_bytes(w);
    end(&a, 1 * S + 300 * MS, 2, 0);
    start(&a, 1 * S + 400 * MS, 3, 3, 0);
    end(&a, 1 * S + 450 * MS, 3, 0);
    flush(w, &a, 0);
    end(&a, 1 * S + 900 * MS, 1, 0);
    start(&a, 1 * S + 950 * MS, 4, 4, 0);
    end(&a, 1 * S + 960 * MS, 4, 0);
    flush(w, &a, 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    seg_writer_free(w);
    FILE *f = fopen(sum.path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, (long)(bad + SEG_BLOCK_HDR_SIZE + 4), SEEK_SET), 0);
    fputc(0x5a, f);
    fclose(f);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(rollup_file_only(sum.path, NULL, 0, NULL, NULL, &buf, &len), -EBADMSG);
    struct skips k = { 0, 0 };
    assert_int_equal(rollup_file_only(sum.path, NULL, 0, on_skip, &k, &buf, &len), 0);
    assert_int_equal(k.n, 1);
    assert_int_equal(k.offset, bad);
    struct rollup_view v;
    assert_int_equal(rollup_decode(buf, len, &v, NULL, 0), 0);
    struct rollup_poll p;
    expect_poll(&v, 1 * S, 0, 1, 1, 1, 0, 0);          /* its end after the gap: nothing */
    expect_poll(&v, 1 * S, 0, 2, 1, 1, 0, 0);          /* its end in the damaged block */
    assert_false(find_poll(&v, 1 * S, 0, 3, &p));       /* all of it in the damaged block */
    expect_poll(&v, 1 * S, 0, 4, 1, 0, 10 * MS, 10 * MS);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_known_segment_rolls_up_to_its_definitions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollups_of_a_file_are_deterministic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_end_closes_only_its_own_poll_as_q_pair_does, setup, teardown),
        cmocka_unit_test(test_a_poll_leaving_deep_in_the_open_stack_takes_a_few_steps),
        cmocka_unit_test(test_an_end_deep_in_the_open_stack_takes_a_few_steps),
        cmocka_unit_test_setup_teardown(test_rollup_only_counts_inside_its_ranges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quantiles_are_within_the_stated_error, setup, teardown),
        cmocka_unit_test(test_bins_are_monotonic_and_cover_every_value),
        cmocka_unit_test_setup_teardown(test_stored_bytes_are_checked_before_use, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_corrupt_segment_gives_no_rollups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_damaged_block_is_left_out_alone_with_a_skip, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_polls_only_keeps_the_poll_entries_byte_for_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_encoded_bins_are_each_polls_histogram_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_polls_only_with_thousands_of_entries_equals_the_full_rollups, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
