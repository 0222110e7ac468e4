/*
 * sql_group.c — rows bucketed by key, returned in key order (see
 * sql_group.h).
 *
 * Buckets live in an array; an open-addressing table of bucket indices
 * (power-of-two size, at most half full) finds a bucket by key. Each bucket
 * holds a singly linked list of chunks whose capacity doubles from
 * GROUP_CHUNK_MIN to GROUP_CHUNK_MAX rows, so a bucket of three rows costs
 * one small chunk and a bucket of millions one header per 4096 rows.
 * Chunks are carved from slabs of GROUP_SLAB bytes, 2 MiB aligned and
 * offered to the kernel as huge pages: rows are written once each, and
 * faulting in 4 KiB pages one by one cost more than writing them.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "collector/store/store_hash.h"
#include "collector/sql/sql_group.h"

#define GROUP_CHUNK_MIN   8u
#define GROUP_CHUNK_MAX   4096u
#define GROUP_TABLE_MIN   64u
#define GROUP_SLAB        (4u << 20)
#define GROUP_SLAB_ALIGN  (2u << 20)

struct slab {
    struct slab *next;
    size_t used, cap;               /* bytes carved, of cap (this header included) */
};

struct chunk {
    struct chunk *next;
    uint32_t n, cap;
    /* cap rows of row_size bytes follow (aligned to 8) */
};

struct bucket {
    char *text;                     /* text key, or NULL */
    int64_t ikey;
    uint64_t hash;
    struct chunk *head, *tail;
};

struct sql_group {
    size_t row_size;
    struct bucket *b;
    size_t nb, capb;
    int32_t *table;                 /* bucket index + 1; 0 = empty */
    size_t tcap;
    size_t bytes;
    struct slab *slabs;             /* the newest first */
    bool sealed;
    const struct bucket **order;    /* the buckets by key, after seal */
    size_t io;                      /* iteration: position in order */
    struct chunk *ic;               /* ... the chunk, and the row in it */
    uint32_t ir;
};

int sql_group_new(size_t row_size, struct sql_group **out)
{
    *out = NULL;
    if (row_size == 0)
        return -EINVAL;
    struct sql_group *g = calloc(1, sizeof *g);
    if (!g)
        return -ENOMEM;
    g->row_size = (row_size + 7) & ~(size_t)7;
    g->tcap = GROUP_TABLE_MIN;
    g->table = calloc(g->tcap, sizeof *g->table);
    if (!g->table) {
        free(g);
        return -ENOMEM;
    }
    g->bytes = sizeof *g + g->tcap * sizeof *g->table;
    *out = g;
    return 0;
}

void sql_group_free(struct sql_group *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nb; i++)
        free(g->b[i].text);
    for (struct slab *s = g->slabs, *n; s; s = n) {
        n = s->next;
        free(s);
    }
    free(g->b);
    free(g->table);
    free(g->order);
    free(g);
}

static size_t slot_of(const struct sql_group *g, int32_t *table, size_t tcap, uint64_t h,
                      const char *text, int64_t ikey)
{
    size_t i = (size_t)h & (tcap - 1);
    for (;; i = (i + 1) & (tcap - 1)) {
        int32_t e = table[i];
        if (e == 0)
            return i;
        const struct bucket *b = &g->b[e - 1];
        if (b->hash == h && (text ? b->text && strcmp(b->text, text) == 0
                                  : !b->text && b->ikey == ikey))
            return i;
    }
}

static int grow_table(struct sql_group *g)
{
    size_t nc = g->tcap * 2;
    int32_t *t = calloc(nc, sizeof *t);
    if (!t)
        return -ENOMEM;
    for (size_t i = 0; i < g->nb; i++)
        t[slot_of(g, t, nc, g->b[i].hash, g->b[i].text, g->b[i].ikey)] = (int32_t)(i + 1);
    g->bytes += (nc - g->tcap) * sizeof *t;
    free(g->table);
    g->table = t;
    g->tcap = nc;
    return 0;
}

static int bucket_of(struct sql_group *g, const char *text, int64_t ikey)
{
    uint64_t h = text ? store_hash_str(text, strlen(text)) : store_hash64((uint64_t)ikey);
    size_t i = slot_of(g, g->table, g->tcap, h, text, ikey);
    if (g->table[i])
        return g->table[i] - 1;
    if (g->sealed)
        return -EINVAL;
    if (g->nb >= INT32_MAX - 1)
        return -ENOMEM;
    if ((g->nb + 1) * 2 > g->tcap) {
        if (grow_table(g) < 0)
            return -ENOMEM;
        i = slot_of(g, g->table, g->tcap, h, text, ikey);
    }
    if (g->nb == g->capb) {
        size_t nc = g->capb ? g->capb * 2 : 16;
        struct bucket *n = realloc(g->b, nc * sizeof *n);
        if (!n)
            return -ENOMEM;
        g->bytes += (nc - g->capb) * sizeof *n;
        g->b = n;
        g->capb = nc;
    }
    struct bucket *b = &g->b[g->nb];
    *b = (struct bucket){ .ikey = ikey, .hash = h };
    if (text) {
        if (!(b->text = strdup(text)))
            return -ENOMEM;
        g->bytes += strlen(text) + 1;
    }
    g->table[i] = (int32_t)(g->nb + 1);
    return (int)g->nb++;
}

int sql_group_bucket_text(struct sql_group *g, const char *key) { return bucket_of(g, key, 0); }
int sql_group_bucket_int(struct sql_group *g, int64_t key) { return bucket_of(g, NULL, key); }

static uint8_t *chunk_rows(struct chunk *c) { return (uint8_t *)(c + 1); }

/* sz bytes (a multiple of 8) from the newest slab, or from a new one. */
static void *carve(struct sql_group *g, size_t sz)
{
    struct slab *s = g->slabs;
    if (!s || s->cap - s->used < sz) {
        size_t cap = sizeof *s + sz > GROUP_SLAB ? sizeof *s + sz : GROUP_SLAB;
        cap = (cap + GROUP_SLAB_ALIGN - 1) & ~(size_t)(GROUP_SLAB_ALIGN - 1);
        if (!(s = aligned_alloc(GROUP_SLAB_ALIGN, cap)))
            return NULL;
        (void)madvise(s, cap, MADV_HUGEPAGE);   /* a hint: without it, small pages */
        s->next = g->slabs;
        s->used = (sizeof *s + 7) & ~(size_t)7;
        s->cap = cap;
        g->slabs = s;
        g->bytes += cap;
    }
    void *p = (uint8_t *)s + s->used;
    s->used += sz;
    return p;
}

void *sql_group_slot(struct sql_group *g, int bi)
{
    if (bi < 0 || (size_t)bi >= g->nb || g->sealed)
        return NULL;
    struct bucket *b = &g->b[bi];
    struct chunk *c = b->tail;
    if (!c || c->n == c->cap) {
        uint32_t cap = c ? (c->cap < GROUP_CHUNK_MAX ? c->cap * 2 : GROUP_CHUNK_MAX)
                         : GROUP_CHUNK_MIN;
        size_t sz = sizeof *c + (size_t)cap * g->row_size;
        struct chunk *n = carve(g, sz);
        if (!n)
            return NULL;
        n->next = NULL;
        n->n = 0;
        n->cap = cap;
        if (c)
            c->next = n;
        else
            b->head = n;
        b->tail = c = n;
    }
    return chunk_rows(c) + (size_t)c->n++ * g->row_size;
}

int sql_group_add(struct sql_group *g, int bi, const void *row)
{
    if (bi < 0 || (size_t)bi >= g->nb || g->sealed)
        return -EINVAL;
    void *p = sql_group_slot(g, bi);
    if (!p)
        return -ENOMEM;
    memcpy(p, row, g->row_size);
    return 0;
}

size_t sql_group_bytes(const struct sql_group *g) { return g->bytes; }

static int by_key(const void *a, const void *b)
{
    const struct bucket *x = *(const struct bucket *const *)a, *y = *(const struct bucket *const *)b;
    if (x->text && y->text)
        return strcmp(x->text, y->text);    /* bytes as unsigned: SQLite's BINARY */
    return x->ikey < y->ikey ? -1 : x->ikey > y->ikey;
}

int sql_group_seal(struct sql_group *g)
{
    g->sealed = true;
    free(g->order);
    g->order = malloc((g->nb ? g->nb : 1) * sizeof *g->order);
    if (!g->order)
        return -ENOMEM;
    for (size_t i = 0; i < g->nb; i++)
        g->order[i] = &g->b[i];
    qsort(g->order, g->nb, sizeof *g->order, by_key);
    g->io = 0;
    g->ic = g->nb ? g->order[0]->head : NULL;
    g->ir = 0;
    return 0;
}

const void *sql_group_next(struct sql_group *g)
{
    while (g->io < g->nb) {
        if (g->ic && g->ir < g->ic->n)
            return chunk_rows(g->ic) + (size_t)g->ir++ * g->row_size;
        if (g->ic && g->ic->next) {
            g->ic = g->ic->next;
            g->ir = 0;
            continue;
        }
        if (++g->io < g->nb)
            g->ic = g->order[g->io]->head;
        g->ir = 0;
    }
    return NULL;
}
