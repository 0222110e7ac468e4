/*
 * perf.h — out-of-process CPU and off-CPU sampling of traced processes with
 * perf_event_open(2), done by d9collectd.
 *
 * For every thread of a process the collector opens up to two software
 * events on that thread (pid = tid, cpu = -1):
 *   - PERF_COUNT_SW_CPU_CLOCK at cfg.freq_hz (frequency mode): on-CPU samples,
 *     unless cfg.host_cpu says they come from per-CPU events (perf_host.h,
 *     the daemon's choice when it is permitted) through
 *     perf_proc_add_cpu_sample;
 *     each a user (+ kernel when allowed) callchain, weight = the sample
 *     period in ns. Written as D9_REC_CPU_SAMPLE.
 *   - PERF_COUNT_SW_CONTEXT_SWITCHES with sample_period = cfg.switch_period
 *     (1 in N switches sampled, with the callchain of the thread as it goes
 *     off CPU) plus context_switch records, so the collector sees when the
 *     thread comes back on CPU: weight = (switch-in time - switch-out time)
 *     x N in ns, the off-CPU time the sample stands for, as a CPU sample's
 *     weight is its period (perf_switch_weight; 0 when the switch-in was
 *     never seen: thread exited or records were lost). Written as
 *     D9_REC_SCHED_SWITCH.
 * The second event writes into the first one's mmap ring
 * (PERF_EVENT_IOC_SET_OUTPUT), so one ring per thread carries both in time
 * order. Timestamps use clockid CLOCK_MONOTONIC, the time base of segments,
 * so samples line up with agent events without conversion.
 *
 * New threads are found by rescanning /proc/<pid>/task at most every
 * cfg.rescan_ns (perf_proc_poll); threads that are gone are drained and
 * closed. Up to one rescan interval of a new thread's life is not sampled.
 *
 * Output: perf_proc_take() hands out records in ring framing (shm/d9_abi.h,
 * struct d9_rec_stack + ips, innermost first, PERF context markers removed),
 * ts in CLOCK_MONOTONIC ns, seq dense per perf_proc, for the daemon to append
 * as DATA blocks of the pseudo ring PERF_SEG_RING (generation 0, block tid =
 * pid) of the process's segment. The collector also writes the process's
 * memory map there (see sym.h, sym_maps_records) so d9 can symbolize.
 *
 * The perf ring is written by the kernel but treated as untrusted like shm:
 * every size, cursor and count is checked (perf_ring_walk, perf_parse_*);
 * a ring with corrupt framing is resynchronised (tail = head) and counted.
 *
 * Never: block, follow pointers read from the ring, or let a traced process
 * influence how much we read (bounded by the ring size we mapped).
 */
#ifndef D9_DAEMON_PERF_H
#define D9_DAEMON_PERF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/perf_event.h>
#include "shm/d9_abi.h"

/* Pseudo ring id of the collector-written blocks (perf samples, maps). */
#define PERF_SEG_RING               0xffffffffu
#define PERF_SEG_GENERATION         0u

/* Defaults (d9collectd options --perf-freq, --switch-period). */
#define PERF_FREQ_DEFAULT           99u
#define PERF_FREQ_MAX               10000u
/* Off-CPU sampling is opt-in: a context-switch event on a thread adds a
 * few microseconds to every switch of that thread (on a VM several times the
 * on-CPU profile's cost per sample; tests/bench/RESULTS.md); 16 is the
 * suggested value when wanted. */
#define PERF_SWITCH_PERIOD_DEFAULT  0u           /* off */
#define PERF_RING_PAGES_DEFAULT     32u          /* data pages per thread, power of two */
#define PERF_RING_PAGES_MAX         1024u        /* data pages per ring, at most */
#define PERF_RESCAN_NS_DEFAULT      200000000ull /* 200 ms */
#define PERF_THREADS_MAX            4096u

struct perf_config {
    uint32_t freq_hz;           /* 0 = no on-CPU sampling */
    uint32_t switch_period;     /* 0 = no off-CPU sampling */
    uint32_t ring_pages;        /* power of two, 1..1024 */
    uint64_t rescan_ns;         /* how often /proc/<pid>/task is rescanned */
    int host_cpu;               /* 1: on-CPU samples come from perf_host (per-CPU events,
                                   perf_proc_add_cpu_sample); no per-thread cpu-clock */
};

/*
 * --stack-mode: 1 = on-CPU samples (cpu-clock and tick events, not the
 * context-switch ones) also carry the user registers and a copy of the user
 * stack (PERF_DWARF_SAMPLE_BITS; unwind.h), unwound with DWARF CFI; the
 * result replaces the frame-pointer callchain's user part when it is
 * longer. 0 (the default here) = frame pointers only. Set once at start-up,
 * before any event is opened: it decides both how events are opened and how
 * their samples are parsed.
 */
void perf_set_stack_dwarf(int on);
int perf_stack_dwarf(void);
/* Bytes of user stack each dwarf sample copies (--stack-bytes), clamped to
 * [UNW_STACK_BYTES_MIN, UNW_STACK_BYTES_MAX] and rounded down to 8; default
 * UNW_STACK_BYTES. Set once at start-up, before any event is opened. */
void perf_set_stack_bytes(uint32_t bytes);
uint32_t perf_stack_bytes(void);

void perf_config_default(struct perf_config *c);

/*
 * Keep the kernel's callchain buffers allocated for the collector's whole
 * run. The kernel allocates them when the first event that samples
 * callchains opens and frees them when the last one closes; allocating them
 * takes milliseconds, which inside the drain loop, at every adoption while
 * no other traced process was being sampled, is as long as a busy 1 MiB ring
 * takes to fill. A disabled event on the collector itself
 * holds them. Returns its fd (close it at exit) or -errno (perf not
 * permitted: there is nothing to keep).
 */
int perf_callchain_keeper(void);

struct perf_stats {
    uint32_t threads;           /* threads with open events now */
    int kernel_frames;          /* 1 if kernel callchains are collected */
    uint64_t cpu_samples;       /* records produced */
    uint64_t switch_samples;
    uint64_t lost;              /* PERF_RECORD_LOST counts + samples we dropped */
    uint64_t bad;               /* malformed perf records / ring resyncs */
    uint64_t dwarf_unwound;     /* samples unwound with DWARF CFI (--stack-mode dwarf) */
    uint64_t dwarf_failed;      /* samples whose pc was in no known object */
    uint64_t dwarf_ns;          /* collector time spent unwinding them (CLOCK_MONOTONIC) */
    uint64_t open_errors;       /* threads we failed to open (other than vanished), e.g.
                                   -EMFILE: RLIMIT_NOFILE minus a reserve for the collector */
    uint32_t ring_kib;          /* the smallest thread's ring (data pages), KiB; 0: none */
};

struct perf_proc;

/*
 * Start sampling every thread of pid. Errors: -EACCES / -EPERM when perf is
 * not allowed (perf_event_paranoid, ptrace scope, seccomp: the caller reports
 * sampler "none" and leaves the fallback to the agent), -ESRCH the process is
 * gone, -ENOSYS no perf_event_open, -EINVAL bad config, -ENOMEM.
 */
int perf_proc_open(struct perf_proc **out, uint32_t pid, const struct perf_config *cfg);

/*
 * Add an on-CPU sample read by perf_host (cfg.host_cpu) whose pid is p's.
 * Returns 0, -ENOBUFS (pending limit: counted lost) or -ENOMEM.
 */
struct perf_sample;
int perf_proc_add_cpu_sample(struct perf_proc *p, const struct perf_sample *s);
/* Stop and free (pending off-CPU samples are discarded: call take first). */
void perf_proc_close(struct perf_proc *p);

/*
 * Rescan threads if cfg.rescan_ns elapsed since the last scan (or force),
 * then parse every thread's ring into the pending list. now_ns is
 * CLOCK_MONOTONIC. Returns the number of records pending, or a negative errno
 * (only -ENOMEM; per-thread problems are counted in stats).
 */
long perf_proc_poll(struct perf_proc *p, uint64_t now_ns, int force_rescan);

/*
 * Move whole pending records (sorted by ts) into out[0, cap). Returns bytes
 * written; 0 when nothing is pending. *lost (may be NULL) gets the samples
 * lost since the previous take, for the DATA block header.
 */
size_t perf_proc_take(struct perf_proc *p, uint8_t *out, size_t cap, uint64_t *lost);

void perf_proc_stats(const struct perf_proc *p, struct perf_stats *out);

/* ---- shared with perf_host.c --------------------------------------------- */
/*
 * Open one of d9's sampling events on (pid, cpu): cpu_clock 1 =
 * PERF_COUNT_SW_CPU_CLOCK at freq_hz (frequency mode), 0 =
 * PERF_COUNT_SW_CONTEXT_SWITCHES, 1 in switch_period, with context_switch
 * records; PERF_D9_SAMPLE_TYPE (cpu-clock) or PERF_TICK_SAMPLE_TYPE
 * (switches: a fixed period) on CLOCK_MONOTONIC, kernel frames if
 * *kernel, at most D9_STACK_MAX_FRAMES frames if *max_stack, the idle task
 * excluded if exclude_idle. When refused, gives up kernel frames
 * (EACCES/EPERM, only if may_drop_kernel) and then sample_max_stack
 * (EINVAL), and writes what was given up back so that the next opens start
 * there. Returns the fd (close-on-exec), -EMFILE when it would eat the
 * descriptors kept for segments, SQLite and sockets, or -errno.
 */
int perf_open_event(int cpu_clock, uint32_t freq_hz, uint32_t switch_period, int exclude_idle,
                    pid_t pid, int cpu, int may_drop_kernel, int *kernel, int *max_stack);

/*
 * Open a sampling event on tracepoint tp_id (1 in period hits) on (pid, cpu)
 * with the tracepoint filter (NULL: none), PERF_TICK_SAMPLE_TYPE on
 * CLOCK_MONOTONIC (opened enabled). *kernel here means the kernel part of the callchain (the
 * event itself is always in the kernel); degradations as perf_open_event.
 * Returns the fd or -errno (-EINVAL also for a filter the kernel refused).
 */
int perf_open_tracepoint(uint64_t tp_id, uint64_t period, const char *filter, pid_t pid,
                         int cpu, int may_drop_kernel, int *kernel, int *max_stack);

/* The weight of a sampled context switch: the thread's time off CPU times
 * the sampling period (1 in switch_period switches is sampled, so each
 * stands for switch_period of them; 0 is taken as 1), saturating. */
uint64_t perf_switch_weight(uint64_t off_ns, uint32_t switch_period);

/* ---- pure parsers (exposed for unit tests and fuzzing) ------------------- */

/* The sample_type both events use; record layouts below follow from it. */
#define PERF_D9_SAMPLE_TYPE  (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
                              PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)
/* The events with a fixed period (the tracepoint events of
 * perf_open_tracepoint, the context-switch events) leave PERF_SAMPLE_PERIOD
 * out: with it and a fixed sample_period the kernel takes a software event's
 * sample at (nearly) every hit and reports the hits as the period, so "1
 * tick in 3" sampled every tick (measured: 240 samples a second of a busy
 * CPU at HZ = 250, 80 without it), and "1 switch in 16" nearly every
 * switch. The caller knows the period anyway. A per-thread ring holds both
 * layouts: the reader picks one by the sample's identifier. */
#define PERF_TICK_SAMPLE_TYPE (PERF_D9_SAMPLE_TYPE & ~(uint64_t)PERF_SAMPLE_PERIOD)
/* Added to either by --stack-mode dwarf (perf_set_stack_dwarf). */
#define PERF_DWARF_SAMPLE_BITS ((uint64_t)(PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER))
#define PERF_REC_SCRATCH     65536u  /* perf_event_header.size is 16 bits */

/*
 * Walk records in the perf data area data[0, size) (size a power of two)
 * between tail and head, calling fn for each (a record that wraps is copied
 * into scratch, PERF_REC_SCRATCH bytes). fn returns 0 to continue. Returns 0
 * and *new_tail = head when all were consumed; -EBADMSG on bad cursors
 * (head - tail > size) or framing (size < 8, not 8-aligned, past head) with
 * *new_tail = the end of the last good record; a non-zero fn result stops
 * the walk and is returned (*new_tail past the records fn accepted).
 */
typedef int (*perf_rec_fn)(void *ctx, const struct perf_event_header *h,
                           const uint8_t *rec, size_t len);
int perf_ring_walk(const uint8_t *data, uint64_t size, uint64_t tail, uint64_t head,
                   uint8_t *scratch, perf_rec_fn fn, void *ctx, uint64_t *new_tail);
/*
 * Walk a mapped perf ring (base: the perf_event_mmap_page, the data page_size
 * bytes after it, size bytes of data) from data_tail to data_head with
 * perf_ring_walk, then hand the space back: data_tail moves to the last
 * record fn accepted, or to data_head after corrupt framing (-EBADMSG: the
 * caller counts it). Returns perf_ring_walk's result (0 when empty).
 */
int perf_ring_consume(uint8_t *base, size_t page_size, uint64_t size, uint8_t *scratch,
                      perf_rec_fn fn, void *ctx);

/* A PERF_RECORD_SAMPLE in PERF_D9_SAMPLE_TYPE layout; ips points into rec. */
struct perf_sample {
    uint64_t id;
    uint32_t pid, tid;
    uint64_t time;
    uint64_t period;
    uint64_t nr;                /* raw callchain entries (markers included) */
    const uint8_t *ips;         /* nr unaligned u64s */
    /* with PERF_DWARF_SAMPLE_BITS only (else NULL / 0): */
    const uint8_t *regs;        /* UNW_REGS_N unaligned u64s, NULL when the abi is NONE */
    const uint8_t *stack;       /* user stack copy from SP */
    uint64_t stack_len;         /* its valid bytes (dyn_size) */
};
/* 0 or -EBADMSG when the record is shorter than its fields say. */
int perf_parse_sample(const uint8_t *rec, size_t len, struct perf_sample *s);
/* The same for a sample of sample_type PERF_D9_SAMPLE_TYPE or
 * PERF_TICK_SAMPLE_TYPE (period 0: not in the record), either possibly with
 * PERF_DWARF_SAMPLE_BITS (regs UNW_REGS_MASK); -EINVAL for others. */
int perf_parse_sample_as(const uint8_t *rec, size_t len, uint64_t sample_type,
                         struct perf_sample *s);

/* PERF_RECORD_LOST: header, u64 id, u64 lost, sample_id. *lost gets the
 * count; 0 or -EBADMSG when the record is too short. */
int perf_parse_lost(const uint8_t *rec, size_t len, uint64_t *lost);

/* sample_id trailer of non-sample records (sample_id_all=1). */
struct perf_sample_id {
    uint32_t pid, tid;
    uint64_t time;
    uint64_t id;
};
int perf_parse_sample_id(const uint8_t *rec, size_t len, struct perf_sample_id *s);

/*
 * Convert a raw callchain into d9 frames (innermost first, context markers
 * dropped, at most max frames). Returns the frame count; *flags gets
 * D9_STACK_KERNEL when kernel frames were kept and D9_STACK_TRUNCATED when
 * frames were cut.
 */
uint16_t perf_callchain_to_frames(const uint8_t *ips, uint64_t nr, uint64_t *out, uint16_t max,
                                  uint16_t *flags);

#endif /* D9_DAEMON_PERF_H */
