/*
 * test_perfmap.c — unit tests of the perf map reader (collector/store/perfmap.c)
 * and of JIT frame naming through "d9.map" records (sym.c): good and bad
 * lines, partial lines across feeds, overlaps, caps, hostile files
 * (symlink, wrong owner, not regular, too large) and the resolver's
 * precedence (JIT name in anonymous memory, "[anon]+0x" otherwise).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "collector/store/perfmap.h"
#include "collector/store/sym.h"

static long feed(struct perfmap *m, const char *s)
{
    return perfmap_feed(m, s, strlen(s));
}

static void test_good_lines(void **state)
{
    (void)state;
    struct perfmap m;
    perfmap_init(&m);
    assert_int_equal(feed(&m, "7f0000001000 40 LazyCompile:*busy /tmp/a.js:3:1\n"
                              "0x7f0000002000 0x10 py::f:/x.py\n"), 2);
    assert_int_equal(m.n, 2);
    assert_int_equal(m.e[0].start, 0x7f0000001000ull);
    assert_int_equal(m.e[0].end, 0x7f0000001040ull);
    assert_string_equal(m.e[0].name, "LazyCompile:*busy /tmp/a.js:3:1");
    assert_string_equal(perfmap_lookup(&m, 0x7f000000103full)->name,
                        "LazyCompile:*busy /tmp/a.js:3:1");
    assert_null(perfmap_lookup(&m, 0x7f0000001040ull));
    assert_string_equal(perfmap_lookup(&m, 0x7f0000002008ull)->name, "py::f:/x.py");
    assert_int_equal(m.bad, 0);
    perfmap_free(&m);
}

static void test_bad_lines_skipped_and_counted(void **state)
{
    (void)state;
    struct perfmap m;
    perfmap_init(&m);
    assert_int_equal(feed(&m, "garbage\n"
                              "1000 0 zero_size\n"
                              "ffffffffffffff00 1000 wraps\n"
                              "1000 10\n"                       /* no name */
                              "zz 10 nothex\n"
                              "10000000000000000 10 toolong_hex\n"
                              "1000 10 ok\x01name\n"), 1);
    assert_int_equal(m.bad, 6);
    assert_string_equal(m.e[0].name, "ok?name");   /* control bytes replaced */
    perfmap_free(&m);
}

static void test_partial_line_waits_for_its_end(void **state)
{
    (void)state;
    struct perfmap m;
    perfmap_init(&m);
    assert_int_equal(feed(&m, "1000 10 fir"), 0);
    assert_int_equal(feed(&m, "st\n2000 1"), 1);
    assert_int_equal(feed(&m, "0 second\n"), 1);
    assert_string_equal(m.e[0].name, "first");
    assert_string_equal(m.e[1].name, "second");
    perfmap_free(&m);
}

static void test_overlap_later_wins(void **state)
{
    (void)state;
    struct perfmap m;
    perfmap_init(&m);
    assert_int_equal(feed(&m, "1000 100 old\n1000 100 new\n"), 2);
    assert_string_equal(perfmap_lookup(&m, 0x1010)->name, "new");
    perfmap_free(&m);
}

static void test_caps(void **state)
{
    (void)state;
    struct perfmap m;
    perfmap_init(&m);
    /* an over-long line is dropped whole, the next one is read */
    size_t big = PERFMAP_LINE_MAX * 3;
    char *s = malloc(big + 32);
    assert_non_null(s);
    memset(s, 'a', big);
    s[0] = '1'; s[1] = ' '; s[2] = '1'; s[3] = ' ';
    strcpy(s + big, "\n5000 10 after\n");
    assert_int_equal(feed(&m, s), 1);
    assert_string_equal(m.e[0].name, "after");
    assert_int_equal(m.bad, 1);
    free(s);
    /* names are cut */
    char line[PERFMAP_LINE_MAX];
    int k = snprintf(line, sizeof line, "6000 10 ");
    memset(line + k, 'n', 500);
    strcpy(line + k + 500, "\n");
    assert_int_equal(feed(&m, line), 1);
    assert_int_equal(strlen(m.e[1].name), PERFMAP_NAME_MAX);
    /* entry cap */
    char one[64];
    long added = 0;
    for (unsigned i = 0; i < PERFMAP_ENTRIES_MAX + 10; i++) {
        snprintf(one, sizeof one, "%x 10 f%u\n", 0x100000 + i * 16, i);
        added += feed(&m, one);
    }
    assert_int_equal(m.n, PERFMAP_ENTRIES_MAX);
    assert_int_equal(added, PERFMAP_ENTRIES_MAX - 2);
    assert_true(m.full);
    perfmap_free(&m);
}

static char dir[] = "/tmp/d9perfmapXXXXXX";

static void path_of(char *buf, size_t cap, uint32_t pid)
{
    snprintf(buf, cap, "%s/perf-%u.map", dir, pid);
}

static void test_poll_reads_incrementally(void **state)
{
    (void)state;
    char p[256];
    path_of(p, sizeof p, 101);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("1000 10 a\n2000 1", f);
    fflush(f);
    struct perfmap m;
    perfmap_init(&m);
    assert_int_equal(perfmap_poll(&m, 101, (uint32_t)getuid(), dir), 1);
    fputs("0 b\n3000 10 c\n", f);
    fflush(f);
    assert_int_equal(perfmap_poll(&m, 101, (uint32_t)getuid(), dir), 2);
    assert_int_equal(perfmap_poll(&m, 101, (uint32_t)getuid(), dir), 0);
    assert_string_equal(m.e[1].name, "b");
    fclose(f);
    /* no file: nothing, no error */
    assert_int_equal(perfmap_poll(&m, 999999, (uint32_t)getuid(), dir), 0);
    perfmap_free(&m);
    unlink(p);
}

static void test_poll_refuses_hostile_files(void **state)
{
    (void)state;
    char p[256], t[256];
    struct perfmap m;
    perfmap_init(&m);
    /* symlink (to a file that would otherwise be fine) */
    snprintf(t, sizeof t, "%s/target", dir);
    FILE *f = fopen(t, "w");
    assert_non_null(f);
    fputs("1000 10 a\n", f);
    fclose(f);
    path_of(p, sizeof p, 102);
    assert_int_equal(symlink(t, p), 0);
    assert_int_equal(perfmap_poll(&m, 102, (uint32_t)getuid(), dir), -ELOOP);
    unlink(p);
    /* wrong owner */
    path_of(p, sizeof p, 103);
    assert_int_equal(rename(t, p), 0);
    assert_int_equal(perfmap_poll(&m, 103, (uint32_t)getuid() + 1, dir), -EPERM);
    assert_int_equal(m.n, 0);
    /* too large (sparse) */
    assert_int_equal(truncate(p, (off_t)PERFMAP_FILE_MAX + 1), 0);
    assert_int_equal(perfmap_poll(&m, 103, (uint32_t)getuid(), dir), -EFBIG);
    unlink(p);
    /* not a regular file */
    path_of(p, sizeof p, 104);
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_int_equal(perfmap_poll(&m, 104, (uint32_t)getuid(), dir), -EINVAL);
    unlink(p);
    assert_int_equal(m.n, 0);
    perfmap_free(&m);
}

static void add_map(struct sym_resolver *r, uint64_t start, uint64_t end, const char *path)
{
    struct sym_map_rec mr;
    memset(&mr, 0, sizeof mr);
    mr.start = start;
    mr.end = end;
    snprintf(mr.path, sizeof mr.path, "%s", path);
    assert_int_equal(sym_resolver_add(r, &mr), 0);
}

static void test_jit_records_name_anonymous_frames(void **state)
{
    (void)state;
    uint8_t buf[4096];
    struct sym_maps_state st;
    memset(&st, 0, sizeof st);
    long n = sym_jit_encode(0x7f0000001000ull, 0x7f0000001040ull, "LazyCompile:*busy a.js:3",
                            42, &st, buf, sizeof buf);
    assert_true(n > 0);
    assert_int_equal(sym_jit_encode(1, 2, "x", 42, &st, buf, 8), -ENOBUFS);
    struct sym_map_rec rec;
    assert_int_equal(sym_map_decode(buf, (size_t)n, &rec), 0);
    assert_string_equal(rec.path, SYM_JIT_PREFIX "LazyCompile:*busy a.js:3");

    struct sym_resolver *r;
    assert_int_equal(sym_resolver_new(&r, ""), 0);
    add_map(r, 0x7f0000000000ull, 0x7f0000100000ull, "");     /* anonymous r-x */
    assert_int_equal(sym_resolver_add(r, &rec), 0);
    assert_int_equal(sym_resolver_add(r, &rec), 0);             /* again: kept once */
    char name[256];
    sym_resolve(r, 0x7f0000001010ull, 0, name, sizeof name);
    assert_string_equal(name, "LazyCompile:*busy_a.js:3");
    sym_resolve(r, 0x7f0000002000ull, 0, name, sizeof name);
    assert_string_equal(name, "[anon]+0x7f0000002000");
    /* unmapped but in the perf map: named too */
    struct sym_map_rec r2 = rec;
    r2.start = 0x10000;
    r2.end = 0x10010;
    snprintf(r2.path, sizeof r2.path, "%sinterp", SYM_JIT_PREFIX);
    assert_int_equal(sym_resolver_add(r, &r2), 0);
    sym_resolve(r, 0x10008, 0, name, sizeof name);
    assert_string_equal(name, "interp");
    sym_resolver_free(r);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_lines),
        cmocka_unit_test(test_bad_lines_skipped_and_counted),
        cmocka_unit_test(test_partial_line_waits_for_its_end),
        cmocka_unit_test(test_overlap_later_wins),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_poll_reads_incrementally),
        cmocka_unit_test(test_poll_refuses_hostile_files),
        cmocka_unit_test(test_jit_records_name_anonymous_frames),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(dir);
    return rc;
}
