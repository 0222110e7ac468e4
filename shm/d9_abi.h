/*
 * d9_abi.h — the shared-memory ABI between in-process agents and d9collectd.
 *
 * This file is the contract. Everything that crosses the process boundary is
 * described here: the region file layout, the per-thread ring header, the
 * record framing and the fixed layouts of the built-in events. Agents write
 * it, the collector reads it; the collector treats every byte as hostile.
 *
 * Region file: /dev/shm/d9.<uid>.<pid>.<starttime>, mode 0600, laid out as
 *
 *   [ d9_region_hdr, D9_REGION_HDR_SIZE bytes                      ]
 *   [ metadata log, meta_size bytes (runtimes, locations, schemas)  ]
 *   [ ring 0: d9_ring_hdr (D9_RING_HDR_SIZE) + ring_data_size bytes ]
 *   [ ring 1 ... ring_count-1                                       ]
 *
 * Invariants (checked by the consumer: shm/region.c on adoption, shm/ring.c
 * and collector/daemon/drain.c on every read):
 *   - every offset and size in the header lies inside region_size;
 *   - ring_data_size is a power of two in [D9_RING_DATA_MIN, D9_RING_DATA_MAX];
 *   - per ring, 0 <= head - tail <= ring_data_size; head and tail are byte
 *     counters that only grow (they never wrap in practice: 2^64 bytes);
 *   - records are 8-byte aligned, length-prefixed, never straddle the end of
 *     the ring data (a PAD record fills the gap to the end instead);
 *   - a record is visible only once the producer has release-stored head past it.
 *
 * Every integer is little-endian, native layout (the ABI is per host).
 * Changing any layout here means bumping D9_ABI_VERSION.
 */
#ifndef D9_ABI_H
#define D9_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>

#define D9_REGION_MAGIC      0x3130304d48533944ULL /* "D9SHM001" */
#define D9_ABI_VERSION       2u
#define D9_CACHELINE         64u
#define D9_REGION_HDR_SIZE   4096u
#define D9_RING_HDR_SIZE     256u
#define D9_REGION_PREFIX     "d9."          /* file name prefix under /dev/shm */
#define D9_SHM_DIR           "/dev/shm"

/* Ring geometry. DIAL9_RING_KB selects ring_data_size (rounded up to a power of two). */
#define D9_RING_KB_DEFAULT   1024u
#define D9_RING_DATA_MIN     (4u * 1024u)
#define D9_RING_DATA_MAX     (64u * 1024u * 1024u)
#define D9_RINGS_DEFAULT     64u            /* DIAL9_MAX_THREADS */
#define D9_RINGS_MAX         4096u
#define D9_META_SIZE_DEFAULT (256u * 1024u)
#define D9_META_SIZE_MAX     (16u * 1024u * 1024u)

/* Record framing. */
#define D9_REC_ALIGN         8u
#define D9_REC_HDR_SIZE      16u            /* sizeof(struct d9_rec_hdr) */
#define D9_PAD_MIN           8u             /* a PAD record may be as short as 8 bytes */
#define D9_REC_MAX           4096u          /* largest record, custom events included */
#define D9_STR_MAX           255u           /* custom-event string fields are cut to this */
#define D9_NAME_MAX          64u            /* runtime, schema and field names */
#define D9_COMM_MAX          16u            /* process and thread names (TASK_COMM_LEN) */
#define D9_EXE_MAX           256u           /* the executable's path, cut to this */

/* Clock sources (d9_region_hdr.clock_source). */
enum d9_clock_source {
    D9_CLOCK_MONOTONIC = 1,  /* ts is CLOCK_MONOTONIC ns already */
    D9_CLOCK_TSC = 2,        /* ts is rdtsc; convert with the calibration pairs */
};

/* d9_region_hdr.flags */
#define D9_REGION_F_BELL     1u     /* the agent's producers ring the doorbell (struct d9_bell) */
/* Added within ABI 2 (a collector that predates it ignores the bit): the
 * preload shim (agent/uv/noloop.c) found no loop it traces in this process;
 * the region has one ring, never claimed, and is CLOSED at creation. A
 * claim, not a fact: the collector honours it only for a region that
 * recorded nothing (collector/daemon/proc.c). */
#define D9_REGION_F_NOLOOP   2u

/* Region lifecycle (d9_region_hdr.state). */
enum d9_region_state {
    D9_REGION_INIT = 0,      /* being laid out by the agent; collector must wait */
    D9_REGION_READY = 1,     /* live */
    D9_REGION_CLOSED = 2,    /* the agent shut down cleanly (d9_shutdown / exit) */
};

/* Ring slot states (d9_ring_hdr.state). Transitions:
 *   FREE     -> CLAIMING  agent CAS at a thread's first event
 *   CLAIMING -> OWNED     agent release-store once tid/name/generation are written
 *   OWNED    -> RELEASED  agent release-store at thread exit
 *   RELEASED -> FREE      collector CAS after it drained the ring (head == tail)
 *   RELEASED -> CLAIMING  agent CAS, allowed only when head == tail (already drained)
 */
enum d9_ring_state {
    D9_RING_FREE = 0,
    D9_RING_CLAIMING = 1,
    D9_RING_OWNED = 2,
    D9_RING_RELEASED = 3,
};

struct d9_region_hdr {
    uint64_t magic;             /* D9_REGION_MAGIC */
    uint32_t abi_version;       /* D9_ABI_VERSION */
    uint32_t hdr_size;          /* D9_REGION_HDR_SIZE */
    uint64_t region_size;       /* total bytes of the file */
    uint64_t meta_offset;       /* == hdr_size */
    uint32_t meta_size;         /* bytes of metadata log area */
    uint32_t ring_count;
    uint64_t rings_offset;      /* == meta_offset + meta_size */
    uint32_t ring_data_size;    /* power of two */
    uint32_t ring_stride;       /* D9_RING_HDR_SIZE + ring_data_size */
    uint32_t pid;
    uint32_t uid;
    uint64_t start_time;        /* /proc/<pid>/stat field 22 (clock ticks since boot) */
    uint32_t clock_source;      /* enum d9_clock_source */
    uint32_t flags;             /* D9_REGION_F_*; other bits reserved, 0 */
    uint64_t created_ns;        /* CLOCK_MONOTONIC when the region was created */
    char comm[D9_COMM_MAX];     /* NUL-padded, may be unterminated: validate */
    char exe[D9_EXE_MAX];       /* readlink(/proc/self/exe), NUL-padded */

    /* Clock calibration, seqlock-protected (odd cal_seq = write in progress).
     * Pair 0 is taken at init, pair 1 refreshed ~1/s by the agent thread:
     * ns = ns0 + (tsc - tsc0) * (ns1 - ns0) / (tsc1 - tsc0). */
    _Atomic uint32_t cal_seq;
    uint32_t _pad0;
    uint64_t cal_tsc0, cal_ns0;
    uint64_t cal_tsc1, cal_ns1;

    _Atomic uint64_t heartbeat_ns;      /* CLOCK_MONOTONIC, refreshed ~1/s by the agent */
    _Atomic uint32_t state;             /* enum d9_region_state */
    _Atomic uint32_t threads_untraced;  /* threads that found no free ring */
    _Atomic uint32_t meta_head;         /* bytes committed in the metadata log (release) */
    _Atomic uint32_t meta_lost;         /* metadata entries that did not fit */
    _Atomic uint32_t ring_hint;         /* where the next claim starts looking */
    _Atomic uint32_t sampler;           /* enum d9_sampler_mode: in-process profiler state */

    /* Added within ABI 1 (the region is zero-filled at creation, so a
     * collector reads 0 = "none/unknown" from an agent that predates them). */
    _Atomic uint32_t exit_status;       /* D9_EXIT_*: how the process ended, 0 = unknown;
                                           written once by the agent at exit or fatal signal */
    uint32_t _pad1;
    _Atomic uint64_t lost_no_ring;      /* events of threads that had no ring (untraced),
                                           copied ~1/s by the agent's housekeeping thread */
    _Atomic uint32_t adopted;           /* D9_ADOPT_*: who is responsible for the file.
                                           0 = nobody yet; a collector stores COLLECTOR
                                           (seq_cst exchange) each time it adopts the
                                           region; the agent at clean exit CASes 0 ->
                                           ABANDONED (seq_cst) and only then unlinks the
                                           file: after a collector adopted it the file
                                           stays, so a restarted collector drains the tail */
    uint32_t _pad2;
};
/* d9_region_hdr.exit_status: the kind in the high bits, the value in the low byte. */
#define D9_EXIT_CODE         0x100u     /* | exit(3) status & 0xff */
#define D9_EXIT_SIGNAL       0x200u     /* | the fatal signal's number */
#define D9_EXIT_KIND_MASK    0xf00u
/* d9_region_hdr.adopted */
#define D9_ADOPT_NONE        0u
#define D9_ADOPT_COLLECTOR   0x4c4f4339u    /* "9COL": a collector adopted the region */
#define D9_ADOPT_ABANDONED   0x4d525239u    /* "9RRM": the agent removes it (no collector) */

/* Ring header: three cache lines, each with one writer. */
struct d9_ring_hdr {
    /* line 0 — slot: written by the agent while CLAIMING, read by the collector */
    _Atomic uint32_t state;     /* enum d9_ring_state */
    uint32_t tid;               /* gettid() of the owning thread */
    uint32_t generation;        /* bumped at every claim; identifies the owner */
    uint32_t _pad0;
    char thread_name[D9_COMM_MAX]; /* pthread name at claim, NUL-padded */
    uint8_t _pad1[D9_CACHELINE - 16 - D9_COMM_MAX];

    /* line 1 — producer: written only by the owning thread */
    _Atomic uint64_t head;      /* bytes ever written (release-stored after each record) */
    _Atomic uint64_t lost;      /* records dropped, every cause (each is a seq gap) */
    _Atomic uint64_t lost_mismatch; /* of lost: custom events whose values did not match
                                       their schema (type, count) or whose schema is bad */
    _Atomic uint64_t lost_too_big;  /* of lost: custom events larger than D9_REC_MAX */
    uint8_t _pad2[D9_CACHELINE - 32]; /* lost - lost_mismatch - lost_too_big: ring full */

    /* line 2 — consumer: written only by the collector */
    _Atomic uint64_t tail;      /* bytes ever consumed (release-stored after copying) */
    uint8_t _pad3[D9_CACHELINE - 8];

    uint8_t _reserved[D9_RING_HDR_SIZE - 3 * D9_CACHELINE];
};

/* Every ring record starts with this. len counts the whole record including
 * this header and is a multiple of 8. seq counts records per ring generation,
 * dropped ones included, so a gap in seq is exactly a drop. */
struct d9_rec_hdr {
    uint16_t len;
    uint16_t type;              /* enum d9_rec_type */
    uint32_t seq;
    uint64_t ts;                /* clock_source units in the ring; CLOCK_MONOTONIC ns in segments */
};

/* A PAD record fills the space from its position to the end of the ring data.
 * It has an 8-byte header only; its len always fits 16 bits because a pad is
 * written only when the gap to the end is smaller than the next record. */
struct d9_pad_hdr {
    uint16_t len;
    uint16_t type;              /* D9_REC_PAD */
    uint32_t _zero;
};

enum d9_rec_type {
    D9_REC_PAD = 0,
    D9_REC_POLL_START = 1,
    D9_REC_POLL_END = 2,
    D9_REC_WAKE = 3,
    D9_REC_WORKER_PARK = 4,
    D9_REC_WORKER_UNPARK = 5,
    D9_REC_TASK_SPAWN = 6,
    D9_REC_TASK_TERMINATE = 7,
    D9_REC_QUEUE_DEPTH = 8,
    D9_REC_CUSTOM = 9,
    D9_REC_CPU_SAMPLE = 10,     /* in-process fallback sampler (agent) or perf (collector) */
    D9_REC_SCHED_SWITCH = 11,   /* off-CPU sample, written by the collector from perf */
    D9_REC_TYPE_COUNT = 12,
};

/* Built-in record layouts (all sizes multiples of 8; checked by _Static_assert). */
struct d9_rec_poll_start {
    struct d9_rec_hdr h;
    uint64_t task;
    uint32_t loc;               /* spawn/poll location id from the metadata log, 0 = unknown */
    uint16_t runtime;
    uint16_t worker;
};
struct d9_rec_poll_end {
    struct d9_rec_hdr h;
    uint64_t task;
    uint16_t runtime;
    uint16_t worker;
    uint32_t _pad;
};
struct d9_rec_wake {
    struct d9_rec_hdr h;
    uint64_t waker;             /* task id of the waker, 0 = not a task */
    uint64_t wakee;
    uint16_t runtime;
    uint16_t target_worker;     /* D9_WORKER_NONE if unknown */
    uint32_t _pad;
};
struct d9_rec_worker {          /* WORKER_PARK and WORKER_UNPARK */
    struct d9_rec_hdr h;
    uint16_t runtime;
    uint16_t worker;
    uint32_t flags;             /* D9_WORKER_*; 0 = cpu_ns and sched_wait_ns were read */
    uint64_t cpu_ns;            /* thread CPU time: schedstat field 1 (sum_exec_runtime,
                                   current as of the thread's last tick or switch) */
    uint64_t sched_wait_ns;     /* run-queue wait (schedstat field 2) since the thread's
                                   previous sampled park/unpark record */
};
/* d9_rec_worker.flags. The agent reads schedstat at most once per
 * DIAL9_SCHED_SAMPLE_US per thread; the records in between carry this flag
 * and zeros, and their wait is counted in the next sampled record (the
 * counter is cumulative: no wait is lost, it is attributed coarser). */
#define D9_WORKER_UNSAMPLED  1u
struct d9_rec_task {            /* TASK_SPAWN and TASK_TERMINATE */
    struct d9_rec_hdr h;
    uint64_t task;
    uint32_t loc;               /* spawn location id (0 for terminate) */
    uint16_t runtime;
    uint16_t _pad;
};
struct d9_rec_queue_depth {
    struct d9_rec_hdr h;
    uint64_t depth;
    uint16_t runtime;
    uint16_t worker;            /* D9_WORKER_NONE = the runtime's global queue */
    uint32_t _pad;
};
/* CUSTOM: header, schema id, the task being polled, then the fields in
 * schema order:
 *   U64/I64/F64/BOOL: 8 bytes each; STR: uint32 byte length, bytes, zero pad to 8. */
struct d9_rec_custom {
    struct d9_rec_hdr h;
    uint32_t schema;            /* schema id from the metadata log */
    uint32_t payload_len;       /* bytes of field data that follow */
    uint64_t task;              /* the task whose poll the emitting thread was in (the
                                   innermost open one), D9_TASK_NONE outside polls */
    /* uint8_t payload[] */
};
#define D9_TASK_NONE         0u     /* no task: as a wake's waker, outside any poll */
/* CPU_SAMPLE / SCHED_SWITCH: header, then nframes instruction pointers,
 * innermost first. tid is the sampled thread (perf samples are written by the
 * collector into a per-process pseudo-thread block). */
struct d9_rec_stack {
    struct d9_rec_hdr h;
    uint32_t tid;
    uint16_t nframes;
    uint16_t flags;             /* D9_STACK_* */
    uint64_t weight;            /* ns represented: CPU_SAMPLE its period; SCHED_SWITCH the
                                   time off CPU x the switch sampling period */
    /* uint64_t ips[nframes] */
};
#define D9_STACK_MAX_FRAMES  127u
#define D9_STACK_KERNEL      1u     /* frames include kernel addresses */
#define D9_STACK_TRUNCATED   2u

#define D9_WORKER_NONE       0xffffu

_Static_assert(sizeof(struct d9_rec_hdr) == D9_REC_HDR_SIZE, "rec hdr");
_Static_assert(sizeof(struct d9_pad_hdr) == D9_PAD_MIN, "pad hdr");
_Static_assert(sizeof(struct d9_ring_hdr) == D9_RING_HDR_SIZE, "ring hdr");
_Static_assert(sizeof(struct d9_region_hdr) <= D9_REGION_HDR_SIZE, "region hdr");
/* the fields added within ABI 1 stay where the first agents' zero fill is */
_Static_assert(offsetof(struct d9_region_hdr, exit_status) == 432, "exit_status");
_Static_assert(offsetof(struct d9_region_hdr, lost_no_ring) == 440, "lost_no_ring");
_Static_assert(offsetof(struct d9_ring_hdr, lost) == 72, "ring lost");
_Static_assert(offsetof(struct d9_ring_hdr, lost_mismatch) == 80, "ring lost_mismatch");
_Static_assert(offsetof(struct d9_ring_hdr, lost_too_big) == 88, "ring lost_too_big");
_Static_assert(offsetof(struct d9_ring_hdr, tail) == 2 * D9_CACHELINE, "ring tail line");
_Static_assert(sizeof(struct d9_rec_poll_start) == 32, "poll start");
_Static_assert(sizeof(struct d9_rec_poll_end) == 32, "poll end");
_Static_assert(sizeof(struct d9_rec_wake) == 40, "wake");
_Static_assert(sizeof(struct d9_rec_worker) == 40, "worker");
_Static_assert(sizeof(struct d9_rec_task) == 32, "task");
_Static_assert(sizeof(struct d9_rec_queue_depth) == 32, "queue depth");
_Static_assert(sizeof(struct d9_rec_custom) == 32, "custom");
_Static_assert(sizeof(struct d9_rec_stack) == 32, "stack");

/* ---- Metadata log -------------------------------------------------------
 * An append-only area after the region header. The agent appends entries
 * under its own (slow-path) lock and release-stores meta_head; the collector
 * reads [0, meta_head). Ids are assigned by the agent, dense from 1 per kind.
 * Entry framing: */
struct d9_meta_hdr {
    uint16_t len;               /* whole entry, multiple of 8 */
    uint16_t kind;              /* enum d9_meta_kind */
    uint32_t id;
};
enum d9_meta_kind {
    D9_META_RUNTIME = 1,        /* payload: name, NUL-terminated */
    D9_META_LOCATION = 2,       /* payload: uint32 line, then file\0 func\0 */
    D9_META_SCHEMA = 3,         /* payload: uint16 nfields, uint16 0, name\0, then per field:
                                   uint8 type (enum d9_field_type), name\0 */
    D9_META_OBJECT = 4,         /* a loaded object's executable segment, published at
                                   d9_init and after dlopen so stacks symbolize even when
                                   the collector never saw the process alive:
                                   struct d9_meta_object, build_id_len bytes, path\0 */
};
struct d9_meta_object {
    uint64_t start, end;        /* the segment's addresses in the process */
    uint64_t pgoff;             /* file offset of start */
    uint8_t build_id_len;       /* 0..D9_BUILD_ID_MAX bytes of NT_GNU_BUILD_ID follow */
    uint8_t _zero[7];
};
#define D9_BUILD_ID_MAX      32u

/* A code location: a LOCATION entry whose file is D9_LOC_CODE_FILE, whose
 * line is 0 and whose func is the entry address of the code in the traced
 * process, "0x" and lower-case hex (D9_LOC_CODE_FUNC_MAX bytes with the NUL
 * at most). The agent resolves no symbol: readers name it out of process
 * from the collector's "d9.map" records, as they name CPU samples. A plain
 * convention on the LOCATION kind, so old readers still decode the entry. */
#define D9_LOC_CODE_FILE     "[code]"
#define D9_LOC_CODE_FUNC_MAX 19u            /* "0x" + 16 hex digits + NUL */
/* The ELF section that holds an agent's trampolines (the LD_PRELOAD shim's
 * uvwrap_t_*): code that only forwards to the program's callback. Readers
 * that name stack frames leave a frame in a section of this name out.
 * Named like a C identifier, so the linker defines __start_ and __stop_. */
#define D9_TRAMP_SECTION     "d9_tramp"
/* A trampoline's callback: a LOCATION entry whose file is D9_LOC_TRAMP_FILE,
 * whose func is the trampoline's entry address (as a code location's) and
 * whose line is the id of the code location (D9_LOC_CODE_FILE) of the
 * program's function it calls. Written once per trampoline, before the
 * trampoline is handed to the library; a trampoline calls one function for
 * the process's life (its slot is written once, agent/uv/cbslot.h). Readers
 * name a frame inside the trampoline as that function. */
#define D9_LOC_TRAMP_FILE    "[tramp]"
#define D9_LOC_TRAMP_SIZE_MAX 512u          /* bytes of code a reader ascribes to one */
enum d9_field_type {
    D9_FT_U64 = 1,
    D9_FT_I64 = 2,
    D9_FT_F64 = 3,
    D9_FT_BOOL = 4,
    D9_FT_STR = 5,
};
#define D9_SCHEMA_MAX_FIELDS 16u
_Static_assert(sizeof(struct d9_meta_hdr) == 8, "meta hdr");
_Static_assert(sizeof(struct d9_meta_object) == 32, "meta object");

/* ---- Doorbell -----------------------------------------------------------
 * Two cache lines at a fixed offset inside the region header's page, after
 * struct d9_region_hdr (which may grow up to D9_BELL_OFFSET). A producer
 * whose commit takes its ring past half full, and again past each further
 * quarter, rings: it adds 1 to word (seq_cst) and, if a collector listens,
 * makes one FUTEX_WAKE system call on word (never a wait: a producer never
 * blocks). The collector sleeps on the words of all its regions
 * (futex_waitv) besides its timer. A region of an agent that never rings
 * (all zero) is drained on the timer alone, so the line is additive: no
 * ABI version change. Everything here is hostile to the collector: word
 * only says "look now", and the collector rate-limits regions whose bell
 * rings without a filling ring behind it. */
#define D9_BELL_OFFSET       (D9_REGION_HDR_SIZE - 2u * D9_CACHELINE)
#define D9_BELL_LISTENING    0x4e4c4239u    /* "9BLN": listener value of a collector */
struct d9_bell {
    /* line 0 — producers: every ringing thread of the process */
    _Atomic uint32_t word;      /* futex word: + 1 per ring (seq_cst RMW) */
    uint32_t _pad0;
    uint8_t _pad1[D9_CACHELINE - 8];
    /* line 1 — the collector */
    _Atomic uint32_t listener;  /* D9_BELL_LISTENING: a collector sleeps on word, so a ring
                                   makes the wake-up call; anything else: only the add.
                                   Stored seq_cst by the collector, loaded seq_cst by the
                                   producer after its add (Dekker: either the producer
                                   sees the listener or the collector's futex_waitv sees
                                   the new word) */
    uint32_t _pad2;
    uint8_t _pad3[D9_CACHELINE - 8];
};
_Static_assert(sizeof(struct d9_bell) == 2u * D9_CACHELINE, "bell");
_Static_assert(sizeof(struct d9_region_hdr) <= D9_BELL_OFFSET, "region hdr leaves the bell alone");
_Static_assert(D9_BELL_OFFSET % D9_CACHELINE == 0, "bell lines are cache lines");

/* In-process sampler state (d9_region_hdr.sampler): the agent's SIGPROF
 * fallback profiler (agent/sampler.h) when the collector cannot perf. */
enum d9_sampler_mode {
    D9_SAMPLER_NONE = 0,
    D9_SAMPLER_PERF = 1,        /* the collector samples with perf_event_open */
    D9_SAMPLER_ITIMER = 2,      /* agent fallback: timer signal + frame-pointer walk */
};

#endif /* D9_ABI_H */
