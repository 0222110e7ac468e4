/*
 * test_serve_guard.c — d9 serve's Host / Origin rule (serve_guard.h): IP
 * literals, localhost and allowed names on our port are answered; other
 * names, other ports, malformed hosts, foreign or null Origins are refused
 * with a reason; --allow-host names are checked and bounded.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "collector/serve/serve_guard.h"

static struct serve_guard g;

static int setup(void **st)
{
    (void)st;
    serve_guard_init(&g, 8009);
    assert_int_equal(serve_guard_allow(&g, "d9.example"), 0);
    return 0;
}

static int check(const char *host, const char *origin)
{
    char why[160] = "";
    int rc = serve_guard_check(&g, host, origin, why, sizeof why);
    if (rc < 0) {
        assert_int_equal(rc, -EPERM);
        assert_true(why[0] != 0);
        assert_null(strchr(why, '\n'));
    }
    return rc;
}

static void loopback_names_on_our_port_are_answered(void **st)
{
    (void)st;
    assert_int_equal(check("127.0.0.1:8009", NULL), 0);
    assert_int_equal(check("localhost:8009", NULL), 0);
    assert_int_equal(check("LocalHost.:8009", NULL), 0);
    assert_int_equal(check("[::1]:8009", NULL), 0);
    assert_int_equal(check("192.168.1.20:8009", NULL), 0);    /* an IP literal: no rebinding */
}

static void allowed_names_are_answered_without_case(void **st)
{
    (void)st;
    assert_int_equal(check("d9.example:8009", NULL), 0);
    assert_int_equal(check("D9.Example.:8009", NULL), 0);
    assert_int_equal(check("x.d9.example:8009", NULL), -EPERM);
    assert_int_equal(check("d9.example.evil:8009", NULL), -EPERM);
}

static void foreign_names_are_refused(void **st)
{
    (void)st;
    assert_int_equal(check("evil.example:8009", NULL), -EPERM);
    assert_int_equal(check("evil.example", NULL), -EPERM);
    assert_int_equal(check("localhost.evil.example:8009", NULL), -EPERM);
    assert_int_equal(check("127.0.0.1.evil.example:8009", NULL), -EPERM);
}

static void wrong_or_malformed_ports_are_refused(void **st)
{
    (void)st;
    assert_int_equal(check("127.0.0.1:8010", NULL), -EPERM);
    assert_int_equal(check("127.0.0.1", NULL), -EPERM);        /* means port 80 */
    assert_int_equal(check("127.0.0.1:", NULL), -EPERM);
    assert_int_equal(check("127.0.0.1:8009x", NULL), -EPERM);
    assert_int_equal(check("127.0.0.1:008009", NULL), -EPERM);
    assert_int_equal(check("127.0.0.1:73545", NULL), -EPERM);  /* 8009 + 65536 */
    assert_int_equal(check("[::1]8009", NULL), -EPERM);
    assert_int_equal(check("[::1", NULL), -EPERM);
    assert_int_equal(check("[evil.example]:8009", NULL), -EPERM);
    assert_int_equal(check(":8009", NULL), -EPERM);
    assert_int_equal(check("", NULL), -EPERM);
    assert_int_equal(check(NULL, NULL), -EPERM);
    assert_int_equal(check("ev il:8009", NULL), -EPERM);
    char longname[600];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    assert_int_equal(check(longname, NULL), -EPERM);
}

static void port_80_may_be_implied(void **st)
{
    (void)st;
    struct serve_guard g80;
    serve_guard_init(&g80, 80);
    char why[160];
    assert_int_equal(serve_guard_check(&g80, "localhost", NULL, why, sizeof why), 0);
    assert_int_equal(serve_guard_check(&g80, "localhost:80", NULL, why, sizeof why), 0);
    assert_int_equal(serve_guard_check(&g80, "evil.example", NULL, why, sizeof why), -EPERM);
}

static void origins_must_be_this_server(void **st)
{
    (void)st;
    assert_int_equal(check("127.0.0.1:8009", "http://127.0.0.1:8009"), 0);
    assert_int_equal(check("127.0.0.1:8009", "HTTP://localhost:8009"), 0);
    assert_int_equal(check("127.0.0.1:8009", "http://d9.example:8009"), 0);
    assert_int_equal(check("127.0.0.1:8009", "http://evil.example:8009"), -EPERM);
    assert_int_equal(check("127.0.0.1:8009", "http://127.0.0.1:9999"), -EPERM);
    assert_int_equal(check("127.0.0.1:8009", "null"), -EPERM);
    assert_int_equal(check("127.0.0.1:8009", "https://127.0.0.1:8009"), -EPERM);
    assert_int_equal(check("127.0.0.1:8009", "http://"), -EPERM);
    assert_int_equal(check("127.0.0.1:8009", ""), -EPERM);
}

static void allow_host_takes_names_only_and_is_bounded(void **st)
{
    (void)st;
    struct serve_guard h;
    serve_guard_init(&h, 1);
    assert_int_equal(serve_guard_allow(&h, ""), -EINVAL);
    assert_int_equal(serve_guard_allow(&h, "."), -EINVAL);
    assert_int_equal(serve_guard_allow(&h, "a b"), -EINVAL);
    assert_int_equal(serve_guard_allow(&h, "a:80"), -EINVAL);
    assert_int_equal(serve_guard_allow(&h, "a/b"), -EINVAL);
    char big[SERVE_GUARD_NAME_MAX + 1];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    assert_int_equal(serve_guard_allow(&h, big), -EINVAL);
    for (unsigned i = 0; i < SERVE_GUARD_NAMES_MAX; i++)
        assert_int_equal(serve_guard_allow(&h, "host.example."), 0);
    assert_int_equal(serve_guard_allow(&h, "one.more"), -ENOSPC);
    char why[160];
    assert_int_equal(serve_guard_check(&h, "host.example:1", NULL, why, sizeof why), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(loopback_names_on_our_port_are_answered, setup),
        cmocka_unit_test_setup(allowed_names_are_answered_without_case, setup),
        cmocka_unit_test_setup(foreign_names_are_refused, setup),
        cmocka_unit_test_setup(wrong_or_malformed_ports_are_refused, setup),
        cmocka_unit_test(port_80_may_be_implied),
        cmocka_unit_test_setup(origins_must_be_this_server, setup),
        cmocka_unit_test(allow_host_takes_names_only_and_is_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
