/*
 * q_edge.c — a segment's rollups inside edge ranges from the blocks they
 * need (see q_edge.h).
 *
 * The index's DATA blocks of the segment are sorted by thread, then file
 * offset; each thread's run is walked once: skipped up to its first block
 * that meets a range (unless lookback), read while its blocks meet a range
 * or rollup_pending says a counted fact still waits on it, skipped after.
 * Threads are independent in the rollups (per-thread pairing), so feeding
 * one thread's blocks after another's gives the same bytes as file order.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/query/q_edge.h"
#include "collector/store/idx_read.h"
#include "collector/store/seg_reader.h"

struct blk_list {
    struct idx_read_seg_block *b;
    size_t n, cap;
};

static int on_block(void *arg, const struct idx_read_seg_block *b)
{
    struct blk_list *l = arg;
    if (l->n == l->cap) {
        size_t c = l->cap ? l->cap * 2 : 256;
        struct idx_read_seg_block *nb = realloc(l->b, c * sizeof *nb);
        if (!nb)
            return -ENOMEM;
        l->b = nb;
        l->cap = c;
    }
    l->b[l->n++] = *b;
    return 0;
}

static int by_thread(const void *x, const void *y)
{
    const struct idx_read_seg_block *a = x, *b = y;
    if (a->ring != b->ring)
        return a->ring < b->ring ? -1 : 1;
    if (a->generation != b->generation)
        return a->generation < b->generation ? -1 : 1;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

static int meets(const struct idx_read_seg_block *b, const struct rollup_range *r, unsigned n)
{
    for (unsigned k = 0; k < n; k++)
        if (b->t_first <= r[k].to && b->t_last >= r[k].from)
            return 1;
    return 0;
}

static int feed(struct rollup *ru, struct seg_reader *sr, const struct idx_read_seg_block *q)
{
    struct seg_block b;
    int e = seg_reader_seek(sr, q->offset);
    if (e == 0)
        e = seg_reader_next(sr, &b);
    if (e < 0)
        return e == -ENOMEM ? e : -EBADMSG;
    if (e == 0 || b.offset != q->offset || b.h.kind != SEG_BLK_DATA || b.h.ring != q->ring ||
        b.h.generation != q->generation)
        return -EBADMSG;
    return rollup_feed_block(ru, &b);
}

int q_edge_rollup(struct q_store *s, uint64_t segment_id, const char *path,
                  const struct rollup_range *r, unsigned n, unsigned flags, uint8_t **out,
                  size_t *len, struct q_edge_stats *st)
{
    int lookback = (flags & Q_EDGE_LOOKBACK) != 0;
    struct q_edge_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    if (!s || !path || !out || !len || !r || n == 0 || n > ROLLUP_ONLY_MAX)
        return -EINVAL;
    *out = NULL;
    *len = 0;
    struct blk_list l = { 0 };
    int e = idx_read_segment_blocks(q_store_idx(s), segment_id, on_block, &l);
    if (e >= 0 && l.n == 0)
        e = -ENOENT;
    if (e < 0) {
        free(l.b);
        return e == -ENOMEM || e == -ENOENT ? e : -EIO;
    }
    st->blocks = l.n;
    qsort(l.b, l.n, sizeof *l.b, by_thread);
    struct seg_reader *sr = NULL;
    struct rollup *ru = NULL;
    if ((e = seg_reader_open(&sr, path, 0)) < 0 || (e = rollup_new(&ru)) < 0 ||
        (e = rollup_only(ru, r, n)) < 0 ||
        ((flags & Q_EDGE_POLLS) && (e = rollup_polls_only(ru)) < 0))
        goto out;
    for (size_t g0 = 0, g1; e >= 0 && g0 < l.n; g0 = g1) {
        const struct idx_read_seg_block *t = &l.b[g0];
        size_t first = SIZE_MAX, last = 0;
        for (g1 = g0; g1 < l.n && l.b[g1].ring == t->ring && l.b[g1].generation == t->generation;
             g1++) {
            if (meets(&l.b[g1], r, n)) {
                if (first == SIZE_MAX)
                    first = g1;
                last = g1;
            }
        }
        if (first == SIZE_MAX)
            continue;                       /* nothing of this thread in the ranges */
        for (size_t i = lookback ? g0 : first; e >= 0 && i < g1; i++) {
            int in = (lookback && i <= last) || meets(&l.b[i], r, n);
            if (!in && !rollup_pending(ru, t->ring, t->generation)) {
                if (i > last)
                    break;                  /* nothing counted waits on later records */
                continue;                   /* between two ranges: no lookback needed */
            }
            e = feed(ru, sr, &l.b[i]);
            st->read++;
        }
    }
    if (e >= 0)
        e = rollup_finish(ru, out, len);
out:
    rollup_free(ru);
    if (sr)
        seg_reader_close(sr);
    free(l.b);
    return e < 0 ? e : 0;
}
