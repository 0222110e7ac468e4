/*
 * pack.c — packed DATA block records (format and contract: pack.h).
 *
 * Called by the drain (pack_records, pack_finish: the collector's hot path,
 * once per record) and by the segment reader (pack_unpack: every packed
 * block any reader opens, so hostile input). Pure functions: no state
 * beyond the caller's struct pack_state, no allocation, no I/O.
 *
 * The encoder stores each value with 8-byte unaligned stores and advances
 * by the value's byte count, so it needs 8 bytes of slack after the last
 * byte it writes; its room check accounts for that.
 */
#include <errno.h>
#include <string.h>
#include "collector/store/pack.h"
#include "shm/record.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the shm ABI and this encoding are little-endian");
_Static_assert(D9_REC_TYPE_COUNT <= 16, "a type fits the tag's low nibble");

#define TAG_TYPE 0x0fu
#define TAG_SEQ  0x10u
#define TAG_LEN  0x20u
#define TAG_RSVD 0xc0u
#define LEB_MAX  10u            /* bytes of a 64-bit LEB128 value */

void pack_init(struct pack_state *s)
{
    memset(s, 0, sizeof *s);
    s->first = 1;
}

static inline unsigned byte_count(uint64_t v)
{
    return v ? (unsigned)(71 - __builtin_clzll(v)) / 8u : 0u;
}

static inline uint8_t *put_leb(uint8_t *o, uint64_t v)
{
    while (v >= 0x80) {
        *o++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *o++ = (uint8_t)v;
    return o;
}

static inline uint64_t zigzag(uint64_t d)
{
    return (d << 1) ^ (uint64_t)((int64_t)d >> 63);
}

static inline uint64_t unzigzag(uint64_t z)
{
    return (z >> 1) ^ (0 - (z & 1));
}

/* Store value v at o with one unaligned 8-byte store; returns its byte count. */
static inline unsigned put_value(uint8_t *restrict o, uint64_t v)
{
    memcpy(o, &v, 8);
    return byte_count(v);
}

long pack_records(struct pack_state *restrict s, const uint8_t *restrict in, size_t len,
                  uint8_t *restrict out, size_t cap)
{
    uint8_t *o = out;
    const uint8_t *end = out + cap;
    uint64_t pts = s->ts;
    uint32_t pseq = s->seq;
    int first = s->first;
    size_t pos = 0;
    while (pos < len) {
        struct d9_rec_hdr h;
        memcpy(&h, in + pos, sizeof h);
        uint32_t words = (h.len - D9_REC_HDR_SIZE) / 8u;
        /* tag, seq, len, control bytes, values, and the store slack */
        size_t worst = 1 + 5 + 3 + (words + 2) / 2 + 8 * ((size_t)words + 1) + 8;
        if ((size_t)(end - o) < worst)
            return -ENOSPC;
        uint16_t type = h.type;
        int seq_x = first || h.seq != pseq + 1;
        int len_x = shm_record_len_table[type] != (int)h.len;
        *o++ = (uint8_t)(type | (seq_x ? TAG_SEQ : 0) | (len_x ? TAG_LEN : 0));
        if (__builtin_expect(seq_x, 0))
            o = put_leb(o, h.seq);
        if (__builtin_expect(len_x, 0))
            o = put_leb(o, h.len);
        const uint8_t *w = in + pos + D9_REC_HDR_SIZE;
        uint64_t *xw = s->xw[type];
        uint64_t zts = zigzag(h.ts - pts);
        pts = h.ts;
        pseq = h.seq;
        first = 0;
        pos += h.len;
        if (words == 2 || words == 3) {
            /* every built-in type but the stacks and custom events: straight
             * line, no loop (the loops' exits were most of the mispredicted
             * branches on a mixed stream) */
            uint64_t x0, x1, x2;
            memcpy(&x0, w, 8);
            memcpy(&x1, w + 8, 8);
            memcpy(&x2, w + 8 * (words - 1), 8);  /* x1 again for 2 words: no branch */
            uint64_t three = 0 - (uint64_t)(words == 3);
            uint64_t v1 = x0 ^ xw[0], v2 = x1 ^ xw[1], v3 = (x2 ^ xw[2]) & three;
            xw[0] = x0;
            xw[1] = x1;
            xw[2] = (x2 & three) | (xw[2] & ~three);    /* absent: 0, count 0, kept */
            uint8_t *ctl = o++;
            unsigned n0 = put_value(o, zts);
            o += n0;
            unsigned n1 = put_value(o, v1);
            o += n1;
            *ctl = (uint8_t)(n0 | n1 << 4);
            ctl = o++;
            unsigned n2 = put_value(o, v2);
            o += n2;
            unsigned n3 = put_value(o, v3);
            o += n3;
            *ctl = (uint8_t)(n2 | n3 << 4);
            continue;
        }
        /* values 0 .. nx: the timestamp delta and the remembered words */
        uint32_t nx = words < PACK_XOR_WORDS ? words : PACK_XOR_WORDS;
        uint64_t v[1 + PACK_XOR_WORDS + 1];
        v[0] = zts;
        for (uint32_t k = 0; k < nx; k++) {
            uint64_t x;
            memcpy(&x, w + 8 * k, 8);
            v[1 + k] = x ^ xw[k];
            xw[k] = x;
        }
        /* pairs of values behind a control byte; beyond nx the words as they are */
        for (uint32_t k = 0; k <= words; k += 2) {
            uint64_t a, b = 0;
            if (k <= nx)
                a = v[k];
            else
                memcpy(&a, w + 8 * (k - 1), 8);
            int have_b = k + 1 <= words;
            if (have_b) {
                if (k + 1 <= nx)
                    b = v[k + 1];
                else
                    memcpy(&b, w + 8 * k, 8);
            }
            uint8_t *ctl = o++;
            unsigned na = put_value(o, a);
            o += na;
            unsigned nb = put_value(o, b);      /* b is 0 (count 0) when absent */
            o += nb;
            *ctl = (uint8_t)(na | nb << 4);
        }
    }
    s->ts = pts;
    s->seq = pseq;
    s->first = first;
    return (long)(o - out);
}

size_t pack_finish(uint8_t *payload, size_t entries_len, uint32_t raw_len)
{
    size_t total = PACK_PREFIX + entries_len;
    size_t pad = (8 - total % 8) % 8;
    memset(payload + total, 0, pad);
    uint32_t zero = 0;
    memcpy(payload, &raw_len, sizeof raw_len);
    memcpy(payload + 4, &zero, sizeof zero);
    return total + pad;
}

long pack_raw_len(const uint8_t *in, size_t len)
{
    uint32_t raw, zero;
    if (len < PACK_PREFIX || len % 8 != 0)
        return -EBADMSG;
    memcpy(&raw, in, sizeof raw);
    memcpy(&zero, in + 4, sizeof zero);
    if (zero != 0 || raw % D9_REC_ALIGN != 0)
        return -EBADMSG;
    return (long)raw;
}

/* LEB128 of at most LEB_MAX bytes, fitting max; NULL when malformed. */
static const uint8_t *get_leb(const uint8_t *p, const uint8_t *e, uint64_t max, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned i = 0; i < LEB_MAX && p < e; i++) {
        uint8_t c = *p++;
        if (i == LEB_MAX - 1 && c > 1)
            return NULL;                        /* past 64 bits */
        x |= (uint64_t)(c & 0x7f) << (7 * i);
        if (!(c & 0x80)) {
            if (x > max)
                return NULL;
            *v = x;
            return p;
        }
    }
    return NULL;
}

/* The low n bytes of a little-endian word, n = 0 .. 8. */
static const uint64_t value_mask[9] = {
    0, 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffffull, 0xffffffffffffull,
    0xffffffffffffffull, ~0ull,
};

/* Bytes a 2- or 3-word record spans at most: two control bytes and four
 * 8-byte values; each value's whole-word load ends within them. */
#define UNPACK_STRAIGHT_BYTES (2 + 4 * 8)
_Static_assert(PACK_XOR_WORDS >= 3, "the straight-line decode remembers 3 words");

long pack_unpack(const uint8_t *in, size_t len, uint32_t nrec, uint8_t *out, size_t out_cap)
{
    long raw = pack_raw_len(in, len);
    if (raw < 0)
        return raw;
    if ((size_t)raw > out_cap)
        return -ENOBUFS;
    uint64_t xw[D9_REC_TYPE_COUNT][PACK_XOR_WORDS];
    memset(xw, 0, sizeof xw);
    const uint8_t *p = in + PACK_PREFIX, *e = in + len;
    uint8_t *o = out, *oend = out + raw;
    uint64_t pts = 0;
    uint32_t pseq = 0;
    for (uint32_t n = 0; n < nrec; n++) {
        if (p >= e)
            return -EBADMSG;
        uint8_t tag = *p++;
        uint16_t type = tag & TAG_TYPE;
        if ((tag & TAG_RSVD) || type >= D9_REC_TYPE_COUNT || type == D9_REC_PAD)
            return -EBADMSG;
        uint64_t seq = (uint32_t)(pseq + 1);
        if (tag & TAG_SEQ) {
            if (!(p = get_leb(p, e, UINT32_MAX, &seq)))
                return -EBADMSG;
        } else if (n == 0) {
            return -EBADMSG;                    /* the first record names its seq */
        }
        int fixed = shm_record_len_table[type];
        uint64_t rlen = fixed > 0 ? (uint64_t)fixed : 0;
        if (tag & TAG_LEN) {
            if (!(p = get_leb(p, e, D9_REC_MAX, &rlen)))
                return -EBADMSG;
        } else if (fixed <= 0) {
            return -EBADMSG;                    /* variable types carry their length */
        }
        if (rlen < D9_REC_HDR_SIZE || rlen % D9_REC_ALIGN || rlen > (uint64_t)(oend - o))
            return -EBADMSG;
        uint32_t words = (uint32_t)(rlen - D9_REC_HDR_SIZE) / 8u;
        uint8_t *w = o + D9_REC_HDR_SIZE;
        uint64_t ts = pts;
        int straight = (words == 2 || words == 3) && e - p >= UNPACK_STRAIGHT_BYTES;
        if (straight) {
            /* every built-in type but the stacks and custom events, as
             * pack_records writes them: two control bytes, four values,
             * whole-word loads (the bytes they may span are readable) */
            uint8_t c0 = p[0];
            unsigned n0 = c0 & 0x0f, n1 = c0 >> 4;
            if (n0 > 8 || n1 > 8)
                return -EBADMSG;
            const uint8_t *q = p + 1 + n0 + n1;
            uint8_t c1 = q[0];
            unsigned n2 = c1 & 0x0f, n3 = c1 >> 4;
            if (n2 > 8 || n3 > 8 || (words == 2 && n3))
                return -EBADMSG;
            uint64_t v0, v1, v2, v3;
            memcpy(&v0, p + 1, 8);
            memcpy(&v1, p + 1 + n0, 8);
            memcpy(&v2, q + 1, 8);
            memcpy(&v3, q + 1 + n2, 8);
            p = q + 1 + n2 + n3;
            uint64_t *x = xw[type];
            ts = pts + unzigzag(v0 & value_mask[n0]);
            x[0] ^= v1 & value_mask[n1];
            x[1] ^= v2 & value_mask[n2];
            memcpy(w, &x[0], 8);
            memcpy(w + 8, &x[1], 8);
            if (words == 3) {
                x[2] ^= v3 & value_mask[n3];
                memcpy(w + 16, &x[2], 8);
            }
        }
        for (uint32_t k = 0; !straight && k <= words; k += 2) {
            if (p >= e)
                return -EBADMSG;
            uint8_t ctl = *p++;
            unsigned na = ctl & 0x0f, nb = ctl >> 4;
            int have_b = k + 1 <= words;
            if (na > 8 || nb > 8 || (!have_b && nb) || (size_t)(e - p) < na + nb)
                return -EBADMSG;
            uint64_t a = 0, b = 0;
            if (__builtin_expect(e - p >= 16, 1)) {
                /* 16 readable bytes: two whole-word loads, masked to the
                 * value's bytes (na, nb <= 8), instead of two variable copies */
                memcpy(&a, p, 8);
                memcpy(&b, p + na, 8);
                a &= value_mask[na];
                b &= value_mask[nb];
            } else {
                memcpy(&a, p, na);
                memcpy(&b, p + na, nb);
            }
            p += na + nb;
            if (k == 0) {
                ts = pts + unzigzag(a);
            } else {
                if (k - 1 < PACK_XOR_WORDS) {
                    a ^= xw[type][k - 1];
                    xw[type][k - 1] = a;
                }
                memcpy(w + 8 * (k - 1), &a, 8);
            }
            if (have_b) {
                if (k < PACK_XOR_WORDS) {
                    b ^= xw[type][k];
                    xw[type][k] = b;
                }
                memcpy(w + 8 * k, &b, 8);
            }
        }
        struct d9_rec_hdr h = { .len = (uint16_t)rlen, .type = type, .seq = (uint32_t)seq,
                                .ts = ts };
        memcpy(o, &h, sizeof h);
        /* a fixed-size type of its table length is valid as it stands */
        if ((fixed <= 0 || rlen != (uint64_t)fixed) && shm_record_check(o, (size_t)rlen) != (int)rlen)
            return -EBADMSG;
        o += rlen;
        pts = ts;
        pseq = (uint32_t)seq;
    }
    if (o != oend || e - p >= 8)
        return -EBADMSG;                        /* raw_len disagrees, or trailing entries */
    for (; p < e; p++)
        if (*p)
            return -EBADMSG;                    /* padding is zero */
    return raw;
}
