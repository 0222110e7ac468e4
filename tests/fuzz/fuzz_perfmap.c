/*
 * fuzz_perfmap.c — libFuzzer target for the perf map parser
 * (collector/store/perfmap.c): arbitrary /tmp/perf-PID.map bytes, fed in
 * two pieces (the file grows between polls), must never crash, read out of
 * bounds, keep more than PERFMAP_ENTRIES_MAX entries, or yield an empty,
 * over-long or non-printable name or an empty range.
 * Built and run by tests/fuzz/run.sh.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct perfmap m;
    perfmap_init(&m);
    size_t cut = size ? data[0] % (size + 1) : 0;
    char *a = malloc(cut ? cut : 1), *b = malloc(size - cut ? size - cut : 1);
    if (!a || !b) {
        free(a);
        free(b);
        return 0;
    }
    memcpy(a, data, cut);
    memcpy(b, data + cut, size - cut);
    perfmap_feed(&m, a, cut);
    perfmap_feed(&m, b, size - cut);
    if (m.n > PERFMAP_ENTRIES_MAX)
        abort();
    for (size_t i = 0; i < m.n; i++) {
        size_t l = strlen(m.e[i].name);
        if (l == 0 || l > PERFMAP_NAME_MAX || m.e[i].end <= m.e[i].start)
            abort();
        for (size_t k = 0; k < l; k++)
            if ((unsigned char)m.e[i].name[k] < 0x20)
                abort();
        if (!perfmap_lookup(&m, m.e[i].start))
            abort();
    }
    perfmap_free(&m);
    free(a);
    free(b);
    return 0;
}
