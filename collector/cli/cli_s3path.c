/*
 * cli_s3path.c — key layout, listing prefixes, filters, local names and
 * cache paths of `d9 pull` and `d9 --store s3://...` (see cli_s3path.h).
 *
 * Called by cli_pull.c. Pure: no I/O, no clock, no environment.
 * Must never: accept a key component that could leave the local store
 * directory (a '/' or a leading '.') or a number with trailing garbage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "collector/cli/cli_s3path.h"

const char *cli_s3path_strip(const char *prefix, const char *key)
{
    size_t n = strlen(prefix);
    if (n == 0)
        return key;
    if (strncmp(key, prefix, n) != 0 || key[n] != '/')
        return NULL;
    return key + n + 1;
}

/* Decimal digits only, no overflow; end at stop. */
static bool parse_num(const char *s, const char *stop, uint64_t *out)
{
    if (s >= stop || stop - s > 20)
        return false;
    uint64_t v = 0;
    for (const char *p = s; p < stop; p++) {
        if (*p < '0' || *p > '9')
            return false;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static bool is_day(const char *s, size_t n)
{
    if (n != CLI_S3PATH_DAY_LEN || s[4] != '-' || s[7] != '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (i != 4 && i != 7 && (s[i] < '0' || s[i] > '9'))
            return false;
    return true;
}

enum cli_s3path_kind cli_s3path_parse(const char *rel, const char *manifest_suffix,
                                      struct cli_s3path_key *out)
{
    memset(out, 0, sizeof *out);
    const char *host = rel;
    const char *s1 = strchr(host, '/');
    if (!s1 || s1 == host || host[0] == '.' || (size_t)(s1 - host) >= sizeof out->host)
        return CLI_S3PATH_OTHER;
    const char *day = s1 + 1;
    const char *s2 = strchr(day, '/');
    if (!s2 || !is_day(day, (size_t)(s2 - day)))
        return CLI_S3PATH_OTHER;
    const char *proc = s2 + 1;
    const char *s3 = strchr(proc, '/');
    const char *dash = s3 ? memchr(proc, '-', (size_t)(s3 - proc)) : NULL;
    uint64_t pid, start, id;
    if (!dash || !parse_num(proc, dash, &pid) || pid == 0 || pid > UINT32_MAX ||
        !parse_num(dash + 1, s3, &start))
        return CLI_S3PATH_OTHER;
    const char *file = s3 + 1;
    if (strchr(file, '/'))
        return CLI_S3PATH_OTHER;
    const char *digits_end = file;
    while (*digits_end >= '0' && *digits_end <= '9')
        digits_end++;
    if (!parse_num(file, digits_end, &id) || id == 0 || id > INT64_MAX)
        return CLI_S3PATH_OTHER;
    enum cli_s3path_kind kind = CLI_S3PATH_OTHER;
    if (strcmp(digits_end, CLI_S3PATH_SEG_SUFFIX) == 0)
        kind = CLI_S3PATH_SEGMENT;
    else if (manifest_suffix && *manifest_suffix && strcmp(digits_end, manifest_suffix) == 0)
        kind = CLI_S3PATH_MANIFEST;
    if (kind == CLI_S3PATH_OTHER)
        return kind;
    out->kind = kind;
    memcpy(out->host, host, (size_t)(s1 - host));
    out->host[s1 - host] = 0;
    memcpy(out->day, day, CLI_S3PATH_DAY_LEN);
    out->day[CLI_S3PATH_DAY_LEN] = 0;
    out->pid = (uint32_t)pid;
    out->start_time = start;
    out->segment_id = id;
    return kind;
}

void cli_s3path_day(int64_t wall_ns, char *out)
{
    int64_t secs = wall_ns / 1000000000ll;
    if (wall_ns < 0 && wall_ns % 1000000000ll)
        secs--;
    time_t t = (time_t)secs;
    struct tm tm;
    if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999) {
        snprintf(out, CLI_S3PATH_DAY_LEN + 1, "0000-00-00");
        return;
    }
    strftime(out, CLI_S3PATH_DAY_LEN + 1, "%Y-%m-%d", &tm);
}

static int put(char *out, size_t cap, size_t *used, const char *a, const char *b, const char *c)
{
    int k = snprintf(out + *used, cap - *used, "%s%s%s%s%s/", a, *a ? "/" : "", b,
                     *c ? "/" : "", c);
    if (k < 0 || (size_t)k >= cap - *used)
        return -ENAMETOOLONG;
    *used += (size_t)k + 1;
    return 0;
}

int cli_s3path_prefixes(const char *prefix, const char *host, int64_t from_ns, int64_t to_ns,
                        int64_t now_ns, char *out, size_t cap, size_t *n)
{
    size_t used = 0;
    *n = 0;
    if (cap == 0)
        return -ENAMETOOLONG;
    if (!host || !*host) {
        int k = snprintf(out, cap, "%s%s", prefix, *prefix ? "/" : "");
        if (k < 0 || (size_t)k >= cap)
            return -ENAMETOOLONG;
        *n = 1;
        return 0;
    }
    int64_t hi = to_ns == INT64_MAX ? now_ns : to_ns;
    int64_t lo = from_ns > INT64_MIN + CLI_S3PATH_NS_PER_DAY ? from_ns - CLI_S3PATH_NS_PER_DAY
                                                             : INT64_MIN;
    bool whole = from_ns <= 0 || hi < lo ||
                 (hi - lo) / CLI_S3PATH_NS_PER_DAY >= CLI_S3PATH_DAYS_MAX;
    if (whole) {
        int e = put(out, cap, &used, prefix, host, "");
        if (e == 0)
            *n = 1;
        return e;
    }
    char day[CLI_S3PATH_DAY_LEN + 1], last[CLI_S3PATH_DAY_LEN + 1];
    cli_s3path_day(hi, last);
    for (int64_t t = lo;; t += CLI_S3PATH_NS_PER_DAY) {
        cli_s3path_day(t, day);
        int e = put(out, cap, &used, prefix, host, day);
        if (e < 0)
            return e;
        (*n)++;
        if (strcmp(day, last) >= 0)
            break;
    }
    return 0;
}

/* Start of the UTC day "YYYY-MM-DD" in wall ns; false if it is not a date. */
static bool day_start(const char *day, int64_t *ns)
{
    int y, m, d;
    char tail;
    if (sscanf(day, "%4d-%2d-%2d%c", &y, &m, &d, &tail) != 3 || m < 1 || m > 12 || d < 1 ||
        d > 31)
        return false;
    struct tm tm = { .tm_year = y - 1900, .tm_mon = m - 1, .tm_mday = d };
    time_t t = timegm(&tm);
    /* a key's day is the bucket's word: before 1970 or past 2262 (the ns
     * of two days after it would not fit an int64) is no time */
    if (t < 0 || (int64_t)t > (INT64_MAX - 2 * CLI_S3PATH_NS_PER_DAY) / 1000000000ll)
        return false;
    *ns = (int64_t)t * 1000000000ll;
    return true;
}

bool cli_s3path_keep_key(const struct cli_s3path_key *k, const char *host, int64_t from_ns,
                         int64_t to_ns)
{
    if (host && *host && strcmp(host, k->host) != 0)
        return false;
    int64_t start;
    if (!day_start(k->day, &start))
        return true;                    /* cannot tell: the manifest decides */
    /* records of a segment opened on that day lie in [start, start + 2 days) */
    if (to_ns != INT64_MAX && start > to_ns)
        return false;
    if (from_ns > 0 && start + 2 * CLI_S3PATH_NS_PER_DAY <= from_ns)
        return false;
    return true;
}

bool cli_s3path_keep_range(uint32_t want_pid, int64_t from_ns, int64_t to_ns, uint32_t pid,
                           int64_t wall_min_ns, int64_t wall_max_ns)
{
    if (want_pid && want_pid != pid)
        return false;
    if (wall_max_ns < wall_min_ns)
        return true;                    /* impossible range: keep, readers cope */
    return wall_max_ns >= from_ns && wall_min_ns <= to_ns;
}

int cli_s3path_local_name(const struct cli_s3path_key *k, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%" PRIu32 "-%" PRIu64 "-%" PRIu64 "%s", k->pid, k->start_time,
                     k->segment_id, CLI_S3PATH_SEG_SUFFIX);
    return n >= 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

/* Append "/" + s as a safe file name (one component per '/'-separated part
 * when split, else one component). */
static int add_part(char *out, size_t cap, size_t *used, const char *s, bool split)
{
    const char *p = s;
    do {
        const char *end = split ? strchr(p, '/') : NULL;
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > 0) {
            if (*used + len + 3 >= cap)
                return -ENAMETOOLONG;
            out[(*used)++] = '/';
            if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
                out[(*used)++] = '_';       /* "." -> "_.", ".." -> "_.." */
            for (size_t i = 0; i < len; i++) {
                char c = p[i];
                bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' || c == '@';
                out[(*used)++] = ok ? c : '_';
            }
            out[*used] = 0;
        }
        p = end ? end + 1 : NULL;
    } while (p);
    return 0;
}

int cli_s3path_cache_dir(const char *xdg_cache, const char *home, const char *endpoint,
                         const char *bucket, const char *prefix, const char *host, char *out,
                         size_t cap)
{
    int k;
    if (xdg_cache && xdg_cache[0] == '/')
        k = snprintf(out, cap, "%s/d9/s3", xdg_cache);
    else if (home && home[0] == '/')
        k = snprintf(out, cap, "%s/.cache/d9/s3", home);
    else
        return -ENOENT;
    if (k < 0 || (size_t)k >= cap)
        return -ENAMETOOLONG;
    size_t used = (size_t)k;
    /* endpoint: its host[:port] only (the scheme and a path say nothing) */
    char ep[256] = "aws";
    if (endpoint && *endpoint) {
        const char *h = strstr(endpoint, "://");
        h = h ? h + 3 : endpoint;
        size_t len = strcspn(h, "/");
        if (len == 0 || len >= sizeof ep)
            len = len ? sizeof ep - 1 : 0;
        if (len) {
            memcpy(ep, h, len);
            ep[len] = 0;
        }
    }
    int e;
    if ((e = add_part(out, cap, &used, ep, false)) < 0 ||
        (e = add_part(out, cap, &used, bucket && *bucket ? bucket : "_", false)) < 0 ||
        (e = add_part(out, cap, &used, prefix ? prefix : "", true)) < 0)
        return e;
    if (host && *host) {
        char at[CLI_S3PATH_HOST_MAX + 2];
        snprintf(at, sizeof at, "@%s", host);
        if ((e = add_part(out, cap, &used, at, false)) < 0)
            return e;
    }
    return 0;
}

int cli_s3path_parse_time(const char *s, bool end, int64_t *wall_ns)
{
    if (!s || !*s)
        return -EINVAL;
    if (s[0] == '@') {
        uint64_t v;
        /* the last ns of second v must fit too */
        if (!parse_num(s + 1, s + strlen(s), &v) ||
            v > (uint64_t)((INT64_MAX - 999999999ll) / 1000000000ll))
            return -EINVAL;
        *wall_ns = (int64_t)v * 1000000000ll + (end ? 999999999ll : 0);
        return 0;
    }
    int y, mo, d, h = 0, mi = 0, sec = 0, used = 0;
    size_t len = strlen(s);
    if (len && s[len - 1] == 'Z')
        len--;
    char buf[32];
    if (len >= sizeof buf)
        return -EINVAL;
    memcpy(buf, s, len);
    buf[len] = 0;
    int64_t span;                       /* ns covered by the least digit given */
    if (len == 10 && sscanf(buf, "%4d-%2d-%2d%n", &y, &mo, &d, &used) == 3 && used == 10) {
        span = CLI_S3PATH_NS_PER_DAY;
    } else if (len == 16 && (buf[10] == 'T' || buf[10] == ' ') &&
               sscanf(buf, "%4d-%2d-%2d%*c%2d:%2d%n", &y, &mo, &d, &h, &mi, &used) == 5 &&
               used == 16) {
        span = 60ll * 1000000000ll;
    } else if (len == 19 && (buf[10] == 'T' || buf[10] == ' ') &&
               sscanf(buf, "%4d-%2d-%2d%*c%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &used) == 6 &&
               used == 19) {
        span = 1000000000ll;
    } else {
        return -EINVAL;
    }
    if (!is_day(buf, 10) || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
        sec > 60 || y < 1970)
        return -EINVAL;
    struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h,
                     .tm_min = mi, .tm_sec = sec };
    time_t t = timegm(&tm);
    struct tm back;
    if (!gmtime_r(&t, &back) || back.tm_mday != d)
        return -EINVAL;                 /* 2026-02-30 */
    if (t < 0 || (int64_t)t > (INT64_MAX - span) / 1000000000ll)
        return -EINVAL;                 /* past 2262: not a time in ns */
    *wall_ns = (int64_t)t * 1000000000ll + (end ? span - 1 : 0);
    return 0;
}
