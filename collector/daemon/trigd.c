/*
 * trigd.c — the collector's triggers (see trigd.h): one trig_state for the
 * daemon, fired by every source, each trigger recorded in the index and
 * counted.
 */
#include "collector/daemon/trigd.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "collector/store/col_log.h"
#include "collector/store/idx_trig.h"
#include "shm/d9_abi.h"

static struct trigd {
    struct trig_state st;
    struct idx *idx;
    uint64_t count[TRIGD_SRC_COUNT][TRIGD_VERDICT_COUNT];
    uint64_t index_errors;
    struct col_ratelimit rl;
} td;

static const char *const src_names[TRIGD_SRC_COUNT] = {
    "marker", "shell", "poll", "crash", "sched", "lost",
};
static const char *const verdict_names[TRIGD_VERDICT_COUNT] = {
    "kept", "merged", "debounced", "rate-limited",
};

const char *trigd_source_name(int source)
{
    return source >= 0 && source < TRIGD_SRC_COUNT ? src_names[source] : "?";
}

const char *trigd_verdict_name(int verdict)
{
    return verdict >= 0 && (unsigned)verdict < TRIGD_VERDICT_COUNT ? verdict_names[verdict] : "?";
}

void trigd_init(const struct trig_cfg *c)
{
    memset(&td, 0, sizeof td);
    trig_init(&td.st, c);
}

void trigd_set_index(struct idx *x) { td.idx = x; }

struct trig_state *trigd_state(void) { return &td.st; }

uint64_t trigd_count(int source, int verdict)
{
    if (source < 0 || source >= TRIGD_SRC_COUNT || verdict < 0 ||
        (unsigned)verdict >= TRIGD_VERDICT_COUNT)
        return 0;
    return td.count[source][verdict];
}

uint64_t trigd_index_errors(void) { return td.index_errors; }

/* The kept window holding t (windows are sorted and disjoint). */
static int find_win(uint64_t t, struct trig_win *out)
{
    for (unsigned i = 0; i < td.st.nwin; i++)
        if (td.st.win[i].t0_ns <= t && t <= td.st.win[i].t1_ns) {
            *out = td.st.win[i];
            return 1;
        }
    return 0;
}

int trigd_fire(uint32_t pid, int64_t process_id, uint64_t t_ns, int source, const char *reason,
               struct trig_win *win)
{
    int v = trig_fire(&td.st, pid, t_ns);
    struct trig_win w;
    memset(&w, 0, sizeof w);
    if (v == TRIG_KEPT || v == TRIG_MERGED)
        find_win(t_ns, &w);
    if (win)
        *win = w;
    if (source >= 0 && source < TRIGD_SRC_COUNT && (unsigned)v < TRIGD_VERDICT_COUNT)
        td.count[source][v]++;
    char why[TRIGD_REASON_MAX + 1];
    snprintf(why, sizeof why, "%s", reason ? reason : "");
    for (unsigned char *p = (unsigned char *)why; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            *p = '?';
    col_log(COL_LOG_INFO, "trigger: pid %" PRIu32 " %s '%s' at %" PRIu64 ": %s", pid,
            trigd_source_name(source), why, t_ns, trigd_verdict_name(v));
    if (td.idx) {
        struct idx_trigger row = {
            .pid = pid, .process_id = process_id, .t_ns = t_ns,
            .source = trigd_source_name(source), .reason = why,
            .verdict = trigd_verdict_name(v), .win_t0_ns = w.t0_ns, .win_t1_ns = w.t1_ns,
        };
        int rc = idx_trig_add(td.idx, &row);
        if (rc) {
            td.index_errors++;
            col_log_limited(&td.rl, COL_LOG_WARN, "pid %" PRIu32 ": cannot index a trigger: %s",
                            pid, strerror(-rc));
        }
    }
    return v;
}

int trigd_wants(int schema_ok)
{
    return schema_ok || td.st.cfg.poll_ms > 0 || td.st.cfg.sched_ms > 0;
}

int trigd_lost(uint32_t pid, int64_t process_id, uint32_t ring, uint64_t delta, uint64_t t_ns)
{
    if (!td.st.cfg.lost || !delta)
        return -1;
    char why[64];
    snprintf(why, sizeof why, "ring %" PRIu32 " lost %" PRIu64 " records", ring, delta);
    return trigd_fire(pid, process_id, t_ns, TRIGD_SRC_LOST, why, NULL);
}

/* The reason of a d9_trigger record r of len bytes: one STR field. */
static void marker_reason(const uint8_t *r, size_t len, char *out, size_t cap)
{
    struct d9_rec_custom c;
    out[0] = 0;
    memcpy(&c, r, sizeof c);
    if (c.payload_len < 4 || c.payload_len > len - sizeof c)
        return;
    uint32_t sl;
    memcpy(&sl, r + sizeof c, sizeof sl);
    if (sl > c.payload_len - 4)
        return;
    size_t k = sl < cap - 1 ? sl : cap - 1;
    memcpy(out, r + sizeof c + 4, k);
    out[k] = 0;
}

/* A record whose seq is not the next one: records were dropped (or are
 * read again), so no open poll is known to enclose what comes next. */
static void seq_check(struct trigd_ring *tr, uint32_t seq)
{
    if (tr->seq_known && seq != tr->next_seq)
        for (uint32_t i = 0; i < tr->nopen; i++)
            tr->open[i].sure = 0;
    tr->seq_known = 1;
    tr->next_seq = seq + 1;
}

static void open_remove(struct trigd_ring *tr, uint32_t i)
{
    if (i + 1 < tr->nopen)
        memmove(&tr->open[i], &tr->open[i + 1], (tr->nopen - i - 1) * sizeof tr->open[0]);
    tr->nopen--;
}

static uint64_t poll_task(const uint8_t *r)
{
    uint64_t task;      /* at the same offset in POLL_START and POLL_END */
    memcpy(&task, r + offsetof(struct d9_rec_poll_start, task), sizeof task);
    return task;
}

/* A new start of an open task replaces it (its end was lost); a full stack
 * loses its bottom poll. */
static void poll_start(struct trigd_ring *tr, const uint8_t *r, uint64_t ts)
{
    uint64_t task = poll_task(r);
    for (uint32_t i = tr->nopen; i-- > 0;)
        if (tr->open[i].task == task) {
            open_remove(tr, i);
            break;
        }
    if (tr->nopen == TRIGD_OPEN_MAX)
        open_remove(tr, 0);
    tr->open[tr->nopen++] = (struct trigd_open){ task, ts, 1 };
}

/* Closes the latest open start of the end's task and the polls still open
 * inside it. Returns the poll's duration when it is outermost (no sure open
 * poll below it), else 0 (also for an end without a start). */
static uint64_t poll_end(struct trigd_ring *tr, const uint8_t *r, uint64_t ts)
{
    uint64_t task = poll_task(r);
    uint32_t i = tr->nopen;
    while (i-- > 0)
        if (tr->open[i].task == task)
            break;
    if (i == UINT32_MAX)
        return 0;       /* its start was lost, or came before the collector */
    int outermost = 1;
    for (uint32_t j = 0; j < i; j++)
        if (tr->open[j].sure)
            outermost = 0;
    uint64_t t0 = tr->open[i].ts;
    tr->nopen = i;
    return outermost && ts >= t0 ? ts - t0 : 0;
}

void trigd_feed(uint32_t pid, int64_t process_id, int schema_ok, uint32_t schema,
                struct trigd_ring *tr, const uint8_t *buf, size_t n)
{
    uint64_t poll_ns = (uint64_t)td.st.cfg.poll_ms * 1000000ull;
    uint64_t sched_ns = (uint64_t)td.st.cfg.sched_ms * 1000000ull;
    size_t off = 0;
    while (off + D9_REC_HDR_SIZE <= n) {
        struct d9_rec_hdr h;
        memcpy(&h, buf + off, sizeof h);
        if (h.len < D9_REC_HDR_SIZE || h.len > n - off)
            return;         /* the drain validated the framing: cannot happen */
        const uint8_t *r = buf + off;
        if (poll_ns)
            seq_check(tr, h.seq);
        if (h.type == D9_REC_CUSTOM && schema_ok && h.len >= sizeof(struct d9_rec_custom)) {
            uint32_t id;
            memcpy(&id, r + offsetof(struct d9_rec_custom, schema), sizeof id);
            if (id == schema) {
                char why[TRIGD_REASON_MAX + 1];
                marker_reason(r, h.len, why, sizeof why);
                trigd_fire(pid, process_id, h.ts, TRIGD_SRC_MARKER, why, NULL);
            }
        } else if (h.type == D9_REC_POLL_START && poll_ns && h.len >= D9_REC_HDR_SIZE + 8) {
            poll_start(tr, r, h.ts);
        } else if (h.type == D9_REC_POLL_END && poll_ns && h.len >= D9_REC_HDR_SIZE + 8) {
            uint64_t d = poll_end(tr, r, h.ts);
            if (d > poll_ns) {
                char why[64];
                snprintf(why, sizeof why, "poll of %" PRIu64 " ms", (uint64_t)(d / 1000000ull));
                trigd_fire(pid, process_id, h.ts, TRIGD_SRC_POLL, why, NULL);
            }
        } else if ((h.type == D9_REC_WORKER_PARK || h.type == D9_REC_WORKER_UNPARK) && sched_ns &&
                   h.len >= sizeof(struct d9_rec_worker)) {
            struct d9_rec_worker w;
            memcpy(&w, r, sizeof w);
            if (!(w.flags & D9_WORKER_UNSAMPLED) && w.sched_wait_ns > sched_ns) {
                char why[64];
                snprintf(why, sizeof why, "sched wait of %" PRIu64 " ms",
                         (uint64_t)(w.sched_wait_ns / 1000000ull));
                trigd_fire(pid, process_id, h.ts, TRIGD_SRC_SCHED, why, NULL);
            }
        }
        off += h.len;
    }
}
