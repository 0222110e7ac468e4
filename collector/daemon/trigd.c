/*
 * trigd.c — the collector's triggers (see trigd.h): one trig_state for the
 * daemon, fired by every source, each trigger recorded in the index and
 * counted.
 */
#include "collector/daemon/trigd.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "collector/store/col_log.h"
#include "collector/store/idx_trig.h"

static struct trigd {
    struct trig_state st;
    struct idx *idx;
    uint64_t count[TRIGD_SRC_COUNT][TRIGD_VERDICT_COUNT];
    uint64_t index_errors;
    struct col_ratelimit rl;
} td;

static const char *const src_names[TRIGD_SRC_COUNT] = { "marker", "shell", "poll", "crash" };
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
        int rc = idx_trigger_add(td.idx, &row);
        if (rc) {
            td.index_errors++;
            col_log_limited(&td.rl, COL_LOG_WARN, "pid %" PRIu32 ": cannot index a trigger: %s",
                            pid, strerror(-rc));
        }
    }
    return v;
}
