/*
 * pq_rle.c — RLE / bit-packed hybrid (see pq_rle.h).
 */
#include <errno.h>
#include <string.h>
#include "collector/parquet/pq_rle.h"

#define PQ_RLE_MAX_GROUPS 63    /* groups per bit-packed run header: one varint byte */

int pq_rle_width(uint32_t max)
{
    int w = 0;
    while (w < PQ_RLE_MAX_WIDTH && (max >> w) != 0)
        w++;
    return w;
}

static void put_run(struct pq_buf *b, uint32_t v, size_t n, int width)
{
    pq_buf_uvarint(b, (uint64_t)n << 1);
    for (int i = 0; i < (width + 7) / 8; i++)
        pq_buf_u8(b, (uint8_t)(v >> (8 * i)));
}

/* groups of 8 values starting at v, the last one zero-padded past `avail` */
static void put_packed(struct pq_buf *b, const uint32_t *v, size_t groups, size_t avail,
                       int width)
{
    pq_buf_uvarint(b, (uint64_t)groups << 1 | 1);
    size_t nbytes = groups * (size_t)width;     /* 8 values * width bits / 8 */
    if (pq_buf_reserve(b, nbytes) < 0)
        return;
    uint8_t *out = b->p + b->len;
    memset(out, 0, nbytes);
    size_t bit = 0;
    for (size_t i = 0; i < groups * PQ_RLE_GROUP; i++, bit += (size_t)width) {
        uint64_t x = i < avail ? v[i] : 0;
        for (int k = 0; k < width; k++)
            if (x >> k & 1)
                out[(bit + (size_t)k) / 8] |= (uint8_t)(1u << ((bit + (size_t)k) % 8));
    }
    b->len += nbytes;
}

static size_t run_at(const uint32_t *v, size_t i, size_t n)
{
    size_t j = i + 1;
    while (j < n && v[j] == v[i])
        j++;
    return j - i;
}

void pq_rle_encode(struct pq_buf *b, const uint32_t *v, size_t n, int width)
{
    size_t i = 0;
    while (i < n) {
        size_t r = run_at(v, i, n);
        if (r >= PQ_RLE_MIN_RUN || width == 0) {
            put_run(b, v[i], r, width);
            i += r;
            continue;
        }
        /* literal groups until a long run starts at a group boundary */
        size_t start = i, groups = 0;
        while (i < n && groups < PQ_RLE_MAX_GROUPS) {
            if (groups > 0 && run_at(v, i, n) >= PQ_RLE_MIN_RUN)
                break;
            i = i + PQ_RLE_GROUP < n ? i + PQ_RLE_GROUP : n;
            groups++;
        }
        put_packed(b, v + start, groups, i - start, width);
    }
}

int pq_rle_decode(const uint8_t *p, size_t len, int width, uint32_t *out, size_t n)
{
    if (width < 0 || width > PQ_RLE_MAX_WIDTH)
        return -EBADMSG;
    size_t pos = 0, got = 0;
    while (got < n) {
        uint64_t h = 0;
        int shift = 0;
        for (;;) {
            if (pos >= len || shift > 63)
                return -EBADMSG;
            uint8_t c = p[pos++];
            h |= (uint64_t)(c & 0x7f) << shift;
            shift += 7;
            if (!(c & 0x80))
                break;
        }
        if (h & 1) {
            uint64_t groups = h >> 1;
            if (groups == 0 || groups > (uint64_t)len + n)
                return -EBADMSG;
            size_t nbytes = (size_t)groups * (size_t)width;
            if (nbytes > len - pos)
                return -EBADMSG;
            size_t bit = 0;
            for (size_t i = 0; i < groups * PQ_RLE_GROUP && got < n; i++, bit += (size_t)width) {
                uint32_t x = 0;
                for (int k = 0; k < width; k++) {
                    size_t bb = bit + (size_t)k;
                    if (p[pos + bb / 8] >> (bb % 8) & 1)
                        x |= 1u << k;
                }
                out[got++] = x;
            }
            pos += nbytes;
        } else {
            uint64_t cnt = h >> 1;
            int nb = (width + 7) / 8;
            if (cnt == 0 || (size_t)nb > len - pos)
                return -EBADMSG;
            uint32_t x = 0;
            for (int k = 0; k < nb; k++)
                x |= (uint32_t)p[pos + (size_t)k] << (8 * k);
            pos += (size_t)nb;
            if (width < PQ_RLE_MAX_WIDTH && (x >> width) != 0)
                return -EBADMSG;
            for (uint64_t k = 0; k < cnt && got < n; k++)
                out[got++] = x;
        }
    }
    return 0;
}
