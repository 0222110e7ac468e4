/*
 * q_loc.h — locations, printed one way everywhere (top-polls, events, d9
 * sql's location columns, both exports, d9 serve):
 *   source location  "file:line function"   (d9_loc_register: "src/a.c:12 handle";
 *                    "file:line" without a function)
 *   code location    "library+0xoffset function"   (a location the agent
 *                    registered by code address, d9_loc_register_code,
 *                    D9_LOC_CODE_FILE in shm/d9_abi.h: a libuv callback
 *                    traced by libd9uv; "library+0xoffset" without a symbol,
 *                    "[code] 0xaddress" without a mapping)
 * where before what, in both: a location reads like a source position.
 *
 * The traced process resolves nothing. A code location is named here, out
 * of process, from the "d9.map" records the collector writes into every
 * segment (collector/store/sym.h) and the ELF files they name, as d9 flame
 * names CPU samples: the mapping gives the library and the file offset, the
 * symbol table (or its debug file) the function.
 *
 * Called by: q_names.c (q_names_location), q_scan.c (the metadata of scans,
 * whose code locations come out named: file = "library+0xoffset", line 0,
 * func = the function), and every reader that prints a location
 * (q_loc_text). Must never: trust the segment (sym_map_decode validates
 * every record) or fail a query: any error degrades to the raw address.
 */
#ifndef D9_COL_Q_LOC_H
#define D9_COL_Q_LOC_H

#include <stddef.h>
#include "collector/query/q_store.h"
#include "shm/meta.h"

struct q_loc;

#define Q_LOC_NAME_MAX 320u        /* a library+offset or a function name */

/* Load the map records of the segment file at path (debug files under
 * debug_dir, NULL = the default). NULL on any error or when the segment
 * holds none (a segment opened after its process exited: try an older one
 * of the process); q_loc_code then falls back to the raw address. */
struct q_loc *q_loc_open(const char *path, const char *debug_dir);
void q_loc_free(struct q_loc *c);
/* The map records of a process from its newest segment that has any
 * (q_loc_open on each, newest first); when none has (a process the
 * collector never saw alive), the loaded objects its agent published
 * (D9_META_OBJECT), as q_sym names its stacks. NULL when there are neither. */
struct q_loc *q_loc_of_process(struct q_store *s, int64_t process_id);
/* An object the agent published (D9_META_OBJECT entry e) as a map record:
 * the one conversion q_loc and q_sym share. */
struct sym_map_rec;
void q_loc_object_map(const struct shm_meta_entry *e, struct sym_map_rec *m);

/* If e is a code location: 1, where = "library+0xoffset" (or "[code]
 * 0xaddress"), what = its function ("" when unknown). Otherwise 0. c may be
 * NULL. */
int q_loc_code(struct q_loc *c, const struct shm_meta_entry *e, char *where, size_t wcap,
               char *what, size_t fcap);

/* The one text of location id with entry e (e may be NULL): "?" for id 0,
 * "#id" when unknown, else as above (a named code location's entry has
 * line 0: "file function"). Returns buf. */
const char *q_loc_text(const struct shm_meta_entry *e, uint32_t id, char *buf, size_t cap);

/* For readers that hand out metadata entries (d9 events, export): m itself
 * when it is not a code location, else an entry named once per id with
 * k->c (name "library+0xoffset", line 0, func the function), kept until
 * q_loc_cache_release. Zero-initialise the cache; the caller
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

/* 1 when e is an unnamed code location (as the metadata holds it). */
int q_loc_is_code(const struct shm_meta_entry *e);

#endif /* D9_COL_Q_LOC_H */
