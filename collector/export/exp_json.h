/*
 * exp_json.h — records to the Chrome trace-event JSON format, the format
 * chrome://tracing and the Perfetto UI (ui.perfetto.dev) load:
 *
 *   {"traceEvents":[ ... ],"displayTimeUnit":"ms","otherData":{...}}
 *
 *   polls           "X" complete events (name = polled function, or "poll"),
 *                   cat "poll", args task/runtime/worker/loc
 *   parked workers  "X" complete events named "parked", cat "park"
 *   wakes           "i" instants (thread scope), cat "wake", args waker/wakee,
 *                   and a flow "wake" from there ("s") to the wakee's next
 *                   poll ("f", bp "e": bound to that poll's slice)
 *   CPU samples     "i" instants cat "cpu" on the sampled thread, named by the
 *                   innermost frame, args weight_ns and stack (outermost
 *                   first; frames named by q_sym.h, as d9 flame names them)
 *   spawn/terminate "i" instants, cat "task"
 *   custom events   "i" instants named after the schema, args = its fields
 *                   (except the collector's own "d9.*" events, e.g. d9.map)
 *   sched waits     "C" counters "sched_wait <runtime> w<N>", cat "sched", one
 *                   point per wait sample (q_sched.h: a sampled park or
 *                   unpark), args wait_ns
 *   queue depth     "C" counters "queue <runtime> w<N>" / "queue <runtime> global"
 *   names           "M" process_name (comm) and thread_name, once each
 * ts and dur are microseconds (with ns precision as 3 decimals); pid/tid are
 * the traced process's. Records are streamed: memory is the polls and parks
 * open at the same time plus one entry per process/thread named.
 *
 * Called by cli_export.c (`d9 export`) from a scan callback; unit-tested on
 * memory streams. Output is always valid JSON (strings go through
 * q_text_json); a write error is reported by exp_json_finish.
 */
#ifndef D9_COL_EXP_JSON_H
#define D9_COL_EXP_JSON_H

#include <stdint.h>
#include <stdio.h>
#include "collector/query/q_scan.h"

struct exp_json;

struct exp_json_stats {
    uint64_t events;                /* trace events written (metadata included) */
    uint64_t polls, parks, instants, counters;
    uint64_t flows;                 /* wake flows ended at the wakee's next poll */
    uint64_t waits;                 /* scheduling-wait samples ("sched_wait" counters) */
    uint64_t samples;               /* CPU samples */
    uint64_t unfinished;            /* polls/parks still open at the end, closed at t_end */
    uint64_t skipped;               /* records with no trace-event form (off-CPU stacks) */
};

struct q_sym;

/* Start the document on f; sym (the caller's, loaded with the exported
 * processes' maps: q_sym_load) names the samples' frames. 0 or -ENOMEM. */
int exp_json_begin(struct exp_json **out, FILE *f, struct q_sym *sym);

/* One record, in scan order, or a gap of src's ring (rec NULL, from a scan
 * with q_filter.gaps): polls open on that thread end unpaired. 0 or -ENOMEM. */
int exp_json_record(struct exp_json *x, const struct q_rec_src *src,
                      const struct d9_rec_hdr *rec, size_t len);

/* Close polls/parks still open where q_pair_end_open() ends them in store s,
 * cut at t_end (s NULL: at t_end), with args.unfinished = true and
 * args.unfinished_why; end the document and free x. Fills *st when not NULL.
 * 0, or -EIO if f reported a write error. */
int exp_json_finish(struct exp_json *x, struct q_store *s, uint64_t t_end,
                    struct exp_json_stats *st);

#endif /* D9_COL_EXP_JSON_H */
