/*
 * uvwrap.h — libd9uv's callback wrapping: the registration wrappers (the
 * libuv entry points that take a callback) and the trampolines they pass
 * to libuv in place of the program's callbacks.
 *
 * Design: wrapping is per callback function, not per handle. For each kind
 * of callback (timer, read, write, close, ... one per C signature) there is
 * a fixed table of CBSLOT_N slots (cbslot.h) and as many compiled trampolines; the
 * k-th trampoline of a kind calls the function in slot k of that kind. A
 * registration wrapper finds (or claims, lock-free) the slot of the
 * program's function and passes trampoline k to libuv. So:
 *   - nothing is stored per handle or request: their data fields stay the
 *     program's, and a handle freed or reused inside its own callback (close
 *     callbacks, uv_close from a read callback, re-arming a timer from its
 *     callback) is never touched again: the trampoline reads only its own
 *     slot and keeps the handle's address as a number (the task id);
 *   - the per-callback path takes no lock, makes no syscall and allocates
 *     nothing: a thread-local read (uvloop_tls), the record calls, and one
 *     load of the slot's function;
 *   - slots are written once (the function by CAS, then loc and state) and
 *     never change, so a pool thread running a work trampoline reads a slot
 *     that was complete before uv_queue_work handed the request over (libuv's
 *     queue mutex orders the two); there is no table to resize;
 *   - a program has tens of distinct callbacks, not millions: when a kind's
 *     table is full the callback is passed to libuv unwrapped (untraced,
 *     counted in d9_uv_stats.callbacks_untraced), never refused.
 * libuv's own callbacks (it calls its entry points through the PLT too,
 * e.g. uv_async_init for the threadpool's completion handle) are
 * recognised by address (dladdr, once per function) and left unwrapped, as
 * are the trampolines themselves (uv_write forwards to uv_write2).
 *
 * Called by: libuv's callers (the wrappers), libuv (the trampolines).
 * Must never: read or write a handle's or request's fields (except
 * async->loop in uv_async_send, read before libuv is called), change a
 * return value or errno, call a callback twice or skip one.
 */
#ifndef D9_UV_UVWRAP_H
#define D9_UV_UVWRAP_H

#include "shm/d9_abi.h"

#define UVWRAP_SECTION     D9_TRAMP_SECTION /* the trampolines' text (shm/d9_abi.h): how a
                                            * trampoline is recognised, here and by readers */

#endif /* D9_UV_UVWRAP_H */
