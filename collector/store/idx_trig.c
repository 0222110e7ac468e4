/*
 * idx_trig.c — the index's triggers table (see idx_trig.h). Triggers are
 * rare (rate limited): statements are prepared per call, not cached.
 */
#include "collector/store/idx_trig.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include "collector/store/idx_int.h"

#define TRIG_TABLE_SQL \
    "CREATE TABLE IF NOT EXISTS triggers(id INTEGER PRIMARY KEY, pid INT, process_id INT," \
    " t_ns INT, source TEXT, reason TEXT, verdict TEXT, win_t0 INT, win_t1 INT, fields TEXT);" \
    "CREATE INDEX IF NOT EXISTS triggers_time ON triggers(t_ns);"

static int trig_errno(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_BUSY: case SQLITE_LOCKED: return -EBUSY;
    case SQLITE_NOMEM: return -ENOMEM;
    case SQLITE_FULL: return -ENOSPC;
    case SQLITE_READONLY: return -EROFS;
    default: return -EIO;
    }
}

/* 1 when the triggers table has the fields column (version 5), 0 when it
 * has not (a version 4 table), or the error. */
static int has_fields(struct idx *x)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(x->db, "SELECT count(*) FROM pragma_table_info('triggers')"
                                " WHERE name = 'fields'", -1, &s, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW)
        rc = sqlite3_column_int64(s, 0) > 0;
    else
        rc = trig_errno(rc);
    sqlite3_finalize(s);
    return rc;
}

int idx_trig_ensure(struct idx *x)
{
    if (!x || x->readonly)
        return -EINVAL;
    int rc = sqlite3_exec(x->db, TRIG_TABLE_SQL, NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return trig_errno(rc);
    int has = has_fields(x);
    if (has < 0)
        return has;
    if (!has && (rc = sqlite3_exec(x->db, "ALTER TABLE triggers ADD COLUMN fields TEXT", NULL,
                                   NULL, NULL)) != SQLITE_OK)
        return trig_errno(rc);
    return 0;
}

static void bind_u64_or_null(sqlite3_stmt *s, int i, uint64_t v, int has)
{
    if (has)
        sqlite3_bind_int64(s, i, (sqlite3_int64)v);
    else
        sqlite3_bind_null(s, i);
}

/* One row of t (fields NULL when it has none): SQLITE_OK or the error. */
static int insert_row(struct idx *x, const struct idx_trigger *t, int has_win)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(x->db, "INSERT INTO triggers(pid, process_id, t_ns, source,"
                                " reason, verdict, win_t0, win_t1, fields)"
                                " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", -1, &s, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, t->pid);
        if (t->process_id > 0)
            sqlite3_bind_int64(s, 2, t->process_id);
        else
            sqlite3_bind_null(s, 2);
        sqlite3_bind_int64(s, 3, (sqlite3_int64)t->t_ns);
        sqlite3_bind_text(s, 4, t->source ? t->source : "", -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 5, t->reason ? t->reason : "", -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 6, t->verdict ? t->verdict : "", -1, SQLITE_TRANSIENT);
        bind_u64_or_null(s, 7, t->win_t0_ns, has_win);
        bind_u64_or_null(s, 8, t->win_t1_ns, has_win);
        if (t->fields && *t->fields)
            sqlite3_bind_text(s, 9, t->fields, -1, SQLITE_TRANSIENT);
        else
            sqlite3_bind_null(s, 9);
        rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(x->db);
    }
    sqlite3_finalize(s);
    return rc;
}

int idx_trig_add(struct idx *x, const struct idx_trigger *t)
{
    if (!x || x->readonly || !t)
        return -EINVAL;
    int has_win = t->win_t0_ns || t->win_t1_ns;
    int rc = sqlite3_exec(x->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return trig_errno(rc);
    rc = insert_row(x, t, has_win);
    if (rc == SQLITE_OK && has_win) {
        /* a merge: every window it swallowed is now this one */
        sqlite3_stmt *s = NULL;
        rc = sqlite3_prepare_v2(x->db, "UPDATE triggers SET win_t0 = ?1, win_t1 = ?2 WHERE"
                                " win_t0 IS NOT NULL AND win_t0 <= ?2 AND win_t1 >= ?1",
                                -1, &s, NULL);
        if (rc == SQLITE_OK) {
            sqlite3_bind_int64(s, 1, (sqlite3_int64)t->win_t0_ns);
            sqlite3_bind_int64(s, 2, (sqlite3_int64)t->win_t1_ns);
            rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(x->db);
        }
        sqlite3_finalize(s);
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(x->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        if (!sqlite3_get_autocommit(x->db))
            sqlite3_exec(x->db, "ROLLBACK", NULL, NULL, NULL);
        return trig_errno(rc);
    }
    return 0;
}

/* One statement with up to two integer bindings, stepped once: SQLITE_ROW
 * (columns in *c0, *c1 when not NULL), SQLITE_DONE or the error. */
static int step_one(struct idx *x, const char *sql, const struct idx_trigger *t, int64_t a,
                    int64_t b, int64_t *c0, int64_t *c1)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(x->db, sql, -1, &s, NULL);
    if (rc != SQLITE_OK)
        return rc;
    int n = sqlite3_bind_parameter_count(s);
    if (n >= 1)
        sqlite3_bind_int64(s, 1, a);
    if (n >= 2)
        sqlite3_bind_int64(s, 2, b);
    if (t && n >= 4) {
        sqlite3_bind_text(s, 3, t->source ? t->source : "", -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 4, t->reason ? t->reason : "", -1, SQLITE_TRANSIENT);
    }
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        if (c0)
            *c0 = sqlite3_column_int64(s, 0);
        if (c1)
            *c1 = sqlite3_column_int64(s, 1);
    } else if (rc != SQLITE_DONE) {
        rc = sqlite3_errcode(x->db);
    }
    sqlite3_finalize(s);
    return rc;
}

int idx_trig_restore(struct idx *x, const struct idx_trigger *t)
{
    if (!x || x->readonly || !t)
        return -EINVAL;
    int rc = step_one(x, "SELECT 1 FROM triggers WHERE pid = ?1 AND t_ns = ?2 AND source = ?3"
                      " AND reason = ?4 LIMIT 1", t, t->pid, (int64_t)t->t_ns, NULL, NULL);
    if (rc == SQLITE_ROW)
        return 0;               /* the index has it already */
    if (rc != SQLITE_DONE)
        return trig_errno(rc);
    int has_win = t->win_t0_ns || t->win_t1_ns;
    rc = insert_row(x, t, has_win);
    if (rc != SQLITE_OK)
        return trig_errno(rc);
    if (!has_win)
        return 0;
    /* the windows it overlaps and it are one merged window: their union, in
     * whatever order the files come */
    int64_t u0 = (int64_t)t->win_t0_ns, u1 = (int64_t)t->win_t1_ns;
    rc = step_one(x, "SELECT min(win_t0), max(win_t1) FROM triggers WHERE win_t0 IS NOT NULL"
                  " AND win_t0 <= ?2 AND win_t1 >= ?1", NULL, u0, u1, &u0, &u1);
    if (rc != SQLITE_ROW)
        return trig_errno(rc);
    rc = step_one(x, "UPDATE triggers SET win_t0 = min(win_t0, ?1), win_t1 = max(win_t1, ?2)"
                  " WHERE win_t0 IS NOT NULL AND win_t0 <= ?2 AND win_t1 >= ?1", NULL, u0, u1,
                  NULL, NULL);
    if (rc != SQLITE_DONE)
        return trig_errno(rc);
    return 0;
}

static const char *col_text(sqlite3_stmt *s, int i)
{
    const unsigned char *p = sqlite3_column_text(s, i);
    return p ? (const char *)p : "";
}

static int trig_select(struct idx *x, uint32_t pid, uint64_t t0_ns, uint64_t t1_ns,
                       int overlap, idx_trig_fn fn, void *arg)
{
    if (!x || !fn)
        return -EINVAL;
    sqlite3_stmt *s = NULL;
    /* a version 4 store (read only: a writer's open upgrades it) has no
     * fields column: its rows have none */
    int has = has_fields(x);
    if (has < 0)
        return has;
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT id, pid, process_id, t_ns, source, reason, verdict,"
             " win_t0, win_t1, %s FROM triggers WHERE %s AND (?3 = 0 OR pid = ?3)"
             " ORDER BY t_ns, id", has ? "fields" : "NULL",
             overlap ? "(t_ns BETWEEN ?1 AND ?2 OR (win_t0 IS NOT NULL AND win_t0 <= ?2"
                       " AND win_t1 >= ?1))" : "t_ns BETWEEN ?1 AND ?2");
    int rc = sqlite3_prepare_v2(x->db, sql, -1, &s, NULL);
    if (rc != SQLITE_OK) {
        /* an older store has no table: no triggers */
        const char *m = sqlite3_errmsg(x->db);
        return m && strstr(m, "no such table") ? 0 : trig_errno(rc);
    }
    sqlite3_bind_int64(s, 1, (sqlite3_int64)(t0_ns > INT64_MAX ? INT64_MAX : t0_ns));
    sqlite3_bind_int64(s, 2, (sqlite3_int64)(t1_ns > INT64_MAX ? INT64_MAX : t1_ns));
    sqlite3_bind_int64(s, 3, pid);
    int ret = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct idx_trigger t = {
            .id = sqlite3_column_int64(s, 0),
            .pid = (uint32_t)sqlite3_column_int64(s, 1),
            .process_id = sqlite3_column_int64(s, 2),
            .t_ns = (uint64_t)sqlite3_column_int64(s, 3),
            .source = col_text(s, 4), .reason = col_text(s, 5), .verdict = col_text(s, 6),
            .win_t0_ns = (uint64_t)sqlite3_column_int64(s, 7),
            .win_t1_ns = (uint64_t)sqlite3_column_int64(s, 8),
            .fields = (const char *)sqlite3_column_text(s, 9),
        };
        if ((ret = fn(arg, &t)) != 0)
            break;
    }
    if (!ret && rc != SQLITE_DONE)
        ret = trig_errno(rc);
    sqlite3_finalize(s);
    return ret;
}

int idx_trig_foreach(struct idx *x, uint32_t pid, uint64_t t0_ns, uint64_t t1_ns,
                        idx_trig_fn fn, void *arg)
{
    return trig_select(x, pid, t0_ns, t1_ns, 0, fn, arg);
}

int idx_trig_foreach_overlap(struct idx *x, uint32_t pid, uint64_t t0_ns, uint64_t t1_ns,
                             idx_trig_fn fn, void *arg)
{
    return trig_select(x, pid, t0_ns, t1_ns, 1, fn, arg);
}

int idx_trig_kept_foreach(struct idx *x, uint32_t pid, idx_kept_fn fn, void *arg)
{
    if (!x || !fn)
        return -EINVAL;
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(x->db, "SELECT k.segment_id, k.trig_pid, k.trig_ns, k.t0_ns,"
                                " k.t1_ns, k.ntrig, k.source_segment, k.reason, s.path, s.bytes,"
                                " s.records FROM kept k LEFT JOIN segments s ON s.id = k.segment_id"
                                " WHERE ?1 = 0 OR k.trig_pid = ?1 ORDER BY k.t0_ns, k.segment_id",
                                -1, &s, NULL);
    if (rc != SQLITE_OK) {
        const char *m = sqlite3_errmsg(x->db);
        return m && strstr(m, "no such table") ? 0 : trig_errno(rc);
    }
    sqlite3_bind_int64(s, 1, pid);
    int ret = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct idx_kept k = {
            .segment_id = sqlite3_column_int64(s, 0),
            .pid = (uint32_t)sqlite3_column_int64(s, 1),
            .trig_ns = (uint64_t)sqlite3_column_int64(s, 2),
            .t0_ns = (uint64_t)sqlite3_column_int64(s, 3),
            .t1_ns = (uint64_t)sqlite3_column_int64(s, 4),
            .ntrig = sqlite3_column_int64(s, 5),
            .source_segment = sqlite3_column_int64(s, 6),
            .reason = col_text(s, 7), .path = col_text(s, 8),
            .bytes = (uint64_t)sqlite3_column_int64(s, 9),
            .records = (uint64_t)sqlite3_column_int64(s, 10),
        };
        if ((ret = fn(arg, &k)) != 0)
            break;
    }
    if (!ret && rc != SQLITE_DONE)
        ret = trig_errno(rc);
    sqlite3_finalize(s);
    return ret;
}
