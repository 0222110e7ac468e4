/*
 * d9.h — the d9 agent: runtime telemetry for C programs, recorded into
 * per-thread shared-memory rings and drained by d9collectd out of process.
 *
 * This is the only public header. Link with libd9agent (pkg-config d9agent).
 * It compiles as C11 and as C++11 or later (gcc, clang), with the same
 * functions, macros and meaning in both.
 *
 *   d9_init();                                   // reads DIAL9_* from the environment
 *                                                // (d9_init_with: the program's own settings)
 *   d9_runtime rt;  d9_runtime_register("http", &rt);
 *   d9_task_spawn(rt, task_id, D9_LOC());
 *   d9_poll_start(rt, worker, task_id, D9_LOC());
 *   ...                                          // the task runs
 *   d9_poll_end(rt, worker, task_id);
 *
 * Guarantees:
 *   - Record functions (d9_poll_*, d9_wake, d9_task_*, d9_queue_depth,
 *     d9_emit) take no locks, make no syscalls and allocate nothing, except on
 *     a thread's first event, which claims a ring. They never block: when the
 *     ring is full the event is dropped and counted. They never change
 *     errno (the first event's ring claim and park/unpark's schedstat read
 *     put it back), so a wrapper may call them around a library call.
 *   - d9_worker_park/unpark additionally record the thread's CPU time and
 *     its run-queue wait from the kernel's schedstat, read with one pread on
 *     a cached fd at most once per DIAL9_SCHED_SAMPLE_US per thread; the
 *     calls in between make no syscall (one vDSO clock read) and mark their
 *     record unsampled, and the wait they saw is counted in the next sampled
 *     record. They are meant for the moment a worker goes to sleep or wakes up.
 *   - Nothing here ever aborts or fails the application: with bad DIAL9_*
 *     values the agent logs one line to stderr and stays disabled.
 *   - When disabled every record function is one predictable branch. Compiled
 *     with -DD9_DISABLE every function of this header is an inline stub that
 *     says "off" (see D9_OFF): the calls vanish and nothing needs linking.
 *   - Record functions are thread-safe (each thread writes its own ring) but
 *     not async-signal-safe: do not call them from a signal handler that may
 *     interrupt a record call of the same thread. Events recorded after
 *     d9_shutdown are discarded.
 *   - A thread's ring is released when the thread exits. A thread that finds
 *     no free ring (DIAL9_MAX_THREADS) stays untraced, is counted once in
 *     threads_untraced and retries only every 65536 events.
 *   - fork(): the child never writes to the parent's region. On its first
 *     event or registration it gets a region of its own (its pid), in which
 *     the runtime, location and schema ids obtained before the fork stay
 *     valid; a child that records nothing (e.g. fork + exec) creates none.
 *   - Timestamps: rdtsc where the TSC is invariant (calibration pairs in the
 *     region header, refreshed about once a second), CLOCK_MONOTONIC otherwise.
 *
 * Environment (read by d9_init, and by d9_init_with for the fields it leaves
 * unset; the one list of every setting: docs/agent.md's table repeats it and
 * tests/integration/test_docs.sh checks both against the variables the agent
 * reads. An unset or empty variable means its default; any other bad value
 * keeps tracing off with one line on stderr, except the DIAL9_SAMPLER* ones,
 * which only turn the in-process sampler off):
 *   DIAL9_ENABLED      1/0, true/false, yes/no, on/off (default 1 once d9_init is called)
 *   DIAL9_RING_KB      per-thread ring size in KiB, 4..65536 (default 1024; rounded up to 2^n)
 *   DIAL9_MAX_THREADS  rings per process, 1..4096 (default 64); more threads go untraced (counted)
 *   DIAL9_COLLECTOR    collector control endpoint (default ipc:///run/dial9/collector.sock,
 *                      or ipc://$XDG_RUNTIME_DIR/dial9/collector.sock when not root,
 *                      ipc:///tmp/dial9-<uid>/collector.sock without XDG_RUNTIME_DIR);
 *                      "none": no control channel (the collector still finds the
 *                      region by scanning DIAL9_SHM_DIR)
 *   DIAL9_RUNTIME_NAME name of the default runtime (default: the program's comm)
 *   DIAL9_SHM_DIR      where regions are created (default /dev/shm; for tests)
 *   DIAL9_SHM_CAP_MB   0..16777216 (default 1024; 0 = no cap): d9_init creates no
 *                      region (one stderr line, the program runs untraced) while this
 *                      user's regions that no collector drains use this many MiB of
 *                      DIAL9_SHM_DIR. At a clean exit a region no collector adopted is
 *                      removed when no collector answers at DIAL9_COLLECTOR
 *   DIAL9_CLOCK        auto (default: the TSC where it is invariant, else CLOCK_MONOTONIC)
 *                      or monotonic (always CLOCK_MONOTONIC through the vDSO, ~10-20 ns
 *                      more per event; for hosts whose TSC is not trusted)
 *   DIAL9_SCHED_SAMPLE_US  park/unpark read schedstat at most once per this many
 *                      microseconds per thread, 0..60000000 (default 1000; 0 = at
 *                      every park/unpark, a per-wake-up delay at ~0.3-1 us each)
 *   DIAL9_SAMPLER      in-process CPU sampler, the fallback when the collector cannot
 *                      profile with perf: auto (default: wait for the collector to
 *                      take over, else sample in-process), itimer, perf (never
 *                      in-process), off
 *   DIAL9_SAMPLER_HZ   the in-process sampler's rate, 1..1000 (default 99)
 *   DIAL9_SAMPLER_WAIT_MS  with DIAL9_SAMPLER=auto, how long to wait for the collector
 *                      to take over before sampling in-process (default 3000)
 *   DIAL9_LOG          set, not empty and not 0: diagnostic lines on stderr, e.g. why
 *                      the control channel could not open (default unset: none)
 *   DIAL9_ZMQ_LIB      the file loaded for the control channel (default libzmq.so.5;
 *                      libzmq is loaded with dlopen when the channel opens, never
 *                      linked; without it the agent records without the channel)
 *
 * Stacks (d9 flame, CPU and off-CPU profiles) are walked by frame pointers:
 * build the program (and the libraries whose frames you want) with
 * -fno-omit-frame-pointer, or stacks stop at the first frame without one.
 *
 * A private instance (tests, containers, several stores on one host): the
 * traced program needs the collector's --shm-dir as DIAL9_SHM_DIR and its
 * --endpoint as DIAL9_COLLECTOR (or "none"), and d9 needs --store (or
 * D9_STORE) and, for status/flush, --endpoint.
 */
#ifndef D9_H
#define D9_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The functions libd9agent exports. The library is built with
 * -fvisibility=hidden, so these and nothing else are its ABI. */
#if defined(__GNUC__) || defined(__clang__)
#define D9_API __attribute__((visibility("default")))
#else
#define D9_API
#endif

/* A runtime (an executor, a thread pool, an event loop). Several per process. */
typedef struct d9_runtime {
    uint16_t id;                /* 0 = not registered: events are discarded */
} d9_runtime;

/* A source location id (see D9_LOC). 0 = unknown. */
typedef uint32_t d9_loc;

#define D9_WORKER_NONE_ID 0xffffu   /* "no worker" / the global queue */

/* Return values. Errors are negative errno values. "Tracing is off" is not
 * an error: with DIAL9_ENABLED=0 or compiled with -DD9_DISABLE, d9_init and
 * d9_runtime_register return D9_OFF (d9_runtime_register also after
 * d9_shutdown), every id handed out is 0 and every record function is a no-op. So `if (rc < 0)` tests
 * for failure; a program never needs to treat "off" specially. */
#define D9_OFF 1

#ifndef D9_DISABLE

/* Initialise from the environment. Idempotent and thread-safe. Returns 0 when
 * tracing is on, D9_OFF when it is off by configuration, or a negative errno
 * when it could not be started (logged once; the application runs untraced):
 * -EINVAL bad DIAL9_* value, -errno of the region creation (e.g. -ENOENT for
 * a missing DIAL9_SHM_DIR), -ESHUTDOWN when called again after d9_shutdown. */
D9_API int d9_init(void);

#endif /* D9_DISABLE */

/* ---- programmatic configuration ---------------------------------------------
 * d9_init_with() starts the agent from the program's own settings: the same
 * settings as the DIAL9_* variables, one field each. Start from
 * D9_CONFIG_INIT (every field unset) and set what the program decides:
 *
 *   d9_config cfg = D9_CONFIG_INIT;
 *   cfg.runtime_name = "http";
 *   cfg.ring_kb = 4096;
 *   d9_init_with(&cfg);
 *
 * Precedence, field by field: a field the program set wins over its DIAL9_*
 * variable; a field left unset (D9_UNSET, or NULL for strings) is taken from
 * the variable, else from the default, exactly as d9_init() would. With
 * D9_CONFIG_NO_ENV in flags no DIAL9_* variable is read at all (unset fields
 * get their defaults). enabled = 0 keeps the program untraced whatever its
 * environment says: nothing else is read or checked, and d9_init_with
 * returns D9_OFF. enabled = 1 traces even under DIAL9_ENABLED=0.
 *
 * Values are checked as the variables are (same syntax and ranges; "" means
 * the default); a bad one keeps tracing off with one line on stderr that
 * names the variable and the field. The same no-fail guarantees as d9_init.
 */
#define D9_UNSET (-1)               /* a numeric field not set by the program */
#define D9_CONFIG_NO_ENV 0x1u       /* flags: ignore every DIAL9_* variable */

typedef struct d9_config {
    uint32_t size;              /* sizeof(d9_config): set by D9_CONFIG_INIT */
    uint32_t flags;             /* D9_CONFIG_NO_ENV or 0 */
    int enabled;                /* DIAL9_ENABLED: 1, 0 (untraced, whatever the
                                   environment says) or D9_UNSET */
    long ring_kb;               /* DIAL9_RING_KB */
    long max_threads;           /* DIAL9_MAX_THREADS */
    const char *collector;      /* DIAL9_COLLECTOR: an endpoint or "none" */
    const char *runtime_name;   /* DIAL9_RUNTIME_NAME */
    const char *shm_dir;        /* DIAL9_SHM_DIR */
    const char *clock;          /* DIAL9_CLOCK: "auto" or "monotonic" */
    long sched_sample_us;       /* DIAL9_SCHED_SAMPLE_US */
    const char *sampler;        /* DIAL9_SAMPLER: "auto", "itimer", "perf" or "off" */
    long sampler_hz;            /* DIAL9_SAMPLER_HZ */
    long sampler_wait_ms;       /* DIAL9_SAMPLER_WAIT_MS */
} d9_config;

/* Every field unset: d9_init_with(&(d9_config)D9_CONFIG_INIT) is d9_init(). */
#define D9_CONFIG_INIT { (uint32_t)sizeof(d9_config), 0u, D9_UNSET, D9_UNSET, D9_UNSET, \
                         NULL, NULL, NULL, NULL, D9_UNSET, NULL, D9_UNSET, D9_UNSET }

#ifndef D9_DISABLE

/* Initialise from config merged with the environment (above); NULL is
 * d9_init(). Returns what d9_init returns, and -EINVAL for a bad field or a
 * size other than sizeof(d9_config) (a program built against another d9.h).
 * Only the first initialisation of a process configures the agent: a later
 * call, with any config, returns the first one's result. */
D9_API int d9_init_with(const d9_config *config);

/* Flush state, mark the region closed and say goodbye to the collector.
 * Registered with atexit() by d9_init; calling it twice is harmless. */
D9_API void d9_shutdown(void);

/* 1 if events are being recorded. */
D9_API int d9_enabled(void);

/* Register a runtime by name; the same name gives the same id. The default
 * runtime is registered under DIAL9_RUNTIME_NAME (default: the program's
 * comm), so registering that name returns the default runtime's id: one
 * name, one runtime. Returns 0, D9_OFF (tracing off: *rt gets id 0, its
 * records are discarded), -EINVAL (bad name or rt NULL), -ENOSPC (too many). */
D9_API int d9_runtime_register(const char *name, d9_runtime *rt);

/* The default runtime named by DIAL9_RUNTIME_NAME (id 0 when tracing is off). */
D9_API d9_runtime d9_runtime_default(void);

/* Register a source location; returns its id (0 when tracing is off).
 * Idempotent: the same (file, line, func) returns the same id. Takes a lock:
 * use D9_LOC(), which calls it once per call site. */
D9_API d9_loc d9_loc_register(const char *file, int line, const char *func);

/* Register a location whose identity is a code address (a callback's entry
 * point, for instrumentation that knows functions by address only). Nothing
 * is resolved in the process: the address is published as a code location
 * (D9_LOC_CODE_FILE in shm/d9_abi.h) and d9 names it "library+offset
 * function" out of process from the collector's map snapshots.
 * Idempotent per address; takes a lock: call it once per address and cache
 * the id. 0 when tracing is off or addr is NULL. */
D9_API d9_loc d9_loc_register_code(const void *addr);

#else /* D9_DISABLE: tracing is off at compile time; nothing to link */

static inline int d9_init(void) { return D9_OFF; }
static inline int d9_init_with(const d9_config *config) { (void)config; return D9_OFF; }
static inline void d9_shutdown(void) {}
static inline int d9_enabled(void) { return 0; }
static inline int d9_runtime_register(const char *name, d9_runtime *rt)
{ (void)name; if (rt) rt->id = 0; return D9_OFF; }
static inline d9_runtime d9_runtime_default(void) { d9_runtime rt = { 0 }; return rt; }
static inline d9_loc d9_loc_register(const char *file, int line, const char *func)
{ (void)file; (void)line; (void)func; return 0; }
static inline d9_loc d9_loc_register_code(const void *addr) { (void)addr; return 0; }

#endif /* D9_DISABLE */

/* The location of the calling line, registered on first use and cached. */
#define D9_LOC() (__extension__({                                            \
        static d9_loc d9_loc_id_;                                           \
        d9_loc d9_l_ = __atomic_load_n(&d9_loc_id_, __ATOMIC_RELAXED);      \
        if (__builtin_expect(d9_l_ == 0, 0)) {                              \
            d9_l_ = d9_loc_register(__FILE__, __LINE__, __func__);          \
            __atomic_store_n(&d9_loc_id_, d9_l_, __ATOMIC_RELAXED);         \
        }                                                                   \
        d9_l_; }))

/* ---- custom events -------------------------------------------------------
 * Define a schema once at file scope, then emit values in field order:
 *
 *   D9_SCHEMA(http_req, "http_request",
 *             D9_FIELD_STR("path"), D9_FIELD_U64("status"), D9_FIELD_F64("ms"));
 *   ...
 *   d9_emit(&http_req, D9_STR(path), D9_U64(200), D9_F64(1.5));
 *
 * The schema (name, field names and types) is published in the region the
 * first time it is used, so the collector and d9 decode events without the
 * application's source. Up to 16 fields; strings are cut to 255 bytes.
 */
#define D9_TRIGGER_SCHEMA "d9_trigger"   /* reserved: d9_trigger's markers */
enum d9_type { D9_T_U64 = 1, D9_T_I64 = 2, D9_T_F64 = 3, D9_T_BOOL = 4, D9_T_STR = 5 };

typedef struct d9_field { const char *name; enum d9_type type; } d9_field;

typedef struct d9_schema {
    const char *name;
    const d9_field *fields;
    uint16_t nfields;
    uint32_t id;                /* assigned on first use; 0 = not yet published */
} d9_schema;

typedef struct d9_value {
    enum d9_type type;
    union { uint64_t u; int64_t i; double f; const char *s; } v;
} d9_value;

#define D9_FIELD_U64(n)  { (n), D9_T_U64 }
#define D9_FIELD_I64(n)  { (n), D9_T_I64 }
#define D9_FIELD_F64(n)  { (n), D9_T_F64 }
#define D9_FIELD_BOOL(n) { (n), D9_T_BOOL }
#define D9_FIELD_STR(n)  { (n), D9_T_STR }

#define D9_SCHEMA(var, name_, ...)                                           \
    static const d9_field var##_d9_fields_[] = { __VA_ARGS__ };             \
    static d9_schema var = { (name_), var##_d9_fields_,                     \
        (uint16_t)(sizeof(var##_d9_fields_) / sizeof(var##_d9_fields_[0])), 0 }

/* Values of a custom event, one macro per field type. Emit one event with
 * d9_emit. Values must match the schema's types in order (a mismatch drops
 * the event and counts it as lost, cause "type mismatch"; D9_EVENT below
 * makes the compiler check them). Returns nothing: never fails the app.
 * An event emitted inside a poll (between d9_poll_start and d9_poll_end on
 * the same thread; the innermost when nested) records that poll's task, so
 * `d9 events` and the event's `d9 sql` table show which task it served;
 * outside polls, and for task id 0, it records none. */
#ifndef __cplusplus

#define D9_U64(x)  ((d9_value){ .type = D9_T_U64, .v.u = (uint64_t)(x) })
#define D9_I64(x)  ((d9_value){ .type = D9_T_I64, .v.i = (int64_t)(x) })
#define D9_F64(x)  ((d9_value){ .type = D9_T_F64, .v.f = (double)(x) })
#define D9_BOOL(x) ((d9_value){ .type = D9_T_BOOL, .v.u = (x) ? 1u : 0u })
#define D9_STR(x)  ((d9_value){ .type = D9_T_STR, .v.s = (x) })

#define d9_emit(schema, ...)                                                 \
    d9_emit_values((schema), (const d9_value[]){ __VA_ARGS__ },             \
        (unsigned)(sizeof((d9_value[]){ __VA_ARGS__ }) / sizeof(d9_value)))

#else /* C++ has neither compound literals nor nested designators: the same
       * values from inline functions, d9_emit's array a lambda's local */

static inline d9_value d9_value_u_(enum d9_type t, uint64_t u)
{ d9_value v = {}; v.type = t; v.v.u = u; return v; }
static inline d9_value d9_value_i_(int64_t i)
{ d9_value v = {}; v.type = D9_T_I64; v.v.i = i; return v; }
static inline d9_value d9_value_f_(double f)
{ d9_value v = {}; v.type = D9_T_F64; v.v.f = f; return v; }
static inline d9_value d9_value_s_(const char *s)
{ d9_value v = {}; v.type = D9_T_STR; v.v.s = s; return v; }

#define D9_U64(x)  d9_value_u_(D9_T_U64, (uint64_t)(x))
#define D9_I64(x)  d9_value_i_((int64_t)(x))
#define D9_F64(x)  d9_value_f_((double)(x))
#define D9_BOOL(x) d9_value_u_(D9_T_BOOL, (x) ? 1u : 0u)
#define D9_STR(x)  d9_value_s_((x))

#define d9_emit(schema, ...) ([&]() {                                        \
        const d9_value d9_v_[] = { __VA_ARGS__ };                           \
        d9_emit_values((schema), d9_v_, (unsigned)(sizeof d9_v_ / sizeof d9_v_[0])); }())

#endif /* __cplusplus */

/* ---- typed custom events ---------------------------------------------------
 * Declare an event once at file scope with its fields as (TYPE, name) pairs,
 * TYPE one of U64, I64, F64, BOOL, STR (1..16 fields):
 *
 *   D9_EVENT(http_req, "http_request", (STR, path), (U64, status), (F64, ms));
 *   ...
 *   http_req_emit(path, 200, 1.5);
 *
 * This defines the schema http_req (exactly as D9_SCHEMA would; d9_emit works
 * on it too) and static inline void http_req_emit(const char *path,
 * uint64_t status, double ms). Its parameters have the fields' C types
 * (D9_CTYPE_*), so the compiler checks every call: a missing or extra
 * argument, or a pointer for a number, does not compile (add -Wconversion
 * to have narrowing reported too), and the values always match the schema.
 * D9_SCHEMA/d9_emit stay for events whose shape is known only at run time.
 */
#define D9_CTYPE_U64  uint64_t
#define D9_CTYPE_I64  int64_t
#define D9_CTYPE_F64  double
#define D9_CTYPE_STR  const char *
#ifdef __cplusplus
#define D9_CTYPE_BOOL bool
#else
#define D9_CTYPE_BOOL _Bool
#endif

#define D9_EV_CAT_(a, b)     D9_EV_CAT_I_(a, b)
#define D9_EV_CAT_I_(a, b)   a##b
#define D9_EV_APPLY_(m, p)   m p
#define D9_EV_FIELD_(t, n)   D9_FIELD_##t(#n)
#define D9_EV_PARAM_(t, n)   D9_CTYPE_##t n
#define D9_EV_VALUE_(t, n)   D9_##t(n)
#define D9_EV_N_(...) D9_EV_N_I_(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, \
                                 4, 3, 2, 1, 0)
#define D9_EV_N_I_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, \
                   a16, n, ...) n
#define D9_EV_MAP_(m, ...) D9_EV_CAT_(D9_EV_MAP_, D9_EV_N_(__VA_ARGS__))(m, __VA_ARGS__)
#define D9_EV_MAP_1(m, a)       D9_EV_APPLY_(m, a)
#define D9_EV_MAP_2(m, a, ...)  D9_EV_APPLY_(m, a), D9_EV_MAP_1(m, __VA_ARGS__)
#define D9_EV_MAP_3(m, a, ...)  D9_EV_APPLY_(m, a), D9_EV_MAP_2(m, __VA_ARGS__)
#define D9_EV_MAP_4(m, a, ...)  D9_EV_APPLY_(m, a), D9_EV_MAP_3(m, __VA_ARGS__)
#define D9_EV_MAP_5(m, a, ...)  D9_EV_APPLY_(m, a), D9_EV_MAP_4(m, __VA_ARGS__)
#define D9_EV_MAP_6(m, a, ...)  D9_EV_APPLY_(m, a), D9_EV_MAP_5(m, __VA_ARGS__)
#define D9_EV_MAP_7(m, a, ...)  D9_EV_APPLY_(m, a), D9_EV_MAP_6(m, __VA_ARGS__)
#define D9_EV_MAP_8(m, a, ...)  D9_EV_APPLY_(m, a), D9_EV_MAP_7(m, __VA_ARGS__)
#define D9_EV_MAP_9(m, a, ...)  D9_EV_APPLY_(m, a), D9_EV_MAP_8(m, __VA_ARGS__)
#define D9_EV_MAP_10(m, a, ...) D9_EV_APPLY_(m, a), D9_EV_MAP_9(m, __VA_ARGS__)
#define D9_EV_MAP_11(m, a, ...) D9_EV_APPLY_(m, a), D9_EV_MAP_10(m, __VA_ARGS__)
#define D9_EV_MAP_12(m, a, ...) D9_EV_APPLY_(m, a), D9_EV_MAP_11(m, __VA_ARGS__)
#define D9_EV_MAP_13(m, a, ...) D9_EV_APPLY_(m, a), D9_EV_MAP_12(m, __VA_ARGS__)
#define D9_EV_MAP_14(m, a, ...) D9_EV_APPLY_(m, a), D9_EV_MAP_13(m, __VA_ARGS__)
#define D9_EV_MAP_15(m, a, ...) D9_EV_APPLY_(m, a), D9_EV_MAP_14(m, __VA_ARGS__)
#define D9_EV_MAP_16(m, a, ...) D9_EV_APPLY_(m, a), D9_EV_MAP_15(m, __VA_ARGS__)

#define D9_EVENT(var, name_, ...)                                            \
    D9_SCHEMA(var, name_, D9_EV_MAP_(D9_EV_FIELD_, __VA_ARGS__));            \
    static inline void var##_emit(D9_EV_MAP_(D9_EV_PARAM_, __VA_ARGS__))    \
    {                                                                        \
        const d9_value d9_v_[] = { D9_EV_MAP_(D9_EV_VALUE_, __VA_ARGS__) }; \
        d9_emit_values(&var, d9_v_, (unsigned)(sizeof d9_v_ / sizeof d9_v_[0])); \
    }                                                                        \
    static inline void var##_emit(D9_EV_MAP_(D9_EV_PARAM_, __VA_ARGS__))

/* ---- typed triggers ----------------------------------------------------------
 * d9_trigger(reason) with fields: declare the trigger once at file scope
 * with its fields as (TYPE, name) pairs, as D9_EVENT does (1..15 fields,
 * none named "reason"):
 *
 *   D9_TRIGGER_EVENT(slow_req, (U64, latency_ms), (STR, path));
 *   ...
 *   if (ms > 250) slow_req_trigger("slow request", ms, path);
 *
 * This defines the schema slow_req, named D9_TRIGGER_SCHEMA ("d9_trigger")
 * with the fields ("reason" STR, latency_ms U64, path STR), and static
 * inline void slow_req_trigger(const char *reason, uint64_t latency_ms,
 * const char *path), type-checked like D9_EVENT's _emit. It is a trigger
 * exactly as d9_trigger(reason) is (the collector fires on every schema
 * named "d9_trigger" whose first field is a string), and its values are
 * recorded with the marker: the d9_trigger event in `d9 events` and in
 * `d9 sql`'s d9_trigger table carries them (one column per field name of
 * every d9_trigger schema, NULL where a marker has no such field). A NULL
 * reason is "". Same rules as d9_emit: no locks, no syscalls, no
 * allocation after its first use; with -DD9_DISABLE it compiles to nothing.
 * D9_SCHEMA(var, D9_TRIGGER_SCHEMA, D9_FIELD_STR("reason"), ...) with
 * d9_emit is the same trigger for fields known only at run time.
 */
#define D9_TRIGGER_EVENT(var, ...)                                           \
    D9_SCHEMA(var, D9_TRIGGER_SCHEMA, D9_FIELD_STR("reason"),                \
              D9_EV_MAP_(D9_EV_FIELD_, __VA_ARGS__));                        \
    static inline void var##_trigger(const char *reason,                     \
                                     D9_EV_MAP_(D9_EV_PARAM_, __VA_ARGS__))  \
    {                                                                        \
        const d9_value d9_v_[] = { D9_STR(reason ? reason : ""),             \
                                   D9_EV_MAP_(D9_EV_VALUE_, __VA_ARGS__) };  \
        d9_emit_values(&var, d9_v_, (unsigned)(sizeof d9_v_ / sizeof d9_v_[0])); \
    }                                                                        \
    static inline void var##_trigger(const char *reason,                     \
                                     D9_EV_MAP_(D9_EV_PARAM_, __VA_ARGS__))

/* ---- record functions ---------------------------------------------------- */
#ifndef D9_DISABLE

D9_API void d9_poll_start(d9_runtime rt, uint16_t worker, uint64_t task, d9_loc loc);
D9_API void d9_poll_end(d9_runtime rt, uint16_t worker, uint64_t task);
/* waker = 0 when the waker is not a task (an I/O callback, a timer);
 * target_worker = D9_WORKER_NONE_ID when the worker that will run wakee is
 * not known yet (e.g. it goes to the global queue). */
D9_API void d9_wake(d9_runtime rt, uint64_t waker, uint64_t wakee, uint16_t target_worker);
D9_API void d9_worker_park(d9_runtime rt, uint16_t worker);
D9_API void d9_worker_unpark(d9_runtime rt, uint16_t worker);
D9_API void d9_task_spawn(d9_runtime rt, uint64_t task, d9_loc loc);
D9_API void d9_task_terminate(d9_runtime rt, uint64_t task);
/* worker = D9_WORKER_NONE_ID for the runtime's global queue. */
D9_API void d9_queue_depth(d9_runtime rt, uint16_t worker, uint64_t depth);
D9_API void d9_emit_values(d9_schema *schema, const d9_value *values, unsigned n);
/* A trigger: asks the collector to keep the window around now
 * ([now - lookback, now + lookforward], d9collectd --retain triggered).
 * Recorded as a custom event of the reserved schema "d9_trigger" (field
 * "reason", cut to 255 bytes), so it is a marker in `d9 events`. Same rules
 * as d9_emit: no locks, no syscalls, no allocation. With fields:
 * D9_TRIGGER_EVENT above. */
D9_API void d9_trigger(const char *reason);

#else /* D9_DISABLE: every call compiles to nothing */

static inline void d9_poll_start(d9_runtime rt, uint16_t w, uint64_t t, d9_loc l)
{ (void)rt; (void)w; (void)t; (void)l; }
static inline void d9_poll_end(d9_runtime rt, uint16_t w, uint64_t t)
{ (void)rt; (void)w; (void)t; }
static inline void d9_wake(d9_runtime rt, uint64_t a, uint64_t b, uint16_t w)
{ (void)rt; (void)a; (void)b; (void)w; }
static inline void d9_worker_park(d9_runtime rt, uint16_t w) { (void)rt; (void)w; }
static inline void d9_worker_unpark(d9_runtime rt, uint16_t w) { (void)rt; (void)w; }
static inline void d9_task_spawn(d9_runtime rt, uint64_t t, d9_loc l)
{ (void)rt; (void)t; (void)l; }
static inline void d9_task_terminate(d9_runtime rt, uint64_t t) { (void)rt; (void)t; }
static inline void d9_queue_depth(d9_runtime rt, uint16_t w, uint64_t d)
{ (void)rt; (void)w; (void)d; }
static inline void d9_emit_values(d9_schema *s, const d9_value *v, unsigned n)
{ (void)s; (void)v; (void)n; }
static inline void d9_trigger(const char *reason) { (void)reason; }

#endif /* D9_DISABLE */

/* ---- counters (for tests and status) ------------------------------------- */
typedef struct d9_stats {
    uint64_t lost;              /* dropped from this process's rings, every cause: */
    uint32_t rings_in_use;
    uint32_t threads_untraced;
    uint64_t lost_full;         /*   the ring was full (the collector fell behind) */
    uint64_t lost_mismatch;     /*   custom event values not matching the schema */
    uint64_t lost_too_big;      /*   custom event larger than a record (4096 bytes) */
    uint64_t lost_no_ring;      /* events of threads that got no ring (not in lost) */
} d9_stats;

#ifndef D9_DISABLE

/* Sum of counters over all rings of this process (reads shm; not a hot path). */
D9_API void d9_get_stats(d9_stats *out);

/* Path of this process's region file, or NULL when tracing is off. */
D9_API const char *d9_region_path(void);

#else /* D9_DISABLE */

static inline void d9_get_stats(d9_stats *out)
{ static d9_stats zero_; if (out) *out = zero_; }
static inline const char *d9_region_path(void) { return NULL; }

#endif /* D9_DISABLE */

#ifdef __cplusplus
}
#endif
#endif /* D9_H */
