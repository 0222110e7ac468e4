/*
 * trigd.h — the collector's triggers: the daemon's one struct trig_state
 * (trig.h: debounce, rate limit, kept windows), the sources that fire it,
 * and the record of every trigger with its verdict.
 *
 * Sources (enum trigd_source): a d9_trigger(reason) marker drained from a
 * ring (drain.c, TRIGD_SRC_MARKER), `d9 trigger --pid PID` over the control
 * socket (TRIGD_SRC_SHELL), a poll longer than --trigger-poll-ms seen at
 * its end by the drain (TRIGD_SRC_POLL), a traced process that ended on
 * a fatal signal with --trigger-crash yes (TRIGD_SRC_CRASH), a worker
 * park/unpark record whose sampled scheduling wait is longer than
 * --trigger-sched-ms (TRIGD_SRC_SCHED, at the record's stamp), and records
 * lost by a ring, or by threads that have no ring, with --trigger-lost yes
 * (TRIGD_SRC_LOST, when the drain sees the ring's lost counter, or the
 * region's lost_no_ring, grow).
 *
 * Each trigger, whatever its verdict (kept, merged, debounced,
 * rate-limited), is written to the index's triggers table (idx.h) when an
 * index was handed over with trigd_set_index, with the kept window's bounds
 * as they are after the merge (rows whose window grew by a later merge are
 * updated too), and counted by source and verdict for --metrics
 * (d9_triggers_total).
 *
 * Accessors for the flight recorder (--retain triggered): trigd_state()
 * is the daemon's trig_state; ask trig_kept()/trig_droppable() of it.
 *
 * Called by d9collectd.c (init, the shell and crash triggers, metrics),
 * drain.c (metadata, markers, fields, long polls, sched waits, lost records), on the
 * drain thread only (no locking).
 * Must never: trust a reason's bytes (cut to TRIGD_REASON_MAX, control
 * bytes shown as '?'), or fail the drain because the index write failed
 * (logged, counted in index_errors).
 */
#ifndef D9_DAEMON_TRIGD_H
#define D9_DAEMON_TRIGD_H

#include <stddef.h>
#include <stdint.h>
#include "collector/daemon/trig.h"
#include "collector/store/seg_writer.h"
#include "collector/store/trig_rec.h"

struct idx;

enum trigd_source {
    TRIGD_SRC_MARKER = 0,       /* d9_trigger() in the program */
    TRIGD_SRC_SHELL = 1,        /* d9 trigger --pid */
    TRIGD_SRC_POLL = 2,         /* --trigger-poll-ms */
    TRIGD_SRC_CRASH = 3,        /* --trigger-crash */
    TRIGD_SRC_SCHED = 4,        /* --trigger-sched-ms */
    TRIGD_SRC_LOST = 5,         /* --trigger-lost */
    TRIGD_SRC_FIELD = 6,        /* --trigger-field */
    TRIGD_SRC_COUNT = 7,
};
#define TRIGD_VERDICT_COUNT 4u  /* enum trig_verdict */
#define TRIGD_REASON_MAX    TRIG_REC_REASON_MAX
/* Triggers waiting to be written into their process's segment. */
#define TRIGD_PENDING_MAX   256u
/* The reserved schema of d9_trigger() (agent/d9.h's D9_TRIGGER_SCHEMA): one
 * STR field, "reason" (trig_rec.h). */
#define TRIGD_SCHEMA_NAME   TRIG_REC_SCHEMA_NAME

/* Write the triggers of pid fired so far into w, its process's open
 * segment, as SEG_BLK_TRIGGER blocks (so a re-index brings them back).
 * trigd_fire only queues them: it runs while the drain holds a data
 * reservation in that writer. Called by drain.c at a safe point: each pass's
 * end and before a seal. 0 or the write error (the rest stay queued). */
int trigd_write_blocks(uint32_t pid, struct seg_writer *w);

/* A process's schemas that trigd_feed looks at (filled by trigd_meta). */
#define TRIGD_BIND_MAX      16u
#define TRIGD_BIND_MARKER   0xffu       /* rule of a d9_trigger schema */
struct trigd_bind {
    uint32_t schema;            /* the schema's id in the process */
    uint8_t rule;               /* TRIGD_BIND_MARKER, or the --trigger-field rule's index */
    uint8_t field;              /* the rule's field, by index */
    uint8_t nfields;
    uint8_t types[16];          /* D9_FT_* of each field (D9_SCHEMA_MAX_FIELDS) */
    uint32_t names;             /* a typed marker's field names after "reason": their
                                   offset in trigd_proc.names; UINT32_MAX: none */
};
/* A typed trigger's fields as JSON text (the index's triggers.fields): at
 * most this many bytes, NUL included; the fields that do not fit are left
 * out, the object stays whole (trig_rec.h: a re-index derives the same). */
#define TRIGD_FIELDS_MAX    TRIG_REC_FIELDS_MAX
struct trigd_proc {
    struct trigd_bind bind[TRIGD_BIND_MAX];
    uint32_t nbind;
    int full_logged;            /* "too many schemas" said once */
    char *names;                /* field names of typed markers, each NUL-ended */
    uint32_t names_len, names_cap;
};
/* Frees what trigd_meta allocated for tp (proc_free). */
void trigd_proc_free(struct trigd_proc *tp);

/* "marker", "shell", "poll", "crash", "sched", "lost", "field". */
const char *trigd_source_name(int source);
/* "kept", "merged", "debounced", "rate-limited". */
const char *trigd_verdict_name(int verdict);

/* Starts over with configuration c (no windows, counters zero). */
void trigd_init(const struct trig_cfg *c);
/* Where each trigger is recorded (NULL: nowhere). */
void trigd_set_index(struct idx *x);
/* The daemon's trigger state: its cfg and kept windows (trig.h). */
struct trig_state *trigd_state(void);

/* One trigger of pid (process_id: its index row, 0 if none) at t_ns; the
 * reason may be NULL. Returns its enum trig_verdict; *win (may be NULL)
 * gets the kept window containing t_ns, zeros when debounced or rate
 * limited. */
int trigd_fire(uint32_t pid, int64_t process_id, uint64_t t_ns, int source, const char *reason,
               struct trig_win *win);

/* A metadata entry e of process pid (any kind; schemas are looked at):
 * adds tp's bindings for it. */
struct shm_meta_entry;
void trigd_meta(struct trigd_proc *tp, uint32_t pid, const struct shm_meta_entry *e);

/* The drain's look at a chunk of one ring's records (validated, stamps
 * converted, as met_feed gets them): markers of the process's d9_trigger
 * schemas (tp's bindings) fire TRIGD_SRC_MARKER at their stamp (a typed
 * one with its fields after the reason as a JSON object, in the schema's
 * order: numbers, true/false, strings with '"', '\' and control bytes
 * escaped, a non-finite F64 as null), events
 * passing a --trigger-field rule TRIGD_SRC_FIELD; with --trigger-poll-ms, an outermost
 * poll longer than it fires TRIGD_SRC_POLL at its end; with
 * --trigger-sched-ms, a WORKER_PARK/UNPARK record not flagged
 * D9_WORKER_UNSAMPLED whose sched_wait_ns is longer than it fires
 * TRIGD_SRC_SCHED at its stamp. A record the drain
 * reads twice (a failed seal, drain.h) fires twice: the debounce eats it.
 *
 * Poll pairing (the ring is one thread's, so its polls nest as calls do):
 * the open polls are a stack of at most TRIGD_OPEN_MAX, and an end closes
 * the latest open start of its own task (q_pair's rule), dropping the polls
 * opened inside it that are still open (their ends were lost). A poll whose
 * end never comes must not silence the ring, so an open poll stops being
 * "sure" (able to enclose later polls) when the records after its start
 * show a drop: a gap in the ring's seq (a gap is exactly a drop, d9_abi.h),
 * or a seq going back (records read twice). It also leaves the stack when
 * a new start of its task comes (its end was lost), or when the stack is
 * full (the bottom one). Outermost then means: a long poll fires at its
 * end when no poll below it in the stack is still open and sure, i.e.
 * when no poll known to enclose it is still running (that one fires
 * instead, at its own end, being longer). Properly nested long polls fire
 * once, for the outermost; a poll open across a drop and a later poll both
 * fire when long (the debounce may then eat one). */
#define TRIGD_OPEN_MAX 8u
struct trigd_open {
    uint64_t task;
    uint64_t ts;                /* its start */
    uint32_t sure;              /* no drop seen since its start */
};
struct trigd_ring {
    struct trigd_open open[TRIGD_OPEN_MAX];     /* bottom first */
    uint32_t nopen;
    uint32_t seq_known;         /* next_seq holds the seq the next record should have */
    uint32_t next_seq;
};
void trigd_feed(uint32_t pid, int64_t process_id, const struct trigd_proc *tp,
                struct trigd_ring *r, const uint8_t *buf, size_t n);
/* Does trigd_feed have anything to look for in this process? */
int trigd_wants(const struct trigd_proc *tp);

/* With --trigger-lost yes: ring of pid lost delta more records (the drain
 * saw its lost counter grow) at t_ns fires TRIGD_SRC_LOST; ring
 * TRIGD_RING_NONE: threads of pid that have no ring lost them (the
 * region's lost_no_ring grew). Nothing when delta is 0 or the trigger is
 * off. Returns the verdict, or -1 when none fired. */
#define TRIGD_RING_NONE UINT32_MAX
int trigd_lost(uint32_t pid, int64_t process_id, uint32_t ring, uint64_t delta, uint64_t t_ns);

/* Triggers so far by source and verdict; index writes that failed. */
uint64_t trigd_count(int source, int verdict);
uint64_t trigd_index_errors(void);

#endif
