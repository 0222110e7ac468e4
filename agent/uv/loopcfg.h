/*
 * loopcfg.h — what the shim traces and the state its loop kinds share:
 * the kinds of loop traced without code change (DIAL9_LOOP), starting the
 * agent once, and the worker ids of the default runtime.
 *
 * Loop kinds. libd9preload.so traces, in an unmodified program, the loops
 * of the kinds DIAL9_LOOP lists (comma-separated; unset or empty: the
 * default, "uv,event"):
 *   uv     every libuv loop at its first uv_run (uvloop.h), callbacks as polls;
 *   event  every libevent event_base at its first event_base_loop (evloop.h),
 *          callbacks as polls;
 *   epoll  every thread that waits in epoll_wait / epoll_pwait / epoll_pwait2
 *          outside the loops above: one poll per loop iteration (eploop.h).
 * "all" is the three; "none" traces nothing (the agent does not start). A
 * kind left out is not traced as that kind: its threads' epoll waits are
 * then iterations of an epoll loop when "epoll" is listed (so a libevent
 * program under DIAL9_LOOP=epoll shows its loop iterations instead of its
 * callbacks), and nothing otherwise. Each wait is counted by exactly one
 * kind. libd9uv.so (linked, no preload) traces the loops the program
 * names with d9_uv_trace and nothing automatically.
 *
 * Workers. Every loop of every kind is a worker of the default runtime
 * (DIAL9_RUNTIME_NAME, else the program's name) unless d9_uv_trace names
 * another: the ids come from one counter, so two loops never share one.
 *
 * Called by: preload.c (set_auto), the wrappers (ensure_init, auto), the
 * loop tables (worker_next). Must never: lock, allocate or make a syscall
 * after the first call of ensure_init; change errno.
 */
#ifndef D9_UV_LOOPCFG_H
#define D9_UV_LOOPCFG_H

#include <stdint.h>

#pragma GCC visibility push(hidden)

#define LOOPCFG_VAR        "DIAL9_LOOP"
#define LOOPCFG_UV         1u
#define LOOPCFG_EVENT      2u
#define LOOPCFG_EPOLL      4u
#define LOOPCFG_ALL        (LOOPCFG_UV | LOOPCFG_EVENT | LOOPCFG_EPOLL)
#define LOOPCFG_DEFAULT    (LOOPCFG_UV | LOOPCFG_EVENT)
#define LOOPCFG_ERR_MAX    160u         /* a parse error's message, NUL included */

/* The text section of the shim's trampolines (a compiled stub that calls
 * the program's callback) and of the wrappers that stay on the stack while
 * the program's code runs (event_base_loop, the epoll waits): one address
 * range, so that a function pointer is known to be the shim's own
 * (evwrap.c never wraps a trampoline twice) and a stack frame inside it is
 * known to be the shim's. The linker defines __start_d9_tramp /
 * __stop_d9_tramp. */
#define LOOPCFG_TRAMP_SECTION "d9_tramp"
#define LOOPCFG_TRAMP __attribute__((section(LOOPCFG_TRAMP_SECTION), noinline, used))

/* Parse a DIAL9_LOOP value into kinds (LOOPCFG_* bits). NULL or "" is the
 * default. 0, or -EINVAL with a one-line message in err (the value is
 * untrusted: it is quoted cut and escaped). Pure. */
int loopcfg_parse(const char *value, unsigned *kinds, char *err, unsigned errlen);

/* libd9preload: trace the loops of these kinds automatically and start the
 * agent (d9_init_with, in-process sampler mode sampler; NULL: DIAL9_SAMPLER
 * decides) at the first wrapped call that needs it. */
void loopcfg_set_auto(unsigned kinds, const char *sampler);

/* The kinds traced automatically (0 in libd9uv.so without the preload). */
unsigned loopcfg_auto(void);

/* In auto mode, start the agent once (thread-safe; cheap after the first
 * call). errno is preserved. */
void loopcfg_ensure_init(void);

/* 1 once auto mode started the agent (a loop of a traced kind ran). */
int loopcfg_started(void);
/* The next worker id of the default runtime's loops; D9_WORKER_NONE_ID
 * once they are used up. Lock-free. */
uint16_t loopcfg_worker_next(void);

#pragma GCC visibility pop

#endif /* D9_UV_LOOPCFG_H */
