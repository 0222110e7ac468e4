/*
 * col_json.h — a JSON text builder into a fixed buffer: raw text (the
 * caller's punctuation, numbers, literals) and strings quoted and escaped.
 *
 * Called by trig_rec.c (a typed trigger's fields, the JSON of its index row)
 * and s3_key.c (a shipped segment's manifest). One escaping rule for both:
 * '"' and '\' get a backslash, every byte below 0x20 becomes \u00XX, and
 * everything else, UTF-8 included, is copied as it is (JSON allows it).
 * DEL (0x7f) is the one byte the two writers have always treated apart,
 * so it is the builder's choice (col_json_init's esc_del): JSON allows it
 * raw, and the manifest keeps it raw (the shipped manifests and
 * test_s3_key's pinned bytes); a trigger's fields escape it as \u007f (the
 * index rows already written). Either way the text parses to the same
 * string, and no writer's bytes changed when they came to share this.
 *
 * Invariants: len < cap whenever cap > 0, and p[len] is NUL after any call
 * that wrote; nothing is ever written at or past p[cap]. The first piece
 * that does not fit sets full and is left out whole (never cut in the
 * middle of an escape); every call after that writes nothing until the
 * caller rewinds. A caller that wants to drop a partial member saves len
 * before it and, on full, rewinds to it (col_json_rewind).
 *
 * Must never: allocate, fail other than by full, or read past the n bytes
 * it is given (a string may hold NUL bytes: they become \u0000).
 */
#ifndef D9_COL_JSON_H
#define D9_COL_JSON_H

#include <stdbool.h>
#include <stddef.h>

struct col_json {
    char *p;
    size_t len, cap;            /* bytes written (no NUL); bytes of p, NUL included */
    bool full;                  /* something did not fit: nothing more is written */
    bool esc_del;               /* DEL as \u007f (else raw) */
};

/* A builder over p (cap bytes, NUL included; 0: nothing fits). p[0] is set
 * to NUL when cap > 0. */
void col_json_init(struct col_json *j, char *p, size_t cap, bool esc_del);
/* n bytes of s as they are. */
void col_json_raw(struct col_json *j, const char *s, size_t n);
/* n bytes of s escaped, without quotes: the body of a JSON string. */
void col_json_esc(struct col_json *j, const char *s, size_t n);
/* n bytes of s as a JSON string: quoted and escaped. */
void col_json_str(struct col_json *j, const char *s, size_t n);
/* Back to len mark (<= j->len, from an earlier j->len): what came after it
 * is dropped and full is cleared. */
void col_json_rewind(struct col_json *j, size_t mark);

#endif /* D9_COL_JSON_H */
