/*
 * cli_evtrig.c — non-marker triggers as `d9 events` rows (contract in
 * cli_evtrig.h).
 *
 * Called by cli_events.c. Strings from the index are copied (the index's
 * are valid only inside its callback) and printed escaped by q_decode's
 * printers.
 */
#include "collector/cli/cli_evtrig.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/query/q_decode.h"
#include "collector/query/q_store.h"
#include "collector/store/idx_trig.h"
#include "shm/d9_abi.h"

struct cli_evtrig_row {
    uint64_t t;
    uint32_t pid, uid;
    char *source, *reason, *verdict, *comm;
};

struct load_ctx {
    struct cli_evtrig *e;
    size_t cap;
    int err;
};

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

static int on_trig(void *arg, const struct idx_trigger *t)
{
    struct load_ctx *c = arg;
    struct cli_evtrig *e = c->e;
    if (t->source && strcmp(t->source, "marker") == 0)
        return 0;                       /* its ring record is the row */
    if (e->n >= CLI_EVTRIG_MAX) {
        e->dropped++;
        return 0;
    }
    if (e->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        struct cli_evtrig_row *v = realloc(e->rows, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        e->rows = v;
        c->cap = cap;
    }
    struct cli_evtrig_row *r = &e->rows[e->n];
    *r = (struct cli_evtrig_row){ .t = t->t_ns, .pid = t->pid };
    r->source = dup_or_empty(t->source);
    r->reason = dup_or_empty(t->reason);
    r->verdict = dup_or_empty(t->verdict);
    e->n++;
    if (!r->source || !r->reason || !r->verdict)
        return -ENOMEM;
    return 0;
}

struct proc_ctx {
    struct cli_evtrig_row *r;
};

static int on_proc(void *arg, const struct idx_read_process *p)
{
    struct proc_ctx *c = arg;
    c->r->uid = p->uid;
    free(c->r->comm);
    c->r->comm = strdup(p->comm);
    return 1;                           /* the first (earliest) is enough */
}

int cli_evtrig_load(struct cli_evtrig *e, struct q_store *s, uint32_t pid, uint64_t from,
                    uint64_t to)
{
    struct load_ctx c = { .e = e };
    int r = idx_trig_foreach(q_store_idx(s), pid, from, to, on_trig, &c);
    for (size_t i = 0; r >= 0 && i < e->n; i++) {  /* the owner and name of each process */
        struct proc_ctx pc = { &e->rows[i] };
        if (q_store_processes(s, e->rows[i].pid, e->rows[i].t, e->rows[i].t, on_proc, &pc) < 0)
            r = -EIO;
    }
    if (r < 0)
        cli_evtrig_free(e);             /* none rather than half-made rows */
    return r < 0 ? r : 0;
}

static void print_row(const struct cli_evtrig *e, FILE *out, const struct cli_evtrig_row *r)
{
    struct q_decoded d;
    memset(&d, 0, sizeof d);
    d.type = D9_REC_CUSTOM;
    d.type_name = "custom";
    d.ts = r->t;
    d.event = "d9_trigger";
    const char *name[3] = { "reason", "source", "verdict" };
    const char *val[3] = { r->reason, r->source, r->verdict };
    for (unsigned i = 0; i < 3; i++)
        d.f[i] = (struct q_field){ .name = name[i], .type = Q_V_STR, .s = val[i],
                                   .slen = strlen(val[i]) };
    d.nfields = 3;
    d.first_custom = 0;
    struct q_line_ctx lc = {
        .pid = r->pid, .tid = 0, .uid = r->uid, .show_uid = true, .comm = r->comm,
        .thread = NULL, .boot_realtime_ns = e->boot, .have_wall = e->wall,
    };
    if (e->jsonl)
        q_decode_print_json(out, &lc, &d);
    else
        q_decode_print_text(out, &lc, &d);
}

uint64_t cli_evtrig_flush(struct cli_evtrig *e, FILE *out, uint64_t ts, uint64_t max)
{
    uint64_t k = 0;
    while (e->next < e->n && e->rows[e->next].t <= ts && (max == 0 || k < max)) {
        print_row(e, out, &e->rows[e->next++]);
        k++;
    }
    return k;
}

void cli_evtrig_free(struct cli_evtrig *e)
{
    for (size_t i = 0; i < e->n; i++) {
        free(e->rows[i].source);
        free(e->rows[i].reason);
        free(e->rows[i].verdict);
        free(e->rows[i].comm);
    }
    free(e->rows);
    e->rows = NULL;
    e->n = e->next = 0;
}
