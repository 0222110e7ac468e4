/*
 * q_findru.c — the rollups as findings' filter (see q_findru.h): one pass
 * over the stored rollups of the window's segments, marking what the scan
 * must look at in full.
 */
#include "collector/query/q_findru.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/idx_read.h"
#include "collector/store/rollup.h"

#define FINDRU_MAX_SEGS (1u << 24)      /* segments listed per query: far above any store */

struct seg_ref {
    uint64_t id;
    int64_t process_id;
    char *path;
};

struct seg_list {
    struct seg_ref *r;
    size_t n, cap;
};

static int on_seg(void *arg, const struct idx_read_segment *s)
{
    struct seg_list *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        if (cap > FINDRU_MAX_SEGS)
            return -E2BIG;
        struct seg_ref *n = realloc(l->r, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        l->r = n;
        l->cap = cap;
    }
    char *p = strdup(s->path ? s->path : "");
    if (!p)
        return -ENOMEM;
    l->r[l->n++] = (struct seg_ref){ s->id, s->process_id, p };
    return 0;
}

/* Does the bucket starting at b meet [from, to]? */
static int bucket_meets(uint64_t b, uint64_t from, uint64_t to)
{
    uint64_t end = b > UINT64_MAX - (ROLLUP_BUCKET_NS - 1) ? UINT64_MAX
                                                            : b + ROLLUP_BUCKET_NS - 1;
    return b <= to && end >= from;
}

struct plan {
    uint64_t from, to, long_poll_ns, sched_wait_ns;
    int (*mark)(void *arg, int64_t process_id, enum q_findru_mark what, uint16_t runtime,
                uint16_t worker);
    void *arg;
    struct q_findru_stats *st;
};

static int mark_seg(const struct plan *pl, const struct seg_ref *g, const struct rollup_view *v)
{
    int r;
    size_t off = 0;
    uint32_t i = 0;
    struct rollup_poll p;
    while (rollup_next_poll(v, &off, &i, &p) == 1) {
        if (!bucket_meets(p.bucket_ns, pl->from, pl->to) || p.max_ns < pl->long_poll_ns)
            continue;
        if ((r = pl->mark(pl->arg, g->process_id, Q_FINDRU_POLLS, 0, 0)) < 0)
            return r;
        pl->st->marks++;
        break;                      /* the whole process is marked */
    }
    struct rollup_worker w;
    for (uint32_t k = 0; k < v->nworker && rollup_worker_at(v, k, &w) == 0; k++) {
        if (!bucket_meets(w.bucket_ns, pl->from, pl->to) || w.waits == 0 ||
            w.wait_max_ns < pl->sched_wait_ns)
            continue;
        if ((r = pl->mark(pl->arg, g->process_id, Q_FINDRU_WORKER, w.runtime, w.worker)) < 0)
            return r;
        pl->st->marks++;
    }
    return 0;
}

int q_findru_plan(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to,
                  uint64_t long_poll_ns, uint64_t sched_wait_ns,
                  int (*mark)(void *arg, int64_t process_id, enum q_findru_mark what,
                              uint16_t runtime, uint16_t worker),
                  void *arg, struct q_findru_stats *st, const char *prog)
{
    struct q_findru_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    const struct plan pl = { from, to, long_poll_ns, sched_wait_ns, mark, arg, st };
    struct seg_list l = { 0 };
    int rc = q_store_segments(s, pid, from, to, on_seg, &l);
    for (size_t i = 0; rc >= 0 && i < l.n; i++) {
        const struct seg_ref *g = &l.r[i];
        uint8_t *buf = NULL;
        size_t len = 0;
        char why[160] = "";
        struct rollup_view v;
        int e = idx_read_rollup(q_store_idx(s), g->id, &buf, &len);
        if (e == 1 && rollup_decode(buf, len, &v, why, sizeof why) == 0) {
            st->segments++;
            rc = mark_seg(&pl, g, &v);
        } else {
            if (e == 0)
                snprintf(why, sizeof why, "no rollups");
            else if (e < 0)
                snprintf(why, sizeof why, "rollups unreadable: %s", strerror(-e));
            fprintf(stderr, "%s: segment %s: %s: its process's polls and waits are read "
                    "without the rollups' filter (d9 fsck --repair rebuilds them)\n",
                    prog ? prog : "d9", g->path, why);
            st->unfiltered++;
            rc = mark(arg, g->process_id, Q_FINDRU_ALL, 0, 0);
        }
        free(buf);
    }
    for (size_t i = 0; i < l.n; i++)
        free(l.r[i].path);
    free(l.r);
    return rc < 0 ? rc : 0;
}
