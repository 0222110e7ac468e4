/*
 * zmqlib.c — libzmq loaded with dlopen on the control channel's first use
 * (see zmqlib.h).
 *
 * The one-time load runs under pthread_once; its result (the table and
 * g_state) is written before pthread_once returns to any caller, and
 * pthread_once orders those writes before every later caller's reads, so
 * the table needs no lock or atomic of its own.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/env.h"
#include "agent/zmqlib.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static struct ag_zmqlib g_lib;
static int g_state = 1;         /* 1 not loaded yet, 0 loaded, <0 -errno of the load */

/* Each table entry beside the symbol it comes from. */
#define AG_ZMQLIB_SYM(field, sym) { offsetof(struct ag_zmqlib, field), sym }
static const struct {
    size_t off;
    const char *sym;
} g_syms[] = {
    AG_ZMQLIB_SYM(ctx_new, "zmq_ctx_new"),
    AG_ZMQLIB_SYM(ctx_set, "zmq_ctx_set"),
    AG_ZMQLIB_SYM(ctx_term, "zmq_ctx_term"),
    AG_ZMQLIB_SYM(socket, "zmq_socket"),
    AG_ZMQLIB_SYM(setsockopt, "zmq_setsockopt"),
    AG_ZMQLIB_SYM(connect, "zmq_connect"),
    AG_ZMQLIB_SYM(send, "zmq_send"),
    AG_ZMQLIB_SYM(close, "zmq_close"),
};
_Static_assert(sizeof g_syms / sizeof g_syms[0] * sizeof(void (*)(void)) == sizeof(struct ag_zmqlib),
               "every function of struct ag_zmqlib is resolved");

int ag_zmqlib_load(const char *file, struct ag_zmqlib *out, void **handle,
                   char *why, size_t whycap)
{
    *handle = NULL;
    memset(out, 0, sizeof *out);
    dlerror();
    void *h = dlopen(file, RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, whycap, "cannot load %s: %s", file, e ? e : "unknown error");
        return -ENOENT;
    }
    for (size_t i = 0; i < sizeof g_syms / sizeof g_syms[0]; i++) {
        dlerror();
        void *f = dlsym(h, g_syms[i].sym);
        if (!f) {
            snprintf(why, whycap, "%s has no %s", file, g_syms[i].sym);
            memset(out, 0, sizeof *out);
            dlclose(h);
            return -ENOSYS;
        }
        /* POSIX: a function pointer converts from dlsym's void * */
        memcpy((char *)out + g_syms[i].off, &f, sizeof f);
    }
    *handle = h;
    return 0;
}

static void load_once(void)
{
    const char *file = secure_getenv(AG_ZMQLIB_ENV);
    if (!file || !*file)
        file = AG_ZMQLIB_SONAME;
    char why[AG_ZMQLIB_WHY_MAX];
    void *h;
    g_state = ag_zmqlib_load(file, &g_lib, &h, why, sizeof why);
    if (g_state != 0 && ag_env_log_on(secure_getenv(AG_LOG_VAR)))
        fprintf(stderr, "d9: %s: %s; tracing continues without the control channel "
                "(no hello to the collector; it finds the region by scanning)\n",
                program_invocation_short_name, why);
}

const struct ag_zmqlib *ag_zmqlib_get(void)
{
    pthread_once(&g_once, load_once);
    return g_state == 0 ? &g_lib : NULL;
}

int ag_zmqlib_state(void)
{
    return g_state;
}
