/*
 * idx_read.c — the reader-side queries of the index (API: idx_read.h;
 * schema: idx.h; the connection and its open: idx.c).
 *
 * Called by: d9's query layer (collector/query/q_store.c), the collector's
 * start-up recovery, ring counters and status, d9 fsck.
 *
 * Each query is one statement: prepared per call and finalized before
 * return, except the thread-name lookup, which d9's scan makes once per
 * block and which is kept prepared in struct idx (rd[], reset after every
 * use; idx.c finalizes it at close). A statement that ends early is reset
 * or finalized at once, so a WAL reader never pins an old snapshot.
 * SQLite failures are -EIO, the reason in idx_errmsg.
 *
 * Must never: write, or keep a statement stepping between calls (except an
 * open block cursor).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/idx_int.h"
#include "collector/store/idx_read.h"
#include "collector/store/seg.h"
#include "collector/store/sym.h"

enum { RD_THREAD_NAME, RD_COUNT };
_Static_assert(RD_COUNT <= IDX_READ_STMTS, "idx_int.h sizes the read statement cache");

static int64_t clamp_i64(uint64_t v) { return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v; }
static uint64_t col_u64(sqlite3_stmt *st, int i)
{
    sqlite3_int64 v = sqlite3_column_int64(st, i);
    return v < 0 ? 0 : (uint64_t)v;
}
static const char *col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

static int fail(struct idx *x, const char *what)
{
    snprintf(x->err, sizeof x->err, "%s: %s: %s", x->path, what, sqlite3_errmsg(x->db));
    return -EIO;
}

static int prep(struct idx *x, const char *sql, sqlite3_stmt **st)
{
    if (sqlite3_prepare_v2(x->db, sql, -1, st, NULL) != SQLITE_OK) {
        *st = NULL;
        return fail(x, "prepare");
    }
    return 0;
}

static int cached(struct idx *x, int id, const char *sql, sqlite3_stmt **st)
{
    if (!x->rd[id] && sqlite3_prepare_v3(x->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &x->rd[id],
                                         NULL) != SQLITE_OK) {
        x->rd[id] = NULL;
        return fail(x, "prepare");
    }
    sqlite3_reset(x->rd[id]);
    sqlite3_clear_bindings(x->rd[id]);
    *st = x->rd[id];
    return 0;
}

/* First column of the single row of st as text into out: 0, -ENOENT, -EIO. */
static int one_text(struct idx *x, sqlite3_stmt *st, char *out, size_t cap, const char *what)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        snprintf(out, cap, "%s", col_text(st, 0));
        return 0;
    }
    return rc == SQLITE_DONE ? -ENOENT : fail(x, what);
}

/* The first column of the first row of st as an integer into *v (when v is
 * not NULL), st finalized: 1 (a row), 0 (none) or -EIO. */
static int one_i64(struct idx *x, sqlite3_stmt *st, sqlite3_int64 *v, const char *what)
{
    int rc = sqlite3_step(st);
    int e = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : fail(x, what);
    if (e == 1 && v)
        *v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return e;
}

/* The end of a listing that called fn for n rows, rc its last step, ret fn's
 * last answer; st finalized: fn's stop (negative), else -EIO if the steps
 * failed, else n. */
static int list_end(struct idx *x, sqlite3_stmt *st, int rc, int ret, int n, const char *what)
{
    if (ret == 0 && rc != SQLITE_DONE)
        ret = fail(x, what);
    sqlite3_finalize(st);
    return ret < 0 ? ret : n;
}

int idx_read_meta_get(struct idx *x, const char *key, char *out, size_t cap)
{
    sqlite3_stmt *st;
    if (!x || !key || !out || !cap)
        return -EINVAL;
    int e = prep(x, "SELECT value FROM meta WHERE key = ?1", &st);
    if (e < 0)
        return e;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    e = one_text(x, st, out, cap, "read meta");
    sqlite3_finalize(st);
    return e;
}

int idx_read_alive_pid(struct idx *x, uint32_t pid, uint32_t *alive_pid)
{
    sqlite3_stmt *st;
    if (!x || !alive_pid)
        return -EINVAL;
    int e = prep(x, "SELECT pid FROM processes WHERE state = 'alive' AND "
                    "(?1 = 0 OR pid = ?1) LIMIT 1", &st);
    if (e < 0)
        return e;
    sqlite3_bind_int64(st, 1, pid);
    sqlite3_int64 v;
    e = one_i64(x, st, &v, "alive process");
    if (e == 1)
        *alive_pid = (uint32_t)v;
    return e;
}

int idx_read_time_range(struct idx *x, uint32_t pid, uint64_t *tmin, uint64_t *tmax)
{
    sqlite3_stmt *st;
    if (!x || !tmin || !tmax)
        return -EINVAL;
    /* impossible ranges (IDX_BAD_RANGE) say nothing about the store's time */
    int e = prep(x, "SELECT min(s.t_min), max(s.t_max), count(*) FROM segments s "
                    "JOIN processes p ON p.id = s.process_id WHERE (?1 = 0 OR p.pid = ?1) "
                    "AND NOT " IDX_BAD_RANGE("s.t_min", "s.t_max"), &st);
    if (e < 0)
        return e;
    sqlite3_bind_int64(st, 1, pid);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        e = fail(x, "time range");     /* an aggregate has its one row */
    } else if (sqlite3_column_int64(st, 2) > 0) {
        *tmin = col_u64(st, 0);
        *tmax = col_u64(st, 1);
        e = 0;
    } else {
        e = -ENOENT;
    }
    sqlite3_finalize(st);
    return e;
}

int idx_read_processes_window(struct idx *x, uint32_t pid, uint64_t from, uint64_t to,
                         int (*fn)(void *arg, const struct idx_read_process *r), void *arg)
{
    sqlite3_stmt *st;
    if (!x || !fn)
        return -EINVAL;
    int rc = prep(x,
        "SELECT p.id, p.pid, p.uid, p.start_time, p.comm, p.exe, p.first_ns, p.last_ns, "
        "       p.state, p.exit_code, p.records, p.lost, "
        "       (SELECT count(*) FROM segments s WHERE s.process_id = p.id), "
        "       (SELECT coalesce(sum(bytes), 0) FROM segments s WHERE s.process_id = p.id), "
        "       (SELECT min(first_ns) FROM threads t WHERE t.process_id = p.id), "
        "       (SELECT max(last_ns) FROM threads t WHERE t.process_id = p.id) "
        "FROM processes p WHERE (?1 = 0 OR p.pid = ?1) "
        "  AND coalesce(p.last_ns, p.first_ns) >= ?2 AND p.first_ns <= ?3 "
        "ORDER BY p.first_ns, p.id", &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, pid);
    sqlite3_bind_int64(st, 2, clamp_i64(from));
    sqlite3_bind_int64(st, 3, clamp_i64(to));
    int n = 0, ret = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct idx_read_process r = {
            .id = sqlite3_column_int64(st, 0),
            .pid = (uint32_t)sqlite3_column_int64(st, 1),
            .uid = (uint32_t)sqlite3_column_int64(st, 2),
            .start_time = col_u64(st, 3),
            .comm = col_text(st, 4),
            .exe = col_text(st, 5),
            .first_ns = col_u64(st, 6),
            .last_ns = col_u64(st, 7),
            .state = col_text(st, 8),
            .has_exit_code = sqlite3_column_type(st, 9) != SQLITE_NULL,
            .exit_code = sqlite3_column_int64(st, 9),
            .records = col_u64(st, 10),
            .lost = col_u64(st, 11),
            .segments = col_u64(st, 12),
            .bytes = col_u64(st, 13),
            .rec_first_ns = col_u64(st, 14),
            .rec_last_ns = col_u64(st, 15),
        };
        n++;
        ret = fn(arg, &r);
        if (ret != 0)
            break;
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = fail(x, "list processes");
    sqlite3_finalize(st);
    return ret < 0 ? ret : n;
}

int idx_read_drops(struct idx *x, int64_t process_id, uint32_t pid, uint64_t from, uint64_t to,
                   struct idx_read_drops *out)
{
    /* each process's causes clamped into its lost (a hostile producer's
     * counters, or an index written before the collector clamped them):
     * a cause never exceeds the total */
#define DROPS_WHERE "WHERE (?1 = 0 OR p.id = ?1) AND (?2 = 0 OR p.pid = ?2) " \
                    "  AND coalesce(p.last_ns, p.first_ns) >= ?3 AND p.first_ns <= ?4"
#define DROPS_CAUSES "SELECT coalesce(sum(p.lost), 0)," \
        "       coalesce(sum(min(max(coalesce(d.mismatch, 0), 0), p.lost)), 0)," \
        "       coalesce(sum(min(max(coalesce(d.too_big, 0), 0)," \
        "                        p.lost - min(max(coalesce(d.mismatch, 0), 0), p.lost))), 0)," \
        "       coalesce(sum(d.no_ring), 0), "
    static const char sql[] =
        DROPS_CAUSES "coalesce(sum(d.bad_stamps), 0) "
        "FROM processes p LEFT JOIN drops d ON d.process_id = p.id " DROPS_WHERE;
#undef DROPS_CAUSES
#undef DROPS_WHERE
    sqlite3_stmt *st = NULL;
    if (!x || !out)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    int e = prep(x, sql, &st);
    if (e < 0)
        return e;
    sqlite3_bind_int64(st, 1, process_id);
    sqlite3_bind_int64(st, 2, pid);
    sqlite3_bind_int64(st, 3, clamp_i64(from));
    sqlite3_bind_int64(st, 4, clamp_i64(to));
    if (sqlite3_step(st) == SQLITE_ROW) {
        out->lost = col_u64(st, 0);
        out->mismatch = col_u64(st, 1);
        out->too_big = col_u64(st, 2);
        out->no_ring = col_u64(st, 3);
        out->bad_stamps = col_u64(st, 4);
        uint64_t other = out->mismatch + out->too_big;
        out->full = out->lost > other ? out->lost - other : 0;
    } else {
        e = fail(x, "read drops");
    }
    sqlite3_finalize(st);
    return e;
}

_Static_assert(SEG_BLK_DATA == 2 && SYM_SEG_RING == 4294967294u,
               "IDX_MAPS_KIND and IDX_MAPS_RING spell the map records' blocks");

/* The maps count: literals, so the partial index blocks_maps (idx.c) serves
 * it where the index has it (one row per map block, not every block row). */
int idx_read_segments_window(struct idx *x, uint32_t pid, uint64_t from, uint64_t to,
                        int (*fn)(void *arg, const struct idx_read_segment *r), void *arg)
{
    sqlite3_stmt *st;
    if (!x || !fn)
        return -EINVAL;
    int rc = prep(x,
        "SELECT s.id, s.path, s.process_id, p.pid, p.comm, s.t_min, s.t_max, s.bytes, "
        "       s.records, s.lost, s.n_poll_start, s.n_poll_end, s.n_wake, s.n_worker_park, "
        "       s.n_worker_unpark, s.n_task_spawn, s.n_task_terminate, s.n_queue_depth, "
        "       s.n_custom, s.n_cpu_sample, s.n_sched_switch, "
        "       (SELECT coalesce(sum(b.nrec), 0) FROM blocks b "
        "        WHERE b.segment_id = s.id AND b.kind = " IDX_MAPS_KIND
        "          AND b.ring = " IDX_MAPS_RING ") "
        "FROM segments s JOIN processes p ON p.id = s.process_id "
        "WHERE (?1 = 0 OR p.pid = ?1) "
        "  AND (" IDX_BAD_RANGE("s.t_min", "s.t_max") " OR (s.t_max >= ?2 AND s.t_min <= ?3)) "
        "ORDER BY s.t_min, s.id", &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, pid);
    sqlite3_bind_int64(st, 2, clamp_i64(from));
    sqlite3_bind_int64(st, 3, clamp_i64(to));
    int n = 0, ret = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct idx_read_segment r = {
            .id = col_u64(st, 0),
            .path = col_text(st, 1),
            .process_id = sqlite3_column_int64(st, 2),
            .pid = (uint32_t)sqlite3_column_int64(st, 3),
            .comm = col_text(st, 4),
            .t_min = col_u64(st, 5),
            .t_max = col_u64(st, 6),
            .bytes = col_u64(st, 7),
            .records = col_u64(st, 8),
            .lost = col_u64(st, 9),
        };
        for (int t = 1; t < D9_REC_TYPE_COUNT; t++)
            r.counts[t] = col_u64(st, 9 + t);
        /* the collector's maps ride in the custom count of the footer */
        r.maps = col_u64(st, 9 + D9_REC_TYPE_COUNT);
        r.counts[D9_REC_CUSTOM] -= r.maps < r.counts[D9_REC_CUSTOM] ? r.maps
                                                                    : r.counts[D9_REC_CUSTOM];
        n++;
        ret = fn(arg, &r);
        if (ret != 0)
            break;
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = fail(x, "list segments");
    sqlite3_finalize(st);
    return ret < 0 ? ret : n;
}

struct idx_read_cursor {
    struct idx *x;
    sqlite3_stmt *q;
};

int idx_read_blocks_window_open(struct idx *x, const struct idx_read_window *w,
                           struct idx_read_cursor **out)
{
    if (!x || !w || !out)
        return -EINVAL;
    *out = NULL;
    struct idx_read_cursor *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->x = x;
    int e = prep(x,
        "SELECT b.segment_id, b.offset, s.path, s.process_id, p.pid, p.comm, "
        "       CASE WHEN " IDX_BAD_RANGE("b.t_first", "b.t_last") " THEN 0 "
        "            ELSE b.t_first END AS tf, "
        "       b.tid, b.ring, b.generation, b.t_last "
        "FROM blocks b JOIN segments s ON s.id = b.segment_id "
        "JOIN processes p ON p.id = s.process_id "
        "WHERE b.kind = ?1 "
        "  AND (?6 = 1 OR " IDX_BAD_RANGE("b.t_first", "b.t_last") " "
        "       OR (b.t_last >= ?2 AND b.t_first <= ?3)) "
        "  AND (" IDX_BAD_RANGE("s.t_min", "s.t_max") " OR (s.t_max >= ?2 AND s.t_min <= ?3)) "
        "  AND (?4 = 0 OR p.pid = ?4) AND (?5 = 0 OR b.tid = ?5) "
        "  AND (?6 = 0 OR b.ring = ?7) "
        "ORDER BY tf, b.segment_id, b.offset", &c->q);
    if (e < 0) {
        free(c);
        return e;
    }
    sqlite3_bind_int64(c->q, 1, SEG_BLK_DATA);
    sqlite3_bind_int64(c->q, 2, clamp_i64(w->from));
    sqlite3_bind_int64(c->q, 3, clamp_i64(w->to));
    sqlite3_bind_int64(c->q, 4, w->pid);
    sqlite3_bind_int64(c->q, 5, w->tid);
    sqlite3_bind_int64(c->q, 6, w->by_ring != 0);
    sqlite3_bind_int64(c->q, 7, w->ring);
    *out = c;
    return 0;
}

int idx_read_blocks_window_next(struct idx_read_cursor *c, struct idx_read_block *b)
{
    if (!c || !b)
        return -EINVAL;
    int rc = sqlite3_step(c->q);
    if (rc == SQLITE_DONE)
        return 0;
    if (rc != SQLITE_ROW)
        return fail(c->x, "list blocks");
    *b = (struct idx_read_block){
        .segment_id = col_u64(c->q, 0),
        .offset = col_u64(c->q, 1),
        .path = col_text(c->q, 2),
        .process_id = sqlite3_column_int64(c->q, 3),
        .pid = (uint32_t)sqlite3_column_int64(c->q, 4),
        .comm = col_text(c->q, 5),
        .t_first = col_u64(c->q, 6),
        .tid = (uint32_t)sqlite3_column_int64(c->q, 7),
        .ring = (uint32_t)sqlite3_column_int64(c->q, 8),
        .generation = (uint32_t)sqlite3_column_int64(c->q, 9),
        .t_last = col_u64(c->q, 10),
    };
    return 1;
}

void idx_read_blocks_window_close(struct idx_read_cursor *c)
{
    if (!c)
        return;
    sqlite3_finalize(c->q);
    free(c);
}

int idx_read_block_offsets(struct idx *x, uint64_t segment_id, uint16_t kind,
                      int (*fn)(void *arg, uint64_t offset), void *arg)
{
    sqlite3_stmt *st;
    if (!x || !fn)
        return -EINVAL;
    int e = prep(x, "SELECT offset FROM blocks WHERE segment_id = ?1 AND kind = ?2 "
                    "ORDER BY offset", &st);
    if (e < 0)
        return e;
    sqlite3_bind_int64(st, 1, clamp_i64(segment_id));
    sqlite3_bind_int64(st, 2, kind);
    int n = 0, ret = 0, rc = SQLITE_DONE;
    while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        n++;
        ret = fn(arg, col_u64(st, 0));
    }
    return list_end(x, st, rc, ret, n, "list block offsets");
}

int idx_read_block_stats(struct idx *x, int64_t process_id, uint64_t from, uint64_t to,
                         int (*fn)(void *arg, const struct idx_read_block_stat *b), void *arg)
{
    sqlite3_stmt *st;
    if (!x || !fn)
        return -EINVAL;
    int e = prep(x,
        "SELECT b.tid, b.ring, b.nrec, b.t_first, b.t_last "
        "FROM blocks b JOIN segments s ON s.id = b.segment_id "
        "WHERE s.process_id = ?1 AND b.kind = ?2 AND b.t_last >= ?3 AND b.t_first <= ?4 "
        "  AND s.t_max >= ?3 AND s.t_min <= ?4", &st);
    if (e < 0)
        return e;
    sqlite3_bind_int64(st, 1, process_id);
    sqlite3_bind_int64(st, 2, SEG_BLK_DATA);
    sqlite3_bind_int64(st, 3, clamp_i64(from));
    sqlite3_bind_int64(st, 4, clamp_i64(to));
    int n = 0, ret = 0, rc = SQLITE_DONE;
    while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct idx_read_block_stat b = {
            .tid = (uint32_t)sqlite3_column_int64(st, 0),
            .ring = (uint32_t)sqlite3_column_int64(st, 1),
            .nrec = (uint64_t)sqlite3_column_int64(st, 2),
            .t_first = (uint64_t)sqlite3_column_int64(st, 3),
            .t_last = (uint64_t)sqlite3_column_int64(st, 4),
        };
        n++;
        ret = fn(arg, &b);
    }
    return list_end(x, st, rc, ret, n, "block stats");
}

int idx_read_process_segments(struct idx *x, int64_t process_id,
                         int (*fn)(void *arg, const char *path), void *arg)
{
    sqlite3_stmt *st;
    if (!x || !fn)
        return -EINVAL;
    int e = prep(x, "SELECT path FROM segments WHERE process_id = ?1 ORDER BY id DESC", &st);
    if (e < 0)
        return e;
    sqlite3_bind_int64(st, 1, process_id);
    int n = 0, ret = 0, rc = SQLITE_DONE;
    while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        n++;
        ret = fn(arg, col_text(st, 0));
    }
    return list_end(x, st, rc, ret, n, "list a process's segments");
}

int idx_read_threads(struct idx *x, uint32_t pid, int64_t process_id,
                     int (*fn)(void *arg, const struct idx_read_thread *r), void *arg)
{
    sqlite3_stmt *st;
    if (!x || !fn)
        return -EINVAL;
    int rc = prep(x,
        "SELECT t.process_id, p.pid, t.tid, t.ring, t.generation, t.name, t.first_ns, "
        "       t.last_ns, t.ended "
        "FROM threads t JOIN processes p ON p.id = t.process_id "
        "WHERE (?1 = 0 OR p.pid = ?1) AND (?2 = 0 OR t.process_id = ?2) "
        "ORDER BY t.process_id, t.tid, t.first_ns, t.id", &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, pid);
    sqlite3_bind_int64(st, 2, process_id);
    int n = 0, ret = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct idx_read_thread r = {
            .process_id = sqlite3_column_int64(st, 0),
            .pid = (uint32_t)sqlite3_column_int64(st, 1),
            .tid = (uint32_t)sqlite3_column_int64(st, 2),
            .ring = (uint32_t)sqlite3_column_int64(st, 3),
            .generation = (uint32_t)sqlite3_column_int64(st, 4),
            .name = col_text(st, 5),
            .first_ns = col_u64(st, 6),
            .last_ns = col_u64(st, 7),
            .ended = sqlite3_column_int64(st, 8) != 0,
        };
        n++;
        if ((ret = fn(arg, &r)) != 0)
            break;
    }
    return list_end(x, st, rc, ret, n, "list threads");
}

int idx_read_segment_threads(struct idx *x, uint64_t segment_id,
                             int (*fn)(void *arg, const struct idx_read_thread *r), void *arg)
{
    sqlite3_stmt *st;
    if (!x || !fn)
        return -EINVAL;
    int rc = prep(x,
        "SELECT t.tid, t.ring, t.generation, t.name FROM threads t "
        "JOIN segments s ON s.process_id = t.process_id "
        "WHERE s.id = ?1 AND t.name IS NOT NULL AND t.name != '' AND EXISTS("
        "  SELECT 1 FROM blocks b WHERE b.segment_id = s.id AND b.ring = t.ring"
        "  AND b.generation = t.generation) "
        "ORDER BY t.ring, t.generation", &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)segment_id);
    int n = 0, ret = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct idx_read_thread r = {
            .tid = (uint32_t)sqlite3_column_int64(st, 0),
            .ring = (uint32_t)sqlite3_column_int64(st, 1),
            .generation = (uint32_t)sqlite3_column_int64(st, 2),
            .name = col_text(st, 3),
        };
        n++;
        if ((ret = fn(arg, &r)) != 0)
            break;
    }
    return list_end(x, st, rc, ret, n, "list a segment's threads");
}

int idx_read_runtimes(struct idx *x, uint32_t pid, int64_t process_id,
                      int (*fn)(void *arg, const struct idx_read_runtime *r), void *arg)
{
    sqlite3_stmt *st;
    if (!x || !fn)
        return -EINVAL;
    int rc = prep(x,
        "SELECT r.process_id, p.pid, r.runtime_id, r.name "
        "FROM runtimes r JOIN processes p ON p.id = r.process_id "
        "WHERE (?1 = 0 OR p.pid = ?1) AND (?2 = 0 OR r.process_id = ?2) "
        "ORDER BY r.process_id, r.runtime_id", &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, pid);
    sqlite3_bind_int64(st, 2, process_id);
    int n = 0, ret = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct idx_read_runtime r = {
            .process_id = sqlite3_column_int64(st, 0),
            .pid = (uint32_t)sqlite3_column_int64(st, 1),
            .runtime_id = (uint32_t)sqlite3_column_int64(st, 2),
            .name = col_text(st, 3),
        };
        n++;
        if ((ret = fn(arg, &r)) != 0)
            break;
    }
    return list_end(x, st, rc, ret, n, "list runtimes");
}

int idx_read_thread_name(struct idx *x, int64_t process_id, uint32_t ring, uint32_t generation,
                    char *buf, size_t cap)
{
    sqlite3_stmt *st;
    if (!x || !buf || !cap)
        return -EINVAL;
    buf[0] = 0;
    int e = cached(x, RD_THREAD_NAME, "SELECT name FROM threads WHERE process_id = ?1 AND "
                   "ring = ?2 AND generation = ?3", &st);
    if (e < 0)
        return e;
    sqlite3_bind_int64(st, 1, process_id);
    sqlite3_bind_int64(st, 2, ring);
    sqlite3_bind_int64(st, 3, generation);
    e = one_text(x, st, buf, cap, "thread name");
    sqlite3_reset(st);
    return e;
}

int idx_read_process_comm(struct idx *x, int64_t process_id, char *buf, size_t cap)
{
    sqlite3_stmt *st;
    if (!x || !buf || !cap)
        return -EINVAL;
    buf[0] = 0;
    int e = prep(x, "SELECT comm FROM processes WHERE id = ?1", &st);
    if (e < 0)
        return e;
    sqlite3_bind_int64(st, 1, process_id);
    e = one_text(x, st, buf, cap, "process name");
    sqlite3_finalize(st);
    return e;
}

int idx_read_process_end(struct idx *x, int64_t process_id, struct idx_read_process_end *out)
{
    sqlite3_stmt *st;
    if (!x || !out)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    int e = prep(x,
        "SELECT p.state, p.last_ns,"
        "       (SELECT max(b.t_last) FROM segments s JOIN blocks b ON b.segment_id = s.id"
        "         WHERE s.process_id = p.id AND b.kind = ?2 AND b.nrec > 0) "
        "FROM processes p WHERE p.id = ?1", &st);
    if (e < 0)
        return e;
    sqlite3_bind_int64(st, 1, process_id);
    sqlite3_bind_int(st, 2, SEG_BLK_DATA);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        snprintf(out->state, sizeof out->state, "%s", col_text(st, 0));
        out->last_ns = col_u64(st, 1);
        out->rec_last_ns = col_u64(st, 2);
        e = 0;
    } else {
        e = rc == SQLITE_DONE ? -ENOENT : fail(x, "process end");
    }
    sqlite3_finalize(st);
    return e;
}

int idx_read_data_version(struct idx *x, int64_t *out)
{
    sqlite3_stmt *st;
    if (!x || !out)
        return -EINVAL;
    int e = prep(x, "PRAGMA data_version", &st);
    if (e < 0)
        return e;
    sqlite3_int64 v;
    e = one_i64(x, st, &v, "data_version");
    if (e == 1)
        *out = v;
    return e == 1 ? 0 : e == 0 ? fail(x, "data_version") : e;
}

int idx_read_rings_lost(struct idx *x, int64_t process_id, uint32_t first, uint32_t n,
                        uint64_t *lost)
{
    sqlite3_stmt *st;
    if (!lost)
        return -EINVAL;
    memset(lost, 0, (size_t)n * sizeof *lost);
    if (!x || process_id <= 0 || n == 0 || first > UINT32_MAX - (n - 1))
        return -EINVAL;
    int e = prep(x, "SELECT b.ring, COALESCE(SUM(b.lost), 0) FROM blocks b "
                    "JOIN segments s ON s.id = b.segment_id WHERE s.process_id = ?1 "
                    "AND b.ring BETWEEN ?2 AND ?3 GROUP BY b.ring", &st);
    if (e < 0)
        return e;
    sqlite3_bind_int64(st, 1, process_id);
    sqlite3_bind_int64(st, 2, first);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)first + n - 1);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        sqlite3_int64 ring = sqlite3_column_int64(st, 0);
        if (ring >= (sqlite3_int64)first && ring < (sqlite3_int64)first + n)
            lost[ring - first] = col_u64(st, 1);
    }
    if (rc != SQLITE_DONE) {
        memset(lost, 0, (size_t)n * sizeof *lost);
        e = fail(x, "ring drops");
    }
    sqlite3_finalize(st);
    return e;
}

int idx_read_rings_last(struct idx *x, int64_t process_id, uint32_t n, struct idx_ring_last *last)
{
    sqlite3_stmt *st;
    if (!last)
        return -EINVAL;
    memset(last, 0, (size_t)n * sizeof *last);
    if (!x || process_id <= 0 || n == 0)
        return -EINVAL;
    /* one row per ring: SQLite takes the bare columns from the row of max() */
    int e = prep(x, "SELECT b.ring, b.generation, max(b.segment_id * 8589934592 + b.offset), "
                    "b.segment_id, b.offset, s.path FROM blocks b "
                    "JOIN segments s ON s.id = b.segment_id WHERE s.process_id = ?1 "
                    "AND b.kind = ?2 AND b.nrec > 0 AND b.ring < ?3 GROUP BY b.ring", &st);
    if (e < 0)
        return e;
    sqlite3_bind_int64(st, 1, process_id);
    sqlite3_bind_int(st, 2, SEG_BLK_DATA);
    sqlite3_bind_int64(st, 3, n);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        sqlite3_int64 ring = sqlite3_column_int64(st, 0);
        const unsigned char *path = sqlite3_column_text(st, 5);
        if (ring < 0 || ring >= (sqlite3_int64)n || !path ||
            strlen((const char *)path) >= sizeof last[0].path)
            continue;
        struct idx_ring_last *l = &last[ring];
        l->found = 1;
        l->generation = (uint32_t)col_u64(st, 1);
        l->segment_id = col_u64(st, 3);
        l->offset = col_u64(st, 4);
        snprintf(l->path, sizeof l->path, "%s", (const char *)path);
    }
    if (rc != SQLITE_DONE) {
        memset(last, 0, (size_t)n * sizeof *last);
        e = fail(x, "ring last blocks");
    }
    sqlite3_finalize(st);
    return e;
}

int idx_read_segment_has_path(struct idx *x, const char *relpath)
{
    sqlite3_stmt *st;
    if (!x || !relpath)
        return -EINVAL;
    int e = prep(x, "SELECT 1 FROM segments WHERE path = ?1", &st);
    if (e < 0)
        return e;
    sqlite3_bind_text(st, 1, relpath, -1, SQLITE_TRANSIENT);
    return one_i64(x, st, NULL, "look up segment");
}

int idx_read_segment_has_id(struct idx *x, uint64_t id)
{
    sqlite3_stmt *st;
    if (!x)
        return -EINVAL;
    int e = prep(x, "SELECT 1 FROM segments WHERE id = ?1", &st);
    if (e < 0)
        return e;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    return one_i64(x, st, NULL, "look up segment");
}

int idx_read_segment_count(struct idx *x, uint64_t *n)
{
    sqlite3_stmt *st;
    if (!x || !n)
        return -EINVAL;
    *n = 0;
    int e = prep(x, "SELECT COUNT(*) FROM segments", &st);
    if (e < 0)
        return e;
    sqlite3_int64 v;
    e = one_i64(x, st, &v, "count segments");
    if (e == 1)
        *n = v < 0 ? 0 : (uint64_t)v;
    return e == 1 ? 0 : e == 0 ? fail(x, "count segments") : e;
}

int idx_read_rollup(struct idx *x, uint64_t segment_id, uint8_t **out, size_t *len)
{
    sqlite3_stmt *st;
    if (!x || !out || !len)
        return -EINVAL;
    *out = NULL;
    *len = 0;
    int e = prep(x, "SELECT data FROM rollups WHERE segment_id = ?1", &st);
    if (e < 0)
        return e;
    sqlite3_bind_int64(st, 1, segment_id > INT64_MAX ? INT64_MAX : (sqlite3_int64)segment_id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const void *b = sqlite3_column_blob(st, 0);
        int n = sqlite3_column_bytes(st, 0);
        if (n > 0 && b && (*out = malloc((size_t)n)) != NULL) {
            memcpy(*out, b, (size_t)n);
            *len = (size_t)n;
            e = 1;
        } else {
            e = n > 0 ? -ENOMEM : 1;     /* an empty value: rollup_decode refuses it */
        }
    } else if (rc != SQLITE_DONE) {
        e = fail(x, "read rollups");
    }
    sqlite3_finalize(st);
    return e;
}

int idx_read_segment_meta(struct idx *x, const char *path,
                          int (*fn)(void *arg, uint64_t offset), void *arg)
{
    sqlite3_stmt *st;
    if (!x || !path || !fn)
        return -EINVAL;
    int e = prep(x, "SELECT b.offset FROM segments s JOIN blocks b ON b.segment_id = s.id "
                    "WHERE s.path = ?1 AND b.kind = ?2 ORDER BY b.offset", &st);
    if (e < 0)
        return e;
    sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, SEG_BLK_META);
    int n = 0, ret = 0, rc = SQLITE_DONE;
    while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        n++;
        ret = fn(arg, col_u64(st, 0));
    }
    return list_end(x, st, rc, ret, n, "read meta blocks");
}

int idx_read_segment_blocks(struct idx *x, uint64_t segment_id,
                            int (*fn)(void *arg, const struct idx_read_seg_block *b), void *arg)
{
    sqlite3_stmt *st;
    if (!x || !fn)
        return -EINVAL;
    int e = prep(x, "SELECT offset, kind, ring, generation, t_first, t_last FROM blocks "
                    "WHERE segment_id = ?1 AND kind IN (?2, ?3) ORDER BY offset", &st);
    if (e < 0)
        return e;
    sqlite3_bind_int64(st, 1, clamp_i64(segment_id));
    sqlite3_bind_int64(st, 2, SEG_BLK_DATA);
    sqlite3_bind_int64(st, 3, SEG_BLK_META);
    int n = 0, ret = 0, rc = SQLITE_DONE;
    while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct idx_read_seg_block b = { col_u64(st, 0), (uint32_t)col_u64(st, 1),
                                        (uint32_t)col_u64(st, 2), (uint32_t)col_u64(st, 3),
                                        col_u64(st, 4), col_u64(st, 5) };
        n++;
        ret = fn(arg, &b);
    }
    return list_end(x, st, rc, ret, n, "read blocks");
}
