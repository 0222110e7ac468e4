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
    /* triggers waiting for a safe point to go into their process's segment */
    struct seg_trigger pend[TRIGD_PENDING_MAX];
    unsigned npend;
    uint64_t pend_dropped;
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

static void name_copy(char *dst, size_t cap, const char *src)
{
    memset(dst, 0, cap);
    size_t n = strlen(src);
    memcpy(dst, src, n < cap - 1 ? n : cap - 1);
}

/* Queue the trigger for its process's segment (trigd_write_blocks); the
 * oldest leaves when the queue is full. */
static void pend_add(uint32_t pid, uint64_t t_ns, int source, int v, const char *why,
                     const struct trig_win *w)
{
    if (td.npend == TRIGD_PENDING_MAX) {
        memmove(&td.pend[0], &td.pend[1], (TRIGD_PENDING_MAX - 1) * sizeof td.pend[0]);
        td.npend--;
        td.pend_dropped++;
        col_log_limited(&td.rl, COL_LOG_WARN, "triggers: %u wait for their segments; the "
                        "oldest will not survive a re-index (%" PRIu64 " so far)",
                        TRIGD_PENDING_MAX, td.pend_dropped);
    }
    struct seg_trigger *t = &td.pend[td.npend++];
    memset(t, 0, sizeof *t);
    t->t_ns = t_ns;
    t->pid = pid;
    t->win_t0_ns = w->t0_ns;
    t->win_t1_ns = w->t1_ns;
    name_copy(t->source, sizeof t->source, trigd_source_name(source));
    name_copy(t->verdict, sizeof t->verdict, trigd_verdict_name(v));
    name_copy(t->reason, sizeof t->reason, why);
}

int trigd_write_blocks(uint32_t pid, struct seg_writer *w)
{
    unsigned keep = 0;
    int rc = 0;
    for (unsigned i = 0; i < td.npend; i++) {
        if (td.pend[i].pid == pid && !rc)
            rc = seg_writer_add_trigger(w, &td.pend[i]);
        if (td.pend[i].pid != pid || rc)
            td.pend[keep++] = td.pend[i];
    }
    td.npend = keep;
    return rc;
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
    pend_add(pid, t_ns, source, v, why, &w);
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
        if (h.type == D9_REC_CUSTOM && schema_ok && h.len >= sizeof(struct d9_rec_custom)) {
            uint32_t id;
            memcpy(&id, r + offsetof(struct d9_rec_custom, schema), sizeof id);
            if (id == schema) {
                char why[TRIGD_REASON_MAX + 1];
                marker_reason(r, h.len, why, sizeof why);
                trigd_fire(pid, process_id, h.ts, TRIGD_SRC_MARKER, why, NULL);
            }
        } else if (h.type == D9_REC_POLL_START && poll_ns) {
            if (tr->depth++ == 0)
                tr->poll_ts = h.ts;
        } else if (h.type == D9_REC_POLL_END && poll_ns && tr->depth > 0) {
            if (--tr->depth == 0 && h.ts >= tr->poll_ts && h.ts - tr->poll_ts > poll_ns) {
                char why[64];
                snprintf(why, sizeof why, "poll of %" PRIu64 " ms",
                         (uint64_t)((h.ts - tr->poll_ts) / 1000000ull));
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
