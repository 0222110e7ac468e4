/*
 * s3_key.c — object keys and manifests of shipped segments (see s3_key.h).
 * The JSON parser takes exactly what the writer makes: one object of
 * "key": "string" | unsigned-integer pairs, strings with the escapes \" \\
 * \/ \b \f \n \r \t and \u00XX, and the one array "threads" of such flat
 * objects; nothing else nests.
 */
#include "s3_key.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "collector/store/col_json.h"
#include "collector/store/sym.h"

/* name into out with every byte outside [A-Za-z0-9._-] as '_'; -EINVAL if
 * empty, "." or ".." */
static int s3_key_clean(const char *name, char *out, size_t cap)
{
    size_t i = 0;
    for (; name[i] && i + 1 < cap; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        out[i] = ok ? c : '_';
    }
    out[i] = '\0';
    return !out[0] || strcmp(out, ".") == 0 || strcmp(out, "..") == 0 ? -EINVAL : 0;
}

/* UTC day of the segment's first record */
static int s3_key_day(const struct s3_key_manifest *m, char *day, size_t cap)
{
    time_t t = (time_t)((m->boot_realtime_ns + m->t_min_ns) / 1000000000u);
    struct tm tm;
    return !gmtime_r(&t, &tm) || strftime(day, cap, "%Y-%m-%d", &tm) == 0 ? -EINVAL : 0;
}

int s3_key_stem(const struct s3_key_manifest *m, char *out, size_t cap)
{
    char host[sizeof m->host], day[16];
    if (s3_key_clean(m->host, host, sizeof host) || s3_key_day(m, day, sizeof day))
        return -EINVAL;
    int n = snprintf(out, cap, "%s/%s/%" PRIu64 "-%" PRIu64 "/%" PRIu64, host, day, m->pid,
                     m->start_time, m->segment_id);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int s3_key_parquet(const struct s3_key_manifest *m, const char *table, char *out, size_t cap)
{
    char host[sizeof m->host], tab[S3_KEY_TABLE_MAX + 1], day[16];
    if (!table || strlen(table) > S3_KEY_TABLE_MAX || s3_key_clean(table, tab, sizeof tab) ||
        s3_key_clean(m->host, host, sizeof host) || s3_key_day(m, day, sizeof day))
        return -EINVAL;
    int n = snprintf(out, cap, S3_KEY_PARQUET_DIR "/table=%s/date=%s/host=%s/%" PRIu64
                     S3_KEY_PARQUET_SUFFIX, tab, day, host, m->segment_id);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

static void s3_key_str(struct col_json *o, const char *k, const char *v)
{
    col_json_raw(o, o->len > 1 ? ",\n \"" : "\n \"", o->len > 1 ? 4 : 3);
    col_json_raw(o, k, strlen(k));
    col_json_raw(o, "\": \"", 4);
    col_json_esc(o, v, strlen(v));
    col_json_raw(o, "\"", 1);
}

static void s3_key_num(struct col_json *o, const char *k, uint64_t v)
{
    char num[32];
    col_json_raw(o, o->len > 1 ? ",\n \"" : "\n \"", o->len > 1 ? 4 : 3);
    col_json_raw(o, k, strlen(k));
    col_json_raw(o, "\": ", 3);
    snprintf(num, sizeof num, "%" PRIu64, v);
    col_json_raw(o, num, strlen(num));
}

/* ,\n "threads": [\n  {"tid": 1, "ring": 0, "generation": 1, "name": "main"},\n  ...\n ] */
static void s3_key_threads_out(struct col_json *o, const struct s3_key_threads *t)
{
    char num[128];                    /* the longest prefix below is 79 bytes */
    col_json_raw(o, ",\n \"threads\": [", 15);
    for (uint32_t i = 0; i < t->n; i++) {
        const struct s3_key_thread *x = &t->t[i];
        int n = snprintf(num, sizeof num,
                         "%s\n  {\"tid\": %" PRIu32 ", \"ring\": %" PRIu32
                         ", \"generation\": %" PRIu32 ", \"name\": \"",
                         i ? "," : "", x->tid, x->ring, x->generation);
        col_json_raw(o, num, (size_t)n);
        col_json_esc(o, x->name, strlen(x->name));
        col_json_raw(o, "\"}", 2);
    }
    col_json_raw(o, t->n ? "\n ]" : "]", t->n ? 3 : 1);
}

int s3_key_manifest_write(const struct s3_key_manifest *m, const struct s3_key_threads *t,
                          char *out, size_t cap)
{
    struct col_json o;
    col_json_init(&o, out, cap, false);         /* DEL raw: see col_json.h */
    if (t) {
        if (t->n > S3_KEY_THREADS_MAX)
            return -EINVAL;
        for (uint32_t i = 0; i < t->n; i++)
            if (!t->t[i].name[0] || !memchr(t->t[i].name, '\0', sizeof t->t[i].name))
                return -EINVAL;
    }
    col_json_raw(&o, "{", 1);
    s3_key_num(&o, "format", S3_KEY_MANIFEST_FORMAT);
    s3_key_str(&o, "host", m->host);
    s3_key_str(&o, "boot_id", m->boot_id);
    s3_key_num(&o, "pid", m->pid);
    s3_key_num(&o, "start_time", m->start_time);
    s3_key_str(&o, "comm", m->comm);
    s3_key_num(&o, "segment_id", m->segment_id);
    s3_key_num(&o, "t_min_ns", m->t_min_ns);
    s3_key_num(&o, "t_max_ns", m->t_max_ns);
    s3_key_num(&o, "boot_realtime_ns", m->boot_realtime_ns);
    s3_key_num(&o, "records", m->records);
    s3_key_num(&o, "lost", m->lost);
    s3_key_num(&o, "bytes", m->bytes);
    s3_key_num(&o, "crc32c", m->crc32c);
    s3_key_str(&o, "sha256", m->sha256);
    if (m->kept) {
        s3_key_num(&o, "trigger_t_ns", m->trigger_t_ns);
        s3_key_num(&o, "trigger_t0_ns", m->trigger_t0_ns);
        s3_key_num(&o, "trigger_t1_ns", m->trigger_t1_ns);
        s3_key_num(&o, "trigger_pid", m->trigger_pid);
        s3_key_num(&o, "trigger_count", m->trigger_count);
        s3_key_num(&o, "trigger_source_segment", m->trigger_source_segment);
        s3_key_str(&o, "trigger_reason", m->trigger_reason);
    }
    if (t)
        s3_key_threads_out(&o, t);
    col_json_raw(&o, "\n}\n", 3);
    return o.full ? -ENAMETOOLONG : 0;
}

/* ---- parser ---------------------------------------------------------------- */

struct s3_key_in {
    const char *p, *end;
};

static void s3_key_ws(struct s3_key_in *in)
{
    while (in->p < in->end && (*in->p == ' ' || *in->p == '\n' || *in->p == '\r' || *in->p == '\t'))
        in->p++;
}

/* A JSON string into out (cap bytes with the NUL). */
static int s3_key_string(struct s3_key_in *in, char *out, size_t cap)
{
    size_t o = 0;
    if (in->p >= in->end || *in->p != '"')
        return -EBADMSG;
    in->p++;
    while (in->p < in->end && *in->p != '"') {
        char c = *in->p++;
        if ((unsigned char)c < 0x20)
            return -EBADMSG;
        if (c == '\\') {
            if (in->p >= in->end)
                return -EBADMSG;
            char e = *in->p++;
            switch (e) {
            case '"': case '\\': case '/': c = e; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'u': {
                /* exactly four hex digits: sym's parser, bounded to them */
                const char *q = in->p;
                uint64_t v;
                if (in->end - in->p < 4 || !sym_parse_hex(&q, in->p + 4, &v) || q != in->p + 4)
                    return -EBADMSG;
                if (v == 0 || v > 0x7f)
                    return -EBADMSG;  /* the writer escapes control bytes only */
                c = (char)v;
                in->p += 4;
                break;
            }
            default:
                return -EBADMSG;
            }
        }
        if (o + 1 >= cap)
            return -EBADMSG;
        out[o++] = c;
    }
    if (in->p >= in->end)
        return -EBADMSG;
    in->p++;
    memset(out + o, 0, cap - o);      /* a key given twice leaves no trace of the first */
    return 0;
}

static int s3_key_u64(struct s3_key_in *in, uint64_t *v)
{
    uint64_t x = 0;
    const char *start = in->p;
    while (in->p < in->end && *in->p >= '0' && *in->p <= '9') {
        uint64_t d = (uint64_t)(*in->p - '0');
        if (x > (UINT64_MAX - d) / 10)
            return -EBADMSG;
        x = x * 10 + d;
        in->p++;
    }
    if (in->p == start || (in->p - start > 1 && *start == '0'))
        return -EBADMSG;
    *v = x;
    return 0;
}

/* A string or number value of a key nobody knows; skip holds the string. */
static int s3_key_skip(struct s3_key_in *in, char *skip, size_t cap)
{
    uint64_t ignored;
    if (in->p < in->end && *in->p == '"')
        return s3_key_string(in, skip, cap);
    return s3_key_u64(in, &ignored);
}

/* One {"tid": N, "ring": N, "generation": N, "name": "..."}: all four
 * present, numbers within 32 bits, the name non-empty and bounded. */
static int s3_key_thread_in(struct s3_key_in *in, struct s3_key_thread *t, char *skip,
                            size_t skip_cap)
{
    static const char *const nums[] = { "tid", "ring", "generation" };
    char key[64];
    unsigned seen = 0;
    memset(t, 0, sizeof *t);
    if (in->p >= in->end || *in->p++ != '{')
        return -EBADMSG;
    for (;;) {
        s3_key_ws(in);
        if (s3_key_string(in, key, sizeof key))
            return -EBADMSG;
        s3_key_ws(in);
        if (in->p >= in->end || *in->p++ != ':')
            return -EBADMSG;
        s3_key_ws(in);
        int rc = -EBADMSG, known = 0;
        if (strcmp(key, "name") == 0) {
            known = 1;
            seen |= 1u << 3;
            rc = s3_key_string(in, t->name, sizeof t->name);
        }
        for (unsigned i = 0; i < 3 && !known; i++)
            if (strcmp(key, nums[i]) == 0) {
                uint64_t v;
                known = 1;
                seen |= 1u << i;
                rc = s3_key_u64(in, &v);
                if (rc == 0 && v > UINT32_MAX)
                    rc = -EBADMSG;
                if (rc == 0)
                    *(i == 0 ? &t->tid : i == 1 ? &t->ring : &t->generation) = (uint32_t)v;
            }
        if (!known)
            rc = s3_key_skip(in, skip, skip_cap);
        if (rc)
            return -EBADMSG;
        s3_key_ws(in);
        if (in->p < in->end && *in->p == ',') {
            in->p++;
            continue;
        }
        if (in->p < in->end && *in->p == '}') {
            in->p++;
            break;
        }
        return -EBADMSG;
    }
    return seen == 0xf && t->name[0] ? 0 : -EBADMSG;
}

/* [ thread, ... ] into t (n reset: a key given twice keeps the last). */
static int s3_key_threads_in(struct s3_key_in *in, struct s3_key_threads *t, char *skip,
                             size_t skip_cap)
{
    struct s3_key_thread one;
    t->n = 0;
    if (in->p >= in->end || *in->p++ != '[')
        return -EBADMSG;
    s3_key_ws(in);
    if (in->p < in->end && *in->p == ']') {
        in->p++;
        return 0;
    }
    for (;;) {
        s3_key_ws(in);
        if (t->n == S3_KEY_THREADS_MAX || s3_key_thread_in(in, &one, skip, skip_cap))
            return -EBADMSG;
        t->t[t->n++] = one;
        s3_key_ws(in);
        if (in->p < in->end && *in->p == ',') {
            in->p++;
            continue;
        }
        if (in->p < in->end && *in->p == ']') {
            in->p++;
            return 0;
        }
        return -EBADMSG;
    }
}

static int s3_key_manifest_in(const char *buf, size_t len, struct s3_key_manifest *m,
                              struct s3_key_threads *t)
{
    struct { const char *k; size_t off, cap; } strs[] = {
        { "host", offsetof(struct s3_key_manifest, host), sizeof m->host },
        { "boot_id", offsetof(struct s3_key_manifest, boot_id), sizeof m->boot_id },
        { "comm", offsetof(struct s3_key_manifest, comm), sizeof m->comm },
        { "sha256", offsetof(struct s3_key_manifest, sha256), sizeof m->sha256 },
        { "trigger_reason", offsetof(struct s3_key_manifest, trigger_reason),
          sizeof m->trigger_reason },
    };
    struct { const char *k; size_t off; } nums[] = {
        { "format", offsetof(struct s3_key_manifest, format) },
        { "pid", offsetof(struct s3_key_manifest, pid) },
        { "start_time", offsetof(struct s3_key_manifest, start_time) },
        { "segment_id", offsetof(struct s3_key_manifest, segment_id) },
        { "t_min_ns", offsetof(struct s3_key_manifest, t_min_ns) },
        { "t_max_ns", offsetof(struct s3_key_manifest, t_max_ns) },
        { "boot_realtime_ns", offsetof(struct s3_key_manifest, boot_realtime_ns) },
        { "records", offsetof(struct s3_key_manifest, records) },
        { "lost", offsetof(struct s3_key_manifest, lost) },
        { "bytes", offsetof(struct s3_key_manifest, bytes) },
        { "crc32c", offsetof(struct s3_key_manifest, crc32c) },
        { "trigger_t_ns", offsetof(struct s3_key_manifest, trigger_t_ns) },
        { "trigger_t0_ns", offsetof(struct s3_key_manifest, trigger_t0_ns) },
        { "trigger_t1_ns", offsetof(struct s3_key_manifest, trigger_t1_ns) },
        { "trigger_pid", offsetof(struct s3_key_manifest, trigger_pid) },
        { "trigger_count", offsetof(struct s3_key_manifest, trigger_count) },
        { "trigger_source_segment", offsetof(struct s3_key_manifest, trigger_source_segment) },
    };
    struct s3_key_in in = { buf, buf + len };
    char key[64], skip[S3_KEY_MANIFEST_MAX];
    uint64_t ignored;
    memset(m, 0, sizeof *m);
    t->n = 0;
    if (len > S3_KEY_MANIFEST_MAX)
        return -EBADMSG;
    s3_key_ws(&in);
    if (in.p >= in.end || *in.p++ != '{')
        return -EBADMSG;
    s3_key_ws(&in);
    if (in.p < in.end && *in.p == '}') {
        in.p++;
    } else {
        for (;;) {
            s3_key_ws(&in);
            if (s3_key_string(&in, key, sizeof key))
                return -EBADMSG;
            s3_key_ws(&in);
            if (in.p >= in.end || *in.p++ != ':')
                return -EBADMSG;
            s3_key_ws(&in);
            if (in.p >= in.end)
                return -EBADMSG;
            int rc = -EBADMSG, known = 0;
            if (strcmp(key, "threads") == 0) {
                rc = s3_key_threads_in(&in, t, skip, sizeof skip);
            } else if (*in.p == '"') {
                for (size_t i = 0; i < sizeof strs / sizeof strs[0] && !known; i++)
                    if (strcmp(key, strs[i].k) == 0) {
                        known = 1;
                        rc = s3_key_string(&in, (char *)m + strs[i].off, strs[i].cap);
                    }
                if (!known)
                    rc = s3_key_string(&in, skip, sizeof skip);
            } else {
                for (size_t i = 0; i < sizeof nums / sizeof nums[0] && !known; i++)
                    if (strcmp(key, nums[i].k) == 0) {
                        known = 1;
                        rc = s3_key_u64(&in, (uint64_t *)((char *)m + nums[i].off));
                    }
                if (!known)
                    rc = s3_key_u64(&in, &ignored);
            }
            if (rc)
                return -EBADMSG;
            if (known && strncmp(key, "trigger_", 8) == 0)
                m->kept = 1;        /* a kept window's manifest (s3_key.h) */
            s3_key_ws(&in);
            if (in.p < in.end && *in.p == ',') {
                in.p++;
                continue;
            }
            if (in.p < in.end && *in.p == '}') {
                in.p++;
                break;
            }
            return -EBADMSG;
        }
    }
    s3_key_ws(&in);
    if (in.p != in.end || m->format != S3_KEY_MANIFEST_FORMAT || !m->host[0] || !m->segment_id)
        return -EBADMSG;
    return 0;
}

int s3_key_manifest_parse(const char *buf, size_t len, struct s3_key_manifest *m,
                          struct s3_key_threads *t)
{
    struct s3_key_threads scratch;
    struct s3_key_threads *into = t ? t : &scratch;
    int rc = s3_key_manifest_in(buf, len, m, into);
    if (rc < 0)
        into->n = 0;                  /* nothing of a refused manifest is kept */
    return rc;
}
