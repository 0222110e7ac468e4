/*
 * tmpdir.h — a unit test's private temporary directory: made from a
 * mkdtemp template, removed with everything in it (nftw, depth first, no
 * symlinks followed). For tests only; header-only so each test binary
 * links nothing extra.
 */
#ifndef D9_TEST_TMPDIR_H
#define D9_TEST_TMPDIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static inline int tmpdir_rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st; (void)flag; (void)f;
    return remove(p);
}

/* dir[cap] gets "/tmp/PREFIX.XXXXXX" made unique; 0, or -1 (too long, mkdtemp). */
static inline int tmpdir_make(char *dir, size_t cap, const char *prefix)
{
    int n = snprintf(dir, cap, "/tmp/%s.XXXXXX", prefix);
    return n > 0 && (size_t)n < cap && mkdtemp(dir) ? 0 : -1;
}

static inline void tmpdir_remove(const char *dir)
{
    nftw(dir, tmpdir_rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

#endif /* D9_TEST_TMPDIR_H */
