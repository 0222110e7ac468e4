/*
 * seg_reader.c — reads and verifies segment files (d9's queries, fsck,
 * salvage, d9collectd's re-indexing, fuzzers). Format: seg.h; API:
 * seg_reader.h.
 *
 * The file is untrusted: everything is read with pread(2) into private
 * buffers (never mmap: the file may be truncated underneath), every length
 * is checked against the bytes that remain before it is used, and no
 * allocation is larger than the file, except the unpacked records of a
 * packed DATA block (at most SEG_BLOCK_MAX, and at most D9_REC_MAX per
 * record its header counts). Metadata tables are bounded by
 * SEG_META_IDS_MAX per kind. Read from the start, the blocks are summed with
 * seg_acc_add and the totals checked against the footer.
 *
 * Must never: read outside a buffer, trust a length, or allocate from an
 * unchecked length field.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collector/store/crc32c.h"
#include "collector/store/store_file.h"
#include "collector/store/pack.h"
#include "collector/store/seg_reader.h"
#include "shm/record.h"

struct meta_item {
    struct shm_meta_entry e;    /* pointers into raw */
    uint8_t raw[];
};

struct meta_kind {
    struct meta_item **by_id;   /* index = id, [0, cap) */
    uint32_t cap;
};

struct seg_reader {
    int fd;                     /* -1 for memory readers */
    const uint8_t *mem;         /* private copy for memory readers */
    uint64_t size;              /* bytes of the file at open */
    uint64_t data_end;          /* where blocks end (footer or size) */
    uint64_t pos;
    unsigned flags;
    int have_footer;
    int stopped;                /* partial: a bad block ended the file */
    struct seg_file_hdr hdr;
    struct seg_footer footer;
    uint8_t *buf;               /* payload buffer */
    size_t buf_cap;
    uint8_t *dec;               /* a packed DATA block's records, unpacked */
    size_t dec_cap;
    /* sequential verification against the footer */
    int sequential;
    struct seg_acc acc;
    struct meta_kind meta[D9_META_OBJECT + 1];
    uint32_t meta_dropped;
    char err[200];
    int has_err;
};

static int r_fail(struct seg_reader *r, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int r_fail(struct seg_reader *r, uint64_t off, const char *fmt, ...)
{
    int n = snprintf(r->err, sizeof r->err, "offset %" PRIu64 ": ", off);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof r->err)
        vsnprintf(r->err + n, sizeof r->err - (size_t)n, fmt, ap);
    va_end(ap);
    r->has_err = 1;
    return -EBADMSG;
}

/* Read exactly len bytes at off (off + len <= size was checked by the
 * caller); a file that shrank underneath is corrupt, not a crash. */
static int r_read(struct seg_reader *r, uint64_t off, void *dst, size_t len)
{
    if (off > r->size || len > r->size - off)
        return r_fail(r, off, "read of %zu bytes past the end of the file", len);
    if (r->mem) {
        memcpy(dst, r->mem + off, len);
        return 0;
    }
    uint8_t *p = dst;
    while (len > 0) {
        ssize_t n = pread(r->fd, p, len, (off_t)off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int e = -errno;
            snprintf(r->err, sizeof r->err, "offset %" PRIu64 ": read: %s", off, strerror(-e));
            r->has_err = 1;
            return e;
        }
        if (n == 0)
            return r_fail(r, off, "file truncated while reading");
        p += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

/* Make *buf (of *cap bytes) hold at least len bytes; its contents are not kept. */
static int r_grow(uint8_t **buf, size_t *cap, size_t len)
{
    if (*buf && len <= *cap)
        return 0;
    size_t c = *cap ? *cap : 4096;
    while (c < len)
        c *= 2;
    free(*buf);
    *cap = 0;
    if (!(*buf = malloc(c)))
        return -ENOMEM;
    *cap = c;
    return 0;
}

static int r_reserve(struct seg_reader *r, size_t len)
{
    return r_grow(&r->buf, &r->buf_cap, len);
}

static int check_header(struct seg_reader *r)
{
    if (r->size < SEG_HDR_SIZE)
        return r_fail(r, 0, "file of %" PRIu64 " bytes is shorter than a segment header",
                      r->size);
    int e = r_read(r, 0, &r->hdr, sizeof r->hdr);
    if (e < 0)
        return e;
    if (memcmp(r->hdr.magic, SEG_MAGIC, sizeof r->hdr.magic) != 0)
        return r_fail(r, 0, "not a d9 segment (bad magic)");
    if (r->hdr.version < SEG_VERSION_OLDEST || r->hdr.version > SEG_VERSION) {
        r_fail(r, 0, "segment format version %" PRIu32 " is not supported (this d9 reads versions "
               "%u to %u)", r->hdr.version, SEG_VERSION_OLDEST, SEG_VERSION);
        return r->hdr.version > SEG_VERSION ? -ENOTSUP : -EBADMSG;
    }
    if (r->hdr.hdr_size != SEG_HDR_SIZE)
        return r_fail(r, 0, "header size %" PRIu32 " (expected %u)", r->hdr.hdr_size,
                      SEG_HDR_SIZE);
    /* strings are handed to callers: make sure they end */
    r->hdr.host[sizeof r->hdr.host - 1] = 0;
    r->hdr.comm[sizeof r->hdr.comm - 1] = 0;
    r->hdr.exe[sizeof r->hdr.exe - 1] = 0;
    return 0;
}

static int check_footer(struct seg_reader *r)
{
    uint64_t off = r->size - SEG_FOOTER_SIZE;
    struct seg_footer *f = &r->footer;
    if (r->size < (uint64_t)SEG_HDR_SIZE + SEG_FOOTER_SIZE)
        return r_fail(r, r->size, "no room for a footer");
    int e = r_read(r, off, f, sizeof *f);
    if (e < 0)
        return e;
    if (memcmp(f->magic, SEG_FOOTER_MAGIC, sizeof f->magic) != 0 ||
        memcmp(f->end_magic, SEG_END_MAGIC, sizeof f->end_magic) != 0)
        return r_fail(r, off, "no footer (unsealed or truncated segment)");
    uint64_t data = r->size - SEG_HDR_SIZE - SEG_FOOTER_SIZE;
    if (f->data_bytes != data)
        return r_fail(r, off, "footer says %" PRIu64 " data bytes, file has %" PRIu64,
                      f->data_bytes, data);
    if ((uint64_t)f->nblocks * SEG_BLOCK_HDR_SIZE > data)
        return r_fail(r, off, "footer block count %" PRIu32 " does not fit", f->nblocks);
    if (f->counts[D9_REC_PAD] != 0)
        return r_fail(r, off, "footer counts pad records");
    /* the fewest bytes a record takes: 2 packed */
    uint64_t most = data / 2u;
    uint64_t sum = 0;
    for (int t = 0; t < D9_REC_TYPE_COUNT; t++) {
        if (f->counts[t] > most)
            return r_fail(r, off, "footer count of type %d too large", t);
        sum += f->counts[t];
    }
    if (sum != f->nrecords || f->nrecords > most)
        return r_fail(r, off, "footer record total %" PRIu64 " inconsistent", f->nrecords);
    if (f->t_min > f->t_max)
        return r_fail(r, off, "footer time range reversed");
    return 0;
}

static int reader_init(struct seg_reader *r, unsigned flags, char *why, size_t why_cap)
{
    r->flags = flags;
    r->pos = SEG_HDR_SIZE;
    r->sequential = 1;
    int e = check_header(r);
    if (e == 0) {
        r->data_end = r->size;
        if (!(flags & SEG_OPEN_NO_FOOTER)) {
            e = check_footer(r);
            if (e == 0) {
                r->have_footer = 1;
                r->data_end = r->size - SEG_FOOTER_SIZE;
            } else if (e == -EBADMSG && (flags & SEG_OPEN_PARTIAL)) {
                e = 0;
                r->has_err = 0;     /* a missing footer is what partial means */
            }
        }
    }
    if (e < 0 && why && why_cap)
        snprintf(why, why_cap, "%s", r->has_err ? r->err : strerror(-e));
    return e;
}

static int reader_new(struct seg_reader **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return -ENOMEM;
    (*out)->fd = -1;
    return 0;
}

int seg_reader_open_ex(struct seg_reader **out, const char *path, unsigned flags, char *why,
                       size_t why_cap)
{
    if (why && why_cap)
        why[0] = 0;
    if (!out || !path)
        return -EINVAL;
    struct seg_reader *r;
    int e = reader_new(&r);
    if (e < 0)
        return e;
    /* never blocks on a FIFO, never follows a symlink, regular files only */
    r->fd = store_file_open(path, why, why_cap);
    struct stat st;
    if (r->fd < 0) {
        e = r->fd;
        r->fd = -1;
        seg_reader_close(r);
        return e;
    }
    if (fstat(r->fd, &st) < 0) {
        e = -errno;
        if (why && why_cap)
            snprintf(why, why_cap, "%s", strerror(-e));
        seg_reader_close(r);
        return e;
    }
    r->size = (uint64_t)st.st_size;
    if ((e = reader_init(r, flags, why, why_cap)) < 0) {
        seg_reader_close(r);
        return e;
    }
    *out = r;
    return 0;
}

int seg_reader_open(struct seg_reader **out, const char *path, unsigned flags)
{
    return seg_reader_open_ex(out, path, flags, NULL, 0);
}

int seg_reader_open_mem(struct seg_reader **out, const uint8_t *buf, size_t len, unsigned flags)
{
    if (!out || (len && !buf))
        return -EINVAL;
    struct seg_reader *r;
    int e = reader_new(&r);
    if (e < 0)
        return e;
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy) {
        seg_reader_close(r);
        return -ENOMEM;
    }
    if (len)
        memcpy(copy, buf, len);
    r->mem = copy;
    r->size = len;
    if ((e = reader_init(r, flags, NULL, 0)) < 0) {
        seg_reader_close(r);
        return e;
    }
    *out = r;
    return 0;
}

void seg_reader_close(struct seg_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    free((void *)r->mem);
    free(r->buf);
    free(r->dec);
    for (size_t k = 0; k < sizeof r->meta / sizeof r->meta[0]; k++) {
        for (uint32_t i = 0; i < r->meta[k].cap; i++)
            free(r->meta[k].by_id[i]);
        free(r->meta[k].by_id);
    }
    free(r);
}

const struct seg_file_hdr *seg_reader_header(const struct seg_reader *r)
{
    return r ? &r->hdr : NULL;
}

const struct seg_footer *seg_reader_footer(const struct seg_reader *r)
{
    return r && r->have_footer ? &r->footer : NULL;
}

const char *seg_reader_error(const struct seg_reader *r)
{
    return r && r->has_err ? r->err : NULL;
}

uint64_t seg_reader_size(const struct seg_reader *r)
{
    return r ? r->size : 0;
}

uint32_t seg_reader_meta_dropped(const struct seg_reader *r)
{
    return r ? r->meta_dropped : 0;
}

/* Keep a copy of one validated entry (first definition of an id wins). */
static int meta_store(struct seg_reader *r, const uint8_t *entry, uint16_t len)
{
    struct d9_meta_hdr mh;
    memcpy(&mh, entry, sizeof mh);
    if (mh.kind < D9_META_RUNTIME || mh.kind > D9_META_OBJECT || mh.id == 0 ||
        mh.id > SEG_META_IDS_MAX) {
        r->meta_dropped++;
        return 0;
    }
    struct meta_kind *k = &r->meta[mh.kind];
    if (mh.id < k->cap && k->by_id[mh.id])
        return 0;
    if (mh.id >= k->cap) {
        uint32_t cap = k->cap ? k->cap : 64;
        while (cap <= mh.id)
            cap *= 2;
        if (cap > SEG_META_IDS_MAX + 1)
            cap = SEG_META_IDS_MAX + 1;
        struct meta_item **nb = realloc(k->by_id, (size_t)cap * sizeof *nb);
        if (!nb)
            return -ENOMEM;
        memset(nb + k->cap, 0, (size_t)(cap - k->cap) * sizeof *nb);
        k->by_id = nb;
        k->cap = cap;
    }
    struct meta_item *it = malloc(sizeof *it + len);
    if (!it)
        return -ENOMEM;
    memcpy(it->raw, entry, len);
    size_t off = 0;
    if (shm_meta_next(it->raw, len, &off, &it->e) != 1) {   /* validated by the caller */
        free(it);
        return -EBADMSG;
    }
    k->by_id[mh.id] = it;
    return 0;
}

/* Validate a META payload (every entry, count == nrec) and, if store, keep it. */
static int check_meta_payload(struct seg_reader *r, const struct seg_block_hdr *h,
                              const uint8_t *p, uint64_t off, int store)
{
    size_t pos = 0;
    uint32_t n = 0;
    struct shm_meta_entry e;
    int rc;
    while ((rc = shm_meta_next(p, h->len, &pos, &e)) == 1)
        n++;
    if (rc < 0)
        return r_fail(r, off, "bad metadata entry at payload byte %zu", pos);
    if (n != h->nrec)
        return r_fail(r, off, "metadata block holds %" PRIu32 " entries, header says %" PRIu32,
                      n, h->nrec);
    if (!store)
        return 0;
    pos = 0;
    while (pos < h->len) {
        struct d9_meta_hdr mh;
        memcpy(&mh, p + pos, sizeof mh);
        if ((rc = meta_store(r, p + pos, mh.len)) < 0)
            return rc == -EBADMSG ? r_fail(r, off, "metadata entry re-decode failed") : rc;
        pos += mh.len;
    }
    return 0;
}

/* Validate the records of a DATA block (p[0, len), ring framing): records,
 * nrec, time range; fill counts. */
static int check_data_records(struct seg_reader *r, const struct seg_block_hdr *h,
                              const uint8_t *p, size_t plen, uint64_t off, uint64_t counts[])
{
    uint32_t n = 0;
    uint64_t tmin = 0, tmax = 0;
    for (size_t pos = 0; pos < plen;) {
        int len = shm_record_check(p + pos, plen - pos);
        if (len < 0)
            return r_fail(r, off, "bad record at payload byte %zu", pos);
        struct d9_rec_hdr rh;
        memcpy(&rh, p + pos, sizeof rh);
        if (n == 0 || rh.ts < tmin)
            tmin = rh.ts;
        if (n == 0 || rh.ts > tmax)
            tmax = rh.ts;
        counts[rh.type]++;
        n++;
        pos += (size_t)len;
    }
    if (n != h->nrec)
        return r_fail(r, off, "data block holds %" PRIu32 " records, header says %" PRIu32, n,
                      h->nrec);
    if (tmin != h->t_first || tmax != h->t_last)
        return r_fail(r, off, "data block time range disagrees with its records");
    return 0;
}

/* Point b->records at the DATA block's records: the payload itself, or
 * (packed) the payload unpacked into r->dec. The unpacked size is bounded by
 * SEG_BLOCK_MAX and by what nrec records can hold. */
static int data_records(struct seg_reader *r, struct seg_block *b, uint64_t off)
{
    if (!(b->h.flags & SEG_BF_PACKED)) {
        b->records = b->payload;
        b->records_len = b->h.len;
        return 0;
    }
    long raw = pack_raw_len(b->payload, b->h.len);
    if (raw < 0 || (uint64_t)raw > SEG_BLOCK_MAX || (uint64_t)raw > (uint64_t)b->h.nrec * D9_REC_MAX)
        return r_fail(r, off, "packed data block announces an impossible size");
    int e = r_grow(&r->dec, &r->dec_cap, (size_t)raw);
    if (e < 0)
        return e;
    long n = pack_unpack(b->payload, b->h.len, b->h.nrec, r->dec, r->dec_cap);
    if (n < 0)
        return r_fail(r, off, "packed data block does not unpack");
    b->records = r->dec;
    b->records_len = (uint32_t)n;
    return 0;
}

uint8_t *seg_reader_take_records(struct seg_reader *r, const struct seg_block *b)
{
    uint8_t *d = r->dec;
    if (!d || b->records != d)
        return NULL;
    r->dec = NULL;
    r->dec_cap = 0;
    return d;
}

/* Check a block header read at off (bounds, magic, kind, fixed fields). */
static int check_block_hdr(struct seg_reader *r, const struct seg_block_hdr *h, uint64_t off)
{
    if (h->magic != SEG_BLOCK_MAGIC)
        return r_fail(r, off, "bad block magic 0x%08" PRIx32, h->magic);
    if (h->kind < SEG_BLK_META || h->kind > SEG_BLK_TRIGGER ||
        (h->kind == SEG_BLK_TRIGGER && r->hdr.version < 4))
        return r_fail(r, off, "unknown block kind %u", h->kind);
    int packed = h->flags == SEG_BF_PACKED && h->kind == SEG_BLK_DATA;
    if (h->flags != 0 && !packed)
        return r_fail(r, off, "unknown block flags 0x%x", h->flags);
    if (h->len % 8 != 0 || h->len > SEG_BLOCK_MAX)
        return r_fail(r, off, "bad block length %" PRIu32, h->len);
    if (h->len > r->data_end - off - SEG_BLOCK_HDR_SIZE)
        return r_fail(r, off, "block of %" PRIu32 " bytes runs past the end of the data",
                      h->len);
    if (h->t_first > h->t_last)
        return r_fail(r, off, "block time range reversed");
    switch (h->kind) {
    case SEG_BLK_META:
        if (h->tid || h->ring || h->generation || h->t_first || h->t_last || h->lost)
            return r_fail(r, off, "metadata block with thread fields set");
        break;
    case SEG_BLK_DATA:
        /* a record is at least 16 bytes in ring framing, 2 (tag, control) packed */
        if (h->nrec > (packed ? (h->len > PACK_PREFIX ? (h->len - PACK_PREFIX) / 2 : 0)
                              : h->len / D9_REC_HDR_SIZE))
            return r_fail(r, off, "data block record count %" PRIu32 " too large", h->nrec);
        break;
    case SEG_BLK_EXIT:
        if (h->len != sizeof(struct seg_exit) || h->nrec != 0 || h->t_first != h->t_last)
            return r_fail(r, off, "malformed exit block");
        break;
    case SEG_BLK_THREAD_END:
        if (h->len != 0 || h->nrec != 0 || h->t_first != h->t_last)
            return r_fail(r, off, "malformed thread-end block");
        break;
    case SEG_BLK_TRIGGER:
        if (h->len != sizeof(struct seg_trigger) || h->nrec != 0 || h->t_first != h->t_last ||
            h->ring || h->generation || h->lost)
            return r_fail(r, off, "malformed trigger block");
        break;
    }
    return 0;
}

/* Bad data at off: -EBADMSG, or in partial mode the end of the file. */
static int r_bad(struct seg_reader *r, int e)
{
    if (e == -EBADMSG && (r->flags & SEG_OPEN_PARTIAL)) {
        r->stopped = 1;
        return 0;
    }
    return e;
}

/* Read and fully validate the block at r->pos. With want_payload == 0
 * only META payloads are read (seg_reader_load_meta). */
static int read_block(struct seg_reader *r, struct seg_block *b, int want_payload, int store_meta,
                      uint64_t counts[D9_REC_TYPE_COUNT])
{
    uint64_t off = r->pos;
    if (off % 8 != 0 || r->data_end - off < SEG_BLOCK_HDR_SIZE)
        return r_bad(r, r_fail(r, off, "%" PRIu64 " stray bytes after the last block",
                               r->data_end - off));
    int e = r_read(r, off, &b->h, sizeof b->h);
    if (e < 0)
        return r_bad(r, e);
    if ((e = check_block_hdr(r, &b->h, off)) < 0)
        return r_bad(r, e);
    b->offset = off;
    b->payload = NULL;
    b->records = NULL;
    b->records_len = 0;
    if (want_payload || b->h.kind == SEG_BLK_META) {
        if ((e = r_reserve(r, b->h.len ? b->h.len : 8)) < 0)
            return e;
        if ((e = r_read(r, off + SEG_BLOCK_HDR_SIZE, r->buf, b->h.len)) < 0)
            return r_bad(r, e);
        uint32_t crc = crc32c_update(0, r->buf, b->h.len);
        if (crc != b->h.crc32c)
            return r_bad(r, r_fail(r, off, "block crc mismatch (stored 0x%08" PRIx32
                                   ", computed 0x%08" PRIx32 ")", b->h.crc32c, crc));
        b->payload = r->buf;
        if (b->h.kind == SEG_BLK_META)
            e = check_meta_payload(r, &b->h, r->buf, off, store_meta);
        else if (b->h.kind == SEG_BLK_DATA && (e = data_records(r, b, off)) == 0)
            e = check_data_records(r, &b->h, b->records, b->records_len, off, counts);
        else if (b->h.kind == SEG_BLK_EXIT) {
            struct seg_exit x;
            memcpy(&x, r->buf, sizeof x);
            if (x.reason < SEG_EXIT_CLEAN || x.reason > SEG_EXIT_LAST || x.t_ns != b->h.t_first)
                e = r_fail(r, off, "malformed exit record");
        } else if (b->h.kind == SEG_BLK_TRIGGER) {
            struct seg_trigger t;
            memcpy(&t, r->buf, sizeof t);
            if (t.t_ns != b->h.t_first || t.pid != b->h.tid || t.win_t0_ns > t.win_t1_ns)
                e = r_fail(r, off, "malformed trigger record");
        }
        if (e < 0)
            return r_bad(r, e);
    }
    r->pos = off + SEG_BLOCK_HDR_SIZE + b->h.len;
    return 1;
}

/* End of the blocks: in a sequential read, the footer must match them. */
static int check_end(struct seg_reader *r)
{
    if (!r->have_footer || !r->sequential)
        return 0;
    r->sequential = 0;          /* check once */
    const struct seg_footer *f = &r->footer;
    const struct seg_acc *a = &r->acc;
    uint64_t off = r->data_end;
    if (a->nblocks != f->nblocks)
        return r_bad(r, r_fail(r, off, "footer counts %" PRIu32 " blocks, file has %" PRIu32,
                               f->nblocks, a->nblocks));
    if (a->crc != f->crc32c)
        return r_bad(r, r_fail(r, off, "footer crc chain mismatch"));
    if (a->nrecords != f->nrecords || a->lost != f->lost || a->t_min != f->t_min ||
        a->t_max != f->t_max || memcmp(a->counts, f->counts, sizeof a->counts) != 0)
        return r_bad(r, r_fail(r, off, "footer totals disagree with the blocks"));
    return 0;
}

int seg_reader_next(struct seg_reader *r, struct seg_block *b)
{
    if (!r || !b)
        return -EINVAL;
    if (r->stopped)
        return 0;
    if (r->pos >= r->data_end) {
        int e = check_end(r);
        return e < 0 ? e : 0;
    }
    uint64_t counts[D9_REC_TYPE_COUNT] = { 0 };
    int e = read_block(r, b, 1, 1, counts);
    if (e == 1 && r->sequential)
        seg_acc_add(&r->acc, &b->h, counts);
    return e;
}

int seg_reader_skip(struct seg_reader *r, struct seg_block *b)
{
    if (!r || !b)
        return -EINVAL;
    uint64_t off = r->pos;
    struct seg_block_hdr h;
    if (off % 8 != 0 || off >= r->data_end || r->data_end - off < SEG_BLOCK_HDR_SIZE)
        return -EBADMSG;
    char err[sizeof r->err];
    memcpy(err, r->err, sizeof err);    /* the block's own failure stays the error */
    int e = r_read(r, off, &h, sizeof h);
    if (e == 0)
        e = check_block_hdr(r, &h, off);
    memcpy(r->err, err, sizeof err);
    if (e < 0 || h.kind != SEG_BLK_DATA)
        return -EBADMSG;
    r->pos = off + SEG_BLOCK_HDR_SIZE + h.len;
    r->stopped = 0;
    r->sequential = 0;
    memset(b, 0, sizeof *b);
    b->h = h;
    b->offset = off;
    return 0;
}

int seg_reader_seek(struct seg_reader *r, uint64_t offset)
{
    if (!r)
        return -EINVAL;
    if (offset < SEG_HDR_SIZE || offset >= r->data_end || offset % 8 != 0)
        return -EINVAL;
    r->pos = offset;
    r->stopped = 0;
    r->sequential = 0;
    return 0;
}

int seg_reader_load_meta(struct seg_reader *r)
{
    if (!r)
        return -EINVAL;
    uint64_t saved = r->pos;
    int saved_stopped = r->stopped;
    r->pos = SEG_HDR_SIZE;
    r->stopped = 0;
    int e = 0;
    while (r->pos < r->data_end) {
        struct seg_block b;
        uint64_t counts[D9_REC_TYPE_COUNT] = { 0 };
        if ((e = read_block(r, &b, 0, 1, counts)) <= 0)
            break;
        e = 0;
    }
    r->pos = saved;
    r->stopped = saved_stopped;
    return e < 0 ? e : 0;
}

int seg_reader_load_meta_at(struct seg_reader *r, const uint64_t *offs, size_t n)
{
    if (!r || (n && !offs))
        return -EINVAL;
    uint64_t saved = r->pos;
    int saved_stopped = r->stopped;
    int e = 0;
    for (size_t i = 0; i < n && e == 0; i++) {
        if (offs[i] < SEG_HDR_SIZE || offs[i] >= r->data_end || offs[i] % 8 != 0) {
            e = -EINVAL;
            break;
        }
        struct seg_block b;
        uint64_t counts[D9_REC_TYPE_COUNT] = { 0 };
        r->pos = offs[i];
        r->stopped = 0;
        e = read_block(r, &b, 0, 1, counts);
        e = e == 1 && b.h.kind == SEG_BLK_META ? 0 : e < 0 ? e : -EBADMSG;
    }
    r->pos = saved;
    r->stopped = saved_stopped;
    return e;
}

int seg_reader_next_record(const struct seg_block *b, size_t *off, const struct d9_rec_hdr **rec)
{
    if (!b || !off || !rec)
        return -EINVAL;
    if (b->h.kind != SEG_BLK_DATA || !b->records)
        return 0;
    if (*off >= b->records_len)
        return *off == b->records_len ? 0 : -EBADMSG;
    if (*off % D9_REC_ALIGN != 0)
        return -EBADMSG;
    int n = shm_record_check(b->records + *off, b->records_len - *off);
    if (n < 0)
        return -EBADMSG;
    *rec = (const struct d9_rec_hdr *)(const void *)(b->records + *off);
    *off += (size_t)n;
    return 1;
}

static const struct meta_item *meta_get(const struct seg_reader *r, uint16_t kind, uint32_t id)
{
    if (!r || id == 0 || id >= r->meta[kind].cap)
        return NULL;
    return r->meta[kind].by_id[id];
}

const char *seg_reader_runtime(const struct seg_reader *r, uint32_t id)
{
    const struct meta_item *it = meta_get(r, D9_META_RUNTIME, id);
    return it ? it->e.name : NULL;
}

const struct shm_meta_entry *seg_reader_location(const struct seg_reader *r, uint32_t id)
{
    const struct meta_item *it = meta_get(r, D9_META_LOCATION, id);
    return it ? &it->e : NULL;
}

const struct shm_meta_entry *seg_reader_schema(const struct seg_reader *r, uint32_t id)
{
    const struct meta_item *it = meta_get(r, D9_META_SCHEMA, id);
    return it ? &it->e : NULL;
}

static int each_meta(const struct seg_reader *r, uint16_t kind,
                     int (*fn)(void *arg, const struct shm_meta_entry *e), void *arg)
{
    if (!r)
        return 0;
    const struct meta_kind *k = &r->meta[kind];
    for (uint32_t id = 1; id < k->cap; id++) {
        if (!k->by_id[id])
            continue;
        int rc = fn(arg, &k->by_id[id]->e);
        if (rc)
            return rc;
    }
    return 0;
}

int seg_reader_each_object(const struct seg_reader *r,
                           int (*fn)(void *arg, const struct shm_meta_entry *e), void *arg)
{
    return each_meta(r, D9_META_OBJECT, fn, arg);
}

int seg_reader_each_location(const struct seg_reader *r,
                             int (*fn)(void *arg, const struct shm_meta_entry *e), void *arg)
{
    return each_meta(r, D9_META_LOCATION, fn, arg);
}


/* ---- whole-file walks (salvage, re-indexing) ------------------------------ */

int seg_reader_scan(struct seg_reader *r, struct seg_summary *sum, struct seg_acc *acc,
                            uint64_t *good_end, uint32_t *n_nonmeta)
{
    uint32_t cap = 0;
    struct seg_block b;
    int e;
    *good_end = SEG_HDR_SIZE;
    *n_nonmeta = 0;
    for (;;) {
        uint64_t counts[D9_REC_TYPE_COUNT] = { 0 };
        if (r->pos >= r->data_end) {
            e = check_end(r);
            break;
        }
        if ((e = read_block(r, &b, 1, 0, counts)) <= 0)
            break;
        if (sum->nblocks == cap) {
            uint32_t ncap = cap ? cap * 2 : 64;
            struct seg_block_info *nb = realloc(sum->blocks, (size_t)ncap * sizeof *nb);
            if (!nb) {
                e = -ENOMEM;
                break;
            }
            sum->blocks = nb;
            cap = ncap;
        }
        seg_block_info_set(&sum->blocks[sum->nblocks++], &b.h, b.offset);
        seg_acc_add(&r->acc, &b.h, counts);
        if (b.h.kind != SEG_BLK_META)
            (*n_nonmeta)++;
        *good_end = r->pos;
    }
    *acc = r->acc;
    return e < 0 ? e : 0;
}

int seg_reader_fstat(const struct seg_reader *r, struct stat *st)
{
    if (!r || r->fd < 0)
        return -EBADF;
    return fstat(r->fd, st) < 0 ? -errno : 0;
}
