/*
 * test_seg.c — the segment file writer, reader, salvage and CRC-32C
 * (collector/store/seg.c, collector/store/crc32c.c), as a specification.
 */
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
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "collector/store/crc32c.h"
#include "collector/store/pack.h"
#include "collector/store/seg_writer.h"
#include "collector/store/seg_reader.h"
#include "collector/store/seg_salvage.h"
#include "shm/meta.h"
#include "shm/record.h"

/* ---- fixtures ------------------------------------------------------------- */

struct fx {
    char dir[64];
};

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st; (void)flag; (void)f;
    return remove(p);
}

static int setup(void **state)
{
    struct fx *fx = calloc(1, sizeof *fx);
    strcpy(fx->dir, "/tmp/d9segtest.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
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

static const struct seg_proc_info proc = {
    .pid = 4242, .uid = 1000, .start_time = 777, .clock_source = D9_CLOCK_TSC,
    .ns_per_tick = 0.5, .cal_tsc0 = 100, .cal_ns0 = 200,
    .host = "testhost", .comm = "worker", .exe = "/usr/bin/worker",
};

/* Append one metadata entry in log framing; returns new length. */
static size_t put_meta(uint8_t *buf, size_t len, uint16_t kind, uint32_t id, const uint8_t *pl,
                       int plen)
{
    assert_true(plen > 0);
    size_t total = (sizeof(struct d9_meta_hdr) + (size_t)plen + 7u) & ~(size_t)7u;
    struct d9_meta_hdr mh = { .len = (uint16_t)total, .kind = kind, .id = id };
    memset(buf + len, 0, total);
    memcpy(buf + len, &mh, sizeof mh);
    memcpy(buf + len + sizeof mh, pl, (size_t)plen);
    return len + total;
}

static size_t make_meta(uint8_t *buf)
{
    uint8_t pl[512];
    size_t len = 0;
    len = put_meta(buf, len, D9_META_RUNTIME, 1,
                   pl, shm_meta_encode_runtime(pl, sizeof pl, "tokio-main"));
    len = put_meta(buf, len, D9_META_LOCATION, 1, pl,
                   shm_meta_encode_location(pl, sizeof pl, "src/server.c", 42, "accept_loop"));
    uint8_t types[2] = { D9_FT_U64, D9_FT_STR };
    const char *names[2] = { "bytes", "peer" };
    len = put_meta(buf, len, D9_META_SCHEMA, 1, pl,
                   shm_meta_encode_schema(pl, sizeof pl, "request", 2, types, names));
    return len;
}

/* Record builders: append to buf at *len. */
static void rec_poll_start(uint8_t *buf, size_t *len, uint32_t seq, uint64_t ts, uint64_t task)
{
    struct d9_rec_poll_start r = { .h = { .len = sizeof r, .type = D9_REC_POLL_START,
                                          .seq = seq, .ts = ts },
                                   .task = task, .loc = 1, .runtime = 1, .worker = 0 };
    memcpy(buf + *len, &r, sizeof r);
    *len += sizeof r;
}

static void rec_poll_end(uint8_t *buf, size_t *len, uint32_t seq, uint64_t ts, uint64_t task)
{
    struct d9_rec_poll_end r = { .h = { .len = sizeof r, .type = D9_REC_POLL_END,
                                        .seq = seq, .ts = ts },
                                 .task = task, .runtime = 1 };
    memcpy(buf + *len, &r, sizeof r);
    *len += sizeof r;
}

static void rec_custom(uint8_t *buf, size_t *len, uint32_t seq, uint64_t ts)
{
    /* u64 bytes, str peer "1.2.3.4" (4 + 7 bytes, padded to 16) */
    uint8_t pl[24] = { 0 };
    uint64_t bytes = 512;
    uint32_t sl = 7;
    memcpy(pl, &bytes, 8);
    memcpy(pl + 8, &sl, 4);
    memcpy(pl + 12, "1.2.3.4", 7);
    struct d9_rec_custom r = { .h = { .len = (uint16_t)(sizeof r + sizeof pl),
                                      .type = D9_REC_CUSTOM, .seq = seq, .ts = ts },
                               .schema = 1, .payload_len = sizeof pl };
    memcpy(buf + *len, &r, sizeof r);
    memcpy(buf + *len + sizeof r, pl, sizeof pl);
    *len += sizeof r + sizeof pl;
}

static void rec_stack(uint8_t *buf, size_t *len, uint32_t seq, uint64_t ts)
{
    uint64_t ips[3] = { 0x401000, 0x402000, 0x403000 };
    struct d9_rec_stack r = { .h = { .len = (uint16_t)(sizeof r + sizeof ips),
                                     .type = D9_REC_CPU_SAMPLE, .seq = seq, .ts = ts },
                              .tid = 7, .nframes = 3, .weight = 1000 };
    memcpy(buf + *len, &r, sizeof r);
    memcpy(buf + *len + sizeof r, ips, sizeof ips);
    *len += sizeof r + sizeof ips;
}

/* A small, complete segment: meta, two data blocks (one with lost), a
 * thread end and an exit. Fills sum (valid until the writer is freed). */
static struct seg_writer *write_small(const char *dir, uint64_t id, struct seg_summary *sum)
{
    uint8_t meta[1024], data[4096];
    size_t mlen = make_meta(meta), dlen = 0;
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, dir, id, &proc, meta, mlen), 0);
    rec_poll_start(data, &dlen, 1, 1000, 11);
    rec_custom(data, &dlen, 2, 1500);
    rec_poll_end(data, &dlen, 3, 2000, 11);
    assert_int_equal(seg_writer_add_data(w, 100, 0, 1, 0, data, dlen), 0);
    dlen = 0;
    rec_poll_start(data, &dlen, 9, 3000, 12);
    rec_stack(data, &dlen, 10, 2500);
    assert_int_equal(seg_writer_add_data(w, 101, 1, 1, 5, data, dlen), 0);
    assert_int_equal(seg_writer_add_thread_end(w, 101, 1, 1, 3500), 0);
    struct seg_exit ex = { .t_ns = 4000, .reason = SEG_EXIT_CRASHED, .code = 11 };
    assert_int_equal(seg_writer_add_exit(w, &ex), 0);
    assert_int_equal(seg_writer_seal(w, sum), 0);
    return w;
}

static uint8_t *slurp(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    uint8_t *b = malloc((size_t)st.st_size + 1);
    assert_int_equal(pread(fd, b, (size_t)st.st_size, 0), st.st_size);
    close(fd);
    *len = (size_t)st.st_size;
    return b;
}

static void spit(const char *path, const uint8_t *b, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, b, len), (ssize_t)len);
    close(fd);
}

static int count_files(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "ls -A %s | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

/* Read every block; returns the count, or the negative error. */
static int read_all(struct seg_reader *r, uint64_t *nrec_out)
{
    struct seg_block b;
    int n = 0, e;
    uint64_t nrec = 0;
    while ((e = seg_reader_next(r, &b)) == 1) {
        n++;
        size_t off = 0;
        const struct d9_rec_hdr *rec;
        while ((e = seg_reader_next_record(&b, &off, &rec)) == 1)
            nrec++;
        if (e < 0)
            return e;
    }
    if (nrec_out)
        *nrec_out = nrec;
    return e < 0 ? e : n;
}

/* read_all over the segment file at path: its block count, or the error of
 * opening or reading it. */
static int read_path_all(const char *path, uint64_t *nrec_out)
{
    struct seg_reader *r;
    int e = seg_reader_open(&r, path, 0);
    if (e < 0)
        return e;
    e = read_all(r, nrec_out);
    seg_reader_close(r);
    return e;
}

/* ---- CRC-32C --------------------------------------------------------------- */

static void test_crc32c_matches_the_standard_check_value(void **state)
{
    (void)state;
    assert_int_equal(crc32c_update(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(crc32c_sw(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(crc32c_update(0, "", 0), 0);
}

static void test_crc32c_hardware_and_table_paths_agree_and_chain(void **state)
{
    (void)state;
    uint8_t buf[1000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 131 + 7);
    for (size_t start = 0; start < 9; start++)
        for (size_t len = 0; len < 100; len += 7)
            assert_int_equal(crc32c_update(0, buf + start, len), crc32c_sw(0, buf + start, len));
    uint32_t whole = crc32c_update(0, buf, sizeof buf);
    uint32_t part = crc32c_update(crc32c_update(0, buf, 333), buf + 333, sizeof buf - 333);
    assert_int_equal(whole, part);
}

static void test_crc32c_three_lane_path_agrees_with_the_table_on_large_buffers(void **state)
{
    (void)state;
    enum { N = 3 * 3 * 8192 + 100 };
    static uint8_t big[N + 8];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 2654435761u >> 13);
    /* around one and two 3-lane strides, with and without a misaligned start */
    const size_t lens[] = { 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1, 3 * 8192 + 9,
                            6 * 8192, 6 * 8192 + 17, N };
    for (size_t start = 0; start < 8; start += 3)
        for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
            assert_int_equal(crc32c_update(0x5a5a5a5au, big + start, lens[k]),
                             crc32c_sw(0x5a5a5a5au, big + start, lens[k]));
}

/* ---- names ---------------------------------------------------------------- */

static void test_file_name_is_pid_start_time_segment_id(void **state)
{
    (void)state;
    char name[64];
    assert_int_equal(seg_file_name(name, sizeof name, 12, 345, 6789), 0);
    assert_string_equal(name, "12-345-6789.d9seg");
    uint32_t pid;
    uint64_t st, id;
    assert_int_equal(seg_parse_file_name(name, &pid, &st, &id), 0);
    assert_int_equal(pid, 12);
    assert_int_equal(st, 345);
    assert_int_equal(id, 6789);
    assert_int_equal(seg_file_name(name, 8, 12, 345, 6789), -ENAMETOOLONG);
}

static void test_parse_file_name_rejects_other_names(void **state)
{
    (void)state;
    const char *bad[] = { "", "12-345.d9seg", ".tmp.12-345-6789.d9seg", "12-345-6789.d9se",
                          "12-345-6789.d9seg.x", "a-1-2.d9seg", "-1-2-3.d9seg",
                          "99999999999-1-2.d9seg", "1--2-3.d9seg", "index.sqlite" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(seg_parse_file_name(bad[i], NULL, NULL, NULL), -EINVAL);
}

/* ---- writer + reader round trip ------------------------------------------ */

static void test_seal_renames_temp_file_and_fills_summary(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    struct seg_writer *w = write_small(fx->dir, 7, &sum);
    char expect[256];
    snprintf(expect, sizeof expect, "%s/4242-777-7.d9seg", fx->dir);
    assert_string_equal(sum.path, expect);
    assert_string_equal(seg_writer_path(w), expect);
    assert_int_equal(access(expect, F_OK), 0);
    assert_int_equal(count_files(fx->dir), 1);      /* no temp file left */
    struct stat st;
    assert_int_equal(stat(expect, &st), 0);
    assert_int_equal(sum.bytes, (uint64_t)st.st_size);
    assert_int_equal(sum.segment_id, 7);
    assert_int_equal(sum.pid, 4242);
    assert_int_equal(sum.uid, 1000);
    assert_int_equal(sum.start_time, 777);
    assert_int_equal(sum.nrecords, 5);
    assert_int_equal(sum.lost, 5);
    assert_int_equal(sum.t_min, 1000);
    assert_int_equal(sum.t_max, 4000);
    assert_int_equal(sum.counts[D9_REC_POLL_START], 2);
    assert_int_equal(sum.counts[D9_REC_POLL_END], 1);
    assert_int_equal(sum.counts[D9_REC_CUSTOM], 1);
    assert_int_equal(sum.counts[D9_REC_CPU_SAMPLE], 1);
    assert_int_equal(sum.counts[D9_REC_WAKE], 0);
    assert_int_equal(sum.nblocks, 5);
    assert_int_equal(sum.blocks[0].kind, SEG_BLK_META);
    assert_int_equal(sum.blocks[0].offset, SEG_HDR_SIZE);
    assert_int_equal(sum.blocks[1].kind, SEG_BLK_DATA);
    assert_int_equal(sum.blocks[1].offset, sum.blocks[0].offset + sum.blocks[0].len);
    assert_int_equal(sum.blocks[1].tid, 100);
    assert_int_equal(sum.blocks[1].nrec, 3);
    assert_int_equal(sum.blocks[1].t_first, 1000);
    assert_int_equal(sum.blocks[1].t_last, 2000);
    assert_int_equal(sum.blocks[2].ring, 1);
    assert_int_equal(sum.blocks[2].lost, 5);
    assert_int_equal(sum.blocks[2].t_first, 2500);  /* smallest ts, not the first */
    assert_int_equal(sum.blocks[2].t_last, 3000);
    assert_int_equal(sum.blocks[3].kind, SEG_BLK_THREAD_END);
    assert_int_equal(sum.blocks[4].kind, SEG_BLK_EXIT);
    assert_int_equal(sum.blocks[4].offset + sum.blocks[4].len + SEG_FOOTER_SIZE, sum.bytes);
    seg_writer_free(w);
    assert_int_equal(access(expect, F_OK), 0);      /* freeing keeps a sealed file */
}

static void test_reader_returns_header_footer_blocks_and_records(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    struct seg_writer *w = write_small(fx->dir, 7, &sum);
    struct seg_reader *r;
    assert_int_equal(seg_reader_open(&r, sum.path, 0), 0);
    const struct seg_file_hdr *h = seg_reader_header(r);
    assert_int_equal(h->pid, 4242);
    assert_int_equal(h->segment_id, 7);
    assert_int_equal(h->clock_source, D9_CLOCK_TSC);
    assert_true(h->ns_per_tick == 0.5);
    assert_int_equal(h->cal_tsc0, 100);
    assert_string_equal(h->host, "testhost");
    assert_string_equal(h->comm, "worker");
    assert_string_equal(h->exe, "/usr/bin/worker");
    assert_true(h->created_ns > 0 && h->created_realtime_ns > 0);
    assert_int_equal(h->created_ns, seg_writer_opened_ns(w));
    const struct seg_footer *f = seg_reader_footer(r);
    assert_non_null(f);
    assert_int_equal(f->nblocks, 5);
    assert_int_equal(f->nrecords, 5);
    assert_int_equal(f->lost, 5);
    assert_int_equal(f->counts[D9_REC_POLL_START], 2);

    struct seg_block b;
    assert_int_equal(seg_reader_next(r, &b), 1);
    assert_int_equal(b.h.kind, SEG_BLK_META);
    assert_int_equal(b.h.nrec, 3);
    assert_string_equal(seg_reader_runtime(r, 1), "tokio-main");
    const struct shm_meta_entry *loc = seg_reader_location(r, 1);
    assert_non_null(loc);
    assert_string_equal(loc->name, "src/server.c");
    assert_string_equal(loc->func, "accept_loop");
    assert_int_equal(loc->line, 42);
    const struct shm_meta_entry *sch = seg_reader_schema(r, 1);
    assert_non_null(sch);
    assert_string_equal(sch->name, "request");
    assert_int_equal(sch->nfields, 2);
    assert_string_equal(sch->fields[1].name, "peer");
    assert_null(seg_reader_runtime(r, 2));
    assert_null(seg_reader_schema(r, 0));

    assert_int_equal(seg_reader_next(r, &b), 1);
    assert_int_equal(b.h.kind, SEG_BLK_DATA);
    assert_int_equal(b.offset, sum.blocks[1].offset);
    size_t off = 0;
    const struct d9_rec_hdr *rec;
    uint16_t types[3];
    uint64_t ts[3];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(seg_reader_next_record(&b, &off, &rec), 1);
        types[i] = rec->type;
        ts[i] = rec->ts;
    }
    assert_int_equal(seg_reader_next_record(&b, &off, &rec), 0);
    assert_int_equal(types[0], D9_REC_POLL_START);
    assert_int_equal(types[1], D9_REC_CUSTOM);
    assert_int_equal(types[2], D9_REC_POLL_END);
    assert_int_equal(ts[1], 1500);

    assert_int_equal(seg_reader_next(r, &b), 1);
    assert_int_equal(b.h.lost, 5);
    assert_int_equal(seg_reader_next(r, &b), 1);
    assert_int_equal(b.h.kind, SEG_BLK_THREAD_END);
    assert_int_equal(b.h.t_first, 3500);
    assert_int_equal(seg_reader_next(r, &b), 1);
    assert_int_equal(b.h.kind, SEG_BLK_EXIT);
    struct seg_exit ex;
    memcpy(&ex, b.payload, sizeof ex);
    assert_int_equal(ex.reason, SEG_EXIT_CRASHED);
    assert_int_equal(ex.code, 11);
    assert_int_equal(seg_reader_next(r, &b), 0);
    assert_null(seg_reader_error(r));
    seg_reader_close(r);
    seg_writer_free(w);
}

static void test_meta_added_later_is_a_meta_block_before_the_data_using_it(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 1, &proc, NULL, 0), 0);
    uint8_t meta[256], pl[128];
    size_t mlen = put_meta(meta, 0, D9_META_RUNTIME, 3, pl,
                           shm_meta_encode_runtime(pl, sizeof pl, "late-rt"));
    assert_int_equal(seg_writer_add_meta(w, meta, mlen), 0);
    uint8_t data[64];
    size_t dlen = 0;
    rec_poll_start(data, &dlen, 1, 10, 1);
    assert_int_equal(seg_writer_add_data(w, 1, 0, 1, 0, data, dlen), 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    assert_int_equal(sum.nblocks, 2);   /* no empty META block for meta_len 0 */
    assert_int_equal(sum.blocks[0].kind, SEG_BLK_META);
    struct seg_reader *r;
    assert_int_equal(seg_reader_open(&r, sum.path, 0), 0);
    assert_int_equal(read_all(r, NULL), 2);
    assert_string_equal(seg_reader_runtime(r, 3), "late-rt");
    seg_reader_close(r);
    seg_writer_free(w);
}

static void test_lost_without_records_is_kept_in_an_empty_data_block(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 1, &proc, NULL, 0), 0);
    assert_int_equal(seg_writer_add_data(w, 1, 0, 1, 0, NULL, 0), 0);     /* nothing */
    assert_int_equal(seg_writer_add_data(w, 1, 0, 1, 17, NULL, 0), 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    assert_int_equal(sum.nblocks, 1);
    assert_int_equal(sum.lost, 17);
    assert_int_equal(sum.nrecords, 0);
    assert_int_equal(sum.t_min, 0);
    assert_int_equal(sum.t_max, 0);
    assert_int_equal(read_path_all(sum.path, NULL), 1);
    seg_writer_free(w);
}

/* What the drain does: reserve room in the writer, fill it, commit it. */
static int commit_in_place(struct seg_writer *w, const uint8_t *data, size_t dlen, uint64_t lost,
                           const struct seg_data_stats *st)
{
    uint8_t *dst = NULL;
    int rc = seg_writer_data_reserve(w, dlen ? dlen : 8, &dst);
    if (rc)
        return rc;
    if (dlen)
        memcpy(dst, data, dlen);
    return seg_writer_data_commit(w, 7, 0, 1, lost, dlen, st, dlen ? crc32c_update(0, data, dlen) : 0, 0);
}

static void test_in_place_data_block_is_the_same_as_a_checked_one(void **state)
{
    struct fx *fx = *state;
    uint8_t data[256];
    size_t dlen = 0;
    rec_poll_start(data, &dlen, 1, 30, 1);
    rec_poll_end(data, &dlen, 2, 10, 1);
    rec_poll_start(data, &dlen, 3, 20, 2);
    struct seg_data_stats st = { .nrec = 3, .t_min = 10, .t_max = 30 };
    st.counts[D9_REC_POLL_START] = 2;
    st.counts[D9_REC_POLL_END] = 1;
    struct seg_writer *a, *b;
    struct seg_summary sa, sb;
    assert_int_equal(seg_writer_open(&a, fx->dir, 1, &proc, NULL, 0), 0);
    assert_int_equal(seg_writer_add_data(a, 7, 0, 1, 5, data, dlen), 0);
    assert_int_equal(seg_writer_seal(a, &sa), 0);
    assert_int_equal(seg_writer_open(&b, fx->dir, 2, &proc, NULL, 0), 0);
    assert_int_equal(commit_in_place(b, data, dlen, 5, &st), 0);
    assert_int_equal(seg_writer_seal(b, &sb), 0);
    assert_int_equal(sb.bytes, sa.bytes);
    assert_int_equal(sb.nrecords, sa.nrecords);
    assert_int_equal(sb.t_min, sa.t_min);
    assert_int_equal(sb.t_max, sa.t_max);
    assert_int_equal(sb.lost, sa.lost);
    assert_memory_equal(sb.counts, sa.counts, sizeof sa.counts);
    assert_int_equal(sb.nblocks, sa.nblocks);
    for (uint32_t k = 0; k < sa.nblocks; k++) {
        const struct seg_block_info *x = &sa.blocks[k], *y = &sb.blocks[k];
        assert_int_equal(y->offset, x->offset);
        assert_int_equal(y->len, x->len);
        assert_int_equal(y->kind, x->kind);
        assert_int_equal(y->nrec, x->nrec);
        assert_int_equal(y->t_first, x->t_first);
        assert_int_equal(y->t_last, x->t_last);
        assert_int_equal(y->lost, x->lost);
    }
    struct seg_reader *r;
    uint64_t nrec = 0;
    assert_int_equal(seg_reader_open(&r, sb.path, 0), 0);    /* crc and stats verified */
    assert_int_equal(read_all(r, &nrec), 1);
    assert_int_equal(nrec, 3);
    seg_reader_close(r);
    seg_writer_free(a);
    seg_writer_free(b);
}

static void test_in_place_commit_refuses_what_cannot_describe_the_records(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 1, &proc, NULL, 0), 0);
    uint64_t before = seg_writer_bytes(w);
    uint8_t data[64] = { 0 };
    size_t dlen = 0;
    rec_poll_start(data, &dlen, 1, 30, 1);
    struct seg_data_stats none = { 0 }, one = { .nrec = 1, .t_min = 30, .t_max = 30 };
    uint8_t *dst;
    /* no reservation */
    assert_int_equal(seg_writer_data_commit(w, 1, 0, 1, 0, dlen, &one, 0, 0), -EINVAL);
    /* reservations the buffer cannot take or the format does not allow */
    assert_int_equal(seg_writer_data_reserve(w, 0, &dst), -EINVAL);
    assert_int_equal(seg_writer_data_reserve(w, 12, &dst), -EINVAL);
    assert_int_equal(seg_writer_data_reserve(w, SEG_WRITE_BUF, &dst), -EINVAL);
    /* more than reserved, stats that do not match, misaligned */
    assert_int_equal(seg_writer_data_reserve(w, dlen, &dst), 0);
    assert_int_equal(seg_writer_data_commit(w, 1, 0, 1, 0, dlen + 8, &one, 0, 0), -EINVAL);
    assert_int_equal(seg_writer_data_reserve(w, dlen, &dst), 0);
    assert_int_equal(seg_writer_data_commit(w, 1, 0, 1, 0, dlen, &none, 0, 0), -EINVAL);
    assert_int_equal(seg_writer_data_reserve(w, dlen, &dst), 0);
    assert_int_equal(seg_writer_data_commit(w, 1, 0, 1, 0, 12, &one, 0, 0), -EINVAL);
    assert_int_equal(seg_writer_data_reserve(w, dlen, &dst), 0);
    assert_int_equal(seg_writer_data_commit(w, 1, 0, 1, 0, dlen, NULL, 0, 0), -EINVAL);
    assert_int_equal(seg_writer_bytes(w), before);
    /* another block in between drops the reservation */
    assert_int_equal(seg_writer_data_reserve(w, dlen, &dst), 0);
    memcpy(dst, data, dlen);
    assert_int_equal(seg_writer_add_thread_end(w, 1, 0, 1, 40), 0);
    uint64_t after_end = seg_writer_bytes(w);
    assert_int_equal(seg_writer_data_commit(w, 1, 0, 1, 0, dlen, &one,
                                            crc32c_update(0, data, dlen), 0), -EINVAL);
    assert_int_equal(seg_writer_bytes(w), after_end);
    /* a commit of nothing with nothing lost writes nothing */
    assert_int_equal(seg_writer_data_reserve(w, dlen, &dst), 0);
    assert_int_equal(seg_writer_data_commit(w, 1, 0, 1, 0, 0, &none, 0, 0), 0);
    assert_int_equal(seg_writer_bytes(w), after_end);
    seg_writer_free(w);
}

static void test_in_place_record_less_block_carries_drops(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    struct seg_summary sum;
    struct seg_data_stats none = { 0 };
    assert_int_equal(seg_writer_open(&w, fx->dir, 1, &proc, NULL, 0), 0);
    assert_int_equal(commit_in_place(w, NULL, 0, 9, &none), 0);
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    assert_int_equal(sum.lost, 9);
    assert_int_equal(sum.nrecords, 0);
    assert_int_equal(read_path_all(sum.path, NULL), 1);
    seg_writer_free(w);
}

static void test_in_place_reservation_flushes_a_buffer_it_does_not_fit(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    struct seg_summary sum;
    assert_int_equal(seg_writer_open(&w, fx->dir, 1, &proc, NULL, 0), 0);
    /* records enough to fill most of the buffer, in two big blocks */
    const size_t big = SEG_WRITE_BUF / 2 + 4096;
    uint8_t *data = malloc(big);
    assert_non_null(data);
    size_t dlen = 0;
    uint32_t seq = 0;
    while (dlen + sizeof(struct d9_rec_poll_start) <= big)
        rec_poll_start(data, &dlen, seq, 100 + seq, seq), seq++;
    struct seg_data_stats st = { .nrec = seq, .t_min = 100, .t_max = 100 + seq - 1 };
    st.counts[D9_REC_POLL_START] = seq;
    struct stat sb;
    assert_int_equal(commit_in_place(w, data, dlen, 0, &st), 0);
    assert_int_equal(stat(seg_writer_path(w), &sb), 0);
    off_t on_disk = sb.st_size;                      /* still in the buffer */
    assert_int_equal(commit_in_place(w, data, dlen, 0, &st), 0);
    assert_int_equal(stat(seg_writer_path(w), &sb), 0);
    assert_true(sb.st_size > on_disk + (off_t)dlen);  /* the first block was flushed */
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    assert_int_equal(sum.nrecords, 2u * seq);
    uint64_t nrec = 0;
    assert_int_equal(read_path_all(sum.path, &nrec), 2);       /* blocks */
    assert_int_equal(nrec, 2u * seq);
    seg_writer_free(w);
    free(data);
}

/* What the drain writes: records packed into a reservation, one packed block. */
static int commit_packed(struct seg_writer *w, const uint8_t *data, size_t dlen,
                         const struct seg_data_stats *st, int corrupt)
{
    uint8_t *dst = NULL;
    int rc = seg_writer_data_reserve(w, (PACK_BOUND(dlen) + 7) & ~(size_t)7, &dst);
    if (rc)
        return rc;
    struct pack_state ps;
    pack_init(&ps);
    long n = pack_records(&ps, data, dlen, dst + PACK_PREFIX, PACK_BOUND(dlen) - PACK_PREFIX);
    assert_true(n > 0);
    size_t plen = pack_finish(dst, (size_t)n, (uint32_t)dlen);
    if (corrupt == 1)
        dst[PACK_PREFIX] |= 0x80;               /* a reserved tag bit, under a good CRC */
    if (corrupt == 2) {
        uint32_t huge = SEG_BLOCK_MAX + 8;      /* a raw size nothing can hold */
        memcpy(dst, &huge, sizeof huge);
    }
    return seg_writer_data_commit(w, 7, 0, 1, 0, plen, st, crc32c_update(0, dst, plen),
                                  SEG_BF_PACKED);
}

/* n poll-start records, and the stats of their block */
static size_t make_polls(uint8_t *data, unsigned n, struct seg_data_stats *st)
{
    size_t dlen = 0;
    for (unsigned i = 0; i < n; i++)
        rec_poll_start(data, &dlen, i, 1000 + 10u * i, 500 + i);
    *st = (struct seg_data_stats){ .nrec = n, .t_min = 1000, .t_max = 1000 + 10u * (n - 1) };
    st->counts[D9_REC_POLL_START] = n;
    return dlen;
}

static void test_packed_block_reads_back_the_records_of_a_raw_one(void **state)
{
    struct fx *fx = *state;
    uint8_t data[200 * 32];
    struct seg_data_stats st;
    size_t dlen = make_polls(data, 200, &st);
    struct seg_writer *a, *b;
    struct seg_summary sa, sb;
    assert_int_equal(seg_writer_open(&a, fx->dir, 1, &proc, NULL, 0), 0);
    assert_int_equal(seg_writer_add_data(a, 7, 0, 1, 0, data, dlen), 0);
    assert_int_equal(seg_writer_seal(a, &sa), 0);
    assert_int_equal(seg_writer_open(&b, fx->dir, 2, &proc, NULL, 0), 0);
    assert_int_equal(commit_packed(b, data, dlen, &st, 0), 0);
    assert_int_equal(seg_writer_seal(b, &sb), 0);
    assert_int_equal(sb.nrecords, sa.nrecords);
    assert_int_equal(sb.t_min, sa.t_min);
    assert_int_equal(sb.t_max, sa.t_max);
    assert_memory_equal(sb.counts, sa.counts, sizeof sa.counts);
    assert_true(sb.bytes + dlen / 2 < sa.bytes);     /* well under half the bytes */
    struct seg_reader *r;
    struct seg_block blk;
    assert_int_equal(seg_reader_open(&r, sb.path, 0), 0);
    assert_int_equal(seg_reader_next(r, &blk), 1);
    assert_int_equal(blk.h.kind, SEG_BLK_DATA);
    assert_int_equal(blk.h.flags, SEG_BF_PACKED);
    assert_true(blk.h.len < dlen);
    assert_int_equal(blk.records_len, dlen);
    assert_memory_equal(blk.records, data, dlen);
    size_t off = 0;
    const struct d9_rec_hdr *rec;
    uint32_t k = 0;
    while (seg_reader_next_record(&blk, &off, &rec) == 1)
        assert_int_equal(rec->seq, k++);
    assert_int_equal(k, 200);
    assert_int_equal(seg_reader_next(r, &blk), 0);   /* the footer agrees */
    seg_reader_close(r);
    seg_writer_free(a);
    seg_writer_free(b);
}

/* seg_reader_take_records: a packed block's unpacked records become the
 * caller's (they outlive the next block read), a raw block's are not given */
static void test_taken_records_of_a_packed_block_outlive_the_next_read(void **state)
{
    struct fx *fx = *state;
    uint8_t data[200 * 32];
    struct seg_data_stats st;
    size_t dlen = make_polls(data, 200, &st);
    struct seg_writer *a, *b;
    struct seg_summary sa, sb;
    assert_int_equal(seg_writer_open(&a, fx->dir, 1, &proc, NULL, 0), 0);
    assert_int_equal(seg_writer_add_data(a, 7, 0, 1, 0, data, dlen), 0);
    assert_int_equal(seg_writer_seal(a, &sa), 0);
    assert_int_equal(seg_writer_open(&b, fx->dir, 2, &proc, NULL, 0), 0);
    assert_int_equal(commit_packed(b, data, dlen, &st, 0), 0);
    assert_int_equal(seg_writer_seal(b, &sb), 0);
    struct seg_reader *r;
    struct seg_block blk;
    assert_int_equal(seg_reader_open(&r, sa.path, 0), 0);
    assert_int_equal(seg_reader_next(r, &blk), 1);
    assert_int_equal(blk.h.flags, 0);
    assert_null(seg_reader_take_records(r, &blk));      /* the payload buffer: copy it */
    seg_reader_close(r);
    assert_int_equal(seg_reader_open(&r, sb.path, 0), 0);
    assert_int_equal(seg_reader_next(r, &blk), 1);
    assert_int_equal(blk.h.flags, SEG_BF_PACKED);
    uint64_t at = blk.offset;
    uint8_t *one = seg_reader_take_records(r, &blk);
    assert_non_null(one);
    assert_ptr_equal(one, blk.records);
    assert_null(seg_reader_take_records(r, &blk));      /* given once */
    assert_int_equal(seg_reader_seek(r, at), 0);
    assert_int_equal(seg_reader_next(r, &blk), 1);      /* unpacks into a new buffer */
    assert_ptr_not_equal(blk.records, one);
    memset((uint8_t *)(uintptr_t)blk.records, 0, blk.records_len);
    assert_memory_equal(one, data, dlen);               /* untouched by the read */
    uint8_t *two = seg_reader_take_records(r, &blk);
    assert_non_null(two);
    seg_reader_close(r);
    assert_memory_equal(one, data, dlen);               /* and by the close */
    free(one);
    free(two);
    seg_writer_free(a);
    seg_writer_free(b);
}

static void test_packed_blocks_that_do_not_unpack_are_corrupt(void **state)
{
    struct fx *fx = *state;
    uint8_t data[20 * 32];
    struct seg_data_stats st;
    size_t dlen = make_polls(data, 20, &st);
    for (int corrupt = 1; corrupt <= 2; corrupt++) {
        struct seg_writer *w;
        struct seg_summary sum;
        assert_int_equal(seg_writer_open(&w, fx->dir, (uint64_t)corrupt, &proc, NULL, 0), 0);
        assert_int_equal(commit_packed(w, data, dlen, &st, corrupt), 0);
        assert_int_equal(seg_writer_seal(w, &sum), 0);
        struct seg_reader *r;
        struct seg_block blk;
        assert_int_equal(seg_reader_open(&r, sum.path, 0), 0);
        assert_int_equal(seg_reader_next(r, &blk), -EBADMSG);
        assert_non_null(strstr(seg_reader_error(r), corrupt == 1 ? "does not unpack"
                                                                 : "impossible size"));
        seg_reader_close(r);
        seg_writer_free(w);
    }
}

static void test_an_older_format_version_is_refused_naming_both_versions(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    struct seg_writer *w = write_small(fx->dir, 7, &sum);
    size_t len;
    uint8_t *b = slurp(sum.path, &len);
    struct seg_reader *r;
    b[offsetof(struct seg_file_hdr, version)] = SEG_VERSION_OLDEST - 1;
    assert_int_equal(seg_reader_open_mem(&r, b, len, 0), -EBADMSG);
    assert_int_equal(seg_reader_open_mem(&r, b, len, SEG_OPEN_PARTIAL), -EBADMSG);
    spit(sum.path, b, len);
    char why[200], want[120];
    assert_int_equal(seg_reader_open_ex(&r, sum.path, 0, why, sizeof why), -EBADMSG);
    snprintf(want, sizeof want, "segment format version %u is not supported (this d9 reads "
             "versions %u to %u)", SEG_VERSION_OLDEST - 1, SEG_VERSION_OLDEST, SEG_VERSION);
    assert_non_null(strstr(why, want));
    free(b);
    seg_writer_free(w);
}

/* Version 4's trigger blocks read back; a version 3 file (none of them)
 * still reads, and one claiming version 3 with a trigger block is corrupt. */
static void test_trigger_blocks_read_back_and_version_3_still_reads(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    struct seg_writer *w = write_small(fx->dir, 7, &sum);
    size_t len;
    uint8_t *b = slurp(sum.path, &len);
    struct seg_reader *r;
    struct seg_block blk;
    int n = 0, e;
    b[offsetof(struct seg_file_hdr, version)] = 3;          /* no trigger block: a v3 file */
    assert_int_equal(seg_reader_open_mem(&r, b, len, 0), 0);
    while ((e = seg_reader_next(r, &blk)) == 1)
        n++;
    assert_int_equal(e, 0);
    assert_true(n > 0);
    seg_reader_close(r);
    free(b);
    seg_writer_free(w);

    uint8_t meta[1024];
    size_t mlen = make_meta(meta);
    assert_int_equal(seg_writer_open(&w, fx->dir, 8, &proc, meta, mlen), 0);
    struct seg_trigger t = { .t_ns = 5000, .win_t0_ns = 4000, .win_t1_ns = 6000, .pid = 4242 };
    snprintf(t.source, sizeof t.source, "shell");
    snprintf(t.verdict, sizeof t.verdict, "kept");
    snprintf(t.reason, sizeof t.reason, "why");
    assert_int_equal(seg_writer_add_trigger(w, &t), 0);
    struct seg_trigger bad = t;
    bad.win_t0_ns = 7000;                                   /* a reversed window */
    assert_int_equal(seg_writer_add_trigger(w, &bad), -EINVAL);
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    assert_int_equal(sum.t_min, 5000);
    b = slurp(sum.path, &len);
    assert_int_equal(seg_reader_open_mem(&r, b, len, 0), 0);
    assert_int_equal(seg_reader_header(r)->version, SEG_VERSION);
    int found = 0;
    while ((e = seg_reader_next(r, &blk)) == 1) {
        if (blk.h.kind != SEG_BLK_TRIGGER)
            continue;
        struct seg_trigger got;
        assert_int_equal(blk.h.len, sizeof got);
        memcpy(&got, blk.payload, sizeof got);
        assert_memory_equal(&got, &t, sizeof got);
        assert_int_equal(blk.h.tid, 4242);
        found++;
    }
    assert_int_equal(e, 0);
    assert_int_equal(found, 1);
    seg_reader_close(r);
    b[offsetof(struct seg_file_hdr, version)] = 3;          /* v3 had no trigger blocks */
    assert_int_equal(seg_reader_open_mem(&r, b, len, 0), 0);
    while ((e = seg_reader_next(r, &blk)) == 1)
        ;
    assert_int_equal(e, -EBADMSG);
    seg_reader_close(r);
    free(b);
    seg_writer_free(w);
}

static void test_invalid_records_are_rejected_and_write_nothing(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 1, &proc, NULL, 0), 0);
    uint64_t before = seg_writer_bytes(w);
    uint8_t data[256];
    size_t dlen = 0;
    rec_poll_start(data, &dlen, 1, 10, 1);
    rec_poll_end(data, &dlen, 2, 20, 1);
    struct d9_pad_hdr pad = { .len = 8, .type = D9_REC_PAD };
    memcpy(data + dlen, &pad, sizeof pad);
    assert_int_equal(seg_writer_add_data(w, 1, 0, 1, 0, data, dlen + 8), -EINVAL);
    data[dlen - 32 + 2] = 99;   /* second record: unknown type */
    assert_int_equal(seg_writer_add_data(w, 1, 0, 1, 0, data, dlen), -EINVAL);
    assert_int_equal(seg_writer_add_data(w, 1, 0, 1, 0, data, 12), -EINVAL);
    uint8_t badmeta[16] = { 16, 0, 9, 0, 1, 0, 0, 0, 'x', 0 };     /* kind 9 */
    assert_int_equal(seg_writer_add_meta(w, badmeta, sizeof badmeta), -EINVAL);
    struct seg_exit ex = { .t_ns = 1, .reason = 77 };
    assert_int_equal(seg_writer_add_exit(w, &ex), -EINVAL);
    assert_int_equal(seg_writer_bytes(w), before);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    assert_int_equal(sum.nblocks, 0);
    seg_writer_free(w);
}

static void test_data_larger_than_a_block_is_split_at_record_boundaries(void **state)
{
    struct fx *fx = *state;
    size_t n = SEG_BLOCK_MAX / sizeof(struct d9_rec_poll_start) + 1000;
    uint8_t *data = malloc(n * sizeof(struct d9_rec_poll_start));
    size_t dlen = 0;
    for (size_t i = 0; i < n; i++)
        rec_poll_start(data, &dlen, (uint32_t)i, 1000 + i, i);
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 1, &proc, NULL, 0), 0);
    assert_int_equal(seg_writer_add_data(w, 5, 2, 3, 9, data, dlen), 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    assert_int_equal(sum.nblocks, 2);
    assert_true(sum.blocks[0].len - sizeof(struct seg_block_hdr) <= SEG_BLOCK_MAX);
    assert_int_equal(sum.blocks[0].nrec + sum.blocks[1].nrec, n);
    assert_int_equal(sum.blocks[0].lost, 9);
    assert_int_equal(sum.blocks[1].lost, 0);
    assert_int_equal(sum.blocks[1].t_first, sum.blocks[0].t_last + 1);
    assert_int_equal(sum.nrecords, n);
    uint64_t nrec;
    assert_int_equal(read_path_all(sum.path, &nrec), 2);
    assert_int_equal(nrec, n);
    seg_writer_free(w);
    free(data);
}

static void test_freeing_an_unsealed_writer_removes_its_temp_file(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 3, &proc, NULL, 0), 0);
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s/.tmp.4242-777-3.d9seg", fx->dir);
    assert_string_equal(seg_writer_path(w), tmp);
    assert_int_equal(access(tmp, F_OK), 0);
    seg_writer_free(w);
    assert_int_equal(count_files(fx->dir), 0);
}

static void test_unindexed_blocks_are_those_appended_since_the_last_mark(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    const struct seg_block_info *b;
    assert_int_equal(seg_writer_open(&w, fx->dir, 4, &proc, NULL, 0), 0);
    assert_int_equal(seg_writer_id(w), 4);
    assert_int_equal(seg_writer_unindexed(w, &b), 0);
    assert_null(b);
    uint8_t data[256];
    size_t dlen = 0;
    rec_poll_start(data, &dlen, 1, 1000, 11);
    assert_int_equal(seg_writer_add_data(w, 100, 0, 1, 0, data, dlen), 0);
    assert_int_equal(seg_writer_add_data(w, 101, 1, 1, 0, data, dlen), 0);
    assert_int_equal(seg_writer_unindexed(w, &b), 2);
    assert_int_equal(b[0].tid, 100);
    seg_writer_mark_indexed(w, 1);
    seg_writer_mark_indexed(w, 5);          /* more than there are: ignored */
    assert_int_equal(seg_writer_indexed(w), 1);
    assert_int_equal(seg_writer_unindexed(w, &b), 1);
    assert_int_equal(b[0].tid, 101);
    assert_int_equal(seg_writer_add_data(w, 102, 2, 1, 0, data, dlen), 0);
    assert_int_equal(seg_writer_unindexed(w, &b), 2);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    assert_int_equal(sum.nblocks, 3);
    assert_int_equal(sum.nblocks_indexed, 1);
    assert_int_equal(seg_writer_unindexed(w, &b), 0);   /* sealed: the summary has the rest */
    seg_writer_free(w);
}

static void test_open_refuses_a_segment_id_whose_file_exists(void **state)
{
    struct fx *fx = *state;
    char path[256];
    snprintf(path, sizeof path, "%s/4242-777-7.d9seg", fx->dir);
    spit(path, (const uint8_t *)"precious", 8);
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 7, &proc, NULL, 0), -EEXIST);
    assert_int_equal(seg_writer_open(&w, fx->dir, 8, &proc, NULL, 0), 0);
    struct seg_writer *w2;
    assert_int_equal(seg_writer_open(&w2, fx->dir, 8, &proc, NULL, 0), -EEXIST);  /* temp */
    seg_writer_free(w);
    assert_int_equal(count_files(fx->dir), 1);
}

static void test_seal_never_replaces_an_existing_segment(void **state)
{
    struct fx *fx = *state;
    char path[256];
    snprintf(path, sizeof path, "%s/4242-777-7.d9seg", fx->dir);
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 7, &proc, NULL, 0), 0);
    spit(path, (const uint8_t *)"precious", 8);     /* appears while we write */
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), -EEXIST);
    seg_writer_free(w);
    size_t len;
    uint8_t *b = slurp(path, &len);
    assert_int_equal(len, 8);
    free(b);
    assert_int_equal(count_files(fx->dir), 1);      /* temp removed */
}

/* ---- reader: seeking, corruption, truncation ------------------------------- */

static void test_seek_to_indexed_block_after_load_meta(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    struct seg_writer *w = write_small(fx->dir, 7, &sum);
    struct seg_reader *r;
    assert_int_equal(seg_reader_open(&r, sum.path, 0), 0);
    assert_int_equal(seg_reader_load_meta(r), 0);
    assert_string_equal(seg_reader_runtime(r, 1), "tokio-main");
    assert_int_equal(seg_reader_seek(r, sum.blocks[2].offset), 0);
    struct seg_block b;
    assert_int_equal(seg_reader_next(r, &b), 1);
    assert_int_equal(b.h.tid, 101);
    assert_int_equal(seg_reader_seek(r, 3), -EINVAL);
    assert_int_equal(seg_reader_seek(r, sum.bytes), -EINVAL);
    assert_int_equal(seg_reader_seek(r, sum.blocks[2].offset + 8), 0);
    assert_int_equal(seg_reader_next(r, &b), -EBADMSG);     /* not a block start */
    seg_reader_close(r);
    seg_writer_free(w);
}

/* The metadata read from the META blocks the index lists (their offsets)
 * is the whole file's; an offset that is not a META block that checks is
 * refused, never read as one. */
static void test_load_meta_at_the_listed_offsets_equals_reading_every_block(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    struct seg_writer *w = write_small(fx->dir, 8, &sum);
    uint64_t meta[8];
    size_t nm = 0, data = 0;
    for (uint32_t i = 0; i < sum.nblocks; i++) {
        if (sum.blocks[i].kind == SEG_BLK_META && nm < 8)
            meta[nm++] = sum.blocks[i].offset;
        else if (sum.blocks[i].kind == SEG_BLK_DATA && !data)
            data = sum.blocks[i].offset;
    }
    assert_true(nm > 0 && data > 0);
    struct seg_reader *r;
    assert_int_equal(seg_reader_open(&r, sum.path, 0), 0);
    assert_int_equal(seg_reader_load_meta_at(r, meta, nm), 0);
    assert_string_equal(seg_reader_runtime(r, 1), "tokio-main");
    assert_non_null(seg_reader_location(r, 1));
    struct seg_block b;                         /* the reader still reads from the start */
    assert_int_equal(seg_reader_next(r, &b), 1);
    assert_int_equal(b.offset, SEG_HDR_SIZE);
    seg_reader_close(r);
    uint64_t bad[3] = { data, data + 8, 3 };
    for (unsigned k = 0; k < 3; k++) {
        assert_int_equal(seg_reader_open(&r, sum.path, 0), 0);
        assert_true(seg_reader_load_meta_at(r, &bad[k], 1) < 0);
        seg_reader_close(r);
    }
    seg_writer_free(w);
}

static void test_payload_crc_mismatch_is_detected(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    struct seg_writer *w = write_small(fx->dir, 7, &sum);
    size_t len;
    uint8_t *b = slurp(sum.path, &len);
    b[sum.blocks[1].offset + sizeof(struct seg_block_hdr) + 24] ^= 0x40;  /* a task id bit */
    struct seg_reader *r;
    assert_int_equal(seg_reader_open_mem(&r, b, len, 0), 0);
    assert_int_equal(read_all(r, NULL), -EBADMSG);
    assert_non_null(strstr(seg_reader_error(r), "crc"));
    seg_reader_close(r);
    free(b);
    seg_writer_free(w);
}

static void test_tampered_block_header_fields_are_detected(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    struct seg_writer *w = write_small(fx->dir, 7, &sum);
    size_t len;
    uint8_t *orig = slurp(sum.path, &len);
    size_t fields[] = { offsetof(struct seg_block_hdr, nrec), offsetof(struct seg_block_hdr, t_first),
                        offsetof(struct seg_block_hdr, t_last), offsetof(struct seg_block_hdr, lost),
                        offsetof(struct seg_block_hdr, kind), offsetof(struct seg_block_hdr, len) };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        uint8_t *b = malloc(len);
        memcpy(b, orig, len);
        b[sum.blocks[1].offset + fields[i]] ^= 0x01;
        struct seg_reader *r;
        assert_int_equal(seg_reader_open_mem(&r, b, len, 0), 0);
        assert_int_equal(read_all(r, NULL), -EBADMSG);
        seg_reader_close(r);
        free(b);
    }
    free(orig);
    seg_writer_free(w);
}

static void test_footer_inconsistent_with_blocks_is_detected(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    struct seg_writer *w = write_small(fx->dir, 7, &sum);
    size_t len;
    uint8_t *b = slurp(sum.path, &len);
    struct seg_footer f;
    memcpy(&f, b + len - SEG_FOOTER_SIZE, sizeof f);
    f.counts[D9_REC_POLL_START]--;
    f.counts[D9_REC_WAKE]++;        /* totals still add up: only the walk can tell */
    memcpy(b + len - SEG_FOOTER_SIZE, &f, sizeof f);
    struct seg_reader *r;
    assert_int_equal(seg_reader_open_mem(&r, b, len, 0), 0);
    assert_int_equal(read_all(r, NULL), -EBADMSG);
    assert_non_null(strstr(seg_reader_error(r), "footer"));
    seg_reader_close(r);
    f.nrecords++;                   /* and now the footer contradicts itself */
    memcpy(b + len - SEG_FOOTER_SIZE, &f, sizeof f);
    assert_int_equal(seg_reader_open_mem(&r, b, len, 0), -EBADMSG);
    free(b);
    seg_writer_free(w);
}

static void test_bad_magic_and_newer_version_are_refused(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    struct seg_writer *w = write_small(fx->dir, 7, &sum);
    size_t len;
    uint8_t *b = slurp(sum.path, &len);
    struct seg_reader *r;
    b[offsetof(struct seg_file_hdr, version)] = SEG_VERSION + 1;
    assert_int_equal(seg_reader_open_mem(&r, b, len, 0), -ENOTSUP);
    b[0] = 'X';
    assert_int_equal(seg_reader_open_mem(&r, b, len, SEG_OPEN_PARTIAL), -EBADMSG);
    char why[200];
    spit(sum.path, b, len);
    assert_int_equal(seg_reader_open_ex(&r, sum.path, 0, why, sizeof why), -EBADMSG);
    assert_non_null(strstr(why, "magic"));
    free(b);
    seg_writer_free(w);
}

static void test_every_truncation_is_an_error_or_a_prefix_never_a_crash(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    struct seg_writer *w = write_small(fx->dir, 7, &sum);
    size_t len;
    uint8_t *b = slurp(sum.path, &len);
    for (size_t cut = 0; cut < len; cut++) {
        struct seg_reader *r;
        /* strict: without its footer a file is not a segment */
        assert_int_equal(seg_reader_open_mem(&r, b, cut, 0), -EBADMSG);
        int e = seg_reader_open_mem(&r, b, cut, SEG_OPEN_PARTIAL);
        if (cut < SEG_HDR_SIZE) {
            assert_int_equal(e, -EBADMSG);
            continue;
        }
        assert_int_equal(e, 0);
        assert_null(seg_reader_footer(r));
        /* partial: exactly the whole blocks that fit */
        uint32_t whole = 0;
        while (whole < sum.nblocks &&
               sum.blocks[whole].offset + sum.blocks[whole].len <= cut)
            whole++;
        struct seg_block blk;
        uint32_t got = 0;
        while ((e = seg_reader_next(r, &blk)) == 1) {
            assert_int_equal(blk.offset, sum.blocks[got].offset);
            got++;
        }
        assert_int_equal(e, 0);
        assert_int_equal(got, whole);
        int ended_clean = cut == (whole ? sum.blocks[whole - 1].offset + sum.blocks[whole - 1].len
                                        : SEG_HDR_SIZE);
        assert_int_equal(seg_reader_error(r) == NULL, ended_clean);
        seg_reader_close(r);
    }
    free(b);
    seg_writer_free(w);
}

static void test_file_truncated_on_disk_reads_as_partial(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    struct seg_writer *w = write_small(fx->dir, 7, &sum);
    assert_int_equal(truncate(sum.path, (off_t)(sum.blocks[2].offset + 20)), 0);
    struct seg_reader *r;
    assert_int_equal(seg_reader_open(&r, sum.path, 0), -EBADMSG);
    assert_int_equal(seg_reader_open(&r, sum.path, SEG_OPEN_PARTIAL), 0);
    assert_int_equal(read_all(r, NULL), 2);
    assert_non_null(seg_reader_error(r));
    seg_reader_close(r);
    seg_writer_free(w);
}

static void test_open_of_missing_or_non_regular_files_fails_with_errno(void **state)
{
    struct fx *fx = *state;
    struct seg_reader *r;
    char path[256], why[128];
    snprintf(path, sizeof path, "%s/nope.d9seg", fx->dir);
    assert_int_equal(seg_reader_open_ex(&r, path, 0, why, sizeof why), -ENOENT);
    assert_true(strlen(why) > 0);
    assert_int_equal(seg_reader_open(&r, fx->dir, 0), -EINVAL);
    assert_int_equal(seg_reader_open_mem(&r, NULL, 0, SEG_OPEN_PARTIAL), -EBADMSG);
}

static void test_partial_reader_sees_flushed_blocks_of_a_segment_being_written(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 4, &proc, NULL, 0), 0);
    uint8_t data[64];
    size_t dlen = 0;
    rec_poll_start(data, &dlen, 1, 10, 1);
    assert_int_equal(seg_writer_add_data(w, 1, 0, 1, 0, data, dlen), 0);
    assert_int_equal(seg_writer_add_data(w, 1, 0, 1, 0, data, dlen), 0);
    assert_int_equal(seg_writer_flush(w), 0);
    assert_int_equal(seg_writer_add_data(w, 1, 0, 1, 0, data, dlen), 0);     /* buffered */
    struct seg_reader *r;
    assert_int_equal(seg_reader_open(&r, seg_writer_path(w), 0), -EBADMSG);  /* unsealed */
    assert_int_equal(seg_reader_open(&r, seg_writer_path(w), SEG_OPEN_PARTIAL), 0);
    assert_int_equal(read_all(r, NULL), 2);
    assert_null(seg_reader_error(r));       /* ends on a block boundary: nothing bad */
    seg_reader_close(r);
    seg_writer_free(w);
}

/* ---- salvage ---------------------------------------------------------------- */

/* Make a crashed collector's temp file: the writer's bytes cut at `cut`. */
static void make_crashed_temp(const char *dir, uint64_t id, size_t cut, struct seg_summary *orig,
                              char *tmp_out, size_t cap)
{
    char sub[128];
    snprintf(sub, sizeof sub, "%s/orig", dir);
    mkdir(sub, 0700);
    struct seg_writer *w = write_small(sub, id, orig);
    size_t len;
    uint8_t *b = slurp(orig->path, &len);
    assert_true(cut <= len);
    snprintf(tmp_out, cap, "%s/.tmp.4242-777-%llu.d9seg", dir, (unsigned long long)id);
    spit(tmp_out, b, cut);
    free(b);
    /* keep orig's block table */
    struct seg_block_info *copy = malloc(orig->nblocks * sizeof *copy);
    memcpy(copy, orig->blocks, orig->nblocks * sizeof *copy);
    orig->blocks = copy;
    unlink(orig->path);
    seg_writer_free(w);
    rmdir(sub);
}

static void test_salvage_keeps_whole_blocks_of_a_file_cut_mid_block(void **state)
{
    struct fx *fx = *state;
    struct seg_summary orig, sum;
    char tmp[256];
    /* written up to the middle of the thread-end block (block 3) */
    make_crashed_temp(fx->dir, 9, 0, &orig, tmp, sizeof tmp);
    size_t cut = (size_t)orig.blocks[3].offset + 30;
    free(orig.blocks);
    make_crashed_temp(fx->dir, 9, cut, &orig, tmp, sizeof tmp);
    assert_int_equal(seg_salvage(tmp, &sum), 0);
    char final[256];
    snprintf(final, sizeof final, "%s/4242-777-9.d9seg", fx->dir);
    assert_string_equal(sum.path, final);
    assert_int_equal(access(tmp, F_OK), -1);
    assert_int_equal(sum.nblocks, 3);
    assert_int_equal(sum.nrecords, 5);
    assert_int_equal(sum.lost, 5);
    assert_int_equal(sum.t_min, 1000);
    assert_int_equal(sum.t_max, 3000);
    assert_int_equal(sum.counts[D9_REC_POLL_START], 2);
    assert_true(sum.hdr_flags & SEG_F_SALVAGED);
    for (uint32_t i = 0; i < 3; i++)
        assert_int_equal(sum.blocks[i].offset, orig.blocks[i].offset);
    assert_int_equal(sum.bytes, orig.blocks[3].offset + SEG_FOOTER_SIZE);

    struct seg_reader *r;
    assert_int_equal(seg_reader_open(&r, final, 0), 0);     /* sealed, strict read */
    assert_true(seg_reader_header(r)->flags & SEG_F_SALVAGED);
    assert_int_equal(read_all(r, NULL), 3);
    assert_null(seg_reader_error(r));
    seg_reader_close(r);

    struct seg_summary again;
    assert_int_equal(seg_salvage_summarize(final, &again), 0);
    assert_int_equal(again.nblocks, 3);
    assert_int_equal(again.nrecords, 5);
    assert_int_equal(again.bytes, sum.bytes);
    seg_salvage_release(&again);
    seg_salvage_release(&sum);
    free(orig.blocks);
}

static void test_salvage_of_a_sealed_but_unrenamed_file_keeps_everything(void **state)
{
    struct fx *fx = *state;
    struct seg_summary orig, sum;
    char tmp[256];
    make_crashed_temp(fx->dir, 9, 0, &orig, tmp, sizeof tmp);
    size_t full = (size_t)orig.bytes;
    free(orig.blocks);
    make_crashed_temp(fx->dir, 9, full, &orig, tmp, sizeof tmp);
    assert_int_equal(seg_salvage(tmp, &sum), 0);
    assert_int_equal(sum.nblocks, 5);
    assert_int_equal(sum.bytes, full);
    assert_int_equal(sum.t_max, 4000);
    seg_salvage_release(&sum);
    free(orig.blocks);
}

static void test_salvage_refuses_files_with_nothing_to_keep(void **state)
{
    struct fx *fx = *state;
    struct seg_summary orig, sum;
    char tmp[256];
    make_crashed_temp(fx->dir, 9, 100, &orig, tmp, sizeof tmp);         /* half a header */
    assert_int_equal(seg_salvage(tmp, &sum), -EBADMSG);
    size_t meta_end = (size_t)orig.blocks[1].offset;
    free(orig.blocks);
    make_crashed_temp(fx->dir, 9, meta_end + 8, &orig, tmp, sizeof tmp);  /* header + meta */
    assert_int_equal(seg_salvage(tmp, &sum), -ENODATA);
    assert_int_equal(access(tmp, F_OK), 0);         /* left for the caller */
    free(orig.blocks);
    char notmp[256];
    snprintf(notmp, sizeof notmp, "%s/4242-777-9.d9seg", fx->dir);
    assert_int_equal(seg_salvage(notmp, &sum), -EINVAL);
}

static void test_salvage_never_replaces_an_existing_segment(void **state)
{
    struct fx *fx = *state;
    struct seg_summary orig, sum;
    char tmp[256], final[256];
    make_crashed_temp(fx->dir, 9, 0, &orig, tmp, sizeof tmp);
    size_t full = (size_t)orig.bytes;
    free(orig.blocks);
    make_crashed_temp(fx->dir, 9, full, &orig, tmp, sizeof tmp);
    snprintf(final, sizeof final, "%s/4242-777-9.d9seg", fx->dir);
    spit(final, (const uint8_t *)"other", 5);
    assert_int_equal(seg_salvage(tmp, &sum), -EEXIST);
    assert_int_equal(access(tmp, F_OK), 0);
    free(orig.blocks);
}

static void test_salvage_recovers_what_a_killed_collector_flushed(void **state)
{
    struct fx *fx = *state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        uint8_t data[4096];
        size_t dlen = 0;
        for (uint32_t i = 0; i < 100; i++)
            rec_poll_start(data, &dlen, i, 100 + i, i);
        struct seg_writer *w;
        if (seg_writer_open(&w, fx->dir, 12, &proc, NULL, 0) != 0)
            _exit(1);
        for (int b = 0; b < 5; b++)
            if (seg_writer_add_data(w, 1, 0, 1, 0, data, dlen) != 0)
                _exit(1);
        if (seg_writer_flush(w) != 0 || seg_writer_add_data(w, 1, 0, 1, 0, data, dlen) != 0)
            _exit(1);       /* the sixth block is only buffered */
        if (write(p[1], "k", 1) != 1)
            _exit(1);
        for (;;)
            pause();        /* killed here, never sealed */
    }
    char c;
    assert_int_equal(read(p[0], &c, 1), 1);
    kill(child, SIGKILL);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFSIGNALED(status));
    close(p[0]);
    close(p[1]);
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s/.tmp.4242-777-12.d9seg", fx->dir);
    struct seg_summary sum;
    assert_int_equal(seg_salvage(tmp, &sum), 0);
    assert_int_equal(sum.nblocks, 5);
    assert_int_equal(sum.nrecords, 500);
    assert_int_equal(count_files(fx->dir), 1);
    seg_salvage_release(&sum);
}

static void test_meta_ids_beyond_the_table_limit_are_dropped_and_counted(void **state)
{
    struct fx *fx = *state;
    uint8_t meta[128], pl[64];
    size_t mlen = put_meta(meta, 0, D9_META_RUNTIME, SEG_META_IDS_MAX + 1, pl,
                           shm_meta_encode_runtime(pl, sizeof pl, "far"));
    mlen = put_meta(meta, mlen, D9_META_RUNTIME, SEG_META_IDS_MAX, pl,
                    shm_meta_encode_runtime(pl, sizeof pl, "last"));
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 1, &proc, meta, mlen), 0);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    struct seg_reader *r;
    assert_int_equal(seg_reader_open(&r, sum.path, 0), 0);
    assert_int_equal(seg_reader_load_meta(r), 0);
    assert_int_equal(seg_reader_meta_dropped(r), 1);
    assert_null(seg_reader_runtime(r, SEG_META_IDS_MAX + 1));
    assert_string_equal(seg_reader_runtime(r, SEG_META_IDS_MAX), "last");
    assert_int_equal(read_all(r, NULL), 1);         /* reading again adds nothing twice */
    assert_int_equal(seg_reader_meta_dropped(r), 2);
    seg_reader_close(r);
    seg_writer_free(w);
}

static void test_file_shrinking_under_an_open_reader_is_corruption_not_a_crash(void **state)
{
    struct fx *fx = *state;
    struct seg_summary sum;
    struct seg_writer *w = write_small(fx->dir, 7, &sum);
    struct seg_reader *r;
    assert_int_equal(seg_reader_open(&r, sum.path, 0), 0);
    struct seg_block b;
    assert_int_equal(seg_reader_next(r, &b), 1);
    assert_int_equal(truncate(sum.path, (off_t)sum.blocks[2].offset), 0);
    assert_int_equal(seg_reader_next(r, &b), 1);            /* block 1 still fits */
    assert_int_equal(seg_reader_next(r, &b), -EBADMSG);
    assert_non_null(strstr(seg_reader_error(r), "truncated"));
    seg_reader_close(r);
    seg_writer_free(w);
}

/* ---- I/O errors -------------------------------------------------------------- */

static void test_open_in_a_missing_or_unwritable_dir_fails_cleanly(void **state)
{
    struct fx *fx = *state;
    struct seg_writer *w = (struct seg_writer *)1;
    char missing[128];
    snprintf(missing, sizeof missing, "%s/nope", fx->dir);
    assert_int_equal(seg_writer_open(&w, missing, 1, &proc, NULL, 0), -ENOENT);
    assert_null(w);
    if (geteuid() == 0) {
        /* root ignores modes: use a read-only bind mount if allowed */
        char ro[128];
        snprintf(ro, sizeof ro, "%s/ro", fx->dir);
        mkdir(ro, 0700);
        if (mount(ro, ro, NULL, MS_BIND, NULL) != 0)
            skip();
        if (mount(NULL, ro, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) != 0) {
            umount2(ro, MNT_DETACH);
            skip();
        }
        int e = seg_writer_open(&w, ro, 1, &proc, NULL, 0);
        umount2(ro, MNT_DETACH);
        assert_int_equal(e, -EROFS);
    } else {
        char ro[128];
        snprintf(ro, sizeof ro, "%s/ro", fx->dir);
        mkdir(ro, 0500);
        assert_int_equal(seg_writer_open(&w, ro, 1, &proc, NULL, 0), -EACCES);
    }
    assert_null(w);
}

static void test_failing_header_write_leaves_no_temp_file(void **state)
{
    struct fx *fx = *state;
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 100;                         /* less than a header */
    void (*oldsig)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    struct seg_writer *w;
    int e = seg_writer_open(&w, fx->dir, 1, &proc, NULL, 0);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, oldsig);
    assert_int_equal(e, -EFBIG);
    assert_null(w);
    assert_int_equal(count_files(fx->dir), 0);
}

static void fill_block(uint8_t *data, size_t *dlen, size_t n, uint64_t t0)
{
    *dlen = 0;
    for (size_t i = 0; i < n; i++)
        rec_poll_start(data, dlen, (uint32_t)i, t0 + i, i);
}

static void test_file_size_limit_fails_an_add_without_partial_state(void **state)
{
    struct fx *fx = *state;
    size_t per = 2000;          /* 64 KB of records per block */
    uint8_t *data = malloc(per * sizeof(struct d9_rec_poll_start));
    size_t dlen;
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 1, &proc, NULL, 0), 0);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 3u * 1024u * 1024u + 12345u;     /* mid-block */
    void (*oldsig)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int e = 0, accepted = 0;
    for (int i = 0; i < 200 && e == 0; i++) {
        fill_block(data, &dlen, per, (uint64_t)i * per);
        if ((e = seg_writer_add_data(w, 1, 0, 1, 0, data, dlen)) == 0)
            accepted++;
    }
    assert_int_equal(e, -EFBIG);
    /* the file holds whole blocks only */
    struct stat st;
    assert_int_equal(stat(seg_writer_path(w), &st), 0);
    assert_true((uint64_t)st.st_size <= lim.rlim_cur);
    assert_int_equal(((uint64_t)st.st_size - SEG_HDR_SIZE) %
                     (sizeof(struct seg_block_hdr) + dlen), 0);
    assert_int_equal(seg_writer_bytes(w), SEG_HDR_SIZE +
                     (uint64_t)accepted * (sizeof(struct seg_block_hdr) + dlen));
    /* space comes back: the same writer goes on and seals everything it accepted */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, oldsig);
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);
    assert_int_equal(sum.nblocks, accepted);
    uint64_t nrec;
    assert_int_equal(read_path_all(sum.path, &nrec), accepted);
    assert_int_equal(nrec, (uint64_t)accepted * per);
    seg_writer_free(w);
    free(data);
}

/* A writer holding one buffered 64 KB block, sealed under a 4 KB file size limit. */
static int seal_under_limit(struct seg_writer *w)
{
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 4096;
    void (*oldsig)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    struct seg_summary sum;
    int e = seg_writer_seal(w, &sum);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, oldsig);
    return e;
}

static void test_failed_seal_leaves_the_segment_unsealed_and_retryable(void **state)
{
    struct fx *fx = *state;
    size_t per = 2000;
    uint8_t *data = malloc(per * sizeof(struct d9_rec_poll_start));
    size_t dlen;
    fill_block(data, &dlen, per, 0);
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 1, &proc, NULL, 0), 0);
    assert_int_equal(seg_writer_add_data(w, 1, 0, 1, 0, data, dlen), 0);  /* buffered */
    uint64_t bytes = seg_writer_bytes(w);
    assert_int_equal(seal_under_limit(w), -EFBIG);
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s/.tmp.4242-777-1.d9seg", fx->dir);
    struct stat st;
    assert_int_equal(stat(tmp, &st), 0);
    assert_int_equal(st.st_size, SEG_HDR_SIZE);            /* no partial block, no footer */
    assert_int_equal(seg_writer_bytes(w), bytes);
    assert_int_equal(seg_writer_add_data(w, 1, 0, 1, 0, data, dlen), 0);  /* still usable */
    struct seg_summary sum;
    assert_int_equal(seg_writer_seal(w, &sum), 0);           /* space back: retry works */
    assert_int_equal(sum.nblocks, 2);
    assert_int_equal(count_files(fx->dir), 1);
    assert_int_equal(read_path_all(sum.path, NULL), 2);
    seg_writer_free(w);
    free(data);
}

static void test_failed_seal_then_free_removes_the_temp_file(void **state)
{
    struct fx *fx = *state;
    size_t per = 2000;
    uint8_t *data = malloc(per * sizeof(struct d9_rec_poll_start));
    size_t dlen;
    fill_block(data, &dlen, per, 0);
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 1, &proc, NULL, 0), 0);
    assert_int_equal(seg_writer_add_data(w, 1, 0, 1, 0, data, dlen), 0);
    assert_int_equal(seal_under_limit(w), -EFBIG);
    seg_writer_free(w);
    assert_int_equal(count_files(fx->dir), 0);
    free(data);
}

static void test_abandoned_writer_leaves_a_salvageable_temp_file(void **state)
{
    struct fx *fx = *state;
    uint8_t data[4096];
    size_t dlen = 0;
    for (uint32_t i = 0; i < 10; i++)
        rec_poll_start(data, &dlen, i, 100 + i, i);
    struct seg_writer *w;
    assert_int_equal(seg_writer_open(&w, fx->dir, 3, &proc, NULL, 0), 0);
    assert_int_equal(seg_writer_add_data(w, 1, 0, 1, 0, data, dlen), 0);
    assert_int_equal(seg_writer_add_data(w, 1, 0, 1, 0, data, dlen), 0);     /* buffered */
    seg_writer_abandon(w);
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s/.tmp.4242-777-3.d9seg", fx->dir);
    struct seg_summary sum;
    assert_int_equal(seg_salvage(tmp, &sum), 0);
    assert_int_equal(sum.nblocks, 2);
    assert_int_equal(sum.nrecords, 20);
    seg_salvage_release(&sum);
}

static void test_full_file_system_is_enospc_and_survivable(void **state)
{
    struct fx *fx = *state;
    char mnt[128];
    snprintf(mnt, sizeof mnt, "%s/small", fx->dir);
    mkdir(mnt, 0700);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=512k") != 0)
        skip();         /* needs CAP_SYS_ADMIN; the RLIMIT_FSIZE tests cover the logic */
    size_t per = 2000;
    uint8_t *data = malloc(per * sizeof(struct d9_rec_poll_start));
    size_t dlen;
    struct seg_writer *w;
    int e = seg_writer_open(&w, mnt, 1, &proc, NULL, 0), accepted = 0;
    for (int i = 0; i < 100 && e == 0; i++) {
        fill_block(data, &dlen, per, (uint64_t)i * per);
        if ((e = seg_writer_add_data(w, 1, 0, 1, 0, data, dlen)) == 0)
            accepted++;
    }
    struct stat st;
    int st_ok = stat(seg_writer_path(w), &st);
    struct seg_summary sum;
    int seal = seg_writer_seal(w, &sum);
    seg_writer_free(w);
    int left = count_files(mnt);
    /* and once space is free again a new segment works */
    struct seg_writer *w2;
    int reopen = seg_writer_open(&w2, mnt, 2, &proc, NULL, 0);
    int add2 = reopen == 0 ? seg_writer_add_data(w2, 1, 0, 1, 0, data, dlen) : reopen;
    int seal2 = reopen == 0 ? seg_writer_seal(w2, &sum) : reopen;
    if (reopen == 0)
        seg_writer_free(w2);
    umount2(mnt, MNT_DETACH);
    free(data);
    assert_int_equal(e, -ENOSPC);
    assert_true(accepted > 0);
    assert_int_equal(st_ok, 0);
    assert_int_equal(((uint64_t)st.st_size - SEG_HDR_SIZE) % (sizeof(struct seg_block_hdr) + dlen),
                     0);
    assert_int_equal(seal, -ENOSPC);
    assert_int_equal(left, 0);
    assert_int_equal(reopen, 0);
    assert_int_equal(add2, 0);
    assert_int_equal(seal2, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c_matches_the_standard_check_value),
        cmocka_unit_test(test_crc32c_hardware_and_table_paths_agree_and_chain),
        cmocka_unit_test(test_crc32c_three_lane_path_agrees_with_the_table_on_large_buffers),
        cmocka_unit_test(test_file_name_is_pid_start_time_segment_id),
        cmocka_unit_test(test_parse_file_name_rejects_other_names),
        cmocka_unit_test_setup_teardown(test_seal_renames_temp_file_and_fills_summary, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reader_returns_header_footer_blocks_and_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_meta_added_later_is_a_meta_block_before_the_data_using_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_without_records_is_kept_in_an_empty_data_block, setup, teardown),
        cmocka_unit_test_setup_teardown(test_in_place_data_block_is_the_same_as_a_checked_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_in_place_commit_refuses_what_cannot_describe_the_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_in_place_record_less_block_carries_drops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_in_place_reservation_flushes_a_buffer_it_does_not_fit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_packed_block_reads_back_the_records_of_a_raw_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_packed_blocks_that_do_not_unpack_are_corrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_older_format_version_is_refused_naming_both_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trigger_blocks_read_back_and_version_3_still_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_records_are_rejected_and_write_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_data_larger_than_a_block_is_split_at_record_boundaries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_freeing_an_unsealed_writer_removes_its_temp_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unindexed_blocks_are_those_appended_since_the_last_mark, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_refuses_a_segment_id_whose_file_exists, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seal_never_replaces_an_existing_segment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seek_to_indexed_block_after_load_meta, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_meta_at_the_listed_offsets_equals_reading_every_block, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_payload_crc_mismatch_is_detected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tampered_block_header_fields_are_detected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_footer_inconsistent_with_blocks_is_detected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_magic_and_newer_version_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_truncation_is_an_error_or_a_prefix_never_a_crash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_truncated_on_disk_reads_as_partial, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_of_missing_or_non_regular_files_fails_with_errno, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_reader_sees_flushed_blocks_of_a_segment_being_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_salvage_keeps_whole_blocks_of_a_file_cut_mid_block, setup, teardown),
        cmocka_unit_test_setup_teardown(test_salvage_of_a_sealed_but_unrenamed_file_keeps_everything, setup, teardown),
        cmocka_unit_test_setup_teardown(test_salvage_refuses_files_with_nothing_to_keep, setup, teardown),
        cmocka_unit_test_setup_teardown(test_salvage_never_replaces_an_existing_segment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_salvage_recovers_what_a_killed_collector_flushed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_meta_ids_beyond_the_table_limit_are_dropped_and_counted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_shrinking_under_an_open_reader_is_corruption_not_a_crash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_in_a_missing_or_unwritable_dir_fails_cleanly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failing_header_write_leaves_no_temp_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_size_limit_fails_an_add_without_partial_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_seal_leaves_the_segment_unsealed_and_retryable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_seal_then_free_removes_the_temp_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abandoned_writer_leaves_a_salvageable_temp_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_file_system_is_enospc_and_survivable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_taken_records_of_a_packed_block_outlive_the_next_read, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
