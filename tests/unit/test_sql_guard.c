/*
 * test_sql_guard.c — d9 sql's connection rules (collector/sql/sql_guard.c)
 * around sql_guard_trusted(): the caller's own SQL runs with the
 * authorizer and the deadline lifted, and both are back when it returns, so
 * a user's statement compiled after it is refused and timed as before.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <sqlite3.h>
#include <string.h>
#include "collector/sql/sql_guard.h"

/* enough virtual-machine steps to pass several progress checks */
#define LONG_QUERY "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c " \
                   "WHERE x < 200000) SELECT count(*) FROM c"

static struct sql_guard g;

static int open_locked(void **state)
{
    (void)state;
    struct sql_guard_cfg cfg = { 0 };
    char why[SQL_GUARD_WHY_MAX];
    if (sql_guard_open(&g, &cfg, why, sizeof why) < 0 || sql_guard_lock(&g) < 0)
        return -1;
    return 0;
}

static int close_guard(void **state)
{
    (void)state;
    sql_guard_close(&g);
    return 0;
}

/* rc of preparing and stepping sql to its end; why: the guard's reason */
static int run(const char *sql, char *why, size_t cap)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(g.db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK)
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            ;
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE)
        return SQLITE_OK;
    sql_guard_explain(&g, rc, why, cap);
    return rc;
}

static int create_main_table(void *arg)
{
    return sqlite3_exec(g.db, (const char *)arg, NULL, NULL, NULL) == SQLITE_OK ? 7 : -1;
}

static void a_locked_connection_refuses_a_table_on_main(void **state)
{
    (void)state;
    char why[SQL_GUARD_WHY_MAX];
    assert_int_not_equal(run("CREATE TABLE t(x)", why, sizeof why), SQLITE_OK);
    assert_non_null(strstr(why, "read-only"));
}

static void trusted_sql_runs_without_the_rules_and_they_come_back(void **state)
{
    (void)state;
    char why[SQL_GUARD_WHY_MAX];
    assert_int_equal(sql_guard_trusted(&g, create_main_table, "CREATE TABLE t(x)"), 7);
    assert_true(g.locked);
    assert_int_equal(run("SELECT count(*) FROM main.t", why, sizeof why), SQLITE_OK);
    assert_int_not_equal(run("CREATE TABLE u(x)", why, sizeof why), SQLITE_OK);
    assert_non_null(strstr(why, "read-only"));
    assert_int_not_equal(run("INSERT INTO t VALUES (1)", why, sizeof why), SQLITE_OK);
    assert_non_null(strstr(why, "read-only"));
}

static void trusted_returns_what_the_callers_sql_returned(void **state)
{
    (void)state;
    assert_int_equal(sql_guard_trusted(&g, create_main_table, "CREATE TABLE"), -1);
    assert_true(g.locked);
}

static int long_query(void *arg)
{
    (void)arg;
    char why[SQL_GUARD_WHY_MAX];
    return run(LONG_QUERY, why, sizeof why);
}

static void trusted_sql_is_not_cut_by_the_deadline_and_the_deadline_comes_back(void **state)
{
    (void)state;
    char why[SQL_GUARD_WHY_MAX];
    g.cfg.timeout_ns = 1;                       /* past by the first progress check */
    sql_guard_start(&g);
    assert_int_equal(sql_guard_trusted(&g, long_query, NULL), SQLITE_OK);
    assert_int_equal(run(LONG_QUERY, why, sizeof why), SQLITE_INTERRUPT);
    assert_non_null(strstr(why, "--timeout"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_locked_connection_refuses_a_table_on_main,
                                        open_locked, close_guard),
        cmocka_unit_test_setup_teardown(trusted_sql_runs_without_the_rules_and_they_come_back,
                                        open_locked, close_guard),
        cmocka_unit_test_setup_teardown(trusted_returns_what_the_callers_sql_returned,
                                        open_locked, close_guard),
        cmocka_unit_test_setup_teardown(
            trusted_sql_is_not_cut_by_the_deadline_and_the_deadline_comes_back, open_locked,
            close_guard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
