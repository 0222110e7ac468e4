/*
 * trig_rec.h — a d9_trigger marker record read the one way: its reason and
 * a typed marker's fields as the JSON text of the index's triggers.fields
 * (idx_trig.h).
 *
 * The collector derives a marker's row from its record as it drains it
 * (collector/daemon/trigd.c); a re-index derives it again from the same
 * record in the segment (reindex.c). Both call this module, so the row a
 * re-index brings back holds the same bytes as the one the live path wrote.
 *
 * A marker record is a custom record (struct d9_rec_custom) of a schema
 * named TRIG_REC_SCHEMA_NAME whose first field is a STR, "reason"; a typed
 * marker (agent/d9.h's D9_TRIGGER_EVENT) has more fields after it.
 *
 * Called by: trigd.c (the drain thread), reindex.c.
 * Invariants: a record is untrusted bytes: every length is checked against
 * len before a byte is read; text out is always NUL-ended within cap.
 * Must never: allocate, or read outside [r, r + len).
 */
#ifndef D9_COL_TRIG_REC_H
#define D9_COL_TRIG_REC_H

#include <stddef.h>
#include <stdint.h>

struct shm_meta_entry;

/* The reserved schema of d9_trigger() (agent/d9.h's D9_TRIGGER_SCHEMA). */
#define TRIG_REC_SCHEMA_NAME "d9_trigger"
/* A reason's bytes at most (NUL not counted): longer ones are cut. */
#define TRIG_REC_REASON_MAX  255u
/* A typed marker's fields as JSON text: at most this many bytes, NUL
 * included; the fields that do not fit are left out, the object stays
 * whole. */
#define TRIG_REC_FIELDS_MAX  1024u

/* 1 when e is a marker schema: a SCHEMA entry named TRIG_REC_SCHEMA_NAME
 * whose first field is a STR; else 0. */
int trig_rec_is_marker(const struct shm_meta_entry *e);

/* The types of e's fields (at most D9_SCHEMA_MAX_FIELDS) into types; their
 * count. */
unsigned trig_rec_types(const struct shm_meta_entry *e, uint8_t *types);

/* The names of e's fields 1 .. nfields - 1 (a typed marker's fields after
 * its reason), each cut to D9_NAME_MAX bytes and NUL-ended, one after the
 * other, into dst (NULL: only measured). Their bytes, NULs included. */
size_t trig_rec_names(const struct shm_meta_entry *e, unsigned nfields, char *dst);

/* The payload offset of field k of the custom record r (len bytes) whose
 * nfields fields have these types; -1 when the record is too short for it
 * or k is out of range. */
long trig_rec_field_at(const uint8_t *r, size_t len, unsigned nfields, const uint8_t *types,
                       unsigned k);

/* The reason of a marker record r (len bytes) into out (cap bytes), as the
 * index holds it: cut to cap - 1 bytes (and at a NUL), control bytes and
 * DEL shown as '?'; "" when the record has none. */
void trig_rec_reason(const uint8_t *r, size_t len, char *out, size_t cap);

/* The fields after the reason of a typed marker record r (len bytes; its
 * nfields fields of these types, names as trig_rec_names gives them) as one
 * JSON object into out (cap bytes), in the schema's order: numbers,
 * true/false, strings with '"', '\' and control bytes escaped, a non-finite
 * F64 as null, a field of a type not known here left out. "" when it has
 * none (nfields < 2, names NULL) or they cannot be read. A field that does
 * not fit is left out with the ones after it. */
void trig_rec_fields(const uint8_t *r, size_t len, unsigned nfields, const uint8_t *types,
                     const char *names, char *out, size_t cap);

#endif
