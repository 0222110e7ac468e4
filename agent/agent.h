/*
 * agent.h — the agent core: one explicit instance (struct ag_agent) that owns
 * a region, the metadata tables, the housekeeping thread and the control
 * channel; and the per-thread state (struct ag_thread) that owns a ring.
 *
 * agent/api.c wraps a process singleton and a thread-local ag_thread around
 * this; the unit tests create instances with a temp shm dir and their own
 * config and drive threads explicitly.
 *
 * Locking: a->lock guards the metadata tables (runtimes, locations, schema
 * ids), ring claims and the lifecycle fields. Record paths never take it;
 * they only read a->live (relaxed) and their own ag_thread.
 *
 * Lifecycle of an instance:
 *   ag_agent_start -> live (records accepted)
 *   ag_agent_stop  -> region CLOSED, goodbye sent, thread joined; mappings
 *                     stay, so a thread still inside a record call is safe
 *   ag_agent_destroy -> unmapped and freed (tests only: every thread using
 *                     the instance must be done)
 * fork(): ag_agent_fork_prepare/parent/child bracket fork (pthread_atfork).
 * In the child the parent's region is dropped without a single write; the
 * child gets a fresh region of its own (new pid, same runtime, location and
 * schema ids, so ids cached by the application stay valid) lazily, on the
 * first claim or registration, and its own housekeeping thread.
 */
#ifndef D9_AGENT_AGENT_H
#define D9_AGENT_AGENT_H

#include <pthread.h>
#include <stdint.h>
#include "agent/control.h"
#include "agent/d9.h"
#include "agent/env.h"
#include "shm/region.h"
#include "shm/ring.h"

#define AG_RUNTIME_MAX        256u          /* runtime ids 1..AG_RUNTIME_MAX */
#define AG_LOC_MAX            65536u        /* distinct source locations */
#define AG_SCHEMA_INVALID     UINT32_MAX    /* d9_schema.id of a schema that cannot be published */
#define AG_CLAIM_RETRY_EVENTS 65536u        /* an untraced thread retries its claim this rarely */
#define AG_HEARTBEAT_MS       1000u         /* heartbeat and calibration refresh period */
#define AG_CAL_FIRST_MS       50u           /* first calibration pair 1 after start */
#define AG_HELLO_RETRY_MIN_MS 10u           /* first hello retry; doubles up to AG_HEARTBEAT_MS */
#define AG_OBJECTS_MAX        1024u         /* executable segments of loaded objects */
#define AG_HK_STACK_SIZE      (256u * 1024u)
#define AG_HK_THREAD_NAME     "d9-agent"
#define AG_MIB                (1024u * 1024u)

enum ag_thread_state {
    AG_T_NEW = 0,               /* zero-initialised TLS: no claim tried yet */
    AG_T_TRACED = 1,            /* owns ring t->ring */
    AG_T_UNTRACED = 2,          /* no ring was free; retries every AG_CLAIM_RETRY_EVENTS */
    AG_T_EXITED = 3,            /* released at thread exit; never claims again */
};

enum ag_sched_state { AG_SCHED_UNOPENED = 0, AG_SCHED_OPEN = 1, AG_SCHED_NONE = 2 };

#define AG_POLL_NEST_MAX 8u        /* polls open at once per thread whose task is kept */

struct ag_thread {
    struct shm_producer p;      /* p.hdr != NULL <=> state == AG_T_TRACED */
    /* the polls open on this thread, innermost last (d9_poll_start pushes,
     * d9_poll_end pops): a custom event records poll_task[poll_depth - 1].
     * Deeper nesting than AG_POLL_NEST_MAX is counted, not stored: an event
     * there records D9_TASK_NONE. Written by this thread only. Right after
     * p, with the struct 64-aligned: a poll's records touch two lines of
     * this struct (p's hot half; poll_depth with the first poll_task). */
    uint32_t poll_depth;
    uint64_t poll_task[AG_POLL_NEST_MAX];
    int32_t ring;
    uint32_t state;             /* enum ag_thread_state */
    uint32_t retry_countdown;
    uint32_t sched_state;       /* enum ag_sched_state */
    int sched_fd;               /* /proc/thread-self/schedstat when AG_SCHED_OPEN */
    uint64_t last_wait_ns;      /* schedstat run-queue wait at the last sampled park/unpark */
    uint64_t sched_next_ns;     /* CLOCK_MONOTONIC: no schedstat read before this */
} __attribute__((aligned(64)));

struct ag_loc;

struct ag_agent {
    /* read by every record call: 0 = off, else the clock source */
    _Atomic uint32_t live;
    uint32_t clock_source;
    struct shm_region region;
    int region_fd;              /* kept to reserve ring pages at claim; -1 none */
    _Atomic uint32_t rings_hw;  /* 1 + the highest ring this process claimed: rings above
                                 * were never touched (reading them would allocate) */
    struct ag_config cfg;
    uint32_t pid;
    uint64_t start_time;
    char comm[D9_COMM_MAX + 1];
    char exe[D9_EXE_MAX];

    pthread_mutex_t lock;
    uint16_t nruntimes;
    uint16_t default_runtime;
    char (*runtimes)[D9_NAME_MAX + 1];  /* [AG_RUNTIME_MAX], index id - 1 */
    struct ag_loc *locs;        /* open-addressing hash of locations */
    uint32_t loc_cap, nlocs;
    uint32_t nschemas;

    /* housekeeping thread */
    pthread_t hk;
    int hk_running;
    int hk_stop;                /* under lock */
    pthread_cond_t hk_cond;     /* CLOCK_MONOTONIC */
    struct ag_control ctl;      /* used by the housekeeping thread only */
    int ctl_state;              /* control channel: 0 not opened (no collector seen yet), 1 open, <0 -errno */
    struct ag_control ctl_inherited;    /* fork child: the parent's, never used */
    int hello_sent;             /* a collector accepted our hello (housekeeping thread) */

    int started, stopped;
    /* events of threads without a ring (any thread, relaxed add); the
     * housekeeping thread copies it into the region header */
    _Atomic uint64_t lost_no_ring;
    /* loaded objects published (D9_META_OBJECT), under lock */
    uint64_t *objs;             /* [AG_OBJECTS_MAX] start addresses */
    uint32_t nobjs;
    uint64_t objs_adds;         /* dlpi_adds at the last publication */
    /* fork */
    int need_reinit;            /* child: region of the parent dropped, none yet */
    uint32_t fork_meta_head;    /* meta bytes that existed when fork() happened */
    struct shm_region stale;    /* child: the parent's mapping, read-only until reinit */
};

/* Start an instance with cfg (cfg->enabled must be 1). 0 or a negative errno
 * (logged once to stderr with the path); on error a is left stopped and
 * ag_agent_destroy() is still valid. */
int ag_agent_start(struct ag_agent *a, const struct ag_config *cfg);

/* The process name from /proc/self/comm into out (cap bytes), "" if unreadable. */
void ag_agent_read_comm(char *out, size_t cap);

/* Mark the region closed, send goodbye, join the housekeeping thread.
 * Idempotent; does not unmap. */
void ag_agent_stop(struct ag_agent *a);

/* Stop, unmap and free everything (tests). */
void ag_agent_destroy(struct ag_agent *a);

/* One housekeeping round: heartbeat, calibration pair 1 (seqlock), the
 * no-ring drop count into the region header. */
void ag_agent_tick(struct ag_agent *a);

/* Publish the executable segments of loaded objects not published yet
 * (D9_META_OBJECT), when the loader says something was added since the last
 * call (dlpi_adds). ag_agent_start and the housekeeping thread; takes the
 * lock and the loader's lock. */
void ag_agent_objects_refresh(struct ag_agent *a);

/* One event of a thread without a ring was dropped. Any thread; one relaxed
 * atomic add (untraced threads only, never the traced hot path). */
void ag_agent_count_no_ring(struct ag_agent *a);

/* Record how the process ends (D9_EXIT_CODE | status or D9_EXIT_SIGNAL |
 * signo) in the region header; the first call wins. Async-signal-safe. */
void ag_agent_set_exit(struct ag_agent *a, uint32_t status);

/* Registration (slow path, takes a->lock). See d9.h for semantics. */
int ag_agent_runtime_register(struct ag_agent *a, const char *name, uint16_t *id);
uint32_t ag_agent_loc_register(struct ag_agent *a, const char *file, int line, const char *func);
/* The schema's id, publishing it on first use; AG_SCHEMA_INVALID when it
 * cannot be published (logged once), 0 when the agent is off. */
uint32_t ag_agent_schema_id(struct ag_agent *a, d9_schema *s);

/* Claim a ring for the calling thread's state t (its first event).
 * 0 (t->p is usable), -ENOSPC (no ring: untraced, counted once per thread,
 * retried only every AG_CLAIM_RETRY_EVENTS calls), -ENOTCONN (agent off),
 * -ESRCH (t already exited). */
int ag_agent_thread_attach(struct ag_agent *a, struct ag_thread *t);

/* Release t's ring (thread exit) and close its schedstat fd. */
void ag_agent_thread_detach(struct ag_agent *a, struct ag_thread *t);

/* For a park/unpark record: t's CPU time and run-queue wait since its
 * previous sampled call, read from schedstat with one pread on a cached fd,
 * but at most once per interval_us (0 = every call). Returns the record's
 * flags: D9_WORKER_UNSAMPLED (and zeros) when the interval has not passed,
 * so no syscall was made; the wait of such calls is counted in the next
 * sampled one. Without schedstat: CPU time from CLOCK_THREAD_CPUTIME_ID, wait 0. */
uint32_t ag_agent_thread_sched(struct ag_thread *t, uint32_t interval_us, uint64_t *cpu_ns,
                               uint64_t *wait_delta_ns);

/* Sum of ring counters (reads shm). Zeros when there is no region. */
void ag_agent_stats(struct ag_agent *a, d9_stats *out);

/* Path of the live region, NULL when there is none. */
const char *ag_agent_region_path(struct ag_agent *a);

/* fork() handlers: prepare takes a->lock and notes the metadata size;
 * parent releases it; child releases it and forgets the parent's region,
 * thread and control channel without writing to any of them. */
void ag_agent_fork_prepare(struct ag_agent *a);
void ag_agent_fork_parent(struct ag_agent *a);
void ag_agent_fork_child(struct ag_agent *a);

/* Forget a thread state inherited across fork (child side; closes its fd). */
void ag_agent_thread_forget(struct ag_thread *t);

#endif /* D9_AGENT_AGENT_H */
