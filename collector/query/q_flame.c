/*
 * q_flame.c — folded stacks of CPU (or off-CPU) samples (see q_flame.h).
 *
 * Two scans of the store (q_scan.h): first the "d9.map" records of the
 * selected processes (collector pseudo ring SYM_SEG_RING, any time: a
 * process's maps are recorded when it is adopted and when they change),
 * which feed one sym.c resolver per process; then the samples
 * (CPU_SAMPLE, or SCHED_SWITCH with off_cpu) of the window, plus the
 * poll_start/poll_end records when a task is given. Scan order is time
 * order, so with a task it keeps, per thread, how many polls of that task
 * are open and keeps a sample of that thread only while one is: "samples
 * whose timestamp falls inside the task's polls on the same thread".
 *
 * Symbolization happens here, at query time (see sym.h for why), with
 * an (process, address) -> name cache. Frames are return addresses except
 * the innermost and the first user frame under kernel frames: return
 * addresses are looked up at ip - 1 so a call at the end of a function is
 * not attributed to the next one.
 *
 * Memory: one entry per distinct stack, per distinct address and per thread
 * with open polls; never per sample.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/query/q_flame.h"
#include "collector/query/q_hash.h"
#include "collector/query/q_names.h"
#include "collector/query/q_scan.h"
#include "collector/store/sym.h"
#include "shm/record.h"

/* ---- hash tables ----------------------------------------------------------- */

/* folded stack -> total */
struct stack_ent {
    char *key;                  /* NULL = empty slot */
    uint64_t total;
};
struct stack_tab {
    struct stack_ent *e;
    size_t cap, n;
};

static int stack_add(struct stack_tab *t, const char *key, size_t klen, uint64_t w)
{
    if (t->n * 2 >= t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 1024;
        struct stack_ent *ne = calloc(nc, sizeof *ne);
        if (!ne)
            return -ENOMEM;
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->e[i].key)
                continue;
            size_t j = q_hash_str(t->e[i].key, strlen(t->e[i].key)) & (nc - 1);
            while (ne[j].key)
                j = (j + 1) & (nc - 1);
            ne[j] = t->e[i];
        }
        free(t->e);
        t->e = ne;
        t->cap = nc;
    }
    size_t j = q_hash_str(key, klen) & (t->cap - 1);
    while (t->e[j].key) {
        if (strlen(t->e[j].key) == klen && memcmp(t->e[j].key, key, klen) == 0) {
            t->e[j].total += w;
            return 0;
        }
        j = (j + 1) & (t->cap - 1);
    }
    t->e[j].key = strndup(key, klen);
    if (!t->e[j].key)
        return -ENOMEM;
    t->e[j].total = w;
    t->n++;
    return 0;
}

/* (process, address, kernel) -> name */
struct name_ent {
    int64_t process_id;
    uint64_t ip;
    char *name;                 /* NULL = empty slot */
};
struct name_tab {
    struct name_ent *e;
    size_t cap, n;
};

static size_t name_slot(const struct name_tab *t, int64_t pid, uint64_t ip)
{
    return q_hash2(ip, (uint64_t)pid) & (t->cap - 1);
}

static const char *name_get(struct name_tab *t, int64_t pid, uint64_t ip)
{
    if (!t->cap)
        return NULL;
    for (size_t j = name_slot(t, pid, ip); t->e[j].name; j = (j + 1) & (t->cap - 1))
        if (t->e[j].ip == ip && t->e[j].process_id == pid)
            return t->e[j].name;
    return NULL;
}

static const char *name_put(struct name_tab *t, int64_t pid, uint64_t ip, const char *name)
{
    if (t->n * 2 >= t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 4096;
        struct name_ent *ne = calloc(nc, sizeof *ne);
        if (!ne)
            return NULL;
        struct name_tab nt = { ne, nc, 0 };
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->e[i].name)
                continue;
            size_t j = name_slot(&nt, t->e[i].process_id, t->e[i].ip);
            while (ne[j].name)
                j = (j + 1) & (nc - 1);
            ne[j] = t->e[i];
        }
        free(t->e);
        t->e = ne;
        t->cap = nc;
    }
    size_t j = name_slot(t, pid, ip);
    while (t->e[j].name)
        j = (j + 1) & (t->cap - 1);
    t->e[j].process_id = pid;
    t->e[j].ip = ip;
    t->e[j].name = strdup(name);
    if (!t->e[j].name)
        return NULL;
    t->n++;
    return t->e[j].name;
}

/* ---- per process / per thread state ------------------------------------------ */

struct proc_res {
    int64_t process_id;
    struct sym_resolver *r;
};

struct thread_polls {
    int64_t process_id;
    uint32_t tid;
    uint32_t open;              /* polls of the task open on this thread */
};

struct q_flame {
    struct q_flame_opts o;
    struct proc_res *procs;
    size_t nprocs;
    struct thread_polls *th;
    size_t nth;
    struct stack_tab stacks;
    struct name_tab names;
    uint64_t samples, kept, maps;
    struct q_names *objs;     /* after pass 1: the agent's loaded objects */
    uint16_t want_type;
    char key[D9_STACK_MAX_FRAMES * 256];
};

struct obj_add { struct q_flame *f; struct sym_resolver *r; };

static int add_object(void *arg, const struct shm_meta_entry *e)
{
    struct obj_add *oa = arg;
    struct sym_map_rec m = { .start = e->start, .end = e->end, .pgoff = e->pgoff };
    for (unsigned i = 0; i < e->build_id_len && 2 * i + 2 < sizeof m.build_id; i++)
        snprintf(m.build_id + 2 * i, 3, "%02x", e->build_id[i]);
    snprintf(m.path, sizeof m.path, "%s", e->name ? e->name : "");
    if (sym_resolver_add(oa->r, &m) == 0)
        oa->f->maps++;
    return 0;
}

static struct sym_resolver *resolver_of(struct q_flame *f, int64_t process_id, bool create)
{
    for (size_t i = 0; i < f->nprocs; i++)
        if (f->procs[i].process_id == process_id)
            return f->procs[i].r;
    if (!create)
        return NULL;
    struct proc_res *np = realloc(f->procs, (f->nprocs + 1) * sizeof *np);
    if (!np)
        return NULL;
    f->procs = np;
    struct sym_resolver *r;
    if (sym_resolver_new(&r, "") < 0)
        return NULL;
    f->procs[f->nprocs].process_id = process_id;
    f->procs[f->nprocs].r = r;
    f->nprocs++;
    /* no "d9.map" records (the collector never saw it alive): the objects
     * the agent published in its metadata */
    struct obj_add oa = { f, r };
    if (f->objs)
        q_names_objects(f->objs, process_id, add_object, &oa);
    return r;
}

static struct thread_polls *thread_of(struct q_flame *f, int64_t process_id, uint32_t tid,
                                      bool create)
{
    for (size_t i = 0; i < f->nth; i++)
        if (f->th[i].process_id == process_id && f->th[i].tid == tid)
            return &f->th[i];
    if (!create)
        return NULL;
    struct thread_polls *nt = realloc(f->th, (f->nth + 1) * sizeof *nt);
    if (!nt)
        return NULL;
    f->th = nt;
    f->th[f->nth] = (struct thread_polls){ process_id, tid, 0 };
    return &f->th[f->nth++];
}

/* ---- scans ----------------------------------------------------------------------- */

static int on_map(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                  size_t len)
{
    struct q_flame *f = arg;
    struct sym_map_rec m;
    if (src->ring != SYM_SEG_RING || sym_map_decode((const uint8_t *)rec, len, &m) != 0)
        return 0;
    struct sym_resolver *r = resolver_of(f, src->process_id, true);
    if (!r || sym_resolver_add(r, &m) < 0)
        return -ENOMEM;
    f->maps++;
    return 0;
}

static int add_sample(struct q_flame *f, const struct q_rec_src *src, const uint8_t *rec)
{
    struct d9_rec_stack s;
    memcpy(&s, rec, sizeof s);
    struct sym_resolver *r = resolver_of(f, src->process_id, true);
    if (!r)
        return -ENOMEM;
    size_t kl = 0;
    for (int i = (int)s.nframes - 1; i >= 0; i--) {
        uint64_t ip;
        memcpy(&ip, rec + sizeof s + (size_t)i * 8, 8);
        if (ip == 0)
            continue;           /* the end of a frame-pointer chain, not code */
        bool kernel = ip >= SYM_KERNEL_SPACE_MIN;
        if (kernel && f->o.no_kernel)
            continue;
        char buf[300];
        const char *name;
        if (f->o.addresses) {
            snprintf(buf, sizeof buf, "0x%" PRIx64, ip);
            name = buf;
        } else {
            /* frames are return addresses (look inside the call, ip - 1) except
             * the innermost and the first user frame under kernel frames,
             * which are where the thread was interrupted or entered the kernel */
            uint64_t inner = 0;
            if (i > 0)
                memcpy(&inner, rec + sizeof s + (size_t)(i - 1) * 8, 8);
            bool exact = i == 0 || (!kernel && inner >= SYM_KERNEL_SPACE_MIN);
            uint64_t look = exact ? ip : ip - 1;
            name = name_get(&f->names, src->process_id, look);
            if (!name) {
                sym_resolve(r, look, kernel, buf, sizeof buf);
                name = name_put(&f->names, src->process_id, look, buf);
                if (!name)
                    return -ENOMEM;
            }
        }
        size_t nl = strlen(name);
        if (kl + nl + 2 > sizeof f->key)
            break;              /* cannot happen with 127 frames of <300 bytes */
        if (kl)
            f->key[kl++] = ';';
        memcpy(f->key + kl, name, nl);
        kl += nl;
    }
    if (kl == 0) {
        static const char none[] = "[no frames]";
        memcpy(f->key, none, sizeof none - 1);
        kl = sizeof none - 1;
    }
    f->kept++;
    return stack_add(&f->stacks, f->key, kl, f->o.weight ? s.weight : 1);
}

static int on_record(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                     size_t len)
{
    struct q_flame *f = arg;
    if (rec->type == D9_REC_POLL_START || rec->type == D9_REC_POLL_END) {
        struct d9_rec_poll_end pe;      /* task is at the same offset in both */
        if (len < sizeof pe)
            return 0;
        memcpy(&pe, rec, sizeof pe);
        if (pe.task != f->o.task)
            return 0;
        struct thread_polls *t = thread_of(f, src->process_id, src->tid, true);
        if (!t)
            return -ENOMEM;
        if (rec->type == D9_REC_POLL_START)
            t->open++;
        else if (t->open)
            t->open--;
        return 0;
    }
    if (rec->type != f->want_type || shm_record_check(rec, len) <= 0)
        return 0;
    f->samples++;
    struct d9_rec_stack s;
    memcpy(&s, rec, sizeof s);
    if (f->o.tid && s.tid != f->o.tid)
        return 0;
    if (f->o.have_task) {
        const struct thread_polls *t = thread_of(f, src->process_id, s.tid, false);
        if (!t || t->open == 0)
            return 0;
    }
    return add_sample(f, src, (const uint8_t *)rec);
}

static int by_key(const void *a, const void *b)
{
    const struct stack_ent *x = a, *y = b;
    return strcmp(x->key, y->key);
}

int q_flame_new(struct q_flame **out, const struct q_flame_opts *o)
{
    struct q_flame *f = calloc(1, sizeof *f);
    if (!f)
        return -ENOMEM;
    f->o = *o;
    f->want_type = o->off_cpu ? D9_REC_SCHED_SWITCH : D9_REC_CPU_SAMPLE;
    *out = f;
    return 0;
}

void q_flame_free(struct q_flame *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->nprocs; i++)
        sym_resolver_free(f->procs[i].r);
    free(f->procs);
    free(f->th);
    for (size_t i = 0; i < f->stacks.cap; i++)
        free(f->stacks.e[i].key);
    free(f->stacks.e);
    for (size_t i = 0; i < f->names.cap; i++)
        free(f->names.e[i].name);
    free(f->names.e);
    q_names_close(f->objs);
    free(f);
}

int q_flame_run(struct q_flame *f, struct q_store *s, uint32_t pid, uint64_t from, uint64_t to,
                struct q_scan_stats *st, const char *prog)
{
    struct q_scan_stats own;
    if (!st)
        st = &own;
    struct q_filter mf = { .from = 0, .to = UINT64_MAX, .pid = pid,
                           .types = 1u << D9_REC_CUSTOM };
    int r = f->o.addresses ? 0 : q_scan(s, &mf, on_map, f, NULL, prog);
    /* a process without maps from the first pass gets the agent's loaded
     * objects (its metadata) instead */
    if (!f->o.addresses && !f->objs)
        q_names_open(s, &f->objs);
    struct q_filter sf = { .from = from, .to = to, .pid = pid, .types = 1u << f->want_type };
    if (f->o.have_task)
        sf.types |= 1u << D9_REC_POLL_START | 1u << D9_REC_POLL_END;
    memset(st, 0, sizeof *st);
    if (r >= 0)
        r = q_scan(s, &sf, on_record, f, st, prog);
    return r < 0 ? r : 0;
}

int q_flame_print(const struct q_flame *f, FILE *out)
{
    struct stack_ent *v = malloc((f->stacks.n ? f->stacks.n : 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < f->stacks.cap; i++)
        if (f->stacks.e[i].key)
            v[n++] = f->stacks.e[i];
    qsort(v, n, sizeof *v, by_key);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%s %" PRIu64 "\n", v[i].key, v[i].total);
    free(v);
    return 0;
}

void q_flame_counts(const struct q_flame *f, struct q_flame_counts *c)
{
    *c = (struct q_flame_counts){ .samples = f->samples, .kept = f->kept,
                                  .stacks = f->stacks.n, .processes = f->nprocs,
                                  .maps = f->maps };
}

int q_flame_folded(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to, bool off_cpu,
                   FILE *out, uint64_t *samples)
{
    struct q_flame_opts o = { .off_cpu = off_cpu, .weight = off_cpu };
    struct q_flame *f;
    int r = q_flame_new(&f, &o);
    if (r < 0)
        return r;
    r = q_flame_run(f, s, pid, from, to, NULL, "d9 serve");
    if (r >= 0)
        r = q_flame_print(f, out);
    if (samples)
        *samples = f->kept;
    q_flame_free(f);
    return r;
}
