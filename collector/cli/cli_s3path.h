/*
 * cli_s3path.h — the pure part of reading a store back from a bucket: what
 * the object keys mean, which key prefixes a pull must list for a host and
 * a wall-clock window, which manifests it keeps, the local file name of a
 * pulled segment, the local cache directory of `d9 --store s3://...`, and
 * the wall-clock times `d9 pull --from/--until` take.
 *
 * Key layout (written by the collector's shipping, collector/s3/):
 *   PREFIX/HOST/YYYY-MM-DD/PID-START/ID.d9seg       the segment, byte for byte
 *   PREFIX/HOST/YYYY-MM-DD/PID-START/ID<manifest>   its manifest
 * YYYY-MM-DD is the UTC day the segment was opened; host and day come first
 * so a pull for one host over a short window lists only a few prefixes.
 *
 * Called by cli_pull.c (and tests/unit/test_cli_s3path.c).
 *
 * Invariants: no I/O, no clock, no environment: everything comes in as
 * arguments. Every key is untrusted (a bucket anyone may have written to):
 * a key that does not parse completely is not a segment, and a host or a
 * file name taken from a key never contains '/' or starts with '.'.
 */
#ifndef D9_CLI_S3PATH_H
#define D9_CLI_S3PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLI_S3PATH_HOST_MAX 64          /* as seg_file_hdr.host, with the NUL */
#define CLI_S3PATH_DAY_LEN 10           /* "YYYY-MM-DD" */
#define CLI_S3PATH_DAYS_MAX 31          /* longer windows list the whole host */
#define CLI_S3PATH_SEG_SUFFIX ".d9seg"
#define CLI_S3PATH_NS_PER_DAY (86400ll * 1000000000ll)

enum cli_s3path_kind {
    CLI_S3PATH_OTHER = 0,               /* not ours: ignored */
    CLI_S3PATH_SEGMENT = 1,
    CLI_S3PATH_MANIFEST = 2,
};

/* What a key says (after PREFIX/). */
struct cli_s3path_key {
    enum cli_s3path_kind kind;
    char host[CLI_S3PATH_HOST_MAX];
    char day[CLI_S3PATH_DAY_LEN + 1];
    uint32_t pid;
    uint64_t start_time;
    uint64_t segment_id;
};

/* The key without its prefix: key must start with prefix (given without a
 * trailing '/'; "" = bucket root) followed by '/' (none for ""). NULL when
 * it does not. */
const char *cli_s3path_strip(const char *prefix, const char *key);

/* Parse a key relative to the prefix ("HOST/DAY/PID-START/ID.d9seg" or
 * "...ID<manifest_suffix>"). Returns the kind (CLI_S3PATH_OTHER for anything
 * that does not match the layout exactly). */
enum cli_s3path_kind cli_s3path_parse(const char *rel, const char *manifest_suffix,
                                      struct cli_s3path_key *out);

/* "YYYY-MM-DD" (UTC) of a CLOCK_REALTIME time in ns; out holds 11 bytes. */
void cli_s3path_day(int64_t wall_ns, char *out);

/* The prefixes to list (each ends with '/'), written one after the other
 * into out as NUL-terminated strings, their count in *n:
 *   - no host: PREFIX/ (the day is then checked per key, cli_s3path_keep_key);
 *   - a host, no window or a window longer than CLI_S3PATH_DAYS_MAX days:
 *     PREFIX/HOST/;
 *   - a host and a window [from, to] (wall ns, to = INT64_MAX open): one
 *     PREFIX/HOST/DAY/ per day from the day before from's (a segment opened
 *     before midnight holds records after it) to to's (today's when open:
 *     now_ns is the caller's clock).
 * 0, or -ENAMETOOLONG when out is too small. */
int cli_s3path_prefixes(const char *prefix, const char *host, int64_t from_ns, int64_t to_ns,
                        int64_t now_ns, char *out, size_t cap, size_t *n);

/* Key-level filter: the host matches (host NULL = any) and the key's day
 * can hold records in [from_ns, to_ns] (its day, or the one after). */
bool cli_s3path_keep_key(const struct cli_s3path_key *k, const char *host, int64_t from_ns,
                         int64_t to_ns);

/* Manifest-level filter: pid (0 = any) matches and the segment's wall-clock
 * range [wall_min, wall_max] meets [from_ns, to_ns]. */
bool cli_s3path_keep_range(uint32_t want_pid, int64_t from_ns, int64_t to_ns, uint32_t pid,
                           int64_t wall_min_ns, int64_t wall_max_ns);

/* The segment's file name in a local store: "PID-START-ID.d9seg" (the name
 * the collector gave it, seg_file_name). */
int cli_s3path_local_name(const struct cli_s3path_key *k, char *out, size_t cap);

/* The cache directory of `d9 --store s3://BUCKET/PREFIX`:
 *   (xdg_cache or home/.cache)/d9/s3/ENDPOINT/BUCKET/PREFIX[/@HOST]
 * ENDPOINT is the endpoint's host[:port] ("aws" when none) and every part
 * is made a safe file name ([A-Za-z0-9._-]; others become '_'; "." and ".."
 * are escaped). -ENOENT with neither xdg_cache nor home, -ENAMETOOLONG. */
int cli_s3path_cache_dir(const char *xdg_cache, const char *home, const char *endpoint,
                         const char *bucket, const char *prefix, const char *host, char *out,
                         size_t cap);

/* A wall-clock time as `d9 pull --from/--until` take it, UTC:
 * "YYYY-MM-DD", "YYYY-MM-DDTHH:MM", "YYYY-MM-DDTHH:MM:SS" (a trailing 'Z'
 * and ' ' for 'T' accepted) or "@SECONDS" (Unix time). end: a day or minute
 * means its last nanosecond (for --until). 0 or -EINVAL. */
int cli_s3path_parse_time(const char *s, bool end, int64_t *wall_ns);

#endif /* D9_CLI_S3PATH_H */
