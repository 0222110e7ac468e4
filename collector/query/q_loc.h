/*
 * q_loc.h — names of code locations: a location the agent registered by
 * code address (d9_loc_register_code; D9_LOC_CODE_FILE in shm/d9_abi.h),
 * such as a libuv callback traced by libd9uv, is shown as
 * "function (library+0xoffset)".
 *
 * The traced process resolves nothing. The name is made here, out of
 * process, from the "d9.map" records the collector writes into every
 * segment (collector/store/sym.h) and the ELF files they name, exactly
 * as d9 flame names CPU samples: the mapping gives the library and the
 * file offset, the symbol table the function. Without the mapping (a
 * segment without map records, a library gone) the location stays
 * "[code] 0xaddress"; without a symbol it is "library+0xoffset".
 *
 * Called by: q_names.c (q_names_location) and q_scan.c (the metadata of scans for
 * d9 events and export). Must never: trust the segment
 * (sym_map_decode validates every record) or fail a query: any error
 * degrades to the raw address.
 */
#ifndef D9_COL_Q_LOC_H
#define D9_COL_Q_LOC_H

#include <stddef.h>
#include "collector/query/q_store.h"
#include "shm/meta.h"

struct q_loc;

/* Load the map records of the segment file at path. NULL on any error or
 * when the segment holds none (a segment opened after its process exited:
 * try an older one of the process); q_loc_name then falls back to
 * the raw address. */
struct q_loc *q_loc_open(const char *path);
void q_loc_free(struct q_loc *c);
/* The map records of a process from its newest segment that has any
 * (q_loc_open on each, newest first). NULL when none has. */
struct q_loc *q_loc_of_process(struct q_store *s, int64_t process_id);

/* If e is a code location: its name into buf (cap bytes), returns buf.
 * Otherwise NULL. c may be NULL. */
const char *q_loc_name(struct q_loc *c, const struct shm_meta_entry *e, char *buf,
                             size_t cap);

/* For readers that hand out metadata entries (d9 events, export): m itself
 * when it is not a code location, else an entry named once per id with
 * k->c, whose func is the name above (file D9_LOC_CODE_FILE, line 0), kept
 * until q_loc_cache_release. Zero-initialise the cache; the caller
 * loads k->c (once: tried) before the first code location. */
struct q_loc_cache {
    struct q_loc *c;      /* owned */
    int tried;
    struct q_loc_named **v;
    size_t n, cap;
};
const struct shm_meta_entry *q_loc_cached(struct q_loc_cache *k,
                                                const struct shm_meta_entry *m);
void q_loc_cache_release(struct q_loc_cache *k);

/* 1 when e is a code location (named or not): print e->func alone. */
int q_loc_is_code(const struct shm_meta_entry *e);

#endif /* D9_COL_Q_LOC_H */
