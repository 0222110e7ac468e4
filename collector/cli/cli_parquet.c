/*
 * cli_parquet.c — d9 sql's tables as Parquet files (see cli_parquet.h).
 *
 * One in-memory SQLite connection with d9 sql's virtual tables attached;
 * for each table: its columns from pragma_table_info, one
 * `SELECT * FROM "table" WHERE ...` with the window and pid as d9 sql's
 * constraints, each row handed to the Parquet writer (pq_write.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collector/lazy/lazy.h"
#include "collector/cli/cli_parquet.h"
#include "collector/sql/sql_vtab.h"

#define CLI_PARQUET_COLS_MAX 256        /* columns of one table (custom events: fields) */
#define CLI_PARQUET_SQL_MAX 4096
#define CLI_PARQUET_PATH_MAX 4096

struct table_cols {
    size_t n;
    struct pq_col c[CLI_PARQUET_COLS_MAX];
    char *names[CLI_PARQUET_COLS_MAX];
    bool has_pid, has_ts, has_start;
};

static void cols_free(struct table_cols *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->names[i]);
    t->n = 0;
}

/* A column's Parquet type from its declared SQLite type. */
static enum pq_type type_of(const char *decl)
{
    if (decl && strcmp(decl, "INTEGER") == 0)
        return PQ_INT64;
    if (decl && strcmp(decl, "REAL") == 0)
        return PQ_DOUBLE;
    return PQ_STRING;       /* TEXT, or untyped: values as text (reals exact: row_values) */
}

static int table_cols(sqlite3 *db, const char *table, struct table_cols *t, char *why,
                      size_t whycap)
{
    sqlite3_stmt *st;
    memset(t, 0, sizeof *t);
    if (sqlite3_prepare_v2(db, "SELECT name, type FROM pragma_table_info(?1)", -1, &st, NULL) !=
        SQLITE_OK) {
        snprintf(why, whycap, "%s", sqlite3_errmsg(db));
        return -EIO;
    }
    sqlite3_bind_text(st, 1, table, -1, SQLITE_TRANSIENT);
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        if (t->n == CLI_PARQUET_COLS_MAX) {
            snprintf(why, whycap, "table %s: more than %d columns", table, CLI_PARQUET_COLS_MAX);
            rc = -E2BIG;
            break;
        }
        const char *name = (const char *)sqlite3_column_text(st, 0);
        char *copy = strdup(name ? name : "");
        if (!copy) {
            rc = -ENOMEM;
            break;
        }
        t->names[t->n] = copy;
        t->c[t->n] = (struct pq_col){ copy, type_of((const char *)sqlite3_column_text(st, 1)),
                                      true };
        t->has_pid |= strcmp(copy, "pid") == 0;
        t->has_ts |= strcmp(copy, "ts_ns") == 0;
        t->has_start |= strcmp(copy, "start_ns") == 0;
        t->n++;
    }
    sqlite3_finalize(st);
    if (rc == 0 && t->n == 0) {
        snprintf(why, whycap, "table %s: no columns", table);
        rc = -EINVAL;
    }
    if (rc == -ENOMEM)
        snprintf(why, whycap, "out of memory");
    return rc;
}

/* "name" with inner quotes doubled, into out. */
static int quote(char *out, size_t cap, const char *name)
{
    size_t n = 0;
    if (cap < 3)
        return -ENAMETOOLONG;
    out[n++] = '"';
    for (const char *p = name; *p; p++) {
        if (n + 4 > cap)
            return -ENAMETOOLONG;
        if (*p == '"')
            out[n++] = '"';
        out[n++] = *p;
    }
    out[n++] = '"';
    out[n] = 0;
    return 0;
}

/* The statement of one table: the window and pid as d9 sql's constraints. */
static int table_sql(const char *table, const struct table_cols *t,
                     const struct cli_parquet_req *rq, char *sql, size_t cap)
{
    char q[512];
    if (quote(q, sizeof q, table) < 0)
        return -ENAMETOOLONG;
    const char *tcol = t->has_ts ? "ts_ns" : t->has_start ? "start_ns" : NULL;
    bool windowed = rq->from > 0 || rq->to < UINT64_MAX;
    size_t n = (size_t)snprintf(sql, cap, "SELECT * FROM %s WHERE 1", q);
    if (t->has_pid && rq->pid && n < cap)
        n += (size_t)snprintf(sql + n, cap - n, " AND pid = %" PRIu32, rq->pid);
    if (strcmp(table, "stacks") == 0 && (windowed || rq->pid) && n < cap) {
        /* the stacks the window's samples use */
        n += (size_t)snprintf(sql + n, cap - n,
                              " AND stack_id IN (SELECT stack_id FROM cpu_samples WHERE 1");
        if (rq->pid && n < cap)
            n += (size_t)snprintf(sql + n, cap - n, " AND pid = %" PRIu32, rq->pid);
        tcol = "ts_ns";
    }
    if (tcol && windowed && n < cap) {
        n += (size_t)snprintf(sql + n, cap - n, " AND %s >= %" PRIu64, tcol,
                              rq->from > INT64_MAX ? (uint64_t)INT64_MAX : rq->from);
        if (rq->to <= INT64_MAX && n < cap)
            n += (size_t)snprintf(sql + n, cap - n, " AND %s <= %" PRIu64, tcol, rq->to);
    }
    if (strcmp(table, "stacks") == 0 && (windowed || rq->pid) && n < cap)
        n += (size_t)snprintf(sql + n, cap - n, ")");
    return n < cap ? 0 : -ENAMETOOLONG;
}

/* A file name for a table: characters outside [A-Za-z0-9_.-] become '_'. */
static void file_name(const char *table, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = table; *p && n + 1 < cap; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || (c == '.' && n > 0);
        out[n++] = ok ? c : '_';
    }
    out[n] = 0;
}

/* One row's values; num: a ROW_NUM_CHARS buffer per column for the text of
 * a real in a string column (17 significant digits, so it reads back as
 * the same double: SQLite's own text of a real keeps 15). */
#define ROW_NUM_CHARS 32u
static void row_values(sqlite3_stmt *st, const struct table_cols *t, struct pq_val *v, char *num)
{
    for (size_t i = 0; i < t->n; i++) {
        int ty = sqlite3_column_type(st, (int)i);
        memset(&v[i], 0, sizeof v[i]);
        if (ty == SQLITE_NULL) {
            v[i].null = true;
            continue;
        }
        switch (t->c[i].type) {
        case PQ_INT64:
            if (ty == SQLITE_FLOAT) {
                /* d9 sql gives u64 values above INT64_MAX as REAL: keep their bits */
                double d = sqlite3_column_double(st, (int)i);
                v[i].i = d >= 9223372036854775808.0 && d < 18446744073709551616.0
                             ? (int64_t)(uint64_t)d : (int64_t)d;
            } else {
                v[i].i = sqlite3_column_int64(st, (int)i);
            }
            break;
        case PQ_DOUBLE:
            v[i].d = sqlite3_column_double(st, (int)i);
            break;
        default: {
            if (ty == SQLITE_FLOAT) {
                char *b = num + i * ROW_NUM_CHARS;
                int k = snprintf(b, ROW_NUM_CHARS, "%.17g", sqlite3_column_double(st, (int)i));
                v[i].s = b;
                v[i].n = k > 0 && (unsigned)k < ROW_NUM_CHARS ? (size_t)k : 0;
                break;
            }
            const unsigned char *s = sqlite3_column_text(st, (int)i);
            v[i].s = (const char *)s;
            v[i].n = s ? (size_t)sqlite3_column_bytes(st, (int)i) : 0;
            break;
        }
        }
    }
}

static int export_table(sqlite3 *db, const char *table, const struct cli_parquet_req *rq,
                        struct cli_parquet_stats *stats, char *why, size_t whycap)
{
    struct table_cols t;
    int rc = table_cols(db, table, &t, why, whycap);
    if (rc < 0)
        return rc;
    char sql[CLI_PARQUET_SQL_MAX], fname[256], path[CLI_PARQUET_PATH_MAX],
         tmp[CLI_PARQUET_PATH_MAX + 16];
    file_name(table, fname, sizeof fname);
    if (table_sql(table, &t, rq, sql, sizeof sql) < 0 ||
        snprintf(path, sizeof path, "%s/%s.parquet", rq->dir, fname) >= (int)sizeof path ||
        snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp) {
        snprintf(why, whycap, "table %s: name or path too long", table);
        cols_free(&t);
        return -ENAMETOOLONG;
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(why, whycap, "table %s: %s", table, sqlite3_errmsg(db));
        cols_free(&t);
        return -EIO;
    }
    int fd = mkstemp(tmp);
    FILE *f = NULL;
    if (fd >= 0) {
        mode_t um = umask(0);       /* mkstemp makes 0600: give the mode a create would */
        umask(um);
        fchmod(fd, 0666 & ~um);
        f = fdopen(fd, "w");
    }
    if (!f) {
        rc = -errno;
        snprintf(why, whycap, "%s: cannot create: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        sqlite3_finalize(st);
        cols_free(&t);
        return rc;
    }
    struct pq_write_opts o = rq->opts;
    if (!o.created_by)
        o.created_by = "d9 " D9_VERSION;
    struct pq_write *w = NULL;
    struct pq_val *v = calloc(t.n, sizeof *v);
    char *num = calloc(t.n, ROW_NUM_CHARS);
    rc = v && num ? pq_write_open(&w, f, t.c, t.n, &o) : -ENOMEM;
    int s = SQLITE_DONE;
    uint64_t rows = 0;
    while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW) {
        row_values(st, &t, v, num);
        rc = pq_write_row(w, v);
        rows++;
    }
    if (rc == 0 && s != SQLITE_DONE) {
        snprintf(why, whycap, "table %s: %s", table, sqlite3_errmsg(db));
        rc = -EIO;
    } else if (rc == 0) {
        rc = pq_write_close(w);
        if (rc < 0)
            snprintf(why, whycap, "%s: write error: %s", path, strerror(-rc));
    } else {
        snprintf(why, whycap, "table %s: %s", table,
                 rc == -ELIBACC ? lazy_error(LAZY_ZSTD) : strerror(-rc));
    }
    struct pq_write_stats ws = { 0 };
    if (w)
        pq_write_stats(w, &ws);
    pq_write_free(w);
    free(v);
    free(num);
    sqlite3_finalize(st);
    if (fclose(f) != 0 && rc == 0) {
        rc = -EIO;
        snprintf(why, whycap, "%s: write error", path);
    }
    if (rc == 0 && rename(tmp, path) < 0) {
        rc = -errno;
        snprintf(why, whycap, "%s: %s", path, strerror(errno));
    }
    if (rc < 0) {
        unlink(tmp);
    } else {
        stats->tables++;
        stats->rows += rows;
        stats->bytes += ws.bytes;
        if (rq->log)
            fprintf(rq->log, "  %-14s %10" PRIu64 " rows %12" PRIu64 " bytes  %s\n", table, rows,
                    ws.bytes, path);
    }
    cols_free(&t);
    return rc;
}

static int make_dir(const char *dir, char *why, size_t whycap)
{
    struct stat sb;
    if (mkdir(dir, 0777) == 0)
        return 0;
    int e = errno;
    if (e == EEXIST && stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode))
        return 0;
    snprintf(why, whycap, "%s: %s", dir, e == EEXIST ? "exists and is not a directory"
                                                       : strerror(e));
    return e == EEXIST ? -ENOTDIR : -e;
}

int cli_parquet_export(struct q_store *s, const struct cli_parquet_req *rq,
                       struct cli_parquet_stats *st, char *why, size_t whycap)
{
    memset(st, 0, sizeof *st);
    int rc = make_dir(rq->dir, why, whycap);
    if (rc < 0)
        return rc;
    sqlite3 *db = NULL;
    struct sql_vtab *v = NULL;
    if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY |
                                           SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        snprintf(why, whycap, "cannot open an in-memory database: %s", sqlite3_errmsg(db));
        sqlite3_close(db);
        return -ENOMEM;
    }
    rc = sql_vtab_attach(db, s, "d9 export", &v, why, whycap);
    /* the tables first, then each: a statement on sqlite_schema stays out of the way */
    char **names = NULL;
    size_t n = 0, cap = 0;
    sqlite3_stmt *ls = NULL;
    if (rc == 0 && sqlite3_prepare_v2(db, "SELECT name FROM sqlite_schema WHERE type = 'table' "
                                          "ORDER BY name", -1, &ls, NULL) != SQLITE_OK) {
        snprintf(why, whycap, "%s", sqlite3_errmsg(db));
        rc = -EIO;
    }
    while (rc == 0 && sqlite3_step(ls) == SQLITE_ROW) {
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 32;
            char **nn = realloc(names, nc * sizeof *nn);
            if (!nn) {
                rc = -ENOMEM;
                break;
            }
            names = nn;
            cap = nc;
        }
        const char *name = (const char *)sqlite3_column_text(ls, 0);
        if (!(names[n] = strdup(name ? name : ""))) {
            rc = -ENOMEM;
            break;
        }
        n++;
    }
    sqlite3_finalize(ls);
    if (rc == -ENOMEM)
        snprintf(why, whycap, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (rc == 0)
            rc = export_table(db, names[i], rq, st, why, whycap);
        free(names[i]);
    }
    free(names);
    if (v) {
        const struct q_scan_stats *ss = sql_vtab_stats(v);
        st->bad_blocks = ss->bad_blocks;
        st->missing_segments = ss->missing_segments;
    }
    sqlite3_close(db);
    sql_vtab_free(v);
    return rc;
}
