/*
 * fuzz_serve_guard.c — d9 serve's Host / Origin check (serve_guard_check):
 * any bytes as the Host header and as the Origin header (split at the
 * first NUL) must be answered 0 or -EPERM with a one-line reason, never
 * read out of bounds; an answered Host names our port or is allowed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "collector/serve/serve_guard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 2);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    buf[size + 1] = 0;
    const char *host = buf;
    const char *origin = buf + strlen(buf) + 1;
    struct serve_guard g;
    serve_guard_init(&g, 8009);
    if (serve_guard_allow(&g, "d9.example") != 0)
        abort();
    char why[160];
    why[0] = 0;
    int rc = serve_guard_check(&g, host, *origin ? origin : NULL, why, sizeof why);
    if (rc != 0 && (rc != -EPERM || !why[0] || strchr(why, '\n')))
        abort();
    free(buf);
    return 0;
}
