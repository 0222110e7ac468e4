/*
 * cli_serve_api.h — the JSON API of `d9 serve` over a store: the answers,
 * independent of HTTP so they are unit-tested byte for byte.
 *
 *   /api/processes   every process of the store (live and past) with its
 *                    threads and runtimes, time range, state, counts
 *   /api/timeline    one process, a window [from, to] and a pixel width:
 *                    per thread lane the polls (coloured by location on the
 *                    page), parked spans, CPU / off-CPU sample ticks and
 *                    scheduling delay; queue-depth counters; wakes as
 *                    arrows waker -> wakee's next poll; custom events as
 *                    markers with their fields; the longest polls; a
 *                    sched-delay histogram per lane
 *   /api/events      the custom events of a window, filtered by name and by
 *                    one field's value (the page's event table)
 *   /api/flame       the CPU (kind=cpu) or off-CPU (kind=off) samples of a
 *                    window as folded stacks, the heaviest CLI_SERVE_MAX_ITEMS
 *
 * Level of detail: a timeline answer holds at most CLI_SERVE_MAX_ITEMS
 * items whatever the window. While the polls and parks of the window fit,
 * they come one by one ("detail"); past that, per-pixel aggregates
 * ("buckets": busy ns, poll count, longest poll and its location per pixel
 * column, merged over bucket_px columns until the answer fits). Counts in
 * the buckets add up to exactly the polls the detail would list. Records
 * are read through the block index for the window only (cli_store_scan).
 * A window of more than CLI_SERVE_SCAN_MAX records is not read at all:
 * the answer ("mode":"index") is the record density per lane and column
 * from the index's block rows (count and time range of each block), so
 * the first view of a 100 M-record store costs one index query; zooming in
 * reaches windows that are scanned.
 *
 * Times in answers are ns; inside a timeline they are offsets from "from"
 * (they stay exact as JavaScript numbers).
 *
 * Called by cli_serve.c (HTTP) and tests/unit/test_serve.c. Every
 * parameter is untrusted: unknown keys, malformed numbers, a reversed
 * window or a width out of range are 400, an unknown pid 404; nothing in a
 * request can make an answer unbounded. Must never write to the store.
 */
#ifndef D9_COL_CLI_SERVE_API_H
#define D9_COL_CLI_SERVE_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "collector/cli/cli_store.h"

#define CLI_SERVE_MAX_WIDTH     4096u   /* pixels of a timeline request */
#define CLI_SERVE_MAX_ITEMS     4000u   /* polls/parks/buckets/points of one answer */
#define CLI_SERVE_SCAN_MAX      1000000u /* records a timeline reads; past that: the index */
#define CLI_SERVE_MAX_LANES     64u     /* threads drawn; more are counted, not drawn */
#define CLI_SERVE_MAX_WAKES     1000u
#define CLI_SERVE_MAX_EVENTS    500u
#define CLI_SERVE_MAX_COUNTERS  32u
#define CLI_SERVE_TOP           20u     /* longest polls listed */
#define CLI_SERVE_HIST          32u     /* log2 buckets of the sched-delay histogram */
#define CLI_SERVE_STR_MAX       128u    /* event / field / value filters */

struct cli_serve_params {
    uint32_t pid;
    bool has_pid, has_from, has_to;
    uint64_t from, to;
    uint32_t width;                     /* 0 = not given */
    uint32_t limit;                     /* events; 0 = CLI_SERVE_MAX_EVENTS */
    bool off_cpu;                       /* flame: kind=off */
    char event[CLI_SERVE_STR_MAX];      /* "" = any */
    char field[CLI_SERVE_STR_MAX];      /* with value: only events whose field prints as value */
    char value[CLI_SERVE_STR_MAX];
};

void cli_serve_api_params_init(struct cli_serve_params *p);

/* One query argument. 0, or -EINVAL with the reason in why (a 400). */
int cli_serve_api_param(struct cli_serve_params *p, const char *key, const char *val, char *why,
                    size_t whycap);

/* Answer GET path: writes the JSON body to out and returns the HTTP status
 * (200; 400/404 with {"error":"..."}; 500 when the store cannot be read). */
int cli_serve_api(struct cli_store *s, const char *path, const struct cli_serve_params *p,
                  FILE *out);

#endif /* D9_COL_CLI_SERVE_API_H */
