/*
 * keep.c — cutting a kept window out of a sealed segment (see keep.h).
 */
#include "collector/store/keep.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/crc32c.h"
#include "collector/store/pack.h"
#include "collector/store/seg_reader.h"

#define KEEP_SLACK 64u

/* The records of one source DATA block that fall in the window, gathered
 * KEEP_CHUNK raw bytes at a time. */
struct keep_chunk {
    uint8_t raw[KEEP_CHUNK];
    size_t len;
    struct seg_data_stats st;
};

struct keep_cut_ctx {
    const char *dir;
    uint64_t id;
    struct seg_proc_info pi;
    char host[sizeof ((struct seg_file_hdr *)0)->host + 1];
    char comm[sizeof ((struct seg_file_hdr *)0)->comm + 1];
    char exe[sizeof ((struct seg_file_hdr *)0)->exe + 1];
    struct seg_keep keep;
    uint8_t *meta;              /* entries read before the writer was opened */
    size_t meta_len, meta_cap;
    struct seg_writer *w;
    struct keep_chunk *c;
};

int keep_overlaps(uint64_t t_min, uint64_t t_max, uint64_t t0, uint64_t t1)
{
    return t_min <= t1 && t0 <= t_max;
}

static void bounded_copy(char *dst, size_t cap, const char *src, size_t n)
{
    size_t l = strnlen(src, n);
    if (l >= cap)
        l = cap - 1;
    memcpy(dst, src, l);
    dst[l] = 0;
}

static int meta_keep(struct keep_cut_ctx *c, const uint8_t *p, size_t len)
{
    if (c->w)
        return seg_writer_add_meta(c->w, p, len);
    if (c->meta_len + len > c->meta_cap) {
        size_t cap = c->meta_cap ? c->meta_cap : 4096;
        while (cap < c->meta_len + len)
            cap *= 2;
        uint8_t *m = realloc(c->meta, cap);
        if (!m)
            return -ENOMEM;
        c->meta = m;
        c->meta_cap = cap;
    }
    memcpy(c->meta + c->meta_len, p, len);
    c->meta_len += len;
    return 0;
}

/* The writer, opened at the first thing the window keeps. */
static int writer(struct keep_cut_ctx *c)
{
    if (c->w)
        return 0;
    return seg_writer_open(&c->w, c->dir, c->id, &c->pi, c->meta, c->meta_len);
}

/* Pack the gathered records as one DATA block. */
static int chunk_flush(struct keep_cut_ctx *c, const struct seg_block_hdr *h, uint64_t *lost)
{
    struct keep_chunk *k = c->c;
    if (k->len == 0)
        return 0;
    int rc = writer(c);
    if (rc)
        return rc;
    /* pack_records wants room for its worst case at every record: the
     * bound plus that slack (KEEP_SLACK) */
    size_t max = PACK_BOUND(k->len) + KEEP_SLACK;
    max = (max + 7u) & ~(size_t)7u;
    uint8_t *payload;
    if ((rc = seg_writer_data_reserve(c->w, max, &payload)))
        return rc;
    struct pack_state ps;
    pack_init(&ps);
    long e = pack_records(&ps, k->raw, k->len, payload + PACK_PREFIX, max - PACK_PREFIX - 8u);
    if (e < 0)
        return -EIO;            /* within PACK_BOUND it cannot */
    size_t plen = pack_finish(payload, (size_t)e, (uint32_t)k->len);
    rc = seg_writer_data_commit(c->w, h->tid, h->ring, h->generation, *lost, plen, &k->st,
                                crc32c_update(0, payload, plen), SEG_BF_PACKED);
    if (rc)
        return rc;
    *lost = 0;
    k->len = 0;
    memset(&k->st, 0, sizeof k->st);
    return 0;
}

static int cut_data(struct keep_cut_ctx *c, const struct seg_block *b)
{
    const struct seg_keep *w = &c->keep;
    if (b->h.nrec == 0 || !keep_overlaps(b->h.t_first, b->h.t_last, w->t0_ns, w->t1_ns))
        return 0;
    uint64_t lost = b->h.lost;  /* with the block's first kept records */
    size_t off = 0;
    const struct d9_rec_hdr *rec;
    int r;
    while ((r = seg_reader_next_record(b, &off, &rec)) == 1) {
        struct d9_rec_hdr rh;
        memcpy(&rh, rec, sizeof rh);
        if (rh.ts < w->t0_ns || rh.ts > w->t1_ns)
            continue;
        struct keep_chunk *k = c->c;
        if (k->len + rh.len > sizeof k->raw && (r = chunk_flush(c, &b->h, &lost)))
            return r;
        if (rh.type >= D9_REC_TYPE_COUNT)
            return -EBADMSG;    /* the reader checked it; a len fits 16 bits */
        memcpy(k->raw + k->len, rec, rh.len);
        k->len += rh.len;
        if (k->st.nrec == 0 || rh.ts < k->st.t_min)
            k->st.t_min = rh.ts;
        if (k->st.nrec == 0 || rh.ts > k->st.t_max)
            k->st.t_max = rh.ts;
        k->st.nrec++;
        k->st.counts[rh.type]++;
    }
    if (r < 0)
        return r;
    return chunk_flush(c, &b->h, &lost);
}

static int cut_block(struct keep_cut_ctx *c, const struct seg_block *b)
{
    const struct seg_keep *w = &c->keep;
    int in = b->h.t_first >= w->t0_ns && b->h.t_first <= w->t1_ns;
    int rc;
    switch (b->h.kind) {
    case SEG_BLK_META:
        return meta_keep(c, b->payload, b->h.len);
    case SEG_BLK_DATA:
        return cut_data(c, b);
    case SEG_BLK_THREAD_END:
        if (!in)
            return 0;
        if ((rc = writer(c)))
            return rc;
        return seg_writer_add_thread_end(c->w, b->h.tid, b->h.ring, b->h.generation,
                                         b->h.t_first);
    case SEG_BLK_EXIT: {
        struct seg_exit e;
        if (b->h.len < sizeof e)
            return -EBADMSG;
        memcpy(&e, b->payload, sizeof e);
        if (e.t_ns < w->t0_ns || e.t_ns > w->t1_ns)
            return 0;
        if ((rc = writer(c)))
            return rc;
        return seg_writer_add_exit(c->w, &e);
    }
    case SEG_BLK_TRIGGER: {     /* the triggers inside: a re-index finds them here */
        struct seg_trigger t;
        if (!in || b->h.len < sizeof t)
            return 0;
        memcpy(&t, b->payload, sizeof t);
        if ((rc = writer(c)))
            return rc;
        return seg_writer_add_trigger(c->w, &t);
    }
    default:
        return 0;               /* the reader refuses unknown kinds */
    }
}

int keep_cut(const char *src, const char *dir, uint64_t new_id, const struct seg_keep *k,
             struct seg_writer **out, struct seg_summary *sum)
{
    if (!src || !dir || !k || !out || !sum || new_id == 0 || k->t0_ns > k->t1_ns)
        return -EINVAL;
    *out = NULL;
    struct seg_reader *r;
    int rc = seg_reader_open(&r, src, 0);
    if (rc)
        return rc;
    struct keep_cut_ctx *c = calloc(1, sizeof *c);
    if (c)
        c->c = calloc(1, sizeof *c->c);
    if (!c || !c->c) {
        if (c)
            free(c);
        seg_reader_close(r);
        return -ENOMEM;
    }
    const struct seg_file_hdr *h = seg_reader_header(r);
    c->dir = dir;
    c->id = new_id;
    c->keep = *k;
    bounded_copy(c->host, sizeof c->host, h->host, sizeof h->host);
    bounded_copy(c->comm, sizeof c->comm, h->comm, sizeof h->comm);
    bounded_copy(c->exe, sizeof c->exe, h->exe, sizeof h->exe);
    c->pi = (struct seg_proc_info){
        .pid = h->pid, .uid = h->uid, .start_time = h->start_time,
        .clock_source = h->clock_source, .ns_per_tick = h->ns_per_tick,
        .cal_tsc0 = h->cal_tsc0, .cal_ns0 = h->cal_ns0,
        .host = c->host, .comm = c->comm, .exe = c->exe, .keep = &c->keep,
    };
    struct seg_block b;
    while ((rc = seg_reader_next(r, &b)) == 1)
        if ((rc = cut_block(c, &b)) < 0)
            break;
    if (rc == 0 && !c->w)
        rc = -ENODATA;
    if (rc == 0)
        rc = seg_writer_seal(c->w, sum);
    if (rc == 0) {
        *out = c->w;
    } else if (c->w) {
        seg_writer_free(c->w);  /* an unsealed writer takes its temp file with it */
    }
    seg_reader_close(r);
    free(c->meta);
    free(c->c);
    free(c);
    return rc;
}
