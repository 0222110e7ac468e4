/*
 * preload.c — libd9preload.so: LD_PRELOAD=libd9preload.so program traces
 * the event loops of an unmodified program: libuv loops and libevent
 * bases (callbacks as polls) and, with DIAL9_LOOP=epoll, any epoll loop
 * (iterations as polls). One library serves programs with any of them, or
 * several.
 *
 * The library is the wrappers (uvwrap.c, uvloop.c, evwrap.c, evloop.c,
 * eploop.c, epollwrap.c) plus this file, which reads DIAL9_LOOP (the loop
 * kinds to trace, loopcfg.h) and turns on auto mode at load: every loop of
 * a traced kind is traced at its first run as a worker of the default
 * runtime (DIAL9_RUNTIME_NAME, else the program's name). The agent starts
 * only in a program that has such a loop:
 *   - libuv / libevent linked by the program (already loaded when this
 *     constructor runs): d9_init here, before main, while the process has
 *     one thread;
 *   - loaded later (dlopen), or an epoll loop: d9_init at the first
 *     wrapped call that needs it (an epoll loop's first wait);
 *   - none: nothing starts; no region, no thread, nothing changes.
 * With no collector the agent still records into its region; with a bad
 * DIAL9_* value (DIAL9_LOOP included) one line on stderr says so and the
 * wrappers forward unchanged.
 *
 * With DIAL9_LOG set (not empty, not "0"), a program that ends (exit) with
 * no loop of a traced kind ever run says so in one line on stderr
 * ("preloaded, no supported loop found"): a program that links libuv
 * statically (Node.js builds that bundle it) is otherwise silently not
 * traced. With a collector listening, it also leaves a minimal region
 * flagged D9_REGION_F_NOLOOP (noloop.c), so `d9 ps` lists the process as
 * "preloaded, no supported loop found". Only then: a program whose loop is
 * traced, or one run without DIAL9_LOG, pays nothing (an untraced program
 * makes no region, no index row).
 *
 * The in-process profiler fallback (SIGPROF timers, agent/sampler.h) would
 * deliver signals the program never asked for: unless DIAL9_SAMPLER is set,
 * it is off here (d9_init_with, sampler = "off"; the collector's perf
 * sampling is unaffected). The program's environment is not touched.
 *
 * Called by: the dynamic loader (constructor, destructor). Must never:
 * fail, print (except one line on a bad setting, and the DIAL9_LOG line)
 * or change errno.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/env.h"
#include "loopcfg.h"
#include "noloop.h"

#define PRELOAD_SAMPLER_VAR  "DIAL9_SAMPLER"

static unsigned g_kinds;        /* DIAL9_LOOP as parsed at load */

/* The shared objects whose presence at start means "this program runs such loops". */
static const struct {
    unsigned kind;
    const char *soname;
} g_libs[] = {
    { LOOPCFG_UV, "libuv.so.1" },
    { LOOPCFG_EVENT, "libevent_core-2.1.so.7" },
    { LOOPCFG_EVENT, "libevent-2.1.so.7" },
};

static int loaded(const char *soname)
{
    void *h = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

__attribute__((constructor)) static void preload_start(void)
{
    int err = errno;
    unsigned kinds = 0;
    char msg[LOOPCFG_ERR_MAX];
    if (loopcfg_parse(secure_getenv(LOOPCFG_VAR), &kinds, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s\n", msg);
        kinds = 0;
    }
    const char *v = secure_getenv(PRELOAD_SAMPLER_VAR);
    loopcfg_set_auto(kinds, v && *v ? NULL : "off");
    g_kinds = kinds;
    for (size_t i = 0; i < sizeof g_libs / sizeof g_libs[0]; i++)
        if ((kinds & g_libs[i].kind) && loaded(g_libs[i].soname)) {
            loopcfg_ensure_init();
            break;
        }
    errno = err;
}

/* DIAL9_LOG: the program ran no loop the shim traces; say so once. */
__attribute__((destructor)) static void preload_end(void)
{
    int err = errno;
    if (!g_kinds || !ag_env_log_on(secure_getenv(AG_LOG_VAR)) || loopcfg_started()) {
        errno = err;
        return;
    }
    fprintf(stderr, "d9: %s: preloaded, no supported loop found (%s); nothing traced\n",
                program_invocation_short_name,
                g_kinds & LOOPCFG_EPOLL ? "no libuv.so.1 or libevent loop and no epoll wait"
                                        : "no libuv.so.1 or libevent loop ran; "
                                          "DIAL9_LOOP=epoll traces an epoll loop");
    noloop_record();
    errno = err;
}
