/*
 * fuzz_ring.c — libFuzzer target for the collector's ring reader.
 *
 * Input layout: 16 bytes of cursors (tail, head) followed by ring data
 * (padded or cut to D9_RING_DATA_MIN). The reader must never crash or read
 * out of bounds, every byte it returns must be whole validated records, and
 * its new tail must stay within [tail, head].
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "shm/ring.h"
#include "shm/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    static uint8_t ring[D9_RING_DATA_MIN];
    static uint8_t out[D9_RING_DATA_MIN];
    if (n < 16)
        return 0;
    struct shm_ring_snapshot s = { 0 };
    memcpy(&s.tail, in, 8);
    memcpy(&s.head, in + 8, 8);
    /* keep cursors near each other so the fuzzer explores framing, not just bounds */
    s.tail %= 4 * D9_RING_DATA_MIN;
    s.head = s.tail + (s.head % (2 * D9_RING_DATA_MIN));
    memset(ring, 0, sizeof ring);
    size_t dn = n - 16 < sizeof ring ? n - 16 : sizeof ring;
    memcpy(ring, in + 16, dn);

    size_t cap = (in[0] & 1) ? sizeof out : 64 + (in[1] % 512);
    uint64_t nt;
    long got = shm_ring_read(ring, sizeof ring, &s, out, cap, &nt, NULL);
    if (got >= 0) {
        if (nt < s.tail || nt > s.head || (size_t)got > cap)
            abort();
        for (long off = 0; off < got;) {
            int len = shm_record_check(out + off, (size_t)(got - off));
            if (len <= 0)
                abort();
            off += len;
        }
    }
    return 0;
}
