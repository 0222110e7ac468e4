/*
 * unwind.h — out-of-process DWARF unwinding of perf samples taken with
 * --stack-mode dwarf (PERF_SAMPLE_REGS_USER + PERF_SAMPLE_STACK_USER), for
 * programs built without frame pointers. Used by perf.c (one unwinder per
 * sampled process).
 * elfutils' libdwfl reads the CFI (.eh_frame of the mapped objects,
 * .debug_frame of their debug files by build-id under $D9_DEBUG_DIR, a
 * tree laid out as d9's --debug-dir, DIR/xx/rest.debug, else libdwfl's
 * standard places, /usr/lib/debug/.build-id and debuglink); memory reads are served from the sample's stack copy
 * only, never from the process. The module list comes from
 * /proc/<pid>/maps and is re-read (at most every UNW_REPORT_NS) when a
 * sample's pc is in no known module, so newly mapped objects are found.
 * Untrusted input: registers and stack copy come from the sampled program;
 * every read is bounds-checked and at most UNW_FRAMES_MAX frames are walked
 * per sample. A pc in no module (code generated at run time, LuaJIT's
 * traces) is unwound from the first word of the copy, within
 * UNW_SCAN_BYTES, that is a return address (just after a call) in a module.
 */
#ifndef D9_DAEMON_UNWIND_H
#define D9_DAEMON_UNWIND_H

#include <stddef.h>
#include <stdint.h>

/* x86-64 user registers asked for (perf_event_x86_regs bits): AX BX CX DX
 * SI DI BP SP IP and R8..R15, in that order in the sample. */
#define UNW_REGS_MASK      0xff01ffull
#define UNW_REGS_N         17u
#define UNW_STACK_BYTES    32768u       /* user stack copied per sample: the default */
#define UNW_STACK_BYTES_MIN 1024u
#define UNW_STACK_BYTES_MAX 61440u      /* a sample record must fit perf's 16-bit size */
#define UNW_REPORT_NS      100000000ull /* module list re-read at most every 100 ms */
#define UNW_SCAN_BYTES     4096u        /* a pc without CFI: its caller looked for this far */
#define UNW_SCAN_MAX       8u           /* scans per sample (JIT code called back and forth) */

struct unw;

/* The build-id tree searched for debug files before libdwfl's standard
 * places (d9collectd --debug-dir); NULL or "": $D9_DEBUG_DIR. Call before
 * the first unw_open. */
void unw_set_debug_dir(const char *dir);

/* NULL on allocation failure (the caller keeps the fp callchain). */
struct unw *unw_open(uint32_t pid);
void unw_close(struct unw *u);

/*
 * Unwind one sample of thread tid: regs = UNW_REGS_N u64s (UNW_REGS_MASK
 * order, possibly unaligned), stack[0, stack_len) the copy starting at SP.
 * Writes up to max return addresses (innermost first, the first is the pc)
 * to out; returns how many (0: nothing usable). now_ns: CLOCK_MONOTONIC.
 */
uint16_t unw_sample(struct unw *u, uint32_t tid, const uint8_t *regs, const uint8_t *stack,
                    size_t stack_len, uint64_t *out, uint16_t max, uint64_t now_ns);

/* Samples unwound / samples whose pc was in no module / ns spent in
 * unw_sample (module reports included), for stats. */
void unw_counts(const struct unw *u, uint64_t *unwound, uint64_t *failed, uint64_t *ns);

#endif
