/*
 * test_sql_group.c — sql_group.c: rows come back bucket by bucket in key
 * order (text as SQLite's BINARY collation orders it, integers by value),
 * each bucket's rows in the order they were added, across many chunks.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "collector/sql/sql_group.h"

struct row {
    uint64_t v;
    uint32_t key_rank;
    uint32_t pad;
};

static void text_keys_come_back_in_binary_order(void **state)
{
    (void)state;
    struct sql_group *g;
    assert_int_equal(sql_group_new(sizeof(struct row), &g), 0);
    /* ranks as BINARY orders them: a prefix first, bytes unsigned */
    static const char *const keys[] = { "b", "a", "\xc3\xa9t\xc3\xa9", "ab", "B", "a.c:10 f" };
    static const uint32_t rank[] = { 4, 1, 5, 3, 0, 2 };
    for (uint64_t i = 0; i < 60; i++) {
        size_t k = (size_t)(i * 7 % 6);
        int b = sql_group_bucket_text(g, keys[k]);
        assert_true(b >= 0);
        struct row r = { i, rank[k], 0 };
        assert_int_equal(sql_group_add(g, b, &r), 0);
    }
    assert_int_equal(sql_group_seal(g), 0);
    const struct row *r;
    uint32_t last_rank = 0;
    uint64_t last_v = 0, n = 0;
    while ((r = sql_group_next(g))) {
        assert_true(r->key_rank >= last_rank);
        if (n && r->key_rank == last_rank)
            assert_true(r->v > last_v);         /* a bucket keeps the order of adds */
        last_rank = r->key_rank;
        last_v = r->v;
        n++;
    }
    assert_int_equal(n, 60);
    assert_null(sql_group_next(g));
    sql_group_free(g);
}

static void integer_keys_and_many_rows_span_chunks(void **state)
{
    (void)state;
    struct sql_group *g;
    assert_int_equal(sql_group_new(sizeof(struct row), &g), 0);
    const uint64_t n = 200000;
    for (uint64_t i = 0; i < n; i++) {
        int64_t key = (int64_t)(i % 3) - 1;    /* -1, 0, 1 */
        int b = sql_group_bucket_int(g, key);
        assert_true(b >= 0 && b < 3);
        struct row r = { i, (uint32_t)(key + 1), 0 };
        assert_int_equal(sql_group_add(g, b, &r), 0);
    }
    assert_true(sql_group_bytes(g) >= n * sizeof(struct row));
    assert_int_equal(sql_group_seal(g), 0);
    const struct row *r;
    uint64_t seen = 0, last_v = 0;
    uint32_t last_rank = 0;
    while ((r = sql_group_next(g))) {
        assert_true(r->key_rank >= last_rank);
        if (seen && r->key_rank == last_rank)
            assert_int_equal(r->v, last_v + 3);
        else
            assert_int_equal(r->v, r->key_rank);     /* the first row of its bucket */
        last_rank = r->key_rank;
        last_v = r->v;
        seen++;
    }
    assert_int_equal(seen, n);
    sql_group_free(g);
}

static void many_buckets_grow_the_table(void **state)
{
    (void)state;
    struct sql_group *g;
    assert_int_equal(sql_group_new(sizeof(struct row), &g), 0);
    char key[32];
    for (uint32_t i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "loc%05u", 4999 - i);
        int b = sql_group_bucket_text(g, key);
        assert_int_equal(b, (int)i);
        assert_int_equal(sql_group_bucket_text(g, key), b);     /* found again */
        struct row r = { 4999 - i, 0, 0 };
        assert_int_equal(sql_group_add(g, b, &r), 0);
    }
    assert_int_equal(sql_group_seal(g), 0);
    for (uint64_t i = 0; i < 5000; i++) {
        const struct row *r = sql_group_next(g);
        assert_non_null(r);
        assert_int_equal(r->v, i);
    }
    assert_null(sql_group_next(g));
    sql_group_free(g);
}

static void an_empty_group_yields_nothing_and_adds_after_seal_fail(void **state)
{
    (void)state;
    struct sql_group *g;
    assert_int_equal(sql_group_new(0, &g), -EINVAL);
    assert_int_equal(sql_group_new(sizeof(struct row), &g), 0);
    int b = sql_group_bucket_int(g, 7);
    assert_int_equal(sql_group_seal(g), 0);
    assert_null(sql_group_next(g));
    struct row r = { 1, 0, 0 };
    assert_int_equal(sql_group_add(g, b, &r), -EINVAL);
    assert_int_equal(sql_group_bucket_int(g, 8), -EINVAL);
    sql_group_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(text_keys_come_back_in_binary_order),
        cmocka_unit_test(integer_keys_and_many_rows_span_chunks),
        cmocka_unit_test(many_buckets_grow_the_table),
        cmocka_unit_test(an_empty_group_yields_nothing_and_adds_after_seal_fail),
    };
    return cmocka_run_group_tests_name("sql_group", tests, NULL, NULL);
}
