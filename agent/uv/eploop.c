/*
 * eploop.c — epoll loop iterations as polls (see eploop.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "agent/d9.h"
#include "cbslot.h"
#include "eploop.h"
#include "loopcfg.h"

#define EPLOOP_ITER_MASK  ((1ull << EPLOOP_TASK_SHIFT) - 1)
#define EPLOOP_DEPTH_NONE UINT64_MAX

enum eploop_thread { EPLOOP_T_NEW = 0, EPLOOP_T_LOOP = 1, EPLOOP_T_OFF = 2 };

/* The calling thread's loop. site/site_k cache the last call site's slot,
 * so a loop that always waits at one place looks nothing up. */
struct eploop_tls {
    uint8_t state;                      /* enum eploop_thread */
    uint8_t in_iter;                    /* an iteration is open (task) */
    uint16_t worker;
    uint16_t rt;
    uintptr_t site;                     /* the last call site seen (0: none) */
    int site_k;                         /* its slot, -1: not traced */
    uint64_t iter;                      /* iterations started on this thread */
    uint64_t task;                      /* the open iteration's task */
    uint64_t last_depth;
};

static __thread struct eploop_tls g_tls __attribute__((tls_model("initial-exec")));

static struct cbslot g_sites[CBSLOT_N];
static _Atomic uint64_t g_threads, g_sites_traced, g_sites_skipped, g_sites_untraced;
static pthread_once_t g_hooks_once = PTHREAD_ONCE_INIT;

/* ---- call sites ------------------------------------------------------------------ */

/* Objects whose waits are never an epoll loop's: the agent's own threads
 * (libzmq's I/O thread, this shim), and the loops traced by their kind. */
static int skipped_object(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    unsigned kinds = loopcfg_auto();
    return strncmp(base, "libd9", 5) == 0 || strncmp(base, "libzmq", 6) == 0 ||
           ((kinds & LOOPCFG_UV) && strncmp(base, "libuv", 5) == 0) ||
           ((kinds & LOOPCFG_EVENT) && strncmp(base, "libevent", 8) == 0);
}

static uint32_t classify_site(uintptr_t site, uint32_t *loc)
{
    Dl_info di;
    if (dladdr((const void *)site, &di) && di.dli_fname && skipped_object(di.dli_fname)) {
        atomic_fetch_add_explicit(&g_sites_skipped, 1, memory_order_relaxed);
        return CBSLOT_PASS;
    }
    /* a program's loop: the agent starts here if nothing started it yet
     * (never for the agent's own threads, skipped above) */
    loopcfg_ensure_init();
    if (!d9_enabled())
        return CBSLOT_PASS;
    *loc = d9_loc_register_code((const void *)site);
    atomic_fetch_add_explicit(&g_sites_traced, 1, memory_order_relaxed);
    return CBSLOT_TRACE;
}

/* ---- process and thread events ------------------------------------------------------- */

/* exit() on a thread inside an iteration: end it before the agent's own
 * exit handler (registered earlier, so run later) closes the region. */
static void at_exit(void)
{
    struct eploop_tls *t = &g_tls;
    if (t->state == EPLOOP_T_LOOP && t->in_iter) {
        d9_runtime rt = { t->rt };
        d9_poll_end(rt, t->worker, t->task);
        t->in_iter = 0;
    }
}

/* The child of a fork continues the forking thread's iteration in no ring
 * of its own: it starts afresh at its next wait. */
static void at_fork_child(void)
{
    g_tls.in_iter = 0;
}

static void hooks_install(void)
{
    int err = errno;
    atexit(at_exit);
    pthread_atfork(NULL, NULL, at_fork_child);
    errno = err;
}

/* The thread's first traced wait: it becomes a worker. 0 when it cannot. */
static __attribute__((noinline, cold)) int thread_start(struct eploop_tls *t)
{
    d9_runtime rt = d9_runtime_default();
    uint16_t worker = rt.id ? loopcfg_worker_next() : D9_WORKER_NONE_ID;
    if (worker == D9_WORKER_NONE_ID) {
        t->state = EPLOOP_T_OFF;
        return 0;
    }
    pthread_once(&g_hooks_once, hooks_install);
    t->rt = rt.id;
    t->worker = worker;
    t->last_depth = EPLOOP_DEPTH_NONE;
    t->state = EPLOOP_T_LOOP;
    atomic_fetch_add_explicit(&g_threads, 1, memory_order_relaxed);
    return 1;
}

/* ---- around a wait ---------------------------------------------------------------------- */

int eploop_begin(struct eploop_wait *w, uintptr_t site, int peek)
{
    struct eploop_tls *t = &g_tls;
    if (__builtin_expect(site != t->site, 0)) {
        int full = 0;
        t->site_k = cbslot_find(g_sites, site, classify_site, &full);
        if (full)
            atomic_fetch_add_explicit(&g_sites_untraced, 1, memory_order_relaxed);
        /* a site another thread is still classifying is asked again next time */
        t->site = t->site_k == CBSLOT_BUSY ? 0 : site;
    }
    if (t->site_k < 0 || t->state == EPLOOP_T_OFF)
        return 0;
    if (__builtin_expect(t->state == EPLOOP_T_NEW, 0) && !thread_start(t))
        return 0;
    w->rt.id = t->rt;
    w->worker = t->worker;
    if (t->in_iter) {
        d9_poll_end(w->rt, w->worker, t->task);
        t->in_iter = 0;
    }
    w->parked = !peek;
    if (w->parked)
        d9_worker_park(w->rt, w->worker);
    return 1;
}

void eploop_end(struct eploop_wait *w, int n)
{
    struct eploop_tls *t = &g_tls;
    if (w->parked)
        d9_worker_unpark(w->rt, w->worker);
    uint64_t depth = n > 0 ? (uint64_t)n : 0;
    if (depth != t->last_depth) {
        t->last_depth = depth;
        d9_queue_depth(w->rt, w->worker, depth);
    }
    t->iter++;
    t->task = EPLOOP_TASK_TAG | (uint64_t)w->worker << EPLOOP_TASK_SHIFT |
              (t->iter & EPLOOP_ITER_MASK);
    t->in_iter = 1;
    d9_poll_start(w->rt, w->worker, t->task,
                  atomic_load_explicit(&g_sites[t->site_k].loc, memory_order_relaxed));
}

void eploop_get_stats(struct eploop_stats *out)
{
    memset(out, 0, sizeof *out);
    out->threads = atomic_load_explicit(&g_threads, memory_order_relaxed);
    out->sites = atomic_load_explicit(&g_sites_traced, memory_order_relaxed);
    out->sites_skipped = atomic_load_explicit(&g_sites_skipped, memory_order_relaxed);
    out->sites_untraced = atomic_load_explicit(&g_sites_untraced, memory_order_relaxed);
}
