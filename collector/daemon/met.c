/*
 * met.c — the collector's metrics: fed by the drain, rendered for
 * --metrics (see met.h for the definitions and bounds).
 *
 * A process's workers are a small array with a one-entry cache of the last
 * hit (records of one ring come from one worker, so the cache hits almost
 * always); the array is bounded (MET_WORKERS_MAX), so met_feed never
 * allocates. Each worker keeps its open polls in a fixed stack
 * (MET_OPEN_MAX) to pair ends with starts as q_pair does and count busy
 * time as q_sched does: the union of its finished polls, so a poll whose
 * end never comes stops no later poll from counting.
 */
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/daemon/met.h"
#include "shm/d9_abi.h"

#define MET_HIST_SHIFT0 10u     /* the first bound: 2^10 ns */
#define MET_HIST_STEP   2u      /* each bound 2^2 times the one before */
#define MET_LABELS_MAX  4u

void met_init(struct met *m)
{
    memset(m, 0, sizeof *m);
    met_text_init(&m->text);
}

void met_free(struct met *m)
{
    struct met_proc *p = m->procs;
    while (p) {
        struct met_proc *next = p->next;
        free(p);
        p = next;
    }
    met_text_free(&m->text);
    memset(m, 0, sizeof *m);
}

struct met_proc *met_proc_new(struct met *m, uint32_t pid, const char *comm)
{
    struct met_proc *mp = calloc(1, sizeof *mp);
    if (!mp)
        return NULL;
    mp->pid = pid;
    snprintf(mp->comm, sizeof mp->comm, "%s", comm ? comm : "");
    mp->next = m->procs;
    m->procs = mp;
    return mp;
}

void met_proc_ended(struct met_proc *mp, uint64_t now_ns)
{
    if (mp && !mp->ended_ns)
        mp->ended_ns = now_ns ? now_ns : 1;
}

void met_prune(struct met *m, uint64_t now_ns)
{
    struct met_proc **pp = &m->procs;
    while (*pp) {
        struct met_proc *p = *pp;
        /* ended_ns may be later than now_ns (a pass's clock is read at its start) */
        if (p->ended_ns && now_ns > p->ended_ns && now_ns - p->ended_ns >= MET_EXITED_KEEP_NS) {
            *pp = p->next;
            free(p);
        } else {
            pp = &p->next;
        }
    }
}

unsigned met_bucket(uint64_t ns)
{
    if (ns <= 1ull << MET_HIST_SHIFT0)
        return 0;
    unsigned bits = 64u - (unsigned)__builtin_clzll(ns - 1);    /* ceil(log2 ns) > 10 */
    unsigned k = (bits - MET_HIST_SHIFT0 + MET_HIST_STEP - 1) / MET_HIST_STEP;
    return k > MET_HIST_BOUNDS ? MET_HIST_BOUNDS : k;
}

/* Two series may never share their labels (Prometheus refuses the whole
 * scrape), so a runtime's label is its name as met_text will write it
 * (bytes outside printable ASCII as '_'), with "#ID" added when another
 * runtime of the process already has that label. */
void met_runtime_name(struct met_proc *mp, uint32_t id, const char *name)
{
    uint32_t i = 0;
    while (i < mp->nrt && mp->rt[i].id != id)
        i++;
    if (i == MET_RUNTIMES_MAX || !name || !*name)
        return;
    char label[MET_RUNTIME_NAME_MAX];
    size_t n = 0;
    for (; name[n] && n < MET_RUNTIME_NAME_MAX - 1; n++) {
        unsigned char c = (unsigned char)name[n];
        label[n] = c < 0x20 || c >= 0x7f ? '_' : (char)c;
    }
    label[n] = 0;
    for (uint32_t k = 0; k < mp->nrt; k++) {
        if (k != i && strcmp(mp->rt[k].name, label) == 0) {
            char suffix[16];
            int sl = snprintf(suffix, sizeof suffix, "#%" PRIu32, id);
            size_t keep = n + (size_t)sl < sizeof label ? n : sizeof label - 1 - (size_t)sl;
            memcpy(label + keep, suffix, (size_t)sl + 1);
            break;
        }
    }
    if (i == mp->nrt)
        mp->nrt++;
    mp->rt[i].id = id;
    memcpy(mp->rt[i].name, label, sizeof label);
}

static const char *runtime_label(const struct met_proc *mp, uint16_t id, char *buf, size_t cap)
{
    for (uint32_t i = 0; i < mp->nrt; i++)
        if (mp->rt[i].id == id)
            return mp->rt[i].name;
    snprintf(buf, cap, "%u", (unsigned)id);
    return buf;
}

/* ---- feeding ------------------------------------------------------------------------ */

static struct met_worker *worker_find(struct met_proc *mp, uint16_t rt, uint16_t wk);

/* The worker of a record: the last one found (almost always), else a search. */
static inline struct met_worker *worker(struct met_proc *mp, uint16_t rt, uint16_t wk)
{
    struct met_worker *w = &mp->w[mp->last];
    if (__builtin_expect(w->runtime == rt && w->worker == wk && mp->last < mp->n, 1))
        return w;
    return worker_find(mp, rt, wk);
}

__attribute__((noinline))
static struct met_worker *worker_find(struct met_proc *mp, uint16_t rt, uint16_t wk)
{
    struct met_worker *w;
    for (uint32_t i = 0; i < mp->n; i++) {
        if (mp->w[i].runtime == rt && mp->w[i].worker == wk) {
            mp->last = i;
            return &mp->w[i];
        }
    }
    if (mp->n < MET_WORKERS_MAX) {
        w = &mp->w[mp->n];
        w->runtime = rt;
        w->worker = wk;
        mp->last = mp->n++;
        return w;
    }
    mp->other_used = 1;
    return &mp->other;
}

/* Fields are read one by one from the record: copying the whole record to
 * the stack and reading a 2-byte field of it stalls on store forwarding
 * (measured: twice the cost of the walk). */
#define FIELD(r, type, f) ({ __typeof__(((type *)0)->f) v_; \
                             memcpy(&v_, (r) + offsetof(type, f), sizeof v_); v_; })

/*
 * Busy time is the union of the worker's finished polls (q_sched.c's rule,
 * counted as polls end rather than at the end of a window). An open poll's
 * inner is the busy time of the finished polls inside it, already counted:
 * when it ends, only the part of its duration (from `from`) that inner
 * does not cover is added; when it leaves without an end (its end dropped,
 * a new start of its task, past MET_OPEN_MAX), inner passes to the poll
 * below it. So a poll that never ends stops no later poll from counting.
 */
static void open_remove(struct met_worker *w, uint32_t i)
{
    if (i + 1 < w->nopen)       /* the top one (almost always): no call */
        memmove(&w->open[i], &w->open[i + 1], (w->nopen - i - 1) * sizeof w->open[0]);
    w->nopen--;
}

/* Open poll i leaves without an end: how long it ran is unknown. */
static void open_drop(struct met_worker *w, uint32_t i)
{
    uint64_t inner = w->open[i].inner;
    open_remove(w, i);
    if (i > 0)
        w->open[i - 1].inner += inner;
}

static void on_poll_start(struct met_proc *mp, const uint8_t *r)
{
    struct met_worker *w = worker(mp, FIELD(r, struct d9_rec_poll_start, runtime),
                                  FIELD(r, struct d9_rec_poll_start, worker));
    w->polls++;
    if (w == &mp->other)
        return;             /* workers share it: no pairing */
    uint64_t task = FIELD(r, struct d9_rec_poll_start, task);
    uint64_t ts = FIELD(r, struct d9_rec_hdr, ts);
    for (uint32_t i = w->nopen; i-- > 0;) {
        if (w->open[i].task == task) {
            open_drop(w, i);    /* its end was dropped: the new start replaces it */
            break;
        }
    }
    if (w->nopen == MET_OPEN_MAX)
        open_drop(w, 0);
    w->open[w->nopen++] = (struct met_open){ task, ts, ts, 0 };
}

/* q_pair's rule: an end closes the latest open start of its task. Polls
 * opened inside it and still open stay open; their time up to ts is its. */
static void on_poll_end(struct met_proc *mp, const uint8_t *r)
{
    struct met_worker *w = worker(mp, FIELD(r, struct d9_rec_poll_end, runtime),
                                  FIELD(r, struct d9_rec_poll_end, worker));
    if (w == &mp->other)
        return;
    uint64_t task = FIELD(r, struct d9_rec_poll_end, task);
    uint32_t i = w->nopen;
    while (i-- > 0)
        if (w->open[i].task == task)
            break;
    if (i == UINT32_MAX)
        return;             /* its start was dropped, or came before the collector */
    uint64_t ts = FIELD(r, struct d9_rec_hdr, ts);
    struct met_open op = w->open[i];
    uint64_t inner = op.inner;
    for (uint32_t j = i + 1; j < w->nopen; j++) {
        inner += w->open[j].inner;
        w->open[j].inner = 0;
        if (w->open[j].from < ts)
            w->open[j].from = ts;
    }
    open_remove(w, i);
    uint64_t d = ts >= op.from ? ts - op.from : 0;
    if (d > inner)
        w->busy_ns += d - inner;
    if (i > 0)
        w->open[i - 1].inner += d > inner ? d : inner;
    uint64_t dur = ts >= op.ts ? ts - op.ts : 0;
    w->poll_sum_ns += dur;
    w->hist[met_bucket(dur)]++;
}

static void on_worker(struct met_proc *mp, const uint8_t *r, uint16_t type)
{
    struct met_worker *w = worker(mp, FIELD(r, struct d9_rec_worker, runtime),
                                  FIELD(r, struct d9_rec_worker, worker));
    if (!(FIELD(r, struct d9_rec_worker, flags) & D9_WORKER_UNSAMPLED)) {
        w->waits++;
        w->wait_sum_ns += FIELD(r, struct d9_rec_worker, sched_wait_ns);
    }
    uint64_t ts = FIELD(r, struct d9_rec_hdr, ts);
    if (type == D9_REC_WORKER_PARK) {
        w->parks++;
        w->park_ts = ts;
    } else {
        w->unparks++;
        if (w != &mp->other && w->park_ts && ts >= w->park_ts)
            w->parked_ns += ts - w->park_ts;
        w->park_ts = 0;
    }
}

static void on_wake(struct met_proc *mp, const uint8_t *r)
{
    worker(mp, FIELD(r, struct d9_rec_wake, runtime),
           FIELD(r, struct d9_rec_wake, target_worker))->wakes++;
}

void met_feed(struct met_proc *mp, const uint8_t *buf, size_t n)
{
    size_t off = 0;
    while (off + D9_REC_HDR_SIZE <= n) {
        uint16_t len, type;
        memcpy(&len, buf + off, sizeof len);
        memcpy(&type, buf + off + sizeof len, sizeof type);
        if (len < D9_REC_HDR_SIZE || len > n - off)
            return;         /* the drain validated the framing: cannot happen */
        const uint8_t *r = buf + off;
        switch (type) {
        case D9_REC_POLL_START:
            if (len == sizeof(struct d9_rec_poll_start))
                on_poll_start(mp, r);
            break;
        case D9_REC_POLL_END:
            if (len == sizeof(struct d9_rec_poll_end))
                on_poll_end(mp, r);
            break;
        case D9_REC_WORKER_PARK:
        case D9_REC_WORKER_UNPARK:
            if (len == sizeof(struct d9_rec_worker))
                on_worker(mp, r, type);
            break;
        case D9_REC_WAKE:
            if (len == sizeof(struct d9_rec_wake))
                on_wake(mp, r);
            break;
        default:
            break;
        }
        off += len;
    }
}

/* ---- rendering ---------------------------------------------------------------------- */

/* The labels of a worker series: pid, comm, runtime, worker. */
struct wlabels {
    char pid[16], rt[8], wk[8];
    const char *rt_label;
    struct met_text_label l[MET_LABELS_MAX];
};

static void wlabels_set(struct wlabels *wl, const struct met_proc *p, const struct met_worker *w,
                        int other_proc, int other_worker)
{
    if (other_proc)
        snprintf(wl->pid, sizeof wl->pid, "other");
    else
        snprintf(wl->pid, sizeof wl->pid, "%" PRIu32, p->pid);
    if (other_proc || other_worker) {
        wl->rt_label = "other";
        snprintf(wl->wk, sizeof wl->wk, "other");
    } else {
        wl->rt_label = runtime_label(p, w->runtime, wl->rt, sizeof wl->rt);
        if (w->worker == D9_WORKER_NONE)
            snprintf(wl->wk, sizeof wl->wk, "none");
        else
            snprintf(wl->wk, sizeof wl->wk, "%u", (unsigned)w->worker);
    }
    wl->l[0] = (struct met_text_label){ "pid", wl->pid };
    wl->l[1] = (struct met_text_label){ "comm", other_proc ? "other" : p->comm };
    wl->l[2] = (struct met_text_label){ "runtime", wl->rt_label };
    wl->l[3] = (struct met_text_label){ "worker", wl->wk };
}

static void worker_add(struct met_worker *a, const struct met_worker *b)
{
    a->polls += b->polls;
    a->parks += b->parks;
    a->unparks += b->unparks;
    a->wakes += b->wakes;
    a->waits += b->waits;
    a->wait_sum_ns += b->wait_sum_ns;
    a->busy_ns += b->busy_ns;
    a->poll_sum_ns += b->poll_sum_ns;
    a->parked_ns += b->parked_ns;
    for (unsigned i = 0; i <= MET_HIST_BOUNDS; i++)
        a->hist[i] += b->hist[i];
}

static void proc_add(struct met_proc *a, const struct met_proc *b)
{
    for (uint32_t i = 0; i < b->n; i++)
        worker_add(&a->other, &b->w[i]);
    worker_add(&a->other, &b->other);
    a->other_used = 1;
    a->records += b->records;
    a->bytes += b->bytes;
    a->lost_full += b->lost_full;
    a->lost_mismatch += b->lost_mismatch;
    a->lost_too_big += b->lost_too_big;
    a->lost_no_ring += b->lost_no_ring;
    a->bad_stamps += b->bad_stamps;
}

/* One worker metric family: which field and how it is written. */
enum wfield { WF_POLLS, WF_HIST, WF_BUSY, WF_PARKS, WF_PARKED, WF_WAIT, WF_WAKES };
struct wfamily {
    const char *name, *type, *help;
    enum wfield f;
    int durations;              /* needs pairing: not for worker="other" */
};
static const struct wfamily wfamilies[] = {
    { "d9_worker_polls_total", "counter", "Polls (poll_start records) of the worker.", WF_POLLS, 0 },
    { "d9_worker_poll_duration_seconds", "histogram",
      "Duration of the worker's finished polls (nested ones too), poll_start to poll_end.",
      WF_HIST, 1 },
    { "d9_worker_busy_seconds_total", "counter",
      "Time the worker spent in polls: the union of its finished polls.", WF_BUSY, 1 },
    { "d9_worker_parks_total", "counter", "Worker park records.", WF_PARKS, 0 },
    { "d9_worker_parked_seconds_total", "counter",
      "Time the worker was parked, park to unpark.", WF_PARKED, 1 },
    { "d9_worker_sched_wait_seconds", "summary",
      "Run-queue wait of the worker's thread: one sample per sampled park or unpark record "
      "(_count), its wait since the previous one (_sum).", WF_WAIT, 0 },
    { "d9_worker_wakes_total", "counter",
      "Wake records whose target is the worker (worker=\"none\": no target).", WF_WAKES, 0 },
};

static const uint64_t hist_bounds[MET_HIST_BOUNDS] = {
    1ull << 10, 1ull << 12, 1ull << 14, 1ull << 16, 1ull << 18, 1ull << 20,
    1ull << 22, 1ull << 24, 1ull << 26, 1ull << 28, 1ull << 30,
};
_Static_assert(MET_HIST_SHIFT0 + MET_HIST_STEP * (MET_HIST_BOUNDS - 1) == 30, "bounds table");

static void worker_sample(struct met_text *t, const struct wfamily *f, const struct wlabels *wl,
                          const struct met_worker *w)
{
    switch (f->f) {
    case WF_POLLS:      met_text_u64(t, f->name, wl->l, MET_LABELS_MAX, w->polls); break;
    case WF_HIST:
        met_text_hist_ns(t, f->name, wl->l, MET_LABELS_MAX, hist_bounds, w->hist,
                         MET_HIST_BOUNDS, w->poll_sum_ns);
        break;
    case WF_BUSY:       met_text_ns(t, f->name, wl->l, MET_LABELS_MAX, w->busy_ns); break;
    case WF_PARKS:      met_text_u64(t, f->name, wl->l, MET_LABELS_MAX, w->parks); break;
    case WF_PARKED:     met_text_ns(t, f->name, wl->l, MET_LABELS_MAX, w->parked_ns); break;
    case WF_WAIT:
        met_text_summary_ns(t, f->name, wl->l, MET_LABELS_MAX, w->waits, w->wait_sum_ns);
        break;
    case WF_WAKES:      met_text_u64(t, f->name, wl->l, MET_LABELS_MAX, w->wakes); break;
    }
}

/* An ended process whose pid a newer process has: its series would have
 * the newer one's labels (a pid reused, or a container's app restarted
 * with the same pid), so it is left out. The list is newest first. */
static int reused_pid(const struct met *m, const struct met_proc *p)
{
    if (!p->ended_ns)
        return 0;
    for (const struct met_proc *q = m->procs; q && q != p; q = q->next)
        if (q->pid == p->pid)
            return 1;
    return 0;
}

/* The processes rendered: the first MET_PROCS_MAX in adoption order (the
 * list is newest first), then one summed "other". */
static size_t pick(struct met *m, const struct met_proc **out, struct met_proc *other)
{
    size_t n = 0, all = 0;
    for (const struct met_proc *p = m->procs; p; p = p->next)
        all++;
    size_t skip_new = all > MET_PROCS_MAX ? all - MET_PROCS_MAX : 0;   /* newest go to other */
    memset(other, 0, sizeof *other);
    size_t i = 0;
    for (const struct met_proc *p = m->procs; p; p = p->next, i++) {
        if (i < skip_new)
            proc_add(other, p);
        else if (!reused_pid(m, p))
            out[n++] = p;
    }
    return n;
}

static void render_workers(struct met_text *t, const struct met_proc *const *ps, size_t n,
                           const struct met_proc *other, int have_other)
{
    struct wlabels wl;
    for (size_t f = 0; f < sizeof wfamilies / sizeof wfamilies[0]; f++) {
        const struct wfamily *fam = &wfamilies[f];
        met_text_family(t, fam->name, fam->type, fam->help);
        for (size_t i = 0; i < n; i++) {
            const struct met_proc *p = ps[n - 1 - i];       /* oldest first */
            for (uint32_t k = 0; k < p->n; k++) {
                wlabels_set(&wl, p, &p->w[k], 0, 0);
                worker_sample(t, fam, &wl, &p->w[k]);
            }
            if (p->other_used && !fam->durations) {
                wlabels_set(&wl, p, &p->other, 0, 1);
                worker_sample(t, fam, &wl, &p->other);
            }
        }
        if (have_other && !fam->durations) {
            wlabels_set(&wl, other, &other->other, 1, 1);
            worker_sample(t, fam, &wl, &other->other);
        }
    }
}

/* One per-process family; v picks the value. */
static void render_proc_family(struct met_text *t, const char *name, const char *help,
                               const struct met_proc *const *ps, size_t n,
                               const struct met_proc *other, int have_other,
                               uint64_t (*v)(const struct met_proc *))
{
    met_text_family(t, name, "counter", help);
    char pid[16];
    for (size_t i = 0; i <= n; i++) {
        const struct met_proc *p = i < n ? ps[n - 1 - i] : other;
        if (i == n && !have_other)
            break;
        snprintf(pid, sizeof pid, i < n ? "%" PRIu32 : "other", p->pid);
        struct met_text_label l[2] = { { "pid", pid }, { "comm", i < n ? p->comm : "other" } };
        met_text_u64(t, name, l, 2, v(p));
    }
}

static uint64_t v_records(const struct met_proc *p) { return p->records; }
static uint64_t v_bytes(const struct met_proc *p) { return p->bytes; }
static uint64_t v_bad_stamps(const struct met_proc *p) { return p->bad_stamps; }

/* Lost records by cause, each as the drain read it from the rings and the
 * region at its last pass (never lower than the read before it). */
static void render_lost(struct met_text *t, const struct met_proc *const *ps, size_t n,
                        const struct met_proc *other, int have_other)
{
    met_text_family(t, "d9_lost_records_total", "counter",
                    "Records the traced process could not record, by cause: ring_full (its "
                    "ring was full), mismatch (a record of another ABI), too_big (larger than "
                    "a ring record), no_ring (a thread without a ring), each read from the "
                    "process's rings at every drain pass.");
    static const char *const causes[] = { "ring_full", "mismatch", "too_big", "no_ring" };
    char pid[16];
    for (size_t i = 0; i <= n; i++) {
        const struct met_proc *p = i < n ? ps[n - 1 - i] : other;
        if (i == n && !have_other)
            break;
        snprintf(pid, sizeof pid, i < n ? "%" PRIu32 : "other", p->pid);
        uint64_t v[4] = { p->lost_full, p->lost_mismatch, p->lost_too_big, p->lost_no_ring };
        for (unsigned c = 0; c < 4; c++) {
            struct met_text_label l[3] = { { "pid", pid }, { "comm", i < n ? p->comm : "other" },
                                           { "cause", causes[c] } };
            met_text_u64(t, "d9_lost_records_total", l, 3, v[c]);
        }
    }
}

static void gauge(struct met_text *t, const char *name, const char *type, const char *help,
                  uint64_t v)
{
    met_text_family(t, name, type, help);
    met_text_u64(t, name, NULL, 0, v);
}

static void render_health(struct met_text *t, const struct met_health *h)
{
    met_text_family(t, "d9_collector_uptime_seconds", "gauge", "Time since the collector started.");
    met_text_ns(t, "d9_collector_uptime_seconds", NULL, 0, h->uptime_ns);
    gauge(t, "d9_collector_processes", "gauge", "Traced processes being drained.", h->processes);
    gauge(t, "d9_collector_rings_in_use", "gauge", "Rings owned by a live thread.",
          h->rings_in_use);
    gauge(t, "d9_collector_rings_quarantined_total", "counter",
          "Rings no longer read because their framing was corrupt.", h->rings_quarantined);
    gauge(t, "d9_collector_regions_quarantined_total", "counter",
          "Regions no longer read after a fault (truncated file).", h->regions_quarantined);
    gauge(t, "d9_collector_regions_rejected_total", "counter",
          "Region files refused (owner, name or header).", h->regions_rejected);
    gauge(t, "d9_collector_drain_lag_bytes", "gauge",
          "Bytes of records committed in the rings and not yet drained, as of the last pass.",
          h->lag_bytes);
    met_text_family(t, "d9_collector_drain_pass_seconds", "gauge",
                    "Duration of the last drain pass over every process.");
    met_text_ns(t, "d9_collector_drain_pass_seconds", NULL, 0, h->pass_ns);
    gauge(t, "d9_collector_drain_passes_total", "counter", "Drain passes.", h->passes);
    gauge(t, "d9_collector_records_total", "counter", "Records drained into segments.",
          h->records);
    gauge(t, "d9_collector_written_bytes_total", "counter",
          "Packed record bytes written to segments.", h->bytes_written);
    gauge(t, "d9_collector_lost_records_total", "counter",
          "Records the traced processes' rings dropped.", h->lost);
    gauge(t, "d9_collector_segments_sealed_total", "counter", "Segments sealed and indexed.",
          h->segments_sealed);
    gauge(t, "d9_collector_store_bytes", "gauge", "Bytes of the store's segments.",
          h->store_bytes);
    gauge(t, "d9_collector_write_errors_total", "counter", "Failed writes to the store.",
          h->write_errors);
    gauge(t, "d9_collector_dropped_records_total", "counter",
          "Records lost because a segment could not be written.", h->dropped_records);
    met_text_family(t, "d9_triggers_total", "counter",
                    "Triggers by source (marker, shell, poll, crash) and verdict (kept, merged, "
                    "debounced, rate-limited).");
    for (int s = 0; s < TRIGD_SRC_COUNT; s++)
        for (int v = 0; v < (int)TRIGD_VERDICT_COUNT; v++) {
            struct met_text_label l[2] = {
                { "source", trigd_source_name(s) }, { "verdict", trigd_verdict_name(v) },
            };
            met_text_u64(t, "d9_triggers_total", l, 2, h->triggers[s][v]);
        }
    if (h->flight) {
        gauge(t, "d9_flight_settled_segments_total", "counter",
              "Segments the flight recorder settled (its kept windows cut out, then deleted).",
              h->flight_settled);
        gauge(t, "d9_flight_windows_cut_total", "counter",
              "Kept windows cut out of settled segments into their own segments.",
              h->flight_windows);
        gauge(t, "d9_flight_kept_bytes_total", "counter", "Bytes of the kept windows' segments.",
              h->flight_kept_bytes);
        gauge(t, "d9_flight_dropped_bytes_total", "counter",
              "Bytes of settled segments deleted once their kept windows were cut out.",
              h->flight_dropped_bytes);
    }
    if (!h->shipping)
        return;
    gauge(t, "d9_ship_backlog_segments", "gauge", "Sealed segments waiting to be uploaded.",
          h->ship_backlog);
    gauge(t, "d9_ship_backlog_bytes", "gauge", "Bytes of segments waiting to be uploaded.",
          h->ship_backlog_bytes);
    gauge(t, "d9_ship_shipped_segments_total", "counter", "Segments uploaded.", h->ship_shipped);
    gauge(t, "d9_ship_shipped_bytes_total", "counter", "Bytes uploaded.", h->ship_shipped_bytes);
    gauge(t, "d9_ship_failed_segments", "gauge", "Segments whose upload gave up.", h->ship_failed);
    gauge(t, "d9_ship_failures_total", "counter", "Upload attempts that failed.",
          h->ship_failures);
}

int met_render(struct met *m, const struct met_health *h)
{
    static const struct met_proc *ps[MET_PROCS_MAX];
    static struct met_proc other;       /* large: off the stack; drain thread only */
    struct met_text *t = &m->text;
    met_text_reset(t);
    size_t n = pick(m, ps, &other);
    int have_other = other.other_used;
    render_health(t, h);
    render_proc_family(t, "d9_records_total", "Records of the process drained into segments.",
                       ps, n, &other, have_other, v_records);
    render_proc_family(t, "d9_written_bytes_total", "Packed bytes of the process's records "
                       "written to segments.", ps, n, &other, have_other, v_bytes);
    render_proc_family(t, "d9_bad_stamps_total", "Records of the process whose timestamp was "
                       "impossible (before its start or after now).", ps, n, &other, have_other,
                       v_bad_stamps);
    render_lost(t, ps, n, &other, have_other);
    render_workers(t, ps, n, &other, have_other);
    return t->oom ? -ENOMEM : 0;
}
