/*
 * preload.c — libd9preload.so: LD_PRELOAD=libd9preload.so program traces
 * every libuv loop of an unmodified program.
 *
 * The library is libd9uv's wrappers (uvwrap.c, uvloop.c) plus this file,
 * which turns on auto mode at load: every loop is traced at its first
 * uv_run as a worker of the default runtime (DIAL9_RUNTIME_NAME, else the
 * program's name). The agent starts only in a program that uses libuv:
 *   - libuv linked by the program (already loaded when this constructor
 *     runs): d9_init here, before main, while the process has one thread;
 *   - libuv dlopen'ed later: d9_init at the first libuv call the wrappers see;
 *   - no libuv: nothing starts; no region, no thread, nothing changes.
 * With no collector the agent still records into its region; with a bad
 * DIAL9_* value d9_init logs one line and the wrappers forward unchanged.
 *
 * The in-process profiler fallback (SIGPROF timers, agent/sampler.h) would
 * deliver signals the program never asked for: unless DIAL9_SAMPLER is set,
 * it is off here (d9_init_with, sampler = "off"; the collector's perf
 * sampling is unaffected). The program's environment is not touched.
 *
 * Called by: the dynamic loader (constructor). Must never: fail, print
 * (except d9_init's one line on a bad setting) or change errno.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include "uvloop.h"

#define PRELOAD_LIBUV        "libuv.so.1"
#define PRELOAD_SAMPLER_VAR  "DIAL9_SAMPLER"

__attribute__((constructor)) static void preload_start(void)
{
    int err = errno;
    const char *v = getenv(PRELOAD_SAMPLER_VAR);
    uvloop_set_auto(1, v && *v ? NULL : "off");
    void *uv = dlopen(PRELOAD_LIBUV, RTLD_LAZY | RTLD_NOLOAD);
    if (uv) {
        dlclose(uv);
        uvloop_ensure_init();
    }
    errno = err;
}
