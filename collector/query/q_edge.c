/*
 * q_edge.c — a segment's rollups inside edge ranges from the blocks they
 * need (see q_edge.h).
 *
 * The index lists the segment's DATA and META blocks in file order. A
 * first pass finds each thread's (ring, generation) first and last DATA
 * block that meets a range (threads numbered by a sort of the blocks by
 * thread); the second walks the blocks in file order and feeds every META
 * block and, per thread, the blocks q_edge.h names. Feeding in file order
 * keeps what depends on the order between threads as the whole file has
 * it: a worker entry shared by two threads of one worker (a thread that
 * took over the worker: its CPU "first" is the first record fed), the
 * schemas a META block defines for the custom events after it, and the
 * order of equal timestamps in the wake->poll pairing.
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

struct thr_ref {                    /* a DATA block's thread, for the sort */
    uint32_t ring, generation;
    size_t i;                       /* its block's index in file order */
};

static int by_thread(const void *x, const void *y)
{
    const struct thr_ref *a = x, *b = y;
    if (a->ring != b->ring)
        return a->ring < b->ring ? -1 : 1;
    if (a->generation != b->generation)
        return a->generation < b->generation ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

struct thr_span {                   /* a thread's DATA blocks that meet a range */
    size_t first, last;             /* file-order indices; first SIZE_MAX: none */
    int done;                       /* nothing later of it is needed */
};

static int meets(const struct idx_read_seg_block *b, const struct rollup_range *r, unsigned n)
{
    for (unsigned k = 0; k < n; k++)
        if (b->t_first <= r[k].to && b->t_last >= r[k].from)
            return 1;
    return 0;
}

/* A DATA block that does not check but whose header matches its index
 * row is left out, as q_scan.c leaves it out: skip is told, and its
 * thread's open polls and park end there (rollup_feed_gap). */
static int feed_bad(struct rollup *ru, struct seg_reader *sr, const struct idx_read_seg_block *q,
                    rollup_skip_fn skip, void *arg)
{
    struct seg_block b;
    if (!skip || seg_reader_skip(sr, &b) < 0 || b.offset != q->offset || b.h.kind != q->kind ||
        b.h.ring != q->ring || b.h.generation != q->generation)
        return -EBADMSG;
    const char *m = seg_reader_error(sr);
    skip(arg, q->offset, m ? m : "corrupt");
    return rollup_feed_gap(ru, q->ring, q->generation);
}

static int feed(struct rollup *ru, struct seg_reader *sr, const struct idx_read_seg_block *q,
                rollup_skip_fn skip, void *arg)
{
    struct seg_block b;
    int e = seg_reader_seek(sr, q->offset);
    if (e == 0)
        e = seg_reader_next(sr, &b);
    if (e == -EBADMSG)
        return feed_bad(ru, sr, q, skip, arg);
    if (e < 0)
        return e == -ENOMEM ? e : -EBADMSG;
    if (e == 0 || b.offset != q->offset || b.h.kind != q->kind ||
        (q->kind == SEG_BLK_DATA && (b.h.ring != q->ring || b.h.generation != q->generation)))
        return -EBADMSG;
    return rollup_feed_block(ru, &b);
}

/* Number the DATA blocks' threads: thr[i] for block i (META: SIZE_MAX),
 * and each thread's span of blocks that meet a range. */
static int spans_of(const struct blk_list *l, const struct rollup_range *r, unsigned n,
                    size_t *thr, struct thr_span **out)
{
    struct thr_ref *t = malloc((l->n ? l->n : 1) * sizeof *t);
    struct thr_span *sp = malloc((l->n ? l->n : 1) * sizeof *sp);
    if (!t || !sp) {
        free(t);
        free(sp);
        return -ENOMEM;
    }
    size_t nt = 0, k = 0;
    for (size_t i = 0; i < l->n; i++) {
        thr[i] = SIZE_MAX;
        if (l->b[i].kind == SEG_BLK_DATA)
            t[nt++] = (struct thr_ref){ l->b[i].ring, l->b[i].generation, i };
    }
    qsort(t, nt, sizeof *t, by_thread);
    for (size_t g0 = 0, g1; g0 < nt; g0 = g1, k++) {
        sp[k] = (struct thr_span){ SIZE_MAX, 0, 0 };
        for (g1 = g0; g1 < nt && t[g1].ring == t[g0].ring &&
                      t[g1].generation == t[g0].generation; g1++) {
            thr[t[g1].i] = k;
            if (meets(&l->b[t[g1].i], r, n)) {
                if (sp[k].first == SIZE_MAX || t[g1].i < sp[k].first)
                    sp[k].first = t[g1].i;
                if (t[g1].i > sp[k].last)
                    sp[k].last = t[g1].i;
            }
        }
    }
    free(t);
    *out = sp;
    return 0;
}

int q_edge_rollup(struct q_store *s, uint64_t segment_id, const char *path,
                  const struct rollup_range *r, unsigned n, unsigned flags,
                  rollup_skip_fn skip, void *arg, uint8_t **out, size_t *len,
                  struct q_edge_stats *st)
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
    for (size_t i = 0; e >= 0 && i < l.n; i++)
        st->blocks += l.b[i].kind == SEG_BLK_DATA;
    if (e >= 0 && st->blocks == 0)
        e = -ENOENT;
    if (e < 0) {
        free(l.b);
        return e == -ENOMEM || e == -ENOENT ? e : -EIO;
    }
    size_t *thr = malloc(l.n * sizeof *thr);
    struct thr_span *sp = NULL;
    struct seg_reader *sr = NULL;
    struct rollup *ru = NULL;
    if (!thr) {
        e = -ENOMEM;
        goto out;
    }
    if ((e = spans_of(&l, r, n, thr, &sp)) < 0 || (e = seg_reader_open(&sr, path, 0)) < 0 ||
        (e = rollup_new(&ru)) < 0 || (e = rollup_only(ru, r, n)) < 0 ||
        ((flags & Q_EDGE_POLLS) && (e = rollup_polls_only(ru)) < 0))
        goto out;
    for (size_t i = 0; e >= 0 && i < l.n; i++) {
        const struct idx_read_seg_block *b = &l.b[i];
        if (b->kind == SEG_BLK_META) {
            if (!(flags & Q_EDGE_POLLS))    /* polls only: no custom event counted */
                e = feed(ru, sr, b, skip, arg); /* schemas for the custom events after it */
            continue;
        }
        struct thr_span *t = &sp[thr[i]];
        if (t->done || t->first == SIZE_MAX || (!lookback && i < t->first))
            continue;                       /* nothing of this thread in the ranges yet */
        int in = (lookback && i <= t->last) || meets(b, r, n);
        if (!in && !rollup_pending(ru, b->ring, b->generation)) {
            if (i > t->last)
                t->done = 1;                /* nothing counted waits on later records */
            continue;                       /* between two ranges: no lookback needed */
        }
        e = feed(ru, sr, b, skip, arg);
        st->read++;
    }
    if (e >= 0)
        e = rollup_finish(ru, out, len);
out:
    rollup_free(ru);
    if (sr)
        seg_reader_close(sr);
    free(sp);
    free(thr);
    free(l.b);
    return e < 0 ? e : 0;
}
