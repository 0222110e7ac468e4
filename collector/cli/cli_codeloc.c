/*
 * cli_codeloc.c — "function (library+0xoffset)" for code locations (see cli_codeloc.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/cli/cli_codeloc.h"
#include "collector/store/seg_reader.h"
#include "collector/store/sym.h"

struct cli_codeloc {
    struct sym_resolver *res;
    struct sym_map_rec *maps;
    size_t n, cap;
};

static int add_map(struct cli_codeloc *c, const struct sym_map_rec *m)
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

struct cli_codeloc *cli_codeloc_open(const char *path)
{
    struct cli_codeloc *c = calloc(1, sizeof *c);
    struct seg_reader *r = NULL;
    if (!c || sym_resolver_new(&c->res, "") < 0 || seg_reader_open(&r, path, SEG_OPEN_PARTIAL) < 0)
        goto fail;
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
    cli_codeloc_free(c);
    return NULL;
}

void cli_codeloc_free(struct cli_codeloc *c)
{
    if (!c)
        return;
    if (c->res)
        sym_resolver_free(c->res);
    free(c->maps);
    free(c);
}

const char *cli_codeloc_name(struct cli_codeloc *c, const struct shm_meta_entry *e, char *buf,
                             size_t cap)
{
    uint64_t addr;
    if (!shm_meta_code_addr(e, &addr))
        return NULL;
    /* the newest snapshot covering addr: a library mapped again replaces the old one */
    const struct sym_map_rec *m = NULL;
    for (size_t i = 0; c && i < c->n; i++)
        if (addr >= c->maps[i].start && addr < c->maps[i].end)
            m = &c->maps[i];
    if (!m) {
        snprintf(buf, cap, "%s 0x%" PRIx64, D9_LOC_CODE_FILE, addr);
        return buf;
    }
    const char *lib = strrchr(m->path, '/');
    lib = lib ? lib + 1 : m->path;
    uint64_t off = addr - m->start + m->pgoff;
    char fn[256];
    sym_resolve(c->res, addr, 0, fn, sizeof fn);
    /* sym_resolve gives "file+0x..." or "[unknown]" when there is no symbol */
    if (fn[0] == 0 || fn[0] == '[' || strchr(fn, '+'))
        snprintf(buf, cap, "%s+0x%" PRIx64, lib, off);
    else
        snprintf(buf, cap, "%s (%s+0x%" PRIx64 ")", fn, lib, off);
    return buf;
}

struct cli_codeloc_named {
    uint32_t id;
    struct shm_meta_entry e;
    char name[320];
};

const struct shm_meta_entry *cli_codeloc_cached(struct cli_codeloc_cache *k,
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
        struct cli_codeloc_named **nv = realloc(k->v, nc * sizeof *nv);
        if (!nv)
            return m;
        k->v = nv;
        k->cap = nc;
    }
    struct cli_codeloc_named *x = calloc(1, sizeof *x);
    if (!x)
        return m;
    x->id = m->id;
    x->e = *m;
    cli_codeloc_name(k->c, m, x->name, sizeof x->name);
    x->e.func = x->name;
    k->v[k->n++] = x;
    return &x->e;
}

void cli_codeloc_cache_release(struct cli_codeloc_cache *k)
{
    for (size_t i = 0; i < k->n; i++)
        free(k->v[i]);
    free(k->v);
    cli_codeloc_free(k->c);
    memset(k, 0, sizeof *k);
}

int cli_codeloc_is(const struct shm_meta_entry *e)
{
    return e && e->kind == D9_META_LOCATION && e->line == 0 && e->name && e->func &&
           strcmp(e->name, D9_LOC_CODE_FILE) == 0;
}
