/*
 * met_om.c — OpenMetrics 1.0 from the 0.0.4 text, and the Accept header's
 * choice (see met_om.h).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>
#include "collector/daemon/met_om.h"

/* ---- Accept ------------------------------------------------------------------------- */

static int is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* [s, e) without surrounding spaces */
static void trim(const char **s, const char **e)
{
    while (*s < *e && is_ows(**s))
        (*s)++;
    while (*e > *s && is_ows((*e)[-1]))
        (*e)--;
}

static int eq(const char *s, const char *e, const char *lit)
{
    size_t n = strlen(lit);
    return (size_t)(e - s) == n && strncasecmp(s, lit, n) == 0;
}

/* A q value ("0", "0.5", "1", "1.000") in thousandths; -1 if malformed. */
static int qvalue(const char *s, const char *e)
{
    if (s < e && *s == '"' && e - s >= 2 && e[-1] == '"') {
        s++;
        e--;
    }
    if (s == e || (*s != '0' && *s != '1'))
        return -1;
    int v = (*s - '0') * 1000, scale = 100;
    s++;
    if (s == e)
        return v;
    if (*s != '.')
        return -1;
    for (s++; s < e; s++, scale /= 10) {
        if (*s < '0' || *s > '9' || !scale)
            return -1;
        v += (*s - '0') * scale;
    }
    return v > 1000 ? -1 : v;
}

enum { KIND_NONE, KIND_OM, KIND_TEXT };

/* One media range [s, e): its kind and its q (thousandths). */
static int media_range(const char *s, const char *e, int *q)
{
    const char *semi = memchr(s, ';', (size_t)(e - s));
    const char *te = semi ? semi : e, *ts = s;
    trim(&ts, &te);
    int om = eq(ts, te, "application/openmetrics-text");
    int text = eq(ts, te, "text/plain") || eq(ts, te, "text/*") || eq(ts, te, "*/*");
    int version_ok = 1;
    *q = 1000;
    while (semi) {
        const char *ps = semi + 1;
        semi = memchr(ps, ';', (size_t)(e - ps));
        const char *pe = semi ? semi : e;
        const char *eqs = memchr(ps, '=', (size_t)(pe - ps));
        if (!eqs)
            continue;
        const char *ks = ps, *ke = eqs, *vs = eqs + 1, *ve = pe;
        trim(&ks, &ke);
        trim(&vs, &ve);
        if (eq(ks, ke, "q")) {
            *q = qvalue(vs, ve);
            if (*q < 0)
                return KIND_NONE;
        } else if (eq(ks, ke, "version")) {
            if (om)
                version_ok = eq(vs, ve, "1.0.0") || eq(vs, ve, "0.0.1");
            else if (eq(ts, te, "text/plain"))
                version_ok = eq(vs, ve, "0.0.4");
        }
    }
    if (!version_ok)
        return KIND_NONE;
    return om ? KIND_OM : text ? KIND_TEXT : KIND_NONE;
}

int met_om_wanted(const char *accept)
{
    if (!accept)
        return 0;
    size_t len = strnlen(accept, MET_OM_ACCEPT_MAX + 1);
    if (len > MET_OM_ACCEPT_MAX)
        return 0;
    int q_om = 0, q_text = 0;
    const char *s = accept, *end = accept + len;
    while (s < end) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        const char *e = comma ? comma : end;
        int q;
        int kind = media_range(s, e, &q);
        if (kind == KIND_OM && q > q_om)
            q_om = q;
        else if (kind == KIND_TEXT && q > q_text)
            q_text = q;
        s = comma ? comma + 1 : end;
    }
    return q_om > 0 && q_om >= q_text;
}

/* ---- the text ----------------------------------------------------------------------- */

static int ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* One line [s, e) without its newline: its first word after "# HELP " or
 * "# TYPE " in *name (length *nn), the rest in *rest. 1 if it is one. */
static int header(const char *s, const char *e, const char *kw, const char **name, size_t *nn,
                  const char **rest)
{
    size_t kl = strlen(kw);
    if ((size_t)(e - s) < kl || memcmp(s, kw, kl) != 0)
        return 0;
    const char *n = s + kl, *sp = memchr(n, ' ', (size_t)(e - n));
    if (!sp || sp == n)
        return 0;
    *name = n;
    *nn = (size_t)(sp - n);
    *rest = sp + 1;
    return 1;
}

static void family(struct met_text *out, const char *name, size_t nn, const char *type,
                   size_t tn, const char *help, size_t hn)
{
    size_t fn = nn;
    int counter = tn == 7 && memcmp(type, "counter", 7) == 0;
    if (counter && ends_with(name, nn, "_total"))
        fn -= 6;
    const char *unit = ends_with(name, fn, "_seconds") ? "seconds"
                     : ends_with(name, fn, "_bytes") ? "bytes" : NULL;
    met_text_raw(out, "# TYPE ", 7);
    met_text_raw(out, name, fn);
    met_text_raw(out, " ", 1);
    met_text_raw(out, type, tn);
    met_text_raw(out, "\n", 1);
    if (unit) {
        met_text_raw(out, "# UNIT ", 7);
        met_text_raw(out, name, fn);
        met_text_raw(out, " ", 1);
        met_text_raw(out, unit, strlen(unit));
        met_text_raw(out, "\n", 1);
    }
    if (!help)
        return;
    met_text_raw(out, "# HELP ", 7);
    met_text_raw(out, name, fn);
    met_text_raw(out, " ", 1);
    for (size_t i = 0; i < hn; i++) {     /* 0.0.4 leaves '"' alone; OpenMetrics escapes it */
        if (help[i] == '"')
            met_text_raw(out, "\\\"", 2);
        else
            met_text_raw(out, help + i, 1);
    }
    met_text_raw(out, "\n", 1);
}

int met_om_from_text(const char *in, size_t len, struct met_text *out)
{
    const char *s = in, *end = in + len;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *e = nl ? nl : end, *next = nl ? nl + 1 : end;
        const char *name, *help, *tname, *type;
        size_t nn, tnn;
        if (header(s, e, "# HELP ", &name, &nn, &help)) {
            /* its # TYPE line follows (met_text_family writes both) */
            const char *nl2 = next < end ? memchr(next, '\n', (size_t)(end - next)) : NULL;
            const char *e2 = nl2 ? nl2 : end;
            if (next < end && header(next, e2, "# TYPE ", &tname, &tnn, &type) && tnn == nn &&
                memcmp(tname, name, nn) == 0) {
                family(out, name, nn, type, (size_t)(e2 - type), help, (size_t)(e - help));
                s = nl2 ? nl2 + 1 : end;
                continue;
            }
        }
        if (header(s, e, "# TYPE ", &tname, &tnn, &type)) {    /* one without # HELP */
            family(out, tname, tnn, type, (size_t)(e - type), NULL, 0);
            s = next;
            continue;
        }
        if (e > s && *s == '#') {     /* any other comment: OpenMetrics has none */
            s = next;
            continue;
        }
        if (e > s) {
            met_text_raw(out, s, (size_t)(e - s));
            met_text_raw(out, "\n", 1);
        }
        s = next;
    }
    met_text_raw(out, "# EOF\n", 6);
    return out->oom ? -ENOMEM : 0;
}
