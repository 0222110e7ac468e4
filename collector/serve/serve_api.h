/*
 * serve_api.h — the JSON API of `d9 serve` over a store: the answers,
 * independent of HTTP so they are unit-tested byte for byte.
 *
 *   /api/processes   every process of the store (live and past) with its
 *                    threads and runtimes, time range, state, counts
 *   /api/timeline    one process, a window [from, to] and a pixel width:
 *                    per thread lane the polls (coloured by location on the
 *                    page), parked spans, CPU / off-CPU sample ticks and
 *                    scheduling delay (the wait samples of q_sched.h: park
 *                    and unpark records; per lane their count, sum, max and
 *                    histogram); queue-depth counters; wakes as
 *                    arrows waker -> wakee's next poll; custom events as
 *                    markers with their fields; the longest polls; a
 *                    sched-delay histogram per lane; loop work
 *                    (q_loopwork.h: a loop thread outside its callbacks
 *                    and its wait) as [lane, t, dur, CPU samples] per
 *                    interval, at every level of detail but the index's,
 *                    the first SERVE_API_MAX_LOOPWORK with the total; one
 *                    that crosses the window's start or end comes whole
 *                    (the look-back and look-ahead read its thread), its
 *                    samples those inside the window
 *   /api/events      the custom events of a window, filtered by name and by
 *                    one field's value (the page's event table): limit of
 *                    them after the first offset, in time order, and the
 *                    total (events_total) for the table's pages
 *   /api/flame       the CPU (kind=cpu) or off-CPU (kind=off) samples of a
 *                    window as folded stacks, the heaviest SERVE_API_MAX_ITEMS
 *   /api/workers     one process's workers in a window (default: all of its
 *                    records) with q_sched.h's facts, the fields of
 *                    `d9 sched --format jsonl`
 *   /api/triggers    the triggers of a window from the index (source,
 *                    reason, verdict, kept window, fields; serve_trig.h), the
 *                    page's trigger markers
 *
 * Level of detail: a timeline answer holds at most SERVE_API_MAX_ITEMS
 * items whatever the window. While the polls and parks of the window fit,
 * they come one by one ("detail"); past that, per-pixel aggregates
 * ("buckets": busy ns, poll count, longest poll and its location per pixel
 * column, merged over bucket_px columns until the answer fits). Counts in
 * the buckets add up to exactly the polls the detail would list. Records
 * are read through the block index for the window only (q_scan).
 * A window of more than SERVE_API_SCAN_MAX records is not read at all:
 * the answer ("mode":"index") is the record density per lane and column
 * from the index's block rows (count and time range of each block), so
 * the first view of a 100 M-record store costs one index query; zooming in
 * reaches windows that are scanned. Its longest polls ("top") come from the
 * segments' rollups (rollup.h: the longest poll per worker, location and
 * second; "approx", t = the start of that second, a worker instead of a
 * lane), its lanes are the index's threads in the same order as at every
 * other zoom.
 *
 * Polls and parks that overlap the window come whole at every level of
 * detail (true start and end: a look-back per thread finds what was open
 * at "from", a look-ahead the ends after "to"; see ARCHITECTURE.md); a
 * bucket counts a poll in its first column and carries it in the others
 * ([px, busy, count, longest, loc, carried]). Lanes: every thread of the
 * process in the index, main thread first, then by tid. Blocks that could
 * not be read are counted and listed per lane ("gaps"); nothing is paired
 * across one ("broken").
 *
 * Times in answers are ns; inside a timeline they are offsets from "from"
 * (they stay exact as JavaScript numbers; negative before it).
 *
 * Called by cli_serve.c (HTTP) and tests/unit/test_serve_api.c. Every
 * parameter is untrusted: unknown keys, malformed numbers, a reversed
 * window or a width out of range are 400, an unknown pid 404; nothing in a
 * request can make an answer unbounded. Must never write to the store.
 */
#ifndef D9_COL_SERVE_API_H
#define D9_COL_SERVE_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "collector/query/q_scan.h"

#define SERVE_API_MAX_WIDTH     4096u   /* pixels of a timeline request */
#define SERVE_API_MAX_ITEMS     4000u   /* polls/parks/buckets/points of one answer */
#define SERVE_API_SCAN_MAX      1000000u /* records a timeline reads; past that: the index */
#define SERVE_API_MAX_LANES     64u     /* threads drawn; more are counted, not drawn */
#define SERVE_API_MAX_WAKES     1000u
#define SERVE_API_MAX_EVENTS    500u
#define SERVE_API_MAX_COUNTERS  32u
#define SERVE_API_TOP           20u     /* longest polls listed */
#define SERVE_API_HIST          32u     /* log2 buckets of the sched-delay histogram */
#define SERVE_API_STR_MAX       128u    /* event / field / value filters */
#define SERVE_API_MAX_GAPS      64u     /* blocks not read, listed in a timeline */
#define SERVE_API_EDGE_MAX      1000000u /* records the look-back and look-ahead read */
#define SERVE_API_LOOKBACK_NS   1000000u /* the first look-back step (it grows x4) */
#define SERVE_API_MAX_LOOPWORK  1000u   /* loop-work intervals listed in a timeline */

struct serve_params {
    uint32_t pid;
    bool has_pid, has_from, has_to;
    uint64_t from, to;
    uint32_t width;                     /* 0 = not given */
    uint32_t limit;                     /* events; 0 = SERVE_API_MAX_EVENTS */
    uint64_t offset;                    /* /api/events: matching events skipped first (paging) */
    bool off_cpu;                       /* flame: kind=off */
    char event[SERVE_API_STR_MAX];      /* "" = any */
    char field[SERVE_API_STR_MAX];      /* with value: only events whose field prints as value */
    char value[SERVE_API_STR_MAX];
};

void serve_api_params_init(struct serve_params *p);

/* One query argument. 0, or -EINVAL with the reason in why (a 400). */
int serve_api_param(struct serve_params *p, const char *key, const char *val, char *why,
                    size_t whycap);

/* Answer GET path: writes the JSON body to out and returns the HTTP status
 * (200; 400/404 with {"error":"..."}; 500 when the store cannot be read). */
int serve_api(struct q_store *s, const char *path, const struct serve_params *p,
                  FILE *out);

#endif /* D9_COL_SERVE_API_H */
