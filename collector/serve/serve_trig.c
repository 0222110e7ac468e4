/*
 * serve_trig.c — `d9 serve`'s /api/triggers (contract in serve_trig.h).
 *
 * Called by serve_api.c. Reads the index through idx_trig_foreach_overlap only;
 * every string printed is JSON-escaped (q_text_json). A trigger's fields
 * are the index's JSON text, printed as they are only once json_object_ok
 * has checked them (the index file is not trusted to hold what the
 * collector wrote): anything else is null.
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

/* JSON (RFC 8259) syntax, one value from *p on: 1 and *p past it, or 0.
 * Nesting deeper than JSON_DEPTH_MAX is refused (the stack is bounded). */
#define JSON_DEPTH_MAX 32
static void ws(const char **p)
{
    while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
        (*p)++;
}

static int json_string(const char **p)
{
    const unsigned char *s = (const unsigned char *)*p;
    if (*s++ != '"')
        return 0;
    for (;;) {
        if (*s == '"')
            break;
        if (*s < 0x20)          /* a control byte, or the text ended */
            return 0;
        if (*s == '\\') {
            s++;
            if (*s == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!s[i] || !strchr("0123456789abcdefABCDEF", s[i]))
                        return 0;
                s += 4;
            } else if (!*s || !strchr("\"\\/bfnrt", *s)) {
                return 0;
            }
        }
        s++;
    }
    *p = (const char *)s + 1;
    return 1;
}

static int json_digits(const char **p)
{
    const char *s = *p;
    while (**p >= '0' && **p <= '9')
        (*p)++;
    return *p > s;
}

static int json_number(const char **p)
{
    if (**p == '-')
        (*p)++;
    if (**p == '0')
        (*p)++;
    else if (!json_digits(p))
        return 0;
    if (**p == '.' && ((*p)++, !json_digits(p)))
        return 0;
    if (**p == 'e' || **p == 'E') {
        (*p)++;
        if (**p == '+' || **p == '-')
            (*p)++;
        if (!json_digits(p))
            return 0;
    }
    return 1;
}

static int json_value(const char **p, int depth)
{
    ws(p);
    char open = **p;
    if (open == '"')
        return json_string(p);
    if (open == '{' || open == '[') {
        if (depth >= JSON_DEPTH_MAX)
            return 0;
        char close = open == '{' ? '}' : ']';
        (*p)++;
        ws(p);
        if (**p == close) {
            (*p)++;
            return 1;
        }
        for (;;) {
            if (open == '{') {
                ws(p);
                if (!json_string(p))
                    return 0;
                ws(p);
                if (*(*p)++ != ':')
                    return 0;
            }
            if (!json_value(p, depth + 1))
                return 0;
            ws(p);
            if (**p == close) {
                (*p)++;
                return 1;
            }
            if (*(*p)++ != ',')
                return 0;
        }
    }
    static const char *const words[] = { "true", "false", "null" };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strncmp(*p, words[i], strlen(words[i])) == 0) {
            *p += strlen(words[i]);
            return 1;
        }
    return json_number(p);
}

/* s is one JSON object and nothing else (but white space). */
static int json_object_ok(const char *s)
{
    const char *p = s;
    ws(&p);
    if (*p != '{' || !json_value(&p, 0))
        return 0;
    ws(&p);
    return *p == 0;
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
        fprintf(o, ",\"win_t0\":%" PRIu64 ",\"win_t1\":%" PRIu64, t->win_t0_ns,
                t->win_t1_ns);
    else
        fputs(",\"win_t0\":null,\"win_t1\":null", o);
    fputs(",\"fields\":", o);
    fputs(t->fields && json_object_ok(t->fields) ? t->fields : "null", o);
    fputs("}", o);
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
