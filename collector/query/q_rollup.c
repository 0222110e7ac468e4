/*
 * q_rollup.c — stored rollups of a window, with the fallback to the
 * records (see q_rollup.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/query/q_rollup.h"
#include "collector/store/idx_read.h"

#define Q_ROLLUP_MAX_SEGS (1u << 24)   /* segments listed per query: far above any store */

struct seg_ref {
    uint64_t id;
    int64_t process_id;
    uint32_t pid;
    char *path;
};

struct list {
    struct seg_ref *r;
    size_t n, cap;
};

static int on_seg(void *arg, const struct idx_read_segment *s)
{
    struct list *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        if (cap > Q_ROLLUP_MAX_SEGS)
            return -E2BIG;
        struct seg_ref *n = realloc(l->r, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        l->r = n;
        l->cap = cap;
    }
    char *p = strdup(s->path ? s->path : "");
    if (!p)
        return -ENOMEM;
    l->r[l->n++] = (struct seg_ref){ s->id, s->process_id, s->pid, p };
    return 0;
}

enum each_mode {
    EACH_READ,                      /* no valid stored rollups: computed from the records */
    EACH_STORED,                    /* ... left out */
    EACH_LISTED                     /* ... handed to fn with v == NULL */
};

static int each(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to,
                int (*fn)(void *arg, const struct q_rollup_seg *r), void *arg,
                struct q_rollup_stats *st, const char *prog, enum each_mode mode)
{
    if (!s || !fn)
        return -EINVAL;
    struct q_rollup_stats local = { 0 };
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    struct list l = { 0 };
    int rc = q_store_segments(s, pid, from, to, on_seg, &l);
    for (size_t i = 0; rc >= 0 && i < l.n; i++) {
        const struct seg_ref *g = &l.r[i];
        uint8_t *buf = NULL;
        size_t len = 0;
        char why[160] = "";
        struct rollup_view v;
        int from_records = 0;
        int e = idx_read_rollup(q_store_idx(s), g->id, &buf, &len);
        if (e == 1 && rollup_decode(buf, len, &v, why, sizeof why) == 0) {
            /* checked: answered from the stored rollups */
        } else if (mode != EACH_READ) {
            st->not_stored++;
            free(buf);
            if (mode == EACH_STORED)
                continue;
            if (e == 0)
                snprintf(why, sizeof why, "no rollups");
            else if (e < 0)
                snprintf(why, sizeof why, "rollups unreadable: %s", strerror(-e));
            struct q_rollup_seg r = { g->id, g->process_id, g->pid, NULL, 0, g->path, why };
            rc = fn(arg, &r);
            continue;
        } else {
            if (e == 0)
                snprintf(why, sizeof why, "no rollups");
            else if (e < 0)
                snprintf(why, sizeof why, "rollups unreadable: %s", strerror(-e));
            free(buf);
            buf = NULL;
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/%s", q_store_dir(s), g->path);
            struct q_skip_note note = { prog ? prog : "d9", q_store_dir(s), g->path };
            e = rollup_file_only(path, NULL, 0, q_store_skip_note, &note, &buf, &len);
            if (e == 0)
                e = rollup_decode(buf, len, &v, NULL, 0) == 0 ? 0 : -EBADMSG;
            if (e < 0) {
                fprintf(stderr, "%s: segment %s: %s, and its records cannot be read (%s): "
                        "left out\n", prog ? prog : "d9", g->path, why, strerror(-e));
                st->missing++;
                free(buf);
                continue;
            }
            fprintf(stderr, "%s: segment %s: %s: answered from its records (d9 fsck --repair "
                    "rebuilds them)\n", prog ? prog : "d9", g->path, why);
            from_records = 1;
            st->from_records++;
        }
        st->segments++;
        struct q_rollup_seg r = { g->id, g->process_id, g->pid, &v, from_records, g->path, why };
        rc = fn(arg, &r);
        free(buf);
    }
    for (size_t i = 0; i < l.n; i++)
        free(l.r[i].path);
    free(l.r);
    return rc < 0 ? rc : 0;
}

int q_rollup_each(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to,
                  int (*fn)(void *arg, const struct q_rollup_seg *r), void *arg,
                  struct q_rollup_stats *st, const char *prog)
{
    return each(s, pid, from, to, fn, arg, st, prog, EACH_READ);
}

int q_rollup_each_stored(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to,
                         int (*fn)(void *arg, const struct q_rollup_seg *r), void *arg,
                         struct q_rollup_stats *st)
{
    return each(s, pid, from, to, fn, arg, st, NULL, EACH_STORED);
}

int q_rollup_each_listed(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to,
                         int (*fn)(void *arg, const struct q_rollup_seg *r), void *arg,
                         struct q_rollup_stats *st)
{
    return each(s, pid, from, to, fn, arg, st, NULL, EACH_LISTED);
}
