/*
 * emit.c — custom event encoding (see emit.h and the CUSTOM layout in
 * shm/d9_abi.h): after struct d9_rec_custom come the fields in schema
 * order; U64/I64/F64/BOOL take 8 bytes, STR takes a uint32 byte length, the
 * bytes (cut to D9_STR_MAX) and zero padding so the next field starts on an
 * 8-byte boundary. payload_len counts all of it, so it is a multiple of 8.
 *
 * Hot path: called from d9_emit_values on the application thread. No locks,
 * no syscalls, no allocation; it reads each string at most D9_STR_MAX bytes
 * far (strnlen), so an unterminated or huge string costs a bounded amount.
 */
#include <errno.h>
#include <string.h>
#include "agent/emit.h"

#define AG_STR_LEN_SIZE 4u      /* the uint32 length in front of a string */

static inline uint32_t pad8(uint32_t n) { return (n + 7u) & ~7u; }

static inline uint32_t str_len(const char *s)
{
    return s ? (uint32_t)strnlen(s, D9_STR_MAX) : 0u;
}

/* The record's size, and each string's length (lens[i] for STR fields), in
 * one pass over the values: the writer below uses the lengths, so each
 * string is measured once. */
static inline int custom_layout(const d9_schema *s, const d9_value *v, unsigned n,
                                uint32_t *lens, uint32_t *len)
{
    if (!s || n != s->nfields || n > D9_SCHEMA_MAX_FIELDS || (n && !v))
        return -EINVAL;
    uint32_t size = (uint32_t)sizeof(struct d9_rec_custom);
    for (unsigned i = 0; i < n; i++) {
        if (v[i].type != s->fields[i].type)
            return -EINVAL;
        if (v[i].type == D9_T_STR) {
            lens[i] = str_len(v[i].v.s);
            size += pad8(AG_STR_LEN_SIZE + lens[i]);
        } else {
            size += 8u;
        }
    }
    if (size > D9_REC_MAX)
        return -EMSGSIZE;
    *len = size;
    return 0;
}

int ag_emit_custom_size(const d9_schema *s, const d9_value *v, unsigned n, uint32_t *len)
{
    uint32_t lens[D9_SCHEMA_MAX_FIELDS];
    return custom_layout(s, v, n, lens, len);
}

int ag_emit_custom(struct shm_producer *p, uint32_t src, uint32_t schema_id, uint64_t task,
                   const d9_schema *s, const d9_value *v, unsigned n)
{
    uint32_t lens[D9_SCHEMA_MAX_FIELDS];
    uint32_t len = 0;
    int rc = custom_layout(s, v, n, lens, &len);
    if (rc) {
        ag_emit_drop(p, rc == -EMSGSIZE ? AG_DROP_TOO_BIG : AG_DROP_MISMATCH);
        return rc;
    }
    uint8_t *rec = shm_ring_reserve(p, len);
    if (!rec)
        return -ENOSPC;
    struct d9_rec_custom *c = (struct d9_rec_custom *)rec;
    c->schema = schema_id;
    c->payload_len = len - (uint32_t)sizeof *c;
    c->task = task;
    uint8_t *out = rec + sizeof *c;
    for (unsigned i = 0; i < n; i++) {
        if (v[i].type == D9_T_STR) {
            /* the field's last 8 bytes zeroed first (the padding: a field is
             * at least 8 bytes), then the length and the bytes over them */
            uint32_t sl = lens[i];
            uint32_t field = pad8(AG_STR_LEN_SIZE + sl);
            const uint64_t zero = 0;
            memcpy(out + field - 8u, &zero, 8);
            memcpy(out, &sl, AG_STR_LEN_SIZE);
            if (sl)
                memcpy(out + AG_STR_LEN_SIZE, v[i].v.s, sl);
            out += field;
        } else {
            /* U64, I64, F64: the union's 8 bytes as they are; BOOL: 0 or 1
             * (other types were rejected by custom_layout) */
            uint64_t w = v[i].v.u;
            if (v[i].type == D9_T_BOOL)
                w = w != 0;
            memcpy(out, &w, 8);
            out += 8;
        }
    }
    shm_ring_commit(p, rec, len, D9_REC_CUSTOM, ag_emit_now(src));
    return 0;
}
