/*
 * uvwrap.c — callback slots, trampolines and the registration wrappers
 * (see uvwrap.h for the design).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <uv.h>
#include "agent/d9.h"
#include "cbslot.h"
#include "d9uv.h"
#include "uvloop.h"
#include "uvreal.h"
#include "uvwrap.h"

#define UVWRAP_EXPORT __attribute__((visibility("default")))
#define UVWRAP_TEXT   __attribute__((section(UVWRAP_SECTION), noinline, used))
#define UVWRAP_UNPAREN(...) __VA_ARGS__
#define UVWRAP_FIRST(x, ...) x

/* Section bounds, defined by the linker: the names spell D9_TRAMP_SECTION. */
extern const char __start_d9_tramp[] __attribute__((visibility("hidden")));
extern const char __stop_d9_tramp[] __attribute__((visibility("hidden")));

enum uvwrap_mode { UVWRAP_LOOP = 0, UVWRAP_POOL = 1 };

static _Atomic uint64_t g_callbacks, g_internal, g_untraced;

/* ---- slots (cbslot.h: one table per kind, key = the program's function) ------ */

static int is_trampoline(uintptr_t fn)
{
    return fn >= (uintptr_t)__start_d9_tramp && fn < (uintptr_t)__stop_d9_tramp;
}

/* fn's first registration: libuv's own code is passed, the program's wrapped. */
static uint32_t classify(uintptr_t fn, uint32_t *loc)
{
    if (uvreal_in_libuv((const void *)fn)) {
        atomic_fetch_add_explicit(&g_internal, 1, memory_order_relaxed);
        return CBSLOT_PASS;
    }
    *loc = d9_loc_register_code((const void *)fn);
    atomic_fetch_add_explicit(&g_callbacks, 1, memory_order_relaxed);
    return CBSLOT_TRACE;
}

/* The slot index of fn in slots, claiming one on its first registration;
 * -1 when fn is to be passed unwrapped (NULL, already a trampoline, libuv's
 * own, tracing off, table full). A function another thread is classifying
 * is waited for (cbslot_find_wait): libuv keeps what it is handed for good
 * (and re-arms a repeating timer through uv_timer_start with it), so
 * passing it unwrapped would lose that handle's callbacks, not one. */
static int slot_of(struct cbslot *slots, uintptr_t fn)
{
    if (!fn || is_trampoline(fn))
        return -1;
    uvloop_ensure_init();
    if (!d9_enabled())
        return -1;
    int full = 0;
    int k = cbslot_find_wait(slots, fn, classify, &full);
    if (full)
        atomic_fetch_add_explicit(&g_untraced, 1, memory_order_relaxed);
    return k < 0 ? -1 : k;
}

/* ---- the per-callback path ------------------------------------------------------ */

struct uvwrap_frame {
    uint64_t task, prev_task;
    d9_runtime rt;
    uint16_t worker;
    uint8_t on, mode;
};

/* Out of line: the 1600 trampolines stay small (one call each side). */
static __attribute__((noinline)) void
frame_enter(struct uvwrap_frame *f, const struct cbslot *s, const void *obj, int mode)
{
    struct uvloop_tls *t = &uvloop_tls;
    f->on = 0;
    f->mode = (uint8_t)mode;
    f->task = (uint64_t)(uintptr_t)obj;     /* an id only: the object is never read */
    if (mode == UVWRAP_POOL) {
        f->rt = uvloop_pool_runtime();
        if (f->rt.id == 0)
            return;
        f->worker = uvloop_pool_worker();
    } else {
        struct uvloop_ent *e = t->cur;
        if (!e || atomic_load_explicit(&e->state, memory_order_relaxed) != UVLOOP_TRACED)
            return;
        f->rt.id = atomic_load_explicit(&e->rt, memory_order_relaxed);
        f->worker = atomic_load_explicit(&e->worker, memory_order_relaxed);
    }
    f->on = 1;
    /* record functions keep errno (d9.h): the callback sees libuv's */
    d9_poll_start(f->rt, f->worker, f->task, atomic_load_explicit(&s->loc, memory_order_relaxed));
    f->prev_task = t->task;
    t->task = f->task;
}

static __attribute__((noinline)) void frame_leave(const struct uvwrap_frame *f)
{
    if (!f->on)
        return;
    uvloop_tls.task = f->prev_task;
    d9_poll_end(f->rt, f->worker, f->task);
    if (f->mode == UVWRAP_POOL)
        d9_task_terminate(f->rt, f->task);  /* the work is done; after_work is the loop's */
}

/* The kinds: name, parameters, arguments, mode. One kind per C signature. */
#define UVWRAP_KINDS(X)                                                                      \
    X(timer,      (uv_timer_t *h), (h), UVWRAP_LOOP)                                         \
    X(idle,       (uv_idle_t *h), (h), UVWRAP_LOOP)                                          \
    X(prepare,    (uv_prepare_t *h), (h), UVWRAP_LOOP)                                       \
    X(check,      (uv_check_t *h), (h), UVWRAP_LOOP)                                         \
    X(async,      (uv_async_t *h), (h), UVWRAP_LOOP)                                         \
    X(signal,     (uv_signal_t *h, int x1), (h, x1), UVWRAP_LOOP)                            \
    X(poll,       (uv_poll_t *h, int x1, int x2), (h, x1, x2), UVWRAP_LOOP)                  \
    X(alloc,      (uv_handle_t *h, size_t x1, uv_buf_t *x2), (h, x1, x2), UVWRAP_LOOP)       \
    X(read,       (uv_stream_t *h, ssize_t x1, const uv_buf_t *x2), (h, x1, x2), UVWRAP_LOOP) \
    X(udp_recv,   (uv_udp_t *h, ssize_t x1, const uv_buf_t *x2, const struct sockaddr *x3,   \
                   unsigned x4), (h, x1, x2, x3, x4), UVWRAP_LOOP)                           \
    X(connection, (uv_stream_t *h, int x1), (h, x1), UVWRAP_LOOP)                            \
    X(close,      (uv_handle_t *h), (h), UVWRAP_LOOP)                                        \
    X(fs_event,   (uv_fs_event_t *h, const char *x1, int x2, int x3), (h, x1, x2, x3),       \
                  UVWRAP_LOOP)                                                               \
    X(fs_poll,    (uv_fs_poll_t *h, int x1, const uv_stat_t *x2, const uv_stat_t *x3),       \
                  (h, x1, x2, x3), UVWRAP_LOOP)                                              \
    X(exit,       (uv_process_t *h, int64_t x1, int x2), (h, x1, x2), UVWRAP_LOOP)           \
    X(write,      (uv_write_t *h, int x1), (h, x1), UVWRAP_LOOP)                             \
    X(shutdown,   (uv_shutdown_t *h, int x1), (h, x1), UVWRAP_LOOP)                          \
    X(connect,    (uv_connect_t *h, int x1), (h, x1), UVWRAP_LOOP)                           \
    X(udp_send,   (uv_udp_send_t *h, int x1), (h, x1), UVWRAP_LOOP)                          \
    X(work,       (uv_work_t *h), (h), UVWRAP_POOL)                                          \
    X(after_work, (uv_work_t *h, int x1), (h, x1), UVWRAP_LOOP)                              \
    X(getaddrinfo, (uv_getaddrinfo_t *h, int x1, struct addrinfo *x2), (h, x1, x2),          \
                  UVWRAP_LOOP)                                                               \
    X(getnameinfo, (uv_getnameinfo_t *h, int x1, const char *x2, const char *x3),            \
                  (h, x1, x2, x3), UVWRAP_LOOP)                                              \
    X(fs,         (uv_fs_t *h), (h), UVWRAP_LOOP)                                            \
    X(random,     (uv_random_t *h, int x1, void *x2, size_t x3), (h, x1, x2, x3), UVWRAP_LOOP)

/* 64 = 8 x 8 trampolines per kind; slot index hi * 8 + lo. */
#define UVWRAP_REP8(M, K, P, A, MODE, hi)                                                    \
    M(K, P, A, MODE, hi, 0) M(K, P, A, MODE, hi, 1) M(K, P, A, MODE, hi, 2)                  \
    M(K, P, A, MODE, hi, 3) M(K, P, A, MODE, hi, 4) M(K, P, A, MODE, hi, 5)                  \
    M(K, P, A, MODE, hi, 6) M(K, P, A, MODE, hi, 7)
#define UVWRAP_REP64(M, K, P, A, MODE)                                                       \
    UVWRAP_REP8(M, K, P, A, MODE, 0) UVWRAP_REP8(M, K, P, A, MODE, 1)                        \
    UVWRAP_REP8(M, K, P, A, MODE, 2) UVWRAP_REP8(M, K, P, A, MODE, 3)                        \
    UVWRAP_REP8(M, K, P, A, MODE, 4) UVWRAP_REP8(M, K, P, A, MODE, 5)                        \
    UVWRAP_REP8(M, K, P, A, MODE, 6) UVWRAP_REP8(M, K, P, A, MODE, 7)
_Static_assert(CBSLOT_N == 64, "UVWRAP_REP64 makes CBSLOT_N trampolines per kind");

#define UVWRAP_TRAMPOLINE(K, P, A, MODE, hi, lo)                                             \
    static UVWRAP_TEXT void uvwrap_t_##K##_##hi##lo P                                        \
    {                                                                                        \
        const struct cbslot *s_ = &uvwrap_slots_##K[(hi) * 8 + (lo)];                       \
        struct uvwrap_frame f_;                                                              \
        frame_enter(&f_, s_, (const void *)UVWRAP_FIRST A, MODE);                            \
        ((uvwrap_fn_##K)atomic_load_explicit(&s_->key, memory_order_relaxed)) A;             \
        frame_leave(&f_);                                                                    \
    }
#define UVWRAP_TRAMPOLINE_ADDR(K, P, A, MODE, hi, lo) uvwrap_t_##K##_##hi##lo,

/* Per kind: the function type, the slots, the trampolines, their table and
 * uvwrap_pick_<kind>(fn): what to hand libuv for fn. */
#define UVWRAP_DEFINE_KIND(K, P, A, MODE)                                                    \
    typedef void (*uvwrap_fn_##K) P;                                                         \
    static struct cbslot uvwrap_slots_##K[CBSLOT_N];                                        \
    UVWRAP_REP64(UVWRAP_TRAMPOLINE, K, P, A, MODE)                                           \
    static const uvwrap_fn_##K uvwrap_tramps_##K[CBSLOT_N] = {                               \
        UVWRAP_REP64(UVWRAP_TRAMPOLINE_ADDR, K, P, A, MODE)                                  \
    };                                                                                       \
    static inline __attribute__((unused)) uvwrap_fn_##K uvwrap_pick_##K(uvwrap_fn_##K fn)    \
    {                                                                                        \
        int k = slot_of(uvwrap_slots_##K, (uintptr_t)fn);                                    \
        if (k < 0)                                                                           \
            return fn;                                                                       \
        cbslot_tell(uvwrap_slots_##K, k, (uintptr_t)uvwrap_tramps_##K[k]);                   \
        return uvwrap_tramps_##K[k];                                                         \
    }

UVWRAP_KINDS(UVWRAP_DEFINE_KIND)

/* ---- registration wrappers --------------------------------------------------------
 * Each forwards to libuv with the program's arguments, callbacks replaced by
 * their trampolines. The slot lookup touches errno only on a function's
 * first registration, and restores it. */

#define UVWRAP_REAL_INT(fn)                                                                  \
    UVREAL(fn);                                                                              \
    if (__builtin_expect(real == NULL, 0))                                                   \
        return UV_ENOSYS

UVWRAP_EXPORT int uv_timer_start(uv_timer_t *h, uv_timer_cb cb, uint64_t timeout, uint64_t repeat)
{
    UVWRAP_REAL_INT(uv_timer_start);
    return real(h, uvwrap_pick_timer(cb), timeout, repeat);
}

UVWRAP_EXPORT int uv_idle_start(uv_idle_t *h, uv_idle_cb cb)
{
    UVWRAP_REAL_INT(uv_idle_start);
    return real(h, uvwrap_pick_idle(cb));
}

UVWRAP_EXPORT int uv_prepare_start(uv_prepare_t *h, uv_prepare_cb cb)
{
    UVWRAP_REAL_INT(uv_prepare_start);
    return real(h, uvwrap_pick_prepare(cb));
}

UVWRAP_EXPORT int uv_check_start(uv_check_t *h, uv_check_cb cb)
{
    UVWRAP_REAL_INT(uv_check_start);
    return real(h, uvwrap_pick_check(cb));
}

UVWRAP_EXPORT int uv_async_init(uv_loop_t *loop, uv_async_t *h, uv_async_cb cb)
{
    UVWRAP_REAL_INT(uv_async_init);
    return real(loop, h, uvwrap_pick_async(cb));
}

/* A wake of the async handle, aimed at its loop's worker; waker = the poll
 * running on this thread (0 outside a callback). */
UVWRAP_EXPORT int uv_async_send(uv_async_t *h)
{
    UVWRAP_REAL_INT(uv_async_send);
    if (h && d9_enabled()) {
        struct uvloop_ent *e = uvloop_find(h->loop);
        if (e && atomic_load_explicit(&e->state, memory_order_relaxed) == UVLOOP_TRACED) {
            int err = errno;
            d9_runtime rt = { atomic_load_explicit(&e->rt, memory_order_relaxed) };
            d9_wake(rt, uvloop_tls.task, (uint64_t)(uintptr_t)h,
                    atomic_load_explicit(&e->worker, memory_order_relaxed));
            errno = err;
        }
    }
    return real(h);
}

UVWRAP_EXPORT int uv_signal_start(uv_signal_t *h, uv_signal_cb cb, int signum)
{
    UVWRAP_REAL_INT(uv_signal_start);
    return real(h, uvwrap_pick_signal(cb), signum);
}

UVWRAP_EXPORT int uv_signal_start_oneshot(uv_signal_t *h, uv_signal_cb cb, int signum)
{
    UVWRAP_REAL_INT(uv_signal_start_oneshot);
    return real(h, uvwrap_pick_signal(cb), signum);
}

UVWRAP_EXPORT int uv_poll_start(uv_poll_t *h, int events, uv_poll_cb cb)
{
    UVWRAP_REAL_INT(uv_poll_start);
    return real(h, events, uvwrap_pick_poll(cb));
}

UVWRAP_EXPORT int uv_read_start(uv_stream_t *h, uv_alloc_cb alloc_cb, uv_read_cb read_cb)
{
    UVWRAP_REAL_INT(uv_read_start);
    return real(h, uvwrap_pick_alloc(alloc_cb), uvwrap_pick_read(read_cb));
}

UVWRAP_EXPORT int uv_udp_recv_start(uv_udp_t *h, uv_alloc_cb alloc_cb, uv_udp_recv_cb recv_cb)
{
    UVWRAP_REAL_INT(uv_udp_recv_start);
    return real(h, uvwrap_pick_alloc(alloc_cb), uvwrap_pick_udp_recv(recv_cb));
}

UVWRAP_EXPORT int uv_listen(uv_stream_t *h, int backlog, uv_connection_cb cb)
{
    UVWRAP_REAL_INT(uv_listen);
    return real(h, backlog, uvwrap_pick_connection(cb));
}

UVWRAP_EXPORT void uv_close(uv_handle_t *h, uv_close_cb cb)
{
    UVREAL(uv_close);
    if (real)
        real(h, uvwrap_pick_close(cb));
}

UVWRAP_EXPORT int uv_tcp_close_reset(uv_tcp_t *h, uv_close_cb cb)
{
    UVWRAP_REAL_INT(uv_tcp_close_reset);
    return real(h, uvwrap_pick_close(cb));
}

UVWRAP_EXPORT int uv_fs_event_start(uv_fs_event_t *h, uv_fs_event_cb cb, const char *path,
                                    unsigned int flags)
{
    UVWRAP_REAL_INT(uv_fs_event_start);
    return real(h, uvwrap_pick_fs_event(cb), path, flags);
}

UVWRAP_EXPORT int uv_fs_poll_start(uv_fs_poll_t *h, uv_fs_poll_cb cb, const char *path,
                                   unsigned int interval)
{
    UVWRAP_REAL_INT(uv_fs_poll_start);
    return real(h, uvwrap_pick_fs_poll(cb), path, interval);
}

UVWRAP_EXPORT int uv_spawn(uv_loop_t *loop, uv_process_t *h, const uv_process_options_t *o)
{
    UVWRAP_REAL_INT(uv_spawn);
    if (!o || !o->exit_cb)
        return real(loop, h, o);
    /* libuv copies what it keeps of the options during the call */
    uv_process_options_t c = *o;
    c.exit_cb = uvwrap_pick_exit(o->exit_cb);
    return real(loop, h, &c);
}

UVWRAP_EXPORT int uv_write(uv_write_t *req, uv_stream_t *h, const uv_buf_t bufs[],
                           unsigned int nbufs, uv_write_cb cb)
{
    UVWRAP_REAL_INT(uv_write);
    return real(req, h, bufs, nbufs, uvwrap_pick_write(cb));
}

UVWRAP_EXPORT int uv_write2(uv_write_t *req, uv_stream_t *h, const uv_buf_t bufs[],
                            unsigned int nbufs, uv_stream_t *send_handle, uv_write_cb cb)
{
    UVWRAP_REAL_INT(uv_write2);
    return real(req, h, bufs, nbufs, send_handle, uvwrap_pick_write(cb));
}

UVWRAP_EXPORT int uv_shutdown(uv_shutdown_t *req, uv_stream_t *h, uv_shutdown_cb cb)
{
    UVWRAP_REAL_INT(uv_shutdown);
    return real(req, h, uvwrap_pick_shutdown(cb));
}

UVWRAP_EXPORT int uv_tcp_connect(uv_connect_t *req, uv_tcp_t *h, const struct sockaddr *addr,
                                 uv_connect_cb cb)
{
    UVWRAP_REAL_INT(uv_tcp_connect);
    return real(req, h, addr, uvwrap_pick_connect(cb));
}

UVWRAP_EXPORT void uv_pipe_connect(uv_connect_t *req, uv_pipe_t *h, const char *name,
                                   uv_connect_cb cb)
{
    UVREAL(uv_pipe_connect);
    if (real)
        real(req, h, name, uvwrap_pick_connect(cb));
}

UVWRAP_EXPORT int uv_udp_send(uv_udp_send_t *req, uv_udp_t *h, const uv_buf_t bufs[],
                              unsigned int nbufs, const struct sockaddr *addr, uv_udp_send_cb cb)
{
    UVWRAP_REAL_INT(uv_udp_send);
    return real(req, h, bufs, nbufs, addr, uvwrap_pick_udp_send(cb));
}

/* A spawn of the request on uv-threadpool (before libuv can start it),
 * then the work callback is a poll there (frame_enter, UVWRAP_POOL). */
UVWRAP_EXPORT int uv_queue_work(uv_loop_t *loop, uv_work_t *req, uv_work_cb work_cb,
                                uv_after_work_cb after_work_cb)
{
    UVWRAP_REAL_INT(uv_queue_work);
    int k = slot_of(uvwrap_slots_work, (uintptr_t)work_cb);
    uv_work_cb w = work_cb;
    if (k >= 0) {
        d9_runtime rt = uvloop_pool_runtime();
        if (rt.id != 0) {
            int err = errno;
            w = uvwrap_tramps_work[k];
            cbslot_tell(uvwrap_slots_work, k, (uintptr_t)w);
            d9_task_spawn(rt, (uint64_t)(uintptr_t)req,
                          atomic_load_explicit(&uvwrap_slots_work[k].loc, memory_order_relaxed));
            errno = err;
        }
    }
    return real(loop, req, w, uvwrap_pick_after_work(after_work_cb));
}

UVWRAP_EXPORT int uv_getaddrinfo(uv_loop_t *loop, uv_getaddrinfo_t *req, uv_getaddrinfo_cb cb,
                                 const char *node, const char *service,
                                 const struct addrinfo *hints)
{
    UVWRAP_REAL_INT(uv_getaddrinfo);
    return real(loop, req, uvwrap_pick_getaddrinfo(cb), node, service, hints);
}

UVWRAP_EXPORT int uv_getnameinfo(uv_loop_t *loop, uv_getnameinfo_t *req, uv_getnameinfo_cb cb,
                                 const struct sockaddr *addr, int flags)
{
    UVWRAP_REAL_INT(uv_getnameinfo);
    return real(loop, req, uvwrap_pick_getnameinfo(cb), addr, flags);
}

UVWRAP_EXPORT int uv_random(uv_loop_t *loop, uv_random_t *req, void *buf, size_t buflen,
                            unsigned flags, uv_random_cb cb)
{
    UVWRAP_REAL_INT(uv_random);
    return real(loop, req, buf, buflen, flags, uvwrap_pick_random(cb));
}

/* uv_fs_*: the callback is the last argument; NULL means a synchronous call
 * (nothing to wrap: slot_of passes NULL through). */
#define UVWRAP_FS(fn, P, A)                                                                  \
    UVWRAP_EXPORT int fn(uv_loop_t *loop, uv_fs_t *req, UVWRAP_UNPAREN P, uv_fs_cb cb)       \
    {                                                                                        \
        UVWRAP_REAL_INT(fn);                                                                 \
        return real(loop, req, UVWRAP_UNPAREN A, uvwrap_pick_fs(cb));                        \
    }

UVWRAP_FS(uv_fs_close, (uv_file file), (file))
UVWRAP_FS(uv_fs_open, (const char *path, int flags, int mode), (path, flags, mode))
UVWRAP_FS(uv_fs_read, (uv_file file, const uv_buf_t bufs[], unsigned int nbufs, int64_t offset),
          (file, bufs, nbufs, offset))
UVWRAP_FS(uv_fs_unlink, (const char *path), (path))
UVWRAP_FS(uv_fs_write, (uv_file file, const uv_buf_t bufs[], unsigned int nbufs, int64_t offset),
          (file, bufs, nbufs, offset))
UVWRAP_FS(uv_fs_copyfile, (const char *path, const char *new_path, int flags),
          (path, new_path, flags))
UVWRAP_FS(uv_fs_mkdir, (const char *path, int mode), (path, mode))
UVWRAP_FS(uv_fs_mkdtemp, (const char *tpl), (tpl))
UVWRAP_FS(uv_fs_mkstemp, (const char *tpl), (tpl))
UVWRAP_FS(uv_fs_rmdir, (const char *path), (path))
UVWRAP_FS(uv_fs_scandir, (const char *path, int flags), (path, flags))
UVWRAP_FS(uv_fs_opendir, (const char *path), (path))
UVWRAP_FS(uv_fs_readdir, (uv_dir_t *dir), (dir))
UVWRAP_FS(uv_fs_closedir, (uv_dir_t *dir), (dir))
UVWRAP_FS(uv_fs_stat, (const char *path), (path))
UVWRAP_FS(uv_fs_fstat, (uv_file file), (file))
UVWRAP_FS(uv_fs_rename, (const char *path, const char *new_path), (path, new_path))
UVWRAP_FS(uv_fs_fsync, (uv_file file), (file))
UVWRAP_FS(uv_fs_fdatasync, (uv_file file), (file))
UVWRAP_FS(uv_fs_ftruncate, (uv_file file, int64_t offset), (file, offset))
UVWRAP_FS(uv_fs_sendfile, (uv_file out_fd, uv_file in_fd, int64_t in_offset, size_t length),
          (out_fd, in_fd, in_offset, length))
UVWRAP_FS(uv_fs_access, (const char *path, int mode), (path, mode))
UVWRAP_FS(uv_fs_chmod, (const char *path, int mode), (path, mode))
UVWRAP_FS(uv_fs_utime, (const char *path, double atime, double mtime), (path, atime, mtime))
UVWRAP_FS(uv_fs_futime, (uv_file file, double atime, double mtime), (file, atime, mtime))
UVWRAP_FS(uv_fs_lutime, (const char *path, double atime, double mtime), (path, atime, mtime))
UVWRAP_FS(uv_fs_lstat, (const char *path), (path))
UVWRAP_FS(uv_fs_link, (const char *path, const char *new_path), (path, new_path))
UVWRAP_FS(uv_fs_symlink, (const char *path, const char *new_path, int flags),
          (path, new_path, flags))
UVWRAP_FS(uv_fs_readlink, (const char *path), (path))
UVWRAP_FS(uv_fs_realpath, (const char *path), (path))
UVWRAP_FS(uv_fs_fchmod, (uv_file file, int mode), (file, mode))
UVWRAP_FS(uv_fs_chown, (const char *path, uv_uid_t uid, uv_gid_t gid), (path, uid, gid))
UVWRAP_FS(uv_fs_fchown, (uv_file file, uv_uid_t uid, uv_gid_t gid), (file, uid, gid))
UVWRAP_FS(uv_fs_lchown, (const char *path, uv_uid_t uid, uv_gid_t gid), (path, uid, gid))
UVWRAP_FS(uv_fs_statfs, (const char *path), (path))

/* ---- stats ---------------------------------------------------------------------------- */

UVWRAP_EXPORT void d9_uv_get_stats(struct d9_uv_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    out->loops_traced = uvloop_loops_traced();
    out->callbacks = atomic_load_explicit(&g_callbacks, memory_order_relaxed);
    out->callbacks_internal = atomic_load_explicit(&g_internal, memory_order_relaxed);
    out->callbacks_untraced = atomic_load_explicit(&g_untraced, memory_order_relaxed);
}
