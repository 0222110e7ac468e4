/*
 * pq_check.c — strict reader of pq_write.c's files (see pq_check.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include "collector/parquet/pq_check.h"
#include "collector/parquet/pq_rle.h"
#include "collector/parquet/pq_thrift.h"
#include "collector/parquet/pq_write.h"

#define MAGIC "PAR1"
#define MAGIC_LEN 4
#define TAIL_LEN 8              /* footer length (le32) + magic */
enum { ENC_PLAIN = 0, ENC_RLE = 3, ENC_RLE_DICTIONARY = 8 };
enum { CODEC_NONE = 0, CODEC_ZSTD = 6 };
enum { PAGE_DATA = 0, PAGE_DICTIONARY = 2 };

struct chunk {
    int type, codec;
    int64_t num_values, unc_size, comp_size, data_off, dict_off, nulls;
    const uint8_t *min, *max;
    size_t min_len, max_len;
    bool has_nulls, has_min, has_max;
    const uint8_t *path;
    size_t path_len;
    size_t npath;
};

struct page_hdr {
    int type;
    int64_t unc, comp, nvals;
    int encoding, def_enc;
    bool data, dict;
};

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* ---- footer ---- */

static void schema_elem(struct pq_thrift_rd *r, struct pq_check_info *in, size_t idx,
                        int64_t *children)
{
    struct pq_check_col c = { 0 };
    int rep = -1, type = -1;
    int16_t id;
    pq_thrift_rd_enter(r);
    for (int t; (t = pq_thrift_rd_field(r, &id)) != PQ_THRIFT_STOP;) {
        if (id == 1 && t == PQ_THRIFT_I32)
            type = (int)pq_thrift_rd_int(r);
        else if (id == 3 && t == PQ_THRIFT_I32)
            rep = (int)pq_thrift_rd_int(r);
        else if (id == 4 && t == PQ_THRIFT_BINARY)
            c.name = (const char *)pq_thrift_rd_bin(r, &c.name_len);
        else if (id == 5 && t == PQ_THRIFT_I32)
            *children = pq_thrift_rd_int(r);
        else if (id == 6 && t == PQ_THRIFT_I32)
            c.utf8 = pq_thrift_rd_int(r) == 0;
        else
            pq_thrift_rd_skip(r, t);
    }
    pq_thrift_rd_leave(r);
    if (idx == 0)
        return;
    if (type != PQ_INT32 && type != PQ_INT64 && type != PQ_DOUBLE && type != PQ_STRING)
        r->err = -EBADMSG;
    if (rep != 0 && rep != 1)
        r->err = -EBADMSG;
    if (!c.name || idx > PQ_CHECK_COLS_MAX)
        r->err = -EBADMSG;
    if (r->err)
        return;
    c.type = type;
    c.optional = rep == 1;
    in->cols[idx - 1] = c;
}

static void stats(struct pq_thrift_rd *r, struct chunk *k)
{
    int16_t id;
    pq_thrift_rd_enter(r);
    for (int t; (t = pq_thrift_rd_field(r, &id)) != PQ_THRIFT_STOP;) {
        if (id == 3 && t == PQ_THRIFT_I64) {
            k->nulls = pq_thrift_rd_int(r);
            k->has_nulls = true;
        } else if (id == 5 && t == PQ_THRIFT_BINARY) {
            k->max = pq_thrift_rd_bin(r, &k->max_len);
            k->has_max = true;
        } else if (id == 6 && t == PQ_THRIFT_BINARY) {
            k->min = pq_thrift_rd_bin(r, &k->min_len);
            k->has_min = true;
        } else {
            pq_thrift_rd_skip(r, t);
        }
    }
    pq_thrift_rd_leave(r);
}

static void col_meta(struct pq_thrift_rd *r, struct chunk *k)
{
    int16_t id;
    size_t n;
    pq_thrift_rd_enter(r);
    for (int t; (t = pq_thrift_rd_field(r, &id)) != PQ_THRIFT_STOP;) {
        if (id == 1 && t == PQ_THRIFT_I32) {
            k->type = (int)pq_thrift_rd_int(r);
        } else if (id == 3 && t == PQ_THRIFT_LIST) {
            if (pq_thrift_rd_list(r, &n) != PQ_THRIFT_BINARY)
                r->err = -EBADMSG;
            k->npath = n;
            for (size_t i = 0; i < n && !r->err; i++)
                k->path = pq_thrift_rd_bin(r, &k->path_len);
        } else if (id == 4 && t == PQ_THRIFT_I32) {
            k->codec = (int)pq_thrift_rd_int(r);
        } else if (id >= 5 && id <= 11 && id != 8 && id != 10 && t == PQ_THRIFT_I64) {
            int64_t v = pq_thrift_rd_int(r);
            if (id == 5)
                k->num_values = v;
            else if (id == 6)
                k->unc_size = v;
            else if (id == 7)
                k->comp_size = v;
            else if (id == 9)
                k->data_off = v;
            else
                k->dict_off = v;
        } else if (id == 12 && t == PQ_THRIFT_STRUCT) {
            stats(r, k);
        } else {
            pq_thrift_rd_skip(r, t);
        }
    }
    pq_thrift_rd_leave(r);
}

static void col_chunk(struct pq_thrift_rd *r, struct chunk *k)
{
    int16_t id;
    bool meta = false;
    memset(k, 0, sizeof *k);
    k->dict_off = k->data_off = -1;
    pq_thrift_rd_enter(r);
    for (int t; (t = pq_thrift_rd_field(r, &id)) != PQ_THRIFT_STOP;) {
        if (id == 3 && t == PQ_THRIFT_STRUCT) {
            col_meta(r, k);
            meta = true;
        } else {
            pq_thrift_rd_skip(r, t);
        }
    }
    pq_thrift_rd_leave(r);
    if (!meta)
        r->err = -EBADMSG;
}

/* ---- pages ---- */

static int page_header(struct pq_thrift_rd *r, struct page_hdr *h)
{
    int16_t id;
    memset(h, 0, sizeof *h);
    h->type = -1;
    h->unc = h->comp = -1;
    for (int t; (t = pq_thrift_rd_field(r, &id)) != PQ_THRIFT_STOP;) {
        if (id >= 1 && id <= 3 && t == PQ_THRIFT_I32) {
            int64_t v = pq_thrift_rd_int(r);
            if (id == 1)
                h->type = (int)v;
            else if (id == 2)
                h->unc = v;
            else
                h->comp = v;
        } else if ((id == 5 || id == 7) && t == PQ_THRIFT_STRUCT) {
            int16_t sid;
            pq_thrift_rd_enter(r);
            h->def_enc = ENC_RLE;
            for (int st; (st = pq_thrift_rd_field(r, &sid)) != PQ_THRIFT_STOP;) {
                if (sid == 1 && st == PQ_THRIFT_I32)
                    h->nvals = pq_thrift_rd_int(r);
                else if (sid == 2 && st == PQ_THRIFT_I32)
                    h->encoding = (int)pq_thrift_rd_int(r);
                else if (sid == 3 && st == PQ_THRIFT_I32 && id == 5)
                    h->def_enc = (int)pq_thrift_rd_int(r);
                else
                    pq_thrift_rd_skip(r, st);
            }
            pq_thrift_rd_leave(r);
            if (id == 5)
                h->data = true;
            else
                h->dict = true;
        } else {
            pq_thrift_rd_skip(r, t);
        }
    }
    if (r->err)
        return r->err;
    if (h->unc < 0 || h->comp < 0 || (size_t)h->unc > PQ_CHECK_PAGE_MAX || h->nvals < 0 ||
        h->nvals > (int64_t)PQ_CHECK_PAGE_VALUES || h->def_enc != ENC_RLE)
        return -EBADMSG;
    if (h->type == PAGE_DATA ? !h->data : h->type == PAGE_DICTIONARY ? !h->dict : true)
        return -EBADMSG;
    return 0;
}

struct dict {
    size_t n;
    int64_t *iv;
    double *dv;
    const uint8_t **sp;
    size_t *sn;
    uint8_t *body;          /* the decompressed dictionary page that sp points into */
};

static void dict_free(struct dict *d)
{
    free(d->iv);
    free(d->dv);
    free(d->sp);
    free(d->sn);
    free(d->body);
    memset(d, 0, sizeof *d);
}

/* One PLAIN value at p[*pos, len). */
static int plain_one(int type, const uint8_t *p, size_t len, size_t *pos,
                     struct pq_check_value *v)
{
    size_t w = type == PQ_INT32 ? 4 : 8;
    if (type == PQ_STRING) {
        if (len - *pos < 4)
            return -EBADMSG;
        size_t n = le32(p + *pos);
        *pos += 4;
        if (n > len - *pos)
            return -EBADMSG;
        v->s = p + *pos;
        v->n = n;
        *pos += n;
        return 0;
    }
    if (len - *pos < w)
        return -EBADMSG;
    if (type == PQ_INT32) {
        v->i = (int32_t)le32(p + *pos);
    } else if (type == PQ_INT64) {
        v->i = (int64_t)le64(p + *pos);
    } else {
        uint64_t x = le64(p + *pos);
        memcpy(&v->d, &x, sizeof x);
    }
    *pos += w;
    return 0;
}

/* The values' bounds; strings are copied (pages are freed as the walk goes). */
struct bounds {
    bool any;
    int err;
    struct pq_check_value min, max;
    uint8_t *smin, *smax;
    uint64_t nulls;
};

static void keep(struct bounds *b, uint8_t **buf, struct pq_check_value *dst,
                 const struct pq_check_value *v)
{
    *dst = *v;
    if (!v->s)
        return;
    uint8_t *p = malloc(v->n ? v->n : 1);
    if (!p) {
        b->err = -ENOMEM;
        return;
    }
    memcpy(p, v->s, v->n);
    free(*buf);
    *buf = p;
    dst->s = p;
}

static int cmp_val(int type, const struct pq_check_value *a, const struct pq_check_value *b)
{
    if (type == PQ_STRING) {
        size_t n = a->n < b->n ? a->n : b->n;
        int r = n ? memcmp(a->s, b->s, n) : 0;
        return r ? (r > 0) - (r < 0) : (a->n > b->n) - (a->n < b->n);
    }
    if (type == PQ_DOUBLE)
        return (a->d > b->d) - (a->d < b->d);
    return (a->i > b->i) - (a->i < b->i);
}

static int stat_val(int type, const uint8_t *p, size_t n, struct pq_check_value *v)
{
    size_t pos = 0;
    if (type == PQ_STRING) {
        v->s = p;
        v->n = n;
        return 0;
    }
    if (n != (type == PQ_INT32 ? 4u : 8u))
        return -EBADMSG;
    return plain_one(type, p, n, &pos, v);
}

/* Both stats given: they must be the exact bounds of the values seen. */
static int check_bounds(const struct chunk *k, const struct bounds *b, uint64_t values)
{
    if (!k->has_nulls || (uint64_t)k->nulls != b->nulls)
        return -EBADMSG;
    if (k->has_min != k->has_max)
        return -EBADMSG;
    if (!k->has_min)
        return k->type == PQ_STRING || (k->type == PQ_DOUBLE) || values == b->nulls ? 0
                                                                                    : -EBADMSG;
    if (!b->any)
        return -EBADMSG;
    struct pq_check_value mn = { 0 }, mx = { 0 };
    if (stat_val(k->type, k->min, k->min_len, &mn) < 0 ||
        stat_val(k->type, k->max, k->max_len, &mx) < 0)
        return -EBADMSG;
    if (cmp_val(k->type, &mn, &b->min) != 0 || cmp_val(k->type, &mx, &b->max) != 0)
        return -EBADMSG;
    return 0;
}

static void see(int type, struct bounds *b, const struct pq_check_value *v)
{
    if (v->null) {
        b->nulls++;
        return;
    }
    if (type == PQ_DOUBLE && isnan(v->d))
        return;
    if (!b->any || cmp_val(type, v, &b->min) < 0)
        keep(b, &b->smin, &b->min, v);
    if (!b->any || cmp_val(type, v, &b->max) > 0)
        keep(b, &b->smax, &b->max, v);
    b->any = true;
}

static int decompress(int codec, const uint8_t *src, size_t n, size_t unc, uint8_t **out)
{
    *out = malloc(unc ? unc : 1);
    if (!*out)
        return -ENOMEM;
    if (codec == CODEC_NONE) {
        if (n != unc)
            return -EBADMSG;
        memcpy(*out, src, n);
        return 0;
    }
    size_t r = ZSTD_decompress(*out, unc, src, n);
    if (ZSTD_isError(r) || r != unc)
        return -EBADMSG;
    return 0;
}

struct walk {
    const uint8_t *file;
    size_t len, data_end;
    const struct pq_check_col *col;
    size_t ci;
    uint64_t row0;
    pq_check_fn fn;
    void *arg;
    struct pq_check_info *info;
};

static int data_page(struct walk *w, const struct chunk *k, const struct page_hdr *h,
                     const uint8_t *body, size_t len, struct dict *d, uint64_t *row,
                     struct bounds *bd)
{
    size_t pos = 0, nrows = (size_t)h->nvals;
    uint32_t *levels = NULL, *idx = NULL;
    int r = 0;
    if (w->col->optional) {
        if (len < 4)
            return -EBADMSG;
        size_t ln = le32(body);
        if (ln > len - 4)
            return -EBADMSG;
        levels = malloc((nrows ? nrows : 1) * sizeof *levels);
        if (!levels)
            return -ENOMEM;
        r = pq_rle_decode(body + 4, ln, 1, levels, nrows);
        pos = 4 + ln;
    }
    size_t nvals = nrows;
    if (levels && r == 0) {
        nvals = 0;
        for (size_t i = 0; i < nrows; i++)
            nvals += levels[i];
    }
    if (r == 0 && h->encoding == ENC_RLE_DICTIONARY) {
        if (!d->n && nvals) {
            r = -EBADMSG;
        } else if (nvals) {
            if (pos >= len) {
                r = -EBADMSG;
            } else {
                int width = body[pos++];
                idx = malloc(nvals * sizeof *idx);
                r = !idx ? -ENOMEM : pq_rle_decode(body + pos, len - pos, width, idx, nvals);
                for (size_t i = 0; r == 0 && i < nvals; i++)
                    if (idx[i] >= d->n)
                        r = -EBADMSG;
            }
        }
    } else if (r == 0 && h->encoding != ENC_PLAIN) {
        r = -EBADMSG;
    }
    size_t vi = 0;
    for (size_t i = 0; r == 0 && i < nrows; i++) {
        struct pq_check_value v = { 0 };
        if (levels && !levels[i]) {
            v.null = true;
        } else if (idx) {
            uint32_t e = idx[vi++];
            v.i = d->iv ? d->iv[e] : 0;
            v.d = d->dv ? d->dv[e] : 0;
            if (d->sp) {
                v.s = d->sp[e];
                v.n = d->sn[e];
            }
        } else {
            r = plain_one(w->col->type, body, len, &pos, &v);
            vi++;
        }
        if (r == 0) {
            see(w->col->type, bd, &v);
            if (w->fn)
                r = w->fn(w->arg, w->ci, (*row)++, &v);
            else
                (*row)++;
        }
    }
    if (r == 0 && h->encoding == ENC_PLAIN && pos != len)
        r = -EBADMSG;      /* trailing bytes: the counts disagree */
    (void)k;
    free(levels);
    free(idx);
    return r;
}

static int dict_page(const struct walk *w, const struct page_hdr *h, uint8_t *body, size_t len,
                     struct dict *d)
{
    if (d->n || d->body || h->encoding != ENC_PLAIN)
        return -EBADMSG;
    size_t n = (size_t)h->nvals, pos = 0;
    if (n > len)
        return -EBADMSG;
    d->body = body;
    d->n = n;
    int t = w->col->type;
    if (t == PQ_STRING) {
        d->sp = malloc((n ? n : 1) * sizeof *d->sp);
        d->sn = malloc((n ? n : 1) * sizeof *d->sn);
    } else if (t == PQ_DOUBLE) {
        d->dv = malloc((n ? n : 1) * sizeof *d->dv);
    } else {
        d->iv = malloc((n ? n : 1) * sizeof *d->iv);
    }
    if ((t == PQ_STRING && (!d->sp || !d->sn)) || (t == PQ_DOUBLE && !d->dv) ||
        (t != PQ_STRING && t != PQ_DOUBLE && !d->iv))
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        struct pq_check_value v = { 0 };
        if (plain_one(t, body, len, &pos, &v) < 0)
            return -EBADMSG;
        if (d->sp) {
            d->sp[i] = v.s;
            d->sn[i] = v.n;
        } else if (d->dv) {
            d->dv[i] = v.d;
        } else {
            d->iv[i] = v.i;
        }
    }
    return pos == len ? 0 : -EBADMSG;
}

static int walk_chunk(struct walk *w, const struct chunk *k, int64_t rg_rows)
{
    const struct pq_check_col *c = w->col;
    if (k->type != c->type || k->npath != 1 || k->path_len != c->name_len ||
        memcmp(k->path, c->name, c->name_len) != 0 || k->num_values != rg_rows ||
        (k->codec != CODEC_NONE && k->codec != CODEC_ZSTD) || k->data_off < MAGIC_LEN)
        return -EBADMSG;
    int64_t start = k->dict_off >= 0 ? k->dict_off : k->data_off;
    if (k->dict_off >= 0 && k->dict_off >= k->data_off)
        return -EBADMSG;
    if (start < MAGIC_LEN || k->comp_size < 0 || (uint64_t)start > w->data_end ||
        (uint64_t)k->comp_size > w->data_end - (uint64_t)start)
        return -EBADMSG;
    size_t pos = (size_t)start, end = pos + (size_t)k->comp_size;
    uint64_t row = w->row0, unc = 0;
    struct dict d = { 0 };
    struct bounds bd = { 0 };
    int r = 0;
    bool first_data = true;
    while (r == 0 && pos < end) {
        struct pq_thrift_rd rd = { .p = w->file + pos, .end = w->file + end };
        struct page_hdr h;
        size_t at = pos;
        r = page_header(&rd, &h);
        if (r < 0)
            break;
        size_t hl = (size_t)(rd.p - (w->file + pos));
        pos += hl;
        if ((uint64_t)h.comp > end - pos) {
            r = -EBADMSG;
            break;
        }
        if (h.type == PAGE_DATA && first_data) {
            if ((int64_t)at != k->data_off)
                r = -EBADMSG;
            first_data = false;
        } else if (h.type == PAGE_DICTIONARY && (int64_t)at != k->dict_off) {
            r = -EBADMSG;
        }
        uint8_t *body = NULL;
        if (r == 0)
            r = decompress(k->codec, w->file + pos, (size_t)h.comp, (size_t)h.unc, &body);
        if (r == 0 && h.type == PAGE_DICTIONARY) {
            r = dict_page(w, &h, body, (size_t)h.unc, &d);
            body = NULL;            /* owned by d */
        } else if (r == 0) {
            if (row - w->row0 + (uint64_t)h.nvals > (uint64_t)rg_rows)
                r = -EBADMSG;
            else
                r = data_page(w, k, &h, body, (size_t)h.unc, &d, &row, &bd);
        }
        free(body);
        unc += hl + (uint64_t)h.unc;
        pos += (size_t)h.comp;
        w->info->pages++;
    }
    if (d.n || d.body)
        w->info->dict_chunks++;
    dict_free(&d);
    if (r == 0 && (row - w->row0 != (uint64_t)rg_rows || unc != (uint64_t)k->unc_size))
        r = -EBADMSG;
    if (r == 0)
        r = bd.err ? bd.err : check_bounds(k, &bd, (uint64_t)rg_rows);
    free(bd.smin);
    free(bd.smax);
    return r;
}

static int row_group(struct pq_thrift_rd *r, struct walk *w)
{
    int16_t id;
    int64_t rows = -1;
    size_t nchunks = 0;
    struct chunk *chunks = NULL;
    int rc = 0;
    pq_thrift_rd_enter(r);
    for (int t; (t = pq_thrift_rd_field(r, &id)) != PQ_THRIFT_STOP;) {
        if (id == 1 && t == PQ_THRIFT_LIST && !chunks) {
            if (pq_thrift_rd_list(r, &nchunks) != PQ_THRIFT_STRUCT ||
                nchunks != w->info->ncols) {
                r->err = -EBADMSG;
                break;
            }
            chunks = calloc(nchunks ? nchunks : 1, sizeof *chunks);
            if (!chunks) {
                rc = -ENOMEM;
                break;
            }
            for (size_t i = 0; i < nchunks && !r->err; i++)
                col_chunk(r, &chunks[i]);
        } else if (id == 3 && t == PQ_THRIFT_I64) {
            rows = pq_thrift_rd_int(r);
        } else {
            pq_thrift_rd_skip(r, t);
        }
    }
    pq_thrift_rd_leave(r);
    if (rc == 0 && (r->err || !chunks || rows <= 0))
        rc = -EBADMSG;
    for (size_t i = 0; rc == 0 && i < nchunks; i++) {
        w->col = &w->info->cols[i];
        w->ci = i;
        rc = walk_chunk(w, &chunks[i], rows);
    }
    if (rc == 0) {
        w->row0 += (uint64_t)rows;
        w->info->row_groups++;
    }
    free(chunks);
    return rc;
}

int pq_check(const uint8_t *file, size_t len, struct pq_check_info *info, pq_check_fn fn,
             void *arg)
{
    memset(info, 0, sizeof *info);
    if (len < 2 * MAGIC_LEN + 4 || memcmp(file, MAGIC, MAGIC_LEN) != 0 ||
        memcmp(file + len - MAGIC_LEN, MAGIC, MAGIC_LEN) != 0)
        return -EBADMSG;
    size_t flen = le32(file + len - TAIL_LEN);
    if (flen > len - TAIL_LEN - MAGIC_LEN)
        return -EBADMSG;
    size_t fstart = len - TAIL_LEN - flen;
    struct pq_thrift_rd r = { .p = file + fstart, .end = file + len - TAIL_LEN };
    struct walk w = { .file = file, .len = len, .data_end = fstart, .fn = fn, .arg = arg,
                      .info = info };
    int16_t id;
    int64_t rows = -1, children = -1;
    bool schema = false;
    int rc = 0;
    for (int t; rc == 0 && (t = pq_thrift_rd_field(&r, &id)) != PQ_THRIFT_STOP;) {
        size_t n;
        if (id == 2 && t == PQ_THRIFT_LIST) {
            if (pq_thrift_rd_list(&r, &n) != PQ_THRIFT_STRUCT || n < 2 ||
                n > PQ_CHECK_COLS_MAX + 1) {
                rc = -EBADMSG;
                break;
            }
            for (size_t i = 0; i < n && !r.err; i++) {
                int64_t ch = -1;
                schema_elem(&r, info, i, &ch);
                if (i == 0)
                    children = ch;
                else if (ch >= 0)
                    rc = -EBADMSG;      /* nested schemas are not written here */
            }
            if (children != (int64_t)n - 1)
                rc = -EBADMSG;
            info->ncols = n - 1;
            schema = true;
        } else if (id == 3 && t == PQ_THRIFT_I64) {
            rows = pq_thrift_rd_int(&r);
        } else if (id == 4 && t == PQ_THRIFT_LIST) {
            /* the schema comes first in parquet.thrift's order */
            if (!schema || pq_thrift_rd_list(&r, &n) != PQ_THRIFT_STRUCT) {
                rc = -EBADMSG;
                break;
            }
            for (size_t i = 0; i < n && rc == 0 && !r.err; i++)
                rc = row_group(&r, &w);
        } else {
            pq_thrift_rd_skip(&r, t);
        }
    }
    if (rc == 0 && (r.err || !schema || rows < 0 || (uint64_t)rows != w.row0 ||
                    r.p != r.end))
        rc = -EBADMSG;
    info->rows = w.row0;
    return rc;
}
