/*
 * test_s3_cfg.c — s3:// URLs, endpoints, regions and credentials
 * (collector/s3/s3_cfg.c): path-style with an endpoint, virtual-hosted on
 * AWS, bad input refused with a readable line, credentials from the
 * environment before the credentials file, never on the command line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "collector/s3/s3_cfg.h"

static int clean_env(void **state)
{
    (void)state;
    static const char *const vars[] = { "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_REGION",
        "AWS_DEFAULT_REGION" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    return 0;
}

static void an_endpoint_is_addressed_path_style(void **state)
{
    (void)state;
    struct s3_cfg c;
    char err[256];
    assert_int_equal(s3_cfg_init(&c, "s3://d9-test/fleet/prod/", "http://127.0.0.1:9000", "",
                                 err, sizeof err), 0);
    assert_string_equal(c.bucket, "d9-test");
    assert_string_equal(c.prefix, "fleet/prod");
    assert_string_equal(c.host, "127.0.0.1:9000");
    assert_string_equal(c.base_url, "http://127.0.0.1:9000/d9-test");
    assert_string_equal(c.path_base, "/d9-test");
    assert_string_equal(c.region, "us-east-1");
}

static void aws_is_virtual_hosted_unless_the_bucket_has_dots(void **state)
{
    (void)state;
    struct s3_cfg c;
    char err[256];
    setenv("AWS_REGION", "eu-west-1", 1);
    assert_int_equal(s3_cfg_init(&c, "s3://traces", NULL, NULL, err, sizeof err), 0);
    assert_string_equal(c.prefix, "");
    assert_string_equal(c.host, "traces.s3.eu-west-1.amazonaws.com");
    assert_string_equal(c.base_url, "https://traces.s3.eu-west-1.amazonaws.com");
    assert_string_equal(c.path_base, "");
    assert_int_equal(s3_cfg_init(&c, "s3://my.traces/p", NULL, "ap-south-1", err, sizeof err), 0);
    assert_string_equal(c.host, "s3.ap-south-1.amazonaws.com");
    assert_string_equal(c.base_url, "https://s3.ap-south-1.amazonaws.com/my.traces");
    assert_string_equal(c.path_base, "/my.traces");
}

static void bad_urls_endpoints_and_regions_are_refused(void **state)
{
    (void)state;
    struct s3_cfg c;
    char err[256];
    static const char *const urls[] = { "http://b/p", "s3://", "s3://ab", "s3://Bucket",
                                        "s3://-bucket", "s3://bucket/a//b" };
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        err[0] = '\0';
        assert_int_equal(s3_cfg_init(&c, urls[i], NULL, NULL, err, sizeof err), -EINVAL);
        assert_non_null(strstr(err, urls[i]));
    }
    assert_int_equal(s3_cfg_init(&c, "s3://bucket", "ftp://h", NULL, err, sizeof err), -EINVAL);
    assert_int_equal(s3_cfg_init(&c, "s3://bucket", "http://h/path", NULL, err, sizeof err), -EINVAL);
    assert_int_equal(s3_cfg_init(&c, "s3://bucket", NULL, "us east", err, sizeof err), -EINVAL);
}

static void credentials_come_from_the_environment_first(void **state)
{
    (void)state;
    struct s3_cfg c;
    char err[256];
    assert_int_equal(s3_cfg_init(&c, "s3://bucket", NULL, NULL, err, sizeof err), 0);
    setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "SECRET", 1);
    setenv("AWS_SESSION_TOKEN", "TOKEN", 1);
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent", 1);
    assert_int_equal(s3_cfg_credentials(&c, err, sizeof err), 0);
    assert_string_equal(c.access_key, "AKID");
    assert_string_equal(c.secret_key, "SECRET");
    assert_string_equal(c.session_token, "TOKEN");
    s3_cfg_wipe(&c);
    assert_string_equal(c.secret_key, "");
}

static void credentials_file_profiles(void **state)
{
    (void)state;
    char path[] = "/tmp/test_s3_cfg.XXXXXX", err[512];
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("# comment\n[default]\naws_access_key_id = DEF\naws_secret_access_key = DEFSECRET\n"
          "[profile ci]\n  aws_access_key_id=CI  \naws_secret_access_key= CISECRET\n"
          "aws_session_token = CITOKEN\n[half]\naws_access_key_id = ONLY\n", f);
    fclose(f);
    struct s3_cfg c;
    assert_int_equal(s3_cfg_init(&c, "s3://bucket", NULL, NULL, err, sizeof err), 0);
    setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
    assert_int_equal(s3_cfg_credentials(&c, err, sizeof err), 0);
    assert_string_equal(c.access_key, "DEF");
    assert_string_equal(c.secret_key, "DEFSECRET");
    setenv("AWS_PROFILE", "ci", 1);
    assert_int_equal(s3_cfg_credentials(&c, err, sizeof err), 0);
    assert_string_equal(c.access_key, "CI");
    assert_string_equal(c.secret_key, "CISECRET");
    assert_string_equal(c.session_token, "CITOKEN");
    setenv("AWS_PROFILE", "half", 1);
    assert_int_equal(s3_cfg_credentials(&c, err, sizeof err), -ENOKEY);
    assert_non_null(strstr(err, "profile 'half'"));
    assert_string_equal(c.access_key, "");
    unlink(path);
    setenv("AWS_PROFILE", "default", 1);
    assert_int_equal(s3_cfg_credentials(&c, err, sizeof err), -ENOKEY);
    assert_non_null(strstr(err, path));
}

int main(void)
{
#define T(f) cmocka_unit_test_setup(f, clean_env)
    const struct CMUnitTest tests[] = {
        T(an_endpoint_is_addressed_path_style),
        T(aws_is_virtual_hosted_unless_the_bucket_has_dots),
        T(bad_urls_endpoints_and_regions_are_refused),
        T(credentials_come_from_the_environment_first),
        T(credentials_file_profiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
