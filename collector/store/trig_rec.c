/*
 * trig_rec.c — a d9_trigger marker record's reason and fields (see
 * trig_rec.h): the one derivation of the index's triggers.reason and
 * triggers.fields from a record, for the collector and for a re-index.
 */
#include "collector/store/trig_rec.h"

#include <inttypes.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "collector/store/col_json.h"
#include "shm/d9_abi.h"
#include "shm/meta.h"

int trig_rec_is_marker(const struct shm_meta_entry *e)
{
    return e && e->kind == D9_META_SCHEMA && e->name && e->nfields >= 1 &&
           e->fields[0].type == D9_FT_STR && strcmp(e->name, TRIG_REC_SCHEMA_NAME) == 0;
}

unsigned trig_rec_types(const struct shm_meta_entry *e, uint8_t *types)
{
    unsigned n = e->nfields <= D9_SCHEMA_MAX_FIELDS ? e->nfields : D9_SCHEMA_MAX_FIELDS;
    for (unsigned i = 0; i < n; i++)
        types[i] = e->fields[i].type;
    return n;
}

size_t trig_rec_names(const struct shm_meta_entry *e, unsigned nfields, char *dst)
{
    size_t len = 0;
    for (unsigned i = 1; i < nfields && i < D9_SCHEMA_MAX_FIELDS; i++) {
        const char *nm = e->fields[i].name ? e->fields[i].name : "";
        size_t l = strnlen(nm, D9_NAME_MAX);
        if (dst) {
            memcpy(dst + len, nm, l);
            dst[len + l] = 0;
        }
        len += l + 1;
    }
    return len;
}

long trig_rec_field_at(const uint8_t *r, size_t len, unsigned nfields, const uint8_t *types,
                       unsigned k)
{
    struct d9_rec_custom c;
    if (len < sizeof c)
        return -1;
    memcpy(&c, r, sizeof c);
    if (c.payload_len > len - sizeof c || k >= nfields)
        return -1;
    size_t off = 0;
    for (unsigned i = 0; i <= k; i++) {
        if (c.payload_len - off < 8)
            return -1;
        if (i == k)
            return (long)off;
        if (types[i] == D9_FT_STR) {
            uint32_t sl;
            memcpy(&sl, r + sizeof c + off, sizeof sl);
            if (sl > D9_STR_MAX)
                return -1;
            size_t w = ((size_t)sl + 4 + 7) & ~(size_t)7;
            if (w > c.payload_len - off)
                return -1;
            off += w;
        } else {
            off += 8;
        }
    }
    return -1;
}

void trig_rec_reason(const uint8_t *r, size_t len, char *out, size_t cap)
{
    struct d9_rec_custom c;
    out[0] = 0;
    if (len < sizeof c)
        return;
    memcpy(&c, r, sizeof c);
    if (c.payload_len < 4 || c.payload_len > len - sizeof c)
        return;
    uint32_t sl;
    memcpy(&sl, r + sizeof c, sizeof sl);
    if (sl > c.payload_len - 4)
        return;
    size_t k = sl < cap - 1 ? sl : cap - 1;
    memcpy(out, r + sizeof c + 4, k);
    out[k] = 0;
    for (unsigned char *p = (unsigned char *)out; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            *p = '?';
}

void trig_rec_fields(const uint8_t *r, size_t len, unsigned nfields, const uint8_t *types,
                     const char *names, char *out, size_t cap)
{
    out[0] = 0;
    if (!names || nfields < 2 || cap < 3 || len < sizeof(struct d9_rec_custom))
        return;
    struct col_json j;
    col_json_init(&j, out, cap - 1, true);      /* keeps room for the closing '}' */
    struct d9_rec_custom c;
    memcpy(&c, r, sizeof c);
    col_json_raw(&j, "{", 1);
    const char *name = names;
    unsigned n = 0;
    for (unsigned k = 1; k < nfields; k++, name += strlen(name) + 1) {
        long off = trig_rec_field_at(r, len, nfields, types, k);
        if (off < 0)
            break;
        const uint8_t *v = r + sizeof(struct d9_rec_custom) + off;
        uint64_t w;
        memcpy(&w, v, sizeof w);
        char num[40];
        const char *val = num;
        size_t vlen;
        switch (types[k]) {
        case D9_FT_U64: vlen = (size_t)snprintf(num, sizeof num, "%" PRIu64, w); break;
        case D9_FT_I64: vlen = (size_t)snprintf(num, sizeof num, "%" PRId64, (int64_t)w); break;
        case D9_FT_BOOL: val = w ? "true" : "false"; vlen = strlen(val); break;
        case D9_FT_F64: {
            double x;
            memcpy(&x, &w, sizeof x);
            if (isfinite(x))
                vlen = (size_t)snprintf(num, sizeof num, "%.17g", x);
            else
                val = "null", vlen = 4;
            break;
        }
        case D9_FT_STR: val = NULL; vlen = 0; break;
        default: continue;      /* a type this collector does not know: left out */
        }
        size_t mark = j.len;
        if (n)
            col_json_raw(&j, ",", 1);
        col_json_str(&j, name, strlen(name));
        col_json_raw(&j, ":", 1);
        if (val) {
            col_json_raw(&j, val, vlen);
        } else {
            uint32_t sl;
            memcpy(&sl, v, sizeof sl);
            if (sl > D9_STR_MAX || sl > c.payload_len - (size_t)off - 4)
                j.full = true;  /* a bad string: the object ends before it */
            else
                col_json_str(&j, (const char *)v + 4, sl);
        }
        if (j.full) {
            /* this field does not fit: the object ends before it */
            col_json_rewind(&j, mark);
            break;
        }
        n++;
    }
    j.p[j.len++] = '}';         /* j.len <= cap - 2 here */
    j.p[j.len] = 0;
}
