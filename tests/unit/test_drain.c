/*
 * test_drain.c — the collector's drain step (collector/daemon/drain.c, with
 * proc.c, storedir.c and guard.c) as a specification, against real regions
 * in a temp dir and a real store: what reaches the segment, when ring tails
 * move, what is quarantined, plus the pure pieces (adaptive sleep in pace.c,
 * rotation, timestamp conversion, calibration reads).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>
#include "collector/daemon/drain.h"
#include "collector/daemon/guard.h"
#include "collector/daemon/met.h"
#include "collector/store/idx.h"
#include "collector/store/idx_read.h"
#include "collector/store/idx_int.h"
#include "collector/store/col_log.h"
#include "collector/daemon/proc.h"
#include "collector/store/seg_writer.h"
#include "collector/store/seg_reader.h"
#include "collector/daemon/storedir.h"
#include "shm/meta.h"
#include "shm/region.h"
#include "shm/ring.h"

#define RINGS 4
#define RING_BYTES (64u * 1024u)
#define LATER_NS (10ULL * 1000000000ULL)  /* past any write-retry backoff */

struct fx {
    char dir[64], shm[96], store[96];
    struct shm_region reg;
    struct shm_producer prod[RINGS];
    struct storedir st;
    struct proc *p;
    uint64_t ts;
};

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st; (void)flag; (void)f;
    return remove(p);
}

static uint32_t g_ring_count = RINGS;   /* rings of the next fixture's region */

static int setup_clock(void **state, uint32_t clock)
{
    struct fx *fx = calloc(1, sizeof *fx);
    /* many rings: on tmpfs, like /dev/shm (no read-around filling the page cache) */
    strcpy(fx->dir, g_ring_count > RINGS && access("/dev/shm", W_OK) == 0
                        ? "/dev/shm/d9draintest.XXXXXX" : "/tmp/d9draintest.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    snprintf(fx->shm, sizeof fx->shm, "%s/shm", fx->dir);
    snprintf(fx->store, sizeof fx->store, "%s/store", fx->dir);
    assert_int_equal(mkdir(fx->shm, 0700), 0);
    col_log_init("test_drain", COL_LOG_ERROR);
    assert_int_equal(guard_install(), 0);
    struct shm_region_params prm = { .ring_count = g_ring_count, .ring_data_size = RING_BYTES,
                                     .clock_source = clock, .dir = fx->shm };
    assert_int_equal(shm_region_create(&prm, &fx->reg), 0);
    char err[256];
    assert_int_equal(storedir_open(&fx->st, fx->store, 1u << 30, err, sizeof err), 0);
    fx->ts = 1000;
    *state = fx;
    return 0;
}
static int setup(void **state) { return setup_clock(state, D9_CLOCK_MONOTONIC); }
#define MANY_RINGS 512u
static int setup_many(void **state)
{
    g_ring_count = MANY_RINGS;
    int rc = setup_clock(state, D9_CLOCK_MONOTONIC);
    g_ring_count = RINGS;
    return rc;
}
static int setup_tsc(void **state) { return setup_clock(state, D9_CLOCK_TSC); }

static int teardown(void **state)
{
    struct fx *fx = *state;
    proc_free(fx->p);
    storedir_close(&fx->st);
    unlink(fx->reg.path);
    shm_region_close(&fx->reg);
    nftw(fx->dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
    free(fx);
    return 0;
}

static void adopt(struct fx *fx)
{
    const char *base = strrchr(fx->reg.path, '/') + 1;
    assert_int_equal(proc_adopt(fx->reg.path, base, getuid(), &fx->st, NULL, &fx->p), 0);
}

static int claim(struct fx *fx, const char *name)
{
    int idx = shm_slot_claim(&fx->reg, 100 + (uint32_t)fx->ts, name);
    assert_true(idx >= 0);
    struct d9_region_hdr *h = fx->reg.hdr;
    shm_producer_attach(&fx->prod[idx], shm_ring_hdr(&fx->reg, &(struct shm_geometry){
                            .rings_offset = h->rings_offset, .ring_stride = h->ring_stride },
                            (uint32_t)idx),
                        fx->reg.base + h->rings_offset + (uint64_t)idx * h->ring_stride +
                            D9_RING_HDR_SIZE, h->ring_data_size);
    return idx;
}

static struct d9_ring_hdr *ring(struct fx *fx, int idx)
{
    return fx->prod[idx].hdr;
}

static void produce(struct fx *fx, int idx, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        struct d9_rec_poll_start *r = shm_ring_reserve(&fx->prod[idx], sizeof *r);
        assert_non_null(r);
        r->task = i;
        r->loc = 0;
        r->runtime = 1;
        r->worker = 0;
        shm_ring_commit(&fx->prod[idx], r, sizeof *r, D9_REC_POLL_START, fx->ts++);
    }
}

static int drain(struct fx *fx, uint64_t now, struct drain_result *res)
{
    memset(res, 0, sizeof *res);
    return drain_proc(fx->p, &fx->st, now, 1, res);
}

/* Totals over every sealed segment in the store. */
struct totals { uint64_t records, thread_ends, lost, blocks_gen2; int schema_found; uint64_t first_ts; };

static struct totals read_store(struct fx *fx)
{
    struct totals t = { 0 };
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls %s/*.d9seg 2>/dev/null", fx->store);
    FILE *ls = popen(cmd, "r");
    char path[512];
    while (fgets(path, sizeof path, ls)) {
        path[strcspn(path, "\n")] = 0;
        struct seg_reader *r;
        assert_int_equal(seg_reader_open(&r, path, 0), 0);
        struct seg_block b;
        while (seg_reader_next(r, &b) == 1) {
            t.lost += b.h.lost;
            if (b.h.kind == SEG_BLK_THREAD_END)
                t.thread_ends++;
            if (b.h.kind == SEG_BLK_DATA) {
                t.records += b.h.nrec;
                if (b.h.generation == 2)
                    t.blocks_gen2++;
                if (!t.first_ts && b.h.nrec)
                    t.first_ts = b.h.t_first;
            }
        }
        t.schema_found |= seg_reader_schema(r, 1) != NULL;
        seg_reader_close(r);
    }
    pclose(ls);
    return t;
}

/* ---- the drain step ---------------------------------------------------------- */

static void drained_records_reach_the_segment_and_the_tail_follows(void **state)
{
    struct fx *fx = *state;
    int r0 = claim(fx, "w0");
    produce(fx, r0, 100);
    adopt(fx);
    struct drain_result res;
    assert_int_equal(drain(fx, 1, &res), 0);
    assert_int_equal(res.records, 100);
    assert_int_equal(atomic_load(&ring(fx, r0)->tail), atomic_load(&ring(fx, r0)->head));
    assert_int_equal(drain_seal(fx->p, &fx->st), 0);
    assert_int_equal(read_store(fx).records, 100);
}

/* A regular pass (force 0), as d9collectd's loop makes them. */
static int pass(struct fx *fx, uint64_t now, struct drain_result *res)
{
    memset(res, 0, sizeof *res);
    return drain_proc(fx->p, &fx->st, now, 0, res);
}

static void a_live_ring_is_read_once_it_holds_a_batch_or_its_backlog_is_old(void **state)
{
    struct fx *fx = *state;
    int r0 = claim(fx, "w0");
    adopt(fx);
    struct drain_result res;
    const uint64_t t0 = 1000000000ull;
    produce(fx, r0, 2);
    assert_int_equal(pass(fx, t0 - 1, &res), 0);
    assert_int_equal(res.records, 2);                  /* a thread's first records: at once */
    produce(fx, r0, 10);
    assert_int_equal(pass(fx, t0, &res), 0);
    assert_int_equal(res.records, 0);                  /* then a few records wait for more */
    assert_int_equal(fx->p->rings[r0].lag_bytes, 10 * 32u);
    assert_int_equal(pass(fx, t0 + DRAIN_BATCH_NS - 1, &res), 0);
    assert_int_equal(res.records, 0);
    assert_int_equal(pass(fx, t0 + DRAIN_BATCH_NS, &res), 0);
    assert_int_equal(res.records, 10);                 /* the backlog got old */
    assert_int_equal(atomic_load(&ring(fx, r0)->tail), atomic_load(&ring(fx, r0)->head));
    /* a batch's worth is read at once */
    produce(fx, r0, drain_batch(RING_BYTES) / 32);
    assert_int_equal(pass(fx, t0 + DRAIN_BATCH_NS + 1, &res), 0);
    assert_int_equal(res.records, drain_batch(RING_BYTES) / 32);
    /* a flush (force) reads whatever is there */
    produce(fx, r0, 3);
    assert_int_equal(drain(fx, t0 + DRAIN_BATCH_NS + 2, &res), 0);
    assert_int_equal(res.records, 3);
}

/* The pacing's rate is what arrived since the previous pass, not the
 * backlog: a batch left waiting is counted once, when it arrives. */
static void a_waiting_batch_is_new_data_only_at_the_pass_that_finds_it(void **state)
{
    struct fx *fx = *state;
    int r0 = claim(fx, "w0");
    adopt(fx);
    struct drain_result res;
    const uint64_t t0 = 1000000000ull;
    produce(fx, r0, 2);
    assert_int_equal(pass(fx, t0 - 1, &res), 0);       /* first records, at once */
    assert_int_equal(res.full_fill, 2 * 32u);
    produce(fx, r0, 10);
    assert_int_equal(pass(fx, t0, &res), 0);
    assert_int_equal(res.records, 0);                  /* waits for a batch */
    assert_int_equal(res.full_fill, 10 * 32u);
    assert_int_equal(pass(fx, t0 + 1, &res), 0);
    assert_int_equal(fx->p->rings[r0].lag_bytes, 10 * 32u);
    assert_int_equal(res.full_fill, 0);                /* nothing new */
    produce(fx, r0, 4);
    assert_int_equal(pass(fx, t0 + 2, &res), 0);
    assert_int_equal(res.full_fill, 4 * 32u);
}

/* Whatever backlog makes the pacing go again at once (a ring 1/8 full) is
 * read by that pass: a batch larger than that made small rings a busy loop. */
static void a_ring_full_enough_to_pace_the_collector_is_read(void **state)
{
    struct fx *fx = *state;
    int r0 = claim(fx, "w0");
    adopt(fx);
    struct drain_result res;
    produce(fx, r0, 1);
    assert_int_equal(pass(fx, 1, &res), 0);            /* the first record, at once */
    const unsigned n = RING_BYTES / PACE_BUSY_DIV / 32u;
    produce(fx, r0, n);
    struct pace b;
    pace_init(&b, 100, 10000);
    uint64_t lag = (uint64_t)n * 32u;
    assert_int_equal(pace_by_pressure(&b, lag, RING_BYTES, 1000, 0), 0);   /* go again */
    assert_int_equal(pass(fx, 2, &res), 0);
    assert_int_equal(res.records, n);
    assert_true(drain_batch(RING_BYTES) * PACE_BUSY_DIV < RING_BYTES);
    for (uint64_t size = D9_RING_DATA_MIN; size <= D9_RING_DATA_MAX; size *= 2) {
        assert_true(drain_batch(size) > 0);
        assert_true(drain_batch(size) * PACE_BUSY_DIV < size);
        assert_true(drain_batch(size) <= DRAIN_BATCH);
    }
}

static void an_ended_thread_is_read_without_waiting_for_a_batch(void **state)
{
    struct fx *fx = *state;
    int r0 = claim(fx, "w0");
    adopt(fx);
    produce(fx, r0, 5);
    shm_slot_release(&fx->reg, (uint32_t)r0);
    struct drain_result res;
    assert_int_equal(pass(fx, 1, &res), 0);
    assert_int_equal(res.records, 5);
    assert_int_equal(pass(fx, 2, &res), 0);            /* flushed: the thread's end follows */
    assert_int_equal(drain_seal(fx->p, &fx->st), 0);
    struct totals t = read_store(fx);
    assert_int_equal(t.records, 5);
    assert_int_equal(t.thread_ends, 1);
}

static void a_failed_write_leaves_the_records_in_the_ring_until_it_succeeds(void **state)
{
    struct fx *fx = *state;
    int r0 = claim(fx, "w0");
    adopt(fx);
    produce(fx, r0, 1);
    struct drain_result res;
    assert_int_equal(drain(fx, 1, &res), 0);      /* opens the segment file */
    uint64_t tail0 = atomic_load(&ring(fx, r0)->tail);
    produce(fx, r0, 1000);
    /* the next write hits the file size limit (EFBIG): a stand-in for ENOSPC */
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = seg_writer_bytes(fx->p->writer) + 1024;
    signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = drain(fx, 2, &res);
    uint64_t tail_after = atomic_load(&ring(fx, r0)->tail);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);   /* before any assert can bail out */
    assert_int_equal(rc, 0);
    assert_true(res.write_failed);
    assert_int_equal(tail_after, tail0);                   /* nothing consumed */
    assert_true(fx->st.write_errors >= 1);
    assert_int_equal(drain(fx, LATER_NS, &res), 0);
    assert_false(res.write_failed);
    assert_int_equal(atomic_load(&ring(fx, r0)->tail), atomic_load(&ring(fx, r0)->head));
    assert_int_equal(drain_seal(fx->p, &fx->st), 0);
    assert_int_equal(read_store(fx).records, 1001);  /* none lost, none twice */
}

static void a_corrupt_ring_is_quarantined_and_the_others_keep_draining(void **state)
{
    struct fx *fx = *state;
    int bad = claim(fx, "bad"), good = claim(fx, "good");
    produce(fx, bad, 3);
    produce(fx, good, 5);
    /* the owner scribbles an impossible length over its first record */
    uint8_t *data = (uint8_t *)ring(fx, bad) + D9_RING_HDR_SIZE;
    uint16_t len = 12;
    memcpy(data, &len, sizeof len);
    adopt(fx);
    struct drain_result res;
    assert_int_equal(drain(fx, 1, &res), 0);
    assert_int_equal(res.records, 5);
    assert_true(fx->p->rings[bad].quarantined);
    assert_false(fx->p->rings[good].quarantined);
    assert_int_equal(fx->p->quarantined_rings, 1);
    assert_int_equal(atomic_load(&ring(fx, bad)->tail), 0);   /* never consumed */
    produce(fx, good, 2);
    assert_int_equal(drain(fx, 2, &res), 0);
    assert_int_equal(res.records, 2);
}

static void a_truncated_region_quarantines_the_process_instead_of_crashing(void **state)
{
    struct fx *fx = *state;
    int r0 = claim(fx, "w0");
    produce(fx, r0, 10);
    adopt(fx);
    struct drain_result res;
    assert_int_equal(drain(fx, 1, &res), 0);            /* the ring is being drained */
    produce(fx, r0, 10);
    assert_int_equal(guard_install(), 0);   /* cmocka installs its own SIGBUS handler per test */
    assert_int_equal(truncate(fx->reg.path, 4096), 0);  /* a hostile owner shrinks the file */
    assert_int_equal(drain(fx, 1, &res), -EFAULT);
    assert_true(fx->p->quarantined);
    assert_int_equal(drain(fx, 2, &res), 0);             /* never touched again */
    assert_int_equal(res.records, 0);
}

static void a_new_generation_on_a_ring_ends_the_previous_thread(void **state)
{
    struct fx *fx = *state;
    int r0 = claim(fx, "first");
    produce(fx, r0, 4);
    adopt(fx);
    struct drain_result res;
    assert_int_equal(drain(fx, 1, &res), 0);
    shm_slot_release(&fx->reg, (uint32_t)r0);
    assert_int_equal(drain(fx, 2, &res), 0);            /* drained + released: recycled */
    assert_int_equal(atomic_load(&ring(fx, r0)->state), D9_RING_FREE);
    atomic_store(&fx->reg.hdr->ring_hint, (uint32_t)r0);  /* make the agent pick it again */
    int again = claim(fx, "second");
    assert_int_equal(again, r0);
    produce(fx, again, 6);
    assert_int_equal(drain(fx, 3, &res), 0);
    assert_int_equal(drain_seal(fx->p, &fx->st), 0);
    struct totals t = read_store(fx);
    assert_int_equal(t.records, 10);
    assert_int_equal(t.thread_ends, 1);
    assert_int_equal(t.blocks_gen2, 1);
}

static void ring_drops_are_reported_as_deltas(void **state)
{
    struct fx *fx = *state;
    int r0 = claim(fx, "w0");
    produce(fx, r0, 1);
    atomic_store(&ring(fx, r0)->lost, 5);
    adopt(fx);
    struct drain_result res;
    assert_int_equal(drain(fx, 1, &res), 0);
    produce(fx, r0, 1);
    atomic_store(&ring(fx, r0)->lost, 7);
    assert_int_equal(drain(fx, 2, &res), 0);
    assert_int_equal(fx->p->lost, 7);
    assert_int_equal(drain_seal(fx->p, &fx->st), 0);
    assert_int_equal(read_store(fx).lost, 7);
}

static void drops_reported_before_a_collector_restart_are_not_reported_again(void **state)
{
    struct fx *fx = *state;
    int r0 = claim(fx, "w0");
    produce(fx, r0, 1);
    atomic_store(&ring(fx, r0)->lost, 5);
    adopt(fx);
    struct drain_result res;
    assert_int_equal(drain(fx, 1, &res), 0);
    assert_int_equal(drain_seal(fx->p, &fx->st), 0);
    proc_free(fx->p);                       /* the collector goes away ... */
    fx->p = NULL;
    produce(fx, r0, 1);
    atomic_store(&ring(fx, r0)->lost, 7);
    adopt(fx);                                  /* ... and a new one adopts the region */
    assert_int_equal(drain(fx, 2, &res), 0);
    assert_int_equal(drain_seal(fx->p, &fx->st), 0);
    struct totals t = read_store(fx);
    assert_int_equal(t.records, 2);
    assert_int_equal(t.lost, 7);
}

static unsigned temp_segments(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    unsigned n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += strncmp(de->d_name, SEG_TMP_PREFIX, strlen(SEG_TMP_PREFIX)) == 0;
    closedir(d);
    return n;
}

/* (and frees the writer: LeakSanitizer fails this binary if it does not) */
static void an_abandoned_writer_leaves_its_temp_segment_for_salvage(void **state)
{
    struct fx *fx = *state;
    int r0 = claim(fx, "w0");
    produce(fx, r0, 3);
    adopt(fx);
    struct drain_result res;
    assert_int_equal(drain(fx, 1, &res), 0);
    assert_int_equal(res.records, 3);
    assert_non_null(fx->p->writer);
    proc_abandon_writer(fx->p);
    assert_null(fx->p->writer);
    assert_int_equal(temp_segments(fx->st.dir), 1);
    assert_int_equal(storedir_recover(&fx->st), 0);    /* what the next start-up does */
    assert_int_equal(fx->st.segments_salvaged, 1);
    assert_int_equal(read_store(fx).records, 3);
}

static void metadata_published_before_an_event_reaches_the_segment_first(void **state)
{
    struct fx *fx = *state;
    adopt(fx);                                   /* adopted with an empty metadata log */
    uint8_t payload[128];
    const uint8_t types[] = { D9_FT_U64 };
    const char *const names[] = { "n" };
    int n = shm_meta_encode_schema(payload, sizeof payload, "ev", 1, types, names);
    assert_true(n > 0);
    assert_int_equal(shm_meta_append(fx->reg.hdr, fx->reg.base + fx->reg.hdr->meta_offset,
                                     D9_META_SCHEMA, 1, payload, (size_t)n), 0);
    int r0 = claim(fx, "w0");
    struct d9_rec_custom *c = shm_ring_reserve(&fx->prod[r0], sizeof *c + 8);
    c->schema = 1;
    c->payload_len = 8;
    uint64_t v = 42;
    memcpy(c + 1, &v, 8);
    shm_ring_commit(&fx->prod[r0], c, sizeof *c + 8, D9_REC_CUSTOM, 5);
    struct drain_result res;
    assert_int_equal(drain(fx, 1, &res), 0);
    assert_int_equal(drain_seal(fx->p, &fx->st), 0);
    struct totals t = read_store(fx);
    assert_int_equal(t.records, 1);
    assert_true(t.schema_found);
}

static void malformed_metadata_stops_the_metadata_walk_but_not_the_data(void **state)
{
    struct fx *fx = *state;
    /* an entry with id 0 is invalid */
    struct d9_meta_hdr mh = { .len = 16, .kind = D9_META_RUNTIME, .id = 0 };
    uint8_t *meta = fx->reg.base + fx->reg.hdr->meta_offset;
    memcpy(meta, &mh, sizeof mh);
    memcpy(meta + 8, "evil\0\0\0", 8);
    atomic_store(&fx->reg.hdr->meta_head, 16);
    int r0 = claim(fx, "w0");
    produce(fx, r0, 3);
    adopt(fx);
    struct drain_result res;
    assert_int_equal(drain(fx, 1, &res), 0);
    assert_true(fx->p->meta_bad);
    assert_int_equal(res.records, 3);
}

static void tsc_timestamps_are_converted_with_the_region_calibration(void **state)
{
    struct fx *fx = *state;
    struct d9_region_hdr *h = fx->reg.hdr;
    /* 2 ns per tick: ns = 5000 + (tsc - 1000) * 2 */
    /* 2 ns per tick: ns = ns0 + (tsc - 1000) * 2, ns0 a millisecond ago */
    uint64_t ns0 = shm_mono_ns() - 1000000;
    h->cal_tsc0 = 1000;
    h->cal_ns0 = ns0;
    h->cal_tsc1 = 1000000;
    h->cal_ns1 = ns0 + 2 * (1000000 - 1000);
    int r0 = claim(fx, "w0");
    fx->ts = 1500;
    produce(fx, r0, 1);
    adopt(fx);
    struct drain_result res;
    assert_int_equal(drain(fx, 1, &res), 0);
    assert_int_equal(drain_seal(fx->p, &fx->st), 0);
    assert_int_equal(read_store(fx).first_ts, ns0 + 1000);
}

/* DATA blocks of the store in file order: their time ranges. */
static unsigned data_ranges(struct fx *fx, uint64_t (*out)[2], unsigned cap)
{
    char cmd[256], path[512];
    unsigned n = 0;
    snprintf(cmd, sizeof cmd, "ls %s/*.d9seg 2>/dev/null", fx->store);
    FILE *ls = popen(cmd, "r");
    while (fgets(path, sizeof path, ls)) {
        path[strcspn(path, "\n")] = 0;
        struct seg_reader *r;
        assert_int_equal(seg_reader_open(&r, path, 0), 0);
        struct seg_block b;
        while (seg_reader_next(r, &b) == 1)
            if (b.h.kind == SEG_BLK_DATA && b.h.nrec && n < cap) {
                out[n][0] = b.h.t_first;
                out[n][1] = b.h.t_last;
                n++;
            }
        seg_reader_close(r);
    }
    pclose(ls);
    return n;
}

/* The stamps of every record of the store's segments, in file order. */
static unsigned record_stamps(struct fx *fx, uint64_t *out, unsigned cap)
{
    char cmd[256], path[512];
    unsigned n = 0;
    snprintf(cmd, sizeof cmd, "ls %s/*.d9seg 2>/dev/null", fx->store);
    FILE *ls = popen(cmd, "r");
    while (fgets(path, sizeof path, ls)) {
        path[strcspn(path, "\n")] = 0;
        struct seg_reader *r;
        assert_int_equal(seg_reader_open(&r, path, 0), 0);
        struct seg_block b;
        while (seg_reader_next(r, &b) == 1) {
            if (b.h.kind != SEG_BLK_DATA)
                continue;
            size_t off = 0;
            const struct d9_rec_hdr *rec;
            while (seg_reader_next_record(&b, &off, &rec) == 1 && n < cap)
                out[n++] = rec->ts;
        }
        seg_reader_close(r);
    }
    pclose(ls);
    return n;
}

/* A stamp that cannot be true (before the process started, or in the
 * future) gets the time of the record before it and is counted as bad; it
 * must not become the floor of the records after it (a far-future stamp
 * used to flatten the rest of the ring to "now"). A stamp going backwards
 * is raised to the one before it and counted apart. */
static void impossible_stamps_take_their_neighbour_s_time_and_leave_the_others_theirs(void **state)
{
    struct fx *fx = *state;
    int r0 = claim(fx, "w0");
    uint64_t before = shm_mono_ns();
    fx->ts = before - 1000;
    produce(fx, r0, 2);                 /* fine: before - 1000, before - 999 */
    fx->ts = 5;
    produce(fx, r0, 1);                 /* before the process started */
    fx->ts = (uint64_t)-1000;
    produce(fx, r0, 1);                 /* a negative time: decades from now */
    fx->ts = before;
    produce(fx, r0, 1);                 /* fine: its own time */
    fx->ts = before - 500;
    produce(fx, r0, 1);                 /* backwards: raised to before */
    adopt(fx);
    struct drain_result res;
    assert_int_equal(drain(fx, shm_mono_ns(), &res), 0);
    assert_int_equal(res.records, 6);
    assert_int_equal(fx->p->ts_bad, 2);
    assert_int_equal(fx->p->ts_clamped, 1);
    assert_int_equal(drain_seal(fx->p, &fx->st), 0);
    uint64_t ts[8];
    assert_int_equal(record_stamps(fx, ts, 8), 6);
    const uint64_t want[6] = { before - 1000, before - 999, before - 999, before - 999, before,
                               before };
    for (int i = 0; i < 6; i++)
        assert_int_equal(ts[i], want[i]);
    uint64_t rg[4][2];
    assert_int_equal(data_ranges(fx, rg, 4), 1);
    assert_int_equal(rg[0][0], before - 1000);
    assert_int_equal(rg[0][1], before);
}

/* A ring's drop causes are part of its lost count: a producer that claims
 * more (a hostile one: "6537443251081707520 type mismatch" against 10 lost)
 * has them clamped into lost before they reach the index, and the ring is
 * counted once as having impossible counters. A cause one ahead of lost is
 * the producer's own race (cause first, then lost): clamped, not counted. */
static void impossible_drop_counters_are_clamped_into_lost_and_counted(void **state)
{
    struct fx *fx = *state;
    int r0 = claim(fx, "w0");
    int r1 = claim(fx, "w1");
    fx->ts = shm_mono_ns() - 1000;
    produce(fx, r0, 3);
    produce(fx, r1, 3);
    struct d9_ring_hdr *h0 = fx->prod[r0].hdr, *h1 = fx->prod[r1].hdr;
    atomic_store(&h0->lost, 10);
    atomic_store(&h0->lost_mismatch, 6537443251081707520ull);
    atomic_store(&h0->lost_too_big, 7);
    atomic_store(&h1->lost, 4);
    atomic_store(&h1->lost_too_big, 5);            /* one ahead: the producer's race */
    adopt(fx);
    struct drain_result res;
    assert_int_equal(drain(fx, shm_mono_ns(), &res), 0);
    assert_int_equal(drain_seal(fx->p, &fx->st), 0);
    assert_int_equal(fx->p->counters_bad, 1);
    struct idx_read_drops d;
    assert_int_equal(idx_read_drops(fx->st.idx, fx->p->process_id, 0, 0, INT64_MAX, &d), 0);
    assert_int_equal(d.lost, 14);
    assert_int_equal(d.mismatch, 10);              /* ring 0: all of its lost, no more */
    assert_int_equal(d.too_big, 4);                /* ring 0: none left; ring 1: its 4 */
    assert_int_equal(d.full, 0);
    /* the writer stored them clamped (readers clamp too, for older stores) */
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(idx_db(fx->st.idx), "SELECT mismatch, too_big FROM drops",
                                        -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int64(q, 0), 10);
    assert_int_equal(sqlite3_column_int64(q, 1), 4);
    sqlite3_finalize(q);
    /* the next seal reads the same counters: still one ring counted */
    produce(fx, r0, 1);
    assert_int_equal(drain(fx, shm_mono_ns(), &res), 0);
    assert_int_equal(drain_seal(fx->p, &fx->st), 0);
    assert_int_equal(fx->p->counters_bad, 1);
}

/* The drops by cause a process's counters show (proc.drops). */
static void expect_drops(const struct fx *fx, uint64_t full, uint64_t mismatch, uint64_t too_big,
                         uint64_t no_ring)
{
    assert_int_equal(fx->p->drops.full, full);
    assert_int_equal(fx->p->drops.mismatch, mismatch);
    assert_int_equal(fx->p->drops.too_big, too_big);
    assert_int_equal(fx->p->drops.no_ring, no_ring);
}

/* --metrics: each drop cause reaches proc.drops (d9_lost_records_total) at
 * the pass that finds it, before any seal, read from the counters a seal
 * reads; full is each ring's drops beyond its other causes. A region that
 * moves its counters back (the producer's word) moves no cause down, in a
 * pass or at a seal, and the index gets the same values. */
static void drop_causes_are_read_at_each_pass_and_never_go_down(void **state)
{
    struct fx *fx = *state;
    int r0 = claim(fx, "w0");
    int r1 = claim(fx, "w1");
    produce(fx, r0, 2);
    produce(fx, r1, 2);
    adopt(fx);
    struct met m;
    met_init(&m);
    fx->p->met = met_proc_new(&m, fx->p->pid, "app");
    assert_non_null(fx->p->met);
    struct d9_ring_hdr *h0 = ring(fx, r0), *h1 = ring(fx, r1);
    atomic_store(&h0->lost_mismatch, 3);
    atomic_store(&h0->lost, 5);                    /* 3 mismatch, 2 ring full */
    atomic_store(&h1->lost_too_big, 1);
    atomic_store(&h1->lost, 1);
    atomic_store(&fx->reg.hdr->lost_no_ring, 4);
    struct drain_result res;
    assert_int_equal(drain(fx, shm_mono_ns(), &res), 0);
    expect_drops(fx, 2, 3, 1, 4);                  /* no seal yet */
    /* every counter moved back: nothing goes down, at a pass or a seal */
    atomic_store(&h0->lost_mismatch, 0);
    atomic_store(&h0->lost, 1);
    atomic_store(&h1->lost_too_big, 0);
    atomic_store(&h1->lost, 0);
    atomic_store(&fx->reg.hdr->lost_no_ring, 1);
    produce(fx, r0, 1);
    assert_int_equal(drain(fx, shm_mono_ns(), &res), 0);
    expect_drops(fx, 2, 3, 1, 4);
    assert_int_equal(drain_seal(fx->p, &fx->st), 0);
    expect_drops(fx, 2, 3, 1, 4);
    struct idx_read_drops d;
    assert_int_equal(idx_read_drops(fx->st.idx, fx->p->process_id, 0, 0, INT64_MAX, &d), 0);
    assert_int_equal(d.mismatch, 3);
    assert_int_equal(d.too_big, 1);
    assert_int_equal(d.no_ring, 4);
    /* later drops count at the next pass */
    atomic_store(&h0->lost_mismatch, 4);
    atomic_store(&h0->lost, 9);                    /* 4 mismatch, 5 ring full */
    assert_int_equal(drain(fx, shm_mono_ns(), &res), 0);
    expect_drops(fx, 5, 4, 1, 4);
    fx->p->met = NULL;
    met_free(&m);
}

/* A calibration update between two passes that moves one ring's stamps back
 * (the two blocks overlapped by 15 ns) must not make its time go backwards. */
static void a_ring_s_time_never_goes_backwards_across_calibration_updates(void **state)
{
    struct fx *fx = *state;
    struct d9_region_hdr *h = fx->reg.hdr;
    uint64_t ns0 = shm_mono_ns() - 1000000;
    h->cal_tsc0 = 1000;
    h->cal_ns0 = ns0;
    h->cal_tsc1 = 1000000;
    h->cal_ns1 = ns0 + (1000000 - 1000);       /* 1 ns per tick */
    int r0 = claim(fx, "w0");
    fx->ts = 2000;
    produce(fx, r0, 10);                        /* ns0 + 1000 .. ns0 + 1009 */
    adopt(fx);
    struct drain_result res;
    assert_int_equal(drain(fx, shm_mono_ns(), &res), 0);
    h->cal_seq++;                               /* the agent's refresh, 15 ns earlier */
    h->cal_ns0 = ns0 - 15;
    h->cal_ns1 = ns0 - 15 + (1000000 - 1000);
    h->cal_seq++;
    produce(fx, r0, 10);                        /* would be ns0 + 995 .. */
    assert_int_equal(drain(fx, shm_mono_ns(), &res), 0);
    assert_int_equal(drain_seal(fx->p, &fx->st), 0);
    uint64_t rg[4][2];
    assert_int_equal(data_ranges(fx, rg, 4), 2);
    assert_true(rg[1][0] >= rg[0][1]);
    assert_true(fx->p->ts_clamped > 0);
}

/* Ring header pages of the region in memory (the page cache of the file:
 * the collector's reads count, whoever mapped it). */
static unsigned resident_ring_pages(struct fx *fx, uint32_t from, uint32_t to)
{
    long page = sysconf(_SC_PAGESIZE);
    struct d9_region_hdr *h = fx->reg.hdr;
    unsigned n = 0;
    for (uint32_t i = from; i < to; i++) {
        uintptr_t a = (uintptr_t)fx->reg.base + h->rings_offset + (uint64_t)i * h->ring_stride;
        unsigned char v = 0;
        assert_int_equal(mincore((void *)(a & ~((uintptr_t)page - 1)), 1, &v), 0);
        n += v & 1;
    }
    return n;
}

/* The work of draining a region does not grow with its ring count
 * (DIAL9_MAX_THREADS): rings no thread touched stay holes, pass after pass
 * and probe after probe; a ring claimed later is found. */
static void draining_does_not_touch_rings_no_thread_claimed(void **state)
{
    struct fx *fx = *state;
    int r0 = claim(fx, "w0");
    produce(fx, r0, 10);
    adopt(fx);
    struct drain_result res;
    uint64_t now = shm_mono_ns();
    for (int k = 0; k < 5; k++)
        assert_int_equal(drain(fx, now + (uint64_t)k * DRAIN_PROBE_NS, &res), 0);
    assert_int_equal(resident_ring_pages(fx, 1, MANY_RINGS), 0);
    int r1 = claim(fx, "w1");
    produce(fx, r1, 3);
    assert_int_equal(drain(fx, now + 10 * DRAIN_PROBE_NS, &res), 0);
    assert_int_equal(res.records, 3);
    assert_int_equal(resident_ring_pages(fx, 2, MANY_RINGS), 0);
}

/* Passes between claims check no unseen ring (no system call per pass and
 * region); a claim moves the region's ring_hint and the next pass finds the
 * ring, well before the periodic sweep of every unseen ring. */
static void unseen_rings_are_checked_only_after_a_claim(void **state)
{
    struct fx *fx = *state;
    int r0 = claim(fx, "w0");
    produce(fx, r0, 10);
    adopt(fx);
    struct drain_result res;
    uint64_t now = shm_mono_ns();
    assert_int_equal(drain(fx, now, &res), 0);
    assert_int_equal(res.records, 10);
    uint64_t probes = fx->p->probes;
    for (int k = 1; k <= 5; k++) {
        produce(fx, r0, 1);
        assert_int_equal(drain(fx, now + (uint64_t)k * 1000, &res), 0);
        assert_int_equal(res.records, 1);
    }
    assert_int_equal(fx->p->probes, probes);
    int r1 = claim(fx, "w1");
    produce(fx, r1, 3);
    assert_int_equal(drain(fx, now + 10000, &res), 0);
    assert_int_equal(res.records, 3);
    assert_true(fx->p->probes > probes);
    assert_true(fx->p->probes - probes <= 2 + DRAIN_PROBE_AHEAD);
}

/* ---- pure pieces --------------------------------------------------------------- */

static void idle_passes_double_the_sleep_up_to_the_maximum(void **s)
{
    (void)s;
    struct pace b;
    pace_init(&b, 50, 300);
    assert_int_equal(pace_next(&b, 0), 50);
    assert_int_equal(pace_next(&b, 0), 100);
    assert_int_equal(pace_next(&b, 0), 200);
    assert_int_equal(pace_next(&b, 0), 300);
    assert_int_equal(pace_next(&b, 0), 300);
}

static void a_pass_with_data_polls_again_at_once_and_resets_the_sleep(void **s)
{
    (void)s;
    struct pace b;
    pace_init(&b, 10, 1000);
    pace_next(&b, 0);
    pace_next(&b, 0);
    assert_int_equal(pace_next(&b, 1), 0);
    assert_int_equal(pace_next(&b, 0), 10);
}

static void a_trickle_backs_off_instead_of_polling_at_once(void **s)
{
    (void)s;
    struct pace b;
    pace_init(&b, 50, 20000);
    /* 64 bytes in a 1 MiB ring over 100 us: far from full, so sleep and grow */
    assert_int_equal(pace_by_pressure(&b, 64, 1 << 20, 100, 0), 50);
    assert_int_equal(pace_by_pressure(&b, 64, 1 << 20, 100, 0), 100);
    assert_int_equal(pace_by_pressure(&b, 0, 0, 100, 0), 200);
}

static void a_sleep_wakes_by_its_end_and_lets_the_timer_fire_in_its_second_half(void **s)
{
    (void)s;
    uint64_t req, slack;
    /* the idle maximum, 10 ms: slack 2^22 ns (4.19 ms), so a 4 ms tick always lands in it */
    pace_sleep_window(10000000, &req, &slack);
    assert_int_equal(slack, 1u << 22);
    assert_int_equal(req + slack, 10000000);
    /* short paced sleeps are requested whole with the kernel's default slack */
    pace_sleep_window(100000, &req, &slack);
    assert_int_equal(req, 100000);
    assert_int_equal(slack, PACE_SLACK_MIN_NS);
    pace_sleep_window(0, &req, &slack);
    assert_int_equal(req, 0);
    assert_int_equal(slack, PACE_SLACK_MIN_NS);
    /* any length: never later than asked, never earlier than half of it */
    for (uint64_t ns = 1; ns < 4000000000ull; ns = ns * 3 + 7) {
        pace_sleep_window(ns, &req, &slack);
        if (slack == PACE_SLACK_MIN_NS && req == ns)
            continue;
        assert_true(req + slack == ns);
        assert_true(slack <= ns / 2 && slack > ns / 4);
        assert_true((slack & (slack - 1)) == 0);
    }
}

static void a_filling_ring_caps_the_sleep_before_a_quarter_full(void **s)
{
    (void)s;
    struct pace b;
    pace_init(&b, 50, 20000);
    for (int i = 0; i < 10; i++)
        pace_by_pressure(&b, 0, 0, 1000, 0);            /* idle: grown to the maximum */
    /* 64 KiB per 1 ms into a 1 MiB ring: a quarter full in 4 ms, so sleep at most 4 ms */
    assert_int_equal(pace_by_pressure(&b, 64 << 10, 1 << 20, 1000, 0), 4000);
    /* and grow again from there, not from the old 20 ms */
    assert_int_equal(pace_by_pressure(&b, 64 << 10, 1 << 20, 1000, 0), 4000);
}

static void a_ring_an_eighth_full_or_data_left_behind_polls_again_at_once(void **s)
{
    (void)s;
    struct pace b;
    pace_init(&b, 50, 20000);
    for (int i = 0; i < 10; i++)
        pace_by_pressure(&b, 0, 0, 1000, 0);            /* idle: grown to the maximum */
    /* 128 KiB in 2 ms: go again at once, and sleep after that at the pace
     * that keeps the ring under a quarter full (4 ms), not the old 20 ms */
    assert_int_equal(pace_by_pressure(&b, (1 << 20) / 8, 1 << 20, 2000, 0), 0);
    assert_int_equal(pace_by_pressure(&b, 0, 0, 100, 0), 4000);
    assert_int_equal(pace_by_pressure(&b, 8, 1 << 20, 100000, 1), 0);   /* data left behind */
    assert_int_equal(pace_by_pressure(&b, 0, 0, 100, 0), 50);           /* ... restarts at min */
    /* a quarter in 1 ms (< PACE_STALL_US): a stall could fill the
     * rest, so the sleep after the busy pass restarts from the minimum too */
    for (int i = 0; i < 10; i++)
        pace_by_pressure(&b, 0, 0, 1000, 0);
    assert_int_equal(pace_by_pressure(&b, (1 << 20) / 2, 1 << 20, 2000, 0), 0);
    assert_int_equal(pace_by_pressure(&b, 0, 0, 100, 0), 50);
}

/* A producer filling a ring 1/8 between two sleeps: the pass after the one
 * that went again at once sleeps at the same pace, not from the minimum up
 * (the old sawtooth woke up a dozen times per lap). Simulated: a 1 MiB ring,
 * 64 bytes/us (2 M events/s of 32 bytes), every pass drains it all. */
static void a_steady_producer_is_paced_without_a_sawtooth(void **s)
{
    (void)s;
    const uint64_t size = 1 << 20, rate = 64;           /* bytes per us */
    struct pace b;
    pace_init(&b, 50, 10000);
    uint64_t t = 0, last = 0, drained = 0, sleeps = 0, max_lag = 0;
    while (t < 1000000) {                               /* 1 s */
        uint64_t lag = rate * t - drained;
        max_lag = lag > max_lag ? lag : max_lag;
        drained += lag;
        uint32_t us = pace_by_pressure(&b, lag, size, t - last, 0);
        last = t;
        t += 10 + us;                                   /* a pass takes 10 us */
        sleeps += us != 0;
    }
    /* a quarter of the ring every 4 ms: about 250 sleeps, under a quarter full */
    assert_true(sleeps >= 200 && sleeps <= 300);
    assert_true(max_lag <= size / PACE_TARGET_DIV + rate * 100);
}

static void segments_rotate_by_size_or_by_age(void **s)
{
    (void)s;
    const uint64_t MB = 1u << 20, SEC = 1000000000ULL;
    assert_false(storedir_rotate_due(MB - 1, 0, 59 * SEC, MB, 60 * SEC));
    assert_true(storedir_rotate_due(MB, 0, 1, MB, 60 * SEC));
    assert_true(storedir_rotate_due(10, 5 * SEC, 65 * SEC, MB, 60 * SEC));
    assert_false(storedir_rotate_due(10, 70 * SEC, 65 * SEC, MB, 60 * SEC)); /* clock went back */
}

static void calibration_read_gives_up_while_a_writer_holds_the_seqlock(void **s)
{
    (void)s;
    struct d9_region_hdr h;
    memset(&h, 0, sizeof h);
    h.cal_tsc0 = 1; h.cal_ns0 = 1; h.cal_tsc1 = 1000001; h.cal_ns1 = 1000001;
    atomic_store(&h.cal_seq, 3);
    struct shm_clock_cal c;
    assert_int_equal(drain_read_calibration(&h, &c), -EAGAIN);
    atomic_store(&h.cal_seq, 4);
    assert_int_equal(drain_read_calibration(&h, &c), 0);
}

static void unusable_calibration_pairs_are_refused(void **s)
{
    (void)s;
    struct d9_region_hdr h;
    memset(&h, 0, sizeof h);      /* pair 1 never written: tsc1 <= tsc0 */
    struct shm_clock_cal c;
    assert_int_equal(drain_read_calibration(&h, &c), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(drained_records_reach_the_segment_and_the_tail_follows, setup, teardown),
        cmocka_unit_test_setup_teardown(a_live_ring_is_read_once_it_holds_a_batch_or_its_backlog_is_old, setup, teardown),
        cmocka_unit_test_setup_teardown(a_waiting_batch_is_new_data_only_at_the_pass_that_finds_it, setup, teardown),
        cmocka_unit_test_setup_teardown(a_ring_full_enough_to_pace_the_collector_is_read, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(an_ended_thread_is_read_without_waiting_for_a_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(a_failed_write_leaves_the_records_in_the_ring_until_it_succeeds, setup, teardown),
        cmocka_unit_test_setup_teardown(a_corrupt_ring_is_quarantined_and_the_others_keep_draining, setup, teardown),
        cmocka_unit_test_setup_teardown(a_truncated_region_quarantines_the_process_instead_of_crashing, setup, teardown),
        cmocka_unit_test_setup_teardown(a_new_generation_on_a_ring_ends_the_previous_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(ring_drops_are_reported_as_deltas, setup, teardown),
        cmocka_unit_test_setup_teardown(an_abandoned_writer_leaves_its_temp_segment_for_salvage, setup, teardown),
        cmocka_unit_test_setup_teardown(drops_reported_before_a_collector_restart_are_not_reported_again, setup, teardown),
        cmocka_unit_test_setup_teardown(metadata_published_before_an_event_reaches_the_segment_first, setup, teardown),
        cmocka_unit_test_setup_teardown(malformed_metadata_stops_the_metadata_walk_but_not_the_data, setup, teardown),
        cmocka_unit_test_setup_teardown(tsc_timestamps_are_converted_with_the_region_calibration, setup_tsc, teardown),
        cmocka_unit_test_setup_teardown(impossible_stamps_take_their_neighbour_s_time_and_leave_the_others_theirs, setup, teardown),
        cmocka_unit_test_setup_teardown(impossible_drop_counters_are_clamped_into_lost_and_counted, setup, teardown),
        cmocka_unit_test_setup_teardown(drop_causes_are_read_at_each_pass_and_never_go_down, setup, teardown),
        cmocka_unit_test_setup_teardown(unseen_rings_are_checked_only_after_a_claim, setup_many, teardown),
        cmocka_unit_test_setup_teardown(draining_does_not_touch_rings_no_thread_claimed, setup_many, teardown),
        cmocka_unit_test_setup_teardown(a_ring_s_time_never_goes_backwards_across_calibration_updates, setup_tsc, teardown),
        cmocka_unit_test(idle_passes_double_the_sleep_up_to_the_maximum),
        cmocka_unit_test(a_pass_with_data_polls_again_at_once_and_resets_the_sleep),
        cmocka_unit_test(a_trickle_backs_off_instead_of_polling_at_once),
        cmocka_unit_test(a_filling_ring_caps_the_sleep_before_a_quarter_full),
        cmocka_unit_test(a_sleep_wakes_by_its_end_and_lets_the_timer_fire_in_its_second_half),
        cmocka_unit_test(a_ring_an_eighth_full_or_data_left_behind_polls_again_at_once),
        cmocka_unit_test(a_steady_producer_is_paced_without_a_sawtooth),
        cmocka_unit_test(segments_rotate_by_size_or_by_age),
        cmocka_unit_test(calibration_read_gives_up_while_a_writer_holds_the_seqlock),
        cmocka_unit_test(unusable_calibration_pairs_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
