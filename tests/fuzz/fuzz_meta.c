/*
 * fuzz_meta.c — libFuzzer target for the collector's parsing of a region's
 * header and metadata log: shm_region_validate() on a header copy and a full
 * shm_meta_next() walk. Neither may crash, read out of bounds or loop.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "shm/region.h"
#include "shm/meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    if (n >= sizeof(struct d9_region_hdr) + 8) {
        struct d9_region_hdr h;
        memcpy(&h, in, sizeof h);
        uint64_t fsz;
        memcpy(&fsz, in + sizeof h, 8);
        struct shm_geometry g;
        if (shm_region_validate(&h, fsz, &g) == 0 &&
            (strlen(g.comm) > 16 || strlen(g.exe) > 256 ||
             g.rings_offset + (uint64_t)g.ring_count * g.ring_stride != fsz))
            abort();
    }
    uint8_t *copy = malloc(n ? n : 1);      /* exact size: ASan sees over-reads */
    memcpy(copy, in, n);
    size_t off = 0, prev = 0;
    struct shm_meta_entry e;
    int rc;
    while ((rc = shm_meta_next(copy, n, &off, &e)) == 1) {
        if (off <= prev || off > n)
            abort();
        prev = off;
        if (e.name && strlen(e.name) == 0 && e.kind != D9_META_LOCATION)
            abort();
    }
    free(copy);
    return 0;
}
