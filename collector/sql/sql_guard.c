/*
 * sql_guard.c — the read-only connection of `d9 sql` (see sql_guard.h):
 * defensive settings, the authorizer, the memory limit and the timeout.
 *
 * The authorizer fails closed: an action it does not know is refused.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "collector/sql/sql_guard.h"

#define NS_PER_S   UINT64_C(1000000000)
#define NS_PER_MS  UINT64_C(1000000)
#define BYTES_PER_MB (UINT64_C(1024) * 1024)
#define TEMP_DB    "temp"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

int sql_guard_uri_off(void)
{
    return sqlite3_config(SQLITE_CONFIG_URI, 0) == SQLITE_OK ? 0 : -EBUSY;
}

/* ---- the authorizer ------------------------------------------------------------ */

static const char *const pragmas[] = {
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
    "foreign_key_list", "function_list", "module_list", "pragma_list", "collation_list",
    "database_list", "compile_options",
};

static bool is_temp(const char *db) { return db && strcmp(db, TEMP_DB) == 0; }

/* Keep the first refusal of a statement: SQLite may ask on after a "no". */
__attribute__((format(printf, 2, 3)))
static int refuse(struct sql_guard *g, const char *fmt, ...)
{
    if (!g->refused[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g->refused, sizeof g->refused, fmt, ap);
        va_end(ap);
    }
    return SQLITE_DENY;
}

static bool is_schema_table(const char *t)
{
    return t && (strcmp(t, "sqlite_master") == 0 || strcmp(t, "sqlite_schema") == 0);
}

static const char *str(const char *s) { return s ? s : "?"; }

#define READ_ONLY "d9 sql is read-only: "

/* arg meanings per action: sqlite3.h's "Authorizer Action Codes" table;
 * db is the database name ("main", "temp"), 0 where SQLite gives none. */
static int authorize(void *arg, int action, const char *a1, const char *a2, const char *db,
                     const char *trigger)
{
    struct sql_guard *g = arg;
    (void)trigger;
    switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_RECURSIVE:
    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT:
        return SQLITE_OK;
    case SQLITE_FUNCTION:
        if (a2 && strcasecmp(a2, "fts3_tokenizer") == 0)
            return refuse(g, "the function %s() is refused: it hands out pointers", a2);
        if (a2 && strcasecmp(a2, "load_extension") == 0)
            return refuse(g, READ_ONLY "%s() is refused: d9 sql loads no code", a2);
        return SQLITE_OK;
    case SQLITE_PRAGMA:
        for (size_t i = 0; i < sizeof pragmas / sizeof pragmas[0]; i++)
            if (a1 && strcasecmp(a1, pragmas[i]) == 0)
                return SQLITE_OK;
        return refuse(g, READ_ONLY "PRAGMA %s is refused (allowed: %s)", str(a1),
                      SQL_GUARD_PRAGMAS);
    case SQLITE_ATTACH:
        return refuse(g, READ_ONLY "ATTACH and VACUUM INTO are refused ('%s' was not "
                      "opened)", str(a1));
    case SQLITE_DETACH:
        return refuse(g, READ_ONLY "DETACH %s is refused", str(a1));
    case SQLITE_CREATE_TEMP_TABLE:
    case SQLITE_CREATE_TEMP_INDEX:
    case SQLITE_CREATE_TEMP_VIEW:
    case SQLITE_CREATE_TEMP_TRIGGER:
    case SQLITE_DROP_TEMP_TABLE:
    case SQLITE_DROP_TEMP_INDEX:
    case SQLITE_DROP_TEMP_VIEW:
    case SQLITE_DROP_TEMP_TRIGGER:
        return SQLITE_OK;
    case SQLITE_CREATE_TABLE:
    case SQLITE_CREATE_INDEX:
    case SQLITE_CREATE_VIEW:
    case SQLITE_CREATE_TRIGGER:
        return refuse(g, READ_ONLY "CREATE of %s is refused (CREATE TEMP tables, views, "
                      "indexes and triggers instead)", str(a1));
    case SQLITE_DROP_TABLE:
    case SQLITE_DROP_INDEX:
    case SQLITE_DROP_VIEW:
    case SQLITE_DROP_TRIGGER:
    case SQLITE_DROP_VTABLE:
        return refuse(g, READ_ONLY "DROP of %s is refused (only TEMP objects may be "
                      "dropped)", str(a1));
    case SQLITE_CREATE_VTABLE:
        return refuse(g, READ_ONLY "CREATE VIRTUAL TABLE %s is refused", str(a1));
    case SQLITE_INSERT:
    case SQLITE_UPDATE:
    case SQLITE_DELETE:
        if (is_temp(db))
            return SQLITE_OK;
        /* SQLite asks about the schema table first when it is about to
         * CREATE, DROP, ALTER or ANALYZE: that action is asked next and
         * refused by its name; a direct write to the schema table is
         * refused by SQLITE_DBCONFIG_DEFENSIVE. */
        if (is_schema_table(a1))
            return SQLITE_OK;
        return refuse(g, READ_ONLY "writing to %s is refused (write TEMP tables instead)",
                      str(a1));
    case SQLITE_ALTER_TABLE:
        if (is_temp(a1))
            return SQLITE_OK;
        return refuse(g, READ_ONLY "ALTER TABLE %s is refused", str(a2));
    case SQLITE_ANALYZE:
    case SQLITE_REINDEX:                /* also asked when a TEMP index is made */
        if (is_temp(db))
            return SQLITE_OK;
        return refuse(g, READ_ONLY "ANALYZE and REINDEX are refused");
    default:
        return refuse(g, READ_ONLY "this statement is refused (authorizer action %d)", action);
    }
}

/* ---- the timeout ------------------------------------------------------------------- */

static int progress(void *arg)
{
    struct sql_guard *g = arg;
    if (g->deadline_ns && now_ns() >= g->deadline_ns) {
        g->timed_out = true;
        return 1;
    }
    return 0;
}

/* ---- public ------------------------------------------------------------------------- */

static int set_flag(sqlite3 *db, int op, int want, const char *name, char *why, size_t whycap)
{
    int got = -1;
    if (sqlite3_db_config(db, op, want, &got) != SQLITE_OK || got != want) {
        snprintf(why, whycap, "cannot set %s to %d on the SQL connection", name, want);
        return -EIO;
    }
    return 0;
}

int sql_guard_open(struct sql_guard *g, const struct sql_guard_cfg *cfg, char *why,
                   size_t whycap)
{
    memset(g, 0, sizeof *g);
    g->cfg = *cfg;
    if (sqlite3_hard_heap_limit64((sqlite3_int64)cfg->memory_bytes) < 0) {
        snprintf(why, whycap, "cannot set the SQL memory limit");
        return -EIO;
    }
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY |
                                             SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        snprintf(why, whycap, "cannot open an in-memory database: %s",
                 db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        sqlite3_hard_heap_limit64(0);
        return -ENOMEM;
    }
    int rc = set_flag(db, SQLITE_DBCONFIG_DEFENSIVE, 1, "defensive", why, whycap);
    if (rc == 0)
        rc = set_flag(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, "trusted_schema", why, whycap);
    if (rc == 0)
        rc = set_flag(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, "load_extension", why,
                      whycap);
    if (rc == 0)
        rc = set_flag(db, SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 0, "fts3_tokenizer", why,
                      whycap);
    if (rc == 0 && sqlite3_enable_load_extension(db, 0) != SQLITE_OK) {
        snprintf(why, whycap, "cannot turn load_extension off on the SQL connection");
        rc = -EIO;
    }
    if (rc < 0) {
        sqlite3_close(db);
        sqlite3_hard_heap_limit64(0);
        return rc;
    }
    sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
    sqlite3_progress_handler(db, SQL_GUARD_PROGRESS_OPS, progress, g);
    g->db = db;
    return 0;
}

int sql_guard_lock(struct sql_guard *g)
{
    if (sqlite3_set_authorizer(g->db, authorize, g) != SQLITE_OK)
        return -EIO;
    g->locked = true;
    return 0;
}

int sql_guard_trusted(struct sql_guard *g, int (*fn)(void *arg), void *arg)
{
    if (sqlite3_set_authorizer(g->db, NULL, NULL) != SQLITE_OK)
        return -EIO;
    g->locked = false;
    uint64_t deadline = g->deadline_ns, t0 = now_ns();
    g->deadline_ns = 0;
    int rc = fn(arg);
    g->deadline_ns = deadline ? deadline + (now_ns() - t0) : 0;
    /* a failure here leaves the connection unlocked: the caller must stop */
    if (sql_guard_lock(g) < 0)
        return -EIO;
    return rc;
}

void sql_guard_start(struct sql_guard *g)
{
    g->timed_out = false;
    g->deadline_ns = g->cfg.timeout_ns ? now_ns() + g->cfg.timeout_ns : 0;
}

/* a duration as the user would type it back: "1500ms", "2s", "90s" */
static void dur_text(uint64_t ns, char *buf, size_t cap)
{
    if (ns % NS_PER_S == 0)
        snprintf(buf, cap, "%" PRIu64 "s", ns / NS_PER_S);
    else if (ns % NS_PER_MS == 0)
        snprintf(buf, cap, "%" PRIu64 "ms", ns / NS_PER_MS);
    else
        snprintf(buf, cap, "%" PRIu64 "ns", ns);
}

enum sql_guard_why sql_guard_explain(struct sql_guard *g, int rc, char *buf, size_t cap)
{
    int primary = rc & 0xff;
    if (g->refused[0]) {            /* a refusal fails its statement, whatever rc says */
        snprintf(buf, cap, "%s", g->refused);
        g->refused[0] = 0;
        return SQL_GUARD_REFUSED;
    }
    if (primary == SQLITE_INTERRUPT && g->timed_out) {
        char d[32];
        dur_text(g->cfg.timeout_ns, d, sizeof d);
        snprintf(buf, cap, "the query ran longer than --timeout %s and was stopped; "
                 "give it more time with --timeout DURATION (0: no limit)", d);
        return SQL_GUARD_TIMEOUT;
    }
    if (primary == SQLITE_NOMEM && g->cfg.memory_bytes) {
        snprintf(buf, cap, "the query needs more than d9 sql's memory limit of %" PRIu64
                 " MiB; raise it with --memory-mb N (0: no limit)",
                 g->cfg.memory_bytes / BYTES_PER_MB);
        return SQL_GUARD_MEMORY;
    }
    snprintf(buf, cap, "%s", g->db ? sqlite3_errmsg(g->db) : sqlite3_errstr(rc));
    return SQL_GUARD_SQL_ERROR;
}

void sql_guard_close(struct sql_guard *g)
{
    if (g->db)
        sqlite3_close(g->db);
    g->db = NULL;
    sqlite3_hard_heap_limit64(0);
}
