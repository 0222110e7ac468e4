/*
 * test_sampler.c — agent/sampler.c: configuration parsing, the handshake
 * decision, the frame-pointer walker's bounds on synthetic stacks, and the
 * live fallback on an agent instance: a spinning thread gets CPU_SAMPLE
 * records in a ring of its own whose stacks symbolize to the spinning
 * function, and nothing is sampled when the collector already claimed perf.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "agent/agent.h"
#include "agent/env.h"
#include "agent/sampler.h"
#include "collector/store/sym.h"
#include "shm/record.h"
#include "shm/ring.h"
#include "tests/unit/pagemap.h"

/* ---- config ----------------------------------------------------------------- */

struct env_pair { const char *k, *v; };

static const char *table_get(const char *name, void *ctx)
{
    for (const struct env_pair *p = ctx; p && p->k; p++)
        if (!strcmp(p->k, name))
            return p->v;
    return NULL;
}

static void test_config_defaults_to_auto_99hz(void **state)
{
    (void)state;
    struct ag_sampler_config c;
    char err[256];
    struct env_pair none[] = { { NULL, NULL } };
    assert_int_equal(ag_sampler_config_parse(&c, table_get, none, err, sizeof err), 0);
    assert_int_equal(c.want, AG_SAMPLER_AUTO);
    assert_int_equal(c.hz, AG_SAMPLER_HZ_DEFAULT);
    assert_int_equal(c.wait_ms, AG_SAMPLER_WAIT_MS_DEFAULT);
}

static void test_config_reads_mode_hz_and_wait(void **state)
{
    (void)state;
    struct ag_sampler_config c;
    char err[256];
    struct env_pair e[] = { { "DIAL9_SAMPLER", "itimer" }, { "DIAL9_SAMPLER_HZ", "250" },
                            { "DIAL9_SAMPLER_WAIT_MS", "0" }, { NULL, NULL } };
    assert_int_equal(ag_sampler_config_parse(&c, table_get, e, err, sizeof err), 0);
    assert_int_equal(c.want, AG_SAMPLER_WANT_ITIMER);
    assert_int_equal(c.hz, 250);
    assert_int_equal(c.wait_ms, 0);
}

static void test_config_rejects_unknown_mode_with_message(void **state)
{
    (void)state;
    struct ag_sampler_config c;
    char err[256];
    struct env_pair e[] = { { "DIAL9_SAMPLER", "sometimes" }, { NULL, NULL } };
    assert_int_equal(ag_sampler_config_parse(&c, table_get, e, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "DIAL9_SAMPLER=sometimes"));
}

static void test_config_rejects_out_of_range_hz(void **state)
{
    (void)state;
    struct ag_sampler_config c;
    char err[256];
    struct env_pair zero[] = { { "DIAL9_SAMPLER_HZ", "0" }, { NULL, NULL } };
    struct env_pair big[] = { { "DIAL9_SAMPLER_HZ", "1001" }, { NULL, NULL } };
    struct env_pair junk[] = { { "DIAL9_SAMPLER_HZ", "99x" }, { NULL, NULL } };
    assert_int_equal(ag_sampler_config_parse(&c, table_get, zero, err, sizeof err), -EINVAL);
    assert_int_equal(ag_sampler_config_parse(&c, table_get, big, err, sizeof err), -EINVAL);
    assert_int_equal(ag_sampler_config_parse(&c, table_get, junk, err, sizeof err), -EINVAL);
}

/* ---- handshake ---------------------------------------------------------------- */

static void test_auto_falls_back_only_after_the_wait_without_perf(void **state)
{
    (void)state;
    struct ag_sampler_config c = { AG_SAMPLER_AUTO, 99, 3000 };
    assert_false(ag_sampler_should_fallback(&c, D9_SAMPLER_NONE, 2999999999ull));
    assert_true(ag_sampler_should_fallback(&c, D9_SAMPLER_NONE, 3000000000ull));
    assert_false(ag_sampler_should_fallback(&c, D9_SAMPLER_PERF, 9000000000ull));
}

static void test_itimer_falls_back_at_once_unless_perf_claimed(void **state)
{
    (void)state;
    struct ag_sampler_config c = { AG_SAMPLER_WANT_ITIMER, 99, 3000 };
    assert_true(ag_sampler_should_fallback(&c, D9_SAMPLER_NONE, 0));
    assert_false(ag_sampler_should_fallback(&c, D9_SAMPLER_PERF, 0));
}

static void test_perf_and_off_never_fall_back(void **state)
{
    (void)state;
    struct ag_sampler_config p = { AG_SAMPLER_WANT_PERF, 99, 0 };
    struct ag_sampler_config o = { AG_SAMPLER_OFF, 99, 0 };
    assert_false(ag_sampler_should_fallback(&p, D9_SAMPLER_NONE, 1ull << 40));
    assert_false(ag_sampler_should_fallback(&o, D9_SAMPLER_NONE, 1ull << 40));
}

/* ---- frame-pointer walker ------------------------------------------------------- */

#define STK_WORDS 64

/* A synthetic stack in an exactly-sized heap block (ASan sees any overread):
 * frames at word offsets 4, 12, 20 chained upward, return addresses 0x1001.. */
static uint64_t *make_stack(void)
{
    uint64_t *s = malloc(STK_WORDS * 8);
    memset(s, 0, STK_WORDS * 8);
    uint64_t base = (uint64_t)(uintptr_t)s;
    s[4] = base + 12 * 8;  s[5] = 0x1001;
    s[12] = base + 20 * 8; s[13] = 0x1002;
    s[20] = 0;             s[21] = 0x1003;   /* outermost: next = 0 ends the chain */
    return s;
}

static void test_walk_follows_chain_to_the_outermost_frame(void **state)
{
    (void)state;
    uint64_t *s = make_stack(), out[16];
    uint64_t lo = (uint64_t)(uintptr_t)s, hi = lo + STK_WORDS * 8;
    uint16_t flags;
    uint16_t n = ag_sampler_fp_walk(0x4000, lo + 4 * 8, lo, lo, hi, out, 16, &flags);
    assert_int_equal(n, 4);
    assert_int_equal(out[0], 0x4000);
    assert_int_equal(out[1], 0x1001);
    assert_int_equal(out[2], 0x1002);
    assert_int_equal(out[3], 0x1003);
    assert_int_equal(flags, 0);
    free(s);
}

static void test_walk_never_reads_a_frame_outside_the_stack(void **state)
{
    (void)state;
    uint64_t *s = make_stack(), out[16];
    uint64_t lo = (uint64_t)(uintptr_t)s, hi = lo + STK_WORDS * 8;
    uint16_t flags;
    /* a frame whose 16 bytes would end past hi */
    s[12] = hi - 8;
    assert_int_equal(ag_sampler_fp_walk(0x4000, lo + 4 * 8, lo, lo, hi, out, 16, &flags), 3);
    /* a frame below sp (dead stack) */
    s[12] = lo + 20 * 8;
    assert_int_equal(ag_sampler_fp_walk(0x4000, lo + 4 * 8, lo + 8 * 8, lo, hi, out, 16, &flags),
                     1);
    /* wild pointers are not followed at all */
    assert_int_equal(ag_sampler_fp_walk(0x4000, 0xdeadbeef0, lo, lo, hi, out, 16, &flags), 1);
    assert_int_equal(ag_sampler_fp_walk(0x4000, UINT64_MAX - 7, lo, lo, hi, out, 16, &flags), 1);
    free(s);
}

static void test_walk_stops_at_misaligned_frame(void **state)
{
    (void)state;
    uint64_t *s = make_stack(), out[16];
    uint64_t lo = (uint64_t)(uintptr_t)s, hi = lo + STK_WORDS * 8;
    uint16_t flags;
    s[4] = lo + 12 * 8 + 3;
    assert_int_equal(ag_sampler_fp_walk(0x4000, lo + 4 * 8, lo, lo, hi, out, 16, &flags), 2);
    free(s);
}

static void test_walk_stops_when_chain_does_not_grow(void **state)
{
    (void)state;
    uint64_t *s = make_stack(), out[16];
    uint64_t lo = (uint64_t)(uintptr_t)s, hi = lo + STK_WORDS * 8;
    uint16_t flags;
    s[12] = lo + 4 * 8;         /* loops back to the first frame */
    assert_int_equal(ag_sampler_fp_walk(0x4000, lo + 4 * 8, lo, lo, hi, out, 16, &flags), 3);
    free(s);
}

static void test_walk_truncates_at_max_and_says_so(void **state)
{
    (void)state;
    uint64_t *s = make_stack(), out[2];
    uint64_t lo = (uint64_t)(uintptr_t)s, hi = lo + STK_WORDS * 8;
    uint16_t flags;
    assert_int_equal(ag_sampler_fp_walk(0x4000, lo + 4 * 8, lo, lo, hi, out, 2, &flags), 2);
    assert_int_equal(flags, D9_STACK_TRUNCATED);
    free(s);
}

static void test_walk_off_the_known_stack_records_only_ip(void **state)
{
    (void)state;
    uint64_t *s = make_stack(), out[16];
    uint64_t lo = (uint64_t)(uintptr_t)s, hi = lo + STK_WORDS * 8;
    uint16_t flags;
    /* sp on another stack (sigaltstack, coroutine): fp is not trusted */
    assert_int_equal(ag_sampler_fp_walk(0x4000, lo + 4 * 8, hi + 4096, lo, hi, out, 16, &flags), 1);
    assert_int_equal(ag_sampler_fp_walk(0, lo + 4 * 8, lo, lo, hi, out, 16, &flags), 0);
    free(s);
}

/* ---- live fallback --------------------------------------------------------------- */

struct live {
    char dir[64];
    struct ag_agent a;
};

static int live_setup(void **state)
{
    struct live *l = calloc(1, sizeof *l);
    snprintf(l->dir, sizeof l->dir, "/tmp/d9sampler.XXXXXX");
    assert_non_null(mkdtemp(l->dir));
    struct ag_config c;
    ag_env_defaults(&c, (uint32_t)getuid(), NULL, "test_sampler");
    snprintf(c.shm_dir, sizeof c.shm_dir, "%s", l->dir);
    c.enabled = 1;
    c.max_threads = 8;
    c.ring_data_size = 64 * 1024;
    c.housekeeping = 0;
    c.control = 0;
    assert_int_equal(ag_agent_start(&l->a, &c), 0);
    *state = l;
    return 0;
}

static int live_teardown(void **state)
{
    struct live *l = *state;
    const char *p = ag_agent_region_path(&l->a);
    char path[512];
    snprintf(path, sizeof path, "%s", p ? p : "");
    ag_agent_destroy(&l->a);
    if (path[0])
        unlink(path);
    rmdir(l->dir);
    free(l);
    return 0;
}

__attribute__((noinline)) void d9test_sampler_spin(volatile int *stop);
__attribute__((noinline)) void d9test_sampler_spin(volatile int *stop)
{
    uint64_t x = 1;
    while (!*stop) {
        for (int i = 0; i < 100000; i++)
            x = x * 6364136223846793005ull + 1;
        __asm__ volatile("" : "+r"(x));
    }
}

struct spin_arg {
    struct ag_agent *a;
    volatile int stop;
    volatile int ready;
    uint32_t tid;
    int32_t event_ring;
};

static void *spin_main(void *arg)
{
    struct spin_arg *s = arg;
    struct ag_thread t;
    memset(&t, 0, sizeof t);
    t.ring = -1;
    s->tid = (uint32_t)syscall(SYS_gettid);
    assert_int_equal(ag_agent_thread_attach(s->a, &t), 0);
    s->event_ring = t.ring;
    ag_sampler_thread_start(s->a);
    s->ready = 1;
    d9test_sampler_spin(&s->stop);
    ag_sampler_thread_stop(s->a);
    ag_agent_thread_detach(s->a, &t);
    return NULL;
}

/* The ring (other than skip) owned by tid, or -1. */
static int ring_of(struct ag_agent *a, uint32_t tid, int skip)
{
    const struct d9_region_hdr *h = a->region.hdr;
    for (uint32_t i = 0; i < h->ring_count; i++) {
        const struct d9_ring_hdr *r = (const void *)(a->region.base + h->rings_offset +
                                                      (uint64_t)i * h->ring_stride);
        if ((int)i != skip && r->tid == tid && r->state == D9_RING_OWNED)
            return (int)i;
    }
    return -1;
}

static const char *itimer_env(const char *name, void *ctx)
{
    (void)ctx;
    if (!strcmp(name, "DIAL9_SAMPLER"))
        return "itimer";
    if (!strcmp(name, "DIAL9_SAMPLER_HZ"))
        return "1000";
    return NULL;
}

/* Read CPU_SAMPLE records of ring idx until one has a frame that
 * symbolizes to want (bounded so a broken kernel cannot hang the test). */
static int sampled_function(struct ag_agent *a, int idx, const char *want)
{
    const struct d9_region_hdr *h = a->region.hdr;
    struct d9_ring_hdr *rh = (void *)(a->region.base + h->rings_offset +
                                      (uint64_t)idx * h->ring_stride);
    const uint8_t *data = (const uint8_t *)rh + D9_RING_HDR_SIZE;
    struct sym_map *m;
    size_t n;
    assert_int_equal(sym_maps_read((uint32_t)getpid(), &m, &n), 0);
    static uint8_t mbuf[1 << 18];
    struct sym_maps_state st;
    memset(&st, 0, sizeof st);
    long ml = sym_maps_encode(m, n, "", 0, 1, &st, mbuf, sizeof mbuf);
    sym_maps_free(m, n);
    struct sym_resolver *r;
    assert_int_equal(sym_resolver_new(&r, ""), 0);
    for (long o = 0; o < ml;) {
        int l = shm_record_check(mbuf + o, (size_t)(ml - o));
        struct sym_map_rec mr;
        if (sym_map_decode(mbuf + o, (size_t)l, &mr) == 0)
            sym_resolver_add(r, &mr);
        o += l;
    }
    static uint8_t out[64 * 1024];
    int found = 0;
    for (int round = 0; round < 500 && !found; round++) {
        struct timespec ts = { 0, 10000000 };
        nanosleep(&ts, NULL);
        struct shm_ring_snapshot snap;
        shm_ring_snapshot(rh, &snap);
        uint64_t nt;
        long got = shm_ring_read(data, h->ring_data_size, &snap, out, sizeof out, &nt, NULL);
        assert_true(got >= 0);
        for (long o = 0; o < got;) {
            int l = shm_record_check(out + o, (size_t)(got - o));
            assert_true(l > 0);
            struct d9_rec_stack s;
            memcpy(&s, out + o, sizeof s);
            assert_int_equal(s.h.type, D9_REC_CPU_SAMPLE);
            assert_true(s.weight == 1000000);   /* 1000 Hz */
            for (uint16_t f = 0; f < s.nframes && !found; f++) {
                uint64_t ip;
                char name[256];
                memcpy(&ip, out + o + sizeof s + (size_t)f * 8, 8);
                sym_resolve(r, f ? ip - 1 : ip, 0, name, sizeof name);
                found = !strcmp(name, want);
            }
            o += l;
        }
        shm_ring_consume(rh, nt);
    }
    sym_resolver_free(r);
    return found;
}

static void test_itimer_fallback_samples_the_spinning_function(void **state)
{
    struct live *l = *state;
    ag_sampler_start(&l->a, itimer_env);
    assert_int_equal(l->a.region.hdr->sampler, D9_SAMPLER_ITIMER);
    struct spin_arg s = { .a = &l->a };
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, spin_main, &s), 0);
    while (!s.ready)
        ;
    int idx = ring_of(&l->a, s.tid, s.event_ring);
    assert_true(idx >= 0);      /* a ring of its own, not the event ring */
    /* claimed through ag_ring_claim: mapped before its first sample, like an event ring */
    const struct d9_region_hdr *hh = l->a.region.hdr;
    long missing = pages_not_present(l->a.region.base + hh->rings_offset +
                                     (uint64_t)idx * hh->ring_stride, hh->ring_stride);
    if (missing >= 0)
        assert_int_equal(missing, 0);
    assert_true(sampled_function(&l->a, idx, "d9test_sampler_spin"));
    s.stop = 1;
    pthread_join(th, NULL);
    /* thread stop released the sampler ring */
    const struct d9_region_hdr *h = l->a.region.hdr;
    const struct d9_ring_hdr *rh = (const void *)(l->a.region.base + h->rings_offset +
                                                   (uint64_t)idx * h->ring_stride);
    assert_int_equal(rh->state, D9_RING_RELEASED);
    struct ag_sampler_stats st;
    ag_sampler_get_stats(&st);
    assert_true(st.samples > 0);
    assert_int_equal(st.threads_armed, 0);
    ag_sampler_stop(&l->a);
}

static void test_no_fallback_when_collector_claimed_perf(void **state)
{
    struct live *l = *state;
    atomic_store(&l->a.region.hdr->sampler, D9_SAMPLER_PERF);
    ag_sampler_fork_child();    /* fresh sampler state for this instance */
    ag_sampler_start(&l->a, itimer_env);
    assert_int_equal(l->a.region.hdr->sampler, D9_SAMPLER_PERF);
    struct spin_arg s = { .a = &l->a };
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, spin_main, &s), 0);
    while (!s.ready)
        ;
    assert_int_equal(ring_of(&l->a, s.tid, s.event_ring), -1);   /* no sampler ring */
    struct ag_sampler_stats st;
    ag_sampler_get_stats(&st);
    assert_int_equal(st.threads_armed, 0);
    s.stop = 1;
    pthread_join(th, NULL);
    ag_sampler_stop(&l->a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_defaults_to_auto_99hz),
        cmocka_unit_test(test_config_reads_mode_hz_and_wait),
        cmocka_unit_test(test_config_rejects_unknown_mode_with_message),
        cmocka_unit_test(test_config_rejects_out_of_range_hz),
        cmocka_unit_test(test_auto_falls_back_only_after_the_wait_without_perf),
        cmocka_unit_test(test_itimer_falls_back_at_once_unless_perf_claimed),
        cmocka_unit_test(test_perf_and_off_never_fall_back),
        cmocka_unit_test(test_walk_follows_chain_to_the_outermost_frame),
        cmocka_unit_test(test_walk_never_reads_a_frame_outside_the_stack),
        cmocka_unit_test(test_walk_stops_at_misaligned_frame),
        cmocka_unit_test(test_walk_stops_when_chain_does_not_grow),
        cmocka_unit_test(test_walk_truncates_at_max_and_says_so),
        cmocka_unit_test(test_walk_off_the_known_stack_records_only_ip),
        cmocka_unit_test_setup_teardown(test_itimer_fallback_samples_the_spinning_function,
                                        live_setup, live_teardown),
        cmocka_unit_test_setup_teardown(test_no_fallback_when_collector_claimed_perf,
                                        live_setup, live_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
