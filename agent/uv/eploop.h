/*
 * eploop.h — any epoll loop as a d9 worker (DIAL9_LOOP=epoll): the loops
 * of redis, nginx, haproxy or a program's own, traced without knowing
 * their code.
 *
 * The model. A thread that waits in epoll_wait (epoll_pwait, epoll_pwait2)
 * and is not inside a traced libuv or libevent loop runs an epoll loop:
 *   - the loop is a worker of the default runtime (its id assigned at the
 *     thread's first traced wait, from loopcfg_worker_next);
 *   - the time between the return of one wait and the start of the next
 *     is one poll: one iteration of the loop. Its task id is the iteration
 *     (EPLOOP_TASK_TAG | worker << EPLOOP_TASK_SHIFT | its number on the
 *     thread, from 1: 2^62 and up, never a pointer another kind's task
 *     could be), unique in the process, so `d9 flame --task ID` is the CPU
 *     profile of exactly that iteration; its location is the place that
 *     called epoll_wait (the return address, a code location named out of
 *     process: "function (binary+0x...)", or "binary+0x..." where the
 *     binary exports no symbol there);
 *   - the wait itself is a park/unpark (with CPU time and run-queue wait,
 *     as d9_worker_park); a wait with a zero timeout is a peek: no park;
 *   - the number of ready events a wait returned is the worker's queue
 *     depth, recorded when it changes (the depth in force when an
 *     iteration starts is its number of ready events).
 * So the longest polls of such a program are its longest iterations, and
 * what ran in them is in the CPU samples taken on the thread between the
 * poll's start and end.
 *
 * What it cannot see: which callback or request inside an iteration took
 * the time (the program's dispatch is its own code: the samples say), the
 * wake-ups between threads (a write to an eventfd or a pipe is not a d9
 * wake), work a thread does before its first wait. An iteration still
 * running when the process exits is ended by an exit handler on the
 * exiting thread; one cut by a fatal signal or a thread that exits inside
 * it stays open ("unfinished" in d9 top-polls).
 *
 * Which waits. A call site is traced unless it lies in libd9* or libzmq
 * (the agent's own threads), in libuv while "uv" is traced, or in
 * libevent while "event" is traced (those loops are traced by their own
 * kind: each wait counted once): decided once per call site (dladdr) and
 * kept in a table of CBSLOT_N sites (more sites: untraced, counted).
 *
 * Called by: epollwrap.c around every epoll wait of a thread outside the
 * other kinds' loops. Must never: lock, allocate or make a syscall per
 * wait (a call site's first wait and a thread's first traced wait may:
 * they start the agent and register the location), or change errno.
 */
#ifndef D9_UV_EPLOOP_H
#define D9_UV_EPLOOP_H

#include <stdint.h>
#include "agent/d9.h"

#pragma GCC visibility push(hidden)

#define EPLOOP_TASK_TAG   (1ull << 62)  /* set in every iteration's task id: above any pointer */
#define EPLOOP_TASK_SHIFT 40u           /* iteration task: TAG | worker << this | number */

struct eploop_wait {
    d9_runtime rt;
    uint16_t worker;
    int parked;
};

/* Before a wait made from site (the caller's return address) with a zero
 * (peek) or non-zero timeout: 1 when it is an epoll loop's wait; the
 * iteration that ran up to here has ended and the park is recorded. */
int eploop_begin(struct eploop_wait *w, uintptr_t site, int peek);
/* After it: the unpark, the depth (n ready events, when changed), and the
 * next iteration's start. */
void eploop_end(struct eploop_wait *w, int n);

struct eploop_stats {
    uint64_t threads;                   /* threads traced as epoll loops */
    uint64_t sites;                     /* call sites traced */
    uint64_t sites_skipped;             /* call sites left alone (libzmq, libd9*, ...) */
    uint64_t sites_untraced;            /* waits at sites not traced: the table was full */
};
void eploop_get_stats(struct eploop_stats *out);

#pragma GCC visibility pop

#endif /* D9_UV_EPLOOP_H */
