/*
 * zmqlib.h — libzmq for the agent's control channel, loaded on first use.
 *
 * libd9agent (and the preload shim over it) links no libzmq: a program
 * that loads the agent without ever opening the control channel (no
 * supported loop under the shim, DIAL9_COLLECTOR=none, d9 off, or no
 * collector listening at an ipc:// DIAL9_COLLECTOR while it runs: the
 * housekeeping thread opens the channel only once one is there) never maps
 * libzmq nor its dependencies. ag_zmqlib_get(), called by control.c when
 * the channel opens, dlopen()s libzmq once per process (RTLD_LAZY |
 * RTLD_LOCAL: its symbols stay out of the program's namespace) and
 * resolves the functions control.c calls into a table.
 *
 * libzmq absent, or lacking a function: ag_zmqlib_get() returns NULL, every
 * time, and the agent records without a control channel (no hello, no
 * goodbye; a collector still finds the region by scanning its directory).
 * With DIAL9_LOG set, one line on stderr says why, once.
 *
 * DIAL9_ZMQ_LIB, when set and not empty, names the file to dlopen instead of
 * AG_ZMQLIB_SONAME (a libzmq outside the loader's path; tests name a missing
 * file to run the agent as on a host without libzmq).
 *
 * Called by: control.c (ag_control_open, on the housekeeping thread) and the
 * unit tests. Thread-safe: the first call loads under pthread_once; later
 * calls read the finished table. Must never be called on a record path (it
 * may dlopen, allocate and take the loader's lock), never abort, never
 * print except the one DIAL9_LOG line.
 */
#ifndef D9_AGENT_ZMQLIB_H
#define D9_AGENT_ZMQLIB_H

#include <stddef.h>

#define AG_ZMQLIB_SONAME  "libzmq.so.5"    /* libzmq 4.x, Debian's libzmq5 */
#define AG_ZMQLIB_ENV     "DIAL9_ZMQ_LIB"  /* another file to load instead */
#define AG_ZMQLIB_WHY_MAX 256u             /* room for the reason a load failed */

/* The libzmq functions the control channel calls, as zmq.h declares them. */
struct ag_zmqlib {
    void *(*ctx_new)(void);
    int (*ctx_set)(void *ctx, int option, int value);
    int (*ctx_term)(void *ctx);
    void *(*socket)(void *ctx, int type);
    int (*setsockopt)(void *s, int option, const void *value, size_t len);
    int (*connect)(void *s, const char *endpoint);
    int (*send)(void *s, const void *buf, size_t len, int flags);
    int (*close)(void *s);
};

/* Load file (dlopen RTLD_LAZY | RTLD_LOCAL) and resolve every function of
 * struct ag_zmqlib into *out. On success *handle is the dlopen handle (never
 * closed by the agent: libzmq's threads may outlive a socket). Returns 0,
 * -ENOENT (file not loadable) or -ENOSYS (a function missing; the handle is
 * closed), with why[] holding one line of reason (dlerror's text). Touches
 * no global state of this module: the unit tests call it with any file. */
int ag_zmqlib_load(const char *file, struct ag_zmqlib *out, void **handle,
                   char *why, size_t whycap);

/* The process's table: loaded at the first call (AG_ZMQLIB_SONAME, or the file
 * DIAL9_ZMQ_LIB names), the same pointer at every later call, or NULL when
 * the load failed (then every later call returns NULL too). */
const struct ag_zmqlib *ag_zmqlib_get(void);

/* 0 once ag_zmqlib_get() loaded libzmq, the load's -errno after it failed,
 * 1 before any call. For tests and diagnostics. */
int ag_zmqlib_state(void);

#endif /* D9_AGENT_ZMQLIB_H */
