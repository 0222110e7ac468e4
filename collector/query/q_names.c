/*
 * q_names.c — names of a process's ids after a scan (see q_names.h).
 *
 * One entry per process asked about: the reader of its newest segment whose
 * metadata loads, and its code locations' namer (loaded at the first code
 * location). Paths from the index are untrusted: one that leaves the store
 * is skipped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/query/q_loc.h"
#include "collector/query/q_names.h"
#include "collector/store/idx_read.h"
#include "collector/store/seg_reader.h"

struct names_proc {
    int64_t process_id;
    struct seg_reader *r;           /* NULL when no segment could be opened */
    struct q_loc *code;       /* its map records, loaded at the first code location */
    int code_tried;
};

struct q_names {
    struct q_store *s;
    struct names_proc *p;
    size_t n, cap;
};

int q_names_open(struct q_store *s, struct q_names **out)
{
    struct q_names *n = calloc(1, sizeof *n);
    if (!n)
        return -ENOMEM;
    n->s = s;
    *out = n;
    return 0;
}

void q_names_close(struct q_names *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++) {
        if (n->p[i].r)
            seg_reader_close(n->p[i].r);
        q_loc_free(n->p[i].code);
    }
    free(n->p);
    free(n);
}

struct names_open {
    struct q_names *n;
    struct names_proc *e;
};

#define NAMES_META_MAX 64u          /* META blocks of a segment read by offset */

struct names_meta {
    uint64_t off[NAMES_META_MAX];
    size_t n;
    int over;                       /* more than NAMES_META_MAX: every header is read */
};

static int names_meta_off(void *arg, uint64_t offset)
{
    struct names_meta *m = arg;
    if (m->n == NAMES_META_MAX) {
        m->over = 1;
        return 1;
    }
    m->off[m->n++] = offset;
    return 0;
}

/* Open one segment of the process for its metadata; 1 (stop) once one
 * opened. Its META blocks are read where the index lists them; without a
 * list, or when one does not check, every block's header (the reader's
 * walk, which names what is wrong). */
static int names_try(void *arg, const char *rel)
{
    struct names_open *no = arg;
    char path[2 * Q_PATH_MAX];
    if (rel[0] == '/' || strstr(rel, ".."))
        return 0;
    snprintf(path, sizeof path, "%s/%s", q_store_dir(no->n->s), rel);
    struct seg_reader *r;
    if (seg_reader_open(&r, path, 0) < 0)
        return 0;
    struct names_meta m = { .n = 0 };
    int e = idx_read_segment_meta(q_store_idx(no->n->s), rel, names_meta_off, &m);
    if (e > 0 && !m.over) {
        if (seg_reader_load_meta_at(r, m.off, m.n) == 0) {
            no->e->r = r;
            return 1;
        }
        seg_reader_close(r);        /* its metadata may be half loaded: a new reader */
        if (seg_reader_open(&r, path, 0) < 0)
            return 0;
    }
    if (seg_reader_load_meta(r) < 0) {
        seg_reader_close(r);
        return 0;
    }
    no->e->r = r;
    return 1;
}

static struct seg_reader *names_reader(struct q_names *n, int64_t process_id)
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
    if (idx_read_process_segments(q_store_idx(n->s), process_id, names_try, &no) < 0 && !e->r)
        q_store_index_warn(n->s, "names left unresolved");
    return e->r;
}

const char *q_names_location(struct q_names *n, int64_t process_id, uint32_t loc,
                                     char *buf, size_t cap)
{
    struct seg_reader *r = loc ? names_reader(n, process_id) : NULL;
    const struct shm_meta_entry *e = r ? seg_reader_location(r, loc) : NULL;
    if (q_loc_is_code(e)) {
        struct names_proc *p = NULL;
        for (size_t i = 0; i < n->n && !p; i++)
            if (n->p[i].process_id == process_id)
                p = &n->p[i];
        if (p && !p->code_tried) {
            p->code_tried = 1;
            p->code = q_loc_of_process(n->s, process_id);
        }
        char where[Q_LOC_NAME_MAX], what[Q_LOC_NAME_MAX];
        q_loc_code(p ? p->code : NULL, e, where, sizeof where, what, sizeof what);
        struct shm_meta_entry named = *e;
        named.name = where;
        named.func = what;
        return q_loc_text(&named, loc, buf, cap);
    }
    return q_loc_text(e, loc, buf, cap);
}

int q_names_objects(struct q_names *n, int64_t process_id,
                            int (*fn)(void *arg, const struct shm_meta_entry *e), void *arg)
{
    return seg_reader_each_object(names_reader(n, process_id), fn, arg);
}

int q_names_locations(struct q_names *n, int64_t process_id,
                      int (*fn)(void *arg, const struct shm_meta_entry *e), void *arg)
{
    return seg_reader_each_location(names_reader(n, process_id), fn, arg);
}

const struct shm_meta_entry *q_names_meta(struct q_names *n, int64_t process_id,
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

const char *q_names_runtime(struct q_names *n, int64_t process_id, uint16_t rt, char *buf,
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

const char *q_names_thread(struct q_names *n, int64_t process_id, uint32_t ring,
                             uint32_t generation, char *buf, size_t cap)
{
    idx_read_thread_name(q_store_idx(n->s), process_id, ring, generation, buf, cap);
    return buf;
}

const char *q_names_comm(struct q_names *n, int64_t process_id, char *buf, size_t cap)
{
    idx_read_process_comm(q_store_idx(n->s), process_id, buf, cap);
    return buf;
}

