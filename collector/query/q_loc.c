/*
 * q_loc.c — names of code locations (see q_loc.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/query/q_demangle.h"
#include "collector/query/q_loc.h"
#include "collector/store/idx_read.h"
#include "collector/store/seg_reader.h"
#include "collector/store/sym.h"

struct q_loc {
    struct sym_resolver *res;
    struct sym_map_rec *maps;
    size_t n, cap;
};

static int add_map(struct q_loc *c, const struct sym_map_rec *m)
{
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 32;
        struct sym_map_rec *nm = realloc(c->maps, nc * sizeof *nm);
        if (!nm)
            return -1;
        c->maps = nm;
        c->cap = nc;
    }
    c->maps[c->n++] = *m;
    return sym_resolver_add(c->res, m) < 0 ? -1 : 0;
}

struct q_loc *q_loc_open(const char *path, const char *debug_dir)
{
    struct q_loc *c = calloc(1, sizeof *c);
    struct seg_reader *r = NULL;
    if (!c || sym_resolver_new(&c->res, "") < 0 || seg_reader_open(&r, path, SEG_OPEN_PARTIAL) < 0)
        goto fail;
    sym_resolver_debug_dir(c->res, debug_dir);
    struct seg_block b;
    while (seg_reader_next(r, &b) == 1) {
        if (b.h.kind != SEG_BLK_DATA || b.h.ring != SYM_SEG_RING)
            continue;
        size_t off = 0;
        const struct d9_rec_hdr *rec;
        while (seg_reader_next_record(&b, &off, &rec) == 1) {
            struct sym_map_rec m;
            if (sym_map_decode((const uint8_t *)rec, rec->len, &m) == 0 &&
                strcmp(m.path, SYM_KERNEL_PATH) != 0 && add_map(c, &m) < 0)
                goto fail;
        }
    }
    seg_reader_close(r);
    if (c->n == 0)              /* no snapshot here: the caller tries another segment */
        goto fail_closed;
    return c;
fail:
    if (r)
        seg_reader_close(r);
fail_closed:
    q_loc_free(c);
    return NULL;
}

/* The map records of a process, for naming code locations: from its newest
 * segment that has any (every segment opened while the process lived has a
 * snapshot; one opened after it exited has none). NULL when none has. */
struct codeloc_open {
    struct q_store *s;
    struct q_loc *c;
};

static int codeloc_try(void *arg, const char *rel)
{
    struct codeloc_open *co = arg;
    char path[2 * Q_PATH_MAX];
    if (rel[0] == '/' || strstr(rel, ".."))
        return 0;                   /* the index is untrusted too: stay inside the store */
    snprintf(path, sizeof path, "%s/%s", q_store_dir(co->s), rel);
    co->c = q_loc_open(path, q_store_debug_dir(co->s));
    return co->c != NULL;
}

void q_loc_object_map(const struct shm_meta_entry *e, struct sym_map_rec *m)
{
    memset(m, 0, sizeof *m);
    m->start = e->start;
    m->end = e->end;
    m->pgoff = e->pgoff;
    for (unsigned i = 0; i < e->build_id_len && 2 * i + 2 < sizeof m->build_id; i++)
        snprintf(m->build_id + 2 * i, 3, "%02x", e->build_id[i]);
    snprintf(m->path, sizeof m->path, "%s", e->name ? e->name : "");
}

static int object_add(void *arg, const struct shm_meta_entry *e)
{
    struct sym_map_rec m;
    q_loc_object_map(e, &m);
    return add_map(arg, &m) < 0;    /* stop on -ENOMEM */
}

/* The objects the agent published, from one segment's metadata; 1 (stop)
 * once a segment gave some. */
static int objects_try(void *arg, const char *rel)
{
    struct codeloc_open *co = arg;
    char path[2 * Q_PATH_MAX];
    if (rel[0] == '/' || strstr(rel, ".."))
        return 0;
    snprintf(path, sizeof path, "%s/%s", q_store_dir(co->s), rel);
    struct seg_reader *r;
    if (seg_reader_open(&r, path, 0) < 0)
        return 0;
    struct q_loc *c = calloc(1, sizeof *c);
    if (c && sym_resolver_new(&c->res, "") == 0 && seg_reader_load_meta(r) == 0) {
        sym_resolver_debug_dir(c->res, q_store_debug_dir(co->s));
        seg_reader_each_object(r, object_add, c);
    }
    seg_reader_close(r);
    if (c && c->res && c->n > 0) {
        co->c = c;
        return 1;
    }
    q_loc_free(c);
    return 0;
}

struct q_loc *q_loc_of_process(struct q_store *s, int64_t process_id)
{
    struct codeloc_open co = { s, NULL };
    int rc = idx_read_process_segments(q_store_idx(s), process_id, codeloc_try, &co);
    if (!co.c && rc >= 0)   /* never seen alive by the collector: what its agent published */
        rc = idx_read_process_segments(q_store_idx(s), process_id, objects_try, &co);
    if (!co.c && rc < 0)
        q_store_index_warn(s, "code locations left unresolved");
    return co.c;
}

void q_loc_free(struct q_loc *c)
{
    if (!c)
        return;
    if (c->res)
        sym_resolver_free(c->res);
    free(c->maps);
    free(c);
}

int q_loc_code(struct q_loc *c, const struct shm_meta_entry *e, char *where, size_t wcap,
               char *what, size_t fcap)
{
    uint64_t addr;
    if (!e || !shm_meta_code_addr(e, &addr))
        return 0;
    /* the newest snapshot covering addr: a library mapped again replaces the old one */
    const struct sym_map_rec *m = NULL;
    for (size_t i = 0; c && i < c->n; i++)
        if (addr >= c->maps[i].start && addr < c->maps[i].end)
            m = &c->maps[i];
    what[0] = 0;
    if (!m) {
        snprintf(where, wcap, "%s 0x%" PRIx64, D9_LOC_CODE_FILE, addr);
        return 1;
    }
    const char *lib = strrchr(m->path, '/');
    lib = lib ? lib + 1 : m->path;
    snprintf(where, wcap, "%s+0x%" PRIx64, lib, addr - m->start + m->pgoff);
    char fn[Q_LOC_NAME_MAX];
    sym_resolve(c->res, addr, 0, fn, sizeof fn);
    /* sym_resolve gives "file+0x..." or "[unknown]" when there is no symbol */
    if (fn[0] && fn[0] != '[' && !strchr(fn, '+'))
        q_demangle(fn, what, fcap);     /* after the check: "operator+" has one */
    return 1;
}

const char *q_loc_text(const struct shm_meta_entry *e, uint32_t id, char *buf, size_t cap)
{
    if (!id)
        snprintf(buf, cap, "?");
    else if (!e || !e->name)
        snprintf(buf, cap, "#%u", id);
    else if (e->line == 0)
        snprintf(buf, cap, "%s%s%s", e->name, e->func && *e->func ? " " : "",
                 e->func ? e->func : "");
    else if (e->func && *e->func)
        snprintf(buf, cap, "%s:%u %s", e->name, e->line, e->func);
    else
        snprintf(buf, cap, "%s:%u", e->name, e->line);
    return buf;
}

struct q_loc_named {
    uint32_t id;
    struct shm_meta_entry e;
    char where[Q_LOC_NAME_MAX];     /* "library+0xoffset" */
    char what[Q_LOC_NAME_MAX];      /* the function, "" when unknown */
};

const struct shm_meta_entry *q_loc_cached(struct q_loc_cache *k,
                                                const struct shm_meta_entry *m)
{
    uint64_t addr;
    if (!m || !shm_meta_code_addr(m, &addr))
        return m;
    for (size_t i = 0; i < k->n; i++)
        if (k->v[i]->id == m->id)
            return &k->v[i]->e;
    if (k->n == k->cap) {
        size_t nc = k->cap ? k->cap * 2 : 16;
        struct q_loc_named **nv = realloc(k->v, nc * sizeof *nv);
        if (!nv)
            return m;
        k->v = nv;
        k->cap = nc;
    }
    struct q_loc_named *x = calloc(1, sizeof *x);
    if (!x)
        return m;
    x->id = m->id;
    x->e = *m;
    q_loc_code(k->c, m, x->where, sizeof x->where, x->what, sizeof x->what);
    x->e.name = x->where;
    x->e.line = 0;
    x->e.func = x->what;
    k->v[k->n++] = x;
    return &x->e;
}

void q_loc_cache_release(struct q_loc_cache *k)
{
    for (size_t i = 0; i < k->n; i++)
        free(k->v[i]);
    free(k->v);
    q_loc_free(k->c);
    memset(k, 0, sizeof *k);
}

int q_loc_is_code(const struct shm_meta_entry *e)
{
    return e && e->kind == D9_META_LOCATION && e->line == 0 && e->name && e->func &&
           strcmp(e->name, D9_LOC_CODE_FILE) == 0;
}
