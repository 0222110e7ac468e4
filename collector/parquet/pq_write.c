/*
 * pq_write.c — Parquet file writer (see pq_write.h for the layout and the
 * encodings chosen).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include "collector/parquet/pq_buf.h"
#include "collector/parquet/pq_rle.h"
#include "collector/parquet/pq_thrift.h"
#include "collector/parquet/pq_write.h"
#include "collector/lazy/lazy.h"

#define PQ_MAGIC "PAR1"
#define PQ_MAGIC_LEN 4
#define PQ_FORMAT_VERSION 1

/* parquet.thrift enums */
enum { REP_REQUIRED = 0, REP_OPTIONAL = 1 };
enum { ENC_PLAIN = 0, ENC_RLE = 3, ENC_RLE_DICTIONARY = 8 };
enum { CODEC_ZSTD = 6 };
enum { PAGE_DATA = 0, PAGE_DICTIONARY = 2 };
enum { CONVERTED_UTF8 = 0 };

struct chunk_meta {
    int64_t num_values, nulls;
    int64_t unc_size, comp_size;
    int64_t data_off, dict_off;         /* dict_off < 0: no dictionary page */
    bool dict, has_minmax;
    uint8_t min[PQ_WRITE_STAT_MAX], max[PQ_WRITE_STAT_MAX];
    size_t min_len, max_len;
};

struct rg_meta {
    int64_t rows, unc_size, comp_size, offset;
    struct chunk_meta *chunks;
};

struct column {
    const struct pq_col *def;
    /* the current row group: non-null values, and per row 1 = present */
    int64_t *iv;
    double *dv;
    uint32_t *sv;                       /* string: dictionary entry index */
    size_t nv, capv;
    uint8_t *present;                   /* optional columns only, one per row */
    size_t plain_bytes;
    /* strings: the row group's distinct values */
    struct pq_buf arena;
    uint32_t *ent_off, *ent_len;
    size_t nent, capent;
    uint32_t *slots;                    /* entry index + 1; 0 empty */
    size_t nslots;
    /* statistics of the row group */
    bool has_minmax;
    int64_t imin, imax;
    double dmin, dmax;
    uint32_t smin, smax;
};

struct pq_write {
    FILE *out;
    const struct pq_col *cols;
    size_t ncols;
    struct pq_write_opts o;
    struct column *c;
    size_t rows;                        /* rows in the current row group */
    uint64_t offset;                    /* bytes written to out */
    int err;
    bool closed;
    ZSTD_CCtx *zc;
    struct pq_buf body, comp, hdr, levels;
    uint32_t *tmp;                      /* levels / indices of one page */
    size_t tmpcap;
    struct rg_meta *rgs;
    size_t nrg, caprg;
    struct pq_write_stats st;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

static size_t value_size(enum pq_type t)
{
    return t == PQ_INT32 ? 4 : 8;
}

static uint64_t str_hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;            /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h ^ h >> 29;
}

static int str_cmp(const struct column *c, uint32_t a, uint32_t b)
{
    size_t la = c->ent_len[a], lb = c->ent_len[b];
    int r = memcmp(c->arena.p + c->ent_off[a], c->arena.p + c->ent_off[b], la < lb ? la : lb);
    return r ? r : (la > lb) - (la < lb);
}

static int rehash(struct column *c)
{
    size_t n = c->nslots ? c->nslots * 2 : 256;
    uint32_t *s = calloc(n, sizeof *s);
    if (!s)
        return -ENOMEM;
    for (size_t e = 0; e < c->nent; e++) {
        size_t i = str_hash((const char *)c->arena.p + c->ent_off[e], c->ent_len[e]) & (n - 1);
        while (s[i])
            i = (i + 1) & (n - 1);
        s[i] = (uint32_t)e + 1;
    }
    free(c->slots);
    c->slots = s;
    c->nslots = n;
    return 0;
}

/* The entry index of s[0, n), added if new. */
static int intern(struct column *c, const char *s, size_t n, uint32_t *idx)
{
    if (n > UINT32_MAX || c->arena.len > UINT32_MAX - n || c->nent >= UINT32_MAX - 1)
        return -EFBIG;
    if ((c->nent + 1) * 2 > c->nslots && rehash(c) < 0)
        return -ENOMEM;
    size_t i = str_hash(s, n) & (c->nslots - 1);
    while (c->slots[i]) {
        uint32_t e = c->slots[i] - 1;
        if (c->ent_len[e] == n && memcmp(c->arena.p + c->ent_off[e], s, n) == 0) {
            *idx = e;
            return 0;
        }
        i = (i + 1) & (c->nslots - 1);
    }
    /* reserved even for "": entries are addressed from arena.p, never NULL */
    if (pq_buf_reserve(&c->arena, n ? n : 1) < 0)
        return c->arena.err;
    size_t cap = c->capent;
    if (grow((void **)&c->ent_off, &cap, c->nent + 1, sizeof *c->ent_off) < 0)
        return -ENOMEM;
    cap = c->capent;
    if (grow((void **)&c->ent_len, &cap, c->nent + 1, sizeof *c->ent_len) < 0)
        return -ENOMEM;
    c->capent = cap;
    c->ent_off[c->nent] = (uint32_t)c->arena.len;
    c->ent_len[c->nent] = (uint32_t)n;
    pq_buf_put(&c->arena, s, n);
    if (c->arena.err)
        return c->arena.err;
    c->slots[i] = (uint32_t)c->nent + 1;
    *idx = (uint32_t)c->nent++;
    return 0;
}

int pq_write_open(struct pq_write **wp, FILE *out, const struct pq_col *cols, size_t ncols,
                  const struct pq_write_opts *opts)
{
    *wp = NULL;
    if (ncols == 0 || ncols > PQ_WRITE_COLS_MAX)
        return -EINVAL;
    for (size_t i = 0; i < ncols; i++)
        if (!cols[i].name || (cols[i].type != PQ_INT32 && cols[i].type != PQ_INT64 &&
                              cols[i].type != PQ_DOUBLE && cols[i].type != PQ_STRING))
            return -EINVAL;
    if (lazy_need(LAZY_ZSTD) < 0)
        return -ELIBACC;            /* `d9` opens libzstd here (lazy.h) */
    struct pq_write *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    w->c = calloc(ncols, sizeof *w->c);
    w->zc = ZSTD_createCCtx();
    if (!w->c || !w->zc) {
        pq_write_free(w);
        return -ENOMEM;
    }
    w->out = out;
    w->cols = cols;
    w->ncols = ncols;
    if (opts)
        w->o = *opts;
    if (!w->o.row_group_rows)
        w->o.row_group_rows = PQ_WRITE_RG_ROWS;
    if (!w->o.row_group_bytes)
        w->o.row_group_bytes = PQ_WRITE_RG_BYTES;
    if (!w->o.page_bytes)
        w->o.page_bytes = PQ_WRITE_PAGE_BYTES;
    if (!w->o.dict_max)
        w->o.dict_max = PQ_WRITE_DICT_MAX;
    if (!w->o.zstd_level)
        w->o.zstd_level = PQ_WRITE_ZSTD_LEVEL;
    if (!w->o.created_by)
        w->o.created_by = "d9";
    for (size_t i = 0; i < ncols; i++)
        w->c[i].def = &cols[i];
    if (fwrite(PQ_MAGIC, 1, PQ_MAGIC_LEN, out) != PQ_MAGIC_LEN) {
        pq_write_free(w);
        return -EIO;
    }
    w->offset = PQ_MAGIC_LEN;
    *wp = w;
    return 0;
}

static int emit(struct pq_write *w, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, w->out) != n)
        return -EIO;
    w->offset += n;
    return 0;
}

/* Compress `body` and write header + page; adds to the chunk's sizes. */
static int put_page(struct pq_write *w, struct chunk_meta *m, int type, int64_t nvals,
                    int encoding)
{
    if (w->body.err)
        return w->body.err;
    size_t bound = ZSTD_compressBound(w->body.len);
    w->comp.len = 0;
    if (pq_buf_reserve(&w->comp, bound) < 0)
        return w->comp.err;
    size_t cn = ZSTD_compressCCtx(w->zc, w->comp.p, bound, w->body.p, w->body.len,
                                  w->o.zstd_level);
    if (ZSTD_isError(cn))
        return -EIO;
    if (w->body.len > INT32_MAX || cn > INT32_MAX || nvals > INT32_MAX)
        return -EFBIG;
    w->hdr.len = 0;
    struct pq_thrift t;
    pq_thrift_init(&t, &w->hdr);
    pq_thrift_i32(&t, 1, type);
    pq_thrift_i32(&t, 2, (int32_t)w->body.len);
    pq_thrift_i32(&t, 3, (int32_t)cn);
    if (type == PAGE_DATA) {
        pq_thrift_struct_begin(&t, 5);
        pq_thrift_i32(&t, 1, (int32_t)nvals);
        pq_thrift_i32(&t, 2, encoding);
        pq_thrift_i32(&t, 3, ENC_RLE);
        pq_thrift_i32(&t, 4, ENC_RLE);
        pq_thrift_struct_end(&t);
    } else {
        pq_thrift_struct_begin(&t, 7);
        pq_thrift_i32(&t, 1, (int32_t)nvals);
        pq_thrift_i32(&t, 2, ENC_PLAIN);
        pq_thrift_struct_end(&t);
    }
    pq_buf_u8(&w->hdr, PQ_THRIFT_STOP);
    if (w->hdr.err)
        return w->hdr.err;
    int64_t off = (int64_t)w->offset;
    int r = emit(w, w->hdr.p, w->hdr.len);
    if (r == 0)
        r = emit(w, w->comp.p, cn);
    if (r < 0)
        return r;
    if (type == PAGE_DATA && m->data_off < 0)
        m->data_off = off;
    if (type == PAGE_DICTIONARY)
        m->dict_off = off;
    m->unc_size += (int64_t)(w->hdr.len + w->body.len);
    m->comp_size += (int64_t)(w->hdr.len + cn);
    w->st.pages++;
    return 0;
}

static void plain_value(struct pq_write *w, const struct column *c, size_t v)
{
    switch (c->def->type) {
    case PQ_INT32:
        pq_buf_le32(&w->body, (uint32_t)c->iv[v]);
        break;
    case PQ_INT64:
        pq_buf_le64(&w->body, (uint64_t)c->iv[v]);
        break;
    case PQ_DOUBLE: {
        uint64_t x;
        memcpy(&x, &c->dv[v], sizeof x);
        pq_buf_le64(&w->body, x);
        break;
    }
    case PQ_STRING: {
        uint32_t e = c->sv[v];
        pq_buf_le32(&w->body, c->ent_len[e]);
        pq_buf_put(&w->body, c->arena.p + c->ent_off[e], c->ent_len[e]);
        break;
    }
    }
}

static void stat_bytes(const struct column *c, int which, uint8_t *out, size_t *len)
{
    switch (c->def->type) {
    case PQ_INT32: {
        uint32_t x = (uint32_t)(which ? c->imax : c->imin);
        for (int i = 0; i < 4; i++)
            out[i] = (uint8_t)(x >> (8 * i));
        *len = 4;
        break;
    }
    case PQ_INT64:
    case PQ_DOUBLE: {
        uint64_t x;
        if (c->def->type == PQ_INT64) {
            x = (uint64_t)(which ? c->imax : c->imin);
        } else {
            double d = which ? c->dmax : c->dmin;
            memcpy(&x, &d, sizeof x);
        }
        for (int i = 0; i < 8; i++)
            out[i] = (uint8_t)(x >> (8 * i));
        *len = 8;
        break;
    }
    case PQ_STRING: {
        uint32_t e = which ? c->smax : c->smin;
        *len = c->ent_len[e];
        memcpy(out, c->arena.p + c->ent_off[e], *len);
        break;
    }
    }
}

static int flush_column(struct pq_write *w, struct column *c, struct chunk_meta *m)
{
    const bool opt = c->def->optional;
    m->num_values = (int64_t)w->rows;
    m->nulls = (int64_t)(w->rows - c->nv);
    m->data_off = m->dict_off = -1;
    /* dictionary when it pays: few entries, smaller than the plain values */
    int width = 0;
    if (c->def->type == PQ_STRING && c->nent > 0 && c->nent <= w->o.dict_max) {
        width = pq_rle_width((uint32_t)c->nent - 1);
        if (width == 0)
            width = 1;
        size_t dict_bytes = c->arena.len + 4 * c->nent + c->nv * (size_t)width / 8;
        m->dict = dict_bytes < c->plain_bytes;
    }
    if (m->dict) {
        w->body.len = 0;
        for (size_t e = 0; e < c->nent; e++) {
            pq_buf_le32(&w->body, c->ent_len[e]);
            pq_buf_put(&w->body, c->arena.p + c->ent_off[e], c->ent_len[e]);
        }
        int r = put_page(w, m, PAGE_DICTIONARY, (int64_t)c->nent, ENC_PLAIN);
        if (r < 0)
            return r;
    }
    if (grow((void **)&w->tmp, &w->tmpcap, w->rows + 1, sizeof *w->tmp) < 0)
        return -ENOMEM;
    size_t row = 0, v = 0;
    do {
        /* one page: rows [r0, row), values [v0, v) */
        size_t r0 = row, v0 = v, bytes = 0;
        while (row < w->rows && bytes < w->o.page_bytes && row - r0 < PQ_WRITE_PAGE_ROWS) {
            if (!opt || c->present[row]) {
                bytes += c->def->type == PQ_STRING ? 4 + c->ent_len[c->sv[v]]
                                                   : value_size(c->def->type);
                v++;
            }
            row++;
        }
        w->body.len = 0;
        if (opt) {
            w->levels.len = 0;
            for (size_t i = r0; i < row; i++)
                w->tmp[i - r0] = c->present[i];
            pq_rle_encode(&w->levels, w->tmp, row - r0, 1);
            pq_buf_le32(&w->body, (uint32_t)w->levels.len);
            pq_buf_put(&w->body, w->levels.p, w->levels.len);
            if (w->levels.err)
                return w->levels.err;
        }
        if (m->dict) {
            pq_buf_u8(&w->body, (uint8_t)width);
            pq_rle_encode(&w->body, c->sv + v0, v - v0, width);
        } else {
            for (size_t i = v0; i < v; i++)
                plain_value(w, c, i);
        }
        int r = put_page(w, m, PAGE_DATA, (int64_t)(row - r0),
                         m->dict ? ENC_RLE_DICTIONARY : ENC_PLAIN);
        if (r < 0)
            return r;
    } while (row < w->rows);
    if (c->has_minmax) {
        stat_bytes(c, 0, m->min, &m->min_len);
        stat_bytes(c, 1, m->max, &m->max_len);
        m->has_minmax = true;
    }
    return 0;
}

static void reset_column(struct column *c)
{
    c->nv = 0;
    c->plain_bytes = 0;
    c->arena.len = 0;
    c->nent = 0;
    if (c->slots)
        memset(c->slots, 0, c->nslots * sizeof *c->slots);
    c->has_minmax = false;
}

static int flush_group(struct pq_write *w)
{
    if (w->rows == 0)
        return 0;
    if (grow((void **)&w->rgs, &w->caprg, w->nrg + 1, sizeof *w->rgs) < 0)
        return -ENOMEM;
    struct rg_meta *g = &w->rgs[w->nrg];
    memset(g, 0, sizeof *g);
    g->chunks = calloc(w->ncols, sizeof *g->chunks);
    if (!g->chunks)
        return -ENOMEM;
    w->nrg++;
    g->rows = (int64_t)w->rows;
    g->offset = (int64_t)w->offset;
    for (size_t i = 0; i < w->ncols; i++) {
        int r = flush_column(w, &w->c[i], &g->chunks[i]);
        if (r < 0)
            return r;
        g->unc_size += g->chunks[i].unc_size;
        g->comp_size += g->chunks[i].comp_size;
        reset_column(&w->c[i]);
    }
    w->rows = 0;
    w->st.row_groups++;
    return 0;
}

static int add_value(struct column *c, const struct pq_val *v, size_t row)
{
    const enum pq_type t = c->def->type;
    if (v->null) {
        c->present[row] = 0;
        return 0;
    }
    if (c->def->optional)
        c->present[row] = 1;
    size_t i = c->nv;
    if (t == PQ_INT32 || t == PQ_INT64) {
        c->iv[i] = v->i;
        if (!c->has_minmax || v->i < c->imin)
            c->imin = v->i;
        if (!c->has_minmax || v->i > c->imax)
            c->imax = v->i;
        c->has_minmax = true;
        c->plain_bytes += value_size(t);
    } else if (t == PQ_DOUBLE) {
        c->dv[i] = v->d;
        if (!isnan(v->d)) {
            if (!c->has_minmax || v->d < c->dmin)
                c->dmin = v->d;
            if (!c->has_minmax || v->d > c->dmax)
                c->dmax = v->d;
            c->has_minmax = true;
        }
        c->plain_bytes += value_size(t);
    } else {
        uint32_t e = 0;
        int r = intern(c, v->s ? v->s : "", v->n, &e);
        if (r < 0)
            return r;
        c->sv[i] = e;
        c->plain_bytes += 4 + v->n;
        /* bounds only while every value fits a statistic; one long value drops them */
        if (c->nv == 0) {
            c->has_minmax = v->n <= PQ_WRITE_STAT_MAX;
            c->smin = c->smax = e;
        } else if (c->has_minmax) {
            if (v->n > PQ_WRITE_STAT_MAX)
                c->has_minmax = false;
            else if (str_cmp(c, e, c->smin) < 0)
                c->smin = e;
            else if (str_cmp(c, e, c->smax) > 0)
                c->smax = e;
        }
    }
    c->nv++;
    return 0;
}

static size_t group_bytes(const struct pq_write *w)
{
    size_t b = 0;
    for (size_t i = 0; i < w->ncols; i++)
        b += w->c[i].plain_bytes + w->rows / 8;
    return b;
}

/* A value the column cannot hold: rejected before anything of the row is stored. */
static bool fits(const struct pq_col *c, const struct pq_val *v)
{
    if (v->null)
        return c->optional;
    if (c->type == PQ_INT32)
        return v->i >= INT32_MIN && v->i <= INT32_MAX;
    if (c->type == PQ_STRING)
        return v->s || v->n == 0;
    return true;
}

int pq_write_row(struct pq_write *w, const struct pq_val *v)
{
    if (w->err || w->closed)
        return w->err ? w->err : -EINVAL;
    for (size_t i = 0; i < w->ncols; i++)
        if (!fits(&w->cols[i], &v[i]))
            return -EINVAL;
    for (size_t i = 0; i < w->ncols; i++) {
        struct column *c = &w->c[i];
        size_t cap = c->capv;
        int r = 0;
        if (c->nv + 1 > cap || (c->def->optional && w->rows + 1 > cap)) {
            size_t need = (c->nv > w->rows ? c->nv : w->rows) + 1;
            size_t n = cap;
            switch (c->def->type) {
            case PQ_INT32:
            case PQ_INT64:
                r = grow((void **)&c->iv, &n, need, sizeof *c->iv);
                break;
            case PQ_DOUBLE:
                r = grow((void **)&c->dv, &n, need, sizeof *c->dv);
                break;
            case PQ_STRING:
                r = grow((void **)&c->sv, &n, need, sizeof *c->sv);
                break;
            }
            if (r == 0 && c->def->optional) {
                size_t pn = cap;
                r = grow((void **)&c->present, &pn, need, sizeof *c->present);
            }
            if (r == 0)
                c->capv = n;
        }
        if (r == 0)
            r = add_value(c, &v[i], w->rows);
        if (r < 0)
            return w->err = r;      /* out of memory mid-row: the writer is done */
    }
    w->rows++;
    w->st.rows++;
    if (w->rows >= w->o.row_group_rows || group_bytes(w) >= w->o.row_group_bytes) {
        int r = flush_group(w);
        if (r < 0)
            return w->err = r;
    }
    return 0;
}

static void footer_schema(struct pq_thrift *t, const struct pq_write *w)
{
    pq_thrift_list(t, 2, PQ_THRIFT_STRUCT, w->ncols + 1);
    pq_thrift_struct_begin(t, 0);
    pq_thrift_str(t, 4, "schema");
    pq_thrift_i32(t, 5, (int32_t)w->ncols);
    pq_thrift_struct_end(t);
    for (size_t i = 0; i < w->ncols; i++) {
        const struct pq_col *c = &w->cols[i];
        pq_thrift_struct_begin(t, 0);
        pq_thrift_i32(t, 1, c->type);
        pq_thrift_i32(t, 3, c->optional ? REP_OPTIONAL : REP_REQUIRED);
        pq_thrift_str(t, 4, c->name);
        if (c->type == PQ_STRING) {
            pq_thrift_i32(t, 6, CONVERTED_UTF8);
            pq_thrift_struct_begin(t, 10);      /* LogicalType */
            pq_thrift_struct_begin(t, 1);       /* STRING: StringType {} */
            pq_thrift_struct_end(t);
            pq_thrift_struct_end(t);
        }
        pq_thrift_struct_end(t);
    }
}

static void footer_chunk(struct pq_thrift *t, const struct pq_col *c, const struct chunk_meta *m)
{
    pq_thrift_struct_begin(t, 0);                       /* ColumnChunk */
    pq_thrift_i64(t, 2, m->dict_off >= 0 ? m->dict_off : m->data_off);
    pq_thrift_struct_begin(t, 3);                       /* ColumnMetaData */
    pq_thrift_i32(t, 1, c->type);
    pq_thrift_list(t, 2, PQ_THRIFT_I32, m->dict ? 3 : 2);
    pq_thrift_elem_i32(t, ENC_PLAIN);
    pq_thrift_elem_i32(t, ENC_RLE);
    if (m->dict)
        pq_thrift_elem_i32(t, ENC_RLE_DICTIONARY);
    pq_thrift_list(t, 3, PQ_THRIFT_BINARY, 1);
    pq_thrift_elem_str(t, c->name);
    pq_thrift_i32(t, 4, CODEC_ZSTD);
    pq_thrift_i64(t, 5, m->num_values);
    pq_thrift_i64(t, 6, m->unc_size);
    pq_thrift_i64(t, 7, m->comp_size);
    pq_thrift_i64(t, 9, m->data_off);
    if (m->dict_off >= 0)
        pq_thrift_i64(t, 11, m->dict_off);
    pq_thrift_struct_begin(t, 12);                      /* Statistics */
    pq_thrift_i64(t, 3, m->nulls);
    if (m->has_minmax) {
        pq_thrift_bin(t, 5, m->max, m->max_len);
        pq_thrift_bin(t, 6, m->min, m->min_len);
    }
    pq_thrift_struct_end(t);
    pq_thrift_struct_end(t);
    pq_thrift_struct_end(t);
}

int pq_write_close(struct pq_write *w)
{
    if (w->closed || w->err)
        return w->err ? w->err : -EINVAL;
    int r = flush_group(w);
    if (r < 0)
        return w->err = r;
    struct pq_buf f = { 0 };
    struct pq_thrift t;
    pq_thrift_init(&t, &f);
    int64_t total = 0;
    for (size_t g = 0; g < w->nrg; g++)
        total += w->rgs[g].rows;
    pq_thrift_i32(&t, 1, PQ_FORMAT_VERSION);
    footer_schema(&t, w);
    pq_thrift_i64(&t, 3, total);
    pq_thrift_list(&t, 4, PQ_THRIFT_STRUCT, w->nrg);
    for (size_t g = 0; g < w->nrg; g++) {
        const struct rg_meta *rg = &w->rgs[g];
        pq_thrift_struct_begin(&t, 0);
        pq_thrift_list(&t, 1, PQ_THRIFT_STRUCT, w->ncols);
        for (size_t i = 0; i < w->ncols; i++)
            footer_chunk(&t, &w->cols[i], &rg->chunks[i]);
        pq_thrift_i64(&t, 2, rg->unc_size);
        pq_thrift_i64(&t, 3, rg->rows);
        pq_thrift_i64(&t, 5, rg->offset);
        pq_thrift_i64(&t, 6, rg->comp_size);
        pq_thrift_struct_end(&t);
    }
    pq_thrift_str(&t, 6, w->o.created_by);
    pq_thrift_list(&t, 7, PQ_THRIFT_STRUCT, w->ncols);
    for (size_t i = 0; i < w->ncols; i++) {
        pq_thrift_struct_begin(&t, 0);          /* ColumnOrder */
        pq_thrift_struct_begin(&t, 1);          /* TYPE_ORDER: TypeDefinedOrder {} */
        pq_thrift_struct_end(&t);
        pq_thrift_struct_end(&t);
    }
    pq_buf_u8(&f, PQ_THRIFT_STOP);
    r = f.err;
    if (r == 0 && f.len > UINT32_MAX)
        r = -EFBIG;
    if (r == 0)
        r = emit(w, f.p, f.len);
    if (r == 0) {
        pq_buf_le32(&f, (uint32_t)f.len);       /* appended after the footer bytes */
        r = f.err ? f.err : emit(w, f.p + f.len - 4, 4);
    }
    if (r == 0)
        r = emit(w, PQ_MAGIC, PQ_MAGIC_LEN);
    if (r == 0 && fflush(w->out) != 0)
        r = -EIO;
    pq_buf_free(&f);
    w->closed = true;
    w->st.bytes = w->offset;
    return w->err = r;
}

void pq_write_stats(const struct pq_write *w, struct pq_write_stats *st)
{
    *st = w->st;
    st->bytes = w->offset;
}

void pq_write_free(struct pq_write *w)
{
    if (!w)
        return;
    for (size_t i = 0; w->c && i < w->ncols; i++) {
        struct column *c = &w->c[i];
        free(c->iv);
        free(c->dv);
        free(c->sv);
        free(c->present);
        pq_buf_free(&c->arena);
        free(c->ent_off);
        free(c->ent_len);
        free(c->slots);
    }
    free(w->c);
    for (size_t g = 0; g < w->nrg; g++)
        free(w->rgs[g].chunks);
    free(w->rgs);
    ZSTD_freeCCtx(w->zc);
    pq_buf_free(&w->body);
    pq_buf_free(&w->comp);
    pq_buf_free(&w->hdr);
    pq_buf_free(&w->levels);
    free(w->tmp);
    free(w);
}
