/*
 * rollup.c — a segment's aggregates: accumulate, encode, decode (format
 * and definitions: rollup.h).
 *
 * Accumulator: open-addressing tables keyed by (bucket, runtime, worker,
 * loc) for polls, (bucket, runtime, worker) for workers, (bucket, schema,
 * field) for custom-event fields, and (entry, bin) for the histograms'
 * non-empty bins (entry: a poll entry, or a delay or field entry tagged
 * RU_TAG_*); a small per-thread state (open polls, an open park) found once
 * per block; the schemas' field types from META blocks. Memory grows with
 * the keys and bins in use, and with one 24-byte event per wake and
 * poll_start, kept per thread: the wake->poll pairing needs them in time
 * order, and blocks of different threads overlap in time in file order (at
 * the end of the segment the threads' lists, each in time order, are
 * merged with a heap of their heads).
 * Must never: read past a record (records come from seg_reader, already
 * checked; lengths are checked again here), or accept stored bytes that
 * rollup_decode has not checked.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/crc32c.h"
#include "collector/store/rollup.h"
#include "collector/store/store_hash.h"
#include "collector/store/seg_reader.h"
#include "shm/d9_abi.h"
#include "shm/meta.h"

#define RU_MAGIC         "D9RU"
#define RU_TABLE_MIN     64u         /* slots of a table at first use (a power of two) */
#define RU_EV_KEEP       4096u       /* a thread's event array shrinks only above this */
#define RU_EMPTY         UINT32_MAX
#define RU_TAG_DELAY     (1u << 30)  /* a bin's entry: a delay entry's index | this */
#define RU_TAG_FIELD     (2u << 30)  /* a field entry's index | this */
#define RU_INDEX_MAX     (1u << 30)  /* entries of one kind: below the tags */
#define RU_OPEN_MIN      16u         /* slots of a thread's open-task table at first use */
#define RU_PCACHE        8u          /* a thread's last poll entries, by loc (a power of two) */
#define RU_DENSE_MAX     2048u       /* polls_only: entries whose bins are counted in an array
                                        (ROLLUP_BINS counts, 4 KiB each: 8 MiB at most) */

/* ---- accumulator --------------------------------------------------------------- */

struct pkey {
    uint64_t bucket;
    uint16_t runtime, worker;
    uint32_t loc;
};

struct pent {
    struct pkey k;
    uint64_t count, unfinished, sum, max;
    uint32_t last_bin, last_slot;   /* its last histogram bin and that bin's slot in bt,
                                       valid while bt_moves == last_moves (poll_bin_cached;
                                       UINT32_MAX: none yet) */
    uint32_t last_moves;
};

struct wkey {
    uint64_t bucket;
    uint16_t runtime, worker;
};

struct went {
    struct wkey k;
    uint64_t polls, busy, parks, parked, waits, wait_sum, wait_max;
    uint64_t cpu_first, cpu_last;
    int has_cpu;
};

struct bent {
    uint32_t entry, bin;
    uint64_t n;
};

struct dent {                       /* wake->poll delays of (bucket, runtime) */
    uint64_t bucket, count, sum, max;
    uint16_t runtime;
};

struct fent {                       /* a numeric field of (bucket, schema, field) */
    uint64_t bucket, count;
    uint32_t schema;
    uint16_t field;
    uint8_t type;
    union rollup_val sum, min, max;
};

struct wev {                        /* a wake or a poll start, for the pairing */
    uint64_t ts, task;
    uint32_t seq;                   /* file order: ties in time keep it */
    uint16_t runtime;
    uint8_t wake;
};

struct ru_schema {                  /* a schema's field types (META blocks) */
    uint32_t id;
    uint16_t n;
    uint8_t type[D9_SCHEMA_MAX_FIELDS];
    uint8_t cached;                 /* ent[] holds the field entries of bucket (on_custom) */
    uint64_t bucket;
    uint32_t ent[D9_SCHEMA_MAX_FIELDS];     /* RU_EMPTY: not looked up yet */
};

struct open_poll {
    uint64_t task, ts;
    uint32_t entry;                 /* poll entry of its start; RU_EMPTY: not counted (rollup_only) */
    uint16_t runtime, worker;
    uint64_t from;                  /* its busy time starts here (its start, or the end of a
                                       poll that covered it so far) */
    uint64_t pend;                  /* busy time of finished polls inside it, not counted yet */
    uint32_t down;                  /* dead: a slot at or above the nearest live one below it
                                       (every slot strictly between is dead); RU_EMPTY: none */
    uint8_t dead;                   /* removed (its end came, or it was dropped) */
    uint64_t sync;                  /* the thread's barrier count when pend and from were last
                                       brought up to date (open_sync) */
};

/* An end of open poll pos at ts: every poll open above pos then has its
 * pend cleared and its from raised to ts, done lazily (open_sync). */
struct barrier {
    uint32_t pos;
    uint64_t seq, ts;
};

struct thr {
    uint32_t ring, generation;
    uint32_t nopen, ntop, capopen;  /* live polls; slots in use, dead ones included */
    struct open_poll *open;         /* in start order; a removed poll's slot is marked dead,
                                       not closed up (that was O(n) per removal: quadratic
                                       with many polls left open by lost ends), the top slot
                                       is always live, and the slots are compacted once
                                       most are dead */
    struct oslot {                  /* task -> its open poll's index in open[] (a task has
                                       at most one: a second start replaces the first), so
                                       a poll start or end finds it in O(1) however many
                                       polls a lost end left open */
        uint64_t task;
        uint32_t idx;               /* RU_EMPTY: a free slot */
    } *omap;
    uint32_t omap_cap;              /* a power of two, at least 2 x nopen; 0 before use */
    struct pcache {                 /* the poll entry of a key last used by this thread, in
                                       slot loc % RU_PCACHE (entries never move: an index
                                       stays valid), so most starts skip poll_entry's hash */
        struct pkey k;
        uint32_t entry;             /* RU_EMPTY: nothing cached */
    } pc[RU_PCACHE];
    int parked;
    uint64_t park_ts;
    uint16_t park_runtime, park_worker;
    struct wev *ev;                 /* its wakes and poll starts, in time order */
    uint32_t nev, capev;
    uint64_t open_steps;            /* open[] slots let go, walked or moved (rollup_open_steps) */
    struct barrier *bar;            /* the ends not applied yet to the polls above them: pos
                                       and seq ascending, ts not descending (a later end at a
                                       lower pos covers an earlier one above it) */
    uint32_t nbar, capbar;
    uint64_t bseq;                  /* barriers made so far */
};

/* Pending wakes by task (q_wake.h's table, one process): open addressing,
 * an entry leaves when a poll start takes it (pend_take), so the table
 * holds only the wakes pending at once and stays small (in cache); grows
 * at half full. */
struct pend {
    uint64_t task, ts;
    uint16_t runtime;
    uint8_t used;
};

struct pends {
    struct pend *p;
    uint32_t cap, n;
};

/* One open-addressing table of entry indices (RU_EMPTY = free slot). */
struct slots {
    uint32_t *s;
    uint32_t cap;                   /* a power of two; 0 before first use */
};

struct rollup {
    struct pent *p;
    uint32_t np, capp;
    struct slots ps;
    struct went *w;
    uint32_t nw, capw, lastw;       /* lastw: the last hit (worker_entry) */
    struct slots ws;
    struct bent *bt;                /* open addressing, entry RU_EMPTY = free; inline keys */
    uint32_t nb, capbt;
    uint32_t bt_moves;              /* times bt was rebuilt (its slots moved) */
    struct thr *t;
    uint32_t nt, capt;
    struct waent {                  /* counts per (bucket, kind, runtime, id): wakes, events */
        uint64_t bucket, n;
        uint16_t kind, runtime;
        uint32_t id;
    } *wa;
    uint32_t nwa, capwa, lastwa;    /* lastwa: the last hit (records come in time order) */
    struct dent *d;
    uint32_t nd, capd, lastd;
    struct fent *f;
    uint32_t nf, capf;
    struct slots fs;
    uint32_t nev;                   /* events of all threads: the next one's seq */
    uint32_t nwake;                 /* wakes among the kept ones (0 with no pending wake:
                                       wakes_pair has nothing to pair) */
    struct pends pm;                /* wakes pending across wakes_pair passes */
    uint64_t paired_to;             /* live feeding: events before this are paired and
                                       freed; one fed later is out of order (-ESTALE) */
    uint64_t ev_max;                /* the latest event fed */
    struct ru_schema *sc;
    uint32_t nsc, capsc, lastsc;
    struct rollup_range only[ROLLUP_ONLY_MAX];  /* rollup_only; nonly 0 = everything */
    unsigned nonly;
    int polls_only;                 /* rollup_polls_only: poll entries and their bins only */
    uint64_t **dense;               /* polls_only: dense[entry], its bins' counts by bin (NULL:
                                       none yet); entries from RU_DENSE_MAX on use bt */
    uint32_t capdense;
    uint64_t ndense;                /* bins with a count, in all dense arrays */
};

int rollup_new(struct rollup **out)
{
    if (!out)
        return -EINVAL;
    *out = NULL;
    *out = calloc(1, sizeof **out);
    return *out ? 0 : -ENOMEM;
}

void rollup_free(struct rollup *r)
{
    if (!r)
        return;
    free(r->p);
    free(r->ps.s);
    free(r->w);
    free(r->ws.s);
    free(r->bt);
    for (uint32_t i = 0; i < r->nt; i++) {
        free(r->t[i].open);
        free(r->t[i].omap);
        free(r->t[i].ev);
        free(r->t[i].bar);
    }
    free(r->t);
    free(r->wa);
    free(r->d);
    free(r->f);
    free(r->fs.s);
    free(r->sc);
    free(r->pm.p);
    for (uint32_t i = 0; i < r->capdense; i++)
        free(r->dense[i]);
    free(r->dense);
    free(r);
}

int rollup_only(struct rollup *r, const struct rollup_range *ranges, unsigned n)
{
    if (!r || n > ROLLUP_ONLY_MAX || (n && !ranges))
        return -EINVAL;
    for (unsigned i = 0; i < n; i++) {
        if (ranges[i].from > ranges[i].to)
            return -EINVAL;
        r->only[i] = ranges[i];
    }
    r->nonly = n;
    return 0;
}

int rollup_polls_only(struct rollup *r)
{
    if (!r || r->nt || r->np)
        return -EINVAL;             /* before the first block: an entry's bins in one place */
    r->polls_only = 1;
    return 0;
}

/* Whether what happens at ts is counted (rollup_only). */
static int counted(const struct rollup *r, uint64_t ts)
{
    if (!r->nonly)
        return 1;
    for (unsigned i = 0; i < r->nonly; i++)
        if (ts >= r->only[i].from && ts <= r->only[i].to)
            return 1;
    return 0;
}

static int grow(void **arr, uint32_t *cap, uint32_t n, size_t size)
{
    if (n < *cap)
        return 0;
    uint32_t c = *cap ? *cap * 2 : RU_TABLE_MIN;
    if (c <= *cap)
        return -ENOMEM;
    void *a = realloc(*arr, (size_t)c * size);
    if (!a)
        return -ENOMEM;
    *arr = a;
    *cap = c;
    return 0;
}

static uint64_t hash_pkey(const struct pkey *k)
{
    return store_hash64(k->bucket ^ store_hash64(((uint64_t)k->runtime << 48 | (uint64_t)k->worker << 32 | k->loc) ^
                               STORE_HASH_GOLDEN));
}

static uint64_t hash_wkey(const struct wkey *k)
{
    return store_hash64(k->bucket ^ store_hash64(((uint64_t)k->runtime << 16 | k->worker) ^ STORE_HASH_GOLDEN));
}

static uint64_t hash_bkey(uint32_t entry, uint32_t bin)
{
    return store_hash64((uint64_t)entry << 32 | bin);
}

/* Rebuild a table at twice the size (hashes recomputed by fn). */
static int rehash_grow(struct slots *t, uint32_t n, const struct rollup *r,
                       uint64_t (*h)(const struct rollup *r, uint32_t i))
{
    uint32_t cap = t->cap ? t->cap * 2 : RU_TABLE_MIN;
    if (cap <= t->cap)
        return -ENOMEM;
    uint32_t *s = malloc((size_t)cap * sizeof *s);
    if (!s)
        return -ENOMEM;
    memset(s, 0xff, (size_t)cap * sizeof *s);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = (uint32_t)h(r, i) & (cap - 1);
        while (s[j] != RU_EMPTY)
            j = (j + 1) & (cap - 1);
        s[j] = i;
    }
    free(t->s);
    t->s = s;
    t->cap = cap;
    return 0;
}

/* The same when the table is half full (the check inline: it runs per record). */
static inline int rehash(struct slots *t, uint32_t n, const struct rollup *r,
                         uint64_t (*h)(const struct rollup *r, uint32_t i))
{
    return t->cap && n < t->cap / 2 ? 0 : rehash_grow(t, n, r, h);
}

static uint64_t h_p(const struct rollup *r, uint32_t i) { return hash_pkey(&r->p[i].k); }
static uint64_t h_w(const struct rollup *r, uint32_t i) { return hash_wkey(&r->w[i].k); }

static uint64_t hash_fkey(uint64_t bucket, uint32_t schema, uint16_t field)
{
    return store_hash64(bucket ^ store_hash64(((uint64_t)schema << 16 | field) ^ STORE_HASH_GOLDEN));
}

static uint64_t h_f(const struct rollup *r, uint32_t i)
{
    return hash_fkey(r->f[i].bucket, r->f[i].schema, r->f[i].field);
}

static int poll_entry(struct rollup *r, const struct pkey *k, uint32_t *out)
{
    int e = rehash(&r->ps, r->np, r, h_p);
    if (e < 0)
        return e;
    uint32_t j = (uint32_t)hash_pkey(k) & (r->ps.cap - 1);
    for (; r->ps.s[j] != RU_EMPTY; j = (j + 1) & (r->ps.cap - 1)) {
        const struct pkey *o = &r->p[r->ps.s[j]].k;
        if (o->bucket == k->bucket && o->runtime == k->runtime && o->worker == k->worker &&
            o->loc == k->loc) {
            *out = r->ps.s[j];
            return 0;
        }
    }
    if ((e = grow((void **)&r->p, &r->capp, r->np, sizeof *r->p)) < 0)
        return e;
    r->p[r->np] = (struct pent){ .k = *k, .last_moves = UINT32_MAX };
    r->ps.s[j] = r->np;
    *out = r->np++;
    return 0;
}

static int worker_entry(struct rollup *r, uint64_t bucket, uint16_t runtime, uint16_t worker,
                        struct went **out)
{
    if (r->lastw < r->nw) {         /* a block is one thread's records: mostly one worker */
        struct went *o = &r->w[r->lastw];
        if (o->k.bucket == bucket && o->k.runtime == runtime && o->k.worker == worker) {
            *out = o;
            return 0;
        }
    }
    int e = rehash(&r->ws, r->nw, r, h_w);
    if (e < 0)
        return e;
    struct wkey k = { bucket, runtime, worker };
    uint32_t j = (uint32_t)hash_wkey(&k) & (r->ws.cap - 1);
    for (; r->ws.s[j] != RU_EMPTY; j = (j + 1) & (r->ws.cap - 1)) {
        struct went *o = &r->w[r->ws.s[j]];
        if (o->k.bucket == bucket && o->k.runtime == runtime && o->k.worker == worker) {
            r->lastw = r->ws.s[j];
            *out = o;
            return 0;
        }
    }
    if ((e = grow((void **)&r->w, &r->capw, r->nw, sizeof *r->w)) < 0)
        return e;
    r->w[r->nw] = (struct went){ .k = k };
    r->ws.s[j] = r->nw;
    r->lastw = r->nw;
    *out = &r->w[r->nw++];
    return 0;
}

/* Grow the bin table to twice its size when it is half full. */
static int bins_grow(struct rollup *r)
{
    if (r->capbt && r->nb < r->capbt / 2)
        return 0;
    uint32_t cap = r->capbt ? r->capbt * 2 : RU_TABLE_MIN;
    if (cap <= r->capbt)
        return -ENOMEM;
    struct bent *t = malloc((size_t)cap * sizeof *t);
    if (!t)
        return -ENOMEM;
    for (uint32_t i = 0; i < cap; i++)
        t[i].entry = RU_EMPTY;
    for (uint32_t i = 0; i < r->capbt; i++) {
        if (r->bt[i].entry == RU_EMPTY)
            continue;
        uint32_t j = (uint32_t)hash_bkey(r->bt[i].entry, r->bt[i].bin) & (cap - 1);
        while (t[j].entry != RU_EMPTY)
            j = (j + 1) & (cap - 1);
        t[j] = r->bt[i];
    }
    free(r->bt);
    r->bt = t;
    r->capbt = cap;
    r->bt_moves++;
    return 0;
}

/* One more in bin of entry; *slot: where it is in bt (until bt moves). */
static int bin_add_at(struct rollup *r, uint32_t entry, uint32_t bin, uint32_t *slot)
{
    int e = bins_grow(r);
    if (e < 0)
        return e;
    uint32_t j = (uint32_t)hash_bkey(entry, bin) & (r->capbt - 1);
    for (; r->bt[j].entry != RU_EMPTY; j = (j + 1) & (r->capbt - 1)) {
        if (r->bt[j].entry == entry && r->bt[j].bin == bin) {
            r->bt[j].n++;
            *slot = j;
            return 0;
        }
    }
    r->bt[j] = (struct bent){ entry, bin, 1 };
    r->nb++;
    *slot = j;
    return 0;
}

static int bin_add(struct rollup *r, uint32_t entry, uint32_t bin)
{
    uint32_t slot;
    return bin_add_at(r, entry, bin, &slot);
}

/* The same for a poll entry: a poll's durations mostly fall in the bin of
 * the one before, whose slot it remembers (no hash, no probe). */
static int poll_bin_cached(struct rollup *r, uint32_t entry, uint32_t bin)
{
    struct pent *p = &r->p[entry];
    if (p->last_moves == r->bt_moves && p->last_bin == bin) {
        r->bt[p->last_slot].n++;
        return 0;
    }
    uint32_t slot;
    int e = bin_add_at(r, entry, bin, &slot);
    if (e == 0) {
        p->last_bin = bin;
        p->last_slot = slot;
        p->last_moves = r->bt_moves;
    }
    return e;
}

uint32_t rollup_bin(uint64_t v)
{
    if (v < ROLLUP_SUB)
        return (uint32_t)v;
    uint32_t e = 63u - (uint32_t)__builtin_clzll(v);
    return (e - ROLLUP_SUB_BITS + 1u) * ROLLUP_SUB +
           (uint32_t)((v >> (e - ROLLUP_SUB_BITS)) - ROLLUP_SUB);
}

/* The middle of bin b. */
static uint64_t bin_mid(uint32_t b)
{
    if (b < ROLLUP_SUB)
        return b;
    uint32_t g = b / ROLLUP_SUB, m = b % ROLLUP_SUB;
    uint32_t shift = g - 1u;                    /* e - ROLLUP_SUB_BITS */
    uint64_t lo = (uint64_t)(ROLLUP_SUB + m) << shift;
    return lo + ((1ull << shift) >> 1);
}

static struct thr *thread_of(struct rollup *r, uint32_t ring, uint32_t generation)
{
    for (uint32_t i = 0; i < r->nt; i++)
        if (r->t[i].ring == ring && r->t[i].generation == generation)
            return &r->t[i];
    if (grow((void **)&r->t, &r->capt, r->nt, sizeof *r->t) < 0)
        return NULL;
    struct thr *t = &r->t[r->nt++];
    memset(t, 0, sizeof *t);
    t->ring = ring;
    t->generation = generation;
    for (uint32_t i = 0; i < RU_PCACHE; i++)
        t->pc[i].entry = RU_EMPTY;
    return t;
}

/* The slot of task in t's open-task table: its own, or the free one
 * where it would go (the table is never full: at most half). */
static inline struct oslot *omap_slot(const struct thr *t, uint64_t task)
{
    uint32_t mask = t->omap_cap - 1, j = (uint32_t)store_hash64(task) & mask;
    while (t->omap[j].idx != RU_EMPTY && t->omap[j].task != task)
        j = (j + 1) & mask;
    return &t->omap[j];
}

/* The index in open[] of task's open poll, or RU_EMPTY. */
static inline uint32_t open_find(const struct thr *t, uint64_t task)
{
    return t->omap_cap ? omap_slot(t, task)->idx : RU_EMPTY;
}

/* Room for one more open poll in the table (grown at half full). */
static int omap_reserve(struct thr *t)
{
    if (t->omap_cap && (t->nopen + 1) * 2 <= t->omap_cap)
        return 0;
    uint32_t cap = t->omap_cap ? t->omap_cap * 2 : RU_OPEN_MIN;
    struct oslot *m = cap > t->omap_cap ? malloc((size_t)cap * sizeof *m) : NULL;
    if (!m)
        return -ENOMEM;
    for (uint32_t j = 0; j < cap; j++)
        m[j].idx = RU_EMPTY;
    free(t->omap);
    t->omap = m;
    t->omap_cap = cap;
    for (uint32_t i = 0; i < t->ntop; i++)
        if (!t->open[i].dead)
            *omap_slot(t, t->open[i].task) = (struct oslot){ t->open[i].task, i };
    return 0;
}

/* Delete x (linear probing's deletion: entries after it that probed past
 * it move back, no tombstones). */
static void omap_del(struct thr *t, struct oslot *x)
{
    uint32_t mask = t->omap_cap - 1, i = (uint32_t)(x - t->omap), j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (t->omap[j].idx == RU_EMPTY)
            break;
        uint32_t k = (uint32_t)store_hash64(t->omap[j].task) & mask;
        if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
            continue;
        t->omap[i] = t->omap[j];
        i = j;
    }
    t->omap[i].idx = RU_EMPTY;
}

/* A poll's duration bin. With polls_only (a reader's edges: few entries,
 * each updated by every poll of its location) in the entry's own array of
 * counts: one add where the shared bin table's probe missed the cache on
 * nearly every poll; the encoder reads the array in bin order. */
static int poll_bin_add(struct rollup *r, uint32_t entry, uint32_t bin)
{
    if (!r->polls_only || entry >= RU_DENSE_MAX)
        return poll_bin_cached(r, entry, bin);
    if (entry >= r->capdense) {
        uint32_t c = r->capdense ? r->capdense * 2 : 64;
        while (c <= entry)
            c *= 2;
        uint64_t **d = realloc(r->dense, (size_t)c * sizeof *d);
        if (!d)
            return -ENOMEM;
        memset(d + r->capdense, 0, (size_t)(c - r->capdense) * sizeof *d);
        r->dense = d;
        r->capdense = c;
    }
    uint64_t *h = r->dense[entry];
    if (!h && !(h = r->dense[entry] = calloc(ROLLUP_BINS, sizeof *h)))
        return -ENOMEM;
    if (h[bin]++ == 0)
        r->ndense++;
    return 0;
}

/* Remove open poll i of t, the others kept in start order where they are:
 * its slot is marked dead (the dead slots at the top are let go), so no
 * other index moves. */
static void open_remove(struct thr *t, uint32_t i)
{
    omap_del(t, omap_slot(t, t->open[i].task));
    t->open[i].dead = 1;
    t->open[i].down = i ? i - 1 : RU_EMPTY;
    t->nopen--;
    t->open_steps++;
    while (t->ntop && t->open[t->ntop - 1].dead) {
        t->ntop--;
        t->open_steps++;
    }
}

/* The live open poll nearest below slot i of t, or RU_EMPTY: the dead
 * slots' down links, each shortened to the answer on the way back (path
 * compression), so a run of dead slots is walked about once. */
static uint32_t open_below(struct thr *t, uint32_t i)
{
    uint32_t k = i ? i - 1 : RU_EMPTY;
    while (k != RU_EMPTY && t->open[k].dead) {
        k = t->open[k].down;
        t->open_steps++;
    }
    for (uint32_t j = i ? i - 1 : RU_EMPTY; j != RU_EMPTY && t->open[j].dead;) {
        uint32_t next = t->open[j].down;
        t->open[j].down = k;
        j = next;
    }
    return k;
}

/* The first live open poll of t (its oldest), or RU_EMPTY. */
static uint32_t open_first(const struct thr *t)
{
    for (uint32_t i = 0; i < t->ntop; i++)
        if (!t->open[i].dead)
            return i;
    return RU_EMPTY;
}

/* Bring open poll j of t up to date with the ends since its last sync: the
 * latest barrier below it (the stack's last with pos < j) covers all of
 * them (a later one, and ts not descending). */
static void open_sync(struct thr *t, uint32_t j)
{
    struct open_poll *o = &t->open[j];
    if (o->sync == t->bseq)
        return;
    uint32_t lo = 0, hi = t->nbar;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->bar[mid].pos < j)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && t->bar[lo - 1].seq > o->sync) {
        o->pend = 0;
        if (o->from < t->bar[lo - 1].ts)
            o->from = t->bar[lo - 1].ts;
    }
    o->sync = t->bseq;
}

/* Every open poll of t brought up to date; no barrier left. */
static void open_sync_all(struct thr *t)
{
    if (!t->nbar)
        return;
    for (uint32_t j = 0; j < t->ntop; j++)
        if (!t->open[j].dead)
            open_sync(t, j);
    t->open_steps += t->ntop;
    t->nbar = 0;
}

/* q_pair's rule for an end of open poll i at ts: the polls open above it
 * lose their pend and start their busy time at ts at the latest. A barrier,
 * applied when each is next used (open_sync): O(1) amortized where a loop
 * over them made ends of polls deep in the stack quadratic. A clock that
 * goes back (ts below the last barrier's) applies the others first. */
static int open_barrier(struct thr *t, uint32_t i, uint64_t ts)
{
    if (t->nbar && ts < t->bar[t->nbar - 1].ts)
        open_sync_all(t);
    while (t->nbar && t->bar[t->nbar - 1].pos >= i) {
        t->nbar--;
        t->open_steps++;
    }
    if (t->nbar == t->capbar) {
        uint32_t c = t->capbar ? t->capbar * 2 : 8;
        struct barrier *b = realloc(t->bar, (size_t)c * sizeof *b);
        if (!b)
            return -ENOMEM;
        t->bar = b;
        t->capbar = c;
    }
    t->bar[t->nbar++] = (struct barrier){ i, ++t->bseq, ts };
    return 0;
}

/* Close up the dead slots of t once they are more than half of them: the
 * live ones move down in order and their table entries follow. Between two
 * calls no index is held (a poll start's or end's first step). O(slots),
 * paid for by the removals that made them dead. */
static void open_compact(struct thr *t)
{
    if (t->ntop < RU_OPEN_MIN || t->ntop - t->nopen <= t->nopen)
        return;
    open_sync_all(t);                   /* the barriers' positions move */
    uint32_t n = 0;
    t->open_steps += t->ntop;
    for (uint32_t i = 0; i < t->ntop; i++) {
        if (t->open[i].dead)
            continue;
        if (n != i)
            t->open[n] = t->open[i];
        omap_slot(t, t->open[n].task)->idx = n;
        n++;
    }
    t->ntop = n;
}

/* Busy time d (of a poll that ended, or the pend of one that left without
 * an end) goes to the open poll below index i; with none below, into the
 * busy_ns of the bucket of op's start (op: the poll it came from), when
 * that start is counted (rollup_only). */
static int busy_add(struct rollup *r, struct thr *t, uint32_t i, const struct open_poll *op,
                    uint64_t d)
{
    uint32_t b = open_below(t, i);
    if (b != RU_EMPTY) {
        open_sync(t, b);
        t->open[b].pend += d;
        return 0;
    }
    if (d == 0 || r->polls_only || !counted(r, op->ts))
        return 0;
    struct went *w;
    int e = worker_entry(r, op->ts - op->ts % ROLLUP_BUCKET_NS, op->runtime, op->worker, &w);
    if (e == 0)
        w->busy += d;
    return e;
}

/* Open poll i of t leaves without an end: unfinished; its pend counts. */
static int open_drop(struct rollup *r, struct thr *t, uint32_t i)
{
    open_sync(t, i);
    struct open_poll op = t->open[i];
    if (op.entry != RU_EMPTY)
        r->p[op.entry].unfinished++;
    open_remove(t, i);
    return busy_add(r, t, i, &op, op.pend);
}

static int on_poll_start(struct rollup *r, struct thr *t, const struct d9_rec_poll_start *s)
{
    /* a second start of a task open on this thread: the first one's end was
     * dropped (q_pair's rule: the new start replaces it) */
    open_compact(t);
    uint32_t i = open_find(t, s->task);
    if (i != RU_EMPTY) {
        int e = open_drop(r, t, i);
        if (e < 0)
            return e;
    }
    uint32_t ent = RU_EMPTY;
    if (counted(r, s->h.ts)) {
        /* polls_only: one entry per location, its workers merged (worker 0) */
        struct pkey k = { s->h.ts - s->h.ts % ROLLUP_BUCKET_NS, s->runtime,
                          r->polls_only ? 0 : s->worker, s->loc };
        struct went *w = NULL;
        struct pcache *c = &t->pc[s->loc & (RU_PCACHE - 1)];
        int e = 0;
        if (c->entry != RU_EMPTY && c->k.bucket == k.bucket && c->k.loc == k.loc &&
            c->k.runtime == k.runtime && c->k.worker == k.worker) {
            ent = c->entry;
        } else if ((e = poll_entry(r, &k, &ent)) == 0) {
            c->k = k;
            c->entry = ent;
        }
        if (e == 0 && !r->polls_only)
            e = worker_entry(r, k.bucket, s->runtime, s->worker, &w);
        if (e < 0)
            return e;
        r->p[ent].count++;
        if (w)
            w->polls++;
    }
    int oe = omap_reserve(t);
    if (oe < 0)
        return oe;
    if (t->ntop == t->capopen) {
        uint32_t c = t->capopen ? t->capopen * 2 : 4;
        struct open_poll *o = c > t->capopen ? realloc(t->open, (size_t)c * sizeof *o) : NULL;
        if (!o)
            return -ENOMEM;
        t->open = o;
        t->capopen = c;
    }
    t->open[t->ntop] = (struct open_poll){ s->task, s->h.ts, ent, s->runtime, s->worker,
                                           s->h.ts, 0, RU_EMPTY, 0, t->bseq };
    *omap_slot(t, s->task) = (struct oslot){ s->task, t->ntop };
    t->ntop++;
    t->nopen++;
    return 0;
}

/* q_pair's rule: an end closes the latest open start of its task on the
 * thread, and only that one (polls opened inside it stay open: their own
 * ends may come later; their time up to this end is this poll's). Busy
 * time is the union of the finished polls (q_sched.h's definition). */
static int on_poll_end(struct rollup *r, struct thr *t, const struct d9_rec_poll_end *pe)
{
    open_compact(t);
    uint32_t i = open_find(t, pe->task);
    if (i == RU_EMPTY)
        return 0;                               /* its start is not in this segment */
    open_sync(t, i);
    struct open_poll op = t->open[i];
    uint64_t ts = pe->h.ts;
    if (i + 1 < t->ntop) {
        int e = open_barrier(t, i, ts);
        if (e < 0)
            return e;
    }
    open_remove(t, i);
    int e = busy_add(r, t, i, &op, ts >= op.from ? ts - op.from : 0);
    if (e < 0 || op.entry == RU_EMPTY)
        return e;                               /* started outside rollup_only's ranges */
    uint64_t d = ts >= op.ts ? ts - op.ts : 0;
    struct pent *p = &r->p[op.entry];
    p->sum += d;
    if (d > p->max)
        p->max = d;
    return poll_bin_add(r, op.entry, rollup_bin(d));
}

static int on_worker(struct rollup *r, struct thr *t, const struct d9_rec_worker *wr, int park)
{
    uint64_t bucket = wr->h.ts - wr->h.ts % ROLLUP_BUCKET_NS;
    struct went *w;
    int e, here = counted(r, wr->h.ts);
    if (here && (e = worker_entry(r, bucket, wr->runtime, wr->worker, &w)) < 0)
        return e;
    if (here && !(wr->flags & D9_WORKER_UNSAMPLED)) {
        if (!w->has_cpu) {
            w->cpu_first = wr->cpu_ns;
            w->has_cpu = 1;
        }
        if (wr->cpu_ns > w->cpu_last)
            w->cpu_last = wr->cpu_ns;
        w->waits++;
        w->wait_sum += wr->sched_wait_ns;
        if (wr->sched_wait_ns > w->wait_max)
            w->wait_max = wr->sched_wait_ns;
    }
    if (park) {
        if (here)
            w->parks++;
        t->parked = 1;
        t->park_ts = wr->h.ts;
        t->park_runtime = wr->runtime;
        t->park_worker = wr->worker;
    } else if (t->parked) {
        t->parked = 0;
        if (!counted(r, t->park_ts))
            return 0;
        uint64_t pb = t->park_ts - t->park_ts % ROLLUP_BUCKET_NS;
        if ((e = worker_entry(r, pb, t->park_runtime, t->park_worker, &w)) < 0)
            return e;
        w->parked += wr->h.ts >= t->park_ts ? wr->h.ts - t->park_ts : 0;
    }
    return 0;
}

static int same_count(const struct waent *c, uint64_t bucket, uint16_t kind, uint16_t runtime,
                      uint32_t id)
{
    return c->bucket == bucket && c->kind == kind && c->runtime == runtime && c->id == id;
}

/* One more of (kind, runtime, id) at ts. Keys are few (per second: the
 * runtimes and schemas seen) and records come in time order: the last hit
 * first, then a linear search. */
static int count_add(struct rollup *r, uint64_t ts, uint16_t kind, uint16_t runtime, uint32_t id)
{
    if (!counted(r, ts))
        return 0;
    uint64_t bucket = ts - ts % ROLLUP_BUCKET_NS;
    if (r->lastwa < r->nwa && same_count(&r->wa[r->lastwa], bucket, kind, runtime, id)) {
        r->wa[r->lastwa].n++;
        return 0;
    }
    for (uint32_t i = r->nwa; i-- > 0;) {
        if (same_count(&r->wa[i], bucket, kind, runtime, id)) {
            r->wa[i].n++;
            r->lastwa = i;
            return 0;
        }
    }
    int e = grow((void **)&r->wa, &r->capwa, r->nwa, sizeof *r->wa);
    if (e < 0)
        return e;
    r->wa[r->nwa] = (struct waent){ bucket, 1, kind, runtime, id };
    r->lastwa = r->nwa++;
    return 0;
}

/* A wake or a poll start of thread t, kept for wakes_pair. */
static int event_add(struct rollup *r, struct thr *t, uint64_t ts, uint64_t task,
                     uint16_t runtime, int wake)
{
    if (r->nev == UINT32_MAX)
        return -ENOMEM;
    if (ts < r->paired_to)
        return -ESTALE;             /* paired already without it: read the file back */
    if (ts > r->ev_max)
        r->ev_max = ts;
    int e = grow((void **)&t->ev, &t->capev, t->nev, sizeof *t->ev);
    if (e < 0)
        return e;
    t->ev[t->nev++] = (struct wev){ ts, task, r->nev++, runtime, (uint8_t)(wake != 0) };
    r->nwake += wake != 0;
    return 0;
}

static int delay_add(struct rollup *r, uint64_t wake_ts, uint16_t runtime, uint64_t d)
{
    uint64_t bucket = wake_ts - wake_ts % ROLLUP_BUCKET_NS;
    uint32_t i = r->lastd;
    if (i >= r->nd || r->d[i].bucket != bucket || r->d[i].runtime != runtime) {
        for (i = 0; i < r->nd; i++)
            if (r->d[i].bucket == bucket && r->d[i].runtime == runtime)
                break;
        if (i == r->nd) {
            int e = r->nd < RU_INDEX_MAX ? grow((void **)&r->d, &r->capd, r->nd, sizeof *r->d)
                                         : -ENOMEM;
            if (e < 0)
                return e;
            r->d[r->nd++] = (struct dent){ .bucket = bucket, .runtime = runtime };
        }
        r->lastd = i;
    }
    struct dent *x = &r->d[i];
    x->count++;
    x->sum += d;
    if (d > x->max)
        x->max = d;
    return bin_add(r, RU_TAG_DELAY | i, rollup_bin(d));
}

static struct pend *pend_slot(struct pends *m, uint64_t task)
{
    uint32_t j = (uint32_t)store_hash64(task) & (m->cap - 1);
    while (m->p[j].used && m->p[j].task != task)
        j = (j + 1) & (m->cap - 1);
    return &m->p[j];
}

/* Remove the entry at x (used), shifting back the entries after it that
 * probed past it (linear probing's deletion: no tombstones). */
static void pend_take(struct pends *m, struct pend *x)
{
    uint32_t mask = m->cap - 1, i = (uint32_t)(x - m->p), j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->p[j].used)
            break;
        uint32_t k = (uint32_t)store_hash64(m->p[j].task) & mask;   /* its home slot */
        if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
            continue;                   /* home in (i, j]: it stays */
        m->p[i] = m->p[j];
        i = j;
    }
    m->p[i].used = 0;
    m->n--;
}

static int pend_put(struct pends *m, const struct wev *v)
{
    if ((m->n + 1) * 2 > m->cap) {
        uint32_t cap = m->cap ? m->cap * 2 : RU_TABLE_MIN;
        struct pend *old = m->p;
        uint32_t ocap = m->cap;
        if (cap <= m->cap || !(m->p = calloc(cap, sizeof *m->p))) {
            m->p = old;
            return -ENOMEM;
        }
        m->cap = cap;
        for (uint32_t i = 0; i < ocap; i++)
            if (old[i].used)
                *pend_slot(m, old[i].task) = old[i];
        free(old);
    }
    struct pend *x = pend_slot(m, v->task);
    if (!x->used)
        m->n++;
    *x = (struct pend){ v->task, v->ts, v->runtime, 1 };
    return 0;
}

/* A thread's head in wakes_pair's heap: its next event's order key, kept
 * in the heap itself so that a comparison reads no event. */
struct whead {
    uint64_t ts;
    uint32_t seq, thr;
};

static int wh_before(const struct whead *a, const struct whead *b)
{
    return a->ts != b->ts ? a->ts < b->ts : a->seq < b->seq;
}

/* Sift heap entry k down (a min-heap of nh heads by wh_before). */
static void wh_down(struct whead *h, uint32_t nh, uint32_t k)
{
    struct whead x = h[k];
    for (;;) {
        uint32_t l = 2 * k + 1, s;
        if (l >= nh)
            break;
        s = l + 1 < nh && wh_before(&h[l + 1], &h[l]) ? l + 1 : l;
        if (!wh_before(&h[s], &x))
            break;
        h[k] = h[s];
        k = s;
    }
    h[k] = x;
}

/* Each thread's kept events from its first not paired yet (at[]) on, moved
 * to the front; a large array left mostly empty shrinks. */
static void events_compact(struct rollup *r, const uint32_t *at)
{
    for (uint32_t i = 0; i < r->nt; i++) {
        struct thr *t = &r->t[i];
        uint32_t k = at ? at[i] : t->nev, left = t->nev - k;
        if (k && left)
            memmove(t->ev, t->ev + k, (size_t)left * sizeof *t->ev);
        t->nev = left;
        if (t->capev > RU_EV_KEEP && left < t->capev / 8) {
            uint32_t cap = t->capev / 2;
            struct wev *ev = realloc(t->ev, (size_t)cap * sizeof *ev);
            if (ev) {
                t->ev = ev;
                t->capev = cap;
            }
        }
    }
}

/* q_wake.h's rule over the wakes and poll starts in time order (ties in
 * file order), for those before upto (UINT64_MAX: all, the segment's end):
 * each thread's events are in time order already, so they are merged with
 * a heap of the threads' heads; a poll start takes the pending wake of its
 * task, a wake replaces it. Keys (ts, seq) are unique, so the merged order
 * is that of a sort, whatever the heap's shape. A pass stops at the first
 * head at or after upto, which is where a merge of everything would be
 * then (every event before upto was fed: event_add refuses one later), so
 * passes give the bytes of one merge at the end. The events paired are
 * freed and the pending wakes kept for the next pass. Nothing to pair (no
 * wake kept or pending): no merge. */
static int wakes_pair_upto(struct rollup *r, uint64_t upto)
{
    int rc = 0;
    uint32_t *at = NULL;
    if (r->nwake == 0 && r->pm.n == 0) {
        /* the poll starts before upto find no wake: drop them */
        at = calloc((size_t)r->nt + 1, sizeof *at);
        if (!at)
            return -ENOMEM;
        for (uint32_t i = 0; i < r->nt; i++)
            while (at[i] < r->t[i].nev && r->t[i].ev[at[i]].ts < upto)
                at[i]++;
        goto out;
    }
    struct whead *heap = malloc(((size_t)r->nt + 1) * sizeof *heap);
    at = calloc((size_t)r->nt + 1, sizeof *at);
    uint32_t nh = 0;
    rc = heap && at ? 0 : -ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < r->nt; i++)
        if (r->t[i].nev && r->t[i].ev[0].ts < upto)
            heap[nh++] = (struct whead){ r->t[i].ev[0].ts, r->t[i].ev[0].seq, i };
    for (uint32_t k = nh / 2; rc == 0 && k-- > 0;)
        wh_down(heap, nh, k);
    while (rc == 0 && nh > 0) {
        uint32_t ti = heap[0].thr;
        struct thr *t = &r->t[ti];
        const struct wev *v = &t->ev[at[ti]++];
        if (v->wake) {
            rc = pend_put(&r->pm, v);
            r->nwake--;
        } else if (r->pm.n) {
            struct pend *x = pend_slot(&r->pm, v->task);
            if (x->used) {
                uint64_t wts = x->ts;
                uint16_t rt = x->runtime;
                pend_take(&r->pm, x);
                if (counted(r, wts))
                    rc = delay_add(r, wts, rt, v->ts >= wts ? v->ts - wts : 0);  /* a hostile clock */
            }
        }
        if (at[ti] == t->nev || t->ev[at[ti]].ts >= upto)
            heap[0] = heap[--nh];
        else
            heap[0] = (struct whead){ t->ev[at[ti]].ts, t->ev[at[ti]].seq, ti };
        if (nh > 1)
            wh_down(heap, nh, 0);
    }
    free(heap);
out:
    if (rc == 0) {
        events_compact(r, at);
        if (upto > r->paired_to)
            r->paired_to = upto;
    }
    free(at);
    return rc;
}

/* The segment's end: every event paired, the pending wakes dropped (never
 * paired across segments). */
static int wakes_pair(struct rollup *r)
{
    int rc = wakes_pair_upto(r, UINT64_MAX);
    events_compact(r, NULL);
    r->nwake = 0;
    free(r->pm.p);
    r->pm = (struct pends){ 0 };
    return rc;
}

/* A META block's schemas (seg_reader checked the entries). A schema id
 * defined again takes the new types. */
static int on_meta(struct rollup *r, const uint8_t *entries, size_t len)
{
    size_t off = 0;
    struct shm_meta_entry m;
    while (shm_meta_next(entries, len, &off, &m) == 1) {
        if (m.kind != D9_META_SCHEMA)
            continue;
        uint32_t i;
        for (i = 0; i < r->nsc && r->sc[i].id != m.id; i++)
            ;
        if (i == r->nsc) {
            int e = grow((void **)&r->sc, &r->capsc, r->nsc, sizeof *r->sc);
            if (e < 0)
                return e;
            r->nsc++;
        }
        struct ru_schema *sc = &r->sc[i];
        memset(sc, 0, sizeof *sc);
        sc->id = m.id;
        sc->n = m.nfields < D9_SCHEMA_MAX_FIELDS ? m.nfields : D9_SCHEMA_MAX_FIELDS;
        for (uint16_t k = 0; k < sc->n; k++)
            sc->type[k] = m.fields[k].type;
    }
    return 0;
}

static struct ru_schema *schema_of(struct rollup *r, uint32_t id)
{
    if (r->lastsc < r->nsc && r->sc[r->lastsc].id == id)
        return &r->sc[r->lastsc];
    for (uint32_t i = 0; i < r->nsc; i++) {
        if (r->sc[i].id == id) {
            r->lastsc = i;
            return &r->sc[i];
        }
    }
    return NULL;
}

static int field_entry(struct rollup *r, uint64_t bucket, uint32_t schema, uint16_t field,
                       uint8_t type, uint32_t *out)
{
    int e = rehash(&r->fs, r->nf, r, h_f);
    if (e < 0)
        return e;
    uint32_t j = (uint32_t)hash_fkey(bucket, schema, field) & (r->fs.cap - 1);
    for (; r->fs.s[j] != RU_EMPTY; j = (j + 1) & (r->fs.cap - 1)) {
        const struct fent *o = &r->f[r->fs.s[j]];
        if (o->bucket == bucket && o->schema == schema && o->field == field) {
            if (o->type != type)
                return 1;           /* the schema changed its type within the second */
            *out = r->fs.s[j];
            return 0;
        }
    }
    if (r->nf >= RU_INDEX_MAX || (e = grow((void **)&r->f, &r->capf, r->nf, sizeof *r->f)) < 0)
        return e < 0 ? e : -ENOMEM;
    r->f[r->nf] = (struct fent){ .bucket = bucket, .schema = schema, .field = field, .type = type };
    r->fs.s[j] = r->nf;
    *out = r->nf++;
    return 0;
}

/* One value (raw: the field's 8 bytes) of a numeric field (rollup.h);
 * *cache: its entry in this bucket once looked up (RU_EMPTY before). */
static int field_add(struct rollup *r, uint64_t bucket, uint32_t schema, uint16_t field,
                     uint8_t type, uint64_t raw, uint32_t *cache)
{
    union rollup_val v;
    uint64_t mag;
    v.u = raw;
    switch (type) {
    case D9_FT_BOOL:
        v.u = raw != 0;
        mag = v.u;
        break;
    case D9_FT_U64:
        mag = v.u;
        break;
    case D9_FT_I64:
        mag = v.i < 0 ? 0 - v.u : v.u;
        break;
    case D9_FT_F64:
        if (isnan(v.f))
            return 0;
        mag = fabs(v.f) >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)fabs(v.f);
        break;
    default:
        return 0;
    }
    uint32_t i = *cache;
    if (i == RU_EMPTY) {
        int e = field_entry(r, bucket, schema, field, type, &i);
        if (e != 0)
            return e < 0 ? e : 0;
        *cache = i;
    }
    struct fent *x = &r->f[i];
    int lo, hi;
    if (type == D9_FT_I64) {
        lo = v.i < x->min.i;
        hi = v.i > x->max.i;
    } else if (type == D9_FT_F64) {
        lo = v.f < x->min.f;
        hi = v.f > x->max.f;
    } else {
        lo = v.u < x->min.u;
        hi = v.u > x->max.u;
    }
    if (x->count == 0 || lo)
        x->min = v;
    if (x->count == 0 || hi)
        x->max = v;
    if (type == D9_FT_F64)
        x->sum.f += v.f;
    else
        x->sum.u += v.u;
    x->count++;
    return bin_add(r, RU_TAG_FIELD | i, rollup_bin(mag));
}

/* A custom event's numeric fields, walked as q_decode.c walks them: the
 * fields before a malformed part count. */
static int on_custom(struct rollup *r, const struct d9_rec_custom *c, size_t len)
{
    struct ru_schema *sc = schema_of(r, c->schema);
    if (!sc || !counted(r, c->h.ts))
        return 0;
    uint64_t bucket = c->h.ts - c->h.ts % ROLLUP_BUCKET_NS;
    if (!sc->cached || sc->bucket != bucket) {  /* the field entries of another second */
        memset(sc->ent, 0xff, sizeof sc->ent);
        sc->bucket = bucket;
        sc->cached = 1;
    }
    const uint8_t *q = (const uint8_t *)c + sizeof *c;
    size_t avail = c->payload_len <= len - sizeof *c ? c->payload_len : len - sizeof *c;
    size_t off = 0;
    for (uint16_t i = 0; i < sc->n; i++) {
        if (sc->type[i] == D9_FT_STR) {
            uint32_t n;
            if (avail - off < sizeof n)
                return 0;
            memcpy(&n, q + off, sizeof n);
            off += sizeof n;
            if (n > avail - off)
                return 0;
            off += n;
            size_t pad = (D9_REC_ALIGN - (off % D9_REC_ALIGN)) % D9_REC_ALIGN;
            off = pad <= avail - off ? off + pad : avail;
            continue;
        }
        uint64_t raw;
        if (avail - off < sizeof raw)
            return 0;
        memcpy(&raw, q + off, sizeof raw);
        off += sizeof raw;
        if (sc->type[i] < D9_FT_U64 || sc->type[i] > D9_FT_BOOL)
            return 0;                   /* q_decode stops at an unknown type */
        int e = field_add(r, bucket, c->schema, i, sc->type[i], raw, &sc->ent[i]);
        if (e < 0)
            return e;
    }
    return 0;
}

/* One record of thread t (its length checked by the caller: at least a
 * header, inside the run). */
static inline int feed_rec(struct rollup *r, struct thr *t, const struct d9_rec_hdr *h)
{
    int e = 0;
    if (r->polls_only && h->type != D9_REC_POLL_START && h->type != D9_REC_POLL_END)
        return 0;
    switch (h->type) {
    case D9_REC_POLL_START:
        if (h->len >= sizeof(struct d9_rec_poll_start)) {
            const struct d9_rec_poll_start *ps = (const void *)h;
            e = on_poll_start(r, t, ps);
            if (e == 0 && !r->polls_only)
                e = event_add(r, t, h->ts, ps->task, ps->runtime, 0);
        }
        break;
    case D9_REC_POLL_END:
        if (h->len >= sizeof(struct d9_rec_poll_end))
            e = on_poll_end(r, t, (const struct d9_rec_poll_end *)(const void *)h);
        break;
    case D9_REC_WAKE:
        if (h->len >= sizeof(struct d9_rec_wake)) {
            const struct d9_rec_wake *wk = (const void *)h;
            e = count_add(r, h->ts, ROLLUP_COUNT_WAKE, wk->runtime, 0);
            if (e == 0)
                e = event_add(r, t, h->ts, wk->wakee, wk->runtime, 1);
        }
        break;
    case D9_REC_CUSTOM:
        if (h->len >= sizeof(struct d9_rec_custom)) {
            const struct d9_rec_custom *cu = (const void *)h;
            e = count_add(r, h->ts, ROLLUP_COUNT_EVENT, 0, cu->schema);
            if (e == 0)
                e = on_custom(r, cu, h->len);
        }
        break;
    case D9_REC_WORKER_PARK:
    case D9_REC_WORKER_UNPARK:
        if (h->len >= sizeof(struct d9_rec_worker))
            e = on_worker(r, t, (const struct d9_rec_worker *)(const void *)h,
                          h->type == D9_REC_WORKER_PARK);
        break;
    default:
        break;
    }
    return e;
}

/* The records of one run of thread t, walked by their lengths (each checked
 * against the run's end and the alignment; each kind's size in feed_rec). */
static int feed_run(struct rollup *r, struct thr *t, const uint8_t *records, size_t len)
{
    for (size_t off = 0; off < len;) {
        const struct d9_rec_hdr *h = (const void *)(records + off);
        if (len - off < D9_REC_HDR_SIZE || h->len < D9_REC_HDR_SIZE ||
            h->len % D9_REC_ALIGN != 0 || h->len > len - off)
            return -EBADMSG;
        int e = feed_rec(r, t, h);
        if (e < 0)
            return e;
        off += h->len;
    }
    return 0;
}

int rollup_feed_block(struct rollup *r, const struct seg_block *b)
{
    if (!r || !b)
        return -EINVAL;
    if (b->h.kind == SEG_BLK_META)
        return on_meta(r, b->payload, b->h.len);
    if (b->h.kind != SEG_BLK_DATA)
        return 0;
    struct thr *t = thread_of(r, b->h.ring, b->h.generation);
    if (!t)
        return -ENOMEM;
    /* The reader checked every record of the block (seg_reader_next):
     * walked here by their lengths, bounds still checked, without checking
     * each record again. */
    if (!b->records)
        return 0;
    return feed_run(r, t, b->records, b->records_len);
}

int rollup_feed_gap(struct rollup *r, uint32_t ring, uint32_t generation)
{
    if (!r)
        return -EINVAL;
    struct thr *t = thread_of(r, ring, generation);
    if (!t)
        return -ENOMEM;
    t->parked = 0;                              /* its unpark is unknown: no parked time */
    while (t->nopen) {                          /* top down: each pend goes to the one below */
        int e = open_drop(r, t, t->ntop - 1);  /* the top slot is live */
        if (e < 0)
            return e;
    }
    return 0;
}

int rollup_feed_meta(struct rollup *r, const uint8_t *entries, size_t len)
{
    if (!r || (len && !entries))
        return -EINVAL;
    return on_meta(r, entries, len);
}

int rollup_feed_records(struct rollup *r, uint32_t ring, uint32_t generation,
                        const uint8_t *records, size_t len)
{
    if (!r || (len && !records))
        return -EINVAL;
    if (len == 0)
        return 0;
    struct thr *t = thread_of(r, ring, generation);
    if (!t)
        return -ENOMEM;
    int e = feed_run(r, t, records, len);
    /* live: pair what no later record can come before (ROLLUP_PAIR_LAG_NS
     * behind the latest), a step at a time, so the events kept stay few */
    if (e == 0 && r->ev_max >= ROLLUP_PAIR_LAG_NS + ROLLUP_PAIR_STEP_NS &&
        r->ev_max - ROLLUP_PAIR_LAG_NS >= r->paired_to + ROLLUP_PAIR_STEP_NS)
        e = wakes_pair_upto(r, r->ev_max - ROLLUP_PAIR_LAG_NS);
    return e;
}

uint64_t rollup_open_steps(const struct rollup *r)
{
    uint64_t n = 0;
    for (uint32_t i = 0; r && i < r->nt; i++)
        n += r->t[i].open_steps;
    return n;
}

uint64_t rollup_events_kept(const struct rollup *r)
{
    uint64_t n = 0;
    for (uint32_t i = 0; r && i < r->nt; i++)
        n += r->t[i].nev;
    return n;
}

/* ---- encode -------------------------------------------------------------------- */

static void put16(uint8_t **p, uint16_t v) { memcpy(*p, &v, 2); *p += 2; }
static void put32(uint8_t **p, uint32_t v) { memcpy(*p, &v, 4); *p += 4; }
static void put64(uint8_t **p, uint64_t v) { memcpy(*p, &v, 8); *p += 8; }

static int cmp_pkey(const struct pkey *a, const struct pkey *b)
{
    if (a->bucket != b->bucket)
        return a->bucket < b->bucket ? -1 : 1;
    if (a->runtime != b->runtime)
        return a->runtime < b->runtime ? -1 : 1;
    if (a->worker != b->worker)
        return a->worker < b->worker ? -1 : 1;
    if (a->loc != b->loc)
        return a->loc < b->loc ? -1 : 1;
    return 0;
}

static int cmp_wkey(const struct wkey *a, const struct wkey *b)
{
    if (a->bucket != b->bucket)
        return a->bucket < b->bucket ? -1 : 1;
    if (a->runtime != b->runtime)
        return a->runtime < b->runtime ? -1 : 1;
    if (a->worker != b->worker)
        return a->worker < b->worker ? -1 : 1;
    return 0;
}

static const struct rollup *g_sort;     /* qsort has no argument: set only inside rollup_encode */

static int by_pkey(const void *a, const void *b)
{
    return cmp_pkey(&g_sort->p[*(const uint32_t *)a].k, &g_sort->p[*(const uint32_t *)b].k);
}

static int by_waent(const void *x, const void *y)
{
    const struct waent *a = x, *b = y;
    if (a->bucket != b->bucket)
        return a->bucket < b->bucket ? -1 : 1;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->runtime != b->runtime)
        return a->runtime < b->runtime ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static int by_went(const void *a, const void *b)
{
    return cmp_wkey(&((const struct went *)a)->k, &((const struct went *)b)->k);
}

/* A bin's entry as a dense key in (entry) order: the poll entries, then
 * the delay entries, then the field entries (the tags' order). */
static uint32_t bent_key(const struct rollup *r, uint32_t entry)
{
    if (entry & RU_TAG_FIELD)
        return r->np + r->nd + (entry & (RU_INDEX_MAX - 1));
    if (entry & RU_TAG_DELAY)
        return r->np + (entry & (RU_INDEX_MAX - 1));
    return entry;
}

/* The bin table's nb bins into out, sorted by (entry, bin): two stable
 * counting passes (by bin, then by entry; the pairs are unique), linear
 * where a comparison sort of every bin was most of an edge scan's encode.
 * 0 or -ENOMEM. */
static int bins_sort(const struct rollup *r, struct bent *out)
{
    uint32_t nkeys = r->np + r->nd + r->nf;
    struct bent *tmp = malloc(((size_t)r->nb + 1) * sizeof *tmp);
    uint32_t *cnt = calloc((size_t)(nkeys > ROLLUP_BINS ? nkeys : ROLLUP_BINS) + 1, sizeof *cnt);
    if (!tmp || !cnt) {
        free(tmp), free(cnt);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < r->capbt; i++)
        if (r->bt[i].entry != RU_EMPTY)
            cnt[r->bt[i].bin + 1]++;
    for (uint32_t b = 0; b < ROLLUP_BINS; b++)
        cnt[b + 1] += cnt[b];
    for (uint32_t i = 0; i < r->capbt; i++)
        if (r->bt[i].entry != RU_EMPTY)
            tmp[cnt[r->bt[i].bin]++] = r->bt[i];
    memset(cnt, 0, ((size_t)nkeys + 1) * sizeof *cnt);
    for (uint32_t i = 0; i < r->nb; i++)
        cnt[bent_key(r, tmp[i].entry) + 1]++;
    for (uint32_t k = 0; k < nkeys; k++)
        cnt[k + 1] += cnt[k];
    for (uint32_t i = 0; i < r->nb; i++)
        out[cnt[bent_key(r, tmp[i].entry)]++] = tmp[i];
    free(tmp), free(cnt);
    return 0;
}

static int cmp_dkey(uint64_t ab, uint16_t ar, uint64_t bb, uint16_t br)
{
    if (ab != bb)
        return ab < bb ? -1 : 1;
    return ar < br ? -1 : ar > br;
}

static int cmp_fkey(uint64_t ab, uint32_t as, uint16_t af, uint64_t bb, uint32_t bs, uint16_t bf)
{
    if (ab != bb)
        return ab < bb ? -1 : 1;
    if (as != bs)
        return as < bs ? -1 : 1;
    return af < bf ? -1 : af > bf;
}

static int by_dent(const void *a, const void *b)
{
    const struct dent *x = &g_sort->d[*(const uint32_t *)a], *y = &g_sort->d[*(const uint32_t *)b];
    return cmp_dkey(x->bucket, x->runtime, y->bucket, y->runtime);
}

static int by_fent(const void *a, const void *b)
{
    const struct fent *x = &g_sort->f[*(const uint32_t *)a], *y = &g_sort->f[*(const uint32_t *)b];
    return cmp_fkey(x->bucket, x->schema, x->field, y->bucket, y->schema, y->field);
}

/* The first of the sorted bins whose entry is at least entry. */
static uint32_t bins_from(const struct bent *bins, uint32_t nb, uint32_t entry)
{
    uint32_t lo = 0, hi = nb;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (bins[mid].entry < entry)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void put_bins(uint8_t **p, const struct bent *bins, uint32_t nb, uint32_t entry)
{
    for (uint32_t j = bins_from(bins, nb, entry); j < nb && bins[j].entry == entry; j++) {
        put32(p, bins[j].bin);
        put32(p, bins[j].n > UINT32_MAX ? UINT32_MAX : (uint32_t)bins[j].n);
    }
}

static uint32_t bins_of(const struct bent *bins, uint32_t nb, uint32_t entry)
{
    uint32_t j = bins_from(bins, nb, entry), k = j;
    while (k < nb && bins[k].entry == entry)
        k++;
    return k - j;
}

int rollup_encode(const struct rollup *r, uint8_t **out, size_t *len)
{
    if (!r || !out || !len)
        return -EINVAL;
    *out = NULL;
    *len = 0;
    size_t n = ROLLUP_HDR_SIZE + (size_t)r->np * ROLLUP_POLL_SIZE +
               ((size_t)r->nb + r->ndense) * ROLLUP_BIN_SIZE +
               (size_t)r->nw * ROLLUP_WORKER_SIZE + (size_t)r->nwa * ROLLUP_COUNT_SIZE +
               (size_t)r->nd * ROLLUP_DELAY_SIZE + (size_t)r->nf * ROLLUP_FIELD_SIZE;
    uint8_t *buf = malloc(n);
    uint32_t *order = malloc(((size_t)r->np + 1) * sizeof *order);
    uint32_t *first = malloc(((size_t)r->np + 1) * sizeof *first);
    struct bent *bins = malloc(((size_t)r->nb + 1) * sizeof *bins);
    struct went *ws = malloc(((size_t)r->nw + 1) * sizeof *ws);
    uint64_t *still_open = calloc((size_t)r->np + 1, sizeof *still_open);
    struct waent *was = malloc(((size_t)r->nwa + 1) * sizeof *was);
    uint32_t *dord = malloc(((size_t)r->nd + 1) * sizeof *dord);
    uint32_t *ford = malloc(((size_t)r->nf + 1) * sizeof *ford);
    if (!buf || !order || !first || !bins || !ws || !still_open || !was || !dord || !ford) {
        free(buf), free(order), free(first), free(bins), free(ws), free(still_open), free(was);
        free(dord), free(ford);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < r->nd; i++)
        dord[i] = i;
    for (uint32_t i = 0; i < r->nf; i++)
        ford[i] = i;
    if (r->nwa)
        memcpy(was, r->wa, (size_t)r->nwa * sizeof *was);
    qsort(was, r->nwa, sizeof *was, by_waent);
    /* polls open at the end of the segment are unfinished */
    for (uint32_t i = 0; i < r->nt; i++)
        for (uint32_t j = 0; j < r->t[i].ntop; j++)
            if (!r->t[i].open[j].dead && r->t[i].open[j].entry != RU_EMPTY)
                still_open[r->t[i].open[j].entry]++;
    for (uint32_t i = 0; i < r->np; i++)
        order[i] = i;
    g_sort = r;
    qsort(order, r->np, sizeof *order, by_pkey);
    qsort(dord, r->nd, sizeof *dord, by_dent);
    qsort(ford, r->nf, sizeof *ford, by_fent);
    g_sort = NULL;
    if (bins_sort(r, bins) < 0) {
        free(buf), free(order), free(first), free(bins), free(ws), free(still_open), free(was);
        free(dord), free(ford);
        return -ENOMEM;
    }
    /* first[entry] = index of its first bin in bins */
    for (uint32_t i = 0, j = 0; i <= r->np; i++) {
        while (j < r->nb && bins[j].entry < i)
            j++;
        first[i] = j;
    }
    if (r->nw)
        memcpy(ws, r->w, (size_t)r->nw * sizeof *ws);
    qsort(ws, r->nw, sizeof *ws, by_went);

    uint8_t *p = buf;
    memcpy(p, RU_MAGIC, 4);
    p += 4;
    put16(&p, ROLLUP_VERSION);
    put16(&p, 0);
    put32(&p, r->np);
    put32(&p, r->nw);
    put64(&p, ROLLUP_BUCKET_NS);
    put32(&p, 0);                               /* crc, below */
    put32(&p, r->nwa);
    put32(&p, r->nd);
    put32(&p, r->nf);
    for (uint32_t i = 0; i < r->np; i++) {
        const struct pent *e = &r->p[order[i]];
        uint32_t b0 = first[order[i]], b1 = first[order[i] + 1];
        const uint64_t *h = order[i] < r->capdense ? r->dense[order[i]] : NULL;
        uint32_t nh = 0;
        for (uint32_t b = 0; h && b < ROLLUP_BINS; b++)
            nh += h[b] != 0;
        put16(&p, e->k.runtime);
        put16(&p, e->k.worker);
        put32(&p, e->k.loc);
        put64(&p, e->k.bucket);
        put64(&p, e->count);
        put64(&p, e->unfinished + still_open[order[i]]);
        put64(&p, e->sum);
        put64(&p, e->max);
        put32(&p, h ? nh : b1 - b0);        /* an entry's bins are in one of the two */
        put32(&p, 0);
        for (uint32_t b = 0; h && b < ROLLUP_BINS; b++) {
            if (h[b]) {
                put32(&p, b);
                put32(&p, h[b] > UINT32_MAX ? UINT32_MAX : (uint32_t)h[b]);
            }
        }
        for (uint32_t j = b0; j < b1; j++) {
            put32(&p, bins[j].bin);
            put32(&p, bins[j].n > UINT32_MAX ? UINT32_MAX : (uint32_t)bins[j].n);
        }
    }
    for (uint32_t i = 0; i < r->nw; i++) {
        const struct went *w = &ws[i];
        put16(&p, w->k.runtime);
        put16(&p, w->k.worker);
        put32(&p, w->has_cpu ? ROLLUP_WORKER_CPU : 0);
        put64(&p, w->k.bucket);
        put64(&p, w->polls);
        put64(&p, w->busy);
        put64(&p, w->parks);
        put64(&p, w->parked);
        put64(&p, w->waits);
        put64(&p, w->wait_sum);
        put64(&p, w->wait_max);
        put64(&p, w->has_cpu ? w->cpu_first : 0);
        put64(&p, w->has_cpu ? w->cpu_last : 0);
    }
    for (uint32_t i = 0; i < r->nwa; i++) {
        put16(&p, was[i].runtime);
        put16(&p, was[i].kind);
        put32(&p, was[i].id);
        put64(&p, was[i].bucket);
        put64(&p, was[i].n);
    }
    for (uint32_t i = 0; i < r->nd; i++) {
        const struct dent *d = &r->d[dord[i]];
        uint32_t tag = RU_TAG_DELAY | dord[i];
        put16(&p, d->runtime);
        put16(&p, 0);
        put32(&p, bins_of(bins, r->nb, tag));
        put64(&p, d->bucket);
        put64(&p, d->count);
        put64(&p, d->sum);
        put64(&p, d->max);
        put_bins(&p, bins, r->nb, tag);
    }
    for (uint32_t i = 0; i < r->nf; i++) {
        const struct fent *f = &r->f[ford[i]];
        uint32_t tag = RU_TAG_FIELD | ford[i];
        put32(&p, f->schema);
        put16(&p, f->field);
        *p++ = f->type;
        *p++ = 0;
        put64(&p, f->bucket);
        put64(&p, f->count);
        put64(&p, f->sum.u);
        put64(&p, f->min.u);
        put64(&p, f->max.u);
        put32(&p, bins_of(bins, r->nb, tag));
        put32(&p, 0);
        put_bins(&p, bins, r->nb, tag);
    }
    uint32_t crc = crc32c_update(0, buf + ROLLUP_HDR_SIZE, n - ROLLUP_HDR_SIZE);
    memcpy(buf + 24, &crc, 4);
    free(order), free(first), free(bins), free(ws), free(still_open), free(was);
    free(dord), free(ford);
    *out = buf;
    *len = n;
    return 0;
}

/* The end of the segment: the pends of the polls still open count, in the
 * bucket of each thread's oldest open poll (where dropping them top-down
 * would put them). They stay open: rollup_encode counts them unfinished. */
static int pend_flush(struct rollup *r)
{
    for (uint32_t k = 0; k < r->nt; k++) {
        struct thr *t = &r->t[k];
        uint64_t sum = 0;
        open_sync_all(t);
        for (uint32_t i = 0; i < t->ntop; i++) {
            if (t->open[i].dead)
                continue;
            sum += t->open[i].pend;
            t->open[i].pend = 0;
        }
        uint32_t first = open_first(t);
        int e = first != RU_EMPTY ? busy_add(r, t, 0, &t->open[first], sum) : 0;
        if (e < 0)
            return e;
    }
    return 0;
}

int rollup_file(const char *path, uint8_t **out, size_t *len)
{
    return rollup_file_only(path, NULL, 0, NULL, NULL, out, len);
}

int rollup_file_only(const char *path, const struct rollup_range *ranges, unsigned n,
                     rollup_skip_fn skip, void *arg, uint8_t **out, size_t *len)
{
    if (!path || !out || !len)
        return -EINVAL;
    struct seg_reader *sr;
    int e = seg_reader_open(&sr, path, 0);
    if (e < 0)
        return e;
    struct rollup *r;
    if ((e = rollup_new(&r)) < 0 || (e = rollup_only(r, ranges, n)) < 0) {
        rollup_free(r);
        seg_reader_close(sr);
        return e;
    }
    struct seg_block b;
    while ((e = seg_reader_next(sr, &b)) != 0) {
        if (e == -EBADMSG && skip) {
            if (seg_reader_skip(sr, &b) < 0)
                break;                          /* a bad header or a META block */
            const char *m = seg_reader_error(sr);
            skip(arg, b.offset, m ? m : "corrupt");
            e = rollup_feed_gap(r, b.h.ring, b.h.generation);
        } else if (e == 1) {
            e = rollup_feed_block(r, &b);
        }
        if (e < 0)
            break;
    }
    if (e == 0)
        e = pend_flush(r);
    if (e == 0)
        e = wakes_pair(r);
    if (e == 0)
        e = rollup_encode(r, out, len);
    rollup_free(r);
    seg_reader_close(sr);
    return e < 0 ? e : 0;
}

/* ---- a reader's edge scan (q_edge.c) -------------------------------------------- */

int rollup_pending(const struct rollup *r, uint32_t ring, uint32_t generation)
{
    if (!r)
        return 0;
    for (uint32_t k = 0; k < r->nt; k++) {
        const struct thr *t = &r->t[k];
        if (t->ring != ring || t->generation != generation)
            continue;
        if (t->parked && counted(r, t->park_ts))
            return 1;
        for (uint32_t i = 0; i < t->ntop; i++)
            if (!t->open[i].dead && t->open[i].entry != RU_EMPTY)
                return 1;
        return 0;
    }
    return 0;
}

int rollup_finish(struct rollup *r, uint8_t **out, size_t *len)
{
    if (!r || !out || !len)
        return -EINVAL;
    int e = pend_flush(r);
    if (e == 0)
        e = wakes_pair(r);              /* the delays, and the kept events freed */
    return e < 0 ? e : rollup_encode(r, out, len);
}

/* ---- decode -------------------------------------------------------------------- */

static uint16_t get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static int bad(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *why, size_t cap, const char *fmt, ...)
{
    if (why && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, cap, fmt, ap);
        va_end(ap);
    }
    return -EBADMSG;
}

static void read_poll(const uint8_t *q, struct rollup_poll *o)
{
    o->runtime = get16(q);
    o->worker = get16(q + 2);
    o->loc = get32(q + 4);
    o->bucket_ns = get64(q + 8);
    o->count = get64(q + 16);
    o->unfinished = get64(q + 24);
    o->sum_ns = get64(q + 32);
    o->max_ns = get64(q + 40);
    o->nbins = get32(q + 48);
    o->bins = q + ROLLUP_POLL_SIZE;
}

int rollup_worker_at(const struct rollup_view *v, uint32_t i, struct rollup_worker *o)
{
    if (!v || !o || i >= v->nworker)
        return -EINVAL;
    const uint8_t *q = v->buf + v->workers_off + (size_t)i * ROLLUP_WORKER_SIZE;
    o->runtime = get16(q);
    o->worker = get16(q + 2);
    o->flags = get32(q + 4);
    o->bucket_ns = get64(q + 8);
    o->polls = get64(q + 16);
    o->busy_ns = get64(q + 24);
    o->parks = get64(q + 32);
    o->parked_ns = get64(q + 40);
    o->waits = get64(q + 48);
    o->wait_sum_ns = get64(q + 56);
    o->wait_max_ns = get64(q + 64);
    o->cpu_first = get64(q + 72);
    o->cpu_last = get64(q + 80);
    return 0;
}

static void read_delay(const uint8_t *q, struct rollup_delay *o)
{
    o->runtime = get16(q);
    o->nbins = get32(q + 4);
    o->bucket_ns = get64(q + 8);
    o->count = get64(q + 16);
    o->sum_ns = get64(q + 24);
    o->max_ns = get64(q + 32);
    o->bins = q + ROLLUP_DELAY_SIZE;
}

static void read_field(const uint8_t *q, struct rollup_field *o)
{
    o->schema = get32(q);
    o->field = get16(q + 4);
    o->type = q[6];
    o->bucket_ns = get64(q + 8);
    o->count = get64(q + 16);
    o->sum.u = get64(q + 24);
    o->min.u = get64(q + 32);
    o->max.u = get64(q + 40);
    o->nbins = get32(q + 48);
    o->bins = q + ROLLUP_FIELD_SIZE;
}

/* nbins bins at buf + off (inside len): strictly increasing, n > 0, total
 * in *total. 0, or -1 when they are not. */
static int bins_check(const uint8_t *buf, size_t len, size_t off, uint32_t nbins, uint64_t *total)
{
    if (nbins > ROLLUP_BINS || (len - off) / ROLLUP_BIN_SIZE < nbins)
        return -1;
    *total = 0;
    for (uint32_t j = 0; j < nbins; j++) {
        uint32_t bin = get32(buf + off + (size_t)j * ROLLUP_BIN_SIZE);
        uint32_t n = get32(buf + off + (size_t)j * ROLLUP_BIN_SIZE + 4);
        if (bin >= ROLLUP_BINS || n == 0 ||
            (j > 0 && bin <= get32(buf + off + (size_t)(j - 1) * ROLLUP_BIN_SIZE)))
            return -1;
        *total += n;
    }
    return 0;
}

/* The delay and field entries from off to the end of buf. */
static int decode_tail(const uint8_t *buf, size_t len, size_t off, uint32_t nd, uint32_t nf,
                       struct rollup_view *v, char *why, size_t cap)
{
    v->delays_off = off;
    struct rollup_delay pd = { 0 }, d;
    for (uint32_t i = 0; i < nd; i++) {
        uint64_t total;
        if (len - off < ROLLUP_DELAY_SIZE)
            return bad(why, cap, "rollups: delay entry %u runs past the end", i);
        read_delay(buf + off, &d);
        if (get16(buf + off + 2) != 0 || d.bucket_ns % ROLLUP_BUCKET_NS != 0 || d.count == 0 ||
            (i > 0 && cmp_dkey(pd.bucket_ns, pd.runtime, d.bucket_ns, d.runtime) >= 0) ||
            bins_check(buf, len, off + ROLLUP_DELAY_SIZE, d.nbins, &total) < 0 ||
            total != d.count)
            return bad(why, cap, "rollups: delay entry %u is malformed or out of order", i);
        off += ROLLUP_DELAY_SIZE + (size_t)d.nbins * ROLLUP_BIN_SIZE;
        pd = d;
    }
    v->fields_off = off;
    struct rollup_field pf = { 0 }, f;
    for (uint32_t i = 0; i < nf; i++) {
        uint64_t total;
        if (len - off < ROLLUP_FIELD_SIZE)
            return bad(why, cap, "rollups: field entry %u runs past the end", i);
        read_field(buf + off, &f);
        int order = f.type == D9_FT_I64   ? f.min.i <= f.max.i
                    : f.type == D9_FT_F64 ? f.min.f <= f.max.f
                    : f.type == D9_FT_U64 ? f.min.u <= f.max.u
                    : f.type == D9_FT_BOOL ? f.max.u <= 1 && f.min.u <= f.max.u
                                           : 0;
        if (!order || buf[off + 7] != 0 || get32(buf + off + 52) != 0 ||
            f.bucket_ns % ROLLUP_BUCKET_NS != 0 || f.count == 0 ||
            (i > 0 && cmp_fkey(pf.bucket_ns, pf.schema, pf.field, f.bucket_ns, f.schema,
                               f.field) >= 0) ||
            bins_check(buf, len, off + ROLLUP_FIELD_SIZE, f.nbins, &total) < 0 ||
            total != f.count)
            return bad(why, cap, "rollups: field entry %u is malformed or out of order", i);
        off += ROLLUP_FIELD_SIZE + (size_t)f.nbins * ROLLUP_BIN_SIZE;
        pf = f;
    }
    if (off != len)
        return bad(why, cap, "rollups: %zu bytes after the last entry", len - off);
    v->ndelay = nd;
    v->nfield = nf;
    return 0;
}

int rollup_count_at(const struct rollup_view *v, uint32_t i, struct rollup_count *o)
{
    if (!v || !o || i >= v->ncount)
        return -EINVAL;
    const uint8_t *q = v->buf + v->counts_off + (size_t)i * ROLLUP_COUNT_SIZE;
    o->runtime = get16(q);
    o->kind = get16(q + 2);
    o->id = get32(q + 4);
    o->bucket_ns = get64(q + 8);
    o->n = get64(q + 16);
    return 0;
}

int rollup_decode(const uint8_t *buf, size_t len, struct rollup_view *v, char *why, size_t cap)
{
    if (!buf || !v)
        return -EINVAL;
    memset(v, 0, sizeof *v);
    if (len < ROLLUP_HDR_SIZE)
        return bad(why, cap, "rollups of %zu bytes are shorter than their header", len);
    if (memcmp(buf, RU_MAGIC, 4) != 0)
        return bad(why, cap, "rollups: bad magic");
    if (get16(buf + 4) != ROLLUP_VERSION)
        return bad(why, cap, "rollups version %u is not supported (this d9 reads version %u)",
                   get16(buf + 4), ROLLUP_VERSION);
    if (get16(buf + 6) != 0)
        return bad(why, cap, "rollups: reserved header fields set");
    if (get64(buf + 16) != ROLLUP_BUCKET_NS)
        return bad(why, cap, "rollups: bucket of %llu ns (expected %llu)",
                   (unsigned long long)get64(buf + 16), (unsigned long long)ROLLUP_BUCKET_NS);
    if (get32(buf + 24) != crc32c_update(0, buf + ROLLUP_HDR_SIZE, len - ROLLUP_HDR_SIZE))
        return bad(why, cap, "rollups: CRC mismatch");
    uint32_t np = get32(buf + 8), nw = get32(buf + 12), nwa = get32(buf + 28);
    uint32_t nd = get32(buf + 32), nf = get32(buf + 36);
    size_t off = ROLLUP_HDR_SIZE;
    struct rollup_poll prev = { 0 };
    for (uint32_t i = 0; i < np; i++) {
        if (len - off < ROLLUP_POLL_SIZE)
            return bad(why, cap, "rollups: poll entry %u runs past the end", i);
        struct rollup_poll p;
        read_poll(buf + off, &p);
        if (get32(buf + off + 52) != 0)
            return bad(why, cap, "rollups: poll entry %u: reserved field set", i);
        struct pkey a = { prev.bucket_ns, prev.runtime, prev.worker, prev.loc };
        struct pkey b = { p.bucket_ns, p.runtime, p.worker, p.loc };
        if (i > 0 && cmp_pkey(&a, &b) >= 0)
            return bad(why, cap, "rollups: poll entries out of order at %u", i);
        if (p.bucket_ns % ROLLUP_BUCKET_NS != 0)
            return bad(why, cap, "rollups: poll entry %u: bucket not aligned", i);
        if (p.unfinished > p.count || p.nbins > ROLLUP_BINS)
            return bad(why, cap, "rollups: poll entry %u: impossible counts", i);
        off += ROLLUP_POLL_SIZE;
        if ((len - off) / ROLLUP_BIN_SIZE < p.nbins)
            return bad(why, cap, "rollups: poll entry %u: bins run past the end", i);
        uint64_t total = 0;
        for (uint32_t j = 0; j < p.nbins; j++) {
            uint32_t bin = get32(buf + off + (size_t)j * ROLLUP_BIN_SIZE);
            uint32_t n = get32(buf + off + (size_t)j * ROLLUP_BIN_SIZE + 4);
            if (bin >= ROLLUP_BINS || n == 0 ||
                (j > 0 && bin <= get32(buf + off + (size_t)(j - 1) * ROLLUP_BIN_SIZE)))
                return bad(why, cap, "rollups: poll entry %u: bad bin %u", i, j);
            total += n;
        }
        if (total != p.count - p.unfinished)
            return bad(why, cap, "rollups: poll entry %u: bins hold %llu polls, not %llu", i,
                       (unsigned long long)total, (unsigned long long)(p.count - p.unfinished));
        if (total == 0 && (p.sum_ns || p.max_ns))
            return bad(why, cap, "rollups: poll entry %u: durations without polls", i);
        off += (size_t)p.nbins * ROLLUP_BIN_SIZE;
        prev = p;
    }
    if ((len - off) / ROLLUP_WORKER_SIZE < nw ||
        (len - off - (size_t)nw * ROLLUP_WORKER_SIZE) / ROLLUP_COUNT_SIZE < nwa)
        return bad(why, cap, "rollups: %zu bytes left for %u worker and %u count entries",
                   len - off, nw, nwa);
    int e = decode_tail(buf, len, off + (size_t)nw * ROLLUP_WORKER_SIZE +
                        (size_t)nwa * ROLLUP_COUNT_SIZE, nd, nf, v, why, cap);
    if (e < 0)
        return e;
    v->buf = buf;
    v->len = len;
    v->npoll = np;
    v->nworker = nw;
    v->workers_off = off;
    v->ncount = nwa;
    v->counts_off = off + (size_t)nw * ROLLUP_WORKER_SIZE;
    struct rollup_count pk = { 0 }, k;
    for (uint32_t i = 0; i < nwa; i++) {
        rollup_count_at(v, i, &k);
        struct waent a = { pk.bucket_ns, 0, pk.kind, pk.runtime, pk.id };
        struct waent b = { k.bucket_ns, 0, k.kind, k.runtime, k.id };
        if (k.kind > ROLLUP_COUNT_EVENT || (k.kind == ROLLUP_COUNT_WAKE && k.id != 0) ||
            (k.kind == ROLLUP_COUNT_EVENT && k.runtime != 0) ||
            k.bucket_ns % ROLLUP_BUCKET_NS != 0 || k.n == 0 || (i > 0 && by_waent(&a, &b) >= 0))
            return bad(why, cap, "rollups: count entry %u is malformed or out of order", i);
        pk = k;
    }
    struct rollup_worker pw = { 0 }, w;
    for (uint32_t i = 0; i < nw; i++) {
        rollup_worker_at(v, i, &w);
        struct wkey a = { pw.bucket_ns, pw.runtime, pw.worker }, b = { w.bucket_ns, w.runtime, w.worker };
        int cpu_ok = w.flags == ROLLUP_WORKER_CPU ? w.cpu_first <= w.cpu_last
                     : w.flags == 0                ? w.cpu_first == 0 && w.cpu_last == 0
                                                   : 0;
        if (!cpu_ok || w.bucket_ns % ROLLUP_BUCKET_NS != 0 ||
            (i > 0 && cmp_wkey(&a, &b) >= 0) || w.waits < (w.wait_max_ns != 0) ||
            (w.flags && w.waits == 0))
            return bad(why, cap, "rollups: worker entry %u is malformed or out of order", i);
        pw = w;
    }
    return 0;
}

int rollup_next_poll(const struct rollup_view *v, size_t *off, uint32_t *i, struct rollup_poll *out)
{
    if (!v || !off || !i || !out)
        return -EINVAL;
    if (*off == 0) {
        *off = ROLLUP_HDR_SIZE;
        *i = 0;
    }
    if (*i >= v->npoll)
        return 0;
    read_poll(v->buf + *off, out);
    *off += ROLLUP_POLL_SIZE + (size_t)out->nbins * ROLLUP_BIN_SIZE;
    (*i)++;
    return 1;
}

int rollup_next_delay(const struct rollup_view *v, size_t *off, uint32_t *i,
                      struct rollup_delay *out)
{
    if (!v || !off || !i || !out)
        return -EINVAL;
    if (*off == 0) {
        *off = v->delays_off;
        *i = 0;
    }
    if (*i >= v->ndelay)
        return 0;
    read_delay(v->buf + *off, out);
    *off += ROLLUP_DELAY_SIZE + (size_t)out->nbins * ROLLUP_BIN_SIZE;
    (*i)++;
    return 1;
}

int rollup_next_field(const struct rollup_view *v, size_t *off, uint32_t *i,
                      struct rollup_field *out)
{
    if (!v || !off || !i || !out)
        return -EINVAL;
    if (*off == 0) {
        *off = v->fields_off;
        *i = 0;
    }
    if (*i >= v->nfield)
        return 0;
    read_field(v->buf + *off, out);
    *off += ROLLUP_FIELD_SIZE + (size_t)out->nbins * ROLLUP_BIN_SIZE;
    (*i)++;
    return 1;
}

void rollup_hist_add_bins(struct rollup_hist *h, const uint8_t *bins, uint32_t nbins)
{
    for (uint32_t j = 0; j < nbins; j++) {
        uint32_t bin = get32(bins + (size_t)j * ROLLUP_BIN_SIZE);
        uint32_t n = get32(bins + (size_t)j * ROLLUP_BIN_SIZE + 4);
        if (bin < ROLLUP_BINS) {
            h->n[bin] += n;
            h->total += n;
        }
    }
}

void rollup_hist_add(struct rollup_hist *h, const struct rollup_poll *p)
{
    rollup_hist_add_bins(h, p->bins, p->nbins);
}

uint64_t rollup_poll_quantile(const struct rollup_poll *p, double q)
{
    return rollup_bins_quantile(p->bins, p->nbins, p->count - p->unfinished, p->max_ns, q);
}

uint64_t rollup_bins_quantile(const uint8_t *bins, uint32_t nbins, uint64_t total, uint64_t max,
                              double q)
{
    if (total == 0)
        return 0;
    double want = q * (double)total;
    uint64_t rank = (uint64_t)want, seen = 0;
    if ((double)rank < want)
        rank++;
    if (rank == 0)
        rank = 1;
    for (uint32_t j = 0; j < nbins; j++) {
        seen += get32(bins + (size_t)j * ROLLUP_BIN_SIZE + 4);
        if (seen >= rank) {
            uint64_t m = bin_mid(get32(bins + (size_t)j * ROLLUP_BIN_SIZE));
            return m > max ? max : m;
        }
    }
    return max;
}

uint64_t rollup_hist_quantile(const struct rollup_hist *h, double q, uint64_t max_ns)
{
    if (!h || h->total == 0)
        return 0;
    double want = q * (double)h->total;
    uint64_t rank = (uint64_t)want;
    if ((double)rank < want)
        rank++;
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (uint32_t b = 0; b < ROLLUP_BINS; b++) {
        seen += h->n[b];
        if (seen >= rank) {
            uint64_t m = bin_mid(b);
            return m > max_ns ? max_ns : m;
        }
    }
    return max_ns;
}
