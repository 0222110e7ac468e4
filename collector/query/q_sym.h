/*
 * q_sym.h — the names of stack frames, one way for every reader: d9 flame
 * (and d9 serve's flame graph), d9 sql's stacks table, the JSON export's
 * sample stacks and the Perfetto export's callstacks.
 *
 * Per process one sym.c resolver, fed by the collector's "d9.map" records
 * (q_sym_load: every map record of the segments that meet the window,
 * whatever its time: a process's maps are written at adoption, when they
 * change and at the start of every segment). A process the collector never saw alive has none: it
 * is named from the loaded objects its agent published (D9_META_OBJECT in
 * its metadata, q_names_objects) instead. Debug files are looked for under
 * the store's debug directory (q_store_debug_dir).
 *
 * The frames of a stack (q_sym_frames), innermost first:
 *   - an address 0 (the end of a frame-pointer chain) is no frame;
 *   - a frame in a section named SYM_TRAMP_SECTION ("d9_tramp") of its file
 *     is a shim trampoline, not the program's: named as the program's
 *     function it calls (the agent's D9_LOC_TRAMP_FILE entries), left out
 *     when that function is the frame inside it (the usual case) or the
 *     entry is unknown; so a sample taken in the trampoline's own code
 *     counts for the callback, not for the library that called it;
 *   - return addresses are looked up at ip - 1 (a call at the end of a
 *     function belongs to it, not to the next one), except the innermost
 *     frame and the first user frame under kernel frames: those are where
 *     the thread was interrupted or entered the kernel, looked up exactly.
 * Names are cached per (process, address looked up): each is resolved once,
 * C++ names demangled (q_demangle.h).
 *
 * Must never: trust a record or a map (sym_map_decode validates, sym.c
 * treats ELF files as hostile), or fail a query for a name (an unknown
 * address gets sym.c's "[unknown]" / "file+0xoffset").
 */
#ifndef D9_COL_Q_SYM_H
#define D9_COL_Q_SYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collector/query/q_scan.h"

struct q_sym;

struct q_frame {
    uint64_t ip;                    /* as recorded */
    uint64_t look;                  /* the address named: ip, or ip - 1 */
    const char *name;               /* valid until q_sym_free */
    bool kernel;
};

int q_sym_new(struct q_sym **out, struct q_store *s);
void q_sym_free(struct q_sym *y);

/* Read the map records of the processes of pid (0 = all) that name the
 * samples of [from, to]: those of every segment that meets the window (each
 * segment starts with a snapshot of its process's maps), with one scan of
 * the collector's map ring (prog prefixes its warnings). Once per q_sym;
 * 0 or -errno. */
int q_sym_load(struct q_sym *y, uint32_t pid, uint64_t from, uint64_t to, const char *prog);

/* A record of a caller's own scan: a "d9.map" record feeds its process's
 * resolver (others are ignored). 0 or -ENOMEM. */
int q_sym_map(struct q_sym *y, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
              size_t len);

/* The named frames of a CPU_SAMPLE / SCHED_SWITCH record of process_id
 * (shm_record_check passed), innermost first, into out[0, D9_STACK_MAX_FRAMES).
 * Returns how many, or -ENOMEM. */
int q_sym_frames(struct q_sym *y, int64_t process_id, const struct d9_rec_hdr *rec, size_t len,
                 struct q_frame *out);

/* The name of one address of process_id (exact: looked up as is, else at
 * addr - 1); a trampoline's is its callback's; *hidden (may be NULL) = a
 * trampoline whose callback is unknown. NULL on -ENOMEM. */
const char *q_sym_name(struct q_sym *y, int64_t process_id, uint64_t addr, bool kernel,
                       bool *hidden);

/* Maps (and agent objects) loaded so far, and processes with a resolver. */
uint64_t q_sym_maps(const struct q_sym *y);
size_t q_sym_processes(const struct q_sym *y);

#endif /* D9_COL_Q_SYM_H */
