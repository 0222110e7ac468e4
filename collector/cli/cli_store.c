/*
 * cli_store.c — read-only store access for the d9 CLI (see cli_store.h).
 *
 * Called by the cli_<name>.c subcommands. Opens the index read-only through
 * the index module (idx_open_ex: WAL readers never block the collector and
 * see a consistent snapshot per statement; an immutable open when the
 * directory is not writable) and asks it everything through idx_ functions
 * (idx_read.h): no SQL here.
 *
 * Invariants of cli_store_scan: a cursor owns a private copy of one block's
 * payload and a reference on the open segment reader it came from; the
 * heap holds cursors that have a current record; a block is opened before
 * any record with a larger timestamp is delivered (the index gives blocks by
 * t_first), which yields global time order; ties are broken by the order
 * blocks were opened, which keeps per-ring order (given per-ring timestamps
 * that do not go backwards). Memory is bounded by the
 * blocks that overlap in time, never by file size.
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
#include "collector/store/idx_read.h"
#include "collector/cli/cli_codeloc.h"
#include "collector/cli/cli_store.h"
#include "collector/store/seg_reader.h"
#include "shm/record.h"

struct cli_store {
    struct idx *x;
    char dir[CLI_PATH_MAX];
    bool have_wall;
    int64_t boot_realtime_ns;
    bool live;
    char hint[160];
};

static uint64_t now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void detect_boot(struct cli_store *s)
{
    char v[64];
    uint64_t newest = 0, tmin;
    bool have_newest = cli_store_time_range(s, 0, &tmin, &newest) == 0;
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
    struct cli_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, whycap, "out of memory");
        return -ENOMEM;
    }
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    char reason[CLI_PATH_MAX + 300];
    int rc = idx_open_ex(&s->x, dir, IDX_OPEN_READONLY, reason, sizeof reason);
    if (rc < 0) {
        snprintf(why, whycap, "%s", reason);
        free(s);
        return rc;
    }
    idx_busy_timeout(s->x, CLI_DB_BUSY_MS);
    detect_boot(s);
    *out = s;
    return 0;
}

void cli_store_close(struct cli_store *s)
{
    if (!s)
        return;
    idx_close(s->x);
    free(s);
}

const char *cli_store_dir(const struct cli_store *s) { return s->dir; }

bool cli_store_wall(const struct cli_store *s, int64_t *boot_realtime_ns)
{
    *boot_realtime_ns = s->boot_realtime_ns;
    return s->have_wall;
}

bool cli_store_live(const struct cli_store *s) { return s->live; }

const char *cli_store_unsealed_hint(struct cli_store *s, uint32_t pid)
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

int cli_store_time_range(struct cli_store *s, uint32_t pid, uint64_t *tmin, uint64_t *tmax)
{
    int rc = idx_read_time_range(s->x, pid, tmin, tmax);
    return rc == -EINVAL ? -EIO : rc;
}

void cli_store_window_compute(const struct cli_window_spec *w, bool live, uint64_t now,
                              bool have_newest, uint64_t newest, uint64_t *from, uint64_t *to)
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

int cli_store_window_resolve(struct cli_store *s, const struct cli_window_spec *w, uint32_t pid,
                       uint64_t *from, uint64_t *to)
{
    uint64_t tmin = 0, tmax = 0;
    bool have = false;
    if (w->kind == CLI_WIN_SINCE && !s->live)
        have = cli_store_time_range(s, pid, &tmin, &tmax) == 0;
    cli_store_window_compute(w, s->live, now_ns(CLOCK_MONOTONIC), have, tmax, from, to);
    return 0;
}

/* ---- listings --------------------------------------------------------------- */

/* The index's rows, handed on as the CLI's (same fields). */
struct listing {
    cli_proc_fn proc_fn;
    cli_seg_fn seg_fn;
    cli_thread_fn thread_fn;
    cli_runtime_fn runtime_fn;
    void *arg;
};

int cli_store_drops(struct cli_store *s, int64_t process_id, uint32_t pid, uint64_t from,
                    uint64_t to, struct cli_drops *out)
{
    struct idx_read_drops d;
    int e = idx_read_drops(s->x, process_id, pid, from, to, &d);
    if (e < 0)
        return e;
    *out = (struct cli_drops){ d.lost, d.full, d.mismatch, d.too_big, d.no_ring };
    return 0;
}

const char *cli_store_drops_text(const struct cli_drops *d, char *buf, size_t cap)
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

static int proc_row(void *arg, const struct idx_read_process *r)
{
    const struct listing *l = arg;
    struct cli_proc_row c = {
        .id = r->id, .pid = r->pid, .uid = r->uid, .start_time = r->start_time,
        .comm = r->comm, .exe = r->exe, .state = r->state,
        .first_ns = r->first_ns, .last_ns = r->last_ns,
        .rec_first_ns = r->rec_first_ns, .rec_last_ns = r->rec_last_ns,
        .has_exit_code = r->has_exit_code != 0, .exit_code = r->exit_code,
        .records = r->records, .lost = r->lost, .segments = r->segments, .bytes = r->bytes,
    };
    return l->proc_fn(l->arg, &c);
}

int cli_store_processes(struct cli_store *s, uint32_t pid, uint64_t from, uint64_t to,
                        cli_proc_fn fn, void *arg)
{
    struct listing l = { .proc_fn = fn, .arg = arg };
    return idx_read_processes_window(s->x, pid, from, to, proc_row, &l);
}

struct bstat_listing {
    int (*fn)(void *arg, const struct cli_block_stat *b);
    void *arg;
};

static int bstat_row(void *arg, const struct idx_read_block_stat *r)
{
    const struct bstat_listing *l = arg;
    struct cli_block_stat b = { .tid = r->tid, .ring = r->ring, .nrec = r->nrec,
                                .t_first = r->t_first, .t_last = r->t_last };
    return l->fn(l->arg, &b);
}

int cli_store_block_stats(struct cli_store *s, int64_t process_id, uint64_t from, uint64_t to,
                          int (*fn)(void *arg, const struct cli_block_stat *b), void *arg)
{
    struct bstat_listing l = { .fn = fn, .arg = arg };
    return idx_read_block_stats(s->x, process_id, from, to, bstat_row, &l);
}

static int seg_row(void *arg, const struct idx_read_segment *r)
{
    const struct listing *l = arg;
    struct cli_seg_row c = {
        .id = r->id, .path = r->path, .process_id = r->process_id, .pid = r->pid,
        .comm = r->comm, .t_min = r->t_min, .t_max = r->t_max, .bytes = r->bytes,
        .records = r->records, .lost = r->lost,
    };
    memcpy(c.counts, r->counts, sizeof c.counts);
    return l->seg_fn(l->arg, &c);
}

int cli_store_segments(struct cli_store *s, uint32_t pid, uint64_t from, uint64_t to,
                       cli_seg_fn fn, void *arg)
{
    struct listing l = { .seg_fn = fn, .arg = arg };
    return idx_read_segments_window(s->x, pid, from, to, seg_row, &l);
}

static int thread_row(void *arg, const struct idx_read_thread *r)
{
    const struct listing *l = arg;
    struct cli_thread_row c = {
        .process_id = r->process_id, .pid = r->pid, .tid = r->tid, .ring = r->ring,
        .generation = r->generation, .name = r->name, .first_ns = r->first_ns,
        .last_ns = r->last_ns, .ended = r->ended != 0,
    };
    return l->thread_fn(l->arg, &c);
}

int cli_store_threads(struct cli_store *s, uint32_t pid, int64_t process_id, cli_thread_fn fn,
                      void *arg)
{
    struct listing l = { .thread_fn = fn, .arg = arg };
    return idx_read_threads(s->x, pid, process_id, thread_row, &l);
}

static int runtime_row(void *arg, const struct idx_read_runtime *r)
{
    const struct listing *l = arg;
    struct cli_runtime_row c = {
        .process_id = r->process_id, .pid = r->pid, .runtime_id = r->runtime_id,
        .name = r->name,
    };
    return l->runtime_fn(l->arg, &c);
}

int cli_store_runtimes(struct cli_store *s, uint32_t pid, int64_t process_id, cli_runtime_fn fn,
                       void *arg)
{
    struct listing l = { .runtime_fn = fn, .arg = arg };
    return idx_read_runtimes(s->x, pid, process_id, runtime_row, &l);
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
    struct cli_store *store;        /* for the process's map records (code locations) */
    struct cli_codeloc_cache code;  /* code locations named so far */
};

struct cursor {                     /* one block being merged */
    struct rd_entry *rd;
    uint8_t *payload;
    size_t len, off;
    uint64_t seq;                   /* open order, breaks timestamp ties */
    uint64_t key;                   /* merge key: the largest ts so far of this ring's
                                     * blocks in flight (ring order wins over a stamp
                                     * that went backwards) */
    uint64_t t_last;                /* the block's largest ts (its header) */
    const struct d9_rec_hdr *cur;
    size_t cur_len;
    uint32_t tid, ring, generation;
    char thread[20];
    struct cli_rec_src src;         /* what scan_next hands out with each record */
};

struct heap_ent {                   /* the merge keys beside the cursor: no pointer
                                     * chase per comparison */
    uint64_t key, seq;
    struct cursor *c;
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
    struct heap_ent *heap;
    size_t nheap, capheap;
    uint64_t next_seq;
    struct idx_read_cursor *q;      /* the window's DATA blocks by t_first */
    struct idx_read_block row;      /* q's current row, not opened yet when have_row */
    bool have_row;
    int q_rc;
    struct cursor *pending;         /* heap[0], delivered by the last next: advance it first */
};

static struct cli_codeloc *codeloc_of_process(struct cli_store *s, int64_t process_id);

/* ctx: the struct rd_entry of the segment */
static const char *meta_rt(const void *ctx, uint32_t id)
{
    return seg_reader_runtime(((const struct rd_entry *)ctx)->r, id);
}
static const struct shm_meta_entry *meta_loc(const void *ctx, uint32_t id)
{
    struct rd_entry *e = (struct rd_entry *)ctx;
    const struct shm_meta_entry *m = seg_reader_location(e->r, id);
    if (!e->code.tried && cli_codeloc_is(m)) {
        e->code.tried = 1;
        e->code.c = codeloc_of_process(e->store, e->process_id);
    }
    return cli_codeloc_cached(&e->code, m);
}
static const struct shm_meta_entry *meta_schema(const void *ctx, uint32_t id)
{
    return seg_reader_schema(((const struct rd_entry *)ctx)->r, id);
}

static void rd_free(struct rd_entry *e)
{
    if (e->r)
        seg_reader_close(e->r);
    cli_codeloc_cache_release(&e->code);
    free(e);
}

/* Read the META blocks of a segment: straight to them with the offsets of
 * the index (a few preads), or, when the index has none, by walking the
 * file's block headers (seg_reader_load_meta). */
static int meta_block(void *arg, uint64_t offset)
{
    struct seg_reader *r = arg;
    struct seg_block b;
    int rc = seg_reader_seek(r, offset);
    if (rc == 0 && (rc = seg_reader_next(r, &b)) == 1)
        rc = b.h.kind == SEG_BLK_META ? 0 : -EBADMSG;
    else if (rc == 0)
        rc = -EBADMSG;
    return rc;
}

static int load_meta(struct scan *sc, struct seg_reader *r, uint64_t seg_id)
{
    int n = idx_read_block_offsets(sc->s->x, seg_id, SEG_BLK_META, meta_block, r);
    if (n <= 0)
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
    e->store = sc->s;
    e->meta = (struct cli_meta_src){ meta_rt, meta_loc, meta_schema, e };
    return e;
}

/* By key, then open order: a ring's records come out in ring order even
 * where its stamps go backwards (segments written before the drain kept
 * each ring's time monotonic), because a ring's blocks are opened in order
 * and a block's key starts at the largest ts of the ring's block before it.
 * Pseudo rings (ring >= D9_RINGS_MAX) hold many threads' samples: by ts. */
static inline bool cur_less(const struct heap_ent *a, const struct heap_ent *b)
{
    /* bit operations, not a branch on the key first: which stream wins
     * changes with nearly every record, so branches here mispredict */
    return (a->key < b->key) | ((a->key == b->key) & (a->seq < b->seq));
}

static void heap_push(struct scan *sc, struct cursor *c)
{
    size_t i = sc->nheap++;
    sc->heap[i] = (struct heap_ent){ c->key, c->seq, c };
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cur_less(&sc->heap[i], &sc->heap[p]))
            break;
        struct heap_ent t = sc->heap[p];
        sc->heap[p] = sc->heap[i];
        sc->heap[i] = t;
        i = p;
    }
}

/* Restore the heap order after heap[0]'s current record moved forward
 * (its key is refreshed from the cursor first). */
static void heap_sift_top(struct scan *sc)
{
    struct heap_ent *h = sc->heap, top = h[0];
    size_t i = 0, n = sc->nheap;
    top.key = top.c->key;
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= n)
            break;
        size_t m = l + (size_t)(l + 1 < n && cur_less(&h[l + 1], &h[l]));
        if (!cur_less(&h[m], &top))
            break;
        h[i] = h[m];                /* move the smaller child up into the hole */
        i = m;
    }
    h[i] = top;
}

static struct cursor *heap_pop(struct scan *sc)
{
    struct cursor *top = sc->heap[0].c;
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
        /* seg_reader_next checked every record of the block (shm_record_check);
         * only the bounds are checked again here, to be safe */
        uint16_t n;
        memcpy(&n, p, sizeof n);
        if (avail < D9_REC_HDR_SIZE || n < D9_REC_HDR_SIZE || n > avail) {
            sc->st->bad_blocks++;
            return false;
        }
        c->off += n;
        const struct d9_rec_hdr *h = (const struct d9_rec_hdr *)p;
        if (h->ts < sc->f->from || h->ts > sc->f->to)
            continue;
        if (sc->f->types && (h->type >= 32 || !(sc->f->types & (1u << h->type))))
            continue;
        c->cur = h;
        /* a ring's records keep ring order; the collector's pseudo rings
         * (perf samples, maps: ring >= D9_RINGS_MAX) merge by their stamps */
        if (h->ts > c->key || c->ring >= D9_RINGS_MAX)
            c->key = h->ts;
        c->cur_len = (size_t)n;
        return true;
    }
}

static void thread_name(struct scan *sc, struct cursor *c)
{
    idx_read_thread_name(sc->s->x, c->rd->process_id, c->ring, c->generation, c->thread,
                    sizeof c->thread);
}

/* Open block q (a row of the index); pushes a cursor when it has a
 * matching record. Returns 0 or -ENOMEM. */
static int open_block(struct scan *sc, const struct idx_read_block *q)
{
    uint64_t seg_id = q->segment_id, offset = q->offset;
    struct rd_entry *rd = rd_get(sc, seg_id, q->path, q->process_id, q->pid, q->comm);
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
                "skipped\n", sc->prog, sc->s->dir, q->path, offset,
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
    c->t_last = b.h.t_last;
    for (size_t i = 0; c->ring < D9_RINGS_MAX && i < sc->nheap; i++) {  /* the ring's earlier block */
        const struct cursor *o = sc->heap[i].c;
        if (o->rd->process_id == rd->process_id && o->ring == c->ring &&
            o->generation == c->generation && o->t_last > c->key)
            c->key = o->t_last;
    }
    if (!cursor_advance(sc, c)) {
        cursor_free(c);
        return 0;
    }
    thread_name(sc, c);
    c->src = (struct cli_rec_src){
        .process_id = rd->process_id,
        .pid = rd->pid,
        .uid = seg_reader_header(rd->r)->uid,
        .comm = rd->comm,
        .tid = c->tid,
        .ring = c->ring,
        .generation = c->generation,
        .thread = c->thread,
        .segment_id = rd->segment_id,
        .meta = &rd->meta,
    };
    if (sc->nheap == sc->capheap) {
        size_t nc = sc->capheap ? sc->capheap * 2 : 16;
        struct heap_ent *n = realloc(sc->heap, nc * sizeof *n);
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

int cli_store_scan_open(struct cli_store *s, const struct cli_filter *f,
                        struct cli_scan_stats *st, const char *prog, struct cli_scan_it **out)
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
    struct idx_read_window w = { .from = f->from, .to = f->to, .pid = f->pid, .tid = f->tid };
    int rc = idx_read_blocks_window_open(s->x, &w, &sc->q);
    if (rc < 0) {
        free(sc);
        return rc == -ENOMEM ? rc : -EIO;
    }
    sc->have_row = (sc->q_rc = idx_read_blocks_window_next(sc->q, &sc->row)) == 1;
    *out = (struct cli_scan_it *)sc;
    return 0;
}

int cli_store_scan_next(struct cli_scan_it *it, struct cli_rec_src *src,
                        const struct d9_rec_hdr **rec, size_t *len)
{
    struct scan *sc = (struct scan *)it;
    if (sc->pending) {
        /* the record delivered last is heap[0]'s: advance that cursor in
         * place (one sift instead of a pop and a push) */
        sc->pending = NULL;
        if (cursor_advance(sc, sc->heap[0].c))
            heap_sift_top(sc);
        else
            cursor_free(heap_pop(sc));
    }
    /* open every block that may hold a record not later than the heap's
     * head; in ring order only, one block at a time (the heap holds at most
     * one cursor, so it never merges) */
    while (sc->have_row && (sc->nheap == 0 || (!sc->f->ring_order_only &&
                                               sc->row.t_first <= sc->heap[0].c->cur->ts))) {
        int ret = open_block(sc, &sc->row);
        if (ret < 0)
            return ret;
        sc->have_row = (sc->q_rc = idx_read_blocks_window_next(sc->q, &sc->row)) == 1;
    }
    if (!sc->have_row && sc->q_rc != 0)
        return -EIO;
    if (sc->nheap == 0)
        return 0;
    struct cursor *c = sc->heap[0].c;
    *src = c->src;
    sc->st->records++;
    if (c->cur->ts > sc->st->t_last)
        sc->st->t_last = c->cur->ts;
    *rec = c->cur;
    *len = c->cur_len;
    sc->pending = c;                /* stays at heap[0] until the next call */
    return 1;
}

void cli_store_scan_close(struct cli_scan_it *it)
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
    idx_read_blocks_window_close(sc->q);
    free(sc);
}

int cli_store_scan(struct cli_store *s, const struct cli_filter *f, cli_rec_fn fn, void *arg,
                   struct cli_scan_stats *st, const char *prog)
{
    struct cli_scan_it *it;
    int ret = cli_store_scan_open(s, f, st, prog, &it);
    if (ret < 0)
        return ret;
    struct cli_rec_src src;
    const struct d9_rec_hdr *rec;
    size_t len;
    while ((ret = cli_store_scan_next(it, &src, &rec, &len)) == 1) {
        ret = fn(arg, &src, rec, len);
        if (ret != 0)
            break;
    }
    cli_store_scan_close(it);
    return ret;
}

/* ---- names ------------------------------------------------------------------- */

struct names_proc {
    int64_t process_id;
    struct seg_reader *r;           /* NULL when no segment could be opened */
    struct cli_codeloc *code;       /* its map records, loaded at the first code location */
    int code_tried;
};

struct cli_names {
    struct cli_store *s;
    struct names_proc *p;
    size_t n, cap;
};

int cli_store_names_open(struct cli_store *s, struct cli_names **out)
{
    struct cli_names *n = calloc(1, sizeof *n);
    if (!n)
        return -ENOMEM;
    n->s = s;
    *out = n;
    return 0;
}

void cli_store_names_close(struct cli_names *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++) {
        if (n->p[i].r)
            seg_reader_close(n->p[i].r);
        cli_codeloc_free(n->p[i].code);
    }
    free(n->p);
    free(n);
}

/* The map records of a process, for naming code locations: from its newest
 * segment that has any (every segment opened while the process lived has a
 * snapshot; one opened after it exited has none). NULL when none has. */
struct codeloc_open {
    struct cli_store *s;
    struct cli_codeloc *c;
};

static int codeloc_try(void *arg, const char *rel)
{
    struct codeloc_open *co = arg;
    char path[2 * CLI_PATH_MAX];
    if (rel[0] == '/' || strstr(rel, ".."))
        return 0;                   /* the index is untrusted too: stay inside the store */
    snprintf(path, sizeof path, "%s/%s", co->s->dir, rel);
    co->c = cli_codeloc_open(path);
    return co->c != NULL;
}

static struct cli_codeloc *codeloc_of_process(struct cli_store *s, int64_t process_id)
{
    struct codeloc_open co = { s, NULL };
    idx_read_process_segments(s->x, process_id, codeloc_try, &co);
    return co.c;
}

struct names_open {
    struct cli_names *n;
    struct names_proc *e;
};

/* Open one segment of the process for its metadata; 1 (stop) once one
 * opened. */
static int names_try(void *arg, const char *rel)
{
    struct names_open *no = arg;
    char path[2 * CLI_PATH_MAX];
    if (rel[0] == '/' || strstr(rel, ".."))
        return 0;
    snprintf(path, sizeof path, "%s/%s", no->n->s->dir, rel);
    struct seg_reader *r;
    if (seg_reader_open(&r, path, 0) < 0)
        return 0;
    if (seg_reader_load_meta(r) < 0) {
        seg_reader_close(r);
        return 0;
    }
    no->e->r = r;
    return 1;
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
    e->code = NULL;
    e->code_tried = 0;
    struct names_open no = { n, e };
    idx_read_process_segments(n->s->x, process_id, names_try, &no);
    return e->r;
}

const char *cli_store_names_location(struct cli_names *n, int64_t process_id, uint32_t loc,
                                     char *buf, size_t cap)
{
    struct seg_reader *r = loc ? names_reader(n, process_id) : NULL;
    const struct shm_meta_entry *e = r ? seg_reader_location(r, loc) : NULL;
    if (cli_codeloc_is(e)) {
        struct names_proc *p = NULL;
        for (size_t i = 0; i < n->n && !p; i++)
            if (n->p[i].process_id == process_id)
                p = &n->p[i];
        if (p && !p->code_tried) {
            p->code_tried = 1;
            p->code = codeloc_of_process(n->s, process_id);
        }
        return cli_codeloc_name(p ? p->code : NULL, e, buf, cap);
    }
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

int cli_store_names_objects(struct cli_names *n, int64_t process_id,
                            int (*fn)(void *arg, const struct shm_meta_entry *e), void *arg)
{
    return seg_reader_each_object(names_reader(n, process_id), fn, arg);
}

const struct shm_meta_entry *cli_store_names_meta(struct cli_names *n, int64_t process_id,
                                                  uint16_t kind, uint32_t id)
{
    struct seg_reader *r = id ? names_reader(n, process_id) : NULL;
    if (!r)
        return NULL;
    if (kind == D9_META_LOCATION)
        return seg_reader_location(r, id);
    if (kind == D9_META_SCHEMA)
        return seg_reader_schema(r, id);
    return NULL;
}

const char *cli_store_names_runtime(struct cli_names *n, int64_t process_id, uint16_t rt, char *buf,
                              size_t cap)
{
    struct seg_reader *r = names_reader(n, process_id);
    const char *name = r ? seg_reader_runtime(r, rt) : NULL;
    if (name)
        snprintf(buf, cap, "%s", name);
    else
        snprintf(buf, cap, "#%u", (unsigned)rt);
    return buf;
}

const char *cli_store_names_thread(struct cli_names *n, int64_t process_id, uint32_t ring,
                             uint32_t generation, char *buf, size_t cap)
{
    idx_read_thread_name(n->s->x, process_id, ring, generation, buf, cap);
    return buf;
}

const char *cli_store_names_comm(struct cli_names *n, int64_t process_id, char *buf, size_t cap)
{
    idx_read_process_comm(n->s->x, process_id, buf, cap);
    return buf;
}

uint64_t cli_store_names_last_ns(struct cli_names *n, int64_t process_id)
{
    return idx_read_process_last_ns(n->s->x, process_id);
}
