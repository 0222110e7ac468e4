/*
 * fuzz_trig_rec.c — a marker record's reason and fields (trig_rec.c) from
 * any bytes: the first byte picks the field count, the next 16 the field
 * types, the rest is the record (its header's payload_len as fuzzed). Never
 * reads outside the record (ASan); the reason ends within its buffer with
 * no control byte; the fields are "" or one object ("{...}") ending within
 * theirs, at any buffer size.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/trig_rec.h"
#include "shm/d9_abi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 + D9_SCHEMA_MAX_FIELDS)
        return 0;
    unsigned nfields = data[0] % (D9_SCHEMA_MAX_FIELDS + 1);
    uint8_t types[D9_SCHEMA_MAX_FIELDS];
    for (unsigned i = 0; i < D9_SCHEMA_MAX_FIELDS; i++)
        types[i] = data[1 + i] % 8;     /* the known types and some others */
    data += 1 + D9_SCHEMA_MAX_FIELDS;
    size -= 1 + D9_SCHEMA_MAX_FIELDS;
    uint8_t *rec = malloc(size ? size : 1);     /* exactly the record: ASan sees its end */
    if (!rec)
        return 0;
    memcpy(rec, data, size);
    static const char names[] = "a\0b\0c\"q\0d\\e\0e\0f\0g\0h\0i\0j\0k\0l\0m\0n\0o\0";
    char why[TRIG_REC_REASON_MAX + 1];
    trig_rec_reason(rec, size, why, sizeof why);
    for (const unsigned char *p = (const unsigned char *)why; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            abort();
    size_t caps[] = { 1, 2, 3, 8, 40, TRIG_REC_FIELDS_MAX };
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        char *out = malloc(caps[c]);
        if (!out)
            break;
        trig_rec_fields(rec, size, nfields, types, names, out, caps[c]);
        size_t n = strnlen(out, caps[c]);
        if (n == caps[c] || (n && (out[0] != '{' || out[n - 1] != '}')))
            abort();
        free(out);
    }
    for (unsigned k = 0; k < D9_SCHEMA_MAX_FIELDS + 1; k++) {
        long off = trig_rec_field_at(rec, size, nfields, types, k);
        if (off >= 0 && (size < sizeof(struct d9_rec_custom) ||
                         (size_t)off + 8 > size - sizeof(struct d9_rec_custom)))
            abort();
    }
    free(rec);
    return 0;
}
