/*
 * pq_buf.c — growable byte buffer (see pq_buf.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "collector/parquet/pq_buf.h"

#define PQ_BUF_MIN 256

void pq_buf_free(struct pq_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

int pq_buf_reserve(struct pq_buf *b, size_t n)
{
    if (b->err)
        return b->err;
    if (n <= b->cap - b->len)
        return 0;
    if (n > PQ_BUF_MAX - b->len)
        return b->err = -EFBIG;
    size_t cap = b->cap ? b->cap : PQ_BUF_MIN;
    while (cap - b->len < n)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        return b->err = -ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

void pq_buf_put(struct pq_buf *b, const void *p, size_t n)
{
    if (n == 0 || pq_buf_reserve(b, n) < 0)
        return;
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

void pq_buf_u8(struct pq_buf *b, uint8_t v)
{
    pq_buf_put(b, &v, 1);
}

void pq_buf_le32(struct pq_buf *b, uint32_t v)
{
    uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    pq_buf_put(b, x, sizeof x);
}

void pq_buf_le64(struct pq_buf *b, uint64_t v)
{
    pq_buf_le32(b, (uint32_t)v);
    pq_buf_le32(b, (uint32_t)(v >> 32));
}

void pq_buf_uvarint(struct pq_buf *b, uint64_t v)
{
    uint8_t x[10];
    size_t n = 0;
    while (v >= 0x80) {
        x[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    x[n++] = (uint8_t)v;
    pq_buf_put(b, x, n);
}
