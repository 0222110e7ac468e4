/*
 * fuzz_rel_fsck.c — libFuzzer target for the store check/repair
 * (collector/store/fsck.c) with one property: after `fsck --repair` succeeded, a
 * second check finds nothing. Whatever a crash or a bad disk leaves in a
 * store, one repair makes index and files agree.
 *
 * Input: byte 0 = mode, bytes 1..10 = trunc_at (u32), flip_at (u32),
 * flip_xor (u8), the rest = payload. A fresh store (empty index) in a
 * scratch dir under $TMPDIR gets:
 *   mode & 16: a genuine segment written with seg_writer whose records are
 *              built from the payload (8 bytes -> one queue_depth record);
 *              sealed (and with mode & 4 indexed through reindex_file),
 *              or with mode & 32 left as the temp file of a crashed writer;
 *   otherwise: the payload itself as a sealed file (mode & 1) and/or as a
 *              temp file (mode & 2);
 * then mode & 64 truncates the file at trunc_at, mode & 128 xors one byte.
 * The store is checked, repaired and checked again; the target aborts if
 * the repair reported no failure and the second check still finds problems,
 * or if a check fails to run. FUZZ_REL_FSCK_VERBOSE=1 prints each outcome.
 * Built and run by tests/fuzz/run.sh.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collector/store/fsck.h"
#include "collector/store/reindex.h"
#include "collector/store/idx.h"
#include "collector/store/seg_writer.h"

#define FZ_HDR        10u
#define FZ_MAX_RECS   512u
#define FZ_SEG_NAME   "1-2-1.d9seg"
#define FZ_RAW_NAME   "1-2-7.d9seg"
#define FZ_TMP_NAME   ".tmp.1-2-8.d9seg"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_dir[4096];

static void wipe(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    char p[8192];
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            unlink(p);
        }
    closedir(d);
}

static void put_file(const char *name, const uint8_t *b, size_t n)
{
    char p[8192];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    if (n && write(fd, b, n) < 0) {}
    close(fd);
}

static uint8_t *slurp(const char *path, size_t *n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    uint8_t *b = malloc((size_t)st.st_size + 1);
    ssize_t r = b ? read(fd, b, (size_t)st.st_size) : -1;
    close(fd);
    if (r < 0) {
        free(b);
        return NULL;
    }
    *n = (size_t)r;
    return b;
}

/* A real segment from the payload; returns the path of the file it left. */
static int genuine(uint8_t mode, const uint8_t *pl, size_t n, char *path, size_t cap)
{
    struct seg_proc_info pi = { .pid = 1, .uid = 0, .start_time = 2,
                                .clock_source = D9_CLOCK_MONOTONIC, .host = "fuzz",
                                .comm = "fuzz", .exe = "/fuzz" };
    struct seg_writer *w = NULL;
    if (seg_writer_open(&w, g_dir, 1, &pi, NULL, 0) != 0)
        return -1;
    static struct d9_rec_queue_depth recs[FZ_MAX_RECS];
    size_t nrec = n / 8 < FZ_MAX_RECS ? n / 8 : FZ_MAX_RECS;
    for (size_t i = 0; i < nrec; i++) {
        memset(&recs[i], 0, sizeof recs[i]);
        recs[i].h.len = sizeof recs[i];
        recs[i].h.type = D9_REC_QUEUE_DEPTH;
        recs[i].h.seq = (uint32_t)i;
        recs[i].h.ts = 1000 + i;
        memcpy(&recs[i].depth, pl + 8 * i, 8);
        recs[i].worker = D9_WORKER_NONE;
    }
    if (nrec)
        seg_writer_add_data(w, 11, 0, 1, pl[0] & 3, (const uint8_t *)recs, nrec * sizeof recs[0]);
    if (mode & 32) {
        /* a crashed writer: the temp file as it was, without footer */
        seg_writer_flush(w);
        snprintf(path, cap, "%s", seg_writer_path(w));
        size_t len = 0;
        uint8_t *copy = slurp(path, &len);
        seg_writer_free(w);
        if (copy) {
            const char *base = strrchr(path, '/');
            put_file(base ? base + 1 : path, copy, len);
            free(copy);
        }
        return 0;
    }
    struct seg_summary sum;
    int rc = seg_writer_seal(w, &sum);
    if (rc == 0)
        snprintf(path, cap, "%s", sum.path);
    seg_writer_free(w);
    if (rc)
        return -1;
    if (mode & 4) {
        struct idx *x = NULL;
        if (idx_open(&x, g_dir) == 0) {
            reindex_file(x, g_dir, path);
            idx_close(x);
        }
    }
    return 0;
}

static void damage(const char *path, uint8_t mode, uint32_t trunc_at, uint32_t flip_at,
                   uint8_t flip_xor)
{
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size == 0)
        return;
    if ((mode & 64) && trunc_at < st.st_size)
        if (truncate(path, trunc_at) != 0) {}
    if ((mode & 128) && flip_xor) {
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            return;
        uint8_t b;
        off_t at = (off_t)(flip_at % (uint32_t)st.st_size);
        if (pread(fd, &b, 1, at) == 1) {
            b ^= flip_xor;
            if (pwrite(fd, &b, 1, at) != 1) {}
        }
        close(fd);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < FZ_HDR)
        return 0;
    if (!g_dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(g_dir, sizeof g_dir, "%s/fuzz_rel_fsck.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(g_dir))
            abort();
    }
    wipe(g_dir);
    uint8_t mode = data[0];
    uint32_t trunc_at, flip_at;
    memcpy(&trunc_at, data + 1, 4);
    memcpy(&flip_at, data + 5, 4);
    uint8_t flip_xor = size > FZ_HDR ? data[FZ_HDR - 1] : 0;
    const uint8_t *pl = data + FZ_HDR;
    size_t n = size - FZ_HDR;

    struct idx *x = NULL;
    if (idx_open(&x, g_dir) != 0)
        abort();
    idx_close(x);
    char path[8192] = "";
    if (mode & 16) {
        if (genuine(mode, pl, n, path, sizeof path) != 0)
            return 0;
    } else {
        if (mode & 1) {
            put_file(FZ_RAW_NAME, pl, n);
            snprintf(path, sizeof path, "%s/%s", g_dir, FZ_RAW_NAME);
        }
        if (mode & 2) {
            put_file(FZ_TMP_NAME, pl, n);
            if (!(mode & 1))
                snprintf(path, sizeof path, "%s/%s", g_dir, FZ_TMP_NAME);
        }
    }
    if (path[0])
        damage(path, mode, trunc_at, flip_at, flip_xor);

    struct fsck_report r1, r2, r3;
    memset(&r1, 0, sizeof r1);
    memset(&r2, 0, sizeof r2);
    memset(&r3, 0, sizeof r3);
    if (fsck_run(g_dir, 0, &r1) != 0)
        abort();
    if (fsck_run(g_dir, 1, &r2) != 0)
        abort();
    if (fsck_run(g_dir, 0, &r3) != 0)
        abort();
    if (getenv("FUZZ_REL_FSCK_VERBOSE"))
        fprintf(stderr, "fuzz_rel_fsck: mode %#x: %llu problems, repair: %llu deleted %llu "
                "indexed %llu salvaged %llu removed %llu renamed %llu failed; after: %llu\n",
                mode, (unsigned long long)fsck_problems(&r1),
                (unsigned long long)r2.rows_deleted, (unsigned long long)r2.reindexed,
                (unsigned long long)r2.salvaged, (unsigned long long)r2.temps_removed,
                (unsigned long long)r2.quarantined, (unsigned long long)r2.errors,
                (unsigned long long)fsck_problems(&r3));
    if (r2.errors == 0 && fsck_problems(&r3) != 0) {
        fprintf(stderr, "fuzz_rel_fsck: store not clean after a successful repair: "
                "missing %llu mismatched %llu corrupt %llu orphans %llu temps %llu\n",
                (unsigned long long)r3.missing, (unsigned long long)r3.mismatched,
                (unsigned long long)r3.corrupt, (unsigned long long)r3.orphans,
                (unsigned long long)r3.temps);
        abort();
    }
    return 0;
}
