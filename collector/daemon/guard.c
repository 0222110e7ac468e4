/*
 * guard.c — the SIGBUS guard (see guard.h): the collector's one piece of
 * process-wide state and its one asynchronous signal handler.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include "collector/daemon/guard.h"

static sigjmp_buf *volatile g_guard_jb;
static const uint8_t *volatile g_guard_lo;
static const uint8_t *volatile g_guard_hi;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    sigjmp_buf *jb = g_guard_jb;
    const uint8_t *a = si ? (const uint8_t *)si->si_addr : NULL;
    if (jb && a >= g_guard_lo && a < g_guard_hi) {
        g_guard_jb = NULL;
        siglongjmp(*jb, 1);
    }
    /* not ours: a genuine bug; die with the default action */
    signal(sig, SIG_DFL);
    raise(sig);
}

int guard_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    /* NODEFER: siglongjmp with savemask 0 must not leave SIGBUS blocked */
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    return sigaction(SIGBUS, &sa, NULL) ? -errno : 0;
}

void guard_arm(sigjmp_buf *jb, const void *base, size_t size)
{
    g_guard_lo = base;
    g_guard_hi = (const uint8_t *)base + size;
    atomic_signal_fence(memory_order_seq_cst);
    g_guard_jb = jb;
    atomic_signal_fence(memory_order_seq_cst);
}

void guard_arm_any(sigjmp_buf *jb)
{
    g_guard_lo = (const uint8_t *)(uintptr_t)0;
    g_guard_hi = (const uint8_t *)UINTPTR_MAX;
    atomic_signal_fence(memory_order_seq_cst);
    g_guard_jb = jb;
    atomic_signal_fence(memory_order_seq_cst);
}

void guard_disarm(void)
{
    atomic_signal_fence(memory_order_seq_cst);
    g_guard_jb = NULL;
    atomic_signal_fence(memory_order_seq_cst);
}
