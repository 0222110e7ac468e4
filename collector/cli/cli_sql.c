/*
 * cli_sql.c — `d9 sql`: SQL over the recorded events. Opens a private
 * in-memory SQLite connection, attaches the store's virtual tables
 * (sql_vtab.h) and runs the statements of the query (argument or standard
 * input) on it, printing each result as an aligned table, CSV or JSON lines.
 *
 * Called by main.c. The connection never touches index.sqlite: every row
 * comes through the virtual tables and the query layer; the connection is
 * sql_guard.h's, so the SQL can read and do temp work but never write or
 * open a file, and runs under its memory limit and timeout. Table output
 * keeps the first TABLE_BUFFER_ROWS rows to size its columns and streams
 * the rest at those widths, so memory stays bounded whatever the result.
 * Names and values from the store are hostile: every one reaches the
 * terminal through q_text.h's escaping (control characters never raw).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "collector/cli/cli.h"
#include "collector/cli/cli_live.h"
#include "collector/query/q_scan.h"
#include "collector/sql/sql_guard.h"
#include "collector/sql/sql_vtab.h"

#define TABLE_BUFFER_ROWS 1000      /* rows read before column widths are fixed */
#define TABLE_WIDTH_MAX   60        /* a wider value is printed whole, unpadded */
#define QUERY_MAX         (1u << 20)
#define SCHEMA_NAME_WIDTH 16        /* --schema: column names padded to this */

static const char usage[] =
"NAME\n"
"    d9 sql - SQL over the recorded events\n"
"\n"
"SYNOPSIS\n"
"    d9 [--store DIR] sql [--format table|csv|jsonl] [--stats] [--timeout DURATION]\n"
"                         [--memory-mb N] \"QUERY\"\n"
"    d9 [--store DIR] sql [options] < query.sql\n"
"    d9 [--store DIR] sql --schema\n"
"\n"
"DESCRIPTION\n"
"    Runs SQLite SQL (every statement of QUERY, or of standard input when\n"
"    QUERY is absent or '-') over read-only virtual tables of the store.\n"
"    Works on a live store while the collector writes (what it has not\n"
"    sealed yet is not visible: 'd9 flush') and on a copied directory.\n"
"    Times are CLOCK_MONOTONIC nanoseconds, as in the index.\n"
"\n"
"    Read-only: a query reads the tables below and may create and fill TEMP\n"
"    tables, views, indexes and triggers; it cannot write or create anything\n"
"    else, ATTACH a database (in any form, file name or URI), VACUUM INTO a\n"
"    file, load an extension, call fts3_tokenizer(), or run a pragma other\n"
"    than those that describe tables (table_info, table_list, ...). Such a\n"
"    statement is refused before it runs: one line, exit status 2.\n"
"\n"
"TABLES (d9 sql --schema lists every column)\n"
"    processes, threads, runtimes, segments      rows of the index\n"
"    locations    spawn/poll locations (pid, loc, file, line, func, location)\n"
"    polls        pid, tid, runtime, worker, task, loc, location, start_ns,\n"
"                 end_ns, dur_ns, unfinished: poll_start .. poll_end of a task\n"
"                 on a thread (paired as top-polls pairs them; unfinished:\n"
"                 end_ns NULL, dur_ns up to the last record of its process,\n"
"                 unfinished = why, e.g. 'process crashed'; else NULL)\n"
"    parks        pid, tid, runtime, worker, start_ns, end_ns, dur_ns, cpu_ns,\n"
"                 sched_wait_ns, park_wait_ns: worker_park .. worker_unpark\n"
"    sched_waits  pid, tid, ts_ns, runtime, worker, kind ('park'|'unpark'),\n"
"                 wait_ns, cpu_ns: every scheduling-wait sample\n"
"    workers      one row per worker as d9 sched computes it: polls, parks,\n"
"                 waits, wait_sum_ns .. wait_max_ns, cpu_ns, parked_ns, span_ns,\n"
"                 busy_ns (the whole store)\n"
"    wakes, spawns, terminates, queue_depths      one row per record\n"
"    cpu_samples  pid, tid, ts_ns, kind ('cpu'|'off_cpu'), stack_id, ...\n"
"    stacks       stack_id, depth (0 = innermost), frame, address, pid:\n"
"                 frames named as d9 flame names them\n"
"    events       every record of the traced programs (not the collector's\n"
"                 memory maps, d9.map): pid, tid, ts_ns, type, event, thread, fields\n"
"                 (a JSON object: json_extract(fields, '$.task'))\n"
"    <event>      one table per custom event, named after it, its fields as\n"
"                 typed columns after pid, tid, ts_ns, task (the task whose\n"
"                 poll it was emitted in, NULL outside polls: join it with\n"
"                 polls on pid, tid, task). Schemas of the same name\n"
"                 in several processes share one table: the union of their\n"
"                 fields (NULL where an event lacks one; no declared type when\n"
"                 the types differ). A name taken by a table above becomes\n"
"                 event_<name>; quote other names: \"http.request\".\n"
"    loop_work    pid, tid, runtime, worker, start_ns, end_ns, dur_ns,\n"
"                 cpu_samples: a loop thread's time outside its callbacks and\n"
"                 its wait, >= 1 ms (as top-polls --loop-work; the whole\n"
"                 store); join cpu_samples on pid, tid and ts_ns BETWEEN\n"
"                 start_ns AND end_ns for its stacks\n"
"\n"
"    Constraints on pid, tid and the time column (ts_ns; start_ns for polls\n"
"    and parks) select blocks through the store's index, so a question about\n"
"    one process or a short window reads only those blocks; runtime = 'x'\n"
"    narrows to the process that has it, and so does a custom-event table\n"
"    that one process defines. ORDER BY ts_ns comes free.\n"
"\n"
"OPTIONS\n"
"    --format FMT    table (default: aligned columns, NULL shown as NULL),\n"
"                    csv (RFC 4180, header line) or jsonl (one object per row).\n"
"    --schema        list the tables of this store and their columns.\n"
"    --stats         print blocks and records read, and the time taken, on\n"
"                    standard error.\n"
"    --timeout DURATION\n"
"                    stop the query (all its statements together) after\n"
"                    DURATION (500ms, 30s, 5m, ...) with exit status 2.\n"
"                    Default: no limit (stop it with Ctrl-C).\n"
"    --memory-mb N   the most memory SQLite may use, in MiB (default 1024;\n"
"                    0: no limit). A query that needs more (a huge\n"
"                    group_concat, a sort of every row kept in memory) stops\n"
"                    with exit status 2.\n"
CLI_HELP_NO_FLUSH
"\n"
CLI_HELP_COMMON "\n"
"EXAMPLES\n"
"    d9 sql \"select location, count(*), max(dur_ns) from polls group by location\"\n"
"    d9 sql --format csv \"select * from request_done where status >= 500\"\n"
"    echo \"select tid, count(*) from cpu_samples where pid = 1234 group by 1\" | d9 sql\n"
"    (more: docs/sql.md, also in the installed manual, share/doc/d9/docs)\n"
"\n"
"EXIT STATUS\n"
"    0   success (an empty result is a success: it is reported on stderr)\n"
"    1   runtime error: no store or index, the store could not be read\n"
"    2   bad usage, an SQL error (the message is SQLite's), a statement the\n"
"        read-only rules refuse, or a query stopped by --timeout or --memory-mb\n"
"        (the line says which limit and how to raise it)\n"
"\n"
"OUTPUT\n"
"    Names and values from the store are untrusted: control characters (C0,\n"
"    DEL, C1 such as U+009B) and bytes that are not UTF-8 never reach the\n"
"    terminal raw. table and --schema print them as \\xNN (C1 as \\u00NN) and a\n"
"    backslash as \\\\; csv does the same except that tab, newline and\n"
"    backslash stay as they are; jsonl escapes them as JSON does (\\u00NN),\n"
"    which keeps every valid UTF-8 value exact.\n";

enum out_fmt { OUT_TABLE, OUT_CSV, OUT_JSONL };

enum { OPT_FORMAT = CLI_OPT_FIRST_PRIVATE, OPT_SCHEMA, OPT_STATS, OPT_TIMEOUT, OPT_MEMORY };

#define BYTES_PER_MB (1024ull * 1024ull)

struct sql_opts {
    enum out_fmt fmt;
    bool schema, stats;
    struct sql_guard_cfg guard;
};

static int priv(struct cli_env *env, void *arg, int opt, const char *val)
{
    struct sql_opts *o = arg;
    switch (opt) {
    case OPT_FORMAT:
        if (strcmp(val, "table") == 0 || strcmp(val, "text") == 0)
            o->fmt = OUT_TABLE;
        else if (strcmp(val, "csv") == 0)
            o->fmt = OUT_CSV;
        else if (strcmp(val, "jsonl") == 0)
            o->fmt = OUT_JSONL;
        else
            return cli_usage_error(env, "--format: '%s' is not table, csv or jsonl", val), -1;
        return 0;
    case OPT_SCHEMA:
        o->schema = true;
        return 0;
    case OPT_STATS:
        o->stats = true;
        return 0;
    case OPT_TIMEOUT:
        if (strcmp(val, "0") == 0)
            o->guard.timeout_ns = 0;
        else if (cli_parse_duration(val, &o->guard.timeout_ns) < 0)
            return cli_usage_error(env, "--timeout: expected a duration like 500ms, 30s, 5m "
                                   "(0: no limit), got '%s'", val), -1;
        return 0;
    case OPT_MEMORY: {
        uint64_t mb;
        if (q_text_parse_u64(val, &mb) < 0 || mb > SQL_GUARD_MEMORY_MB_MAX)
            return cli_usage_error(env, "--memory-mb: expected MiB from 0 (no limit) to %u, "
                                   "got '%s'", SQL_GUARD_MEMORY_MB_MAX, val), -1;
        o->guard.memory_bytes = mb * BYTES_PER_MB;
        return 0;
    }
    default:
        cli_usage_error(env, "unexpected option");
        return -1;
    }
}

/* ---- output ---------------------------------------------------------------- */

struct cell {
    int type;
    char *text;                     /* as printed; NULL for SQL NULL */
    size_t len;
};

struct table_out {
    int ncols;
    size_t *width;
    bool *right;                    /* numbers align right */
    struct cell *buf;               /* TABLE_BUFFER_ROWS * ncols */
    size_t nbuf;
    bool fixed;                     /* widths decided, header printed */
    const char **names;
};

static char *value_text(sqlite3_stmt *st, int i, size_t *len)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    *len = (size_t)sqlite3_column_bytes(st, i);
    char *s = malloc(*len + 1);
    if (s) {
        memcpy(s, t ? (const char *)t : "", *len);
        s[*len] = 0;
    }
    return s;
}

static void table_print_cell(const struct table_out *t, int i, const struct cell *c, bool last)
{
    const char *s = c->text ? c->text : "NULL";
    size_t n = c->text ? c->len : 4;
    size_t w = t->width[i];
    size_t pad = w > n ? w - n : 0;
    if (t->right[i])
        printf("%*s", (int)pad, "");
    q_text_escaped(stdout, s, n, false);
    if (!last)
        printf("%*s  ", t->right[i] ? 0 : (int)pad, "");
}

static void table_flush(struct table_out *t)
{
    if (!t->fixed) {
        for (int i = 0; i < t->ncols; i++) {
            size_t w = strlen(t->names[i]);
            bool num = t->nbuf > 0;
            for (size_t r = 0; r < t->nbuf; r++) {
                const struct cell *c = &t->buf[r * (size_t)t->ncols + (size_t)i];
                size_t n = c->text ? c->len : 4;
                if (n > w && n <= TABLE_WIDTH_MAX)
                    w = n;
                if (c->type != SQLITE_INTEGER && c->type != SQLITE_FLOAT && c->type != SQLITE_NULL)
                    num = false;
            }
            t->width[i] = w;
            t->right[i] = num;
        }
        for (int i = 0; i < t->ncols; i++) {
            struct cell h = { SQLITE_TEXT, (char *)t->names[i], strlen(t->names[i]) };
            table_print_cell(t, i, &h, i == t->ncols - 1);
        }
        putchar('\n');
        t->fixed = true;
    }
    for (size_t r = 0; r < t->nbuf; r++) {
        for (int i = 0; i < t->ncols; i++) {
            struct cell *c = &t->buf[r * (size_t)t->ncols + (size_t)i];
            table_print_cell(t, i, c, i == t->ncols - 1);
            free(c->text);
        }
        putchar('\n');
    }
    t->nbuf = 0;
}

static void jsonl_row(sqlite3_stmt *st, int ncols)
{
    putchar('{');
    for (int i = 0; i < ncols; i++) {
        const char *name = sqlite3_column_name(st, i);
        if (i)
            putchar(',');
        q_text_json(stdout, name ? name : "", name ? strlen(name) : 0);
        putchar(':');
        switch (sqlite3_column_type(st, i)) {
        case SQLITE_NULL:
            fputs("null", stdout);
            break;
        case SQLITE_INTEGER:
            printf("%lld", (long long)sqlite3_column_int64(st, i));
            break;
        case SQLITE_FLOAT: {
            double d = sqlite3_column_double(st, i);
            if (d != d || d - d != 0)
                fputs("null", stdout);      /* NaN, inf: not JSON */
            else
                printf("%.17g", d);
            break;
        }
        case SQLITE_BLOB: {
            const unsigned char *b = sqlite3_column_blob(st, i);
            int n = sqlite3_column_bytes(st, i);
            putchar('"');
            for (int j = 0; j < n; j++)
                printf("%02x", b[j]);
            putchar('"');
            break;
        }
        default: {
            const unsigned char *t = sqlite3_column_text(st, i);
            q_text_json(stdout, t ? (const char *)t : "", (size_t)sqlite3_column_bytes(st, i));
            break;
        }
        }
    }
    fputs("}\n", stdout);
}

/* Run one prepared statement, printing its rows. Returns the SQLite result
 * code of the last step; *rows gets the row count. */
static int run_stmt(sqlite3_stmt *st, enum out_fmt fmt, uint64_t *rows)
{
    int ncols = sqlite3_column_count(st);
    struct table_out t = { .ncols = ncols };
    if (fmt == OUT_TABLE && ncols > 0) {
        t.width = calloc((size_t)ncols, sizeof *t.width);
        t.right = calloc((size_t)ncols, sizeof *t.right);
        t.names = calloc((size_t)ncols, sizeof *t.names);
        t.buf = calloc((size_t)ncols * TABLE_BUFFER_ROWS, sizeof *t.buf);
        if (!t.width || !t.right || !t.names || !t.buf) {
            free(t.width);
            free(t.right);
            free(t.names);
            free(t.buf);
            return SQLITE_NOMEM;
        }
        for (int i = 0; i < ncols; i++)
            t.names[i] = sqlite3_column_name(st, i) ? sqlite3_column_name(st, i) : "";
    }
    int rc;
    *rows = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (ncols == 0)
            continue;
        if (fmt == OUT_CSV && *rows == 0) {
            for (int i = 0; i < ncols; i++) {
                const char *n = sqlite3_column_name(st, i);
                if (i)
                    putchar(',');
                q_text_csv(stdout, n ? n : "", n ? strlen(n) : 0);
            }
            fputs("\r\n", stdout);
        }
        (*rows)++;
        if (fmt == OUT_JSONL) {
            jsonl_row(st, ncols);
            continue;
        }
        if (fmt == OUT_CSV) {
            for (int i = 0; i < ncols; i++) {
                if (i)
                    putchar(',');
                if (sqlite3_column_type(st, i) == SQLITE_NULL)
                    continue;
                const unsigned char *v = sqlite3_column_text(st, i);
                q_text_csv(stdout, v ? (const char *)v : "",
                           (size_t)sqlite3_column_bytes(st, i));
            }
            fputs("\r\n", stdout);
            continue;
        }
        for (int i = 0; i < ncols; i++) {
            struct cell *c = &t.buf[t.nbuf * (size_t)ncols + (size_t)i];
            c->type = sqlite3_column_type(st, i);
            c->text = c->type == SQLITE_NULL ? NULL : value_text(st, i, &c->len);
        }
        if (++t.nbuf == TABLE_BUFFER_ROWS)
            table_flush(&t);
    }
    if (fmt == OUT_TABLE && ncols > 0) {
        if (t.nbuf || (*rows > 0 && !t.fixed))
            table_flush(&t);
        for (size_t r = 0; r < t.nbuf * (size_t)ncols; r++)
            free(t.buf[r].text);
        free(t.width);
        free(t.right);
        free(t.names);
        free(t.buf);
    }
    return rc;
}

/* ---- schema ------------------------------------------------------------------ */

static int print_schema(struct cli_env *env, sqlite3 *db)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_schema WHERE type = 'table' "
                           "ORDER BY rowid", -1, &st, NULL) != SQLITE_OK)
        return cli_fail(env, "%s", sqlite3_errmsg(db));
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (!name)
            continue;
        q_text_escaped(stdout, name, strlen(name), false);   /* a custom event's name */
        fputs(" -- ", stdout);
        sql_vtab_describe(stdout, name);
        putchar('\n');
        sqlite3_stmt *ti;
        if (sqlite3_prepare_v2(db, "SELECT name, type FROM pragma_table_info(?1)", -1, &ti,
                               NULL) != SQLITE_OK)
            continue;
        sqlite3_bind_text(ti, 1, name, -1, SQLITE_TRANSIENT);
        while (sqlite3_step(ti) == SQLITE_ROW) {
            const char *cn = (const char *)sqlite3_column_text(ti, 0);
            const char *ct = (const char *)sqlite3_column_text(ti, 1);
            size_t n = cn ? strlen(cn) : 0;
            fputs("    ", stdout);
            q_text_escaped(stdout, cn ? cn : "", n, false);   /* a custom field's name */
            printf("%*s ", n < SCHEMA_NAME_WIDTH ? (int)(SCHEMA_NAME_WIDTH - n) : 0, "");
            if (ct && *ct)
                q_text_escaped(stdout, ct, strlen(ct), false);
            else
                fputs("(any)", stdout);
            putchar('\n');
        }
        sqlite3_finalize(ti);
    }
    sqlite3_finalize(st);
    return CLI_EXIT_OK;
}

/* ---- command ------------------------------------------------------------------ */

/* Whether q may read the schema (it names sqlite_* or a pragma): then it
 * needs the created tables (sql_vtab_attach_tables) from its first
 * statement, not only the eponymous built-in ones, since what it lists
 * depends on them. Any other statement gets them when it first needs them
 * (prepare below). */
static bool reads_schema(const char *q)
{
    return strcasestr(q, "sqlite_") || strcasestr(q, "pragma");
}

static char *read_stdin(void)
{
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    while (b) {
        size_t r = fread(b + n, 1, cap - n - 1, stdin);
        n += r;
        if (r == 0)
            break;
        if (n + 1 == cap) {
            if (cap >= QUERY_MAX) {
                free(b);
                return NULL;
            }
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                return NULL;
            }
            b = nb;
            cap *= 2;
        }
    }
    if (b)
        b[n] = 0;
    return b;
}

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One line on stderr for a statement that failed with rc: a refusal, a
 * limit (which, and how to raise it) or SQLite's message, escaped (it can
 * quote names from the store). Returns the exit code: 1 for a store failure
 * (the virtual tables prefix those with "d9:"), else 2. */
static int report_error(struct sql_guard *g, int rc)
{
    char line[SQL_GUARD_WHY_MAX];
    enum sql_guard_why why = sql_guard_explain(g, rc, line, sizeof line);
    fflush(stdout);
    fputs("d9 sql: ", stderr);
    q_text_escaped(stderr, line, strlen(line), false);
    fputc('\n', stderr);
    return why == SQL_GUARD_SQL_ERROR && strncmp(line, "d9:", 3) == 0 ? CLI_EXIT_FAIL
                                                                      : CLI_EXIT_USAGE;
}

struct attach {
    struct sql_guard *g;
    struct sql_vtab *v;
    char why[SQL_GUARD_WHY_MAX];
};

static int attach_tables(void *arg)
{
    struct attach *a = arg;
    return sql_vtab_attach_tables(a->g->db, a->v, a->why, sizeof a->why);
}

/* One line on stderr for tables that could not be created (why may name a
 * custom event). Returns the exit code. */
static int report_attach(struct cli_env *env, const char *why)
{
    fflush(stdout);
    fprintf(stderr, "d9 sql: %s: ", env->store);
    q_text_escaped(stderr, why, strlen(why), false);
    fputc('\n', stderr);
    return CLI_EXIT_FAIL;
}

/* Compile the statement at tail, under the guard: once, in the common case
 * of a statement that reads the built-in tables only. One that does not
 * compile against them (it names a custom-event table, or is not valid SQL;
 * not one the guard refused) is compiled again once every table is created
 * (sql_vtab_attach_tables, outside the rules: sql_guard_trusted), so its
 * error, if any, is reported with every table present. Statements before it
 * have run without those tables, as they would have with them: each of them
 * compiled without them. Returns the SQLite result code, or -1 with the
 * exit code in *code when the tables could not be created. */
static int prepare(struct cli_env *env, struct sql_guard *g, struct sql_vtab *v,
                   bool *all_tables, const char *tail, sqlite3_stmt **st, const char **next,
                   int *code)
{
    int rc = sqlite3_prepare_v2(g->db, tail, -1, st, next);
    if (rc != SQLITE_ERROR || g->refused[0] || *all_tables)
        return rc;
    *all_tables = true;
    struct attach a = { .g = g, .v = v };
    if (sql_guard_trusted(g, attach_tables, &a) < 0) {
        *code = g->locked ? report_attach(env, a.why)
                          : cli_fail(env, "cannot install the read-only rules on the SQL connection");
        return -1;
    }
    return sqlite3_prepare_v2(g->db, tail, -1, st, next);
}

/* Run every statement of q (all_tables: the created tables are there).
 * Returns an exit code. */
static int run_all(struct cli_env *env, struct sql_guard *g, struct sql_vtab *v,
                   bool all_tables, const char *q, enum out_fmt fmt, uint64_t *total_rows,
                   bool *had_columns)
{
    const char *tail = q;
    unsigned nstmt = 0;
    sql_guard_start(g);
    while (tail && *tail) {
        sqlite3_stmt *st = NULL;
        const char *next = NULL;
        int code = CLI_EXIT_OK;
        int rc = prepare(env, g, v, &all_tables, tail, &st, &next, &code);
        if (rc < 0)
            return code;
        if (rc != SQLITE_OK)
            return report_error(g, rc);
        tail = next;
        if (!st)
            continue;               /* whitespace or a comment */
        nstmt++;
        if (sqlite3_column_count(st) > 0)
            *had_columns = true;
        uint64_t rows = 0;
        rc = run_stmt(st, fmt, &rows);
        *total_rows += rows;
        if (rc != SQLITE_DONE) {
            rc = report_error(g, rc);
            sqlite3_finalize(st);
            return rc;
        }
        sqlite3_finalize(st);
    }
    if (nstmt == 0) {
        fprintf(stderr, "d9 sql: no SQL statement in the query\nTry 'd9 sql --help'.\n");
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

CLI_DECLARE_CMD(sql)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP, CLI_OPTE_STORE,
        { "format", 1, NULL, OPT_FORMAT },
        { "schema", 0, NULL, OPT_SCHEMA },
        { "stats", 0, NULL, OPT_STATS },
        { "timeout", 1, NULL, OPT_TIMEOUT },
        { "memory-mb", 1, NULL, OPT_MEMORY },
        CLI_OPTE_NO_FLUSH, CLI_OPTE_END,
    };
    struct sql_opts o = {
        .fmt = OUT_TABLE,
        .guard = { .memory_bytes = SQL_GUARD_MEMORY_MB_DEFAULT * BYTES_PER_MB },
    };
    struct cli_args a;
    cli_args_init(&a);
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        bool common = c == 'h' || c == ':' || c == '?' ||
                      (c >= CLI_OPT_STORE && c < CLI_OPT_FIRST_PRIVATE);
        if (common ? cli_common_opt(env, &a, c, argv) != 0 : priv(env, &o, c, optarg) != 0)
            return CLI_EXIT_USAGE;
    }
    if (a.help) {
        fputs(usage, stdout);
        return CLI_EXIT_OK;
    }
    if (argc - optind > 1)
        return cli_usage_error(env, "give the query as one argument (quote it), not %d",
                               argc - optind);
    if (!o.schema && argc - optind == 1 && !*argv[optind])
        return cli_usage_error(env, "empty query");
    char *q = NULL;
    if (!o.schema) {
        if (argc - optind == 1 && strcmp(argv[optind], "-") != 0)
            q = strdup(argv[optind]);
        else
            q = read_stdin();
        if (!q)
            return cli_fail(env, "cannot read the query (out of memory, or above %u bytes)",
                            QUERY_MAX);
    }
    struct q_store *s;
    if (!a.no_flush)
        cli_live_refresh(env);
    int rc = cli_open_store(env, &s);
    if (rc != CLI_EXIT_OK) {
        free(q);
        return rc;
    }
    struct sql_guard g = { 0 };
    struct sql_vtab *v = NULL;
    char why[SQL_GUARD_WHY_MAX];
    bool all_tables = false;
    double t0 = mono_ms();
    if (sql_guard_open(&g, &o.guard, why, sizeof why) < 0) {
        rc = cli_fail(env, "%s", why);
    } else if (sql_vtab_attach_lazy(g.db, s, "d9 sql", &v, why, sizeof why) < 0 ||
               ((all_tables = o.schema || reads_schema(q)) &&
                sql_vtab_attach_tables(g.db, v, why, sizeof why) < 0)) {
        rc = report_attach(env, why);
    } else if (sql_guard_lock(&g) < 0) {
        rc = cli_fail(env, "cannot install the read-only rules on the SQL connection");
    } else if (o.schema) {
        rc = print_schema(env, g.db);
    } else {
        uint64_t rows = 0;
        bool had_columns = false;
        rc = run_all(env, &g, v, all_tables, q, o.fmt, &rows, &had_columns);
        if (fflush(stdout) != 0 && rc == CLI_EXIT_OK)
            rc = cli_fail(env, "standard output: write error");
        if (rc == CLI_EXIT_OK && had_columns && rows == 0)
            fprintf(stderr, "d9 sql: no rows%s\n", q_store_unsealed_hint(s, 0));
        const struct q_scan_stats *st = sql_vtab_stats(v);
        if (st->bad_blocks || st->missing_segments)
            cli_warn(env, "%" PRIu64 " blocks failed validation and %" PRIu64 " segment files "
                     "could not be read: their records are missing from the result",
                     st->bad_blocks, st->missing_segments);
        if (o.stats)
            fprintf(stderr, "d9 sql: %" PRIu64 " rows, %" PRIu64 " blocks and %" PRIu64
                    " records read in %.1f ms\n", rows, st->blocks, st->records, mono_ms() - t0);
    }
    sql_guard_close(&g);
    sql_vtab_free(v);
    q_store_close(s);
    free(q);
    return rc;
}
