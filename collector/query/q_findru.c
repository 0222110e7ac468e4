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
#include "collector/query/q_rollup.h"
#include "collector/store/rollup.h"

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
    const char *prog;
};

static int mark_seg(const struct plan *pl, const struct q_rollup_seg *g)
{
    const struct rollup_view *v = g->v;
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

/* One segment's rollups (q_rollup_each_listed): its marks, or, without
 * valid rollups, its whole process unfiltered with one line on stderr. */
static int on_rollup(void *arg, const struct q_rollup_seg *g)
{
    const struct plan *pl = arg;
    if (g->v) {
        pl->st->segments++;
        return mark_seg(pl, g);
    }
    fprintf(stderr, "%s: segment %s: %s: its process's polls and waits are read "
            "without the rollups' filter (d9 fsck --repair rebuilds them)\n",
            pl->prog ? pl->prog : "d9", g->path, g->why);
    pl->st->unfiltered++;
    return pl->mark(pl->arg, g->process_id, Q_FINDRU_ALL, 0, 0);
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
    struct plan pl = { from, to, long_poll_ns, sched_wait_ns, mark, arg, st, prog };
    return q_rollup_each_listed(s, pid, from, to, on_rollup, &pl, NULL);
}
