/*
 * test_perf_tick.c — collector/daemon/perf_tick.c: the sampling period for a
 * frequency, the filter text, the probe on made-up tracefs / kallsyms /
 * nohz_full files (every refusal with its errno and reason), the probe on
 * this machine (skipped with its reason where the tick cannot be sampled),
 * and cutting the tick interrupt's frames off callchains.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include "collector/daemon/perf_tick.h"

static char g_dir[64];

static const char *put(const char *name, const char *text)
{
    static char paths[4][128];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", g_dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return p;
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/test_perf_tick.XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *k_syms =
    "0000000000000000 A fixed_percpu_data\n"
    "ffffffff81000000 T _text\n"
    "ffffffff81000df0 T asm_sysvec_apic_timer_interrupt\n"
    "ffffffff81000e10 T asm_sysvec_x86_platform_ipi\n"
    "garbage line\n"
    "ffffffff81400000 t tick_sched_timer\n"
    "ffffffff814428a0 t tick_nohz_handler\n"
    "ffffffff814428f0 t tick_nohz_lowres_handler\n"
    "ffffffffc0000000 t some_fn\t[some_module]\n";

static struct perf_tick_paths fake(const char *syms, const char *nohz, const char *id)
{
    struct perf_tick_paths p = { 0 };
    p.kallsyms = put("kallsyms", syms);
    p.nohz_full = put("nohz_full", nohz);
    p.tp_id = put("id", id);
    p.tick_ns = 4000000;
    p.no_check = 1;
    return p;
}

static void test_period_is_the_nearest_divisor_of_the_tick_rate(void **state)
{
    (void)state;
    assert_int_equal(perf_tick_period(4000000, 99), 3);     /* HZ 250: 83.3 Hz, not 125 */
    assert_int_equal(perf_tick_period(4000000, 125), 2);
    assert_int_equal(perf_tick_period(4000000, 250), 1);
    assert_int_equal(perf_tick_period(4000000, 999), 1);    /* never faster than the tick */
    assert_int_equal(perf_tick_period(4000000, 1), 250);
    assert_int_equal(perf_tick_period(1000000, 99), 10);    /* HZ 1000: 100 Hz */
    assert_int_equal(perf_tick_period(10000000, 99), 1);    /* HZ 100 */
    assert_int_equal(perf_tick_period(10000000, 33), 3);
    assert_int_equal(perf_tick_period(3333333, 99), 3);     /* HZ 300 */
    assert_int_equal(perf_tick_period(4000000, 0), 1);
    assert_int_equal(perf_tick_period(0, 99), 1);
}

static void test_filter_names_the_handler_and_leaves_out_idle(void **state)
{
    (void)state;
    struct perf_tick t = { .handler = 0xffffffff814428a0ull };
    char buf[PERF_TICK_FILTER_MAX];
    int n = perf_tick_filter(&t, buf, sizeof buf);
    assert_true(n > 0);
    assert_string_equal(buf, "function == 0xffffffff814428a0 && common_pid != 0");
    assert_int_equal(perf_tick_filter(&t, buf, 10), -ENAMETOOLONG);
}

static void test_probe_reads_the_tracepoint_handler_and_entry_stub(void **state)
{
    (void)state;
    struct perf_tick_paths p = fake(k_syms, "(null)\n", "459\n");
    struct perf_tick t;
    char why[256];
    assert_int_equal(perf_tick_probe(&t, &p, why, sizeof why), 0);
    assert_int_equal(t.tp_id, 459);
    assert_int_equal(t.tick_ns, 4000000);
    /* the newer name wins whatever the order */
    assert_int_equal(t.handler, 0xffffffff814428a0ull);
    assert_string_equal(t.handler_name, "tick_nohz_handler");
    /* the stub ends where the next symbol starts */
    assert_int_equal(t.entry[0].lo, 0xffffffff81000df0ull);
    assert_int_equal(t.entry[0].hi, 0xffffffff81000e10ull);
    assert_int_equal(t.entry[1].lo, 0);
    assert_true(perf_tick_has_entry(&t));
    /* an empty nohz_full list is no nohz_full CPU */
    p = fake(k_syms, "\n", "459");
    assert_int_equal(perf_tick_probe(&t, &p, why, sizeof why), 0);
}

static void test_probe_takes_the_older_handler_and_works_without_a_stub(void **state)
{
    (void)state;
    struct perf_tick_paths p = fake("ffffffff81400000 t tick_sched_timer\n"
                                    "ffffffff81400100 t after\n", "", "7");
    struct perf_tick t;
    char why[256];
    assert_int_equal(perf_tick_probe(&t, &p, why, sizeof why), 0);
    assert_int_equal(t.handler, 0xffffffff81400000ull);
    assert_string_equal(t.handler_name, "tick_sched_timer");
    assert_false(perf_tick_has_entry(&t));  /* kernel frames will not be collected */
}

static void test_probe_says_why_it_refuses(void **state)
{
    (void)state;
    struct perf_tick t;
    char why[256];
    struct perf_tick_paths p = fake(k_syms, "2-3\n", "459");
    assert_int_equal(perf_tick_probe(&t, &p, why, sizeof why), -EOPNOTSUPP);
    assert_non_null(strstr(why, "nohz_full"));

    p = fake("0000000000000000 t tick_nohz_handler\n0000000000000000 T _text\n", "", "459");
    assert_int_equal(perf_tick_probe(&t, &p, why, sizeof why), -EACCES);
    assert_non_null(strstr(why, "kptr_restrict"));

    p = fake("ffffffff81000000 T _text\nffffffff81000010 T tick_nohz_handler_not\n", "", "459");
    assert_int_equal(perf_tick_probe(&t, &p, why, sizeof why), -ENOENT);
    assert_non_null(strstr(why, "no tick handler"));

    p = fake(k_syms, "", "459");
    p.kallsyms = "/nonexistent/kallsyms";
    assert_int_equal(perf_tick_probe(&t, &p, why, sizeof why), -ENOENT);

    p = fake(k_syms, "", "not a number\n");
    assert_int_equal(perf_tick_probe(&t, &p, why, sizeof why), -ENOENT);
    assert_non_null(strstr(why, "not a tracepoint id"));
    p = fake(k_syms, "", "0\n");
    assert_int_equal(perf_tick_probe(&t, &p, why, sizeof why), -ENOENT);

    p = fake(k_syms, "", "459");
    p.tp_id = "/nonexistent/id";
    assert_int_equal(perf_tick_probe(&t, &p, why, sizeof why), -ENOENT);
    assert_non_null(strstr(why, "tracefs"));

    p = fake(k_syms, "", "459");
    p.tick_ns = 100000;         /* HZ 10000: no such kernel */
    assert_int_equal(perf_tick_probe(&t, &p, why, sizeof why), -EOPNOTSUPP);
    p.tick_ns = 40000000;
    assert_int_equal(perf_tick_probe(&t, &p, why, sizeof why), -EOPNOTSUPP);
}

/* This machine: either the whole chain works (tracepoint, handler, filter,
 * and the tick seen on a spinning thread), or the reason is printed. */
static void test_probe_on_this_machine(void **state)
{
    (void)state;
    struct perf_tick t;
    char why[256];
    int rc = perf_tick_probe(&t, NULL, why, sizeof why);
    if (rc) {
        assert_true(why[0] != 0);
        printf("skipped: the tick cannot be sampled here: %s\n", why);
        return;
    }
    assert_true(t.tp_id > 0);
    assert_true(t.handler >= 0xffff800000000000ull);
    assert_true(t.tick_ns >= PERF_TICK_NS_MIN && t.tick_ns <= PERF_TICK_NS_MAX);
    printf("tick: %s at 0x%llx, %.1f ms, tracepoint %llu, entry stub %s\n", t.handler_name,
           (unsigned long long)t.handler, (double)t.tick_ns / 1e6,
           (unsigned long long)t.tp_id, perf_tick_has_entry(&t) ? "known" : "unknown");
}

#define K ((uint64_t)PERF_CONTEXT_KERNEL)
#define U ((uint64_t)PERF_CONTEXT_USER)

static size_t strip(const uint64_t *in, size_t nr, uint64_t *out, size_t cap, int *unanchored)
{
    static const struct perf_tick t = {
        .entry = { { 0x1000, 0x1020 }, { 0, 0 }, { 0x5000, 0x5040 } },
    };
    return perf_tick_strip(&t, (const uint8_t *)in, nr, out, cap, unanchored);
}

static void test_strip_cuts_at_the_entry_stub(void **state)
{
    (void)state;
    uint64_t out[16];
    int un;
    /* in a system call: the interrupted kernel frames stay */
    const uint64_t a[] = { K, 0x3000, 0x3100, 0x1016, 0x7000, 0x7100, U, 0x400, 0x500 };
    assert_int_equal(strip(a, 9, out, 16, &un), 6);
    const uint64_t ea[] = { K, 0x7000, 0x7100, U, 0x400, 0x500 };
    assert_memory_equal(out, ea, sizeof ea);
    assert_int_equal(un, 0);
    /* in user mode: no kernel frame left */
    const uint64_t b[] = { K, 0x3000, 0x1016, U, 0x400 };
    assert_int_equal(strip(b, 5, out, 16, &un), 3);
    const uint64_t eb[] = { K, U, 0x400 };
    assert_memory_equal(out, eb, sizeof eb);
    assert_int_equal(un, 0);
    /* an interrupt during another's exit: cut at the first (innermost) stub */
    const uint64_t c[] = { K, 0x3000, 0x5008, 0x7000, 0x1016, U, 0x400 };
    assert_int_equal(strip(c, 7, out, 16, &un), 5);
    const uint64_t ec[] = { K, 0x7000, 0x1016, U, 0x400 };
    assert_memory_equal(out, ec, sizeof ec);
    /* the stub's end is exclusive */
    const uint64_t d[] = { K, 0x3000, 0x1020, 0x1016, U };
    assert_int_equal(strip(d, 5, out, 16, &un), 2);
    const uint64_t ed[] = { K, U };
    assert_memory_equal(out, ed, sizeof ed);
}

static void test_strip_drops_kernel_frames_it_cannot_anchor(void **state)
{
    (void)state;
    uint64_t out[16];
    int un;
    const uint64_t a[] = { K, 0x3000, 0x3100, U, 0x400 };
    assert_int_equal(strip(a, 5, out, 16, &un), 3);
    const uint64_t ea[] = { K, U, 0x400 };
    assert_memory_equal(out, ea, sizeof ea);
    assert_int_equal(un, 1);
    /* a stub address in the user part is not an anchor */
    const uint64_t b[] = { K, 0x3000, U, 0x1010 };
    assert_int_equal(strip(b, 4, out, 16, &un), 3);
    assert_int_equal(un, 1);
    /* no kernel part: untouched, and not unanchored */
    const uint64_t c[] = { U, 0x400, 0x500 };
    assert_int_equal(strip(c, 3, out, 16, &un), 3);
    assert_memory_equal(out, c, sizeof c);
    assert_int_equal(un, 0);
    /* an empty kernel part is not unanchored either */
    const uint64_t d[] = { K, U, 0x400 };
    assert_int_equal(strip(d, 3, out, 16, &un), 3);
    assert_int_equal(un, 0);
    /* kernel only, ending in the stub: nothing but the marker */
    const uint64_t e[] = { K, 0x3000, 0x1000 };
    assert_int_equal(strip(e, 3, out, 16, &un), 1);
    assert_int_equal(out[0], K);
    assert_int_equal(strip(e, 0, out, 16, &un), 0);
}

static void test_strip_never_writes_past_cap(void **state)
{
    (void)state;
    uint64_t *out = malloc(4 * sizeof *out);   /* exact size: ASan sees a write past it */
    assert_non_null(out);
    int un;
    const uint64_t a[] = { K, 0x3000, 0x1016, 0x7000, 0x7100, U, 0x400, 0x500, 0x600 };
    assert_int_equal(strip(a, 9, out, 4, &un), 4);
    const uint64_t ea[] = { K, 0x7000, 0x7100, U };
    assert_memory_equal(out, ea, sizeof ea);
    assert_int_equal(strip(a, 9, out, 0, &un), 0);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_period_is_the_nearest_divisor_of_the_tick_rate),
        cmocka_unit_test(test_filter_names_the_handler_and_leaves_out_idle),
        cmocka_unit_test(test_probe_reads_the_tracepoint_handler_and_entry_stub),
        cmocka_unit_test(test_probe_takes_the_older_handler_and_works_without_a_stub),
        cmocka_unit_test(test_probe_says_why_it_refuses),
        cmocka_unit_test(test_probe_on_this_machine),
        cmocka_unit_test(test_strip_cuts_at_the_entry_stub),
        cmocka_unit_test(test_strip_drops_kernel_frames_it_cannot_anchor),
        cmocka_unit_test(test_strip_never_writes_past_cap),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
