/*
 * test_serve_edge.c — the kept look-back states of d9 serve (serve_edge.h):
 * a state is found from its time up to its time + reach, never before it
 * nor for another thread, process or store; the latest of several wins;
 * none found means a claim, and a second taker waits for that claim and
 * then finds the state put under it, or leaves when its client has gone;
 * more open polls than kept are not kept; the table replaces the least
 * recently used entry when full.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "collector/serve/serve_edge.h"

static struct serve_edge_key key(uint32_t tid)
{
    return (struct serve_edge_key){ .dir_hash = serve_edge_dir_hash("/store"), .process_id = 1,
                                    .proc_first = 100, .proc_last = 900, .tid = tid };
}

static struct q_poll poll_at(uint64_t start, uint64_t task)
{
    return (struct q_poll){ .process_id = 1, .pid = 7, .tid = 8, .task = task, .loc = 3,
                            .start_ns = start };
}

struct got {
    enum serve_edge_got g;
    uint64_t t;
    size_t n;
    bool partial;
    struct q_poll open[SERVE_EDGE_OPEN_MAX];
};

static struct got take(const struct serve_edge_key *k, uint64_t at, uint64_t reach,
                       bool (*gone)(void))
{
    struct got r;
    memset(&r, 0, sizeof r);
    r.g = serve_edge_take(k, at, reach, &r.t, r.open, &r.n, &r.partial, NULL, gone);
    return r;
}

static void found_within_reach_only(void **state)
{
    (void)state;
    serve_edge_clear();
    struct serve_edge_key k = key(8);
    struct q_poll p = poll_at(150, 42);
    serve_edge_put(&k, 200, &p, 1, true, NULL);
    struct got r = take(&k, 250, 50, NULL);
    assert_int_equal(r.g, SERVE_EDGE_FOUND);
    assert_int_equal(r.t, 200);
    assert_int_equal(r.n, 1);
    assert_true(r.partial);
    assert_int_equal(r.open[0].task, 42);
    assert_int_equal(r.open[0].start_ns, 150);
    /* past the reach, before the state, another thread, process or store: a claim */
    r = take(&k, 251, 50, NULL);
    assert_int_equal(r.g, SERVE_EDGE_CLAIMED);
    serve_edge_release(&k, 251);
    r = take(&k, 199, 50, NULL);
    assert_int_equal(r.g, SERVE_EDGE_CLAIMED);
    serve_edge_release(&k, 199);
    struct serve_edge_key o = key(9);
    r = take(&o, 200, 50, NULL);
    assert_int_equal(r.g, SERVE_EDGE_CLAIMED);
    serve_edge_release(&o, 200);
    o = key(8);
    o.proc_last = 901;              /* the process has new records */
    r = take(&o, 200, 50, NULL);
    assert_int_equal(r.g, SERVE_EDGE_CLAIMED);
    serve_edge_release(&o, 200);
    o = key(8);
    o.dir_hash = serve_edge_dir_hash("/other");
    r = take(&o, 200, 50, NULL);
    assert_int_equal(r.g, SERVE_EDGE_CLAIMED);
    serve_edge_release(&o, 200);
}

static void the_latest_state_wins(void **state)
{
    (void)state;
    serve_edge_clear();
    struct serve_edge_key k = key(8);
    struct q_poll a = poll_at(110, 1), b = poll_at(310, 2);
    serve_edge_put(&k, 200, &a, 1, false, NULL);
    serve_edge_put(&k, 400, &b, 1, false, NULL);
    serve_edge_put(&k, 300, NULL, 0, false, NULL);
    struct got r = take(&k, 450, 1000, NULL);
    assert_int_equal(r.g, SERVE_EDGE_FOUND);
    assert_int_equal(r.t, 400);
    assert_int_equal(r.open[0].task, 2);
    r = take(&k, 350, 1000, NULL);
    assert_int_equal(r.g, SERVE_EDGE_FOUND);
    assert_int_equal(r.t, 300);
    assert_int_equal(r.n, 0);
}

static void too_many_open_polls_are_not_kept(void **state)
{
    (void)state;
    serve_edge_clear();
    struct serve_edge_key k = key(8);
    struct q_poll many[SERVE_EDGE_OPEN_MAX + 1];
    for (size_t i = 0; i < SERVE_EDGE_OPEN_MAX + 1; i++)
        many[i] = poll_at(120 + i, i);
    serve_edge_put(&k, 200, many, SERVE_EDGE_OPEN_MAX + 1, false, NULL);
    struct got r = take(&k, 200, 10, NULL);
    assert_int_equal(r.g, SERVE_EDGE_CLAIMED);
    serve_edge_release(&k, 200);
    serve_edge_put(&k, 200, many, SERVE_EDGE_OPEN_MAX, false, NULL);
    r = take(&k, 200, 10, NULL);
    assert_int_equal(r.g, SERVE_EDGE_FOUND);
    assert_int_equal(r.n, SERVE_EDGE_OPEN_MAX);
    assert_int_equal(r.open[SERVE_EDGE_OPEN_MAX - 1].task, SERVE_EDGE_OPEN_MAX - 1);
}

static void a_full_table_replaces_the_least_recently_used(void **state)
{
    (void)state;
    serve_edge_clear();
    for (uint32_t i = 0; i < SERVE_EDGE_SLOTS; i++) {
        struct serve_edge_key k = key(1000 + i);
        serve_edge_put(&k, 200, NULL, 0, false, NULL);
    }
    struct serve_edge_key first = key(1000), second = key(1001), extra = key(5000);
    assert_int_equal(take(&first, 200, 0, NULL).g, SERVE_EDGE_FOUND);   /* used: stays */
    serve_edge_put(&extra, 200, NULL, 0, false, NULL);
    assert_int_equal(take(&extra, 200, 0, NULL).g, SERVE_EDGE_FOUND);
    assert_int_equal(take(&first, 200, 0, NULL).g, SERVE_EDGE_FOUND);
    assert_int_equal(take(&second, 200, 0, NULL).g, SERVE_EDGE_CLAIMED); /* the oldest: gone */
    serve_edge_release(&second, 200);
}

/* ---- a second taker and a claim in progress ---------------------------------------- */
struct taker {
    struct serve_edge_key k;
    struct got r;
    bool (*gone)(void);
};

static void *taker_main(void *arg)
{
    struct taker *t = arg;
    t->r = take(&t->k, 250, 100, t->gone);
    return NULL;
}

static bool never_gone(void)
{
    return false;
}

static bool always_gone(void)
{
    return true;
}

static void a_second_taker_finds_the_claimed_state(void **state)
{
    (void)state;
    serve_edge_clear();
    struct taker t = { .k = key(8), .gone = never_gone };
    struct got r = take(&t.k, 200, 100, NULL);
    assert_int_equal(r.g, SERVE_EDGE_CLAIMED);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, taker_main, &t), 0);
    /* whether it is already waiting or not yet asking, it must find this */
    struct q_poll p = poll_at(190, 77);
    serve_edge_put(&t.k, 200, &p, 1, false, NULL);
    serve_edge_release(&t.k, 200);
    pthread_join(th, NULL);
    assert_int_equal(t.r.g, SERVE_EDGE_FOUND);
    assert_int_equal(t.r.t, 200);
    assert_int_equal(t.r.open[0].task, 77);
}

static void a_waiting_taker_whose_client_left_leaves(void **state)
{
    (void)state;
    serve_edge_clear();
    struct taker t = { .k = key(8), .gone = always_gone };
    assert_int_equal(take(&t.k, 200, 100, NULL).g, SERVE_EDGE_CLAIMED);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, taker_main, &t), 0);
    pthread_join(th, NULL);             /* the claim is still held: only gone() ends it */
    assert_int_equal(t.r.g, SERVE_EDGE_GONE);
    serve_edge_release(&t.k, 200);
    /* released with nothing put: the next taker claims */
    assert_int_equal(take(&t.k, 250, 100, NULL).g, SERVE_EDGE_CLAIMED);
    serve_edge_release(&t.k, 250);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(found_within_reach_only),
        cmocka_unit_test(the_latest_state_wins),
        cmocka_unit_test(too_many_open_polls_are_not_kept),
        cmocka_unit_test(a_full_table_replaces_the_least_recently_used),
        cmocka_unit_test(a_second_taker_finds_the_claimed_state),
        cmocka_unit_test(a_waiting_taker_whose_client_left_leaves),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
