/*
 * test_agent_env.c — DIAL9_* parsing (agent/env.c): every variable with a
 * good value, a bad value and its boundaries; defaults; the one error line.
 * The parser is pure, so the environment here is a table, never the process's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>
#include "agent/env.h"

struct kv { const char *k, *v; };

static const char *table_get(const char *name, void *ctx)
{
    for (const struct kv *e = ctx; e->k; e++)
        if (strcmp(e->k, name) == 0)
            return e->v;
    return NULL;
}

static struct ag_config cfg;
static char err[AG_ERR_MAX];

/* Parse one variable over the defaults of a non-root user. */
static int parse1(const char *k, const char *v)
{
    struct kv env[] = { { k, v }, { NULL, NULL } };
    ag_env_defaults(&cfg, 1000, "/run/user/1000", "myprog");
    return ag_env_parse(&cfg, table_get, env, err, sizeof err);
}

static void test_defaults_without_any_variable(void **s)
{
    (void)s;
    struct kv env[] = { { NULL, NULL } };
    ag_env_defaults(&cfg, 1000, "/run/user/1000", "myprog");
    assert_int_equal(ag_env_parse(&cfg, table_get, env, err, sizeof err), 0);
    assert_int_equal(cfg.enabled, 1);
    assert_int_equal(cfg.ring_data_size, D9_RING_KB_DEFAULT * 1024u);
    assert_int_equal(cfg.max_threads, D9_RINGS_DEFAULT);
    assert_string_equal(cfg.collector, "ipc:///run/user/1000/dial9/collector.sock");
    assert_string_equal(cfg.runtime_name, "myprog");
    assert_string_equal(cfg.shm_dir, "/dev/shm");
    assert_int_equal(cfg.sched_sample_us, AG_SCHED_SAMPLE_US_DEFAULT);
    assert_int_equal(cfg.clock_source, 0);
    assert_string_equal(err, "");
}

static void test_default_collector_for_root_is_run_dial9(void **s)
{
    (void)s;
    ag_env_defaults(&cfg, 0, "/run/user/0", "x");
    assert_string_equal(cfg.collector, "ipc:///run/dial9/collector.sock");
}

static void test_default_collector_without_xdg_runtime_dir_is_tmp_per_uid(void **s)
{
    (void)s;
    ag_env_defaults(&cfg, 1000, NULL, "x");
    assert_string_equal(cfg.collector, "ipc:///tmp/dial9-1000/collector.sock");
    ag_env_defaults(&cfg, 1000, "relative/dir", "x");
    assert_string_equal(cfg.collector, "ipc:///tmp/dial9-1000/collector.sock");
}

static void test_default_runtime_name_without_comm_is_main(void **s)
{
    (void)s;
    ag_env_defaults(&cfg, 1000, NULL, NULL);
    assert_string_equal(cfg.runtime_name, "main");
    ag_env_defaults(&cfg, 1000, NULL, "");
    assert_string_equal(cfg.runtime_name, "main");
}

static void test_empty_value_means_default(void **s)
{
    (void)s;
    assert_int_equal(parse1("DIAL9_RING_KB", ""), 0);
    assert_int_equal(cfg.ring_data_size, D9_RING_KB_DEFAULT * 1024u);
    assert_int_equal(parse1("DIAL9_ENABLED", ""), 0);
    assert_int_equal(cfg.enabled, 1);
}

static void test_enabled_accepts_every_spelling(void **s)
{
    (void)s;
    const char *on[] = { "1", "true", "yes", "on", "TRUE", "Yes", "ON" };
    const char *off[] = { "0", "false", "no", "off", "FALSE", "No", "Off" };
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
        assert_int_equal(parse1("DIAL9_ENABLED", on[i]), 0);
        assert_int_equal(cfg.enabled, 1);
    }
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
        assert_int_equal(parse1("DIAL9_ENABLED", off[i]), 0);
        assert_int_equal(cfg.enabled, 0);
    }
}

static void test_enabled_rejects_other_words(void **s)
{
    (void)s;
    assert_int_equal(parse1("DIAL9_ENABLED", "maybe"), -EINVAL);
    assert_int_equal(cfg.enabled, 0);
    assert_string_equal(err, "d9: DIAL9_ENABLED=maybe is not a boolean "
                        "(1/0, true/false, yes/no, on/off); tracing disabled");
    assert_int_equal(parse1("DIAL9_ENABLED", "2"), -EINVAL);
    assert_int_equal(parse1("DIAL9_ENABLED", " 1"), -EINVAL);
}

static void test_ring_kb_not_a_number_names_variable_and_value(void **s)
{
    (void)s;
    assert_int_equal(parse1("DIAL9_RING_KB", "abc"), -EINVAL);
    assert_string_equal(err, "d9: DIAL9_RING_KB=abc is not a number of KiB (4..65536); "
                        "tracing disabled");
    assert_int_equal(cfg.enabled, 0);
    assert_int_equal(parse1("DIAL9_RING_KB", "12k"), -EINVAL);
    assert_int_equal(parse1("DIAL9_RING_KB", "-4"), -EINVAL);
    assert_int_equal(parse1("DIAL9_RING_KB", "0x10"), -EINVAL);
}

static void test_ring_kb_boundaries(void **s)
{
    (void)s;
    assert_int_equal(parse1("DIAL9_RING_KB", "4"), 0);
    assert_int_equal(cfg.ring_data_size, 4u * 1024u);
    assert_int_equal(parse1("DIAL9_RING_KB", "65536"), 0);
    assert_int_equal(cfg.ring_data_size, 65536u * 1024u);
    assert_int_equal(parse1("DIAL9_RING_KB", "3"), -EINVAL);
    assert_string_equal(err, "d9: DIAL9_RING_KB=3 is out of range for a ring size in KiB "
                        "(4..65536); tracing disabled");
    assert_int_equal(parse1("DIAL9_RING_KB", "65537"), -EINVAL);
    assert_int_equal(parse1("DIAL9_RING_KB", "0"), -EINVAL);
    assert_int_equal(parse1("DIAL9_RING_KB", "99999999999999999999999"), -EINVAL);
    assert_non_null(strstr(err, "out of range"));
}

static void test_ring_kb_rounds_up_to_power_of_two(void **s)
{
    (void)s;
    assert_int_equal(parse1("DIAL9_RING_KB", "5"), 0);
    assert_int_equal(cfg.ring_data_size, 8u * 1024u);
    assert_int_equal(parse1("DIAL9_RING_KB", "1000"), 0);
    assert_int_equal(cfg.ring_data_size, 1024u * 1024u);
    assert_int_equal(parse1("DIAL9_RING_KB", "32769"), 0);
    assert_int_equal(cfg.ring_data_size, 65536u * 1024u);
}

static void test_max_threads_boundaries(void **s)
{
    (void)s;
    assert_int_equal(parse1("DIAL9_MAX_THREADS", "1"), 0);
    assert_int_equal(cfg.max_threads, 1);
    assert_int_equal(parse1("DIAL9_MAX_THREADS", "4096"), 0);
    assert_int_equal(cfg.max_threads, 4096);
    assert_int_equal(parse1("DIAL9_MAX_THREADS", "0"), -EINVAL);
    assert_string_equal(err, "d9: DIAL9_MAX_THREADS=0 is out of range for a number of "
                        "threads (1..4096); tracing disabled");
    assert_int_equal(parse1("DIAL9_MAX_THREADS", "4097"), -EINVAL);
}

static void test_max_threads_not_a_number(void **s)
{
    (void)s;
    assert_int_equal(parse1("DIAL9_MAX_THREADS", "many"), -EINVAL);
    assert_string_equal(err, "d9: DIAL9_MAX_THREADS=many is not a number of threads "
                        "(1..4096); tracing disabled");
    assert_int_equal(parse1("DIAL9_MAX_THREADS", "8 "), -EINVAL);
}

static void test_collector_accepts_ipc_and_tcp(void **s)
{
    (void)s;
    assert_int_equal(parse1("DIAL9_COLLECTOR", "ipc:///tmp/x/c.sock"), 0);
    assert_string_equal(cfg.collector, "ipc:///tmp/x/c.sock");
    assert_int_equal(parse1("DIAL9_COLLECTOR", "tcp://127.0.0.1:5555"), 0);
    assert_string_equal(cfg.collector, "tcp://127.0.0.1:5555");
}

static void test_collector_rejects_non_endpoints(void **s)
{
    (void)s;
    assert_int_equal(parse1("DIAL9_COLLECTOR", "/tmp/c.sock"), -EINVAL);
    assert_string_equal(err, "d9: DIAL9_COLLECTOR=/tmp/c.sock is not a collector endpoint "
                        "(ipc://PATH, tcp://HOST:PORT or none); tracing disabled");
    assert_int_equal(parse1("DIAL9_COLLECTOR", "ipc://"), -EINVAL);
    assert_int_equal(parse1("DIAL9_COLLECTOR", "tcp://host"), -EINVAL);
    assert_int_equal(parse1("DIAL9_COLLECTOR", "tcp://host:0"), -EINVAL);
    assert_int_equal(parse1("DIAL9_COLLECTOR", "tcp://host:65536"), -EINVAL);
    assert_int_equal(parse1("DIAL9_COLLECTOR", "tcp://:80"), -EINVAL);
    assert_int_equal(parse1("DIAL9_COLLECTOR", "udp://h:1"), -EINVAL);
}

static void test_collector_none_turns_the_control_channel_off(void **s)
{
    (void)s;
    assert_int_equal(parse1("DIAL9_COLLECTOR", "none"), 0);
    assert_int_equal(cfg.enabled, 1);
    assert_int_equal(cfg.control, 0);
    assert_string_equal(cfg.collector, "");
    assert_int_equal(parse1("DIAL9_COLLECTOR", "ipc:///x"), 0);
    assert_int_equal(cfg.control, 1);
}

static void test_collector_ipc_path_must_fit_a_unix_socket(void **s)
{
    (void)s;
    char ep[200] = "ipc://";
    memset(ep + 6, 'a', 107);
    assert_int_equal(parse1("DIAL9_COLLECTOR", ep), 0);
    ep[6 + 107] = 'a';
    assert_int_equal(parse1("DIAL9_COLLECTOR", ep), -EINVAL);
}

static void test_runtime_name_boundaries(void **s)
{
    (void)s;
    char name[80];
    memset(name, 'r', D9_NAME_MAX);
    name[D9_NAME_MAX] = 0;
    assert_int_equal(parse1("DIAL9_RUNTIME_NAME", name), 0);
    assert_string_equal(cfg.runtime_name, name);
    name[D9_NAME_MAX] = 'r';
    name[D9_NAME_MAX + 1] = 0;
    assert_int_equal(parse1("DIAL9_RUNTIME_NAME", name), -EINVAL);
    assert_non_null(strstr(err, "is not a runtime name (1..64 printable bytes)"));
    assert_int_equal(parse1("DIAL9_RUNTIME_NAME", "x"), 0);
    assert_string_equal(cfg.runtime_name, "x");
}

static void test_runtime_name_rejects_control_bytes_and_quotes_them_safely(void **s)
{
    (void)s;
    assert_int_equal(parse1("DIAL9_RUNTIME_NAME", "a\nb"), -EINVAL);
    assert_string_equal(err, "d9: DIAL9_RUNTIME_NAME=a?b is not a runtime name "
                        "(1..64 printable bytes); tracing disabled");
}

static void test_shm_dir_must_be_absolute_and_short(void **s)
{
    (void)s;
    assert_int_equal(parse1("DIAL9_SHM_DIR", "/tmp/d9x"), 0);
    assert_string_equal(cfg.shm_dir, "/tmp/d9x");
    assert_int_equal(parse1("DIAL9_SHM_DIR", "tmp/d9x"), -EINVAL);
    assert_non_null(strstr(err, "DIAL9_SHM_DIR=tmp/d9x is not an absolute directory path"));
    char dir[AG_SHM_DIR_MAX + 2];
    dir[0] = '/';
    memset(dir + 1, 'd', AG_SHM_DIR_MAX - 2);
    dir[AG_SHM_DIR_MAX - 1] = 0;                    /* AG_SHM_DIR_MAX - 1 bytes: fits */
    assert_int_equal(parse1("DIAL9_SHM_DIR", dir), 0);
    dir[AG_SHM_DIR_MAX - 1] = 'd';
    dir[AG_SHM_DIR_MAX] = 0;
    assert_int_equal(parse1("DIAL9_SHM_DIR", dir), -EINVAL);
}

static void test_sched_sample_us_boundaries(void **s)
{
    (void)s;
    assert_int_equal(parse1("DIAL9_SCHED_SAMPLE_US", "0"), 0);
    assert_int_equal(cfg.sched_sample_us, 0);       /* every park/unpark */
    assert_int_equal(parse1("DIAL9_SCHED_SAMPLE_US", "60000000"), 0);
    assert_int_equal(cfg.sched_sample_us, AG_SCHED_SAMPLE_US_MAX);
    assert_int_equal(parse1("DIAL9_SCHED_SAMPLE_US", "60000001"), -EINVAL);
    assert_string_equal(err, "d9: DIAL9_SCHED_SAMPLE_US=60000001 is out of range for an "
                             "interval in microseconds (0..60000000); tracing disabled");
    assert_int_equal(cfg.enabled, 0);
    assert_int_equal(parse1("DIAL9_SCHED_SAMPLE_US", "1ms"), -EINVAL);
    assert_string_equal(err, "d9: DIAL9_SCHED_SAMPLE_US=1ms is not a number of "
                             "microseconds (0..60000000); tracing disabled");
}

static void test_shm_cap_mb_boundaries(void **s)
{
    (void)s;
    assert_int_equal(parse1("DIAL9_SHM_CAP_MB", "0"), 0);
    assert_int_equal(cfg.shm_cap_mb, 0);            /* no cap */
    assert_int_equal(parse1("DIAL9_SHM_CAP_MB", "16777216"), 0);
    assert_int_equal(cfg.shm_cap_mb, AG_SHM_CAP_MB_MAX);
    assert_int_equal(parse1("DIAL9_SHM_CAP_MB", "16777217"), -EINVAL);
    assert_string_equal(err, "d9: DIAL9_SHM_CAP_MB=16777217 is out of range for a size in "
                             "MiB (0..16777216, 0 = no cap); tracing disabled");
    assert_int_equal(parse1("DIAL9_SHM_CAP_MB", "1G"), -EINVAL);
    assert_string_equal(err, "d9: DIAL9_SHM_CAP_MB=1G is not a number of MiB "
                             "(0..16777216, 0 = no cap); tracing disabled");
}

static void test_clock_is_auto_or_monotonic(void **s)
{
    (void)s;
    assert_int_equal(parse1("DIAL9_CLOCK", "monotonic"), 0);
    assert_int_equal(cfg.clock_source, D9_CLOCK_MONOTONIC);
    assert_int_equal(parse1("DIAL9_CLOCK", "AUTO"), 0);
    assert_int_equal(cfg.clock_source, 0);
    assert_int_equal(parse1("DIAL9_CLOCK", "tsc"), -EINVAL);
    assert_string_equal(err, "d9: DIAL9_CLOCK=tsc is not auto or monotonic; tracing disabled");
    assert_int_equal(cfg.enabled, 0);
}

static void test_long_bad_value_is_cut_in_the_message(void **s)
{
    (void)s;
    char v[300];
    memset(v, 'z', sizeof v - 1);
    v[sizeof v - 1] = 0;
    assert_int_equal(parse1("DIAL9_RING_KB", v), -EINVAL);
    assert_true(strlen(err) < 200);
    assert_non_null(strstr(err, "zzz... is not a number of KiB"));
}

static void test_first_bad_variable_disables_everything(void **s)
{
    (void)s;
    struct kv env[] = { { "DIAL9_RING_KB", "8" }, { "DIAL9_MAX_THREADS", "x" },
                        { NULL, NULL } };
    ag_env_defaults(&cfg, 1000, NULL, "p");
    assert_int_equal(ag_env_parse(&cfg, table_get, env, err, sizeof err), -EINVAL);
    assert_int_equal(cfg.enabled, 0);
    assert_non_null(strstr(err, "DIAL9_MAX_THREADS=x"));
}

static void test_parse_u32_distinguishes_junk_from_range(void **s)
{
    (void)s;
    uint32_t v = 7;
    assert_int_equal(ag_env_parse_u32("10", 1, 10, &v), 0);
    assert_int_equal(v, 10);
    assert_int_equal(ag_env_parse_u32("11", 1, 10, &v), -ERANGE);
    assert_int_equal(ag_env_parse_u32("4294967296", 0, UINT32_MAX, &v), -ERANGE);
    assert_int_equal(ag_env_parse_u32("4294967295", 0, UINT32_MAX, &v), 0);
    assert_int_equal(v, UINT32_MAX);
    assert_int_equal(ag_env_parse_u32("1a", 1, 10, &v), -EINVAL);
    assert_int_equal(ag_env_parse_u32("", 1, 10, &v), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_without_any_variable),
        cmocka_unit_test(test_default_collector_for_root_is_run_dial9),
        cmocka_unit_test(test_default_collector_without_xdg_runtime_dir_is_tmp_per_uid),
        cmocka_unit_test(test_default_runtime_name_without_comm_is_main),
        cmocka_unit_test(test_empty_value_means_default),
        cmocka_unit_test(test_enabled_accepts_every_spelling),
        cmocka_unit_test(test_enabled_rejects_other_words),
        cmocka_unit_test(test_ring_kb_not_a_number_names_variable_and_value),
        cmocka_unit_test(test_ring_kb_boundaries),
        cmocka_unit_test(test_ring_kb_rounds_up_to_power_of_two),
        cmocka_unit_test(test_max_threads_boundaries),
        cmocka_unit_test(test_max_threads_not_a_number),
        cmocka_unit_test(test_collector_accepts_ipc_and_tcp),
        cmocka_unit_test(test_collector_rejects_non_endpoints),
        cmocka_unit_test(test_collector_none_turns_the_control_channel_off),
        cmocka_unit_test(test_collector_ipc_path_must_fit_a_unix_socket),
        cmocka_unit_test(test_runtime_name_boundaries),
        cmocka_unit_test(test_runtime_name_rejects_control_bytes_and_quotes_them_safely),
        cmocka_unit_test(test_shm_dir_must_be_absolute_and_short),
        cmocka_unit_test(test_sched_sample_us_boundaries),
        cmocka_unit_test(test_shm_cap_mb_boundaries),
        cmocka_unit_test(test_clock_is_auto_or_monotonic),
        cmocka_unit_test(test_long_bad_value_is_cut_in_the_message),
        cmocka_unit_test(test_first_bad_variable_disables_everything),
        cmocka_unit_test(test_parse_u32_distinguishes_junk_from_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
