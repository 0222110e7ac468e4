/*
 * test_ru_pipe.c — the rollup thread (ru_pipe.h) as a specification: a
 * stream fed through the pipe gives the bytes inline feeding gives for the
 * same messages, whether its records travel in place (the slot's buffer),
 * copied into the slot or as a heap copy (longer than a slot); several
 * streams interleaved, far more messages than the ring holds (the producer
 * waits for room, nothing is dropped or reordered), streams dropped midway;
 * a feed the thread rejects breaks that stream alone (-ESTALE at its
 * finish); and freeing the pipe consumes what was sent (ASan: nothing
 * leaks). Inline rollups (rollup_feed_*) are the reference.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "collector/store/rollup.h"
#include "collector/store/ru_pipe.h"
#include "shm/d9_abi.h"

#define S 1000000000ull

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* n random poll starts/ends, wakes and parks of one thread into b; bytes */
static size_t make_records(uint8_t *b, size_t cap, unsigned n, uint64_t *seed, uint64_t *ts,
                           uint16_t worker)
{
    size_t len = 0;
    for (unsigned k = 0; k < n; k++) {
        *ts += rnd(seed) % 2000000;
        uint64_t task = 1 + rnd(seed) % 5;
        union {
            struct d9_rec_poll_start ps;
            struct d9_rec_poll_end pe;
            struct d9_rec_wake w;
            struct d9_rec_worker wk;
        } r;
        memset(&r, 0, sizeof r);
        size_t sz;
        switch (rnd(seed) % 4) {
        case 0:
            r.ps = (struct d9_rec_poll_start){ .h = { .len = sizeof r.ps, .type = D9_REC_POLL_START,
                                                      .ts = *ts },
                                               .task = task, .loc = (uint32_t)(task % 3),
                                               .runtime = 1, .worker = worker };
            sz = sizeof r.ps;
            break;
        case 1:
            r.pe = (struct d9_rec_poll_end){ .h = { .len = sizeof r.pe, .type = D9_REC_POLL_END,
                                                    .ts = *ts },
                                             .task = task, .runtime = 1, .worker = worker };
            sz = sizeof r.pe;
            break;
        case 2:
            r.w = (struct d9_rec_wake){ .h = { .len = sizeof r.w, .type = D9_REC_WAKE, .ts = *ts },
                                        .wakee = task, .runtime = 1,
                                        .target_worker = D9_WORKER_NONE };
            sz = sizeof r.w;
            break;
        default:
            r.wk = (struct d9_rec_worker){ .h = { .len = sizeof r.wk,
                                                  .type = rnd(seed) % 2 ? D9_REC_WORKER_PARK
                                                                        : D9_REC_WORKER_UNPARK,
                                                  .ts = *ts },
                                           .runtime = 1, .worker = worker };
            sz = sizeof r.wk;
        }
        assert_true(len + sz <= cap);
        memcpy(b + len, &r, sz);
        len += sz;
    }
    return len;
}

struct ref {                    /* a stream and its inline twin */
    struct ru_stream *s;
    struct rollup *ru;
    uint64_t ts[1];             /* one clock for its threads: none trails the pairing's lag */
    int dropped;
};

static void finish_and_compare(struct ru_pipe *p, struct ref *r)
{
    uint8_t *got = NULL, *want = NULL;
    size_t got_len = 0, want_len = 0;
    assert_int_equal(ru_pipe_finish(p, r->s, &got, &got_len), 0);
    assert_int_equal(rollup_finish(r->ru, &want, &want_len), 0);
    rollup_free(r->ru);
    assert_int_equal(got_len, want_len);
    assert_memory_equal(got, want, want_len);
    struct rollup_view v;
    char why[160] = "";
    if (rollup_decode(got, got_len, &v, why, sizeof why))
        fail_msg("%s", why);
    assert_true(v.npoll > 0);
    free(got);
    free(want);
}

/* Four streams interleaved, thousands of messages of every way of carrying
 * records, one stream dropped midway: each finished one equals inline. */
static void test_piped_streams_equal_inline_ones(void **state)
{
    (void)state;
    struct ru_pipe *p;
    assert_int_equal(ru_pipe_new(&p), 0);
    enum { NS = 4, BIG = 4 * RU_PIPE_SLOT };
    struct ref refs[NS];
    uint8_t *big = malloc(BIG);
    assert_non_null(big);
    for (int i = 0; i < NS; i++) {
        memset(&refs[i], 0, sizeof refs[i]);
        assert_int_equal(ru_pipe_open(p, &refs[i].s), 0);
        assert_int_equal(rollup_new(&refs[i].ru), 0);
        refs[i].ts[0] = S;
    }
    uint64_t seed = 0x1234567;
    unsigned msgs = 12 * RU_PIPE_SLOTS;
    for (unsigned m = 0; m < msgs; m++) {
        if (m == msgs / 2) {            /* one stream ends unwanted, midway */
            ru_pipe_drop(p, refs[1].s);
            rollup_free(refs[1].ru);
            refs[1].dropped = 1;
        }
        struct ref *r = &refs[rnd(&seed) % NS];
        if (r->dropped)
            continue;
        uint32_t ring = (uint32_t)(rnd(&seed) % 3);
        unsigned how = (unsigned)(rnd(&seed) % 8);
        const uint8_t *run;
        size_t len;
        if (how == 0) {                 /* longer than a slot: a heap copy */
            len = make_records(big, BIG, 2000, &seed, &r->ts[0], (uint16_t)ring);
            assert_true(len > RU_PIPE_SLOT);
            run = big;
        } else if (how < 4) {           /* copied into the slot */
            len = make_records(big, BIG, 1 + (unsigned)(rnd(&seed) % 200), &seed, &r->ts[0],
                               (uint16_t)ring);
            run = big;
        } else {                        /* in place, the drain's way */
            uint8_t *slot = ru_pipe_slot(p);
            assert_non_null(slot);
            len = make_records(slot, RU_PIPE_SLOT, 1 + (unsigned)(rnd(&seed) % 200), &seed,
                               &r->ts[0], (uint16_t)ring);
            run = slot;
        }
        assert_int_equal(rollup_feed_records(r->ru, ring, 1, run, len), 0);
        assert_int_equal(ru_pipe_records(p, r->s, ring, 1, run, len), 0);
    }
    struct ru_pipe_stats st;
    ru_pipe_get_stats(p, &st);
    assert_true(st.sent > RU_PIPE_SLOTS);
    assert_true(st.copied > 0 && st.copied < st.sent);     /* some travelled in place */
    int finished = 0;
    for (int i = 0; i < NS; i++)
        if (!refs[i].dropped) {
            finish_and_compare(p, &refs[i]);
            finished++;
        }
    assert_int_equal(finished, NS - 1);
    ru_pipe_free(p);
    free(big);
}

/* A run the rollups reject (a record longer than the run) breaks its
 * stream on the thread: its finish says -ESTALE; another stream is whole. */
static void test_a_rejected_feed_breaks_its_stream_only(void **state)
{
    (void)state;
    struct ru_pipe *p;
    assert_int_equal(ru_pipe_new(&p), 0);
    struct ref good = { 0 };
    good.ts[0] = S;
    struct ru_stream *bad;
    assert_int_equal(ru_pipe_open(p, &bad), 0);
    assert_int_equal(ru_pipe_open(p, &good.s), 0);
    assert_int_equal(rollup_new(&good.ru), 0);
    uint8_t buf[4096];
    uint64_t seed = 99;
    size_t len = make_records(buf, sizeof buf, 40, &seed, &good.ts[0], 0);
    assert_int_equal(ru_pipe_records(p, good.s, 0, 1, buf, len), 0);
    assert_int_equal(rollup_feed_records(good.ru, 0, 1, buf, len), 0);
    struct d9_rec_hdr h = { .len = 64, .type = D9_REC_POLL_START, .ts = S };   /* 64 > 24 */
    uint8_t junk[24] = { 0 };
    memcpy(junk, &h, sizeof h);
    assert_int_equal(ru_pipe_records(p, bad, 0, 1, junk, sizeof junk), 0);     /* sent... */
    assert_int_equal(ru_pipe_records(p, bad, 0, 1, buf, len), 0);              /* ...ignored */
    uint8_t *out = (uint8_t *)1;
    size_t olen = 7;
    assert_int_equal(ru_pipe_finish(p, bad, &out, &olen), -ESTALE);
    assert_null(out);
    assert_int_equal(olen, 0);
    finish_and_compare(p, &good);
    ru_pipe_free(p);
}

/* Records read into a slot's buffer and fed after another message took
 * that slot are refused (-EINVAL), not sent as whatever the buffer holds
 * now; the stream then ends as its writer ends it. */
static void test_a_stale_slot_is_refused(void **state)
{
    (void)state;
    struct ru_pipe *p;
    assert_int_equal(ru_pipe_new(&p), 0);
    struct ru_stream *s;
    assert_int_equal(ru_pipe_open(p, &s), 0);
    uint64_t seed = 11, ts = S;
    uint8_t *slot = ru_pipe_slot(p);
    size_t len = make_records(slot, RU_PIPE_SLOT, 50, &seed, &ts, 0);
    uint8_t meta[8] = { 0 };
    assert_int_equal(ru_pipe_meta(p, s, meta, 0), 0);          /* takes that slot */
    assert_int_equal(ru_pipe_records(p, s, 0, 1, slot, len), -EINVAL);
    struct ru_pipe_stats st;
    ru_pipe_get_stats(p, &st);
    assert_int_equal(st.sent, 1);
    ru_pipe_drop(p, s);
    ru_pipe_free(p);
}

/* Freeing the pipe consumes what was sent first: a stream dropped just
 * before, with messages still queued, is freed (ASan would see a leak). */
static void test_free_consumes_what_was_sent(void **state)
{
    (void)state;
    struct ru_pipe *p;
    assert_int_equal(ru_pipe_new(&p), 0);
    struct ru_stream *s;
    assert_int_equal(ru_pipe_open(p, &s), 0);
    uint64_t seed = 5, ts = S;
    for (unsigned m = 0; m < 3 * RU_PIPE_SLOTS; m++) {
        uint8_t *slot = ru_pipe_slot(p);
        size_t len = make_records(slot, RU_PIPE_SLOT, 100, &seed, &ts, 0);
        assert_int_equal(ru_pipe_records(p, s, 0, 1, slot, len), 0);
    }
    ru_pipe_drop(p, s);
    ru_pipe_free(p);
    ru_pipe_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_piped_streams_equal_inline_ones),
        cmocka_unit_test(test_a_rejected_feed_breaks_its_stream_only),
        cmocka_unit_test(test_a_stale_slot_is_refused),
        cmocka_unit_test(test_free_consumes_what_was_sent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
