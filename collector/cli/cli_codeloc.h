/*
 * cli_codeloc.h — names of code locations: a location the agent registered by
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
 * Called by: cli_store.c (cli_store_names_location, and the metadata of scans for
 * d9 events and export). Must never: trust the segment
 * (sym_map_decode validates every record) or fail a query: any error
 * degrades to the raw address.
 */
#ifndef D9_COL_CLI_CLI_CODELOC_H
#define D9_COL_CLI_CLI_CODELOC_H

#include <stddef.h>
#include "shm/meta.h"

struct cli_codeloc;

/* Load the map records of the segment file at path. NULL on any error or
 * when the segment holds none (a segment opened after its process exited:
 * try an older one of the process); cli_codeloc_name then falls back to
 * the raw address. */
struct cli_codeloc *cli_codeloc_open(const char *path);
void cli_codeloc_free(struct cli_codeloc *c);

/* If e is a code location: its name into buf (cap bytes), returns buf.
 * Otherwise NULL. c may be NULL. */
const char *cli_codeloc_name(struct cli_codeloc *c, const struct shm_meta_entry *e, char *buf,
                             size_t cap);

/* For readers that hand out metadata entries (d9 events, export): m itself
 * when it is not a code location, else an entry named once per id with
 * k->c, whose func is the name above (file D9_LOC_CODE_FILE, line 0), kept
 * until cli_codeloc_cache_release. Zero-initialise the cache; the caller
 * loads k->c (once: tried) before the first code location. */
struct cli_codeloc_cache {
    struct cli_codeloc *c;      /* owned */
    int tried;
    struct cli_codeloc_named **v;
    size_t n, cap;
};
const struct shm_meta_entry *cli_codeloc_cached(struct cli_codeloc_cache *k,
                                                const struct shm_meta_entry *m);
void cli_codeloc_cache_release(struct cli_codeloc_cache *k);

/* 1 when e is a code location (named or not): print e->func alone. */
int cli_codeloc_is(const struct shm_meta_entry *e);

#endif /* D9_COL_CLI_CLI_CODELOC_H */
