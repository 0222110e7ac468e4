/*
 * q_store.c — a store opened for reading (see q_store.h).
 *
 * Opens the index read-only through the index module (idx_open_ex: WAL
 * readers never block the collector and see a consistent snapshot per
 * statement; an immutable open when the directory is not writable) and asks
 * it everything through idx_ functions (idx_read.h): no SQL here.
 */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "collector/query/q_store.h"
#include "collector/store/idx_read.h"

struct q_store {
    struct idx *x;
    char dir[Q_PATH_MAX];
    char debug_dir[Q_PATH_MAX];     /* "" = the default */
    bool have_wall;
    int64_t boot_realtime_ns;
    bool live;
    bool index_warned;              /* q_store_index_warn said it once */
    char hint[160];
    /* the last q_store_process_end answer (end_rc 0 or -ENOENT) */
    bool end_have;
    int64_t end_pid, end_version;
    int end_rc;
    struct idx_read_process_end end_pe;
};

static uint64_t now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void detect_boot(struct q_store *s)
{
    char v[64];
    uint64_t newest = 0, tmin;
    int rc = q_store_time_range(s, 0, &tmin, &newest);
    bool have_newest = rc == 0;
    if (rc < 0 && rc != -ENOENT)
        q_store_index_warn(s, "the store's newest record unknown: it may be taken for live");
    uint64_t mono = now_ns(CLOCK_MONOTONIC);
    int64_t ours = (int64_t)(now_ns(CLOCK_REALTIME) - mono);

    if (idx_read_meta_get(s->x, "boot_realtime_ns", v, sizeof v) == 0 && *v) {
        s->boot_realtime_ns = strtoll(v, NULL, 10);
        s->have_wall = true;
    }
    if (have_newest && newest > mono) {
        s->live = false;            /* records from the future: another boot */
        return;
    }
    if (idx_read_meta_get(s->x, "boot_id", v, sizeof v) == 0 && *v) {
        char cur[64] = "";
        FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
        if (f) {
            if (fgets(cur, sizeof cur, f))
                cur[strcspn(cur, "\n")] = 0;
            fclose(f);
        }
        s->live = strcmp(cur, v) == 0;
        return;
    }
    if (s->have_wall) {
        int64_t d = ours - s->boot_realtime_ns;
        if (d < 0)
            d = -d;
        s->live = (uint64_t)d <= Q_BOOT_TOLERANCE_NS;
        return;
    }
    s->live = true;                 /* nothing says otherwise */
}

int q_store_open(struct q_store **out, const char *dir, char *why, size_t whycap)
{
    struct stat sb;
    char path[Q_PATH_MAX + 32];
    *out = NULL;
    if (stat(dir, &sb) < 0) {
        int e = errno;
        snprintf(why, whycap, "store %s: %s (set --store DIR or $D9_STORE)", dir, strerror(e));
        return -e;
    }
    if (!S_ISDIR(sb.st_mode)) {
        snprintf(why, whycap, "store %s: not a directory", dir);
        return -ENOTDIR;
    }
    struct stat dsb = sb;
    if (snprintf(path, sizeof path, "%s/%s", dir, IDX_FILE_NAME) >= (int)sizeof path) {
        snprintf(why, whycap, "store %s: path too long", dir);
        return -ENAMETOOLONG;
    }
    if (stat(path, &sb) < 0 || access(path, R_OK) != 0) {
        int e = errno;
        if (e == EACCES) {
            struct group *g = getgrgid(dsb.st_gid);
            char gname[64];
            if (g && g->gr_name)
                snprintf(gname, sizeof gname, "'%s'", g->gr_name);
            else
                snprintf(gname, sizeof gname, "%u", (unsigned)dsb.st_gid);
            snprintf(why, whycap, "store %s: permission denied: a store is readable only by "
                     "the collector's user and the members of its group %s (d9collectd "
                     "--store-group)", dir, gname);
        } else {
            snprintf(why, whycap, "%s: %s (no index: is %s a d9 store? the collector "
                     "creates it)", path, strerror(e), dir);
        }
        return -e;
    }
    struct q_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, whycap, "out of memory");
        return -ENOMEM;
    }
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    char reason[Q_PATH_MAX + 300];
    int rc = idx_open_ex(&s->x, dir, IDX_OPEN_READONLY, reason, sizeof reason);
    if (rc < 0) {
        snprintf(why, whycap, "%s", reason);
        free(s);
        return rc;
    }
    idx_busy_timeout(s->x, Q_DB_BUSY_MS);
    detect_boot(s);
    *out = s;
    return 0;
}

void q_store_close(struct q_store *s)
{
    if (!s)
        return;
    idx_close(s->x);
    free(s);
}

const char *q_store_dir(const struct q_store *s) { return s->dir; }

void q_store_skip_note(void *arg, uint64_t offset, const char *why)
{
    const struct q_skip_note *n = arg;
    fprintf(stderr, "%s: warning: %s/%s: block at offset %" PRIu64 " unreadable (%s), skipped\n",
            n->prog, n->dir, n->path, offset, why ? why : "corrupt");
}

struct idx *q_store_idx(struct q_store *s) { return s->x; }

void q_store_index_warn(struct q_store *s, const char *what)
{
    if (s->index_warned)
        return;
    s->index_warned = true;
    fprintf(stderr, "d9: warning: %s (%s)\n", idx_errmsg(s->x), what);
}

int q_store_process_end(struct q_store *s, int64_t process_id, struct idx_read_process_end *out)
{
    int64_t v;
    if (idx_read_data_version(s->x, &v) < 0)
        return idx_read_process_end(s->x, process_id, out);
    if (s->end_have && s->end_pid == process_id && s->end_version == v) {
        *out = s->end_pe;
        return s->end_rc;
    }
    int rc = idx_read_process_end(s->x, process_id, out);
    s->end_have = rc == 0 || rc == -ENOENT;
    s->end_pid = process_id;
    s->end_version = v;
    s->end_rc = rc;
    s->end_pe = *out;
    return rc;
}

void q_store_set_debug_dir(struct q_store *s, const char *dir)
{
    snprintf(s->debug_dir, sizeof s->debug_dir, "%s", dir ? dir : "");
}

const char *q_store_debug_dir(const struct q_store *s) { return s->debug_dir; }

bool q_store_wall(const struct q_store *s, int64_t *boot_realtime_ns)
{
    *boot_realtime_ns = s->boot_realtime_ns;
    return s->have_wall;
}

bool q_store_live(const struct q_store *s) { return s->live; }

const char *q_store_unsealed_hint(struct q_store *s, uint32_t pid)
{
    uint32_t alive;
    if (!s->live)
        return "";
    int rc = idx_read_alive_pid(s->x, pid, &alive);
    if (rc < 0)
        return "";
    if (rc == 1)
        snprintf(s->hint, sizeof s->hint, " (pid %lld is still running: what the collector has "
                 "not sealed yet is not visible; run 'd9 flush')", (long long)alive);
    else
        s->hint[0] = 0;
    return s->hint;
}

int q_store_time_range(struct q_store *s, uint32_t pid, uint64_t *tmin, uint64_t *tmax)
{
    int rc = idx_read_time_range(s->x, pid, tmin, tmax);
    return rc == -EINVAL ? -EIO : rc;
}

void q_store_window_compute(const struct q_window *w, bool live, uint64_t now,
                              bool have_newest, uint64_t newest, uint64_t *from, uint64_t *to)
{
    *from = 0;
    *to = UINT64_MAX;
    switch (w->kind) {
    case Q_WIN_ALL:
        break;
    case Q_WIN_RANGE:
        *from = w->from_ns;
        *to = w->to_ns;
        break;
    case Q_WIN_SINCE: {
        uint64_t anchor;
        if (live)
            anchor = now;
        else if (have_newest)
            anchor = newest;
        else
            break;
        *from = anchor > w->since_ns ? anchor - w->since_ns : 0;
        break;
    }
    }
}

int q_store_window_resolve(struct q_store *s, const struct q_window *w, uint32_t pid,
                       uint64_t *from, uint64_t *to)
{
    uint64_t tmin = 0, tmax = 0;
    bool have = false;
    if (w->kind == Q_WIN_SINCE && !s->live) {
        int rc = q_store_time_range(s, pid, &tmin, &tmax);
        have = rc == 0;
        if (rc < 0 && rc != -ENOENT)
            q_store_index_warn(s, "--since ignored: the whole store is read");
    }
    q_store_window_compute(w, s->live, now_ns(CLOCK_MONOTONIC), have, tmax, from, to);
    return 0;
}

/* ---- listings --------------------------------------------------------------- */

int q_store_drops(struct q_store *s, int64_t process_id, uint32_t pid, uint64_t from,
                  uint64_t to, struct idx_read_drops *out)
{
    return idx_read_drops(s->x, process_id, pid, from, to, out);
}

const char *q_store_drops_text(const struct idx_read_drops *d, char *buf, size_t cap)
{
    const struct { uint64_t n; const char *what; } c[] = {
        { d->full, "ring full" }, { d->mismatch, "type mismatch" },
        { d->too_big, "too large" }, { d->no_ring, "no ring" },
    };
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        if (!c[i].n || used >= cap)
            continue;
        int n = snprintf(buf + used, cap - used, "%s%" PRIu64 " %s", used ? ", " : "",
                         c[i].n, c[i].what);
        if (n > 0)
            used += (size_t)n;
    }
    if (!buf[0])
        snprintf(buf, cap, "none");
    return buf;
}

int q_store_processes(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to,
                      int (*fn)(void *arg, const struct idx_read_process *r), void *arg)
{
    return idx_read_processes_window(s->x, pid, from, to, fn, arg);
}

int q_store_block_stats(struct q_store *s, int64_t process_id, uint64_t from, uint64_t to,
                        int (*fn)(void *arg, const struct idx_read_block_stat *b), void *arg)
{
    return idx_read_block_stats(s->x, process_id, from, to, fn, arg);
}

int q_store_segments(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to,
                     int (*fn)(void *arg, const struct idx_read_segment *r), void *arg)
{
    return idx_read_segments_window(s->x, pid, from, to, fn, arg);
}

int q_store_threads(struct q_store *s, uint32_t pid, int64_t process_id,
                    int (*fn)(void *arg, const struct idx_read_thread *r), void *arg)
{
    return idx_read_threads(s->x, pid, process_id, fn, arg);
}

int q_store_runtimes(struct q_store *s, uint32_t pid, int64_t process_id,
                     int (*fn)(void *arg, const struct idx_read_runtime *r), void *arg)
{
    return idx_read_runtimes(s->x, pid, process_id, fn, arg);
}
