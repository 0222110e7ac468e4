/*
 * sym.h — out-of-process symbolization: /proc/<pid>/maps, ELF64 symbol
 * tables and build-ids, /proc/kallsyms.
 *
 * Where symbolization happens (the design choice):
 *   The collector never resolves names. When it adopts a process (and again
 *   whenever the process's executable mappings change, and at the start of
 *   every segment) it snapshots /proc/<pid>/maps into the segment as
 *   "d9.map" records: one D9_REC_CUSTOM record per executable mapping with
 *   (start, end, file offset, build-id, path), plus a pseudo mapping
 *   "[kernel.kallsyms]" whose start is the kernel's _text address. They are
 *   written as DATA blocks of the pseudo ring SYM_SEG_RING. `d9 flame`
 *   symbolizes at query time: for each address it finds the mapping, reads
 *   the ELF file (verifying the build-id; falling back to
 *   /usr/lib/debug/.build-id/xx/yyyy.debug), translates the address through
 *   the PT_LOAD segments (PIE load bias) and looks it up in .symtab/.dynsym.
 *   So samples of exited processes symbolize, the traced process and the
 *   collector's drain loop pay nothing for names, and a store copied to
 *   another machine still yields "file+0xoffset" frames that any tool can
 *   resolve with the build-id. Kernel frames are named from /proc/kallsyms
 *   when it is readable and the recorded _text matches (same boot), else
 *   "[kernel]".
 *
 * The ELF parser is hand-written over a read-only mapping of the file and
 * treats the file as hostile: every offset, size, count, entry size and
 * string is checked against the file size before use. Symbol names are
 * copied, so the file is unmapped after loading.
 *
 * Callers: d9collectd (sym_maps_emit), d9 flame (sym_resolver_*), unit tests.
 * Never: follow an unchecked offset, trust a NUL terminator, or abort.
 */
#ifndef D9_COL_SYM_H
#define D9_COL_SYM_H

#include <stddef.h>
#include <stdint.h>
#include "shm/d9_abi.h"

/* Pseudo ring of the collector's map snapshot records. */
#define SYM_SEG_RING            0xfffffffeu
#define SYM_MAP_SCHEMA_ID       65536u          /* reserved schema id of "d9.map": the
                                                   largest segment readers keep (SEG_META_IDS_MAX);
                                                   agents assign schema ids densely from 1 */
#define SYM_MAP_SCHEMA_NAME     "d9.map"
#define SYM_KERNEL_PATH         "[kernel.kallsyms]"
/* A "d9.map" record whose path starts with this is a JIT/interpreter code
 * range named by the process's perf map (perfmap.h): [start, end) is the
 * code, the rest of the path its name. */
#define SYM_JIT_PREFIX          "[jit]"
#define SYM_BUILD_ID_MAX        64u             /* bytes */
#define SYM_DEBUG_DIR           "/usr/lib/debug/.build-id"
/* The ELF section every agent trampoline is placed in (D9_TRAMP_SECTION,
 * shm/d9_abi.h): a frame whose address falls in a section of this name in
 * its mapped file is the shim's, not the program's, and readers leave it
 * out of stacks. */
#define SYM_TRAMP_SECTION       D9_TRAMP_SECTION
#define SYM_KALLSYMS            "/proc/kallsyms"
#define SYM_PATH_MAX            4096u
#define SYM_ELF_MAX_BYTES       (2ull << 30)    /* refuse ELF files above 2 GiB */
#define SYM_KERNEL_SPACE_MIN    0xffff800000000000ull  /* x86-64/arm64: kernel half */

/* ---- /proc/<pid>/maps -------------------------------------------------- */

struct sym_map {
    uint64_t start, end, pgoff;
    uint64_t inode;
    uint32_t dev_major, dev_minor;
    int exec;                   /* 'x' in perms */
    char *path;                 /* owned, "" for anonymous; " (deleted)" kept */
};

/* Parse maps text (not NUL-terminated: len bytes). Malformed lines are
 * skipped and counted in *bad (may be NULL). 0 or -ENOMEM. */
int sym_maps_parse(const char *text, size_t len, struct sym_map **out, size_t *n, size_t *bad);
int sym_maps_read(uint32_t pid, struct sym_map **out, size_t *n);
void sym_maps_free(struct sym_map *m, size_t n);

/* ---- ELF --------------------------------------------------------------- */

struct sym_elf;

/* Load from a file / from a buffer (copied what it keeps). Errors:
 * -ENOEXEC not an ELF64 little-endian file, -EBADMSG broken headers,
 * -EFBIG too large, -errno from open/mmap. Missing tables are not errors
 * (sym_elf_nsyms() == 0). */
int sym_elf_open(const char *path, struct sym_elf **out);
int sym_elf_parse(const uint8_t *buf, size_t len, struct sym_elf **out);
void sym_elf_close(struct sym_elf *e);

size_t sym_elf_nsyms(const struct sym_elf *e);
/* 1 when the file has a .symtab (not only .dynsym). */
int sym_elf_has_symtab(const struct sym_elf *e);
/* 1 when vaddr (link-time) is inside a SYM_TRAMP_SECTION section. */
int sym_elf_in_tramp(const struct sym_elf *e, uint64_t vaddr);
/* Build-id bytes (NULL, *len = 0 when the file has none). */
const uint8_t *sym_elf_build_id(const struct sym_elf *e, size_t *len);
/* Hex form into buf (2*len+1 bytes); returns buf. */
char *sym_build_id_hex(const uint8_t *id, size_t len, char *buf, size_t cap);
/* File offset -> link-time virtual address via PT_LOAD; -ENOENT if no
 * loadable segment covers it. */
int sym_elf_offset_to_vaddr(const struct sym_elf *e, uint64_t file_off, uint64_t *vaddr);
/* Function containing vaddr (NULL if none); *off = vaddr - symbol start. */
const char *sym_elf_lookup(const struct sym_elf *e, uint64_t vaddr, uint64_t *off);
/* Address of the named function (for tests), -ENOENT. */
int sym_elf_find(const struct sym_elf *e, const char *name, uint64_t *vaddr);

/* ---- kernel ------------------------------------------------------------- */

struct sym_kernel;
/* Parse kallsyms text; -EACCES when addresses are hidden (all zero). */
int sym_kernel_parse(const char *text, size_t len, struct sym_kernel **out);
int sym_kernel_load(const char *path, struct sym_kernel **out);
void sym_kernel_free(struct sym_kernel *k);
uint64_t sym_kernel_text(const struct sym_kernel *k);      /* _text, 0 if unknown */
const char *sym_kernel_lookup(const struct sym_kernel *k, uint64_t addr, uint64_t *off);

/* ---- map snapshot records (collector) ----------------------------------- */

struct sym_maps_state {
    uint64_t hash;              /* of the executable mappings last written */
    int written;                /* 0 until the first snapshot of this segment */
    uint32_t seq;               /* next record seq in SYM_SEG_RING */
    int ktext_known;            /* kernel_text probed (once: fixed for the boot) */
    uint64_t kernel_text;       /* kernel _text from /proc/kallsyms, 0 = hidden */
};

/* Forget what was written (call when a new segment is opened, so every
 * segment carries the maps it needs). Keeps seq and the kernel _text. */
void sym_maps_state_reset(struct sym_maps_state *st);

/*
 * Snapshot /proc/<pid>/maps; if the executable mappings differ from the
 * last snapshot written (or none was written since reset), write "d9.map"
 * records (ring framing, ts = now_ns) into out[0, cap). Returns bytes
 * written, 0 if unchanged, -ENOBUFS if cap is too small (nothing written),
 * -ESRCH process gone, -errno.
 */
long sym_maps_emit(uint32_t pid, uint64_t now_ns, struct sym_maps_state *st,
                   uint8_t *out, size_t cap);

/* Same from an already parsed list, with build-ids read through root
 * (e.g. "/proc/<pid>/root", "" for none) and kernel _text as given (0 = omit).
 * Exposed for tests. */
long sym_maps_encode(const struct sym_map *m, size_t n, const char *root, uint64_t kernel_text,
                     uint64_t now_ns, struct sym_maps_state *st, uint8_t *out, size_t cap);

/* One JIT "d9.map" record [start, end) named name (SYM_JIT_PREFIX is
 * added; seq from st) into out[0, cap). Returns bytes, or -ENOBUFS. */
long sym_jit_encode(uint64_t start, uint64_t end, const char *name, uint64_t now_ns,
                    struct sym_maps_state *st, uint8_t *out, size_t cap);

/* The META schema entry payload describing "d9.map" (for seg_writer_add_meta,
 * so generic decoders can print the records). Returns bytes or -errno. */
int sym_map_schema_payload(uint8_t *out, size_t cap);

/* Decode one "d9.map" record (a D9_REC_CUSTOM with SYM_MAP_SCHEMA_ID);
 * strings are copied NUL-terminated. 0, -EINVAL (other schema) or -EBADMSG. */
struct sym_map_rec {
    uint64_t ts, start, end, pgoff;
    char build_id[2 * SYM_BUILD_ID_MAX + 1];
    char path[256];
};
int sym_map_decode(const uint8_t *rec, size_t len, struct sym_map_rec *out);

/* ---- resolver (d9 flame) ------------------------------------------------- */

struct sym_resolver;
/* root: prefix for opening mapped files ("" = as recorded). */
int sym_resolver_new(struct sym_resolver **out, const char *root);
void sym_resolver_free(struct sym_resolver *r);
/* Where debug files are looked for (dir/xx/yyyy.debug by build-id): dir
 * first, then SYM_DEBUG_DIR (dir adds to the default; NULL or "": the
 * default only). */
void sym_resolver_debug_dir(struct sym_resolver *r, const char *dir);
int sym_resolver_add(struct sym_resolver *r, const struct sym_map_rec *m);
/*
 * Name of the frame at ip into buf: "func", "file+0xoff" (mapping known, no
 * symbol), the perf map's name of a JIT range (SYM_JIT_PREFIX records) when
 * ip is in anonymous or unmapped memory, "[anon]+0xADDR" in anonymous
 * memory no perf map names, "func_[k]" / "[kernel]" (kernel), "[unknown]" otherwise.
 * kernel_hint: the frame came from the kernel part of the callchain.
 * Returns 1 when ip is in a SYM_TRAMP_SECTION section of its file (a shim
 * trampoline: readers drop the frame; buf still gets its name), else 0.
 * Names come from the mapped file's .symtab, else from its debug file
 * (matching build-id under the debug directory), else its .dynsym.
 */
int sym_resolve(struct sym_resolver *r, uint64_t ip, int kernel_hint, char *buf, size_t cap);

/* Parse 1..16 hex digits at *p (stopping at end) into *v and advance *p:
 * 1, or 0 (no digit, or more than 16; *p and *v unchanged). The one parser
 * of hex fields in text the collector reads (/proc maps, perf maps). */
int sym_parse_hex(const char **p, const char *end, uint64_t *v);

#endif /* D9_COL_SYM_H */
