/*
 * test_perf.c — collector/daemon/perf.c: the perf mmap-ring walker and record
 * parsers on synthetic (including truncated and hostile) buffers, callchain
 * conversion, config validation, and real sampling of this process's own
 * threads (skipped with a message when perf_event_open is not permitted).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "collector/daemon/perf.h"
#include "shm/clock.h"
#include "shm/record.h"

#define DATA_SIZE 4096u

/* ---- synthetic ring helpers ---------------------------------------------- */

struct walk_log {
    int n;
    uint32_t types[64];
    uint16_t sizes[64];
    uint64_t first_u64[64];     /* first word after the header */
    int fail_at;                /* return -E2BIG at this record (-1 = never) */
};

static int log_rec(void *ctx, const struct perf_event_header *h, const uint8_t *rec, size_t len)
{
    struct walk_log *l = ctx;
    if (l->n == l->fail_at)
        return -E2BIG;
    assert_int_equal(h->size, len);
    l->types[l->n] = h->type;
    l->sizes[l->n] = h->size;
    l->first_u64[l->n] = 0;
    if (len >= 16)
        memcpy(&l->first_u64[l->n], rec + 8, 8);
    l->n++;
    return 0;
}

/* Write a record of size bytes at ring position pos (wrapping). */
static void put_rec(uint8_t *data, uint64_t pos, uint32_t type, uint16_t size, uint64_t word)
{
    uint8_t tmp[512];
    memset(tmp, 0xab, sizeof tmp);
    struct perf_event_header h = { .type = type, .misc = 0, .size = size };
    memcpy(tmp, &h, sizeof h);
    if (size >= 16)
        memcpy(tmp + 8, &word, 8);
    for (uint16_t i = 0; i < size; i++)
        data[(pos + i) % DATA_SIZE] = tmp[i];
}

static uint8_t g_scratch[PERF_REC_SCRATCH];

static void test_ring_walk_reads_records_in_order(void **state)
{
    (void)state;
    static uint8_t data[DATA_SIZE];
    put_rec(data, 0, PERF_RECORD_SAMPLE, 32, 11);
    put_rec(data, 32, PERF_RECORD_LOST, 40, 22);
    put_rec(data, 72, PERF_RECORD_SWITCH, 16, 33);
    struct walk_log l = { .fail_at = -1 };
    uint64_t nt = 0;
    assert_int_equal(perf_ring_walk(data, DATA_SIZE, 0, 88, g_scratch, log_rec, &l, &nt), 0);
    assert_int_equal(nt, 88);
    assert_int_equal(l.n, 3);
    assert_int_equal(l.types[0], PERF_RECORD_SAMPLE);
    assert_int_equal(l.types[1], PERF_RECORD_LOST);
    assert_int_equal(l.types[2], PERF_RECORD_SWITCH);
    assert_int_equal(l.first_u64[2], 33);
}

static void test_ring_walk_reassembles_record_that_wraps(void **state)
{
    (void)state;
    static uint8_t data[DATA_SIZE];
    uint64_t tail = 3 * (uint64_t)DATA_SIZE - 24;      /* cursors are free-running */
    put_rec(data, tail, PERF_RECORD_SAMPLE, 64, 0x1122334455667788ull);
    struct walk_log l = { .fail_at = -1 };
    uint64_t nt;
    assert_int_equal(perf_ring_walk(data, DATA_SIZE, tail, tail + 64, g_scratch, log_rec, &l, &nt), 0);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.sizes[0], 64);
    assert_true(l.first_u64[0] == 0x1122334455667788ull);
    assert_true(nt == tail + 64);
}

static void test_ring_walk_rejects_head_more_than_size_ahead(void **state)
{
    (void)state;
    static uint8_t data[DATA_SIZE];
    struct walk_log l = { .fail_at = -1 };
    uint64_t nt = 99;
    assert_int_equal(perf_ring_walk(data, DATA_SIZE, 100, 100 + DATA_SIZE + 8, g_scratch, log_rec,
                                    &l, &nt), -EBADMSG);
    assert_int_equal(nt, 100);
    assert_int_equal(l.n, 0);
    /* head behind tail is the same thing modulo 2^64 */
    assert_int_equal(perf_ring_walk(data, DATA_SIZE, 100, 50, g_scratch, log_rec, &l, &nt),
                     -EBADMSG);
}

static void test_ring_walk_rejects_non_power_of_two_size(void **state)
{
    (void)state;
    static uint8_t data[DATA_SIZE];
    struct walk_log l = { .fail_at = -1 };
    uint64_t nt;
    assert_int_equal(perf_ring_walk(data, 3000, 0, 0, g_scratch, log_rec, &l, &nt), -EBADMSG);
    assert_int_equal(perf_ring_walk(data, 0, 0, 0, g_scratch, log_rec, &l, &nt), -EBADMSG);
}

static void test_ring_walk_stops_at_record_smaller_than_header(void **state)
{
    (void)state;
    static uint8_t data[DATA_SIZE];
    put_rec(data, 0, PERF_RECORD_SAMPLE, 32, 1);
    put_rec(data, 32, PERF_RECORD_SAMPLE, 0, 0);        /* size 0 would loop forever */
    struct walk_log l = { .fail_at = -1 };
    uint64_t nt;
    assert_int_equal(perf_ring_walk(data, DATA_SIZE, 0, 128, g_scratch, log_rec, &l, &nt), -EBADMSG);
    assert_int_equal(l.n, 1);
    assert_int_equal(nt, 32);
}

static void test_ring_walk_stops_at_record_longer_than_available(void **state)
{
    (void)state;
    static uint8_t data[DATA_SIZE];
    put_rec(data, 0, PERF_RECORD_SAMPLE, 256, 1);      /* claims 256, only 64 published */
    struct walk_log l = { .fail_at = -1 };
    uint64_t nt;
    assert_int_equal(perf_ring_walk(data, DATA_SIZE, 0, 64, g_scratch, log_rec, &l, &nt), -EBADMSG);
    assert_int_equal(l.n, 0);
    assert_int_equal(nt, 0);
}

static void test_ring_walk_stops_at_unaligned_size(void **state)
{
    (void)state;
    static uint8_t data[DATA_SIZE];
    put_rec(data, 0, PERF_RECORD_SAMPLE, 20, 1);
    struct walk_log l = { .fail_at = -1 };
    uint64_t nt;
    assert_int_equal(perf_ring_walk(data, DATA_SIZE, 0, 64, g_scratch, log_rec, &l, &nt), -EBADMSG);
    assert_int_equal(l.n, 0);
}

static void test_ring_walk_stops_at_partial_header(void **state)
{
    (void)state;
    static uint8_t data[DATA_SIZE];
    put_rec(data, 0, PERF_RECORD_SAMPLE, 32, 1);
    struct walk_log l = { .fail_at = -1 };
    uint64_t nt;
    assert_int_equal(perf_ring_walk(data, DATA_SIZE, 0, 36, g_scratch, log_rec, &l, &nt), -EBADMSG);
    assert_int_equal(l.n, 1);
    assert_int_equal(nt, 32);
}

static void test_ring_walk_callback_error_stops_after_accepted_records(void **state)
{
    (void)state;
    static uint8_t data[DATA_SIZE];
    put_rec(data, 0, PERF_RECORD_SAMPLE, 32, 1);
    put_rec(data, 32, PERF_RECORD_SAMPLE, 32, 2);
    struct walk_log l = { .fail_at = 1 };
    uint64_t nt;
    assert_int_equal(perf_ring_walk(data, DATA_SIZE, 0, 64, g_scratch, log_rec, &l, &nt), -E2BIG);
    assert_int_equal(nt, 32);
}

/* ---- sample parsing ------------------------------------------------------ */

static size_t make_sample(uint8_t *buf, uint64_t id, uint32_t pid, uint32_t tid, uint64_t time,
                          uint64_t period, uint64_t nr, const uint64_t *ips, uint64_t nr_claimed)
{
    size_t len = 8 + 8 + 8 + 8 + 8 + 8 + nr * 8;
    struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = (uint16_t)len };
    memcpy(buf, &h, 8);
    memcpy(buf + 8, &id, 8);
    memcpy(buf + 16, &pid, 4);
    memcpy(buf + 20, &tid, 4);
    memcpy(buf + 24, &time, 8);
    memcpy(buf + 32, &period, 8);
    memcpy(buf + 40, &nr_claimed, 8);
    memcpy(buf + 48, ips, nr * 8);
    return len;
}

static void test_parse_sample_reads_every_field(void **state)
{
    (void)state;
    uint8_t buf[256];
    uint64_t ips[3] = { (uint64_t)PERF_CONTEXT_USER, 0x401000, 0x402000 };
    size_t len = make_sample(buf, 7, 100, 101, 123456789, 10101010, 3, ips, 3);
    struct perf_sample s;
    assert_int_equal(perf_parse_sample(buf, len, &s), 0);
    assert_int_equal(s.id, 7);
    assert_int_equal(s.pid, 100);
    assert_int_equal(s.tid, 101);
    assert_int_equal(s.time, 123456789);
    assert_int_equal(s.period, 10101010);
    assert_int_equal(s.nr, 3);
    uint64_t ip;
    memcpy(&ip, s.ips + 16, 8);
    assert_int_equal(ip, 0x402000);
}

static void test_parse_sample_rejects_callchain_longer_than_record(void **state)
{
    (void)state;
    uint8_t buf[256];
    uint64_t ips[2] = { 1, 2 };
    struct perf_sample s;
    size_t len = make_sample(buf, 1, 1, 1, 1, 1, 2, ips, 3);
    assert_int_equal(perf_parse_sample(buf, len, &s), -EBADMSG);
    /* a huge nr must not overflow the size check */
    len = make_sample(buf, 1, 1, 1, 1, 1, 2, ips, UINT64_MAX / 4);
    assert_int_equal(perf_parse_sample(buf, len, &s), -EBADMSG);
}

static void test_parse_sample_rejects_truncated_fixed_part(void **state)
{
    (void)state;
    uint8_t buf[256];
    uint64_t ips[1] = { 1 };
    struct perf_sample s;
    make_sample(buf, 1, 1, 1, 1, 1, 1, ips, 1);
    for (size_t len = 0; len < 48; len += 8)
        assert_int_equal(perf_parse_sample(buf, len, &s), -EBADMSG);
}

/* A tick sample has no period field: nr follows the time. */
static void test_parse_sample_as_reads_the_tick_layout(void **state)
{
    (void)state;
    uint8_t buf[256];
    uint64_t ips[3] = { (uint64_t)PERF_CONTEXT_USER, 0x401000, 0x402000 };
    /* built with the period layout, then the period word taken out */
    size_t len = make_sample(buf, 7, 100, 101, 123456789, 0, 3, ips, 3);
    memmove(buf + 32, buf + 40, len - 40);
    len -= 8;
    struct perf_sample s;
    assert_int_equal(perf_parse_sample_as(buf, len, PERF_TICK_SAMPLE_TYPE, &s), 0);
    assert_int_equal(s.id, 7);
    assert_int_equal(s.tid, 101);
    assert_int_equal(s.time, 123456789);
    assert_int_equal(s.period, 0);
    assert_int_equal(s.nr, 3);
    uint64_t ip;
    memcpy(&ip, s.ips + 16, 8);
    assert_int_equal(ip, 0x402000);
    /* one word short of its callchain, or of its fixed part */
    assert_int_equal(perf_parse_sample_as(buf, len - 8, PERF_TICK_SAMPLE_TYPE, &s), -EBADMSG);
    for (size_t l = 0; l < 40; l += 8)
        assert_int_equal(perf_parse_sample_as(buf, l, PERF_TICK_SAMPLE_TYPE, &s), -EBADMSG);
    /* a layout it does not know */
    assert_int_equal(perf_parse_sample_as(buf, len, PERF_SAMPLE_TID, &s), -EINVAL);
}

static void test_parse_sample_id_reads_trailer(void **state)
{
    (void)state;
    uint8_t buf[32];
    struct perf_event_header h = { .type = PERF_RECORD_SWITCH, .size = 32 };
    uint32_t pid = 5, tid = 6;
    uint64_t t = 999, id = 42;
    memcpy(buf, &h, 8);
    memcpy(buf + 8, &pid, 4);
    memcpy(buf + 12, &tid, 4);
    memcpy(buf + 16, &t, 8);
    memcpy(buf + 24, &id, 8);
    struct perf_sample_id s;
    assert_int_equal(perf_parse_sample_id(buf, 32, &s), 0);
    assert_int_equal(s.tid, 6);
    assert_int_equal(s.time, 999);
    assert_int_equal(s.id, 42);
    assert_int_equal(perf_parse_sample_id(buf, 24, &s), -EBADMSG);
}

/* ---- callchains ---------------------------------------------------------- */

static void test_callchain_drops_markers_and_flags_kernel_frames(void **state)
{
    (void)state;
    uint64_t raw[6] = { (uint64_t)PERF_CONTEXT_KERNEL, 0xffffffff81000010ull, 0xffffffff81000020ull,
                        (uint64_t)PERF_CONTEXT_USER, 0x401000, 0x402000 };
    uint64_t out[8];
    uint16_t flags;
    uint16_t n = perf_callchain_to_frames((const uint8_t *)raw, 6, out, 8, &flags);
    assert_int_equal(n, 4);
    assert_true(out[0] == 0xffffffff81000010ull);
    assert_int_equal(out[3], 0x402000);
    assert_int_equal(flags, D9_STACK_KERNEL);
}

static void test_callchain_user_only_has_no_kernel_flag(void **state)
{
    (void)state;
    uint64_t raw[3] = { (uint64_t)PERF_CONTEXT_USER, 0x401000, 0x402000 };
    uint64_t out[8];
    uint16_t flags;
    assert_int_equal(perf_callchain_to_frames((const uint8_t *)raw, 3, out, 8, &flags), 2);
    assert_int_equal(flags, 0);
}

static void test_callchain_truncates_at_max_and_says_so(void **state)
{
    (void)state;
    uint64_t raw[10];
    raw[0] = (uint64_t)PERF_CONTEXT_USER;
    for (int i = 1; i < 10; i++)
        raw[i] = 0x400000 + (uint64_t)i;
    uint64_t out[4];
    uint16_t flags;
    assert_int_equal(perf_callchain_to_frames((const uint8_t *)raw, 10, out, 4, &flags), 4);
    assert_int_equal(flags, D9_STACK_TRUNCATED);
    assert_int_equal(out[3], 0x400004);
}

static void test_callchain_skips_guest_context(void **state)
{
    (void)state;
    uint64_t raw[5] = { (uint64_t)PERF_CONTEXT_GUEST, 0x1234, (uint64_t)PERF_CONTEXT_USER, 0x401000,
                        0x402000 };
    uint64_t out[8];
    uint16_t flags;
    assert_int_equal(perf_callchain_to_frames((const uint8_t *)raw, 5, out, 8, &flags), 2);
    assert_int_equal(out[0], 0x401000);
}

/* ---- live sampling -------------------------------------------------------- */

static int perf_denied(int rc)
{
    if (rc == -EACCES || rc == -EPERM || rc == -ENOSYS || rc == -ENOENT) {
        printf("skipped: perf_event_open not permitted here (%s)\n", strerror(-rc));
        return 1;
    }
    return 0;
}

static void test_open_rejects_bad_config(void **state)
{
    (void)state;
    struct perf_config c;
    struct perf_proc *p = (void *)1;
    perf_config_default(&c);
    c.ring_pages = 3;
    assert_int_equal(perf_proc_open(&p, (uint32_t)getpid(), &c), -EINVAL);
    assert_null(p);
    perf_config_default(&c);
    c.freq_hz = 0;
    c.switch_period = 0;
    assert_int_equal(perf_proc_open(&p, (uint32_t)getpid(), &c), -EINVAL);
    perf_config_default(&c);
    c.freq_hz = PERF_FREQ_MAX + 1;
    assert_int_equal(perf_proc_open(&p, (uint32_t)getpid(), &c), -EINVAL);
}

static void test_open_of_missing_process_is_esrch(void **state)
{
    (void)state;
    struct perf_config c;
    struct perf_proc *p;
    perf_config_default(&c);
    /* pid_max is at most 2^22: this pid cannot exist */
    assert_int_equal(perf_proc_open(&p, 1u << 23, &c), -ESRCH);
}

static void test_host_mode_opens_no_thread_events_and_keeps_added_samples(void **state)
{
    (void)state;
    struct perf_config c;
    perf_config_default(&c);
    c.host_cpu = 1;             /* on-CPU samples come from perf_host; no switch events */
    struct perf_proc *p;
    assert_int_equal(perf_proc_open(&p, (uint32_t)getpid(), &c), 0);
    struct perf_stats st;
    perf_proc_stats(p, &st);
    assert_int_equal(st.threads, 0);
    assert_int_equal(perf_proc_poll(p, shm_mono_ns(), 1), 0);
    uint64_t raw[4] = { (uint64_t)PERF_CONTEXT_USER, 0x401000, 0x402000, 0x403000 };
    struct perf_sample s = { .pid = (uint32_t)getpid(), .tid = 4242, .time = 123456789,
                             .period = 10101010, .nr = 4, .ips = (const uint8_t *)raw };
    assert_int_equal(perf_proc_add_cpu_sample(p, &s), 0);
    assert_int_equal(perf_proc_poll(p, shm_mono_ns(), 0), 1);
    uint8_t buf[sizeof(struct d9_rec_stack) + D9_STACK_MAX_FRAMES * 8];
    size_t n = perf_proc_take(p, buf, sizeof buf, NULL);
    assert_int_equal(n, sizeof(struct d9_rec_stack) + 3 * 8);
    assert_int_equal(shm_record_check(buf, n), (int)n);
    struct d9_rec_stack r;
    memcpy(&r, buf, sizeof r);
    assert_int_equal(r.h.type, D9_REC_CPU_SAMPLE);
    assert_int_equal(r.h.ts, 123456789);
    assert_int_equal(r.tid, 4242);
    assert_int_equal(r.weight, 10101010);
    assert_int_equal(r.nframes, 3);
    assert_int_equal(r.flags, 0);
    uint64_t ip0;
    memcpy(&ip0, buf + sizeof r, sizeof ip0);
    assert_int_equal(ip0, 0x401000);
    perf_proc_stats(p, &st);
    assert_int_equal(st.cpu_samples, 1);
    perf_proc_close(p);
}

static void test_host_mode_open_of_missing_process_is_esrch(void **state)
{
    (void)state;
    struct perf_config c;
    struct perf_proc *p;
    perf_config_default(&c);
    c.host_cpu = 1;
    assert_int_equal(perf_proc_open(&p, 1u << 23, &c), -ESRCH);
}

struct spinner {
    volatile int stop;
    volatile int ready;
    volatile uint32_t tid;
    int sleep;                  /* 1: sleep in a loop instead of spinning */
};

static void *spin_main(void *arg)
{
    struct spinner *s = arg;
    s->tid = (uint32_t)syscall(SYS_gettid);
    s->ready = 1;
    uint64_t x = 1;
    while (!s->stop) {
        if (s->sleep) {
            struct timespec ts = { 0, 200000 };
            nanosleep(&ts, NULL);
        } else {
            for (int i = 0; i < 100000; i++)
                x = x * 6364136223846793005ull + 1;
            __asm__ volatile("" : "+r"(x));
        }
    }
    return NULL;
}

/* Poll p until it produced a record of type from tid (or ~10 s pass: the
 * bound is only there so a broken kernel cannot hang the test). */
static int wait_for_record(struct perf_proc *p, uint16_t type, uint32_t tid, uint64_t *weight)
{
    static uint8_t buf[1 << 20];
    for (int round = 0; round < 1000; round++) {
        struct timespec ts = { 0, 10000000 };
        nanosleep(&ts, NULL);
        assert_true(perf_proc_poll(p, shm_mono_ns(), 0) >= 0);
        size_t n = perf_proc_take(p, buf, sizeof buf, NULL);
        for (size_t o = 0; o < n;) {
            int len = shm_record_check(buf + o, n - o);
            assert_true(len > 0);
            struct d9_rec_stack s;
            memcpy(&s, buf + o, sizeof s);
            if (s.h.type == type && s.tid == tid) {
                if (weight)
                    *weight = s.weight;
                return 1;
            }
            o += (size_t)len;
        }
    }
    return 0;
}

static void test_samples_a_busy_thread_of_this_process(void **state)
{
    (void)state;
    struct spinner s = { 0 };
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, spin_main, &s), 0);
    while (!s.ready)
        ;
    struct perf_config c;
    perf_config_default(&c);
    c.freq_hz = 999;
    struct perf_proc *p;
    int rc = perf_proc_open(&p, (uint32_t)getpid(), &c);
    if (!perf_denied(rc)) {
        assert_int_equal(rc, 0);
        uint64_t w = 0;
        assert_true(wait_for_record(p, D9_REC_CPU_SAMPLE, s.tid, &w));
        assert_true(w > 0);     /* period in ns */
        perf_proc_close(p);
    }
    s.stop = 1;
    pthread_join(th, NULL);
}

static void test_switch_sample_weight_is_time_until_switch_in(void **state)
{
    (void)state;
    struct spinner s = { .sleep = 1 };
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, spin_main, &s), 0);
    while (!s.ready)
        ;
    struct perf_config c;
    perf_config_default(&c);
    c.freq_hz = 0;
    c.switch_period = 1;
    struct perf_proc *p;
    int rc = perf_proc_open(&p, (uint32_t)getpid(), &c);
    if (!perf_denied(rc)) {
        assert_int_equal(rc, 0);
        uint64_t w = 0;
        assert_true(wait_for_record(p, D9_REC_SCHED_SWITCH, s.tid, &w));
        assert_true(w > 0);     /* the switch-in came after the switch-out */
        perf_proc_close(p);
    }
    s.stop = 1;
    pthread_join(th, NULL);
}

/* A thread that computes a little, then sleeps, n times once told to go:
 * n voluntary context switches, and CPU time for the cpu-clock event. It
 * counts its own switches (getrusage of the thread) between go and done. */
struct switcher {
    volatile int ready, go, done;
    volatile uint32_t tid;
    unsigned n;
    uint64_t switches;
};

static uint64_t my_switches(void)
{
    struct rusage ru;
    assert_int_equal(getrusage(RUSAGE_THREAD, &ru), 0);
    return (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}

static void *switch_main(void *arg)
{
    struct switcher *w = arg;
    w->tid = (uint32_t)syscall(SYS_gettid);
    w->ready = 1;
    while (!w->go)
        ;
    uint64_t s0 = my_switches(), x = 1;
    for (unsigned k = 0; k < w->n; k++) {
        for (int i = 0; i < 200000; i++)
            x = x * 6364136223846793005ull + 1;
        __asm__ volatile("" : "+r"(x));
        struct timespec ts = { 0, 100000 };
        nanosleep(&ts, NULL);
    }
    w->switches = my_switches() - s0;
    w->done = 1;
    return NULL;
}

static void test_switch_period_samples_one_switch_in_n(void **state)
{
    (void)state;
    enum { PERIOD = 16, SLEEPS = 1600 };
    struct perf_config c;
    perf_config_default(&c);
    c.freq_hz = 999;            /* the cpu-clock event shares the thread's ring */
    c.switch_period = PERIOD;
    struct perf_proc *p;
    struct switcher w = { .n = SLEEPS };
    pthread_t th;
    int rc = perf_proc_open(&p, (uint32_t)getpid(), &c);
    if (perf_denied(rc))
        return;
    assert_int_equal(rc, 0);
    assert_int_equal(pthread_create(&th, NULL, switch_main, &w), 0);
    while (!w.ready)
        ;
    assert_true(perf_proc_poll(p, shm_mono_ns(), 1) >= 0);     /* opens the thread's events */
    w.go = 1;
    static uint8_t buf[1 << 20];
    uint64_t switch_recs = 0, cpu_recs = 0;
    int last = 0;
    while (!last) {
        last = w.done;
        struct timespec ts = { 0, 10000000 };
        nanosleep(&ts, NULL);
        assert_true(perf_proc_poll(p, shm_mono_ns(), 0) >= 0);
        size_t n = perf_proc_take(p, buf, sizeof buf, NULL);
        for (size_t o = 0; o < n;) {
            int len = shm_record_check(buf + o, n - o);
            assert_true(len > 0);
            struct d9_rec_stack r;
            memcpy(&r, buf + o, sizeof r);
            if (r.tid == w.tid && r.h.type == D9_REC_SCHED_SWITCH)
                switch_recs++;
            if (r.tid == w.tid && r.h.type == D9_REC_CPU_SAMPLE) {
                cpu_recs++;
                assert_true(r.weight > 0);      /* its period, parsed from its own layout */
            }
            o += (size_t)len;
        }
    }
    pthread_join(th, NULL);
    struct perf_stats st;
    perf_proc_stats(p, &st);
    perf_proc_close(p);
    assert_int_equal(st.bad, 0);
    /* 1 in PERIOD of the thread's switches is sampled (the kernel counts
     * every one; the events were on before go), never nearly all of them;
     * a sample lost with the perf ring's overflow only lowers the count */
    assert_true(w.switches >= SLEEPS);
    assert_true(switch_recs >= 1);
    assert_true(switch_recs <= w.switches / PERIOD + 2);
    assert_true(cpu_recs >= 1);
}

static void test_rescan_picks_up_new_thread(void **state)
{
    (void)state;
    struct perf_config c;
    perf_config_default(&c);
    struct perf_proc *p;
    int rc = perf_proc_open(&p, (uint32_t)getpid(), &c);
    if (perf_denied(rc))
        return;
    assert_int_equal(rc, 0);
    struct perf_stats st;
    perf_proc_stats(p, &st);
    uint32_t before = st.threads;
    struct spinner s = { 0 };
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, spin_main, &s), 0);
    while (!s.ready)
        ;
    assert_true(perf_proc_poll(p, shm_mono_ns(), 1) >= 0);
    perf_proc_stats(p, &st);
    assert_int_equal(st.threads, before + 1);
    assert_true(wait_for_record(p, D9_REC_CPU_SAMPLE, s.tid, NULL));
    s.stop = 1;
    pthread_join(th, NULL);
    /* the task entry goes away shortly after the join returns */
    for (int i = 0; i < 1000; i++) {
        assert_true(perf_proc_poll(p, shm_mono_ns(), 1) >= 0);
        perf_proc_stats(p, &st);
        if (st.threads == before)
            break;
        struct timespec ts = { 0, 10000000 };
        nanosleep(&ts, NULL);
    }
    assert_int_equal(st.threads, before);
    perf_proc_close(p);
}

static void test_take_hands_out_whole_records_within_capacity(void **state)
{
    (void)state;
    struct spinner s = { 0 };
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, spin_main, &s), 0);
    while (!s.ready)
        ;
    struct perf_config c;
    perf_config_default(&c);
    c.freq_hz = 999;
    struct perf_proc *p;
    int rc = perf_proc_open(&p, (uint32_t)getpid(), &c);
    if (!perf_denied(rc)) {
        assert_int_equal(rc, 0);
        long pending = 0;
        for (int i = 0; i < 1000 && pending < 4; i++) {
            struct timespec ts = { 0, 10000000 };
            nanosleep(&ts, NULL);
            pending = perf_proc_poll(p, shm_mono_ns(), 0);
        }
        assert_true(pending >= 4);
        uint8_t small[sizeof(struct d9_rec_stack) + D9_STACK_MAX_FRAMES * 8];
        uint64_t last_ts = 0;
        uint32_t expect_seq = 0;
        long got = 0;
        size_t n;
        while ((n = perf_proc_take(p, small, sizeof small, NULL)) > 0) {
            assert_true(n <= sizeof small);
            for (size_t o = 0; o < n;) {            /* whole records, nothing else */
                int len = shm_record_check(small + o, n - o);
                assert_true(len > 0);
                struct d9_rec_hdr h;
                memcpy(&h, small + o, sizeof h);
                assert_true(h.ts >= last_ts);       /* sorted by time */
                assert_int_equal(h.seq, expect_seq);
                expect_seq++;
                last_ts = h.ts;
                got++;
                o += (size_t)len;
            }
        }
        assert_int_equal(got, pending);
        perf_proc_close(p);
    }
    s.stop = 1;
    pthread_join(th, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_walk_reads_records_in_order),
        cmocka_unit_test(test_ring_walk_reassembles_record_that_wraps),
        cmocka_unit_test(test_ring_walk_rejects_head_more_than_size_ahead),
        cmocka_unit_test(test_ring_walk_rejects_non_power_of_two_size),
        cmocka_unit_test(test_ring_walk_stops_at_record_smaller_than_header),
        cmocka_unit_test(test_ring_walk_stops_at_record_longer_than_available),
        cmocka_unit_test(test_ring_walk_stops_at_unaligned_size),
        cmocka_unit_test(test_ring_walk_stops_at_partial_header),
        cmocka_unit_test(test_ring_walk_callback_error_stops_after_accepted_records),
        cmocka_unit_test(test_parse_sample_reads_every_field),
        cmocka_unit_test(test_parse_sample_rejects_callchain_longer_than_record),
        cmocka_unit_test(test_parse_sample_rejects_truncated_fixed_part),
        cmocka_unit_test(test_parse_sample_as_reads_the_tick_layout),
        cmocka_unit_test(test_parse_sample_id_reads_trailer),
        cmocka_unit_test(test_callchain_drops_markers_and_flags_kernel_frames),
        cmocka_unit_test(test_callchain_user_only_has_no_kernel_flag),
        cmocka_unit_test(test_callchain_truncates_at_max_and_says_so),
        cmocka_unit_test(test_callchain_skips_guest_context),
        cmocka_unit_test(test_host_mode_opens_no_thread_events_and_keeps_added_samples),
        cmocka_unit_test(test_host_mode_open_of_missing_process_is_esrch),
        cmocka_unit_test(test_open_rejects_bad_config),
        cmocka_unit_test(test_open_of_missing_process_is_esrch),
        cmocka_unit_test(test_samples_a_busy_thread_of_this_process),
        cmocka_unit_test(test_switch_sample_weight_is_time_until_switch_in),
        cmocka_unit_test(test_switch_period_samples_one_switch_in_n),
        cmocka_unit_test(test_rescan_picks_up_new_thread),
        cmocka_unit_test(test_take_hands_out_whole_records_within_capacity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
