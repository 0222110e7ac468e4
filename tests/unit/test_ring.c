/*
 * test_ring.c — the SPSC ring: producer reserve/commit, consumer read and
 * validation, wrap-around with PAD records, exact drop accounting, hostile
 * cursors and framing, and a two-thread producer/consumer run.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "shm/bell.h"
#include "shm/clock.h"
#include "shm/ring.h"
#include "shm/record.h"

#define RING_SIZE D9_RING_DATA_MIN

struct fixture {
    struct d9_ring_hdr hdr;
    uint8_t data[RING_SIZE] __attribute__((aligned(64)));
    struct shm_producer p;
    uint8_t out[RING_SIZE];
};

static int setup(void **state)
{
    struct fixture *f = aligned_alloc(64, sizeof *f);
    memset(f, 0, sizeof *f);
    shm_producer_attach(&f->p, &f->hdr, f->data, RING_SIZE);
    *state = f;
    return 0;
}
static int teardown(void **state) { free(*state); return 0; }

static int put_poll_start(struct fixture *f, uint64_t task)
{
    struct d9_rec_poll_start *r = shm_ring_reserve(&f->p, sizeof *r);
    if (!r)
        return 0;
    r->task = task;
    r->loc = 7;
    r->runtime = 1;
    r->worker = 2;
    shm_ring_commit(&f->p, r, sizeof *r, D9_REC_POLL_START, 1000 + task);
    return 1;
}

/* drain everything; returns number of records and checks tasks ascend */
static long drain(struct fixture *f, uint64_t *next_task, uint32_t *next_seq)
{
    long n = 0;
    for (;;) {
        struct shm_ring_snapshot s;
        shm_ring_snapshot(&f->hdr, &s);
        uint64_t nt;
        long got = shm_ring_read(f->data, RING_SIZE, &s, f->out, sizeof f->out, &nt, NULL);
        assert_true(got >= 0);
        if (got == 0 && nt == s.tail)
            break;
        for (long off = 0; off < got;) {
            struct d9_rec_poll_start r;
            memcpy(&r, f->out + off, sizeof r);
            assert_int_equal(r.h.type, D9_REC_POLL_START);
            if (next_task) {
                assert_int_equal(r.task, *next_task);
                (*next_task)++;
            }
            if (next_seq) {
                assert_int_equal(r.h.seq, *next_seq);
                (*next_seq)++;
            }
            off += r.h.len;
            n++;
        }
        shm_ring_consume(&f->hdr, nt);
    }
    return n;
}

static void test_records_round_trip_in_order(void **state)
{
    struct fixture *f = *state;
    for (uint64_t t = 0; t < 10; t++)
        assert_int_equal(put_poll_start(f, t), 1);
    uint64_t next = 0;
    uint32_t seq = 0;
    assert_int_equal(drain(f, &next, &seq), 10);
    assert_int_equal(atomic_load(&f->hdr.lost), 0);
}

static void test_wrap_inserts_pad_and_keeps_order(void **state)
{
    struct fixture *f = *state;
    /* 40-byte records do not divide 4096: wrapping needs PAD records */
    uint64_t next = 0, task = 0;
    uint32_t seq = 0;
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < 37; i++) {
            struct d9_rec_wake *w = shm_ring_reserve(&f->p, sizeof *w);
            assert_non_null(w);
            w->waker = task;
            w->wakee = task++;
            w->runtime = 1;
            w->target_worker = 3;
            shm_ring_commit(&f->p, w, sizeof *w, D9_REC_WAKE, 5);
        }
        struct shm_ring_snapshot s;
        shm_ring_snapshot(&f->hdr, &s);
        uint64_t nt;
        long got = shm_ring_read(f->data, RING_SIZE, &s, f->out, sizeof f->out, &nt, NULL);
        assert_int_equal(got, 37 * 40);
        for (long off = 0; off < got; off += 40) {
            struct d9_rec_wake w;
            memcpy(&w, f->out + off, sizeof w);
            assert_int_equal(w.h.type, D9_REC_WAKE);
            assert_int_equal(w.wakee, next++);
            assert_int_equal(w.h.seq, seq++);
        }
        shm_ring_consume(&f->hdr, nt);
    }
    assert_true(atomic_load(&f->hdr.head) > 10 * RING_SIZE);  /* wrapped many times */
}

static void test_full_ring_drops_newest_and_counts_exactly(void **state)
{
    struct fixture *f = *state;
    int committed = 0;
    const int offered = 1000;
    for (int i = 0; i < offered; i++)
        committed += put_poll_start(f, (uint64_t)i);
    assert_int_equal(committed, RING_SIZE / 32);
    assert_int_equal(atomic_load(&f->hdr.lost), offered - committed);
    /* the oldest records survive, untouched */
    uint64_t next = 0;
    uint32_t seq = 0;
    assert_int_equal(drain(f, &next, &seq), committed);
    /* after draining, space is reusable and seq shows the gap exactly */
    assert_int_equal(put_poll_start(f, 5000), 1);
    struct shm_ring_snapshot s;
    shm_ring_snapshot(&f->hdr, &s);
    uint64_t nt;
    assert_int_equal(shm_ring_read(f->data, RING_SIZE, &s, f->out, sizeof f->out, &nt, NULL), 32);
    struct d9_rec_hdr h;
    memcpy(&h, f->out, sizeof h);
    assert_int_equal(h.seq, (uint32_t)offered);
}

static void test_read_respects_out_capacity(void **state)
{
    struct fixture *f = *state;
    for (int i = 0; i < 5; i++)
        put_poll_start(f, (uint64_t)i);
    struct shm_ring_snapshot s;
    shm_ring_snapshot(&f->hdr, &s);
    uint64_t nt;
    assert_int_equal(shm_ring_read(f->data, RING_SIZE, &s, f->out, 80, &nt, NULL), 64);
    assert_int_equal(nt, 64);
    assert_int_equal(shm_ring_read(f->data, RING_SIZE, &s, f->out, 20, &nt, NULL), -ENOBUFS);
    /* out filled exactly by whole records while more remain: stop, not spin */
    assert_int_equal(shm_ring_read(f->data, RING_SIZE, &s, f->out, 64, &nt, NULL), 64);
    assert_int_equal(nt, 64);
}

/* Records with these timestamps and types, committed through the producer. */
static void put_typed(struct fixture *f, uint16_t type, uint64_t ts)
{
    struct d9_rec_poll_start *r = shm_ring_reserve(&f->p, sizeof *r);
    assert_non_null(r);
    memset((uint8_t *)r + sizeof r->h, 0, sizeof *r - sizeof r->h);
    shm_ring_commit(&f->p, r, sizeof *r, type, ts);
}

static void test_read_without_xform_copies_timestamps_unchanged(void **state)
{
    struct fixture *f = *state;
    put_typed(f, D9_REC_POLL_START, 12345);
    struct shm_ring_snapshot s;
    shm_ring_snapshot(&f->hdr, &s);
    uint64_t nt;
    struct shm_clock_cal id = { 0 };
    struct shm_read_xform x = { .cal = &id };       /* identity: no conversion either */
    assert_int_equal(shm_ring_read(f->data, RING_SIZE, &s, f->out, sizeof f->out, &nt, NULL), 32);
    struct d9_rec_hdr h;
    memcpy(&h, f->out, sizeof h);
    assert_int_equal(h.ts, 12345);
    assert_int_equal(shm_ring_read(f->data, RING_SIZE, &s, f->out, sizeof f->out, &nt, &x), 32);
    memcpy(&h, f->out, sizeof h);
    assert_int_equal(h.ts, 12345);
    assert_int_equal(x.nrec, 1);
    assert_int_equal(x.t_first, 12345);
    assert_int_equal(x.t_last, 12345);
}

static void test_read_converts_tsc_to_ns_in_the_copy_only(void **state)
{
    struct fixture *f = *state;
    struct shm_clock_cal cal;
    /* 2 GHz: tick 1000 is 5000 ns, every further tick is 0.5 ns */
    assert_int_equal(shm_clock_cal_from_pairs(&cal, 1000, 5000, 3000, 6000), 0);
    put_typed(f, D9_REC_POLL_START, 1000);
    put_typed(f, D9_REC_POLL_END, 3000);
    struct shm_ring_snapshot s;
    shm_ring_snapshot(&f->hdr, &s);
    uint64_t nt;
    struct shm_read_xform x = { .cal = &cal };
    assert_int_equal(shm_ring_read(f->data, RING_SIZE, &s, f->out, sizeof f->out, &nt, &x), 64);
    struct d9_rec_hdr h;
    memcpy(&h, f->out, sizeof h);
    assert_int_equal(h.ts, 5000);
    memcpy(&h, f->out + 32, sizeof h);
    assert_int_equal(h.ts, 6000);
    memcpy(&h, f->data + 32, sizeof h);              /* the ring itself is not written */
    assert_int_equal(h.ts, 3000);
    assert_int_equal(x.t_first, 5000);
    assert_int_equal(x.t_last, 6000);
}

static void test_read_gathers_block_stats_in_the_validating_walk(void **state)
{
    struct fixture *f = *state;
    const uint64_t ts[4] = { 30, 10, 20, 25 };
    const uint16_t type[4] = { D9_REC_POLL_START, D9_REC_POLL_END, D9_REC_POLL_START,
                               D9_REC_TASK_SPAWN };
    for (int i = 0; i < 4; i++)
        put_typed(f, type[i], ts[i]);
    struct shm_ring_snapshot s;
    shm_ring_snapshot(&f->hdr, &s);
    uint64_t nt;
    struct shm_read_xform x = { 0 };
    /* two calls (out holds 3 records, then the last one): stats accumulate */
    assert_int_equal(shm_ring_read(f->data, RING_SIZE, &s, f->out, 96, &nt, &x), 96);
    assert_int_equal(x.nrec, 3);
    assert_int_equal(x.t_last, 20);
    s.tail = nt;
    assert_int_equal(shm_ring_read(f->data, RING_SIZE, &s, f->out, sizeof f->out, &nt, &x), 32);
    assert_int_equal(x.nrec, 4);
    assert_int_equal(x.t_first, 30);                  /* first of all, not of the last call */
    assert_int_equal(x.t_last, 25);
    assert_int_equal(x.t_min, 10);
    assert_int_equal(x.t_max, 30);
    assert_int_equal(x.counts[D9_REC_POLL_START], 2);
    assert_int_equal(x.counts[D9_REC_POLL_END], 1);
    assert_int_equal(x.counts[D9_REC_TASK_SPAWN], 1);
    assert_int_equal(x.counts[D9_REC_PAD], 0);
}

static void test_read_stats_skip_pads_and_survive_wrap(void **state)
{
    struct fixture *f = *state;
    /* fill to 32 bytes short of the end and drain; a 40-byte park record
     * then goes to the start of the ring behind a 32-byte PAD */
    const unsigned n = RING_SIZE / 32 - 1;
    for (unsigned i = 0; i < n; i++)
        put_typed(f, D9_REC_POLL_START, i);
    struct shm_ring_snapshot s;
    shm_ring_snapshot(&f->hdr, &s);
    uint64_t nt;
    assert_int_equal(shm_ring_read(f->data, RING_SIZE, &s, f->out, sizeof f->out, &nt, NULL),
                     (long)n * 32);
    shm_ring_consume(&f->hdr, nt);
    struct d9_rec_worker *w = shm_ring_reserve(&f->p, sizeof *w);
    assert_non_null(w);
    memset((uint8_t *)w + sizeof w->h, 0, sizeof *w - sizeof w->h);
    shm_ring_commit(&f->p, w, sizeof *w, D9_REC_WORKER_PARK, 777);
    shm_ring_snapshot(&f->hdr, &s);
    assert_int_equal(s.head - s.tail, 32 + 40);      /* PAD + record */
    struct shm_read_xform x = { 0 };
    assert_int_equal(shm_ring_read(f->data, RING_SIZE, &s, f->out, sizeof f->out, &nt, &x), 40);
    assert_int_equal(nt, s.head);
    assert_int_equal(x.nrec, 1);
    assert_int_equal(x.counts[D9_REC_WORKER_PARK], 1);
    assert_int_equal(x.counts[D9_REC_PAD], 0);
    assert_int_equal(x.t_min, 777);
}

static void test_hostile_cursors_rejected(void **state)
{
    struct fixture *f = *state;
    put_poll_start(f, 1);
    struct shm_ring_snapshot s;
    uint64_t nt;
    shm_ring_snapshot(&f->hdr, &s);
    s.head = s.tail + RING_SIZE + 8;        /* more than a ring of data */
    assert_int_equal(shm_ring_read(f->data, RING_SIZE, &s, f->out, sizeof f->out, &nt, NULL), -EBADMSG);
    shm_ring_snapshot(&f->hdr, &s);
    s.tail = s.head + 8;                    /* tail past head */
    assert_int_equal(shm_ring_read(f->data, RING_SIZE, &s, f->out, sizeof f->out, &nt, NULL), -EBADMSG);
    shm_ring_snapshot(&f->hdr, &s);
    s.head -= 4;                            /* misaligned */
    assert_int_equal(shm_ring_read(f->data, RING_SIZE, &s, f->out, sizeof f->out, &nt, NULL), -EBADMSG);
}

static void corrupt_and_expect_bad(struct fixture *f, size_t off, const void *bytes, size_t n)
{
    memcpy(f->data + off, bytes, n);
    struct shm_ring_snapshot s;
    shm_ring_snapshot(&f->hdr, &s);
    uint64_t nt;
    assert_int_equal(shm_ring_read(f->data, RING_SIZE, &s, f->out, sizeof f->out, &nt, NULL), -EBADMSG);
}

static void test_snapshot_terminates_and_sanitizes_thread_name(void **state)
{
    struct fixture *f = *state;
    memset(f->hdr.thread_name, 'w', sizeof f->hdr.thread_name);   /* unterminated */
    f->hdr.thread_name[2] = '\x1b';                                 /* terminal escape */
    struct shm_ring_snapshot s;
    shm_ring_snapshot(&f->hdr, &s);
    assert_int_equal(strlen(s.thread_name), sizeof f->hdr.thread_name);
    assert_int_equal(s.thread_name[2], '?');
    assert_int_equal(s.thread_name[0], 'w');
}

static void test_corrupt_length_rejected(void **state)
{
    struct fixture *f = *state;
    put_poll_start(f, 1);
    put_poll_start(f, 2);
    uint16_t len = 24;                      /* wrong size for poll_start */
    corrupt_and_expect_bad(f, 32, &len, 2);
    len = 0;
    corrupt_and_expect_bad(f, 0, &len, 2);
    len = 8000;                             /* larger than what was committed */
    corrupt_and_expect_bad(f, 0, &len, 2);
}

static void test_corrupt_type_rejected(void **state)
{
    struct fixture *f = *state;
    put_poll_start(f, 1);
    uint16_t type = 999;
    corrupt_and_expect_bad(f, 2, &type, 2);
}

static void test_pad_not_reaching_end_rejected(void **state)
{
    struct fixture *f = *state;
    put_poll_start(f, 1);
    struct d9_pad_hdr pad = { .len = 32, .type = D9_REC_PAD };
    corrupt_and_expect_bad(f, 0, &pad, sizeof pad);
}

static void test_custom_payload_len_checked(void **state)
{
    (void)state;
    uint8_t buf[64] = { 0 };
    struct d9_rec_custom c = { .h = { .len = 48, .type = D9_REC_CUSTOM }, .schema = 1,
                               .payload_len = 16 };
    memcpy(buf, &c, sizeof c);
    assert_int_equal(shm_record_check(buf, sizeof buf), 48);
    c.payload_len = 17;                     /* does not fit in 48 */
    memcpy(buf, &c, sizeof c);
    assert_int_equal(shm_record_check(buf, sizeof buf), -EBADMSG);
    c.payload_len = 4;                      /* record much longer than payload */
    memcpy(buf, &c, sizeof c);
    assert_int_equal(shm_record_check(buf, sizeof buf), -EBADMSG);
    c.payload_len = 16;
    c.schema = 0;                           /* schema ids start at 1 */
    memcpy(buf, &c, sizeof c);
    assert_int_equal(shm_record_check(buf, sizeof buf), -EBADMSG);
}

static void test_stack_frames_checked(void **state)
{
    (void)state;
    uint8_t buf[D9_REC_MAX] = { 0 };
    struct d9_rec_stack s = { .h = { .len = 32 + 3 * 8, .type = D9_REC_CPU_SAMPLE }, .nframes = 3 };
    memcpy(buf, &s, sizeof s);
    assert_int_equal(shm_record_check(buf, sizeof buf), 56);
    s.nframes = 4;
    memcpy(buf, &s, sizeof s);
    assert_int_equal(shm_record_check(buf, sizeof buf), -EBADMSG);
    s.nframes = 200;
    s.h.len = (uint16_t)(32 + 200 * 8);
    memcpy(buf, &s, sizeof s);
    assert_int_equal(shm_record_check(buf, sizeof buf), -EBADMSG);
}

static void test_record_check_never_reads_past_avail(void **state)
{
    (void)state;
    uint8_t *buf = malloc(8);               /* ASan catches any over-read */
    memset(buf, 0, 8);
    assert_int_equal(shm_record_check(buf, 8), -EBADMSG);
    free(buf);
}

static void test_type_names_round_trip(void **state)
{
    (void)state;
    for (int t = 1; t < D9_REC_TYPE_COUNT; t++)
        assert_int_equal(shm_record_type_from_name(shm_record_type_name((uint16_t)t)), t);
    assert_int_equal(shm_record_type_from_name("nope"), -1);
    assert_string_equal(shm_record_type_name(500), "unknown");
}

/* Two threads: the producer writes 2M records of mixed sizes as fast as it
 * can, the consumer drains concurrently; every committed record must arrive
 * in order, and committed + lost must equal offered. */
#define SPSC_N 2000000u
struct spsc { struct fixture *f; atomic_int done; uint64_t committed; };

/* ---- doorbell (shm/bell.h, SHM_BELL_DIV) ---- */

static struct d9_bell test_bell __attribute__((aligned(64)));

static void bell_setup(struct fixture *f)
{
    memset(&test_bell, 0, sizeof test_bell);
    shm_producer_bell(&f->p, &test_bell);
}

/* 32-byte records until the ring holds `bytes` (from tail 0) */
static void fill_to(struct fixture *f, uint64_t bytes, uint64_t *task)
{
    while (f->p.head + 32 <= bytes)
        assert_int_equal(put_poll_start(f, (*task)++), 1);
}

static void test_bell_rings_at_half_then_each_quarter_and_at_overflow(void **state)
{
    struct fixture *f = *state;
    bell_setup(f);
    uint64_t task = 0, q = RING_SIZE / 4;
    fill_to(f, 2 * q, &task);                   /* exactly half: not past it */
    assert_int_equal(f->p.bells, 0);
    assert_int_equal(atomic_load(&test_bell.word), 0);
    fill_to(f, 2 * q + 32, &task);              /* the record that passes half */
    assert_int_equal(f->p.bells, 1);
    assert_int_equal(atomic_load(&test_bell.word), 1);
    fill_to(f, 3 * q, &task);
    assert_int_equal(f->p.bells, 1);
    fill_to(f, 3 * q + 32, &task);              /* three quarters */
    assert_int_equal(f->p.bells, 2);
    fill_to(f, RING_SIZE, &task);               /* full: no ring for the last quarter */
    assert_int_equal(f->p.bells, 2);
    assert_int_equal(put_poll_start(f, task), 0);   /* the first drop rings once more */
    assert_int_equal(f->p.bells, 3);
    for (unsigned i = 0; i < 100; i++)              /* and further drops do not */
        assert_int_equal(put_poll_start(f, task), 0);
    assert_int_equal(f->p.bells, 3);
    assert_int_equal(atomic_load(&test_bell.word), 3);
    assert_int_equal(atomic_load(&f->hdr.lost), 101);
}

static void test_bell_silent_while_the_consumer_keeps_up(void **state)
{
    struct fixture *f = *state;
    bell_setup(f);
    uint64_t task = 0, nt = 0;
    uint32_t ns = 0;
    /* ten laps, drained every eighth of a ring: never half full */
    for (unsigned i = 0; i < 80; i++) {
        fill_to(f, f->p.head + RING_SIZE / 8, &task);
        drain(f, &nt, &ns);
    }
    assert_int_equal(f->p.bells, 0);
    assert_int_equal(atomic_load(&test_bell.word), 0);
    assert_int_equal(atomic_load(&f->hdr.lost), 0);
}

static void test_bell_rings_again_after_the_tail_moved(void **state)
{
    struct fixture *f = *state;
    bell_setup(f);
    uint64_t task = 0, nt = 0;
    uint32_t ns = 0;
    fill_to(f, RING_SIZE / 2 + 32, &task);
    assert_int_equal(f->p.bells, 1);
    drain(f, &nt, &ns);                         /* the collector answered */
    fill_to(f, f->p.head + RING_SIZE / 2, &task);
    assert_int_equal(f->p.bells, 1);            /* exactly half: not yet */
    fill_to(f, f->p.head + 32, &task);
    assert_int_equal(f->p.bells, 2);            /* past half again: rung again */
}

static void test_bell_without_listener_makes_no_call(void **state)
{
    (void)state;
    memset(&test_bell, 0, sizeof test_bell);
    assert_int_equal(shm_bell_ring(&test_bell), 0);
    atomic_store(&test_bell.listener, 12345u);      /* scribbled: not a listener */
    assert_int_equal(shm_bell_ring(&test_bell), 0);
    atomic_store(&test_bell.listener, D9_BELL_LISTENING);
    assert_int_equal(shm_bell_ring(&test_bell), 1); /* FUTEX_WAKE with no waiter returns */
    assert_int_equal(atomic_load(&test_bell.word), 3);
}

static void *producer(void *arg)
{
    struct spsc *s = arg;
    uint64_t task = 0;
    for (uint32_t i = 0; i < SPSC_N; i++) {
        uint32_t len = (i % 3 == 0) ? 40 : 32;
        uint8_t *r = shm_ring_reserve(&s->f->p, len);
        if (!r)
            continue;
        if (len == 32) {
            struct d9_rec_poll_start *p = (void *)r;
            p->task = i;
            shm_ring_commit(&s->f->p, r, len, D9_REC_POLL_START, i);
        } else {
            struct d9_rec_wake *w = (void *)r;
            w->waker = i;   /* at the same offset as poll_start.task */
            w->wakee = i;
            shm_ring_commit(&s->f->p, r, len, D9_REC_WAKE, i);
        }
        task++;
    }
    s->committed = task;
    atomic_store(&s->done, 1);
    return NULL;
}

static void test_concurrent_producer_consumer(void **state)
{
    struct fixture *f = *state;
    struct spsc s = { .f = f };
    pthread_t th;
    pthread_create(&th, NULL, producer, &s);
    uint64_t got = 0;
    int64_t last_seq = -1;
    for (;;) {
        int was_done = atomic_load(&s.done);
        struct shm_ring_snapshot snap;
        shm_ring_snapshot(&f->hdr, &snap);
        uint64_t nt;
        long n = shm_ring_read(f->data, RING_SIZE, &snap, f->out, sizeof f->out, &nt, NULL);
        assert_true(n >= 0);
        for (long off = 0; off < n;) {
            struct d9_rec_poll_start r;
            memcpy(&r, f->out + off, 32);
            assert_true((int64_t)r.h.seq > last_seq);
            /* the payload identifies the record: seq == index of the offer */
            assert_int_equal(r.task, r.h.seq);
            last_seq = r.h.seq;
            off += r.h.len;
            got++;
        }
        shm_ring_consume(&f->hdr, nt);
        if (was_done && n == 0 && nt == snap.head)
            break;
    }
    pthread_join(th, NULL);
    assert_int_equal(got, s.committed);
    assert_int_equal(got + atomic_load(&f->hdr.lost), SPSC_N);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_records_round_trip_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrap_inserts_pad_and_keeps_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_ring_drops_newest_and_counts_exactly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_respects_out_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_cursors_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_terminates_and_sanitizes_thread_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_length_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_type_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pad_not_reaching_end_rejected, setup, teardown),
        cmocka_unit_test(test_custom_payload_len_checked),
        cmocka_unit_test(test_stack_frames_checked),
        cmocka_unit_test_setup_teardown(test_read_without_xform_copies_timestamps_unchanged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_converts_tsc_to_ns_in_the_copy_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_gathers_block_stats_in_the_validating_walk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_stats_skip_pads_and_survive_wrap, setup, teardown),
        cmocka_unit_test(test_record_check_never_reads_past_avail),
        cmocka_unit_test(test_type_names_round_trip),
        cmocka_unit_test_setup_teardown(test_concurrent_producer_consumer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bell_rings_at_half_then_each_quarter_and_at_overflow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bell_silent_while_the_consumer_keeps_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bell_rings_again_after_the_tail_moved, setup, teardown),
        cmocka_unit_test(test_bell_without_listener_makes_no_call),
    };
    return cmocka_run_group_tests_name("ring", tests, NULL, NULL);
}
