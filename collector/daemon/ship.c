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
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collector/daemon/config.h"
#include "collector/daemon/crashpt.h"
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
    /* --ship-parquet */
    char pq_bin[CONFIG_PATH_MAX];       /* the d9 program; "" = no companions */
    char pq_dir[CONFIG_PATH_MAX + 16];  /* STORE/parquet: the staged companions */
    uint64_t pq_inflight[CONFIG_SHIP_JOBS_MAX]; /* under mu: staged dir's segment per job */
    uint64_t pq_next_ns;                /* under mu: no staged upload before (backoff) */
    uint32_t pq_attempts;               /* under mu: failed staged uploads in a row */
    uint64_t pq_cap;                    /* bytes staged at most, 0 = no cap */
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

/* ---- Parquet companions (--ship-parquet; the rules are in ship.h) ---- */

/* The staged directory of a segment: STORE/parquet/ID-TMIN (TMIN its
 * t_min, which names the key's day), ".ID-TMIN.tmp" while d9 export
 * writes it. */
static int ship_pq_path(const struct ship *s, char *out, size_t cap, int tmp, uint64_t id,
                        uint64_t t_min)
{
    int n = snprintf(out, cap, "%s/%s%" PRIu64 "-%" PRIu64 "%s", s->pq_dir, tmp ? "." : "", id,
                     t_min, tmp ? SHIP_PQ_TMP_SUFFIX : "");
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* Remove a staged directory: its plain files, then itself (it holds no
 * subdirectory: d9 export writes files only). */
static void ship_pq_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)))
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                unlinkat(dirfd(d), de->d_name, 0);
        closedir(d);
    }
    rmdir(dir);
}

/* Bytes of the plain files in dir. */
static uint64_t ship_pq_du(const char *dir)
{
    uint64_t n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *de;
    struct stat st;
    while ((de = readdir(d)))
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            n += (uint64_t)st.st_size;
    closedir(d);
    return n;
}

struct ship_pq_prev {
    uint64_t id;                        /* the segment being exported */
    int64_t process_id;                 /* its process, -1 until seen */
    size_t n, cap;
    struct { uint64_t id, t_max; int64_t process_id; } *r;
};

static int ship_pq_prev_add(void *arg, const struct idx_read_segment *r)
{
    struct ship_pq_prev *p = arg;
    if (r->id == p->id)
        p->process_id = r->process_id;
    if (r->id >= p->id)
        return 0;
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 64;
        void *nr = realloc(p->r, nc * sizeof *p->r);
        if (!nr)
            return -ENOMEM;
        p->r = nr;
        p->cap = nc;
    }
    p->r[p->n].id = r->id;
    p->r[p->n].t_max = r->t_max;
    p->r[p->n].process_id = r->process_id;
    p->n++;
    return 0;
}

/* The first ns of the segment's companion window: one past the newest
 * record of the process's earlier segments (0 for its first), so each row
 * of a process falls in exactly one companion. */
static int ship_pq_from(struct ship_job *j, const struct idx_upload *u, uint64_t *from)
{
    struct ship_pq_prev p = { .id = u->segment_id, .process_id = -1 };
    int rc = idx_read_segments_window(j->idx, u->pid, 0, u->t_max, ship_pq_prev_add, &p);
    uint64_t prev = 0;
    for (size_t i = 0; rc >= 0 && i < p.n; i++)
        if (p.r[i].process_id == p.process_id && p.r[i].t_max > prev)
            prev = p.r[i].t_max;
    free(p.r);
    if (rc < 0)
        return rc;
    if (p.process_id < 0)
        return -ENOENT;                 /* deleted by retention meanwhile */
    *from = prev ? prev + 1 : 0;
    return 0;
}

/* The last line of the child's log, for the one-line error. */
static void ship_pq_log_tail(const char *log, char *out, size_t cap)
{
    char line[512] = "";
    FILE *f = fopen(log, "r");
    out[0] = '\0';
    if (!f)
        return;
    while (fgets(line, sizeof line, f))
        if (line[0] != '\n' && line[0] != ' ')
            snprintf(out, cap, "%s", line);
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

/* Drop the tables d9 export wrote with no row (its log: "  TABLE  N rows
 * B bytes  PATH"): an empty partition costs a request and says nothing. */
static void ship_pq_drop_empty(const char *log, const char *dir)
{
    char line[CONFIG_PATH_MAX + 128];
    size_t dl = strlen(dir);
    FILE *f = fopen(log, "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        uint64_t rows, bytes;
        char *p = strstr(line, " bytes  ");
        line[strcspn(line, "\n")] = '\0';
        if (!p || sscanf(line, "%*s %" SCNu64 " rows %" SCNu64 " bytes", &rows, &bytes) != 2 ||
            rows != 0)
            continue;
        p += strlen(" bytes  ");
        if (strncmp(p, dir, dl) == 0 && p[dl] == '/' && !strchr(p + dl + 1, '/') &&
            p[dl + 1] != '.')
            unlink(p);
    }
    fclose(f);
}

/* Run `d9 --store STORE export --format parquet --pid PID --from A --to B
 * -o TMP` at this upload thread's priority and wait for it (killed at
 * shutdown or after SHIP_PQ_EXPORT_MAX_NS). 0, -ECANCELED, or -EIO with
 * its last line in err. */
static int ship_pq_run(struct ship_job *j, const struct idx_upload *u, uint64_t from,
                       const char *tmp, char *err, size_t errcap)
{
    struct ship *s = j->s;
    char pid[24], a[24], b[24], log[CONFIG_PATH_MAX + 128];
    char *argv[] = { s->pq_bin, "--store", s->dir, "export", "--format", "parquet", "--pid", pid,
                     "--from", a, "--to", b, "-o", (char *)tmp, NULL };
    /* nothing of the collector's environment (credentials) reaches the child */
    char *envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", NULL };
    snprintf(pid, sizeof pid, "%" PRIu32, u->pid);
    snprintf(a, sizeof a, "%" PRIu64, from);
    snprintf(b, sizeof b, "%" PRIu64, u->t_max);
    snprintf(log, sizeof log, "%s/" SHIP_PQ_LOG, tmp);

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, all;
    struct sched_param sp = { 0 };
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0640);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawnattr_init(&at);
    /* the child runs as this thread does (ship.h's priority rule): its
     * nice value is inherited, its policy set here; it takes the default
     * signals with none blocked (these threads block all) */
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                  POSIX_SPAWN_SETSCHEDULER);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setschedpolicy(&at, j->catching_up == 1 ? SCHED_OTHER : SCHED_IDLE);
    posix_spawnattr_setschedparam(&at, &sp);
    pid_t child;
    int rc = -posix_spawn(&child, s->pq_bin, &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc) {
        snprintf(err, errcap, "cannot run %.300s: %s", s->pq_bin, strerror(-rc));
        return -EIO;
    }
    uint64_t start = shm_mono_ns();
    int status = 0, killed = 0;
    for (;;) {
        pid_t w = waitpid(child, &status, WNOHANG);
        if (w == child || (w < 0 && errno != EINTR))
            break;
        if (!killed && (ship_stopping(s) || shm_mono_ns() - start > SHIP_PQ_EXPORT_MAX_NS)) {
            kill(child, SIGKILL);
            killed = ship_stopping(s) ? 2 : 1;
        }
        struct timespec ts = { 0, (long)SHIP_DEFER_NS };
        nanosleep(&ts, NULL);
    }
    if (killed == 2)
        return -ECANCELED;
    if (killed) {
        snprintf(err, errcap, "d9 export ran longer than %" PRIu64 " s: killed",
                 (uint64_t)(SHIP_PQ_EXPORT_MAX_NS / 1000000000ULL));
        return -EIO;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char last[300];
        ship_pq_log_tail(log, last, sizeof last);
        if (WIFSIGNALED(status))
            snprintf(err, errcap, "d9 export died of signal %d: %s", WTERMSIG(status), last);
        else
            snprintf(err, errcap, "d9 export failed (exit %d): %s", WEXITSTATUS(status), last);
        return -EIO;
    }
    ship_pq_drop_empty(log, tmp);
    unlink(log);
    return 0;
}

/* Stage the segment's companions (STORE/parquet/ID-TMIN) unless they are
 * there already. 0 staged, 1 skipped (the staging cap is full: logged and
 * counted), -ENOENT segment gone, -ECANCELED, or -EIO with err. */
static int ship_pq_stage(struct ship_job *j, const struct idx_upload *u, char *err,
                         size_t errcap)
{
    struct ship *s = j->s;
    char fin[CONFIG_PATH_MAX + 80], tmp[CONFIG_PATH_MAX + 80];
    struct stat st;
    uint64_t from = 0;
    if (ship_pq_path(s, fin, sizeof fin, 0, u->segment_id, u->t_min) ||
        ship_pq_path(s, tmp, sizeof tmp, 1, u->segment_id, u->t_min)) {
        snprintf(err, errcap, "the store's path is too long");
        return -EIO;
    }
    if (stat(fin, &st) == 0)
        return 0;                       /* staged by an earlier attempt */
    pthread_mutex_lock(&s->mu);
    int full = s->pq_cap && s->st.pq_staged_bytes >= s->pq_cap;
    if (full)
        s->st.pq_skipped++;
    pthread_mutex_unlock(&s->mu);
    if (full) {
        col_log_limited(&s->rl, COL_LOG_WARN, "ship: segment %" PRIu64 " goes without its "
                        "Parquet companions: %s holds %" PRIu64 " MiB not yet uploaded (the cap "
                        "is 1/%u of the store's)", u->segment_id, s->pq_dir,
                        s->st.pq_staged_bytes >> 20, SHIP_PQ_CAP_DIV);
        return 1;
    }
    /* what the drain still held at the seal (the end of a poll begun in
     * the segment) is on disk SHIP_PQ_SETTLE_NS after its last record */
    for (uint64_t now = shm_mono_ns(); now < u->t_max + SHIP_PQ_SETTLE_NS && !ship_stopping(s);
         now = shm_mono_ns()) {
        struct timespec ts = { 0, (long)SHIP_DEFER_NS };
        nanosleep(&ts, NULL);
    }
    if (ship_stopping(s))
        return -ECANCELED;
    int rc = ship_pq_from(j, u, &from);
    if (rc == -ENOENT)
        return rc;
    if (rc < 0) {
        snprintf(err, errcap, "index: %s", idx_errmsg(j->idx) ? idx_errmsg(j->idx)
                                                              : strerror(-rc));
        return -EIO;
    }
    ship_pq_rmdir(tmp);                 /* an earlier attempt's, cut short */
    if (mkdir(tmp, SHIP_PQ_DIR_MODE) != 0) {
        snprintf(err, errcap, "%.300s: %s", tmp, strerror(errno));
        return -EIO;
    }
    rc = ship_pq_run(j, u, from, tmp, err, errcap);
    if (rc == 0 && rename(tmp, fin) != 0) {
        snprintf(err, errcap, "%.300s: %s", fin, strerror(errno));
        rc = -EIO;
    }
    if (rc) {
        ship_pq_rmdir(tmp);
        return rc;
    }
    uint64_t bytes = ship_pq_du(fin);
    pthread_mutex_lock(&s->mu);
    s->st.pq_staged++;
    s->st.pq_staged_bytes += bytes;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* Upload the files of one staged directory, each once: before the first
 * PUT the directory gets SHIP_PQ_ATTEMPTED, and where it is there a file
 * already in the bucket with the same size and MD5 is not sent again. The
 * directory is removed once all are there. 0, or -errno with err. */
static int ship_pq_upload(struct ship_job *j, uint64_t id, uint64_t t_min, char *err,
                          size_t errcap)
{
    struct ship *s = j->s;
    char dir[CONFIG_PATH_MAX + 80], mark[CONFIG_PATH_MAX + 120], name[1100], key[2048];
    struct s3_key_manifest m = { .segment_id = id, .t_min_ns = t_min,
                                 .boot_realtime_ns = s->boot_realtime_ns };
    snprintf(m.host, sizeof m.host, "%s", s->host);
    if (ship_pq_path(s, dir, sizeof dir, 0, id, t_min) ||
        snprintf(mark, sizeof mark, "%s/" SHIP_PQ_ATTEMPTED, dir) >= (int)sizeof mark) {
        snprintf(err, errcap, "the store's path is too long");
        return -ENAMETOOLONG;
    }
    int attempted = access(mark, F_OK) == 0, rc = 0;
    if (!attempted) {
        int fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
        if (fd < 0) {
            snprintf(err, errcap, "%.300s: %s", mark, strerror(errno));
            return -errno;
        }
        close(fd);
    }
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errcap, "%.300s: %s", dir, strerror(errno));
        return -errno;
    }
    uint64_t sent = 0, bytes = 0, files = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d))) {
        size_t n = strlen(de->d_name), sl = strlen(S3_KEY_PARQUET_SUFFIX);
        if (de->d_name[0] == '.' || n <= sl || strcmp(de->d_name + n - sl, S3_KEY_PARQUET_SUFFIX))
            continue;
        char table[S3_KEY_TABLE_MAX + 1], sha[65], md5hex[33];
        uint8_t md5[16];
        uint64_t len = 0;
        if (n - sl > S3_KEY_TABLE_MAX)
            continue;                   /* d9 export names no table so long */
        memcpy(table, de->d_name, n - sl);
        table[n - sl] = '\0';
        if (s3_key_parquet(&m, table, name, sizeof name) ||
            s3_client_key(j->client, name, key, sizeof key)) {
            snprintf(err, errcap, "segment %" PRIu64 ": table %s: key too long", id, table);
            rc = -ENAMETOOLONG;
            break;
        }
        int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        rc = fd < 0 ? -errno : s3_sign_file_sums(fd, &len, sha, md5, NULL, NULL);
        if (rc) {
            snprintf(err, errcap, "read %.400s/%s: %s", dir, de->d_name, strerror(-rc));
        } else {
            ship_hex(md5, sizeof md5, md5hex);
            int there = attempted && ship_already_there(j->client, key, len, md5hex);
            rc = there ? 0 : s3_client_put_fd(j->client, key, fd, len, sha, md5);
            if (rc)
                snprintf(err, errcap, "%s", s3_client_error(j->client));
            else if (!there)
                sent++;
            bytes += len;
            files++;
            col_debug("ship: segment %" PRIu64 " Parquet %s -> %s (%" PRIu64 " bytes%s)", id,
                      table, key, len, there ? ", already there" : "");
        }
        if (fd >= 0)
            close(fd);
    }
    closedir(d);
    if (rc)
        return rc;
    ship_pq_rmdir(dir);
    pthread_mutex_lock(&s->mu);
    s->st.pq_uploaded += sent;
    s->st.pq_segments++;
    if (s->st.pq_staged)
        s->st.pq_staged--;
    s->st.pq_staged_bytes = s->st.pq_staged_bytes > bytes ? s->st.pq_staged_bytes - bytes : 0;
    pthread_mutex_unlock(&s->mu);
    col_debug("ship: segment %" PRIu64 ": %" PRIu64 " Parquet files uploaded", id, files);
    return 0;
}

/* The oldest staged directory that no thread holds (nor its segment's
 * upload); 0 with id and t_min, -ENOENT if none. Under mu. */
static int ship_pq_next(struct ship *s, uint64_t *id, uint64_t *t_min)
{
    DIR *d = opendir(s->pq_dir);
    int found = 0;
    if (!d)
        return -ENOENT;
    struct dirent *de;
    while ((de = readdir(d))) {
        uint64_t i, t;
        int used = 0;
        if (de->d_name[0] == '.' ||
            sscanf(de->d_name, "%" SCNu64 "-%" SCNu64 "%n", &i, &t, &used) != 2 ||
            de->d_name[used] != '\0')
            continue;
        int busy = 0;
        for (unsigned k = 0; k < s->njobs; k++)
            busy |= s->inflight[k] == i || s->pq_inflight[k] == i;
        if (!busy && (!found || i < *id)) {
            *id = i;
            *t_min = t;
            found = 1;
        }
    }
    closedir(d);
    return found ? 0 : -ENOENT;
}

/* One staged directory uploaded, when one waits and its backoff passed;
 * 1 when there was one to try, else 0. */
static int ship_pq_step(struct ship_job *j)
{
    struct ship *s = j->s;
    size_t me = (size_t)(j - s->jobs);
    uint64_t id = 0, t_min = 0, now = shm_mono_ns();
    char err[SHIP_ERR_MAX] = "";
    pthread_mutex_lock(&s->mu);
    int rc = now < s->pq_next_ns ? -EAGAIN : ship_pq_next(s, &id, &t_min);
    if (rc == 0)
        s->pq_inflight[me] = id;
    pthread_mutex_unlock(&s->mu);
    if (rc)
        return 0;
    rc = ship_pq_upload(j, id, t_min, err, sizeof err);
    pthread_mutex_lock(&s->mu);
    s->pq_inflight[me] = 0;
    if (rc == 0 || rc == -ECANCELED) {
        s->pq_attempts = 0;
    } else {
        s->pq_attempts++;
        uint64_t wait = s3_client_retryable(rc) ? ship_backoff(s->pq_attempts)
                                                : SHIP_BACKOFF_MAX_NS;
        s->pq_next_ns = shm_mono_ns() + wait;
        s->st.failures++;
        snprintf(s->st.last_error, sizeof s->st.last_error, "%s", err);
        col_log_limited(&s->rl, COL_LOG_WARN, "ship: segment %" PRIu64 " Parquet (attempt %"
                        PRIu32 "): %s; next try in %.1f s", id, s->pq_attempts, err, wait / 1e9);
    }
    pthread_mutex_unlock(&s->mu);
    return rc != -ECANCELED;
}

/* At start: the staging directory, without what a crash left half
 * written; its bytes counted for the cap. */
static int ship_pq_open(struct ship *s, char *err, size_t err_cap)
{
    struct stat st;
    if (mkdir(s->pq_dir, SHIP_PQ_DIR_MODE) != 0 && errno != EEXIST) {
        snprintf(err, err_cap, "ship: cannot create %s: %s", s->pq_dir, strerror(errno));
        return -errno;
    }
    if (lstat(s->pq_dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
        snprintf(err, err_cap, "ship: %s is not a directory of ours", s->pq_dir);
        return -ENOTDIR;
    }
    DIR *d = opendir(s->pq_dir);
    if (!d) {
        snprintf(err, err_cap, "ship: cannot list %s: %s", s->pq_dir, strerror(errno));
        return -errno;
    }
    struct dirent *de;
    char path[sizeof s->pq_dir + 300];
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name), tl = strlen(SHIP_PQ_TMP_SUFFIX);
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
            snprintf(path, sizeof path, "%s/%s", s->pq_dir, de->d_name) >= (int)sizeof path)
            continue;
        if (de->d_name[0] == '.' && n > tl && strcmp(de->d_name + n - tl, SHIP_PQ_TMP_SUFFIX) == 0) {
            ship_pq_rmdir(path);
        } else if (de->d_name[0] != '.') {
            s->st.pq_staged++;
            s->st.pq_staged_bytes += ship_pq_du(path);
        }
    }
    closedir(d);
    if (s->st.pq_staged)
        col_info("ship: %" PRIu64 " segments' Parquet companions (%" PRIu64 " KiB) wait in %s",
                 s->st.pq_staged, s->st.pq_staged_bytes >> 10, s->pq_dir);
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
    if (u->kept) {                      /* the manifest names the trigger */
        m.kept = 1;
        m.trigger_t_ns = u->keep.trig_ns;
        m.trigger_t0_ns = u->keep.t0_ns;
        m.trigger_t1_ns = u->keep.t1_ns;
        m.trigger_pid = u->keep.trig_pid;
        m.trigger_count = u->keep.ntrig;
        m.trigger_source_segment = u->keep.source_segment;
        snprintf(m.trigger_reason, sizeof m.trigger_reason, "%s", u->keep.reason);
    }
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

    /* the companions are staged before the segment goes up (ship.h) */
    if (s->pq_bin[0]) {
        char why[SHIP_ERR_MAX - 80] = "";
        rc = ship_pq_stage(j, u, why, sizeof why);
        if (rc == -ENOENT || rc == -ECANCELED)
            goto out;                   /* deleted by retention meanwhile; shutting down */
        if (rc < 0 && attempt < SHIP_PQ_TRIES) {
            snprintf(err, sizeof err, "segment %" PRIu64 ": Parquet: %s", u->segment_id, why);
            goto done;
        }
        if (rc < 0) {
            col_warn("ship: segment %" PRIu64 " goes without its Parquet companions after %u "
                     "tries: %s", u->segment_id, SHIP_PQ_TRIES, why);
            pthread_mutex_lock(&s->mu);
            s->st.pq_failed++;
            pthread_mutex_unlock(&s->mu);
        }
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
        if (seg_there) {
            /* whole, not just there: a server killed during the PUT may keep
             * an empty or cut object under the key (s3rver does) */
            uint8_t mmd5[16];
            char mhex[33];
            s3_sign_md5(manifest, strlen(manifest), mmd5);
            ship_hex(mmd5, sizeof mmd5, mhex);
            man_there = ship_already_there(j->client, man_key, strlen(manifest), mhex);
        }
    }
    rc = seg_there ? 0 : s3_client_put_fd(j->client, seg_key, fd, len, m.sha256, md5);
    if (rc == 0 && !man_there)
        rc = s3_client_put(j->client, man_key, manifest, strlen(manifest));
    if (rc == 0) {
        crashpt(CRASHPT_UPLOADED);
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
        if (rc == -ENOENT && s->pq_bin[0] && ship_pq_step(j))
            continue;                   /* no segment waits: a staged companion went */
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
        if (s->pq_bin[0])
            ship_pq_step(j);            /* its companions, now that it is no longer in flight */
        ship_refresh(j);
    }
    free(u);
    return NULL;
}

static int ship_kept_only_on;           /* set on the drain thread before ship_start */

void ship_kept_only(int on)
{
    ship_kept_only_on = on != 0;
}

int ship_start(struct ship **out, const struct s3_cfg *cfg, const char *store_dir,
               const char *host, unsigned jobs, uint64_t store_cap, const char *parquet_bin,
               char *err, size_t err_cap)
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
    if (parquet_bin && parquet_bin[0]) {
        snprintf(s->pq_bin, sizeof s->pq_bin, "%s", parquet_bin);
        snprintf(s->pq_dir, sizeof s->pq_dir, "%s/" SHIP_PQ_DIR, store_dir);
        s->pq_cap = store_cap / SHIP_PQ_CAP_DIV;
        rc = ship_pq_open(s, err, err_cap);
    }
    for (unsigned i = 0; i < jobs && rc == 0; i++) {
        struct ship_job *j = &s->jobs[i];
        char why[256];
        j->s = s;
        if ((rc = idx_open_ex(&j->idx, store_dir, 0, why, sizeof why)) != 0) {
            snprintf(err, err_cap, "ship: index of %s: %s", store_dir, why);
            break;
        }
        idx_upload_kept_only(j->idx, ship_kept_only_on);
        if ((rc = s3_client_open(&j->client, cfg)) != 0) {
            snprintf(err, err_cap, "ship: cannot make an S3 client: %s", strerror(-rc));
            break;
        }
        s3_client_set_stop(j->client, &s->stop);
    }
    if (rc == 0) {
        /* retry times of an earlier boot (CLOCK_MONOTONIC starts again):
         * without this a segment that failed before a reboot waits until
         * the new uptime passes the old one */
        uint64_t moved = 0;
        if (idx_upload_clamp_next(s->jobs[0].idx, shm_mono_ns(), SHIP_BACKOFF_MAX_NS, &moved) == 0 &&
            moved)
            col_info("ship: %" PRIu64 " segments had a next try further off than the longest "
                     "backoff (set before a reboot?): due now", moved);
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
