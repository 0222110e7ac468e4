/*
 * test_q_wake.c — q_wake.c: a wake is answered by the wakee's next poll,
 * exactly by (process, task): wakes whose tasks share a hash slot, tasks of
 * two processes, a second wake of a task, a table that grows, random puts
 * and takes against a model (the holes takes leave).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "collector/query/q_wake.h"
#include "tests/unit/wake_pair.h"

static struct q_wake *fresh(void)
{
    struct q_wake *w;
    assert_int_equal(q_wake_new(&w), 0);
    return w;
}

static void put(struct q_wake *w, int64_t pid, uint64_t task, uint64_t ts, uint64_t data)
{
    struct q_wake_pending p = { ts, data };
    assert_int_equal(q_wake_put(w, pid, task, &p), 0);
}

static void a_poll_takes_the_wake_of_its_task_once(void **state)
{
    (void)state;
    struct q_wake *w = fresh();
    struct q_wake_pending p;
    assert_int_equal(q_wake_take(w, 1, 7, &p), 0);      /* empty table */
    put(w, 1, 7, 100, 5);
    assert_int_equal(q_wake_take(w, 1, 8, &p), 0);
    assert_int_equal(q_wake_take(w, 1, 7, &p), 1);
    assert_int_equal(p.ts, 100);
    assert_int_equal(p.data, 5);
    assert_int_equal(q_wake_take(w, 1, 7, &p), 0);      /* the next poll answers nothing */
    assert_int_equal(q_wake_pending_count(w), 0);
    q_wake_free(w);
}

static void a_second_wake_before_the_poll_replaces_the_first(void **state)
{
    (void)state;
    struct q_wake *w = fresh();
    struct q_wake_pending p;
    put(w, 1, 7, 100, 5);
    put(w, 1, 7, 200, 6);
    assert_int_equal(q_wake_pending_count(w), 1);
    assert_int_equal(q_wake_take(w, 1, 7, &p), 1);
    assert_int_equal(p.ts, 200);
    assert_int_equal(p.data, 6);
    q_wake_free(w);
}

static void tasks_sharing_a_slot_answer_their_own_wakes(void **state)
{
    (void)state;
    uint64_t a, b;
    wake_pair(1, &a, &b);
    assert_true(a != b);
    assert_int_equal(store_hash2(a, 1) & 0xffffffffu, store_hash2(b, 1) & 0xffffffffu);
    assert_int_equal(a % 4096u, b % 4096u);
    struct q_wake *w = fresh();
    struct q_wake_pending p;
    put(w, 1, a, 100, 1);
    put(w, 1, b, 110, 2);
    assert_int_equal(q_wake_take(w, 1, a, &p), 1);
    assert_int_equal(p.data, 1);
    assert_int_equal(q_wake_take(w, 1, b, &p), 1);
    assert_int_equal(p.data, 2);
    /* the other order, after the first entry of the chain is taken */
    put(w, 1, a, 120, 3);
    put(w, 1, b, 130, 4);
    assert_int_equal(q_wake_take(w, 1, b, &p), 1);
    assert_int_equal(p.data, 4);
    assert_int_equal(q_wake_take(w, 1, a, &p), 1);
    assert_int_equal(p.data, 3);
    q_wake_free(w);
}

static void the_same_task_in_two_processes_is_two_wakes(void **state)
{
    (void)state;
    struct q_wake *w = fresh();
    struct q_wake_pending p;
    put(w, 1, 7, 100, 1);
    put(w, 2, 7, 100, 2);
    assert_int_equal(q_wake_take(w, 2, 7, &p), 1);
    assert_int_equal(p.data, 2);
    assert_int_equal(q_wake_take(w, 1, 7, &p), 1);
    assert_int_equal(p.data, 1);
    q_wake_free(w);
}

static void every_wake_survives_the_table_growing(void **state)
{
    (void)state;
    struct q_wake *w = fresh();
    struct q_wake_pending p;
    for (uint64_t t = 1; t <= 5000; t++)
        put(w, 1, t * 4096u, t, t);                     /* one 4096-slot bucket, all of them */
    assert_int_equal(q_wake_pending_count(w), 5000);
    for (uint64_t t = 5000; t >= 1; t--) {
        assert_int_equal(q_wake_take(w, 1, t * 4096u, &p), 1);
        assert_int_equal(p.data, t);
    }
    assert_int_equal(q_wake_pending_count(w), 0);
    q_wake_free(w);
}

/* Takes in any order close the holes they leave: random puts and takes on
 * few keys (long probe runs that wrap around the table's end) against a
 * plain array of what is pending. */
static void random_puts_and_takes_match_a_model(void **state)
{
    (void)state;
    enum { KEYS = 48, OPS = 200000 };
    uint64_t model[KEYS] = { 0 };          /* 0 = nothing pending, else ts */
    uint64_t seed = 0x9e3779b97f4a7c15ull, pending = 0;
    struct q_wake *w = fresh();
    struct q_wake_pending p;
    for (uint64_t i = 1; i <= OPS; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        unsigned k = (unsigned)(seed >> 33) % KEYS;
        int64_t pid = 1 + (int64_t)(k & 1u);
        uint64_t task = (uint64_t)k * 4096u;
        if ((seed >> 20) % 3u == 0) {
            put(w, pid, task, i, k);
            pending += model[k] == 0;
            model[k] = i;
        } else {
            int r = q_wake_take(w, pid, task, &p);
            assert_int_equal(r, model[k] != 0);
            if (r) {
                assert_int_equal(p.ts, model[k]);
                assert_int_equal(p.data, k);
                model[k] = 0;
                pending--;
            }
        }
        assert_int_equal(q_wake_pending_count(w), pending);
    }
    q_wake_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_poll_takes_the_wake_of_its_task_once),
        cmocka_unit_test(a_second_wake_before_the_poll_replaces_the_first),
        cmocka_unit_test(tasks_sharing_a_slot_answer_their_own_wakes),
        cmocka_unit_test(the_same_task_in_two_processes_is_two_wakes),
        cmocka_unit_test(every_wake_survives_the_table_growing),
        cmocka_unit_test(random_puts_and_takes_match_a_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
