/*
 * test_loopcfg.c — DIAL9_LOOP's parser (the kinds, the default, a bad value
 * as one readable line) and the worker ids every loop kind shares (unique
 * across threads, used up cleanly).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include "agent/d9.h"
#include "agent/uv/loopcfg.h"

static unsigned parse(const char *v)
{
    unsigned k = 12345;
    char err[LOOPCFG_ERR_MAX];
    assert_int_equal(loopcfg_parse(v, &k, err, sizeof err), 0);
    assert_string_equal(err, "");
    return k;
}

static void test_unset_or_empty_is_uv_and_event(void **state)
{
    (void)state;
    assert_int_equal(parse(NULL), LOOPCFG_UV | LOOPCFG_EVENT);
    assert_int_equal(parse(""), LOOPCFG_UV | LOOPCFG_EVENT);
}

static void test_a_list_names_exactly_its_kinds(void **state)
{
    (void)state;
    assert_int_equal(parse("epoll"), LOOPCFG_EPOLL);
    assert_int_equal(parse("uv"), LOOPCFG_UV);
    assert_int_equal(parse("event,epoll"), LOOPCFG_EVENT | LOOPCFG_EPOLL);
    assert_int_equal(parse("uv,event,epoll"), LOOPCFG_ALL);
    assert_int_equal(parse("all"), LOOPCFG_ALL);
    assert_int_equal(parse("none"), 0);
    assert_int_equal(parse("uv,uv"), LOOPCFG_UV);
}

static void test_a_bad_value_is_one_line_that_quotes_it(void **state)
{
    (void)state;
    const char *bad[] = { "epol", "uv,", ",uv", "UV", "uv event", "uv,,event",
                          "\x01\x1b[2Jepoll", "epollepollepollepollepollepollepollepollepollepoll" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsigned k = 77;
        char err[LOOPCFG_ERR_MAX];
        assert_int_equal(loopcfg_parse(bad[i], &k, err, sizeof err), -EINVAL);
        assert_int_equal(k, 77);                /* untouched */
        assert_non_null(strstr(err, "DIAL9_LOOP"));
        assert_null(strchr(err, '\n'));
        assert_null(strchr(err, '\x1b'));       /* control characters never reach the terminal */
        assert_true(strlen(err) < LOOPCFG_ERR_MAX);
    }
    unsigned k;
    char small[8];
    assert_int_equal(loopcfg_parse("x", &k, small, sizeof small), -EINVAL);
    assert_int_equal(strlen(small), sizeof small - 1);     /* cut, terminated */
    assert_int_equal(loopcfg_parse("x", &k, NULL, 0), -EINVAL);
}

#define THREADS 4
#define PER_THREAD 2000

static uint16_t g_ids[THREADS][PER_THREAD];

static void *take(void *arg)
{
    uint16_t *out = arg;
    for (int i = 0; i < PER_THREAD; i++)
        out[i] = loopcfg_worker_next();
    return NULL;
}

static void test_worker_ids_are_unique_across_threads_until_used_up(void **state)
{
    (void)state;
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, take, g_ids[i]);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    static unsigned char seen[D9_WORKER_NONE_ID];
    for (int i = 0; i < THREADS; i++)
        for (int j = 0; j < PER_THREAD; j++) {
            uint16_t w = g_ids[i][j];
            assert_true(w < D9_WORKER_NONE_ID);
            assert_int_equal(seen[w], 0);
            seen[w] = 1;
        }
    /* the rest, then "none" for ever */
    unsigned n = 0;
    while (loopcfg_worker_next() != D9_WORKER_NONE_ID)
        n++;
    assert_int_equal(n + THREADS * PER_THREAD, D9_WORKER_NONE_ID);
    assert_int_equal(loopcfg_worker_next(), D9_WORKER_NONE_ID);
}

static void test_no_auto_mode_starts_nothing(void **state)
{
    (void)state;
    assert_int_equal(loopcfg_auto(), 0);
    loopcfg_ensure_init();                      /* not in auto mode: d9 stays off */
    assert_int_equal(d9_enabled(), 0);
    loopcfg_set_auto(LOOPCFG_EPOLL, "off");
    assert_int_equal(loopcfg_auto(), LOOPCFG_EPOLL);
    loopcfg_set_auto(0, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unset_or_empty_is_uv_and_event),
        cmocka_unit_test(test_a_list_names_exactly_its_kinds),
        cmocka_unit_test(test_a_bad_value_is_one_line_that_quotes_it),
        cmocka_unit_test(test_worker_ids_are_unique_across_threads_until_used_up),
        cmocka_unit_test(test_no_auto_mode_starts_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
