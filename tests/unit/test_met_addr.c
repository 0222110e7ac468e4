/*
 * test_met_addr.c — the --metrics address (collector/daemon/met_addr.c):
 * a port alone is loopback, ADDR:PORT, localhost, and what is refused.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "collector/daemon/met_addr.h"

static void a_port_alone_is_loopback(void **state)
{
    (void)state;
    struct sockaddr_in s;
    assert_int_equal(met_addr_parse("9464", &s), 0);
    assert_int_equal(ntohs(s.sin_port), 9464);
    assert_int_equal(ntohl(s.sin_addr.s_addr), 0x7f000001u);
    assert_true(met_addr_loopback(&s));
}

static void address_and_port_and_localhost(void **state)
{
    (void)state;
    struct sockaddr_in s;
    assert_int_equal(met_addr_parse("10.1.2.3:80", &s), 0);
    assert_int_equal(ntohs(s.sin_port), 80);
    assert_false(met_addr_loopback(&s));
    assert_int_equal(met_addr_parse("localhost:0", &s), 0);
    assert_int_equal(ntohs(s.sin_port), 0);
    assert_true(met_addr_loopback(&s));
    assert_int_equal(met_addr_parse("127.8.9.10:65535", &s), 0);
    assert_true(met_addr_loopback(&s));
}

static void malformed_values_are_refused(void **state)
{
    (void)state;
    static const char *const bad[] = { "", "abc", "65536", "-1", "+80", " 80", "80 ", ":80",
                                       "127.0.0.1:", "1.2.3:80", "1.2.3.4.5:80", "0x7f000001:80",
                                       "localhost:http", "127.0.0.1:80:90", "[::1]:80",
                                       "999999999999999999999", "255.255.255.2555:1" };
    struct sockaddr_in s;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(met_addr_parse(bad[i], &s), -22);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_port_alone_is_loopback),
        cmocka_unit_test(address_and_port_and_localhost),
        cmocka_unit_test(malformed_values_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
