/*
 * tool_rel_seqcheck.c — proves "no committed record lost, every loss
 * counted" for the reliability tests, from the segment files alone.
 *
 *   tool_rel_seqcheck STORE [--pid P] [--progress FILE] [--allow-dups] [--per-event K]
 *   tool_rel_seqcheck --progress FILE        print total=N (sum of counts)
 *
 * Reads every sealed segment of STORE (of pid P only, if given) with
 * seg_reader and groups the records by thread (pid, ring, generation; the
 * collector's pseudo rings of perf samples and maps are skipped). Per
 * thread:
 *   - ring sequence numbers (struct d9_rec_hdr.seq, which counts dropped
 *     records too) are sorted; a repeat is a duplicate (an error unless
 *     --allow-dups); every gap must be covered by the lost counts of the
 *     thread's DATA blocks: gaps <= lost;
 *   - in sequence order a thread's timestamps never go back;
 *   - the prog_rel_workload events "rel_seq" {thread, seq} must sit at
 *     ring seq = K * app seq + a constant, and name one workload thread only
 *     (K = --per-event, the ring records of one workload event: 2 with
 *     prog_rel_workload --counters 1, whose queue depth record follows);
 *   - with --progress (the workload's counts of completed emits, which
 *     survive kill -9): seen + lost == offered, or offered + 1 (the emit in
 *     flight when the kill landed), so nothing committed is missing and no
 *     loss is counted twice.
 * Prints one summary line of key=value and one "FAIL ..." line per broken
 * thread. Exit 0 when every check holds, 1 otherwise, 2 on usage errors.
 * Linked with libcol.a. Test helper, not part of the product.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collector/store/seg_reader.h"
#include "tests/integration/rel_progress.h"

struct rec {
    uint32_t pid, ring, gen;
    uint32_t seq;               /* ring seq */
    uint64_t ts;                /* CLOCK_MONOTONIC ns */
    int32_t app_thread;         /* -1: not a rel_seq event */
    uint64_t app_seq;
};

struct lost {
    uint32_t pid, ring, gen;
    uint64_t lost;
};

struct vec {
    void *v;
    size_t n, cap, elem;
};

static void *vec_push(struct vec *v)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 4096;
        v->v = realloc(v->v, v->cap * v->elem);
        if (!v->v) {
            perror("tool_rel_seqcheck: realloc");
            exit(1);
        }
    }
    return (char *)v->v + v->elem * v->n++;
}

static int cmp_rec(const void *a, const void *b)
{
    const struct rec *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->ring != y->ring) return x->ring < y->ring ? -1 : 1;
    if (x->gen != y->gen) return x->gen < y->gen ? -1 : 1;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    return 0;
}

static int same_thread(uint32_t pid, uint32_t ring, uint32_t gen, const struct rec *r)
{
    return r->pid == pid && r->ring == ring && r->gen == gen;
}

struct progress {
    struct rel_progress *p;
    size_t size;
    int *seen;                  /* per workload thread: found in segments */
};

static int load_progress(const char *path, struct progress *pr)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "tool_rel_seqcheck: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if ((size_t)st.st_size < sizeof(struct rel_progress)) {
        fprintf(stderr, "tool_rel_seqcheck: %s: too short (%lld bytes)\n", path,
                (long long)st.st_size);
        close(fd);
        return -1;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        fprintf(stderr, "tool_rel_seqcheck: mmap %s: %s\n", path, strerror(errno));
        return -1;
    }
    pr->p = m;
    pr->size = (size_t)st.st_size;
    if (atomic_load(&pr->p->magic) != REL_PROGRESS_MAGIC || pr->p->threads == 0 ||
        pr->p->threads > REL_PROGRESS_MAX_THREADS ||
        rel_progress_size(pr->p->threads) > pr->size) {
        fprintf(stderr, "tool_rel_seqcheck: %s: not a progress file\n", path);
        return -1;
    }
    pr->seen = calloc(pr->p->threads, sizeof *pr->seen);
    return pr->seen ? 0 : -1;
}

static int is_segment(const char *name)
{
    size_t n = strlen(name), sl = strlen(SEG_FILE_SUFFIX);
    return name[0] != '.' && n > sl && strcmp(name + n - sl, SEG_FILE_SUFFIX) == 0;
}

/* Read one segment into recs/losts. 0, or -1 when it is unreadable. */
static int read_segment(const char *path, uint32_t only_pid, struct vec *recs, struct vec *losts,
                        uint64_t *nsegs)
{
    struct seg_reader *r;
    char why[256] = "";
    if (seg_reader_open_ex(&r, path, 0, why, sizeof why) != 0) {
        fprintf(stderr, "tool_rel_seqcheck: %s: %s\n", path, why);
        return -1;
    }
    uint32_t pid = seg_reader_header(r)->pid;
    if (only_pid && pid != only_pid) {
        seg_reader_close(r);
        return 0;
    }
    (*nsegs)++;
    struct seg_block b;
    int rc;
    while ((rc = seg_reader_next(r, &b)) == 1) {
        /* the collector's own pseudo rings (perf samples, maps) are no
         * ring of the process: their seq is not the ring protocol's */
        if (b.h.kind != SEG_BLK_DATA || b.h.ring >= D9_RINGS_MAX)
            continue;
        if (b.h.lost) {
            struct lost *l = vec_push(losts);
            *l = (struct lost){ pid, b.h.ring, b.h.generation, b.h.lost };
        }
        size_t off = 0;
        const struct d9_rec_hdr *h;
        while (seg_reader_next_record(&b, &off, &h) == 1) {
            struct rec *x = vec_push(recs);
            *x = (struct rec){ pid, b.h.ring, b.h.generation, h->seq, h->ts, -1, 0 };
            if (h->type != D9_REC_CUSTOM)
                continue;
            const struct d9_rec_custom *c = (const void *)h;
            const struct shm_meta_entry *s = seg_reader_schema(r, c->schema);
            if (!s || strcmp(s->name, "rel_seq") != 0 || c->payload_len < 16)
                continue;
            uint64_t v[2];
            memcpy(v, (const uint8_t *)h + sizeof *c, sizeof v);
            x->app_thread = v[0] < REL_PROGRESS_MAX_THREADS ? (int32_t)v[0] : -2;
            x->app_seq = v[1];
        }
    }
    if (rc < 0) {
        fprintf(stderr, "tool_rel_seqcheck: %s: corrupt block: %s\n", path,
                seg_reader_error(r) ? seg_reader_error(r) : "?");
        seg_reader_close(r);
        return -1;
    }
    seg_reader_close(r);
    return 0;
}

struct totals {
    uint64_t threads, records, rel, lost, gaps, dups, offered, failures;
    uint64_t backsteps, max_back_ns;    /* time going backwards in seq order */
};

static void fail(struct totals *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct totals *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    t->failures++;
}

/* Check the records [a, b) of one thread (sorted by seq). */
static void check_thread(const struct rec *rs, size_t a, size_t b, uint64_t lost,
                         struct progress *pr, int allow_dups, uint64_t per_event,
                         struct totals *t)
{
    const struct rec *f = &rs[a];
    uint64_t uniq = 0, dups = 0;
    int32_t app = -1;
    int64_t offset = 0;
    int have_off = 0, bad_map = 0;
    uint64_t max_app = 0;
    uint64_t backsteps = 0, max_back = 0, prev_ts = 0;
    for (size_t i = a; i < b; i++) {
        if (i > a && rs[i].seq == rs[i - 1].seq) {
            dups++;
        } else {
            uniq++;
            /* a thread's records in sequence order never go back in time */
            if (i > a && rs[i].ts < prev_ts) {
                backsteps++;
                if (prev_ts - rs[i].ts > max_back)
                    max_back = prev_ts - rs[i].ts;
            }
            if (rs[i].ts > prev_ts)
                prev_ts = rs[i].ts;
        }
        if (rs[i].app_thread == -1)
            continue;
        if (rs[i].app_thread < 0 || (app >= 0 && rs[i].app_thread != app)) {
            bad_map = 1;
            continue;
        }
        app = rs[i].app_thread;
        int64_t d = (int64_t)(rs[i].app_seq * per_event) - (int64_t)rs[i].seq;
        if (have_off && d != offset)
            bad_map = 1;
        offset = d;
        have_off = 1;
        if (rs[i].app_seq + 1 > max_app)
            max_app = rs[i].app_seq + 1;
        t->rel++;
    }
    uint64_t span = (uint64_t)rs[b - 1].seq + 1;     /* records offered up to the last seen */
    uint64_t gaps = span - uniq;
    t->threads++;
    t->records += uniq;
    t->lost += lost;
    t->gaps += gaps;
    t->dups += dups;
    t->backsteps += backsteps;
    if (max_back > t->max_back_ns)
        t->max_back_ns = max_back;
    char id[96];
    snprintf(id, sizeof id, "pid %u ring %u gen %u (workload thread %d)", f->pid, f->ring,
             f->gen, app);
    if (dups && !allow_dups)
        fail(t, "%s: %" PRIu64 " duplicate records", id, dups);
    if (backsteps)
        fail(t, "%s: time goes backwards %" PRIu64 " times in sequence order (by up to "
             "%.3f s)", id, backsteps, (double)max_back / 1e9);
    if (bad_map)
        fail(t, "%s: rel_seq events do not follow the ring sequence (app seq - ring seq "
             "not constant, or two workload threads in one ring)", id);
    if (gaps > lost)
        fail(t, "%s: %" PRIu64 " records missing inside the sequence but only %" PRIu64
             " counted lost", id, gaps, lost);
    if (pr && app >= 0 && (uint32_t)app < pr->p->threads) {
        pr->seen[app] = 1;
        uint64_t offered = atomic_load(&pr->p->count[app]);
        t->offered += offered;
        /* the ring counted offset extra records before the first rel_seq one */
        uint64_t ring_offered = offered * per_event + (uint64_t)(offset > 0 ? 0 : -offset);
        if (uniq + lost < ring_offered)
            fail(t, "%s: %" PRIu64 " offered, but only %" PRIu64 " in segments + %" PRIu64
                 " counted lost: committed records are missing", id, ring_offered, uniq, lost);
        else if (uniq + lost > ring_offered + per_event)
            fail(t, "%s: %" PRIu64 " offered, but %" PRIu64 " in segments + %" PRIu64
                 " counted lost: loss counted twice", id, ring_offered, uniq, lost);
        if (max_app > offered + 1)
            fail(t, "%s: event seq %" PRIu64 " beyond the %" PRIu64 " offered", id,
                 max_app - 1, offered);
    }
}

static int cmp_lost(const void *a, const void *b)
{
    const struct lost *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->ring != y->ring) return x->ring < y->ring ? -1 : 1;
    if (x->gen != y->gen) return x->gen < y->gen ? -1 : 1;
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: tool_rel_seqcheck STORE [--pid P] [--progress FILE] [--allow-dups]\n"
               "                         [--per-event K]\n"
               "       tool_rel_seqcheck --progress FILE\n");
}

int main(int argc, char **argv)
{
    const char *store = NULL, *progress = NULL;
    uint32_t only = 0;
    int allow_dups = 0;
    uint64_t per_event = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--pid") && i + 1 < argc)
            only = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--progress") && i + 1 < argc)
            progress = argv[++i];
        else if (!strcmp(argv[i], "--per-event") && i + 1 < argc) {
            per_event = strtoull(argv[++i], NULL, 10);
            if (per_event < 1 || per_event > 16) {
                usage(stderr);
                return 2;
            }
        } else if (!strcmp(argv[i], "--allow-dups"))
            allow_dups = 1;
        else if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] != '-' && !store)
            store = argv[i];
        else {
            usage(stderr);
            return 2;
        }
    }
    struct progress pr = { 0 };
    if (progress && load_progress(progress, &pr) != 0)
        return 1;
    if (!store) {
        if (!progress) {
            usage(stderr);
            return 2;
        }
        uint64_t total = 0;
        for (uint32_t t = 0; t < pr.p->threads; t++)
            total += atomic_load(&pr.p->count[t]);
        printf("total=%" PRIu64 "\n", total);
        return 0;
    }
    if (progress && !only)
        only = pr.p->pid;
    DIR *d = opendir(store);
    if (!d) {
        fprintf(stderr, "tool_rel_seqcheck: %s: %s\n", store, strerror(errno));
        return 1;
    }
    struct vec recs = { .elem = sizeof(struct rec) }, losts = { .elem = sizeof(struct lost) };
    uint64_t nsegs = 0, bad = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!is_segment(de->d_name))
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", store, de->d_name);
        if (read_segment(path, only, &recs, &losts, &nsegs) != 0)
            bad++;
    }
    closedir(d);
    struct rec *rs = recs.v;
    struct lost *ls = losts.v;
    qsort(rs, recs.n, sizeof *rs, cmp_rec);
    qsort(ls, losts.n, sizeof *ls, cmp_lost);
    struct totals t = { 0 };
    size_t li = 0;
    for (size_t a = 0; a < recs.n;) {
        size_t b = a + 1;
        while (b < recs.n && same_thread(rs[a].pid, rs[a].ring, rs[a].gen, &rs[b]))
            b++;
        uint64_t lost = 0;
        while (li < losts.n && cmp_lost(&ls[li], &(struct lost){ rs[a].pid, rs[a].ring,
                                                                 rs[a].gen, 0 }) < 0)
            li++;
        for (size_t k = li; k < losts.n && ls[k].pid == rs[a].pid && ls[k].ring == rs[a].ring &&
                            ls[k].gen == rs[a].gen; k++)
            lost += ls[k].lost;
        check_thread(rs, a, b, lost, progress ? &pr : NULL, allow_dups, per_event, &t);
        a = b;
    }
    if (progress)
        for (uint32_t k = 0; k < pr.p->threads; k++) {
            uint64_t offered = atomic_load(&pr.p->count[k]);
            if (!pr.seen[k] && offered > 0)
                fail(&t, "workload thread %u offered %" PRIu64 " events, none in segments", k,
                     offered);
        }
    if (bad)
        fail(&t, "%" PRIu64 " segment files unreadable", bad);
    printf("segments=%" PRIu64 " threads=%" PRIu64 " records=%" PRIu64 " rel_records=%" PRIu64
           " lost=%" PRIu64 " gaps=%" PRIu64 " dups=%" PRIu64 " offered=%" PRIu64
           " backsteps=%" PRIu64 " failures=%" PRIu64 "\n", nsegs, t.threads, t.records, t.rel,
           t.lost, t.gaps, t.dups, t.offered, t.backsteps, t.failures);
    free(recs.v);
    free(losts.v);
    free(pr.seen);
    return t.failures ? 1 : 0;
}
