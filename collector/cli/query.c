/*
 * query.c — read-only store access for the d9 CLI (see query.h).
 *
 * Called by the cli_<name>.c subcommands. Opens the index with a read-only
 * SQLite connection (WAL readers never block the collector and see a
 * consistent snapshot per statement); falls back to an immutable open when
 * the directory is not writable (a read-only copy cannot host the -shm
 * file a WAL reader needs).
 *
 * Invariants of cli_scan: a cursor owns a private copy of one block's
 * payload and a reference on the open segment reader it came from; the
 * heap holds cursors that have a current record; a block is opened before
 * any record with a larger timestamp is delivered (the SQL gives blocks by
 * t_first), which yields global time order; ties are broken by the order
 * blocks were opened, which keeps per-ring order (given per-ring timestamps
 * that do not go backwards). Memory is bounded by the
 * blocks that overlap in time, never by file size.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "collector/store/index.h"
#include "collector/cli/query.h"
#include "collector/store/segment.h"
#include "shm/record.h"

struct cli_store {
    sqlite3 *db;
    char dir[CLI_PATH_MAX];
    bool have_wall;
    int64_t boot_realtime_ns;
    bool live;
    char hint[160];
};

static int64_t clamp_i64(uint64_t v) { return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v; }
static uint64_t col_u64(sqlite3_stmt *st, int i)
{
    sqlite3_int64 v = sqlite3_column_int64(st, i);
    return v < 0 ? 0 : (uint64_t)v;
}
static const char *col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

static uint64_t now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int meta_value(sqlite3 *db, const char *key, char *out, size_t cap)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL);
    if (rc != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    int ret = -ENOENT;
    if (rc == SQLITE_ROW) {
        snprintf(out, cap, "%s", col_text(st, 0));
        ret = 0;
    } else if (rc != SQLITE_DONE) {
        ret = -EIO;
    }
    sqlite3_finalize(st);
    return ret;
}

static int try_open(struct cli_store *s, const char *path, bool immutable, char *why, size_t cap)
{
    char uri[CLI_PATH_MAX + 64];
    int flags = SQLITE_OPEN_READONLY;
    const char *name = path;
    if (immutable) {
        /* URI escaping: only '%', '?' and '#' matter in a path */
        size_t o = 0;
        o += (size_t)snprintf(uri, sizeof uri, "file:");
        for (const char *p = path; *p && o + 4 < sizeof uri; p++) {
            if (*p == '%' || *p == '?' || *p == '#')
                o += (size_t)snprintf(uri + o, sizeof uri - o, "%%%02X", (unsigned char)*p);
            else
                uri[o++] = *p;
        }
        uri[o] = 0;
        snprintf(uri + o, sizeof uri - o, "?immutable=1");
        flags |= SQLITE_OPEN_URI;
        name = uri;
    }
    int rc = sqlite3_open_v2(name, &s->db, flags, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(s->db, CLI_DB_BUSY_MS);
        char v[32];
        int m = meta_value(s->db, "schema_version", v, sizeof v);
        if (m == 0) {
            if (atoi(v) != IDX_SCHEMA_VERSION) {
                snprintf(why, cap, "%s: index schema version %s, this d9 reads version %d",
                         path, v, IDX_SCHEMA_VERSION);
                sqlite3_close(s->db);
                s->db = NULL;
                return -EPROTO;
            }
            return 0;
        }
        if (m == -ENOENT) {
            snprintf(why, cap, "%s: not a d9 index (no schema_version)", path);
            sqlite3_close(s->db);
            s->db = NULL;
            return -EPROTO;
        }
    }
    snprintf(why, cap, "%s: cannot read the index: %s", path,
             s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
    sqlite3_close(s->db);
    s->db = NULL;
    return -EIO;
}

static void detect_boot(struct cli_store *s)
{
    char v[64];
    uint64_t newest = 0, tmin;
    bool have_newest = cli_store_time_range(s, 0, &tmin, &newest) == 0;
    uint64_t mono = now_ns(CLOCK_MONOTONIC);
    int64_t ours = (int64_t)(now_ns(CLOCK_REALTIME) - mono);

    if (meta_value(s->db, "boot_realtime_ns", v, sizeof v) == 0 && *v) {
        s->boot_realtime_ns = strtoll(v, NULL, 10);
        s->have_wall = true;
    }
    if (have_newest && newest > mono) {
        s->live = false;            /* records from the future: another boot */
        return;
    }
    if (meta_value(s->db, "boot_id", v, sizeof v) == 0 && *v) {
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
        s->live = (uint64_t)d <= CLI_BOOT_TOLERANCE_NS;
        return;
    }
    s->live = true;                 /* nothing says otherwise */
}

int cli_store_open(struct cli_store **out, const char *dir, char *why, size_t whycap)
{
    struct stat sb;
    char path[CLI_PATH_MAX + 32];
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
    if (snprintf(path, sizeof path, "%s/%s", dir, IDX_FILE_NAME) >= (int)sizeof path) {
        snprintf(why, whycap, "store %s: path too long", dir);
        return -ENAMETOOLONG;
    }
    if (stat(path, &sb) < 0) {
        int e = errno;
        snprintf(why, whycap, "%s: %s (no index: is %s a d9 store? the collector creates it)",
                 path, strerror(e), dir);
        return -e;
    }
    struct cli_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, whycap, "out of memory");
        return -ENOMEM;
    }
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    int rc = try_open(s, path, false, why, whycap);
    if (rc == -EIO && access(dir, W_OK) != 0)
        rc = try_open(s, path, true, why, whycap);
    if (rc < 0) {
        free(s);
        return rc;
    }
    detect_boot(s);
    *out = s;
    return 0;
}

void cli_store_close(struct cli_store *s)
{
    if (!s)
        return;
    sqlite3_close(s->db);
    free(s);
}

const char *cli_store_dir(const struct cli_store *s) { return s->dir; }
void *cli_store_db(struct cli_store *s) { return s->db; }

bool cli_store_wall(const struct cli_store *s, int64_t *boot_realtime_ns)
{
    *boot_realtime_ns = s->boot_realtime_ns;
    return s->have_wall;
}

bool cli_store_live(const struct cli_store *s) { return s->live; }

const char *cli_store_unsealed_hint(struct cli_store *s, uint32_t pid)
{
    if (!s->live)
        return "";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT pid FROM processes WHERE state = 'alive' AND "
                           "(?1 = 0 OR pid = ?1) LIMIT 1", -1, &st, NULL) != SQLITE_OK)
        return "";
    sqlite3_bind_int64(st, 1, pid);
    if (sqlite3_step(st) == SQLITE_ROW)
        snprintf(s->hint, sizeof s->hint, " (pid %lld is still running: what the collector has "
                 "not sealed yet is not visible; run 'd9 flush')",
                 (long long)sqlite3_column_int64(st, 0));
    else
        s->hint[0] = 0;
    sqlite3_finalize(st);
    return s->hint;
}

int cli_store_time_range(struct cli_store *s, uint32_t pid, uint64_t *tmin, uint64_t *tmax)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(s->db,
        "SELECT min(s.t_min), max(s.t_max), count(*) FROM segments s "
        "JOIN processes p ON p.id = s.process_id WHERE (?1 = 0 OR p.pid = ?1)",
        -1, &st, NULL);
    if (rc != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(st, 1, pid);
    int ret = -ENOENT;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 2) > 0) {
        *tmin = col_u64(st, 0);
        *tmax = col_u64(st, 1);
        ret = 0;
    }
    sqlite3_finalize(st);
    return ret;
}

void cli_window_compute(const struct cli_window_spec *w, bool live, uint64_t now, bool have_newest,
                        uint64_t newest, uint64_t *from, uint64_t *to)
{
    *from = 0;
    *to = UINT64_MAX;
    switch (w->kind) {
    case CLI_WIN_ALL:
        break;
    case CLI_WIN_RANGE:
        *from = w->from_ns;
        *to = w->to_ns;
        break;
    case CLI_WIN_SINCE: {
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

int cli_window_resolve(struct cli_store *s, const struct cli_window_spec *w, uint32_t pid,
                       uint64_t *from, uint64_t *to)
{
    uint64_t tmin = 0, tmax = 0;
    bool have = false;
    if (w->kind == CLI_WIN_SINCE && !s->live)
        have = cli_store_time_range(s, pid, &tmin, &tmax) == 0;
    cli_window_compute(w, s->live, now_ns(CLOCK_MONOTONIC), have, tmax, from, to);
    return 0;
}

/* ---- listings --------------------------------------------------------------- */

int cli_query_processes(struct cli_store *s, uint32_t pid, uint64_t from, uint64_t to,
                        cli_proc_fn fn, void *arg)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(s->db,
        "SELECT p.id, p.pid, p.uid, p.start_time, p.comm, p.exe, p.first_ns, p.last_ns, "
        "       p.state, p.exit_code, p.records, p.lost, "
        "       (SELECT count(*) FROM segments s WHERE s.process_id = p.id), "
        "       (SELECT coalesce(sum(bytes), 0) FROM segments s WHERE s.process_id = p.id) "
        "FROM processes p WHERE (?1 = 0 OR p.pid = ?1) "
        "  AND coalesce(p.last_ns, p.first_ns) >= ?2 AND p.first_ns <= ?3 "
        "ORDER BY p.first_ns, p.id",
        -1, &st, NULL);
    if (rc != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(st, 1, pid);
    sqlite3_bind_int64(st, 2, clamp_i64(from));
    sqlite3_bind_int64(st, 3, clamp_i64(to));
    int n = 0, ret = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct cli_proc_row r = {
            .id = sqlite3_column_int64(st, 0),
            .pid = (uint32_t)sqlite3_column_int64(st, 1),
            .uid = (uint32_t)sqlite3_column_int64(st, 2),
            .start_time = col_u64(st, 3),
            .comm = col_text(st, 4),
            .exe = col_text(st, 5),
            .first_ns = col_u64(st, 6),
            .last_ns = col_u64(st, 7),
            .state = col_text(st, 8),
            .has_exit_code = sqlite3_column_type(st, 9) != SQLITE_NULL,
            .exit_code = sqlite3_column_int64(st, 9),
            .records = col_u64(st, 10),
            .lost = col_u64(st, 11),
            .segments = col_u64(st, 12),
            .bytes = col_u64(st, 13),
        };
        n++;
        ret = fn(arg, &r);
        if (ret != 0)
            break;
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = -EIO;
    sqlite3_finalize(st);
    return ret < 0 ? ret : n;
}

int cli_query_segments(struct cli_store *s, uint32_t pid, uint64_t from, uint64_t to,
                       cli_seg_fn fn, void *arg)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(s->db,
        "SELECT s.id, s.path, s.process_id, p.pid, p.comm, s.t_min, s.t_max, s.bytes, "
        "       s.records, s.lost, s.n_poll_start, s.n_poll_end, s.n_wake, s.n_worker_park, "
        "       s.n_worker_unpark, s.n_task_spawn, s.n_task_terminate, s.n_queue_depth, "
        "       s.n_custom, s.n_cpu_sample, s.n_sched_switch "
        "FROM segments s JOIN processes p ON p.id = s.process_id "
        "WHERE (?1 = 0 OR p.pid = ?1) AND s.t_max >= ?2 AND s.t_min <= ?3 "
        "ORDER BY s.t_min, s.id",
        -1, &st, NULL);
    if (rc != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(st, 1, pid);
    sqlite3_bind_int64(st, 2, clamp_i64(from));
    sqlite3_bind_int64(st, 3, clamp_i64(to));
    int n = 0, ret = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct cli_seg_row r = {
            .id = col_u64(st, 0),
            .path = col_text(st, 1),
            .process_id = sqlite3_column_int64(st, 2),
            .pid = (uint32_t)sqlite3_column_int64(st, 3),
            .comm = col_text(st, 4),
            .t_min = col_u64(st, 5),
            .t_max = col_u64(st, 6),
            .bytes = col_u64(st, 7),
            .records = col_u64(st, 8),
            .lost = col_u64(st, 9),
        };
        for (int t = 1; t < D9_REC_TYPE_COUNT; t++)
            r.counts[t] = col_u64(st, 9 + t);
        n++;
        ret = fn(arg, &r);
        if (ret != 0)
            break;
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = -EIO;
    sqlite3_finalize(st);
    return ret < 0 ? ret : n;
}

int cli_query_threads(struct cli_store *s, uint32_t pid, cli_thread_fn fn, void *arg)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(s->db,
        "SELECT t.process_id, p.pid, t.tid, t.ring, t.generation, t.name, t.first_ns, "
        "       t.last_ns, t.ended "
        "FROM threads t JOIN processes p ON p.id = t.process_id "
        "WHERE (?1 = 0 OR p.pid = ?1) ORDER BY t.process_id, t.first_ns, t.id",
        -1, &st, NULL);
    if (rc != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(st, 1, pid);
    int n = 0, ret = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct cli_thread_row r = {
            .process_id = sqlite3_column_int64(st, 0),
            .pid = (uint32_t)sqlite3_column_int64(st, 1),
            .tid = (uint32_t)sqlite3_column_int64(st, 2),
            .ring = (uint32_t)sqlite3_column_int64(st, 3),
            .generation = (uint32_t)sqlite3_column_int64(st, 4),
            .name = col_text(st, 5),
            .first_ns = col_u64(st, 6),
            .last_ns = col_u64(st, 7),
            .ended = sqlite3_column_int64(st, 8) != 0,
        };
        n++;
        if ((ret = fn(arg, &r)) != 0)
            break;
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = -EIO;
    sqlite3_finalize(st);
    return ret < 0 ? ret : n;
}

int cli_query_runtimes(struct cli_store *s, uint32_t pid, cli_runtime_fn fn, void *arg)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(s->db,
        "SELECT r.process_id, p.pid, r.runtime_id, r.name "
        "FROM runtimes r JOIN processes p ON p.id = r.process_id "
        "WHERE (?1 = 0 OR p.pid = ?1) ORDER BY r.process_id, r.runtime_id",
        -1, &st, NULL);
    if (rc != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(st, 1, pid);
    int n = 0, ret = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct cli_runtime_row r = {
            .process_id = sqlite3_column_int64(st, 0),
            .pid = (uint32_t)sqlite3_column_int64(st, 1),
            .runtime_id = (uint32_t)sqlite3_column_int64(st, 2),
            .name = col_text(st, 3),
        };
        n++;
        if ((ret = fn(arg, &r)) != 0)
            break;
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = -EIO;
    sqlite3_finalize(st);
    return ret < 0 ? ret : n;
}

/* ---- scan -------------------------------------------------------------------- */

struct rd_entry {                   /* an open segment file */
    uint64_t segment_id;
    struct seg_reader *r;
    int refs;
    uint64_t last_use;
    int64_t process_id;
    uint32_t pid;
    char comm[32];
    struct cli_meta_src meta;
};

struct cursor {                     /* one block being merged */
    struct rd_entry *rd;
    uint8_t *payload;
    size_t len, off;
    uint64_t seq;                   /* open order, breaks timestamp ties */
    const struct d9_rec_hdr *cur;
    size_t cur_len;
    uint32_t tid, ring, generation;
    char thread[20];
};

struct scan {
    struct cli_store *s;
    struct cli_filter fcopy;
    const struct cli_filter *f;     /* == &fcopy */
    struct cli_scan_stats *st;
    struct cli_scan_stats own_st;   /* when the caller passed none */
    const char *prog;
    struct rd_entry **rd;
    size_t nrd, caprd;
    uint64_t use_clock;
    struct cursor **heap;
    size_t nheap, capheap;
    uint64_t next_seq;
    sqlite3_stmt *thread_q;
    sqlite3_stmt *q;                /* the window's DATA blocks by t_first */
    bool have_row;                  /* q is on a row not opened yet */
    int q_rc;
    struct cursor *pending;         /* heap[0], delivered by the last next: advance it first */
};

static const char *meta_rt(const void *ctx, uint32_t id) { return seg_meta_runtime(ctx, id); }
static const struct shm_meta_entry *meta_loc(const void *ctx, uint32_t id)
{
    return seg_meta_location(ctx, id);
}
static const struct shm_meta_entry *meta_schema(const void *ctx, uint32_t id)
{
    return seg_meta_schema(ctx, id);
}

static void rd_free(struct rd_entry *e)
{
    if (e->r)
        seg_reader_close(e->r);
    free(e);
}

/* Read the META blocks of a segment: straight to them with the offsets of
 * the index (a few preads), or, when the index has none, by walking the
 * file's block headers (seg_reader_load_meta). */
static int load_meta(struct scan *sc, struct seg_reader *r, uint64_t seg_id)
{
    sqlite3_stmt *st;
    int n = 0, rc = 0;
    if (sqlite3_prepare_v2(sc->s->db, "SELECT offset FROM blocks WHERE segment_id = ?1 AND "
                           "kind = ?2 ORDER BY offset", -1, &st, NULL) != SQLITE_OK)
        return seg_reader_load_meta(r);
    sqlite3_bind_int64(st, 1, clamp_i64(seg_id));
    sqlite3_bind_int64(st, 2, SEG_BLK_META);
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        struct seg_block b;
        n++;
        rc = seg_reader_seek(r, col_u64(st, 0));
        if (rc == 0 && (rc = seg_reader_next(r, &b)) == 1)
            rc = b.h.kind == SEG_BLK_META ? 0 : -EBADMSG;
        else if (rc == 0)
            rc = -EBADMSG;
    }
    sqlite3_finalize(st);
    if (n == 0 || rc < 0)
        return seg_reader_load_meta(r);     /* index incomplete: trust the file */
    return 0;
}

/* Find or open the reader of a segment. NULL if the file is unusable. */
static struct rd_entry *rd_get(struct scan *sc, uint64_t seg_id, const char *relpath,
                               int64_t process_id, uint32_t pid, const char *comm)
{
    for (size_t i = 0; i < sc->nrd; i++) {
        if (sc->rd[i]->segment_id == seg_id) {
            sc->rd[i]->last_use = ++sc->use_clock;
            return sc->rd[i]->r ? sc->rd[i] : NULL;
        }
    }
    /* evict the least recently used idle reader when the cache is full */
    if (sc->nrd >= CLI_READER_CACHE) {
        size_t victim = SIZE_MAX;
        for (size_t i = 0; i < sc->nrd; i++)
            if (sc->rd[i]->refs == 0 &&
                (victim == SIZE_MAX || sc->rd[i]->last_use < sc->rd[victim]->last_use))
                victim = i;
        if (victim != SIZE_MAX) {
            rd_free(sc->rd[victim]);
            sc->rd[victim] = sc->rd[--sc->nrd];
        }
    }
    if (sc->nrd == sc->caprd) {
        size_t nc = sc->caprd ? sc->caprd * 2 : 8;
        struct rd_entry **n = realloc(sc->rd, nc * sizeof *n);
        if (!n)
            return NULL;
        sc->rd = n;
        sc->caprd = nc;
    }
    struct rd_entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->segment_id = seg_id;
    e->process_id = process_id;
    e->pid = pid;
    snprintf(e->comm, sizeof e->comm, "%s", comm);
    e->last_use = ++sc->use_clock;
    sc->rd[sc->nrd++] = e;

    char path[2 * CLI_PATH_MAX];
    if (relpath[0] == '/' || strstr(relpath, "..")) {
        /* the index is untrusted too: stay inside the store */
        fprintf(stderr, "%s: warning: segment %" PRIu64 ": path '%s' is outside the store, "
                "skipped\n", sc->prog, seg_id, relpath);
        sc->st->missing_segments++;
        return NULL;
    }
    snprintf(path, sizeof path, "%s/%s", sc->s->dir, relpath);
    char why[256] = "";
    int rc = seg_reader_open_ex(&e->r, path, 0, why, sizeof why);
    if (rc == 0 && (rc = load_meta(sc, e->r, seg_id)) < 0)
        snprintf(why, sizeof why, "metadata unreadable");
    if (rc < 0) {
        fprintf(stderr, "%s: warning: %s: %s, skipped\n", sc->prog, path,
                *why ? why : strerror(-rc));
        if (e->r)
            seg_reader_close(e->r);
        e->r = NULL;
        sc->st->missing_segments++;
        return NULL;
    }
    e->meta = (struct cli_meta_src){ meta_rt, meta_loc, meta_schema, e->r };
    return e;
}

static bool cur_less(const struct cursor *a, const struct cursor *b)
{
    if (a->cur->ts != b->cur->ts)
        return a->cur->ts < b->cur->ts;
    return a->seq < b->seq;
}

static void heap_push(struct scan *sc, struct cursor *c)
{
    size_t i = sc->nheap++;
    sc->heap[i] = c;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cur_less(sc->heap[i], sc->heap[p]))
            break;
        struct cursor *t = sc->heap[p];
        sc->heap[p] = sc->heap[i];
        sc->heap[i] = t;
        i = p;
    }
}

/* Restore the heap order after heap[0]'s current record moved forward. */
static void heap_sift_top(struct scan *sc)
{
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < sc->nheap && cur_less(sc->heap[l], sc->heap[m]))
            m = l;
        if (r < sc->nheap && cur_less(sc->heap[r], sc->heap[m]))
            m = r;
        if (m == i)
            break;
        struct cursor *t = sc->heap[m];
        sc->heap[m] = sc->heap[i];
        sc->heap[i] = t;
        i = m;
    }
}

static struct cursor *heap_pop(struct scan *sc)
{
    struct cursor *top = sc->heap[0];
    sc->heap[0] = sc->heap[--sc->nheap];
    heap_sift_top(sc);
    return top;
}

static void cursor_free(struct cursor *c)
{
    if (!c)
        return;
    if (c->rd)
        c->rd->refs--;
    free(c->payload);
    free(c);
}

/* Advance to the next record passing the filter. false at the end. */
static bool cursor_advance(struct scan *sc, struct cursor *c)
{
    for (;;) {
        if (c->off >= c->len)
            return false;
        size_t avail = c->len - c->off;
        const uint8_t *p = c->payload + c->off;
        int n = shm_record_check(p, avail);
        if (n < 0) {
            /* cannot happen for a block that passed seg_reader_next; be safe */
            sc->st->bad_blocks++;
            return false;
        }
        c->off += (size_t)n;
        const struct d9_rec_hdr *h = (const struct d9_rec_hdr *)p;
        if (h->ts < sc->f->from || h->ts > sc->f->to)
            continue;
        if (sc->f->types && (h->type >= 32 || !(sc->f->types & (1u << h->type))))
            continue;
        c->cur = h;
        c->cur_len = (size_t)n;
        return true;
    }
}

static void thread_name(struct scan *sc, struct cursor *c)
{
    c->thread[0] = 0;
    if (!sc->thread_q)
        return;
    sqlite3_reset(sc->thread_q);
    sqlite3_bind_int64(sc->thread_q, 1, c->rd->process_id);
    sqlite3_bind_int64(sc->thread_q, 2, c->ring);
    sqlite3_bind_int64(sc->thread_q, 3, c->generation);
    if (sqlite3_step(sc->thread_q) == SQLITE_ROW)
        snprintf(c->thread, sizeof c->thread, "%s", col_text(sc->thread_q, 0));
}

/* Open the block of the current row of q; pushes a cursor when it has a
 * matching record. Returns 0 or -ENOMEM. */
static int open_block(struct scan *sc, sqlite3_stmt *q)
{
    uint64_t seg_id = col_u64(q, 0), offset = col_u64(q, 1);
    struct rd_entry *rd = rd_get(sc, seg_id, col_text(q, 2), sqlite3_column_int64(q, 3),
                                 (uint32_t)sqlite3_column_int64(q, 4), col_text(q, 5));
    if (!rd)
        return 0;
    struct seg_block b;
    int rc = seg_reader_seek(rd->r, offset);
    if (rc == 0)
        rc = seg_reader_next(rd->r, &b);
    if (rc <= 0 || b.h.kind != SEG_BLK_DATA || b.offset != offset) {
        sc->st->bad_blocks++;
        const char *why = rc < 0 ? seg_reader_error(rd->r) : NULL;
        fprintf(stderr, "%s: warning: %s/%s: block at offset %" PRIu64 " unreadable (%s), "
                "skipped\n", sc->prog, sc->s->dir, col_text(q, 2), offset,
                why ? why : rc < 0 ? "corrupt" : rc == 0 ? "past the end" : "not a data block");
        return 0;
    }
    sc->st->blocks++;
    sc->st->lost += b.h.lost;
    struct cursor *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->payload = malloc(b.records_len ? b.records_len : 1);
    if (!c->payload) {
        free(c);
        return -ENOMEM;
    }
    memcpy(c->payload, b.records, b.records_len);
    c->len = b.records_len;
    c->rd = rd;
    rd->refs++;
    c->tid = b.h.tid;
    c->ring = b.h.ring;
    c->generation = b.h.generation;
    c->seq = sc->next_seq++;
    if (!cursor_advance(sc, c)) {
        cursor_free(c);
        return 0;
    }
    thread_name(sc, c);
    if (sc->nheap == sc->capheap) {
        size_t nc = sc->capheap ? sc->capheap * 2 : 16;
        struct cursor **n = realloc(sc->heap, nc * sizeof *n);
        if (!n) {
            cursor_free(c);
            return -ENOMEM;
        }
        sc->heap = n;
        sc->capheap = nc;
    }
    heap_push(sc, c);
    return 0;
}

int cli_scan_open(struct cli_store *s, const struct cli_filter *f, struct cli_scan_stats *st,
                  const char *prog, struct cli_scan_it **out)
{
    *out = NULL;
    struct scan *sc = calloc(1, sizeof *sc);
    if (!sc)
        return -ENOMEM;
    sc->s = s;
    sc->fcopy = *f;
    sc->f = &sc->fcopy;
    sc->st = st ? st : &sc->own_st;
    memset(sc->st, 0, sizeof *sc->st);
    sc->prog = prog ? prog : "d9";
    int rc = sqlite3_prepare_v2(s->db,
        "SELECT b.segment_id, b.offset, s.path, s.process_id, p.pid, p.comm, b.t_first "
        "FROM blocks b JOIN segments s ON s.id = b.segment_id "
        "JOIN processes p ON p.id = s.process_id "
        "WHERE b.kind = ?1 AND b.t_last >= ?2 AND b.t_first <= ?3 "
        "  AND s.t_max >= ?2 AND s.t_min <= ?3 "
        "  AND (?4 = 0 OR p.pid = ?4) AND (?5 = 0 OR b.tid = ?5) "
        "ORDER BY b.t_first, b.segment_id, b.offset",
        -1, &sc->q, NULL);
    if (rc != SQLITE_OK) {
        free(sc);
        return -EIO;
    }
    sqlite3_bind_int64(sc->q, 1, SEG_BLK_DATA);
    sqlite3_bind_int64(sc->q, 2, clamp_i64(f->from));
    sqlite3_bind_int64(sc->q, 3, clamp_i64(f->to));
    sqlite3_bind_int64(sc->q, 4, f->pid);
    sqlite3_bind_int64(sc->q, 5, f->tid);
    if (sqlite3_prepare_v2(s->db, "SELECT name FROM threads WHERE process_id = ?1 AND "
                           "ring = ?2 AND generation = ?3", -1, &sc->thread_q, NULL) != SQLITE_OK)
        sc->thread_q = NULL;
    sc->have_row = (sc->q_rc = sqlite3_step(sc->q)) == SQLITE_ROW;
    *out = (struct cli_scan_it *)sc;
    return 0;
}

int cli_scan_next(struct cli_scan_it *it, struct cli_rec_src *src, const struct d9_rec_hdr **rec,
                  size_t *len)
{
    struct scan *sc = (struct scan *)it;
    if (sc->pending) {
        /* the record delivered last is heap[0]'s: advance that cursor in
         * place (one sift instead of a pop and a push) */
        sc->pending = NULL;
        if (cursor_advance(sc, sc->heap[0]))
            heap_sift_top(sc);
        else
            cursor_free(heap_pop(sc));
    }
    /* open every block that may hold a record not later than the heap's head */
    while (sc->have_row && (sc->nheap == 0 || col_u64(sc->q, 6) <= sc->heap[0]->cur->ts)) {
        int ret = open_block(sc, sc->q);
        if (ret < 0)
            return ret;
        sc->have_row = (sc->q_rc = sqlite3_step(sc->q)) == SQLITE_ROW;
    }
    if (!sc->have_row && sc->q_rc != SQLITE_DONE)
        return -EIO;
    if (sc->nheap == 0)
        return 0;
    struct cursor *c = sc->heap[0];
    *src = (struct cli_rec_src){
        .process_id = c->rd->process_id,
        .pid = c->rd->pid,
        .comm = c->rd->comm,
        .tid = c->tid,
        .ring = c->ring,
        .generation = c->generation,
        .thread = c->thread,
        .segment_id = c->rd->segment_id,
        .meta = &c->rd->meta,
    };
    sc->st->records++;
    if (c->cur->ts > sc->st->t_last)
        sc->st->t_last = c->cur->ts;
    *rec = c->cur;
    *len = c->cur_len;
    sc->pending = c;                /* stays at heap[0] until the next call */
    return 1;
}

void cli_scan_close(struct cli_scan_it *it)
{
    struct scan *sc = (struct scan *)it;
    if (!sc)
        return;
    while (sc->nheap > 0)
        cursor_free(heap_pop(sc));
    free(sc->heap);
    for (size_t i = 0; i < sc->nrd; i++)
        rd_free(sc->rd[i]);
    free(sc->rd);
    sqlite3_finalize(sc->thread_q);
    sqlite3_finalize(sc->q);
    free(sc);
}

int cli_scan(struct cli_store *s, const struct cli_filter *f, cli_rec_fn fn, void *arg,
             struct cli_scan_stats *st, const char *prog)
{
    struct cli_scan_it *it;
    int ret = cli_scan_open(s, f, st, prog, &it);
    if (ret < 0)
        return ret;
    struct cli_rec_src src;
    const struct d9_rec_hdr *rec;
    size_t len;
    while ((ret = cli_scan_next(it, &src, &rec, &len)) == 1) {
        ret = fn(arg, &src, rec, len);
        if (ret != 0)
            break;
    }
    cli_scan_close(it);
    return ret;
}

/* ---- names ------------------------------------------------------------------- */

struct names_proc {
    int64_t process_id;
    struct seg_reader *r;           /* NULL when no segment could be opened */
};

struct cli_names {
    struct cli_store *s;
    struct names_proc *p;
    size_t n, cap;
};

int cli_names_open(struct cli_store *s, struct cli_names **out)
{
    struct cli_names *n = calloc(1, sizeof *n);
    if (!n)
        return -ENOMEM;
    n->s = s;
    *out = n;
    return 0;
}

void cli_names_close(struct cli_names *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++)
        if (n->p[i].r)
            seg_reader_close(n->p[i].r);
    free(n->p);
    free(n);
}

static struct seg_reader *names_reader(struct cli_names *n, int64_t process_id)
{
    for (size_t i = 0; i < n->n; i++)
        if (n->p[i].process_id == process_id)
            return n->p[i].r;
    if (n->n == n->cap) {
        size_t nc = n->cap ? n->cap * 2 : 8;
        struct names_proc *np = realloc(n->p, nc * sizeof *np);
        if (!np)
            return NULL;
        n->p = np;
        n->cap = nc;
    }
    struct names_proc *e = &n->p[n->n++];
    e->process_id = process_id;
    e->r = NULL;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(n->s->db, "SELECT path FROM segments WHERE process_id = ?1 "
                           "ORDER BY id DESC", -1, &st, NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_int64(st, 1, process_id);
    while (!e->r && sqlite3_step(st) == SQLITE_ROW) {
        const char *rel = col_text(st, 0);
        char path[2 * CLI_PATH_MAX];
        if (rel[0] == '/' || strstr(rel, ".."))
            continue;
        snprintf(path, sizeof path, "%s/%s", n->s->dir, rel);
        struct seg_reader *r;
        if (seg_reader_open(&r, path, 0) < 0)
            continue;
        if (seg_reader_load_meta(r) < 0) {
            seg_reader_close(r);
            continue;
        }
        e->r = r;
    }
    sqlite3_finalize(st);
    return e->r;
}

const char *cli_names_location(struct cli_names *n, int64_t process_id, uint32_t loc, char *buf,
                               size_t cap)
{
    struct seg_reader *r = loc ? names_reader(n, process_id) : NULL;
    const struct shm_meta_entry *e = r ? seg_meta_location(r, loc) : NULL;
    if (!loc)
        snprintf(buf, cap, "?");
    else if (!e || !e->name)
        snprintf(buf, cap, "#%u", loc);
    else if (e->func && *e->func)
        snprintf(buf, cap, "%s:%u %s", e->name, e->line, e->func);
    else
        snprintf(buf, cap, "%s:%u", e->name, e->line);
    return buf;
}

const struct shm_meta_entry *cli_names_meta(struct cli_names *n, int64_t process_id,
                                            uint16_t kind, uint32_t id)
{
    struct seg_reader *r = id ? names_reader(n, process_id) : NULL;
    if (!r)
        return NULL;
    if (kind == D9_META_LOCATION)
        return seg_meta_location(r, id);
    if (kind == D9_META_SCHEMA)
        return seg_meta_schema(r, id);
    return NULL;
}

const char *cli_names_runtime(struct cli_names *n, int64_t process_id, uint16_t rt, char *buf,
                              size_t cap)
{
    struct seg_reader *r = names_reader(n, process_id);
    const char *name = r ? seg_meta_runtime(r, rt) : NULL;
    if (name)
        snprintf(buf, cap, "%s", name);
    else
        snprintf(buf, cap, "#%u", (unsigned)rt);
    return buf;
}

static const char *names_sql1(struct cli_names *n, const char *sql, int64_t a, int64_t b,
                              int64_t c, int nargs, char *buf, size_t cap)
{
    sqlite3_stmt *st;
    buf[0] = 0;
    if (sqlite3_prepare_v2(n->s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return buf;
    sqlite3_bind_int64(st, 1, a);
    if (nargs > 1)
        sqlite3_bind_int64(st, 2, b);
    if (nargs > 2)
        sqlite3_bind_int64(st, 3, c);
    if (sqlite3_step(st) == SQLITE_ROW)
        snprintf(buf, cap, "%s", col_text(st, 0));
    sqlite3_finalize(st);
    return buf;
}

const char *cli_names_thread(struct cli_names *n, int64_t process_id, uint32_t ring,
                             uint32_t generation, char *buf, size_t cap)
{
    return names_sql1(n, "SELECT name FROM threads WHERE process_id = ?1 AND ring = ?2 AND "
                      "generation = ?3", process_id, ring, generation, 3, buf, cap);
}

const char *cli_names_comm(struct cli_names *n, int64_t process_id, char *buf, size_t cap)
{
    return names_sql1(n, "SELECT comm FROM processes WHERE id = ?1", process_id, 0, 0, 1, buf,
                      cap);
}

uint64_t cli_names_last_ns(struct cli_names *n, int64_t process_id)
{
    char buf[32];
    names_sql1(n, "SELECT last_ns FROM processes WHERE id = ?1", process_id, 0, 0, 1, buf,
               sizeof buf);
    uint64_t v = 0;
    return cli_parse_u64(buf, &v) == 0 ? v : 0;
}
