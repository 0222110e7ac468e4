/*
 * serve_api.c — the JSON answers of `d9 serve` (see serve_api.h).
 *
 * A timeline is one scan of the window (q_scan, blocks chosen by
 * the index) into per-lane pixel arrays plus a bounded list of single
 * polls/parks; the answer then prints the list when it did not overflow and
 * the arrays otherwise, merged by powers of two until they fit. Memory: the
 * lanes' arrays (SERVE_API_MAX_LANES x width), the bounded lists and the
 * polls open at the same time; never per record.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "collector/query/q_decode.h"
#include "collector/query/q_find.h"
#include "collector/query/q_flame.h"
#include "collector/query/q_loc.h"
#include "collector/query/q_loopwork.h"
#include "collector/query/q_names.h"
#include "collector/query/q_pair.h"
#include "collector/query/q_rollup.h"
#include "collector/query/q_sched.h"
#include "collector/query/q_text.h"
#include "collector/query/q_wake.h"
#include "collector/serve/serve_api.h"
#include "collector/serve/serve_edge.h"
#include "collector/serve/serve_workers.h"
#include "collector/serve/serve_trig.h"
#include "collector/store/sym.h"

#define MAX_LOCS   1024u            /* distinct locations named; more share "other" */

void serve_api_params_init(struct serve_params *p)
{
    memset(p, 0, sizeof *p);
}

static int parse_u64(const char *v, uint64_t *out)
{
    return q_text_parse_u64(v, out);
}

static int copy_str(char *dst, const char *v)
{
    size_t n = strlen(v);
    if (n >= SERVE_API_STR_MAX)
        return -EINVAL;
    memcpy(dst, v, n + 1);
    return 0;
}

int serve_api_param(struct serve_params *p, const char *key, const char *val, char *why,
                    size_t whycap)
{
    uint64_t u;
    if (!key || !val) {
        snprintf(why, whycap, "argument without a value");
        return -EINVAL;
    }
    if (strcmp(key, "pid") == 0) {
        if (parse_u64(val, &u) < 0 || u == 0 || u > UINT32_MAX)
            goto bad;
        p->pid = (uint32_t)u;
        p->has_pid = true;
    } else if (strcmp(key, "from") == 0) {
        if (parse_u64(val, &p->from) < 0)
            goto bad;
        p->has_from = true;
    } else if (strcmp(key, "to") == 0) {
        if (parse_u64(val, &p->to) < 0)
            goto bad;
        p->has_to = true;
    } else if (strcmp(key, "width") == 0) {
        if (parse_u64(val, &u) < 0 || u == 0 || u > SERVE_API_MAX_WIDTH)
            goto bad;
        p->width = (uint32_t)u;
    } else if (strcmp(key, "limit") == 0) {
        if (parse_u64(val, &u) < 0 || u == 0 || u > SERVE_API_MAX_EVENTS)
            goto bad;
        p->limit = (uint32_t)u;
    } else if (strcmp(key, "offset") == 0) {
        if (parse_u64(val, &p->offset) < 0)
            goto bad;
    } else if (strcmp(key, "event") == 0) {
        if (copy_str(p->event, val) < 0)
            goto bad;
    } else if (strcmp(key, "field") == 0) {
        if (copy_str(p->field, val) < 0)
            goto bad;
    } else if (strcmp(key, "value") == 0) {
        if (copy_str(p->value, val) < 0)
            goto bad;
    } else if (strcmp(key, "kind") == 0) {
        if (strcmp(val, "cpu") == 0)
            p->off_cpu = false;
        else if (strcmp(val, "off") == 0)
            p->off_cpu = true;
        else
            goto bad;
    } else if (strcmp(key, "_") == 0) {
        /* cache buster of the page: ignored */
    } else {
        snprintf(why, whycap, "unknown argument");
        return -EINVAL;
    }
    return 0;
bad:
    snprintf(why, whycap, "bad value for %.32s", key);
    return -EINVAL;
}

static int error(FILE *out, int status, const char *msg)
{
    fputs("{\"error\":", out);
    q_text_json(out, msg, strlen(msg));
    fputs("}\n", out);
    return status;
}

/* ---- /api/processes ----------------------------------------------------------- */
struct plist {
    struct q_store *s;
    FILE *out;
    bool first;
    int err;
};

static int thread_row(void *arg, const struct idx_read_thread *r)
{
    struct plist *l = arg;
    fprintf(l->out, "%s{\"tid\":%" PRIu32 ",\"name\":", l->first ? "" : ",", r->tid);
    q_text_json(l->out, r->name, strlen(r->name));
    fprintf(l->out, ",\"first_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64 "}", r->first_ns, r->last_ns);
    l->first = false;
    return 0;
}

static int runtime_row(void *arg, const struct idx_read_runtime *r)
{
    struct plist *l = arg;
    fprintf(l->out, "%s{\"id\":%" PRIu32 ",\"name\":", l->first ? "" : ",", r->runtime_id);
    q_text_json(l->out, r->name, strlen(r->name));
    fputc('}', l->out);
    l->first = false;
    return 0;
}

static int proc_row(void *arg, const struct idx_read_process *r)
{
    struct plist *l = arg;
    FILE *o = l->out;
    fprintf(o, "%s\n{\"pid\":%" PRIu32 ",\"comm\":", l->first ? "" : ",", r->pid);
    q_text_json(o, r->comm, strlen(r->comm));
    fputs(",\"exe\":", o);
    q_text_json(o, r->exe, strlen(r->exe));
    fputs(",\"state\":", o);
    q_text_json(o, r->state, strlen(r->state));
    if (r->has_exit_code)
        fprintf(o, ",\"exit_code\":%" PRId64, r->exit_code);
    fprintf(o, ",\"first_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64 ",\"records\":%" PRIu64
            ",\"lost\":%" PRIu64 ",\"segments\":%" PRIu64 ",\"threads\":[",
            r->first_ns, r->last_ns, r->records, r->lost, r->segments);
    struct plist sub = { .s = l->s, .out = o, .first = true };
    int rc = q_store_threads(l->s, 0, r->id, thread_row, &sub);
    fputs("],\"runtimes\":[", o);
    sub.first = true;
    int rc2 = q_store_runtimes(l->s, 0, r->id, runtime_row, &sub);
    fputs("]}", o);
    l->first = false;
    if (rc < 0 || rc2 < 0)
        l->err = rc < 0 ? rc : rc2;
    return 0;
}

static int api_processes(struct q_store *s, FILE *out)
{
    fprintf(out, "{\"live\":%s,\"processes\":[", q_store_live(s) ? "true" : "false");
    struct plist l = { .s = s, .out = out, .first = true };
    int n = q_store_processes(s, 0, 0, UINT64_MAX, proc_row, &l);
    fputs("\n]}\n", out);
    return n < 0 || l.err ? 500 : 200;
}

/* ---- timeline ------------------------------------------------------------------- */
struct cell {                       /* one pixel column of a lane */
    uint64_t busy_ns, max_ns, parked_ns, sched_max_ns;   /* max_ns: of the polls over it */
    uint32_t count;                 /* polls counted here: that start in it (or, started
                                     * before the window, its first column) */
    uint32_t carried;               /* polls over it counted in an earlier column */
    uint32_t max_loc, samples, offcpu;
};

struct lane {
    uint32_t tid;
    char name[32];
    uint64_t first_ns, last_ns;     /* the thread's time range in the index, 0 = unknown */
    uint64_t seen_until;            /* its last record read (what an unfinished poll lasts to) */
    uint64_t waiting;               /* its polls and parks open at the window's end */
    struct cell *c;                 /* width cells */
    uint64_t hist[SERVE_API_HIST];  /* sched delay, log2 ns */
    uint64_t polls;
    uint64_t waits, wait_sum_ns, wait_max_ns;   /* its wait samples (q_sched.h) */
};

struct item {                       /* one poll (task != PARKED) or parked span */
    uint64_t start, dur, task;
    uint32_t lane, loc;
};

struct lwork {                      /* one loop-work interval (q_loopwork.h) */
    uint64_t start, dur, samples;
    uint32_t lane;
};

struct top {
    uint64_t start, dur, task;      /* start may be before the window */
    uint32_t lane, loc;
    bool unfinished;
    enum q_open_why why;            /* when unfinished */
};

struct counter {
    uint16_t runtime, worker;
    char name[96];
    uint64_t *max1;                 /* width entries, depth + 1 (0 = no point) */
};

struct tl {
    const struct serve_params *p;
    struct q_store *s;
    struct q_names *names;          /* location names without a scan's metadata, lazily */
    int64_t process_id;
    uint64_t proc_first, proc_last;
    uint64_t bad_blocks, missing_segments, lost;   /* of every scan of the answer */
    uint64_t broken;                /* polls and parks cut by a block not read */
    uint64_t gaps[SERVE_API_MAX_GAPS][3];   /* lane, first ns, last ns of a block not read */
    size_t ngaps;
    uint64_t edge_records;          /* read by the look-back and look-ahead scans */
    bool edge_partial;              /* they stopped at SERVE_API_EDGE_MAX records */
    uint64_t from, to, span;
    uint32_t width;
    bool events_only;
    struct lane lanes[SERVE_API_MAX_LANES];
    uint32_t nlanes;
    uint64_t lanes_dropped;         /* records of threads past the lane limit */
    struct q_pair *polls;
    struct item *items;
    size_t nitems;
    bool overflow;                  /* too many polls/parks: buckets */
    uint64_t npolls, nparks;
    struct top top[SERVE_API_TOP];
    size_t ntop;
    struct counter counters[SERVE_API_MAX_COUNTERS];
    uint32_t ncounters;
    struct q_wake *pending;         /* wakes not answered by a poll yet: waker lane */
    uint64_t (*wakes)[4];           /* wake ts, waker lane, poll ts, wakee lane */
    size_t nwakes;
    uint64_t wakes_total;
    uint32_t loc_id[MAX_LOCS];      /* location ids named, index = loc index */
    char *loc_name[MAX_LOCS];
    uint32_t nlocs;
    FILE *ev;                       /* events JSON, streamed into a buffer */
    char *evbuf;
    size_t evlen;
    uint64_t nevents, events_total;
    uint64_t ev_skipped;            /* /api/events: matching events before offset */
    uint32_t ev_limit;
    char **col_ev;                  /* timeline: the first matching event of each column */
    struct q_loopwork *lw;          /* loop work: fed the window's records and the edges' */
    struct lwork *lwv;              /* the first SERVE_API_MAX_LOOPWORK of them, in time order */
    size_t nlw;
    uint64_t lw_total;
    int err;
};

static uint32_t px_of(const struct tl *t, uint64_t ts)
{
    if (ts <= t->from)
        return 0;
    uint64_t d = ts - t->from;
    uint64_t px = (uint64_t)((unsigned __int128)d * t->width / t->span);
    return px >= t->width ? t->width - 1 : (uint32_t)px;
}

static struct lane *lane_of(struct tl *t, uint32_t tid, const char *name)
{
    for (uint32_t i = 0; i < t->nlanes; i++)
        if (t->lanes[i].tid == tid) {
            if (name && *name && !t->lanes[i].name[0])
                snprintf(t->lanes[i].name, sizeof t->lanes[i].name, "%s", name);
            return &t->lanes[i];
        }
    if (t->nlanes == SERVE_API_MAX_LANES) {
        t->lanes_dropped++;
        return NULL;
    }
    struct lane *l = &t->lanes[t->nlanes];
    l->c = t->events_only ? NULL : calloc(t->width, sizeof *l->c);
    if (!t->events_only && !l->c) {
        t->err = -ENOMEM;
        return NULL;
    }
    l->tid = tid;
    snprintf(l->name, sizeof l->name, "%s", name ? name : "");
    t->nlanes++;
    return l;
}

static uint32_t lane_index(const struct tl *t, const struct lane *l)
{
    return (uint32_t)(l - t->lanes);
}

/* Index of location id loc in the answer's "locs" (named from meta). */
static uint32_t loc_index(struct tl *t, const struct q_rec_src *src, uint32_t loc)
{
    for (uint32_t i = 0; i < t->nlocs; i++)
        if (t->loc_id[i] == loc)
            return i;
    if (t->nlocs == MAX_LOCS)
        return 0;                   /* index 0 is always "poll" (no location) */
    const struct shm_meta_entry *e = loc && src && src->meta && src->meta->location
        ? src->meta->location(src->meta->ctx, loc) : NULL;
    char buf[Q_LOC_TEXT_MAX];
    if (!loc)
        snprintf(buf, sizeof buf, "poll");
    else if (src && src->meta)
        q_loc_text(e, loc, buf, sizeof buf);
    else if (t->names || q_names_open(t->s, &t->names) == 0)
        q_names_location(t->names, t->process_id, loc, buf, sizeof buf);   /* the same text */
    else
        q_loc_text(NULL, loc, buf, sizeof buf);
    char *c = strdup(buf);
    if (!c) {
        t->err = -ENOMEM;
        return 0;
    }
    t->loc_id[t->nlocs] = loc;
    t->loc_name[t->nlocs] = c;
    return t->nlocs++;
}

static void top_offer(struct tl *t, const struct top *e)
{
    size_t i;
    if (t->ntop < SERVE_API_TOP)
        i = t->ntop++;
    else if (e->dur > t->top[SERVE_API_TOP - 1].dur)
        i = SERVE_API_TOP - 1;
    else
        return;
    t->top[i] = *e;
    for (; i > 0 && t->top[i - 1].dur < t->top[i].dur; i--) {
        struct top x = t->top[i - 1];
        t->top[i - 1] = t->top[i];
        t->top[i] = x;
    }
}

/* A finished poll or parked span [start, end] on lane l. */
static void interval(struct tl *t, struct lane *l, const struct q_poll *p, uint32_t loc,
                     bool unfinished, enum q_open_why why)
{
    bool parked = p->task == Q_POLL_PARKED;
    uint64_t s = p->start_ns < t->from ? t->from : p->start_ns;
    uint64_t e = p->end_ns > t->to ? t->to : p->end_ns;
    if (e < s)
        e = s;
    uint64_t dur = p->end_ns - p->start_ns;
    if (parked)
        t->nparks++;
    else {
        t->npolls++;
        l->polls++;
        struct top tp = { .start = p->start_ns, .dur = dur, .task = p->task,
                          .lane = lane_index(t, l), .loc = loc, .unfinished = unfinished,
                          .why = why };
        top_offer(t, &tp);
    }
    /* buckets: busy/parked time split over the columns the interval covers;
     * the poll is counted once (its first column in the window) and is the
     * longest candidate of every column it covers */
    uint32_t a = px_of(t, s), b = px_of(t, e);
    for (uint32_t px = a; px <= b; px++) {
        uint64_t c0 = t->from + (uint64_t)((unsigned __int128)t->span * px / t->width);
        uint64_t c1 = t->from + (uint64_t)((unsigned __int128)t->span * (px + 1) / t->width);
        uint64_t lo = s > c0 ? s : c0, hi = e < c1 ? e : c1;
        uint64_t in = hi > lo ? hi - lo : 0;
        struct cell *c = &l->c[px];
        if (parked) {
            c->parked_ns += in;
            continue;
        }
        c->busy_ns += in;
        if (px == a)
            c->count++;
        else
            c->carried++;
        if (dur >= c->max_ns) {
            c->max_ns = dur;
            c->max_loc = loc;
        }
    }
    if (t->overflow)
        return;
    if (t->nitems == SERVE_API_MAX_ITEMS) {
        t->overflow = true;
        return;
    }
    t->items[t->nitems++] = (struct item){ .start = p->start_ns, .dur = dur,
                                           .task = p->task, .lane = lane_index(t, l),
                                           .loc = loc };
}

static int counter_point(struct tl *t, const struct q_rec_src *src,
                         const struct d9_rec_queue_depth *q)
{
    struct counter *c = NULL;
    for (uint32_t i = 0; i < t->ncounters; i++)
        if (t->counters[i].runtime == q->runtime && t->counters[i].worker == q->worker)
            c = &t->counters[i];
    if (!c) {
        if (t->ncounters == SERVE_API_MAX_COUNTERS)
            return 0;
        c = &t->counters[t->ncounters];
        c->max1 = calloc(t->width, sizeof *c->max1);
        if (!c->max1)
            return -ENOMEM;
        t->ncounters++;
        c->runtime = q->runtime;
        c->worker = q->worker;
        const char *rt = src->meta && src->meta->runtime
            ? src->meta->runtime(src->meta->ctx, q->runtime) : NULL;
        char rb[16];
        if (!rt) {
            snprintf(rb, sizeof rb, "#%u", (unsigned)q->runtime);
            rt = rb;
        }
        if (q->worker == D9_WORKER_NONE)
            snprintf(c->name, sizeof c->name, "queue %s global", rt);
        else
            snprintf(c->name, sizeof c->name, "queue %s w%u", rt, (unsigned)q->worker);
    }
    uint32_t px = px_of(t, q->h.ts);
    uint64_t v = q->depth == UINT64_MAX ? UINT64_MAX : q->depth + 1;
    if (v > c->max1[px])
        c->max1[px] = v;
    return 0;
}

/* Does the custom event match the name / field filters? */
static bool event_matches(const struct tl *t, const struct q_decoded *d)
{
    const struct serve_params *p = t->p;
    if (p->event[0] && (!d->event || strcmp(d->event, p->event) != 0))
        return false;
    if (!p->field[0])
        return true;
    const struct q_field *f = q_decode_field(d, p->field);
    if (!f)
        return false;
    char b[SERVE_API_STR_MAX + 8];
    switch (f->type) {
    case Q_V_U64: snprintf(b, sizeof b, "%" PRIu64, f->u); break;
    case Q_V_HEX: snprintf(b, sizeof b, "0x%" PRIx64, f->u); break;
    case Q_V_I64: snprintf(b, sizeof b, "%" PRId64, f->i); break;
    case Q_V_F64: snprintf(b, sizeof b, "%g", f->f); break;
    case Q_V_BOOL: snprintf(b, sizeof b, "%s", f->u ? "true" : "false"); break;
    case Q_V_STR:
        return f->slen == strlen(p->value) && memcmp(f->s, p->value, f->slen) == 0;
    default: return false;
    }
    return strcmp(b, p->value) == 0;
}

static void event_json(FILE *f, const struct tl *t, const struct q_rec_src *src,
                       const struct lane *l, const struct q_decoded *d)
{
    fprintf(f, "{\"t\":%" PRIu64 ",\"tid\":%" PRIu32 ",\"lane\":%d,\"name\":",
            d->ts - t->from, src->tid, l ? (int)lane_index(t, l) : -1);
    const char *n = d->event ? d->event : "custom";
    q_text_json(f, n, strlen(n));
    fputs(",\"fields\":{", f);
    q_decode_print_json_members(f, d, d->first_custom, d->nfields, false);
    fputs("}}", f);
}

/* /api/events: ev_limit in time order after the first offset (the page's
 * table and its pages). A
 * timeline keeps the first event of each pixel column instead, and
 * events_sample picks among the columns evenly: markers over the whole
 * window, not its first ev_limit events at the left edge. */
static void event_out(struct tl *t, const struct q_rec_src *src, struct lane *l,
                      const struct q_decoded *d)
{
    t->events_total++;
    if (t->col_ev) {
        uint32_t px = px_of(t, d->ts);
        if (t->col_ev[px])
            return;
        char *b = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&b, &n);
        if (!f) {
            t->err = -ENOMEM;
            return;
        }
        event_json(f, t, src, l, d);
        if (fclose(f) != 0) {
            free(b);
            t->err = -ENOMEM;
            return;
        }
        t->col_ev[px] = b;
        return;
    }
    if (t->ev_skipped < t->p->offset) {
        t->ev_skipped++;            /* an earlier page's */
        return;
    }
    if (t->nevents >= t->ev_limit)
        return;
    fputs(t->nevents ? ",\n" : "\n", t->ev);
    event_json(t->ev, t, src, l, d);
    t->nevents++;
}

static void events_sample(struct tl *t)
{
    uint32_t cols = 0;
    for (uint32_t px = 0; px < t->width; px++)
        cols += t->col_ev[px] != NULL;
    uint32_t k = cols > t->ev_limit ? (cols + t->ev_limit - 1) / t->ev_limit : 1;
    for (uint32_t px = 0, i = 0; px < t->width; px++) {
        if (!t->col_ev[px])
            continue;
        if (i++ % k == 0 && t->nevents < t->ev_limit) {
            fputs(t->nevents ? ",\n" : "\n", t->ev);
            fputs(t->col_ev[px], t->ev);
            t->nevents++;
        }
    }
}

/* A gap (q_filter.gaps) of src's thread: listed for the page (bounded). */
static void gap_seen(struct tl *t, const struct q_rec_src *src)
{
    for (size_t i = 0; i < t->ngaps; i++)
        if (t->gaps[i][1] == src->gap_from && t->gaps[i][2] == src->gap_to)
            return;                 /* seen by the look-back or look-ahead already */
    struct lane *l = lane_of(t, src->tid, NULL);
    if (!l || t->ngaps == SERVE_API_MAX_GAPS)
        return;
    t->gaps[t->ngaps][0] = lane_index(t, l);
    t->gaps[t->ngaps][1] = src->gap_from;
    t->gaps[t->ngaps][2] = src->gap_to;
    t->ngaps++;
}

/* One record (or a gap: rec NULL) into the loop-work state; an interval it
 * ends is listed on its thread's lane. */
static int lw_feed(struct tl *t, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                   size_t len)
{
    struct q_loopwork_iv iv;
    int r = q_loopwork_feed(t->lw, src, rec, len, &iv);
    if (r <= 0)
        return r;
    struct lane *l = lane_of(t, iv.tid, NULL);
    if (!l)
        return t->err;
    t->lw_total++;
    if (t->nlw < SERVE_API_MAX_LOOPWORK)
        t->lwv[t->nlw++] = (struct lwork){ .start = iv.start_ns, .dur = iv.end_ns - iv.start_ns,
                                           .samples = iv.samples, .lane = lane_index(t, l) };
    return 0;
}

static int on_record(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                     size_t len)
{
    struct tl *t = arg;
    if (src->process_id != t->process_id)
        return 0;
    if (t->err)
        return t->err;
    if (src->ring == SYM_SEG_RING)
        return 0;                   /* symbol maps: no timeline form */
    if (!rec) {                     /* a block not read: nothing pairs across it */
        gap_seen(t, src);
        struct q_poll none;
        if (!t->events_only && lw_feed(t, src, NULL, 0) < 0)
            return -ENOMEM;
        return q_pair_feed(t->polls, src, NULL, 0, &none);
    }
    if (t->events_only) {
        if (rec->type != D9_REC_CUSTOM)
            return 0;
        struct q_decoded d;
        if (q_decode(rec, len, src->meta, &d) < 0 || !event_matches(t, &d))
            return 0;
        event_out(t, src, NULL, &d);
        return 0;
    }
    uint32_t tid = src->tid;
    if (rec->type == D9_REC_CPU_SAMPLE || rec->type == D9_REC_SCHED_SWITCH) {
        struct d9_rec_stack s;
        if (len < sizeof s)
            return 0;
        memcpy(&s, rec, sizeof s);
        if (rec->type == D9_REC_CPU_SAMPLE && lw_feed(t, src, rec, len) < 0)
            return -ENOMEM;
        struct lane *l = lane_of(t, s.tid, NULL);
        if (l) {
            struct cell *c = &l->c[px_of(t, rec->ts)];
            if (rec->type == D9_REC_CPU_SAMPLE)
                c->samples++;
            else
                c->offcpu++;
        }
        return t->err;
    }
    struct lane *l = lane_of(t, tid, src->thread);
    if (!l)
        return t->err;
    struct q_poll done;
    int rc;
    switch (rec->type) {
    case D9_REC_POLL_START: {
        struct d9_rec_poll_start ps;
        if (len < sizeof ps)
            return 0;
        memcpy(&ps, rec, sizeof ps);
        struct q_wake_pending w;
        if (q_wake_take(t->pending, src->process_id, ps.task, &w)) {
            t->wakes_total++;
            if (t->nwakes < SERVE_API_MAX_WAKES) {
                uint64_t *a = t->wakes[t->nwakes++];
                a[0] = w.ts - t->from;
                a[1] = w.data;
                a[2] = rec->ts - t->from;
                a[3] = lane_index(t, l);
            }
        }
    }
        /* fall through */
    case D9_REC_POLL_END:
    case D9_REC_WORKER_PARK:
    case D9_REC_WORKER_UNPARK: {
        uint64_t wait;
        if (q_sched_wait(rec, len, &wait)) {
            /* a wait sample: park and unpark records alike (q_sched.h) */
            unsigned b = 0;
            for (uint64_t v = wait; v > 1 && b < SERVE_API_HIST - 1; v >>= 1)
                b++;
            l->hist[b]++;
            l->waits++;
            l->wait_sum_ns += wait;
            if (wait > l->wait_max_ns)
                l->wait_max_ns = wait;
            struct cell *c = &l->c[px_of(t, rec->ts)];
            if (wait > c->sched_max_ns)
                c->sched_max_ns = wait;
        }
        if (lw_feed(t, src, rec, len) < 0)
            return -ENOMEM;
        rc = q_pair_feed(t->polls, src, rec, len, &done);
        if (rc < 0)
            return rc;
        if (rc > 0)
            interval(t, l, &done, done.task == Q_POLL_PARKED ? 0 : loc_index(t, src, done.loc),
                     false, Q_OPEN_ALIVE);
        return t->err;
    }
    case D9_REC_WAKE: {
        struct d9_rec_wake w;
        if (len < sizeof w)
            return 0;
        memcpy(&w, rec, sizeof w);
        struct q_wake_pending pw = { .ts = rec->ts, .data = lane_index(t, l) };
        if (q_wake_put(t->pending, src->process_id, w.wakee, &pw) < 0)
            return -ENOMEM;
        return 0;
    }
    case D9_REC_QUEUE_DEPTH: {
        struct d9_rec_queue_depth q;
        if (len < sizeof q)
            return 0;
        memcpy(&q, rec, sizeof q);
        return counter_point(t, src, &q);
    }
    case D9_REC_CUSTOM: {
        struct q_decoded d;
        if (q_decode(rec, len, src->meta, &d) < 0)
            return 0;
        if (d.event && strncmp(d.event, Q_DECODE_INTERNAL, strlen(Q_DECODE_INTERNAL)) == 0)
            return 0;
        if (event_matches(t, &d))
            event_out(t, src, l, &d);
        return 0;
    }
    default:
        return 0;
    }
}

/* Nonempty cells of every lane and counter when columns merge by k. */
static size_t count_cells(const struct tl *t, uint32_t k)
{
    size_t n = 0;
    for (uint32_t i = 0; i < t->nlanes; i++) {
        const struct cell *c = t->lanes[i].c;
        for (uint32_t a = 0; a < t->width; a += k) {
            bool poll = false, park = false, smp = false, off = false, sch = false;
            for (uint32_t px = a; px < a + k && px < t->width; px++) {
                poll |= c[px].count || c[px].carried || c[px].busy_ns;
                park |= c[px].parked_ns != 0;
                smp |= c[px].samples != 0;
                off |= c[px].offcpu != 0;
                sch |= c[px].sched_max_ns != 0;
            }
            n += (size_t)poll * (t->overflow ? 1 : 0) + (size_t)park * (t->overflow ? 1 : 0) +
                 (size_t)smp + (size_t)off + (size_t)sch;
        }
    }
    for (uint32_t i = 0; i < t->ncounters; i++)
        for (uint32_t a = 0; a < t->width; a += k) {
            bool any = false;
            for (uint32_t px = a; px < a + k && px < t->width; px++)
                any |= t->counters[i].max1[px] != 0;
            n += any;
        }
    return n;
}

static void print_lane(const struct tl *t, const struct lane *l, uint32_t k, FILE *o)
{
    fprintf(o, "{\"tid\":%" PRIu32 ",\"name\":", l->tid);
    q_text_json(o, l->name, strlen(l->name));
    fprintf(o, ",\"polls\":%" PRIu64 ",\"waits\":%" PRIu64 ",\"wait_sum_ns\":%" PRIu64
            ",\"wait_max_ns\":%" PRIu64, l->polls, l->waits, l->wait_sum_ns, l->wait_max_ns);
    const char *keys[5] = { "buckets", "parked", "samples", "offcpu", "sched" };
    for (int kind = 0; kind < 5; kind++) {
        if (kind < 2 && !t->overflow)
            continue;
        fprintf(o, ",\"%s\":[", keys[kind]);
        bool first = true;
        for (uint32_t a = 0; a < t->width; a += k) {
            struct cell m = { 0 };
            m.carried = l->c[a].carried;    /* over the merged columns from before them */
            for (uint32_t px = a; px < a + k && px < t->width; px++) {
                const struct cell *c = &l->c[px];
                m.busy_ns += c->busy_ns;
                m.parked_ns += c->parked_ns;
                m.count += c->count;
                m.samples += c->samples;
                m.offcpu += c->offcpu;
                if ((c->count || c->carried) && c->max_ns >= m.max_ns) {
                    m.max_ns = c->max_ns;
                    m.max_loc = c->max_loc;
                }
                if (c->sched_max_ns > m.sched_max_ns)
                    m.sched_max_ns = c->sched_max_ns;
            }
            const char *sep = first ? "" : ",";
            switch (kind) {
            case 0:
                if (!m.count && !m.carried && !m.busy_ns)
                    continue;
                fprintf(o, "%s[%u,%" PRIu64 ",%u,%" PRIu64 ",%u,%u]", sep, a, m.busy_ns, m.count,
                        m.max_ns, m.max_loc, m.carried);
                break;
            case 1:
                if (!m.parked_ns)
                    continue;
                fprintf(o, "%s[%u,%" PRIu64 "]", sep, a, m.parked_ns);
                break;
            case 2:
                if (!m.samples)
                    continue;
                fprintf(o, "%s[%u,%u]", sep, a, m.samples);
                break;
            case 3:
                if (!m.offcpu)
                    continue;
                fprintf(o, "%s[%u,%u]", sep, a, m.offcpu);
                break;
            default:
                if (!m.sched_max_ns)
                    continue;
                fprintf(o, "%s[%u,%" PRIu64 "]", sep, a, m.sched_max_ns);
                break;
            }
            first = false;
        }
        fputc(']', o);
    }
    fputs(",\"sched_hist\":[", o);
    for (unsigned b = 0; b < SERVE_API_HIST; b++)
        fprintf(o, "%s%" PRIu64, b ? "," : "", l->hist[b]);
    fputs("]}", o);
}

/* ts as an offset from the window's start: negative before it (a poll
 * that started before the window is returned whole). */
static int64_t rel(const struct tl *t, uint64_t ts)
{
    return ts >= t->from ? (int64_t)(ts - t->from) : -(int64_t)(t->from - ts);
}

static void print_timeline(struct tl *t, FILE *o)
{
    uint32_t k = 1;
    while (k < t->width && count_cells(t, k) > SERVE_API_MAX_ITEMS)
        k *= 2;
    fprintf(o, "{\"pid\":%" PRIu32 ",\"from\":%" PRIu64 ",\"to\":%" PRIu64 ",\"width\":%u"
            ",\"mode\":\"%s\",\"bucket_px\":%u,\"polls\":%" PRIu64 ",\"parks\":%" PRIu64
            ",\"lanes_dropped\":%" PRIu64 ",\"skipped_blocks\":%" PRIu64
            ",\"missing_segments\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"broken\":%" PRIu64
            ",\"edge_partial\":%s,\"gaps\":[",
            t->p->pid, t->from, t->to, t->width, t->overflow ? "buckets" : "detail", k,
            t->npolls, t->nparks, t->lanes_dropped, t->bad_blocks, t->missing_segments, t->lost,
            t->broken, t->edge_partial ? "true" : "false");
    for (size_t i = 0; i < t->ngaps; i++)
        fprintf(o, "%s[%" PRIu64 ",%" PRId64 ",%" PRId64 "]", i ? "," : "", t->gaps[i][0],
                rel(t, t->gaps[i][1]), rel(t, t->gaps[i][2]));
    fputs("],\n\"locs\":[", o);
    for (uint32_t i = 0; i < t->nlocs; i++) {
        if (i)
            fputc(',', o);
        q_text_json(o, t->loc_name[i], strlen(t->loc_name[i]));
    }
    fputs("],\n\"lanes\":[", o);
    for (uint32_t i = 0; i < t->nlanes; i++) {
        fputs(i ? ",\n" : "\n", o);
        print_lane(t, &t->lanes[i], k, o);
    }
    fputs("],\n\"items\":[", o);
    if (!t->overflow) {
        for (size_t i = 0; i < t->nitems; i++) {
            const struct item *it = &t->items[i];
            if (it->task == Q_POLL_PARKED)
                fprintf(o, "%s[%u,%" PRId64 ",%" PRIu64 ",-1,0]", i ? "," : "", it->lane,
                        rel(t, it->start), it->dur);
            else
                fprintf(o, "%s[%u,%" PRId64 ",%" PRIu64 ",%u,%" PRIu64 "]", i ? "," : "",
                        it->lane, rel(t, it->start), it->dur, it->loc, it->task);
        }
    }
    fputs("],\n\"counters\":[", o);
    for (uint32_t i = 0; i < t->ncounters; i++) {
        const struct counter *c = &t->counters[i];
        fprintf(o, "%s{\"name\":", i ? "," : "");
        q_text_json(o, c->name, strlen(c->name));
        fputs(",\"points\":[", o);
        bool first = true;
        for (uint32_t a = 0; a < t->width; a += k) {
            uint64_t m = 0;
            for (uint32_t px = a; px < a + k && px < t->width; px++)
                if (c->max1[px] > m)
                    m = c->max1[px];
            if (!m)
                continue;
            fprintf(o, "%s[%u,%" PRIu64 "]", first ? "" : ",", a, m - 1);
            first = false;
        }
        fputs("]}", o);
    }
    fprintf(o, "],\n\"wakes_total\":%" PRIu64 ",\"wakes\":[", t->wakes_total);
    for (size_t i = 0; i < t->nwakes; i++)
        fprintf(o, "%s[%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", i ? "," : "",
                t->wakes[i][0], t->wakes[i][1], t->wakes[i][2], t->wakes[i][3]);
    fputs("],\n\"top\":[", o);
    for (size_t i = 0; i < t->ntop; i++) {
        const struct top *e = &t->top[i];
        fprintf(o, "%s{\"t\":%" PRId64 ",\"dur\":%" PRIu64 ",\"lane\":%u,\"loc\":%u,\"task\":%"
                PRIu64, i ? "," : "", rel(t, e->start), e->dur, e->lane, e->loc, e->task);
        if (e->unfinished)
            fprintf(o, ",\"unfinished\":true,\"unfinished_why\":\"%s\"",
                    q_pair_open_text(e->why));
        fputc('}', o);
    }
    fprintf(o, "],\n\"loopwork_total\":%" PRIu64 ",\"loopwork\":[", t->lw_total);
    for (size_t i = 0; i < t->nlw; i++)
        fprintf(o, "%s[%u,%" PRId64 ",%" PRIu64 ",%" PRIu64 "]", i ? "," : "", t->lwv[i].lane,
                rel(t, t->lwv[i].start), t->lwv[i].dur, t->lwv[i].samples);
    fprintf(o, "],\n\"events_total\":%" PRIu64 ",\"events\":[", t->events_total);
    fwrite(t->evbuf, 1, t->evlen, o);
    fputs("]}\n", o);
}

/* ---- the lanes: every thread of the process, in a stable order ---------------- */
struct thr_row {
    uint32_t tid;
    char name[32];
    uint64_t first_ns, last_ns;
};

struct thr_list {
    struct thr_row r[SERVE_API_MAX_LANES];
    uint32_t n;
    uint64_t dropped;
};

static int thr_row(void *arg, const struct idx_read_thread *r)
{
    struct thr_list *l = arg;
    struct thr_row *e = NULL;
    for (uint32_t i = 0; i < l->n && !e; i++)
        if (l->r[i].tid == r->tid)
            e = &l->r[i];
    if (!e) {
        if (l->n == SERVE_API_MAX_LANES) {
            l->dropped++;
            return 0;
        }
        e = &l->r[l->n++];
        *e = (struct thr_row){ .tid = r->tid, .first_ns = r->first_ns, .last_ns = r->last_ns };
    } else {
        if (r->first_ns && (!e->first_ns || r->first_ns < e->first_ns))
            e->first_ns = r->first_ns;
        if (r->last_ns > e->last_ns)
            e->last_ns = r->last_ns;
    }
    if (r->name[0])                 /* rows come by first_ns: the newest name wins */
        snprintf(e->name, sizeof e->name, "%s", r->name);
    return 0;
}

static _Thread_local uint32_t thr_main;  /* sorts first (qsort has no argument) */

static int thr_cmp(const void *a, const void *b)
{
    const struct thr_row *x = a, *y = b;
    bool mx = x->tid == thr_main, my = y->tid == thr_main;
    if (mx != my)
        return mx ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* ---- overview from the index alone ------------------------------------------ */
struct ov_lane {
    uint32_t tid;
    char name[32];
    double *n;                      /* records per column */
};

/* one of the window's longest polls, from the segments' rollups: the
 * longest poll of a (segment, runtime, worker, location, 1 s bucket) */
struct ov_top {
    uint64_t bucket, dur;
    uint32_t loc;
    uint16_t runtime, worker;
};

struct overview {
    uint64_t from, span;
    uint32_t width;
    int64_t process_id;
    struct ov_lane lanes[SERVE_API_MAX_LANES];
    uint32_t nlanes;
    uint64_t total;
    struct ov_top top[SERVE_API_TOP];
    size_t ntop;
    struct q_rollup_stats rst;
    int err;
};

static struct ov_lane *ov_lane_add(struct overview *o, uint32_t tid, const char *name)
{
    if (o->nlanes == SERVE_API_MAX_LANES)
        return NULL;
    struct ov_lane *l = &o->lanes[o->nlanes];
    l->n = calloc(o->width, sizeof *l->n);
    if (!l->n) {
        o->err = -ENOMEM;
        return NULL;
    }
    l->tid = tid;
    snprintf(l->name, sizeof l->name, "%s", name ? name : "");
    o->nlanes++;
    return l;
}

static int ov_block(void *arg, const struct idx_read_block_stat *b)
{
    struct overview *o = arg;
    if (b->ring >= SYM_SEG_RING)
        return 0;                   /* the collector's pseudo rings (samples, maps) */
    o->total += b->nrec;
    struct ov_lane *l = NULL;
    for (uint32_t i = 0; i < o->nlanes; i++)
        if (o->lanes[i].tid == b->tid)
            l = &o->lanes[i];
    if (!l && !(l = ov_lane_add(o, b->tid, NULL)))
        return o->err ? o->err : 0;
    /* spread the block's records evenly over the columns it covers */
    uint64_t t0 = b->t_first < o->from ? o->from : b->t_first;
    uint64_t t1 = b->t_last > o->from + o->span ? o->from + o->span : b->t_last;
    if (t1 < t0)
        t1 = t0;
    uint64_t c0 = (uint64_t)((unsigned __int128)(t0 - o->from) * o->width / o->span);
    uint64_t c1 = (uint64_t)((unsigned __int128)(t1 - o->from) * o->width / o->span);
    if (c0 >= o->width)
        c0 = o->width - 1;
    if (c1 >= o->width)
        c1 = o->width - 1;
    double share = (double)b->nrec * (b->t_last > b->t_first
        ? (double)(t1 - t0 + 1) / (double)(b->t_last - b->t_first + 1) : 1.0);
    for (uint64_t c = c0; c <= c1; c++)
        l->n[c] += share / (double)(c1 - c0 + 1);
    return 0;
}

static int ov_name(void *arg, const struct idx_read_thread *r)
{
    struct overview *o = arg;
    for (uint32_t i = 0; i < o->nlanes; i++)
        if (o->lanes[i].tid == r->tid && !o->lanes[i].name[0])
            snprintf(o->lanes[i].name, sizeof o->lanes[i].name, "%s", r->name);
    return 0;
}

/* The polls of a segment's rollups that start in the window (by their
 * 1 s bucket) offered to the longest-polls list: their max only, the
 * finished polls' (rollup.h), so no record is read. */
static int ov_rollup(void *arg, const struct q_rollup_seg *g)
{
    struct overview *o = arg;
    if (g->process_id != o->process_id)
        return 0;
    size_t off = 0;
    uint32_t i = 0;
    struct rollup_poll rp;
    while (rollup_next_poll(g->v, &off, &i, &rp) == 1) {
        if (!rp.max_ns || rp.bucket_ns > o->from + o->span ||
            rp.bucket_ns + ROLLUP_BUCKET_NS <= o->from)
            continue;
        if (o->ntop == SERVE_API_TOP && o->top[SERVE_API_TOP - 1].dur >= rp.max_ns)
            continue;
        size_t k = o->ntop < SERVE_API_TOP ? o->ntop++ : SERVE_API_TOP - 1;
        while (k > 0 && o->top[k - 1].dur < rp.max_ns) {
            o->top[k] = o->top[k - 1];
            k--;
        }
        o->top[k] = (struct ov_top){ .bucket = rp.bucket_ns, .dur = rp.max_ns, .loc = rp.loc,
                                     .runtime = rp.runtime, .worker = rp.worker };
    }
    return 0;
}

static void ov_print(const struct overview *o, struct q_store *s, uint32_t pid, uint64_t to,
                     FILE *out)
{
    uint32_t k = 1;
    for (;; k *= 2) {
        size_t n = 0;
        for (uint32_t i = 0; i < o->nlanes; i++)
            for (uint32_t a = 0; a < o->width; a += k) {
                double v = 0;
                for (uint32_t px = a; px < a + k && px < o->width; px++)
                    v += o->lanes[i].n[px];
                n += v > 0;
            }
        if (n <= SERVE_API_MAX_ITEMS || k >= o->width)
            break;
    }
    fprintf(out, "{\"pid\":%" PRIu32 ",\"from\":%" PRIu64 ",\"to\":%" PRIu64 ",\"width\":%u"
            ",\"mode\":\"index\",\"bucket_px\":%u,\"records\":%" PRIu64 ",\"polls\":0,\"parks\":0"
            ",\"lanes_dropped\":0,\"top_from\":\"rollups\",\"rollup_segments\":%" PRIu64
            ",\"rollup_missing\":%" PRIu64 ",\n\"locs\":[\"poll\"", pid, o->from, to,
            o->width, k, o->total, o->rst.segments, o->rst.not_stored);
    /* the top's locations: locs[1 + i] is top[i]'s */
    struct q_names *nm = NULL;
    bool named = q_names_open(s, &nm) == 0;
    char buf[Q_LOC_TEXT_MAX];
    for (size_t i = 0; i < o->ntop; i++) {
        const char *t = named ? q_names_location(nm, o->process_id, o->top[i].loc, buf, sizeof buf)
                              : "poll";
        fputc(',', out);
        q_text_json(out, t, strlen(t));
    }
    fputs("],\n\"lanes\":[", out);
    for (uint32_t i = 0; i < o->nlanes; i++) {
        const struct ov_lane *l = &o->lanes[i];
        fprintf(out, "%s{\"tid\":%" PRIu32 ",\"name\":", i ? ",\n" : "\n", l->tid);
        q_text_json(out, l->name, strlen(l->name));
        fputs(",\"polls\":0,\"density\":[", out);
        bool first = true;
        for (uint32_t a = 0; a < o->width; a += k) {
            double v = 0;
            for (uint32_t px = a; px < a + k && px < o->width; px++)
                v += l->n[px];
            if (v <= 0)
                continue;
            fprintf(out, "%s[%u,%.0f]", first ? "" : ",", a, v < 1 ? 1 : v);
            first = false;
        }
        fputs("],\"samples\":[],\"offcpu\":[],\"sched\":[],\"sched_hist\":[]}", out);
    }
    fputs("],\n\"items\":[],\n\"counters\":[],\n\"wakes_total\":0,\"wakes\":[],\n\"top\":[", out);
    /* t: the start of the second the poll started in (approx: the rollups
     * keep no single poll); worker: the runtime's worker, not a lane */
    for (size_t i = 0; i < o->ntop; i++) {
        const struct ov_top *e = &o->top[i];
        const char *rt = named ? q_names_runtime(nm, o->process_id, e->runtime, buf, sizeof buf)
                               : "";
        fprintf(out, "%s{\"t\":%" PRId64 ",\"dur\":%" PRIu64 ",\"lane\":-1,\"loc\":%zu"
                ",\"approx\":true,\"within_ns\":%llu,\"worker\":%u,\"runtime\":", i ? "," : "",
                e->bucket >= o->from ? (int64_t)(e->bucket - o->from)
                                     : -(int64_t)(o->from - e->bucket),
                e->dur, i + 1, (unsigned long long)ROLLUP_BUCKET_NS, e->worker);
        q_text_json(out, rt, strlen(rt));
        fputc('}', out);
    }
    fputs("],\n\"events_total\":0,\"events\":[]}\n", out);
    if (nm)
        q_names_close(nm);
}

/* 1 when the window holds more than SERVE_API_SCAN_MAX records and the
 * answer (from the index and the rollups) was printed, 0 to scan, <0 on
 * error. Lanes: the threads of the index in lanes_from_index's order (the
 * same lanes as at every other zoom), then threads only seen in blocks. */
static int overview(struct q_store *s, int64_t process_id, uint32_t pid, uint64_t from,
                    uint64_t to, uint32_t width, FILE *out)
{
    struct overview *o = calloc(1, sizeof *o);
    struct thr_list *tl = calloc(1, sizeof *tl);
    int rc = o && tl ? 0 : -ENOMEM;
    if (rc == 0) {
        o->from = from;
        o->span = to - from;
        o->width = width;
        o->process_id = process_id;
        rc = q_store_threads(s, 0, process_id, thr_row, tl);
    }
    if (rc >= 0) {
        thr_main = pid;
        qsort(tl->r, tl->n, sizeof tl->r[0], thr_cmp);
        for (uint32_t i = 0; i < tl->n && !o->err; i++)
            ov_lane_add(o, tl->r[i].tid, tl->r[i].name);
        rc = o->err ? o->err : q_store_block_stats(s, process_id, from, to, ov_block, o);
    }
    if (rc >= 0 && o->err)
        rc = o->err;
    if (rc >= 0 && o->total > SERVE_API_SCAN_MAX) {
        q_store_threads(s, 0, process_id, ov_name, o);
        /* stored rollups only: a segment without them is left out of the
         * top (rollup_missing), never read; a failure leaves the top empty */
        if (q_rollup_each_stored(s, pid, from, to, ov_rollup, o, &o->rst) < 0)
            o->ntop = 0;
        ov_print(o, s, pid, to, out);
        rc = 1;
    } else if (rc >= 0) {
        rc = 0;
    }
    for (uint32_t i = 0; o && i < o->nlanes; i++)
        free(o->lanes[i].n);
    free(o);
    free(tl);
    return rc;
}

struct pick {
    int64_t id;
    uint64_t first, last;
    bool found;
};

static int pick_row(void *arg, const struct idx_read_process *r)
{
    struct pick *k = arg;
    /* the newest process with that pid (by first_ns: rows come in that order) */
    k->id = r->id;
    k->first = r->first_ns;
    k->last = r->last_ns;
    k->found = true;
    return 0;
}

/* The process of p's pid into *k and the window asked into [*from, *to):
 * by default the process's own records (own_span) or everything. 0, or the
 * HTTP status of the error it wrote (no pid, an index error, no such pid, an
 * empty or reversed window). */
static int pick_window(struct q_store *s, const struct serve_params *p, FILE *out, bool own_span,
                       struct pick *k, uint64_t *from, uint64_t *to)
{
    if (!p->has_pid)
        return error(out, 400, "pid is required");
    *k = (struct pick){ 0 };
    if (q_store_processes(s, p->pid, 0, UINT64_MAX, pick_row, k) < 0)
        return error(out, 500, "cannot read the index");
    if (!k->found)
        return error(out, 404, "no such pid in the store");
    *from = p->has_from ? p->from : own_span ? k->first : 0;
    *to = p->has_to ? p->to : !own_span ? UINT64_MAX :
          k->last > k->first ? k->last : k->first + 1;
    if (*from >= *to)
        return error(out, 400, "empty or reversed window (from >= to)");
    return 0;
}

/* One lane per thread the index knows, the main thread (tid == pid) first,
 * then by tid: the same lanes in the same order at every zoom, each with
 * its name, whether or not it has records in the window. Threads seen in
 * records but not indexed are appended as they come. */
static int lanes_from_index(struct tl *t, uint32_t pid)
{
    struct thr_list *l = calloc(1, sizeof *l);
    if (!l)
        return -ENOMEM;
    int rc = q_store_threads(t->s, 0, t->process_id, thr_row, l);
    thr_main = pid;
    qsort(l->r, l->n, sizeof l->r[0], thr_cmp);
    for (uint32_t i = 0; rc >= 0 && i < l->n; i++) {
        struct lane *ln = lane_of(t, l->r[i].tid, l->r[i].name);
        if (!ln) {
            rc = t->err ? t->err : -ENOMEM;
            break;
        }
        ln->first_ns = l->r[i].first_ns;
        ln->last_ns = l->r[i].last_ns;
    }
    t->lanes_dropped += l->dropped;
    free(l);
    return rc < 0 ? rc : 0;
}

/* ---- the edges: polls and parks that cross the window's start or end ----------- */
#define EDGE_TYPES (1u << D9_REC_POLL_START | 1u << D9_REC_POLL_END | \
                    1u << D9_REC_WORKER_PARK | 1u << D9_REC_WORKER_UNPARK)

struct edge {
    struct tl *t;
    struct q_pair *p;
    uint64_t settle_ts;             /* look-back: the last park/unpark or gap seen */
    bool settled;
    uint64_t waiting;               /* look-ahead: polls open at the window's end, not ended yet */
    uint64_t t_last;                /* look-ahead: the last record seen */
    uint64_t records;
    bool stopped_by_gap;
    struct q_loopwork *lw;          /* look-back: the thread's loop-work state before the window */
    bool gap;                       /* look-back: a gap was seen (the state is not kept) */
};

static void edge_stats(struct tl *t, const struct q_scan_stats *st)
{
    t->bad_blocks += st->bad_blocks;
    t->missing_segments += st->missing_segments;
    t->edge_records += st->records;
}

static int on_lookback(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                       size_t len)
{
    struct edge *e = arg;
    struct q_poll done;
    if (src->process_id != e->t->process_id)
        return 0;
    if (!rec) {
        gap_seen(e->t, src);
        e->gap = true;
        e->settled = true;          /* nothing before it pairs with what follows */
        e->settle_ts = src->gap_to;
    } else if (rec->type == D9_REC_WORKER_PARK || rec->type == D9_REC_WORKER_UNPARK) {
        e->settled = true;          /* a worker parks with no poll open on its thread */
        e->settle_ts = rec->ts;
    }
    struct q_loopwork_iv iv;        /* what ends before the window is not listed */
    if (q_loopwork_feed(e->lw, src, rec, len, &iv) < 0)
        return -ENOMEM;
    return q_pair_feed(e->p, src, rec, len, &done) < 0 ? -ENOMEM : 0;
}

struct thread_count {
    uint32_t tid;
    uint64_t n;
};

static int thread_block(void *arg, const struct idx_read_block_stat *b)
{
    struct thread_count *c = arg;
    if (b->tid == c->tid)
        c->n += b->nrec;
    return 0;
}

/* The records of thread tid's blocks meeting [from, to], by the index (0
 * when it cannot say: the read goes ahead, as without the estimate). */
static uint64_t thread_records(struct tl *t, uint32_t tid, uint64_t from, uint64_t to)
{
    struct thread_count c = { .tid = tid };
    return q_store_block_stats(t->s, t->process_id, from, to, thread_block, &c) < 0 ? 0 : c.n;
}

/* The polls and parks of lane l open at the window's start, seeded into
 * t->polls. Looks back from the window's start over the thread's records
 * only (the index picks its blocks), in steps that grow x4 from
 * SERVE_API_LOOKBACK_NS, until the thread's state there is known: a park
 * or unpark (a worker parks only between polls, so what is open after the
 * last one is exactly what is open at the start), a gap (nothing pairs
 * across it), or the thread's (else the process's) first record (a poll is
 * never longer than its thread). Bounded by SERVE_API_EDGE_MAX records
 * for the whole answer; past that the answer says edge_partial: a step
 * whose records (the index's count) would pass the bound is not read (a
 * lane's first step always is), so one step never reads many times it.
 * The state found is kept (serve_edge.h); when a kept state of the thread
 * at T <= the window's start is within EDGE_REACH spans of it, the pairing
 * starts from that state and reads [T, start) only. The look-back is not
 * cancelled when the client goes (its state serves the next zoom step;
 * bounded as above); the window's own scan is. */
#define EDGE_REACH 4u
static int lookback(struct tl *t, const struct lane *l)
{
    uint64_t first = l->first_ns ? l->first_ns : t->proc_first;
    if (first >= t->from)
        return 0;
    uint64_t step = t->span > SERVE_API_LOOKBACK_NS ? t->span : SERVE_API_LOOKBACK_NS;
    struct serve_edge_key key = { .dir_hash = serve_edge_dir_hash(q_store_dir(t->s)),
                                  .process_id = t->process_id, .proc_first = t->proc_first,
                                  .proc_last = t->proc_last, .tid = l->tid };
    struct q_poll kept[SERVE_EDGE_OPEN_MAX];
    size_t nkept = 0;
    bool kept_partial = false;
    uint64_t kept_t = 0;
    struct q_loopwork_thr kept_lw = { .used = false };
    enum serve_edge_got got = serve_edge_take(&key, t->from, step > UINT64_MAX / EDGE_REACH
                                              ? UINT64_MAX : step * EDGE_REACH, &kept_t, kept,
                                              &nkept, &kept_partial, &kept_lw, q_scan_cancelled);
    if (got == SERVE_EDGE_GONE)
        return -ECANCELED;
    bool have = got == SERVE_EDGE_FOUND;
    /* not cancelled: its state is what the request after this one needs */
    q_scan_pause_cancel(true);
    int rc = 0;
    for (;;) {
        uint64_t lb = have ? kept_t : t->from - first <= step ? first : t->from - step;
        struct edge e = { .t = t };
        if (q_pair_new(&e.p) < 0) {
            rc = -ENOMEM;
            break;
        }
        if (q_loopwork_new(&e.lw, 0) < 0) {
            q_pair_free(e.p);
            rc = -ENOMEM;
            break;
        }
        q_pair_track_parks(e.p);
        int r = 0;
        for (size_t i = 0; have && i < nkept && r >= 0; i++)
            if (q_pair_seed(e.p, &kept[i]) < 0)
                r = -ENOMEM;
        if (r >= 0 && have && kept_lw.used && q_loopwork_thread_set(e.lw, &kept_lw) < 0)
            r = -ENOMEM;
        if (r >= 0 && lb < t->from) {
            struct q_filter f = { .from = lb, .to = t->from - 1, .pid = t->p->pid, .tid = l->tid,
                                  .types = EDGE_TYPES, .gaps = true };
            struct q_scan_stats st;
            r = q_scan(t->s, &f, on_lookback, &e, &st, "d9 serve");
            edge_stats(t, &st);
        }
        bool done = have || e.settled || lb == first || t->edge_records >= SERVE_API_EDGE_MAX;
        uint64_t next = step > UINT64_MAX / 4 ? UINT64_MAX : step * 4;
        if (r >= 0 && !done) {
            /* the next step would read past the bound (the index's count of
             * the thread's records there): this one's state, partial */
            uint64_t nlb = t->from - first <= next ? first : t->from - next;
            if (t->edge_records + thread_records(t, l->tid, nlb, t->from - 1) > SERVE_API_EDGE_MAX)
                done = true;
        }
        if (r >= 0 && done) {
            bool partial = have ? kept_partial && !e.settled : !e.settled && lb != first;
            if (partial)
                t->edge_partial = true;
            /* loop work open at the window's start: its start is after
             * the last park or unpark (settled), so it was read */
            if (q_loopwork_carry(t->lw, e.lw) < 0)
                r = -ENOMEM;
            struct q_poll keep[SERVE_EDGE_OPEN_MAX];
            size_t nkeep = 0;
            bool keepable = !e.gap;
            size_t it = 0;
            struct q_poll q;
            while (r >= 0 && q_pair_next_open(e.p, &it, &q)) {
                /* a poll open across the last park lost its end: not open here */
                if (q.task != Q_POLL_PARKED && e.settled && q.start_ns < e.settle_ts)
                    continue;
                if (q.tid != l->tid)
                    continue;
                if (q_pair_seed(t->polls, &q) < 0)
                    r = -ENOMEM;
                if (q.task != Q_POLL_PARKED)
                    loc_index(t, NULL, q.loc);      /* named by the store's metadata */
                if (nkeep < SERVE_EDGE_OPEN_MAX)
                    keep[nkeep] = q;
                else
                    keepable = false;
                nkeep++;
            }
            if (r >= 0 && keepable) {
                struct q_loopwork_thr lw_at;
                bool lw_known = q_loopwork_thread_get(e.lw, t->process_id, l->tid, &lw_at);
                serve_edge_put(&key, t->from, keep, nkeep, partial, lw_known ? &lw_at : NULL);
            }
        }
        q_pair_free(e.p);
        q_loopwork_free(e.lw);
        if (r < 0 || done) {
            rc = r < 0 ? r : 0;
            break;
        }
        step = next;
    }
    q_scan_pause_cancel(false);
    if (got == SERVE_EDGE_CLAIMED)
        serve_edge_release(&key, t->from);
    return rc;
}

static int on_lookahead(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                        size_t len)
{
    struct edge *e = arg;
    struct tl *t = e->t;
    if (src->process_id != t->process_id)
        return 0;
    struct q_poll done;
    if (!rec) {
        gap_seen(t, src);
        e->stopped_by_gap = true;   /* what is still open ends unknown: never paired across */
        return 1;
    }
    e->t_last = rec->ts;
    if (t->edge_records + ++e->records > SERVE_API_EDGE_MAX) {
        t->edge_partial = true;
        return 1;
    }
    int rc = q_pair_feed(t->polls, src, rec, len, &done);
    if (rc < 0)
        return rc;
    if (rc > 0 && done.start_ns <= t->to) {
        struct lane *l = lane_of(t, done.tid, NULL);
        if (l)
            interval(t, l, &done, done.task == Q_POLL_PARKED ? 0 : loc_index(t, NULL, done.loc),
                     false, Q_OPEN_ALIVE);
        if (--e->waiting == 0)
            return 1;
    }
    return t->err;
}

/* The true ends of lane l's polls and parks open at the window's end:
 * reads the thread's records after it until the last of them ends, a gap
 * comes, or its last record; bounded like lookback. */
static int lookahead(struct tl *t, struct lane *l, uint64_t waiting)
{
    struct edge e = { .t = t, .waiting = waiting };
    uint64_t last = l->last_ns > t->proc_last ? l->last_ns : t->proc_last;
    if (last <= t->to || t->edge_records >= SERVE_API_EDGE_MAX) {
        t->edge_partial |= last > t->to;
        return 0;
    }
    struct q_filter f = { .from = t->to + 1, .to = last, .pid = t->p->pid, .tid = l->tid,
                          .types = EDGE_TYPES, .gaps = true };
    struct q_scan_stats st;
    int r = q_scan(t->s, &f, on_lookahead, &e, &st, "d9 serve");
    edge_stats(t, &st);
    if (e.t_last > l->seen_until && !e.stopped_by_gap)
        l->seen_until = e.t_last;
    return r < 0 ? r : 0;
}

static int on_lw_ahead(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                       size_t len)
{
    struct edge *e = arg;
    struct tl *t = e->t;
    if (src->process_id != t->process_id)
        return 0;
    if (!rec || t->edge_records + ++e->records > SERVE_API_EDGE_MAX) {
        t->edge_partial |= rec != NULL;
        return 1;                   /* a gap: it ends unknown, and is not listed */
    }
    int r = lw_feed(t, src, rec, len);
    if (r < 0)
        return r;
    return q_loopwork_open_since(t->lw, t->process_id, src->tid) ? 0 : 1;
}

/* The end of lane l's loop work open at the window's end: its thread's
 * records after the window until the next poll or park (bounded like
 * lookahead). Only its samples inside the window are counted. */
static int lw_lookahead(struct tl *t, struct lane *l)
{
    uint64_t last = l->last_ns > t->proc_last ? l->last_ns : t->proc_last;
    if (!q_loopwork_open_since(t->lw, t->process_id, l->tid) || last <= t->to ||
        t->edge_records >= SERVE_API_EDGE_MAX)
        return 0;
    struct edge e = { .t = t };
    struct q_filter f = { .from = t->to + 1, .to = last, .pid = t->p->pid, .tid = l->tid,
                          .types = EDGE_TYPES, .gaps = true };
    struct q_scan_stats st;
    int r = q_scan(t->s, &f, on_lw_ahead, &e, &st, "d9 serve");
    edge_stats(t, &st);
    return r < 0 ? r : 0;
}

static void tl_free(struct tl *t)
{
    for (uint32_t i = 0; i < t->nlanes; i++)
        free(t->lanes[i].c);
    for (uint32_t i = 0; i < t->ncounters; i++)
        free(t->counters[i].max1);
    for (uint32_t i = 0; i < t->nlocs; i++)
        free(t->loc_name[i]);
    q_pair_free(t->polls);
    q_names_close(t->names);
    free(t->items);
    q_wake_free(t->pending);
    free(t->wakes);
    q_loopwork_free(t->lw);
    free(t->lwv);
    if (t->ev)
        fclose(t->ev);
    for (uint32_t px = 0; t->col_ev && px < t->width; px++)
        free(t->col_ev[px]);
    free(t->col_ev);
    free(t->evbuf);
}

static int api_timeline(struct q_store *s, const struct serve_params *p, FILE *out,
                        bool events_only)
{
    if (p->has_pid && !events_only && !p->width)
        return error(out, 400, "width is required (1..4096)");
    struct pick k;
    uint64_t from, to;
    int bad = pick_window(s, p, out, true, &k, &from, &to);
    if (bad)
        return bad;
    if (!events_only) {
        int ov = overview(s, k.id, p->pid, from, to, p->width, out);
        if (ov < 0)
            return error(out, 500, "cannot read the index");
        if (ov == 1)
            return 200;
    }
    struct tl *t = calloc(1, sizeof *t);
    if (!t)
        return error(out, 500, "out of memory");
    t->p = p;
    t->s = s;
    t->process_id = k.id;
    t->proc_first = k.first;
    t->proc_last = k.last;
    t->from = from;
    t->to = to;
    t->span = to - from;
    t->width = events_only ? 1 : p->width;
    t->events_only = events_only;
    t->ev_limit = p->limit ? p->limit : SERVE_API_MAX_EVENTS;
    t->items = malloc(SERVE_API_MAX_ITEMS * sizeof *t->items);
    t->wakes = malloc(SERVE_API_MAX_WAKES * sizeof *t->wakes);
    t->lwv = malloc(SERVE_API_MAX_LOOPWORK * sizeof *t->lwv);
    t->ev = open_memstream(&t->evbuf, &t->evlen);
    t->col_ev = events_only ? NULL : calloc(t->width, sizeof *t->col_ev);
    int status = 200;
    if (!t->items || !t->wakes || !t->ev || (!events_only && !t->col_ev) ||
        q_pair_new(&t->polls) < 0 || !t->lwv || q_loopwork_new(&t->lw, 0) < 0 ||
        q_wake_new(&t->pending) < 0) {
        status = error(out, 500, "out of memory");
        goto done;
    }
    q_pair_track_parks(t->polls);
    /* "poll" (no location) is always locs[0] */
    t->loc_name[0] = strdup("poll");
    if (!t->loc_name[0]) {
        status = error(out, 500, "out of memory");
        goto done;
    }
    t->nlocs = 1;
    int r = 0;
    if (!events_only) {
        /* every thread's lane, then what was open on it at the window's start */
        r = lanes_from_index(t, p->pid);
        for (uint32_t i = 0; r >= 0 && i < t->nlanes; i++)
            r = lookback(t, &t->lanes[i]);
    }
    struct q_filter f = { .from = from, .to = to, .pid = p->pid,
                            .types = events_only ? 1u << D9_REC_CUSTOM : ~(1u << D9_REC_PAD),
                            .gaps = !events_only };
    struct q_scan_stats st = { 0 };
    if (r >= 0)
        r = q_scan(s, &f, on_record, t, &st, "d9 serve");
    t->bad_blocks += st.bad_blocks;
    t->missing_segments += st.missing_segments;
    t->lost += st.lost;
    if (r >= 0 && !t->err && !events_only) {
        /* polls and parks still open at the window's end: their true end
         * is after it; read on, thread by thread, until they end */
        size_t it = 0;
        struct q_poll q;
        while (q_pair_next_open(t->polls, &it, &q)) {
            struct lane *l = q.process_id == t->process_id ? lane_of(t, q.tid, NULL) : NULL;
            if (l)
                l->waiting++;
        }
        for (uint32_t i = 0; r >= 0 && i < t->nlanes && !t->err; i++) {
            struct lane *l = &t->lanes[i];
            l->seen_until = st.t_last < to ? st.t_last : to;
            if (l->waiting)
                r = lookahead(t, l, l->waiting);
            if (r >= 0)
                r = lw_lookahead(t, l);
        }
        /* what never ended (the process stopped, a gap, the read bound):
         * unfinished, as long as it was seen to last */
        it = 0;
        while (r >= 0 && q_pair_next_open(t->polls, &it, &q) && !t->err) {
            if (q.process_id != t->process_id || q.start_ns > to)
                continue;
            struct lane *l = lane_of(t, q.tid, NULL);
            if (!l)
                continue;
            /* the one rule of every command: open until its process's last
             * record (whole: not cut at the window's end) */
            enum q_open_why why = q_pair_end_open(s, UINT64_MAX, &q);
            interval(t, l, &q, q.task == Q_POLL_PARKED ? 0 : loc_index(t, NULL, q.loc), true,
                     why);
        }
        t->broken = q_pair_stats(t->polls)->broken;
    }
    if (t->col_ev)
        events_sample(t);
    fflush(t->ev);
    if (r < 0 || t->err) {
        status = error(out, 500, t->err == -ENOMEM ? "out of memory" : "cannot read the store");
    } else if (events_only) {
        fprintf(out, "{\"pid\":%" PRIu32 ",\"from\":%" PRIu64 ",\"to\":%" PRIu64
                ",\"events_total\":%" PRIu64, p->pid, from, to, t->events_total);
        if (p->offset)
            fprintf(out, ",\"offset\":%" PRIu64, p->offset);
        fputs(",\"events\":[", out);
        fwrite(t->evbuf, 1, t->evlen, out);
        fputs("]}\n", out);
    } else {
        print_timeline(t, out);
    }
done:
    tl_free(t);
    free(t);
    return status;
}

/* ---- /api/workers ----------------------------------------------------------------- */

/* Every worker of pid in the window (default: every record of the process):
 * serve_workers.h. */
static int api_workers(struct q_store *s, const struct serve_params *p, FILE *out)
{
    struct pick k;
    uint64_t from, to;
    int bad = pick_window(s, p, out, false, &k, &from, &to);
    if (bad)
        return bad;
    return serve_workers(s, p->pid, from, to, out);
}

/* ---- /api/flame ------------------------------------------------------------------ */
struct folded {
    char *line;                     /* "stack count" */
    size_t stack_len;
    uint64_t count;
};

static int by_count_desc(const void *a, const void *b)
{
    const struct folded *x = a, *y = b;
    return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

static int api_flame(struct q_store *s, const struct serve_params *p, FILE *out)
{
    struct pick k;
    uint64_t from, to;
    int bad = pick_window(s, p, out, true, &k, &from, &to);
    if (bad)
        return bad;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return error(out, 500, "out of memory");
    uint64_t samples = 0;
    int r = q_flame_folded(s, p->pid, from, to, p->off_cpu, f, &samples);
    fclose(f);
    if (r < 0) {
        free(buf);
        return error(out, 500, "cannot read the store");
    }
    size_t n = 0, cap = 0;
    struct folded *v = NULL;
    for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        char *sp = strrchr(line, ' ');
        if (!sp)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            struct folded *nv = realloc(v, cap * sizeof *nv);
            if (!nv) {
                free(v);
                free(buf);
                return error(out, 500, "out of memory");
            }
            v = nv;
        }
        v[n++] = (struct folded){ .line = line, .stack_len = (size_t)(sp - line),
                                  .count = strtoull(sp + 1, NULL, 10) };
    }
    if (n)
        qsort(v, n, sizeof *v, by_count_desc);
    fprintf(out, "{\"pid\":%" PRIu32 ",\"from\":%" PRIu64 ",\"to\":%" PRIu64 ",\"kind\":\"%s\""
            ",\"samples\":%" PRIu64 ",\"stacks_total\":%zu,\"stacks\":[", p->pid, from, to,
            p->off_cpu ? "off" : "cpu", samples, n);
    for (size_t i = 0; i < n && i < SERVE_API_MAX_ITEMS; i++) {
        fputs(i ? ",\n[" : "\n[", out);
        q_text_json(out, v[i].line, v[i].stack_len);
        fprintf(out, ",%" PRIu64 "]", v[i].count);
    }
    fputs("]}\n", out);
    free(v);
    free(buf);
    return 200;
}

/* The findings of pid in the window (default: every record of the process),
 * ranked, with q_find's default thresholds: d9 findings --format jsonl's
 * objects (no url) in a list, at most limit (default SERVE_API_MAX_ITEMS). */
static int api_findings(struct q_store *s, const struct serve_params *p, FILE *out)
{
    struct pick k;
    uint64_t from, to;
    int bad = pick_window(s, p, out, false, &k, &from, &to);
    if (bad)
        return bad;
    struct q_find *f;
    if (q_find_new(&f, NULL) < 0)
        return error(out, 500, "out of memory");
    int r = q_find_run(f, s, p->pid, from, to, NULL, "d9 serve");
    if (r < 0) {
        q_find_free(f);
        return error(out, 500, r == -ENOMEM ? "out of memory" : "cannot read the store");
    }
    size_t n, limit = p->limit ? p->limit : SERVE_API_MAX_ITEMS;
    const struct q_finding *v = q_find_list(f, &n);
    fprintf(out, "{\"pid\":%" PRIu32 ",\"from\":%" PRIu64 ",\"to\":%" PRIu64
            ",\"total\":%zu,\"findings\":[", p->pid, from, to, n);
    for (size_t i = 0; i < n && i < limit; i++) {
        fputs(i ? ",\n" : "\n", out);
        q_find_json(out, &v[i], (unsigned)(i + 1), NULL);
    }
    fputs("\n]}\n", out);
    q_find_free(f);
    return 200;
}

int serve_api(struct q_store *s, const char *path, const struct serve_params *p,
                  FILE *out)
{
    if (strcmp(path, "/api/flame") == 0)
        return api_flame(s, p, out);
    if (strcmp(path, "/api/processes") == 0)
        return api_processes(s, out);
    if (strcmp(path, "/api/timeline") == 0)
        return api_timeline(s, p, out, false);
    if (strcmp(path, "/api/events") == 0)
        return api_timeline(s, p, out, true);
    if (strcmp(path, "/api/workers") == 0)
        return api_workers(s, p, out);
    if (strcmp(path, "/api/findings") == 0)
        return api_findings(s, p, out);
    if (strcmp(path, "/api/triggers") == 0)
        return serve_trig_api(s, p, out);
    return error(out, 404, "no such API");
}
