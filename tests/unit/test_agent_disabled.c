/*
 * test_agent_disabled.c — compiled with D9_DISABLE: every record function of
 * agent/d9.h is an empty inline function, so a program built this way
 * records nothing even with tracing enabled at run time (no ring is ever
 * claimed), while the rest of the API still links and works.
 */
#define D9_DISABLE 1
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agent/d9.h"

static char dir[64];

D9_SCHEMA(sch, "disabled", D9_FIELD_U64("n"), D9_FIELD_STR("s"));

static void test_record_calls_compile_to_nothing(void **state)
{
    (void)state;
    assert_int_equal(d9_init(), 0);          /* tracing is on at run time */
    assert_true(d9_enabled());
    d9_runtime rt = d9_runtime_default();
    assert_int_equal(rt.id, 1);
    for (int i = 0; i < 1000; i++) {
        d9_poll_start(rt, 0, (uint64_t)i, 0);
        d9_poll_end(rt, 0, (uint64_t)i);
        d9_wake(rt, 1, 2, 3);
        d9_worker_park(rt, 0);
        d9_worker_unpark(rt, 0);
        d9_task_spawn(rt, 1, 0);
        d9_task_terminate(rt, 1);
        d9_queue_depth(rt, D9_WORKER_NONE_ID, 5);
        d9_emit(&sch, D9_U64(1), D9_STR("x"));
    }
    d9_stats st;
    d9_get_stats(&st);
    assert_int_equal(st.rings_in_use, 0);    /* no event reached the library */
    assert_int_equal(st.lost, 0);
    assert_int_equal(sch.id, 0);             /* the schema was never published */
    d9_shutdown();
}

int main(void)
{
    strcpy(dir, "/tmp/d9-test-disabled.XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    setenv("DIAL9_SHM_DIR", dir, 1);
    setenv("DIAL9_ENABLED", "1", 1);
    setenv("DIAL9_SAMPLER", "off", 1);
    char ep[128];
    snprintf(ep, sizeof ep, "ipc://%s/none.sock", dir);
    setenv("DIAL9_COLLECTOR", ep, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_calls_compile_to_nothing),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        rc = 1;
    return rc;
}
