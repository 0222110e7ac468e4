/*
 * tool_s3up.c — upload a store's sealed segments with their manifests in
 * the shipping layout (collector/s3/s3_key.h), as d9collectd --ship does,
 * for the d9 pull tests:
 *   tool_s3up STORE s3://BUCKET/PREFIX [HOST]
 * HOST overrides the store's host (to make a second host in the bucket).
 * Endpoint from $S3_ENDPOINT, credentials from the AWS variables. Prints
 * one line per object uploaded; exit 1 on any error.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/s3/s3_client.h"
#include "collector/s3/s3_key.h"
#include "collector/s3/s3_sign.h"
#include "collector/store/crc32c.h"
#include "collector/store/idx.h"
#include "collector/store/idx_read.h"
#include "collector/store/seg.h"
#include "collector/store/seg_reader.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static int put(struct s3_client *c, const char *name, const void *buf, size_t len)
{
    char key[2048];
    if (s3_client_key(c, name, key, sizeof key) < 0 || s3_client_put(c, key, buf, len) < 0) {
        fprintf(stderr, "tool_s3up: %s: %s\n", name, s3_client_error(c));
        return -1;
    }
    printf("%s %zu\n", name, len);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: tool_s3up STORE s3://BUCKET/PREFIX [HOST]\n");
        return 2;
    }
    const char *store = argv[1];
    struct s3_cfg cfg;
    struct s3_client *c;
    char err[512];
    if (s3_cfg_init(&cfg, argv[2], getenv("S3_ENDPOINT"), NULL, err, sizeof err) ||
        s3_cfg_credentials(&cfg, err, sizeof err)) {
        fprintf(stderr, "tool_s3up: %s\n", err);
        return 1;
    }
    if (s3_client_open(&c, &cfg))
        return 1;
    s3_cfg_wipe(&cfg);
    struct idx *x;
    if (idx_open_readonly(&x, store) < 0)
        return 1;
    char host[256] = "", boot_id[64] = "", rt[32] = "0";
    idx_read_meta_get(x, "host", host, sizeof host);
    idx_read_meta_get(x, "boot_id", boot_id, sizeof boot_id);
    idx_read_meta_get(x, "boot_realtime_ns", rt, sizeof rt);
    idx_close(x);
    if (argc == 4)
        snprintf(host, sizeof host, "%s", argv[3]);
    DIR *d = opendir(store);
    if (!d)
        return perror(store), 1;
    int rc = 0;
    for (struct dirent *de; rc == 0 && (de = readdir(d));) {
        if (seg_parse_file_name(de->d_name, NULL, NULL, NULL) != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", store, de->d_name);
        struct seg_reader *r;
        if (seg_reader_open(&r, path, 0) < 0) {
            fprintf(stderr, "tool_s3up: %s: not a sealed segment\n", path);
            rc = 1;
            break;
        }
        const struct seg_file_hdr *h = seg_reader_header(r);
        const struct seg_footer *ft = seg_reader_footer(r);
        struct s3_key_manifest m;
        memset(&m, 0, sizeof m);
        m.format = S3_KEY_MANIFEST_FORMAT;
        snprintf(m.host, sizeof m.host, "%s", host);
        snprintf(m.boot_id, sizeof m.boot_id, "%s", boot_id);
        m.pid = h->pid;
        m.start_time = h->start_time;
        memcpy(m.comm, h->comm, sizeof h->comm < sizeof m.comm - 1 ? sizeof h->comm
                                                                  : sizeof m.comm - 1);
        m.segment_id = h->segment_id;
        m.t_min_ns = ft->t_min;
        m.t_max_ns = ft->t_max;
        m.boot_realtime_ns = strtoull(rt, NULL, 10);
        m.records = ft->nrecords;
        m.lost = ft->lost;
        seg_reader_close(r);
        size_t len;
        char *buf = slurp(path, &len);
        if (!buf) {
            rc = 1;
            break;
        }
        m.bytes = len;
        m.crc32c = crc32c_update(0, buf, len);
        s3_sign_sha256_hex(buf, len, m.sha256);
        char stem[1024], name[1100], json[S3_KEY_MANIFEST_MAX];
        if (s3_key_stem(&m, stem, sizeof stem) < 0 ||
            s3_key_manifest_write(&m, NULL, json, sizeof json) < 0) {
            rc = 1;
        } else {
            snprintf(name, sizeof name, "%s%s", stem, S3_KEY_SEG_SUFFIX);
            if (put(c, name, buf, len) < 0)
                rc = 1;
            snprintf(name, sizeof name, "%s%s", stem, S3_KEY_MANIFEST_SUFFIX);
            if (rc == 0 && put(c, name, json, strlen(json)) < 0)
                rc = 1;
        }
        free(buf);
    }
    closedir(d);
    s3_client_close(c);
    return rc;
}
