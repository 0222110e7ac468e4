/*
 * test_keep.c — the flight recorder's cut (collector/store/keep.h) and the
 * index rows of kept windows (idx.h: the kept table, retention order,
 * flight candidates, shipping of kept windows only).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "collector/store/idx.h"
#include "collector/store/keep.h"
#include "collector/store/reindex.h"
#include "collector/store/seg_reader.h"
#include "collector/store/seg_salvage.h"
#include "collector/store/seg_writer.h"
#include "shm/meta.h"
#include "tests/unit/meta_entry.h"

struct fx {
    char dir[64];
    char src[600];
    uint64_t src_bytes;
};

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st; (void)flag; (void)f;
    return remove(p);
}

static const struct seg_proc_info proc = {
    .pid = 4242, .uid = 1000, .start_time = 777, .clock_source = D9_CLOCK_TSC,
    .ns_per_tick = 0.5, .cal_tsc0 = 100, .cal_ns0 = 200,
    .host = "testhost", .comm = "worker", .exe = "/usr/bin/worker",
};

static void rec_poll(uint8_t *buf, size_t *len, int start, uint32_t seq, uint64_t ts)
{
    if (start) {
        struct d9_rec_poll_start r = { .h = { .len = sizeof r, .type = D9_REC_POLL_START,
                                              .seq = seq, .ts = ts },
                                       .task = 7, .loc = 0, .runtime = 1, .worker = 0 };
        memcpy(buf + *len, &r, sizeof r);
        *len += sizeof r;
    } else {
        struct d9_rec_poll_end r = { .h = { .len = sizeof r, .type = D9_REC_POLL_END,
                                            .seq = seq, .ts = ts },
                                     .task = 7, .runtime = 1 };
        memcpy(buf + *len, &r, sizeof r);
        *len += sizeof r;
    }
}

/* A sealed source segment (id 1): two threads, records every 1000 ns from
 * 1000 to 100000 in blocks of 10, a thread end at 50500, the exit at 99500. */
#define SRC_RECS 100u
static int setup(void **state)
{
    struct fx *fx = calloc(1, sizeof *fx);
    strcpy(fx->dir, "/tmp/d9keeptest.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    uint8_t meta[256];
    size_t ml = meta_entry_runtime(meta, 1, "rt-main");
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 1, &proc, meta, ml), 0);
    for (uint32_t ring = 0; ring < 2; ring++) {
        for (uint32_t blk = 0; blk < SRC_RECS / 10; blk++) {
            uint8_t buf[1024];
            size_t len = 0;
            for (uint32_t i = 0; i < 10; i++) {
                uint32_t n = blk * 10 + i;
                rec_poll(buf, &len, n % 2 == 0, n, 1000u * (n + 1) + ring);
            }
            assert_int_equal(seg_writer_add_data(w, 100 + ring, ring, 1, blk == 3 ? 5 : 0,
                                                 buf, len), 0);
        }
    }
    assert_int_equal(seg_writer_add_thread_end(w, 101, 1, 1, 50500), 0);
    struct seg_exit e = { .t_ns = 99500, .reason = SEG_EXIT_CRASHED, .code = 11 };
    assert_int_equal(seg_writer_add_exit(w, &e), 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    snprintf(fx->src, sizeof fx->src, "%s", sum.path);
    fx->src_bytes = sum.bytes;
    seg_writer_free(w);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fx *fx = *state;
    nftw(fx->dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
    free(fx);
    return 0;
}

static struct seg_keep window(uint64_t t0, uint64_t t1)
{
    struct seg_keep k = { .trig_ns = t0 + 1000, .t0_ns = t0, .t1_ns = t1, .trig_pid = 4242,
                          .ntrig = 2, .source_segment = 1 };
    snprintf(k.reason, sizeof k.reason, "slow request");
    return k;
}

static unsigned count_files(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "ls -A %s | wc -l", dir);
    FILE *p = popen(cmd, "r");
    unsigned n = 0;
    assert_non_null(p);
    assert_int_equal(fscanf(p, "%u", &n), 1);
    pclose(p);
    return n;
}

/* Every record of the cut lies in the window, and every record of the
 * source that lies in it is in the cut. */
static void test_cut_keeps_exactly_the_window(void **state)
{
    struct fx *fx = *state;
    struct seg_keep k = window(20000, 60000);
    struct seg_writer *w;
    struct seg_summary sum;
    assert_int_equal(keep_cut(fx->src, fx->dir, 9, &k, &w, &sum), 0);
    assert_true(sum.hdr_flags & SEG_F_KEPT);
    assert_int_equal(sum.segment_id, 9);
    assert_true(sum.t_min >= 20000 && sum.t_max <= 60000);
    /* 20000..60000 holds records n+1 = 20..60 of ring 0 (41) and of ring 1
     * (ts + 1: 20..59, 40) */
    assert_int_equal(sum.nrecords, 81);
    assert_true(sum.bytes < fx->src_bytes);
    char path[600];
    snprintf(path, sizeof path, "%s", sum.path);
    seg_writer_free(w);

    struct seg_reader *r;
    assert_int_equal(seg_reader_open(&r, path, 0), 0);
    const struct seg_file_hdr *h = seg_reader_header(r);
    assert_true(h->flags & SEG_F_KEPT);
    assert_int_equal(h->pid, 4242);
    assert_int_equal(h->start_time, 777);
    assert_int_equal(h->keep.t0_ns, 20000);
    assert_int_equal(h->keep.t1_ns, 60000);
    assert_int_equal(h->keep.trig_ns, 21000);
    assert_int_equal(h->keep.ntrig, 2);
    assert_int_equal(h->keep.source_segment, 1);
    assert_string_equal(h->keep.reason, "slow request");
    struct seg_block b;
    int rc;
    uint64_t recs = 0, lost = 0, thread_ends = 0, exits = 0;
    while ((rc = seg_reader_next(r, &b)) == 1) {
        if (b.h.kind == SEG_BLK_DATA) {
            assert_int_equal(b.h.flags, SEG_BF_PACKED);
            lost += b.h.lost;
            size_t off = 0;
            const struct d9_rec_hdr *rec;
            while (seg_reader_next_record(&b, &off, &rec) == 1) {
                assert_true(rec->ts >= 20000 && rec->ts <= 60000);
                recs++;
            }
        } else if (b.h.kind == SEG_BLK_THREAD_END) {
            thread_ends++;
            assert_int_equal(b.h.t_first, 50500);
        } else if (b.h.kind == SEG_BLK_EXIT) {
            exits++;
        }
    }
    assert_int_equal(rc, 0);            /* the footer's totals check too */
    assert_int_equal(recs, 81);
    assert_int_equal(lost, 10);         /* block 3 of each ring (30..40) is in the window */
    assert_int_equal(thread_ends, 1);
    assert_int_equal(exits, 0);         /* 99500 is past the window */
    assert_string_equal(seg_reader_runtime(r, 1), "rt-main");   /* metadata came along */
    seg_reader_close(r);
}

static void test_cut_keeps_the_exit_inside_the_window(void **state)
{
    struct fx *fx = *state;
    struct seg_keep k = window(90000, 99600);
    struct seg_writer *w;
    struct seg_summary sum;
    assert_int_equal(keep_cut(fx->src, fx->dir, 10, &k, &w, &sum), 0);
    assert_int_equal(sum.t_max, 99500);
    assert_int_equal(sum.nrecords, 20);     /* 90..99 of each ring */
    seg_writer_free(w);
}

static void test_cut_of_an_empty_window_writes_nothing(void **state)
{
    struct fx *fx = *state;
    unsigned before = count_files(fx->dir);
    struct seg_keep k = window(200000, 300000);
    struct seg_writer *w = (struct seg_writer *)1;
    struct seg_summary sum;
    assert_int_equal(keep_cut(fx->src, fx->dir, 11, &k, &w, &sum), -ENODATA);
    assert_null(w);
    assert_int_equal(count_files(fx->dir), before);
}

static void test_cut_refuses_a_corrupt_source_and_leaves_nothing(void **state)
{
    struct fx *fx = *state;
    int fd = open(fx->src, O_RDWR);
    assert_true(fd >= 0);
    uint8_t junk[64];
    memset(junk, 0x5a, sizeof junk);
    assert_int_equal(pwrite(fd, junk, sizeof junk, SEG_HDR_SIZE + 600), (ssize_t)sizeof junk);
    close(fd);
    unsigned before = count_files(fx->dir);
    struct seg_keep k = window(1000, 100000);
    struct seg_writer *w;
    struct seg_summary sum;
    int rc = keep_cut(fx->src, fx->dir, 12, &k, &w, &sum);
    assert_true(rc < 0);
    assert_int_not_equal(rc, -ENODATA);
    assert_int_equal(count_files(fx->dir), before);
}

static void test_bad_arguments(void **state)
{
    struct fx *fx = *state;
    struct seg_keep k = window(5, 4);
    struct seg_writer *w;
    struct seg_summary sum;
    assert_int_equal(keep_cut(fx->src, fx->dir, 13, &k, &w, &sum), -EINVAL);
    k = window(1, 2);
    assert_int_equal(keep_cut(fx->src, fx->dir, 0, &k, &w, &sum), -EINVAL);
}

static void test_overlaps(void **state)
{
    (void)state;
    assert_true(keep_overlaps(10, 20, 20, 30));
    assert_true(keep_overlaps(10, 20, 0, 10));
    assert_true(keep_overlaps(10, 20, 12, 13));
    assert_false(keep_overlaps(10, 20, 21, 30));
    assert_false(keep_overlaps(10, 20, 0, 9));
}

/* Index a source and its cut: the kept row, retention order, candidates,
 * kept-only shipping, delete. */
static void test_index_kept_windows(void **state)
{
    struct fx *fx = *state;
    struct idx *x;
    assert_int_equal(idx_open(&x, fx->dir), 0);
    struct idx_process p = { .pid = 4242, .uid = 1000, .start_time = 777, .comm = "worker",
                             .exe = "/usr/bin/worker", .first_ns = 1000 };
    int64_t pid_row;
    assert_int_equal(idx_process_upsert(x, &p, &pid_row), 0);
    struct seg_summary src, cut;
    assert_int_equal(seg_salvage_summarize(fx->src, &src), 0);
    assert_int_equal(idx_segment_commit(x, pid_row, &src, fx->dir), 0);
    struct seg_keep k = window(20000, 60000);
    struct seg_writer *w;
    assert_int_equal(keep_cut(fx->src, fx->dir, 2, &k, &w, &cut), 0);
    assert_int_equal(idx_segment_commit(x, pid_row, &cut, fx->dir), 0);
    seg_writer_free(w);

    /* retention takes the untriggered segment first, though the kept one is older */
    uint64_t id;
    char rel[512];
    assert_int_equal(idx_oldest_segment(x, &id, rel, sizeof rel), 0);
    assert_int_equal(id, 1);
    /* the flight recorder's candidates: sealed by this run, not kept */
    struct idx_flight_row rows[4];
    size_t n;
    assert_int_equal(idx_flight_candidates(x, 1, 200000, rows, 4, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(rows[0].id, 1);
    assert_int_equal(rows[0].process_id, pid_row);
    assert_int_equal(rows[0].t_max, 100001);
    assert_int_equal(idx_flight_candidates(x, 1, 100001, rows, 4, &n), 0);
    assert_int_equal(n, 0);             /* not settled yet */
    assert_int_equal(idx_flight_candidates(x, 2, 200000, rows, 4, &n), 0);
    assert_int_equal(n, 0);             /* an earlier run's */
    /* shipping: every segment, or kept windows only, with their trigger */
    struct idx_upload u;
    assert_int_equal(idx_upload_next(x, UINT64_MAX >> 2, NULL, 0, &u), 0);
    assert_int_equal(u.segment_id, 1);
    assert_false(u.kept);
    idx_upload_kept_only(x, 1);
    assert_int_equal(idx_upload_next(x, UINT64_MAX >> 2, NULL, 0, &u), 0);
    assert_int_equal(u.segment_id, 2);
    assert_true(u.kept);
    assert_int_equal(u.keep.t0_ns, 20000);
    assert_int_equal(u.keep.t1_ns, 60000);
    assert_int_equal(u.keep.trig_ns, 21000);
    assert_int_equal(u.keep.trig_pid, 4242);
    assert_int_equal(u.keep.source_segment, 1);
    assert_string_equal(u.keep.reason, "slow request");
    /* the untriggered one gone, the kept one is what is left */
    assert_int_equal(idx_segment_delete(x, 1), 0);
    assert_int_equal(idx_oldest_segment(x, &id, rel, sizeof rel), 0);
    assert_int_equal(id, 2);
    assert_int_equal(idx_segment_delete(x, 2), 0);
    assert_int_equal(idx_upload_next(x, UINT64_MAX >> 2, NULL, 0, &u), -ENOENT);
    seg_salvage_release(&src);
    idx_close(x);
}

/* fsck --repair, start-up recovery and d9 pull index a file from its
 * contents (reindex.h): the kept row comes back from the header. */
static void test_reindex_restores_the_kept_row(void **state)
{
    struct fx *fx = *state;
    struct seg_keep k = window(20000, 60000);
    struct seg_writer *w;
    struct seg_summary cut;
    assert_int_equal(keep_cut(fx->src, fx->dir, 3, &k, &w, &cut), 0);
    char path[600];
    snprintf(path, sizeof path, "%s", cut.path);
    seg_writer_free(w);
    struct idx *x;
    assert_int_equal(idx_open(&x, fx->dir), 0);
    assert_int_equal(reindex_file(x, fx->dir, fx->src), 0);
    assert_int_equal(reindex_file(x, fx->dir, path), 0);
    idx_upload_kept_only(x, 1);
    struct idx_upload u;
    assert_int_equal(idx_upload_next(x, UINT64_MAX >> 2, NULL, 0, &u), 0);
    assert_int_equal(u.segment_id, 3);
    assert_true(u.kept);
    assert_int_equal(u.keep.t0_ns, 20000);
    assert_int_equal(u.keep.t1_ns, 60000);
    assert_int_equal(u.keep.source_segment, 1);
    assert_string_equal(u.keep.reason, "slow request");
    uint64_t id;
    char rel[512];
    assert_int_equal(idx_oldest_segment(x, &id, rel, sizeof rel), 0);
    assert_int_equal(id, 1);
    idx_close(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cut_keeps_exactly_the_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cut_keeps_the_exit_inside_the_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cut_of_an_empty_window_writes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cut_refuses_a_corrupt_source_and_leaves_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
        cmocka_unit_test(test_overlaps),
        cmocka_unit_test_setup_teardown(test_index_kept_windows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reindex_restores_the_kept_row, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
