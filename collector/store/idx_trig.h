/*
 * idx_trig.h — the index's triggers table: every trigger the collector saw
 * (trigd.h), with its verdict and the window it keeps.
 *
 *   triggers(id INTEGER PRIMARY KEY, pid INT, process_id INT, t_ns INT,
 *            source TEXT,   -- 'marker' | 'shell' | 'poll' | 'crash' | 'sched' | 'lost' | 'field'
 *            reason TEXT,
 *            verdict TEXT,  -- 'kept' | 'merged' | 'debounced' | 'rate-limited'
 *            win_t0 INT, win_t1 INT,  -- the kept window after merges (inclusive,
 *                                        CLOCK_MONOTONIC ns); NULL: none
 *            fields TEXT)   -- a typed trigger's fields (D9_TRIGGER_EVENT) but its
 *                              reason, as one JSON object in the schema's order
 *                              ({"latency_ms":250,"path":"/k/250"}); NULL: none
 *   index: triggers(t_ns)
 *
 * The table is what index schema version 4 adds to version 3 (idx.h), and
 * its fields column what version 5 adds to version 4: a writer creates
 * both with a new index and adds what is missing when it opens a version 3
 * or 4 one (IDX_SCHEMA_VERSION_OLDEST: the upgrade); a reader of a version
 * 3 store sees no triggers, of a version 4 one triggers without fields.
 * So old stores stay readable and writable. A re-index from the segments
 * (reindex.h) brings the triggers back from the segments' SEG_BLK_TRIGGER
 * blocks (idx_trig_restore; segment version 4), a marker's fields from its
 * d9_trigger record in the same segment (the blocks do not hold them;
 * trig_rec.h derives them, as the collector did).
 *
 * It also reads the kept table (idx.h, written by idx.c) for d9 sql.
 *
 * Called by: idx.c (idx_trig_ensure when it creates or upgrades), the collector's
 * trigd.c (writes), d9's readers (collector/sql, cli findings and events).
 * Must never: fail an open because of this table on a read-only handle.
 */
#ifndef D9_COL_IDX_TRIG_H
#define D9_COL_IDX_TRIG_H

#include <stdint.h>

struct idx;

struct idx_trigger {
    int64_t id;                 /* on read */
    uint32_t pid;
    int64_t process_id;         /* 0: none */
    uint64_t t_ns;
    const char *source, *reason, *verdict;
    uint64_t win_t0_ns, win_t1_ns;  /* 0, 0: no window */
    const char *fields;         /* JSON object text, NULL: none */
};

/* Creates the table if missing, and its fields column if missing
 * (writable handles). 0 or -errno. */
int idx_trig_ensure(struct idx *x);
/* Inserts t; a kept window also becomes the window of every earlier row
 * whose window it overlaps (a merge grew it). 0 or -errno. */
int idx_trig_add(struct idx *x, const struct idx_trigger *t);

/* A trigger read back from a segment (reindex.c), inside the caller's
 * transaction: nothing when the index has a row of the same pid, time,
 * source and reason already; else inserted, and its window and every
 * window it overlaps become their union (so the merged windows come out
 * the same whatever order the segments are read in). 0 or -errno. */
int idx_trig_restore(struct idx *x, const struct idx_trigger *t);

typedef int (*idx_trig_fn)(void *arg, const struct idx_trigger *t);
/* Every row in [t0_ns, t1_ns] by time (pid 0: all pids), to fn (nonzero
 * stops and is returned). A store without the table has no rows. */
int idx_trig_foreach(struct idx *x, uint32_t pid, uint64_t t0_ns, uint64_t t1_ns,
                        idx_trig_fn fn, void *arg);

/* The same for every row whose time is in [t0_ns, t1_ns] or whose kept
 * window overlaps it (a window reaching into a view from a trigger outside
 * it: d9 serve shades it). */
int idx_trig_foreach_overlap(struct idx *x, uint32_t pid, uint64_t t0_ns, uint64_t t1_ns,
                             idx_trig_fn fn, void *arg);

/* A kept window's segment (the index's kept table, idx.h), with its
 * segment's path and pid (through segments and processes). */
struct idx_kept {
    int64_t segment_id;
    uint32_t pid;               /* the trigger's pid (trig_pid) */
    uint64_t trig_ns, t0_ns, t1_ns;
    int64_t ntrig, source_segment;
    const char *reason, *path; /* "" when unknown */
    uint64_t bytes, records;
};
typedef int (*idx_kept_fn)(void *arg, const struct idx_kept *k);
/* Every kept segment (pid 0: all trigger pids) by t0_ns, to fn (nonzero
 * stops and is returned). A store without the table has none. */
int idx_trig_kept_foreach(struct idx *x, uint32_t pid, idx_kept_fn fn, void *arg);

#endif
