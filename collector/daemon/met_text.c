/*
 * met_text.c — Prometheus text exposition writer (see met_text.h).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/daemon/met_text.h"

#define MET_TEXT_INITIAL 4096u
#define NS_PER_S 1000000000ull

void met_text_init(struct met_text *t)
{
    memset(t, 0, sizeof *t);
}

void met_text_free(struct met_text *t)
{
    free(t->buf);
    memset(t, 0, sizeof *t);
}

void met_text_reset(struct met_text *t)
{
    t->len = 0;
    t->oom = 0;
    if (t->buf)
        t->buf[0] = 0;
}

/* Room for n more bytes and a terminating NUL. 0 or -1 (oom set). */
static int grow(struct met_text *t, size_t n)
{
    if (t->oom)
        return -1;
    if (t->len + n + 1 <= t->cap)
        return 0;
    size_t nc = t->cap ? t->cap : MET_TEXT_INITIAL;
    while (nc < t->len + n + 1)
        nc *= 2;
    char *b = realloc(t->buf, nc);
    if (!b) {
        t->oom = 1;
        return -1;
    }
    t->buf = b;
    t->cap = nc;
    return 0;
}

static void put(struct met_text *t, const char *s, size_t n)
{
    if (grow(t, n))
        return;
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = 0;
}

void met_text_raw(struct met_text *t, const char *s, size_t n)
{
    put(t, s, n);
}

static void puts_(struct met_text *t, const char *s)
{
    put(t, s, strlen(s));
}

__attribute__((format(printf, 2, 3)))
static void putf(struct met_text *t, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        put(t, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A label value: printable ASCII kept (\\, \" and \n escaped), any other
 * byte '_', at most MET_TEXT_LABEL_MAX bytes. */
static void put_value(struct met_text *t, const char *v)
{
    put(t, "\"", 1);
    for (size_t i = 0; v[i] && i < MET_TEXT_LABEL_MAX; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c == '\\')
            put(t, "\\\\", 2);
        else if (c == '"')
            put(t, "\\\"", 2);
        else if (c == '\n')
            put(t, "\\n", 2);
        else if (c < 0x20 || c >= 0x7f)
            put(t, "_", 1);
        else
            put(t, (const char *)&c, 1);
    }
    put(t, "\"", 1);
}

/* name{l...[,le="..."]} */
static void put_series(struct met_text *t, const char *name, const char *suffix,
                       const struct met_text_label *l, size_t nl, const char *le)
{
    puts_(t, name);
    if (suffix)
        puts_(t, suffix);
    if (!nl && !le)
        return;
    put(t, "{", 1);
    for (size_t i = 0; i < nl; i++) {
        if (i)
            put(t, ",", 1);
        puts_(t, l[i].name);
        put(t, "=", 1);
        put_value(t, l[i].value ? l[i].value : "");
    }
    if (le) {
        if (nl)
            put(t, ",", 1);
        puts_(t, "le=");
        put_value(t, le);
    }
    put(t, "}", 1);
}

/* ns as seconds, exactly: "S" or "S.FFFFFFFFF" without trailing zeros */
static int fmt_ns(char *out, size_t cap, uint64_t ns)
{
    uint64_t s = ns / NS_PER_S, f = ns % NS_PER_S;
    if (!f)
        return snprintf(out, cap, "%" PRIu64, s);
    char frac[16];
    snprintf(frac, sizeof frac, "%09" PRIu64, f);
    size_t n = strlen(frac);
    while (n > 1 && frac[n - 1] == '0')
        frac[--n] = 0;
    return snprintf(out, cap, "%" PRIu64 ".%s", s, frac);
}

void met_text_family(struct met_text *t, const char *name, const char *type, const char *help)
{
    puts_(t, "# HELP ");
    puts_(t, name);
    put(t, " ", 1);
    puts_(t, help);
    puts_(t, "\n# TYPE ");
    puts_(t, name);
    put(t, " ", 1);
    puts_(t, type);
    put(t, "\n", 1);
}

void met_text_u64(struct met_text *t, const char *name, const struct met_text_label *l, size_t nl,
                  uint64_t v)
{
    put_series(t, name, NULL, l, nl, NULL);
    putf(t, " %" PRIu64 "\n", v);
}

void met_text_ns(struct met_text *t, const char *name, const struct met_text_label *l, size_t nl,
                 uint64_t ns)
{
    char v[48];
    fmt_ns(v, sizeof v, ns);
    put_series(t, name, NULL, l, nl, NULL);
    putf(t, " %s\n", v);
}

void met_text_hist_ns(struct met_text *t, const char *name, const struct met_text_label *l,
                      size_t nl, const uint64_t *bounds_ns, const uint64_t *counts, size_t nb,
                      uint64_t sum_ns)
{
    uint64_t cum = 0;
    char le[48];
    for (size_t i = 0; i < nb; i++) {
        cum += counts[i];
        fmt_ns(le, sizeof le, bounds_ns[i]);
        put_series(t, name, "_bucket", l, nl, le);
        putf(t, " %" PRIu64 "\n", cum);
    }
    cum += counts[nb];
    put_series(t, name, "_bucket", l, nl, "+Inf");
    putf(t, " %" PRIu64 "\n", cum);
    fmt_ns(le, sizeof le, sum_ns);
    put_series(t, name, "_sum", l, nl, NULL);
    putf(t, " %s\n", le);
    put_series(t, name, "_count", l, nl, NULL);
    putf(t, " %" PRIu64 "\n", cum);
}

void met_text_summary_ns(struct met_text *t, const char *name, const struct met_text_label *l,
                         size_t nl, uint64_t count, uint64_t sum_ns)
{
    char v[48];
    fmt_ns(v, sizeof v, sum_ns);
    put_series(t, name, "_sum", l, nl, NULL);
    putf(t, " %s\n", v);
    put_series(t, name, "_count", l, nl, NULL);
    putf(t, " %" PRIu64 "\n", count);
}
