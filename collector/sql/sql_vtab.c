/*
 * sql_vtab.c — the "d9" SQLite module: read-only virtual tables over a
 * store (see sql_vtab.h for the tables and the push-down rules).
 *
 * Three kinds of cursor:
 *   - listing tables (processes, threads, runtimes, locations, segments,
 *     stacks) copy their rows from the query layer's listings at xFilter:
 *     they are small (one row per process, thread, location...);
 *   - record tables (wakes, spawns, terminates, queue_depths, cpu_samples,
 *     events, custom events) step the query layer's time-ordered scan from
 *     xNext, one record per row, decoding only the columns asked for;
 *   - paired tables (polls, parks) feed the scan to a pairing (start/end
 *     per thread, as top-polls pairs them) and yield a row when an interval
 *     closes. With a time window on start_ns, the scan goes on past the
 *     window's end in growing steps (its length, doubled each time) only
 *     while an interval opened in the window is still open, and only ends
 *     are used there; what never closes is yielded last with end_ns NULL.
 *
 * stack_id is a 63-bit hash of (process, frames); the stacks table is built
 * once per connection by one scan of the samples and of the memory maps
 * ("d9.map"), and its frames are named lazily, as d9 flame names them.
 *
 * Invariants: a cursor's record pointers are valid until its next
 * q_scan_next; every integer from a record reaches SQLite as int64 (u64
 * values above INT64_MAX as REAL); rows are never cached across statements.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/query/q_decode.h"
#include "collector/query/q_names.h"
#include "collector/query/q_pair.h"
#include "collector/query/q_text.h"
#include "collector/query/q_names.h"
#include "collector/sql/sql_group.h"
#include "collector/sql/sql_vtab.h"
#include "collector/store/seg.h"
#include "collector/store/sym.h"
#include "shm/record.h"

#define SQL_COST_RECORDS  1e7   /* planner cost of a full record scan */
#define SQL_COST_LISTING  1e3   /* of a listing table */
#define SQL_MAX_CODES     32    /* pushed constraints per scan */
#define SQL_FRAME_MAX     320   /* a symbolized frame name */
#define SQL_LOC_CACHE     256   /* location texts kept per polls cursor */
#define SQL_THR_CACHE     256   /* thread indices kept per grouped polls cursor */
/* Polls served grouped (GROUP BY / ORDER BY loc or location) are held in
 * memory until the scan ends: the planner takes that path only when the
 * index's poll_start counts say they fit in SQL_GROUP_MEM; past
 * SQL_GROUP_MEM_HARD at run time the query fails rather than grow on. */
#define SQL_GROUP_MEM      (1ull << 30)
#define SQL_GROUP_MEM_HARD (2ull << 30)
/* idxNum of a polls scan that serves its rows grouped */
enum { GRP_NONE, GRP_BY_LOC, GRP_BY_LOCATION };

enum kind {
    K_PROCESSES, K_THREADS, K_RUNTIMES, K_LOCATIONS, K_SEGMENTS, K_STACKS,
    K_POLLS, K_PARKS, K_WAKES, K_SPAWNS, K_TERMINATES, K_QUEUE_DEPTHS, K_CPU_SAMPLES,
    K_EVENTS, K_CUSTOM,
};

#define T(x) (1u << (x))
struct tab_def {
    const char *name;
    enum kind kind;
    const char *cols;
    int pid_col, tid_col, ts_col, rt_col;   /* -1: none */
    uint32_t types;                         /* record types scanned; 0: a listing */
    bool tid_blocks;                        /* tid selects blocks (records of that ring) */
    bool ordered;                           /* rows come in ts_col order */
    const char *doc;
};

/* record tables share their first columns: pid, tid, ts_ns */
enum { C_PID, C_TID, C_TS };
enum { PL_PID, PL_TID, PL_RUNTIME, PL_WORKER, PL_TASK, PL_LOC, PL_LOCATION, PL_START, PL_END,
       PL_DUR };
enum { PK_PID, PK_TID, PK_RUNTIME, PK_WORKER, PK_START, PK_END, PK_DUR, PK_CPU, PK_WAIT };
enum { ST_ID, ST_DEPTH, ST_FRAME, ST_ADDRESS, ST_PID };

static const struct tab_def defs[] = {
    { "processes", K_PROCESSES,
      "pid INTEGER, start_time INTEGER, uid INTEGER, comm TEXT, exe TEXT, state TEXT, "
      "exit_code INTEGER, first_ns INTEGER, last_ns INTEGER, records INTEGER, lost INTEGER, "
      "segments INTEGER, bytes INTEGER",
      0, -1, -1, -1, 0, false, false,
      "one row per traced process (index): state alive|exited|crashed|quarantined" },
    { "threads", K_THREADS,
      "pid INTEGER, tid INTEGER, ring INTEGER, generation INTEGER, name TEXT, "
      "first_ns INTEGER, last_ns INTEGER, ended INTEGER",
      0, 1, -1, -1, 0, false, false, "one row per traced thread (index)" },
    { "runtimes", K_RUNTIMES, "pid INTEGER, runtime_id INTEGER, name TEXT",
      0, -1, -1, -1, 0, false, false, "runtimes registered by each process (index)" },
    { "locations", K_LOCATIONS,
      "pid INTEGER, loc INTEGER, file TEXT, line INTEGER, func TEXT, location TEXT",
      0, -1, -1, -1, 0, false, false,
      "spawn/poll locations of each process (segment metadata); location = 'file:line func'" },
    { "segments", K_SEGMENTS,
      "pid INTEGER, id INTEGER, comm TEXT, path TEXT, t_min INTEGER, t_max INTEGER, "
      "bytes INTEGER, records INTEGER, lost INTEGER",
      0, -1, -1, -1, 0, false, false, "segment files (index); path relative to the store" },
    { "stacks", K_STACKS,
      "stack_id INTEGER, depth INTEGER, frame TEXT, address INTEGER, pid INTEGER",
      -1, -1, -1, -1, 0, false, false,
      "frames of every sampled stack, depth 0 = innermost, named as d9 flame names them" },
    { "polls", K_POLLS,
      "pid INTEGER, tid INTEGER, runtime TEXT, worker INTEGER, task INTEGER, loc INTEGER, "
      "location TEXT, start_ns INTEGER, end_ns INTEGER, dur_ns INTEGER",
      PL_PID, PL_TID, PL_START, PL_RUNTIME, T(D9_REC_POLL_START) | T(D9_REC_POLL_END), true,
      false, "task polls (poll_start .. poll_end of one task on one thread); unfinished: "
      "end_ns NULL" },
    { "parks", K_PARKS,
      "pid INTEGER, tid INTEGER, runtime TEXT, worker INTEGER, start_ns INTEGER, "
      "end_ns INTEGER, dur_ns INTEGER, cpu_ns INTEGER, sched_wait_ns INTEGER",
      PK_PID, PK_TID, PK_START, PK_RUNTIME, T(D9_REC_WORKER_PARK) | T(D9_REC_WORKER_UNPARK),
      true, false, "worker_park .. worker_unpark intervals; cpu_ns = thread CPU time read at "
      "the park, sched_wait_ns = run-queue wait read at the unpark (NULL when not sampled)" },
    { "wakes", K_WAKES,
      "pid INTEGER, tid INTEGER, ts_ns INTEGER, runtime TEXT, waker INTEGER, wakee INTEGER, "
      "target_worker INTEGER",
      C_PID, C_TID, C_TS, 3, T(D9_REC_WAKE), true, true,
      "wake records; waker 0 = not a task, target_worker NULL = unknown" },
    { "spawns", K_SPAWNS,
      "pid INTEGER, tid INTEGER, ts_ns INTEGER, runtime TEXT, task INTEGER, loc INTEGER, "
      "location TEXT",
      C_PID, C_TID, C_TS, 3, T(D9_REC_TASK_SPAWN), true, true, "task_spawn records" },
    { "terminates", K_TERMINATES,
      "pid INTEGER, tid INTEGER, ts_ns INTEGER, runtime TEXT, task INTEGER",
      C_PID, C_TID, C_TS, 3, T(D9_REC_TASK_TERMINATE), true, true, "task_terminate records" },
    { "queue_depths", K_QUEUE_DEPTHS,
      "pid INTEGER, tid INTEGER, ts_ns INTEGER, runtime TEXT, worker INTEGER, depth INTEGER",
      C_PID, C_TID, C_TS, 3, T(D9_REC_QUEUE_DEPTH), true, true,
      "queue_depth records; worker NULL = the runtime's global queue" },
    { "cpu_samples", K_CPU_SAMPLES,
      "pid INTEGER, tid INTEGER, ts_ns INTEGER, kind TEXT, stack_id INTEGER, "
      "weight_ns INTEGER, nframes INTEGER",
      C_PID, C_TID, C_TS, -1, T(D9_REC_CPU_SAMPLE) | T(D9_REC_SCHED_SWITCH), false, true,
      "profile samples: kind 'cpu' (on-CPU) or 'off_cpu' (context switch); tid = sampled "
      "thread; frames in stacks" },
    { "events", K_EVENTS,
      "pid INTEGER, tid INTEGER, ts_ns INTEGER, type TEXT, event TEXT, thread TEXT, fields TEXT",
      C_PID, C_TID, C_TS, -1, 0xffffffffu & ~T(D9_REC_PAD), true, true,
      "every record decoded: type name, custom event name, fields as a JSON object" },
};
#define NDEFS (sizeof defs / sizeof defs[0])

static const struct tab_def custom_def = {
    "", K_CUSTOM, "", C_PID, C_TID, C_TS, -1, T(D9_REC_CUSTOM), true, true, ""
};

/* ---- context ----------------------------------------------------------------- */

struct event_def {                  /* one custom-event table */
    char *table;                    /* SQL name */
    char *event;                    /* schema name */
    unsigned nfields;
    char *fields[D9_SCHEMA_MAX_FIELDS * 4];     /* union over the processes */
    char *colnames[D9_SCHEMA_MAX_FIELDS * 4];
    uint8_t ftype[D9_SCHEMA_MAX_FIELDS * 4];    /* D9_FT_*, 0 = differs between schemas */
    uint32_t pid;                   /* the one pid whose processes have it, 0 = several */
};

struct stk {
    uint64_t id;
    int64_t process_id;
    uint32_t pid;
    uint16_t nframes;
    uint64_t *ips;                  /* innermost first */
    char **names;                   /* lazily symbolized */
};

struct proc_res {
    int64_t process_id;
    struct sym_resolver *r;
};

struct sql_vtab {
    struct q_store *s;
    const char *prog;
    struct q_names *names;
    struct q_scan_stats st;
    struct event_def *ev;
    size_t nev;
    bool stacks_built;
    struct stk *stk;
    size_t nstk, capstk;
    size_t *slot;                   /* hash of stk index + 1, 0 = empty */
    size_t capslot;
    struct proc_res *res;
    size_t nres;
};

struct vt {
    sqlite3_vtab base;
    struct sql_vtab *ctx;
    const struct tab_def *def;
    const struct event_def *ev;     /* K_CUSTOM */
};

/* a listing row value */
struct mval {
    int t;                          /* SQLITE_NULL / INTEGER / FLOAT / TEXT */
    int64_t i;
    double d;
    char *s;
};

struct park_slot {
    int64_t process_id;
    uint32_t ring, generation;
    bool open;
    uint32_t pid, tid;
    uint16_t runtime, worker;
    uint64_t start_ns, cpu_ns;
    bool cpu_sampled;
};

struct park_row {
    int64_t process_id;
    uint32_t pid, tid;
    uint16_t runtime, worker;
    uint64_t start_ns, end_ns, cpu_ns, wait_ns;
    bool finished, cpu_sampled, wait_sampled;
};

struct cur {
    sqlite3_vtab_cursor base;
    struct vt *vt;
    bool eof;
    /* filter */
    struct q_filter f;
    bool rt_set;
    char rt_name[D9_NAME_MAX + 1];
    uint32_t sample_tid;            /* cpu_samples: the sampled thread, 0 = any */
    /* listing rows */
    struct mval *rows;              /* ncols values per row: the columns, then the key */
    size_t ncols, nrows, irow;
    /* stacks: stack indices to list, and the depth in the current one */
    size_t *sidx;
    size_t nsidx, isidx;
    uint16_t depth;
    /* scan */
    struct q_scan_it *it;
    struct q_scan_stats st;
    struct q_rec_src src;
    const struct d9_rec_hdr *rec;
    size_t len;
    struct q_decoded *dec;
    bool decoded;
    char *json;
    size_t jsonlen;
    /* pairing */
    int phase;                      /* 1 window, 2 extension (ends only), 3 unfinished, 4 done */
    uint64_t win_to, ext_from, ext_len, tmax;
    struct q_pair *polls;
    struct q_poll poll;
    bool poll_unfinished;
    size_t open_it;
    struct park_slot *parks;
    size_t nparks, capparks, parks_open;
    struct park_row park;
    /* custom: the schema matched last (per segment metadata) */
    const void *last_meta;
    uint32_t last_schema;
    bool last_match;
    char text[Q_LOC_TEXT_MAX + 64];
    /* polls: location texts by loc id (direct-mapped), so a GROUP BY
     * location does not format the same name for every poll */
    struct loc_cache {
        int64_t process_id;
        uint32_t loc;
        char *text;
    } locs[SQL_LOC_CACHE];
    /* polls served grouped: the rows, their threads, caches of bucket and
     * thread by key (direct-mapped, index + 1; 0 = empty) */
    struct sql_group *grp;
    bool grp_serving;               /* the scan is over: rows come from grp */
    struct grp_thr *gthr;
    size_t ngthr, capgthr;
    struct grp_loc {
        int64_t process_id;
        uint32_t loc;
        int bucket;                 /* + 1 */
    } gloc[SQL_LOC_CACHE];
    uint32_t gthr_cache[SQL_THR_CACHE];
};

/* a poll held for grouped serving: 40 bytes, the thread in a side table */
struct grp_row {
    uint32_t thr;                   /* index in cur.gthr, | GRP_UNFINISHED */
    uint32_t loc;
    uint64_t task;
    uint16_t runtime, worker;
    uint32_t pad;
    uint64_t start_ns, end_ns;
};
#define GRP_UNFINISHED 0x80000000u
_Static_assert(sizeof(struct grp_row) == 40, "grouped poll rows stay small");

struct grp_thr {
    int64_t process_id;
    uint32_t pid, tid, ring, generation;
};

/* ---- helpers ---------------------------------------------------------------------- */

static void result_u64(sqlite3_context *cx, uint64_t v)
{
    if (v > (uint64_t)INT64_MAX)
        sqlite3_result_double(cx, (double)v);
    else
        sqlite3_result_int64(cx, (int64_t)v);
}

static void result_str(sqlite3_context *cx, const char *s)
{
    sqlite3_result_text(cx, s, -1, SQLITE_TRANSIENT);
}

static int vt_error(struct vt *v, const char *fmt, const char *what)
{
    sqlite3_free(v->base.zErrMsg);
    v->base.zErrMsg = sqlite3_mprintf(fmt, what);
    return SQLITE_ERROR;
}

static const char *loc_format(const struct shm_meta_entry *e, uint32_t loc, char *buf, size_t cap)
{
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

/* the runtime id a built-in record carries; false for records without one */
static bool rec_runtime(const struct d9_rec_hdr *rec, size_t len, uint16_t *rt)
{
    switch (rec->type) {
    case D9_REC_POLL_START: {
        struct d9_rec_poll_start r;
        if (len < sizeof r)
            return false;
        memcpy(&r, rec, sizeof r);
        *rt = r.runtime;
        return true;
    }
    case D9_REC_POLL_END: {
        struct d9_rec_poll_end r;
        if (len < sizeof r)
            return false;
        memcpy(&r, rec, sizeof r);
        *rt = r.runtime;
        return true;
    }
    case D9_REC_WAKE: {
        struct d9_rec_wake r;
        if (len < sizeof r)
            return false;
        memcpy(&r, rec, sizeof r);
        *rt = r.runtime;
        return true;
    }
    case D9_REC_WORKER_PARK:
    case D9_REC_WORKER_UNPARK: {
        struct d9_rec_worker r;
        if (len < sizeof r)
            return false;
        memcpy(&r, rec, sizeof r);
        *rt = r.runtime;
        return true;
    }
    case D9_REC_TASK_SPAWN:
    case D9_REC_TASK_TERMINATE: {
        struct d9_rec_task r;
        if (len < sizeof r)
            return false;
        memcpy(&r, rec, sizeof r);
        *rt = r.runtime;
        return true;
    }
    case D9_REC_QUEUE_DEPTH: {
        struct d9_rec_queue_depth r;
        if (len < sizeof r)
            return false;
        memcpy(&r, rec, sizeof r);
        *rt = r.runtime;
        return true;
    }
    default:
        return false;
    }
}

static const char *src_runtime(const struct q_rec_src *src, uint16_t rt, char *buf, size_t cap)
{
    const struct q_meta_src *m = src->meta;
    const char *n = m && m->runtime ? m->runtime(m->ctx, rt) : NULL;
    if (n)
        return n;
    snprintf(buf, cap, "#%u", (unsigned)rt);
    return buf;
}

/* ---- stacks ------------------------------------------------------------------------ */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* stack_id of a CPU_SAMPLE / SCHED_SWITCH record (shm_record_check passed) */
static uint64_t stack_id_of(int64_t process_id, const struct d9_rec_hdr *rec, size_t len,
                            uint16_t *nframes)
{
    struct d9_rec_stack s;
    if (len < sizeof s) {
        *nframes = 0;
        return mix64((uint64_t)process_id) & (uint64_t)INT64_MAX;
    }
    memcpy(&s, rec, sizeof s);
    size_t max = (len - sizeof s) / 8;
    uint16_t n = s.nframes <= max ? s.nframes : (uint16_t)max;
    uint64_t h = mix64((uint64_t)process_id ^ 0x9e3779b97f4a7c15ull) ^ n;
    const uint8_t *ips = (const uint8_t *)rec + sizeof s;
    for (uint16_t i = 0; i < n; i++) {
        uint64_t ip;
        memcpy(&ip, ips + (size_t)i * 8, 8);
        h = mix64(h ^ ip) + i;
    }
    *nframes = n;
    return h & (uint64_t)INT64_MAX;
}

static struct stk *stack_find(struct sql_vtab *v, uint64_t id)
{
    if (!v->capslot)
        return NULL;
    for (size_t j = mix64(id) & (v->capslot - 1); v->slot[j]; j = (j + 1) & (v->capslot - 1))
        if (v->stk[v->slot[j] - 1].id == id)
            return &v->stk[v->slot[j] - 1];
    return NULL;
}

static int stack_insert(struct sql_vtab *v, uint64_t id, const struct q_rec_src *src,
                        const struct d9_rec_hdr *rec, uint16_t n)
{
    if ((v->nstk + 1) * 2 > v->capslot) {
        size_t nc = v->capslot ? v->capslot * 2 : 1024;
        size_t *ns = calloc(nc, sizeof *ns);
        if (!ns)
            return -ENOMEM;
        for (size_t i = 0; i < v->nstk; i++) {
            size_t j = mix64(v->stk[i].id) & (nc - 1);
            while (ns[j])
                j = (j + 1) & (nc - 1);
            ns[j] = i + 1;
        }
        free(v->slot);
        v->slot = ns;
        v->capslot = nc;
    }
    if (v->nstk == v->capstk) {
        size_t nc = v->capstk ? v->capstk * 2 : 256;
        struct stk *s = realloc(v->stk, nc * sizeof *s);
        if (!s)
            return -ENOMEM;
        v->stk = s;
        v->capstk = nc;
    }
    struct stk *e = &v->stk[v->nstk];
    *e = (struct stk){ .id = id, .process_id = src->process_id, .pid = src->pid, .nframes = n };
    e->ips = malloc((n ? n : 1) * sizeof *e->ips);
    e->names = calloc(n ? n : 1, sizeof *e->names);
    if (!e->ips || !e->names) {
        free(e->ips);
        free(e->names);
        return -ENOMEM;
    }
    memcpy(e->ips, (const uint8_t *)rec + sizeof(struct d9_rec_stack), (size_t)n * 8);
    size_t j = mix64(id) & (v->capslot - 1);
    while (v->slot[j])
        j = (j + 1) & (v->capslot - 1);
    v->slot[j] = ++v->nstk;
    return 0;
}

static struct sym_resolver *resolver_of(struct sql_vtab *v, int64_t process_id)
{
    for (size_t i = 0; i < v->nres; i++)
        if (v->res[i].process_id == process_id)
            return v->res[i].r;
    struct proc_res *n = realloc(v->res, (v->nres + 1) * sizeof *n);
    if (!n)
        return NULL;
    v->res = n;
    struct sym_resolver *r;
    if (sym_resolver_new(&r, "") < 0)
        return NULL;
    v->res[v->nres++] = (struct proc_res){ process_id, r };
    return r;
}

/* One scan of the whole store: distinct stacks and the processes' memory maps. */
static int stacks_build(struct sql_vtab *v)
{
    if (v->stacks_built)
        return 0;
    struct q_filter f = { .from = 0, .to = UINT64_MAX,
                            .types = T(D9_REC_CPU_SAMPLE) | T(D9_REC_SCHED_SWITCH) |
                                     T(D9_REC_CUSTOM) };
    struct q_scan_it *it;
    struct q_scan_stats st;
    int rc = q_scan_open(v->s, &f, &st, v->prog, &it);
    if (rc < 0)
        return rc;
    struct q_rec_src src;
    const struct d9_rec_hdr *rec;
    size_t len;
    while ((rc = q_scan_next(it, &src, &rec, &len)) == 1) {
        if (rec->type == D9_REC_CUSTOM) {
            struct sym_map_rec m;
            if (src.ring != SYM_SEG_RING || sym_map_decode((const uint8_t *)rec, len, &m) != 0)
                continue;
            struct sym_resolver *r = resolver_of(v, src.process_id);
            if (!r || sym_resolver_add(r, &m) < 0) {
                rc = -ENOMEM;
                break;
            }
            continue;
        }
        uint16_t n;
        uint64_t id = stack_id_of(src.process_id, rec, len, &n);
        if (!stack_find(v, id) && (rc = stack_insert(v, id, &src, rec, n)) < 0)
            break;
    }
    q_scan_close(it);
    v->st.blocks += st.blocks;
    v->st.records += st.records;
    v->st.bad_blocks += st.bad_blocks;
    v->st.missing_segments += st.missing_segments;
    if (rc < 0)
        return rc;
    v->stacks_built = true;
    return 0;
}

/* Frame depth of stack e, named as d9 flame names it: return addresses are
 * looked up at ip - 1 except the innermost frame and the first user frame
 * under kernel frames (where the thread was interrupted or entered the kernel). */
static const char *stack_frame(struct sql_vtab *v, struct stk *e, uint16_t depth)
{
    if (e->names[depth])
        return e->names[depth];
    uint64_t ip = e->ips[depth];
    bool kernel = ip >= SYM_KERNEL_SPACE_MIN;
    bool exact = depth == 0 || (!kernel && e->ips[depth - 1] >= SYM_KERNEL_SPACE_MIN);
    char buf[SQL_FRAME_MAX];
    struct sym_resolver *r = resolver_of(v, e->process_id);
    if (r)
        sym_resolve(r, exact ? ip : ip - 1, kernel, buf, sizeof buf);
    else
        snprintf(buf, sizeof buf, "0x%" PRIx64, ip);
    e->names[depth] = strdup(buf);
    return e->names[depth] ? e->names[depth] : "?";
}

/* ---- listing rows ------------------------------------------------------------------- */

static struct mval *row_add(struct cur *c)
{
    if (c->nrows % 64 == 0) {
        struct mval *n = realloc(c->rows, (c->nrows + 64) * c->ncols * sizeof *n);
        if (!n)
            return NULL;
        c->rows = n;
    }
    struct mval *r = &c->rows[c->nrows++ * c->ncols];
    memset(r, 0, c->ncols * sizeof *r);
    return r;
}

static void mv_int(struct mval *m, int64_t v) { m->t = SQLITE_INTEGER; m->i = v; }
static void mv_u64(struct mval *m, uint64_t v)
{
    if (v > (uint64_t)INT64_MAX) {
        m->t = SQLITE_FLOAT;
        m->d = (double)v;
    } else {
        mv_int(m, (int64_t)v);
    }
}
static int mv_str(struct mval *m, const char *s)
{
    m->t = SQLITE_TEXT;
    m->s = strdup(s ? s : "");
    return m->s ? 0 : -ENOMEM;
}
/* 0 = unknown in the index: NULL */
static void mv_ns(struct mval *m, uint64_t v)
{
    if (v)
        mv_u64(m, v);
}

/* The row's key for its rowid, in the slot after its columns. */
static void mv_key(struct cur *c, struct mval *r, uint64_t a, uint64_t b, uint64_t k)
{
    mv_int(&r[c->ncols - 1], (int64_t)(mix64(mix64(a) ^ b) ^ k));
}

static void rows_free(struct cur *c)
{
    for (size_t i = 0; i < c->nrows * c->ncols; i++)
        free(c->rows[i].s);
    free(c->rows);
    c->rows = NULL;
    c->nrows = c->irow = 0;
}

static int on_proc(void *arg, const struct idx_read_process *p)
{
    struct cur *c = arg;
    struct mval *r = row_add(c);
    if (!r)
        return -ENOMEM;
    mv_int(&r[0], p->pid);
    mv_u64(&r[1], p->start_time);
    mv_int(&r[2], p->uid);
    int e = mv_str(&r[3], p->comm) | mv_str(&r[4], p->exe) | mv_str(&r[5], p->state);
    if (p->has_exit_code)
        mv_int(&r[6], p->exit_code);
    mv_ns(&r[7], p->first_ns);
    mv_ns(&r[8], p->last_ns);
    mv_u64(&r[9], p->records);
    mv_u64(&r[10], p->lost);
    mv_u64(&r[11], p->segments);
    mv_u64(&r[12], p->bytes);
    mv_key(c, r, (uint64_t)p->id, 0, 0);
    return e ? -ENOMEM : 0;
}

static int on_thread(void *arg, const struct idx_read_thread *t)
{
    struct cur *c = arg;
    if (c->f.tid && t->tid != c->f.tid)
        return 0;
    struct mval *r = row_add(c);
    if (!r)
        return -ENOMEM;
    mv_int(&r[0], t->pid);
    mv_int(&r[1], t->tid);
    mv_int(&r[2], t->ring);
    mv_int(&r[3], t->generation);
    int e = mv_str(&r[4], t->name);
    mv_ns(&r[5], t->first_ns);
    mv_ns(&r[6], t->last_ns);
    mv_int(&r[7], t->ended);
    mv_key(c, r, (uint64_t)t->process_id, t->ring, (uint64_t)t->generation << 1);
    return e;
}

static int on_runtime(void *arg, const struct idx_read_runtime *t)
{
    struct cur *c = arg;
    struct mval *r = row_add(c);
    if (!r)
        return -ENOMEM;
    mv_int(&r[0], t->pid);
    mv_int(&r[1], t->runtime_id);
    mv_key(c, r, (uint64_t)t->process_id, t->runtime_id, 3);
    return mv_str(&r[2], t->name);
}

static int on_segment(void *arg, const struct idx_read_segment *s)
{
    struct cur *c = arg;
    struct mval *r = row_add(c);
    if (!r)
        return -ENOMEM;
    mv_int(&r[0], s->pid);
    mv_u64(&r[1], s->id);
    int e = mv_str(&r[2], s->comm) | mv_str(&r[3], s->path);
    mv_u64(&r[4], s->t_min);
    mv_u64(&r[5], s->t_max);
    mv_u64(&r[6], s->bytes);
    mv_u64(&r[7], s->records);
    mv_u64(&r[8], s->lost);
    mv_key(c, r, s->id, 0, 5);
    return e ? -ENOMEM : 0;
}

struct proc_list {
    int64_t *id;
    uint32_t *pid;
    size_t n;
};

static int on_proc_id(void *arg, const struct idx_read_process *p)
{
    struct proc_list *l = arg;
    if (l->n % 32 == 0) {
        int64_t *ni = realloc(l->id, (l->n + 32) * sizeof *ni);
        if (!ni)
            return -ENOMEM;
        l->id = ni;
        uint32_t *np = realloc(l->pid, (l->n + 32) * sizeof *np);
        if (!np)
            return -ENOMEM;
        l->pid = np;
    }
    l->id[l->n] = p->id;
    l->pid[l->n++] = p->pid;
    return 0;
}

static int locations_fill(struct cur *c)
{
    struct sql_vtab *v = c->vt->ctx;
    struct proc_list l = { 0 };
    int rc = q_store_processes(v->s, c->f.pid, 0, UINT64_MAX, on_proc_id, &l);
    for (size_t i = 0; rc >= 0 && i < l.n; i++) {
        for (uint32_t id = 1; id <= SEG_META_IDS_MAX; id++) {
            const struct shm_meta_entry *e = q_names_meta(v->names, l.id[i], D9_META_LOCATION,
                                                            id);
            if (!e)
                continue;
            struct mval *r = row_add(c);
            if (!r) {
                rc = -ENOMEM;
                break;
            }
            mv_int(&r[0], l.pid[i]);
            mv_int(&r[1], id);
            mv_key(c, r, (uint64_t)l.id[i], id, 7);
            mv_int(&r[3], e->line);
            if (mv_str(&r[2], e->name) | mv_str(&r[4], e->func) |
                mv_str(&r[5], loc_format(e, id, c->text, sizeof c->text))) {
                rc = -ENOMEM;
                break;
            }
        }
    }
    free(l.id);
    free(l.pid);
    return rc < 0 ? rc : 0;
}

/* ---- pairing ------------------------------------------------------------------------ */

static bool polls_open(struct cur *c)
{
    size_t it = 0;
    struct q_poll p;
    return q_pair_next_open(c->polls, &it, &p) != 0;
}

static struct park_slot *park_slot_of(struct cur *c, const struct q_rec_src *src, bool create)
{
    for (size_t i = 0; i < c->nparks; i++) {
        struct park_slot *p = &c->parks[i];
        if (p->process_id == src->process_id && p->ring == src->ring &&
            p->generation == src->generation)
            return p;
    }
    if (!create)
        return NULL;
    if (c->nparks == c->capparks) {
        size_t nc = c->capparks ? c->capparks * 2 : 16;
        struct park_slot *n = realloc(c->parks, nc * sizeof *n);
        if (!n)
            return NULL;
        c->parks = n;
        c->capparks = nc;
    }
    struct park_slot *p = &c->parks[c->nparks++];
    *p = (struct park_slot){ .process_id = src->process_id, .ring = src->ring,
                             .generation = src->generation };
    return p;
}

/* Feed the current record: 1 when it closes an interval (row ready). */
static int pair_feed(struct cur *c, bool may_open)
{
    if (c->vt->def->kind == K_POLLS) {
        if (c->rec->type == D9_REC_POLL_START && !may_open)
            return 0;
        int r = q_pair_feed(c->polls, &c->src, c->rec, c->len, &c->poll);
        c->poll_unfinished = false;
        return r;
    }
    struct d9_rec_worker w;
    if (c->len < sizeof w)
        return 0;
    memcpy(&w, c->rec, sizeof w);
    bool sampled = !(w.flags & D9_WORKER_UNSAMPLED);
    if (w.h.type == D9_REC_WORKER_PARK) {
        if (!may_open)
            return 0;
        struct park_slot *p = park_slot_of(c, &c->src, true);
        if (!p)
            return -ENOMEM;
        if (!p->open)
            c->parks_open++;
        p->open = true;
        p->pid = c->src.pid;
        p->tid = c->src.tid;
        p->runtime = w.runtime;
        p->worker = w.worker;
        p->start_ns = w.h.ts;
        p->cpu_ns = w.cpu_ns;
        p->cpu_sampled = sampled;
        return 0;
    }
    struct park_slot *p = park_slot_of(c, &c->src, false);
    if (!p || !p->open)
        return 0;
    p->open = false;
    c->parks_open--;
    c->park = (struct park_row){
        .process_id = p->process_id, .pid = p->pid, .tid = p->tid, .runtime = p->runtime,
        .worker = p->worker, .start_ns = p->start_ns,
        .end_ns = w.h.ts < p->start_ns ? p->start_ns : w.h.ts, .cpu_ns = p->cpu_ns,
        .wait_ns = w.sched_wait_ns, .finished = true, .cpu_sampled = p->cpu_sampled,
        .wait_sampled = sampled,
    };
    return 1;
}

static bool pair_any_open(struct cur *c)
{
    return c->vt->def->kind == K_POLLS ? polls_open(c) : c->parks_open > 0;
}

/* The next interval still open after the scans: 1 = row ready, 0 = none. */
static int pair_unfinished(struct cur *c)
{
    if (c->vt->def->kind == K_POLLS) {
        if (!q_pair_next_open(c->polls, &c->open_it, &c->poll))
            return 0;
        c->poll.end_ns = 0;
        c->poll_unfinished = true;
        return 1;
    }
    for (; c->open_it < c->nparks; c->open_it++) {
        struct park_slot *p = &c->parks[c->open_it];
        if (!p->open)
            continue;
        c->park = (struct park_row){
            .process_id = p->process_id, .pid = p->pid, .tid = p->tid, .runtime = p->runtime,
            .worker = p->worker, .start_ns = p->start_ns, .cpu_ns = p->cpu_ns,
            .cpu_sampled = p->cpu_sampled,
        };
        c->open_it++;
        return 1;
    }
    return 0;
}

/* ---- scanning ----------------------------------------------------------------------- */

static void scan_end(struct cur *c)
{
    if (!c->it)
        return;
    q_scan_close(c->it);
    c->it = NULL;
    struct q_scan_stats *t = &c->vt->ctx->st;
    t->blocks += c->st.blocks;
    t->records += c->st.records;
    t->lost += c->st.lost;
    t->bad_blocks += c->st.bad_blocks;
    t->missing_segments += c->st.missing_segments;
}

static int scan_begin(struct cur *c, uint64_t from, uint64_t to)
{
    struct q_filter f = c->f;
    f.from = from;
    f.to = to;
    return q_scan_open(c->vt->ctx->s, &f, &c->st, c->vt->ctx->prog, &c->it);
}

/* Does the current record belong to this table (beyond the scan's filter)? */
static bool rec_matches(struct cur *c)
{
    const struct tab_def *d = c->vt->def;
    if (c->rt_set) {
        uint16_t rt;
        char buf[24];
        if (!rec_runtime(c->rec, c->len, &rt) ||
            strcmp(src_runtime(&c->src, rt, buf, sizeof buf), c->rt_name) != 0)
            return false;
    }
    if (d->kind == K_CPU_SAMPLES && c->sample_tid) {
        struct d9_rec_stack s;
        if (c->len < sizeof s)
            return false;
        memcpy(&s, c->rec, sizeof s);
        return s.tid == c->sample_tid;
    }
    if (d->kind == K_CUSTOM) {
        struct d9_rec_custom r;
        if (c->len < sizeof r)
            return false;
        memcpy(&r, c->rec, sizeof r);
        const struct q_meta_src *m = c->src.meta;
        if (m->ctx != c->last_meta || r.schema != c->last_schema) {
            const struct shm_meta_entry *e = m->schema ? m->schema(m->ctx, r.schema) : NULL;
            c->last_meta = m->ctx;
            c->last_schema = r.schema;
            c->last_match = e && e->name && strcmp(e->name, c->vt->ev->event) == 0;
        }
        return c->last_match;
    }
    return true;
}

static int group_step(struct cur *c);

/* Advance to the next row. 0 (c->eof set at the end) or -errno. */
static int step(struct cur *c)
{
    c->decoded = false;
    if (c->grp_serving)
        return group_step(c);
    const struct tab_def *d = c->vt->def;
    if (!d->types) {
        if (d->kind == K_STACKS) {
            const struct sql_vtab *v = c->vt->ctx;
            c->depth++;
            while (c->isidx < c->nsidx && c->depth >= v->stk[c->sidx[c->isidx]].nframes) {
                c->isidx++;
                c->depth = 0;
            }
            c->eof = c->isidx >= c->nsidx;
            return 0;
        }
        if (++c->irow >= c->nrows)
            c->eof = true;
        return 0;
    }
    bool paired = d->kind == K_POLLS || d->kind == K_PARKS;
    for (;;) {
        if (c->it) {
            int r = q_scan_next(c->it, &c->src, &c->rec, &c->len);
            if (r < 0)
                return r;
            if (r == 1) {
                if (!rec_matches(c))
                    continue;
                if (!paired)
                    return 0;
                int p = pair_feed(c, c->phase == 1);
                if (p < 0)
                    return p;
                if (p == 1)
                    return 0;
                if (c->phase == 2 && !pair_any_open(c))
                    scan_end(c);
                continue;
            }
            scan_end(c);
        }
        if (!paired) {
            c->eof = true;
            return 0;
        }
        if (c->phase == 1 || c->phase == 2) {
            /* the window's scan is over: follow open intervals past its end */
            if (c->phase == 1) {
                c->ext_from = c->win_to + 1;
                c->phase = 2;
            }
            if (c->win_to != UINT64_MAX && pair_any_open(c) && c->ext_from <= c->tmax &&
                c->ext_from != 0) {
                uint64_t to = c->ext_len > UINT64_MAX - c->ext_from ? UINT64_MAX
                                                                    : c->ext_from + c->ext_len - 1;
                int r = scan_begin(c, c->ext_from, to);
                if (r < 0)
                    return r;
                c->ext_from = to == UINT64_MAX ? 0 : to + 1;
                c->ext_len = c->ext_len > UINT64_MAX / 2 ? UINT64_MAX : c->ext_len * 2;
                continue;
            }
            c->phase = 3;
            c->open_it = 0;
        }
        if (c->phase == 3 && pair_unfinished(c) == 1)
            return 0;
        c->phase = 4;
        c->eof = true;
        return 0;
    }
}

/* ---- polls grouped by loc or location -------------------------------------------------
 * SQLite has no hash aggregation: a GROUP BY it cannot get in order from the
 * table sorts every row. Polls asked for grouped by loc or location are
 * instead bucketed here as the pairing yields them (one bucket per loc, or
 * per location text, since locations of several processes may share a
 * text) and served bucket by bucket in key order, each bucket in scan
 * order; SQLite then groups adjacent rows without a sorter. */

/* The thread table index of a poll's thread. */
static int grp_thread(struct cur *c, const struct q_poll *p)
{
    uint64_t h = mix64((uint64_t)p->process_id ^ ((uint64_t)p->ring << 32 | p->generation));
    uint32_t *slot = &c->gthr_cache[h % SQL_THR_CACHE];
    const struct grp_thr *t = *slot ? &c->gthr[*slot - 1] : NULL;
    if (t && t->process_id == p->process_id && t->ring == p->ring && t->generation == p->generation)
        return (int)(*slot - 1);
    size_t i = 0;
    while (i < c->ngthr && !(c->gthr[i].process_id == p->process_id &&
                             c->gthr[i].ring == p->ring && c->gthr[i].generation == p->generation))
        i++;
    if (i == c->ngthr) {
        if (c->ngthr >= GRP_UNFINISHED - 1)
            return -E2BIG;
        if (c->ngthr == c->capgthr) {
            size_t nc = c->capgthr ? c->capgthr * 2 : 16;
            struct grp_thr *n = realloc(c->gthr, nc * sizeof *n);
            if (!n)
                return -ENOMEM;
            c->gthr = n;
            c->capgthr = nc;
        }
        c->gthr[c->ngthr++] = (struct grp_thr){ p->process_id, p->pid, p->tid, p->ring,
                                                p->generation };
    }
    *slot = (uint32_t)i + 1;
    return (int)i;
}

/* The bucket of a poll: by loc, or by its location text as col_poll names it. */
static int grp_bucket(struct cur *c, const struct q_poll *p, int by)
{
    if (by == GRP_BY_LOC)
        return sql_group_bucket_int(c->grp, p->loc);
    uint64_t h = mix64((uint64_t)p->process_id) ^ p->loc;
    struct grp_loc *e = &c->gloc[h % SQL_LOC_CACHE];
    if (e->bucket && e->process_id == p->process_id && e->loc == p->loc)
        return e->bucket - 1;
    int b = sql_group_bucket_text(c->grp, q_names_location(c->vt->ctx->names, p->process_id,
                                                                   p->loc, c->text, sizeof c->text));
    if (b >= 0) {
        e->process_id = p->process_id;
        e->loc = p->loc;
        e->bucket = b + 1;
    }
    return b;
}

/* Run the whole pairing into buckets, then serve the first row. */
static int group_fill(struct cur *c, int by)
{
    int rc = sql_group_new(sizeof(struct grp_row), &c->grp);
    for (rc = rc < 0 ? rc : step(c); rc == 0 && !c->eof; rc = step(c)) {
        const struct q_poll *p = &c->poll;
        int b = grp_bucket(c, p, by), t = b < 0 ? b : grp_thread(c, p);
        if (t < 0)
            return t;
        struct grp_row *r = sql_group_slot(c->grp, b);
        if (!r)
            return -ENOMEM;
        *r = (struct grp_row){
            .thr = (uint32_t)t | (c->poll_unfinished ? GRP_UNFINISHED : 0), .loc = p->loc,
            .task = p->task, .runtime = p->runtime, .worker = p->worker,
            .start_ns = p->start_ns, .end_ns = p->end_ns,
        };
        if (sql_group_bytes(c->grp) > SQL_GROUP_MEM_HARD)
            return -E2BIG;
    }
    if (rc < 0 || (rc = sql_group_seal(c->grp)) < 0)
        return rc;
    c->grp_serving = true;
    c->eof = false;
    return group_step(c);
}

static int group_step(struct cur *c)
{
    const struct grp_row *r = sql_group_next(c->grp);
    if (!r) {
        c->eof = true;
        return 0;
    }
    const struct grp_thr *t = &c->gthr[r->thr & ~GRP_UNFINISHED];
    c->poll = (struct q_poll){
        .process_id = t->process_id, .pid = t->pid, .tid = t->tid, .ring = t->ring,
        .generation = t->generation, .task = r->task, .loc = r->loc, .runtime = r->runtime,
        .worker = r->worker, .start_ns = r->start_ns, .end_ns = r->end_ns,
    };
    c->poll_unfinished = (r->thr & GRP_UNFINISHED) != 0;
    return 0;
}

/* ---- constraint decoding ------------------------------------------------------------ */

/* A constraint value as a number: false when it is not numeric (then it is
 * left to SQLite). */
static bool val_num(sqlite3_value *v, bool *is_int, int64_t *i, double *d)
{
    switch (sqlite3_value_numeric_type(v)) {
    case SQLITE_INTEGER:
        *is_int = true;
        *i = sqlite3_value_int64(v);
        *d = (double)*i;
        return true;
    case SQLITE_FLOAT:
        *is_int = false;
        *d = sqlite3_value_double(v);
        return !isnan(*d);
    default:
        return false;
    }
}

/* Narrow [from, to] by "col op v"; false when nothing can match. */
static bool narrow_time(char op, sqlite3_value *v, uint64_t *from, uint64_t *to)
{
    bool is_int;
    int64_t i;
    double d;
    if (!val_num(v, &is_int, &i, &d))
        return true;
    double lo = 0, hi = 0;
    bool has_lo = false, has_hi = false;
    switch (op) {
    case '=': lo = hi = d; has_lo = has_hi = true;
        if (!is_int && floor(d) != d)
            return false;
        break;
    case '>': lo = floor(d) + 1; has_lo = true; break;
    case 'g': lo = ceil(d); has_lo = true; break;
    case '<': hi = ceil(d) - 1; has_hi = true; break;
    case 'l': hi = floor(d); has_hi = true; break;
    }
    if (is_int) {           /* exact integer arithmetic where it matters */
        if (op == '=' || op == 'g')
            lo = hi = (double)i;
        if (op == '>' && i < INT64_MAX) {
            uint64_t f = i < 0 ? 0 : (uint64_t)i + 1;
            if (f > *from)
                *from = f;
            return *from <= *to;
        }
        if (op == '<') {
            if (i <= 0)
                return false;
            if ((uint64_t)i - 1 < *to)
                *to = (uint64_t)i - 1;
            return *from <= *to;
        }
        if (op == '=' || op == 'g' || op == 'l') {
            if (i < 0)
                return op == 'g';
            if ((op == '=' || op == 'g') && (uint64_t)i > *from)
                *from = (uint64_t)i;
            if ((op == '=' || op == 'l') && (uint64_t)i < *to)
                *to = (uint64_t)i;
            return *from <= *to;
        }
    }
    if (has_lo && lo > 0) {
        uint64_t f = lo >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)lo;
        if (f > *from)
            *from = f;
    }
    if (has_hi) {
        if (hi < 0)
            return false;
        uint64_t t = hi >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)hi;
        if (t < *to)
            *to = t;
    }
    return *from <= *to;
}

/* "col = v" for an id column (pid, tid): false when nothing can match. */
static bool narrow_id(sqlite3_value *v, uint32_t *id)
{
    bool is_int;
    int64_t i;
    double d;
    if (!val_num(v, &is_int, &i, &d))
        return true;
    if (!is_int) {
        if (floor(d) != d || d < 1 || d > UINT32_MAX)
            return false;
        i = (int64_t)d;
    }
    if (i < 1 || i > UINT32_MAX || (*id && *id != (uint32_t)i))
        return false;
    *id = (uint32_t)i;
    return true;
}

struct rt_pids {
    const char *name;
    uint32_t pid;
    size_t n, distinct;
};

static int on_rt_pid(void *arg, const struct idx_read_runtime *r)
{
    struct rt_pids *p = arg;
    if (strcmp(r->name, p->name) != 0)
        return 0;
    if (p->n++ == 0)
        p->pid = r->pid;
    else if (r->pid != p->pid)
        p->distinct++;
    return 0;
}

/* ---- module callbacks --------------------------------------------------------------- */

static int x_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                     sqlite3_vtab **out, char **err)
{
    struct sql_vtab *ctx = aux;
    if (argc < 4) {
        *err = sqlite3_mprintf("d9: missing table kind");
        return SQLITE_ERROR;
    }
    const struct tab_def *def = NULL;
    const struct event_def *ev = NULL;
    if (strcmp(argv[3], "custom") == 0 && argc >= 5) {
        long i = strtol(argv[4], NULL, 10);
        if (i < 0 || (size_t)i >= ctx->nev) {
            *err = sqlite3_mprintf("d9: no custom event %s", argv[4]);
            return SQLITE_ERROR;
        }
        ev = &ctx->ev[i];
        def = &custom_def;
    } else {
        for (size_t i = 0; i < NDEFS; i++)
            if (strcmp(defs[i].name, argv[3]) == 0)
                def = &defs[i];
    }
    if (!def) {
        *err = sqlite3_mprintf("d9: unknown table kind %s", argv[3]);
        return SQLITE_ERROR;
    }
    char *sql;
    if (ev) {
        sqlite3_str *s = sqlite3_str_new(db);
        sqlite3_str_appendall(s, "CREATE TABLE x(pid INTEGER, tid INTEGER, ts_ns INTEGER");
        for (unsigned i = 0; i < ev->nfields; i++) {
            static const char *const ty[] = { "", "INTEGER", "INTEGER", "REAL", "INTEGER",
                                              "TEXT" };
            sqlite3_str_appendf(s, ", \"%w\" %s", ev->colnames[i],
                                ev->ftype[i] <= D9_FT_STR ? ty[ev->ftype[i]] : "");
        }
        sqlite3_str_appendall(s, ")");
        sql = sqlite3_str_finish(s);
    } else {
        sql = sqlite3_mprintf("CREATE TABLE x(%s)", def->cols);
    }
    if (!sql)
        return SQLITE_NOMEM;
    int rc = sqlite3_declare_vtab(db, sql);
    sqlite3_free(sql);
    if (rc != SQLITE_OK)
        return rc;
    struct vt *v = sqlite3_malloc(sizeof *v);
    if (!v)
        return SQLITE_NOMEM;
    memset(v, 0, sizeof *v);
    v->ctx = ctx;
    v->def = def;
    v->ev = ev;
    *out = &v->base;
    return SQLITE_OK;
}

static int x_disconnect(sqlite3_vtab *tab)
{
    sqlite3_free(tab);
    return SQLITE_OK;
}

static int on_seg_starts(void *arg, const struct idx_read_segment *r)
{
    *(uint64_t *)arg += r->counts[D9_REC_POLL_START];
    return 0;
}

/* May the polls of this plan be held for grouped serving? Their number is
 * at most the poll_starts of the segments the constant pid and start_ns
 * constraints select (others are not known at planning: all segments). */
static bool group_fits(struct vt *v, sqlite3_index_info *ii)
{
#if SQLITE_VERSION_NUMBER >= 3038000
    uint32_t pid = 0;
    uint64_t from = 0, to = UINT64_MAX, starts = 0;
    for (int i = 0; i < ii->nConstraint; i++) {
        const struct sqlite3_index_constraint *k = &ii->aConstraint[i];
        sqlite3_value *val = NULL;
        if (!k->usable || sqlite3_vtab_rhs_value(ii, i, &val) != SQLITE_OK || !val)
            continue;
        char op = k->op == SQLITE_INDEX_CONSTRAINT_EQ ? '=' : k->op == SQLITE_INDEX_CONSTRAINT_GT ? '>'
                : k->op == SQLITE_INDEX_CONSTRAINT_GE ? 'g' : k->op == SQLITE_INDEX_CONSTRAINT_LT ? '<'
                : k->op == SQLITE_INDEX_CONSTRAINT_LE ? 'l' : 0;
        uint32_t id = 0;
        if (k->iColumn == PL_PID && op == '=') {
            if (!narrow_id(val, &id))
                return true;                /* no process: no rows */
            if (id)
                pid = id;
        } else if (k->iColumn == PL_START && op && !narrow_time(op, val, &from, &to))
            return true;                    /* an empty window */
    }
    if (from > to)
        return true;
    if (q_store_segments(v->ctx->s, pid, from, to, on_seg_starts, &starts) < 0)
        return false;
    return starts <= SQL_GROUP_MEM / sizeof(struct grp_row);
#else
    (void)v;
    (void)ii;
    return false;
#endif
}

static int x_best_index(sqlite3_vtab *tab, sqlite3_index_info *ii)
{
    const struct tab_def *d = ((struct vt *)tab)->def;
    char codes[SQL_MAX_CODES + 1];
    int n = 0;
    double cost = d->types ? SQL_COST_RECORDS : SQL_COST_LISTING;
    bool lo = false, hi = false;
    for (int i = 0; i < ii->nConstraint && n < SQL_MAX_CODES; i++) {
        const struct sqlite3_index_constraint *k = &ii->aConstraint[i];
        if (!k->usable)
            continue;
        char code = 0;
        bool eq = k->op == SQLITE_INDEX_CONSTRAINT_EQ;
        if (k->iColumn < 0)
            continue;
        if (k->iColumn == d->pid_col && eq) {
            code = 'p';
            cost /= 20;
        } else if (k->iColumn == d->tid_col && eq) {
            code = 't';
            cost /= 20;
        } else if (k->iColumn == d->ts_col) {
            switch (k->op) {
            case SQLITE_INDEX_CONSTRAINT_EQ: code = '='; cost /= 1000; break;
            case SQLITE_INDEX_CONSTRAINT_GT: code = '>'; lo = true; break;
            case SQLITE_INDEX_CONSTRAINT_GE: code = 'g'; lo = true; break;
            case SQLITE_INDEX_CONSTRAINT_LT: code = '<'; hi = true; break;
            case SQLITE_INDEX_CONSTRAINT_LE: code = 'l'; hi = true; break;
            default: break;
            }
        } else if (k->iColumn == d->rt_col && eq) {
            code = 'r';
            cost /= 2;
        } else if (d->kind == K_EVENTS && k->iColumn == 3 && eq) {
            code = 'y';
            cost /= 5;
        } else if (d->kind == K_STACKS && k->iColumn == ST_ID && eq) {
            code = 's';
            cost = 10;
        }
        if (!code)
            continue;
        codes[n++] = code;
        ii->aConstraintUsage[i].argvIndex = n;
        ii->aConstraintUsage[i].omit = 0;
    }
    if (lo)
        cost /= 4;
    if (hi)
        cost /= 4;
    codes[n] = 0;
    ii->idxStr = sqlite3_mprintf("%s", codes);
    if (!ii->idxStr)
        return SQLITE_NOMEM;
    ii->needToFreeIdxStr = 1;
    if (d->ordered && ii->nOrderBy == 1 && ii->aOrderBy[0].iColumn == d->ts_col &&
        !ii->aOrderBy[0].desc)
        ii->orderByConsumed = 1;
    if (d->kind == K_POLLS && ii->nOrderBy == 1 && !ii->aOrderBy[0].desc &&
        (ii->aOrderBy[0].iColumn == PL_LOC || ii->aOrderBy[0].iColumn == PL_LOCATION) &&
        group_fits((struct vt *)tab, ii)) {
        ii->orderByConsumed = 1;
        ii->idxNum = ii->aOrderBy[0].iColumn == PL_LOC ? GRP_BY_LOC : GRP_BY_LOCATION;
    }
    ii->estimatedCost = cost;
    ii->estimatedRows = (sqlite3_int64)cost;
    return SQLITE_OK;
}

static int x_open(sqlite3_vtab *tab, sqlite3_vtab_cursor **out)
{
    struct cur *c = calloc(1, sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    c->vt = (struct vt *)tab;
    *out = &c->base;
    return SQLITE_OK;
}

static void cur_reset(struct cur *c)
{
    scan_end(c);
    rows_free(c);
    free(c->sidx);
    c->sidx = NULL;
    c->nsidx = c->isidx = 0;
    q_pair_free(c->polls);
    c->polls = NULL;
    free(c->parks);
    c->parks = NULL;
    c->nparks = c->capparks = c->parks_open = 0;
    c->last_meta = NULL;
    sql_group_free(c->grp);
    c->grp = NULL;
    c->grp_serving = false;
    free(c->gthr);
    c->gthr = NULL;
    c->ngthr = c->capgthr = 0;
    memset(c->gloc, 0, sizeof c->gloc);
    memset(c->gthr_cache, 0, sizeof c->gthr_cache);
    c->eof = false;
    c->rt_set = false;
    c->sample_tid = 0;
}

static int x_close(sqlite3_vtab_cursor *cur)
{
    struct cur *c = (struct cur *)cur;
    cur_reset(c);
    for (size_t i = 0; i < SQL_LOC_CACHE; i++)
        free(c->locs[i].text);
    free(c->dec);
    free(c->json);
    free(c);
    return SQLITE_OK;
}

static int fill_listing(struct cur *c, uint64_t stack_want, bool stack_set)
{
    struct sql_vtab *v = c->vt->ctx;
    int rc = 0;
    switch (c->vt->def->kind) {
    case K_PROCESSES:
        c->ncols = 13 + 1;
        rc = q_store_processes(v->s, c->f.pid, 0, UINT64_MAX, on_proc, c);
        break;
    case K_THREADS:
        c->ncols = 8 + 1;
        rc = q_store_threads(v->s, c->f.pid, 0, on_thread, c);
        break;
    case K_RUNTIMES:
        c->ncols = 3 + 1;
        rc = q_store_runtimes(v->s, c->f.pid, 0, on_runtime, c);
        break;
    case K_SEGMENTS:
        c->ncols = 9 + 1;
        rc = q_store_segments(v->s, c->f.pid, 0, UINT64_MAX, on_segment, c);
        break;
    case K_LOCATIONS:
        c->ncols = 6 + 1;
        rc = locations_fill(c);
        break;
    case K_STACKS:
        if ((rc = stacks_build(v)) < 0)
            break;
        c->sidx = malloc((v->nstk ? v->nstk : 1) * sizeof *c->sidx);
        if (!c->sidx)
            return -ENOMEM;
        if (stack_set) {
            struct stk *e = stack_find(v, stack_want);
            if (e)
                c->sidx[c->nsidx++] = (size_t)(e - v->stk);
        } else {
            for (size_t i = 0; i < v->nstk; i++)
                c->sidx[c->nsidx++] = i;
        }
        /* position on the first frame of the first non-empty stack */
        c->isidx = 0;
        c->depth = 0;
        while (c->isidx < c->nsidx && v->stk[c->sidx[c->isidx]].nframes == 0)
            c->isidx++;
        c->eof = c->isidx >= c->nsidx;
        return 0;
    default:
        break;
    }
    if (rc < 0)
        return rc;
    c->irow = 0;
    c->eof = c->nrows == 0;
    return 0;
}

static int x_filter(sqlite3_vtab_cursor *cur, int idx_num, const char *idx_str, int argc,
                    sqlite3_value **argv)
{
    struct cur *c = (struct cur *)cur;
    struct vt *v = c->vt;
    const struct tab_def *d = v->def;
    cur_reset(c);
    c->f = (struct q_filter){ .from = 0, .to = UINT64_MAX, .types = d->types };
    bool ok = true, stack_set = false;
    uint64_t stack_want = 0;
    uint32_t tid = 0;
    for (int i = 0; ok && idx_str && idx_str[i] && i < argc; i++) {
        switch (idx_str[i]) {
        case 'p':
            ok = narrow_id(argv[i], &c->f.pid);
            break;
        case 't':
            ok = narrow_id(argv[i], &tid);
            break;
        case 'r': {
            const unsigned char *t = sqlite3_value_text(argv[i]);
            if (t && strlen((const char *)t) < sizeof c->rt_name) {
                snprintf(c->rt_name, sizeof c->rt_name, "%s", (const char *)t);
                c->rt_set = true;
            } else {
                ok = false;         /* NULL or longer than any runtime name */
            }
            break;
        }
        case 'y': {
            const unsigned char *t = sqlite3_value_text(argv[i]);
            int ty = t ? shm_record_type_from_name((const char *)t) : -1;
            if (ty <= 0 || ty >= 32)
                ok = false;
            else
                c->f.types &= T((unsigned)ty);
            ok = ok && c->f.types != 0;
            break;
        }
        case 's': {
            bool is_int;
            int64_t iv;
            double dv;
            if (val_num(argv[i], &is_int, &iv, &dv)) {
                if (!is_int || iv < 0)
                    ok = false;
                stack_want = (uint64_t)iv;
                stack_set = true;
            }
            break;
        }
        default:
            ok = narrow_time(idx_str[i], argv[i], &c->f.from, &c->f.to);
            break;
        }
    }
    if (!ok) {
        c->eof = true;
        return SQLITE_OK;
    }
    if (d->kind == K_CPU_SAMPLES)
        c->sample_tid = tid;        /* samples of many threads share a block */
    else
        c->f.tid = tid;
    if (c->rt_set && d->types) {
        struct rt_pids rp = { .name = c->rt_name };
        if (q_store_runtimes(v->ctx->s, c->f.pid, 0, on_rt_pid, &rp) >= 0) {
            if (rp.n == 0) {
                c->eof = true;
                return SQLITE_OK;
            }
            if (rp.distinct == 0)
                c->f.pid = rp.pid;
        }
    }
    if (d->kind == K_CUSTOM && v->ev->pid) {
        /* only the processes of one pid have this event */
        if (c->f.pid && c->f.pid != v->ev->pid) {
            c->eof = true;
            return SQLITE_OK;
        }
        c->f.pid = v->ev->pid;
    }
    int rc;
    if (!d->types) {
        if (d->kind != K_THREADS)
            c->f.tid = 0;
        rc = fill_listing(c, stack_want, stack_set);
        if (rc < 0)
            return vt_error(v, "d9: reading the store failed: %s", strerror(-rc));
        return SQLITE_OK;
    }
    if (d->kind == K_POLLS && (rc = q_pair_new(&c->polls)) < 0)
        return SQLITE_NOMEM;
    if (d->kind == K_POLLS || d->kind == K_PARKS) {
        uint64_t tmin;
        c->phase = 1;
        c->win_to = c->f.to;
        c->ext_len = c->f.to - c->f.from < UINT64_MAX ? c->f.to - c->f.from + 1 : UINT64_MAX;
        if (c->ext_len < 1000000)
            c->ext_len = 1000000;
        if (q_store_time_range(v->ctx->s, c->f.pid, &tmin, &c->tmax) < 0)
            c->tmax = 0;
    }
    bool grouped = d->kind == K_POLLS && (idx_num == GRP_BY_LOC || idx_num == GRP_BY_LOCATION);
    c->f.ring_order_only = grouped;     /* the buckets reorder the rows anyway */
    rc = scan_begin(c, c->f.from, c->f.to);
    if (rc == 0 && grouped)
        rc = group_fill(c, idx_num);
    else if (rc == 0)
        rc = step(c);
    if (rc == -E2BIG)
        return vt_error(v, "d9: %s", "polls grouped by location need more memory than the "
                        "limit: narrow the query by pid or start_ns");
    if (rc < 0)
        return vt_error(v, "d9: scan failed: %s", strerror(-rc));
    return SQLITE_OK;
}

static int x_next(sqlite3_vtab_cursor *cur)
{
    struct cur *c = (struct cur *)cur;
    int rc = step(c);
    if (rc < 0)
        return vt_error(c->vt, "d9: scan failed: %s", strerror(-rc));
    return SQLITE_OK;
}

static int x_eof(sqlite3_vtab_cursor *cur) { return ((struct cur *)cur)->eof; }

/*
 * The rowid names the row's origin, not its rank in this scan: SQLite
 * merges the scans of OR terms by rowid, so the same row must get the same
 * rowid in every scan and different rows different ones. A 63-bit hash of
 * the record's identity (segment, ring generation, seq, time, type), of the
 * interval's start, of the stack frame or of the listing row's key.
 */
static int64_t row_id(struct cur *c)
{
    uint64_t h;
    switch (c->vt->def->kind) {
    case K_POLLS:
        h = mix64(mix64((uint64_t)c->poll.process_id ^ ((uint64_t)c->poll.ring << 32 |
                                                         c->poll.generation)) ^ c->poll.task) ^
            mix64(c->poll.start_ns);
        break;
    case K_PARKS:
        h = mix64(mix64((uint64_t)c->park.process_id) ^ c->park.tid) ^ mix64(c->park.start_ns);
        break;
    case K_STACKS:
        h = mix64(c->vt->ctx->stk[c->sidx[c->isidx]].id) ^ c->depth;
        break;
    default:
        if (!c->vt->def->types) {
            h = (uint64_t)c->rows[c->irow * c->ncols + c->ncols - 1].i;
            break;
        }
        h = mix64(mix64(c->src.segment_id) ^ ((uint64_t)c->src.ring << 32 | c->src.generation)) ^
            mix64((uint64_t)c->rec->seq << 16 ^ c->rec->type) ^ mix64(c->rec->ts + 1);
        break;
    }
    return (int64_t)(h & (uint64_t)INT64_MAX);
}

static int x_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
    *rowid = row_id((struct cur *)cur);
    return SQLITE_OK;
}

static const struct q_decoded *decoded(struct cur *c)
{
    if (c->decoded)
        return c->dec;
    if (!c->dec && !(c->dec = malloc(sizeof *c->dec)))
        return NULL;
    if (q_decode(c->rec, c->len, c->src.meta, c->dec) < 0)
        return NULL;
    c->decoded = true;
    return c->dec;
}

static void result_field(sqlite3_context *cx, const struct q_field *f)
{
    switch (f->type) {
    case Q_V_U64:
    case Q_V_HEX:
        result_u64(cx, f->u);
        break;
    case Q_V_I64:
        sqlite3_result_int64(cx, f->i);
        break;
    case Q_V_F64:
        sqlite3_result_double(cx, f->f);
        break;
    case Q_V_BOOL:
        sqlite3_result_int(cx, f->u != 0);
        break;
    case Q_V_STR:
        sqlite3_result_text(cx, f->s, (int)f->slen, SQLITE_TRANSIENT);
        break;
    default:
        sqlite3_result_null(cx);
        break;
    }
}

static void col_fields_json(struct cur *c, sqlite3_context *cx)
{
    const struct q_decoded *d = decoded(c);
    if (!d) {
        sqlite3_result_null(cx);
        return;
    }
    free(c->json);
    c->json = NULL;
    FILE *f = open_memstream(&c->json, &c->jsonlen);
    if (!f) {
        sqlite3_result_error_nomem(cx);
        return;
    }
    fputc('{', f);
    q_decode_print_json_members(f, d, 0, d->nfields, false);
    if (d->error) {
        fputs(d->nfields ? ",\"error\":" : "\"error\":", f);
        q_text_json(f, d->error, strlen(d->error));
    }
    fputc('}', f);
    if (fclose(f) != 0) {
        sqlite3_result_error_nomem(cx);
        return;
    }
    sqlite3_result_text(cx, c->json, (int)c->jsonlen, SQLITE_TRANSIENT);
}

static void col_record(struct cur *c, sqlite3_context *cx, int col)
{
    const struct tab_def *d = c->vt->def;
    if (col == C_PID) {
        sqlite3_result_int64(cx, c->src.pid);
        return;
    }
    if (col == C_TID && d->kind != K_CPU_SAMPLES) {
        sqlite3_result_int64(cx, c->src.tid);
        return;
    }
    if (col == C_TS) {
        result_u64(cx, c->rec->ts);
        return;
    }
    char buf[24];
    uint16_t rt;
    if (col == 3 && d->rt_col == 3 && rec_runtime(c->rec, c->len, &rt)) {
        result_str(cx, src_runtime(&c->src, rt, buf, sizeof buf));
        return;
    }
    switch (d->kind) {
    case K_WAKES: {
        struct d9_rec_wake r;
        memcpy(&r, c->rec, sizeof r);
        if (col == 4)
            result_u64(cx, r.waker);
        else if (col == 5)
            result_u64(cx, r.wakee);
        else if (r.target_worker != D9_WORKER_NONE)
            sqlite3_result_int(cx, r.target_worker);
        return;
    }
    case K_SPAWNS:
    case K_TERMINATES: {
        struct d9_rec_task r;
        memcpy(&r, c->rec, sizeof r);
        if (col == 4) {
            result_u64(cx, r.task);
        } else if (col == 5) {
            sqlite3_result_int64(cx, r.loc);
        } else if (col == 6) {
            const struct q_meta_src *m = c->src.meta;
            const struct shm_meta_entry *e = m->location ? m->location(m->ctx, r.loc) : NULL;
            result_str(cx, loc_format(e, r.loc, c->text, sizeof c->text));
        }
        return;
    }
    case K_QUEUE_DEPTHS: {
        struct d9_rec_queue_depth r;
        memcpy(&r, c->rec, sizeof r);
        if (col == 4) {
            if (r.worker != D9_WORKER_NONE)
                sqlite3_result_int(cx, r.worker);
        } else {
            result_u64(cx, r.depth);
        }
        return;
    }
    case K_CPU_SAMPLES: {
        struct d9_rec_stack s;
        memcpy(&s, c->rec, sizeof s);
        uint16_t n;
        if (col == C_TID)
            sqlite3_result_int64(cx, s.tid);
        else if (col == 3)
            result_str(cx, c->rec->type == D9_REC_CPU_SAMPLE ? "cpu" : "off_cpu");
        else if (col == 4)
            result_u64(cx, stack_id_of(c->src.process_id, c->rec, c->len, &n));
        else if (col == 5)
            result_u64(cx, s.weight);
        else if (col == 6)
            sqlite3_result_int(cx, (int)(stack_id_of(c->src.process_id, c->rec, c->len, &n), n));
        return;
    }
    case K_EVENTS:
        if (col == 3) {
            result_str(cx, shm_record_type_name(c->rec->type));
        } else if (col == 4) {
            const struct q_decoded *dd = c->rec->type == D9_REC_CUSTOM ? decoded(c) : NULL;
            if (dd && dd->event)
                result_str(cx, dd->event);
        } else if (col == 5) {
            result_str(cx, c->src.thread ? c->src.thread : "");
        } else {
            col_fields_json(c, cx);
        }
        return;
    case K_CUSTOM: {
        const struct q_decoded *dd = decoded(c);
        unsigned fi = (unsigned)col - 3;
        if (!dd || fi >= c->vt->ev->nfields)
            return;
        const char *want = c->vt->ev->fields[fi];
        for (unsigned i = dd->first_custom; i < dd->nfields; i++)
            if (strcmp(dd->f[i].name, want) == 0) {
                result_field(cx, &dd->f[i]);
                return;
            }
        return;
    }
    default:
        return;
    }
}

static void col_poll(struct cur *c, sqlite3_context *cx, int col)
{
    const struct q_poll *p = &c->poll;
    struct q_names *nm = c->vt->ctx->names;
    switch (col) {
    case PL_PID: sqlite3_result_int64(cx, p->pid); break;
    case PL_TID: sqlite3_result_int64(cx, p->tid); break;
    case PL_RUNTIME:
        result_str(cx, q_names_runtime(nm, p->process_id, p->runtime, c->text, sizeof c->text));
        break;
    case PL_WORKER: sqlite3_result_int(cx, p->worker); break;
    case PL_TASK: result_u64(cx, p->task); break;
    case PL_LOC: sqlite3_result_int64(cx, p->loc); break;
    case PL_LOCATION: {
        struct loc_cache *e = &c->locs[p->loc % SQL_LOC_CACHE];
        if (!e->text || e->process_id != p->process_id || e->loc != p->loc) {
            free(e->text);
            e->process_id = p->process_id;
            e->loc = p->loc;
            e->text = strdup(q_names_location(nm, p->process_id, p->loc, c->text,
                                                sizeof c->text));
            if (!e->text) {
                sqlite3_result_error_nomem(cx);
                break;
            }
        }
        /* copied: the cache slot may be refilled while SQLite still holds
         * this value (a GROUP BY compares each row's key with the last) */
        sqlite3_result_text(cx, e->text, -1, SQLITE_TRANSIENT);
        break;
    }
    case PL_START: result_u64(cx, p->start_ns); break;
    case PL_END:
        if (!c->poll_unfinished)
            result_u64(cx, p->end_ns);
        break;
    case PL_DUR:
        if (!c->poll_unfinished)
            result_u64(cx, p->end_ns - p->start_ns);
        break;
    }
}

static void col_park(struct cur *c, sqlite3_context *cx, int col)
{
    const struct park_row *p = &c->park;
    switch (col) {
    case PK_PID: sqlite3_result_int64(cx, p->pid); break;
    case PK_TID: sqlite3_result_int64(cx, p->tid); break;
    case PK_RUNTIME:
        result_str(cx, q_names_runtime(c->vt->ctx->names, p->process_id, p->runtime, c->text,
                                         sizeof c->text));
        break;
    case PK_WORKER: sqlite3_result_int(cx, p->worker); break;
    case PK_START: result_u64(cx, p->start_ns); break;
    case PK_END:
        if (p->finished)
            result_u64(cx, p->end_ns);
        break;
    case PK_DUR:
        if (p->finished)
            result_u64(cx, p->end_ns - p->start_ns);
        break;
    case PK_CPU:
        if (p->cpu_sampled)
            result_u64(cx, p->cpu_ns);
        break;
    case PK_WAIT:
        if (p->finished && p->wait_sampled)
            result_u64(cx, p->wait_ns);
        break;
    }
}

static int x_column(sqlite3_vtab_cursor *cur, sqlite3_context *cx, int col)
{
    struct cur *c = (struct cur *)cur;
    switch (c->vt->def->kind) {
    case K_POLLS:
        col_poll(c, cx, col);
        break;
    case K_PARKS:
        col_park(c, cx, col);
        break;
    case K_STACKS: {
        struct sql_vtab *v = c->vt->ctx;
        struct stk *e = &v->stk[c->sidx[c->isidx]];
        if (col == ST_ID)
            result_u64(cx, e->id);
        else if (col == ST_DEPTH)
            sqlite3_result_int(cx, c->depth);
        else if (col == ST_FRAME)
            result_str(cx, stack_frame(v, e, c->depth));
        else if (col == ST_ADDRESS)
            result_u64(cx, e->ips[c->depth]);
        else
            sqlite3_result_int64(cx, e->pid);
        break;
    }
    default:
        if (!c->vt->def->types) {
            const struct mval *m = &c->rows[c->irow * c->ncols + (size_t)col];
            if (m->t == SQLITE_INTEGER)
                sqlite3_result_int64(cx, m->i);
            else if (m->t == SQLITE_FLOAT)
                sqlite3_result_double(cx, m->d);
            else if (m->t == SQLITE_TEXT)
                result_str(cx, m->s);
            break;
        }
        col_record(c, cx, col);
        break;
    }
    return SQLITE_OK;
}

static const sqlite3_module module = {
    .iVersion = 1,
    .xCreate = x_connect,
    .xConnect = x_connect,
    .xBestIndex = x_best_index,
    .xDisconnect = x_disconnect,
    .xDestroy = x_disconnect,
    .xOpen = x_open,
    .xClose = x_close,
    .xFilter = x_filter,
    .xNext = x_next,
    .xEof = x_eof,
    .xColumn = x_column,
    .xRowid = x_rowid,
};

/* ---- custom-event tables --------------------------------------------------------------- */

static bool builtin_name(const char *n)
{
    for (size_t i = 0; i < NDEFS; i++)
        if (strcmp(defs[i].name, n) == 0)
            return true;
    return false;
}

static int event_add_schema(struct sql_vtab *v, const struct shm_meta_entry *e, uint32_t pid)
{
    struct event_def *ev = NULL;
    for (size_t i = 0; i < v->nev; i++)
        if (strcmp(v->ev[i].event, e->name) == 0)
            ev = &v->ev[i];
    if (!ev) {
        struct event_def *n = realloc(v->ev, (v->nev + 1) * sizeof *n);
        if (!n)
            return -ENOMEM;
        v->ev = n;
        ev = &v->ev[v->nev++];
        memset(ev, 0, sizeof *ev);
        ev->event = strdup(e->name);
        ev->table = builtin_name(e->name) ? NULL : strdup(e->name);
        if (!ev->table && ev->event) {
            size_t l = strlen(e->name) + 7;
            if ((ev->table = malloc(l)))
                snprintf(ev->table, l, "event_%s", e->name);
        }
        if (!ev->event || !ev->table)
            return -ENOMEM;
        ev->pid = pid;
    } else if (ev->pid != pid) {
        ev->pid = 0;
    }
    for (unsigned i = 0; i < e->nfields && i < D9_SCHEMA_MAX_FIELDS; i++) {
        const char *fn = e->fields[i].name ? e->fields[i].name : "";
        unsigned j;
        for (j = 0; j < ev->nfields; j++)
            if (strcmp(ev->fields[j], fn) == 0)
                break;
        if (j < ev->nfields) {
            if (ev->ftype[j] != e->fields[i].type)
                ev->ftype[j] = 0;
            continue;
        }
        if (ev->nfields == sizeof ev->fields / sizeof ev->fields[0])
            continue;               /* more distinct fields than a table takes: dropped */
        bool clash = strcmp(fn, "pid") == 0 || strcmp(fn, "tid") == 0 ||
                     strcmp(fn, "ts_ns") == 0;
        size_t l = strlen(fn) + 3;
        ev->fields[j] = strdup(fn);
        ev->colnames[j] = malloc(l);
        if (!ev->fields[j] || !ev->colnames[j]) {
            free(ev->fields[j]);
            free(ev->colnames[j]);
            return -ENOMEM;
        }
        snprintf(ev->colnames[j], l, "%s%s", clash ? "f_" : "", fn);
        ev->ftype[j] = e->fields[i].type;
        ev->nfields++;
    }
    return 0;
}

static int events_discover(struct sql_vtab *v)
{
    struct proc_list l = { 0 };
    int rc = q_store_processes(v->s, 0, 0, UINT64_MAX, on_proc_id, &l);
    for (size_t i = 0; rc >= 0 && i < l.n; i++)
        for (uint32_t id = 1; rc >= 0 && id <= SEG_META_IDS_MAX; id++) {
            const struct shm_meta_entry *e = q_names_meta(v->names, l.id[i], D9_META_SCHEMA, id);
            if (e && e->name && *e->name)
                rc = event_add_schema(v, e, l.pid[i]);
        }
    free(l.id);
    free(l.pid);
    return rc < 0 ? rc : 0;
}

/* ---- public ---------------------------------------------------------------------------- */

int sql_vtab_attach(struct sqlite3 *db, struct q_store *s, const char *prog,
                    struct sql_vtab **out, char *why, size_t whycap)
{
    *out = NULL;
    struct sql_vtab *v = calloc(1, sizeof *v);
    if (!v || q_names_open(s, &v->names) < 0) {
        free(v);
        snprintf(why, whycap, "out of memory");
        return -ENOMEM;
    }
    v->s = s;
    v->prog = prog ? prog : "d9";
    int rc = events_discover(v);
    if (rc < 0) {
        snprintf(why, whycap, "reading the store's event schemas: %s", strerror(-rc));
        sql_vtab_free(v);
        return rc;
    }
    if (sqlite3_create_module_v2(db, "d9", &module, v, NULL) != SQLITE_OK) {
        snprintf(why, whycap, "registering the SQL module: %s", sqlite3_errmsg(db));
        sql_vtab_free(v);
        return -EIO;
    }
    for (size_t i = 0; i < NDEFS + v->nev; i++) {
        char *sql = i < NDEFS
            ? sqlite3_mprintf("CREATE VIRTUAL TABLE \"%w\" USING d9(%s)", defs[i].name,
                              defs[i].name)
            : sqlite3_mprintf("CREATE VIRTUAL TABLE \"%w\" USING d9(custom, %d)",
                              v->ev[i - NDEFS].table, (int)(i - NDEFS));
        char *err = NULL;
        int r = sql ? sqlite3_exec(db, sql, NULL, NULL, &err) : SQLITE_NOMEM;
        sqlite3_free(sql);
        if (r != SQLITE_OK) {
            snprintf(why, whycap, "creating table %s: %s",
                     i < NDEFS ? defs[i].name : v->ev[i - NDEFS].table,
                     err ? err : sqlite3_errstr(r));
            sqlite3_free(err);
            *out = v;               /* the module holds v: free it after closing db */
            return -EIO;
        }
    }
    *out = v;
    return 0;
}

void sql_vtab_free(struct sql_vtab *v)
{
    if (!v)
        return;
    q_names_close(v->names);
    for (size_t i = 0; i < v->nev; i++) {
        free(v->ev[i].table);
        free(v->ev[i].event);
        for (unsigned j = 0; j < v->ev[i].nfields; j++) {
            free(v->ev[i].fields[j]);
            free(v->ev[i].colnames[j]);
        }
    }
    free(v->ev);
    for (size_t i = 0; i < v->nstk; i++) {
        for (uint16_t j = 0; j < v->stk[i].nframes; j++)
            free(v->stk[i].names[j]);
        free(v->stk[i].names);
        free(v->stk[i].ips);
    }
    free(v->stk);
    free(v->slot);
    for (size_t i = 0; i < v->nres; i++)
        sym_resolver_free(v->res[i].r);
    free(v->res);
    free(v);
}

const struct q_scan_stats *sql_vtab_stats(const struct sql_vtab *v) { return &v->st; }
void sql_vtab_stats_reset(struct sql_vtab *v) { memset(&v->st, 0, sizeof v->st); }

void sql_vtab_describe(FILE *f, const char *table)
{
    for (size_t i = 0; i < NDEFS; i++)
        if (strcmp(defs[i].name, table) == 0) {
            fprintf(f, "%s", defs[i].doc);
            return;
        }
    fprintf(f, "custom event (one row per event; fields as columns)");
}
