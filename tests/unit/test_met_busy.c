/*
 * test_met_busy.c — the collector's busy time and poll duration histogram
 * (collector/daemon/met.c) agree with the query layer and the rollups for
 * the same records: busy_ns equals q_sched's busy_ns and the rollups'
 * busy_ns (the union of the worker's finished polls), the histogram counts
 * exactly the polls q_pair pairs (d9 sql's polls table) and the rollups
 * count finished, with the same durations. Cases: a poll that never ends
 * followed by finished polls, nested polls (an outer end before an inner
 * one too), ends whose start was dropped and starts whose end was dropped,
 * nesting past MET_OPEN_MAX, and records fed one at a time.
 */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "collector/daemon/met.h"
#include "collector/query/q_pair.h"
#include "collector/query/q_sched.h"
#include "collector/store/rollup.h"
#include "collector/store/seg_writer.h"
#include "shm/d9_abi.h"

#define S  1000000000ull
#define RT 1
#define WK 0

struct recs {
    uint8_t b[1 << 16];
    size_t len;
    uint32_t seq;
};

static struct recs R;

static void start(uint64_t ts, uint64_t task)
{
    struct d9_rec_poll_start r = { .h = { .len = sizeof r, .type = D9_REC_POLL_START,
                                          .seq = R.seq++, .ts = S + ts },
                                   .task = task, .loc = 1, .runtime = RT, .worker = WK };
    assert_true(R.len + sizeof r <= sizeof R.b);
    memcpy(R.b + R.len, &r, sizeof r);
    R.len += sizeof r;
}

static void end(uint64_t ts, uint64_t task)
{
    struct d9_rec_poll_end r = { .h = { .len = sizeof r, .type = D9_REC_POLL_END,
                                        .seq = R.seq++, .ts = S + ts },
                                 .task = task, .runtime = RT, .worker = WK };
    assert_true(R.len + sizeof r <= sizeof R.b);
    memcpy(R.b + R.len, &r, sizeof r);
    R.len += sizeof r;
}

/* What each reader makes of R. */
struct facts {
    uint64_t busy_ns;
    uint64_t finished, sum_ns;
    uint64_t hist[MET_HIST_BOUNDS + 1];
};

/* met: fed in one chunk, or one record at a time. */
static void by_met(int one_by_one, struct facts *f)
{
    struct met m;
    met_init(&m);
    struct met_proc *p = met_proc_new(&m, 4242, "worker");
    assert_non_null(p);
    if (one_by_one) {
        for (size_t off = 0; off < R.len;) {
            uint16_t len;
            memcpy(&len, R.b + off, sizeof len);
            met_feed(p, R.b + off, len);
            off += len;
        }
    } else {
        met_feed(p, R.b, R.len);
    }
    assert_int_equal(p->n, 1);
    const struct met_worker *w = &p->w[0];
    memset(f, 0, sizeof *f);
    f->busy_ns = w->busy_ns;
    f->sum_ns = w->poll_sum_ns;
    for (unsigned i = 0; i <= MET_HIST_BOUNDS; i++) {
        f->hist[i] = w->hist[i];
        f->finished += w->hist[i];
    }
    met_free(&m);
}

static const struct q_rec_src src = { .process_id = 1, .pid = 4242, .tid = 100, .ring = 0,
                                      .generation = 1 };

/* q_sched's busy_ns; q_pair's finished polls (d9 sql's polls table). */
static void by_query(struct facts *f)
{
    memset(f, 0, sizeof *f);
    struct q_sched *s;
    struct q_pair *qp;
    assert_int_equal(q_sched_new(&s), 0);
    assert_int_equal(q_pair_new(&qp), 0);
    for (size_t off = 0; off < R.len;) {
        const struct d9_rec_hdr *h = (const struct d9_rec_hdr *)(const void *)(R.b + off);
        assert_int_equal(q_sched_feed(s, &src, h, h->len), 0);
        struct q_poll done;
        int e = q_pair_feed(qp, &src, h, h->len, &done);
        assert_true(e >= 0);
        if (e == 1) {
            uint64_t d = done.end_ns - done.start_ns;
            f->finished++;
            f->sum_ns += d;
            f->hist[met_bucket(d)]++;
        }
        off += h->len;
    }
    size_t n;
    const struct q_sched_worker *w = q_sched_workers(s, &n);
    assert_non_null(w);
    assert_int_equal(n, 1);
    f->busy_ns = w[0].busy_ns;
    q_pair_free(qp);
    q_sched_free(s);
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *fw)
{
    (void)st; (void)flag; (void)fw;
    return remove(p);
}

/* The rollups of a segment holding R (no histogram: its bins are not met's). */
static void by_rollup(struct facts *f)
{
    static const struct seg_proc_info proc = {
        .pid = 4242, .uid = 1000, .start_time = 777, .clock_source = D9_CLOCK_MONOTONIC,
        .host = "testhost", .comm = "worker", .exe = "/usr/bin/worker",
    };
    char dir[] = "/tmp/d9metbusy.XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct seg_writer *sw;
    assert_int_equal(seg_writer_open(&sw, dir, 1, &proc, NULL, 0), 0);
    assert_int_equal(seg_writer_add_data(sw, src.tid, src.ring, src.generation, 0, R.b, R.len), 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(sw, &sum), 0);
    seg_writer_free(sw);
    uint8_t *buf;
    size_t len;
    assert_int_equal(rollup_file(sum.path, &buf, &len), 0);
    struct rollup_view v;
    assert_int_equal(rollup_decode(buf, len, &v, NULL, 0), 0);
    memset(f, 0, sizeof *f);
    size_t off = 0;
    uint32_t i = 0;
    struct rollup_poll p;
    while (rollup_next_poll(&v, &off, &i, &p) == 1) {
        f->finished += p.count - p.unfinished;
        f->sum_ns += p.sum_ns;
    }
    for (uint32_t k = 0; k < v.nworker; k++) {
        struct rollup_worker w;
        assert_int_equal(rollup_worker_at(&v, k, &w), 0);
        f->busy_ns += w.busy_ns;
    }
    free(buf);
    nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

/* Every reader agrees with met (in one chunk and record by record), and
 * met gives busy and the finished polls' count and sum expected. */
static void expect(uint64_t busy, uint64_t finished, uint64_t sum)
{
    struct facts m1, m2, q, r;
    by_met(0, &m1);
    by_met(1, &m2);
    by_query(&q);
    by_rollup(&r);
    assert_int_equal(m1.busy_ns, busy);
    assert_int_equal(m1.finished, finished);
    assert_int_equal(m1.sum_ns, sum);
    assert_memory_equal(&m1, &m2, sizeof m1);
    assert_memory_equal(&m1, &q, sizeof m1);    /* busy, count, sum and buckets */
    assert_int_equal(r.busy_ns, busy);
    assert_int_equal(r.finished, finished);
    assert_int_equal(r.sum_ns, sum);
    R.len = 0;
    R.seq = 0;
}

/* The bug: a poll whose end never comes kept met's nesting depth above
 * zero, so no later poll counted as busy time or in the histogram. */
static void a_never_ending_poll_stops_no_later_poll(void **state)
{
    (void)state;
    start(0, 1);                    /* never ends */
    start(100, 2);
    end(300, 2);                    /* 200 */
    start(1000, 3);
    end(6000, 3);                   /* 5000 */
    start(7000, 4);
    start(7100, 5);
    end(7200, 5);                   /* 100, inside 4 */
    end(9000, 4);                   /* 2000 */
    expect(200 + 5000 + 2000, 4, 200 + 5000 + 100 + 2000);
}

/* A never-ending poll in the middle of the stack, between finished ones. */
static void a_never_ending_poll_inside_a_finished_one(void **state)
{
    (void)state;
    start(0, 1);
    start(1000, 2);                 /* never ends */
    start(2000, 3);
    end(3000, 3);                   /* 1000, inside 1 */
    end(50000, 1);                  /* 50000: covers 3 */
    start(60000, 4);
    end(61000, 4);                  /* 1000, after 1's end: 2 is still open */
    expect(50000 + 1000, 3, 1000 + 50000 + 1000);
}

/* Nested polls count once in busy and each in the histogram; an outer
 * poll that ends before its inner one leaves the inner one open. */
static void nested_polls_count_once_in_busy_each_in_the_histogram(void **state)
{
    (void)state;
    start(0, 1);
    start(1000, 2);
    end(2000, 2);                   /* 1000 */
    start(3000, 3);
    end(5000, 3);                   /* 2000 */
    end(10000, 1);                  /* 10000: the union so far */
    start(20000, 4);
    start(21000, 5);
    end(22000, 4);                  /* 2000: the outer ends first */
    end(25000, 5);                  /* 4000: its time after 22000 is new busy time */
    expect(10000 + 2000 + 3000, 5, 1000 + 2000 + 10000 + 2000 + 4000);
}

/* An end whose start was dropped adds nothing; a start whose end was
 * dropped is replaced by the next start of its task, and the polls that
 * finished inside it still count. */
static void dropped_starts_and_ends(void **state)
{
    (void)state;
    end(100, 7);                    /* no start */
    start(200, 8);
    end(700, 8);                    /* 500 */
    start(1000, 9);                 /* its end was dropped */
    start(2000, 9);
    end(2500, 9);                   /* 500 */
    start(3000, 10);                /* its end was dropped */
    start(3100, 11);
    end(3200, 11);                  /* 100, inside the dropped one */
    start(4000, 10);
    end(4500, 10);                  /* 500 */
    end(4600, 10);                  /* a second end: no start left */
    expect(500 + 500 + 100 + 500, 4, 500 + 500 + 100 + 500);
}

/* Deeper than met's stack: the oldest open poll leaves as if its end were
 * dropped; the others still pair, and busy is still the union. */
static void nesting_past_the_stack_bound(void **state)
{
    (void)state;
    start(0, 1000);                 /* never ends, pushed out of met's stack */
    for (uint64_t k = 0; k < MET_OPEN_MAX; k++)
        start(100 + k * 10, k + 1);
    for (uint64_t k = MET_OPEN_MAX; k > 0; k--)
        end(10000 - k, k);          /* the innermost ends first */
    start(20000, 99);
    end(20100, 99);
    uint64_t sum = 100;
    for (uint64_t k = 1; k <= MET_OPEN_MAX; k++)
        sum += (10000 - k) - (100 + (k - 1) * 10);
    expect((10000 - 1) - 100 + 100, MET_OPEN_MAX + 1, sum);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_never_ending_poll_stops_no_later_poll),
        cmocka_unit_test(a_never_ending_poll_inside_a_finished_one),
        cmocka_unit_test(nested_polls_count_once_in_busy_each_in_the_histogram),
        cmocka_unit_test(dropped_starts_and_ends),
        cmocka_unit_test(nesting_past_the_stack_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
