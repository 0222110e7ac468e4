/*
 * exitinfo.h — how the traced process ended, recorded in its region header
 * (d9_region_hdr.exit_status) so the collector can show exited(CODE) and
 * crashed(SIGNAL) even when it adopts the region after the process died.
 *
 * Called by api.c at d9_init (after the agent started). Installs:
 *   - an on_exit handler: exit(3) and a return from main record their
 *     status, then d9_shutdown runs (it replaces atexit(d9_shutdown));
 *   - for fatal signals whose disposition is still the default (SIGSEGV,
 *     SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS, SIGQUIT, SIGTERM,
 *     SIGINT, SIGHUP): a one-shot handler (SA_RESETHAND) that records the
 *     signal and raises it again, so the process dies of it exactly as
 *     before (core dump, wait status). A handler the application installs,
 *     before or after, takes precedence; SIGKILL cannot be seen.
 *
 * Must never change how the application ends; the signal handler is
 * async-signal-safe (one compare-and-swap on the mapped header, raise).
 */
#ifndef D9_AGENT_EXITINFO_H
#define D9_AGENT_EXITINFO_H

#include "agent/agent.h"

/* Install both for agent a (a process singleton). shutdown runs at exit
 * after the status is recorded. 0, or -errno when on_exit failed (the
 * caller then falls back to atexit). */
int ag_exitinfo_install(struct ag_agent *a, void (*shutdown)(void));

#endif /* D9_AGENT_EXITINFO_H */
