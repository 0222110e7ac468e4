/*
 * tool_store_big.c — write a store of more than SERVE_API_SCAN_MAX records
 * whose longest polls are known, sealed with its rollups as the collector
 * does, for test_serve_overview.sh: `d9 serve`'s whole-store view of it is
 * the index overview, and its longest polls must come from the rollups.
 *
 * One process (pid TSB_PID, comm "big"), runtime 1 "rt", times from TSB_T0:
 *   w3   (tid TSB_PID+3, ring 3) TSB_BUSY polls of 2 us every 5 us from
 *        0 s (location busy_poll): the records that make the store big;
 *        its blocks come first in time;
 *   w1   (tid TSB_PID+1, ring 1) one poll of 300 ms at 4.2 s (slow_poll,
 *        task 7);
 *   w2   (tid TSB_PID+2, ring 2) one poll of 200 ms at 6.1 s (mid_poll,
 *        task 8);
 *   main (tid TSB_PID, ring 0) TSB_EVENTS custom events every 3 ms from
 *        3.5 s (every 10th a "tock", the others "tick", field n = its
 *        number), then one poll of 1 ms at 9 s (main_poll): its blocks are
 *        the last, but its lane comes first.
 * Segment 1 holds w3's polls, segment 2 the others.
 *
 * Usage: tool_store_big DIR   (DIR must not exist). Prints nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "collector/store/crc32c.h"
#include "collector/store/idx.h"
#include "collector/store/pack.h"
#include "collector/store/rollup.h"
#include "collector/store/seg_writer.h"
#include "shm/meta.h"

#define TSB_PID        7272u
#define TSB_T0         1000000000ull
#define TSB_MS         1000000ull
#define TSB_US         1000ull
#define TSB_BUSY       560000u      /* 1.12 M records */
#define TSB_RINGS      4u
#define TSB_BLOCK_POLLS 2000u
#define TSB_EVENTS     1800u
#define TSB_RAW        (TSB_BLOCK_POLLS * 2u * 40u)

static void die(const char *what, int rc)
{
    fprintf(stderr, "tool_store_big: %s: %s\n", what, strerror(rc < 0 ? -rc : rc));
    exit(1);
}

struct ring {
    uint8_t raw[TSB_RAW];
    size_t n;
    uint32_t seq;
    struct seg_data_stats st;
};

static struct ring rings[TSB_RINGS];

static void put(struct ring *r, void *rec, size_t len)
{
    struct d9_rec_hdr h;
    memcpy(&h, rec, sizeof h);
    h.seq = r->seq++;
    memcpy(rec, &h, sizeof h);
    if (r->n + len > sizeof r->raw)
        die("ring", -ENOBUFS);
    memcpy(r->raw + r->n, rec, len);
    r->n += len;
    if (r->st.nrec == 0 || h.ts < r->st.t_min)
        r->st.t_min = h.ts;
    if (h.ts > r->st.t_max)
        r->st.t_max = h.ts;
    r->st.counts[h.type]++;
    r->st.nrec++;
}

static void poll(unsigned w, uint64_t task, uint32_t loc, uint64_t t, uint64_t dur)
{
    struct d9_rec_poll_start s = { { sizeof s, D9_REC_POLL_START, 0, t }, task, loc, 1,
                                   (uint16_t)w };
    put(&rings[w], &s, sizeof s);
    struct d9_rec_poll_end e = { { sizeof e, D9_REC_POLL_END, 0, t + dur }, task, 1,
                                 (uint16_t)w, 0 };
    put(&rings[w], &e, sizeof e);
}

static void event(unsigned w, uint32_t schema, uint64_t n, uint64_t t)
{
    uint8_t rec[sizeof(struct d9_rec_custom) + 8];
    struct d9_rec_custom c = { { sizeof rec, D9_REC_CUSTOM, 0, t }, schema, 8, D9_TASK_NONE };
    memcpy(rec, &c, sizeof c);
    memcpy(rec + sizeof c, &n, 8);
    put(&rings[w], rec, sizeof rec);
}

/* Write ring w's records so far as one DATA block and empty it. */
static void commit(struct seg_writer *sw, uint32_t tid, unsigned w)
{
    static uint8_t dst[PACK_BOUND(TSB_RAW)];
    struct ring *r = &rings[w];
    if (!r->n)
        return;
    struct pack_state pk;
    pack_init(&pk);
    long e = pack_records(&pk, r->raw, r->n, dst + PACK_PREFIX, sizeof dst - PACK_PREFIX);
    if (e < 0)
        die("pack_records", (int)e);
    size_t plen = pack_finish(dst, (size_t)e, (uint32_t)r->n);
    uint8_t *payload;
    int rc = seg_writer_data_reserve(sw, (plen + 7) & ~(size_t)7, &payload);
    if (rc)
        die("seg_writer_data_reserve", rc);
    memcpy(payload, dst, plen);
    rc = seg_writer_data_commit(sw, tid, w, 1, 0, plen, &r->st, crc32c_update(0, payload, plen),
                                SEG_BF_PACKED);
    if (rc)
        die("seg_writer_data_commit", rc);
    r->n = 0;
    memset(&r->st, 0, sizeof r->st);
}

static uint8_t meta[4096];
static size_t meta_len;

static void meta_add(uint16_t kind, uint32_t id, const uint8_t *p, int n)
{
    if (n <= 0)
        die("metadata", -EINVAL);
    struct d9_meta_hdr h = { (uint16_t)((sizeof h + (size_t)n + 7) & ~7u), kind, id };
    if (meta_len + h.len > sizeof meta)
        die("metadata", -ENOBUFS);
    memset(meta + meta_len, 0, h.len);
    memcpy(meta + meta_len, &h, sizeof h);
    memcpy(meta + meta_len + sizeof h, p, (size_t)n);
    meta_len += h.len;
}

/* Seal and index as the collector does: the segment row with its rollups. */
static void seal(struct idx *x, struct seg_writer *sw, int64_t process_id, const char *dir)
{
    struct seg_summary sum;
    int rc = seg_writer_seal(sw, &sum);
    if (rc)
        die("seal", rc);
    uint8_t *ru = NULL;
    size_t n = 0;
    if ((rc = rollup_file(sum.path, &ru, &n)))
        die("rollup_file", rc);
    if ((rc = idx_segment_commit_rollup(x, process_id, &sum, dir, ru, n)))
        die("index", rc);
    free(ru);
    seg_writer_free(sw);
}

int main(int argc, char **argv)
{
    if (argc != 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: tool_store_big DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    if (mkdir(dir, 0700) < 0)
        die(dir, -errno);
    struct idx *x;
    int rc = idx_open(&x, dir);
    if (rc)
        die("idx_open", rc);
    uint8_t p[512];
    meta_add(D9_META_RUNTIME, 1, p, shm_meta_encode_runtime(p, sizeof p, "rt"));
    meta_add(D9_META_LOCATION, 1, p, shm_meta_encode_location(p, sizeof p, "src/main.c", 1, "main_poll"));
    meta_add(D9_META_LOCATION, 2, p, shm_meta_encode_location(p, sizeof p, "src/busy.c", 2, "busy_poll"));
    meta_add(D9_META_LOCATION, 3, p, shm_meta_encode_location(p, sizeof p, "src/slow.c", 3, "slow_poll"));
    meta_add(D9_META_LOCATION, 4, p, shm_meta_encode_location(p, sizeof p, "src/mid.c", 4, "mid_poll"));

    static const uint8_t ty[] = { D9_FT_U64 };
    static const char *const nm[] = { "n" };
    meta_add(D9_META_SCHEMA, 1, p, shm_meta_encode_schema(p, sizeof p, "tick", 1, ty, nm));
    meta_add(D9_META_SCHEMA, 2, p, shm_meta_encode_schema(p, sizeof p, "tock", 1, ty, nm));

    int64_t process_id;
    struct idx_process ip = { .pid = TSB_PID, .start_time = 77, .comm = "big",
                              .exe = "/big", .first_ns = TSB_T0 };
    if ((rc = idx_process_upsert(x, &ip, &process_id)))
        die("idx_process_upsert", rc);
    if ((rc = idx_runtime_upsert(x, process_id, 1, "rt")))
        die("idx_runtime_upsert", rc);
    static const char *names[TSB_RINGS] = { "main", "w1", "w2", "w3" };
    for (unsigned w = TSB_RINGS; w-- > 0;)      /* indexed in the reverse order */
        if ((rc = idx_thread_upsert(x, process_id, TSB_PID + w, w, 1, names[w], TSB_T0, 0, 0)))
            die("idx_thread_upsert", rc);
    struct seg_proc_info pi = { .pid = TSB_PID, .start_time = 77, .clock_source = D9_CLOCK_MONOTONIC,
                                .host = "big", .comm = "big", .exe = "/big" };

    struct seg_writer *sw;
    if ((rc = seg_writer_open(&sw, dir, 1, &pi, meta, meta_len)))
        die("seg_writer_open", rc);
    uint64_t t = TSB_T0;
    for (unsigned k = 0; k < TSB_BUSY; k++, t += 5 * TSB_US) {
        poll(3, 1000 + k, 2, t, 2 * TSB_US);
        if (k % TSB_BLOCK_POLLS == TSB_BLOCK_POLLS - 1)
            commit(sw, TSB_PID + 3, 3);
    }
    commit(sw, TSB_PID + 3, 3);
    seal(x, sw, process_id, dir);

    if ((rc = seg_writer_open(&sw, dir, 2, &pi, meta, meta_len)))
        die("seg_writer_open", rc);
    poll(1, 7, 3, TSB_T0 + 4200 * TSB_MS, 300 * TSB_MS);
    commit(sw, TSB_PID + 1, 1);
    poll(2, 8, 4, TSB_T0 + 6100 * TSB_MS, 200 * TSB_MS);
    commit(sw, TSB_PID + 2, 2);
    for (unsigned k = 0; k < TSB_EVENTS; k++) {
        event(0, k % 10 == 9 ? 2 : 1, k, TSB_T0 + 3500 * TSB_MS + k * 3 * TSB_MS);
        if (k % 500 == 499)
            commit(sw, TSB_PID, 0);
    }
    poll(0, 1, 1, TSB_T0 + 9000 * TSB_MS, 1 * TSB_MS);
    commit(sw, TSB_PID, 0);
    seal(x, sw, process_id, dir);
    idx_close(x);
    return 0;
}
