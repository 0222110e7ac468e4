/*
 * sql_vtab.c — the "d9" SQLite module: read-only virtual tables over a
 * store (see sql_vtab.h for the tables and the push-down rules).
 *
 * This file is the module itself: the tables' definitions, planning
 * (xBestIndex), constraint push-down (xFilter) and the dispatch of each
 * cursor to the module that serves its kind of table:
 *   - listing tables (processes, threads, runtimes, locations, segments):
 *     sql_list.c; the stacks table: sql_stack.c;
 *   - record tables (wakes, spawns, terminates, queue_depths, cpu_samples,
 *     events, custom events): sql_scan.c; custom tables are found by
 *     sql_custom.c;
 *   - paired tables (polls, parks): sql_pair.c.
 *
 * Invariants: every integer from a record reaches SQLite as int64 (u64
 * values above INT64_MAX as REAL); rows are never cached across statements.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/sql/sql_custom.h"
#include "collector/sql/sql_int.h"
#include "collector/sql/sql_list.h"
#include "collector/sql/sql_pair.h"
#include "collector/sql/sql_scan.h"
#include "collector/sql/sql_stack.h"
#include "collector/sql/sql_val.h"
#include "collector/sql/sql_rollup.h"
#include "collector/store/rollup.h"
#include "collector/sql/sql_vtab.h"
#include "shm/record.h"

static const struct tab_def defs[] = {
    { "processes", K_PROCESSES,
      "pid INTEGER, start_time INTEGER, uid INTEGER, comm TEXT, exe TEXT, state TEXT, "
      "exit_code INTEGER, first_ns INTEGER, last_ns INTEGER, records INTEGER, lost INTEGER, "
      "segments INTEGER, bytes INTEGER",
      0, -1, -1, -1, 0, false, false,
      "one row per traced process (index): state alive|exited|crashed|quarantined" },
    { "threads", K_THREADS,
      "pid INTEGER, tid INTEGER, ring INTEGER, generation INTEGER, name TEXT, "
      "first_ns INTEGER, last_ns INTEGER, ended INTEGER",
      0, 1, -1, -1, 0, false, false, "one row per traced thread (index)" },
    { "runtimes", K_RUNTIMES, "pid INTEGER, runtime_id INTEGER, name TEXT",
      0, -1, -1, -1, 0, false, false, "runtimes registered by each process (index)" },
    { "locations", K_LOCATIONS,
      "pid INTEGER, loc INTEGER, file TEXT, line INTEGER, func TEXT, location TEXT",
      0, -1, -1, -1, 0, false, false,
      "spawn/poll locations of each process (segment metadata); location = 'file:line func'" },
    { "segments", K_SEGMENTS,
      "pid INTEGER, id INTEGER, comm TEXT, path TEXT, t_min INTEGER, t_max INTEGER, "
      "bytes INTEGER, records INTEGER, lost INTEGER",
      0, -1, -1, -1, 0, false, false, "segment files (index); path relative to the store" },
    { "stacks", K_STACKS,
      "stack_id INTEGER, depth INTEGER, frame TEXT, address INTEGER, pid INTEGER",
      -1, -1, -1, -1, 0, false, false,
      "frames of every sampled stack, depth 0 = innermost, named as d9 flame names them" },
    { "polls", K_POLLS,
      "pid INTEGER, tid INTEGER, runtime TEXT, worker INTEGER, task INTEGER, loc INTEGER, "
      "location TEXT, start_ns INTEGER, end_ns INTEGER, dur_ns INTEGER, unfinished TEXT",
      PL_PID, PL_TID, PL_START, PL_RUNTIME, T(D9_REC_POLL_START) | T(D9_REC_POLL_END), true,
      false, "task polls (poll_start .. poll_end of one task on one thread); unfinished: "
      "end_ns NULL, dur_ns up to the last record of its process (at least), unfinished = why "
      "('process crashed', 'process exited', 'process ended', 'still open'), as top-polls" },
    { "parks", K_PARKS,
      "pid INTEGER, tid INTEGER, runtime TEXT, worker INTEGER, start_ns INTEGER, "
      "end_ns INTEGER, dur_ns INTEGER, cpu_ns INTEGER, sched_wait_ns INTEGER, "
      "park_wait_ns INTEGER",
      PK_PID, PK_TID, PK_START, PK_RUNTIME, T(D9_REC_WORKER_PARK) | T(D9_REC_WORKER_UNPARK),
      true, false, "worker_park .. worker_unpark intervals; cpu_ns = thread CPU time read at "
      "the park; the two wait samples (NULL when not sampled): sched_wait_ns read at the unpark "
      "(run-queue wait of the parked interval: the wake-up), park_wait_ns read at the park "
      "(of the busy interval before it); a worker's waits are both kinds: sched_waits, workers" },
    { "sched_waits", K_SCHED_WAITS,
      "pid INTEGER, tid INTEGER, ts_ns INTEGER, runtime TEXT, worker INTEGER, kind TEXT, "
      "wait_ns INTEGER, cpu_ns INTEGER",
      SW_PID, SW_TID, SW_TS, SW_RUNTIME, T(D9_REC_WORKER_PARK) | T(D9_REC_WORKER_UNPARK), true,
      true, "scheduling-wait samples (as d9 sched counts them): every sampled worker_park and "
      "worker_unpark, its run-queue wait since the thread's previous sample; kind 'park' "
      "(the busy interval before it) or 'unpark' (the parked interval)" },
    { "workers", K_WORKERS,
      "pid INTEGER, runtime TEXT, worker INTEGER, tid INTEGER, polls INTEGER, parks INTEGER, "
      "unparks INTEGER, waits INTEGER, wait_sum_ns INTEGER, wait_p50_ns INTEGER, "
      "wait_p99_ns INTEGER, wait_max_ns INTEGER, cpu_ns INTEGER, parked_ns INTEGER, "
      "span_ns INTEGER, busy_ns INTEGER, busy_pct REAL",
      0, -1, -1, -1, 0, false, false,
      "one row per worker over the whole store, as d9 sched computes it (waits: park and "
      "unpark samples; busy_ns = time in polls; span_ns = the worker's first record to its "
      "process's last)" },
    { "poll_stats", K_POLL_STATS,
      "pid INTEGER, runtime TEXT, worker INTEGER, loc INTEGER, location TEXT, "
      "bucket_ns INTEGER, count INTEGER, unfinished INTEGER, sum_ns INTEGER, max_ns INTEGER, "
      "p50_ns INTEGER, p99_ns INTEGER, segment INTEGER, bucket_width_ns INTEGER HIDDEN",
      0, -1, 5, -1, 0, false, false,
      "polls per second from the segments' rollups, without reading records: one row per "
      "segment, worker, location and 1 s bucket (bucket_ns = its start); a poll counts in the "
      "bucket of its start, its whole duration with it; unfinished polls (no end in their "
      "segment) are in count, not in sum_ns/max_ns; p50/p99 within 6.25 %; sum and max over "
      "rows are exact; the *_stats tables' hidden bucket_width_ns = W (whole seconds) merges "
      "the 1 s rows into W-wide buckets over all segments (segment NULL)" },
    { "worker_stats", K_WORKER_STATS,
      "pid INTEGER, runtime TEXT, worker INTEGER, bucket_ns INTEGER, polls INTEGER, "
      "busy_ns INTEGER, parks INTEGER, parked_ns INTEGER, waits INTEGER, wait_sum_ns INTEGER, "
      "wait_max_ns INTEGER, segment INTEGER, cpu_ns INTEGER, cpu_first_ns INTEGER, "
      "cpu_last_ns INTEGER, bucket_width_ns INTEGER HIDDEN",
      0, -1, 3, -1, 0, false, false,
      "per worker and second from the segments' rollups: busy_ns = the union of its finished "
      "polls (by start bucket; an unfinished poll stops none after it), parked_ns = "
      "park..unpark (by park bucket), waits = sampled park and unpark records (d9 sched's "
      "definition); cpu_first_ns / cpu_last_ns = the first and largest cpu_ns of the sampled "
      "ones (version 4; NULL without), cpu_ns = their difference: a window's CPU time (d9 "
      "sched's) is MAX(cpu_last_ns) - MIN(cpu_first_ns); one row per segment and bucket" },
    { "wakes", K_WAKES,
      "pid INTEGER, tid INTEGER, ts_ns INTEGER, runtime TEXT, waker INTEGER, wakee INTEGER, "
      "target_worker INTEGER",
      C_PID, C_TID, C_TS, 3, T(D9_REC_WAKE), true, true,
      "wake records; waker 0 = not a task, target_worker NULL = unknown" },
    { "spawns", K_SPAWNS,
      "pid INTEGER, tid INTEGER, ts_ns INTEGER, runtime TEXT, task INTEGER, loc INTEGER, "
      "location TEXT",
      C_PID, C_TID, C_TS, 3, T(D9_REC_TASK_SPAWN), true, true, "task_spawn records" },
    { "terminates", K_TERMINATES,
      "pid INTEGER, tid INTEGER, ts_ns INTEGER, runtime TEXT, task INTEGER",
      C_PID, C_TID, C_TS, 3, T(D9_REC_TASK_TERMINATE), true, true, "task_terminate records" },
    { "queue_depths", K_QUEUE_DEPTHS,
      "pid INTEGER, tid INTEGER, ts_ns INTEGER, runtime TEXT, worker INTEGER, depth INTEGER",
      C_PID, C_TID, C_TS, 3, T(D9_REC_QUEUE_DEPTH), true, true,
      "queue_depth records; worker NULL = the runtime's global queue" },
    { "cpu_samples", K_CPU_SAMPLES,
      "pid INTEGER, tid INTEGER, ts_ns INTEGER, kind TEXT, stack_id INTEGER, "
      "weight_ns INTEGER, nframes INTEGER",
      C_PID, C_TID, C_TS, -1, T(D9_REC_CPU_SAMPLE) | T(D9_REC_SCHED_SWITCH), false, true,
      "profile samples: kind 'cpu' (on-CPU) or 'off_cpu' (context switch); tid = sampled "
      "thread; frames in stacks" },
    { "events", K_EVENTS,
      "pid INTEGER, tid INTEGER, ts_ns INTEGER, type TEXT, event TEXT, thread TEXT, fields TEXT",
      C_PID, C_TID, C_TS, -1, 0xffffffffu & ~T(D9_REC_PAD), true, true,
      "every record of the programs decoded: type name, custom event name, fields as a JSON "
      "object" },
    { "loop_work", K_LOOP_WORK,
      "pid INTEGER, tid INTEGER, runtime TEXT, worker INTEGER, start_ns INTEGER, "
      "end_ns INTEGER, dur_ns INTEGER, cpu_samples INTEGER",
      0, -1, -1, -1, 0, false, false,
      "loop work (as top-polls --loop-work): a loop thread's time outside its callbacks and "
      "its wait, >= 1 ms, from the record that leaves a poll or the wait to the next that "
      "enters one; cpu_samples = the thread's CPU samples inside (cpu_samples rows of its tid "
      "with ts_ns between start_ns and end_ns)" },
    { "wake_stats", K_WAKE_STATS,
      "pid INTEGER, runtime TEXT, bucket_ns INTEGER, wakes INTEGER, segment INTEGER, "
      "delay_count INTEGER, delay_sum_ns INTEGER, delay_max_ns INTEGER, delay_p50_ns INTEGER, "
      "delay_p99_ns INTEGER, bucket_width_ns INTEGER HIDDEN",
      0, -1, 2, -1, 0, false, false,
      "wakes per runtime and second from the segments' rollups (version 3), without reading "
      "records: one row per segment, runtime and 1 s bucket (bucket_ns = its start); wakes = "
      "wake records in it; SUM over rows = count(*) of wakes; delay_* (version 4): the wakes "
      "of the row answered by a poll in the segment (the wakee's next poll_start, as the "
      "exports' flows pair them) and the wake->poll delays, p50/p99 within 6.25 % (NULL "
      "without a delay)" },
    { "event_stats", K_EVENT_STATS,
      "pid INTEGER, event TEXT, bucket_ns INTEGER, count INTEGER, segment INTEGER, "
      "bucket_width_ns INTEGER HIDDEN",
      0, -1, 2, -1, 0, false, false,
      "custom events per schema and second from the segments' rollups (version 3), without "
      "reading records: one row per segment, event and 1 s bucket (bucket_ns = its start); "
      "SUM(count) over rows = count(*) of the event's table" },
    { "event_field_stats", K_EVENT_FIELD_STATS,
      "pid INTEGER, event TEXT, field TEXT, bucket_ns INTEGER, count INTEGER, sum, min, max, "
      "p50 INTEGER, p99 INTEGER, segment INTEGER, bucket_width_ns INTEGER HIDDEN",
      0, -1, 3, -1, 0, false, false,
      "custom events' numeric fields per schema, field and second from the segments' rollups "
      "(version 4), without reading records: count, sum, min, max of the values (u64 and bool "
      "fields: integers, sum modulo 2^64; i64: integers; f64: reals, NaN left out), p50/p99 "
      "of |value| within 6.25 %; str fields have no rows; SUM(count), SUM(sum) over rows "
      "= count(field), sum(field) of the event's table" },
    { "location_stats", K_LOCATION_STATS,
      "pid INTEGER, runtime TEXT, loc INTEGER, location TEXT, start_ns INTEGER, "
      "count INTEGER, unfinished INTEGER, sum_ns INTEGER, max_ns INTEGER, p50_ns INTEGER, "
      "p90_ns INTEGER, p99_ns INTEGER, p999_ns INTEGER",
      0, -1, 4, -1, 0, false, false,
      "polls per process, runtime and location over the whole store, or over the polls that "
      "start in a start_ns window (start_ns = the window's first ns), merged from the rollups' "
      "histograms (as top-polls --by-location: whole buckets from the rollups, the window's "
      "edges from the records; counts and sums exact); unfinished polls are in count, not in "
      "sum_ns/max_ns/quantiles; p50..p999 within 6.25 %, NULL without a finished poll" },
    { "triggers", K_TRIGGERS,
      "pid INTEGER, t_ns INTEGER, source TEXT, reason TEXT, verdict TEXT, win_t0 INTEGER, "
      "win_t1 INTEGER, fields TEXT",
      0, -1, -1, -1, 0, false, false,
      "the collector's triggers (index): source marker|shell|poll|crash|sched|lost|field, verdict "
      "kept|merged|debounced|rate-limited, win_t0..win_t1 the kept window after merges "
      "(NULL: none), fields a typed trigger's fields but its reason as a JSON object "
      "(NULL: none, or a store from before index version 5)" },
    { "kept", K_KEPT,
      "pid INTEGER, t0_ns INTEGER, t1_ns INTEGER, trig_ns INTEGER, ntrig INTEGER, "
      "reason TEXT, segment_id INTEGER, path TEXT, bytes INTEGER, records INTEGER, "
      "source_segment INTEGER",
      0, -1, -1, -1, 0, false, false,
      "kept windows (--retain triggered; index): one row per kept segment, its window "
      "t0_ns..t1_ns, the trigger that opened it (pid, trig_ns, reason) and how many "
      "triggers it holds, the segment (path relative to the store) and the segment "
      "it was cut from" },
};
#define NDEFS (sizeof defs / sizeof defs[0])

static const struct tab_def custom_def = {
    "", K_CUSTOM, "", C_PID, C_TID, C_TS, -1, T(D9_REC_CUSTOM), true, true, ""
};


struct rt_pids {
    const char *name;
    uint32_t pid;
    size_t n, distinct;
};

static int on_rt_pid(void *arg, const struct idx_read_runtime *r)
{
    struct rt_pids *p = arg;
    if (strcmp(r->name, p->name) != 0)
        return 0;
    if (p->n++ == 0)
        p->pid = r->pid;
    else if (r->pid != p->pid)
        p->distinct++;
    return 0;
}

/* ---- module callbacks --------------------------------------------------------------- */

static int x_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                     sqlite3_vtab **out, char **err)
{
    struct sql_vtab *ctx = aux;
    /* an eponymous table (sql_vtab_attach_lazy): the module's name is the kind */
    const char *kind = argc == 3 ? argv[0] : argc >= 4 ? argv[3] : NULL;
    if (!kind) {
        *err = sqlite3_mprintf("d9: missing table kind");
        return SQLITE_ERROR;
    }
    const struct tab_def *def = NULL;
    const struct event_def *ev = NULL;
    if (strcmp(kind, "custom") == 0 && argc >= 5) {
        long i = strtol(argv[4], NULL, 10);
        if (i < 0 || (size_t)i >= ctx->nev) {
            *err = sqlite3_mprintf("d9: no custom event %s", argv[4]);
            return SQLITE_ERROR;
        }
        ev = &ctx->ev[i];
        def = &custom_def;
    } else {
        for (size_t i = 0; i < NDEFS; i++)
            if (strcmp(defs[i].name, kind) == 0)
                def = &defs[i];
    }
    if (!def) {
        *err = sqlite3_mprintf("d9: unknown table kind %s", kind);
        return SQLITE_ERROR;
    }
    char *sql;
    if (ev) {
        sqlite3_str *s = sqlite3_str_new(db);
        sqlite3_str_appendall(s, "CREATE TABLE x(pid INTEGER, tid INTEGER, ts_ns INTEGER, task INTEGER");
        for (unsigned i = 0; i < ev->nfields; i++) {
            static const char *const ty[] = { "", "INTEGER", "INTEGER", "REAL", "INTEGER",
                                              "TEXT" };
            sqlite3_str_appendf(s, ", \"%w\" %s", ev->colnames[i],
                                ev->ftype[i] <= D9_FT_STR ? ty[ev->ftype[i]] : "");
        }
        sqlite3_str_appendall(s, ")");
        sql = sqlite3_str_finish(s);
    } else {
        sql = sqlite3_mprintf("CREATE TABLE x(%s)", def->cols);
    }
    if (!sql)
        return SQLITE_NOMEM;
    int rc = sqlite3_declare_vtab(db, sql);
    sqlite3_free(sql);
    if (rc != SQLITE_OK)
        return rc;
    struct vt *v = sqlite3_malloc(sizeof *v);
    if (!v)
        return SQLITE_NOMEM;
    memset(v, 0, sizeof *v);
    v->ctx = ctx;
    v->def = def;
    v->ev = ev;
    *out = &v->base;
    return SQLITE_OK;
}

static int x_disconnect(sqlite3_vtab *tab)
{
    sqlite3_free(tab);
    return SQLITE_OK;
}

static int x_best_index(sqlite3_vtab *tab, sqlite3_index_info *ii)
{
    const struct tab_def *d = ((struct vt *)tab)->def;
    char codes[SQL_MAX_CODES + 1];
    int n = 0;
    double cost = d->types ? SQL_COST_RECORDS : SQL_COST_LISTING;
    bool lo = false, hi = false;
    for (int i = 0; i < ii->nConstraint && n < SQL_MAX_CODES; i++) {
        const struct sqlite3_index_constraint *k = &ii->aConstraint[i];
        if (!k->usable)
            continue;
        char code = 0;
        bool eq = k->op == SQLITE_INDEX_CONSTRAINT_EQ;
        if (k->iColumn < 0)
            continue;
        if (k->iColumn == d->pid_col && eq) {
            code = 'p';
            cost /= 20;
        } else if (k->iColumn == d->tid_col && eq) {
            code = 't';
            cost /= 20;
        } else if (k->iColumn == d->ts_col) {
            switch (k->op) {
            case SQLITE_INDEX_CONSTRAINT_EQ: code = '='; cost /= 1000; break;
            case SQLITE_INDEX_CONSTRAINT_GT: code = '>'; lo = true; break;
            case SQLITE_INDEX_CONSTRAINT_GE: code = 'g'; lo = true; break;
            case SQLITE_INDEX_CONSTRAINT_LT: code = '<'; hi = true; break;
            case SQLITE_INDEX_CONSTRAINT_LE: code = 'l'; hi = true; break;
            default: break;
            }
        } else if (k->iColumn == d->rt_col && eq) {
            code = 'r';
            cost /= 2;
        } else if (d->kind == K_EVENTS && k->iColumn == 3 && eq) {
            code = 'y';
            cost /= 5;
        } else if (eq && k->iColumn == sql_rollup_width_col(d->kind)) {
            code = 'w';
        } else if (d->kind == K_STACKS && k->iColumn == ST_ID && eq) {
            code = 's';
            cost = 10;
        }
        if (!code)
            continue;
        codes[n++] = code;
        ii->aConstraintUsage[i].argvIndex = n;
        ii->aConstraintUsage[i].omit = 0;
    }
    if (lo)
        cost /= 4;
    if (hi)
        cost /= 4;
    codes[n] = 0;
    ii->idxStr = sqlite3_mprintf("%s", codes);
    if (!ii->idxStr)
        return SQLITE_NOMEM;
    ii->needToFreeIdxStr = 1;
    if (d->ordered && ii->nOrderBy == 1 && ii->aOrderBy[0].iColumn == d->ts_col &&
        !ii->aOrderBy[0].desc)
        ii->orderByConsumed = 1;
    if (d->kind == K_POLLS && ii->nOrderBy == 1 && !ii->aOrderBy[0].desc &&
        (ii->aOrderBy[0].iColumn == PL_LOC || ii->aOrderBy[0].iColumn == PL_LOCATION) &&
        sql_pair_group_fits((struct vt *)tab, ii)) {
        ii->orderByConsumed = 1;
        ii->idxNum = ii->aOrderBy[0].iColumn == PL_LOC ? GRP_BY_LOC : GRP_BY_LOCATION;
    }
    ii->estimatedCost = cost;
    ii->estimatedRows = (sqlite3_int64)cost;
    return SQLITE_OK;
}

static int x_open(sqlite3_vtab *tab, sqlite3_vtab_cursor **out)
{
    struct cur *c = calloc(1, sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    c->vt = (struct vt *)tab;
    *out = &c->base;
    return SQLITE_OK;
}

static void cur_reset(struct cur *c)
{
    sql_scan_end(c);
    sql_list_reset(c);
    sql_stack_reset(c);
    sql_pair_reset(c);
    c->last_meta = NULL;
    c->eof = false;
    c->rt_set = false;
    c->sample_tid = 0;
    c->bucket_width = 0;
}

static int x_close(sqlite3_vtab_cursor *cur)
{
    struct cur *c = (struct cur *)cur;
    cur_reset(c);
    sql_pair_close(c);
    sql_scan_close(c);
    free(c);
    return SQLITE_OK;
}

/* Advance to the next row. 0 (c->eof set at the end) or -errno. */
static int step(struct cur *c)
{
    const struct tab_def *d = c->vt->def;
    if (d->kind == K_STACKS)
        return sql_stack_step(c);
    if (!d->types)
        return sql_list_step(c);
    if (d->kind == K_POLLS || d->kind == K_PARKS)
        return sql_pair_step(c);
    return sql_scan_step(c);
}

static int x_filter(sqlite3_vtab_cursor *cur, int idx_num, const char *idx_str, int argc,
                    sqlite3_value **argv)
{
    struct cur *c = (struct cur *)cur;
    struct vt *v = c->vt;
    const struct tab_def *d = v->def;
    cur_reset(c);
    c->f = (struct q_filter){ .from = 0, .to = UINT64_MAX, .types = d->types };
    bool ok = true, stack_set = false;
    uint64_t stack_want = 0;
    uint32_t tid = 0;
    for (int i = 0; ok && idx_str && idx_str[i] && i < argc; i++) {
        switch (idx_str[i]) {
        case 'p':
            ok = sql_val_narrow_id(argv[i], &c->f.pid);
            break;
        case 't':
            ok = sql_val_narrow_id(argv[i], &tid);
            break;
        case 'r': {
            const unsigned char *t = sqlite3_value_text(argv[i]);
            if (t && strlen((const char *)t) < sizeof c->rt_name) {
                snprintf(c->rt_name, sizeof c->rt_name, "%s", (const char *)t);
                c->rt_set = true;
            } else {
                ok = false;         /* NULL or longer than any runtime name */
            }
            break;
        }
        case 'y': {
            const unsigned char *t = sqlite3_value_text(argv[i]);
            int ty = t ? shm_record_type_from_name((const char *)t) : -1;
            if (ty <= 0 || ty >= 32)
                ok = false;
            else
                c->f.types &= T((unsigned)ty);
            ok = ok && c->f.types != 0;
            break;
        }
        case 'w': {
            bool is_int;
            int64_t iv;
            double dv;
            ok = sql_val_num(argv[i], &is_int, &iv, &dv);
            if (ok && !is_int) {            /* 60e9 is a REAL */
                ok = dv > 0 && dv < 9.2e18 && (double)(int64_t)dv == dv;
                iv = ok ? (int64_t)dv : 0;
            }
            ok = ok && iv > 0 && iv % (int64_t)ROLLUP_BUCKET_NS == 0;
            c->bucket_width = ok ? (uint64_t)iv : 0;
            break;
        }
        case 's': {
            bool is_int;
            int64_t iv;
            double dv;
            if (sql_val_num(argv[i], &is_int, &iv, &dv)) {
                if (!is_int || iv < 0)
                    ok = false;
                stack_want = (uint64_t)iv;
                stack_set = true;
            }
            break;
        }
        default:
            ok = sql_val_narrow_time(idx_str[i], argv[i], &c->f.from, &c->f.to);
            break;
        }
    }
    if (!ok) {
        c->eof = true;
        return SQLITE_OK;
    }
    if (d->kind == K_CPU_SAMPLES)
        c->sample_tid = tid;        /* samples of many threads share a block */
    else
        c->f.tid = tid;
    if (c->rt_set && d->types) {
        struct rt_pids rp = { .name = c->rt_name };
        if (q_store_runtimes(v->ctx->s, c->f.pid, 0, on_rt_pid, &rp) >= 0) {
            if (rp.n == 0) {
                c->eof = true;
                return SQLITE_OK;
            }
            if (rp.distinct == 0)
                c->f.pid = rp.pid;
        }
    }
    if (d->kind == K_CUSTOM && v->ev->pid) {
        /* only the processes of one pid have this event */
        if (c->f.pid && c->f.pid != v->ev->pid) {
            c->eof = true;
            return SQLITE_OK;
        }
        c->f.pid = v->ev->pid;
    }
    int rc;
    if (!d->types) {
        if (d->kind != K_THREADS)
            c->f.tid = 0;
        if (d->kind == K_STACKS)
            rc = sql_stack_fill(c, stack_want, stack_set);
        else if (d->kind == K_POLL_STATS || d->kind == K_WORKER_STATS ||
                 d->kind == K_LOCATION_STATS || d->kind == K_WAKE_STATS ||
                 d->kind == K_EVENT_STATS || d->kind == K_EVENT_FIELD_STATS)
            rc = sql_rollup_fill(c);
        else
            rc = sql_list_fill(c);
        if (rc < 0)
            return sql_val_error(v, "d9: reading the store failed: %s", strerror(-rc));
        return SQLITE_OK;
    }
    if (d->kind == K_POLLS || d->kind == K_PARKS) {
        rc = sql_pair_begin(c, idx_num);
    } else {
        rc = sql_scan_begin(c, c->f.from, c->f.to);
        if (rc == 0)
            rc = step(c);
    }
    if (rc == -E2BIG)
        return sql_val_error(v, "d9: %s", "polls grouped by location need more memory than the "
                             "limit: narrow the query by pid or start_ns");
    if (rc == -ENOMEM)
        return SQLITE_NOMEM;
    if (rc < 0)
        return sql_val_error(v, "d9: scan failed: %s", strerror(-rc));
    return SQLITE_OK;
}

static int x_next(sqlite3_vtab_cursor *cur)
{
    struct cur *c = (struct cur *)cur;
    int rc = step(c);
    if (rc < 0)
        return sql_val_error(c->vt, "d9: scan failed: %s", strerror(-rc));
    return SQLITE_OK;
}

static int x_eof(sqlite3_vtab_cursor *cur) { return ((struct cur *)cur)->eof; }

/*
 * The rowid names the row's origin, not its rank in this scan: SQLite
 * merges the scans of OR terms by rowid, so the same row must get the same
 * rowid in every scan and different rows different ones. A 63-bit hash of
 * the record's identity (segment, ring generation, seq, time, type), of the
 * interval's start, of the stack frame or of the listing row's key.
 */
static int x_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
    struct cur *c = (struct cur *)cur;
    const struct tab_def *d = c->vt->def;
    if (d->kind == K_STACKS) {
        *rowid = (sqlite3_int64)((store_hash64(sql_stack_current(c)) ^ c->depth) & (uint64_t)INT64_MAX);
    } else if (!d->types) {
        *rowid = sql_list_key(c);
    } else if (d->kind == K_POLLS || d->kind == K_PARKS) {
        *rowid = sql_pair_key(c);
    } else {
        *rowid = sql_scan_key(c);
    }
    return SQLITE_OK;
}

static int x_column(sqlite3_vtab_cursor *cur, sqlite3_context *cx, int col)
{
    struct cur *c = (struct cur *)cur;
    const struct tab_def *d = c->vt->def;
    if (d->kind == K_STACKS)
        sql_stack_column(c, cx, col);
    else if (!d->types)
        sql_list_column(c, cx, col);
    else if (d->kind == K_POLLS || d->kind == K_PARKS)
        sql_pair_column(c, cx, col);
    else
        sql_scan_column(c, cx, col);
    return SQLITE_OK;
}

/* Every table's methods; the one module used with CREATE VIRTUAL TABLE
 * also has xCreate. */
#define SQL_VTAB_METHODS                                                                     \
    .iVersion = 1, .xConnect = x_connect, .xBestIndex = x_best_index,                        \
    .xDisconnect = x_disconnect, .xDestroy = x_disconnect, .xOpen = x_open,                  \
    .xClose = x_close, .xFilter = x_filter, .xNext = x_next, .xEof = x_eof,                  \
    .xColumn = x_column, .xRowid = x_rowid

static const sqlite3_module module = { SQL_VTAB_METHODS, .xCreate = x_connect };

/* One per built-in table, named after it: an eponymous-only module (no xCreate), whose
 * table SQLite connects the first time a statement names it. */
static const sqlite3_module module_eponymous = { SQL_VTAB_METHODS };

/* ---- public ---------------------------------------------------------------------------- */

/* Create every table: the built-in ones (defs), then one per custom event (v->ev). */
static int create_tables(struct sqlite3 *db, struct sql_vtab *v, char *why, size_t whycap)
{
    for (size_t i = 0; i < NDEFS + v->nev; i++) {
        char *sql = i < NDEFS
            ? sqlite3_mprintf("CREATE VIRTUAL TABLE \"%w\" USING d9(%s)", defs[i].name,
                              defs[i].name)
            : sqlite3_mprintf("CREATE VIRTUAL TABLE \"%w\" USING d9(custom, %d)",
                              v->ev[i - NDEFS].table, (int)(i - NDEFS));
        char *err = NULL;
        int r = sql ? sqlite3_exec(db, sql, NULL, NULL, &err) : SQLITE_NOMEM;
        sqlite3_free(sql);
        if (r != SQLITE_OK) {
            snprintf(why, whycap, "creating table %s: %s",
                     i < NDEFS ? defs[i].name : v->ev[i - NDEFS].table,
                     err ? err : sqlite3_errstr(r));
            sqlite3_free(err);
            return -EIO;
        }
    }
    return 0;
}

int sql_vtab_attach_lazy(struct sqlite3 *db, struct q_store *s, const char *prog,
                         struct sql_vtab **out, char *why, size_t whycap)
{
    *out = NULL;
    struct sql_vtab *v = calloc(1, sizeof *v);
    if (!v || q_names_open(s, &v->names) < 0) {
        free(v);
        snprintf(why, whycap, "out of memory");
        return -ENOMEM;
    }
    v->s = s;
    v->prog = prog ? prog : "d9";
    if (sqlite3_create_module_v2(db, "d9", &module, v, NULL) != SQLITE_OK) {
        snprintf(why, whycap, "registering the SQL module: %s", sqlite3_errmsg(db));
        sql_vtab_free(v);
        return -EIO;
    }
    *out = v;                       /* the module holds v: free it after closing db */
    for (size_t i = 0; i < NDEFS; i++)
        if (sqlite3_create_module_v2(db, defs[i].name, &module_eponymous, v, NULL) !=
            SQLITE_OK) {
            snprintf(why, whycap, "registering table %s: %s", defs[i].name,
                     sqlite3_errmsg(db));
            return -EIO;
        }
    return 0;
}

int sql_vtab_attach_tables(struct sqlite3 *db, struct sql_vtab *v, char *why, size_t whycap)
{
    if (v->tables_done)
        return 0;
    v->tables_done = true;
    /* the created tables replace the eponymous ones: pragma module_list shows "d9" alone */
    for (size_t i = 0; i < NDEFS; i++)
        sqlite3_create_module_v2(db, defs[i].name, NULL, NULL, NULL);
    const char *names[NDEFS];
    for (size_t i = 0; i < NDEFS; i++)
        names[i] = defs[i].name;
    int rc = sql_custom_discover(v, names, NDEFS);
    if (rc < 0) {
        snprintf(why, whycap, "reading the store's event schemas: %s", strerror(-rc));
        return rc;
    }
    return create_tables(db, v, why, whycap);
}

int sql_vtab_attach(struct sqlite3 *db, struct q_store *s, const char *prog,
                    struct sql_vtab **out, char *why, size_t whycap)
{
    int rc = sql_vtab_attach_lazy(db, s, prog, out, why, whycap);
    return rc < 0 ? rc : sql_vtab_attach_tables(db, *out, why, whycap);
}

void sql_vtab_free(struct sql_vtab *v)
{
    if (!v)
        return;
    q_names_close(v->names);
    sql_custom_free(v);
    sql_stack_free(v);
    free(v);
}

const struct q_scan_stats *sql_vtab_stats(const struct sql_vtab *v) { return &v->st; }
void sql_vtab_stats_reset(struct sql_vtab *v) { memset(&v->st, 0, sizeof v->st); }

void sql_vtab_describe(FILE *f, const char *table)
{
    for (size_t i = 0; i < NDEFS; i++)
        if (strcmp(defs[i].name, table) == 0) {
            fprintf(f, "%s", defs[i].doc);
            return;
        }
    fprintf(f, "custom event (one row per event; fields as columns)");
}
