/*
 * test_met.c — the collector's metrics (collector/daemon/met.c) as a
 * specification: counts and durations by q_sched.h's definitions (nested
 * polls, a dropped poll end, sampled waits), the bucket bounds, the label
 * bounds (worker and process "other"), runtime names, and exited processes
 * dropped after their time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "collector/daemon/met.h"
#include "shm/d9_abi.h"

#define RT 3

struct recs {
    uint8_t buf[64 * 1024];
    size_t n;
};

static void add(struct recs *r, const void *rec, size_t len)
{
    assert_true(r->n + len <= sizeof r->buf);
    memcpy(r->buf + r->n, rec, len);
    r->n += len;
}

static void poll_start(struct recs *r, uint64_t ts, uint16_t wk, uint64_t task)
{
    struct d9_rec_poll_start s = { .h = { .len = sizeof s, .type = D9_REC_POLL_START, .ts = ts },
                                   .task = task, .runtime = RT, .worker = wk };
    add(r, &s, sizeof s);
}

static void poll_end(struct recs *r, uint64_t ts, uint16_t wk, uint64_t task)
{
    struct d9_rec_poll_end e = { .h = { .len = sizeof e, .type = D9_REC_POLL_END, .ts = ts },
                                 .task = task, .runtime = RT, .worker = wk };
    add(r, &e, sizeof e);
}

static void park(struct recs *r, uint16_t type, uint64_t ts, uint16_t wk, int sampled,
                 uint64_t wait)
{
    struct d9_rec_worker k = { .h = { .len = sizeof k, .type = type, .ts = ts }, .runtime = RT,
                               .worker = wk, .flags = sampled ? 0 : D9_WORKER_UNSAMPLED,
                               .sched_wait_ns = sampled ? wait : 0 };
    add(r, &k, sizeof k);
}

static void wake(struct recs *r, uint64_t ts, uint16_t target)
{
    struct d9_rec_wake w = { .h = { .len = sizeof w, .type = D9_REC_WAKE, .ts = ts },
                             .waker = 1, .wakee = 2, .runtime = RT, .target_worker = target };
    add(r, &w, sizeof w);
}

static struct recs R;

static void counts_and_durations_follow_the_sched_definitions(void **state)
{
    (void)state;
    struct met m;
    met_init(&m);
    struct met_proc *p = met_proc_new(&m, 42, "app");
    assert_non_null(p);
    R.n = 0;
    poll_start(&R, 1000, 0, 1);            /* a plain poll: 2000 ns */
    poll_end(&R, 3000, 0, 1);
    poll_start(&R, 10000, 0, 2);           /* outer poll with a nested one: 10000 ns */
    poll_start(&R, 11000, 0, 3);
    poll_end(&R, 12000, 0, 3);
    poll_end(&R, 20000, 0, 2);
    poll_start(&R, 30000, 0, 4);           /* its end was dropped: it adds nothing */
    poll_start(&R, 40000, 0, 4);           /* same task again: a new poll, 1000 ns */
    poll_end(&R, 41000, 0, 4);
    park(&R, D9_REC_WORKER_PARK, 50000, 0, 1, 7);
    park(&R, D9_REC_WORKER_UNPARK, 60000, 0, 1, 5);
    park(&R, D9_REC_WORKER_PARK, 70000, 0, 0, 0);  /* unsampled: no wait sample */
    /* fed in two chunks: pairing state carries across */
    met_feed(p, R.buf, 4 * sizeof(struct d9_rec_poll_start));
    met_feed(p, R.buf + 4 * sizeof(struct d9_rec_poll_start), R.n - 4 * sizeof(struct d9_rec_poll_start));
    assert_int_equal(p->n, 1);
    const struct met_worker *w = &p->w[0];
    assert_int_equal(w->polls, 5);
    assert_int_equal(w->busy_ns, 2000 + 10000 + 1000);
    /* every finished poll is in the histogram, the nested one too */
    assert_int_equal(w->hist[met_bucket(2000)] + w->hist[met_bucket(10000)] +
                     w->hist[met_bucket(1000)], 4);
    assert_int_equal(w->poll_sum_ns, 2000 + 10000 + 1000 + 1000);
    assert_int_equal(w->parks, 2);
    assert_int_equal(w->unparks, 1);
    assert_int_equal(w->parked_ns, 10000);
    assert_int_equal(w->waits, 2);
    assert_int_equal(w->wait_sum_ns, 12);
    met_free(&m);
}

static void buckets_are_powers_of_four_from_1024_ns(void **state)
{
    (void)state;
    assert_int_equal(met_bucket(0), 0);
    assert_int_equal(met_bucket(1024), 0);
    assert_int_equal(met_bucket(1025), 1);
    assert_int_equal(met_bucket(4096), 1);
    assert_int_equal(met_bucket(4097), 2);
    assert_int_equal(met_bucket(1ull << 30), MET_HIST_BOUNDS - 1);
    assert_int_equal(met_bucket((1ull << 30) + 1), MET_HIST_BOUNDS);
    assert_int_equal(met_bucket(UINT64_MAX), MET_HIST_BOUNDS);
}

static void render_names_series_with_units_and_labels(void **state)
{
    (void)state;
    struct met m;
    met_init(&m);
    struct met_proc *p = met_proc_new(&m, 42, "app");
    met_runtime_name(p, RT, "tokio\"rt");
    R.n = 0;
    poll_start(&R, 1000, 1, 9);
    poll_end(&R, 1500000000ull + 1000, 1, 9);
    wake(&R, 5, D9_WORKER_NONE);
    met_feed(p, R.buf, R.n);
    p->lost_full = 7;
    p->lost_too_big = 3;
    struct met_health h = { .records = 3, .passes = 1 };
    assert_int_equal(met_render(&m, &h), 0);
    const char *t = m.text.buf;
    assert_non_null(strstr(t, "# TYPE d9_worker_polls_total counter\n"));
    assert_non_null(strstr(t, "d9_worker_polls_total{pid=\"42\",comm=\"app\","
                              "runtime=\"tokio\\\"rt\",worker=\"1\"} 1\n"));
    assert_non_null(strstr(t, "d9_worker_busy_seconds_total{pid=\"42\",comm=\"app\","
                              "runtime=\"tokio\\\"rt\",worker=\"1\"} 1.5\n"));
    assert_non_null(strstr(t, "d9_worker_poll_duration_seconds_bucket{pid=\"42\",comm=\"app\","
                              "runtime=\"tokio\\\"rt\",worker=\"1\",le=\"1.073741824\"} 0\n"));
    assert_non_null(strstr(t, "d9_worker_poll_duration_seconds_bucket{pid=\"42\",comm=\"app\","
                              "runtime=\"tokio\\\"rt\",worker=\"1\",le=\"+Inf\"} 1\n"));
    assert_non_null(strstr(t, "d9_worker_wakes_total{pid=\"42\",comm=\"app\","
                              "runtime=\"tokio\\\"rt\",worker=\"none\"} 1\n"));
    assert_non_null(strstr(t, "d9_lost_records_total{pid=\"42\",comm=\"app\",cause=\"ring_full\"} 7\n"));
    assert_non_null(strstr(t, "d9_lost_records_total{pid=\"42\",comm=\"app\",cause=\"too_big\"} 3\n"));
    assert_non_null(strstr(t, "d9_collector_records_total 3\n"));
    assert_null(strstr(t, "d9_ship_"));        /* no --ship, no ship lines */
    met_free(&m);
}

static void workers_past_the_bound_share_other_without_durations(void **state)
{
    (void)state;
    struct met m;
    met_init(&m);
    struct met_proc *p = met_proc_new(&m, 7, "many");
    R.n = 0;
    for (uint16_t wk = 0; wk < MET_WORKERS_MAX + 5; wk++) {
        poll_start(&R, 100u + wk, wk, wk);
        poll_end(&R, 200u + wk, wk, wk);
    }
    met_feed(p, R.buf, R.n);
    assert_int_equal(p->n, MET_WORKERS_MAX);
    assert_int_equal(p->other.polls, 5);
    assert_int_equal(p->other.busy_ns, 0);
    struct met_health h = { 0 };
    assert_int_equal(met_render(&m, &h), 0);
    const char *t = m.text.buf;
    assert_non_null(strstr(t, "d9_worker_polls_total{pid=\"7\",comm=\"many\",runtime=\"other\","
                              "worker=\"other\"} 5\n"));
    assert_null(strstr(t, "d9_worker_busy_seconds_total{pid=\"7\",comm=\"many\","
                          "runtime=\"other\""));
    met_free(&m);
}

static void processes_past_the_bound_are_summed_into_other(void **state)
{
    (void)state;
    struct met m;
    met_init(&m);
    R.n = 0;
    poll_start(&R, 1, 0, 1);
    for (uint32_t pid = 1; pid <= MET_PROCS_MAX + 3; pid++) {
        struct met_proc *p = met_proc_new(&m, pid, "p");
        met_feed(p, R.buf, R.n);
    }
    struct met_health h = { 0 };
    assert_int_equal(met_render(&m, &h), 0);
    const char *t = m.text.buf;
    char first[128], last_kept[128], first_over[128];
    snprintf(first, sizeof first, "d9_worker_polls_total{pid=\"1\",");
    snprintf(last_kept, sizeof last_kept, "d9_worker_polls_total{pid=\"%u\",", MET_PROCS_MAX);
    snprintf(first_over, sizeof first_over, "d9_worker_polls_total{pid=\"%u\",", MET_PROCS_MAX + 1);
    assert_non_null(strstr(t, first));          /* the oldest keep their series */
    assert_non_null(strstr(t, last_kept));
    assert_null(strstr(t, first_over));
    assert_non_null(strstr(t, "d9_worker_polls_total{pid=\"other\",comm=\"other\","
                              "runtime=\"other\",worker=\"other\"} 3\n"));
    met_free(&m);
}

static void exited_processes_are_dropped_after_their_time(void **state)
{
    (void)state;
    struct met m;
    met_init(&m);
    struct met_proc *a = met_proc_new(&m, 1, "a");
    met_proc_new(&m, 2, "b");
    met_proc_ended(a, 1000);
    met_prune(&m, 999);                         /* a pass that began before the end */
    assert_non_null(m.procs->next);
    met_prune(&m, 1000 + MET_EXITED_KEEP_NS - 1);
    assert_non_null(m.procs->next);             /* still within its time */
    met_prune(&m, 1000 + MET_EXITED_KEEP_NS);
    assert_int_equal(m.procs->pid, 2);
    assert_null(m.procs->next);
    met_free(&m);
}

static void records_of_a_wrong_length_are_ignored(void **state)
{
    (void)state;
    struct met m;
    met_init(&m);
    struct met_proc *p = met_proc_new(&m, 1, "a");
    struct { struct d9_rec_hdr h; uint64_t pad[4]; } odd = {
        .h = { .len = sizeof odd, .type = D9_REC_POLL_START } };
    R.n = 0;
    add(&R, &odd, sizeof odd);
    met_feed(p, R.buf, R.n);
    met_feed(p, R.buf, 7);                      /* a partial header: nothing */
    assert_int_equal(p->n, 0);
    met_free(&m);
}

static void labels_never_repeat_for_runtimes_or_reused_pids(void **state)
{
    (void)state;
    struct met m;
    met_init(&m);
    struct met_proc *old = met_proc_new(&m, 9, "app");
    R.n = 0;
    poll_start(&R, 1, 0, 1);
    met_feed(old, R.buf, R.n);
    met_proc_ended(old, 5);
    struct met_proc *p = met_proc_new(&m, 9, "app");     /* the same pid again */
    met_runtime_name(p, RT, "pool");
    met_runtime_name(p, RT + 1, "pool");                 /* the same name, another id */
    met_runtime_name(p, RT + 2, "p\xc3\xa9");          /* "pé": 'p__' */
    met_runtime_name(p, RT + 3, "p\xc3\xa8");          /* "pè": also 'p__' */
    assert_string_equal(p->rt[0].name, "pool");
    assert_string_equal(p->rt[1].name, "pool#4");
    assert_string_equal(p->rt[2].name, "p__");
    assert_string_equal(p->rt[3].name, "p__#6");
    struct met_health h = { 0 };
    assert_int_equal(met_render(&m, &h), 0);
    /* only the live process's (no poll: 0 series of workers) */
    assert_null(strstr(m.text.buf, "d9_worker_polls_total{pid=\"9\""));
    const char *first = strstr(m.text.buf, "d9_records_total{pid=\"9\"");
    assert_non_null(first);
    assert_null(strstr(first + 1, "d9_records_total{pid=\"9\""));
    met_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counts_and_durations_follow_the_sched_definitions),
        cmocka_unit_test(buckets_are_powers_of_four_from_1024_ns),
        cmocka_unit_test(render_names_series_with_units_and_labels),
        cmocka_unit_test(workers_past_the_bound_share_other_without_durations),
        cmocka_unit_test(processes_past_the_bound_are_summed_into_other),
        cmocka_unit_test(exited_processes_are_dropped_after_their_time),
        cmocka_unit_test(records_of_a_wrong_length_are_ignored),
        cmocka_unit_test(labels_never_repeat_for_runtimes_or_reused_pids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
