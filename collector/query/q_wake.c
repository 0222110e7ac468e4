/*
 * q_wake.c — pending wakes by (process, task) (see q_wake.h).
 *
 * An open-addressing table with linear probing, grown at 50% load, with a
 * separate array of one-byte tags beside the entries: 0 = empty, else 0x80
 * | 7 bits of the key's hash. Most lookups are polls of tasks with no wake
 * pending (a miss): they read only the tags (a byte a slot, so the probe
 * stays in one cache line and the array in cache) and touch an entry only
 * when its tag matches (1 in 128 for a foreign key). A taken entry's hole
 * is closed by backward shift (an entry after it moves back into the hole
 * when its home slot is not between the hole and itself), so probe chains
 * stay intact without tombstones and no entry is rehashed into place.
 * Keys are compared whole: the hash only picks the slot and the tag.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include "collector/store/store_hash.h"
#include "collector/query/q_wake.h"

#define Q_WAKE_INITIAL 64u
#define TAG_USED       0x80u
#define TAG_BITS       57u          /* the tag: the hash's top 7 bits; the slot: its low bits */

struct ent {
    int64_t process_id;
    uint64_t task;
    struct q_wake_pending p;
};

struct q_wake {
    struct ent *e;
    uint8_t *tag;                   /* cap bytes: 0 = empty, else TAG_USED | 7 hash bits */
    size_t cap, n;                  /* cap: a power of two, or 0 before the first put */
};

static uint64_t hash(int64_t process_id, uint64_t task)
{
    return store_hash2(task, (uint64_t)process_id);
}

static uint8_t tag_of(uint64_t h)
{
    return (uint8_t)(TAG_USED | (h >> TAG_BITS));
}

int q_wake_new(struct q_wake **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : -ENOMEM;
}

void q_wake_free(struct q_wake *w)
{
    if (!w)
        return;
    free(w->e);
    free(w->tag);
    free(w);
}

static int grow(struct q_wake *w)
{
    size_t nc = w->cap ? w->cap * 2 : Q_WAKE_INITIAL;
    struct ent *ne = malloc(nc * sizeof *ne);
    uint8_t *nt = calloc(nc, 1);
    if (!ne || !nt) {
        free(ne);
        free(nt);
        return -ENOMEM;
    }
    for (size_t i = 0; i < w->cap; i++) {
        if (!w->tag[i])
            continue;
        uint64_t h = hash(w->e[i].process_id, w->e[i].task);
        size_t j = (size_t)h & (nc - 1);
        while (nt[j])
            j = (j + 1) & (nc - 1);
        ne[j] = w->e[i];
        nt[j] = w->tag[i];
    }
    free(w->e);
    free(w->tag);
    w->e = ne;
    w->tag = nt;
    w->cap = nc;
    return 0;
}

/* The slot of (process_id, task), or the empty slot that ends its probe. */
static size_t find(const struct q_wake *w, int64_t process_id, uint64_t task, uint64_t h)
{
    uint8_t t = tag_of(h);
    size_t j = (size_t)h & (w->cap - 1);
    for (;; j = (j + 1) & (w->cap - 1)) {
        uint8_t g = w->tag[j];
        if (!g)
            return j;
        if (g == t && w->e[j].task == task && w->e[j].process_id == process_id)
            return j;
    }
}

int q_wake_put(struct q_wake *w, int64_t process_id, uint64_t task,
               const struct q_wake_pending *p)
{
    if ((w->n + 1) * 2 > w->cap && grow(w) < 0)
        return -ENOMEM;
    uint64_t h = hash(process_id, task);
    size_t j = find(w, process_id, task, h);
    if (!w->tag[j])
        w->n++;
    w->e[j] = (struct ent){ process_id, task, *p };
    w->tag[j] = tag_of(h);
    return 0;
}

int q_wake_take(struct q_wake *w, int64_t process_id, uint64_t task, struct q_wake_pending *p)
{
    if (!w->n)
        return 0;
    size_t mask = w->cap - 1;
    size_t j = find(w, process_id, task, hash(process_id, task));
    if (!w->tag[j])
        return 0;
    *p = w->e[j].p;
    w->n--;
    size_t hole = j;
    for (size_t k = (j + 1) & mask; w->tag[k]; k = (k + 1) & mask) {
        size_t home = (size_t)hash(w->e[k].process_id, w->e[k].task) & mask;
        /* k stays when its home lies cyclically in (hole, k] */
        bool stays = hole <= k ? (home > hole && home <= k) : (home > hole || home <= k);
        if (stays)
            continue;
        w->e[hole] = w->e[k];
        w->tag[hole] = w->tag[k];
        hole = k;
    }
    w->tag[hole] = 0;
    return 1;
}

uint64_t q_wake_pending_count(const struct q_wake *w) { return w->n; }
