/*
 * serve_pool.c — worker threads for d9 serve's API (see serve_pool.h).
 *
 * One mutex guards the queue and the counters; a condition variable wakes
 * workers. A worker takes the first job it may run (the first light job,
 * or the first job when fewer than heavy_max heavy ones are running),
 * drops the lock, checks the client, runs serve_api() on its own store
 * (its scans consult the client every few blocks: q_scan_set_cancel) and
 * calls done() without holding the lock.
 *
 * Test hook: D9_TEST_SERVE_HEAVY_MS=N (1..10000, read once at start) makes
 * every heavy job wait N ms before it runs, so a test can hold the heavy
 * workers busy for a known time whatever the store's size and the
 * machine's speed (test_serve_hostile: a cheap request is not held behind
 * them). Unset or out of range: no wait.
 *
 * Test hook: D9_TEST_SERVE_SCAN_HOLD=1 makes a job's first cancellation
 * test (its first block) wait until its client has gone (at most
 * POOL_HOLD_MAX_MS), so a test can disconnect while a scan is surely
 * running and see (in the request log) that it stopped there.
 *
 * Request log: D9_SERVE_LOG=1 (read once at start) prints one line per
 * job to stderr when it starts ("started") and one when it ends: its path
 * and window, its status ("gone": the client left; "cancelled" when its
 * scans stopped for that), the ms it waited in the queue and ran, and the
 * records its scans read. For measuring the page (bench_serve_zoom.sh
 * keeps it in its temp dir with BENCH_KEEP=1) and for
 * test_serve_requests.sh.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include "collector/query/q_scan.h"
#include "collector/query/q_store.h"
#include "collector/serve/serve_pool.h"

#define POOL_FLAME_PATH  "/api/flame"
#define POOL_FINDINGS_PATH "/api/findings"
#define POOL_EVENTS_PATH "/api/events"
#define POOL_HOLD_MAX_MS 20000u     /* D9_TEST_SERVE_SCAN_HOLD's bound */

struct pool_worker {
    struct serve_pool *pl;
    struct q_store *s;
    pthread_t th;
    bool started;
};

struct serve_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct serve_job *head, *tail;
    unsigned heavy_running, heavy_max;
    unsigned heavy_delay_ms;    /* the test hook above; 0: none */
    bool scan_hold;             /* D9_TEST_SERVE_SCAN_HOLD */
    bool log;                   /* D9_SERVE_LOG */
    bool stopping;
    unsigned n;
    struct pool_worker w[SERVE_POOL_WORKERS_MAX];
};

bool serve_pool_is_heavy(const char *path)
{
    return strcmp(path, POOL_FLAME_PATH) == 0 || strcmp(path, POOL_FINDINGS_PATH) == 0 ||
           strcmp(path, POOL_EVENTS_PATH) == 0;
}

/* The first job a worker may take now, unlinked; NULL if none. Lock held. */
static struct serve_job *take(struct serve_pool *pl)
{
    struct serve_job *prev = NULL;
    for (struct serve_job *j = pl->head; j; prev = j, j = j->next) {
        if (j->heavy && pl->heavy_running >= pl->heavy_max)
            continue;
        if (prev)
            prev->next = j->next;
        else
            pl->head = j->next;
        if (pl->tail == j)
            pl->tail = prev;
        j->next = NULL;
        return j;
    }
    return NULL;
}

/* true when the client closed or reset its connection: peeked, never read. */
static bool client_gone(int fd)
{
    if (fd < 0)
        return false;
    char c;
    ssize_t r = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r == 0)
        return true;
    return r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

static double ms_since(const struct timespec *a)
{
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (double)(b.tv_sec - a->tv_sec) * 1e3 + (double)(b.tv_nsec - a->tv_nsec) / 1e6;
}

/* what a running job's cancellation test needs */
struct job_run {
    struct serve_job *j;
    bool hold;                  /* D9_TEST_SERVE_SCAN_HOLD, not yet done */
    bool cancelled;             /* the test said gone */
};

/* q_scan's cancellation test while a job runs: its client has gone */
static bool job_gone(void *arg)
{
    struct job_run *r = arg;
    if (r->hold) {
        r->hold = false;
        struct timespec t0, ts = { 0, 10 * 1000000L };
        clock_gettime(CLOCK_MONOTONIC, &t0);
        while (!client_gone(r->j->fd) && ms_since(&t0) < POOL_HOLD_MAX_MS)
            nanosleep(&ts, NULL);
    }
    if (client_gone(r->j->fd))
        r->cancelled = true;
    return r->cancelled;
}

static void log_job(const struct serve_job *j, const char *how, double wait_ms, double run_ms,
                    uint64_t records)
{
    char win[96] = "";
    if (j->p.has_from || j->p.has_to)
        snprintf(win, sizeof win, " from=%" PRIu64 " to=%" PRIu64, j->p.from, j->p.to);
    fprintf(stderr, "d9 serve: request %s pid=%" PRIu32 "%s width=%" PRIu32 ": %s, waited %.1f ms,"
            " ran %.1f ms, %" PRIu64 " records read\n", j->path, j->p.pid, win, j->p.width, how,
            wait_ms, run_ms, records);
}

static void run(struct serve_pool *pl, struct pool_worker *w, struct serve_job *j)
{
    double wait_ms = ms_since(&j->queued);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t rec0 = q_scan_thread_records();
    j->status = 0;
    j->body = NULL;
    j->len = 0;
    if (client_gone(j->fd)) {
        if (pl->log)
            log_job(j, "gone before it ran", wait_ms, 0, 0);
        return;
    }
    FILE *f = open_memstream(&j->body, &j->len);
    if (!f)
        return;
    if (pl->log)
        log_job(j, "started", wait_ms, 0, 0);
    struct job_run r = { .j = j, .hold = pl->scan_hold };
    q_scan_set_cancel(job_gone, &r);
    int status = serve_api(w->s, j->path, &j->p, f);
    q_scan_set_cancel(NULL, NULL);
    bool gone = fclose(f) != 0 || client_gone(j->fd);
    if (pl->log) {
        char how[48];
        snprintf(how, sizeof how, "%s", r.cancelled ? "gone, cancelled" : gone ? "gone" : "");
        if (!gone)
            snprintf(how, sizeof how, "%d", status);
        log_job(j, how, wait_ms, ms_since(&t0), q_scan_thread_records() - rec0);
    }
    if (gone) {                     /* gone: the scan may have stopped early */
        free(j->body);
        j->body = NULL;
        j->len = 0;
        return;
    }
    j->status = status;
}

static void *worker_main(void *arg)
{
    struct pool_worker *w = arg;
    struct serve_pool *pl = w->pl;
    pthread_mutex_lock(&pl->mu);
    for (;;) {
        struct serve_job *j = NULL;
        while (!pl->stopping && !(j = take(pl)))
            pthread_cond_wait(&pl->cv, &pl->mu);
        if (!j)
            break;
        bool heavy = j->heavy;
        if (heavy)
            pl->heavy_running++;
        pthread_mutex_unlock(&pl->mu);
        if (heavy && pl->heavy_delay_ms) {
            struct timespec ts = { pl->heavy_delay_ms / 1000, (long)(pl->heavy_delay_ms % 1000) * 1000000L };
            while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
        }
        run(pl, w, j);
        j->done(j);
        pthread_mutex_lock(&pl->mu);
        if (heavy) {
            pl->heavy_running--;
            pthread_cond_broadcast(&pl->cv);    /* a waiting heavy job may go now */
        }
    }
    pthread_mutex_unlock(&pl->mu);
    return NULL;
}

int serve_pool_start(struct serve_pool **out, const char *dir, unsigned workers, char *why,
                     size_t whycap)
{
    *out = NULL;
    if (workers == 0 || workers > SERVE_POOL_WORKERS_MAX) {
        snprintf(why, whycap, "workers: %u is not in 1..%u", workers, SERVE_POOL_WORKERS_MAX);
        return -EINVAL;
    }
    struct serve_pool *pl = calloc(1, sizeof *pl);
    if (!pl) {
        snprintf(why, whycap, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_init(&pl->mu, NULL);
    pthread_cond_init(&pl->cv, NULL);
    pl->heavy_max = workers > 1 ? workers - 1 : 1;
    const char *hd = getenv("D9_TEST_SERVE_HEAVY_MS");
    if (hd && *hd) {
        char *end;
        unsigned long v = strtoul(hd, &end, 10);
        if (*end == '\0' && v >= 1 && v <= 10000)
            pl->heavy_delay_ms = (unsigned)v;
    }
    const char *sh = getenv("D9_TEST_SERVE_SCAN_HOLD");
    pl->scan_hold = sh && strcmp(sh, "1") == 0;
    const char *lg = getenv("D9_SERVE_LOG");
    pl->log = lg && strcmp(lg, "1") == 0;
    int rc = 0;
    for (unsigned i = 0; i < workers && rc == 0; i++) {
        pl->w[i].pl = pl;
        rc = q_store_open(&pl->w[i].s, dir, why, whycap);
        if (rc < 0)
            break;
        pl->n = i + 1;
        int e = pthread_create(&pl->w[i].th, NULL, worker_main, &pl->w[i]);
        if (e != 0) {
            snprintf(why, whycap, "cannot start a worker thread: %s", strerror(e));
            rc = -e;
            break;
        }
        pl->w[i].started = true;
    }
    if (rc < 0) {
        serve_pool_stop(pl);
        return rc;
    }
    *out = pl;
    return 0;
}

void serve_pool_submit(struct serve_pool *pl, struct serve_job *j)
{
    j->next = NULL;
    clock_gettime(CLOCK_MONOTONIC, &j->queued);
    pthread_mutex_lock(&pl->mu);
    if (pl->stopping) {
        pthread_mutex_unlock(&pl->mu);
        j->status = 0;
        j->body = NULL;
        j->len = 0;
        j->done(j);
        return;
    }
    if (pl->tail)
        pl->tail->next = j;
    else
        pl->head = j;
    pl->tail = j;
    /* every worker looks: the first one may only take light jobs */
    pthread_cond_broadcast(&pl->cv);
    pthread_mutex_unlock(&pl->mu);
}

void serve_pool_stop(struct serve_pool *pl)
{
    if (!pl)
        return;
    pthread_mutex_lock(&pl->mu);
    pl->stopping = true;
    struct serve_job *q = pl->head;
    pl->head = pl->tail = NULL;
    pthread_cond_broadcast(&pl->cv);
    pthread_mutex_unlock(&pl->mu);
    while (q) {
        struct serve_job *next = q->next;
        q->status = 0;
        q->body = NULL;
        q->len = 0;
        q->done(q);
        q = next;
    }
    for (unsigned i = 0; i < pl->n; i++) {
        if (pl->w[i].started)
            pthread_join(pl->w[i].th, NULL);
        q_store_close(pl->w[i].s);
    }
    pthread_cond_destroy(&pl->cv);
    pthread_mutex_destroy(&pl->mu);
    free(pl);
}
