/*
 * idx.c — the store's SQLite index: open, schema, writes (schema and
 * contract: idx.h). The index module is the only code that runs SQL
 * against index.sqlite: this file, idx_read.c (the readers' queries) and
 * idx_trig.c (the triggers table), which share struct idx through idx_int.h.
 *
 * Writer: d9collectd (and `d9 fsck --repair`) through idx_open: one
 * connection, WAL journal, synchronous=FULL, foreign keys on, 5 s busy
 * timeout. Readers: d9 through idx_open_ex(IDX_OPEN_READONLY)
 * (SQLITE_OPEN_READONLY), any number, concurrently with the writer (WAL).
 *
 * Invariants:
 *   - A segment's row, its remaining block rows and its process's counters
 *     change in one BEGIN IMMEDIATE ... COMMIT; any error rolls the whole of
 *     it back, so the index never holds part of a segment. Block rows added
 *     earlier (idx_blocks_add, a batch per transaction, synchronous=NORMAL
 *     for it only) have no segment row until then: every reader reaches
 *     blocks through segments, so they are invisible, and a segment that is
 *     never sealed leaves orphans for idx_drop_orphan_blocks.
 *   - Segment paths are stored relative to the store directory.
 *   - An index whose meta.schema_version is not IDX_SCHEMA_VERSION is
 *     refused before anything is written to it.
 *   - Prepared statements are created on first use and cached in struct idx
 *     (so a read-only handle never prepares writes).
 * Must never: leave a transaction open after returning, write through a
 * read-only handle, or store an absolute path.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "collector/store/idx_int.h"
#include "collector/store/idx_trig.h"
#include "collector/store/store_file.h"
#include "shm/clock.h"

#define IDX_BUSY_TIMEOUT_MS 5000
#define IDX_BOOT_ID_PATH    "/proc/sys/kernel/random/boot_id"

/* The schema of idx.h, verbatim. Executed in one transaction. */
static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE IF NOT EXISTS processes(id INTEGER PRIMARY KEY, pid INT, start_time INT,"
    " uid INT, comm TEXT, exe TEXT, first_ns INT, last_ns INT, state TEXT, exit_code INT,"
    " records INT, lost INT, UNIQUE(pid, start_time));"
    "CREATE TABLE IF NOT EXISTS threads(id INTEGER PRIMARY KEY,"
    " process_id INT REFERENCES processes(id), tid INT, ring INT, generation INT, name TEXT,"
    " first_ns INT, last_ns INT, ended INT, UNIQUE(process_id, ring, generation));"
    "CREATE TABLE IF NOT EXISTS runtimes(process_id INT, runtime_id INT, name TEXT,"
    " PRIMARY KEY(process_id, runtime_id));"
    "CREATE TABLE IF NOT EXISTS segments(id INTEGER PRIMARY KEY, process_id INT,"
    " path TEXT UNIQUE, t_min INT, t_max INT, bytes INT, records INT, lost INT, sealed_ns INT,"
    " n_poll_start INT, n_poll_end INT, n_wake INT, n_worker_park INT, n_worker_unpark INT,"
    " n_task_spawn INT, n_task_terminate INT, n_queue_depth INT, n_custom INT,"
    " n_cpu_sample INT, n_sched_switch INT);"
    "CREATE TABLE IF NOT EXISTS blocks(segment_id INT, offset INT, len INT, kind INT, tid INT,"
    " ring INT, generation INT, nrec INT, t_first INT, t_last INT, lost INT,"
    " PRIMARY KEY(segment_id, offset));"
    "CREATE INDEX IF NOT EXISTS segments_time ON segments(t_min, t_max);"
    "CREATE INDEX IF NOT EXISTS segments_process_time ON segments(process_id, t_min);"
    "CREATE INDEX IF NOT EXISTS blocks_segment_time ON blocks(segment_id, t_first);"
    "CREATE TABLE IF NOT EXISTS drops(process_id INT PRIMARY KEY, mismatch INT,"
    " too_big INT, no_ring INT, bad_stamps INT);"
    "CREATE TABLE IF NOT EXISTS uploads(segment_id INTEGER PRIMARY KEY, state TEXT NOT NULL,"
    " attempts INT NOT NULL, last_error TEXT, next_ns INT NOT NULL, updated_ns INT);"
    "CREATE TABLE IF NOT EXISTS rollups(segment_id INTEGER PRIMARY KEY, data BLOB NOT NULL);"
    "CREATE INDEX IF NOT EXISTS processes_pid ON processes(pid);";

/* The kept windows' table (idx.h), part of version 4: created by every
 * writable open when missing (a new index, one upgraded from version 3, a
 * version 4 one made before the table). */
static const char kept_sql[] =
    "CREATE TABLE IF NOT EXISTS kept(segment_id INTEGER PRIMARY KEY, trig_ns INT, t0_ns INT,"
    " t1_ns INT, trig_pid INT, ntrig INT, source_segment INT, reason TEXT);";

/* The map records' blocks (the pseudo ring SYM_SEG_RING's DATA blocks: a
 * few per segment), a partial index so `d9 segments`' per-segment maps
 * count (idx_read_segments_window) reads only them, not every block row of
 * the segment (2.2x the command's time on a 50 M-record store). Not part of
 * the versioned schema: every writable open creates it when missing (new
 * and older version 4 indexes alike); readers work without it (the same
 * sum, through blocks_segment_time). The literals match idx_read.c's query
 * (a partial index is used only for a query whose WHERE names its terms). */
static const char maps_sql[] =
    "CREATE INDEX IF NOT EXISTS blocks_maps ON blocks(segment_id, nrec)"
    " WHERE kind = " IDX_MAPS_KIND " AND ring = " IDX_MAPS_RING ";";

/* Per-type counter columns, in enum d9_rec_type order (PAD has none). */
_Static_assert(D9_REC_TYPE_COUNT == 12, "segments.n_* columns follow enum d9_rec_type");

enum {
    ST_PROC_UPSERT,
    ST_PROC_ID,
    ST_PROC_END,
    ST_THREAD_UPSERT,
    ST_RUNTIME_UPSERT,
    ST_SEG_INSERT,
    ST_BLOCK_INSERT,
    ST_PROC_COUNTERS,
    ST_SEG_DEL_BLOCKS,
    ST_SEG_DEL,
    ST_NEXT_ID,
    ST_TOTAL_BYTES,
    ST_OLDEST,
    ST_SEG_LIST,
    ST_PROC_DROPS,
    ST_UP_NEXT,
    ST_UP_SET,
    ST_UP_DEL,
    ST_UP_TOTALS,
    ST_UP_OLDEST_SHIPPED,
    ST_RU_SET,
    ST_RU_DEL,
    ST_KEPT_INSERT,
    ST_KEPT_DEL,
    ST_FLIGHT_LIST,
    ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
    [ST_RU_SET] = "INSERT OR REPLACE INTO rollups(segment_id, data) VALUES(?1, ?2)",
    [ST_RU_DEL] = "DELETE FROM rollups WHERE segment_id = ?1",
    [ST_KEPT_INSERT] =
        "INSERT INTO kept(segment_id, trig_ns, t0_ns, t1_ns, trig_pid, ntrig, source_segment,"
        " reason) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [ST_KEPT_DEL] = "DELETE FROM kept WHERE segment_id = ?1",
    [ST_FLIGHT_LIST] =
        "SELECT s.id, s.process_id, s.path, s.t_min, s.t_max, s.bytes FROM segments s"
        " WHERE s.id >= ?1 AND s.t_max < ?2"
        " AND NOT EXISTS(SELECT 1 FROM kept k WHERE k.segment_id = s.id)"
        " ORDER BY s.id LIMIT 256",
    [ST_PROC_UPSERT] =
        "INSERT INTO processes(pid, start_time, uid, comm, exe, first_ns, last_ns, state,"
        " exit_code, records, lost) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?6, 'alive', NULL, 0, 0)"
        " ON CONFLICT(pid, start_time) DO UPDATE SET"
        " comm = coalesce(excluded.comm, comm), exe = coalesce(excluded.exe, exe),"
        " first_ns = CASE WHEN first_ns IS NULL OR excluded.first_ns < first_ns"
        "   THEN coalesce(excluded.first_ns, first_ns) ELSE first_ns END,"
        " last_ns = CASE WHEN last_ns IS NULL OR excluded.last_ns > last_ns"
        "   THEN coalesce(excluded.last_ns, last_ns) ELSE last_ns END"
        " WHERE processes.uid = excluded.uid",
    [ST_PROC_ID] = "SELECT id, uid, state FROM processes WHERE pid = ?1 AND start_time = ?2",
    [ST_PROC_DROPS] =
        "INSERT INTO drops(process_id, mismatch, too_big, no_ring, bad_stamps)"
        " VALUES(?1, ?2, ?3, ?4, ?5)"
        " ON CONFLICT(process_id) DO UPDATE SET mismatch = max(mismatch, excluded.mismatch),"
        " too_big = max(too_big, excluded.too_big), no_ring = max(no_ring, excluded.no_ring),"
        " bad_stamps = max(coalesce(bad_stamps, 0), excluded.bad_stamps)",
    [ST_PROC_END] =
        "UPDATE processes SET state = ?2, exit_code = ?3,"
        " last_ns = max(coalesce(last_ns, 0), ?4) WHERE id = ?1",
    [ST_THREAD_UPSERT] =
        "INSERT INTO threads(process_id, tid, ring, generation, name, first_ns, last_ns, ended)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
        " ON CONFLICT(process_id, ring, generation) DO UPDATE SET tid = excluded.tid,"
        " name = coalesce(excluded.name, name),"
        " first_ns = CASE WHEN first_ns IS NULL OR excluded.first_ns < first_ns"
        "   THEN coalesce(excluded.first_ns, first_ns) ELSE first_ns END,"
        " last_ns = CASE WHEN last_ns IS NULL OR excluded.last_ns > last_ns"
        "   THEN coalesce(excluded.last_ns, last_ns) ELSE last_ns END,"
        " ended = max(ended, excluded.ended)",
    [ST_RUNTIME_UPSERT] =
        "INSERT INTO runtimes(process_id, runtime_id, name) VALUES(?1, ?2, ?3)"
        " ON CONFLICT(process_id, runtime_id) DO UPDATE SET name = excluded.name",
    [ST_SEG_INSERT] =
        "INSERT INTO segments(id, process_id, path, t_min, t_max, bytes, records, lost,"
        " sealed_ns, n_poll_start, n_poll_end, n_wake, n_worker_park, n_worker_unpark,"
        " n_task_spawn, n_task_terminate, n_queue_depth, n_custom, n_cpu_sample,"
        " n_sched_switch) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,"
        " ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
    [ST_BLOCK_INSERT] =
        "INSERT INTO blocks(segment_id, offset, len, kind, tid, ring, generation, nrec,"
        " t_first, t_last, lost) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    [ST_PROC_COUNTERS] =
        "UPDATE processes SET records = coalesce(records, 0) + ?2,"
        " lost = coalesce(lost, 0) + ?3,"
        " first_ns = CASE WHEN ?4 IS NULL THEN first_ns"
        "   WHEN first_ns IS NULL OR ?4 < first_ns THEN ?4 ELSE first_ns END,"
        " last_ns = CASE WHEN ?5 IS NULL THEN last_ns"
        "   WHEN last_ns IS NULL OR ?5 > last_ns THEN ?5 ELSE last_ns END"
        " WHERE id = ?1",
    [ST_SEG_DEL_BLOCKS] = "DELETE FROM blocks WHERE segment_id = ?1",
    [ST_SEG_DEL] = "DELETE FROM segments WHERE id = ?1",
    [ST_NEXT_ID] = "SELECT coalesce(max(id), 0) + 1 FROM segments",
    [ST_TOTAL_BYTES] = "SELECT coalesce(sum(bytes), 0) FROM segments",
    /* kept windows last: untriggered data goes first (--retain triggered) */
    [ST_OLDEST] = "SELECT s.id, s.path FROM segments s"
        " ORDER BY EXISTS(SELECT 1 FROM kept k WHERE k.segment_id = s.id), s.t_max, s.id LIMIT 1",
    [ST_SEG_LIST] =
        "SELECT s.id, s.process_id, s.path, s.bytes, s.records, s.lost, s.t_min, s.t_max,"
        " (SELECT count(*) FROM blocks b WHERE b.segment_id = s.id) FROM segments s"
        " ORDER BY s.id",
    [ST_UP_NEXT] =
        "SELECT s.id, s.path, s.bytes, s.records, s.lost, s.t_min, s.t_max, p.pid,"
        " p.start_time, p.comm, coalesce(u.attempts, 0), k.segment_id, k.trig_ns, k.t0_ns,"
        " k.t1_ns, k.trig_pid, k.ntrig, k.source_segment, k.reason FROM segments s"
        " LEFT JOIN processes p ON p.id = s.process_id"
        " LEFT JOIN uploads u ON u.segment_id = s.id"
        " LEFT JOIN kept k ON k.segment_id = s.id"
        " WHERE coalesce(u.state, 'pending') != 'shipped' AND coalesce(u.next_ns, 0) <= ?1"
        " AND (?2 = 0 OR k.segment_id IS NOT NULL)"
        " ORDER BY s.id LIMIT 64",
    [ST_UP_SET] =
        "INSERT INTO uploads(segment_id, state, attempts, last_error, next_ns, updated_ns)"
        " SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE EXISTS(SELECT 1 FROM segments WHERE id = ?1)"
        " ON CONFLICT(segment_id) DO UPDATE SET state = excluded.state,"
        " attempts = excluded.attempts, last_error = excluded.last_error,"
        " next_ns = excluded.next_ns, updated_ns = excluded.updated_ns",
    [ST_UP_DEL] = "DELETE FROM uploads WHERE segment_id = ?1",
    [ST_UP_TOTALS] =
        "SELECT coalesce(sum(u.state IS NULL OR u.state != 'shipped'), 0),"
        " coalesce(sum(CASE WHEN u.state IS NULL OR u.state != 'shipped' THEN s.bytes END), 0),"
        " coalesce(sum(u.state = 'shipped'), 0),"
        " coalesce(sum(CASE WHEN u.state = 'shipped' THEN s.bytes END), 0),"
        " coalesce(sum(u.state = 'failed'), 0),"
        " coalesce(min(CASE WHEN u.state IS NULL OR u.state != 'shipped' THEN s.sealed_ns END), 0)"
        " FROM segments s LEFT JOIN uploads u ON u.segment_id = s.id",
    [ST_UP_OLDEST_SHIPPED] =
        "SELECT s.id, s.path FROM segments s JOIN uploads u ON u.segment_id = s.id"
        " WHERE u.state = 'shipped'"
        " ORDER BY EXISTS(SELECT 1 FROM kept k WHERE k.segment_id = s.id), s.t_max, s.id LIMIT 1",
};

_Static_assert(ST_COUNT == IDX_WRITE_STMTS, "idx_int.h sizes the statement cache");

/* ---- errors ------------------------------------------------------------------ */

static int sqlite_errno(sqlite3 *db, int rc)
{
    int sys = db ? sqlite3_system_errno(db) : 0;
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
        return 0;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return -EBUSY;
    case SQLITE_NOMEM:
        return -ENOMEM;
    case SQLITE_READONLY:
        return -EROFS;
    case SQLITE_FULL:
        return -ENOSPC;
    case SQLITE_PERM:
    case SQLITE_AUTH:
        return -EACCES;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return -EBADMSG;
    case SQLITE_CONSTRAINT:
        if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
            return -ENOENT;
        return -EEXIST;
    case SQLITE_TOOBIG:
        return -E2BIG;
    case SQLITE_MISUSE:
    case SQLITE_RANGE:
        return -EINVAL;
    case SQLITE_CANTOPEN:
        return sys ? -sys : -ENOENT;
    case SQLITE_IOERR:
        return sys ? -sys : -EIO;
    default:
        return -EIO;
    }
}

/* x->err = "<index path>: <message>" */
static void x_set(struct idx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void x_set(struct idx *x, const char *fmt, ...)
{
    int n = snprintf(x->err, sizeof x->err, "%s: ", x->path);
    if (n < 0 || (size_t)n >= sizeof x->err)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->err + n, sizeof x->err - (size_t)n, fmt, ap);
    va_end(ap);
}

static int x_fail(struct idx *x, int rc, const char *what)
{
    x_set(x, "%s: %s", what, x->db ? sqlite3_errmsg(x->db) : sqlite3_errstr(rc));
    int e = sqlite_errno(x->db, rc);
    return e ? e : -EIO;
}

const char *idx_errmsg(const struct idx *x)
{
    return x && x->err[0] ? x->err : NULL;
}

/* ---- statements ---------------------------------------------------------------- */

static int stmt(struct idx *x, int id, sqlite3_stmt **out)
{
    if (!x->st[id]) {
        int rc = sqlite3_prepare_v3(x->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
                                    &x->st[id], NULL);
        if (rc != SQLITE_OK)
            return x_fail(x, rc, "prepare");
    }
    sqlite3_reset(x->st[id]);
    sqlite3_clear_bindings(x->st[id]);
    *out = x->st[id];
    return 0;
}

/* Step a write statement to completion and reset it: 0 or -errno. */
static int run(struct idx *x, sqlite3_stmt *s, const char *what)
{
    int rc = sqlite3_step(s);
    int e = 0;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        e = x_fail(x, rc, what);
    sqlite3_reset(s);
    return e;
}

static void bind_u64_or_null(sqlite3_stmt *s, int i, uint64_t v)
{
    if (v)
        sqlite3_bind_int64(s, i, (sqlite3_int64)v);
    else
        sqlite3_bind_null(s, i);
}

static void bind_text_or_null(sqlite3_stmt *s, int i, const char *t)
{
    if (t && *t)
        sqlite3_bind_text(s, i, t, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, i);
}

static int exec(struct idx *x, const char *sql, const char *what)
{
    char *msg = NULL;
    int rc = sqlite3_exec(x->db, sql, NULL, NULL, &msg);
    sqlite3_free(msg);
    return rc == SQLITE_OK ? 0 : x_fail(x, rc, what);
}

/* A counter for an INT column: values past INT64_MAX (hostile) saturate. */
static sqlite3_int64 sat_i64(uint64_t v)
{
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)v;
}

static void rollback(struct idx *x)
{
    if (!sqlite3_get_autocommit(x->db))
        sqlite3_exec(x->db, "ROLLBACK", NULL, NULL, NULL);
}

/* ---- open --------------------------------------------------------------------- */

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int set_meta(struct idx *x, const char *key, const char *value, int replace)
{
    sqlite3_stmt *s;
    int rc = sqlite3_prepare_v2(x->db, replace ? "INSERT OR REPLACE INTO meta VALUES(?1, ?2)"
                                               : "INSERT OR IGNORE INTO meta VALUES(?1, ?2)",
                                -1, &s, NULL);
    if (rc != SQLITE_OK)
        return x_fail(x, rc, "prepare meta");
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, value, -1, SQLITE_TRANSIENT);
    int e = run(x, s, "write meta");
    sqlite3_finalize(s);
    return e;
}

/* meta.schema_version: 0 and *ver set, -ENOENT if no meta table / key. */
static int read_version(struct idx *x, long long *ver)
{
    sqlite3_stmt *s;
    int rc = sqlite3_prepare_v2(x->db, "SELECT value FROM meta WHERE key = 'schema_version'",
                                -1, &s, NULL);
    if (rc != SQLITE_OK) {
        if (sqlite3_errcode(x->db) == SQLITE_ERROR)     /* no such table */
            return -ENOENT;
        return x_fail(x, rc, "read schema version");
    }
    rc = sqlite3_step(s);
    int e = 0;
    if (rc == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(s, 0);
        char *end = NULL;
        errno = 0;
        *ver = t ? strtoll((const char *)t, &end, 10) : 0;
        if (!t || end == (const char *)t || *end || errno) {
            x_set(x, "meta.schema_version is not a number");
            e = -EBADMSG;
        }
    } else if (rc == SQLITE_DONE) {
        e = -ENOENT;
    } else {
        e = x_fail(x, rc, "read schema version");
    }
    sqlite3_finalize(s);
    return e;
}

static int check_version(struct idx *x, long long ver)
{
    if (ver >= IDX_SCHEMA_VERSION_OLDEST && ver <= IDX_SCHEMA_VERSION)
        return 0;
    if (ver > IDX_SCHEMA_VERSION)
        x_set(x,
                 "index schema version %lld is newer than this d9 understands (%d); "
                 "use a newer d9", ver, IDX_SCHEMA_VERSION);
    else
        x_set(x,
                 "index schema version %lld is older than this d9's (%d): remove %s and its"
                 " -wal and -shm files; d9collectd rebuilds the index from the segments at"
                 " start", ver, IDX_SCHEMA_VERSION, x->path);
    return -EPROTONOSUPPORT;
}

static int create_schema(struct idx *x)
{
    int e = exec(x, "BEGIN IMMEDIATE", "begin");
    if (e < 0)
        return e;
    long long ver;
    e = read_version(x, &ver);
    if (e == 0) {
        e = check_version(x, ver);      /* someone else created it meanwhile */
    } else if (e == -ENOENT) {
        char host[256] = "", now[32], v[16];
        gethostname(host, sizeof host - 1);
        snprintf(now, sizeof now, "%" PRIu64, realtime_ns());
        snprintf(v, sizeof v, "%d", IDX_SCHEMA_VERSION);
        x->err[0] = 0;
        if ((e = exec(x, schema_sql, "create schema")) == 0 &&
            (e = set_meta(x, "schema_version", v, 0)) == 0 &&
            (e = set_meta(x, "host", host, 0)) == 0)
            e = set_meta(x, "created", now, 0);
    }
    if (e == 0 && (e = idx_trig_ensure(x)) < 0)
        x_set(x, "cannot create the triggers table");
    if (e == 0)
        e = exec(x, "COMMIT", "commit schema");
    if (e < 0)
        rollback(x);
    return e;
}

/* A version 3 or 4 index becomes version 5: the triggers table and its
 * fields column (idx_trig.h). */
static int upgrade_schema(struct idx *x)
{
    int e = exec(x, "BEGIN IMMEDIATE", "begin");
    if (e < 0)
        return e;
    long long ver;
    e = read_version(x, &ver);
    if (e == 0 && (e = check_version(x, ver)) == 0 && ver < IDX_SCHEMA_VERSION) {
        char v[16];
        snprintf(v, sizeof v, "%d", IDX_SCHEMA_VERSION);
        if ((e = idx_trig_ensure(x)) < 0)
            x_set(x, "cannot create the triggers table");
        else
            e = set_meta(x, "schema_version", v, 1);
    }
    if (e == 0)
        e = exec(x, "COMMIT", "commit schema upgrade");
    if (e < 0)
        rollback(x);
    return e;
}

static int pragma_text(struct idx *x, const char *sql, char *out, size_t cap)
{
    sqlite3_stmt *s;
    int rc = sqlite3_prepare_v2(x->db, sql, -1, &s, NULL);
    if (rc != SQLITE_OK)
        return x_fail(x, rc, sql);
    rc = sqlite3_step(s);
    int e = 0;
    if (rc == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(s, 0);
        snprintf(out, cap, "%s", t ? (const char *)t : "");
    } else if (rc != SQLITE_DONE) {
        e = x_fail(x, rc, sql);
    }
    sqlite3_finalize(s);
    return e;
}

/* Percent-encode a path for a file: URI. */
static int uri_of(const char *path, char *out, size_t cap)
{
    size_t n = 0;
    int w = snprintf(out, cap, "file:");
    n = (size_t)w;
    for (const char *p = path; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '%' || c == '?' || c == '#' || c < 0x20 || c >= 0x7f) {
            if (n + 3 >= cap)
                return -ENAMETOOLONG;
            snprintf(out + n, cap - n, "%%%02X", c);
            n += 3;
        } else {
            if (n + 1 >= cap)
                return -ENAMETOOLONG;
            out[n++] = (char)c;
        }
    }
    if (n + sizeof "?immutable=1" > cap)
        return -ENAMETOOLONG;
    memcpy(out + n, "?immutable=1", sizeof "?immutable=1");
    return 0;
}

/* Journal mode WAL (persistent in the file; set again at every writer open
 * in case someone changed it). */
static int set_wal(struct idx *x)
{
    char mode[16];
    int e = pragma_text(x, "PRAGMA journal_mode=WAL", mode, sizeof mode);
    if (e < 0)
        return e;
    if (strcmp(mode, "wal") != 0) {
        x_set(x, "file system does not support WAL mode (got %s)", mode);
        return -ENOTSUP;
    }
    return 0;
}

/* SQLite opens the index and its -wal and -shm by name: each of them that
 * exists must be a regular file, not a symlink (SQLITE_OPEN_NOFOLLOW
 * refuses those too) nor a FIFO, which would block the open forever. */
static int check_files(struct idx *x)
{
    static const char *const suffix[] = { "", "-wal", "-shm" };
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        char p[PATH_MAX], why[128];
        int n = snprintf(p, sizeof p, "%s%s", x->path, suffix[i]);
        if (n < 0 || (size_t)n >= sizeof p) {
            x_set(x, "store path too long");
            return -ENAMETOOLONG;
        }
        int e = store_file_check(p, NULL, why, sizeof why);
        if (e < 0) {
            x_set(x, "%s is %s", p, why);
            return e;
        }
    }
    return 0;
}

#ifndef SQLITE_OPEN_NOFOLLOW        /* SQLite before 3.31: check_files alone */
#define SQLITE_OPEN_NOFOLLOW 0
#endif

static int do_open(struct idx *x, int readonly)
{
    int flags = readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    flags |= SQLITE_OPEN_NOFOLLOW;
    int rc = sqlite3_open_v2(x->path, &x->db, flags | SQLITE_OPEN_FULLMUTEX, NULL);
    if (rc != SQLITE_OK)
        return x_fail(x, rc, "open");
    sqlite3_extended_result_codes(x->db, 1);
    sqlite3_busy_timeout(x->db, IDX_BUSY_TIMEOUT_MS);
    long long ver;
    int e = read_version(x, &ver);
    if (readonly && e < 0 && e != -ENOENT && e != -EPROTONOSUPPORT && e != -EBUSY &&
        access(x->dir, W_OK) != 0) {
        /* a WAL index in a directory we cannot write (read-only media, a
         * copy) without its -shm file: read the file as it is; nobody can
         * be writing it there */
        char uri[PATH_MAX + 64];
        if (uri_of(x->path, uri, sizeof uri) == 0) {
            sqlite3_close_v2(x->db);
            x->db = NULL;
            rc = sqlite3_open_v2(uri, &x->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI |
                                 SQLITE_OPEN_NOFOLLOW, NULL);
            if (rc != SQLITE_OK)
                return x_fail(x, rc, "open");
            sqlite3_extended_result_codes(x->db, 1);
            x->err[0] = 0;
            e = read_version(x, &ver);
        }
    }
    if (e == 0) {
        e = check_version(x, ver);
        if (e == 0 && !readonly && ver < IDX_SCHEMA_VERSION)
            e = upgrade_schema(x);
        return e;
    }
    if (e != -ENOENT)
        return e;
    if (readonly) {
        x_set(x, "not a d9 index (no schema version)");
        return -EBADMSG;
    }
    /* refuse a foreign database rather than adding our tables to it */
    sqlite3_stmt *s;
    rc = sqlite3_prepare_v2(x->db, "SELECT count(*) FROM sqlite_master WHERE name NOT IN"
                            " (SELECT name FROM sqlite_master WHERE name LIKE 'sqlite_%')",
                            -1, &s, NULL);
    if (rc != SQLITE_OK)
        return x_fail(x, rc, "inspect");
    long long n = 0;
    if ((rc = sqlite3_step(s)) == SQLITE_ROW)
        n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW)
        return x_fail(x, rc, "inspect");
    if (n > 0) {
        x_set(x, "not a d9 index (tables without schema version)");
        return -EBADMSG;
    }
    if ((e = set_wal(x)) < 0)
        return e;
    return create_schema(x);
}

/* The kernel's id of this boot (so readers can tell if monotonic times
 * in the store are from the current boot). */
static int read_boot_id(char *out, size_t cap)
{
    FILE *f = fopen(IDX_BOOT_ID_PATH, "re");
    if (!f)
        return -errno;
    int e = fgets(out, (int)cap, f) ? 0 : -EIO;
    fclose(f);
    if (e == 0)
        out[strcspn(out, "\n")] = 0;
    return e == 0 && out[0] ? 0 : -EIO;
}

/* The schema version of the index at uri (immutable) into *ver: 0, -ENOENT
 * (no meta table or row: not d9's, or its schema is still in the -wal),
 * or -errno. */
static int probe_version(const char *path, const char *uri, long long *ver, char *why,
                         size_t why_cap)
{
    struct idx x = { 0 };
    snprintf(x.path, sizeof x.path, "%s", path);
    int rc = sqlite3_open_v2(uri, &x.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    int e = rc == SQLITE_OK ? read_version(&x, ver) : x_fail(&x, rc, "open");
    if (e < 0 && e != -ENOENT && why && why_cap)
        snprintf(why, why_cap, "%s", x.err[0] ? x.err : strerror(-e));
    sqlite3_close_v2(x.db);
    return e;
}

int idx_probe(const char *store_dir, char *why, size_t why_cap)
{
    char path[PATH_MAX], wal[PATH_MAX + 8], uri[3 * PATH_MAX + 64];
    if (why && why_cap)
        why[0] = 0;
    if (!store_dir)
        return -EINVAL;
    if (snprintf(path, sizeof path, "%s/%s", store_dir, IDX_FILE_NAME) >= (int)sizeof path)
        return -ENAMETOOLONG;
    struct stat st;
    if (lstat(path, &st) != 0)
        return -errno;
    if (!S_ISREG(st.st_mode)) {
        if (why && why_cap)
            snprintf(why, why_cap, "%s is not a regular file", path);
        return -EBADMSG;
    }
    long long ver = 0;
    int e = uri_of(path, uri, sizeof uri);
    if (e == 0)
        e = probe_version(path, uri, &ver, why, why_cap);
    snprintf(wal, sizeof wal, "%s-wal", path);
    if (e == -ENOENT && lstat(wal, &st) == 0 && S_ISREG(st.st_mode)) {
        /* the schema may be in commits not yet checkpointed: read them */
        struct idx *x = NULL;
        e = idx_open_ex(&x, store_dir, IDX_OPEN_READONLY, why, why_cap);
        idx_close(x);
        return e == -EBADMSG || e == -ENOENT ? -EBADMSG : 0;
    }
    if (e == -ENOENT) {
        if (why && why_cap)
            snprintf(why, why_cap, "%s is not a d9 index (no schema version)", path);
        return -EBADMSG;
    }
    return e < 0 ? -EBADMSG : 0;
}

int idx_open_ex(struct idx **out, const char *store_dir, unsigned flags, char *why,
                size_t why_cap)
{
    if (why && why_cap)
        why[0] = 0;
    if (!out || !store_dir)
        return -EINVAL;
    *out = NULL;
    struct idx *x = calloc(1, sizeof *x);
    if (!x)
        return -ENOMEM;
    int readonly = (flags & IDX_OPEN_READONLY) != 0;
    x->readonly = readonly;
    int e = 0;
    snprintf(x->dir, sizeof x->dir, "%s", store_dir);
    int n = snprintf(x->path, sizeof x->path, "%s/%s", store_dir, IDX_FILE_NAME);
    if (n < 0 || (size_t)n >= sizeof x->path) {
        x_set(x, "store path too long");
        e = -ENAMETOOLONG;
    }
    struct stat st;
    if (e == 0 && readonly && stat(x->path, &st) < 0) {
        e = -errno;
        x_set(x, "%s",
                 e == -ENOENT ? "no index here (is this a d9 store?)" : strerror(-e));
    }
    if (e == 0 && !readonly) {
        /* create it ourselves, with our mode: never through a symlink, and
         * an existing file (whatever it is) is left to SQLite to judge */
        int fd = open(x->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, IDX_FILE_MODE);
        if (fd >= 0) {
            if (fchmod(fd, IDX_FILE_MODE) != 0)      /* the umask may have taken bits */
                e = -errno;
            close(fd);
        } else if (errno != EEXIST) {
            e = -errno;
            x_set(x, "cannot create %s: %s", x->path, strerror(-e));
        }
    }
    if (e == 0)
        e = check_files(x);
    if (e == 0)
        e = do_open(x, readonly);
    if (e == 0 && !readonly && (flags & IDX_OPEN_FOREIGN)) {
        if ((e = set_wal(x)) == 0 && (e = exec(x, "PRAGMA synchronous=FULL", "set synchronous")) == 0)
            e = exec(x, "PRAGMA foreign_keys=ON", "enable foreign keys");
    } else if (e == 0 && !readonly) {
        char v[32];
        if ((e = set_wal(x)) == 0 &&
            (e = exec(x, "PRAGMA synchronous=FULL", "set synchronous")) == 0 &&
            (e = exec(x, "PRAGMA foreign_keys=ON", "enable foreign keys")) == 0) {
            snprintf(v, sizeof v, "%" PRIu64, realtime_ns() - shm_mono_ns());
            e = set_meta(x, "boot_realtime_ns", v, 1);
        }
        char boot[64];
        if (e == 0 && read_boot_id(boot, sizeof boot) == 0)
            e = set_meta(x, "boot_id", boot, 1);
    }
    /* version 4, also where a version 4 index lacks it; a pulled store
     * (IDX_OPEN_FOREIGN) too: its kept windows' segments need it */
    if (e == 0 && !readonly)
        e = exec(x, kept_sql, "create the kept windows table");
    if (e == 0 && !readonly)
        e = exec(x, maps_sql, "create the map blocks' index");
    if (e < 0) {
        if (!x->err[0])
            x_set(x, "%s", strerror(-e));
        if (why && why_cap)
            snprintf(why, why_cap, "%s", x->err);
        idx_close(x);
        return e;
    }
    x->err[0] = 0;
    *out = x;
    return 0;
}

int idx_set_origin(struct idx *x, const char *host, const char *boot_id,
                   int64_t boot_realtime_ns)
{
    if (!x || !host || x->readonly)
        return -EINVAL;
    char v[32];
    snprintf(v, sizeof v, "%" PRId64, boot_realtime_ns);
    int e = exec(x, "BEGIN IMMEDIATE", "begin");
    if (e < 0)
        return e;
    if ((e = set_meta(x, "host", host, 1)) == 0 &&
        (e = set_meta(x, "boot_realtime_ns", v, 1)) == 0 && boot_id && *boot_id)
        e = set_meta(x, "boot_id", boot_id, 1);
    if (e == 0)
        e = exec(x, "COMMIT", "commit origin");
    if (e < 0)
        rollback(x);
    return e;
}

static int open_logged(struct idx **out, const char *store_dir, unsigned flags)
{
    char why[512];
    int e = idx_open_ex(out, store_dir, flags, why, sizeof why);
    if (e < 0)
        fprintf(stderr, "%s: index: %s\n", program_invocation_short_name, why);
    return e;
}

int idx_open(struct idx **out, const char *store_dir)
{
    return open_logged(out, store_dir, 0);
}

int idx_open_readonly(struct idx **out, const char *store_dir)
{
    return open_logged(out, store_dir, IDX_OPEN_READONLY);
}

void idx_close(struct idx *x)
{
    if (!x)
        return;
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(x->st[i]);
    for (int i = 0; i < IDX_READ_STMTS; i++)
        sqlite3_finalize(x->rd[i]);
    if (x->db)
        sqlite3_close_v2(x->db);
    free(x);
}

void *idx_db(struct idx *x)
{
    return x ? x->db : NULL;
}

int idx_busy_timeout(struct idx *x, int ms)
{
    if (!x)
        return -EINVAL;
    return sqlite3_busy_timeout(x->db, ms) == SQLITE_OK ? 0 : -EINVAL;
}

/* ---- transactions of several calls (fsck) ------------------------------------ */

int idx_begin(struct idx *x)
{
    if (!x)
        return -EINVAL;
    return sqlite3_exec(x->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK ? 0 : -EBUSY;
}

int idx_commit(struct idx *x)
{
    if (!x)
        return -EINVAL;
    return sqlite3_exec(x->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

void idx_rollback(struct idx *x)
{
    if (x)
        sqlite3_exec(x->db, "ROLLBACK", NULL, NULL, NULL);
}

/* ---- writes -------------------------------------------------------------------- */

static int writable(struct idx *x)
{
    if (!x)
        return -EINVAL;
    if (x->readonly) {
        x_set(x, "index opened read-only");
        return -EROFS;
    }
    return 0;
}

/* The row of (pid, start_time): 1 and its id, uid and whether it ended, 0
 * when there is none, or -errno. */
static int proc_row(struct idx *x, uint32_t pid, uint64_t start_time, int64_t *id,
                    uint32_t *uid, int *ended)
{
    sqlite3_stmt *s;
    int e = stmt(x, ST_PROC_ID, &s);
    if (e < 0)
        return e;
    sqlite3_bind_int64(s, 1, pid);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)start_time);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *id = sqlite3_column_int64(s, 0);
        *uid = (uint32_t)sqlite3_column_int64(s, 1);
        const unsigned char *st = sqlite3_column_text(s, 2);
        *ended = !st || strcmp((const char *)st, "alive") != 0;
        e = 1;
    } else {
        e = rc == SQLITE_DONE ? 0 : x_fail(x, rc, "find process");
    }
    sqlite3_reset(s);
    return e;
}

static int process_write(struct idx *x, const struct idx_process *p, int64_t *process_id,
                         int adopt)
{
    int e = writable(x);
    if (e < 0)
        return e;
    if (!p || !process_id)
        return -EINVAL;
    int64_t id;
    uint32_t uid;
    int ended;
    if ((e = proc_row(x, p->pid, p->start_time, &id, &uid, &ended)) < 0)
        return e;
    if (e == 1 && uid != p->uid) {
        x_set(x, "pid %u (start %" PRIu64 ") is indexed as uid %u's, not uid %u's", p->pid,
              p->start_time, uid, p->uid);
        return -EEXIST;
    }
    if (e == 1 && adopt && ended) {
        x_set(x, "pid %u (start %" PRIu64 ") has already ended", p->pid, p->start_time);
        return -EALREADY;
    }
    sqlite3_stmt *s;
    if ((e = stmt(x, ST_PROC_UPSERT, &s)) < 0)
        return e;
    sqlite3_bind_int64(s, 1, p->pid);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)p->start_time);
    sqlite3_bind_int64(s, 3, p->uid);
    bind_text_or_null(s, 4, p->comm);
    bind_text_or_null(s, 5, p->exe);
    bind_u64_or_null(s, 6, p->first_ns);
    if ((e = run(x, s, "upsert process")) < 0)
        return e;
    if ((e = proc_row(x, p->pid, p->start_time, &id, &uid, &ended)) < 0)
        return e;
    if (e == 0)
        return -ENOENT;
    if (uid != p->uid)      /* the WHERE of the upsert kept another uid's row */
        return -EEXIST;
    *process_id = id;
    return 0;
}

int idx_process_upsert(struct idx *x, const struct idx_process *p, int64_t *process_id)
{
    return process_write(x, p, process_id, 0);
}

int idx_process_adopt(struct idx *x, const struct idx_process *p, int64_t *process_id)
{
    return process_write(x, p, process_id, 1);
}

int idx_process_end(struct idx *x, int64_t process_id, uint64_t end_ns, const char *state,
                    int code)
{
    int e = writable(x);
    if (e < 0)
        return e;
    if (!state || (strcmp(state, "exited") && strcmp(state, "crashed") && strcmp(state, "exec") &&
                   strcmp(state, "quarantined") && strcmp(state, "alive") &&
                   strcmp(state, "noloop")))
        return -EINVAL;
    sqlite3_stmt *s;
    if ((e = stmt(x, ST_PROC_END, &s)) < 0)
        return e;
    sqlite3_bind_int64(s, 1, process_id);
    sqlite3_bind_text(s, 2, state, -1, SQLITE_TRANSIENT);
    if (code >= 0)
        sqlite3_bind_int(s, 3, code);
    else
        sqlite3_bind_null(s, 3);
    sqlite3_bind_int64(s, 4, (sqlite3_int64)end_ns);
    if ((e = run(x, s, "end process")) < 0)
        return e;
    return sqlite3_changes(x->db) ? 0 : -ENOENT;
}

int idx_process_drops(struct idx *x, int64_t process_id, const struct idx_drops *d)
{
    int e = writable(x);
    if (e < 0)
        return e;
    sqlite3_stmt *s;
    if ((e = stmt(x, ST_PROC_DROPS, &s)) < 0)
        return e;
    sqlite3_bind_int64(s, 1, process_id);
    sqlite3_bind_int64(s, 2, sat_i64(d->mismatch));
    sqlite3_bind_int64(s, 3, sat_i64(d->too_big));
    sqlite3_bind_int64(s, 4, sat_i64(d->no_ring));
    sqlite3_bind_int64(s, 5, sat_i64(d->bad_stamps));
    return run(x, s, "process drops");
}

int idx_thread_upsert(struct idx *x, int64_t process_id, uint32_t tid, uint32_t ring,
                      uint32_t generation, const char *name, uint64_t first_ns, uint64_t last_ns,
                      int ended)
{
    int e = writable(x);
    if (e < 0)
        return e;
    sqlite3_stmt *s;
    if ((e = stmt(x, ST_THREAD_UPSERT, &s)) < 0)
        return e;
    sqlite3_bind_int64(s, 1, process_id);
    sqlite3_bind_int64(s, 2, tid);
    sqlite3_bind_int64(s, 3, ring);
    sqlite3_bind_int64(s, 4, generation);
    bind_text_or_null(s, 5, name);
    bind_u64_or_null(s, 6, first_ns);
    bind_u64_or_null(s, 7, last_ns);
    sqlite3_bind_int(s, 8, ended ? 1 : 0);
    return run(x, s, "upsert thread");
}

int idx_thread_names_set(struct idx *x, uint32_t pid, uint64_t start_time,
                         const struct idx_thread_name *t, size_t n)
{
    int e = writable(x);
    if (e < 0)
        return e;
    if (!t && n)
        return -EINVAL;
    /* once per pulled segment: not worth a slot in the statement cache */
    sqlite3_stmt *s;
    int rc = sqlite3_prepare_v2(x->db,
        "UPDATE threads SET name = ?6 WHERE process_id = (SELECT id FROM processes"
        " WHERE pid = ?1 AND start_time = ?2) AND tid = ?3 AND ring = ?4 AND generation = ?5"
        " AND name IS NOT ?6", -1, &s, NULL);
    if (rc != SQLITE_OK)
        return x_fail(x, rc, "prepare thread name");
    if ((e = exec(x, "BEGIN IMMEDIATE", "begin")) < 0) {
        sqlite3_finalize(s);
        return e;
    }
    int changed = 0;
    for (size_t i = 0; i < n && e == 0; i++) {
        if (!t[i].name || !t[i].name[0])
            continue;
        sqlite3_clear_bindings(s);
        sqlite3_bind_int64(s, 1, pid);
        sqlite3_bind_int64(s, 2, (sqlite3_int64)start_time);
        sqlite3_bind_int64(s, 3, t[i].tid);
        sqlite3_bind_int64(s, 4, t[i].ring);
        sqlite3_bind_int64(s, 5, t[i].generation);
        sqlite3_bind_text(s, 6, t[i].name, -1, SQLITE_TRANSIENT);
        if ((e = run(x, s, "name thread")) == 0)
            changed += sqlite3_changes(x->db);
    }
    sqlite3_finalize(s);
    if (e == 0)
        e = exec(x, "COMMIT", "commit thread names");
    if (e < 0)
        rollback(x);
    return e < 0 ? e : changed;
}

int idx_runtime_upsert(struct idx *x, int64_t process_id, uint32_t runtime_id, const char *name)
{
    int e = writable(x);
    if (e < 0)
        return e;
    sqlite3_stmt *s;
    if ((e = stmt(x, ST_RUNTIME_UPSERT, &s)) < 0)
        return e;
    sqlite3_bind_int64(s, 1, process_id);
    sqlite3_bind_int64(s, 2, runtime_id);
    bind_text_or_null(s, 3, name);
    return run(x, s, "upsert runtime");
}

/* Strip trailing slashes (keeping a lone "/"): length of the kept prefix. */
static size_t trimmed_len(const char *s)
{
    size_t n = strlen(s);
    while (n > 1 && s[n - 1] == '/')
        n--;
    return n;
}

static const char *under(const char *dir, size_t dlen, const char *path)
{
    if (dlen == 1 && dir[0] == '/')
        return path[0] == '/' ? path + 1 : NULL;
    if (strncmp(path, dir, dlen) != 0 || path[dlen] != '/')
        return NULL;
    path += dlen;
    while (*path == '/')
        path++;
    return *path ? path : NULL;
}

int idx_relative_path(const char *store_dir, const char *path, char *out, size_t cap)
{
    if (!store_dir || !path || !out)
        return -EINVAL;
    const char *rel = under(store_dir, trimmed_len(store_dir), path);
    char rs[PATH_MAX], rp[PATH_MAX];
    if (!rel && path[0] != '/' && strcmp(store_dir, ".") == 0)
        rel = path;
    if (!rel && realpath(store_dir, rs) && realpath(path, rp))
        rel = under(rs, strlen(rs), rp);
    if (!rel)
        return -EINVAL;
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2;
    if (strlen(rel) >= cap)
        return -ENAMETOOLONG;
    strcpy(out, rel);
    return 0;
}

static int insert_blocks(struct idx *x, uint64_t segment_id, const struct seg_block_info *blocks,
                         uint32_t n)
{
    sqlite3_stmt *s;
    int e;
    for (uint32_t i = 0; i < n; i++) {
        const struct seg_block_info *b = &blocks[i];
        if ((e = stmt(x, ST_BLOCK_INSERT, &s)) < 0)
            return e;
        sqlite3_bind_int64(s, 1, (sqlite3_int64)segment_id);
        sqlite3_bind_int64(s, 2, (sqlite3_int64)b->offset);
        sqlite3_bind_int64(s, 3, b->len);
        sqlite3_bind_int64(s, 4, b->kind);
        sqlite3_bind_int64(s, 5, b->tid);
        sqlite3_bind_int64(s, 6, b->ring);
        sqlite3_bind_int64(s, 7, b->generation);
        sqlite3_bind_int64(s, 8, b->nrec);
        sqlite3_bind_int64(s, 9, (sqlite3_int64)b->t_first);
        sqlite3_bind_int64(s, 10, (sqlite3_int64)b->t_last);
        sqlite3_bind_int64(s, 11, (sqlite3_int64)b->lost);
        if ((e = run(x, s, "insert block")) < 0)
            return e;
    }
    return 0;
}

/* 1 when segment id has a row (a kept window's source; on an error: 1, so
 * records are never counted twice). */
static int source_indexed(struct idx *x, uint64_t id)
{
    sqlite3_stmt *s = NULL;
    if (!id)
        return 0;
    if (sqlite3_prepare_v2(x->db, "SELECT 1 FROM segments WHERE id = ?1", -1, &s, NULL) !=
        SQLITE_OK)
        return 1;
    sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    return rc != SQLITE_DONE;
}

/* The kept row of a kept window's segment (inside the caller's transaction). */
static int insert_kept(struct idx *x, const struct seg_summary *sm)
{
    sqlite3_stmt *s;
    int e = stmt(x, ST_KEPT_INSERT, &s);
    if (e < 0)
        return e;
    const struct seg_keep *k = &sm->keep;
    char reason[SEG_KEEP_REASON_MAX];
    memcpy(reason, k->reason, sizeof reason);
    reason[sizeof reason - 1] = 0;
    sqlite3_bind_int64(s, 1, (sqlite3_int64)sm->segment_id);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)k->trig_ns);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)k->t0_ns);
    sqlite3_bind_int64(s, 4, (sqlite3_int64)k->t1_ns);
    sqlite3_bind_int64(s, 5, (sqlite3_int64)k->trig_pid);
    sqlite3_bind_int64(s, 6, (sqlite3_int64)k->ntrig);
    sqlite3_bind_int64(s, 7, (sqlite3_int64)k->source_segment);
    sqlite3_bind_text(s, 8, reason, -1, SQLITE_TRANSIENT);
    return run(x, s, "insert kept window");
}

static int insert_segment(struct idx *x, int64_t process_id, const struct seg_summary *sm,
                          const char *rel)
{
    sqlite3_stmt *s;
    int e = stmt(x, ST_SEG_INSERT, &s);
    if (e < 0)
        return e;
    sqlite3_bind_int64(s, 1, (sqlite3_int64)sm->segment_id);
    sqlite3_bind_int64(s, 2, process_id);
    sqlite3_bind_text(s, 3, rel, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 4, (sqlite3_int64)sm->t_min);
    sqlite3_bind_int64(s, 5, (sqlite3_int64)sm->t_max);
    sqlite3_bind_int64(s, 6, (sqlite3_int64)sm->bytes);
    sqlite3_bind_int64(s, 7, (sqlite3_int64)sm->nrecords);
    sqlite3_bind_int64(s, 8, (sqlite3_int64)sm->lost);
    sqlite3_bind_int64(s, 9, (sqlite3_int64)(sm->sealed_ns ? sm->sealed_ns : shm_mono_ns()));
    for (int t = D9_REC_POLL_START; t < D9_REC_TYPE_COUNT; t++)
        sqlite3_bind_int64(s, 9 + t, (sqlite3_int64)sm->counts[t]);
    if ((e = run(x, s, "insert segment")) < 0)
        return e;
    if (sm->nblocks_indexed < sm->nblocks &&
        (e = insert_blocks(x, sm->segment_id, sm->blocks + sm->nblocks_indexed,
                           sm->nblocks - sm->nblocks_indexed)) < 0)
        return e;
    if ((e = stmt(x, ST_PROC_COUNTERS, &s)) < 0)
        return e;
    /* a kept window's records were counted when the segment it was cut
     * from was indexed (processes.records counts what was ever indexed):
     * only while that segment's row is here (the flight recorder indexes
     * the cut before it deletes the source). A store without it (pulled
     * from a bucket, or re-indexed after the source was dropped) holds
     * only the window: its records count. */
    int kept = (sm->hdr_flags & SEG_F_KEPT) != 0;
    int counted = kept && source_indexed(x, sm->keep.source_segment);
    sqlite3_bind_int64(s, 1, process_id);
    sqlite3_bind_int64(s, 2, counted ? 0 : (sqlite3_int64)sm->nrecords);
    sqlite3_bind_int64(s, 3, counted ? 0 : (sqlite3_int64)sm->lost);
    if (sm->t_max) {
        sqlite3_bind_int64(s, 4, (sqlite3_int64)sm->t_min);
        sqlite3_bind_int64(s, 5, (sqlite3_int64)sm->t_max);
    }
    if ((e = run(x, s, "update process counters")) < 0)
        return e;
    if (sqlite3_changes(x->db) == 0) {
        x_set(x, "segment %" PRIu64 ": no process row %" PRId64, sm->segment_id, process_id);
        return -ENOENT;
    }
    return kept ? insert_kept(x, sm) : 0;
}

/* The rollups row of a segment (inside the caller's transaction). */
static int set_rollup(struct idx *x, uint64_t segment_id, const uint8_t *data, size_t len)
{
    sqlite3_stmt *s;
    int e = stmt(x, ST_RU_SET, &s);
    if (e < 0)
        return e;
    if (len > INT32_MAX)
        return -EFBIG;
    sqlite3_bind_int64(s, 1, (sqlite3_int64)segment_id);
    sqlite3_bind_blob(s, 2, data, (int)len, SQLITE_STATIC);
    return run(x, s, "write rollups");
}

int idx_rollup_set(struct idx *x, uint64_t segment_id, const uint8_t *data, size_t len)
{
    int e = writable(x);
    if (e < 0)
        return e;
    if (!data || segment_id == 0 || segment_id > INT64_MAX)
        return -EINVAL;
    return set_rollup(x, segment_id, data, len);
}

int idx_segment_commit(struct idx *x, int64_t process_id, const struct seg_summary *s,
                       const char *store_dir)
{
    return idx_segment_commit_rollup(x, process_id, s, store_dir, NULL, 0);
}

int idx_segment_commit_rollup(struct idx *x, int64_t process_id, const struct seg_summary *s,
                              const char *store_dir, const uint8_t *rollup, size_t rollup_len)
{
    int e = writable(x);
    if (e < 0)
        return e;
    if (!s || !store_dir || (s->nblocks && !s->blocks) || s->nblocks_indexed > s->nblocks ||
        s->segment_id == 0 ||
        s->segment_id > INT64_MAX)
        return -EINVAL;
    char rel[sizeof s->path];
    if ((e = idx_relative_path(store_dir, s->path, rel, sizeof rel)) < 0) {
        x_set(x, "segment %s is not inside the store %s",
                 s->path, store_dir);
        return e;
    }
    if ((e = exec(x, "BEGIN IMMEDIATE", "begin segment")) < 0)
        return e;
    if ((e = insert_segment(x, process_id, s, rel)) == 0 &&
        (!rollup || (e = set_rollup(x, s->segment_id, rollup, rollup_len)) == 0))
        e = exec(x, "COMMIT", "commit segment");
    if (e < 0)
        rollback(x);
    return e;
}

int idx_blocks_add(struct idx *x, uint64_t segment_id, const struct seg_block_info *b,
                   uint32_t n)
{
    int e = writable(x);
    if (e < 0)
        return e;
    if ((n && !b) || segment_id == 0 || segment_id > INT64_MAX)
        return -EINVAL;
    if (n == 0)
        return 0;
    /* Nobody reads these rows before their segment row exists, and recovery
     * deletes them if it never does: no WAL fsync for them (NORMAL). The
     * segment's own commit (FULL) syncs the WAL they were written to. */
    if ((e = exec(x, "PRAGMA synchronous=NORMAL", "relax synchronous")) < 0)
        return e;
    if ((e = exec(x, "BEGIN IMMEDIATE", "begin blocks")) == 0 &&
        (e = insert_blocks(x, segment_id, b, n)) == 0)
        e = exec(x, "COMMIT", "commit blocks");
    if (e < 0)
        rollback(x);
    int e2 = exec(x, "PRAGMA synchronous=FULL", "restore synchronous");
    return e < 0 ? e : e2;
}

/* The block rows of one segment (a statement, inside or outside a transaction). */
static int delete_blocks(struct idx *x, uint64_t segment_id)
{
    sqlite3_stmt *s;
    int e = stmt(x, ST_SEG_DEL_BLOCKS, &s);
    if (e < 0)
        return e;
    sqlite3_bind_int64(s, 1, (sqlite3_int64)segment_id);
    return run(x, s, "delete blocks");
}

int idx_blocks_drop(struct idx *x, uint64_t segment_id)
{
    int e = writable(x);
    return e < 0 ? e : delete_blocks(x, segment_id);
}

int idx_drop_orphan_blocks(struct idx *x, uint64_t *dropped)
{
    int e = writable(x);
    if (e < 0)
        return e;
    if ((e = exec(x, "DELETE FROM blocks WHERE segment_id NOT IN (SELECT id FROM segments)",
                  "delete orphan blocks")) < 0)
        return e;
    if (dropped)
        *dropped = (uint64_t)sqlite3_changes(x->db);
    return 0;
}

int idx_segment_delete(struct idx *x, uint64_t segment_id)
{
    int e = writable(x);
    if (e < 0)
        return e;
    if ((e = exec(x, "BEGIN IMMEDIATE", "begin delete")) < 0)
        return e;
    sqlite3_stmt *s;
    int found = 0;
    e = delete_blocks(x, segment_id);
    if (e == 0 && (e = stmt(x, ST_RU_DEL, &s)) == 0) {
        sqlite3_bind_int64(s, 1, (sqlite3_int64)segment_id);
        e = run(x, s, "delete rollups");
    }
    if (e == 0 && (e = stmt(x, ST_UP_DEL, &s)) == 0) {
        sqlite3_bind_int64(s, 1, (sqlite3_int64)segment_id);
        e = run(x, s, "delete upload state");
    }
    if (e == 0 && (e = stmt(x, ST_KEPT_DEL, &s)) == 0) {
        sqlite3_bind_int64(s, 1, (sqlite3_int64)segment_id);
        e = run(x, s, "delete kept window");
    }
    if (e == 0 && (e = stmt(x, ST_SEG_DEL, &s)) == 0) {
        sqlite3_bind_int64(s, 1, (sqlite3_int64)segment_id);
        if ((e = run(x, s, "delete segment")) == 0)
            found = sqlite3_changes(x->db) > 0;
    }
    if (e == 0)
        e = exec(x, "COMMIT", "commit delete");
    if (e < 0) {
        rollback(x);
        return e;
    }
    return found ? 0 : -ENOENT;
}

/* ---- queries ----------------------------------------------------------------- */

static int one_int(struct idx *x, int id, uint64_t *out, const char *what)
{
    if (!x || !out)
        return -EINVAL;
    sqlite3_stmt *s;
    int e = stmt(x, id, &s);
    if (e < 0)
        return e;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *out = (uint64_t)sqlite3_column_int64(s, 0);
    else
        e = x_fail(x, rc, what);
    sqlite3_reset(s);
    return e;
}

int idx_next_segment_id(struct idx *x, uint64_t *id)
{
    return one_int(x, ST_NEXT_ID, id, "next segment id");
}

int idx_total_bytes(struct idx *x, uint64_t *bytes)
{
    return one_int(x, ST_TOTAL_BYTES, bytes, "total bytes");
}

static int oldest(struct idx *x, int which, uint64_t *id, char *path, size_t cap)
{
    if (!x || !id || !path || !cap)
        return -EINVAL;
    sqlite3_stmt *s;
    int e = stmt(x, which, &s);
    if (e < 0)
        return e;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *id = (uint64_t)sqlite3_column_int64(s, 0);
        const unsigned char *p = sqlite3_column_text(s, 1);
        if (!p || strlen((const char *)p) >= cap)
            e = -ENAMETOOLONG;
        else
            strcpy(path, (const char *)p);
    } else {
        e = rc == SQLITE_DONE ? -ENOENT : x_fail(x, rc, "oldest segment");
    }
    sqlite3_reset(s);
    return e;
}

int idx_oldest_segment(struct idx *x, uint64_t *id, char *path, size_t cap)
{
    return oldest(x, ST_OLDEST, id, path, cap);
}

int idx_oldest_shipped_segment(struct idx *x, uint64_t *id, char *path, size_t cap)
{
    return oldest(x, ST_UP_OLDEST_SHIPPED, id, path, cap);
}

/* ---- upload state (shipping) ---------------------------------------------------- */

static void col_text(sqlite3_stmt *s, int i, char *out, size_t cap)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    snprintf(out, cap, "%s", t ? (const char *)t : "");
}

int idx_upload_next(struct idx *x, uint64_t now_ns, const uint64_t *skip, size_t nskip,
                    struct idx_upload *out)
{
    if (!x || !out)
        return -EINVAL;
    sqlite3_stmt *s;
    int e = stmt(x, ST_UP_NEXT, &s), rc = SQLITE_DONE, found = 0;
    if (e < 0)
        return e;
    sqlite3_bind_int64(s, 1, (sqlite3_int64)now_ns);
    sqlite3_bind_int(s, 2, x->upload_kept_only);
    while (!found && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        uint64_t id = (uint64_t)sqlite3_column_int64(s, 0);
        int busy = 0;
        for (size_t i = 0; i < nskip && !busy; i++)
            busy = skip[i] == id;
        if (busy)
            continue;
        memset(out, 0, sizeof *out);
        out->segment_id = id;
        col_text(s, 1, out->path, sizeof out->path);
        out->bytes = (uint64_t)sqlite3_column_int64(s, 2);
        out->records = (uint64_t)sqlite3_column_int64(s, 3);
        out->lost = (uint64_t)sqlite3_column_int64(s, 4);
        out->t_min = (uint64_t)sqlite3_column_int64(s, 5);
        out->t_max = (uint64_t)sqlite3_column_int64(s, 6);
        out->pid = (uint32_t)sqlite3_column_int64(s, 7);
        out->start_time = (uint64_t)sqlite3_column_int64(s, 8);
        col_text(s, 9, out->comm, sizeof out->comm);
        out->attempts = (uint32_t)sqlite3_column_int64(s, 10);
        if (sqlite3_column_type(s, 11) != SQLITE_NULL) {
            out->kept = 1;
            out->keep.trig_ns = (uint64_t)sqlite3_column_int64(s, 12);
            out->keep.t0_ns = (uint64_t)sqlite3_column_int64(s, 13);
            out->keep.t1_ns = (uint64_t)sqlite3_column_int64(s, 14);
            out->keep.trig_pid = (uint32_t)sqlite3_column_int64(s, 15);
            out->keep.ntrig = (uint32_t)sqlite3_column_int64(s, 16);
            out->keep.source_segment = (uint64_t)sqlite3_column_int64(s, 17);
            col_text(s, 18, out->keep.reason, sizeof out->keep.reason);
        }
        found = 1;
    }
    if (!found && rc != SQLITE_DONE)
        e = x_fail(x, rc, "next segment to upload");
    sqlite3_reset(s);
    return e < 0 ? e : found ? 0 : -ENOENT;
}

int idx_upload_set(struct idx *x, uint64_t segment_id, const char *state, uint32_t attempts,
                   const char *last_error, uint64_t next_ns)
{
    int e = writable(x);
    if (e < 0)
        return e;
    if (!state || (strcmp(state, "pending") && strcmp(state, "shipped") && strcmp(state, "failed")))
        return -EINVAL;
    sqlite3_stmt *s;
    if ((e = stmt(x, ST_UP_SET, &s)) < 0)
        return e;
    sqlite3_bind_int64(s, 1, (sqlite3_int64)segment_id);
    sqlite3_bind_text(s, 2, state, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, attempts);
    bind_text_or_null(s, 4, last_error && *last_error ? last_error : NULL);
    sqlite3_bind_int64(s, 5, (sqlite3_int64)next_ns);
    sqlite3_bind_int64(s, 6, (sqlite3_int64)realtime_ns());
    if ((e = run(x, s, "set upload state")) < 0)
        return e;
    return sqlite3_changes(x->db) > 0 ? 0 : -ENOENT;
}

int idx_upload_clamp_next(struct idx *x, uint64_t now_ns, uint64_t max_wait_ns, uint64_t *changed)
{
    int e = writable(x);
    if (e < 0)
        return e;
    sqlite3_stmt *s;
    int rc = sqlite3_prepare_v2(x->db, "UPDATE uploads SET next_ns = ?1 WHERE state != 'shipped' "
                                       "AND next_ns > ?2", -1, &s, NULL);
    if (rc != SQLITE_OK)
        return x_fail(x, rc, "prepare upload clamp");
    uint64_t limit = now_ns > UINT64_MAX - max_wait_ns ? UINT64_MAX : now_ns + max_wait_ns;
    sqlite3_bind_int64(s, 1, sat_i64(now_ns));
    sqlite3_bind_int64(s, 2, sat_i64(limit));
    e = run(x, s, "clamp upload retry times");
    sqlite3_finalize(s);
    if (e == 0 && changed)
        *changed = (uint64_t)sqlite3_changes(x->db);
    return e;
}

int idx_upload_totals(struct idx *x, struct idx_upload_totals *t)
{
    if (!x || !t)
        return -EINVAL;
    sqlite3_stmt *s;
    int e = stmt(x, ST_UP_TOTALS, &s);
    if (e < 0)
        return e;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        t->backlog = (uint64_t)sqlite3_column_int64(s, 0);
        t->backlog_bytes = (uint64_t)sqlite3_column_int64(s, 1);
        t->shipped = (uint64_t)sqlite3_column_int64(s, 2);
        t->shipped_bytes = (uint64_t)sqlite3_column_int64(s, 3);
        t->failed = (uint64_t)sqlite3_column_int64(s, 4);
        t->oldest_sealed_ns = (uint64_t)sqlite3_column_int64(s, 5);
    } else {
        e = x_fail(x, rc, "upload totals");
    }
    sqlite3_reset(s);
    return e;
}

int idx_segment_foreach(struct idx *x, idx_segment_fn fn, void *arg)
{
    if (!x || !fn)
        return -EINVAL;
    sqlite3_stmt *s;
    int e = stmt(x, ST_SEG_LIST, &s);
    if (e < 0)
        return e;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct idx_segment_row r = { 0 };
        r.id = (uint64_t)sqlite3_column_int64(s, 0);
        r.process_id = sqlite3_column_int64(s, 1);
        const unsigned char *p = sqlite3_column_text(s, 2);
        snprintf(r.path, sizeof r.path, "%s", p ? (const char *)p : "");
        r.bytes = (uint64_t)sqlite3_column_int64(s, 3);
        r.records = (uint64_t)sqlite3_column_int64(s, 4);
        r.lost = (uint64_t)sqlite3_column_int64(s, 5);
        r.t_min = (uint64_t)sqlite3_column_int64(s, 6);
        r.t_max = (uint64_t)sqlite3_column_int64(s, 7);
        r.nblocks = (uint64_t)sqlite3_column_int64(s, 8);
        if ((e = fn(arg, &r)) != 0)
            break;
    }
    if (e == 0 && rc != SQLITE_DONE)
        e = x_fail(x, rc, "list segments");
    sqlite3_reset(s);
    return e;
}

void idx_upload_kept_only(struct idx *x, int on)
{
    if (x)
        x->upload_kept_only = on != 0;
}

int idx_flight_candidates(struct idx *x, uint64_t min_id, uint64_t before_ns,
                          struct idx_flight_row *rows, size_t cap, size_t *n)
{
    if (!x || !rows || !n)
        return -EINVAL;
    *n = 0;
    sqlite3_stmt *s;
    int e = stmt(x, ST_FLIGHT_LIST, &s), rc = SQLITE_DONE;
    if (e < 0)
        return e;
    sqlite3_bind_int64(s, 1, (sqlite3_int64)(min_id > INT64_MAX ? INT64_MAX : min_id));
    sqlite3_bind_int64(s, 2, (sqlite3_int64)(before_ns > INT64_MAX ? INT64_MAX : before_ns));
    while (*n < cap && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct idx_flight_row *r = &rows[(*n)++];
        memset(r, 0, sizeof *r);
        r->id = (uint64_t)sqlite3_column_int64(s, 0);
        r->process_id = sqlite3_column_int64(s, 1);
        col_text(s, 2, r->path, sizeof r->path);
        r->t_min = (uint64_t)sqlite3_column_int64(s, 3);
        r->t_max = (uint64_t)sqlite3_column_int64(s, 4);
        r->bytes = (uint64_t)sqlite3_column_int64(s, 5);
    }
    if (*n < cap && rc != SQLITE_DONE)
        e = x_fail(x, rc, "flight recorder candidates");
    sqlite3_reset(s);
    return e < 0 ? e : 0;
}
