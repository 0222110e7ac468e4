/*
 * epollwrap.h — the shim's epoll_wait, epoll_pwait and epoll_pwait2: the
 * one place every epoll wait of the program passes, handed to the loop
 * kind it belongs to.
 *
 * A wait is, in this order (the first that claims it; each wait counted
 * by exactly one kind):
 *   1. the backend poll of the libuv loop the thread is running
 *      (uvloop_backend_begin: the loop's backend fd);
 *   2. the backend wait of the libevent base the thread is running, made
 *      outside its callbacks (evloop_backend_begin);
 *   3. with "epoll" in DIAL9_LOOP, a wait of a thread in no loop of 1 or 2:
 *      one iteration of an epoll loop ends, the next starts after it
 *      (eploop_begin/end);
 *   4. anything else: forwarded untouched.
 * The wrappers return what the real call returned, with its errno: the
 * record functions and the kinds' hooks never change errno.
 *
 * The wrappers are in the d9_tramp section (loopcfg.h), with the
 * trampolines.
 *
 * Called by: the program, libuv, libevent, any library (the dynamic
 * linker resolves epoll_wait to the shim first). Must never: lock,
 * allocate or make a syscall besides the real wait (the hooks' first-use
 * paths aside), or change the wait's result or errno.
 */
#ifndef D9_UV_EPOLLWRAP_H
#define D9_UV_EPOLLWRAP_H

/* (no functions of its own: it defines the libc entry points above) */

#endif /* D9_UV_EPOLLWRAP_H */
