/*
 * test_cbslot.c — the code-address slot table: one slot per key, claimed
 * and classified once however many threads ask at the same time; PASS
 * keys get no slot; a full table says so and never grows; a key being
 * classified is reported busy, not untraced; cbslot_find_wait waits for
 * another thread's classification and gives up (busy) after a bounded
 * number of yields.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include "agent/uv/cbslot.h"

static _Atomic unsigned g_classified;

/* Odd keys are traced (loc = key + 1), even ones passed. */
static uint32_t classify(uintptr_t key, uint32_t *loc)
{
    atomic_fetch_add(&g_classified, 1);
    if (key % 2 == 0)
        return CBSLOT_PASS;
    *loc = (uint32_t)key + 1;
    return CBSLOT_TRACE;
}

static void test_a_key_gets_one_slot_classified_once(void **state)
{
    (void)state;
    struct cbslot t[CBSLOT_N];
    memset(t, 0, sizeof t);
    g_classified = 0;
    int k = cbslot_find(t, 0x1001, classify, NULL);
    assert_true(k >= 0 && k < (int)CBSLOT_N);
    assert_int_equal(cbslot_find(t, 0x1001, classify, NULL), k);
    assert_int_equal(g_classified, 1);
    assert_int_equal(cbslot_key(t, k), 0x1001);
    assert_int_equal(atomic_load(&t[k].loc), 0x1002);
    assert_int_equal(cbslot_key(t, -1), 0);
    assert_int_equal(cbslot_key(t, CBSLOT_N), 0);
}

static void test_passed_and_null_keys_get_no_slot(void **state)
{
    (void)state;
    struct cbslot t[CBSLOT_N];
    memset(t, 0, sizeof t);
    g_classified = 0;
    assert_int_equal(cbslot_find(t, 0, classify, NULL), CBSLOT_NONE);
    assert_int_equal(cbslot_find(t, 0x2000, classify, NULL), CBSLOT_NONE);
    assert_int_equal(cbslot_find(t, 0x2000, classify, NULL), CBSLOT_NONE);
    assert_int_equal(g_classified, 1);          /* remembered as passed */
}

static void test_a_full_table_says_so(void **state)
{
    (void)state;
    struct cbslot t[CBSLOT_N];
    memset(t, 0, sizeof t);
    for (uintptr_t i = 0; i < CBSLOT_N; i++) {
        int full = 0;
        assert_true(cbslot_find(t, 2 * i + 1, classify, &full) >= 0);
        assert_int_equal(full, 0);
    }
    int full = 0;
    assert_int_equal(cbslot_find(t, 0x7777, classify, &full), CBSLOT_NONE);
    assert_int_equal(full, 1);
    full = 0;                                   /* the old ones are still there */
    assert_true(cbslot_find(t, 1, classify, &full) >= 0);
    assert_int_equal(full, 0);
}

static void test_a_key_being_classified_is_busy(void **state)
{
    (void)state;
    struct cbslot t[CBSLOT_N];
    memset(t, 0, sizeof t);
    int k = cbslot_find(t, 0x3001, classify, NULL);
    atomic_store(&t[k].state, CBSLOT_CLAIMING);     /* as while another thread classifies */
    assert_int_equal(cbslot_find(t, 0x3001, classify, NULL), CBSLOT_BUSY);
    atomic_store(&t[k].state, CBSLOT_TRACE);
    assert_int_equal(cbslot_find(t, 0x3001, classify, NULL), k);
}

struct finisher {
    struct cbslot *s;
    _Atomic int go;
};

static void *finish_claim(void *arg)
{
    struct finisher *f = arg;
    while (!atomic_load(&f->go))
        ;
    atomic_store(&f->s->loc, 0x4002);
    atomic_store(&f->s->state, CBSLOT_TRACE);
    return NULL;
}

static void test_find_wait_waits_for_another_threads_claim(void **state)
{
    (void)state;
    struct cbslot t[CBSLOT_N];
    memset(t, 0, sizeof t);
    g_classified = 0;
    /* a key still being classified for good: the bounded wait says busy, never hangs */
    int k = cbslot_find(t, 0x4001, classify, NULL);
    atomic_store(&t[k].state, CBSLOT_CLAIMING);
    atomic_store(&t[k].loc, 0);
    assert_int_equal(cbslot_find_wait(t, 0x4001, classify, NULL), CBSLOT_BUSY);
    /* finished by another thread while this one waits: its slot */
    struct finisher f = { .s = &t[k] };
    pthread_t th;
    pthread_create(&th, NULL, finish_claim, &f);
    atomic_store(&f.go, 1);
    assert_int_equal(cbslot_find_wait(t, 0x4001, classify, NULL), k);
    pthread_join(th, NULL);
    assert_int_equal(atomic_load(&t[k].loc), 0x4002);
    assert_int_equal(g_classified, 1);              /* classified by its claimer only */
}

#define RACERS 8
static struct cbslot g_race[CBSLOT_N];
static int g_got[RACERS][32];

static void *racer(void *arg)
{
    int *out = arg;
    for (int i = 0; i < 32; i++) {
        int k;
        while ((k = cbslot_find(g_race, (uintptr_t)(2 * i + 1), classify, NULL)) == CBSLOT_BUSY)
            ;
        out[i] = k;
    }
    return NULL;
}

static void test_racing_threads_agree_on_every_slot(void **state)
{
    (void)state;
    g_classified = 0;
    pthread_t th[RACERS];
    for (int i = 0; i < RACERS; i++)
        pthread_create(&th[i], NULL, racer, g_got[i]);
    for (int i = 0; i < RACERS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(g_classified, 32);
    for (int i = 0; i < 32; i++) {
        assert_true(g_got[0][i] >= 0);
        for (int r = 1; r < RACERS; r++)
            assert_int_equal(g_got[r][i], g_got[0][i]);
        assert_int_equal(atomic_load(&g_race[g_got[0][i]].loc), 2 * i + 2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_key_gets_one_slot_classified_once),
        cmocka_unit_test(test_passed_and_null_keys_get_no_slot),
        cmocka_unit_test(test_a_full_table_says_so),
        cmocka_unit_test(test_a_key_being_classified_is_busy),
        cmocka_unit_test(test_find_wait_waits_for_another_threads_claim),
        cmocka_unit_test(test_racing_threads_agree_on_every_slot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
