/*
 * exitinfo.c — exit status and fatal signal into the region header (see
 * exitinfo.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include "agent/exitinfo.h"

static struct ag_agent *g_a;
static void (*g_shutdown)(void);

static const int fatal_signals[] = {
    SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS,
    SIGQUIT, SIGTERM, SIGINT, SIGHUP,
};

static void on_exit_hook(int status, void *arg)
{
    (void)arg;
    ag_agent_set_exit(g_a, D9_EXIT_CODE | ((uint32_t)status & 0xffu));
    g_shutdown();
}

static void on_fatal(int sig)
{
    int saved = errno;
    ag_agent_set_exit(g_a, D9_EXIT_SIGNAL | ((uint32_t)sig & 0xffu));
    /* SA_RESETHAND restored the default action: die of the same signal */
    raise(sig);
    errno = saved;
}

int ag_exitinfo_install(struct ag_agent *a, void (*shutdown)(void))
{
    g_a = a;
    g_shutdown = shutdown;
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
        struct sigaction old;
        if (sigaction(fatal_signals[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
            (old.sa_flags & SA_SIGINFO))
            continue;           /* the application's choice stands */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal;
        sa.sa_flags = SA_RESETHAND | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(fatal_signals[i], &sa, NULL);
    }
    return on_exit(on_exit_hook, NULL) == 0 ? 0 : -ENOMEM;
}
