/*
 * fuzz_s3path.c — the bucket keys and times `d9 pull` reads (cli_s3path.c):
 * any bytes as a key relative to the prefix, as a key under a prefix, as a
 * --from/--until time and as cache-path parts. A key either is refused or
 * names a host without '/' and a leading '.', a day, a pid > 0 and an id > 0,
 * and its local name is a plain file name; a cache path stays under its root.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "collector/cli/cli_s3path.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = 0;
    struct cli_s3path_key k;
    enum cli_s3path_kind kind = cli_s3path_parse(s, ".manifest.json", &k);
    if (kind != CLI_S3PATH_OTHER) {
        char name[128];
        if (!k.host[0] || k.host[0] == '.' || strchr(k.host, '/') || k.pid == 0 ||
            k.segment_id == 0 || strlen(k.day) != CLI_S3PATH_DAY_LEN ||
            cli_s3path_local_name(&k, name, sizeof name) != 0 || strchr(name, '/') ||
            name[0] == '.')
            abort();
        (void)cli_s3path_keep_key(&k, "h", 1, INT64_MAX);
    }
    (void)cli_s3path_strip("fleet", s);
    int64_t t;
    (void)cli_s3path_parse_time(s, size & 1, &t);
    char dir[512];
    if (cli_s3path_cache_dir("/c", NULL, s, s, s, s, dir, sizeof dir) == 0 &&
        (strncmp(dir, "/c/d9/s3/", 9) != 0 || strstr(dir, "/../") || strstr(dir, "/./") ||
         (strlen(dir) >= 3 && strcmp(dir + strlen(dir) - 3, "/..") == 0)))
        abort();
    char pre[256];
    size_t n;
    (void)cli_s3path_prefixes(s, s, (int64_t)size * 1000000000ll, INT64_MAX,
                              1796378400ll * 1000000000ll, pre, sizeof pre, &n);
    free(s);
    return 0;
}
