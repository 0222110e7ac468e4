/*
 * test_serve_api.c — the JSON API of d9 serve (serve_api.h) on a store made
 * here with the segment writer and the index: exact answers for processes,
 * a detailed timeline, a bucketed one, events; the LOD contract on a store
 * with many polls (items bounded for every window and width, bucket counts
 * equal to the polls of the window); bad arguments are 400/404.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "collector/cli/cli.h"
#include "collector/serve/serve_api.h"
#include "collector/query/q_store.h"
#include "collector/store/idx.h"
#include "collector/store/seg_writer.h"
#include "shm/meta.h"
#include "tests/unit/wake_pair.h"
#include "tests/unit/meta_entry.h"

struct fixture {
    char dir[64];
    struct q_store *s;
};

static size_t put_poll(uint8_t *out, uint16_t type, uint64_t ts, uint64_t task)
{
    struct d9_rec_poll_start r = { .h = { sizeof r, type, 0, ts }, .task = task, .runtime = 1 };
    struct d9_rec_poll_end e = { .h = { sizeof e, type, 0, ts }, .task = task, .runtime = 1 };
    if (type == D9_REC_POLL_END)
        memcpy(out, &e, sizeof e);
    else
        memcpy(out, &r, sizeof r);
    return sizeof r;
}

static size_t put_worker(uint8_t *out, uint16_t type, uint64_t ts, uint64_t wait)
{
    struct d9_rec_worker r = { .h = { sizeof r, type, 0, ts }, .runtime = 1, .worker = 0,
                               .sched_wait_ns = wait };
    memcpy(out, &r, sizeof r);
    return sizeof r;
}

static size_t put_wake(uint8_t *out, uint64_t ts, uint64_t waker, uint64_t wakee)
{
    struct d9_rec_wake r = { .h = { sizeof r, D9_REC_WAKE, 0, ts }, .waker = waker,
                             .wakee = wakee, .runtime = 1, .target_worker = D9_WORKER_NONE };
    memcpy(out, &r, sizeof r);
    return sizeof r;
}

static size_t put_depth(uint8_t *out, uint64_t ts, uint64_t depth)
{
    struct d9_rec_queue_depth r = { .h = { sizeof r, D9_REC_QUEUE_DEPTH, 0, ts }, .depth = depth,
                                    .runtime = 1, .worker = D9_WORKER_NONE };
    memcpy(out, &r, sizeof r);
    return sizeof r;
}

/* pid 100: thread 101 ("w0", ring 0) polls task 1 [1100,1300] and wakes
 * task 2 at 1350; thread 102 ("w1", ring 1) is parked [1000,1400] (waited
 * 5000 ns for the CPU), polls task 2 [1450,1650]; queue depth 3 at 1200.
 * With many > 0, thread 101 also polls task 9 many times from 3000 on,
 * 10 ns each every 20 ns. */
static void make_store(struct fixture *fx, unsigned many)
{
    snprintf(fx->dir, sizeof fx->dir, "/tmp/d9tsv.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    struct idx *x;
    assert_int_equal(idx_open(&x, fx->dir), 0);
    struct seg_proc_info pi = { .pid = 100, .uid = 0, .start_time = 1000,
                                .clock_source = D9_CLOCK_MONOTONIC, .host = "h", .comm = "prog",
                                .exe = "/bin/prog" };
    uint8_t meta[128];
    size_t ml = meta_entry_runtime(meta, 1, "rt1");
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 1, &pi, meta, ml), 0);
    size_t cap = 4096 + (size_t)many * 64;
    uint8_t *r = malloc(cap);
    assert_non_null(r);
    size_t n = 0;
    n += put_poll(r + n, D9_REC_POLL_START, 1100, 1);
    n += put_depth(r + n, 1200, 3);
    n += put_poll(r + n, D9_REC_POLL_END, 1300, 1);
    n += put_wake(r + n, 1350, 1, 2);
    uint64_t last = 1350;
    for (unsigned i = 0; i < many; i++) {
        n += put_poll(r + n, D9_REC_POLL_START, 3000 + 20ull * i, 9);
        n += put_poll(r + n, D9_REC_POLL_END, 3010 + 20ull * i, 9);
        last = 3010 + 20ull * i;
    }
    /* blocks hold at most 64 KiB of records: split */
    size_t off = 0;
    while (off < n) {
        size_t chunk = 0;
        while (off + chunk < n && chunk < 60000) {
            struct d9_rec_hdr h;
            memcpy(&h, r + off + chunk, sizeof h);
            chunk += h.len;
        }
        assert_int_equal(seg_writer_add_data(w, 101, 0, 1, 0, r + off, chunk), 0);
        off += chunk;
    }
    n = 0;
    n += put_worker(r + n, D9_REC_WORKER_PARK, 1000, 0);
    n += put_worker(r + n, D9_REC_WORKER_UNPARK, 1400, 5000);
    n += put_poll(r + n, D9_REC_POLL_START, 1450, 2);
    n += put_poll(r + n, D9_REC_POLL_END, 1650, 2);
    assert_int_equal(seg_writer_add_data(w, 102, 1, 1, 0, r, n), 0);
    free(r);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    struct idx_process p = { .pid = 100, .start_time = 1000, .comm = "prog", .exe = "/bin/prog",
                             .first_ns = 1000 };
    int64_t row;
    assert_int_equal(idx_process_upsert(x, &p, &row), 0);
    assert_int_equal(idx_thread_upsert(x, row, 101, 0, 1, "w0", 1100, last, 0), 0);
    assert_int_equal(idx_thread_upsert(x, row, 102, 1, 1, "w1", 1000, 1650, 0), 0);
    assert_int_equal(idx_runtime_upsert(x, row, 1, "rt1"), 0);
    assert_int_equal(idx_segment_commit(x, row, &sum, fx->dir), 0);
    seg_writer_free(w);
    idx_close(x);
    char why[256];
    assert_int_equal(q_store_open(&fx->s, fx->dir, why, sizeof why), 0);
}

static int setup_small(void **state)
{
    struct fixture *fx = calloc(1, sizeof *fx);
    make_store(fx, 0);
    *state = fx;
    return 0;
}

static int setup_many(void **state)
{
    struct fixture *fx = calloc(1, sizeof *fx);
    make_store(fx, 20000);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    q_store_close(fx->s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->dir);
    assert_int_equal(system(cmd), 0);
    free(fx);
    return 0;
}

/* Run path with "k=v&k=v" arguments; returns the status, body in *out (free). */
static int run(struct fixture *fx, const char *path, const char *args, char **out)
{
    struct serve_params p;
    serve_api_params_init(&p);
    char why[96], buf[512];
    snprintf(buf, sizeof buf, "%s", args);
    for (char *save = NULL, *kv = strtok_r(buf, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            return 400;
        *eq = 0;
        if (serve_api_param(&p, kv, eq + 1, why, sizeof why) < 0)
            return 400;
    }
    size_t len;
    FILE *f = open_memstream(out, &len);
    assert_non_null(f);
    int st = serve_api(fx->s, path, &p, f);
    fclose(f);
    return st;
}

static void processes_list_threads_and_runtimes(void **state)
{
    char *b;
    assert_int_equal(run(*state, "/api/processes", "", &b), 200);
    const char *want =
        "{\"live\":false,\"processes\":[\n"
        "{\"pid\":100,\"comm\":\"prog\",\"exe\":\"/bin/prog\",\"state\":\"alive\",\"first_ns\":1000,"
        "\"last_ns\":1650,\"records\":8,\"lost\":0,\"segments\":1,\"threads\":["
        "{\"tid\":101,\"name\":\"w0\",\"first_ns\":1100,\"last_ns\":1350},"
        "{\"tid\":102,\"name\":\"w1\",\"first_ns\":1000,\"last_ns\":1650}],"
        "\"runtimes\":[{\"id\":1,\"name\":\"rt1\"}]}\n]}\n";
    /* "live" depends on the boot the test runs in: compare the rest */
    char *body = strstr(b, "\"processes\"");
    assert_non_null(body);
    assert_string_equal(body, strstr(want, "\"processes\""));
    free(b);
}

static void timeline_lists_single_polls_parks_wakes_and_counters(void **state)
{
    char *b;
    assert_int_equal(run(*state, "/api/timeline", "pid=100&from=1000&to=2000&width=10", &b), 200);
    const char *want =
        "{\"pid\":100,\"from\":1000,\"to\":2000,\"width\":10,\"mode\":\"detail\",\"bucket_px\":1,"
        "\"polls\":2,\"parks\":1,\"lanes_dropped\":0,\"skipped_blocks\":0,\"missing_segments\":0,"
        "\"lost\":0,\"broken\":0,\"edge_partial\":false,\"gaps\":[],\n"
        "\"locs\":[\"poll\"],\n"
        "\"lanes\":[\n"
        "{\"tid\":101,\"name\":\"w0\",\"polls\":1,\"waits\":0,\"wait_sum_ns\":0,"
        "\"wait_max_ns\":0,\"samples\":[],\"offcpu\":[],\"sched\":[],"
        "\"sched_hist\":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]},\n"
        "{\"tid\":102,\"name\":\"w1\",\"polls\":1,\"waits\":2,\"wait_sum_ns\":5000,"
        "\"wait_max_ns\":5000,\"samples\":[],\"offcpu\":[],\"sched\":[[4,5000]],"
        "\"sched_hist\":[1,0,0,0,0,0,0,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}],\n"
        "\"items\":[[0,100,200,0,1],[1,0,400,-1,0],[1,450,200,0,2]],\n"
        "\"counters\":[{\"name\":\"queue rt1 global\",\"points\":[[2,3]]}],\n"
        "\"wakes_total\":1,\"wakes\":[[350,0,450,1]],\n"
        "\"top\":[{\"t\":100,\"dur\":200,\"lane\":0,\"loc\":0,\"task\":1},"
        "{\"t\":450,\"dur\":200,\"lane\":1,\"loc\":0,\"task\":2}],\n"
        "\"loopwork_total\":0,\"loopwork\":[],\n"
        "\"events_total\":0,\"events\":[]}\n";
    assert_string_equal(b, want);
    free(b);
}

/* The park (wait 0) and the unpark (wait 5000) are both wait samples, as in
 * d9 sched (q_sched.h); busy time is the time in its two polls (200 each),
 * its span the park at 1000 to the last poll_end at 1650. */
static void workers_answer_the_facts_of_d9_sched(void **state)
{
    char *b;
    assert_int_equal(run(*state, "/api/workers", "pid=100", &b), 200);
    assert_non_null(strstr(b, "{\"runtime\":\"rt1\",\"worker\":0,\"tid\":102,\"polls\":2,"
                              "\"parks\":1,\"unparks\":1,\"waits\":2,\"sched_wait_sum_ns\":5000,"));
    assert_non_null(strstr(b, "\"sched_wait_max_ns\":5000,"));
    assert_non_null(strstr(b, "\"parked_ns\":400,\"span_ns\":650,\"busy_ns\":400,"));
    free(b);
    assert_int_equal(run(*state, "/api/workers", "", &b), 400);
    free(b);
    assert_int_equal(run(*state, "/api/workers", "pid=7", &b), 404);
    free(b);
}

/* w0's poll [1100, 1300] overlaps [1200, 1300]: it comes whole, its
 * start 100 ns before the window, on w0's lane (lane 0: by tid); so does
 * w1's park [1000, 1400] around the whole window. */
static void a_poll_started_before_the_window_comes_whole(void **state)
{
    char *b;
    assert_int_equal(run(*state, "/api/timeline", "pid=100&from=1200&to=1300&width=4", &b), 200);
    assert_non_null(strstr(b, "\"polls\":1,"));
    assert_non_null(strstr(b, "\"parks\":1,"));
    assert_non_null(strstr(b, "\"items\":[[0,-100,200,0,1],[1,-200,400,-1,0]]"));
    free(b);
}

static void events_answer_is_empty_without_custom_events(void **state)
{
    char *b;
    assert_int_equal(run(*state, "/api/events", "pid=100&event=order&field=qty&value=6", &b), 200);
    assert_string_equal(b, "{\"pid\":100,\"from\":1000,\"to\":1650,\"events_total\":0,"
                           "\"events\":[]}\n");
    free(b);
}

static void bad_requests_are_4xx(void **state)
{
    char *b = NULL;
    struct fixture *fx = *state;
    assert_int_equal(run(fx, "/api/timeline", "pid=999&width=10", &b), 404);
    free(b);
    assert_int_equal(run(fx, "/api/timeline", "pid=100&width=10&from=2000&to=1000", &b), 400);
    free(b);
    assert_int_equal(run(fx, "/api/timeline", "pid=100&width=10&from=5&to=5", &b), 400);
    free(b);
    assert_int_equal(run(fx, "/api/timeline", "pid=100", &b), 400);
    free(b);
    assert_int_equal(run(fx, "/api/timeline", "width=10", &b), 400);
    free(b);
    assert_int_equal(run(fx, "/api/nothing", "", &b), 404);
    free(b);
    /* the argument parser: bad values and unknown keys */
    assert_int_equal(run(fx, "/api/timeline", "pid=100&width=4097", &b), 400);
    assert_int_equal(run(fx, "/api/timeline", "pid=100&width=0", &b), 400);
    assert_int_equal(run(fx, "/api/timeline", "pid=-1&width=10", &b), 400);
    assert_int_equal(run(fx, "/api/timeline", "pid=1e3&width=10", &b), 400);
    assert_int_equal(run(fx, "/api/timeline", "pid=100&width=10&from=99999999999999999999", &b),
                     400);
    assert_int_equal(run(fx, "/api/timeline", "pid=100&bogus=1", &b), 400);
    assert_int_equal(run(fx, "/api/timeline", "pid", &b), 400);
    char longv[300];
    memset(longv, 'a', sizeof longv - 1);
    longv[sizeof longv - 1] = 0;
    char args[400];
    snprintf(args, sizeof args, "pid=100&event=%s", longv);
    assert_int_equal(run(fx, "/api/events", args, &b), 400);
}

static long count_of(const char *json, const char *key)
{
    const char *p = strstr(json, key);
    assert_non_null(p);
    return strtol(p + strlen(key), NULL, 10);
}

/* Sum of bucket counts (3rd number of each [px,busy,count,max,loc,carried])
 * and number of items in the answer. */
static void scan_answer(const char *b, long *bucket_polls, long *items)
{
    *bucket_polls = 0;
    *items = 0;
    for (const char *l = strstr(b, "\"buckets\":["); l; l = strstr(l + 1, "\"buckets\":[")) {
        const char *p = l + 11;
        while (*p == '[') {
            long v[6];
            int used = 0;
            if (sscanf(p, "[%ld,%ld,%ld,%ld,%ld,%ld]%n", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                       &used) != 6 || used == 0)
                fail_msg("bad bucket at %.40s", p);
            *bucket_polls += v[2];
            (*items)++;
            p += used;
            if (*p == ',')
                p++;
        }
    }
    const char *it = strstr(b, "\"items\":[");
    for (const char *p = it + 9; *p == '['; ) {
        (*items)++;
        p = strchr(p, ']') + 1;
        if (*p == ',')
            p++;
    }
}

static void lod_answers_stay_bounded_and_count_every_poll(void **state)
{
    struct fixture *fx = *state;
    /* windows from the whole store down to a few polls; widths 1..4096 */
    const uint64_t lo = 1000, hi = 3000 + 20ull * 20000;
    const uint64_t spans[] = { hi - lo, 200000, 50000, 5000, 400, 35 };
    const unsigned widths[] = { 1, 7, 640, 1920, 4096 };
    for (size_t i = 0; i < sizeof spans / sizeof spans[0]; i++) {
        for (size_t j = 0; j < sizeof widths / sizeof widths[0]; j++) {
            uint64_t from = lo + (hi - lo - spans[i]) / 3, to = from + spans[i];
            /* the polls of task 9 that overlap [from, to], whole (plus the
             * two early ones when they overlap it), counted directly */
            long want = 0;
            for (uint64_t k = 0; k < 20000; k++) {
                uint64_t s = 3000 + 20 * k;
                want += s <= to && s + 10 >= from;
            }
            if (1100 <= to && 1300 >= from)
                want++;
            if (1450 <= to && 1650 >= from)
                want++;
            char args[128], *b;
            snprintf(args, sizeof args, "pid=100&from=%llu&to=%llu&width=%u",
                     (unsigned long long)from, (unsigned long long)to, widths[j]);
            assert_int_equal(run(fx, "/api/timeline", args, &b), 200);
            long polls = count_of(b, "\"polls\":"), bucket_polls, items;
            scan_answer(b, &bucket_polls, &items);
            if (polls != want)
                fail_msg("%s: polls %ld, want %ld", args, polls, want);
            if (items > (long)SERVE_API_MAX_ITEMS)
                fail_msg("%s: %ld items", args, items);
            if (strstr(b, "\"mode\":\"buckets\"") && bucket_polls != want)
                fail_msg("%s: buckets count %ld polls, want %ld", args, bucket_polls, want);
            free(b);
        }
    }
}

/* pid 100 (the store's first process, processes.id 1): thread 101 wakes
 * tasks a and b at 1010 and 1020, two tasks that share a hash slot (and a
 * slot of task % 4096); thread 102 polls a [1100,1200], then b [1300,1400]. */
static int setup_wakes(void **state)
{
    struct fixture *fx = calloc(1, sizeof *fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/d9tsv.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    struct idx *x;
    assert_int_equal(idx_open(&x, fx->dir), 0);
    struct idx_process p = { .pid = 100, .start_time = 1000, .comm = "prog", .exe = "/bin/prog",
                             .first_ns = 1000 };
    int64_t row;
    assert_int_equal(idx_process_upsert(x, &p, &row), 0);
    uint64_t a, b;
    wake_pair(row, &a, &b);
    struct seg_proc_info pi = { .pid = 100, .start_time = 1000, .clock_source = D9_CLOCK_MONOTONIC,
                                .host = "h", .comm = "prog", .exe = "/bin/prog" };
    uint8_t meta[128], r[256];
    size_t ml = meta_entry_runtime(meta, 1, "rt1"), n = 0;
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 1, &pi, meta, ml), 0);
    n += put_wake(r + n, 1010, 5, a);
    n += put_wake(r + n, 1020, 5, b);
    assert_int_equal(seg_writer_add_data(w, 101, 0, 1, 0, r, n), 0);
    n = 0;
    n += put_poll(r + n, D9_REC_POLL_START, 1100, a);
    n += put_poll(r + n, D9_REC_POLL_END, 1200, a);
    n += put_poll(r + n, D9_REC_POLL_START, 1300, b);
    n += put_poll(r + n, D9_REC_POLL_END, 1400, b);
    assert_int_equal(seg_writer_add_data(w, 102, 1, 1, 0, r, n), 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    assert_int_equal(idx_segment_commit(x, row, &sum, fx->dir), 0);
    seg_writer_free(w);
    idx_close(x);
    char why[256];
    assert_int_equal(q_store_open(&fx->s, fx->dir, why, sizeof why), 0);
    *state = fx;
    return 0;
}

static void wakes_of_tasks_sharing_a_slot_each_reach_their_poll(void **state)
{
    char *b;
    assert_int_equal(run(*state, "/api/timeline", "pid=100&from=1000&to=2000&width=10", &b), 200);
    assert_non_null(strstr(b, "\"wakes_total\":2,\"wakes\":[[10,0,100,1],[20,0,300,1]]"));
    free(b);
}

int main(void)
{
    const struct CMUnitTest small[] = {
        cmocka_unit_test(processes_list_threads_and_runtimes),
        cmocka_unit_test(timeline_lists_single_polls_parks_wakes_and_counters),
        cmocka_unit_test(workers_answer_the_facts_of_d9_sched),
        cmocka_unit_test(a_poll_started_before_the_window_comes_whole),
        cmocka_unit_test(events_answer_is_empty_without_custom_events),
        cmocka_unit_test(bad_requests_are_4xx),
    };
    const struct CMUnitTest many[] = {
        cmocka_unit_test(lod_answers_stay_bounded_and_count_every_poll),
    };
    const struct CMUnitTest wakes[] = {
        cmocka_unit_test(wakes_of_tasks_sharing_a_slot_each_reach_their_poll),
    };
    int f = cmocka_run_group_tests_name("serve_small", small, setup_small, teardown);
    f += cmocka_run_group_tests_name("serve_wakes", wakes, setup_wakes, teardown);
    f += cmocka_run_group_tests_name("serve_lod", many, setup_many, teardown);
    return f;
}
