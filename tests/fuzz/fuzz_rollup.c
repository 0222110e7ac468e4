/*
 * fuzz_rollup.c — libFuzzer target for stored rollups (collector/store/rollup.c).
 *
 * The input is a rollups value as the index would hand it back. rollup_decode
 * must never crash or read out of bounds; whatever it accepts is walked
 * completely (every poll entry and its bins into a histogram, every worker
 * and count entry, a quantile; version 4's delay and field entries and their bins)
 * and must agree with what it checked: the bins of each poll entry hold count -
 * unfinished polls, a delay or field entry's hold its count. Also, the input re-sealed with a
 * correct CRC (so the checks past the CRC are reached) goes the same way.
 * Built and run by tests/fuzz/run.sh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/crc32c.h"
#include "collector/store/rollup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rollup_hist hist;

static void walk(const uint8_t *buf, size_t len)
{
    struct rollup_view v;
    if (rollup_decode(buf, len, &v, NULL, 0) != 0)
        return;
    size_t off = 0;
    uint32_t i = 0;
    struct rollup_poll p;
    uint64_t max = 0;
    memset(&hist, 0, sizeof hist);
    while (rollup_next_poll(&v, &off, &i, &p) == 1) {
        uint64_t before = hist.total;
        rollup_hist_add(&hist, &p);
        if (hist.total - before != p.count - p.unfinished)
            abort();
        if (p.max_ns > max)
            max = p.max_ns;
    }
    if (i != v.npoll)
        abort();
    for (uint32_t w = 0; w < v.nworker; w++) {
        struct rollup_worker rw;
        if (rollup_worker_at(&v, w, &rw) != 0)
            abort();
    }
    for (uint32_t k = 0; k < v.ncount; k++) {
        struct rollup_count rk;
        if (rollup_count_at(&v, k, &rk) != 0 || rk.n == 0)
            abort();
    }
    if (rollup_hist_quantile(&hist, 0.99, max) > max)
        abort();
    /* version 4: delays and fields, their bins as checked */
    struct rollup_delay d;
    off = 0;
    i = 0;
    while (rollup_next_delay(&v, &off, &i, &d) == 1) {
        memset(&hist, 0, sizeof hist);
        rollup_hist_add_bins(&hist, d.bins, d.nbins);
        if (hist.total != d.count ||
            rollup_bins_quantile(d.bins, d.nbins, d.count, d.max_ns, 0.5) > d.max_ns)
            abort();
    }
    if (i != v.ndelay)
        abort();
    struct rollup_field f;
    off = 0;
    i = 0;
    while (rollup_next_field(&v, &off, &i, &f) == 1) {
        memset(&hist, 0, sizeof hist);
        rollup_hist_add_bins(&hist, f.bins, f.nbins);
        if (hist.total != f.count || f.count == 0)
            abort();
    }
    if (i != v.nfield || (v.nfield && off != len))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    walk(data, size);
    if (size >= ROLLUP_HDR_SIZE && size < (1u << 20)) {
        uint8_t *c = malloc(size);
        if (!c)
            return 0;
        memcpy(c, data, size);
        memcpy(c, "D9RU", 4);
        uint32_t crc = crc32c_update(0, c + ROLLUP_HDR_SIZE, size - ROLLUP_HDR_SIZE);
        memcpy(c + 24, &crc, 4);
        walk(c, size);
        free(c);
    }
    return 0;
}
