/*
 * test_s3_sign.c — AWS Signature Version 4 (collector/s3/s3_sign.c) against
 * the published vectors: the AWS SigV4 test suite (AKIDEXAMPLE, us-east-1,
 * service "service", 20150830T123600Z) step by step, and the S3 examples of
 * the S3 API reference (examplebucket, AKIAIOSFODNN7EXAMPLE, 20130524).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>
#include "collector/s3/s3_sign.h"

#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SUITE_AUTH(signed_hdrs, sig)                                                        \
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "    \
    "SignedHeaders=" signed_hdrs ", Signature=" sig

static struct s3_sign_req suite(const char *method, const char *query,
                                const struct s3_sign_hdr *h, size_t n)
{
    struct s3_sign_req r = {
        .method = method, .path = "/", .query = query, .hdrs = h, .n_hdrs = n,
        .payload_hex = EMPTY_SHA, .amz_date = "20150830T123600Z", .region = "us-east-1",
        .service = "service", .access_key = "AKIDEXAMPLE",
        .secret_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    };
    return r;
}

static const struct s3_sign_hdr vanilla[] = {
    { "Host", "example.amazonaws.com" },
    { "X-Amz-Date", "20150830T123600Z" },
};

static void get_vanilla_matches_every_step(void **state)
{
    (void)state;
    struct s3_sign_req r = suite("GET", "", vanilla, 2);
    char buf[2048];
    assert_int_equal(s3_sign_canonical(&r, buf, sizeof buf), 0);
    assert_string_equal(buf, "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
                             "host;x-amz-date\n" EMPTY_SHA);
    assert_int_equal(s3_sign_string_to_sign(&r, buf, sizeof buf), 0);
    assert_string_equal(buf, "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
                             "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
    assert_int_equal(s3_sign_authorization(&r, buf, sizeof buf), 0);
    assert_string_equal(buf, SUITE_AUTH("host;x-amz-date",
                        "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"));
}

static void get_vanilla_query_order_key_case_sorts_the_query(void **state)
{
    (void)state;
    struct s3_sign_req r = suite("GET", "Param2=value2&Param1=value1", vanilla, 2);
    char buf[2048];
    assert_int_equal(s3_sign_canonical(&r, buf, sizeof buf), 0);
    assert_string_equal(buf, "GET\n/\nParam1=value1&Param2=value2\nhost:example.amazonaws.com\n"
                             "x-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" EMPTY_SHA);
    assert_int_equal(s3_sign_string_to_sign(&r, buf, sizeof buf), 0);
    assert_non_null(strstr(buf, "\n816cd5b414d056048ba4f7c5386d6e0533120fb1fcfa93762cf0fc39e2cf19e0"));
    assert_int_equal(s3_sign_authorization(&r, buf, sizeof buf), 0);
    assert_string_equal(buf, SUITE_AUTH("host;x-amz-date",
                        "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"));
}

static void post_vanilla_signs_the_method(void **state)
{
    (void)state;
    struct s3_sign_req r = suite("POST", "", vanilla, 2);
    char buf[2048];
    assert_int_equal(s3_sign_authorization(&r, buf, sizeof buf), 0);
    assert_string_equal(buf, SUITE_AUTH("host;x-amz-date",
                        "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"));
}

static void get_header_value_trim_folds_spaces(void **state)
{
    (void)state;
    static const struct s3_sign_hdr h[] = {
        { "My-Header2", "\"a   b   c\"" },
        { "Host", "example.amazonaws.com" },
        { "My-Header1", " value1" },
        { "X-Amz-Date", "20150830T123600Z" },
    };
    struct s3_sign_req r = suite("GET", "", h, 4);
    char buf[2048];
    assert_int_equal(s3_sign_canonical(&r, buf, sizeof buf), 0);
    assert_non_null(strstr(buf, "\nmy-header1:value1\nmy-header2:\"a b c\"\n"));
    assert_int_equal(s3_sign_authorization(&r, buf, sizeof buf), 0);
    assert_string_equal(buf, SUITE_AUTH("host;my-header1;my-header2;x-amz-date",
                        "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"));
}

static struct s3_sign_req s3_example(const char *path, const char *query,
                                     const struct s3_sign_hdr *h, size_t n)
{
    struct s3_sign_req r = {
        .method = "GET", .path = path, .query = query, .hdrs = h, .n_hdrs = n,
        .payload_hex = EMPTY_SHA, .amz_date = "20130524T000000Z", .region = "us-east-1",
        .service = "s3", .access_key = "AKIAIOSFODNN7EXAMPLE",
        .secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    };
    return r;
}

static void s3_get_object_example_with_a_range(void **state)
{
    (void)state;
    static const struct s3_sign_hdr h[] = {
        { "Host", "examplebucket.s3.amazonaws.com" },
        { "Range", "bytes=0-9" },
        { "x-amz-content-sha256", EMPTY_SHA },
        { "x-amz-date", "20130524T000000Z" },
    };
    struct s3_sign_req r = s3_example("/test.txt", "", h, 4);
    char buf[2048];
    assert_int_equal(s3_sign_authorization(&r, buf, sizeof buf), 0);
    assert_string_equal(buf, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
                             "aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                             "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

static void s3_list_objects_and_bare_query_key_examples(void **state)
{
    (void)state;
    static const struct s3_sign_hdr h[] = {
        { "Host", "examplebucket.s3.amazonaws.com" },
        { "x-amz-content-sha256", EMPTY_SHA },
        { "x-amz-date", "20130524T000000Z" },
    };
    char buf[2048];
    struct s3_sign_req r = s3_example("/", "max-keys=2&prefix=J", h, 3);
    assert_int_equal(s3_sign_signature(&r, buf), 0);
    assert_string_equal(buf, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
    r = s3_example("/", "lifecycle", h, 3);
    assert_int_equal(s3_sign_canonical(&r, buf, sizeof buf), 0);
    assert_non_null(strstr(buf, "\n/\nlifecycle=\n"));
    assert_int_equal(s3_sign_signature(&r, buf), 0);
    assert_string_equal(buf, "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

static void uri_encoding_keeps_unreserved_and_optionally_slashes(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(s3_sign_uri_encode("a b/c~d+e$\xc3\xa9", 1, out, sizeof out), 0);
    assert_string_equal(out, "a%20b/c~d%2Be%24%C3%A9");
    assert_int_equal(s3_sign_uri_encode("a/b", 0, out, sizeof out), 0);
    assert_string_equal(out, "a%2Fb");
    assert_int_equal(s3_sign_uri_encode("\xff\xff", 0, out, 6), -ENAMETOOLONG);
    assert_int_equal(s3_sign_uri_encode("\xff\xff", 0, out, 7), 0);
}

static void digests_date_and_base64_are_the_standard_ones(void **state)
{
    (void)state;
    char hex[S3_SIGN_HEX_LEN + 1], b64[32], date[S3_SIGN_DATE_LEN + 1];
    uint8_t md5[16];
    s3_sign_sha256_hex("", 0, hex);
    assert_string_equal(hex, EMPTY_SHA);
    s3_sign_md5("", 0, md5);
    assert_int_equal(s3_sign_base64(md5, 16, b64, sizeof b64), 0);
    assert_string_equal(b64, "1B2M2Y8AsgTpgAmY7PhCfg==");
    assert_int_equal(s3_sign_base64(md5, 16, b64, 24), -ENAMETOOLONG);
    assert_int_equal(s3_sign_amz_date(1440938160, date), 0);
    assert_string_equal(date, "20150830T123600Z");
}

static void a_small_buffer_fails_and_never_truncates(void **state)
{
    (void)state;
    struct s3_sign_req r = suite("GET", "", vanilla, 2);
    char buf[64];
    assert_int_equal(s3_sign_canonical(&r, buf, sizeof buf), -ENAMETOOLONG);
    assert_int_equal(s3_sign_authorization(&r, buf, sizeof buf), -ENAMETOOLONG);
    r.amz_date = "2015";
    assert_int_equal(s3_sign_signature(&r, buf), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(get_vanilla_matches_every_step),
        cmocka_unit_test(get_vanilla_query_order_key_case_sorts_the_query),
        cmocka_unit_test(post_vanilla_signs_the_method),
        cmocka_unit_test(get_header_value_trim_folds_spaces),
        cmocka_unit_test(s3_get_object_example_with_a_range),
        cmocka_unit_test(s3_list_objects_and_bare_query_key_examples),
        cmocka_unit_test(uri_encoding_keeps_unreserved_and_optionally_slashes),
        cmocka_unit_test(digests_date_and_base64_are_the_standard_ones),
        cmocka_unit_test(a_small_buffer_fails_and_never_truncates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
