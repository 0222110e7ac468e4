/*
 * exp_perfetto.h — records to Perfetto's native protobuf trace
 * (proto/perfetto_trace.proto, the upstream field numbers), the format
 * ui.perfetto.dev and trace_processor read natively:
 *
 *   tracks          a TrackDescriptor per process (pid, comm), per thread
 *                   (pid, tid, name) and per queue-depth counter
 *                   ("queue <runtime> w<N>" / "... global", child of the process)
 *   polls           TrackEvent SLICE_BEGIN at poll_start (named after the
 *                   polled function, annotations task and loc: the location
 *                   as q_loc.h prints it, an interned string) and SLICE_END at the
 *                   paired poll_end, on the thread's track
 *   parked workers  slices named "parked"
 *   wakes           an instant "wake" on the waker's thread that starts a
 *                   flow; the poll that answers the wake (q_wake.h: the
 *                   wakee's next poll_start) terminates it, so the UI draws
 *                   an arrow waker -> that poll
 *   spawn/terminate instants with the task id
 *   custom events   instants named after the schema, fields as debug
 *                   annotations (the collector's own "d9.*" events are not
 *                   exported; "d9.map" names the frames, q_sym.h)
 *   sched waits     every wait sample (q_sched.h: a sampled worker_park or
 *                   worker_unpark) as a COUNTER event on the worker's
 *                   track "sched_wait <runtime> w<N>", value in ns
 *   queue depth     COUNTER events on the counter track
 *   CPU samples     PerfSample packets with interned callstacks and frames
 *                   (frames as q_sym_frames gives them, named as d9 flame
 *                   names them)
 *   off-CPU samples instants "off_cpu" with the time off CPU (off_cpu_ns)
 *
 * Size: one packet sequence with interned event names, annotation names,
 * function names, frames and callstacks, and timestamps as deltas on an
 * incremental sequence-scoped clock (id 64) declared in a ClockSnapshot
 * against CLOCK_MONOTONIC (the primary trace clock). A packet whose time
 * would go backwards carries an absolute MONOTONIC timestamp instead.
 *
 * Called by cli_export.c (`d9 export --format perfetto`) from a scan
 * callback, in scan (time) order. Streams: each TracePacket is packed and
 * written as one `Trace.packet` field; memory is the interning tables, the
 * tracks and the polls open at the same time, never per record.
 */
#ifndef D9_COL_EXP_PERFETTO_H
#define D9_COL_EXP_PERFETTO_H

#include <stdint.h>
#include <stdio.h>
#include "collector/query/q_scan.h"

#define EXP_PERFETTO_SEQ        1u      /* trusted_packet_sequence_id of every packet */
#define EXP_PERFETTO_CLOCK_INC  64u     /* the incremental clock (sequence-scoped) */
#define EXP_PERFETTO_CLOCK_MONO 3u      /* BuiltinClock MONOTONIC */

struct exp_perfetto;

struct exp_perfetto_stats {
    uint64_t packets;
    uint64_t polls, parks, instants, counters, samples;
    uint64_t flows;                 /* wake flows ended at the wakee's next poll */
    uint64_t waits;                 /* scheduling-wait samples (sched_wait counters) */
    uint64_t unfinished;            /* slices still open at the end, ended at t_end */
    uint64_t skipped;               /* records with no trace form */
    uint64_t bytes;                 /* written */
};

struct q_sym;

/* Start the trace on f; sym (the caller's, loaded with the exported
 * processes' maps: q_sym_load) names the samples' frames. 0 or -ENOMEM. */
int exp_perfetto_begin(struct exp_perfetto **out, FILE *f, struct q_sym *sym);

/* One record, in scan order, or a gap of src's ring (rec NULL, from a scan
 * with q_filter.gaps): polls open on that thread end unpaired. 0 or -ENOMEM. */
int exp_perfetto_record(struct exp_perfetto *x, const struct q_rec_src *src,
                        const struct d9_rec_hdr *rec, size_t len);

/* End the slices still open where q_pair_end_open() ends them in store s,
 * cut at t_end (s NULL: at t_end), flush and free x. Fills *st when not
 * NULL. 0, or -EIO on a write error, -ENOMEM. */
int exp_perfetto_finish(struct exp_perfetto *x, struct q_store *s, uint64_t t_end,
                        struct exp_perfetto_stats *st);

#endif /* D9_COL_EXP_PERFETTO_H */
