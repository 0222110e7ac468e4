/*
 * tool_s3.c — the S3 client (collector/s3/) from the shell, for the S3 tests:
 *   tool_s3 s3://BUCKET/PREFIX put NAME FILE | get NAME FILE | head NAME |
 *           list [SUBPREFIX] | delete NAME | put2 NAME FILE
 * put2 PUTs FILE as NAME from memory, then as NAME.2 from the file (as
 * the collector uploads a segment) with the same client, its connection
 * reused as the collector's uploads reuse it.
 * NAME is under PREFIX. The endpoint comes from $S3_ENDPOINT (empty: AWS),
 * credentials from the usual AWS variables. list prints "KEY SIZE" per
 * object (KEY without PREFIX/); head prints "SIZE ETAG". Errors: the client's
 * line on stderr, exit 1 (2: usage, 3: absent).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/s3/s3_client.h"
#include "collector/s3/s3_sign.h"

static size_t prefix_len;

static int print_obj(const struct s3_xml_obj *o, void *ctx)
{
    (void)ctx;
    printf("%s %" PRIu64 "\n", o->key + (strlen(o->key) >= prefix_len ? prefix_len : 0), o->size);
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: tool_s3 s3://BUCKET/PREFIX put NAME FILE|get NAME FILE|head NAME|"
                    "list [SUB]|delete NAME|put2 NAME FILE\n");
    return 2;
}

int main(int argc, char **argv)
{
    struct s3_cfg cfg;
    struct s3_client *c;
    char err[512], key[2048];
    int rc;
    if (argc < 3)
        return usage();
    if (s3_cfg_init(&cfg, argv[1], getenv("S3_ENDPOINT"), NULL, err, sizeof err) ||
        s3_cfg_credentials(&cfg, err, sizeof err)) {
        fprintf(stderr, "tool_s3: %s\n", err);
        return 1;
    }
    if (s3_client_open(&c, &cfg))
        return 1;
    s3_cfg_wipe(&cfg);
    const char *cmd = argv[2];
    if (s3_client_key(c, argc > 3 ? argv[3] : "", key, sizeof key))
        return usage();
    if ((strcmp(cmd, "put") == 0 || strcmp(cmd, "put2") == 0) && argc == 5) {
        FILE *f = fopen(argv[4], "rb");
        if (!f)
            return perror(argv[4]), 1;
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        rewind(f);
        char *buf = malloc((size_t)n + 1);
        if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
            return 1;
        fclose(f);
        rc = s3_client_put(c, key, buf, (size_t)n);
        if (rc == 0 && strcmp(cmd, "put2") == 0) {
            char name2[1024], sha[S3_SIGN_HEX_LEN + 1];
            uint8_t md5[16];
            uint64_t flen = 0;
            snprintf(name2, sizeof name2, "%s.2", argv[3]);
            int fd = open(argv[4], O_RDONLY | O_CLOEXEC);
            if (fd < 0 || s3_sign_file_sums(fd, &flen, sha, md5, NULL, NULL) ||
                s3_client_key(c, name2, key, sizeof key))
                rc = -EINVAL;
            else
                rc = s3_client_put_fd(c, key, fd, flen, sha, md5);
            if (fd >= 0)
                close(fd);
        }
        free(buf);
    } else if (strcmp(cmd, "get") == 0 && argc == 5) {
        FILE *f = fopen(argv[4], "wb");
        uint64_t len;
        if (!f)
            return perror(argv[4]), 1;
        rc = s3_client_get_file(c, key, f, UINT64_MAX, &len);
        fclose(f);
    } else if (strcmp(cmd, "head") == 0 && argc == 4) {
        uint64_t size;
        char etag[128];
        rc = s3_client_head(c, key, &size, etag, sizeof etag);
        if (rc == 0)
            printf("%" PRIu64 " %s\n", size, etag);
    } else if (strcmp(cmd, "list") == 0 && argc <= 4) {
        char base[1024];
        s3_client_key(c, "", base, sizeof base);
        prefix_len = strlen(base);
        rc = s3_client_list(c, key, print_obj, NULL);
    } else if (strcmp(cmd, "delete") == 0 && argc == 4) {
        rc = s3_client_delete(c, key);
    } else {
        s3_client_close(c);
        return usage();
    }
    if (rc)
        fprintf(stderr, "tool_s3: %s\n", s3_client_error(c));
    s3_client_close(c);
    return rc == 0 ? 0 : rc == -ENOENT ? 3 : 1;
}
