/*
 * rollup_fixture.h — the rollup tests' fixture: a private store directory
 * per test (tmpdir.h) with a segment id counter, and a buffer of records
 * built one by one with consecutive sequence numbers, and a META schema
 * entry (schema id 1) for custom events. For test_rollup.c,
 * test_rollup_v4.c and test_rollup_feed.c; header-only, after <cmocka.h>.
 */
#ifndef D9_TEST_ROLLUP_FIXTURE_H
#define D9_TEST_ROLLUP_FIXTURE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "shm/d9_abi.h"
#include "shm/meta.h"
#include "tests/unit/tmpdir.h"

struct fx {
    char dir[64];
    uint64_t id;                /* the last segment id a test used */
};

/* *state gets a fixture whose directory is /tmp/PREFIX.XXXXXX. */
static inline int fx_setup(void **state, const char *prefix)
{
    struct fx *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    assert_int_equal(tmpdir_make(fx->dir, sizeof fx->dir, prefix), 0);
    *state = fx;
    return 0;
}

static inline int teardown(void **state)
{
    struct fx *fx = *state;
    tmpdir_remove(fx->dir);
    free(fx);
    return 0;
}

struct buf {
    uint8_t b[1 << 16];
    size_t len;
    uint32_t seq;
};

/* Append record rec (len bytes) to x, stamped with x's next sequence number. */
static inline void put(struct buf *x, void *rec, size_t len)
{
    struct d9_rec_hdr h;
    memcpy(&h, rec, sizeof h);
    h.seq = x->seq++;
    memcpy(rec, &h, sizeof h);
    assert_true(x->len + len <= sizeof x->b);
    memcpy(x->b + x->len, rec, len);
    x->len += len;
}

/* m gets the META entry defining schema 1 `name` with n fields (types,
 * names); its length (at most cap). */
static inline size_t fx_schema_entry(uint8_t *m, size_t cap, const char *name, unsigned n,
                                     const uint8_t *types, const char *const *names)
{
    uint8_t p[256];
    int k = shm_meta_encode_schema(p, sizeof p, name, n, types, names);
    assert_true(k > 0);
    struct d9_meta_hdr h = { (uint16_t)((sizeof h + (size_t)k + 7) & ~7u), D9_META_SCHEMA, 1 };
    assert_true(h.len <= cap);
    memset(m, 0, h.len);
    memcpy(m, &h, sizeof h);
    memcpy(m + sizeof h, p, (size_t)k);
    return h.len;
}

#endif /* D9_TEST_ROLLUP_FIXTURE_H */
