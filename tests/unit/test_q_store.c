/*
 * test_q_store.c — the CLI's parsing helpers (numbers, durations, type lists),
 * time-window arithmetic, and q_store.c against a real store built with the
 * segment writer and the index: listings, time-ordered scans with filters,
 * corrupt and missing segment files, an index read that fails said once.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sqlite3.h>
#include <cmocka.h>
#include "collector/cli/cli.h"
#include "collector/query/q_loc.h"
#include "collector/store/idx.h"
#include "collector/store/idx_int.h"
#include "collector/query/q_scan.h"
#include "collector/store/seg_writer.h"
#include "collector/store/seg_reader.h"
#include "shm/meta.h"
#include "shm/record.h"
#include "tests/unit/meta_entry.h"

#define NS 1000000000ull

/* ---- parsing ------------------------------------------------------------------ */
static void durations_accept_every_unit(void **state)
{
    (void)state;
    uint64_t ns;
    assert_int_equal(cli_parse_duration("30s", &ns), 0);
    assert_int_equal(ns, 30 * NS);
    assert_int_equal(cli_parse_duration("5m", &ns), 0);
    assert_int_equal(ns, 300 * NS);
    assert_int_equal(cli_parse_duration("2h", &ns), 0);
    assert_int_equal(ns, 7200 * NS);
    assert_int_equal(cli_parse_duration("1d", &ns), 0);
    assert_int_equal(ns, 86400 * NS);
    assert_int_equal(cli_parse_duration("250ms", &ns), 0);
    assert_int_equal(ns, 250000000ull);
    assert_int_equal(cli_parse_duration("1.5s", &ns), 0);
    assert_int_equal(ns, 1500000000ull);
    assert_int_equal(cli_parse_duration("20us", &ns), 0);
    assert_int_equal(ns, 20000ull);
    assert_int_equal(cli_parse_duration("7", &ns), 0);
    assert_int_equal(ns, 7 * NS);
}

static void durations_reject_garbage_zero_and_overflow(void **state)
{
    (void)state;
    uint64_t ns;
    const char *bad[] = { "", "s", "abc", "5x", "0", "0s", "-1s", "1..5s", "5 s", "1e3s",
                          "0.1ns" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (cli_parse_duration(bad[i], &ns) == 0)
            fail_msg("'%s' was accepted", bad[i]);
    assert_int_equal(cli_parse_duration("999999999999d", &ns), -ERANGE);
}

static void u64_parsing_is_strict(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(q_text_parse_u64("18446744073709551615", &v), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(q_text_parse_u64("18446744073709551616", &v), -ERANGE);
    assert_int_equal(q_text_parse_u64("12a", &v), -EINVAL);
    assert_int_equal(q_text_parse_u64("-1", &v), -EINVAL);
    assert_int_equal(q_text_parse_u64("", &v), -EINVAL);
}

static void type_lists_become_masks_and_name_the_bad_one(void **state)
{
    (void)state;
    uint32_t m = 0;
    char bad[32];
    assert_int_equal(cli_parse_types("poll_start,custom", &m, bad, sizeof bad), 0);
    assert_int_equal(m, (1u << D9_REC_POLL_START) | (1u << D9_REC_CUSTOM));
    assert_int_equal(cli_parse_types("wake,bogus", &m, bad, sizeof bad), -EINVAL);
    assert_string_equal(bad, "bogus");
    assert_int_equal(cli_parse_types("wake,", &m, bad, sizeof bad), -EINVAL);
    assert_int_equal(cli_parse_types("pad", &m, bad, sizeof bad), -EINVAL);
}

/* ---- windows ------------------------------------------------------------------ */
static void default_window_is_everything(void **state)
{
    (void)state;
    struct q_window w = { .kind = Q_WIN_ALL };
    uint64_t from, to;
    q_store_window_compute(&w, true, 100 * NS, true, 50 * NS, &from, &to);
    assert_true(from == 0 && to == UINT64_MAX);
}

static void since_counts_back_from_now_on_a_live_store(void **state)
{
    (void)state;
    struct q_window w = { .kind = Q_WIN_SINCE, .since_ns = 30 * NS };
    uint64_t from, to;
    q_store_window_compute(&w, true, 100 * NS, true, 50 * NS, &from, &to);
    assert_true(from == 70 * NS && to == UINT64_MAX);
}

static void since_counts_back_from_newest_record_on_a_store_from_another_boot(void **state)
{
    (void)state;
    struct q_window w = { .kind = Q_WIN_SINCE, .since_ns = 30 * NS };
    uint64_t from, to;
    q_store_window_compute(&w, false, 100 * NS, true, 5000 * NS, &from, &to);
    assert_true(from == 4970 * NS && to == UINT64_MAX);
}

static void since_longer_than_the_clock_starts_at_zero(void **state)
{
    (void)state;
    struct q_window w = { .kind = Q_WIN_SINCE, .since_ns = 3600 * NS };
    uint64_t from, to;
    q_store_window_compute(&w, true, 100 * NS, false, 0, &from, &to);
    assert_true(from == 0);
}

static void from_to_are_taken_as_given(void **state)
{
    (void)state;
    struct q_window w = { .kind = Q_WIN_RANGE, .from_ns = 7, .to_ns = 9 };
    uint64_t from, to;
    q_store_window_compute(&w, false, 100, true, 5000, &from, &to);
    assert_true(from == 7 && to == 9);
}

/* ---- a store ------------------------------------------------------------------ */
struct fixture {
    char dir[64];
    char seg_a[600];                /* pid 100's segment */
};

static size_t poll_start(uint8_t *out, uint64_t ts, uint64_t task)
{
    struct d9_rec_poll_start r = { .h = { sizeof r, D9_REC_POLL_START, 0, ts }, .task = task,
                                   .runtime = 1 };
    memcpy(out, &r, sizeof r);
    return sizeof r;
}

static size_t poll_end(uint8_t *out, uint64_t ts, uint64_t task)
{
    struct d9_rec_poll_end r = { .h = { sizeof r, D9_REC_POLL_END, 0, ts }, .task = task,
                                 .runtime = 1 };
    memcpy(out, &r, sizeof r);
    return sizeof r;
}

/* One sealed, indexed segment of pid with two threads whose records
 * interleave in time: ring 0 (tid pid+1) at base+100,300,500 and ring 1
 * (tid pid+2) at base+200,400,600; polls of tasks 1 and 2. */
static void add_segment(struct fixture *fx, struct idx *x, uint32_t pid, uint64_t seg_id,
                        uint64_t base, char *path_out, size_t cap)
{
    struct seg_proc_info pi = { .pid = pid, .uid = 0, .start_time = pid * 10u,
                                .clock_source = D9_CLOCK_MONOTONIC, .host = "h", .comm = "prog",
                                .exe = "/bin/prog" };
    uint8_t meta[128];
    size_t ml = meta_entry_runtime(meta, 1, "rt1");
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, seg_id, &pi, meta, ml), 0);
    uint8_t recs[256];
    size_t n = 0;
    n += poll_start(recs + n, base + 100, 1);
    n += poll_end(recs + n, base + 300, 1);
    n += poll_start(recs + n, base + 500, 1);
    assert_int_equal(seg_writer_add_data(w, pid + 1, 0, 1, 0, recs, n), 0);
    n = 0;
    n += poll_start(recs + n, base + 200, 2);
    n += poll_end(recs + n, base + 400, 2);
    n += poll_end(recs + n, base + 600, 7);
    assert_int_equal(seg_writer_add_data(w, pid + 2, 1, 1, 3, recs, n), 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    struct idx_process p = { .pid = pid, .start_time = pid * 10u, .comm = "prog",
                             .exe = "/bin/prog", .first_ns = base + 100 };
    int64_t pid_row;
    assert_int_equal(idx_process_upsert(x, &p, &pid_row), 0);
    assert_int_equal(idx_thread_upsert(x, pid_row, pid + 1, 0, 1, "worker-a", base + 100,
                                       base + 500, 0), 0);
    assert_int_equal(idx_segment_commit(x, pid_row, &sum, fx->dir), 0);
    if (path_out)
        snprintf(path_out, cap, "%s", sum.path);
    seg_writer_free(w);
}

static int setup_store(void **state)
{
    struct fixture *fx = calloc(1, sizeof *fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/d9tq.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    struct idx *x;
    assert_int_equal(idx_open(&x, fx->dir), 0);
    add_segment(fx, x, 100, 1, 1000, fx->seg_a, sizeof fx->seg_a);
    add_segment(fx, x, 200, 2, 5000, NULL, 0);
    idx_close(x);
    *state = fx;
    return 0;
}

static int teardown_store(void **state)
{
    struct fixture *fx = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->dir);
    assert_int_equal(system(cmd), 0);
    free(fx);
    return 0;
}

static int count_row(void *arg, const void *row)
{
    (void)row;
    (*(int *)arg)++;
    return 0;
}
static int proc_row(void *arg, const struct idx_read_process *r) { return count_row(arg, r); }
static int seg_row(void *arg, const struct idx_read_segment *r) { return count_row(arg, r); }

/* The fixture's store, opened (it must open). */
static struct q_store *open_store(const struct fixture *fx)
{
    struct q_store *s;
    char why[256];
    assert_int_equal(q_store_open(&s, fx->dir, why, sizeof why), 0);
    return s;
}

static void store_opens_read_only_and_lists_processes_and_segments(void **state)
{
    struct fixture *fx = *state;
    struct q_store *s = open_store(fx);
    int n = 0;
    assert_int_equal(q_store_processes(s, 0, 0, UINT64_MAX, proc_row, &n), 2);
    n = 0;
    assert_int_equal(q_store_processes(s, 200, 0, UINT64_MAX, proc_row, &n), 1);
    n = 0;
    assert_int_equal(q_store_segments(s, 0, 0, UINT64_MAX, seg_row, &n), 2);
    n = 0;
    assert_int_equal(q_store_segments(s, 0, 4000, 4500, seg_row, &n), 0);     /* between */
    n = 0;
    assert_int_equal(q_store_segments(s, 0, 5550, 5560, seg_row, &n), 1);
    uint64_t lo, hi;
    assert_int_equal(q_store_time_range(s, 100, &lo, &hi), 0);
    assert_true(lo == 1100 && hi == 1600);
    assert_int_equal(q_store_time_range(s, 999, &lo, &hi), -ENOENT);
    q_store_close(s);
}

/* A process's end is remembered between asks, but not past a commit of
 * another connection (the collector marking the process exited). */
static void process_end_is_remembered_until_the_index_changes(void **state)
{
    struct fixture *fx = *state;
    struct q_store *s = open_store(fx);
    struct idx_read_process_end pe;
    assert_int_equal(q_store_process_end(s, 1, &pe), 0);
    assert_string_equal(pe.state, "alive");
    assert_true(pe.rec_last_ns == 1600);
    assert_int_equal(q_store_process_end(s, 99, &pe), -ENOENT);
    assert_int_equal(q_store_process_end(s, 1, &pe), 0);
    assert_string_equal(pe.state, "alive");
    struct idx *x;
    assert_int_equal(idx_open(&x, fx->dir), 0);
    assert_int_equal(idx_process_end(x, 1, 1700, "exited", 0), 0);
    idx_close(x);
    assert_int_equal(q_store_process_end(s, 1, &pe), 0);
    assert_string_equal(pe.state, "exited");
    assert_true(pe.last_ns == 1700 && pe.rec_last_ns == 1600);
    q_store_close(s);
}

static void missing_store_and_missing_index_say_where(void **state)
{
    struct fixture *fx = *state;
    struct q_store *s;
    char why[512];
    assert_int_equal(q_store_open(&s, "/nonexistent/d9", why, sizeof why), -ENOENT);
    assert_non_null(strstr(why, "/nonexistent/d9"));
    char sub[128];
    snprintf(sub, sizeof sub, "%s/empty", fx->dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    assert_int_equal(q_store_open(&s, sub, why, sizeof why), -ENOENT);
    assert_non_null(strstr(why, "index.sqlite"));
}

struct got {
    uint64_t ts[32];
    uint32_t tid[32];
    char thread[32][20];
    int n, stop_after;
};

static int collect(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                   size_t len)
{
    struct got *g = arg;
    assert_true(len >= sizeof *rec);
    assert_true(g->n < 32);
    g->ts[g->n] = rec->ts;
    g->tid[g->n] = src->tid;
    snprintf(g->thread[g->n], sizeof g->thread[0], "%s", src->thread);
    /* runtime names come from the segment's metadata */
    assert_string_equal(src->meta->runtime(src->meta->ctx, 1), "rt1");
    g->n++;
    return g->stop_after && g->n >= g->stop_after ? 1 : 0;
}

/* Scans process 100's records, the whole fixture's (2 blocks, 6 records,
 * 3 lost), into g. */
static void scan_pid_100(struct q_store *s, bool ring_order_only, struct got *g)
{
    struct q_filter f = { .from = 0, .to = UINT64_MAX, .pid = 100,
                            .ring_order_only = ring_order_only };
    struct q_scan_stats st;
    assert_int_equal(q_scan(s, &f, collect, g, &st, "test"), 0);
    assert_int_equal(g->n, 6);
    assert_int_equal(st.blocks, 2);
    assert_int_equal(st.lost, 3);
    assert_int_equal(st.records, 6);
}

static void scan_merges_threads_in_time_order(void **state)
{
    struct fixture *fx = *state;
    struct q_store *s = open_store(fx);
    struct got g = { 0 };
    scan_pid_100(s, false, &g);
    for (int i = 0; i < 6; i++)
        assert_int_equal(g.ts[i], 1100 + 100 * (uint64_t)i);
    assert_int_equal(g.tid[0], 101);
    assert_int_equal(g.tid[1], 102);
    assert_string_equal(g.thread[0], "worker-a");
    assert_string_equal(g.thread[1], "");
    q_store_close(s);
}

/* ring_order_only: the same records, block by block (no merge across
 * threads), each ring's in ring order, and the same counts. */
static void scan_in_ring_order_only_goes_block_by_block(void **state)
{
    struct fixture *fx = *state;
    struct q_store *s = open_store(fx);
    struct got g = { 0 };
    scan_pid_100(s, true, &g);
    const uint64_t ts[6] = { 1100, 1300, 1500, 1200, 1400, 1600 };
    const uint32_t tid[6] = { 101, 101, 101, 102, 102, 102 };
    for (int i = 0; i < 6; i++) {
        assert_int_equal(g.ts[i], ts[i]);
        assert_int_equal(g.tid[i], tid[i]);
    }
    assert_string_equal(g.thread[0], "worker-a");
    /* a window keeps its filter in this order too */
    g = (struct got){ 0 };
    struct q_filter f = { .from = 1250, .to = 1550, .pid = 100, .ring_order_only = true };
    assert_int_equal(q_scan(s, &f, collect, &g, NULL, "test"), 0);
    assert_int_equal(g.n, 3);
    assert_int_equal(g.ts[0], 1300);
    assert_int_equal(g.ts[1], 1500);
    assert_int_equal(g.ts[2], 1400);
    q_store_close(s);
}

/* Two consecutive blocks of one ring whose stamps overlap by 15 ns (a
 * calibration update between drain passes, in a segment written before
 * the drain kept a ring's time monotonic): the ring's order wins. */
static void scan_keeps_ring_order_where_a_ring_s_stamps_go_backwards(void **state)
{
    struct fixture *fx = *state;
    struct idx *x;
    assert_int_equal(idx_open(&x, fx->dir), 0);
    struct seg_proc_info pi = { .pid = 300, .start_time = 3000, .clock_source = D9_CLOCK_MONOTONIC,
                                .host = "h", .comm = "prog", .exe = "/bin/prog" };
    uint8_t meta[128], recs[256];
    size_t ml = meta_entry_runtime(meta, 1, "rt1"), n = 0;
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 3, &pi, meta, ml), 0);
    n += poll_start(recs + n, 9100, 1);
    n += poll_start(recs + n, 9200, 2);
    n += poll_start(recs + n, 9300, 3);
    assert_int_equal(seg_writer_add_data(w, 301, 0, 1, 0, recs, n), 0);
    n = 0;
    n += poll_start(recs + n, 9285, 4);
    n += poll_start(recs + n, 9400, 5);
    assert_int_equal(seg_writer_add_data(w, 301, 0, 1, 0, recs, n), 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    struct idx_process p = { .pid = 300, .start_time = 3000, .comm = "prog", .exe = "/bin/prog",
                             .first_ns = 9100 };
    int64_t pid_row;
    assert_int_equal(idx_process_upsert(x, &p, &pid_row), 0);
    assert_int_equal(idx_segment_commit(x, pid_row, &sum, fx->dir), 0);
    seg_writer_free(w);
    idx_close(x);

    struct q_store *s = open_store(fx);
    struct got g = { 0 };
    struct q_filter f = { .from = 0, .to = UINT64_MAX, .pid = 300 };
    assert_int_equal(q_scan(s, &f, collect, &g, NULL, "test"), 0);
    assert_int_equal(g.n, 5);
    const uint64_t ring_order[5] = { 9100, 9200, 9300, 9285, 9400 };
    for (int i = 0; i < 5; i++)
        assert_int_equal(g.ts[i], ring_order[i]);
    g = (struct got){ 0 };              /* the same in ring order only */
    f.ring_order_only = true;
    assert_int_equal(q_scan(s, &f, collect, &g, NULL, "test"), 0);
    assert_int_equal(g.n, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(g.ts[i], ring_order[i]);
    q_store_close(s);
}

static void scan_filters_by_window_type_and_tid(void **state)
{
    struct fixture *fx = *state;
    struct q_store *s = open_store(fx);
    struct got g = { 0 };
    struct q_filter f = { .from = 1250, .to = 1550 };
    assert_int_equal(q_scan(s, &f, collect, &g, NULL, "test"), 0);
    assert_int_equal(g.n, 3);                                   /* 1300 1400 1500 */
    memset(&g, 0, sizeof g);
    f = (struct q_filter){ .from = 0, .to = UINT64_MAX, .types = 1u << D9_REC_POLL_END };
    assert_int_equal(q_scan(s, &f, collect, &g, NULL, "test"), 0);
    assert_int_equal(g.n, 6);                                   /* 3 per process */
    memset(&g, 0, sizeof g);
    f = (struct q_filter){ .from = 0, .to = UINT64_MAX, .tid = 202 };
    assert_int_equal(q_scan(s, &f, collect, &g, NULL, "test"), 0);
    assert_int_equal(g.n, 3);
    assert_int_equal(g.ts[0], 5200);
    q_store_close(s);
}

static void scan_stops_when_the_callback_says_so(void **state)
{
    struct fixture *fx = *state;
    struct q_store *s = open_store(fx);
    struct got g = { .stop_after = 4 };
    struct q_filter f = { .from = 0, .to = UINT64_MAX };
    assert_int_equal(q_scan(s, &f, collect, &g, NULL, "test"), 1);
    assert_int_equal(g.n, 4);
    q_store_close(s);
}

static void corrupt_block_is_skipped_and_counted(void **state)
{
    struct fixture *fx = *state;
    /* flip a payload byte of the first data block: its crc no longer matches */
    FILE *f = fopen(fx->seg_a, "r+b");
    assert_non_null(f);
    struct seg_reader *r;
    assert_int_equal(seg_reader_open(&r, fx->seg_a, 0), 0);
    struct seg_block b;
    uint64_t off = 0;
    while (seg_reader_next(r, &b) == 1)
        if (b.h.kind == SEG_BLK_DATA) {
            off = b.offset;
            break;
        }
    seg_reader_close(r);
    assert_true(off > 0);
    fseek(f, (long)(off + sizeof(struct seg_block_hdr) + 24), SEEK_SET);
    fputc(0x5a, f);
    fclose(f);
    struct q_store *s = open_store(fx);
    struct got g = { 0 };
    struct q_filter flt = { .from = 0, .to = UINT64_MAX };
    struct q_scan_stats st;
    assert_int_equal(q_scan(s, &flt, collect, &g, &st, "test"), 0);
    /* only that block is lost: its neighbour and the other segment are read */
    assert_int_equal(st.bad_blocks, 1);
    assert_int_equal(st.missing_segments, 0);
    assert_int_equal(g.n, 9);
    q_store_close(s);
}

static void vanished_segment_file_is_skipped_and_counted(void **state)
{
    struct fixture *fx = *state;
    assert_int_equal(unlink(fx->seg_a), 0);
    struct q_store *s = open_store(fx);
    struct got g = { 0 };
    struct q_filter flt = { .from = 0, .to = UINT64_MAX };
    struct q_scan_stats st;
    assert_int_equal(q_scan(s, &flt, collect, &g, &st, "test"), 0);
    assert_int_equal(st.missing_segments, 1);
    assert_int_equal(g.n, 6);
    assert_int_equal(g.ts[0], 5100);
    q_store_close(s);
}

static int interrupt_all(void *arg)
{
    (void)arg;
    return 1;
}

/* A reader that goes on without a failed index read (q_loc: no code
 * locations) says so on stderr, with the index's reason, once per store. */
static void a_failed_index_read_is_said_once(void **state)
{
    struct fixture *fx = *state;
    struct q_store *s = open_store(fx);
    char path[300];
    snprintf(path, sizeof path, "%s/stderr", fx->dir);
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(path, "w+");
    assert_non_null(f);
    assert_true(saved >= 0 && dup2(fileno(f), 2) == 2);
    sqlite3_progress_handler(q_store_idx(s)->db, 1, interrupt_all, NULL);
    assert_null(q_loc_of_process(s, 1));
    assert_null(q_loc_of_process(s, 2));
    sqlite3_progress_handler(q_store_idx(s)->db, 0, NULL, NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char out[1024] = "";
    rewind(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    fclose(f);
    assert_non_null(strstr(out, "d9: warning: "));
    assert_non_null(strstr(out, "interrupt"));
    assert_non_null(strstr(out, "(code locations left unresolved)\n"));
    int lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += out[i] == '\n';
    assert_int_equal(lines, 1);     /* two processes, one warning */
    q_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(durations_accept_every_unit),
        cmocka_unit_test(durations_reject_garbage_zero_and_overflow),
        cmocka_unit_test(u64_parsing_is_strict),
        cmocka_unit_test(type_lists_become_masks_and_name_the_bad_one),
        cmocka_unit_test(default_window_is_everything),
        cmocka_unit_test(since_counts_back_from_now_on_a_live_store),
        cmocka_unit_test(since_counts_back_from_newest_record_on_a_store_from_another_boot),
        cmocka_unit_test(since_longer_than_the_clock_starts_at_zero),
        cmocka_unit_test(from_to_are_taken_as_given),
        cmocka_unit_test_setup_teardown(store_opens_read_only_and_lists_processes_and_segments,
                                        setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(missing_store_and_missing_index_say_where, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(scan_keeps_ring_order_where_a_ring_s_stamps_go_backwards,
                                        setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(scan_in_ring_order_only_goes_block_by_block, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(scan_merges_threads_in_time_order, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(scan_filters_by_window_type_and_tid, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(process_end_is_remembered_until_the_index_changes,
                                        setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(scan_stops_when_the_callback_says_so, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(corrupt_block_is_skipped_and_counted, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(a_failed_index_read_is_said_once, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(vanished_segment_file_is_skipped_and_counted,
                                        setup_store, teardown_store),
    };
    return cmocka_run_group_tests_name("query", tests, NULL, NULL);
}
