/*
 * fuzz_pack.c — libFuzzer target for packed DATA blocks (collector/store/pack.c).
 *
 * Two properties per input:
 *   1. hostile input: the input, behind a record count taken from its first
 *      byte, is unpacked as a packed payload. pack_unpack must never crash,
 *      read or write out of bounds, and whatever it accepts must be records
 *      that shm_record_check accepts; packing those again and unpacking the
 *      result must give the same bytes.
 *   2. round trip: the input is turned into valid records of every type
 *      (lengths, seqs with gaps, timestamps going back and forth, payload
 *      words), packed in pieces of input-chosen sizes (the drain packs a
 *      chunk at a time) and unpacked: the bytes must come back exactly and
 *      the packed size must stay within PACK_BOUND.
 * Built and run by tests/fuzz/run.sh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/pack.h"
#include "shm/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RAW_MAX (64u * 1024u)

static uint8_t raw[RAW_MAX], again[RAW_MAX], packed[PACK_BOUND(RAW_MAX) + 64];

/* pack raw[0, len) in pieces cut at record boundaries every `every` records */
static size_t pack_all(const uint8_t *in, size_t len, unsigned every, uint8_t *out, size_t cap)
{
    struct pack_state s;
    pack_init(&s);
    size_t pos = 0, ent = 0;
    while (pos < len) {
        size_t end = pos;
        for (unsigned k = 0; k < every && end < len; k++) {
            uint16_t l;
            memcpy(&l, in + end, 2);
            end += l;
        }
        long n = pack_records(&s, in + pos, end - pos, out + PACK_PREFIX + ent,
                              cap - PACK_PREFIX - ent - 8);
        if (n < 0)
            abort();            /* within PACK_BOUND by construction */
        ent += (size_t)n;
        pos = end;
    }
    return pack_finish(out, ent, (uint32_t)len);
}

static void round_trip(const uint8_t *in, size_t len, uint32_t nrec, unsigned every)
{
    size_t plen = pack_all(in, len, every ? every : 1, packed, sizeof packed);
    if (plen > PACK_BOUND(len) || plen % 8)
        abort();
    long n = pack_unpack(packed, plen, nrec, again, sizeof again);
    if (n != (long)len || memcmp(in, again, len) != 0)
        abort();
}

static uint64_t take(const uint8_t **p, const uint8_t *e, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n && *p < e; i++)
        v |= (uint64_t)*(*p)++ << (8 * i);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    /* 1. hostile packed input */
    uint32_t nrec = data[0];
    size_t plen = (size - 1) & ~(size_t)7;
    long n = pack_unpack(data + 1, plen, nrec, raw, sizeof raw);
    if (n >= 0) {
        size_t off = 0;
        for (uint32_t k = 0; k < nrec; k++) {
            int l = shm_record_check(raw + off, (size_t)n - off);
            if (l <= 0)
                abort();
            off += (size_t)l;
        }
        if (off != (size_t)n)
            abort();
        round_trip(raw, (size_t)n, nrec, 3);
    }

    /* 2. valid records built from the input */
    const uint8_t *p = data, *e = data + size;
    size_t len = 0;
    uint32_t count = 0, seq = (uint32_t)take(&p, e, 4);
    uint64_t ts = take(&p, e, 8);
    unsigned every = (unsigned)take(&p, e, 1) % 7;
    while (p < e) {
        uint16_t type = (uint16_t)(1 + take(&p, e, 1) % (D9_REC_TYPE_COUNT - 1));
        int fixed = shm_record_len_table[type];
        size_t rlen;
        if (fixed > 0) {
            rlen = (size_t)fixed;
        } else if (type == D9_REC_CUSTOM) {
            rlen = sizeof(struct d9_rec_custom) + 8 * (take(&p, e, 1) % 40);
        } else {                                /* CPU_SAMPLE, SCHED_SWITCH */
            rlen = sizeof(struct d9_rec_stack) + 8 * (take(&p, e, 1) % (D9_STACK_MAX_FRAMES + 1));
        }
        if (len + rlen > RAW_MAX)
            break;
        uint8_t *r = raw + len;
        memset(r, 0, rlen);
        seq += (uint32_t)(take(&p, e, 1) & 3) == 3 ? (uint32_t)take(&p, e, 2) : 1;
        ts += (uint64_t)(int64_t)(int16_t)take(&p, e, 2) * 1000u;
        struct d9_rec_hdr h = { .len = (uint16_t)rlen, .type = type, .seq = seq, .ts = ts };
        memcpy(r, &h, sizeof h);
        for (size_t w = sizeof h; w < rlen; w += 8) {
            uint64_t v = take(&p, e, (unsigned)take(&p, e, 1) % 9);
            memcpy(r + w, &v, 8);
        }
        if (type == D9_REC_CUSTOM) {
            struct d9_rec_custom c;
            memcpy(&c, r, sizeof c);
            c.payload_len = (uint32_t)(rlen - sizeof c);
            c.schema |= 1;                      /* schema 0 is not a schema */
            memcpy(r, &c, sizeof c);
        } else if (fixed <= 0) {
            struct d9_rec_stack st;
            memcpy(&st, r, sizeof st);
            st.nframes = (uint16_t)((rlen - sizeof st) / 8);
            memcpy(r, &st, sizeof st);
        }
        if (shm_record_check(r, rlen) != (int)rlen)
            return 0;                           /* not a record the drain would pack */
        len += rlen;
        count++;
    }
    if (count)
        round_trip(raw, len, count, every);
    return 0;
}
