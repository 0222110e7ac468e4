/*
 * test_zmqlib.c — agent/zmqlib.c: libzmq loaded with dlopen when the control
 * channel opens. A missing library and a library without libzmq's functions
 * fail with a reason; the real one resolves every function; the process's
 * table is loaded once (the same pointer at every call, from any thread),
 * and a failed load stays failed, says why once with DIAL9_LOG and is silent
 * without it; the control channel over a missing libzmq fails cleanly.
 *
 * ag_zmqlib_get() loads once per process, so each check of it runs in a
 * child forked for it, with its own environment.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agent/control.h"
#include "agent/zmqlib.h"
#include "tmpdir.h"

#define MISSING_LIB "/nonexistent-d9-test/libzmq.so.5"
#define GET_THREADS 8

/* Runs fn in a forked child (stderr to errfile when not NULL); the child's
 * exit status: 0 when fn returned 0. */
static int in_child(int (*fn)(void), const char *errfile)
{
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        if (errfile) {
            int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
                _exit(100);
            close(fd);
        }
        int rc = fn();
        fflush(NULL);
        _exit(rc);
    }
    int st = 0;
    if (p < 0 || waitpid(p, &st, 0) != p)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int n = 0, c, last = '\n';
    while ((c = fgetc(f)) != EOF) {
        if (c == '\n')
            n++;
        last = c;
    }
    fclose(f);
    return n + (last != '\n');
}

static int file_has(const char *path, const char *needle)
{
    char buf[1024] = "";
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strstr(buf, needle) != NULL;
}

static void load_of_a_missing_file_is_enoent_with_its_reason(void **state)
{
    (void)state;
    struct ag_zmqlib z;
    void *h = (void *)1;
    char why[AG_ZMQLIB_WHY_MAX] = "";
    assert_int_equal(ag_zmqlib_load(MISSING_LIB, &z, &h, why, sizeof why), -ENOENT);
    assert_null(h);
    assert_null(z.ctx_new);
    assert_non_null(strstr(why, MISSING_LIB));
}

static void load_of_a_library_without_zmq_functions_is_enosys_naming_one(void **state)
{
    (void)state;
    struct ag_zmqlib z;
    void *h = (void *)1;
    char why[AG_ZMQLIB_WHY_MAX] = "";
    assert_int_equal(ag_zmqlib_load("libm.so.6", &z, &h, why, sizeof why), -ENOSYS);
    assert_null(h);
    assert_null(z.ctx_new);
    assert_non_null(strstr(why, "zmq_ctx_new"));
}

static void load_of_libzmq_resolves_every_function(void **state)
{
    (void)state;
    struct ag_zmqlib z;
    void *h = NULL;
    char why[AG_ZMQLIB_WHY_MAX] = "";
    assert_int_equal(ag_zmqlib_load(AG_ZMQLIB_SONAME, &z, &h, why, sizeof why), 0);
    assert_non_null(h);
    void (*const *f)(void) = (void (*const *)(void))&z;
    for (size_t i = 0; i < sizeof z / sizeof *f; i++)
        assert_non_null(f[i]);
    void *ctx = z.ctx_new();
    assert_non_null(ctx);
    assert_int_equal(z.ctx_term(ctx), 0);
}

static int loaded_once(void)
{
    if (ag_zmqlib_state() != 1)
        return 1;
    const struct ag_zmqlib *a = ag_zmqlib_get();
    const struct ag_zmqlib *b = ag_zmqlib_get();
    return !a ? 2 : a != b ? 3 : ag_zmqlib_state() != 0 ? 4 : 0;
}

static void get_loads_once_and_returns_the_same_table(void **state)
{
    (void)state;
    assert_int_equal(in_child(loaded_once, NULL), 0);
}

static void *get_thread(void *arg)
{
    (void)arg;
    return (void *)ag_zmqlib_get();
}

static int threads_see_one_table(void)
{
    pthread_t t[GET_THREADS];
    void *r[GET_THREADS];
    for (int i = 0; i < GET_THREADS; i++)
        if (pthread_create(&t[i], NULL, get_thread, NULL) != 0)
            return 1;
    for (int i = 0; i < GET_THREADS; i++)
        pthread_join(t[i], &r[i]);
    for (int i = 0; i < GET_THREADS; i++)
        if (!r[i] || r[i] != (void *)ag_zmqlib_get())
            return 2;
    return 0;
}

static void first_calls_from_many_threads_get_one_table(void **state)
{
    (void)state;
    assert_int_equal(in_child(threads_see_one_table, NULL), 0);
}

static int missing_stays_missing(void)
{
    if (setenv(AG_ZMQLIB_ENV, MISSING_LIB, 1) != 0)
        return 1;
    if (ag_zmqlib_get() || ag_zmqlib_get())
        return 2;
    return ag_zmqlib_state() == -ENOENT ? 0 : 3;
}

static int missing_logged(void)
{
    return setenv("DIAL9_LOG", "1", 1) == 0 ? missing_stays_missing() : 1;
}

static int missing_quiet(void)
{
    unsetenv("DIAL9_LOG");
    return missing_stays_missing();
}

static void a_missing_library_fails_every_call_and_says_why_once_with_dial9_log(void **state)
{
    (void)state;
    char dir[64], err[96];
    assert_int_equal(tmpdir_make(dir, sizeof dir, "d9-test-zmqlib"), 0);
    snprintf(err, sizeof err, "%s/err", dir);
    assert_int_equal(in_child(missing_logged, err), 0);
    assert_int_equal(count_lines(err), 1);
    assert_true(file_has(err, MISSING_LIB));
    assert_true(file_has(err, "without the control channel"));
    tmpdir_remove(dir);
}

static void a_missing_library_is_silent_without_dial9_log(void **state)
{
    (void)state;
    char dir[64], err[96];
    assert_int_equal(tmpdir_make(dir, sizeof dir, "d9-test-zmqlib"), 0);
    snprintf(err, sizeof err, "%s/err", dir);
    assert_int_equal(in_child(missing_quiet, err), 0);
    assert_int_equal(count_lines(err), 0);
    tmpdir_remove(dir);
}

static int control_without_libzmq(void)
{
    if (setenv(AG_ZMQLIB_ENV, MISSING_LIB, 1) != 0)
        return 1;
    struct ag_control c;
    if (ag_control_open(&c, "ipc:///nonexistent-d9-test/c.sock") != -ENOENT)
        return 2;
    static const uint8_t msg[1];
    if (ag_control_send(&c, msg, sizeof msg) != -ENOTCONN)
        return 3;
    ag_control_close(&c, 0);
    ag_control_close(&c, 0);
    return 0;
}

static void the_control_channel_without_libzmq_fails_cleanly(void **state)
{
    (void)state;
    assert_int_equal(in_child(control_without_libzmq, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(load_of_a_missing_file_is_enoent_with_its_reason),
        cmocka_unit_test(load_of_a_library_without_zmq_functions_is_enosys_naming_one),
        cmocka_unit_test(load_of_libzmq_resolves_every_function),
        cmocka_unit_test(get_loads_once_and_returns_the_same_table),
        cmocka_unit_test(first_calls_from_many_threads_get_one_table),
        cmocka_unit_test(a_missing_library_fails_every_call_and_says_why_once_with_dial9_log),
        cmocka_unit_test(a_missing_library_is_silent_without_dial9_log),
        cmocka_unit_test(the_control_channel_without_libzmq_fails_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
