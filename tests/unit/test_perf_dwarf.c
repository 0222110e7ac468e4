/*
 * test_perf_dwarf.c — --stack-mode dwarf: parsing the user registers and
 * stack copy of a perf sample (perf_parse_sample_as with
 * PERF_DWARF_SAMPLE_BITS) on synthetic, truncated and hostile records, and
 * unw_sample (unwind.c) on this process's own stack (getcontext) and on
 * garbage registers / stack.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include "collector/daemon/perf.h"
#include "collector/daemon/unwind.h"

#define DW_TYPE (PERF_D9_SAMPLE_TYPE | PERF_DWARF_SAMPLE_BITS)

static size_t put(uint8_t *b, size_t off, uint64_t v)
{
    memcpy(b + off, &v, 8);
    return off + 8;
}

/* A cpu-clock sample with one ip, regs (abi), a stack copy of size bytes
 * (dyn valid). Returns the record length. */
static size_t make_rec(uint8_t *b, uint64_t abi, uint64_t size, uint64_t dyn)
{
    size_t o = sizeof(struct perf_event_header);
    o = put(b, o, 7);                   /* id */
    o = put(b, o, 42ull | 43ull << 32); /* pid, tid */
    o = put(b, o, 1000);                /* time */
    o = put(b, o, 10101);               /* period */
    o = put(b, o, 1);                   /* nr */
    o = put(b, o, 0x401000);            /* ip */
    o = put(b, o, abi);
    if (abi != PERF_SAMPLE_REGS_ABI_NONE)
        for (unsigned i = 0; i < UNW_REGS_N; i++)
            o = put(b, o, 0x1000 + i);
    o = put(b, o, size);
    if (size) {
        memset(b + o, 0xab, size);
        o += size;
        o = put(b, o, dyn);
    }
    struct perf_event_header h = { PERF_RECORD_SAMPLE, 0, (uint16_t)o };
    memcpy(b, &h, sizeof h);
    return o;
}

static void test_parse_regs_and_stack(void **state)
{
    (void)state;
    uint8_t b[1024];
    struct perf_sample s;
    size_t len = make_rec(b, PERF_SAMPLE_REGS_ABI_64, 64, 32);
    assert_int_equal(perf_parse_sample_as(b, len, DW_TYPE, &s), 0);
    assert_int_equal(s.nr, 1);
    assert_non_null(s.regs);
    uint64_t r8;
    memcpy(&r8, s.regs + 8 * 8, 8);
    assert_int_equal(r8, 0x1008);
    assert_non_null(s.stack);
    assert_int_equal(s.stack_len, 32);  /* dyn_size, not the copy's size */
    assert_int_equal(s.stack[0], 0xab);
    /* without the bits the same layout is not asked for: fields stay empty */
    assert_int_equal(perf_parse_sample_as(b, len, PERF_D9_SAMPLE_TYPE, &s), 0);
    assert_null(s.regs);
    assert_null(s.stack);
}

static void test_parse_dyn_larger_than_copy_is_clamped(void **state)
{
    (void)state;
    uint8_t b[1024];
    struct perf_sample s;
    size_t len = make_rec(b, PERF_SAMPLE_REGS_ABI_64, 64, 1u << 30);
    assert_int_equal(perf_parse_sample_as(b, len, DW_TYPE, &s), 0);
    assert_int_equal(s.stack_len, 64);
}

static void test_parse_no_regs_no_stack(void **state)
{
    (void)state;
    uint8_t b[1024];
    struct perf_sample s;
    size_t len = make_rec(b, PERF_SAMPLE_REGS_ABI_NONE, 0, 0);
    assert_int_equal(perf_parse_sample_as(b, len, DW_TYPE, &s), 0);
    assert_null(s.regs);
    assert_null(s.stack);
    assert_int_equal(s.stack_len, 0);
}

static void test_parse_truncated_everywhere(void **state)
{
    (void)state;
    uint8_t b[1024];
    struct perf_sample s;
    size_t len = make_rec(b, PERF_SAMPLE_REGS_ABI_64, 64, 64);
    for (size_t l = 0; l < len; l++)
        assert_int_equal(perf_parse_sample_as(b, l, DW_TYPE, &s), -EBADMSG);
    /* a stack size larger than what is left */
    size_t size_off = sizeof(struct perf_event_header) + 6 * 8 + 8 + UNW_REGS_N * 8;
    put(b, size_off, 1ull << 40);
    assert_int_equal(perf_parse_sample_as(b, len, DW_TYPE, &s), -EBADMSG);
    put(b, size_off, UINT64_MAX);
    assert_int_equal(perf_parse_sample_as(b, len, DW_TYPE, &s), -EBADMSG);
    /* one of the two bits alone is not a layout d9 asks for */
    assert_int_equal(perf_parse_sample_as(b, len, PERF_D9_SAMPLE_TYPE | PERF_SAMPLE_REGS_USER,
                                          &s), -EINVAL);
}

/* perf order AX BX CX DX SI DI BP SP IP R8..R15 from a ucontext */
static void regs_of(const ucontext_t *uc, uint64_t *r)
{
    const greg_t *g = uc->uc_mcontext.gregs;
    const int idx[UNW_REGS_N] = { REG_RAX, REG_RBX, REG_RCX, REG_RDX, REG_RSI, REG_RDI,
                                  REG_RBP, REG_RSP, REG_RIP, REG_R8, REG_R9, REG_R10,
                                  REG_R11, REG_R12, REG_R13, REG_R14, REG_R15 };
    for (unsigned i = 0; i < UNW_REGS_N; i++)
        r[i] = (uint64_t)g[idx[i]];
}

/* the kernel's copy of the user stack: raw bytes, redzones included (not
 * instrumented: ASan would flag the other frames' redzones) */
__attribute__((no_sanitize_address, noinline)) static void copy_stack(uint8_t *dst,
                                                                      uintptr_t src, size_t n)
{
    const volatile uint8_t *p = (const volatile uint8_t *)src;
    for (size_t i = 0; i < n; i++)
        dst[i] = p[i];
}

/* bytes from sp to the end of its mapping (the kernel's copy stops there) */
static size_t stack_left(uintptr_t sp)
{
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[512];
    size_t left = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && sp >= lo && sp < hi)
            left = hi - sp;
    }
    fclose(f);
    return left;
}

static uint16_t g_frames;
static uint64_t g_out[64];

__attribute__((noinline)) static void unwind_here(struct unw *u)
{
    ucontext_t uc;
    static uint8_t copy[UNW_STACK_BYTES];
    uint64_t regs[UNW_REGS_N];
    assert_int_equal(getcontext(&uc), 0);
    regs_of(&uc, regs);
    /* the live stack from SP up, as the kernel would copy it */
    size_t n = stack_left((uintptr_t)regs[7]);
    if (n > sizeof copy)
        n = sizeof copy;
    copy_stack(copy, (uintptr_t)regs[7], n);
    g_frames = unw_sample(u, (uint32_t)syscall(SYS_gettid), (const uint8_t *)regs, copy, n,
                          g_out, 64, 1);
    __asm__ volatile("" ::: "memory");
}

static void test_unwind_own_stack(void **state)
{
    (void)state;
    struct unw *u = unw_open((uint32_t)getpid());
    assert_non_null(u);
    unwind_here(u);
    /* unwind_here, this test, cmocka's runner, ... main, libc */
    assert_true(g_frames >= 4);
    uint64_t ok, failed, ns;
    unw_counts(u, &ok, &failed, &ns);
    assert_int_equal(ok, 1);
    assert_int_equal(failed, 0);
    assert_true(ns > 0);
    unw_close(u);
}

static void test_unwind_garbage_is_bounded(void **state)
{
    (void)state;
    struct unw *u = unw_open((uint32_t)getpid());
    assert_non_null(u);
    uint64_t regs[UNW_REGS_N];
    uint8_t stack[256];
    uint64_t out[8];
    srand(9);
    for (int t = 0; t < 200; t++) {
        for (unsigned i = 0; i < UNW_REGS_N; i++)
            regs[i] = ((uint64_t)rand() << 33) ^ (uint64_t)rand();
        if (t % 2)      /* a pc in our own code: CFI is found, the stack is garbage */
            regs[8] = (uint64_t)(uintptr_t)&test_unwind_garbage_is_bounded + (uint64_t)(t % 64);
        for (size_t i = 0; i < sizeof stack; i++)
            stack[i] = (uint8_t)rand();
        size_t len = (size_t)(t % 5) * 60;  /* 0, truncated, odd lengths */
        uint16_t n = unw_sample(u, 1, (const uint8_t *)regs, t % 7 ? stack : NULL, len, out,
                                (uint16_t)(1 + t % 8), 1 + (uint64_t)t * 200000000ull);
        assert_true(n <= 1 + t % 8);
    }
    assert_int_equal(unw_sample(u, 1, NULL, stack, sizeof stack, out, 8, 1), 0);
    assert_int_equal(unw_sample(u, 1, (const uint8_t *)regs, stack, sizeof stack, out, 0, 1), 0);
    unw_close(u);
    unw_close(NULL);
    assert_int_equal(unw_sample(NULL, 1, (const uint8_t *)regs, stack, 8, out, 8, 1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_regs_and_stack),
        cmocka_unit_test(test_parse_dyn_larger_than_copy_is_clamped),
        cmocka_unit_test(test_parse_no_regs_no_stack),
        cmocka_unit_test(test_parse_truncated_everywhere),
        cmocka_unit_test(test_unwind_own_stack),
        cmocka_unit_test(test_unwind_garbage_is_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
