/*
 * meta_entry.h — the metadata entry unit tests put in a segment: a runtime's
 * name under its id, laid out as an agent writes it into its region (header,
 * payload, zeros up to a multiple of 8 bytes). For tests only; header-only,
 * included after <cmocka.h>.
 */
#ifndef D9_TEST_META_ENTRY_H
#define D9_TEST_META_ENTRY_H

#include <stdint.h>
#include <string.h>
#include "shm/meta.h"

/* The runtime entry (id, name) at out, which has room for it (the header,
 * the encoded name and 7 bytes of padding); its length. */
static inline size_t meta_entry_runtime(uint8_t *out, uint32_t id, const char *name)
{
    uint8_t payload[80];
    int n = shm_meta_encode_runtime(payload, sizeof payload, name);
    assert_true(n > 0);
    struct d9_meta_hdr h = { .len = (uint16_t)((sizeof h + (size_t)n + 7) & ~7u),
                             .kind = D9_META_RUNTIME, .id = id };
    memset(out, 0, h.len);
    memcpy(out, &h, sizeof h);
    memcpy(out + sizeof h, payload, (size_t)n);
    return h.len;
}

#endif
