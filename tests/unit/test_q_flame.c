/*
 * test_q_flame.c — the folded stacks of d9 flame (q_flame_folded) over
 * a store built here with the segment writer and the index: a zero address
 * (the end of a frame-pointer chain) is no frame at all, never "[kernel]";
 * a kernel address is a kernel frame; equal stacks add up; off-CPU reads
 * the other record type.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "collector/query/q_flame.h"
#include "collector/query/q_store.h"
#include "collector/store/idx.h"
#include "collector/store/seg.h"
#include "collector/store/seg_writer.h"

#define PID 4242u
#define BASE 1000000ull
#define KADDR 0xffffffff81000000ull

struct buf {
    uint8_t b[2048];
    size_t n;
};

static void stack_rec(struct buf *b, uint16_t type, uint64_t ts, const uint64_t *ips, uint16_t n)
{
    struct d9_rec_stack r = { { (uint16_t)(sizeof r + 8u * n), type, 0, ts }, PID + 1, n, 0, 10000 };
    assert_true(b->n + sizeof r + 8u * n <= sizeof b->b);
    memcpy(b->b + b->n, &r, sizeof r);
    memcpy(b->b + b->n + sizeof r, ips, 8u * n);
    b->n += sizeof r + 8u * n;
}

/* A store with one process whose samples are
 *   CPU: {0x1000, 0} twice, {0x1000} once, {KADDR, 0x1000, 0} once;
 *   off-CPU: {0x2000, 0} once.
 * (frames innermost first; 0x1000 and 0x2000 are in no mapping). */
static int setup(void **state)
{
    char *dir = malloc(64);
    snprintf(dir, 64, "/tmp/d9tflame.XXXXXX");
    assert_non_null(mkdtemp(dir));
    struct idx *x;
    assert_int_equal(idx_open(&x, dir), 0);
    struct seg_proc_info pi = { .pid = PID, .start_time = 7, .clock_source = D9_CLOCK_MONOTONIC,
                                .host = "h", .comm = "flamed", .exe = "/nonexistent/flamed" };
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, dir, 1, &pi, NULL, 0), 0);
    struct buf b = { .n = 0 };
    static const uint64_t zero_root[] = { 0x1000, 0 }, plain[] = { 0x1000 },
                          kern[] = { KADDR, 0x1000, 0 }, off[] = { 0x2000, 0 };
    stack_rec(&b, D9_REC_CPU_SAMPLE, BASE + 10, zero_root, 2);
    stack_rec(&b, D9_REC_CPU_SAMPLE, BASE + 20, zero_root, 2);
    stack_rec(&b, D9_REC_CPU_SAMPLE, BASE + 30, plain, 1);
    stack_rec(&b, D9_REC_CPU_SAMPLE, BASE + 40, kern, 3);
    stack_rec(&b, D9_REC_SCHED_SWITCH, BASE + 50, off, 2);
    assert_int_equal(seg_writer_add_data(w, PID + 1, 0, 1, 0, b.b, b.n), 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    struct idx_process ip = { .pid = PID, .start_time = 7, .comm = "flamed",
                              .exe = "/nonexistent/flamed", .first_ns = BASE + 10 };
    int64_t row;
    assert_int_equal(idx_process_upsert(x, &ip, &row), 0);
    assert_int_equal(idx_thread_upsert(x, row, PID + 1, 0, 1, "w0", BASE + 10, BASE + 50, 1), 0);
    assert_int_equal(idx_segment_commit(x, row, &sum, dir), 0);
    seg_writer_free(w);
    idx_close(x);
    *state = dir;
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", (char *)*state);
    assert_int_equal(system(cmd), 0);
    free(*state);
    return 0;
}

/* The folded lines of the store's CPU (or off-CPU) samples. */
static char *folded(const char *dir, bool off_cpu, uint64_t *samples)
{
    static char out[4096];
    char why[256];
    struct q_store *s;
    assert_int_equal(q_store_open(&s, dir, why, sizeof why), 0);
    FILE *f = fmemopen(out, sizeof out, "w");
    assert_non_null(f);
    assert_int_equal(q_flame_folded(s, PID, 0, UINT64_MAX, off_cpu, f, samples), 0);
    fclose(f);
    q_store_close(s);
    return out;
}

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_a_zero_address_is_no_frame_and_not_kernel(void **state)
{
    uint64_t samples = 0;
    const char *out = folded(*state, false, &samples);
    printf("%s", out);
    assert_int_equal(samples, 4);
    /* {0x1000, 0} twice and {0x1000} once are one stack of one frame */
    assert_int_equal(lines(out), 2);
    char first[512], second[512];
    assert_int_equal(sscanf(out, "%511[^\n]\n%511[^\n]", first, second), 2);
    const char *one = strchr(first, ';') ? second : first;      /* the line without ';' */
    const char *two = strchr(first, ';') ? first : second;
    assert_null(strchr(one, ';'));
    assert_true(strncmp(one, "[kernel]", 8) != 0);          /* the 0 is not named kernel */
    assert_int_equal(atoi(strrchr(one, ' ') + 1), 3);       /* the three user-only samples */
    /* the kernel address is a kernel frame at the leaf, under the user frame */
    assert_int_equal(atoi(strrchr(two, ' ') + 1), 1);
    assert_int_equal(strncmp(two, one, (size_t)(strrchr(one, ' ') - one)), 0);
    assert_null(strchr(strchr(two, ';') + 1, ';'));          /* two frames, not three */
}

static void test_off_cpu_reads_the_switch_samples(void **state)
{
    uint64_t samples = 0;
    const char *out = folded(*state, true, &samples);
    assert_int_equal(samples, 1);
    assert_int_equal(lines(out), 1);
    assert_null(strchr(out, ';'));
    assert_null(strstr(out, "[kernel]"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_zero_address_is_no_frame_and_not_kernel),
        cmocka_unit_test(test_off_cpu_reads_the_switch_samples),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
