/*
 * test_col_json.c — the JSON text builder (collector/store/col_json.c):
 * quote and backslash escaped, control bytes (NUL too) as \u00XX, DEL raw or
 * escaped as the builder was told, UTF-8 as it is; a piece that does not fit
 * is left out whole and stops the builder, which never writes past its
 * buffer; a caller can rewind to a mark.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include "collector/store/col_json.h"

/* the JSON string of n bytes of s, DEL escaped or not, into a large buffer */
static const char *str_of(const char *s, size_t n, bool esc_del)
{
    static char out[256];
    struct col_json j;
    col_json_init(&j, out, sizeof out, esc_del);
    col_json_str(&j, s, n);
    assert_false(j.full);
    assert_int_equal(j.len, strlen(out));
    return out;
}

static void quote_and_backslash_get_a_backslash(void **state)
{
    (void)state;
    assert_string_equal(str_of("a\"b\\c", 5, false), "\"a\\\"b\\\\c\"");
}

static void control_bytes_and_nul_are_u00xx(void **state)
{
    (void)state;
    assert_string_equal(str_of("\x01\n\x1f\0z", 5, false), "\"\\u0001\\u000a\\u001f\\u0000z\"");
    assert_string_equal(str_of(" ~", 2, false), "\" ~\"");     /* 0x20 and 0x7e: raw */
}

static void del_is_raw_unless_the_builder_escapes_it(void **state)
{
    (void)state;
    assert_string_equal(str_of("a\x7f", 2, false), "\"a\x7f\"");
    assert_string_equal(str_of("a\x7f", 2, true), "\"a\\u007f\"");
}

static void utf8_and_high_bytes_are_copied_as_they_are(void **state)
{
    (void)state;
    assert_string_equal(str_of("\xc3\xa9\x80\xff", 4, true), "\"\xc3\xa9\x80\xff\"");
}

static void esc_writes_the_body_without_quotes(void **state)
{
    (void)state;
    char out[16];
    struct col_json j;
    col_json_init(&j, out, sizeof out, false);
    col_json_raw(&j, "[", 1);
    col_json_esc(&j, "\"\t", 2);
    col_json_raw(&j, "]", 1);
    assert_string_equal(out, "[\\\"\\u0009]");
}

static void a_piece_that_does_not_fit_is_left_out_whole_and_stops_the_builder(void **state)
{
    (void)state;
    char out[8];
    memset(out, 'X', sizeof out);
    struct col_json j;
    col_json_init(&j, out, 6, false);           /* 5 bytes and the NUL */
    col_json_raw(&j, "abcd", 4);
    col_json_esc(&j, "\x01", 1);                /* 6 bytes: does not fit */
    assert_true(j.full);
    assert_string_equal(out, "abcd");           /* no half escape */
    col_json_raw(&j, "e", 1);                   /* would fit, but the builder is full */
    assert_string_equal(out, "abcd");
    assert_int_equal(j.len, 4);
    assert_int_equal(out[6], 'X');              /* nothing at or past cap */
    assert_int_equal(out[7], 'X');
}

static void the_last_byte_is_kept_for_the_nul(void **state)
{
    (void)state;
    char out[4];
    struct col_json j;
    col_json_init(&j, out, sizeof out, false);
    col_json_raw(&j, "abcd", 4);
    assert_true(j.full);
    assert_string_equal(out, "");
    col_json_init(&j, out, sizeof out, false);
    col_json_raw(&j, "abc", 3);
    assert_false(j.full);
    assert_string_equal(out, "abc");
}

static void a_zero_sized_buffer_is_never_touched(void **state)
{
    (void)state;
    struct col_json j;
    col_json_init(&j, NULL, 0, false);
    col_json_raw(&j, "", 0);
    assert_true(j.full);
    col_json_str(&j, "a", 1);
    assert_int_equal(j.len, 0);
}

static void a_caller_rewinds_to_a_mark_to_drop_a_partial_member(void **state)
{
    (void)state;
    char out[12];
    struct col_json j;
    col_json_init(&j, out, sizeof out, false);
    col_json_raw(&j, "{", 1);
    col_json_str(&j, "a", 1);                   /* {"a" */
    size_t mark = j.len;
    col_json_raw(&j, ",", 1);
    col_json_str(&j, "bcdefgh", 7);             /* does not fit */
    assert_true(j.full);
    col_json_rewind(&j, mark);
    assert_false(j.full);
    assert_string_equal(out, "{\"a\"");
    col_json_raw(&j, "}", 1);
    assert_string_equal(out, "{\"a\"}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(quote_and_backslash_get_a_backslash),
        cmocka_unit_test(control_bytes_and_nul_are_u00xx),
        cmocka_unit_test(del_is_raw_unless_the_builder_escapes_it),
        cmocka_unit_test(utf8_and_high_bytes_are_copied_as_they_are),
        cmocka_unit_test(esc_writes_the_body_without_quotes),
        cmocka_unit_test(a_piece_that_does_not_fit_is_left_out_whole_and_stops_the_builder),
        cmocka_unit_test(the_last_byte_is_kept_for_the_nul),
        cmocka_unit_test(a_zero_sized_buffer_is_never_touched),
        cmocka_unit_test(a_caller_rewinds_to_a_mark_to_drop_a_partial_member),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
