/*
 * pq_buf.h — a growable byte buffer for the Parquet writer: page bodies,
 * page headers, the footer. Little-endian fixed-width and ULEB128 varint
 * appends as Parquet and Thrift's compact protocol lay them out.
 *
 * Called by every file of collector/parquet/.
 * Invariants: a failed allocation sets `err` (-ENOMEM) once; later appends
 * are no-ops, so a caller checks `err` once after a series of appends.
 * Must never: write past `cap`; grow beyond PQ_BUF_MAX (a page or footer
 * that large is a caller's bug, reported as -EFBIG).
 */
#ifndef D9_COL_PQ_BUF_H
#define D9_COL_PQ_BUF_H

#include <stddef.h>
#include <stdint.h>

#define PQ_BUF_MAX ((size_t)1 << 31)    /* Parquet sizes are int32 */

struct pq_buf {
    uint8_t *p;
    size_t len, cap;
    int err;
};

void pq_buf_free(struct pq_buf *b);
/* Room for n more bytes; 0 or -ENOMEM / -EFBIG (also left in b->err). */
int pq_buf_reserve(struct pq_buf *b, size_t n);
void pq_buf_put(struct pq_buf *b, const void *p, size_t n);
void pq_buf_u8(struct pq_buf *b, uint8_t v);
void pq_buf_le32(struct pq_buf *b, uint32_t v);
void pq_buf_le64(struct pq_buf *b, uint64_t v);
void pq_buf_uvarint(struct pq_buf *b, uint64_t v);

#endif /* D9_COL_PQ_BUF_H */
