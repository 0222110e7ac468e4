/*
 * sql_custom.c — the custom-event tables (see sql_custom.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/sql/sql_custom.h"
#include "collector/sql/sql_list.h"
#include "collector/store/seg.h"

static bool builtin_name(const char *n, const char *const *builtin, size_t nbuiltin)
{
    for (size_t i = 0; i < nbuiltin; i++)
        if (strcmp(builtin[i], n) == 0)
            return true;
    return false;
}

static int event_add_schema(struct sql_vtab *v, const struct shm_meta_entry *e, uint32_t pid,
                            const char *const *builtin, size_t nbuiltin)
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
        ev->table = builtin_name(e->name, builtin, nbuiltin) ? NULL : strdup(e->name);
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
                     strcmp(fn, "ts_ns") == 0 || strcmp(fn, "task") == 0;
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

int sql_custom_discover(struct sql_vtab *v, const char *const *builtin, size_t nbuiltin)
{
    struct sql_list_procs l;
    int rc = sql_list_procs(v->s, 0, &l);
    for (size_t i = 0; rc >= 0 && i < l.n; i++)
        for (uint32_t id = 1; rc >= 0 && id <= SEG_META_IDS_MAX; id++) {
            const struct shm_meta_entry *e = q_names_meta(v->names, l.id[i], D9_META_SCHEMA, id);
            /* the collector's own events (d9.map) are no table of the program's */
            if (e && e->name && *e->name &&
                strncmp(e->name, Q_DECODE_INTERNAL, strlen(Q_DECODE_INTERNAL)) != 0)
                rc = event_add_schema(v, e, l.pid[i], builtin, nbuiltin);
        }
    sql_list_procs_free(&l);
    return rc < 0 ? rc : 0;
}

void sql_custom_free(struct sql_vtab *v)
{
    for (size_t i = 0; i < v->nev; i++) {
        free(v->ev[i].table);
        free(v->ev[i].event);
        for (unsigned j = 0; j < v->ev[i].nfields; j++) {
            free(v->ev[i].fields[j]);
            free(v->ev[i].colnames[j]);
        }
    }
    free(v->ev);
    v->ev = NULL;
    v->nev = 0;
}
