/*
 * pkg_hello.c — a traced program built the way a user builds one: against
 * an installed libd9agent found by pkg-config (test_install.sh, test_deb.sh),
 * as C and as C++. Not linked by the Makefile. Configures itself with
 * d9_init_with (its runtime name) and leaves the rest to DIAL9_*; records
 * 100 tasks of one poll each and, in C, one custom event.
 */
#include <d9.h>
#include <stdint.h>
#include <stdio.h>

#ifndef __cplusplus
D9_SCHEMA(hello_ev, "hello", D9_FIELD_U64("n"));
#endif

int main(void)
{
    d9_config cfg = D9_CONFIG_INIT;
    cfg.runtime_name = "hello";
    int rc = d9_init_with(&cfg);
    if (rc != 0) {
        fprintf(stderr, "pkg_hello: d9_init_with returned %d\n", rc);
        return 1;
    }
    d9_runtime rt = d9_runtime_default();
    for (uint64_t t = 1; t <= 100; t++) {
        d9_task_spawn(rt, t, D9_LOC());
        d9_poll_start(rt, 0, t, D9_LOC());
        d9_poll_end(rt, 0, t);
        d9_task_terminate(rt, t);
    }
#ifndef __cplusplus
    d9_emit(&hello_ev, D9_U64(42));
#endif
    d9_stats st;
    d9_get_stats(&st);
    printf("pkg_hello: traced into %s, lost %llu\n", d9_region_path(),
           (unsigned long long)st.lost);
    return 0;
}
