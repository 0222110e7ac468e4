/*
 * q_wake.c — pending wakes by (process, task) (see q_wake.h).
 *
 * An open-addressing table with linear probing, grown at 50% load; a taken
 * entry's hole is closed by re-inserting the entries after it, so probe
 * chains stay intact without tombstones. Keys are compared whole: the hash
 * only picks the slot.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include "collector/store/store_hash.h"
#include "collector/query/q_wake.h"

#define Q_WAKE_INITIAL 64u

struct ent {
    int64_t process_id;
    uint64_t task;
    struct q_wake_pending p;
    bool used;
};

struct q_wake {
    struct ent *e;
    size_t cap, n;                  /* cap: a power of two, or 0 before the first put */
};

static size_t slot(size_t cap, int64_t process_id, uint64_t task)
{
    return (size_t)store_hash2(task, (uint64_t)process_id) & (cap - 1);
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
    free(w);
}

static int grow(struct q_wake *w)
{
    size_t nc = w->cap ? w->cap * 2 : Q_WAKE_INITIAL;
    struct ent *ne = calloc(nc, sizeof *ne);
    if (!ne)
        return -ENOMEM;
    for (size_t i = 0; i < w->cap; i++) {
        if (!w->e[i].used)
            continue;
        size_t j = slot(nc, w->e[i].process_id, w->e[i].task);
        while (ne[j].used)
            j = (j + 1) & (nc - 1);
        ne[j] = w->e[i];
    }
    free(w->e);
    w->e = ne;
    w->cap = nc;
    return 0;
}

static size_t find(const struct q_wake *w, int64_t process_id, uint64_t task)
{
    size_t j = slot(w->cap, process_id, task);
    while (w->e[j].used && !(w->e[j].process_id == process_id && w->e[j].task == task))
        j = (j + 1) & (w->cap - 1);
    return j;
}

int q_wake_put(struct q_wake *w, int64_t process_id, uint64_t task,
               const struct q_wake_pending *p)
{
    if ((w->n + 1) * 2 > w->cap && grow(w) < 0)
        return -ENOMEM;
    size_t j = find(w, process_id, task);
    if (!w->e[j].used)
        w->n++;
    w->e[j] = (struct ent){ process_id, task, *p, true };
    return 0;
}

int q_wake_take(struct q_wake *w, int64_t process_id, uint64_t task, struct q_wake_pending *p)
{
    if (!w->cap)
        return 0;
    size_t j = find(w, process_id, task);
    if (!w->e[j].used)
        return 0;
    *p = w->e[j].p;
    w->e[j].used = false;
    w->n--;
    for (size_t k = (j + 1) & (w->cap - 1); w->e[k].used; k = (k + 1) & (w->cap - 1)) {
        struct ent e = w->e[k];
        w->e[k].used = false;
        size_t h = slot(w->cap, e.process_id, e.task);
        while (w->e[h].used)
            h = (h + 1) & (w->cap - 1);
        w->e[h] = e;
    }
    return 1;
}

uint64_t q_wake_pending_count(const struct q_wake *w) { return w->n; }
