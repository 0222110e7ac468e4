/*
 * demo.c — d9demo: an instrumented multi-threaded C worker pool, the
 * workload of `make demo` and a load generator for benchmarks.
 *
 * Two runtimes:
 *   "demo"  N workers, each with a local run queue, plus one global queue;
 *           idle workers steal from each other, then park on a condition
 *           variable (real sleeps: d9_worker_park / d9_worker_unpark).
 *   "io"    one reactor thread that completes simulated I/O (timers) and
 *           wakes the waiting tasks onto their home worker (d9_wake).
 * Tasks:
 *   request   2-4 polls of a few tens of microseconds of CPU, each followed by
 *             a simulated I/O wait of 0.2-2 ms; the last poll emits the custom
 *             event "request_done" {path, status, latency_ms, worker}.
 *   fanout    spawns 3 child tasks onto the global queue and waits; the last
 *             child to finish wakes it (waker = that child's task id).
 *   report    one deliberately long poll: slow_checksum() computes for 80-150 ms,
 *             spawned every 500 ms from spawn_report_task(), so `d9 top-polls`
 *             lists that location first.
 * The number of tasks in flight is kept at --tasks: every finished top-level
 * task spawns a replacement. Queue depths are recorded on every push/pop.
 *
 * Tracing: d9_init() reads DIAL9_* (DIAL9_ENABLED=0 turns it off); --no-trace
 * skips d9_init entirely (every d9_* call is then one branch), for measuring
 * the overhead. At the end prints "d9demo: N tasks in S s (T tasks/s) ...".
 *
 * Must never: hold a queue lock while running a task, or leak a task at exit
 * (all tasks are on one registry list, freed at the end).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "agent/d9.h"

/* ---- defaults and limits (the only place they are written) ---------------- */
#define DEMO_SECONDS_DEFAULT    5.0
#define DEMO_SECONDS_MAX        86400.0
#define DEMO_WORKERS_DEFAULT    4               /* or the online CPUs, if fewer */
#define DEMO_WORKERS_MAX        64
#define DEMO_TASKS_DEFAULT      64
#define DEMO_TASKS_MAX          100000
#define DEMO_QUEUE_CAP          (2 * DEMO_TASKS_MAX + 1024)   /* tasks + children fit */
#define DEMO_PARK_TIMEOUT_NS    20000000ull     /* a parked worker re-checks every 20 ms */
#define DEMO_REPORT_EVERY_NS    500000000ull    /* a long "report" poll every 500 ms */
#define DEMO_SLOW_MS_MIN        80
#define DEMO_SLOW_MS_MAX        150
#define DEMO_FANOUT_CHILDREN    3
#define DEMO_FANOUT_PERCENT     20
#define DEMO_IO_MIN_US          200
#define DEMO_IO_MAX_US          2000
#define DEMO_IO_TICK_NS         1000000ull      /* the reactor's timer resolution */
#define DEMO_WORK_MIN_US        10
#define DEMO_WORK_MAX_US        60
#define DEMO_CAL_TRIES          5               /* work calibration: best of */
#define DEMO_CAL_ITERS          2000000u        /*   this many units (~1-2 ms each) */
#define DEMO_CAL_MAX            1e6             /* --work-calibration upper bound */

enum task_kind { TASK_REQUEST, TASK_FANOUT, TASK_CHILD, TASK_REPORT };
enum poll_result { POLL_READY, POLL_PENDING };

struct task {
    uint64_t id;
    enum task_kind kind;
    int step, nsteps;
    int home;                       /* worker it runs on after a wake */
    d9_loc loc;                     /* spawn location */
    struct task *parent;            /* TASK_CHILD */
    atomic_int children_left;       /* TASK_FANOUT */
    uint64_t spawned_ns;
    uint32_t rnd;
    struct task *reg_prev, *reg_next;   /* registry (all live tasks) */
    uint64_t due_ns;                /* io timer deadline */
};

struct queue {                      /* bounded FIFO of task pointers */
    pthread_mutex_t mu;
    struct task **slot;
    size_t head, len;
};

struct worker {
    int index;
    pthread_t thread;
    struct queue q;
    pthread_cond_t cv;              /* with q.mu */
    bool parked;                    /* under q.mu */
    uint64_t polls;
};

struct io_reactor {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct task **heap;             /* min-heap by due_ns */
    size_t n;
    uint64_t driver_task;           /* the reactor's own task id */
    uint64_t polls;                 /* the reactor's polls (read after the join) */
};

struct demo {
    int nworkers;
    int tasks;
    double seconds;
    bool trace;
    d9_runtime rt, io_rt;
    struct worker *w;
    struct queue global;
    struct io_reactor io;
    atomic_bool stop;
    atomic_uint_fast64_t next_id;
    atomic_uint_fast64_t completed;     /* top-level tasks finished */
    atomic_uint_fast64_t requests;
    pthread_mutex_t reg_mu;
    struct task *reg;
};

D9_SCHEMA(request_done, "request_done",
          D9_FIELD_STR("path"), D9_FIELD_U64("status"), D9_FIELD_F64("latency_ms"),
          D9_FIELD_U64("worker"));

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint32_t rnd_next(uint32_t *s)
{
    /* xorshift32: cheap, per task, no shared state */
    uint32_t x = *s ? *s : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *s = x;
    return x;
}

static unsigned rnd_range(uint32_t *s, unsigned lo, unsigned hi)
{
    return lo + rnd_next(s) % (hi - lo + 1);
}

/*
 * CPU work. Polls do a fixed amount of computation, not "spin until a
 * deadline": a poll that is preempted takes longer, as real code does, and
 * a task costs the same CPU whether the program is traced or not (with a
 * deadline, a preempted poll finished for free and throughput measured the
 * scheduler more than the work). One unit is one FNV-1a step; g_iters_per_us
 * is calibrated at start-up (fastest of DEMO_CAL_TRIES runs) or given with
 * --work-calibration so that paired benchmark runs do identical work.
 */
static double g_iters_per_us;
static _Atomic uint64_t g_work_sink;        /* keeps the work from being optimised out */

/* Frame-pointer stack walks (d9 flame) find a function's caller through the
 * frame the function sets up. GCC sets up none in a leaf function that needs
 * no stack, -mno-omit-leaf-frame-pointer notwithstanding, and the caller of
 * the hot loop would vanish from every sample; asking for the frame's address
 * makes it set one up. */
#define DEMO_KEEP_FRAME() __asm__ volatile("" : : "r"(__builtin_frame_address(0)))

static __attribute__((noinline)) uint64_t work_iters(uint64_t n)
{
    DEMO_KEEP_FRAME();
    uint64_t h = 1469598103934665603ull;
    for (uint64_t i = 0; i < n; i++)
        h = (h ^ (i & 0xff)) * 1099511628211ull;
    return h;
}

static void work_us(uint64_t us)
{
    uint64_t h = work_iters((uint64_t)((double)us * g_iters_per_us));
    atomic_fetch_xor_explicit(&g_work_sink, h, memory_order_relaxed);
}

static double calibrate_work(void)
{
    double best = 0;
    for (int k = 0; k < DEMO_CAL_TRIES; k++) {
        uint64_t t0 = now_ns();
        uint64_t h = work_iters(DEMO_CAL_ITERS);
        uint64_t dt = now_ns() - t0;
        atomic_fetch_xor_explicit(&g_work_sink, h, memory_order_relaxed);
        double r = dt ? (double)DEMO_CAL_ITERS * 1000.0 / (double)dt : 0;
        if (r > best)
            best = r;
    }
    return best > 0 ? best : 1.0;
}

/* The deliberately long poll: what `d9 top-polls` should find. */
static __attribute__((noinline)) void slow_checksum(unsigned ms)
{
    work_us((uint64_t)ms * 1000u);
}

/* ---- queues ------------------------------------------------------------------ */

static int queue_init(struct queue *q)
{
    pthread_mutex_init(&q->mu, NULL);
    q->slot = calloc(DEMO_QUEUE_CAP, sizeof *q->slot);
    q->head = q->len = 0;
    return q->slot ? 0 : -ENOMEM;
}

static void queue_destroy(struct queue *q)
{
    free(q->slot);
    pthread_mutex_destroy(&q->mu);
}

/* Caller holds q->mu. false when full. */
static bool queue_push_locked(struct queue *q, struct task *t)
{
    if (q->len == DEMO_QUEUE_CAP)
        return false;
    q->slot[(q->head + q->len) % DEMO_QUEUE_CAP] = t;
    q->len++;
    return true;
}

static struct task *queue_pop_locked(struct queue *q)
{
    if (q->len == 0)
        return NULL;
    struct task *t = q->slot[q->head];
    q->head = (q->head + 1) % DEMO_QUEUE_CAP;
    q->len--;
    return t;
}

/* ---- task registry ------------------------------------------------------------- */

static struct task *task_new(struct demo *d, enum task_kind kind, int home)
{
    struct task *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->id = atomic_fetch_add(&d->next_id, 1);
    t->kind = kind;
    t->home = home;
    t->spawned_ns = now_ns();
    t->rnd = (uint32_t)(t->id * 2654435761u) | 1u;
    pthread_mutex_lock(&d->reg_mu);
    t->reg_next = d->reg;
    if (d->reg)
        d->reg->reg_prev = t;
    d->reg = t;
    pthread_mutex_unlock(&d->reg_mu);
    return t;
}

static void task_free(struct demo *d, struct task *t)
{
    pthread_mutex_lock(&d->reg_mu);
    if (t->reg_prev)
        t->reg_prev->reg_next = t->reg_next;
    else
        d->reg = t->reg_next;
    if (t->reg_next)
        t->reg_next->reg_prev = t->reg_prev;
    pthread_mutex_unlock(&d->reg_mu);
    free(t);
}

/* ---- scheduling ---------------------------------------------------------------- */

static void wake_one_parked(struct demo *d)
{
    for (int i = 0; i < d->nworkers; i++) {
        struct worker *w = &d->w[i];
        pthread_mutex_lock(&w->q.mu);
        bool p = w->parked;
        if (p)
            pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->q.mu);
        if (p)
            return;
    }
}

static void push_global(struct demo *d, struct task *t)
{
    pthread_mutex_lock(&d->global.mu);
    bool ok = queue_push_locked(&d->global, t);
    size_t depth = d->global.len;
    pthread_mutex_unlock(&d->global.mu);
    if (!ok) {                      /* cannot happen with DEMO_QUEUE_CAP; stay safe */
        task_free(d, t);
        return;
    }
    d9_queue_depth(d->rt, D9_WORKER_NONE_ID, depth);
    wake_one_parked(d);
}

static void push_local(struct demo *d, int wi, struct task *t)
{
    struct worker *w = &d->w[wi];
    pthread_mutex_lock(&w->q.mu);
    bool ok = queue_push_locked(&w->q, t);
    size_t depth = w->q.len;
    if (ok && w->parked)
        pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->q.mu);
    if (!ok) {
        push_global(d, t);
        return;
    }
    d9_queue_depth(d->rt, (uint16_t)wi, depth);
}

static void spawn(struct demo *d, struct task *t)
{
    if (!t)
        return;
    d9_task_spawn(d->rt, t->id, t->loc);
    push_global(d, t);
}

static void spawn_request_task(struct demo *d, int home)
{
    struct task *t = task_new(d, TASK_REQUEST, home);
    if (!t)
        return;
    t->loc = D9_LOC();
    t->nsteps = (int)rnd_range(&t->rnd, 2, 4);
    spawn(d, t);
}

static void spawn_fanout_task(struct demo *d, int home)
{
    struct task *t = task_new(d, TASK_FANOUT, home);
    if (!t)
        return;
    t->loc = D9_LOC();
    spawn(d, t);
}

static void spawn_child_task(struct demo *d, struct task *parent)
{
    struct task *t = task_new(d, TASK_CHILD, parent->home);
    if (!t)
        return;
    t->loc = D9_LOC();
    t->parent = parent;
    spawn(d, t);
}

static void spawn_report_task(struct demo *d)
{
    struct task *t = task_new(d, TASK_REPORT, 0);
    if (!t)
        return;
    t->loc = D9_LOC();
    spawn(d, t);
}

static void spawn_top_level(struct demo *d, uint32_t *rnd, int home)
{
    if (rnd_range(rnd, 1, 100) <= DEMO_FANOUT_PERCENT)
        spawn_fanout_task(d, home);
    else
        spawn_request_task(d, home);
}

/* ---- io reactor ----------------------------------------------------------------- */

static void io_heap_push(struct io_reactor *io, struct task *t)
{
    size_t i = io->n++;
    io->heap[i] = t;
    while (i > 0 && io->heap[(i - 1) / 2]->due_ns > io->heap[i]->due_ns) {
        struct task *x = io->heap[(i - 1) / 2];
        io->heap[(i - 1) / 2] = io->heap[i];
        io->heap[i] = x;
        i = (i - 1) / 2;
    }
}

static struct task *io_heap_pop(struct io_reactor *io)
{
    struct task *top = io->heap[0];
    io->heap[0] = io->heap[--io->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < io->n && io->heap[l]->due_ns < io->heap[m]->due_ns)
            m = l;
        if (r < io->n && io->heap[r]->due_ns < io->heap[m]->due_ns)
            m = r;
        if (m == i)
            break;
        struct task *x = io->heap[m];
        io->heap[m] = io->heap[i];
        io->heap[i] = x;
        i = m;
    }
    return top;
}

/* Park t until its simulated I/O completes. */
static void io_submit(struct demo *d, struct task *t, uint64_t wait_ns)
{
    t->due_ns = now_ns() + wait_ns;
    pthread_mutex_lock(&d->io.mu);
    bool first = d->io.n == 0 || t->due_ns < d->io.heap[0]->due_ns;
    io_heap_push(&d->io, t);
    if (first)
        pthread_cond_signal(&d->io.cv);
    pthread_mutex_unlock(&d->io.mu);
}

static void *io_main(void *arg)
{
    struct demo *d = arg;
    pthread_setname_np(pthread_self(), "demo-io");
    struct task *due[256];
    pthread_mutex_lock(&d->io.mu);
    while (!atomic_load(&d->stop)) {
        uint64_t now = now_ns();
        if (d->io.n == 0 || d->io.heap[0]->due_ns > now) {
            struct timespec ts;
            /* a timer wheel's resolution, as async runtimes have (Tokio:
             * 1 ms): sleep to the tick after the next due time, not to the
             * microsecond (tens of thousands of timer wake-ups a second) */
            uint64_t until = d->io.n ? d->io.heap[0]->due_ns : now + DEMO_PARK_TIMEOUT_NS;
            until = (until + DEMO_IO_TICK_NS - 1) / DEMO_IO_TICK_NS * DEMO_IO_TICK_NS;
            ts.tv_sec = (time_t)(until / 1000000000u);
            ts.tv_nsec = (long)(until % 1000000000u);
            d9_worker_park(d->io_rt, 0);
            pthread_cond_timedwait(&d->io.cv, &d->io.mu, &ts);
            d9_worker_unpark(d->io_rt, 0);
            continue;
        }
        size_t n = 0;
        while (n < sizeof due / sizeof due[0] && d->io.n && d->io.heap[0]->due_ns <= now)
            due[n++] = io_heap_pop(&d->io);
        pthread_mutex_unlock(&d->io.mu);
        /* the reactor's own "poll": complete the I/O and wake the waiters */
        d9_poll_start(d->io_rt, 0, d->io.driver_task, D9_LOC());
        for (size_t i = 0; i < n; i++) {
            d9_wake(d->rt, d->io.driver_task, due[i]->id, (uint16_t)due[i]->home);
            push_local(d, due[i]->home, due[i]);
        }
        d9_poll_end(d->io_rt, 0, d->io.driver_task);
        d->io.polls++;
        pthread_mutex_lock(&d->io.mu);
    }
    pthread_mutex_unlock(&d->io.mu);
    return NULL;
}

/* ---- tasks ---------------------------------------------------------------------- */

static enum poll_result poll_task(struct demo *d, struct worker *w, struct task *t)
{
    t->home = w->index;
    switch (t->kind) {
    case TASK_REPORT:
        slow_checksum(rnd_range(&t->rnd, DEMO_SLOW_MS_MIN, DEMO_SLOW_MS_MAX));
        return POLL_READY;
    case TASK_CHILD:
        work_us(rnd_range(&t->rnd, DEMO_WORK_MIN_US, DEMO_WORK_MAX_US));
        return POLL_READY;
    case TASK_FANOUT:
        if (t->step++ == 0) {
            atomic_store(&t->children_left, DEMO_FANOUT_CHILDREN);
            for (int i = 0; i < DEMO_FANOUT_CHILDREN; i++)
                spawn_child_task(d, t);
            return POLL_PENDING;    /* the last child wakes us */
        }
        return POLL_READY;
    case TASK_REQUEST:
        work_us(rnd_range(&t->rnd, DEMO_WORK_MIN_US, DEMO_WORK_MAX_US));
        if (++t->step < t->nsteps) {
            io_submit(d, t, (uint64_t)rnd_range(&t->rnd, DEMO_IO_MIN_US, DEMO_IO_MAX_US) * 1000u);
            return POLL_PENDING;
        }
        return POLL_READY;
    }
    return POLL_READY;
}

static void finish_task(struct demo *d, struct worker *w, struct task *t)
{
    d9_task_terminate(d->rt, t->id);
    switch (t->kind) {
    case TASK_REQUEST: {
        static const char *const paths[] = { "/api/users", "/api/orders", "/static/app.js",
                                             "/api/search", "/healthz" };
        static const unsigned statuses[] = { 200, 200, 200, 200, 200, 200, 404, 500 };
        char path[64];
        uint32_t r = rnd_next(&t->rnd);
        snprintf(path, sizeof path, "%s/%" PRIu64, paths[r % 5], t->id);
        double ms = (double)(now_ns() - t->spawned_ns) / 1e6;
        d9_emit(&request_done, D9_STR(path), D9_U64(statuses[(r >> 8) % 8]), D9_F64(ms),
                D9_U64((uint64_t)w->index));
        atomic_fetch_add(&d->requests, 1);
        break;
    }
    case TASK_CHILD: {
        struct task *p = t->parent;
        if (atomic_fetch_sub(&p->children_left, 1) == 1) {
            d9_wake(d->rt, t->id, p->id, (uint16_t)p->home);
            push_local(d, p->home, p);
        }
        break;
    }
    default:
        break;
    }
    bool top_level = t->kind == TASK_REQUEST || t->kind == TASK_FANOUT;
    uint32_t rnd = t->rnd;
    task_free(d, t);
    if (top_level) {
        atomic_fetch_add(&d->completed, 1);
        if (!atomic_load(&d->stop))
            spawn_top_level(d, &rnd, w->index);
    }
}

/* ---- workers -------------------------------------------------------------------- */

static struct task *find_work(struct demo *d, struct worker *w)
{
    struct task *t;
    size_t depth;
    pthread_mutex_lock(&w->q.mu);
    t = queue_pop_locked(&w->q);
    depth = w->q.len;
    pthread_mutex_unlock(&w->q.mu);
    if (t) {
        d9_queue_depth(d->rt, (uint16_t)w->index, depth);
        return t;
    }
    pthread_mutex_lock(&d->global.mu);
    t = queue_pop_locked(&d->global);
    depth = d->global.len;
    pthread_mutex_unlock(&d->global.mu);
    if (t) {
        d9_queue_depth(d->rt, D9_WORKER_NONE_ID, depth);
        return t;
    }
    for (int k = 1; k < d->nworkers; k++) {         /* steal */
        struct worker *v = &d->w[(w->index + k) % d->nworkers];
        pthread_mutex_lock(&v->q.mu);
        t = v->q.len > 1 ? queue_pop_locked(&v->q) : NULL;
        depth = v->q.len;
        pthread_mutex_unlock(&v->q.mu);
        if (t) {
            d9_queue_depth(d->rt, (uint16_t)v->index, depth);
            return t;
        }
    }
    return NULL;
}

static bool global_empty(struct demo *d)
{
    pthread_mutex_lock(&d->global.mu);
    bool e = d->global.len == 0;
    pthread_mutex_unlock(&d->global.mu);
    return e;
}

static void park(struct demo *d, struct worker *w)
{
    pthread_mutex_lock(&w->q.mu);
    if (w->q.len == 0 && !atomic_load(&d->stop)) {
        w->parked = true;
        d9_worker_park(d->rt, (uint16_t)w->index);
        struct timespec ts;
        uint64_t until = now_ns() + DEMO_PARK_TIMEOUT_NS;
        ts.tv_sec = (time_t)(until / 1000000000u);
        ts.tv_nsec = (long)(until % 1000000000u);
        pthread_cond_timedwait(&w->cv, &w->q.mu, &ts);
        w->parked = false;
        d9_worker_unpark(d->rt, (uint16_t)w->index);
    }
    pthread_mutex_unlock(&w->q.mu);
}

struct worker_arg {
    struct demo *d;
    struct worker *w;
};

static void *worker_main(void *arg)
{
    struct worker_arg *wa = arg;
    struct demo *d = wa->d;
    struct worker *w = wa->w;
    char name[16];
    snprintf(name, sizeof name, "demo-w%d", w->index);
    pthread_setname_np(pthread_self(), name);
    while (!atomic_load(&d->stop)) {
        struct task *t = find_work(d, w);
        if (!t) {
            if (global_empty(d))
                park(d, w);
            continue;
        }
        /* once poll_task returns PENDING, t may already be running on
         * another worker (woken meanwhile): do not touch it after that */
        uint64_t id = t->id;
        d9_poll_start(d->rt, (uint16_t)w->index, id, t->loc);
        enum poll_result r = poll_task(d, w, t);
        d9_poll_end(d->rt, (uint16_t)w->index, id);
        w->polls++;
        if (r == POLL_READY)
            finish_task(d, w, t);
    }
    return NULL;
}

/* ---- main ----------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
"NAME\n"
"    d9demo - an instrumented worker pool, traced with libd9agent\n"
"\n"
"SYNOPSIS\n"
"    d9demo [--seconds S] [--workers N] [--tasks N] [--no-trace]\n"
"\n"
"DESCRIPTION\n"
"    Runs a runtime \"demo\" (N workers with local queues, a global queue,\n"
"    work stealing, parking) and a runtime \"io\" (a reactor completing\n"
"    simulated I/O and waking tasks). Tasks are requests (a few polls\n"
"    separated by 0.2-2 ms I/O waits, ending with the custom event\n"
"    \"request_done\" {path, status, latency_ms, worker}), fan-outs (three\n"
"    children, the last one wakes the parent) and every 500 ms a \"report\"\n"
"    whose single poll computes for 80-150 ms in slow_checksum(): the long polls\n"
"    `d9 top-polls` should list first. Prints the throughput at the end.\n"
"\n"
"OPTIONS\n"
"    --seconds S   run time, may be fractional (default %.0f, at most %.0f)\n"
"    --workers N   workers of the demo runtime, 1..%d (default %d, or the\n"
"                  number of online CPUs when that is smaller)\n"
"    --tasks N     top-level tasks in flight, 1..%d (default %d)\n"
"    --no-trace    do not call d9_init (no tracing at all; for overhead runs).\n"
"    --work-calibration N\n"
"                  units of work per microsecond of CPU (default: measured at\n"
"                  start, the fastest of %d runs). Polls do fixed work, so runs\n"
"                  given the same N do the same work: for paired benchmarks.\n"
"                  DIAL9_ENABLED=0 also turns tracing off.\n"
"    -h, --help    this help\n"
"\n"
"ENVIRONMENT\n"
"    DIAL9_* as read by d9_init (see d9.h): DIAL9_ENABLED, DIAL9_COLLECTOR,\n"
"    DIAL9_SHM_DIR, DIAL9_RING_KB, DIAL9_MAX_THREADS.\n"
"\n"
"EXIT STATUS\n"
"    0 ran to completion, 1 could not start, 2 bad usage\n",
            DEMO_SECONDS_DEFAULT, DEMO_SECONDS_MAX, DEMO_WORKERS_MAX, DEMO_WORKERS_DEFAULT,
            DEMO_TASKS_MAX, DEMO_TASKS_DEFAULT, DEMO_CAL_TRIES);
}

static int bad(const char *opt, const char *v)
{
    fprintf(stderr, "d9demo: %s: bad value '%s'\nTry 'd9demo --help'.\n", opt, v);
    return 2;
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

int main(int argc, char **argv)
{
    static struct demo d;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    d.nworkers = ncpu > 0 && ncpu < DEMO_WORKERS_DEFAULT ? (int)ncpu : DEMO_WORKERS_DEFAULT;
    d.tasks = DEMO_TASKS_DEFAULT;
    d.seconds = DEMO_SECONDS_DEFAULT;
    d.trace = true;
    static const struct option opts[] = {
        { "seconds", 1, NULL, 's' }, { "workers", 1, NULL, 'w' }, { "tasks", 1, NULL, 't' },
        { "no-trace", 0, NULL, 'n' }, { "work-calibration", 1, NULL, 'c' },
        { "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 },
    };
    int c;
    long v;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 's': {
            char *end;
            errno = 0;
            d.seconds = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(d.seconds > 0) || d.seconds > DEMO_SECONDS_MAX)
                return bad("--seconds", optarg);
            break;
        }
        case 'w':
            if (!parse_long(optarg, 1, DEMO_WORKERS_MAX, &v))
                return bad("--workers", optarg);
            d.nworkers = (int)v;
            break;
        case 't':
            if (!parse_long(optarg, 1, DEMO_TASKS_MAX, &v))
                return bad("--tasks", optarg);
            d.tasks = (int)v;
            break;
        case 'n':
            d.trace = false;
            break;
        case 'c': {
            char *end;
            errno = 0;
            g_iters_per_us = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(g_iters_per_us >= 1) ||
                g_iters_per_us > DEMO_CAL_MAX)
                return bad("--work-calibration", optarg);
            break;
        }
        case 'h':
            usage(stdout);
            return 0;
        case ':':
            fprintf(stderr, "d9demo: option '%s' needs a value\nTry 'd9demo --help'.\n",
                    argv[optind - 1]);
            return 2;
        default:
            fprintf(stderr, "d9demo: unknown option '%s'\nTry 'd9demo --help'.\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "d9demo: unexpected argument '%s'\nTry 'd9demo --help'.\n", argv[optind]);
        return 2;
    }

    if (g_iters_per_us == 0)
        g_iters_per_us = calibrate_work();
    int trc = d.trace ? d9_init() : 1;
    d9_runtime_register("demo", &d.rt);
    d9_runtime_register("io", &d.io_rt);

    atomic_init(&d.next_id, 1);
    pthread_mutex_init(&d.reg_mu, NULL);
    pthread_mutex_init(&d.io.mu, NULL);
    /* deadlines are CLOCK_MONOTONIC (now_ns): so must the condition
     * variables be (their default, CLOCK_REALTIME, made every timed wait
     * return at once and the reactor a busy loop) */
    pthread_condattr_t mono;
    pthread_condattr_init(&mono);
    pthread_condattr_setclock(&mono, CLOCK_MONOTONIC);
    pthread_cond_init(&d.io.cv, &mono);
    d.io.heap = calloc(DEMO_QUEUE_CAP, sizeof *d.io.heap);
    d.w = calloc((size_t)d.nworkers, sizeof *d.w);
    struct worker_arg *wa = calloc((size_t)d.nworkers, sizeof *wa);
    if (!d.io.heap || !d.w || !wa || queue_init(&d.global) < 0) {
        fprintf(stderr, "d9demo: out of memory\n");
        return 1;
    }
    d.io.driver_task = atomic_fetch_add(&d.next_id, 1);
    for (int i = 0; i < d.nworkers; i++) {
        d.w[i].index = i;
        pthread_cond_init(&d.w[i].cv, &mono);
        if (queue_init(&d.w[i].q) < 0) {
            fprintf(stderr, "d9demo: out of memory\n");
            return 1;
        }
    }
    uint64_t t0 = now_ns();
    for (int i = 0; i < d.nworkers; i++) {
        wa[i] = (struct worker_arg){ &d, &d.w[i] };
        if (pthread_create(&d.w[i].thread, NULL, worker_main, &wa[i]) != 0) {
            fprintf(stderr, "d9demo: cannot start worker %d\n", i);
            return 1;
        }
    }
    if (pthread_create(&d.io.thread, NULL, io_main, &d) != 0) {
        fprintf(stderr, "d9demo: cannot start the io thread\n");
        return 1;
    }
    uint32_t rnd = 12345;
    for (int i = 0; i < d.tasks; i++)
        spawn_top_level(&d, &rnd, i % d.nworkers);

    uint64_t end = t0 + (uint64_t)(d.seconds * 1e9), next_report = t0;
    for (;;) {
        uint64_t now = now_ns();
        if (now >= end)
            break;
        if (now >= next_report) {
            spawn_report_task(&d);
            next_report += DEMO_REPORT_EVERY_NS;
        }
        uint64_t sleep_ns = next_report < end ? next_report - now : end - now;
        struct timespec ts = { (time_t)(sleep_ns / 1000000000u), (long)(sleep_ns % 1000000000u) };
        nanosleep(&ts, NULL);
    }
    atomic_store(&d.stop, true);
    for (int i = 0; i < d.nworkers; i++) {
        pthread_mutex_lock(&d.w[i].q.mu);
        pthread_cond_signal(&d.w[i].cv);
        pthread_mutex_unlock(&d.w[i].q.mu);
    }
    pthread_mutex_lock(&d.io.mu);
    pthread_cond_signal(&d.io.cv);
    pthread_mutex_unlock(&d.io.mu);
    for (int i = 0; i < d.nworkers; i++)
        pthread_join(d.w[i].thread, NULL);
    pthread_join(d.io.thread, NULL);
    double secs = (double)(now_ns() - t0) / 1e9;

    uint64_t polls = 0;
    for (int i = 0; i < d.nworkers; i++)
        polls += d.w[i].polls;
    uint64_t done = atomic_load(&d.completed);
    d9_stats st = { 0 };
    d9_get_stats(&st);
    /* CPU of every thread of the process, the agent's included */
    struct rusage ru;
    double cpu = getrusage(RUSAGE_SELF, &ru) == 0
        ? (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
          ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6 : 0;
    /* the polls of both runtimes, as `d9 top-polls` counts them */
    printf("d9demo: %" PRIu64 " tasks in %.2f s (%.0f tasks/s), %" PRIu64 " polls (demo %" PRIu64
           ", io %" PRIu64 "), %d workers, "
           "tracing %s, %" PRIu64 " events lost, work calibration %.1f, cpu %.3f s\n",
           done, secs, (double)done / secs, polls + d.io.polls, polls, d.io.polls, d.nworkers,
           trc == 0 ? "on" : trc == 1 ? "off" : "failed", st.lost, g_iters_per_us, cpu);

    /* everything still queued, waiting on I/O or on children */
    while (d.reg)
        task_free(&d, d.reg);
    for (int i = 0; i < d.nworkers; i++) {
        queue_destroy(&d.w[i].q);
        pthread_cond_destroy(&d.w[i].cv);
    }
    queue_destroy(&d.global);
    free(d.io.heap);
    free(d.w);
    free(wa);
    return 0;
}
