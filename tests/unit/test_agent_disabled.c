/*
 * test_agent_disabled.c — compiled with D9_DISABLE: every function of
 * agent/d9.h is an inline stub that says "off" (D9_OFF, id 0, NULL, zeros),
 * so a program built this way records nothing and creates no region even
 * with tracing enabled at run time, and needs nothing linked
 * (tests/integration/test_api_compile.sh links such a program with libc alone).
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
    assert_int_equal(d9_init(), D9_OFF);     /* on at run time, off at compile time */
    assert_false(d9_enabled());
    d9_runtime rt = d9_runtime_default();
    assert_int_equal(rt.id, 0);
    assert_int_equal(d9_runtime_register("x", &rt), D9_OFF);
    assert_int_equal(rt.id, 0);
    assert_int_equal(d9_loc_register("f.c", 1, "f"), 0);
    rt.id = 1;                               /* even with an id: nothing is recorded */
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
    assert_null(d9_region_path());
    char cmd[128];                           /* and no region file was created */
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", dir);
    assert_int_equal(system(cmd), 0);
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
