/*
 * api.c — the public API of agent/d9.h: the process singleton around the
 * agent core (agent.c) and the record functions.
 *
 * Hot path (d9_poll_*, d9_wake, d9_task_*, d9_queue_depth), see AG_FAST:
 *   1. relaxed load of g_agent.live (0 = off: return)           one branch
 *   2. live == TSC and the record fits the thread's ring (initial-exec TLS,
 *      one compare against the producer's limit)                one branch
 *   3. rdtsc, the record's stores and the release-store of head
 *      (shm_ring_commit). No call, no stack frame.
 * Everything else (a thread's first event, a wrap, a full ring,
 * CLOCK_MONOTONIC stamping) is the function's cold half, out of line.
 * d9_emit and park/unpark take the general path (AG_GENERAL) always.
 * No locks, no syscalls, no allocation; the first event of a thread claims
 * a ring (ag_agent_thread_attach: a lock, gettid, a fallocate) and registers a
 * pthread key whose destructor releases the ring at thread exit; park/unpark
 * read schedstat at most once per DIAL9_SCHED_SAMPLE_US per thread.
 *
 * fork(): pthread_atfork handlers; the child forgets the parent's region
 * and this thread's producer without writing to them, and gets a fresh
 * region of its own on its first event (see agent.h).
 *
 * Must never abort or fail the application: every error ends in "tracing
 * off" with one line on stderr.
 *
 * Names in agent/: this file defines exactly the d9_* functions of d9.h;
 * every other file's exported functions carry the file's name, ag_<file>_*
 * (agent.c ag_agent_*, control.c ag_control_*, emit.c ag_emit_*, env.c
 * ag_env_*, exitinfo.c ag_exitinfo_*, ring_claim.c ag_ring_claim*, sampler.c
 * ag_sampler_*, zmqlib.c ag_zmqlib_*), so a symbol says where it lives.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agent/agent.h"
#include "agent/d9.h"
#include "agent/emit.h"
#include "agent/env.h"
#include "agent/exitinfo.h"
#include "agent/sampler.h"
#include "shm/meta.h"

static struct ag_agent g_agent;
static __thread struct ag_thread g_tls __attribute__((tls_model("initial-exec")));
/* A poll's records touch two lines of g_tls: the producer's hot half, and
 * poll_depth with the innermost poll_task (agent.h). */
_Static_assert(_Alignof(struct ag_thread) >= 64, "ag_thread starts a cache line");
_Static_assert(offsetof(struct ag_thread, p) + offsetof(struct shm_producer, cached_tail) <= 64,
               "the producer's hot fields in the first line");
_Static_assert(offsetof(struct ag_thread, poll_depth) / 64 ==
               offsetof(struct ag_thread, poll_task) / 64, "poll_depth beside poll_task[0]");

static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_init_done;         /* under g_init_lock */
static int g_init_rc;
static pthread_key_t g_key;
static int g_key_ok;

/* ---- thread state ---------------------------------------------------------- */

static void thread_exit(void *arg)
{
    struct ag_thread *t = arg;
    ag_sampler_thread_stop(&g_agent);  /* profiler: disarm before the rings go */
    ag_agent_thread_detach(&g_agent, t);
}

/* The calling thread's first event (or an untraced thread's rare retry). */
static __attribute__((noinline, cold)) int thread_slow(struct ag_thread *t)
{
    int rc = ag_agent_thread_attach(&g_agent, t);
    if (rc == -ENOSPC)
        ag_agent_count_no_ring(&g_agent);   /* this event is lost: no ring */
    if (rc != 0)
        return 0;
    ag_sampler_thread_start(&g_agent);  /* profiler: register for the fallback */
    /* the destructor releases the ring at thread exit */
    if (g_key_ok)
        pthread_setspecific(g_key, t);
    return 1;
}

/*
 * Record functions have two halves. The fast half, inline in each public
 * function (AG_FAST): tracing on, clock source TSC, and the record fits the
 * thread's ring (shm_ring_fits: one compare; a thread without a ring never
 * fits). Anything else tail-calls the function's cold half (out of line),
 * which does the general thing: claim a ring on the thread's first event
 * (AG_GENERAL), stamp with CLOCK_MONOTONIC where the TSC is not usable, let
 * shm_ring_reserve write a PAD or count a drop. The fast half therefore
 * contains no call and needs no stack frame; it is, per event, a load and
 * test of g_agent.live, the compare, the stores and the release-store of head.
 */
#define AG_FAST(len_, cold_call_)                                              \
    uint32_t src_ = atomic_load_explicit(&g_agent.live, memory_order_relaxed); \
    if (__builtin_expect(src_ == 0, 0))                                        \
        return;                                                                \
    if (__builtin_expect(src_ != D9_CLOCK_TSC || !shm_ring_fits(&g_tls.p, (len_)), 0)) { \
        cold_call_;                                                            \
        return;                                                                \
    }

/* errno as it was when the function began, put back when it returns. */
static inline void errno_restore(const int *saved)
{
    errno = *saved;
}

/* The general entry (cold halves, park/unpark, custom events): declares
 * src_ and p_; returns when tracing is off or the thread gets no ring.
 * This half may make system calls (a thread's first event claims a ring,
 * park/unpark read schedstat, a half-full ring rings the doorbell), so it
 * keeps errno: record functions never change it (d9.h), and wrappers that
 * call them around a library call need not save it. */
#define AG_GENERAL(src_, p_)                                                   \
    uint32_t src_ = atomic_load_explicit(&g_agent.live, memory_order_relaxed); \
    if (__builtin_expect(src_ == 0, 0))                                        \
        return;                                                                \
    int errno_ __attribute__((cleanup(errno_restore), unused)) = errno;        \
    struct shm_producer *p_ = &g_tls.p;                                        \
    if (__builtin_expect(p_->hdr == NULL, 0) && !thread_slow(&g_tls))          \
        return;

#define AG_COLD static __attribute__((noinline, cold)) void

/* ---- fork ------------------------------------------------------------------- */

static void fork_prepare(void)
{
    pthread_mutex_lock(&g_init_lock);
    ag_agent_fork_prepare(&g_agent);
}

static void fork_parent(void)
{
    ag_agent_fork_parent(&g_agent);
    pthread_mutex_unlock(&g_init_lock);
}

static void fork_child(void)
{
    ag_agent_fork_child(&g_agent);
    /* this thread's ring belongs to the parent's thread: never touch it */
    ag_agent_thread_forget(&g_tls);
    ag_sampler_fork_child();            /* profiler: the child does not sample */
    pthread_mutex_unlock(&g_init_lock);
}

/* ---- lifecycle ---------------------------------------------------------------- */

/*
 * Where d9_init_with's settings come from: the program's d9_config first
 * (g_src.pc, NULL for d9_init), then the environment. Written under
 * g_init_lock during the one initialisation; ag_sampler_start reads it
 * there too, through env_get.
 */
static struct {
    const d9_config *pc;
    char num[32];               /* a numeric field as text (one lookup at a time) */
    const char *field;          /* the d9_config field of the last lookup, or NULL */
} g_src;

static const char *env_get(const char *name, void *ctx)
{
    (void)ctx;
    g_src.field = NULL;
    if (g_src.pc) {
        const char *field;
        const char *v = ag_env_config_value(g_src.pc, name, g_src.num, sizeof g_src.num,
                                            &field);
        if (v) {
            g_src.field = field;
            return v;
        }
        if ((g_src.pc->flags & D9_CONFIG_NO_ENV) && strncmp(name, "DIAL9_", 6) == 0)
            return NULL;
    }
    /* setuid programs ignore the environment: defaults only */
    return secure_getenv(name);
}

int d9_init(void)
{
    return d9_init_with(NULL);
}

int d9_init_with(const d9_config *config)
{
    pthread_mutex_lock(&g_init_lock);
    if (g_init_done) {
        int rc = g_init_rc;
        if (rc == 0 && g_agent.stopped)
            rc = -ESHUTDOWN;
        pthread_mutex_unlock(&g_init_lock);
        return rc;
    }
    g_init_done = 1;
    if (config && config->size != sizeof(d9_config)) {
        fprintf(stderr, "d9: d9_config.size is %u, this libd9agent expects %zu (start from "
                "D9_CONFIG_INIT and build against its d9.h); tracing disabled\n",
                (unsigned)config->size, sizeof(d9_config));
        g_init_rc = -EINVAL;
        pthread_mutex_unlock(&g_init_lock);
        return g_init_rc;
    }
    if (config && config->enabled == 0) {
        g_init_rc = 1;          /* untraced whatever the environment says */
        pthread_mutex_unlock(&g_init_lock);
        return g_init_rc;
    }
    g_src.pc = config;

    char comm[D9_COMM_MAX + 1];
    ag_agent_read_comm(comm, sizeof comm);
    struct ag_config cfg;
    ag_env_defaults(&cfg, (uint32_t)getuid(), env_get("XDG_RUNTIME_DIR", NULL), comm);
    char err[AG_ERR_MAX];
    int rc = ag_env_parse(&cfg, env_get, NULL, err, sizeof err);
    if (rc) {
        /* the parser stops at the bad value: the last lookup names its source */
        if (g_src.field)
            fprintf(stderr, "%s (d9_config.%s)\n", err, g_src.field);
        else
            fprintf(stderr, "%s\n", err);
    } else if (!cfg.enabled) {
        rc = 1;
    } else {
        g_key_ok = pthread_key_create(&g_key, thread_exit) == 0;
        if (pthread_atfork(fork_prepare, fork_parent, fork_child) != 0) {
            /* without fork handlers a child would write into our rings */
            fprintf(stderr, "d9: cannot install fork handlers; tracing disabled\n");
            rc = -ENOMEM;
        } else {
            rc = ag_agent_start(&g_agent, &cfg);
            if (rc == 0)
                ag_sampler_start(&g_agent, env_get);    /* profiler: handshake */
            /* exit status and fatal signal into the region, then d9_shutdown */
            if (rc == 0 && ag_exitinfo_install(&g_agent, d9_shutdown) != 0 &&
                atexit(d9_shutdown) != 0)
                fprintf(stderr, "d9: cannot register the exit handler; "
                        "call d9_shutdown() before exit\n");
        }
    }
    g_src.pc = NULL;            /* the caller's struct is not kept */
    g_init_rc = rc;
    pthread_mutex_unlock(&g_init_lock);
    return rc;
}

void d9_shutdown(void)
{
    if (g_agent.started) {
        ag_sampler_stop(&g_agent);      /* profiler: stop the timers */
        ag_agent_stop(&g_agent);
    }
}

int d9_enabled(void)
{
    return atomic_load_explicit(&g_agent.live, memory_order_relaxed) != 0;
}

int d9_runtime_register(const char *name, d9_runtime *rt)
{
    if (!rt)
        return -EINVAL;
    rt->id = 0;
    if (!d9_enabled())
        return D9_OFF;
    int rc = ag_agent_runtime_register(&g_agent, name, &rt->id);
    /* stopped meanwhile (d9_shutdown on another thread): off, not an error */
    return rc == -ENOTCONN ? D9_OFF : rc;
}

d9_runtime d9_runtime_default(void)
{
    d9_runtime rt = { d9_enabled() ? g_agent.default_runtime : 0 };
    return rt;
}

d9_loc d9_loc_register(const char *file, int line, const char *func)
{
    if (!d9_enabled())
        return 0;
    return ag_agent_loc_register(&g_agent, file, line, func);
}

d9_loc d9_loc_register_code(const void *addr)
{
    char func[D9_LOC_CODE_FUNC_MAX];
    if (!addr || !d9_enabled())
        return 0;
    return ag_agent_loc_register(&g_agent, D9_LOC_CODE_FILE, 0,
                                 shm_meta_code_func((uint64_t)(uintptr_t)addr, func));
}

void d9_get_stats(d9_stats *out)
{
    if (!out)
        return;
    if (!g_agent.started) {
        memset(out, 0, sizeof *out);
        return;
    }
    ag_agent_stats(&g_agent, out);
}

const char *d9_region_path(void)
{
    return g_agent.started ? ag_agent_region_path(&g_agent) : NULL;
}

/* ---- record functions ------------------------------------------------------ */

AG_COLD cold_poll_start(d9_runtime rt, uint16_t worker, uint64_t task, d9_loc loc)
{
    AG_GENERAL(src, p);
    if (rt.id != 0)
        ag_emit_poll_start(p, src, rt.id, worker, task, loc);
}

/* The thread's open polls (of registered runtimes), for the custom events
 * emitted inside them: plain thread-local stores, whether tracing is on or
 * not, so the task is right whenever it is. No lock, syscall or allocation. */
static inline void poll_push(uint64_t task)
{
    uint32_t d = g_tls.poll_depth;
    if (d < AG_POLL_NEST_MAX)
        g_tls.poll_task[d] = task;
    g_tls.poll_depth = d + 1;
}

static inline void poll_pop(void)
{
    if (g_tls.poll_depth)
        g_tls.poll_depth--;
}

static inline uint64_t poll_current(void)
{
    uint32_t d = g_tls.poll_depth;
    return d && d <= AG_POLL_NEST_MAX ? g_tls.poll_task[d - 1] : D9_TASK_NONE;
}

void d9_poll_start(d9_runtime rt, uint16_t worker, uint64_t task, d9_loc loc)
{
    if (rt.id != 0)
        poll_push(task);
    AG_FAST(sizeof(struct d9_rec_poll_start), cold_poll_start(rt, worker, task, loc));
    if (__builtin_expect(rt.id != 0, 1))
        ag_emit_poll_start(&g_tls.p, D9_CLOCK_TSC, rt.id, worker, task, loc);
}

AG_COLD cold_poll_end(d9_runtime rt, uint16_t worker, uint64_t task)
{
    AG_GENERAL(src, p);
    if (rt.id != 0)
        ag_emit_poll_end(p, src, rt.id, worker, task);
}

void d9_poll_end(d9_runtime rt, uint16_t worker, uint64_t task)
{
    if (rt.id != 0)
        poll_pop();
    AG_FAST(sizeof(struct d9_rec_poll_end), cold_poll_end(rt, worker, task));
    if (__builtin_expect(rt.id != 0, 1))
        ag_emit_poll_end(&g_tls.p, D9_CLOCK_TSC, rt.id, worker, task);
}

AG_COLD cold_wake(d9_runtime rt, uint64_t waker, uint64_t wakee, uint16_t target_worker)
{
    AG_GENERAL(src, p);
    if (rt.id != 0)
        ag_emit_wake(p, src, rt.id, waker, wakee, target_worker);
}

void d9_wake(d9_runtime rt, uint64_t waker, uint64_t wakee, uint16_t target_worker)
{
    AG_FAST(sizeof(struct d9_rec_wake), cold_wake(rt, waker, wakee, target_worker));
    if (__builtin_expect(rt.id != 0, 1))
        ag_emit_wake(&g_tls.p, D9_CLOCK_TSC, rt.id, waker, wakee, target_worker);
}

/* Park/unpark read schedstat now and then (ag_agent_thread_sched): always general. */
static void worker_event(d9_runtime rt, uint16_t worker, uint16_t type)
{
    AG_GENERAL(src, p);
    if (__builtin_expect(rt.id == 0, 0))
        return;
    uint64_t cpu, wait;
    uint32_t flags = ag_agent_thread_sched(&g_tls, g_agent.cfg.sched_sample_us, &cpu, &wait);
    ag_emit_worker(p, src, type, rt.id, worker, flags, cpu, wait);
}

void d9_worker_park(d9_runtime rt, uint16_t worker)
{
    worker_event(rt, worker, D9_REC_WORKER_PARK);
}

void d9_worker_unpark(d9_runtime rt, uint16_t worker)
{
    worker_event(rt, worker, D9_REC_WORKER_UNPARK);
}

AG_COLD cold_task(d9_runtime rt, uint16_t type, uint64_t task, d9_loc loc)
{
    AG_GENERAL(src, p);
    if (rt.id != 0)
        ag_emit_task(p, src, type, rt.id, task, loc);
}

void d9_task_spawn(d9_runtime rt, uint64_t task, d9_loc loc)
{
    AG_FAST(sizeof(struct d9_rec_task), cold_task(rt, D9_REC_TASK_SPAWN, task, loc));
    if (__builtin_expect(rt.id != 0, 1))
        ag_emit_task(&g_tls.p, D9_CLOCK_TSC, D9_REC_TASK_SPAWN, rt.id, task, loc);
}

void d9_task_terminate(d9_runtime rt, uint64_t task)
{
    AG_FAST(sizeof(struct d9_rec_task), cold_task(rt, D9_REC_TASK_TERMINATE, task, 0));
    if (__builtin_expect(rt.id != 0, 1))
        ag_emit_task(&g_tls.p, D9_CLOCK_TSC, D9_REC_TASK_TERMINATE, rt.id, task, 0);
}

AG_COLD cold_queue_depth(d9_runtime rt, uint16_t worker, uint64_t depth)
{
    AG_GENERAL(src, p);
    if (rt.id != 0)
        ag_emit_queue_depth(p, src, rt.id, worker, depth);
}

void d9_queue_depth(d9_runtime rt, uint16_t worker, uint64_t depth)
{
    AG_FAST(sizeof(struct d9_rec_queue_depth), cold_queue_depth(rt, worker, depth));
    if (__builtin_expect(rt.id != 0, 1))
        ag_emit_queue_depth(&g_tls.p, D9_CLOCK_TSC, rt.id, worker, depth);
}

void d9_emit_values(d9_schema *schema, const d9_value *values, unsigned n)
{
    AG_GENERAL(src, p);
    uint32_t id = schema ? __atomic_load_n(&schema->id, __ATOMIC_ACQUIRE) : AG_SCHEMA_INVALID;
    if (__builtin_expect(id == 0, 0))
        id = ag_agent_schema_id(&g_agent, schema);    /* first use: publish (slow path) */
    if (id == 0)
        return;                                 /* the agent stopped meanwhile */
    if (id == AG_SCHEMA_INVALID) {
        ag_emit_drop(p, AG_DROP_MISMATCH);
        return;
    }
    ag_emit_custom(p, src, id, poll_current(), schema, values, n);
}
