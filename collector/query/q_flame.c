/*
 * q_flame.c — folded stacks of CPU (or off-CPU) samples (see q_flame.h).
 *
 * Two scans of the store (q_scan.h): first the "d9.map" records of the
 * selected processes in the segments that meet the window (q_sym_load); then the samples (CPU_SAMPLE,
 * or SCHED_SWITCH with off_cpu) of the window, plus the poll_start/poll_end
 * records when a task is given. Scan order is time order, so with a task it
 * keeps, per thread, how many polls of that task are open and keeps a
 * sample of that thread only while one is: "samples whose timestamp falls
 * inside the task's polls on the same thread". Frames are named by q_sym.h,
 * as every other reader names them.
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
#include "collector/store/store_hash.h"
#include "collector/query/q_scan.h"
#include "collector/query/q_sym.h"
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
            size_t j = store_hash_str(t->e[i].key, strlen(t->e[i].key)) & (nc - 1);
            while (ne[j].key)
                j = (j + 1) & (nc - 1);
            ne[j] = t->e[i];
        }
        free(t->e);
        t->e = ne;
        t->cap = nc;
    }
    size_t j = store_hash_str(key, klen) & (t->cap - 1);
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

/* ---- per thread state ------------------------------------------------------------- */

struct thread_polls {
    int64_t process_id;
    uint32_t tid;
    uint32_t open;              /* polls of the task open on this thread */
};

struct q_flame {
    struct q_flame_opts o;
    struct q_sym *sym;          /* frame names (q_sym.h) */
    int64_t *procs;             /* processes with samples */
    size_t nprocs;
    struct thread_polls *th;
    size_t nth;
    struct stack_tab stacks;
    uint64_t samples, kept;
    uint16_t want_type;
    char key[D9_STACK_MAX_FRAMES * 256];
};

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

static int add_sample(struct q_flame *f, const struct q_rec_src *src,
                      const struct d9_rec_hdr *rec, size_t len)
{
    struct d9_rec_stack s;
    memcpy(&s, rec, sizeof s);
    if (!f->nprocs || f->procs[f->nprocs - 1] != src->process_id) {
        size_t i = 0;
        while (i < f->nprocs && f->procs[i] != src->process_id)
            i++;
        if (i == f->nprocs) {
            int64_t *np = realloc(f->procs, (f->nprocs + 1) * sizeof *np);
            if (!np)
                return -ENOMEM;
            f->procs = np;
            f->procs[f->nprocs++] = src->process_id;
        }
    }
    struct q_frame fr[D9_STACK_MAX_FRAMES];
    int n;
    if (f->o.addresses) {
        n = 0;
        for (uint16_t i = 0; i < s.nframes && (size_t)i * 8 + sizeof s + 8 <= len; i++) {
            uint64_t ip;
            memcpy(&ip, (const uint8_t *)rec + sizeof s + (size_t)i * 8, 8);
            if (ip)
                fr[n++] = (struct q_frame){ .ip = ip, .kernel = ip >= SYM_KERNEL_SPACE_MIN };
        }
    } else if ((n = q_sym_frames(f->sym, src->process_id, rec, len, fr)) < 0) {
        return n;
    }
    size_t kl = 0;
    for (int i = n - 1; i >= 0; i--) {     /* outermost first */
        if (fr[i].kernel && f->o.no_kernel)
            continue;
        char buf[32];
        const char *name = fr[i].name;
        if (f->o.addresses) {
            snprintf(buf, sizeof buf, "0x%" PRIx64, fr[i].ip);
            name = buf;
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
    return add_sample(f, src, rec, len);
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
    q_sym_free(f->sym);
    free(f->procs);
    free(f->th);
    for (size_t i = 0; i < f->stacks.cap; i++)
        free(f->stacks.e[i].key);
    free(f->stacks.e);
    free(f);
}

int q_flame_run(struct q_flame *f, struct q_store *s, uint32_t pid, uint64_t from, uint64_t to,
                struct q_scan_stats *st, const char *prog)
{
    struct q_scan_stats own;
    if (!st)
        st = &own;
    int r = 0;
    if (!f->o.addresses && !f->sym && (r = q_sym_new(&f->sym, s)) == 0)
        r = q_sym_load(f->sym, pid, from, to, prog);    /* pass 1: the memory maps */
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
                                  .stacks = f->stacks.n,
                                  .processes = f->nprocs,
                                  .maps = f->sym ? q_sym_maps(f->sym) : 0 };
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
