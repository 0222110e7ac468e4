/*
 * ship.c — the upload threads of --ship (see ship.h for the contract).
 *
 * Each thread loops: pick the oldest segment that is not shipped, whose
 * backoff has passed and that no other thread holds (idx_upload_next with
 * the in-flight set), record the attempt, upload segment then manifest,
 * record the outcome. With nothing to do it sleeps until ship_kick or
 * SHIP_IDLE_NS. The index is read and written through this thread's own
 * connection; the ship mutex guards only the in-flight set and the stats.
 */
#include "collector/daemon/ship.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector/daemon/config.h"
#include "collector/s3/s3_client.h"
#include "collector/s3/s3_key.h"
#include "collector/s3/s3_sign.h"
#include "collector/store/col_log.h"
#include "collector/store/crc32c.h"
#include "collector/store/idx.h"
#include "collector/store/idx_read.h"
#include "shm/clock.h"

struct ship_job {
    struct ship *s;
    pthread_t thread;
    int started;
    struct s3_client *client;
    struct idx *idx;
    int catching_up;                    /* this thread's policy: 1 SCHED_OTHER, 0 SCHED_IDLE, -1 unset */
};

struct ship {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;                           /* atomic: set once by ship_stop */
    int drain_saturated;                /* atomic: set by the drain thread */
    int kicked;                         /* under mu */
    char dir[CONFIG_PATH_MAX];
    char host[256];
    char boot_id[64];
    uint64_t boot_realtime_ns;
    char url[S3_CFG_PREFIX_MAX + 80];
    unsigned njobs;
    uint64_t store_cap;                 /* bytes, 0 = no cap */
    uint64_t oldest_sealed_ns;          /* under mu: of the backlog, from the index */
    struct ship_job jobs[CONFIG_SHIP_JOBS_MAX];
    uint64_t inflight[CONFIG_SHIP_JOBS_MAX]; /* under mu: segment id per job, 0 = idle */
    struct ship_stats st;               /* under mu */
    struct col_ratelimit rl;            /* under mu */
};

static int ship_stopping(struct ship *s) { return __atomic_load_n(&s->stop, __ATOMIC_ACQUIRE); }

void ship_drain_load_note(struct ship_drain_load *l, uint64_t now_ns, uint64_t slept_ns)
{
    if (l->window_start == 0 || now_ns < l->window_start) {
        *l = (struct ship_drain_load){ .window_start = now_ns, .saturated = l->saturated };
        return;
    }
    l->slept += slept_ns;
    uint64_t len = now_ns - l->window_start;
    if (len < SHIP_DRAIN_WINDOW_NS)
        return;
    l->saturated = l->slept < len / SHIP_DRAIN_IDLE_DIV;
    l->window_start = now_ns;
    l->slept = 0;
}

void ship_drain_saturated(struct ship *s, int saturated)
{
    if (s)
        __atomic_store_n(&s->drain_saturated, saturated != 0, __ATOMIC_RELEASE);
}

/* The rule of ship.h: while the drain is saturated no new upload starts,
 * unless the uploads are catching up. */
static int ship_held_for_drain(struct ship *s, int catching_up)
{
    return __atomic_load_n(&s->drain_saturated, __ATOMIC_ACQUIRE) && !catching_up;
}

/* Whether a new upload must wait for the drain now. */
static int ship_defer(struct ship *s)
{
    pthread_mutex_lock(&s->mu);
    int catching_up = s->st.catching_up;
    pthread_mutex_unlock(&s->mu);
    return ship_held_for_drain(s, catching_up);
}

static uint64_t ship_backoff(uint32_t attempts)
{
    uint64_t b = SHIP_BACKOFF_MIN_NS;
    for (uint32_t i = 1; i < attempts && b < SHIP_BACKOFF_MAX_NS; i++)
        b *= 2;
    return b < SHIP_BACKOFF_MAX_NS ? b : SHIP_BACKOFF_MAX_NS;
}

/* 1 when the object is in the bucket with this size and MD5 (ETag of a
 * single-part upload). */
static int ship_already_there(struct s3_client *c, const char *key, uint64_t len,
                              const char *md5hex)
{
    uint64_t size;
    char etag[S3_XML_ETAG_MAX + 1], want[40];
    if (s3_client_head(c, key, &size, etag, sizeof etag) != 0)
        return 0;
    snprintf(want, sizeof want, "\"%s\"", md5hex);
    return size == len && strcmp(etag, want) == 0;
}

static void ship_hex(const uint8_t *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

/* A named thread of the segment into the manifest's list; past
 * S3_KEY_THREADS_MAX the rest stay unnamed in a pulled store. */
static int ship_thread_add(void *arg, const struct idx_read_thread *r)
{
    struct s3_key_threads *t = arg;
    if (t->n == S3_KEY_THREADS_MAX)
        return 1;
    if (!r->name[0] || strlen(r->name) > S3_KEY_THREAD_NAME_MAX)
        return 0;                       /* no name a manifest can carry */
    struct s3_key_thread *x = &t->t[t->n++];
    x->tid = r->tid;
    x->ring = r->ring;
    x->generation = r->generation;
    snprintf(x->name, sizeof x->name, "%s", r->name);
    return 0;
}

/* Upload one segment and its manifest; record the outcome in the index. */
static void ship_one(struct ship_job *j, const struct idx_upload *u)
{
    struct ship *s = j->s;
    char path[CONFIG_PATH_MAX + 600], stem[1024], name[1100], seg_key[2048], man_key[2048];
    char manifest[S3_KEY_MANIFEST_MAX], md5hex[33], err[SHIP_ERR_MAX] = "";
    struct s3_key_threads threads;
    uint8_t md5[16];
    uint64_t len = 0;
    uint32_t attempt = u->attempts + 1, crc = 0;
    int rc, fd = -1;

    if (strchr(u->path, '/') || u->path[0] == '.')
        return;                         /* not a file of ours (storedir's rule too) */
    snprintf(path, sizeof path, "%s/%s", s->dir, u->path);
    /* one pass for the sums, one for the upload: a segment is never held in
     * memory whole; sealed files do not change, and the server checks both */
    struct s3_key_manifest m = {
        .format = S3_KEY_MANIFEST_FORMAT, .pid = u->pid, .start_time = u->start_time,
        .segment_id = u->segment_id, .t_min_ns = u->t_min, .t_max_ns = u->t_max,
        .boot_realtime_ns = s->boot_realtime_ns, .records = u->records, .lost = u->lost,
    };
    fd = open(path, O_RDONLY | O_CLOEXEC);
    rc = fd < 0 ? -errno : s3_sign_file_sums(fd, &len, m.sha256, md5, crc32c_update, &crc);
    if (rc) {
        snprintf(err, sizeof err, "read %.400s: %s", path, strerror(-rc));
        goto done;
    }
    m.bytes = len;
    m.crc32c = crc;
    snprintf(m.host, sizeof m.host, "%s", s->host);
    snprintf(m.boot_id, sizeof m.boot_id, "%s", s->boot_id);
    snprintf(m.comm, sizeof m.comm, "%s", u->comm);
    ship_hex(md5, sizeof md5, md5hex);
    threads.n = 0;
    if ((rc = idx_read_segment_threads(j->idx, u->segment_id, ship_thread_add, &threads)) < 0) {
        snprintf(err, sizeof err, "segment %" PRIu64 ": index: %s", u->segment_id,
                 idx_errmsg(j->idx) ? idx_errmsg(j->idx) : strerror(-rc));
        goto done;
    }
    if (s3_key_stem(&m, stem, sizeof stem) ||
        s3_key_manifest_write(&m, &threads, manifest, sizeof manifest)) {
        snprintf(err, sizeof err, "segment %" PRIu64 ": cannot name it (host '%s')",
                 u->segment_id, s->host);
        goto done;
    }
    snprintf(name, sizeof name, "%s%s", stem, S3_KEY_SEG_SUFFIX);
    if (s3_client_key(j->client, name, seg_key, sizeof seg_key) == 0) {
        snprintf(name, sizeof name, "%s%s", stem, S3_KEY_MANIFEST_SUFFIX);
        rc = s3_client_key(j->client, name, man_key, sizeof man_key);
    } else {
        rc = -ENAMETOOLONG;
    }
    if (rc) {
        snprintf(err, sizeof err, "segment %" PRIu64 ": key too long", u->segment_id);
        goto done;
    }

    /* the attempt is on record before anything is sent */
    rc = idx_upload_set(j->idx, u->segment_id, "pending", attempt, NULL, 0);
    if (rc == -ENOENT)
        goto done;                      /* deleted by retention meanwhile */
    if (rc) {
        snprintf(err, sizeof err, "segment %" PRIu64 ": index: %s", u->segment_id,
                 idx_errmsg(j->idx));
        goto done;
    }
    int seg_there = 0, man_there = 0;
    if (u->attempts > 0) {              /* an earlier attempt may have landed */
        seg_there = ship_already_there(j->client, seg_key, len, md5hex);
        if (seg_there)
            man_there = s3_client_head(j->client, man_key, NULL, NULL, 0) == 0;
    }
    rc = seg_there ? 0 : s3_client_put_fd(j->client, seg_key, fd, len, m.sha256, md5);
    if (rc == 0 && !man_there)
        rc = s3_client_put(j->client, man_key, manifest, strlen(manifest));
    if (rc == 0) {
        if (idx_upload_set(j->idx, u->segment_id, "shipped", attempt, NULL, 0) == -EBUSY)
            col_warn("ship: segment %" PRIu64 " shipped but the index was busy; it is "
                     "checked again (HEAD) before any new upload", u->segment_id);
        pthread_mutex_lock(&s->mu);
        s->st.uploaded++;
        s->st.uploaded_bytes += seg_there ? 0 : len;
        s->st.last_error[0] = '\0';    /* it works again: the next failure will say why */
        pthread_mutex_unlock(&s->mu);
        col_debug("ship: segment %" PRIu64 " -> %s (%" PRIu64 " bytes%s)", u->segment_id, seg_key, len,
                  seg_there ? ", already there" : "");
        goto out;
    }
    if (rc == -ECANCELED) {             /* shutting down: the next run retries */
        idx_upload_set(j->idx, u->segment_id, "pending", attempt, "interrupted by shutdown", 0);
        goto out;
    }
    snprintf(err, sizeof err, "%s", s3_client_error(j->client));
    int retry = s3_client_retryable(rc);
    uint64_t wait = retry ? ship_backoff(attempt) : SHIP_BACKOFF_MAX_NS;
    idx_upload_set(j->idx, u->segment_id, retry ? "pending" : "failed", attempt, err,
                   shm_mono_ns() + wait);
    pthread_mutex_lock(&s->mu);
    s->st.failures++;
    snprintf(s->st.last_error, sizeof s->st.last_error, "%s", err);
    col_log_limited(&s->rl, COL_LOG_WARN, "ship: segment %" PRIu64 " (attempt %" PRIu32
                    "): %s; next try in %.1f s", u->segment_id, attempt, err, wait / 1e9);
    pthread_mutex_unlock(&s->mu);
    goto out;
done:
    /* a local failure backs off like a server's, so a segment row whose
     * file is missing is no busy loop; a row retention deleted meanwhile
     * (its file gone with it) is no failure */
    if (err[0] && idx_upload_set(j->idx, u->segment_id, "pending", attempt, err,
                                 shm_mono_ns() + ship_backoff(attempt)) != -ENOENT) {
        pthread_mutex_lock(&s->mu);
        s->st.failures++;
        snprintf(s->st.last_error, sizeof s->st.last_error, "%s", err);
        col_log_limited(&s->rl, COL_LOG_WARN, "ship: %s", err);
        pthread_mutex_unlock(&s->mu);
    }
out:
    if (fd >= 0)
        close(fd);
}

int ship_catching_up(int was, uint64_t backlog_bytes, uint64_t oldest_age_ns, uint64_t store_cap)
{
    if (oldest_age_ns > SHIP_CATCHUP_AGE_NS)
        return 1;
    if (store_cap == 0)
        return 0;
    return backlog_bytes > store_cap / 2 || (was && backlog_bytes > store_cap / 4);
}

/* This thread's scheduling policy for the backlog as last refreshed: idle
 * while it is short, competing (nice SHIP_NICE) while it catches up. */
static void ship_policy(struct ship_job *j)
{
    struct ship *s = j->s;
    uint64_t now = shm_mono_ns();
    pthread_mutex_lock(&s->mu);
    uint64_t o = s->oldest_sealed_ns, bytes = s->st.backlog_bytes;
    int was = s->st.catching_up;
    int want = ship_catching_up(was, bytes, o && now > o ? now - o : 0, s->store_cap);
    s->st.catching_up = want;
    pthread_mutex_unlock(&s->mu);
    if (want && !was)
        col_info("ship: backlog %" PRIu64 " MiB, oldest sealed %" PRIu64 " s ago: uploads now "
                 "compete for CPU (nice %d) to catch up", bytes >> 20,
                 o && now > o ? (uint64_t)((now - o) / 1000000000ULL) : 0, SHIP_NICE);
    else if (was && !want)
        col_info("ship: backlog %" PRIu64 " MiB: uploads back to idle CPU time only", bytes >> 20);
    if (want == j->catching_up)
        return;
    struct sched_param sp = { 0 };
    if (sched_setscheduler((pid_t)gettid(), want ? SCHED_OTHER : SCHED_IDLE, &sp) != 0) {
        col_debug("ship: cannot set the upload thread's policy: %s", strerror(errno));
        return;
    }
    j->catching_up = want;
}

static void ship_refresh(struct ship_job *j)
{
    struct idx_upload_totals t;
    if (idx_upload_totals(j->idx, &t) != 0)
        return;
    pthread_mutex_lock(&j->s->mu);
    j->s->st.backlog = t.backlog;
    j->s->st.backlog_bytes = t.backlog_bytes;
    j->s->st.shipped = t.shipped;
    j->s->st.shipped_bytes = t.shipped_bytes;
    j->s->st.failed = t.failed;
    j->s->oldest_sealed_ns = t.oldest_sealed_ns;
    pthread_mutex_unlock(&j->s->mu);
    ship_policy(j);
}

static void *ship_thread(void *arg)
{
    struct ship_job *j = arg;
    struct ship *s = j->s;
    size_t me = (size_t)(j - s->jobs);
    uint64_t skip[CONFIG_SHIP_JOBS_MAX];
    struct idx_upload *u = malloc(sizeof *u);
    if (!u)
        return NULL;
    pthread_setname_np(pthread_self(), "d9-ship");  /* for ps/top; the test finds them by it */
    /* below the drain thread: on a busy CPU the drain wins, uploads wait.
     * The nice value holds while catching up; it also lets an unprivileged
     * collector leave SCHED_IDLE again (RLIMIT_NICE 0 allows nice >= 0). */
    if (setpriority(PRIO_PROCESS, (id_t)gettid(), SHIP_NICE) != 0)
        col_debug("ship: cannot lower the upload thread's priority: %s", strerror(errno));
    j->catching_up = -1;
    ship_refresh(j);
    uint64_t refreshed = shm_mono_ns();
    while (!ship_stopping(s)) {
        if (ship_defer(s)) {
            struct timespec ts = { 0, (long)SHIP_DEFER_NS };
            nanosleep(&ts, NULL);
            if (shm_mono_ns() - refreshed >= SHIP_IDLE_NS) {
                ship_refresh(j);        /* the backlog grows meanwhile: time to catch up? */
                refreshed = shm_mono_ns();
            }
            continue;
        }
        pthread_mutex_lock(&s->mu);
        memcpy(skip, s->inflight, sizeof skip);
        pthread_mutex_unlock(&s->mu);
        int rc = idx_upload_next(j->idx, shm_mono_ns(), skip, s->njobs, u);
        int mine = 0;
        pthread_mutex_lock(&s->mu);
        if (rc == 0) {
            mine = 1;
            for (unsigned i = 0; i < s->njobs; i++)
                if (s->inflight[i] == u->segment_id)
                    mine = 0;           /* another thread took it meanwhile */
            if (mine)
                s->inflight[me] = u->segment_id;
        }
        if (rc != 0 && !s->kicked && !ship_stopping(s)) {
            if (rc != -ENOENT)
                col_log_limited(&s->rl, COL_LOG_WARN, "ship: index: %s", idx_errmsg(j->idx));
            struct timespec until;
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_sec += SHIP_IDLE_NS / 1000000000ULL;
            pthread_cond_timedwait(&s->cv, &s->mu, &until);
        }
        if (rc != 0)
            s->kicked = 0;
        pthread_mutex_unlock(&s->mu);
        if (!mine) {
            if (rc != 0)
                ship_refresh(j);
            continue;
        }
        ship_one(j, u);
        pthread_mutex_lock(&s->mu);
        s->inflight[me] = 0;
        pthread_mutex_unlock(&s->mu);
        ship_refresh(j);
    }
    free(u);
    return NULL;
}

int ship_start(struct ship **out, const struct s3_cfg *cfg, const char *store_dir,
               const char *host, unsigned jobs, uint64_t store_cap, char *err, size_t err_cap)
{
    struct ship *s = calloc(1, sizeof *s);
    pthread_condattr_t ca;
    int rc = 0;
    if (!s)
        return -ENOMEM;
    if (jobs < 1 || jobs > CONFIG_SHIP_JOBS_MAX)
        jobs = CONFIG_SHIP_JOBS_DEFAULT;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    snprintf(s->dir, sizeof s->dir, "%s", store_dir);
    snprintf(s->host, sizeof s->host, "%s", host);
    snprintf(s->url, sizeof s->url, "s3://%s%s%s", cfg->bucket, cfg->prefix[0] ? "/" : "",
             cfg->prefix);
    s->njobs = jobs;
    s->store_cap = store_cap;
    for (unsigned i = 0; i < jobs && rc == 0; i++) {
        struct ship_job *j = &s->jobs[i];
        char why[256];
        j->s = s;
        if ((rc = idx_open_ex(&j->idx, store_dir, 0, why, sizeof why)) != 0) {
            snprintf(err, err_cap, "ship: index of %s: %s", store_dir, why);
            break;
        }
        if ((rc = s3_client_open(&j->client, cfg)) != 0) {
            snprintf(err, err_cap, "ship: cannot make an S3 client: %s", strerror(-rc));
            break;
        }
        s3_client_set_stop(j->client, &s->stop);
    }
    if (rc == 0) {
        char v[64];
        if (idx_read_meta_get(s->jobs[0].idx, "boot_id", s->boot_id, sizeof s->boot_id))
            s->boot_id[0] = '\0';
        if (idx_read_meta_get(s->jobs[0].idx, "boot_realtime_ns", v, sizeof v) == 0)
            s->boot_realtime_ns = strtoull(v, NULL, 10);
    }
    /* the threads take no signals: the daemon's main thread reads them (signalfd) */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (unsigned i = 0; i < jobs && rc == 0; i++) {
        rc = -pthread_create(&s->jobs[i].thread, NULL, ship_thread, &s->jobs[i]);
        if (rc)
            snprintf(err, err_cap, "ship: cannot start a thread: %s", strerror(-rc));
        else
            s->jobs[i].started = 1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        ship_stop(s);
        return rc;
    }
    *out = s;
    return 0;
}

void ship_kick(struct ship *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->kicked = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void ship_stats(struct ship *s, struct ship_stats *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->st;
    pthread_mutex_unlock(&s->mu);
    /* what the upload threads do when they next look (they may not get a
     * CPU to look while the drain is saturated) */
    out->waiting_for_drain = ship_held_for_drain(s, out->catching_up);
}

const char *ship_url(const struct ship *s) { return s->url; }

void ship_stop(struct ship *s)
{
    if (!s)
        return;
    __atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    for (unsigned i = 0; i < s->njobs; i++) {
        struct ship_job *j = &s->jobs[i];
        if (j->started)
            pthread_join(j->thread, NULL);
        s3_client_close(j->client);
        if (j->idx)
            idx_close(j->idx);
    }
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
