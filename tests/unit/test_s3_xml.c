/*
 * test_s3_xml.c — ListObjectsV2 and error bodies (collector/s3/s3_xml.c):
 * keys, sizes, ETags and entities come out right, pages chain by token, and
 * malformed or oversized input is refused without reading past the buffer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/s3/s3_xml.h"

struct seen {
    char keys[4][S3_XML_KEY_MAX + 1];
    uint64_t sizes[4];
    char etags[4][S3_XML_ETAG_MAX + 1];
    int n;
};

static int collect(const struct s3_xml_obj *o, void *ctx)
{
    struct seen *s = ctx;
    if (s->n == 4)
        return -E2BIG;
    snprintf(s->keys[s->n], sizeof s->keys[0], "%s", o->key);
    snprintf(s->etags[s->n], sizeof s->etags[0], "%s", o->etag);
    s->sizes[s->n++] = o->size;
    return 0;
}

#define PAGE(body) "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult>" body "</ListBucketResult>"

static void a_page_gives_each_key_size_and_etag(void **state)
{
    (void)state;
    const char *x = PAGE("<IsTruncated>true</IsTruncated>"
                         "<Contents><Key>p/h/1.d9seg</Key><ETag>&quot;ab&quot;</ETag><Size>42</Size></Contents>"
                         "<Contents><Key>p/a&amp;b&lt;&#x20AC;&#65;</Key><Size>0</Size></Contents>"
                         "<NextContinuationToken>tok/+=</NextContinuationToken>");
    struct seen s = { 0 };
    struct s3_xml_list page;
    assert_int_equal(s3_xml_list_parse(x, strlen(x), collect, &s, &page), 0);
    assert_int_equal(s.n, 2);
    assert_int_equal(page.n_keys, 2);
    assert_string_equal(s.keys[0], "p/h/1.d9seg");
    assert_int_equal(s.sizes[0], 42);
    assert_string_equal(s.etags[0], "\"ab\"");
    assert_string_equal(s.keys[1], "p/a&b<\xe2\x82\xac" "A");
    assert_string_equal(s.etags[1], "");
    assert_true(page.truncated);
    assert_string_equal(page.next_token, "tok/+=");
}

static void the_last_page_is_not_truncated(void **state)
{
    (void)state;
    const char *x = PAGE("<IsTruncated>false</IsTruncated>");
    struct s3_xml_list page;
    assert_int_equal(s3_xml_list_parse(x, strlen(x), collect, &(struct seen){ 0 }, &page), 0);
    assert_false(page.truncated);
    assert_int_equal(page.n_keys, 0);
}

static void malformed_pages_are_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "<Error><Code>x</Code></Error>",                              /* not a listing */
        PAGE("<Contents><Key>k</Key>"),                                /* unclosed */
        PAGE("<Contents><Size>1</Size></Contents>"),                   /* no key */
        PAGE("<Contents><Key>k</Key><Size>-1</Size></Contents>"),
        PAGE("<Contents><Key>k</Key><Size>99999999999999999999</Size></Contents>"),
        PAGE("<Contents><Key>a&bogus;</Key></Contents>"),
        PAGE("<Contents><Key>a&#0;</Key></Contents>"),
        PAGE("<Contents><Key>a&#x110000;</Key></Contents>"),
        PAGE("<Contents><Key><b>k</b></Key></Contents>"),
        PAGE("<IsTruncated>true</IsTruncated>"),                       /* no token */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct s3_xml_list page;
        assert_int_equal(s3_xml_list_parse(bad[i], strlen(bad[i]), NULL, NULL, &page), -EBADMSG);
    }
}

static void a_key_longer_than_s3_allows_is_refused(void **state)
{
    (void)state;
    size_t n = S3_XML_KEY_MAX + 1;
    char *x = malloc(n + 200);
    int len = sprintf(x, "<ListBucketResult><Contents><Key>");
    memset(x + len, 'k', n);
    len += (int)n;
    len += sprintf(x + len, "</Key></Contents></ListBucketResult>");
    struct s3_xml_list page;
    assert_int_equal(s3_xml_list_parse(x, (size_t)len, NULL, NULL, &page), -EBADMSG);
    free(x);
}

static void the_callback_can_stop_the_parse(void **state)
{
    (void)state;
    const char *x = PAGE("<Contents><Key>a</Key></Contents><Contents><Key>b</Key></Contents>"
                         "<Contents><Key>c</Key></Contents><Contents><Key>d</Key></Contents>"
                         "<Contents><Key>e</Key></Contents>");
    struct seen s = { 0 };
    struct s3_xml_list page;
    assert_int_equal(s3_xml_list_parse(x, strlen(x), collect, &s, &page), -E2BIG);
    assert_int_equal(s.n, 4);
}

static void an_error_body_gives_code_and_message(void **state)
{
    (void)state;
    const char *x = "<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code>"
                    "<Message>The specified bucket does not exist &amp; so on</Message></Error>";
    char code[32], msg[64];
    assert_int_equal(s3_xml_error_parse(x, strlen(x), code, sizeof code, msg, sizeof msg), 0);
    assert_string_equal(code, "NoSuchBucket");
    assert_string_equal(msg, "The specified bucket does not exist & so on");
    assert_int_equal(s3_xml_error_parse("<html>502</html>", 16, code, sizeof code, msg,
                                        sizeof msg), -ENOENT);
    assert_string_equal(code, "");
    assert_int_equal(s3_xml_error_parse(x, strlen(x), code, 4, msg, sizeof msg), -EBADMSG);
}

static void parsing_stays_inside_the_length_given(void **state)
{
    (void)state;
    /* the closing tag lies past len: not seen */
    const char *x = PAGE("<Contents><Key>k</Key></Contents>");
    size_t cut = (size_t)(strstr(x, "</Contents>") - x);
    struct s3_xml_list page;
    assert_int_equal(s3_xml_list_parse(x, cut, NULL, NULL, &page), -EBADMSG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_page_gives_each_key_size_and_etag),
        cmocka_unit_test(the_last_page_is_not_truncated),
        cmocka_unit_test(malformed_pages_are_refused),
        cmocka_unit_test(a_key_longer_than_s3_allows_is_refused),
        cmocka_unit_test(the_callback_can_stop_the_parse),
        cmocka_unit_test(an_error_body_gives_code_and_message),
        cmocka_unit_test(parsing_stays_inside_the_length_given),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
