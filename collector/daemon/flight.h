/*
 * flight.h — the flight recorder: `--retain triggered`. The drain writes
 * every record to segments as always; this module then keeps only the
 * windows around triggers (trig.h's kept windows, fed by trigd.h's sources)
 * and drops the rest once no trigger can want it any more.
 *
 * A sealed segment of this collector run is *settled* when its newest
 * record is older than now - lookback - FLIGHT_SETTLE_NS: a trigger still to
 * come (its time is at least now minus the drain's lag, which the settle
 * margin covers) keeps nothing of it, and the kept windows that overlap it
 * can only grow away from it. Each pass takes the settled segments (oldest
 * first) and, for each kept window that overlaps one, cuts the window's
 * records out into a new sealed segment marked with its trigger (keep.h:
 * trigger time, pid, merged count, the window's bounds, the first trigger's
 * source and reason), indexes it (the kept table, idx.h), then deletes the
 * settled segment (index rows first, then the file). A segment no window
 * overlaps is deleted outright (trig_droppable). Kept windows hold every
 * traced process's records in the window, not only the triggering one's: a
 * flight recorder of the host.
 *
 * Open segments are rotated at least every lookback (flight_segment_age_ns)
 * so the untriggered data on disk stays near lookback + rotation + margin.
 * At shutdown a final pass settles everything (no trigger can come). Segments
 * of earlier runs (ids below first_id) are left to --store-mb retention: a
 * store switched from `--retain all` keeps its history.
 *
 * The drain waits while a pass cuts (it reads the settled segment and
 * writes the window again): a pass decides at most one batch of segments.
 * With --ship, retention does not prefer shipped segments (only kept
 * windows are shipped): untriggered data goes first, then the oldest kept
 * windows.
 *
 * Called by d9collectd.c on the drain thread (flight_pass each loop, at most
 * every FLIGHT_PASS_NS, and once at shutdown). Calls collector/store/ only
 * (keep.h, idx.h) and storedir.h.
 * Must never: delete a settled segment before each of its kept windows is
 * sealed and indexed; delete a file whose index row it did not delete first;
 * retry a segment whose cut failed forever in a loop (its id is skipped,
 * counted and the segment kept).
 */
#ifndef D9_DAEMON_FLIGHT_H
#define D9_DAEMON_FLIGHT_H

#include <stdint.h>
#include "collector/daemon/storedir.h"
#include "collector/daemon/trig.h"

#define FLIGHT_SETTLE_NS  2000000000ull     /* drain lag allowed for a trigger's time */
#define FLIGHT_PASS_NS    250000000ull      /* a pass at most 4 times a second */
#define FLIGHT_FAILED_MAX 64u               /* source segments whose cut failed, skipped */

struct flight {
    int on;                         /* --retain triggered */
    uint64_t first_id;              /* the first segment id of this run */
    uint64_t next_pass_ns;
    uint64_t failed[FLIGHT_FAILED_MAX];
    unsigned nfailed;
    /* counters (d9 status, logs, the bench) */
    uint64_t windows_cut, kept_bytes;       /* kept segments written */
    uint64_t dropped_segments, dropped_bytes;   /* settled segments deleted */
    uint64_t cut_errors;
};

void flight_init(struct flight *f, const struct trig_cfg *c, uint64_t first_id);
/* The age at which an open segment is sealed: the configured one, or the
 * lookback when the flight recorder is on and that is shorter. */
uint64_t flight_segment_age_ns(const struct flight *f, const struct trig_cfg *c,
                               uint64_t configured_ns);
/* One pass at now_ns over the settled segments (final: every segment of this
 * run is settled). No-op when off or (not final) sooner than FLIGHT_PASS_NS
 * after the last. Returns the number of segments decided, or -errno of the
 * index. */
int flight_pass(struct flight *f, struct storedir *st, const struct trig_state *ts,
                uint64_t now_ns, int final);

#endif /* D9_DAEMON_FLIGHT_H */
