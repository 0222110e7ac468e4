/*
 * pq_thrift.h — Thrift's compact protocol, the encoding of Parquet's page
 * headers and file footer (parquet.thrift): an encoder for the writer and a
 * bounded decoder for the checker (pq_check.c).
 *
 * Encoder: fields are written in increasing id order inside a struct;
 * pq_thrift_struct_begin/end nest (the last field id is kept per level, up
 * to PQ_THRIFT_DEPTH levels); a list's elements follow its header with no
 * field headers. Errors land in the buffer's `err`.
 * Decoder: every read is bounded by `end`; any malformed input sets `err`
 * (-EBADMSG) and every later read returns 0. Skipping nests at most
 * PQ_THRIFT_DEPTH levels. Must never read outside [p, end).
 */
#ifndef D9_COL_PQ_THRIFT_H
#define D9_COL_PQ_THRIFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collector/parquet/pq_buf.h"

#define PQ_THRIFT_DEPTH 16

/* Compact protocol element types. */
enum {
    PQ_THRIFT_STOP = 0, PQ_THRIFT_TRUE = 1, PQ_THRIFT_FALSE = 2, PQ_THRIFT_BYTE = 3,
    PQ_THRIFT_I16 = 4, PQ_THRIFT_I32 = 5, PQ_THRIFT_I64 = 6, PQ_THRIFT_DOUBLE = 7,
    PQ_THRIFT_BINARY = 8, PQ_THRIFT_LIST = 9, PQ_THRIFT_SET = 10, PQ_THRIFT_MAP = 11,
    PQ_THRIFT_STRUCT = 12,
};

struct pq_thrift {
    struct pq_buf *b;
    int depth;
    int16_t last[PQ_THRIFT_DEPTH];
};

void pq_thrift_init(struct pq_thrift *t, struct pq_buf *b);
void pq_thrift_i32(struct pq_thrift *t, int16_t id, int32_t v);
void pq_thrift_i64(struct pq_thrift *t, int16_t id, int64_t v);
void pq_thrift_bool(struct pq_thrift *t, int16_t id, bool v);
void pq_thrift_bin(struct pq_thrift *t, int16_t id, const void *p, size_t n);
void pq_thrift_str(struct pq_thrift *t, int16_t id, const char *s);
/* A struct field (id > 0) or a list element (id 0); then its fields; then end. */
void pq_thrift_struct_begin(struct pq_thrift *t, int16_t id);
void pq_thrift_struct_end(struct pq_thrift *t);
/* The header of a list field of n elements of type `elem`. */
void pq_thrift_list(struct pq_thrift *t, int16_t id, int elem, size_t n);
void pq_thrift_elem_i32(struct pq_thrift *t, int32_t v);
void pq_thrift_elem_str(struct pq_thrift *t, const char *s);

/* ---- decoder ---- */
struct pq_thrift_rd {
    const uint8_t *p, *end;
    int err;
    int depth;
    int16_t last[PQ_THRIFT_DEPTH];
};

/* The next field of the current struct: its type (PQ_THRIFT_STOP at the end
 * or on error) and id. A bool field's value is its type (TRUE/FALSE). */
int pq_thrift_rd_field(struct pq_thrift_rd *r, int16_t *id);
/* Enter / leave a nested struct (after its field header or as a list element). */
void pq_thrift_rd_enter(struct pq_thrift_rd *r);
void pq_thrift_rd_leave(struct pq_thrift_rd *r);
int64_t pq_thrift_rd_int(struct pq_thrift_rd *r);      /* i16, i32, i64: zigzag varint */
/* A binary's bytes (pointer into the input) and length. */
const uint8_t *pq_thrift_rd_bin(struct pq_thrift_rd *r, size_t *n);
/* A list header: element type and count (bounded by the bytes left). */
int pq_thrift_rd_list(struct pq_thrift_rd *r, size_t *n);
/* Skip a value of type `type` (already past its field header). */
void pq_thrift_rd_skip(struct pq_thrift_rd *r, int type);

#endif /* D9_COL_PQ_THRIFT_H */
