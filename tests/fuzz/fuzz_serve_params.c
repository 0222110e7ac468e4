/*
 * fuzz_serve_params.c — d9 serve's query arguments (serve_api_param): any
 * bytes, split like a query string into key=value pairs, must be accepted
 * or refused with a reason, never read out of bounds, and leave the
 * parameters within their documented ranges.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "collector/serve/serve_api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *q = malloc(size + 1);
    if (!q)
        return 0;
    memcpy(q, data, size);
    q[size] = 0;
    struct serve_params p;
    serve_api_params_init(&p);
    char why[96];
    char *save = NULL;
    for (char *kv = strtok_r(q, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(kv, '=');
        if (eq)
            *eq = 0;
        if (serve_api_param(&p, kv, eq ? eq + 1 : NULL, why, sizeof why) < 0 && !why[0])
            abort();                /* a refusal always says why */
        why[0] = 0;
    }
    if (p.width > SERVE_API_MAX_WIDTH || p.limit > SERVE_API_MAX_EVENTS ||
        (p.has_pid && p.pid == 0) || strlen(p.event) >= SERVE_API_STR_MAX ||
        strlen(p.field) >= SERVE_API_STR_MAX || strlen(p.value) >= SERVE_API_STR_MAX)
        abort();
    free(q);
    return 0;
}
