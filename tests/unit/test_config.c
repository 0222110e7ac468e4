/*
 * test_config.c — d9collectd configuration (collector/daemon/config.c) as a
 * specification: defaults, flags, the config file, precedence and errors.
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
#include "collector/daemon/config.h"
#include "collector/store/col_log.h"
#include "shm/paths.h"

#define USER_UID 1000

static char errbuf[2048];

static int parse(struct config *c, uid_t uid, const char *xdg, int argc, char **argv)
{
    errbuf[0] = 0;
    return config_parse_args(c, argc, argv, uid, xdg, errbuf, sizeof errbuf);
}

/* Writes text to a fresh temp file; returns its path (static buffer). */
static const char *config_file(const char *text)
{
    static char path[64];
    strcpy(path, "/tmp/d9cfgtest.XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (int)strlen(text));
    close(fd);
    return path;
}

static void defaults_as_root_use_system_paths(void **s)
{
    (void)s;
    struct config c;
    char *argv[] = { "d9collectd", NULL };
    assert_int_equal(parse(&c, 0, "/run/user/0", 1, argv), CONFIG_RUN);
    assert_string_equal(c.store, "/var/lib/dial9");
    assert_string_equal(c.endpoint, "ipc:///run/dial9/collector.sock");
    assert_string_equal(c.shm_dir, "/dev/shm");
    assert_int_equal(c.segment_mb, 64);
    assert_int_equal(c.segment_seconds, 60);
    assert_int_equal(c.store_mb, 1024);
    assert_int_equal(c.log_level, COL_LOG_INFO);
    assert_string_equal(c.pidfile, "");
    assert_int_equal(c.perf_freq, 99);
    assert_int_equal(c.switch_period, 0);       /* off-CPU sampling is opt-in */
}

static void defaults_as_user_use_xdg_runtime_dir_and_cwd_store(void **s)
{
    (void)s;
    struct config c;
    char *argv[] = { "d9collectd", NULL };
    assert_int_equal(parse(&c, USER_UID, "/run/user/1000", 1, argv), CONFIG_RUN);
    assert_string_equal(c.store, "./d9-store");
    assert_string_equal(c.endpoint, "ipc:///run/user/1000/dial9/collector.sock");
}

static void defaults_as_user_without_xdg_fall_back_to_tmp(void **s)
{
    (void)s;
    struct config c;
    char *argv[] = { "d9collectd", NULL };
    assert_int_equal(parse(&c, USER_UID, NULL, 1, argv), CONFIG_RUN);
    assert_string_equal(c.endpoint, "ipc:///tmp/dial9-1000/collector.sock");
}

static void flags_accept_separate_and_equals_values(void **s)
{
    (void)s;
    struct config c;
    char *argv[] = { "d9collectd", "--store", "/tmp/st", "--segment-mb=8", "--log-level",
                     "debug", "--scan-ms=50", NULL };
    assert_int_equal(parse(&c, 0, NULL, 7, argv), CONFIG_RUN);
    assert_string_equal(c.store, "/tmp/st");
    assert_int_equal(c.segment_mb, 8);
    assert_int_equal(c.log_level, COL_LOG_DEBUG);
    assert_int_equal(c.scan_ms, 50);
}

static void help_and_version_win_over_everything_else(void **s)
{
    (void)s;
    struct config c;
    char *a1[] = { "d9collectd", "--bogus", "--help", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, a1), CONFIG_HELP);
    char *a2[] = { "d9collectd", "-V", NULL };
    assert_int_equal(parse(&c, 0, NULL, 2, a2), CONFIG_VERSION);
}

static void unknown_flag_is_one_clear_error(void **s)
{
    (void)s;
    struct config c;
    char *argv[] = { "d9collectd", "--frobnicate", "3", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, argv), -EINVAL);
    assert_non_null(strstr(errbuf, "unknown option '--frobnicate'"));
}

static void ship_takes_an_s3_url_and_its_endpoint_flags_need_it(void **s)
{
    (void)s;
    struct config c;
    char *ok[] = { "d9collectd", "--ship", "s3://d9-test/fleet", "--s3-endpoint",
                   "http://127.0.0.1:9000", "--s3-region=eu-west-1", "--ship-jobs", "4", NULL };
    assert_int_equal(parse(&c, 0, NULL, 8, ok), CONFIG_RUN);
    assert_string_equal(c.ship, "s3://d9-test/fleet");
    assert_string_equal(c.s3_endpoint, "http://127.0.0.1:9000");
    assert_string_equal(c.s3_region, "eu-west-1");
    assert_int_equal(c.ship_jobs, 4);
    char *off[] = { "d9collectd", NULL };
    assert_int_equal(parse(&c, 0, NULL, 1, off), CONFIG_RUN);
    assert_string_equal(c.ship, "");
    assert_int_equal(c.ship_jobs, CONFIG_SHIP_JOBS_DEFAULT);
    char *bad_url[] = { "d9collectd", "--ship", "https://bucket/p", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, bad_url), -EINVAL);
    assert_non_null(strstr(errbuf, "ship: https://bucket/p: not an s3://BUCKET/PREFIX URL"));
    char *lonely[] = { "d9collectd", "--s3-endpoint", "http://127.0.0.1:9000", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, lonely), -EINVAL);
    assert_non_null(strstr(errbuf, "need ship"));
    char *jobs[] = { "d9collectd", "--ship", "s3://bucket", "--ship-jobs", "17", NULL };
    assert_int_equal(parse(&c, 0, NULL, 5, jobs), -EINVAL);
}

static void ship_parquet_is_off_by_default_and_needs_ship(void **s)
{
    (void)s;
    struct config c;
    char *off[] = { "d9collectd", "--ship", "s3://bucket/p", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, off), CONFIG_RUN);
    assert_int_equal(c.ship_parquet, CONFIG_SHIP_PARQUET_OFF);
    char *on[] = { "d9collectd", "--ship", "s3://bucket/p", "--ship-parquet", "on", NULL };
    assert_int_equal(parse(&c, 0, NULL, 5, on), CONFIG_RUN);
    assert_int_equal(c.ship_parquet, CONFIG_SHIP_PARQUET_ON);
    char *lonely[] = { "d9collectd", "--ship-parquet", "on", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, lonely), -EINVAL);
    assert_non_null(strstr(errbuf, "ship-parquet needs ship"));
}

static void host_names_a_key_path_element_of_safe_bytes(void **s)
{
    (void)s;
    struct config c;
    char *ok[] = { "d9collectd", "--host", "web-1.example_A", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, ok), CONFIG_RUN);
    assert_string_equal(c.host, "web-1.example_A");
    char *slash[] = { "d9collectd", "--host", "a/b", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, slash), -EINVAL);
    assert_non_null(strstr(errbuf, "bad host 'a/b'"));
    char *dots[] = { "d9collectd", "--host", "..", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, dots), -EINVAL);
    char longname[80];
    memset(longname, 'h', 64);
    longname[64] = 0;
    char *toolong[] = { "d9collectd", "--host", longname, NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, toolong), -EINVAL);
}

static void flag_without_value_is_an_error(void **s)
{
    (void)s;
    struct config c;
    char *argv[] = { "d9collectd", "--store", NULL };
    assert_int_equal(parse(&c, 0, NULL, 2, argv), -EINVAL);
    assert_non_null(strstr(errbuf, "needs a value"));
}

static void positional_argument_is_rejected(void **s)
{
    (void)s;
    struct config c;
    char *argv[] = { "d9collectd", "store", NULL };
    assert_int_equal(parse(&c, 0, NULL, 2, argv), -EINVAL);
    assert_non_null(strstr(errbuf, "unexpected argument 'store'"));
}

static void numbers_must_be_plain_decimal_in_range(void **s)
{
    (void)s;
    const char *bad[] = { "abc", "-1", "0", "12x", " 5", "", "99999999999", "4097" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct config c;
        char v[64];
        snprintf(v, sizeof v, "--segment-mb=%s", bad[i]);
        char *argv[] = { "d9collectd", v, NULL };
        assert_int_equal(parse(&c, 0, NULL, 2, argv), -EINVAL);
        assert_non_null(strstr(errbuf, "segment-mb"));
    }
}

static void log_level_must_be_a_known_name(void **s)
{
    (void)s;
    struct config c;
    char *argv[] = { "d9collectd", "--log-level", "loud", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, argv), -EINVAL);
    assert_non_null(strstr(errbuf, "error, warn, info or debug"));
}

static void perf_scope_defaults_to_auto_and_takes_cpu_or_thread(void **s)
{
    (void)s;
    struct config c;
    char *a0[] = { "d9collectd", NULL };
    assert_int_equal(parse(&c, 0, NULL, 1, a0), CONFIG_RUN);
    assert_int_equal(c.perf_scope, CONFIG_PERF_SCOPE_AUTO);
    char *a1[] = { "d9collectd", "--perf-scope", "cpu", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, a1), CONFIG_RUN);
    assert_int_equal(c.perf_scope, CONFIG_PERF_SCOPE_CPU);
    char *a2[] = { "d9collectd", "--perf-scope=thread", NULL };
    assert_int_equal(parse(&c, 0, NULL, 2, a2), CONFIG_RUN);
    assert_int_equal(c.perf_scope, CONFIG_PERF_SCOPE_THREAD);
    char *a3[] = { "d9collectd", "--perf-scope", "process", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, a3), -EINVAL);
    assert_non_null(strstr(errbuf, "expected auto, cpu or thread"));
}

static void doorbell_defaults_to_on_and_off_turns_it_off(void **s)
{
    (void)s;
    struct config c;
    char *a0[] = { "d9collectd", NULL };
    assert_int_equal(parse(&c, 0, NULL, 1, a0), CONFIG_RUN);
    assert_int_equal(c.doorbell, CONFIG_DOORBELL_ON);
    char *a1[] = { "d9collectd", "--doorbell", "off", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, a1), CONFIG_RUN);
    assert_int_equal(c.doorbell, CONFIG_DOORBELL_OFF);
    char *a2[] = { "d9collectd", "--doorbell=on", NULL };
    assert_int_equal(parse(&c, 0, NULL, 2, a2), CONFIG_RUN);
    assert_int_equal(c.doorbell, CONFIG_DOORBELL_ON);
    char *a3[] = { "d9collectd", "--doorbell", "1", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, a3), -EINVAL);
    assert_non_null(strstr(errbuf, "expected on or off"));
}

static void perf_clock_defaults_to_auto_and_tick_needs_per_cpu_events(void **s)
{
    (void)s;
    struct config c;
    char *a0[] = { "d9collectd", NULL };
    assert_int_equal(parse(&c, 0, NULL, 1, a0), CONFIG_RUN);
    assert_int_equal(c.perf_clock, CONFIG_PERF_CLOCK_AUTO);
    char *a1[] = { "d9collectd", "--perf-clock", "tick", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, a1), CONFIG_RUN);
    assert_int_equal(c.perf_clock, CONFIG_PERF_CLOCK_TICK);
    char *a2[] = { "d9collectd", "--perf-clock=cpu-clock", "--perf-scope=thread", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, a2), CONFIG_RUN);
    assert_int_equal(c.perf_clock, CONFIG_PERF_CLOCK_CPU);
    assert_string_equal(config_perf_clock_name(c.perf_clock), "cpu-clock");
    char *a3[] = { "d9collectd", "--perf-clock", "jiffies", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, a3), -EINVAL);
    assert_non_null(strstr(errbuf, "expected auto, tick or cpu-clock"));
    /* the tick is sampled by per-CPU events only */
    char *a4[] = { "d9collectd", "--perf-clock", "tick", "--perf-scope", "thread", NULL };
    assert_int_equal(parse(&c, 0, NULL, 5, a4), -EINVAL);
    assert_non_null(strstr(errbuf, "perf-scope thread"));
}

static void endpoint_must_look_like_a_zmq_endpoint(void **s)
{
    (void)s;
    struct config c;
    char *argv[] = { "d9collectd", "--endpoint", "/run/x.sock", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, argv), -EINVAL);
    assert_non_null(strstr(errbuf, "bad endpoint"));
}

static void metrics_is_off_by_default_and_takes_a_port_or_an_address(void **s)
{
    (void)s;
    struct config c;
    char *none[] = { "d9collectd", NULL };
    assert_int_equal(parse(&c, 0, NULL, 1, none), CONFIG_RUN);
    assert_string_equal(c.metrics, "");
    char *port[] = { "d9collectd", "--metrics", "9469", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, port), CONFIG_RUN);
    assert_string_equal(c.metrics, "9469");
    char *addr[] = { "d9collectd", "--metrics=127.0.0.1:9469", NULL };
    assert_int_equal(parse(&c, 0, NULL, 2, addr), CONFIG_RUN);
    assert_string_equal(c.metrics, "127.0.0.1:9469");
    char *bad[] = { "d9collectd", "--metrics", "host:9469", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, bad), -EINVAL);
    assert_non_null(strstr(errbuf, "--metrics: bad value 'host:9469' for 'metrics': expected PORT"));
    assert_null(strchr(errbuf, '\n'));
}

static void config_file_sets_options_and_ignores_comments(void **s)
{
    (void)s;
    const char *path = config_file("# d9collectd config\n\n  store = /srv/d9   # trailing\n"
                                   "segment-seconds=5\npoll-max-us = 1000\n");
    struct config c;
    char *argv[] = { "d9collectd", "--config", (char *)path, NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, argv), CONFIG_RUN);
    assert_string_equal(c.store, "/srv/d9");
    assert_int_equal(c.segment_seconds, 5);
    assert_int_equal(c.poll_max_us, 1000);
    assert_string_equal(c.config_file, path);
    unlink(path);
}

static void flags_override_the_config_file_wherever_they_appear(void **s)
{
    (void)s;
    const char *path = config_file("store = /from/file\nstore-mb = 100\n");
    struct config c;
    char *argv[] = { "d9collectd", "--store=/from/flag", "--config", (char *)path, NULL };
    assert_int_equal(parse(&c, 0, NULL, 4, argv), CONFIG_RUN);
    assert_string_equal(c.store, "/from/flag");
    assert_int_equal(c.store_mb, 100);
    unlink(path);
}

static void unknown_key_in_file_names_file_and_line(void **s)
{
    (void)s;
    const char *path = config_file("store = /x\n\nsegmnet-mb = 3\n");
    struct config c;
    char *argv[] = { "d9collectd", "--config", (char *)path, NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, argv), -EINVAL);
    char want[128];
    snprintf(want, sizeof want, "%s:3: unknown option 'segmnet-mb'", path);
    assert_non_null(strstr(errbuf, want));
    unlink(path);
}

static void bad_value_in_file_names_file_and_line(void **s)
{
    (void)s;
    const char *path = config_file("scan-ms = 1\n");
    struct config c;
    char *argv[] = { "d9collectd", "--config", (char *)path, NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, argv), -EINVAL);
    assert_non_null(strstr(errbuf, ":1: bad value '1' for 'scan-ms'"));
    unlink(path);
}

static void line_without_equals_is_an_error(void **s)
{
    (void)s;
    const char *path = config_file("store /x\n");
    struct config c;
    char *argv[] = { "d9collectd", "--config", (char *)path, NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, argv), -EINVAL);
    assert_non_null(strstr(errbuf, "expected 'key = value'"));
    unlink(path);
}

static void control_bytes_of_a_binary_file_are_escaped_in_the_error(void **s)
{
    (void)s;
    const char *path = config_file("\x1b[2J\x7f\x01" "binary\xff\n");
    struct config c;
    char *argv[] = { "d9collectd", "--config", (char *)path, NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, argv), -EINVAL);
    for (const char *p = errbuf; *p; p++)
        assert_true((unsigned char)*p >= 0x20 && (unsigned char)*p != 0x7f);
    assert_non_null(strstr(errbuf, "?[2J??binary"));
    unlink(path);
}

static void config_key_cannot_appear_in_a_config_file(void **s)
{
    (void)s;
    const char *path = config_file("config = /etc/other\n");
    struct config c;
    char *argv[] = { "d9collectd", "--config", (char *)path, NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, argv), -EINVAL);
    assert_non_null(strstr(errbuf, "'config' cannot be set"));
    unlink(path);
}

static void missing_config_file_is_an_error_naming_it(void **s)
{
    (void)s;
    struct config c;
    char *argv[] = { "d9collectd", "--config", "/nonexistent/d9.conf", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, argv), -EINVAL);
    assert_non_null(strstr(errbuf, "cannot read config file /nonexistent/d9.conf"));
}

static void poll_min_above_poll_max_is_rejected(void **s)
{
    (void)s;
    struct config c;
    char *argv[] = { "d9collectd", "--poll-min-us=500", "--poll-max-us=100", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, argv), -EINVAL);
    assert_non_null(strstr(errbuf, "poll-min-us"));
}

static void segment_larger_than_store_is_rejected(void **s)
{
    (void)s;
    struct config c;
    char *argv[] = { "d9collectd", "--segment-mb=100", "--store-mb=50", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, argv), -EINVAL);
    assert_non_null(strstr(errbuf, "segment-mb"));
}

static void dump_output_loads_back_to_the_same_config(void **s)
{
    (void)s;
    struct config a, b;
    char *argv[] = { "d9collectd", "--store=/a b", "--segment-mb=3", "--log-level=warn",
                     "--pidfile=/run/x.pid", "--perf-scope=thread", "--perf-clock=cpu-clock",
                     NULL };
    assert_int_equal(parse(&a, 0, NULL, 7, argv), CONFIG_RUN);
    char path[] = "/tmp/d9cfgdump.XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    config_dump(f, &a);
    fclose(f);
    char *argv2[] = { "d9collectd", "--config", path, NULL };
    assert_int_equal(parse(&b, 0, NULL, 3, argv2), CONFIG_RUN);
    assert_string_equal(b.store, "/a b");
    assert_int_equal(b.segment_mb, 3);
    assert_int_equal(b.log_level, COL_LOG_WARN);
    assert_string_equal(b.pidfile, "/run/x.pid");
    assert_int_equal(b.perf_scope, CONFIG_PERF_SCOPE_THREAD);
    assert_int_equal(b.perf_clock, CONFIG_PERF_CLOCK_CPU);
    unlink(path);
}

static void ipc_path_is_extracted_only_from_ipc_endpoints(void **s)
{
    (void)s;
    char p[128];
    assert_int_equal(paths_ipc_path("ipc:///run/dial9/c.sock", p, sizeof p), 0);
    assert_string_equal(p, "/run/dial9/c.sock");
    assert_int_equal(paths_ipc_path("tcp://127.0.0.1:5555", p, sizeof p), -EINVAL);
}

static void stack_bytes_defaults_to_32_kib_within_perfs_limits(void **s)
{
    (void)s;
    struct config c;
    char *a0[] = { "d9collectd", NULL };
    assert_int_equal(parse(&c, 0, NULL, 1, a0), CONFIG_RUN);
    assert_int_equal(c.stack_bytes, 32768);
    char *a1[] = { "d9collectd", "--stack-bytes", "61440", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, a1), CONFIG_RUN);
    assert_int_equal(c.stack_bytes, 61440);
    char *a2[] = { "d9collectd", "--stack-bytes", "65536", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, a2), -EINVAL);
    char *a3[] = { "d9collectd", "--stack-bytes", "512", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, a3), -EINVAL);
}

static void debug_dir_is_unset_by_default_and_must_be_absolute(void **s)
{
    (void)s;
    struct config c;
    char *a0[] = { "d9collectd", NULL };
    assert_int_equal(parse(&c, 0, NULL, 1, a0), CONFIG_RUN);
    assert_string_equal(c.debug_dir, "");
    char *a1[] = { "d9collectd", "--debug-dir", "/srv/debug/.build-id", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, a1), CONFIG_RUN);
    assert_string_equal(c.debug_dir, "/srv/debug/.build-id");
    char *a2[] = { "d9collectd", "--debug-dir", "debug", NULL };
    assert_int_equal(parse(&c, 0, NULL, 3, a2), -EINVAL);
    assert_non_null(strstr(errbuf, "absolute"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_as_root_use_system_paths),
        cmocka_unit_test(defaults_as_user_use_xdg_runtime_dir_and_cwd_store),
        cmocka_unit_test(defaults_as_user_without_xdg_fall_back_to_tmp),
        cmocka_unit_test(flags_accept_separate_and_equals_values),
        cmocka_unit_test(help_and_version_win_over_everything_else),
        cmocka_unit_test(unknown_flag_is_one_clear_error),
        cmocka_unit_test(ship_takes_an_s3_url_and_its_endpoint_flags_need_it),
        cmocka_unit_test(ship_parquet_is_off_by_default_and_needs_ship),
        cmocka_unit_test(host_names_a_key_path_element_of_safe_bytes),
        cmocka_unit_test(flag_without_value_is_an_error),
        cmocka_unit_test(positional_argument_is_rejected),
        cmocka_unit_test(numbers_must_be_plain_decimal_in_range),
        cmocka_unit_test(perf_scope_defaults_to_auto_and_takes_cpu_or_thread),
        cmocka_unit_test(perf_clock_defaults_to_auto_and_tick_needs_per_cpu_events),
        cmocka_unit_test(doorbell_defaults_to_on_and_off_turns_it_off),
        cmocka_unit_test(log_level_must_be_a_known_name),
        cmocka_unit_test(endpoint_must_look_like_a_zmq_endpoint),
        cmocka_unit_test(metrics_is_off_by_default_and_takes_a_port_or_an_address),
        cmocka_unit_test(config_file_sets_options_and_ignores_comments),
        cmocka_unit_test(flags_override_the_config_file_wherever_they_appear),
        cmocka_unit_test(unknown_key_in_file_names_file_and_line),
        cmocka_unit_test(bad_value_in_file_names_file_and_line),
        cmocka_unit_test(line_without_equals_is_an_error),
        cmocka_unit_test(control_bytes_of_a_binary_file_are_escaped_in_the_error),
        cmocka_unit_test(config_key_cannot_appear_in_a_config_file),
        cmocka_unit_test(missing_config_file_is_an_error_naming_it),
        cmocka_unit_test(poll_min_above_poll_max_is_rejected),
        cmocka_unit_test(segment_larger_than_store_is_rejected),
        cmocka_unit_test(dump_output_loads_back_to_the_same_config),
        cmocka_unit_test(ipc_path_is_extracted_only_from_ipc_endpoints),
        cmocka_unit_test(stack_bytes_defaults_to_32_kib_within_perfs_limits),
        cmocka_unit_test(debug_dir_is_unset_by_default_and_must_be_absolute),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
