/*
 * idx_fixture.h — the cmocka fixture of the index's unit tests
 * (test_idx.c, test_idx_trig.c): a fresh index in a temporary directory,
 * opened for writing, removed with its directory after the test.
 * For tests only. Use idx_fx_setup / idx_fx_teardown as setup and
 * teardown; *state is a struct fx (the tag the tests already used).
 */
#ifndef D9_TEST_IDX_FIXTURE_H
#define D9_TEST_IDX_FIXTURE_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "collector/store/idx.h"

struct fx {
    char dir[128];
    struct idx *x;
};

static inline int idx_fx_rm(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st; (void)flag; (void)f;
    return remove(p);
}

static inline int idx_fx_setup(void **state)
{
    struct fx *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    strcpy(fx->dir, "/tmp/d9idxtest.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    assert_int_equal(idx_open(&fx->x, fx->dir), 0);
    *state = fx;
    return 0;
}

static inline int idx_fx_teardown(void **state)
{
    struct fx *fx = *state;
    idx_close(fx->x);
    nftw(fx->dir, idx_fx_rm, 8, FTW_DEPTH | FTW_PHYS);
    free(fx);
    return 0;
}

#endif /* D9_TEST_IDX_FIXTURE_H */
