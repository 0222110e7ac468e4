/*
 * pq_rle.h — Parquet's RLE / bit-packed hybrid encoding: definition levels
 * of optional columns and the indices of dictionary-encoded pages.
 *
 * Encoder: a run of PQ_RLE_MIN_RUN or more equal values becomes an RLE run;
 * anything else goes out in bit-packed groups of 8. A bit-packed group is
 * padded with zeros only at the very end of the data (readers stop at the
 * page's value count), never in the middle.
 * Decoder (for pq_check.c): bounded by the input; -EBADMSG on short or
 * malformed input, never reads outside it.
 */
#ifndef D9_COL_PQ_RLE_H
#define D9_COL_PQ_RLE_H

#include <stddef.h>
#include <stdint.h>
#include "collector/parquet/pq_buf.h"

#define PQ_RLE_MIN_RUN 8
#define PQ_RLE_GROUP 8          /* values per bit-packed group */
#define PQ_RLE_MAX_WIDTH 32

/* Bits needed for values 0..max. */
int pq_rle_width(uint32_t max);
/* Append v[0, n) at `width` bits each (every v < 2^width). */
void pq_rle_encode(struct pq_buf *b, const uint32_t *v, size_t n, int width);
/* Decode n values from p[0, len) into out; 0 or -EBADMSG. */
int pq_rle_decode(const uint8_t *p, size_t len, int width, uint32_t *out, size_t n);

#endif /* D9_COL_PQ_RLE_H */
