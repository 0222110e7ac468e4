/*
 * q_sym.c — stack frames named one way (see q_sym.h).
 *
 * Processes: a vector (few per store) with a one-entry cache of the last
 * hit. Names: an open-addressing table keyed by (process, address looked
 * up), grown at 50% load, the names in one growing pool of blocks so their
 * pointers stay valid.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/store_hash.h"
#include "collector/query/q_names.h"
#include "collector/query/q_demangle.h"
#include "collector/query/q_loc.h"
#include "collector/query/q_sym.h"
#include "collector/store/sym.h"

#define Q_SYM_NAME_MAX   320u       /* a frame name, sym.c's "file+0xoff" included */
#define Q_SYM_TABLE_MIN  4096u
#define Q_SYM_POOL_BLOCK (256u * 1024u)

struct tramp {
    uint64_t at;                    /* a trampoline's entry */
    uint64_t fn;                    /* the program's function it calls */
};

struct proc {
    int64_t process_id;
    struct sym_resolver *r;
    uint64_t maps;                  /* d9.map records fed */
    bool objects_tried;             /* the agent's objects were looked for */
    bool tramps_tried;              /* its trampoline entries were read */
    struct tramp *tr;               /* sorted by at */
    size_t ntr, captr;
};

struct name_ent {
    int64_t process_id;
    uint64_t addr;
    const char *name;               /* NULL = empty slot */
    bool hidden;
};

struct pool_block {
    struct pool_block *next;
    size_t used;
    char data[];
};

struct q_sym {
    struct q_store *s;
    struct q_names *names;          /* for the agent's objects */
    struct proc *p;
    size_t np, capp, last;
    struct name_ent *e;
    size_t cap, n;
    struct pool_block *pool;
    uint64_t maps;
    bool loaded;                    /* q_sym_load ran */
};

int q_sym_new(struct q_sym **out, struct q_store *s)
{
    struct q_sym *y = calloc(1, sizeof *y);
    if (!y)
        return -ENOMEM;
    y->s = s;
    *out = y;
    return 0;
}

void q_sym_free(struct q_sym *y)
{
    if (!y)
        return;
    for (size_t i = 0; i < y->np; i++) {
        sym_resolver_free(y->p[i].r);
        free(y->p[i].tr);
    }
    free(y->p);
    free(y->e);
    for (struct pool_block *b = y->pool, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    q_names_close(y->names);
    free(y);
}

static struct proc *proc_of(struct q_sym *y, int64_t process_id)
{
    if (y->last < y->np && y->p[y->last].process_id == process_id)
        return &y->p[y->last];
    for (size_t i = 0; i < y->np; i++)
        if (y->p[i].process_id == process_id) {
            y->last = i;
            return &y->p[i];
        }
    if (y->np == y->capp) {
        size_t nc = y->capp ? y->capp * 2 : 8;
        struct proc *n = realloc(y->p, nc * sizeof *n);
        if (!n)
            return NULL;
        y->p = n;
        y->capp = nc;
    }
    struct proc *p = &y->p[y->np];
    memset(p, 0, sizeof *p);
    if (sym_resolver_new(&p->r, "") < 0)
        return NULL;
    sym_resolver_debug_dir(p->r, y->s ? q_store_debug_dir(y->s) : NULL);
    p->process_id = process_id;
    y->last = y->np++;
    return p;
}

int q_sym_map(struct q_sym *y, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
              size_t len)
{
    struct sym_map_rec m;
    if (rec->type != D9_REC_CUSTOM || src->ring != SYM_SEG_RING ||
        sym_map_decode((const uint8_t *)rec, len, &m) != 0)
        return 0;
    struct proc *p = proc_of(y, src->process_id);
    if (!p || sym_resolver_add(p->r, &m) < 0)
        return -ENOMEM;
    p->maps++;
    y->maps++;
    return 0;
}

static int on_map(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec, size_t len)
{
    return q_sym_map(arg, src, rec, len);
}

int q_sym_load(struct q_sym *y, uint32_t pid, uint64_t from, uint64_t to, const char *prog)
{
    if (y->loaded || !y->s)
        return 0;
    /* only the collector's map ring: its blocks, chosen by the index */
    struct q_filter f = { .from = from, .to = to, .pid = pid, .types = 1u << D9_REC_CUSTOM,
                          .by_ring = true, .ring = SYM_SEG_RING };
    int rc = q_scan(y->s, &f, on_map, y, NULL, prog);
    if (rc < 0)
        return rc;
    y->loaded = true;
    return 0;
}

struct obj_add {
    struct q_sym *y;
    struct proc *p;
};

static int add_object(void *arg, const struct shm_meta_entry *e)
{
    struct obj_add *oa = arg;
    struct sym_map_rec m;
    q_loc_object_map(e, &m);
    if (sym_resolver_add(oa->p->r, &m) == 0)
        oa->y->maps++;
    return 0;
}

/* The resolver of a process, with the agent's objects when it has no maps. */
static struct proc *resolver_of(struct q_sym *y, int64_t process_id)
{
    struct proc *p = proc_of(y, process_id);
    if (!p || p->maps || p->objects_tried || !y->s)
        return p;
    p->objects_tried = true;
    if (!y->names && q_names_open(y->s, &y->names) < 0)
        return p;
    struct obj_add oa = { y, p };
    q_names_objects(y->names, process_id, add_object, &oa);
    return p;
}

static const char *pool_copy(struct q_sym *y, const char *s)
{
    size_t n = strlen(s) + 1;
    if (!y->pool || Q_SYM_POOL_BLOCK - y->pool->used < n) {
        struct pool_block *b = malloc(sizeof *b + Q_SYM_POOL_BLOCK);
        if (!b)
            return NULL;
        b->next = y->pool;
        b->used = 0;
        y->pool = b;
    }
    char *d = y->pool->data + y->pool->used;
    memcpy(d, s, n);
    y->pool->used += n;
    return d;
}

static size_t slot(size_t cap, int64_t process_id, uint64_t addr)
{
    return (size_t)store_hash2(addr, (uint64_t)process_id) & (cap - 1);
}

static int grow(struct q_sym *y)
{
    size_t nc = y->cap ? y->cap * 2 : Q_SYM_TABLE_MIN;
    struct name_ent *ne = calloc(nc, sizeof *ne);
    if (!ne)
        return -ENOMEM;
    for (size_t i = 0; i < y->cap; i++) {
        if (!y->e[i].name)
            continue;
        size_t j = slot(nc, y->e[i].process_id, y->e[i].addr);
        while (ne[j].name)
            j = (j + 1) & (nc - 1);
        ne[j] = y->e[i];
    }
    free(y->e);
    y->e = ne;
    y->cap = nc;
    return 0;
}

/* The name of addr (looked up as is) in process_id, cached. */
static const struct name_ent *named(struct q_sym *y, int64_t process_id, uint64_t addr,
                                    bool kernel)
{
    if ((y->n + 1) * 2 > y->cap && grow(y) < 0)
        return NULL;
    size_t j = slot(y->cap, process_id, addr);
    for (; y->e[j].name; j = (j + 1) & (y->cap - 1))
        if (y->e[j].addr == addr && y->e[j].process_id == process_id)
            return &y->e[j];
    struct proc *p = resolver_of(y, process_id);
    if (!p)
        return NULL;
    char buf[Q_SYM_NAME_MAX];
    char readable[Q_SYM_NAME_MAX];
    int hidden = sym_resolve(p->r, addr, kernel, buf, sizeof buf);
    const char *name = pool_copy(y, q_demangle(buf, readable, sizeof readable));
    if (!name)
        return NULL;
    y->e[j] = (struct name_ent){ process_id, addr, name, hidden == 1 };
    y->n++;
    return &y->e[j];
}

/* ---- trampolines: named as the function they call ---------------------------- */

struct tramp_add {
    struct q_names *names;
    struct proc *p;
};

static int add_tramp(void *arg, const struct shm_meta_entry *e)
{
    struct tramp_add *ta = arg;
    uint64_t at, fn;
    uint32_t loc;
    if (!shm_meta_tramp(e, &at, &loc) ||
        !shm_meta_code_addr(q_names_meta(ta->names, ta->p->process_id, D9_META_LOCATION, loc),
                            &fn))
        return 0;                   /* not one, or its callback's entry is not there */
    struct proc *p = ta->p;
    if (p->ntr == p->captr) {
        size_t nc = p->captr ? p->captr * 2 : 64;
        struct tramp *n = realloc(p->tr, nc * sizeof *n);
        if (!n)
            return -ENOMEM;
        p->tr = n;
        p->captr = nc;
    }
    p->tr[p->ntr++] = (struct tramp){ at, fn };
    return 0;
}

static int tramp_cmp(const void *a, const void *b)
{
    const struct tramp *x = a, *y = b;
    return (x->at > y->at) - (x->at < y->at);
}

/* The program's function that the trampoline holding addr calls, named;
 * NULL when unknown (the agent published no entry for it, the process's
 * metadata cannot be read, out of memory). A trampoline runs only after
 * its entry was written, and the published ones do not overlap: the one
 * with the greatest entry <= addr, within D9_LOC_TRAMP_SIZE_MAX, holds it. */
static const struct name_ent *tramp_callee(struct q_sym *y, int64_t process_id, uint64_t addr)
{
    struct proc *p = resolver_of(y, process_id);
    if (!p || !y->s)
        return NULL;
    if (!p->tramps_tried) {
        p->tramps_tried = true;
        if (!y->names && q_names_open(y->s, &y->names) < 0)
            return NULL;
        struct tramp_add ta = { y->names, p };
        if (q_names_locations(y->names, process_id, add_tramp, &ta) < 0)
            p->ntr = 0;
        qsort(p->tr, p->ntr, sizeof *p->tr, tramp_cmp);
    }
    size_t lo = 0, hi = p->ntr;     /* the first entry > addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->tr[mid].at <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || addr - p->tr[lo - 1].at >= D9_LOC_TRAMP_SIZE_MAX)
        return NULL;
    const struct name_ent *c = named(y, process_id, p->tr[lo - 1].fn, false);
    return c && !c->hidden ? c : NULL;
}

const char *q_sym_name(struct q_sym *y, int64_t process_id, uint64_t addr, bool kernel,
                       bool *hidden)
{
    const struct name_ent *e = named(y, process_id, addr, kernel);
    if (e && e->hidden && !kernel) {
        const struct name_ent *c = tramp_callee(y, process_id, addr);
        if (c)
            e = c;
    }
    if (hidden)
        *hidden = e && e->hidden;
    return e ? e->name : NULL;
}

int q_sym_frames(struct q_sym *y, int64_t process_id, const struct d9_rec_hdr *rec, size_t len,
                 struct q_frame *out)
{
    struct d9_rec_stack s;
    if (len < sizeof s)
        return 0;
    memcpy(&s, rec, sizeof s);
    size_t max = (len - sizeof s) / 8;
    uint16_t n = s.nframes <= max ? s.nframes : (uint16_t)max;
    if (n > D9_STACK_MAX_FRAMES)
        n = D9_STACK_MAX_FRAMES;
    const uint8_t *ips = (const uint8_t *)rec + sizeof s;
    int k = 0;
    for (uint16_t i = 0; i < n; i++) {
        uint64_t ip, inner = 0;
        memcpy(&ip, ips + (size_t)i * 8, 8);
        if (ip == 0)
            continue;           /* the end of a frame-pointer chain, not code */
        if (i > 0)
            memcpy(&inner, ips + (size_t)(i - 1) * 8, 8);
        bool kernel = ip >= SYM_KERNEL_SPACE_MIN;
        bool exact = i == 0 || (!kernel && inner >= SYM_KERNEL_SPACE_MIN);
        uint64_t look = exact ? ip : ip - 1;
        const struct name_ent *e = named(y, process_id, look, kernel);
        if (!e)
            return -ENOMEM;
        if (e->hidden) {
            /* a shim trampoline: the callback it calls, unless that is the
             * frame inside it already */
            const struct name_ent *c = kernel ? NULL : tramp_callee(y, process_id, look);
            if (!c || (k > 0 && strcmp(out[k - 1].name, c->name) == 0))
                continue;
            out[k++] = (struct q_frame){ ip, look, c->name, false };
            continue;
        }
        out[k++] = (struct q_frame){ ip, look, e->name, kernel };
    }
    return k;
}

uint64_t q_sym_maps(const struct q_sym *y) { return y->maps; }
size_t q_sym_processes(const struct q_sym *y) { return y->np; }
