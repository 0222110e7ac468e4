/*
 * serve_trig.c — `d9 serve`'s /api/triggers (contract in serve_trig.h).
 *
 * Called by serve_api.c. Reads the index through idx_trig_foreach_overlap only;
 * every string printed is JSON-escaped (q_text_json).
 */
#include "collector/serve/serve_trig.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/query/q_store.h"
#include "collector/query/q_text.h"
#include "collector/serve/serve_api.h"
#include "collector/store/idx_trig.h"

struct trig_out {
    FILE *out;
    size_t n, limit;
};

static void str_or_empty(FILE *o, const char *s)
{
    if (!s)
        s = "";
    q_text_json(o, s, strlen(s));
}

static int trig_row(void *arg, const struct idx_trigger *t)
{
    struct trig_out *c = arg;
    if (c->n++ >= c->limit)
        return 0;                       /* counted, not listed */
    FILE *o = c->out;
    fprintf(o, "%s{\"id\":%" PRId64 ",\"pid\":%" PRIu32 ",\"t\":%" PRIu64 ",\"source\":",
            c->n > 1 ? ",\n" : "\n", t->id, t->pid, t->t_ns);
    str_or_empty(o, t->source);
    fputs(",\"reason\":", o);
    str_or_empty(o, t->reason);
    fputs(",\"verdict\":", o);
    str_or_empty(o, t->verdict);
    if (t->win_t0_ns || t->win_t1_ns)
        fprintf(o, ",\"win_t0\":%" PRIu64 ",\"win_t1\":%" PRIu64 "}", t->win_t0_ns,
                t->win_t1_ns);
    else
        fputs(",\"win_t0\":null,\"win_t1\":null}", o);
    return 0;
}

static int trig_error(FILE *out, int status, const char *msg)
{
    fputs("{\"error\":", out);
    q_text_json(out, msg, strlen(msg));
    fputs("}\n", out);
    return status;
}

int serve_trig_api(struct q_store *s, const struct serve_params *p, FILE *out)
{
    uint64_t from = p->has_from ? p->from : 0, to = p->has_to ? p->to : UINT64_MAX;
    if (from > to)
        return trig_error(out, 400, "reversed window (from > to)");
    uint32_t pid = p->has_pid ? p->pid : 0;
    struct trig_out c = { .limit = p->limit ? p->limit : SERVE_API_MAX_ITEMS };
    if (c.limit > SERVE_API_MAX_ITEMS)
        c.limit = SERVE_API_MAX_ITEMS;
    /* rows go to a buffer first: a failed read answers a clean 500 */
    char *buf = NULL;
    size_t len = 0;
    c.out = open_memstream(&buf, &len);
    if (!c.out)
        return trig_error(out, 500, "out of memory");
    /* by overlap: a window reaching into the view from a trigger outside it */
    int r = idx_trig_foreach_overlap(q_store_idx(s), pid, from, to, trig_row, &c);
    if (fclose(c.out) != 0 || r < 0) {
        free(buf);
        return trig_error(out, 500, "cannot read the index's triggers");
    }
    fprintf(out, "{\"pid\":%" PRIu32 ",\"from\":%" PRIu64 ",\"to\":%" PRIu64
            ",\"total\":%zu,\"triggers\":[", pid, from, to, c.n);
    fwrite(buf, 1, len, out);
    fputs("\n]}\n", out);
    free(buf);
    return 200;
}
