/*
 * fuzz_salvage.c — libFuzzer target for crash salvage (seg_salvage) and
 * seg_salvage_summarize (collector/store/seg.c).
 *
 * The input is written as a temp segment (.tmp.<name>) in a private
 * directory and salvaged. Invariants: salvage never crashes; when it
 * succeeds the temp file is gone and the result is a sealed segment that
 * the strict reader reads to the end without error, with as many blocks as
 * the summary says, and seg_salvage_summarize agrees with the salvage summary; when
 * it fails, no sealed file appears. The CRC fix-up of fuzz_segment.c is
 * applied to every other input so that the fuzzer gets past block CRCs.
 * Built and run by tests/fuzz/run.sh.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "collector/store/seg_reader.h"
#include "collector/store/seg_salvage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[256];

static void remove_dir(void)
{
    char p[300];
    snprintf(p, sizeof p, "%s/.tmp.1-2-3.d9seg", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/1-2-3.d9seg", dir);
    unlink(p);
    rmdir(dir);
}

static void fix_crcs(uint8_t *buf, size_t size)
{
    uint64_t off = SEG_HDR_SIZE;
    struct seg_block_hdr h;
    while (off + sizeof h <= size) {
        memcpy(&h, buf + off, sizeof h);
        if (h.magic != SEG_BLOCK_MAGIC || h.len > size - off - sizeof h)
            break;
        h.crc32c = crc32c_update(0, buf + off + sizeof h, h.len);
        memcpy(buf + off, &h, sizeof h);
        off += sizeof h + h.len;
    }
}

static void check(const char *tmp, const char *final)
{
    struct seg_summary sum;
    int e = seg_salvage(tmp, &sum);
    if (e != 0) {
        if (access(final, F_OK) == 0)
            abort();                    /* failure must not leave a sealed file */
        return;
    }
    if (access(tmp, F_OK) == 0 || strcmp(sum.path, final) != 0)
        abort();
    struct seg_reader *r;
    if (seg_reader_open(&r, final, 0) != 0)
        abort();
    struct seg_block b;
    uint32_t n = 0;
    while ((e = seg_reader_next(r, &b)) == 1)
        n++;
    if (e != 0 || n != sum.nblocks || seg_reader_error(r))
        abort();
    seg_reader_close(r);
    struct seg_summary again;
    if (seg_salvage_summarize(final, &again) != 0 || again.nblocks != sum.nblocks ||
        again.nrecords != sum.nrecords || again.bytes != sum.bytes ||
        again.t_min != sum.t_min || again.t_max != sum.t_max)
        abort();
    seg_salvage_release(&again);
    seg_salvage_release(&sum);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/d9fuzz-salvage.XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(dir))
            abort();
        atexit(remove_dir);
    }
    char tmp[300], final[300];
    snprintf(tmp, sizeof tmp, "%s/.tmp.1-2-3.d9seg", dir);
    snprintf(final, sizeof final, "%s/1-2-3.d9seg", dir);
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    if (size && (data[size - 1] & 1))
        fix_crcs(buf, size);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, buf, size) != (ssize_t)size)
        abort();
    close(fd);
    free(buf);
    check(tmp, final);
    unlink(tmp);
    unlink(final);
    return 0;
}
