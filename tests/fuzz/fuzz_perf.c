/*
 * fuzz_perf.c — libFuzzer target for the perf mmap-ring walker and record
 * parsers (collector/daemon/perf.c), which read memory the kernel writes but that
 * the collector treats as untrusted.
 *
 * Input: 16 bytes of cursors (tail, head), then the ring data area (its
 * length rounded down to a power of two, the size the walker is told). Every
 * record handed out is parsed as a sample, a sample_id trailer and a
 * callchain (also cut as a tick sample's, perf_tick_strip, then parsed
 * again as perf_host does); nothing may crash, read out of bounds or hand out a record
 * longer than the bytes published. Built and run by tests/fuzz/run.sh.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "collector/daemon/perf.h"
#include "collector/daemon/perf_tick.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t g_scratch[PERF_REC_SCRATCH];
/* entry stubs where fuzzed kernel addresses often land */
static const struct perf_tick g_tick = {
    .tp_id = 1, .handler = 0xffffffff81000000ull, .tick_ns = 4000000,
    .entry = { { 0xffffffff81000000ull, 0xffffffff81001000ull }, { 0, 0 },
               { 0x8000000000000000ull, 0x8000000000000040ull } },
};

static int on_rec(void *ctx, const struct perf_event_header *h, const uint8_t *rec, size_t len)
{
    uint64_t *avail = ctx;
    if (len != h->size || len > *avail || len < sizeof *h)
        abort();
    *avail -= len;
    struct perf_sample s;
    if (perf_parse_sample(rec, len, &s) == 0) {
        uint64_t out[D9_STACK_MAX_FRAMES];
        uint16_t flags;
        uint16_t n = perf_callchain_to_frames(s.ips, s.nr, out, D9_STACK_MAX_FRAMES, &flags);
        if (n > D9_STACK_MAX_FRAMES)
            abort();
        uint64_t cut[256];
        int unanchored;
        size_t m = perf_tick_strip(&g_tick, s.ips, s.nr, cut, 256, &unanchored);
        if (m > 256 || m > s.nr || (unanchored != 0 && unanchored != 1))
            abort();
        n = perf_callchain_to_frames((const uint8_t *)cut, m, out, D9_STACK_MAX_FRAMES, &flags);
        if (n > D9_STACK_MAX_FRAMES)
            abort();
    }
    if (perf_parse_sample_as(rec, len, PERF_TICK_SAMPLE_TYPE, &s) == 0 &&
        (s.period != 0 || s.nr > (len - 40) / 8))
        abort();
    struct perf_sample_id sid;
    perf_parse_sample_id(rec, len, &sid);
    uint64_t lost;
    perf_parse_lost(rec, len, &lost);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 16 + 8)
        return 0;
    uint64_t tail, head;
    memcpy(&tail, data, 8);
    memcpy(&head, data + 8, 8);
    size_t n = size - 16, ring = 1;
    while (ring * 2 <= n)
        ring *= 2;
    /* exact-size copy: ASan sees any read past the ring */
    uint8_t *buf = malloc(ring);
    if (!buf)
        return 0;
    memcpy(buf, data + 16, ring);
    /* keep cursors near each other often enough to reach the records */
    if (data[0] & 1)
        head = tail + (head % (2 * ring));
    uint64_t avail = head - tail, nt;
    int rc = perf_ring_walk(buf, ring, tail, head, g_scratch, on_rec, &avail, &nt);
    if (rc == 0 && nt != head)
        abort();
    if (nt - tail > head - tail && head - tail <= ring)
        abort();            /* never past what was published */
    free(buf);
    return 0;
}
