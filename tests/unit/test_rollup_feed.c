/*
 * test_rollup_feed.c — live rollups (seg_writer_rollup_*, rollup_feed_*),
 * as a specification: a segment written the drain's way (packed blocks
 * reserved, fed run by run, committed; META and unpacked DATA blocks fed by
 * the writer) has live rollups byte for byte equal to the ones read back
 * from the sealed file (rollup_file), with unfinished polls, polls across
 * buckets, nested and replaced polls, wakes across threads, custom events,
 * parks, blocks with lost records and record-less blocks; random segments
 * the same; and anything that breaks "fed = appended" (a dropped
 * reservation, a commit of other records, a start after records) turns the
 * live rollups off for the segment instead of giving other bytes.
 * Every test runs twice: fed here (inline) and through a rollup thread
 * (ru_pipe.h, the collector's way, with the drain's in-place buffers:
 * seg_writer_rollup_slot), which must give the same bytes and outcomes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/rollup_fixture.h"
#include "collector/store/crc32c.h"
#include "collector/store/pack.h"
#include "collector/store/rollup.h"
#include "collector/store/ru_pipe.h"
#include "collector/store/seg_writer.h"
#include "shm/meta.h"

#define S 1000000000ull
#define MS 1000000ull

static struct ru_pipe *g_pipe;     /* piped runs: the rollup thread */

static int setup(void **state)
{
    g_pipe = NULL;
    return fx_setup(state, "d9rufeedtest");
}

static int setup_piped(void **state)
{
    assert_int_equal(ru_pipe_new(&g_pipe), 0);
    return fx_setup(state, "d9rufeedtest");
}

static int teardown_piped(void **state)
{
    ru_pipe_free(g_pipe);       /* every stream ended: nothing leaks (ASan) */
    g_pipe = NULL;
    return teardown(state);
}

static const struct seg_proc_info proc = {
    .pid = 4343, .uid = 1000, .start_time = 779, .clock_source = D9_CLOCK_MONOTONIC,
    .host = "testhost", .comm = "worker", .exe = "/usr/bin/worker",
};

static void poll_start(struct buf *x, uint64_t ts, uint64_t task, uint16_t worker, uint32_t loc)
{
    struct d9_rec_poll_start r = { .h = { .len = sizeof r, .type = D9_REC_POLL_START, .ts = ts },
                                   .task = task, .loc = loc, .runtime = 1, .worker = worker };
    put(x, &r, sizeof r);
}

static void poll_end(struct buf *x, uint64_t ts, uint64_t task, uint16_t worker)
{
    struct d9_rec_poll_end r = { .h = { .len = sizeof r, .type = D9_REC_POLL_END, .ts = ts },
                                 .task = task, .runtime = 1, .worker = worker };
    put(x, &r, sizeof r);
}

static void wake(struct buf *x, uint64_t ts, uint64_t task)
{
    struct d9_rec_wake r = { .h = { .len = sizeof r, .type = D9_REC_WAKE, .ts = ts },
                             .waker = 0, .wakee = task, .runtime = 1,
                             .target_worker = D9_WORKER_NONE };
    put(x, &r, sizeof r);
}

static void park(struct buf *x, uint64_t ts, uint16_t worker, int parks, uint64_t cpu)
{
    struct d9_rec_worker r = { .h = { .len = sizeof r,
                                      .type = parks ? D9_REC_WORKER_PARK : D9_REC_WORKER_UNPARK,
                                      .ts = ts },
                               .runtime = 1, .worker = worker, .cpu_ns = cpu,
                               .sched_wait_ns = cpu / 7 };
    put(x, &r, sizeof r);
}

/* schema 1 "req" { u64 bytes, i64 delta } */
static size_t meta_schema(uint8_t *m, size_t cap)
{
    static const uint8_t types[] = { D9_FT_U64, D9_FT_I64 };
    static const char *const names[] = { "bytes", "delta" };
    return fx_schema_entry(m, cap, "req", 2, types, names);
}

static void req(struct buf *x, uint64_t ts, uint64_t bytes, int64_t delta)
{
    uint8_t r[sizeof(struct d9_rec_custom) + 16];
    struct d9_rec_custom c = { .h = { .len = sizeof r, .type = D9_REC_CUSTOM, .ts = ts },
                               .schema = 1, .payload_len = 16, .task = D9_TASK_NONE };
    memcpy(r, &c, sizeof c);
    memcpy(r + sizeof c, &bytes, 8);
    memcpy(r + sizeof c + 8, &delta, 8);
    put(x, r, sizeof r);
}

/* x's records as one packed DATA block, the drain's way: reserve, pack and
 * feed chunk records at a time, commit. */
static int write_packed(struct seg_writer *w, struct buf *x, uint32_t ring, uint32_t gen,
                        uint64_t lost, size_t chunk)
{
    size_t bound = (PACK_BOUND(x->len) + 7) & ~(size_t)7;
    uint8_t *dst;
    int rc = seg_writer_data_reserve(w, bound, &dst);
    if (rc)
        return rc;
    struct pack_state pk;
    pack_init(&pk);
    struct seg_data_stats st = { 0 };
    size_t packed = 0;
    for (size_t off = 0; off < x->len;) {
        size_t end = off;
        for (size_t k = 0; k < chunk && end < x->len; k++) {
            struct d9_rec_hdr h;
            memcpy(&h, x->b + end, sizeof h);
            if (st.nrec == 0 || h.ts < st.t_min)
                st.t_min = h.ts;
            if (h.ts > st.t_max)
                st.t_max = h.ts;
            st.counts[h.type]++;
            st.nrec++;
            end += h.len;
        }
        long e = pack_records(&pk, x->b + off, end - off, dst + PACK_PREFIX + packed,
                              bound - PACK_PREFIX - packed);
        assert_true(e >= 0);
        packed += (size_t)e;
        /* the drain reads a chunk into the rollup thread's buffer */
        uint8_t *slot = seg_writer_rollup_slot(w);
        const uint8_t *run = x->b + off;
        if (g_pipe && seg_writer_rollup_live(w))
            assert_non_null(slot);
        else
            assert_null(slot);
        if (slot) {
            assert_true(end - off <= RU_PIPE_SLOT);
            memcpy(slot, run, end - off);
            run = slot;
        }
        assert_int_equal(seg_writer_rollup_feed(w, ring, gen, run, end - off), 0);
        off = end;
    }
    size_t plen = pack_finish(dst, packed, (uint32_t)x->len);
    rc = seg_writer_data_commit(w, 200 + ring, ring, gen, lost, plen, &st,
                                crc32c_update(0, dst, plen), SEG_BF_PACKED);
    x->len = 0;
    return rc;
}

static struct seg_writer *open_live(struct fx *fx, const uint8_t *meta, size_t mlen)
{
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, ++fx->id, &proc, meta, mlen), 0);
    assert_int_equal(seg_writer_rollup_start(w, g_pipe), 0);
    return w;
}

/* Seal; the live rollups must be the read-back ones, byte for byte. */
static void seal_and_compare(struct seg_writer *w, struct rollup_view *v, uint8_t **keep)
{
    struct seg_summary sum;
    assert_int_equal(seg_writer_rollup_live(w), 1);
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    uint8_t *live = NULL, *back = NULL;
    size_t live_len = 0, back_len = 0;
    assert_int_equal(seg_writer_rollup_finish(w, &live, &live_len), 0);
    assert_int_equal(rollup_file(sum.path, &back, &back_len), 0);
    seg_writer_free(w);
    assert_int_equal(live_len, back_len);
    assert_memory_equal(live, back, back_len);
    char why[160] = "";
    if (rollup_decode(live, live_len, v, why, sizeof why) != 0)
        fail_msg("%s", why);
    free(back);
    *keep = live;
}

/* Seal a segment whose live rollups were given up: the finish says so
 * (-ESTALE), and the file's rollups are there to compute (returned,
 * malloc'ed, decoded into v when v is not NULL). Frees w. */
static uint8_t *seal_given_up(struct seg_writer *w, struct rollup_view *v)
{
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    uint8_t *out = NULL;
    size_t len = 0;
    assert_int_equal(seg_writer_rollup_finish(w, &out, &len), -ESTALE);
    assert_null(out);
    assert_int_equal(rollup_file(sum.path, &out, &len), 0);
    char why[160] = "";
    if (v && rollup_decode(out, len, v, why, sizeof why))
        fail_msg("%s", why);
    seg_writer_free(w);
    return out;
}

static uint64_t sum_unfinished(const struct rollup_view *v, uint64_t *finished_sum)
{
    struct rollup_poll p;
    size_t off = 0;
    uint32_t i = 0;
    uint64_t u = 0;
    *finished_sum = 0;
    while (rollup_next_poll(v, &off, &i, &p) == 1) {
        u += p.unfinished;
        *finished_sum += p.sum_ns;
    }
    return u;
}

static void test_live_rollups_equal_read_back_ones(void **state)
{
    struct fx *fx = *state;
    uint8_t meta[256];
    size_t mlen = meta_schema(meta, sizeof meta);
    struct seg_writer *w = open_live(fx, NULL, 0);     /* the schema in a later META block */
    assert_int_equal(seg_writer_add_meta(w, meta, mlen), 0);
    struct buf *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    /* ring 0: a poll across a bucket boundary, a nested poll, a replaced
     * start, custom events, a park interval */
    poll_start(a, 1 * S + 900 * MS, 11, 0, 7);
    poll_start(a, 1 * S + 950 * MS, 12, 0, 8);         /* nested, ends after its parent */
    poll_end(a, 2 * S + 100 * MS, 11, 0);               /* crosses into second 2 */
    req(a, 2 * S + 110 * MS, 300, -4);
    poll_start(a, 2 * S + 120 * MS, 13, 0, 7);
    poll_start(a, 2 * S + 130 * MS, 13, 0, 7);          /* replaces the first: unfinished */
    poll_end(a, 2 * S + 140 * MS, 13, 0);
    park(a, 2 * S + 150 * MS, 0, 1, 5000);
    assert_int_equal(write_packed(w, a, 0, 1, 3, 2), 0);   /* 3 lost, chunks of 2 */
    /* ring 1, a block in between: wakes of ring 0's tasks, earlier in time */
    wake(b, 1 * S + 800 * MS, 11);
    wake(b, 2 * S + 115 * MS, 13);
    poll_start(b, 2 * S + 160 * MS, 21, 1, 9);          /* never ends: unfinished */
    assert_int_equal(seg_writer_add_data(w, 301, 1, 1, 0, b->b, b->len), 0);
    b->len = 0;
    /* a record-less block with drops, a second META block, a thread end */
    assert_int_equal(seg_writer_add_data(w, 300, 0, 1, 17, NULL, 0), 0);
    assert_int_equal(seg_writer_add_meta(w, meta, mlen), 0);
    park(a, 3 * S, 0, 0, 9000);
    poll_end(a, 3 * S + 10 * MS, 12, 0);                /* ends the nested one */
    req(a, 3 * S + 20 * MS, 5, 6);
    assert_int_equal(write_packed(w, a, 0, 1, 0, 1), 0);
    assert_int_equal(seg_writer_add_thread_end(w, 200, 0, 1, 3 * S + 30 * MS), 0);
    /* ring 0's next generation */
    poll_start(a, 3 * S + 40 * MS, 31, 0, 7);
    poll_end(a, 3 * S + 41 * MS, 31, 0);
    assert_int_equal(write_packed(w, a, 0, 2, 0, 64), 0);

    struct rollup_view v;
    uint8_t *keep;
    seal_and_compare(w, &v, &keep);
    uint64_t fin_sum;
    assert_int_equal(sum_unfinished(&v, &fin_sum), 2);  /* the replaced start, ring 1's */
    assert_true(fin_sum > 0);
    assert_true(v.ndelay > 0);
    assert_true(v.nfield > 0);
    assert_true(v.nworker > 0);
    free(keep);
    free(a);
    free(b);
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Random segments: several threads, blocks packed or not, random chunk
 * sizes, records of every kind the rollups count. */
static void test_random_segments_give_the_same_bytes_both_ways(void **state)
{
    struct fx *fx = *state;
    uint8_t meta[256];
    size_t mlen = meta_schema(meta, sizeof meta);
    struct buf *x = calloc(1, sizeof *x);
    assert_non_null(x);
    for (uint64_t seed = 1; seed <= 40; seed++) {
        uint64_t s = seed * 0x9e3779b97f4a7c15ull;
        struct seg_writer *w = open_live(fx, seed % 3 ? meta : NULL, seed % 3 ? mlen : 0);
        /* one clock; a thread's records trail it by up to 1 s (its blocks
         * overlap the others' in time, within the live pairing's lag) */
        uint64_t ts[4] = { S, S + 3, S + 5, S + 7 }, now = 2 * S;
        for (int blk = 0; blk < 30; blk++) {
            uint32_t ring = (uint32_t)(rnd(&s) % 4);
            unsigned nrec = 1 + (unsigned)(rnd(&s) % 60);
            for (unsigned k = 0; k < nrec; k++) {
                now += rnd(&s) % (300 * MS);
                uint64_t at = now - rnd(&s) % S;
                ts[ring] = at > ts[ring] ? at : ts[ring] + 1;
                uint64_t task = 1 + rnd(&s) % 6;
                uint16_t worker = (uint16_t)ring;
                switch (rnd(&s) % 6) {
                case 0:
                case 1:
                    poll_start(x, ts[ring], task, worker, (uint32_t)(rnd(&s) % 3));
                    break;
                case 2:
                    poll_end(x, ts[ring], task, worker);
                    break;
                case 3:
                    wake(x, ts[ring], task);
                    break;
                case 4:
                    park(x, ts[ring], worker, (int)(rnd(&s) % 2), ts[ring] / 3);
                    break;
                default:
                    req(x, ts[ring], rnd(&s) % 1000, (int64_t)(rnd(&s) % 100) - 50);
                }
            }
            uint64_t lost = rnd(&s) % 4 == 0 ? rnd(&s) % 9 : 0;
            if (rnd(&s) % 4 == 0) {
                assert_int_equal(seg_writer_add_data(w, 200 + ring, ring, 1, lost, x->b, x->len), 0);
                x->len = 0;
            } else {
                assert_int_equal(write_packed(w, x, ring, 1, lost, 1 + rnd(&s) % 20), 0);
            }
            if (rnd(&s) % 10 == 0)
                assert_int_equal(seg_writer_add_data(w, 200 + ring, ring, 1, 5, NULL, 0), 0);
        }
        struct rollup_view v;
        uint8_t *keep;
        seal_and_compare(w, &v, &keep);
        assert_true(v.npoll > 0);
        free(keep);
    }
    free(x);
}

/* Records fed for a reservation that is then dropped are in no block: the
 * live rollups stop (-ESTALE), the file's are still there to compute. */
static void test_a_dropped_reservation_interrupts_them(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w = open_live(fx, NULL, 0);
    struct buf *x = calloc(1, sizeof *x);
    assert_non_null(x);
    poll_start(x, S, 1, 0, 1);
    poll_end(x, S + MS, 1, 0);
    uint8_t *dst;
    assert_int_equal(seg_writer_data_reserve(w, 4096, &dst), 0);
    assert_int_equal(seg_writer_rollup_feed(w, 0, 1, x->b, x->len), 0);
    assert_int_equal(seg_writer_rollup_live(w), 1);
    assert_int_equal(seg_writer_data_reserve(w, 4096, &dst), 0);   /* the first one dropped */
    assert_int_equal(seg_writer_rollup_live(w), 0);
    assert_int_equal(write_packed(w, x, 0, 1, 0, 8), 0);
    free(seal_given_up(w, NULL));
    free(x);
}

/* A commit whose records are not the ones fed (fewer fed here). */
static void test_a_commit_of_other_records_interrupts_them(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w = open_live(fx, NULL, 0);
    struct buf *x = calloc(1, sizeof *x);
    assert_non_null(x);
    poll_start(x, S, 1, 0, 1);
    poll_end(x, S + MS, 1, 0);
    size_t bound = (PACK_BOUND(x->len) + 7) & ~(size_t)7;
    uint8_t *dst;
    assert_int_equal(seg_writer_data_reserve(w, bound, &dst), 0);
    struct pack_state pk;
    pack_init(&pk);
    long e = pack_records(&pk, x->b, x->len, dst + PACK_PREFIX, bound - PACK_PREFIX);
    assert_true(e > 0);
    assert_int_equal(seg_writer_rollup_feed(w, 0, 1, x->b, sizeof(struct d9_rec_poll_start)), 0);
    size_t plen = pack_finish(dst, (size_t)e, (uint32_t)x->len);
    struct seg_data_stats st = { .nrec = 2, .t_min = S, .t_max = S + MS };
    st.counts[D9_REC_POLL_START] = st.counts[D9_REC_POLL_END] = 1;
    assert_int_equal(seg_writer_data_commit(w, 200, 0, 1, 0, plen, &st,
                                            crc32c_update(0, dst, plen), SEG_BF_PACKED), 0);
    assert_int_equal(seg_writer_rollup_live(w), 0);
    free(seal_given_up(w, NULL));
    free(x);
}

/* A thread whose records come more than the pairing's lag behind another
 * thread's (its wakes and poll starts before what was paired already):
 * the live rollups are given up (-ESTALE at the finish, inline or piped),
 * and the file's rollups are still there to compute. */
static void test_a_thread_trailing_past_the_lag_gives_them_up(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w = open_live(fx, NULL, 0);
    struct buf *x = calloc(1, sizeof *x);
    assert_non_null(x);
    for (uint64_t k = 0; k < 10; k++) {         /* ring 0: 10 s of polls and wakes */
        wake(x, S + k * S, 100 + k);
        poll_start(x, S + k * S + MS, 100 + k, 0, 1);
        poll_end(x, S + k * S + 2 * MS, 100 + k, 0);
    }
    assert_int_equal(seg_writer_add_data(w, 200, 0, 1, 0, x->b, x->len), 0);
    x->len = 0;
    wake(x, 2 * S, 7);                          /* ring 1: 8 s behind */
    poll_start(x, 2 * S + MS, 7, 1, 1);
    assert_int_equal(seg_writer_add_data(w, 201, 1, 1, 0, x->b, x->len), 0);
    struct rollup_view v;
    uint8_t *out = seal_given_up(w, &v);
    assert_int_equal(v.ndelay > 0, 1);          /* both rings' wakes answered */
    free(out);
    free(x);
}

/* Fed live, the pairing holds the events of its lag, not the segment's:
 * 200 s of wakes and polls on two threads (a thousand a second) keep at
 * most (lag + step + a run) worth, and give the bytes of one pairing at
 * the end (the same records fed through a file: rollup_file). */
static void test_live_pairing_keeps_only_the_lag(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w = open_live(fx, NULL, 0);
    struct rollup *ru;
    assert_int_equal(rollup_new(&ru), 0);
    struct buf *x = calloc(1, sizeof *x);
    assert_non_null(x);
    uint64_t kept_max = 0;
    for (uint64_t sec = 1; sec <= 200; sec++) {
        for (uint32_t ring = 0; ring < 2; ring++) {
            for (uint64_t k = 0; k < 500; k++) {
                uint64_t t = sec * S + k * 2 * MS + ring * MS, task = (sec * 1000 + k) * 2 + ring;
                wake(x, t, task ^ 1);           /* the other thread's task */
                poll_start(x, t + MS / 2, task, (uint16_t)ring, 1);
                poll_end(x, t + MS / 2 + 100, task, (uint16_t)ring);
            }
            assert_int_equal(rollup_feed_records(ru, ring, 1, x->b, x->len), 0);
            assert_int_equal(seg_writer_add_data(w, 200 + ring, ring, 1, 0, x->b, x->len), 0);
            x->len = 0;
            uint64_t kept = rollup_events_kept(ru);
            if (kept > kept_max)
                kept_max = kept;
        }
    }
    /* 2 events per record triple, 1000 triples a second */
    uint64_t bound = (ROLLUP_PAIR_LAG_NS + ROLLUP_PAIR_STEP_NS) / S * 2000 + 2 * 1000;
    assert_true(kept_max > 0);
    if (kept_max > bound)
        fail_msg("kept %llu events, more than %llu", (unsigned long long)kept_max,
                 (unsigned long long)bound);
    uint8_t *mine = NULL;
    size_t mine_len = 0;
    assert_int_equal(rollup_finish(ru, &mine, &mine_len), 0);
    assert_int_equal(rollup_events_kept(ru), 0);
    rollup_free(ru);
    struct rollup_view v;
    uint8_t *keep;
    seal_and_compare(w, &v, &keep);             /* the writer's own: live = read back */
    assert_int_equal(mine_len > 0, 1);
    uint64_t delays = 0;
    struct rollup_delay d;
    size_t off = 0;
    uint32_t i = 0;
    while (rollup_next_delay(&v, &off, &i, &d) == 1)
        delays += d.count;
    /* ring 0's wakes are answered by ring 1's polls 1.5 ms later; ring 1's
     * come after the task's poll: never answered */
    assert_int_equal(delays, 200 * 500);
    free(mine);
    free(keep);
    free(x);
}

/* Records appended before the start were not fed: no live rollups then. */
static void test_start_after_records_is_refused(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, ++fx->id, &proc, NULL, 0), 0);
    struct buf *x = calloc(1, sizeof *x);
    assert_non_null(x);
    poll_start(x, S, 1, 0, 1);
    assert_int_equal(seg_writer_add_data(w, 200, 0, 1, 0, x->b, x->len), 0);
    assert_int_equal(seg_writer_rollup_start(w, g_pipe), -EBUSY);
    assert_int_equal(seg_writer_rollup_live(w), 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    uint8_t *out = NULL;
    size_t len = 0;
    assert_int_equal(seg_writer_rollup_finish(w, &out, &len), -ENODATA);
    seg_writer_free(w);
    free(x);
}

int main(void)
{
#define BOTH(t) cmocka_unit_test_setup_teardown(t, setup, teardown), \
                cmocka_unit_test_setup_teardown(t, setup_piped, teardown_piped)
    const struct CMUnitTest tests[] = {
        BOTH(test_live_rollups_equal_read_back_ones),
        BOTH(test_random_segments_give_the_same_bytes_both_ways),
        BOTH(test_a_dropped_reservation_interrupts_them),
        BOTH(test_a_commit_of_other_records_interrupts_them),
        BOTH(test_start_after_records_is_refused),
        BOTH(test_a_thread_trailing_past_the_lag_gives_them_up),
        BOTH(test_live_pairing_keeps_only_the_lag),
    };
#undef BOTH
    return cmocka_run_group_tests(tests, NULL, NULL);
}
