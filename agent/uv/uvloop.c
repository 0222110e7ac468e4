/*
 * uvloop.c — traced loops, the uv_run / uv_loop_close wrappers, the
 * backend poll's park/unpark, d9_uv_trace and the uv-threadpool runtime
 * (see uvloop.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include "agent/d9.h"
#include "d9uv.h"
#include "loopcfg.h"
#include "uvloop.h"
#include "uvreal.h"

#define UVLOOP_EXPORT __attribute__((visibility("default")))
#define UVLOOP_DEPTH_NONE UINT64_MAX

__thread struct uvloop_tls uvloop_tls __attribute__((tls_model("initial-exec")));
_Static_assert(_Alignof(struct uvloop_tls) >= sizeof(struct uvloop_tls), "uvloop_tls fits one cache line");

static struct uvloop_ent g_loops[D9_UV_LOOPS_MAX];
static _Atomic uint32_t g_nloops;           /* entries ever used: scans stop here */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;  /* claims and frees */
static _Atomic uint64_t g_loops_traced;
static _Atomic uint16_t g_pool_rt;
static _Atomic uint32_t g_pool_workers;

/* ---- lifecycle --------------------------------------------------------------- */

static int auto_uv(void)
{
    return (loopcfg_auto() & LOOPCFG_UV) != 0;
}

void uvloop_ensure_init(void)
{
    if (auto_uv())
        loopcfg_ensure_init();
}

/* ---- the table ------------------------------------------------------------------ */

struct uvloop_ent *uvloop_find(const uv_loop_t *loop)
{
    /* acquire: g_nloops covers entries whose fields were written before */
    uint32_t n = atomic_load_explicit(&g_nloops, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++)
        if (atomic_load_explicit(&g_loops[i].loop, memory_order_acquire) == loop)
            return &g_loops[i];
    return NULL;
}

/* A new entry for loop (g_lock held). NULL when the table is full. */
static struct uvloop_ent *claim_locked(uv_loop_t *loop, uint16_t rt, uint32_t state)
{
    uint32_t n = atomic_load_explicit(&g_nloops, memory_order_relaxed);
    struct uvloop_ent *e = NULL;
    for (uint32_t i = 0; i < n && !e; i++)
        if (atomic_load_explicit(&g_loops[i].loop, memory_order_relaxed) == NULL)
            e = &g_loops[i];
    if (!e && n < D9_UV_LOOPS_MAX)
        e = &g_loops[n];
    if (!e)
        return NULL;
    uint16_t worker = loopcfg_worker_next();
    if (worker == D9_WORKER_NONE_ID)
        return NULL;
    atomic_store_explicit(&e->rt, rt, memory_order_relaxed);
    atomic_store_explicit(&e->worker, worker, memory_order_relaxed);
    atomic_store_explicit(&e->state, state, memory_order_relaxed);
    e->last_depth = UVLOOP_DEPTH_NONE;
    /* release: the fields above happen-before any reader that finds loop */
    atomic_store_explicit(&e->loop, loop, memory_order_release);
    if (e == &g_loops[n])
        atomic_store_explicit(&g_nloops, n + 1, memory_order_release);
    if (state == UVLOOP_TRACED)
        atomic_fetch_add_explicit(&g_loops_traced, 1, memory_order_relaxed);
    return e;
}

static int trace(uv_loop_t *loop, const char *name, struct uvloop_ent **out)
{
    d9_runtime rt;
    if (!loop)
        return -EINVAL;
    if (!d9_enabled())
        return -ENOTCONN;
    if (name) {
        int rc = d9_runtime_register(name, &rt);
        if (rc < 0)
            return rc;
    } else {
        rt = d9_runtime_default();
    }
    int rc = 0;
    pthread_mutex_lock(&g_lock);
    struct uvloop_ent *e = uvloop_find(loop);
    if (e) {
        if (atomic_exchange_explicit(&e->state, UVLOOP_TRACED, memory_order_relaxed) !=
            UVLOOP_TRACED)
            atomic_fetch_add_explicit(&g_loops_traced, 1, memory_order_relaxed);
    } else if (!(e = claim_locked(loop, rt.id, UVLOOP_TRACED))) {
        rc = -ENOSPC;
    }
    pthread_mutex_unlock(&g_lock);
    if (out)
        *out = e;
    return rc;
}

UVLOOP_EXPORT int d9_uv_trace(uv_loop_t *loop, const char *name)
{
    if (!loop)
        return -EINVAL;
    uvloop_ensure_init();
    int err = errno;
    int rc = 0;
    if (!d9_enabled()) {
        /* not started yet: start it from the environment, as d9_init would
         * (a program that wants its own settings calls d9_init_with first) */
        rc = d9_init();
        if (rc < 0 && rc != -ESHUTDOWN) {
            errno = err;
            return rc;          /* could not start: d9_init said why on stderr */
        }
    }
    rc = d9_enabled() ? trace(loop, name, NULL) : D9_OFF;
    errno = err;
    return rc;
}

UVLOOP_EXPORT int d9_uv_untrace(uv_loop_t *loop)
{
    int rc = 0;
    pthread_mutex_lock(&g_lock);
    struct uvloop_ent *e = loop ? uvloop_find(loop) : NULL;
    if (e)
        atomic_store_explicit(&e->state, UVLOOP_UNTRACED, memory_order_relaxed);
    else if (loop && auto_uv() && claim_locked(loop, 0, UVLOOP_UNTRACED))
        ;   /* remembered as untraced so that the first uv_run does not trace it */
    else
        rc = -ENOENT;
    pthread_mutex_unlock(&g_lock);
    return rc;
}

UVLOOP_EXPORT int d9_uv_worker(const uv_loop_t *loop)
{
    struct uvloop_ent *e = loop ? uvloop_find(loop) : NULL;
    if (!e || atomic_load_explicit(&e->state, memory_order_relaxed) != UVLOOP_TRACED)
        return -ENOENT;
    return atomic_load_explicit(&e->worker, memory_order_relaxed);
}

uint64_t uvloop_loops_traced(void)
{
    return atomic_load_explicit(&g_loops_traced, memory_order_relaxed);
}

/* ---- uv-threadpool ---------------------------------------------------------------- */

d9_runtime uvloop_pool_runtime(void)
{
    d9_runtime rt = { atomic_load_explicit(&g_pool_rt, memory_order_relaxed) };
    if (__builtin_expect(rt.id == 0, 0) && d9_enabled()) {
        int err = errno;
        if (d9_runtime_register(UVLOOP_POOL_RUNTIME, &rt) == 0)
            atomic_store_explicit(&g_pool_rt, rt.id, memory_order_relaxed);
        errno = err;
    }
    return rt;
}

uint16_t uvloop_pool_worker(void)
{
    struct uvloop_tls *t = &uvloop_tls;
    if (__builtin_expect(t->pool_worker == 0, 0)) {
        uint32_t w = atomic_fetch_add_explicit(&g_pool_workers, 1, memory_order_relaxed);
        t->pool_worker = (uint16_t)(w < D9_WORKER_NONE_ID - 1 ? w + 1 : D9_WORKER_NONE_ID);
    }
    return (uint16_t)(t->pool_worker - 1);
}

/* ---- wrappers ------------------------------------------------------------------------ */

/* Touch one byte per 512 of UVLOOP_STACK_PREFAULT bytes of stack under the
 * caller, so that the pages uv_run's callees use are present (uvloop.h). */
__attribute__((noinline)) static void stack_prefault(void)
{
    volatile char pad[UVLOOP_STACK_PREFAULT];
    for (size_t i = 0; i < sizeof pad; i += 512)
        pad[i] = 0;
}

/* 1 when the calling thread's stack has room for stack_prefault with
 * UVLOOP_STACK_SPARE to spare (a thread on a small stack is left alone:
 * the shim never changes what a program does). Once per thread; noinline:
 * its pthread_attr_t must not stay in uv_run's frame under the whole loop. */
__attribute__((noinline)) static int stack_has_room(void)
{
    pthread_attr_t a;
    void *lo = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return 0;
    int rc = pthread_attr_getstack(&a, &lo, &size);
    pthread_attr_destroy(&a);
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    return rc == 0 && sp > (uintptr_t)lo &&
           sp - (uintptr_t)lo > UVLOOP_STACK_PREFAULT + UVLOOP_STACK_SPARE;
}

UVLOOP_EXPORT int uv_run(uv_loop_t *loop, uv_run_mode mode)
{
    UVREAL(uv_run);
    if (!real)
        return UV_ENOSYS;
    uvloop_ensure_init();
    struct uvloop_ent *e = loop ? uvloop_find(loop) : NULL;
    if (!e && loop && auto_uv() && d9_enabled()) {
        int err = errno;
        trace(loop, NULL, &e);
        errno = err;
    }
    if (!e || atomic_load_explicit(&e->state, memory_order_relaxed) != UVLOOP_TRACED)
        return real(loop, mode);

    UVREAL_AS(uv_backend_fd, backend_fd);
    struct uvloop_tls *t = &uvloop_tls;
    if (!t->stack_present) {
        t->stack_present = 1;
        int err = errno;
        if (stack_has_room())
            stack_prefault();
        errno = err;
    }
    struct uvloop_ent *prev = t->cur;
    int prev_fd = t->cur_fd;
    t->cur = e;
    t->cur_fd = backend_fd ? backend_fd(loop) : -1;
    int rc = real(loop, mode);
    t->cur = prev;
    t->cur_fd = prev_fd;
    return rc;
}

UVLOOP_EXPORT int uv_loop_close(uv_loop_t *loop)
{
    UVREAL(uv_loop_close);
    if (!real)
        return UV_ENOSYS;
    int rc = real(loop);
    if (rc == 0 && loop) {
        /* the loop is gone: its entry may serve the next loop at this address */
        pthread_mutex_lock(&g_lock);
        struct uvloop_ent *e = uvloop_find(loop);
        if (e) {
            atomic_store_explicit(&e->state, UVLOOP_FREE, memory_order_relaxed);
            atomic_store_explicit(&e->loop, NULL, memory_order_release);
        }
        pthread_mutex_unlock(&g_lock);
    }
    return rc;
}

/* Number of entries in the loop's pending queue (libuv's QUEUE: a circular
 * list whose next pointer is the first word), counted up to UVLOOP_PENDING_MAX.
 * Loop thread only, between two callbacks: libuv is not changing it. */
static uint64_t pending_len(uv_loop_t *loop)
{
    void **head = loop->pending_queue;
    uint64_t n = 0;
    for (void **q = head[0]; q && q != head && n < UVLOOP_PENDING_MAX; q = q[0])
        n++;
    return n;
}

int uvloop_backend_begin(struct uvloop_wait *b, int epfd, int timeout)
{
    struct uvloop_tls *t = &uvloop_tls;
    b->e = t->cur;
    if (__builtin_expect(!b->e || epfd != t->cur_fd, 1) ||
        atomic_load_explicit(&b->e->state, memory_order_relaxed) != UVLOOP_TRACED)
        return 0;
    b->rt.id = atomic_load_explicit(&b->e->rt, memory_order_relaxed);
    b->worker = atomic_load_explicit(&b->e->worker, memory_order_relaxed);
    b->parked = timeout != 0;       /* a zero timeout peeks: no sleep, no park */
    if (b->parked)
        d9_worker_park(b->rt, b->worker);
    return 1;
}

void uvloop_backend_end(struct uvloop_wait *b, int n)
{
    if (b->parked)
        d9_worker_unpark(b->rt, b->worker);
    uv_loop_t *loop = atomic_load_explicit(&b->e->loop, memory_order_relaxed);
    uint64_t depth = (n > 0 ? (uint64_t)n : 0) + (loop ? pending_len(loop) : 0);
    if (depth != b->e->last_depth) {
        b->e->last_depth = depth;
        d9_queue_depth(b->rt, b->worker, depth);
    }
}
