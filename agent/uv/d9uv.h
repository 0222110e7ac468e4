/*
 * d9uv.h — libd9uv: trace libuv event loops with d9, without changing the
 * program's callbacks.
 *
 *   #include "d9uv.h"                 // includes d9.h and uv.h
 *   uv_loop_t *loop = uv_default_loop();
 *   d9_uv_trace(loop, "http");        // every callback of this loop is a poll
 *   uv_run(loop, UV_RUN_DEFAULT);
 *
 * d9_uv_trace starts d9 (d9_init, from the DIAL9_* environment) when the
 * program has not; a program with its own settings calls d9_init_with
 * first. Build with pkg-config: cc prog.c $(pkg-config --cflags --libs d9uv),
 * which links -ld9uv before -ld9agent and -luv: libd9uv
 * defines the libuv entry points that register callbacks and forwards them
 * to libuv (dlsym(RTLD_NEXT)), so it must come first in the lookup order.
 * libd9preload.so is the same library for programs that cannot be rebuilt:
 * LD_PRELOAD=libd9preload.so program calls d9_init and traces every loop at
 * its first uv_run.
 *
 * The model (how libuv maps onto d9):
 *   - a traced loop is a worker of a runtime (the name given, or the default
 *     runtime: DIAL9_RUNTIME_NAME or the program's name). Each loop is its
 *     own worker; loops of one runtime run by different threads are
 *     different workers of that runtime;
 *   - every callback libuv invokes for a handle or a request is one poll:
 *     task id = the handle's or request's address, location = the
 *     callback's code address (a code location: named out of process);
 *   - the time the loop blocks in its backend poll (epoll_wait with a
 *     non-zero timeout) is a park/unpark, with CPU time and run-queue wait
 *     as for d9_worker_park;
 *   - uv_async_send is a wake of the async handle, aimed at its loop's worker;
 *   - uv_queue_work is a spawn on the runtime "uv-threadpool"; its work
 *     callback is a poll there (one worker per pool thread), followed by the
 *     task's terminate; the after-work callback is a poll of the loop;
 *   - at each return of the backend poll, the loop's ready queue (events
 *     returned plus the loop's pending queue) is a queue depth of its
 *     worker, recorded when it changes.
 *
 * Guarantees: the program's behaviour does not change. Return values and
 * errno are those of libuv; every callback is called exactly once per call
 * libuv makes, with the same arguments; nothing is stored in a handle or a
 * request (their data fields belong to the program) and no handle is added
 * to a loop, so uv_run, uv_loop_alive, uv_walk and uv_loop_close see the
 * loop as it is. With tracing off every wrapper forwards unchanged.
 */
#ifndef D9_UV_D9UV_H
#define D9_UV_D9UV_H

#include <stdint.h>
#include <uv.h>
#include "d9.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Trace loop as a worker of the runtime name (NULL: the default runtime).
 * Call it on the loop's thread, before or between uv_run calls. When d9 is
 * not started yet it calls d9_init first (the DIAL9_* environment). Tracing
 * an already traced loop renames nothing and returns 0. 0; D9_OFF when
 * tracing is off (by configuration, or after d9_shutdown: the loop runs
 * untraced); d9_init's negative errno when d9 could not start (d9_init
 * said why on stderr); -EINVAL (NULL loop or bad name); -ENOSPC
 * (D9_UV_LOOPS_MAX loops traced at once). */
int d9_uv_trace(uv_loop_t *loop, const char *name);

/* Stop tracing loop (its callbacks keep running, unrecorded). A loop that
 * libd9preload would trace automatically stays untraced. 0 or -ENOENT. */
int d9_uv_untrace(uv_loop_t *loop);

/* The worker id of a traced loop, or -ENOENT. */
int d9_uv_worker(const uv_loop_t *loop);

#define D9_UV_LOOPS_MAX 256u            /* loops traced at the same time */

struct d9_uv_stats {
    uint64_t loops_traced;              /* loops ever traced */
    uint64_t callbacks;                 /* distinct callback functions wrapped */
    uint64_t callbacks_internal;        /* libuv's own callbacks, left unwrapped */
    uint64_t callbacks_untraced;        /* registrations left unwrapped: slot table full */
};
void d9_uv_get_stats(struct d9_uv_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* D9_UV_D9UV_H */
