/*
 * fuzz_segment.c — libFuzzer target for the segment reader (collector/store/seg.c).
 *
 * The input is a whole segment file. It is read through the in-memory reader
 * entry point in strict and in SEG_OPEN_PARTIAL mode, walking every block and
 * record, looking up the metadata records refer to, reloading metadata and
 * seeking to offsets taken from the input. The reader must never crash, read
 * out of bounds, leak, or hand out a record that shm_record_check rejects.
 * Mutated payloads almost never keep a valid CRC, so each input is also read
 * a second time with its block CRCs (and the footer's CRC chain) recomputed:
 * that lets the fuzzer reach the record and metadata validation.
 * Built and run by tests/fuzz/run.sh.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/seg_reader.h"
#include "shm/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void touch_string(const char *s)
{
    if (s && strlen(s) > 4096)
        abort();        /* strings handed out are bounded and terminated */
}

static void walk_records(struct seg_reader *r, const struct seg_block *b)
{
    size_t off = 0;
    const struct d9_rec_hdr *rec;
    while (seg_reader_next_record(b, &off, &rec) == 1) {
        if (shm_record_check(rec, rec->len) != rec->len)
            abort();
        if (rec->type == D9_REC_POLL_START) {
            struct d9_rec_poll_start p;
            memcpy(&p, rec, sizeof p);
            const struct shm_meta_entry *loc = seg_reader_location(r, p.loc);
            if (loc) {
                touch_string(loc->name);
                touch_string(loc->func);
            }
            touch_string(seg_reader_runtime(r, p.runtime));
        } else if (rec->type == D9_REC_CUSTOM) {
            struct d9_rec_custom c;
            memcpy(&c, rec, sizeof c);
            const struct shm_meta_entry *s = seg_reader_schema(r, c.schema);
            if (s) {
                if (s->nfields > D9_SCHEMA_MAX_FIELDS)
                    abort();
                for (uint16_t i = 0; i < s->nfields; i++)
                    touch_string(s->fields[i].name);
            }
        }
    }
}

static void read_all(struct seg_reader *r, uint64_t seek_to)
{
    const struct seg_file_hdr *h = seg_reader_header(r);
    touch_string(h->host);
    touch_string(h->comm);
    touch_string(h->exe);
    struct seg_block b;
    int n = 0;
    while (seg_reader_next(r, &b) == 1 && n++ < 100000)
        walk_records(r, &b);
    seg_reader_load_meta(r);
    if (seg_reader_seek(r, seek_to) == 0)
        while (seg_reader_next(r, &b) == 1 && n++ < 200000)
            walk_records(r, &b);
}

/* Recompute the crc of every block that frames correctly, and the footer chain. */
static void fix_crcs(uint8_t *buf, size_t size)
{
    uint64_t off = SEG_HDR_SIZE;
    uint32_t chain = 0;
    struct seg_block_hdr h;
    while (off + sizeof h <= size) {
        memcpy(&h, buf + off, sizeof h);
        if (h.magic != SEG_BLOCK_MAGIC || h.len > size - off - sizeof h)
            break;
        h.crc32c = crc32c_update(0, buf + off + sizeof h, h.len);
        memcpy(buf + off, &h, sizeof h);
        chain = crc32c_update(chain, &h.crc32c, sizeof h.crc32c);
        off += sizeof h + h.len;
    }
    struct seg_footer f;
    if (size >= SEG_HDR_SIZE + sizeof f) {
        memcpy(&f, buf + size - sizeof f, sizeof f);
        if (memcmp(f.magic, SEG_FOOTER_MAGIC, sizeof f.magic) == 0) {
            f.crc32c = chain;
            memcpy(buf + size - sizeof f, &f, sizeof f);
        }
    }
}

static void read_input(const uint8_t *data, size_t size, uint64_t seek_to)
{
    static const unsigned modes[] = { 0, SEG_OPEN_PARTIAL };
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        struct seg_reader *r;
        if (seg_reader_open_mem(&r, data, size, modes[m]) == 0) {
            read_all(r, seek_to & ~(uint64_t)7);
            seg_reader_close(r);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t seek_to = 0;
    if (size >= SEG_HDR_SIZE + 8)
        memcpy(&seek_to, data + SEG_HDR_SIZE - 8, sizeof seek_to);  /* reserved bytes */
    seek_to = size ? seek_to % (size + 1) : 0;
    read_input(data, size, seek_to);
    uint8_t *fixed = malloc(size ? size : 1);
    if (!fixed)
        return 0;
    memcpy(fixed, data, size);
    fix_crcs(fixed, size);
    read_input(fixed, size, seek_to);
    free(fixed);
    return 0;
}
