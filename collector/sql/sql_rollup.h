/*
 * sql_rollup.h — d9 sql's tables over the segments' rollups
 * (collector/store/rollup.h), answered without reading records:
 *   poll_stats   one row per segment, process, runtime, worker, location and
 *                1 s bucket: count, unfinished, sum_ns, max_ns, p50_ns and
 *                p99_ns (the row's own histogram, within 6.25 %);
 *   worker_stats one row per segment, process, runtime, worker and bucket:
 *                polls, busy_ns, parks, parked_ns, waits, wait_sum_ns,
 *                wait_max_ns, and (version 4) cpu_first_ns / cpu_last_ns
 *                (first and largest sampled cpu_ns) and cpu_ns, their difference.
 *   wake_stats   one row per segment, process, runtime and bucket: wakes
 *                (wake records, in the bucket of the record) and (version 4)
 *                delay_count/sum/max/p50/p99 of the wake->poll delays of
 *                those wakes (q_wake.h's pairing, per segment);
 *   event_stats  one row per segment, process, custom event (schema) and
 *                bucket: count (custom records of it, in the bucket of the
 *                record); event = the schema's name ("#id" when unknown);
 *   event_field_stats one row per segment, process, custom event, numeric
 *                field and bucket (version 4): count, sum, min, max, p50/p99
 *                of |value|;
 *   location_stats one row per process, runtime and location over the polls
 *                whose start is in the window (start_ns constraints; the
 *                whole store without): count, unfinished, sum_ns, max_ns and
 *                p50/p90/p99/p999 from the merged histograms (within 6.25 %),
 *                answered as `d9 top-polls --by-location` (collector/query/
 *                q_agg.h: the rollups of the buckets the window covers whole,
 *                the records of its two edges); start_ns holds the window's
 *                first nanosecond, so the constraints pushed down hold for
 *                every row.
 * A key and bucket can have a row in two segments (a segment sealed within
 * that second): SUM and MAX over rows are exact, a row's quantiles are its
 * own. Coarser levels: the *_stats tables but location_stats have a hidden
 * column bucket_width_ns (1e9 in the rows above); a constraint
 * bucket_width_ns = W (a whole number of seconds, e.g. 60e9, 3600e9; other
 * values: no rows) merges the 1 s buckets at query time into one row per
 * process, key and W-wide bucket (bucket_ns = its start, a multiple of W
 * since 0), over every segment (segment NULL): counts and sums added,
 * max/min of the rows, quantiles from the merged histograms (within
 * 6.25 %), CPU as MAX(cpu_last_ns) - MIN(cpu_first_ns). pid and bucket_ns constraints select the segments (q_rollup.h) and
 * the buckets. A segment without valid rollups is answered from its
 * records, with one line on stderr.
 *
 * Called by sql_vtab.c; rows are served as a listing's (sql_list.h). Must
 * never write to the store.
 */
#ifndef D9_COL_SQL_ROLLUP_H
#define D9_COL_SQL_ROLLUP_H

#include "collector/sql/sql_int.h"

enum { PS_PID, PS_RUNTIME, PS_WORKER, PS_LOC, PS_LOCATION, PS_BUCKET, PS_COUNT, PS_UNFINISHED,
       PS_SUM, PS_MAX, PS_P50, PS_P99, PS_SEGMENT, PS_WIDTH, PS_NCOLS };
enum { WS_PID, WS_RUNTIME, WS_WORKER, WS_BUCKET, WS_POLLS, WS_BUSY, WS_PARKS, WS_PARKED,
       WS_WAITS, WS_WAIT_SUM, WS_WAIT_MAX, WS_SEGMENT, WS_CPU, WS_CPU_FIRST, WS_CPU_LAST,
       WS_WIDTH, WS_NCOLS };

enum { ES_PID, ES_EVENT, ES_BUCKET, ES_COUNT, ES_SEGMENT, ES_WIDTH, ES_NCOLS };
enum { WK_PID, WK_RUNTIME, WK_BUCKET, WK_WAKES, WK_SEGMENT, WK_DELAY_COUNT, WK_DELAY_SUM,
       WK_DELAY_MAX, WK_DELAY_P50, WK_DELAY_P99, WK_WIDTH, WK_NCOLS };
enum { EF_PID, EF_EVENT, EF_FIELD, EF_BUCKET, EF_COUNT, EF_SUM, EF_MIN, EF_MAX, EF_P50, EF_P99,
       EF_SEGMENT, EF_WIDTH, EF_NCOLS };
enum { LS_PID, LS_RUNTIME, LS_LOC, LS_LOCATION, LS_START, LS_COUNT, LS_UNFINISHED, LS_SUM,
       LS_MAX, LS_P50, LS_P90, LS_P99, LS_P999, LS_NCOLS };

/* Fill the cursor with its table's rows (c->f.pid, c->f.from/to on bucket_ns,
 * c->bucket_width: merged rows of that width). */
int sql_rollup_fill(struct cur *c);
/* The column of the hidden bucket_width_ns of a table of kind k, or -1. */
int sql_rollup_width_col(enum kind k);

#endif /* D9_COL_SQL_ROLLUP_H */
