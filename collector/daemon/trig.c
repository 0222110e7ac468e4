/*
 * trig.c — triggers and kept windows (see trig.h): debounce, rate limit,
 * merge of windows, the flight recorder's drop test, and the trigger
 * configuration keys. Pure logic: the caller passes every time.
 */
#include "collector/daemon/trig.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS_NS 1000000ull
#define MINUTE_NS (60ull * 1000000000ull)

void trig_cfg_default(struct trig_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->retain = TRIG_RETAIN_ALL;
    c->lookback_ms = TRIG_LOOKBACK_MS_DEFAULT;
    c->lookforward_ms = TRIG_LOOKFORWARD_MS_DEFAULT;
    c->debounce_ms = TRIG_DEBOUNCE_MS_DEFAULT;
    c->rate_per_min = TRIG_RATE_PER_MIN_DEFAULT;
}

static int trig_err(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
    if (err && errlen)
        snprintf(err, errlen, fmt, a, b);
    return -EINVAL;
}

/* A decimal in [lo, hi], the whole string. */
static int trig_num(const char *v, uint32_t lo, uint32_t hi, uint32_t *out)
{
    if (!v || *v < '0' || *v > '9')
        return -EINVAL;
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || !end || *end || x < lo || x > hi)
        return -EINVAL;
    *out = (uint32_t)x;
    return 0;
}

static const char *const op_names[] = { ">", ">=", "<", "<=" };

const char *trig_op_name(int op)
{
    return op >= 0 && op < (int)(sizeof op_names / sizeof op_names[0]) ? op_names[op] : "?";
}

int trig_field_match(const struct trig_field *f, double x)
{
    switch (f->op) {
    case TRIG_OP_GT: return x > f->value;
    case TRIG_OP_GE: return x >= f->value;
    case TRIG_OP_LT: return x < f->value;
    case TRIG_OP_LE: return x <= f->value;
    }
    return 0;
}

static int name_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '-' || ch == '.';
}

#define FIELD_SYNTAX "expected SCHEMA.FIELD>N (or >=, <, <=; N a number)"

/* "SCHEMA.FIELD OP N" into f; -EINVAL with the reason in err. */
static int field_parse(const char *v, struct trig_field *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    size_t n = 0;
    while (name_char(v[n]))
        n++;
    const char *dot = NULL;
    for (size_t i = 0; i < n; i++)
        if (v[i] == '.')
            dot = v + i;
    if (!dot || dot == v || (size_t)(dot - v) + 1 == n)
        return trig_err(err, errlen, "trigger-field: '%.64s': " FIELD_SYNTAX "%s", v, "");
    size_t sl = (size_t)(dot - v), fl = n - sl - 1;
    if (sl >= TRIG_FIELD_NAME_MAX || fl >= TRIG_FIELD_NAME_MAX)
        return trig_err(err, errlen, "trigger-field: '%.64s': a name longer than 63 bytes%s", v,
                        "");
    memcpy(f->schema, v, sl);
    memcpy(f->field, dot + 1, fl);
    const char *p = v + n;
    while (*p == ' ')
        p++;
    if (p[0] == '>' || p[0] == '<') {
        f->op = p[0] == '>' ? TRIG_OP_GT : TRIG_OP_LT;
        p++;
        if (*p == '=') {
            f->op = f->op == TRIG_OP_GT ? TRIG_OP_GE : TRIG_OP_LE;
            p++;
        }
    } else {
        return trig_err(err, errlen, "trigger-field: '%.64s': " FIELD_SYNTAX "%s", v, "");
    }
    while (*p == ' ')
        p++;
    char *end = NULL;
    errno = 0;
    double x = *p && *p != ' ' ? strtod(p, &end) : NAN;
    if (!end || end == p || *end || errno || !isfinite(x) ||
        !((*p >= '0' && *p <= '9') || *p == '-' || *p == '+' || *p == '.'))
        return trig_err(err, errlen, "trigger-field: '%.64s': " FIELD_SYNTAX "%s", v, "");
    f->value = x;
    snprintf(f->text, sizeof f->text, "%s.%s%s%s", f->schema, f->field, trig_op_name(f->op), p);
    return 0;
}

int trig_cfg_set(struct trig_cfg *c, const char *key, const char *value, char *err, size_t errlen)
{
    static const struct {
        const char *key;
        size_t off;
        uint32_t lo, hi;
    } nums[] = {
        { "trigger-lookback-ms", offsetof(struct trig_cfg, lookback_ms), 1, TRIG_WINDOW_MAX_MS },
        { "trigger-lookforward-ms", offsetof(struct trig_cfg, lookforward_ms), 0, TRIG_WINDOW_MAX_MS },
        { "trigger-debounce-ms", offsetof(struct trig_cfg, debounce_ms), 0, TRIG_WINDOW_MAX_MS },
        { "trigger-rate", offsetof(struct trig_cfg, rate_per_min), 1, TRIG_RATE_MAX },
        { "trigger-poll-ms", offsetof(struct trig_cfg, poll_ms), 0, TRIG_WINDOW_MAX_MS },
        { "trigger-sched-ms", offsetof(struct trig_cfg, sched_ms), 0, TRIG_WINDOW_MAX_MS },
    };
    if (!key || !value)
        return trig_err(err, errlen, "trigger config: missing key or value%s%s", "", "");
    if (strcmp(key, "retain") == 0) {
        if (strcmp(value, "all") == 0)
            c->retain = TRIG_RETAIN_ALL;
        else if (strcmp(value, "triggered") == 0)
            c->retain = TRIG_RETAIN_TRIGGERED;
        else
            return trig_err(err, errlen, "retain: '%s' is not all or triggered%s", value, "");
        return 0;
    }
    if (strcmp(key, "trigger-field") == 0) {
        if (!*value) {
            c->nfield = 0;
            return 0;
        }
        struct trig_field f;
        int rc = field_parse(value, &f, err, errlen);
        if (rc)
            return rc;
        if (c->nfield >= TRIG_FIELD_MAX) {
            if (err && errlen)
                snprintf(err, errlen, "trigger-field: at most %u rules", TRIG_FIELD_MAX);
            return -EINVAL;
        }
        c->field[c->nfield++] = f;
        return 0;
    }
    if (strcmp(key, "trigger-crash") == 0 || strcmp(key, "trigger-lost") == 0) {
        int *flag = strcmp(key, "trigger-crash") == 0 ? &c->crash : &c->lost;
        if (strcmp(value, "1") == 0 || strcmp(value, "yes") == 0 || strcmp(value, "true") == 0)
            *flag = 1;
        else if (strcmp(value, "0") == 0 || strcmp(value, "no") == 0 || strcmp(value, "false") == 0)
            *flag = 0;
        else
            return trig_err(err, errlen, "%s: '%.64s' is not yes or no", key, value);
        return 0;
    }
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        if (strcmp(key, nums[i].key) != 0)
            continue;
        uint32_t x;
        if (trig_num(value, nums[i].lo, nums[i].hi, &x) != 0) {
            char range[48];
            snprintf(range, sizeof range, "%u..%u", (unsigned)nums[i].lo, (unsigned)nums[i].hi);
            if (err && errlen)
                snprintf(err, errlen, "%s: '%.64s' is not a number in %s", key, value, range);
            return -EINVAL;
        }
        memcpy((char *)c + nums[i].off, &x, sizeof x);
        return 0;
    }
    return trig_err(err, errlen, "unknown trigger key '%.64s'%s (known: retain, trigger-lookback-ms, "
                    "trigger-lookforward-ms, trigger-debounce-ms, trigger-rate, trigger-poll-ms, "
                    "trigger-crash, trigger-sched-ms, trigger-lost, trigger-field)", key, "");
}

int trig_cfg_check(const struct trig_cfg *c, char *err, size_t errlen)
{
    if (c->retain != TRIG_RETAIN_ALL && c->retain != TRIG_RETAIN_TRIGGERED)
        return trig_err(err, errlen, "retain: bad mode%s%s", "", "");
    if (c->lookback_ms == 0 || c->lookback_ms > TRIG_WINDOW_MAX_MS ||
        c->lookforward_ms > TRIG_WINDOW_MAX_MS)
        return trig_err(err, errlen, "trigger window: lookback must be 1 ms..1 h and lookforward "
                        "0..1 h%s%s", "", "");
    if (c->debounce_ms > TRIG_WINDOW_MAX_MS || c->poll_ms > TRIG_WINDOW_MAX_MS ||
        c->sched_ms > TRIG_WINDOW_MAX_MS)
        return trig_err(err, errlen, "trigger debounce, poll and sched thresholds must be at most "
                        "1 h%s%s",
                        "", "");
    if (c->nfield > TRIG_FIELD_MAX)
        return trig_err(err, errlen, "trigger-field: too many rules%s%s", "", "");
    for (uint32_t i = 0; i < c->nfield; i++)
        if (!c->field[i].schema[0] || !c->field[i].field[0] || !isfinite(c->field[i].value) ||
            c->field[i].op < TRIG_OP_GT || c->field[i].op > TRIG_OP_LE)
            return trig_err(err, errlen, "trigger-field: a bad rule%s%s", "", "");
    if (c->rate_per_min == 0 || c->rate_per_min > TRIG_RATE_MAX)
        return trig_err(err, errlen, "trigger-rate must be 1..6000 a minute%s%s", "", "");
    return 0;
}

void trig_init(struct trig_state *s, const struct trig_cfg *c)
{
    memset(s, 0, sizeof *s);
    s->cfg = *c;
}

static uint64_t trig_sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

static uint64_t trig_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* Inserts [t0, t1] keeping the windows sorted and disjoint; returns 1 when
 * it merged with at least one kept window. */
static int trig_insert(struct trig_state *s, struct trig_win w)
{
    unsigned i = 0;
    while (i < s->nwin && s->win[i].t1_ns < w.t0_ns)
        i++;
    unsigned j = i;  /* windows [i, j) overlap or touch w */
    while (j < s->nwin && s->win[j].t0_ns <= w.t1_ns) {
        if (s->win[j].t0_ns < w.t0_ns)
            w.t0_ns = s->win[j].t0_ns;
        if (s->win[j].t1_ns > w.t1_ns)
            w.t1_ns = s->win[j].t1_ns;
        if (s->win[j].trig_ns < w.trig_ns) {
            w.trig_ns = s->win[j].trig_ns;
            w.pid = s->win[j].pid;
        }
        w.ntrig += s->win[j].ntrig;
        j++;
    }
    int merged = j > i;
    if (!merged && s->nwin == TRIG_WIN_MAX) {
        /* full: forget the oldest */
        memmove(&s->win[0], &s->win[1], (s->nwin - 1) * sizeof s->win[0]);
        s->nwin--;
        s->forgotten++;
        if (i > 0)
            i--;
        j = i;
    }
    /* replace [i, j) by w */
    unsigned tail = s->nwin - j;
    memmove(&s->win[i + 1], &s->win[j], tail * sizeof s->win[0]);
    s->win[i] = w;
    s->nwin = i + 1 + tail;
    return merged;
}

int trig_fire(struct trig_state *s, uint32_t pid, uint64_t t_ns)
{
    unsigned b = pid % 16u;
    uint64_t deb = (uint64_t)s->cfg.debounce_ms * MS_NS;
    if (s->last_ns[b] && s->last_pid[b] == pid && t_ns >= s->last_ns[b] &&
        t_ns - s->last_ns[b] < deb) {
        s->debounced++;
        return TRIG_DEBOUNCED;
    }
    /* rate: count accepted triggers within the minute before t */
    unsigned in_minute = 0;
    for (unsigned k = 0; k < s->rate_n; k++) {
        uint64_t r = s->rate_t[(s->rate_head + TRIG_RATE_SLOTS - 1 - k) % TRIG_RATE_SLOTS];
        if (t_ns >= r && t_ns - r < MINUTE_NS)
            in_minute++;
    }
    uint32_t cap = s->cfg.rate_per_min < TRIG_RATE_SLOTS ? s->cfg.rate_per_min : TRIG_RATE_SLOTS;
    if (in_minute >= cap) {
        s->rate_limited++;
        return TRIG_RATE_LIMITED;
    }
    s->rate_t[s->rate_head] = t_ns;
    s->rate_head = (s->rate_head + 1) % TRIG_RATE_SLOTS;
    if (s->rate_n < TRIG_RATE_SLOTS)
        s->rate_n++;
    s->last_ns[b] = t_ns;
    s->last_pid[b] = pid;
    s->fired++;
    struct trig_win w = {
        .t0_ns = trig_sub(t_ns, (uint64_t)s->cfg.lookback_ms * MS_NS),
        .t1_ns = trig_add(t_ns, (uint64_t)s->cfg.lookforward_ms * MS_NS),
        .trig_ns = t_ns, .pid = pid, .ntrig = 1,
    };
    return trig_insert(s, w) ? TRIG_MERGED : TRIG_KEPT;
}

int trig_kept(const struct trig_state *s, uint64_t t0_ns, uint64_t t1_ns)
{
    for (unsigned i = 0; i < s->nwin; i++)
        if (s->win[i].t0_ns <= t1_ns && t0_ns <= s->win[i].t1_ns)
            return 1;
    return 0;
}

int trig_droppable(const struct trig_state *s, uint64_t t0_ns, uint64_t t1_ns, uint64_t now_ns)
{
    if (s->cfg.retain != TRIG_RETAIN_TRIGGERED)
        return 0;
    /* a trigger at or after now keeps back to now - lookback */
    if (trig_add(t1_ns, (uint64_t)s->cfg.lookback_ms * MS_NS) >= now_ns)
        return 0;
    return !trig_kept(s, t0_ns, t1_ns);
}

unsigned trig_expire(struct trig_state *s, uint64_t before_ns)
{
    unsigned n = 0;
    while (n < s->nwin && s->win[n].t1_ns < before_ns)
        n++;
    if (n) {
        memmove(&s->win[0], &s->win[n], (s->nwin - n) * sizeof s->win[0]);
        s->nwin -= n;
    }
    return n;
}
