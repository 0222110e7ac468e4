/*
 * store_fix.c — the store tools' shared fixture (see store_fix.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "collector/store/crc32c.h"
#include "collector/store/pack.h"
#include "shm/meta.h"
#include "store_fix.h"

void store_fix_die(const char *what, int rc)
{
    fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what,
            strerror(rc < 0 ? -rc : rc));
    exit(1);
}

struct idx *store_fix_create(const char *dir)
{
    if (mkdir(dir, 0700) < 0)
        store_fix_die(dir, -errno);
    struct idx *x;
    int rc = idx_open(&x, dir);
    if (rc)
        store_fix_die("idx_open", rc);
    return x;
}

void store_fix_count(struct seg_data_stats *st, const struct d9_rec_hdr *h)
{
    if (st->nrec == 0 || h->ts < st->t_min)
        st->t_min = h->ts;
    if (h->ts > st->t_max)
        st->t_max = h->ts;
    st->counts[h->type]++;
    st->nrec++;
}

void store_fix_put(struct store_fix_ring *r, void *rec, size_t len)
{
    struct d9_rec_hdr h;
    memcpy(&h, rec, sizeof h);
    h.seq = r->seq++;
    memcpy(rec, &h, sizeof h);
    if (r->n + len > r->cap) {
        size_t c = r->cap ? r->cap : 4096;
        while (c < r->n + len)
            c *= 2;
        uint8_t *p = realloc(r->raw, c);
        if (!p)
            store_fix_die("ring", -ENOMEM);
        r->raw = p;
        r->cap = c;
    }
    memcpy(r->raw + r->n, rec, len);
    r->n += len;
    store_fix_count(&r->st, &h);
}

void store_fix_poll_start(struct store_fix_ring *r, unsigned w, uint64_t task, uint32_t loc,
                          uint64_t t)
{
    struct d9_rec_poll_start s = { { sizeof s, D9_REC_POLL_START, 0, t }, task, loc, 1,
                                   (uint16_t)w };
    store_fix_put(r, &s, sizeof s);
}

void store_fix_poll_end(struct store_fix_ring *r, unsigned w, uint64_t task, uint64_t t)
{
    struct d9_rec_poll_end e = { { sizeof e, D9_REC_POLL_END, 0, t }, task, 1, (uint16_t)w, 0 };
    store_fix_put(r, &e, sizeof e);
}

void store_fix_sample(struct store_fix_ring *r, uint32_t tid, uint64_t t, uint64_t leaf,
                      uint64_t caller)
{
    uint64_t ips[2] = { leaf, caller };
    uint8_t rec[sizeof(struct d9_rec_stack) + sizeof ips];
    struct d9_rec_stack s = { .h = { (uint16_t)sizeof rec, D9_REC_CPU_SAMPLE, 0, t },
                              .tid = tid, .nframes = 2, .weight = 1000000 };
    memcpy(rec, &s, sizeof s);
    memcpy(rec + sizeof s, ips, sizeof ips);
    store_fix_put(r, rec, sizeof rec);
}

void store_fix_clear(struct store_fix_ring *r)
{
    r->n = 0;
    memset(&r->st, 0, sizeof r->st);
}

void store_fix_free(struct store_fix_ring *r)
{
    free(r->raw);
    memset(r, 0, sizeof *r);
}

void store_fix_block(struct seg_writer *sw, const uint8_t *raw, size_t n, uint32_t tid,
                     uint32_t ring, uint64_t lost, const struct seg_data_stats *st)
{
    /* room beyond PACK_BOUND: pack_records wants a record's worst case free
     * before each record, more than the packed size that it never exceeds */
    size_t cap = 2 * n + 64;
    uint8_t *dst = malloc(cap);
    if (!dst)
        store_fix_die("block", -ENOMEM);
    struct pack_state pk;
    pack_init(&pk);
    long e = pack_records(&pk, raw, n, dst + PACK_PREFIX, cap - PACK_PREFIX);
    if (e < 0)
        store_fix_die("pack_records", (int)e);
    size_t plen = pack_finish(dst, (size_t)e, (uint32_t)n);
    uint8_t *payload;
    int rc = seg_writer_data_reserve(sw, (plen + 7) & ~(size_t)7, &payload);
    if (rc)
        store_fix_die("seg_writer_data_reserve", rc);
    memcpy(payload, dst, plen);
    free(dst);
    rc = seg_writer_data_commit(sw, tid, ring, 1, lost, plen, st, crc32c_update(0, payload, plen),
                                SEG_BF_PACKED);
    if (rc)
        store_fix_die("seg_writer_data_commit", rc);
}

void store_fix_blocks(struct seg_writer *sw, const struct store_fix_ring *r, unsigned per_block,
                      uint32_t tid, uint32_t ring)
{
    size_t off = 0;
    while (off < r->n) {
        size_t end_off = off;
        struct seg_data_stats st;
        memset(&st, 0, sizeof st);
        for (unsigned k = 0; k < per_block && end_off < r->n; k++) {
            struct d9_rec_hdr h;
            memcpy(&h, r->raw + end_off, sizeof h);
            store_fix_count(&st, &h);
            end_off += h.len;
        }
        store_fix_block(sw, r->raw + off, end_off - off, tid, ring, 0, &st);
        off = end_off;
    }
}

void store_fix_meta_add(struct store_fix_meta *m, uint16_t kind, uint32_t id, const uint8_t *p,
                        int n)
{
    if (n <= 0)
        store_fix_die("metadata", -EINVAL);
    struct d9_meta_hdr h = { (uint16_t)((sizeof h + (size_t)n + 7) & ~7u), kind, id };
    if (m->len + h.len > sizeof m->b)
        store_fix_die("metadata", -ENOBUFS);
    memset(m->b + m->len, 0, h.len);
    memcpy(m->b + m->len, &h, sizeof h);
    memcpy(m->b + m->len + sizeof h, p, (size_t)n);
    m->len += h.len;
}
