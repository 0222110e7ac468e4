/*
 * sql_guard.h — the connection `d9 sql` runs user SQL on, and the rules that
 * keep it a reader: nothing the SQL says can write a file, open a file, load
 * code, change the d9 tables, leak a pointer, or run without a bound when
 * the user set one.
 *
 * sql_guard_open() opens the private in-memory database with SQLite's
 * defensive settings: SQLITE_DBCONFIG_DEFENSIVE on (no writable_schema, no
 * writes to shadow tables or sqlite_dbpage), trusted_schema off,
 * load_extension off (C API and SQL function), the two-argument
 * fts3_tokenizer off, at most 0 attached databases, and the memory limit
 * (sqlite3_hard_heap_limit64; process-wide, so it covers the index
 * connection too). The caller then creates the d9 tables (sql_vtab.h) and
 * calls sql_guard_lock(), which installs the authorizer (tables it creates
 * later go through sql_guard_trusted()). From then on a statement may:
 *   - read any table (d9's virtual tables, table-valued functions, temp
 *     tables) and call any function but fts3_tokenizer and load_extension;
 *   - create, write, alter and drop TEMP tables, views, indexes, triggers;
 *   - BEGIN / COMMIT / ROLLBACK / SAVEPOINT;
 *   - run the pragmas that describe tables (SQL_GUARD_PRAGMAS);
 * and nothing else: no ATTACH or DETACH in any form (so no file name or
 * URI is ever opened; VACUUM INTO is refused by the same rule, since SQLite
 * runs it as an ATTACH), no DDL or writes on main, no virtual tables made by
 * the user, no ANALYZE or REINDEX on main, no other pragma. The reason of a
 * refusal is kept until sql_guard_explain() reports it. URI file names are turned off for
 * the whole process by sql_guard_uri_off() (d9's main calls it before
 * SQLite starts; code that means a URI passes SQLITE_OPEN_URI).
 *
 * A timeout is checked every SQL_GUARD_PROGRESS_OPS virtual-machine steps
 * against a deadline set by sql_guard_start(); past it the statement stops
 * with SQLITE_INTERRUPT. Work inside one virtual-table call is not cut
 * short, only the steps between rows.
 *
 * Called by cli_sql.c and the unit tests. Must never: open anything but
 * ":memory:", or let a statement through that the rules above refuse.
 */
#ifndef D9_COL_SQL_GUARD_H
#define D9_COL_SQL_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sqlite3;

#define SQL_GUARD_MEMORY_MB_DEFAULT 1024        /* d9 sql --memory-mb */
#define SQL_GUARD_MEMORY_MB_MAX     (1u << 20)  /* 1 TiB: above is a typo */
#define SQL_GUARD_PROGRESS_OPS      1000        /* VM steps between deadline checks */
#define SQL_GUARD_WHY_MAX           512
/* The pragmas a statement may run: they only describe the tables. */
#define SQL_GUARD_PRAGMAS                                                    \
    "table_info, table_xinfo, table_list, index_list, index_info, "        \
    "index_xinfo, foreign_key_list, function_list, module_list, "           \
    "pragma_list, collation_list, database_list, compile_options"

struct sql_guard_cfg {
    uint64_t memory_bytes;          /* hard heap limit; 0 = none */
    uint64_t timeout_ns;            /* per sql_guard_start; 0 = none */
};

struct sql_guard {
    struct sqlite3 *db;
    struct sql_guard_cfg cfg;
    uint64_t deadline_ns;           /* CLOCK_MONOTONIC; 0 = none */
    bool timed_out;                 /* the progress handler stopped a statement */
    bool locked;                    /* the authorizer is on */
    char refused[SQL_GUARD_WHY_MAX]; /* why the failing statement was refused; "" = none */
};

/* Turn SQLite's URI file names off for the process. Only works before
 * SQLite starts (the first open): 0, or -EBUSY when it has started. */
int sql_guard_uri_off(void);

/* Open the in-memory connection with the settings above into g->db. 0, or
 * -errno with one line in why (g->db is then NULL). */
int sql_guard_open(struct sql_guard *g, const struct sql_guard_cfg *cfg, char *why,
                   size_t whycap);
/* Install the authorizer: call after creating the d9 tables. 0 or -EIO. */
int sql_guard_lock(struct sql_guard *g);
/* Run fn(arg), the caller's own SQL (creating the d9 tables after the lock,
 * between two statements of the user's), with the rules lifted: no
 * authorizer and no deadline (the time it takes does not count against the
 * timeout). Both are back when it returns; call it only while no statement
 * of the user's is prepared. Returns fn's result, or -EIO when the
 * authorizer could not be lifted or put back. */
int sql_guard_trusted(struct sql_guard *g, int (*fn)(void *arg), void *arg);
/* Start the timeout clock (a no-op without a timeout). */
void sql_guard_start(struct sql_guard *g);

enum sql_guard_why {
    SQL_GUARD_SQL_ERROR,            /* SQLite's own message */
    SQL_GUARD_REFUSED,              /* the authorizer said no */
    SQL_GUARD_TIMEOUT,              /* past the deadline */
    SQL_GUARD_MEMORY,               /* the memory limit was hit */
};
/* After prepare or step failed with rc: why, with one line (no newline) in
 * buf that says which rule or limit and, for a limit, how to raise it. */
enum sql_guard_why sql_guard_explain(struct sql_guard *g, int rc, char *buf, size_t cap);

/* Close the connection (the caller frees what the tables use afterwards)
 * and lift the memory limit. */
void sql_guard_close(struct sql_guard *g);

#endif /* D9_COL_SQL_GUARD_H */
