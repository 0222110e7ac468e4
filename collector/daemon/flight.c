/*
 * flight.c — the flight recorder's passes (see flight.h).
 */
#include "collector/daemon/flight.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "collector/store/col_log.h"
#include "collector/store/idx.h"
#include "collector/store/idx_trig.h"
#include "collector/store/keep.h"
#include "collector/store/rollup.h"

#define MS_NS 1000000ull
#define FLIGHT_BATCH 16u

void flight_init(struct flight *f, const struct trig_cfg *c, uint64_t first_id)
{
    memset(f, 0, sizeof *f);
    f->on = c->retain == TRIG_RETAIN_TRIGGERED;
    f->first_id = first_id;
}

uint64_t flight_segment_age_ns(const struct flight *f, const struct trig_cfg *c,
                               uint64_t configured_ns)
{
    uint64_t lb = (uint64_t)c->lookback_ms * MS_NS;
    if (!f->on || (configured_ns && configured_ns <= lb))
        return configured_ns;
    return lb;
}

/* The first trigger of a window, as "source: reason" (the index's triggers
 * table, idx_trig.h); "" when it is not there. */
struct first_trig {
    char text[SEG_KEEP_REASON_MAX];
};

static int first_trig_fn(void *arg, const struct idx_trigger *t)
{
    struct first_trig *ft = arg;
    const char *r = t->reason ? t->reason : "";
    snprintf(ft->text, sizeof ft->text, "%s%s%s", t->source ? t->source : "?", *r ? ": " : "", r);
    return 1;
}

static void window_keep(struct storedir *st, const struct trig_win *w, uint64_t source_id,
                        struct seg_keep *k)
{
    memset(k, 0, sizeof *k);
    k->trig_ns = w->trig_ns;
    k->t0_ns = w->t0_ns;
    k->t1_ns = w->t1_ns;
    k->trig_pid = w->pid;
    k->ntrig = w->ntrig;
    k->source_segment = source_id;
    struct first_trig ft = { "" };
    if (idx_trig_foreach(st->idx, w->pid, w->trig_ns, w->trig_ns, first_trig_fn, &ft) >= 0)
        memcpy(k->reason, ft.text, sizeof k->reason);
    k->reason[sizeof k->reason - 1] = 0;
}

static int failed_before(const struct flight *f, uint64_t id)
{
    for (unsigned i = 0; i < f->nfailed; i++)
        if (f->failed[i] == id)
            return 1;
    return 0;
}

static void failed_note(struct flight *f, uint64_t id)
{
    f->cut_errors++;
    if (f->nfailed < FLIGHT_FAILED_MAX)
        f->failed[f->nfailed++] = id;
}

/* Cut window w out of the settled segment r and index the result. 0 (also
 * when the window holds nothing of it) or -errno. */
static int cut_one(struct flight *f, struct storedir *st, const struct idx_flight_row *r,
                   const struct trig_win *w)
{
    char src[CONFIG_PATH_MAX];
    if (strchr(r->path, '/') || r->path[0] == '.' ||
        snprintf(src, sizeof src, "%s/%s", st->dir, r->path) >= (int)sizeof src)
        return -EINVAL;
    struct seg_keep k;
    window_keep(st, w, r->id, &k);
    struct seg_writer *wr;
    struct seg_summary sum;
    uint64_t id = st->next_segment_id++;
    int rc = keep_cut(src, st->dir, id, &k, &wr, &sum);
    if (rc == -ENODATA)
        return 0;
    if (rc) {
        col_warn("flight recorder: cannot cut the window %" PRIu64 "..%" PRIu64 " out of %s: "
                 "%s; the segment is kept whole", k.t0_ns, k.t1_ns, src, strerror(-rc));
        return rc;
    }
    uint8_t *ru = NULL;
    size_t ru_len = 0;
    if (rollup_file(sum.path, &ru, &ru_len) < 0)
        ru = NULL, ru_len = 0;
    rc = idx_segment_commit_rollup(st->idx, r->process_id, &sum, st->dir, ru, ru_len);
    free(ru);
    if (rc) {
        /* no row: the file goes too, the source stays whole for the next try */
        col_warn("flight recorder: cannot index the kept window %s: %s", sum.path,
                 idx_errmsg(st->idx) ? idx_errmsg(st->idx) : strerror(-rc));
        unlink(sum.path);
        seg_writer_free(wr);
        return rc;
    }
    st->indexed_bytes += sum.bytes;
    f->windows_cut++;
    f->kept_bytes += sum.bytes;
    col_debug("flight recorder: kept %s (%" PRIu64 " records, %" PRIu64 "..%" PRIu64 ", %s)",
              sum.path, sum.nrecords, k.t0_ns, k.t1_ns, k.reason);
    seg_writer_free(wr);
    if (st->on_sealed)      /* shipping: a new segment to upload */
        st->on_sealed(st->on_sealed_arg);
    return 0;
}

/* The settled segment r: its kept windows out, then it goes. */
static int settle(struct flight *f, struct storedir *st, const struct trig_state *ts,
                  const struct idx_flight_row *r)
{
    for (unsigned i = 0; i < ts->nwin; i++) {
        const struct trig_win *w = &ts->win[i];
        if (!keep_overlaps(r->t_min, r->t_max, w->t0_ns, w->t1_ns))
            continue;
        int rc = cut_one(f, st, r, w);
        if (rc) {
            failed_note(f, r->id);
            return rc;
        }
    }
    int rc = idx_segment_delete(st->idx, r->id);    /* rows first */
    if (rc && rc != -ENOENT) {
        col_warn("flight recorder: cannot delete segment %" PRIu64 " from the index: %s", r->id,
                 strerror(-rc));
        failed_note(f, r->id);
        return rc;
    }
    char path[CONFIG_PATH_MAX];
    if (!strchr(r->path, '/') && r->path[0] != '.' &&
        snprintf(path, sizeof path, "%s/%s", st->dir, r->path) < (int)sizeof path &&
        unlink(path) != 0 && errno != ENOENT)
        col_warn("flight recorder: cannot remove %s: %s", path, strerror(errno));
    st->indexed_bytes = st->indexed_bytes > r->bytes ? st->indexed_bytes - r->bytes : 0;
    f->dropped_segments++;
    f->dropped_bytes += r->bytes;
    return 0;
}

int flight_pass(struct flight *f, struct storedir *st, const struct trig_state *ts,
                uint64_t now_ns, int final)
{
    if (!f->on || !st->idx)
        return 0;
    if (!final && now_ns < f->next_pass_ns)
        return 0;
    f->next_pass_ns = now_ns + FLIGHT_PASS_NS;
    uint64_t margin = (uint64_t)ts->cfg.lookback_ms * MS_NS + FLIGHT_SETTLE_NS;
    uint64_t before = final ? UINT64_MAX >> 1 : now_ns > margin ? now_ns - margin : 0;
    if (before == 0)
        return 0;
    int decided = 0;
    for (;;) {
        struct idx_flight_row rows[FLIGHT_BATCH];
        size_t n = 0;
        int rc = idx_flight_candidates(st->idx, f->first_id, before, rows, FLIGHT_BATCH, &n);
        if (rc)
            return rc;
        size_t fresh = 0;
        for (size_t i = 0; i < n; i++) {
            if (failed_before(f, rows[i].id))
                continue;
            fresh++;
            if (settle(f, st, ts, &rows[i]) == 0)
                decided++;
        }
        /* the drain waits while a pass cuts: one batch a pass, all at the end */
        if (n < FLIGHT_BATCH || fresh == 0 || !final)
            break;
    }
    return decided;
}
