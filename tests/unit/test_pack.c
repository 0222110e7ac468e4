/*
 * test_pack.c — packed DATA block records (collector/store/pack.c): exact round
 * trips of every record type, what packing saves on a typical stream, the
 * worst-case bound, chunked packing, and rejection of malformed payloads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/pack.h"
#include "shm/record.h"

#define RAW_CAP (256u * 1024u)

struct fx {
    uint8_t raw[RAW_CAP];
    size_t len;
    uint32_t nrec;
    uint8_t packed[PACK_BOUND(RAW_CAP) + 64];
    uint8_t out[RAW_CAP];
};

static int setup(void **state)
{
    *state = calloc(1, sizeof(struct fx));
    return *state ? 0 : -1;
}
static int teardown(void **state) { free(*state); return 0; }

static void add(struct fx *f, const void *rec)
{
    uint16_t len;
    memcpy(&len, rec, sizeof len);
    assert_int_equal(shm_record_check(rec, len), len);
    memcpy(f->raw + f->len, rec, len);
    f->len += len;
    f->nrec++;
}

static void poll_start(struct fx *f, uint32_t seq, uint64_t ts, uint64_t task)
{
    struct d9_rec_poll_start r = { .h = { sizeof r, D9_REC_POLL_START, seq, ts }, .task = task,
                                   .loc = 7, .runtime = 1, .worker = 3 };
    add(f, &r);
}

/* Pack f->raw in one call; returns the payload length. */
static size_t pack_once(struct fx *f)
{
    struct pack_state s;
    pack_init(&s);
    long n = pack_records(&s, f->raw, f->len, f->packed + PACK_PREFIX,
                          sizeof f->packed - PACK_PREFIX - 8);
    assert_true(n >= 0);
    return pack_finish(f->packed, (size_t)n, (uint32_t)f->len);
}

static void assert_round_trip(struct fx *f, size_t plen)
{
    assert_true(plen <= PACK_BOUND(f->len));
    assert_int_equal(plen % 8, 0);
    assert_int_equal(pack_unpack(f->packed, plen, f->nrec, f->out, sizeof f->out),
                     (long)f->len);
    assert_memory_equal(f->out, f->raw, f->len);
}

static void every_record_type_comes_back_byte_for_byte(void **state)
{
    struct fx *f = *state;
    poll_start(f, 5, 1000, 0x1122334455667788ull);
    struct d9_rec_poll_end pe = { .h = { sizeof pe, D9_REC_POLL_END, 6, 1500 }, .task = 9,
                                  .runtime = 1, .worker = 3, ._pad = 0xdead };
    add(f, &pe);
    struct d9_rec_wake wk = { .h = { sizeof wk, D9_REC_WAKE, 7, 1400 }, .waker = 1, .wakee = 2,
                              .runtime = 1, .target_worker = D9_WORKER_NONE };
    add(f, &wk);
    struct d9_rec_worker pk = { .h = { sizeof pk, D9_REC_WORKER_PARK, 8, 2000 }, .runtime = 1,
                                .worker = 3, .flags = D9_WORKER_UNSAMPLED, .cpu_ns = 123456,
                                .sched_wait_ns = 99 };
    add(f, &pk);
    pk.h.type = D9_REC_WORKER_UNPARK;
    pk.h.seq = 9;
    add(f, &pk);
    struct d9_rec_task ts = { .h = { sizeof ts, D9_REC_TASK_SPAWN, 10, 2100 }, .task = 44,
                              .loc = 3, .runtime = 2 };
    add(f, &ts);
    ts.h.type = D9_REC_TASK_TERMINATE;
    ts.h.seq = 11;
    add(f, &ts);
    struct d9_rec_queue_depth qd = { .h = { sizeof qd, D9_REC_QUEUE_DEPTH, 12, 2200 },
                                     .depth = UINT64_MAX, .runtime = 1,
                                     .worker = D9_WORKER_NONE };
    add(f, &qd);
    uint8_t c[sizeof(struct d9_rec_custom) + 24];
    struct d9_rec_custom ch = { .h = { sizeof c, D9_REC_CUSTOM, 13, 2300 }, .schema = 4,
                                .payload_len = 24 };
    memcpy(c, &ch, sizeof ch);
    memcpy(c + sizeof ch, "\x05\0\0\0hello\0\0\0\x2a\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 24);
    add(f, c);
    uint8_t st[sizeof(struct d9_rec_stack) + 3 * 8];
    struct d9_rec_stack sh = { .h = { sizeof st, D9_REC_CPU_SAMPLE, 14, 2400 }, .tid = 77,
                               .nframes = 3, .weight = 10101010 };
    memcpy(st, &sh, sizeof sh);
    const uint64_t ips[3] = { 0x7f0011223344ull, 0x55aa00112233ull, 0xffffffff81000000ull };
    memcpy(st + sizeof sh, ips, sizeof ips);
    add(f, st);
    sh.h.type = D9_REC_SCHED_SWITCH;
    sh.h.seq = 15;
    memcpy(st, &sh, sizeof sh);
    add(f, st);
    assert_round_trip(f, pack_once(f));
}

static void a_typical_poll_stream_packs_to_a_few_bytes_per_record(void **state)
{
    struct fx *f = *state;
    for (uint32_t i = 0; i < 1000; i++)
        poll_start(f, i, 1000000 + 40ull * i, 5000 + i);   /* 40 ns apart, counting tasks */
    size_t plen = pack_once(f);
    assert_round_trip(f, plen);
    /* tag, one control byte, ts delta 1 byte, task xor 1-2 bytes, the rest
     * of the payload repeats (xor 0); 32 bytes each in ring framing */
    assert_true(plen < f->len / 5);
    assert_true(plen < 6 * 1000 + 64);
}

static void seq_gaps_wraps_and_timestamps_going_back_are_exact(void **state)
{
    struct fx *f = *state;
    poll_start(f, UINT32_MAX - 1, UINT64_MAX, 1);
    poll_start(f, UINT32_MAX, 0, 2);                /* ts wraps backwards to 0 */
    poll_start(f, 0, 5, 3);                         /* seq wraps: implicit + 1 */
    poll_start(f, 1000, 4, 4);                      /* a drop of 999, ts back by 1 */
    poll_start(f, 1000, UINT64_MAX / 2, 5);         /* the same seq again */
    assert_round_trip(f, pack_once(f));
}

static void packing_in_chunks_equals_packing_at_once(void **state)
{
    struct fx *f = *state;
    for (uint32_t i = 0; i < 300; i++)
        poll_start(f, i * 2, 7000 + 13ull * i * i, (uint64_t)i << 20);
    size_t once = pack_once(f);
    uint8_t ref[8192];
    assert_true(once <= sizeof ref);
    memcpy(ref, f->packed, once);
    struct pack_state s;
    pack_init(&s);
    size_t ent = 0;
    for (size_t pos = 0; pos < f->len; pos += 32 * 37) {       /* 37 records a call */
        size_t n = f->len - pos < 32 * 37 ? f->len - pos : 32 * 37;
        long e = pack_records(&s, f->raw + pos, n, f->packed + PACK_PREFIX + ent,
                              sizeof f->packed - PACK_PREFIX - ent - 8);
        assert_true(e > 0);
        ent += (size_t)e;
    }
    assert_int_equal(pack_finish(f->packed, ent, (uint32_t)f->len), once);
    assert_memory_equal(f->packed, ref, once);
}

static void incompressible_records_stay_within_the_bound(void **state)
{
    struct fx *f = *state;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (uint32_t i = 0; f->len + 4096 <= RAW_CAP / 2; i++) {
        /* random words, a seq gap every record, huge ts jumps, full-size stacks */
        uint8_t st[sizeof(struct d9_rec_stack) + D9_STACK_MAX_FRAMES * 8];
        struct d9_rec_stack sh = { .h = { (uint16_t)sizeof st, D9_REC_CPU_SAMPLE, i * 3,
                                          x * 0x2545f4914f6cdd1dull },
                                   .tid = (uint32_t)x, .nframes = D9_STACK_MAX_FRAMES,
                                   .flags = 3, .weight = ~x };
        memcpy(st, &sh, sizeof sh);
        for (unsigned k = 0; k < D9_STACK_MAX_FRAMES; k++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            memcpy(st + sizeof sh + 8 * k, &x, 8);
        }
        add(f, st);
        poll_start(f, i * 3 + 2, x, ~x);
    }
    assert_round_trip(f, pack_once(f));
}

static void a_full_output_is_enospc(void **state)
{
    struct fx *f = *state;
    for (uint32_t i = 0; i < 10; i++)
        poll_start(f, i, 1000 * i, i);
    struct pack_state s;
    pack_init(&s);
    uint8_t small[40];
    assert_int_equal(pack_records(&s, f->raw, f->len, small, sizeof small), -ENOSPC);
}

static void every_truncation_and_a_wrong_count_are_rejected(void **state)
{
    struct fx *f = *state;
    for (uint32_t i = 0; i < 20; i++)
        poll_start(f, i, 100 + i, i);
    size_t plen = pack_once(f);
    for (size_t cut = 0; cut < plen; cut++) {
        long n = pack_unpack(f->packed, cut, f->nrec, f->out, sizeof f->out);
        assert_true(n == -EBADMSG || n == -ENOBUFS);
    }
    assert_int_equal(pack_unpack(f->packed, plen, f->nrec - 1, f->out, sizeof f->out), -EBADMSG);
    assert_int_equal(pack_unpack(f->packed, plen, f->nrec + 1, f->out, sizeof f->out), -EBADMSG);
    assert_int_equal(pack_unpack(f->packed, plen, f->nrec, f->out, f->len - 8), -ENOBUFS);
}

static void malformed_prefix_tags_and_padding_are_rejected(void **state)
{
    struct fx *f = *state;
    poll_start(f, 1, 100, 1);
    poll_start(f, 2, 200, 2);
    size_t plen = pack_once(f);
    uint8_t *b = f->packed;
    uint8_t save[16];
    memcpy(save, b, sizeof save);
    b[4] = 1;                                        /* the reserved prefix word */
    assert_int_equal(pack_unpack(b, plen, 2, f->out, sizeof f->out), -EBADMSG);
    memcpy(b, save, sizeof save);
    uint32_t raw = (uint32_t)f->len + 8;             /* raw_len disagrees */
    memcpy(b, &raw, 4);
    assert_int_equal(pack_unpack(b, plen, 2, f->out, sizeof f->out), -EBADMSG);
    memcpy(b, save, sizeof save);
    b[PACK_PREFIX] |= 0x40;                          /* reserved tag bit */
    assert_int_equal(pack_unpack(b, plen, 2, f->out, sizeof f->out), -EBADMSG);
    memcpy(b, save, sizeof save);
    b[PACK_PREFIX] &= (uint8_t)~0x10;                /* first record without its seq */
    assert_int_equal(pack_unpack(b, plen, 2, f->out, sizeof f->out), -EBADMSG);
    memcpy(b, save, sizeof save);
    b[PACK_PREFIX] = (b[PACK_PREFIX] & 0xf0) | D9_REC_PAD;   /* a PAD is never packed */
    assert_int_equal(pack_unpack(b, plen, 2, f->out, sizeof f->out), -EBADMSG);
    memcpy(b, save, sizeof save);
    assert_int_equal(pack_unpack(b, plen, 2, f->out, sizeof f->out), (long)f->len);
    if (plen > PACK_PREFIX && b[plen - 1] == 0) {    /* the padding must be zero */
        b[plen - 1] = 1;
        assert_int_equal(pack_unpack(b, plen, 2, f->out, sizeof f->out), -EBADMSG);
    }
}

static void a_control_nibble_over_eight_is_rejected(void **state)
{
    struct fx *f = *state;
    poll_start(f, 1, 100, 1);
    size_t plen = pack_once(f);
    /* tag, seq LEB128 (1 byte), then the first control byte */
    size_t ctl = PACK_PREFIX + 2;
    f->packed[ctl] = (uint8_t)((f->packed[ctl] & 0xf0) | 9);
    assert_int_equal(pack_unpack(f->packed, plen, 1, f->out, sizeof f->out), -EBADMSG);
}

/* 2- and 3-word records of every value size (0 .. 8 bytes each, the xor of
 * random words), mixed with longer ones, come back exact: most are decoded
 * on the straight-line path, the block's last ones on the loop. */
static void two_and_three_word_records_of_every_value_size_come_back(void **state)
{
    struct fx *f = *state;
    uint64_t x = 0x2545f4914f6cdd1dull, ts = 1000;
    for (uint32_t i = 0; f->len + 256 <= RAW_CAP / 2; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t m = (x >> 3) % 65 == 64 ? ~0ull : (1ull << ((x >> 3) % 64)) - 1;
        ts += (x >> 11) & m & 0xffffff;
        switch (x % 4) {
        case 0:
            poll_start(f, i, ts, (x >> 7) & m);
            break;
        case 1: {
            struct d9_rec_worker pk = { .h = { sizeof pk, D9_REC_WORKER_PARK, i, ts },
                                        .runtime = (uint16_t)x, .worker = (uint16_t)(x >> 16),
                                        .flags = (uint32_t)(x >> 32) & 3, .cpu_ns = x & m,
                                        .sched_wait_ns = (x >> 5) & m };
            add(f, &pk);
            break;
        }
        case 2: {
            struct d9_rec_wake wk = { .h = { sizeof wk, D9_REC_WAKE, i, ts }, .waker = x & m,
                                      .wakee = ~x & m, .runtime = (uint16_t)x,
                                      .target_worker = (uint16_t)(x >> 48) };
            add(f, &wk);
            break;
        }
        default: {
            uint8_t st[sizeof(struct d9_rec_stack) + 5 * 8];
            struct d9_rec_stack sh = { .h = { sizeof st, D9_REC_CPU_SAMPLE, i, ts },
                                       .tid = (uint32_t)x, .nframes = 5, .weight = x & m };
            memcpy(st, &sh, sizeof sh);
            for (unsigned k = 0; k < 5; k++) {
                uint64_t ip = (x * (k + 1)) & m;
                memcpy(st + sizeof sh + 8 * k, &ip, 8);
            }
            add(f, st);
        }
        }
    }
    assert_true(f->nrec > 2000);
    assert_round_trip(f, pack_once(f));
}

/* A control byte of a record in the middle of a block (the straight-line
 * path) is checked as at the end: a nibble over 8, and a value where a
 * 2-word record has none. */
static void a_bad_second_control_byte_mid_block_is_rejected(void **state)
{
    struct fx *f = *state;
    enum { N = 40 };
    for (uint32_t i = 0; i < N; i++)
        poll_start(f, i, 1000 + 40ull * i, 5);  /* after the first: tag, ctl, ts, ctl */
    struct pack_state s;
    pack_init(&s);
    long n = pack_records(&s, f->raw, f->len, f->packed + PACK_PREFIX,
                          sizeof f->packed - PACK_PREFIX - 8);
    assert_true(n > 4 * N);
    size_t plen = pack_finish(f->packed, (size_t)n, (uint32_t)f->len);
    size_t ctl1 = PACK_PREFIX + (size_t)n - 4 * (N / 2) + 3;    /* record N/2's second */
    assert_int_equal(f->packed[ctl1], 0);
    assert_int_equal(pack_unpack(f->packed, plen, N, f->out, sizeof f->out), (long)f->len);
    f->packed[ctl1] = 9;
    assert_int_equal(pack_unpack(f->packed, plen, N, f->out, sizeof f->out), -EBADMSG);
    f->packed[ctl1] = 0x10;
    assert_int_equal(pack_unpack(f->packed, plen, N, f->out, sizeof f->out), -EBADMSG);
    f->packed[ctl1] = 0x90;
    assert_int_equal(pack_unpack(f->packed, plen, N, f->out, sizeof f->out), -EBADMSG);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(every_record_type_comes_back_byte_for_byte),
        T(a_typical_poll_stream_packs_to_a_few_bytes_per_record),
        T(seq_gaps_wraps_and_timestamps_going_back_are_exact),
        T(packing_in_chunks_equals_packing_at_once),
        T(incompressible_records_stay_within_the_bound),
        T(a_full_output_is_enospc),
        T(every_truncation_and_a_wrong_count_are_rejected),
        T(malformed_prefix_tags_and_padding_are_rejected),
        T(a_control_nibble_over_eight_is_rejected),
        T(two_and_three_word_records_of_every_value_size_come_back),
        T(a_bad_second_control_byte_mid_block_is_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
