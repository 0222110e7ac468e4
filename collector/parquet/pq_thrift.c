/*
 * pq_thrift.c — Thrift compact protocol encoder and bounded decoder
 * (see pq_thrift.h).
 */
#include <errno.h>
#include <string.h>
#include "collector/parquet/pq_thrift.h"

#define PQ_THRIFT_DELTA_MAX 15      /* a field id delta that fits the header's high nibble */
#define PQ_THRIFT_LIST_SHORT 15     /* list sizes below this fit the header's high nibble */
#define PQ_THRIFT_VARINT_MAX 10     /* bytes of a 64-bit ULEB128 */

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

void pq_thrift_init(struct pq_thrift *t, struct pq_buf *b)
{
    memset(t, 0, sizeof *t);
    t->b = b;
}

static void field(struct pq_thrift *t, int16_t id, int type)
{
    int16_t delta = (int16_t)(id - t->last[t->depth]);
    if (delta > 0 && delta <= PQ_THRIFT_DELTA_MAX) {
        pq_buf_u8(t->b, (uint8_t)(delta << 4 | type));
    } else {
        pq_buf_u8(t->b, (uint8_t)type);
        pq_buf_uvarint(t->b, zigzag(id));
    }
    t->last[t->depth] = id;
}

void pq_thrift_i32(struct pq_thrift *t, int16_t id, int32_t v)
{
    field(t, id, PQ_THRIFT_I32);
    pq_buf_uvarint(t->b, zigzag(v));
}

void pq_thrift_i64(struct pq_thrift *t, int16_t id, int64_t v)
{
    field(t, id, PQ_THRIFT_I64);
    pq_buf_uvarint(t->b, zigzag(v));
}

void pq_thrift_bool(struct pq_thrift *t, int16_t id, bool v)
{
    field(t, id, v ? PQ_THRIFT_TRUE : PQ_THRIFT_FALSE);
}

void pq_thrift_bin(struct pq_thrift *t, int16_t id, const void *p, size_t n)
{
    field(t, id, PQ_THRIFT_BINARY);
    pq_buf_uvarint(t->b, n);
    pq_buf_put(t->b, p, n);
}

void pq_thrift_str(struct pq_thrift *t, int16_t id, const char *s)
{
    pq_thrift_bin(t, id, s, strlen(s));
}

void pq_thrift_struct_begin(struct pq_thrift *t, int16_t id)
{
    if (id > 0)
        field(t, id, PQ_THRIFT_STRUCT);
    if (t->depth + 1 >= PQ_THRIFT_DEPTH) {
        t->b->err = -EOVERFLOW;
        return;
    }
    t->last[++t->depth] = 0;
}

void pq_thrift_struct_end(struct pq_thrift *t)
{
    pq_buf_u8(t->b, PQ_THRIFT_STOP);
    if (t->depth > 0)
        t->depth--;
}

void pq_thrift_list(struct pq_thrift *t, int16_t id, int elem, size_t n)
{
    field(t, id, PQ_THRIFT_LIST);
    if (n < PQ_THRIFT_LIST_SHORT) {
        pq_buf_u8(t->b, (uint8_t)(n << 4 | (size_t)elem));
    } else {
        pq_buf_u8(t->b, (uint8_t)(0xf0 | elem));
        pq_buf_uvarint(t->b, n);
    }
}

void pq_thrift_elem_i32(struct pq_thrift *t, int32_t v)
{
    pq_buf_uvarint(t->b, zigzag(v));
}

void pq_thrift_elem_str(struct pq_thrift *t, const char *s)
{
    size_t n = strlen(s);
    pq_buf_uvarint(t->b, n);
    pq_buf_put(t->b, s, n);
}

/* ---- decoder ---- */

static void bad(struct pq_thrift_rd *r)
{
    r->err = -EBADMSG;
    r->p = r->end;
}

static uint64_t uvarint(struct pq_thrift_rd *r)
{
    uint64_t v = 0;
    for (int i = 0; i < PQ_THRIFT_VARINT_MAX; i++) {
        if (r->p >= r->end) {
            bad(r);
            return 0;
        }
        uint8_t c = *r->p++;
        v |= (uint64_t)(c & 0x7f) << (7 * i);
        if (!(c & 0x80))
            return v;
    }
    bad(r);
    return 0;
}

static int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

int pq_thrift_rd_field(struct pq_thrift_rd *r, int16_t *id)
{
    if (r->err || r->p >= r->end) {
        bad(r);
        return PQ_THRIFT_STOP;
    }
    uint8_t c = *r->p++;
    int type = c & 0x0f;
    if (type == PQ_THRIFT_STOP)
        return PQ_THRIFT_STOP;
    if (type > PQ_THRIFT_STRUCT) {
        bad(r);
        return PQ_THRIFT_STOP;
    }
    int delta = c >> 4;
    int64_t v = delta ? r->last[r->depth] + delta : unzigzag(uvarint(r));
    if (v < INT16_MIN || v > INT16_MAX) {
        bad(r);
        return PQ_THRIFT_STOP;
    }
    *id = r->last[r->depth] = (int16_t)v;
    return r->err ? PQ_THRIFT_STOP : type;
}

void pq_thrift_rd_enter(struct pq_thrift_rd *r)
{
    if (r->depth + 1 >= PQ_THRIFT_DEPTH) {
        bad(r);
        return;
    }
    r->last[++r->depth] = 0;
}

void pq_thrift_rd_leave(struct pq_thrift_rd *r)
{
    if (r->depth > 0)
        r->depth--;
}

int64_t pq_thrift_rd_int(struct pq_thrift_rd *r)
{
    return unzigzag(uvarint(r));
}

const uint8_t *pq_thrift_rd_bin(struct pq_thrift_rd *r, size_t *n)
{
    uint64_t len = uvarint(r);
    if (r->err || len > (uint64_t)(r->end - r->p)) {
        bad(r);
        *n = 0;
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += len;
    *n = (size_t)len;
    return p;
}

int pq_thrift_rd_list(struct pq_thrift_rd *r, size_t *n)
{
    *n = 0;
    if (r->err || r->p >= r->end) {
        bad(r);
        return PQ_THRIFT_STOP;
    }
    uint8_t c = *r->p++;
    uint64_t cnt = c >> 4;
    if (cnt == PQ_THRIFT_LIST_SHORT)
        cnt = uvarint(r);
    /* every element takes at least one byte, except bools in some writers: bound by bytes */
    if (r->err || cnt > (uint64_t)(r->end - r->p)) {
        bad(r);
        return PQ_THRIFT_STOP;
    }
    *n = (size_t)cnt;
    return c & 0x0f;
}

void pq_thrift_rd_skip(struct pq_thrift_rd *r, int type)
{
    size_t n;
    int16_t id;
    switch (type) {
    case PQ_THRIFT_TRUE:
    case PQ_THRIFT_FALSE:
        return;
    case PQ_THRIFT_BYTE:
        if (r->p >= r->end)
            bad(r);
        else
            r->p++;
        return;
    case PQ_THRIFT_I16:
    case PQ_THRIFT_I32:
    case PQ_THRIFT_I64:
        uvarint(r);
        return;
    case PQ_THRIFT_DOUBLE:
        if (r->end - r->p < 8)
            bad(r);
        else
            r->p += 8;
        return;
    case PQ_THRIFT_BINARY:
        pq_thrift_rd_bin(r, &n);
        return;
    case PQ_THRIFT_LIST:
    case PQ_THRIFT_SET: {
        int et = pq_thrift_rd_list(r, &n);
        if (r->depth + 1 >= PQ_THRIFT_DEPTH) {
            bad(r);
            return;
        }
        r->depth++;     /* bound the nesting of lists of lists too */
        r->last[r->depth] = 0;
        for (size_t i = 0; i < n && !r->err; i++) {
            /* a bool element is one byte in a list */
            pq_thrift_rd_skip(r, et == PQ_THRIFT_TRUE || et == PQ_THRIFT_FALSE ? PQ_THRIFT_BYTE : et);
        }
        r->depth--;
        return;
    }
    case PQ_THRIFT_STRUCT:
        pq_thrift_rd_enter(r);
        while (!r->err) {
            int t = pq_thrift_rd_field(r, &id);
            if (t == PQ_THRIFT_STOP)
                break;
            pq_thrift_rd_skip(r, t);
        }
        pq_thrift_rd_leave(r);
        return;
    default:        /* maps are not part of parquet.thrift */
        bad(r);
        return;
    }
}
