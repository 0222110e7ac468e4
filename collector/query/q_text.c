/*
 * q_text.c — text in and out for every reader of the store (see q_text.h):
 * JSON string literals, escaped text, CLOCK_MONOTONIC times, decimal numbers.
 *
 * Pure: no state, nothing but the FILE it is given is written.
 */
#include <errno.h>
#include <inttypes.h>
#include <time.h>
#include "collector/query/q_text.h"

int q_text_parse_u64(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -EINVAL;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -EINVAL;
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -ERANGE;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

const char *q_text_time(uint64_t mono_ns, int64_t boot_realtime_ns, bool have_wall,
                         int ns_digits, bool with_date, char *buf, size_t cap)
{
    if (ns_digits != 3 && ns_digits != 6 && ns_digits != 9)
        ns_digits = 9;
    uint64_t div = ns_digits == 3 ? 1000000u : ns_digits == 6 ? 1000u : 1u;
    if (!have_wall) {
        snprintf(buf, cap, "mono %" PRIu64 ".%0*" PRIu64 "s", mono_ns / 1000000000u,
                 ns_digits, (mono_ns % 1000000000u) / div);
        return buf;
    }
    int64_t wall = boot_realtime_ns + (int64_t)mono_ns;
    if (wall < 0)
        wall = 0;
    time_t secs = (time_t)(wall / 1000000000);
    uint64_t frac = (uint64_t)(wall % 1000000000) / div;
    struct tm tm;
    char base[32];
    localtime_r(&secs, &tm);
    strftime(base, sizeof base, with_date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm);
    snprintf(buf, cap, "%s.%0*" PRIu64, base, ns_digits, frac);
    return buf;
}

/* A C1 control (U+0080..U+009F: CSI is U+009B) as UTF-8: a terminal obeys
 * it like ESC [, so it is escaped like the C0 controls. */
static bool utf8_c1(const unsigned char *s, size_t k)
{
    return k == 2 && s[0] == 0xc2 && s[1] <= 0x9f;
}

/* Length of the valid UTF-8 sequence at s[0, n), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

void q_text_json(FILE *f, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
            i++;
        } else if (c == '\n') {
            fputs("\\n", f);
            i++;
        } else if (c == '\t') {
            fputs("\\t", f);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\u%04x", c);
            i++;
        } else if (c < 0x80) {
            fputc(c, f);
            i++;
        } else {
            size_t k = utf8_len(s + i, n - i);
            if (k == 0) {
                fputs("\\ufffd", f);
                i++;
            } else if (utf8_c1(s + i, k)) {
                fprintf(f, "\\u%04x", s[i + 1]);
                i += k;
            } else {
                fwrite(s + i, 1, k, f);
                i += k;
            }
        }
    }
    fputc('"', f);
}

/* s[i] (of n bytes), a byte not written as itself: a whole UTF-8 character
 * as it is (a C1 control as \u00XX, which a terminal would obey), anything
 * else as \xHH. Returns the bytes it took (at least 1). */
static size_t put_other(FILE *f, const unsigned char *s, size_t i, size_t n)
{
    size_t k;
    if (s[i] >= 0x80 && (k = utf8_len(s + i, n - i)) > 0) {
        if (utf8_c1(s + i, k))
            fprintf(f, "\\u%04x", s[i + 1]);
        else
            fwrite(s + i, 1, k, f);
        return k;
    }
    fprintf(f, "\\x%02x", s[i]);
    return 1;
}

void q_text_escaped(FILE *f, const char *str, size_t n, bool quote)
{
    const unsigned char *s = (const unsigned char *)str;
    if (quote)
        fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '"' && quote)
            fputs("\\\"", f);
        else if (c == '\\')
            fputs("\\\\", f);
        else if (c >= 0x20 && c < 0x7f)
            fputc(c, f);
        else
            i += put_other(f, s, i, n) - 1;
    }
    if (quote)
        fputc('"', f);
}

void q_text_csv(FILE *f, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    bool quote = false;
    for (size_t i = 0; i < n && !quote; i++)
        quote = s[i] == ',' || s[i] == '"' || s[i] == '\n';
    if (quote)
        fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '"')
            fputs("\"\"", f);
        else if ((c >= 0x20 && c < 0x7f) || c == '\t' || c == '\n')
            fputc(c, f);
        else
            i += put_other(f, s, i, n) - 1;
    }
    if (quote)
        fputc('"', f);
}
