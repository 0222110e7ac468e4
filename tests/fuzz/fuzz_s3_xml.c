/*
 * fuzz_s3_xml.c — the untrusted answers the S3 client reads
 * (collector/s3/s3_xml.c, s3_key.c): ListObjectsV2 pages, error bodies and
 * segment manifests. The first byte picks the parser; the rest is the body.
 * Checks: no crash, no read past the input, every key handed to the callback
 * is NUL-terminated within its bound, and a manifest that parses writes back
 * and parses to the same fields and threads (at most S3_KEY_THREADS_MAX,
 * names non-empty and bounded).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/s3/s3_key.h"
#include "collector/s3/s3_xml.h"

static int on_obj(const struct s3_xml_obj *o, void *ctx)
{
    (void)ctx;
    if (strlen(o->key) > S3_XML_KEY_MAX || strlen(o->etag) > S3_XML_ETAG_MAX)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    /* a private copy of exactly size bytes: ASan catches any overread */
    char *buf = malloc(size - 1 ? size - 1 : 1);
    if (!buf)
        return 0;
    memcpy(buf, data + 1, size - 1);
    switch (data[0] % 3) {
    case 0: {
        struct s3_xml_list page;
        if (s3_xml_list_parse(buf, size - 1, on_obj, NULL, &page) == 0 &&
            strlen(page.next_token) > S3_XML_TOKEN_MAX)
            abort();
        break;
    }
    case 1: {
        char code[64], msg[256];
        if (s3_xml_error_parse(buf, size - 1, code, sizeof code, msg, sizeof msg) == 0 &&
            (strlen(code) >= sizeof code || strlen(msg) >= sizeof msg))
            abort();
        break;
    }
    default: {
        static struct s3_key_threads t, t2;
        static char out[S3_KEY_MANIFEST_MAX * 2];
        struct s3_key_manifest m, again;
        if (s3_key_manifest_parse(buf, size - 1, &m, &t) == 0) {
            if (t.n > S3_KEY_THREADS_MAX ||
                s3_key_manifest_write(&m, &t, out, sizeof out) != 0 ||
                s3_key_manifest_parse(out, strlen(out), &again, &t2) != 0 ||
                memcmp(&m, &again, sizeof m) != 0 || t.n != t2.n)
                abort();
            for (uint32_t i = 0; i < t.n; i++)
                if (t.t[i].tid != t2.t[i].tid || t.t[i].ring != t2.t[i].ring ||
                    t.t[i].generation != t2.t[i].generation || !t.t[i].name[0] ||
                    strlen(t.t[i].name) > S3_KEY_THREAD_NAME_MAX ||
                    strcmp(t.t[i].name, t2.t[i].name) != 0)
                    abort();
        }
        break;
    }
    }
    free(buf);
    return 0;
}
