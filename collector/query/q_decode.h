/*
 * q_decode.h — one record (ring framing, CLOCK_MONOTONIC ts, as stored in a
 * segment DATA block) to named fields, and those to a text line or a JSON
 * line. Custom events are decoded by their schema (name, field names and
 * types) from the segment's metadata, so no application source is needed.
 *
 * Called by the d9 subcommands (events, export) through q_scan.c; the
 * metadata comes through struct q_meta_src so unit tests can decode
 * without a segment file.
 *
 * Records are untrusted: q_decode re-checks framing (shm_record_check) and
 * every custom field length; a malformed custom payload is reported in
 * d->error with the fields decoded so far, never read past the record.
 * Output never contains raw control bytes: text escapes them, JSON is always
 * valid (invalid UTF-8 becomes U+FFFD).
 */
#ifndef D9_COL_Q_DECODE_H
#define D9_COL_Q_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "shm/d9_abi.h"
#include "shm/meta.h"

/* Where names come from: runtime ids, location ids and schema ids of the
 * record's process. Any callback may be NULL or return NULL (unknown id). */
struct q_meta_src {
    const char *(*runtime)(const void *ctx, uint32_t id);
    const struct shm_meta_entry *(*location)(const void *ctx, uint32_t id);
    const struct shm_meta_entry *(*schema)(const void *ctx, uint32_t id);
    const void *ctx;
};

enum q_val_type {
    Q_V_U64 = 1,
    Q_V_I64,
    Q_V_F64,
    Q_V_BOOL,
    Q_V_STR,                  /* s[0, slen), not NUL-terminated, untrusted bytes */
    Q_V_HEX,                  /* u printed as 0x... */
    Q_V_IPS,                  /* nips little-endian uint64 at ips (unaligned) */
};

struct q_field {
    const char *name;
    enum q_val_type type;
    uint64_t u;
    int64_t i;
    double f;
    const char *s;
    size_t slen;
    const uint8_t *ips;
    uint16_t nips;
};

/* Custom events whose schema name starts with this are the collector's own
 * (d9.map): readers show them to nobody but the symbolizer. */
#define Q_DECODE_INTERNAL "d9."

#define Q_DEC_MAX_FIELDS (D9_SCHEMA_MAX_FIELDS + 8u)
#define Q_LOC_TEXT_MAX   (4u * D9_NAME_MAX * 2u + 32u)

struct q_decoded {
    uint16_t type;              /* enum d9_rec_type */
    const char *type_name;      /* shm_record_type_name */
    uint64_t ts;                /* CLOCK_MONOTONIC ns */
    const char *event;          /* CUSTOM: schema name, NULL if the schema is unknown */
    uint32_t schema;            /* CUSTOM: schema id */
    unsigned nfields;
    unsigned first_custom;      /* fields [first_custom, nfields) are custom-event fields */
    struct q_field f[Q_DEC_MAX_FIELDS];
    const char *error;          /* non-NULL: payload malformed (what is wrong) */
    char loc_text[Q_LOC_TEXT_MAX];
    char rt_text[24];
};

/* Decode rec (len readable bytes). The decoded strings point into rec, the
 * metadata and *d: valid while they are. 0, or -EBADMSG if the framing is
 * invalid (nothing usable). */
int q_decode(const void *rec, size_t len, const struct q_meta_src *m, struct q_decoded *d);

/* Find a field by name (NULL if absent). */
const struct q_field *q_decode_field(const struct q_decoded *d, const char *name);

/* Context of a line: who emitted the record and how to print time. */
struct q_line_ctx {
    uint32_t pid;
    uint32_t tid;
    uint32_t uid;               /* owner of the region the records came from */
    bool show_uid;              /* print uid (text: "uid=N" after pid/tid; JSON: "uid") */
    const char *comm;           /* may be NULL */
    const char *thread;         /* thread name, may be NULL */
    int64_t boot_realtime_ns;   /* wall = mono + this */
    bool have_wall;
};

/* "12:59:28.123456789 1234/1240 poll_start task=17 runtime=demo ..." + '\n'.
 * Custom events: "... custom request_done path=\"/a\" status=200 ms=1.5". */
void q_decode_print_text(FILE *f, const struct q_line_ctx *c, const struct q_decoded *d);

/* {"ts_ns":..,"time":"..","pid":..,"tid":..,"comm":"..","thread":"..",
 *  "type":"..", <built-in fields>, "event":"..","fields":{<custom fields>}} + '\n' */
void q_decode_print_json(FILE *f, const struct q_line_ctx *c, const struct q_decoded *d);

/* The fields [from, to) as JSON members ("name":value,...) without braces;
 * returns how many were printed. For export's "args". */
unsigned q_decode_print_json_members(FILE *f, const struct q_decoded *d, unsigned from,
                                       unsigned to, bool leading_comma);

#endif /* D9_COL_Q_DECODE_H */
