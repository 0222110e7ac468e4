/*
 * sampler.c — in-process CPU sampling fallback: per-thread
 * CLOCK_THREAD_CPUTIME_ID POSIX timers (SIGEV_THREAD_ID -> SIGPROF on that
 * very thread), a frame-pointer walk in the handler, one D9_REC_CPU_SAMPLE
 * per tick into the thread's sampler ring. See sampler.h for the handshake
 * with the collector and the hooks.
 *
 * Who calls what:
 *   - registry (g.head list, g.lock): thread start/stop on the thread itself,
 *     activation and shutdown from the housekeeping / init / exit thread.
 *   - on_sigprof: the kernel, on a sampled thread, any time.
 *
 * SPSC argument (why the handler needs no "in record" flag): the handler
 * writes only into its thread's *sampler* ring, never into the ring the
 * thread's own d9_* calls produce into. The sampler ring has exactly one
 * producer, the handler on that thread, and the handler cannot interrupt
 * itself: SIGPROF is blocked while it runs (sa_mask, no SA_NODEFER). So an
 * interrupted d9_poll_start() is never half-overwritten, and a handler never
 * sees its own ring in a half-written state. The producer struct is written
 * by the arming thread before armed is release-stored; the handler
 * acquire-loads armed before touching it. Disarm (armed = 0) happens before
 * the ring is released, on the thread itself (thread stop), so no handler
 * can write into a released ring; shutdown only disarms (other threads may
 * be inside a handler) and keeps the handler installed, because SIGPROF's
 * default action would kill the process if a queued tick arrived later.
 *
 * Handler rules: async-signal-safe only (clock_gettime / rdtsc, plain
 * memory ops, relaxed atomics); errno saved and restored; every stack read
 * goes through ag_sampler_fp_walk's bounds.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include "agent/agent.h"
#include "agent/env.h"
#include "agent/ring_claim.h"
#include "agent/sampler.h"
#include "shm/clock.h"
#include "shm/region.h"
#include "shm/ring.h"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

#define AG_SAMPLER_SIGNAL SIGPROF

/* What an armed thread needs: allocated at its first arming (under g.lock),
 * freed by the thread itself at stop, after it is disarmed. A thread that is
 * never sampled (the sampler off, the collector's perf sampling in use) has
 * none, so the thread-local part below stays small: static TLS is taken
 * from every thread's stack. */
struct ag_sampler_arm {
    struct shm_producer p;      /* sampler ring: written by the handler only once armed */
    int32_t ring;               /* -1: none */
    int have_timer;
    timer_t timer;
    uint64_t stack_lo, stack_hi;
};

struct ag_sampler_thread {
    _Atomic int armed;          /* 1: arm is complete and the handler may use it */
    int registered;
    uint32_t tid;
    pthread_t self;
    struct ag_sampler_arm *arm; /* NULL until first armed; written before armed's release */
    struct ag_sampler_thread *next, *prev;
};

static __thread struct ag_sampler_thread g_st __attribute__((tls_model("initial-exec")));

static struct {
    pthread_mutex_t lock;
    struct ag_sampler_thread *head;
    struct ag_sampler_config cfg;
    struct ag_agent *a;
    int started;                /* ag_sampler_start ran with a usable config */
    int active;                 /* we own ITIMER and the handler is installed */
    int gave_up;                /* SIGPROF taken by the application */
    uint64_t start_ns;
    uint64_t period_ns;
    uint32_t clock_source;
    uint32_t armed_threads;
    _Atomic uint64_t samples, dropped;
} g = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* ---- pure parts ------------------------------------------------------------ */

int ag_sampler_config_parse(struct ag_sampler_config *c,
                            const char *(*get)(const char *name, void *ctx), void *ctx,
                            char *err, size_t errcap)
{
    c->want = AG_SAMPLER_AUTO;
    c->hz = AG_SAMPLER_HZ_DEFAULT;
    c->wait_ms = AG_SAMPLER_WAIT_MS_DEFAULT;
    const char *v = get("DIAL9_SAMPLER", ctx);
    if (v && *v) {
        if (!strcmp(v, "auto"))
            c->want = AG_SAMPLER_AUTO;
        else if (!strcmp(v, "itimer"))
            c->want = AG_SAMPLER_WANT_ITIMER;
        else if (!strcmp(v, "perf"))
            c->want = AG_SAMPLER_WANT_PERF;
        else if (!strcmp(v, "off"))
            c->want = AG_SAMPLER_OFF;
        else {
            snprintf(err, errcap, "d9: DIAL9_SAMPLER=%.64s is not auto, itimer, perf or off; "
                     "in-process profiling disabled", v);
            return -EINVAL;
        }
    }
    v = get("DIAL9_SAMPLER_HZ", ctx);
    if (v && *v && ag_env_parse_u32(v, 1, AG_SAMPLER_HZ_MAX, &c->hz) != 0) {
        snprintf(err, errcap, "d9: DIAL9_SAMPLER_HZ=%.64s is not in 1..%u; "
                 "in-process profiling disabled", v, AG_SAMPLER_HZ_MAX);
        return -EINVAL;
    }
    v = get("DIAL9_SAMPLER_WAIT_MS", ctx);
    if (v && *v && ag_env_parse_u32(v, 0, AG_SAMPLER_WAIT_MS_MAX, &c->wait_ms) != 0) {
        snprintf(err, errcap, "d9: DIAL9_SAMPLER_WAIT_MS=%.64s is not in 0..%u; "
                 "in-process profiling disabled", v, AG_SAMPLER_WAIT_MS_MAX);
        return -EINVAL;
    }
    return 0;
}

int ag_sampler_should_fallback(const struct ag_sampler_config *c, uint32_t mode,
                               uint64_t waited_ns)
{
    if (mode != D9_SAMPLER_NONE)
        return 0;               /* decided already (PERF: the collector's) */
    switch (c->want) {
    case AG_SAMPLER_WANT_ITIMER:
        return 1;
    case AG_SAMPLER_AUTO:
        return waited_ns >= (uint64_t)c->wait_ms * 1000000u;
    default:
        return 0;
    }
}

uint16_t ag_sampler_fp_walk(uint64_t ip, uint64_t fp, uint64_t sp, uint64_t lo, uint64_t hi,
                            uint64_t *out, uint16_t max, uint16_t *flags)
{
    uint16_t n = 0;
    *flags = 0;
    if (max == 0 || ip == 0)
        return 0;
    out[n++] = ip;
    /* the live part of the stack is [sp, hi): below sp nothing is promised */
    uint64_t floor = sp > lo ? sp : lo;
    if (sp < lo || sp >= hi)
        return n;               /* not on the stack we know (sigaltstack, coroutine) */
    while (n < max) {
        if (fp < floor || fp % 8 != 0 || fp > hi || hi - fp < 16)
            break;
        const uint64_t *frame = (const uint64_t *)(uintptr_t)fp;
        uint64_t next = frame[0], ret = frame[1];
        if (ret == 0)
            break;
        out[n++] = ret;
        if (next <= fp)         /* frames must move towards the stack base */
            break;
        fp = next;
    }
    if (n == max)
        *flags |= D9_STACK_TRUNCATED;
    return n;
}

/* ---- signal handler ------------------------------------------------------------ */

static uint64_t sample_ts(void)
{
    if (g.clock_source == D9_CLOCK_TSC)
        return shm_rdtsc();
    return shm_mono_ns();       /* clock_gettime: async-signal-safe */
}

static void on_sigprof(int sig, siginfo_t *si, void *ucv)
{
    (void)sig;
    int saved = errno;
    struct ag_sampler_thread *t = &g_st;
    /* acquire: pairs with the release in arm_thread; t->arm is complete */
    if (si->si_code != SI_TIMER || !atomic_load_explicit(&t->armed, memory_order_acquire))
        goto out;
    struct ag_sampler_arm *m = t->arm;
    ucontext_t *uc = ucv;
    uint64_t ip, fp, sp;
#if defined(__x86_64__)
    ip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    fp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
    sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    ip = (uint64_t)uc->uc_mcontext.pc;
    fp = (uint64_t)uc->uc_mcontext.regs[29];
    sp = (uint64_t)uc->uc_mcontext.sp;
#else
    (void)uc;
    goto out;
#endif
    uint64_t ips[AG_SAMPLER_MAX_FRAMES];
    uint16_t flags;
    uint16_t n = ag_sampler_fp_walk(ip, fp, sp, m->stack_lo, m->stack_hi, ips,
                                    AG_SAMPLER_MAX_FRAMES, &flags);
    uint32_t len = (uint32_t)(sizeof(struct d9_rec_stack) + (size_t)n * 8);
    struct d9_rec_stack *r = shm_ring_reserve(&m->p, len);
    if (!r) {
        atomic_fetch_add_explicit(&g.dropped, 1, memory_order_relaxed);
        goto out;
    }
    r->tid = t->tid;
    r->nframes = n;
    r->flags = flags;
    r->weight = g.period_ns;
    memcpy(r + 1, ips, (size_t)n * 8);
    shm_ring_commit(&m->p, r, len, D9_REC_CPU_SAMPLE, sample_ts());
    atomic_fetch_add_explicit(&g.samples, 1, memory_order_relaxed);
out:
    errno = saved;
}

/* ---- arming ----------------------------------------------------------------------- */

/* g.lock held. Claims t's sampler ring and starts its timer; the first
 * time, allocates t->arm (here, never on a record path). */
static void arm_thread(struct ag_sampler_thread *t)
{
    struct ag_agent *a = g.a;
    if (atomic_load_explicit(&t->armed, memory_order_relaxed) || !a->region.hdr ||
        !atomic_load_explicit(&a->live, memory_order_relaxed))
        return;
    if (!t->arm) {
        t->arm = calloc(1, sizeof *t->arm);
        if (!t->arm) {
            atomic_fetch_add_explicit(&g.dropped, 1, memory_order_relaxed);
            return;
        }
        t->arm->ring = -1;
    }
    struct ag_sampler_arm *m = t->arm;
    pthread_attr_t attr;
    void *addr;
    size_t size;
    if (pthread_getattr_np(t->self, &attr) != 0)
        return;
    int rc = pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        return;
    m->stack_lo = (uint64_t)(uintptr_t)addr;
    m->stack_hi = m->stack_lo + size;

    char name[D9_COMM_MAX] = { 0 };
    pthread_getname_np(t->self, name, sizeof name);
    int idx = ag_ring_claim(a, t->tid, name, &m->p);
    if (idx < 0) {
        atomic_fetch_add_explicit(&g.dropped, 1, memory_order_relaxed);
        return;
    }
    m->ring = idx;

    clockid_t cid;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = AG_SAMPLER_SIGNAL;
    sev.sigev_notify_thread_id = (pid_t)t->tid;
    if (pthread_getcpuclockid(t->self, &cid) != 0 || timer_create(cid, &sev, &m->timer) != 0) {
        shm_slot_release(&a->region, (uint32_t)idx);
        m->ring = -1;
        return;
    }
    m->have_timer = 1;
    /* release: t->arm, its producer and stack bounds happen-before the handler's use */
    atomic_store_explicit(&t->armed, 1, memory_order_release);
    struct itimerspec its;
    its.it_interval.tv_sec = (time_t)(g.period_ns / 1000000000u);
    its.it_interval.tv_nsec = (long)(g.period_ns % 1000000000u);
    its.it_value = its.it_interval;
    timer_settime(m->timer, 0, &its, NULL);
    g.armed_threads++;
}

/* g.lock held. Stops t's timer; the ring is released only by the thread
 * itself (release_ring), see the SPSC argument above. */
static void disarm_thread(struct ag_sampler_thread *t)
{
    if (atomic_load_explicit(&t->armed, memory_order_relaxed))
        g.armed_threads--;
    atomic_store_explicit(&t->armed, 0, memory_order_seq_cst);
    if (t->arm && t->arm->have_timer) {
        timer_delete(t->arm->timer);
        t->arm->have_timer = 0;
    }
}

/* g.lock held. */
static void activate_locked(struct ag_agent *a)
{
    struct d9_region_hdr *h = a->region.hdr;
    if (!h || g.active || g.gave_up)
        return;
    uint32_t expect = D9_SAMPLER_NONE;
    /* one CAS decides between us and the collector (see sampler.h) */
    if (!atomic_compare_exchange_strong(&h->sampler, &expect, D9_SAMPLER_ITIMER) &&
        expect != D9_SAMPLER_ITIMER)
        return;
    struct sigaction old, sa;
    sigaction(AG_SAMPLER_SIGNAL, NULL, &old);
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) {
        fprintf(stderr, "d9: SIGPROF is in use by the application; no in-process profiling\n");
        g.gave_up = 1;
        expect = D9_SAMPLER_ITIMER;
        atomic_compare_exchange_strong(&h->sampler, &expect, D9_SAMPLER_NONE);
        return;
    }
    if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction != on_sigprof) {
        fprintf(stderr, "d9: SIGPROF is in use by the application; no in-process profiling\n");
        g.gave_up = 1;
        expect = D9_SAMPLER_ITIMER;
        atomic_compare_exchange_strong(&h->sampler, &expect, D9_SAMPLER_NONE);
        return;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, AG_SAMPLER_SIGNAL);
    if (sigaction(AG_SAMPLER_SIGNAL, &sa, NULL) != 0)
        return;
    g.active = 1;
    for (struct ag_sampler_thread *t = g.head; t; t = t->next)
        arm_thread(t);
}

/* ---- hooks ----------------------------------------------------------------------- */

void ag_sampler_start(struct ag_agent *a, const char *(*get)(const char *name, void *ctx))
{
    char err[AG_ERR_MAX];
    struct ag_sampler_config c;
    if (ag_sampler_config_parse(&c, get, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    pthread_mutex_lock(&g.lock);
    g.cfg = c;
    g.a = a;
    g.clock_source = a->clock_source;
    g.period_ns = 1000000000u / c.hz;
    g.start_ns = shm_mono_ns();
    g.started = c.want != AG_SAMPLER_OFF;
    if (g.started && c.want == AG_SAMPLER_WANT_ITIMER)
        activate_locked(a);
    pthread_mutex_unlock(&g.lock);
}

void ag_sampler_thread_start(struct ag_agent *a)
{
    (void)a;
    struct ag_sampler_thread *t = &g_st;
    if (t->registered)
        return;
    /* registered even before ag_sampler_start ran (a thread may record its
     * first event while another is still inside d9_init): arming is what
     * depends on the sampler being started and active */
    pthread_mutex_lock(&g.lock);
    t->tid = (uint32_t)syscall(SYS_gettid);
    t->self = pthread_self();
    t->prev = NULL;
    t->next = g.head;
    if (g.head)
        g.head->prev = t;
    g.head = t;
    t->registered = 1;
    if (g.started && g.active)
        arm_thread(t);
    pthread_mutex_unlock(&g.lock);
}

void ag_sampler_thread_stop(struct ag_agent *a)
{
    struct ag_sampler_thread *t = &g_st;
    if (!t->registered)
        return;
    pthread_mutex_lock(&g.lock);
    disarm_thread(t);
    /* a SIGPROF still queued for this thread finds armed == 0 (stored
     * above, seen by a handler on this very thread in program order) and
     * never reaches the block freed here */
    atomic_signal_fence(memory_order_seq_cst);
    struct ag_sampler_arm *m = t->arm;
    t->arm = NULL;
    if (m && m->ring >= 0 && a->region.hdr)
        shm_slot_release(&a->region, (uint32_t)m->ring);
    free(m);
    if (t->prev)
        t->prev->next = t->next;
    else
        g.head = t->next;
    if (t->next)
        t->next->prev = t->prev;
    t->registered = 0;
    pthread_mutex_unlock(&g.lock);
}

void ag_sampler_tick(struct ag_agent *a)
{
    pthread_mutex_lock(&g.lock);
    if (g.started && !g.active && !g.gave_up && a->region.hdr) {
        uint32_t mode = atomic_load_explicit(&a->region.hdr->sampler, memory_order_acquire);
        if (ag_sampler_should_fallback(&g.cfg, mode, shm_mono_ns() - g.start_ns))
            activate_locked(a);
    }
    pthread_mutex_unlock(&g.lock);
}

void ag_sampler_stop(struct ag_agent *a)
{
    (void)a;
    pthread_mutex_lock(&g.lock);
    for (struct ag_sampler_thread *t = g.head; t; t = t->next)
        disarm_thread(t);
    g.started = 0;
    pthread_mutex_unlock(&g.lock);
    /* the handler stays installed: a tick already queued must not hit
     * SIGPROF's default action (terminate); it finds armed == 0 */
}

void ag_sampler_fork_child(void)
{
    /* POSIX timers are not inherited; the registry names threads that do
     * not exist here, and the lock may have been held by one of them */
    pthread_mutex_init(&g.lock, NULL);
    g.head = NULL;
    g.started = 0;
    g.active = 0;
    g.armed_threads = 0;
    /* the forking thread's arm block, if any, is left to the parent's copy of the heap */
    memset(&g_st, 0, sizeof g_st);
}

void ag_sampler_get_stats(struct ag_sampler_stats *out)
{
    pthread_mutex_lock(&g.lock);
    out->samples = atomic_load_explicit(&g.samples, memory_order_relaxed);
    out->dropped = atomic_load_explicit(&g.dropped, memory_order_relaxed);
    out->threads_armed = g.armed_threads;
    out->mode = g.active ? D9_SAMPLER_ITIMER : D9_SAMPLER_NONE;
    pthread_mutex_unlock(&g.lock);
}
