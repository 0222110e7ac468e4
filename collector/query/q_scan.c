/*
 * q_scan.c — the merged, time-ordered scan of a store's records (see q_scan.h).
 *
 * Invariants: a cursor owns one block's records (the reader's unpack
 * buffer, taken, or a copy) and a reference on the open segment reader it
 * came from; the heap holds cursors that have a current record; a block is
 * opened before any record with a larger timestamp is delivered (the index
 * gives blocks by t_first), which yields global time order; ties are
 * broken by the order blocks were opened, which keeps per-ring order (given
 * per-ring timestamps that do not go backwards). Memory is bounded by the
 * blocks that overlap in time, never by file size.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/query/q_loc.h"
#include "collector/query/q_scan.h"
#include "collector/store/idx_read.h"
#include "collector/store/seg_reader.h"
#include "shm/record.h"

struct rd_entry {                   /* an open segment file */
    uint64_t segment_id;
    struct seg_reader *r;
    int refs;
    uint64_t last_use;
    int64_t process_id;
    uint32_t pid;
    char comm[32];
    struct q_meta_src meta;
    struct q_store *store;        /* for the process's map records (code locations) */
    struct q_loc_cache code;  /* code locations named so far */
};

struct cursor {                     /* one block being merged, or a gap (a block not read) */
    bool gap;                       /* cur is gap_hdr; delivered once as rec == NULL */
    struct d9_rec_hdr gap_hdr;
    struct rd_entry *rd;
    uint8_t *payload;               /* the block's records, owned (taken from the reader) */
    size_t len, off;
    uint64_t seq;                   /* open order, breaks timestamp ties */
    uint64_t key;                   /* merge key: the largest ts so far of this ring's
                                     * blocks in flight (ring order wins over a stamp
                                     * that went backwards) */
    uint64_t t_last;                /* the block's largest ts (its header) */
    const struct d9_rec_hdr *cur;
    size_t cur_len;
    uint32_t tid, ring, generation;
    char thread[20];
    struct q_rec_src src;         /* what scan_next hands out with each record */
};

struct heap_ent {                   /* the merge keys beside the cursor: no pointer
                                     * chase per comparison */
    uint64_t key, seq;
    struct cursor *c;
};

struct scan {
    struct q_store *s;
    struct q_filter fcopy;
    const struct q_filter *f;     /* == &fcopy */
    uint32_t tmask;                 /* types below 32 that pass (f->types, or all) */
    bool tbig;                      /* types from 32 pass (f->types == 0) */
    struct q_scan_stats *st;
    struct q_scan_stats own_st;   /* when the caller passed none */
    const char *prog;
    struct rd_entry **rd;
    size_t nrd, caprd;
    uint64_t use_clock;
    struct heap_ent *heap;
    size_t nheap, capheap;
    uint64_t next_seq;
    struct idx_read_cursor *q;      /* the window's DATA blocks by t_first */
    struct idx_read_block row;      /* q's current row, not opened yet when have_row */
    bool have_row;
    int q_rc;
    struct cursor *pending;         /* heap[0], delivered by the last next: advance it first */
};

/* ctx: the struct rd_entry of the segment */
static const char *meta_rt(const void *ctx, uint32_t id)
{
    return seg_reader_runtime(((const struct rd_entry *)ctx)->r, id);
}
static const struct shm_meta_entry *meta_loc(const void *ctx, uint32_t id)
{
    struct rd_entry *e = (struct rd_entry *)ctx;
    const struct shm_meta_entry *m = seg_reader_location(e->r, id);
    if (!e->code.tried && q_loc_is_code(m)) {
        e->code.tried = 1;
        e->code.c = q_loc_of_process(e->store, e->process_id);
    }
    return q_loc_cached(&e->code, m);
}
static const struct shm_meta_entry *meta_schema(const void *ctx, uint32_t id)
{
    return seg_reader_schema(((const struct rd_entry *)ctx)->r, id);
}

static void rd_free(struct rd_entry *e)
{
    if (e->r)
        seg_reader_close(e->r);
    q_loc_cache_release(&e->code);
    free(e);
}

/* Read the META blocks of a segment: straight to them with the offsets of
 * the index (a few preads), or, when the index has none, by walking the
 * file's block headers (seg_reader_load_meta). */
static int meta_block(void *arg, uint64_t offset)
{
    struct seg_reader *r = arg;
    struct seg_block b;
    int rc = seg_reader_seek(r, offset);
    if (rc == 0 && (rc = seg_reader_next(r, &b)) == 1)
        rc = b.h.kind == SEG_BLK_META ? 0 : -EBADMSG;
    else if (rc == 0)
        rc = -EBADMSG;
    return rc;
}

static int load_meta(struct scan *sc, struct seg_reader *r, uint64_t seg_id)
{
    int n = idx_read_block_offsets(q_store_idx(sc->s), seg_id, SEG_BLK_META, meta_block, r);
    if (n <= 0)     /* index incomplete or unreadable (-EIO): the file's own, whole */
        return seg_reader_load_meta(r);
    return 0;
}

/* Find or open the reader of a segment. NULL if the file is unusable. */
static struct rd_entry *rd_get(struct scan *sc, uint64_t seg_id, const char *relpath,
                               int64_t process_id, uint32_t pid, const char *comm)
{
    for (size_t i = 0; i < sc->nrd; i++) {
        if (sc->rd[i]->segment_id == seg_id) {
            sc->rd[i]->last_use = ++sc->use_clock;
            return sc->rd[i]->r ? sc->rd[i] : NULL;
        }
    }
    /* evict the least recently used idle reader when the cache is full */
    if (sc->nrd >= Q_READER_CACHE) {
        size_t victim = SIZE_MAX;
        for (size_t i = 0; i < sc->nrd; i++)
            if (sc->rd[i]->refs == 0 &&
                (victim == SIZE_MAX || sc->rd[i]->last_use < sc->rd[victim]->last_use))
                victim = i;
        if (victim != SIZE_MAX) {
            rd_free(sc->rd[victim]);
            sc->rd[victim] = sc->rd[--sc->nrd];
        }
    }
    if (sc->nrd == sc->caprd) {
        size_t nc = sc->caprd ? sc->caprd * 2 : 8;
        struct rd_entry **n = realloc(sc->rd, nc * sizeof *n);
        if (!n)
            return NULL;
        sc->rd = n;
        sc->caprd = nc;
    }
    struct rd_entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->segment_id = seg_id;
    e->process_id = process_id;
    e->pid = pid;
    snprintf(e->comm, sizeof e->comm, "%s", comm);
    e->last_use = ++sc->use_clock;
    sc->rd[sc->nrd++] = e;

    char path[2 * Q_PATH_MAX];
    if (relpath[0] == '/' || strstr(relpath, "..")) {
        /* the index is untrusted too: stay inside the store */
        fprintf(stderr, "%s: warning: segment %" PRIu64 ": path '%s' is outside the store, "
                "skipped\n", sc->prog, seg_id, relpath);
        sc->st->missing_segments++;
        return NULL;
    }
    snprintf(path, sizeof path, "%s/%s", q_store_dir(sc->s), relpath);
    char why[256] = "";
    int rc = seg_reader_open_ex(&e->r, path, 0, why, sizeof why);
    if (rc == 0 && (rc = load_meta(sc, e->r, seg_id)) < 0)
        snprintf(why, sizeof why, "metadata unreadable");
    if (rc < 0) {
        fprintf(stderr, "%s: warning: %s: %s, skipped\n", sc->prog, path,
                *why ? why : strerror(-rc));
        if (e->r)
            seg_reader_close(e->r);
        e->r = NULL;
        sc->st->missing_segments++;
        return NULL;
    }
    e->store = sc->s;
    e->meta = (struct q_meta_src){ meta_rt, meta_loc, meta_schema, e };
    return e;
}

/* By key, then open order: a ring's records come out in ring order even
 * where its stamps go backwards (segments written before the drain kept
 * each ring's time monotonic), because a ring's blocks are opened in order
 * and a block's key starts at the largest ts of the ring's block before it.
 * Pseudo rings (ring >= D9_RINGS_MAX) hold many threads' samples: by ts. */
static inline bool cur_less(const struct heap_ent *a, const struct heap_ent *b)
{
    /* bit operations, not a branch on the key first: which stream wins
     * changes with nearly every record, so branches here mispredict */
    return (a->key < b->key) | ((a->key == b->key) & (a->seq < b->seq));
}

static void heap_push(struct scan *sc, struct cursor *c)
{
    size_t i = sc->nheap++;
    sc->heap[i] = (struct heap_ent){ c->key, c->seq, c };
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cur_less(&sc->heap[i], &sc->heap[p]))
            break;
        struct heap_ent t = sc->heap[p];
        sc->heap[p] = sc->heap[i];
        sc->heap[i] = t;
        i = p;
    }
}

/* Restore the heap order after heap[0]'s current record moved forward
 * (its key is refreshed from the cursor first). */
static inline __attribute__((always_inline)) void heap_sift_top(struct scan *sc)
{
    struct heap_ent *h = sc->heap, top = h[0];
    size_t i = 0, n = sc->nheap;
    top.key = top.c->key;
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= n)
            break;
        size_t m = l + (size_t)(l + 1 < n && cur_less(&h[l + 1], &h[l]));
        if (!cur_less(&h[m], &top))
            break;
        h[i] = h[m];                /* move the smaller child up into the hole */
        i = m;
    }
    h[i] = top;
}

static struct cursor *heap_pop(struct scan *sc)
{
    struct cursor *top = sc->heap[0].c;
    sc->heap[0] = sc->heap[--sc->nheap];
    heap_sift_top(sc);
    return top;
}

static void cursor_free(struct cursor *c)
{
    if (!c)
        return;
    if (c->rd)
        c->rd->refs--;
    free(c->payload);
    free(c);
}

/* Advance to the next record passing the filter. false at the end. */
static inline __attribute__((always_inline)) bool cursor_advance(struct scan *sc, struct cursor *c)
{
    if (c->gap)
        return false;
    for (;;) {
        if (c->off >= c->len)
            return false;
        size_t avail = c->len - c->off;
        const uint8_t *p = c->payload + c->off;
        /* seg_reader_next checked every record of the block (shm_record_check);
         * only the bounds are checked again here, to be safe */
        uint16_t n;
        memcpy(&n, p, sizeof n);
        if (avail < D9_REC_HDR_SIZE || n < D9_REC_HDR_SIZE || n > avail) {
            sc->st->bad_blocks++;
            return false;
        }
        c->off += n;
        const struct d9_rec_hdr *h = (const struct d9_rec_hdr *)p;
        /* from <= ts <= to in one unsigned compare (to >= from, q_scan_open) */
        if (!sc->fcopy.by_ring && h->ts - sc->fcopy.from > sc->fcopy.to - sc->fcopy.from)
            continue;
        if (h->type >= 32 ? !sc->tbig : !((sc->tmask >> h->type) & 1u))
            continue;
        c->cur = h;
        /* a ring's records keep ring order; the collector's pseudo rings
         * (perf samples, maps: ring >= D9_RINGS_MAX) merge by their stamps */
        if (h->ts > c->key || c->ring >= D9_RINGS_MAX)
            c->key = h->ts;
        c->cur_len = (size_t)n;
        return true;
    }
}

static void thread_name(struct scan *sc, struct cursor *c)
{
    idx_read_thread_name(q_store_idx(sc->s), c->rd->process_id, c->ring, c->generation, c->thread,
                    sizeof c->thread);
}

/* Open block q (a row of the index); pushes a cursor when it has a
 * matching record. Returns 0 or -ENOMEM. */
static int heap_reserve(struct scan *sc)
{
    if (sc->nheap < sc->capheap)
        return 0;
    size_t nc = sc->capheap ? sc->capheap * 2 : 16;
    struct heap_ent *n = realloc(sc->heap, nc * sizeof *n);
    if (!n)
        return -ENOMEM;
    sc->heap = n;
    sc->capheap = nc;
    return 0;
}

/* Block q could not be read: with f->gaps, a cursor that delivers it once,
 * as a gap of its ring, at its first time within the window (the index's
 * times: the block itself is not trusted). */
static int push_gap(struct scan *sc, const struct idx_read_block *q)
{
    if (!sc->f->gaps || q->ring >= D9_RINGS_MAX)
        return 0;
    struct cursor *c = calloc(1, sizeof *c);
    if (!c || heap_reserve(sc) < 0) {
        free(c);
        return -ENOMEM;
    }
    c->gap = true;
    c->key = q->t_first < sc->f->from ? sc->f->from : q->t_first;
    c->gap_hdr.ts = c->key;
    c->cur = &c->gap_hdr;
    c->seq = sc->next_seq++;
    c->t_last = q->t_last;
    c->tid = q->tid;
    c->ring = q->ring;
    c->generation = q->generation;
    c->src = (struct q_rec_src){
        .process_id = q->process_id, .pid = q->pid, .comm = "", .tid = q->tid, .ring = q->ring,
        .generation = q->generation, .thread = "", .segment_id = q->segment_id,
        .gap_from = q->t_first, .gap_to = q->t_last,
    };
    heap_push(sc, c);
    return 0;
}

static int open_block(struct scan *sc, const struct idx_read_block *q)
{
    uint64_t seg_id = q->segment_id, offset = q->offset;
    struct rd_entry *rd = rd_get(sc, seg_id, q->path, q->process_id, q->pid, q->comm);
    if (!rd)
        return push_gap(sc, q);
    struct seg_block b;
    int rc = seg_reader_seek(rd->r, offset);
    if (rc == 0)
        rc = seg_reader_next(rd->r, &b);
    if (rc <= 0 || b.h.kind != SEG_BLK_DATA || b.offset != offset) {
        sc->st->bad_blocks++;
        const char *why = rc < 0 ? seg_reader_error(rd->r) : NULL;
        struct q_skip_note note = { sc->prog, q_store_dir(sc->s), q->path };
        q_store_skip_note(&note, offset, why ? why : rc < 0 ? "corrupt" : rc == 0 ?
                          "past the end" : "not a data block");
        return push_gap(sc, q);
    }
    sc->st->blocks++;
    sc->st->lost += b.h.lost;
    struct cursor *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    /* the records stay while the blocks overlapping this one are read: take
     * the reader's unpack buffer (packed blocks), else copy */
    c->payload = seg_reader_take_records(rd->r, &b);
    if (!c->payload) {
        c->payload = malloc(b.records_len ? b.records_len : 1);
        if (!c->payload) {
            free(c);
            return -ENOMEM;
        }
        memcpy(c->payload, b.records, b.records_len);
    }
    c->len = b.records_len;
    c->rd = rd;
    rd->refs++;
    c->tid = b.h.tid;
    c->ring = b.h.ring;
    c->generation = b.h.generation;
    c->seq = sc->next_seq++;
    c->t_last = b.h.t_last;
    for (size_t i = 0; c->ring < D9_RINGS_MAX && i < sc->nheap; i++) {  /* the ring's earlier block */
        const struct cursor *o = sc->heap[i].c;
        if (o->src.process_id == rd->process_id && o->ring == c->ring &&
            o->generation == c->generation && o->t_last > c->key)
            c->key = o->t_last;
    }
    if (!cursor_advance(sc, c)) {
        cursor_free(c);
        return 0;
    }
    thread_name(sc, c);
    c->src = (struct q_rec_src){
        .process_id = rd->process_id,
        .pid = rd->pid,
        .uid = seg_reader_header(rd->r)->uid,
        .comm = rd->comm,
        .tid = c->tid,
        .ring = c->ring,
        .generation = c->generation,
        .thread = c->thread,
        .segment_id = rd->segment_id,
        .meta = &rd->meta,
    };
    if (heap_reserve(sc) < 0) {
        cursor_free(c);
        return -ENOMEM;
    }
    heap_push(sc, c);
    return 0;
}

int q_scan_open(struct q_store *s, const struct q_filter *f,
                        struct q_scan_stats *st, const char *prog, struct q_scan_it **out)
{
    *out = NULL;
    struct scan *sc = calloc(1, sizeof *sc);
    if (!sc)
        return -ENOMEM;
    sc->s = s;
    sc->fcopy = *f;
    sc->f = &sc->fcopy;
    sc->st = st ? st : &sc->own_st;
    memset(sc->st, 0, sizeof *sc->st);
    sc->prog = prog ? prog : "d9";
    sc->tmask = f->types ? f->types : UINT32_MAX;
    sc->tbig = !f->types;
    if (!f->by_ring && f->to < f->from) {   /* an empty window: nothing passes */
        sc->tmask = 0;
        sc->tbig = false;
    }
    struct idx_read_window w = { .from = f->from, .to = f->to, .pid = f->pid, .tid = f->tid,
                                 .by_ring = f->by_ring, .ring = f->ring };
    int rc = idx_read_blocks_window_open(q_store_idx(s), &w, &sc->q);
    if (rc < 0) {
        free(sc);
        return rc == -ENOMEM ? rc : -EIO;
    }
    sc->have_row = (sc->q_rc = idx_read_blocks_window_next(sc->q, &sc->row)) == 1;
    *out = (struct q_scan_it *)sc;
    return 0;
}

/* The thread's cancellation test (q_scan_set_cancel), consulted every
 * Q_SCAN_CANCEL_BLOCKS blocks opened. */
#define Q_SCAN_CANCEL_BLOCKS 8u
static _Thread_local bool (*cancel_fn)(void *arg);
static _Thread_local void *cancel_arg;
static _Thread_local unsigned cancel_blocks;
static _Thread_local uint64_t thread_records;     /* q_scan_thread_records */
static _Thread_local bool cancel_paused;          /* q_scan_pause_cancel */

void q_scan_pause_cancel(bool pause)
{
    cancel_paused = pause;
}

bool q_scan_cancelled(void)
{
    return cancel_fn && cancel_fn(cancel_arg);
}

uint64_t q_scan_thread_records(void)
{
    return thread_records;
}

void q_scan_set_cancel(bool (*fn)(void *arg), void *arg)
{
    cancel_fn = fn;
    cancel_arg = arg;
    cancel_blocks = 0;
    cancel_paused = false;
}

/* The next record's cursor (its cur, cur_len and src; a gap's cur is not a
 * record), NULL at the end with *rc 0 or -errno. It stays at heap[0] until
 * the next call. */
static inline __attribute__((always_inline)) struct cursor *scan_step(struct scan *sc, int *rc)
{
    *rc = 0;
    if (sc->pending) {
        /* the record delivered last is heap[0]'s: advance that cursor in
         * place (one sift instead of a pop and a push) */
        sc->pending = NULL;
        if (cursor_advance(sc, sc->heap[0].c))
            heap_sift_top(sc);
        else
            cursor_free(heap_pop(sc));
    }
    /* open every block that may hold a record not later than the heap's
     * head; in ring order only, one block at a time (the heap holds at most
     * one cursor, so it never merges) */
    while (sc->have_row && (sc->nheap == 0 || (!sc->f->ring_order_only &&
                                               sc->row.t_first <= sc->heap[0].c->cur->ts))) {
        if (cancel_fn && !cancel_paused && cancel_blocks++ % Q_SCAN_CANCEL_BLOCKS == 0 &&
            cancel_fn(cancel_arg)) {
            *rc = -ECANCELED;
            return NULL;
        }
        int ret = open_block(sc, &sc->row);
        if (ret < 0) {
            *rc = ret;
            return NULL;
        }
        sc->have_row = (sc->q_rc = idx_read_blocks_window_next(sc->q, &sc->row)) == 1;
    }
    if (!sc->have_row && sc->q_rc != 0) {
        *rc = -EIO;
        return NULL;
    }
    if (sc->nheap == 0)
        return NULL;
    struct cursor *c = sc->heap[0].c;
    sc->pending = c;                /* stays at heap[0] until the next call */
    if (!c->gap) {
        sc->st->records++;
        thread_records++;
        if (c->cur->ts > sc->st->t_last)
            sc->st->t_last = c->cur->ts;
    }
    return c;
}

int q_scan_next(struct q_scan_it *it, struct q_rec_src *src,
                        const struct d9_rec_hdr **rec, size_t *len)
{
    int rc;
    struct cursor *c = scan_step((struct scan *)it, &rc);
    if (!c)
        return rc;
    *src = c->src;
    *rec = c->gap ? NULL : c->cur;
    *len = c->gap ? 0 : c->cur_len;
    return 1;
}

int q_scan_step(struct q_scan_it *it, const struct q_rec_src **src,
                const struct d9_rec_hdr **rec, size_t *len)
{
    int rc;
    struct cursor *c = scan_step((struct scan *)it, &rc);
    if (!c)
        return rc;
    *src = &c->src;
    *rec = c->gap ? NULL : c->cur;
    *len = c->gap ? 0 : c->cur_len;
    return 1;
}

void q_scan_close(struct q_scan_it *it)
{
    struct scan *sc = (struct scan *)it;
    if (!sc)
        return;
    while (sc->nheap > 0)
        cursor_free(heap_pop(sc));
    free(sc->heap);
    for (size_t i = 0; i < sc->nrd; i++)
        rd_free(sc->rd[i]);
    free(sc->rd);
    idx_read_blocks_window_close(sc->q);
    free(sc);
}

int q_scan(struct q_store *s, const struct q_filter *f, q_rec_fn fn, void *arg,
                   struct q_scan_stats *st, const char *prog)
{
    struct q_scan_it *it;
    int ret = q_scan_open(s, f, st, prog, &it);
    if (ret < 0)
        return ret;
    struct scan *sc = (struct scan *)it;
    struct cursor *c;
    /* the cursor's own src, not a copy per record (valid during fn only) */
    while ((c = scan_step(sc, &ret)) != NULL) {
        ret = c->gap ? fn(arg, &c->src, NULL, 0) : fn(arg, &c->src, c->cur, c->cur_len);
        if (ret != 0)
            break;
    }
    q_scan_close(it);
    return ret;
}
