/*
 * q_rollup.h — the stored rollups of the segments that meet a window
 * (collector/store/rollup.h), for the readers whose question is an
 * aggregate: d9 sql's poll_stats, worker_stats, wake_stats and event_stats.
 *
 * For each segment of pid (0 = all) meeting [from, to] it hands the checked
 * rollups to fn. A segment whose rollups are missing (indexed before they
 * existed, or their row deleted) or do not check (a flipped byte, a
 * truncated value) is answered from its records instead: the same
 * computation the collector's seal uses (rollup_file_only over the whole
 * file), with one line on stderr naming the segment and the reason; a
 * damaged DATA block is left out alone, with the record scans' warning
 * (q_store_skip_note); a segment whose file cannot be read otherwise is
 * skipped with one line and counted in *missing.
 *
 * Called by collector/sql/sql_rollup.c and collector/serve/serve_api.c
 * (q_rollup_each_stored), collector/query/q_findru.c (q_rollup_each_listed).
 * Must never: write to the store
 * (d9 fsck --repair rewrites rollups), or hand fn bytes rollup_decode has
 * not checked.
 */
#ifndef D9_COL_Q_ROLLUP_H
#define D9_COL_Q_ROLLUP_H

#include <stdint.h>
#include "collector/query/q_store.h"
#include "collector/store/rollup.h"

struct q_rollup_seg {
    uint64_t segment_id;
    int64_t process_id;
    uint32_t pid;
    const struct rollup_view *v;    /* NULL: none valid (q_rollup_each_listed only) */
    int from_records;               /* 1: computed from the records now (fallback) */
    const char *path;               /* the segment file, relative to the store */
    const char *why;                /* v == NULL: why there are none ("no rollups", ...) */
};

struct q_rollup_stats {
    uint64_t segments, from_records, missing;
    uint64_t not_stored;            /* q_rollup_each_stored: left out, no valid stored rollups */
};

/* fn returns < 0 to stop with that error. prog prefixes the stderr lines. */
int q_rollup_each(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to,
                  int (*fn)(void *arg, const struct q_rollup_seg *r), void *arg,
                  struct q_rollup_stats *st, const char *prog);

/* The same from the stored rollups only: a segment without valid ones is
 * left out (counted in not_stored), never read, and nothing is printed.
 * For answers that must not cost a scan (d9 serve's index overview). */
int q_rollup_each_stored(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to,
                         int (*fn)(void *arg, const struct q_rollup_seg *r), void *arg,
                         struct q_rollup_stats *st);

/* The same, but a segment without valid stored rollups is handed to fn
 * too, with v == NULL and why set (never read, nothing printed): for a
 * reader that treats such a segment its own way (findings' filter). */
int q_rollup_each_listed(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to,
                         int (*fn)(void *arg, const struct q_rollup_seg *r), void *arg,
                         struct q_rollup_stats *st);

#endif /* D9_COL_Q_ROLLUP_H */
