/*
 * uvloop.h — libd9uv's loops: which loops are traced (a fixed table), the
 * calling thread's traced loop (thread-local), the park/unpark around the
 * backend poll and the uv-threadpool runtime.
 *
 * A loop is traced by d9_uv_trace, or by libd9preload at its first uv_run
 * (loopcfg_set_auto with LOOPCFG_UV). The uv_run wrapper makes the loop the thread's current
 * one for the duration of the call (restoring the previous one, so a
 * uv_run nested in a callback of another loop is attributed right). libuv
 * runs every callback of a loop inside uv_run on the loop's thread, so a
 * trampoline (uvwrap.c) finds its runtime and worker in uvloop_tls without
 * a lookup and without reading the handle.
 *
 * Park/unpark: the epoll wrappers (epollwrap.c) record a park and an
 * unpark around the call (uvloop_backend_begin/end) when it is the current
 * loop's backend poll
 * (uv_backend_fd, read at every uv_run: uv_loop_fork replaces it) with a
 * non-zero timeout. No handle is added to the loop for this, so the
 * program's view of its loop (uv_walk, uv_loop_alive, uv_run's and
 * uv_loop_close's results) is unchanged.
 *
 * Table: D9_UV_LOOPS_MAX entries, claimed under a mutex (trace, untrace,
 * uv_loop_close: slow paths) and read without one (uv_run, uv_async_send
 * from any thread): an entry's fields are atomics written before the
 * release-store of its loop pointer, so a reader that acquire-loads the
 * pointer sees them. An entry freed by uv_loop_close may be reused for
 * another loop at once; a concurrent reader then attributes one wake to
 * the new loop's worker at worst, and never reads freed memory.
 *
 * Called by: the uv_run / uv_loop_close wrappers (here), epollwrap.c, uvwrap.c.
 * Must never: allocate, lock or make a syscall on the per-callback path
 * (uvloop_tls reads only), touch a handle, or add one to a loop.
 */
#ifndef D9_UV_UVLOOP_H
#define D9_UV_UVLOOP_H

#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>
#include "agent/d9.h"

#pragma GCC visibility push(hidden)

#define UVLOOP_POOL_RUNTIME  "uv-threadpool"
#define UVLOOP_PENDING_MAX   4096u      /* the pending queue is counted up to this */
/* Stack made present under a traced loop's uv_run, once per thread: the
 * collector's DWARF stack copy (perf) stops at the first page never touched,
 * and libuv's uv__io_poll keeps a 12 KiB array on the stack that epoll
 * fills only at its start: without this, no sample in a callback unwinds
 * past uv__io_poll to uv_run. */
#define UVLOOP_STACK_PREFAULT (24u * 1024u)
#define UVLOOP_STACK_SPARE    (64u * 1024u)     /* left below it, or no prefault */

enum uvloop_state { UVLOOP_FREE = 0, UVLOOP_TRACED = 1, UVLOOP_UNTRACED = 2 };

struct uvloop_ent {
    _Atomic(uv_loop_t *) loop;          /* NULL = free; release-stored last */
    _Atomic uint32_t state;             /* enum uvloop_state */
    _Atomic uint16_t rt;                /* d9 runtime id */
    _Atomic uint16_t worker;
    uint64_t last_depth;                /* loop thread only: the last queue depth recorded */
};

/* The calling thread's view. */
struct uvloop_tls {
    struct uvloop_ent *cur;             /* the loop this thread is running (uv_run), or NULL */
    int cur_fd;                         /* its backend fd */
    uint64_t task;                      /* the poll running on this thread (0: none) */
    uint16_t pool_worker;               /* uv-threadpool worker id + 1, 0 = none yet */
    uint8_t stack_present;              /* UVLOOP_STACK_PREFAULT touched (uv_run) */

} __attribute__((aligned(32)));   /* one cache line, whatever the TLS layout */

extern __thread struct uvloop_tls uvloop_tls __attribute__((tls_model("initial-exec")));

/* The first call of any wrapper: in auto mode, d9_init once (loopcfg.h). */
void uvloop_ensure_init(void);

/* The traced entry of loop, or NULL (lock-free scan, any thread). */
struct uvloop_ent *uvloop_find(const uv_loop_t *loop);

/* The runtime of uv_queue_work's work: registered on first use. id 0 when off. */
d9_runtime uvloop_pool_runtime(void);
/* The calling pool thread's worker id in it (assigned on its first work). */
uint16_t uvloop_pool_worker(void);
/* Loops ever traced (d9_uv_get_stats). */
uint64_t uvloop_loops_traced(void);

/* Around an epoll wait: begin returns 1 when it is the backend poll of the
 * loop this thread is running (traced), and then records the park (unless
 * timeout is 0: a peek); end records the unpark and the ready queue's depth
 * (n events plus the loop's pending queue) when it changed. Neither
 * changes errno. */
struct uvloop_wait {
    struct uvloop_ent *e;
    d9_runtime rt;
    uint16_t worker;
    int parked;
};
int uvloop_backend_begin(struct uvloop_wait *b, int epfd, int timeout);
void uvloop_backend_end(struct uvloop_wait *b, int n);

#pragma GCC visibility pop

#endif /* D9_UV_UVLOOP_H */
