/*
 * fuzz_q_decode.c — libFuzzer target for the d9 CLI's record decoding
 * (collector/query/q_decode.c) and Chrome trace export (collector/export/exp_json.c,
 * q_pair.c) on hostile records: a schema is built from the first bytes
 * (field count and types), the rest is one record as a segment would hand
 * it out. Nothing may crash, read out of bounds or leak.
 *
 * Input: [nfields % 17][type byte per field][record bytes...]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/query/q_decode.h"
#include "collector/export/exp_json.h"
#include "collector/query/q_sym.h"

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

static struct shm_meta_entry g_schema;
static struct shm_meta_entry g_loc = { .kind = D9_META_LOCATION, .id = 1, .name = "f.c",
                                       .func = "fn", .line = 1 };
static const char *const g_names[D9_SCHEMA_MAX_FIELDS] = {
    "f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7",
    "f8", "f9", "f10", "f11", "f12", "f13", "f14", "f15",
};

static const char *rt(const void *c, uint32_t id) { (void)c; return id % 2 ? "rt" : NULL; }
static const struct shm_meta_entry *loc(const void *c, uint32_t id)
{
    (void)c;
    return id % 2 ? &g_loc : NULL;
}
static const struct shm_meta_entry *schema(const void *c, uint32_t id)
{
    (void)c;
    return id % 3 ? &g_schema : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w")))
        return 0;
    if (n < 1)
        return 0;
    unsigned nf = in[0] % (D9_SCHEMA_MAX_FIELDS + 1);
    if (n < 1 + nf)
        return 0;
    memset(&g_schema, 0, sizeof g_schema);
    g_schema.kind = D9_META_SCHEMA;
    g_schema.id = 1;
    g_schema.name = "ev";
    g_schema.nfields = (uint16_t)nf;
    for (unsigned i = 0; i < nf; i++) {
        g_schema.fields[i].type = (uint8_t)(in[1 + i] % 6);     /* 0 = invalid type too */
        g_schema.fields[i].name = g_names[i];
    }
    size_t len = n - 1 - nf;
    uint8_t *rec = malloc(len ? len : 1);   /* exact size: ASan sees over-reads */
    memcpy(rec, in + 1 + nf, len);

    struct q_meta_src m = { rt, loc, schema, NULL };
    struct q_decoded d;
    struct q_line_ctx lc = { .pid = 1, .tid = 2, .comm = "c", .thread = "t", .have_wall = true };
    if (q_decode(rec, len, &m, &d) == 0) {
        if (d.nfields > Q_DEC_MAX_FIELDS || d.first_custom > d.nfields)
            abort();
        q_decode_print_text(sink, &lc, &d);
        q_decode_print_json(sink, &lc, &d);
    }
    struct exp_json *x;
    struct q_sym *sym = NULL;
    if (q_sym_new(&sym, NULL) == 0 && exp_json_begin(&x, sink, sym) == 0) {
        struct q_rec_src src = { .process_id = 1, .pid = 1, .comm = "c", .tid = 2,
                                   .thread = "t", .meta = &m };
        if (len >= sizeof(struct d9_rec_hdr)) {
            exp_json_record(x, &src, (const struct d9_rec_hdr *)(const void *)rec, len);
            exp_json_record(x, &src, (const struct d9_rec_hdr *)(const void *)rec, len);
        }
        exp_json_finish(x, NULL, UINT64_MAX / 2, NULL);
    }
    q_sym_free(sym);
    free(rec);
    return 0;
}
