/*
 * meta.h — the region's metadata log: runtimes, source locations and
 * custom-event schemas, each published once and referred to by id.
 *
 * Writer (agent): shm_meta_append() is called with the agent's metadata lock
 * held (slow path, once per id). It copies the entry past meta_head and then
 * release-stores meta_head, so a reader that acquire-loads meta_head sees
 * whole entries only.
 *
 * Reader (collector, d9): shm_meta_next() walks a private copy of the log and
 * validates each entry (framing, NUL-terminated strings inside the entry,
 * field counts and types) before handing it out; a bad entry ends the walk.
 */
#ifndef D9_SHM_META_H
#define D9_SHM_META_H

#include <stddef.h>
#include <stdint.h>
#include "shm/d9_abi.h"

/* Append an entry: kind/id plus payload bytes. Returns 0, -ENOSPC when the
 * log is full (meta_lost is incremented), -EINVAL on oversized payloads. */
int shm_meta_append(struct d9_region_hdr *hdr, uint8_t *meta_area,
                    uint16_t kind, uint32_t id, const void *payload, size_t len);

/* A decoded, validated entry. Pointers point into the caller's buffer. */
struct shm_meta_field {
    uint8_t type;               /* enum d9_field_type */
    const char *name;
};
struct shm_meta_entry {
    uint16_t kind;
    uint32_t id;
    const char *name;           /* RUNTIME name, SCHEMA name, LOCATION file */
    const char *func;           /* LOCATION only */
    uint32_t line;              /* LOCATION only */
    uint16_t nfields;           /* SCHEMA only */
    uint64_t start, end, pgoff; /* OBJECT only (name: its path) */
    uint8_t build_id[D9_BUILD_ID_MAX];
    uint8_t build_id_len;
    struct shm_meta_field fields[D9_SCHEMA_MAX_FIELDS];
};

/*
 * Decode the entry at *off in buf[0, len). On success fills *e, advances *off
 * and returns 1; returns 0 at the end of the log; -EBADMSG on a malformed
 * entry (*off is left at the bad entry).
 */
int shm_meta_next(const uint8_t *buf, size_t len, size_t *off, struct shm_meta_entry *e);

/* Encode helpers for the agent: build a payload into out (cap bytes);
 * return its length or -ENAMETOOLONG / -EINVAL. */
int shm_meta_encode_runtime(uint8_t *out, size_t cap, const char *name);
int shm_meta_encode_location(uint8_t *out, size_t cap, const char *file, uint32_t line,
                             const char *func);
/* OBJECT payload: a loaded object's executable segment (see d9_abi.h). */
int shm_meta_encode_object(uint8_t *out, size_t cap, const struct d9_meta_object *o,
                           const uint8_t *build_id, const char *path);

/* The func string of a code location at addr (see D9_LOC_CODE_FILE) into
 * out (at least D9_LOC_CODE_FUNC_MAX bytes); returns out. */
char *shm_meta_code_func(uint64_t addr, char *out);
/* 1 and *addr when e is a well-formed code location, else 0. */
int shm_meta_code_addr(const struct shm_meta_entry *e, uint64_t *addr);
/* 1, *tramp (its entry) and *loc (the callback's code location id) when e
 * is a well-formed trampoline entry (D9_LOC_TRAMP_FILE), else 0. */
int shm_meta_tramp(const struct shm_meta_entry *e, uint64_t *tramp, uint32_t *loc);
int shm_meta_encode_schema(uint8_t *out, size_t cap, const char *name, uint16_t nfields,
                           const uint8_t *types, const char *const *names);

#endif /* D9_SHM_META_H */
