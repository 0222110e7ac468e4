/*
 * trig.h — triggers and kept windows, as pure logic (no I/O, no clock, no
 * allocation): the collector asks it whether a trigger fires, which windows
 * of time it keeps, and whether a span of data may be dropped in the
 * flight-recorder mode (--retain triggered).
 *
 * A trigger at time t (a d9_trigger() marker drained from a ring, a
 * `d9 trigger --pid` request, an automatic trigger: a poll longer than
 * --trigger-poll-ms, a sampled scheduling wait longer than
 * --trigger-sched-ms, records lost (by a ring, or by threads without one)
 * with --trigger-lost yes, a crash of the traced program) keeps the window
 * [t - lookback, t + lookforward]. Triggers closer than the debounce to the
 * last accepted one of the same pid are debounced (counted, no window);
 * more than rate_per_min accepted triggers in any minute are rate limited
 * (counted, no window). A window that overlaps or touches a kept one merges
 * with it, so the kept windows stay sorted and disjoint.
 *
 * Called by trigd.c (the daemon's one trig_state, fired by every trigger
 * source; trigd_state() hands it to the flight recorder) and config.c (the
 * trigger keys go through trig_cfg_set, the whole through trig_cfg_check);
 * tests/unit/test_trig.c; tests/fuzz/fuzz_trig_cfg.c.
 * Invariants: kept windows are sorted by start, disjoint, at most
 * TRIG_WIN_MAX of them (the oldest is forgotten first, and counted);
 * a configuration that trig_cfg_check accepts has 0 < lookback,
 * lookforward <= TRIG_WINDOW_MAX_MS and a rate of at least one a minute.
 * Must never: read a clock (callers pass times), or trust a config value.
 */
#ifndef D9_DAEMON_TRIG_H
#define D9_DAEMON_TRIG_H

#include <stddef.h>
#include <stdint.h>

/* Defaults: one place for this binary (docs/collector.md, d9collectd(8)). */
#define TRIG_LOOKBACK_MS_DEFAULT     10000u   /* keep 10 s before the trigger */
#define TRIG_LOOKFORWARD_MS_DEFAULT  2000u    /* and 2 s after */
#define TRIG_DEBOUNCE_MS_DEFAULT     1000u    /* one trigger a second per pid */
#define TRIG_RATE_PER_MIN_DEFAULT    30u      /* at most 30 kept triggers a minute */
#define TRIG_WINDOW_MAX_MS           3600000u /* a window side longer than 1 h is absurd */
#define TRIG_RATE_MAX                6000u
#define TRIG_WIN_MAX                 256u     /* kept windows remembered at once */
#define TRIG_RATE_SLOTS              64u      /* ring of accepted times for the rate limit */
#define TRIG_FIELD_MAX               8u       /* --trigger-field rules */
#define TRIG_FIELD_NAME_MAX          64u      /* a schema or field name, NUL included */
#define TRIG_FIELD_TEXT_MAX          160u     /* a rule as text, NUL included */

enum trig_retain { TRIG_RETAIN_ALL = 0, TRIG_RETAIN_TRIGGERED = 1 };

/* A custom-event-field trigger (--trigger-field 'SCHEMA.FIELD>N'): an event
 * of schema SCHEMA whose numeric field FIELD compares with N by op. Only the
 * syntax is known at start-up; whether the schema has the field, and that it
 * is numeric, is learnt per process from its metadata (trigd.h). */
enum trig_op { TRIG_OP_GT = 0, TRIG_OP_GE = 1, TRIG_OP_LT = 2, TRIG_OP_LE = 3 };
struct trig_field {
    char schema[TRIG_FIELD_NAME_MAX];
    char field[TRIG_FIELD_NAME_MAX];
    int op;                 /* enum trig_op */
    double value;           /* the threshold N (finite) */
    char text[TRIG_FIELD_TEXT_MAX];     /* the rule, normalized: "req.ms>200" */
};

struct trig_cfg {
    enum trig_retain retain;
    uint32_t lookback_ms, lookforward_ms, debounce_ms;
    uint32_t rate_per_min;
    uint32_t poll_ms;       /* 0: no automatic poll trigger */
    int crash;              /* 1: a crash of the traced program triggers */
    uint32_t sched_ms;      /* 0: no automatic scheduling-wait trigger */
    int lost;               /* 1: records lost (by a ring or a ringless thread) trigger */
    struct trig_field field[TRIG_FIELD_MAX];    /* --trigger-field rules */
    uint32_t nfield;
};

struct trig_win {
    uint64_t t0_ns, t1_ns;  /* inclusive bounds */
    uint64_t trig_ns;       /* the first trigger that made (or grew) it */
    uint32_t pid;
    uint32_t ntrig;         /* triggers merged into it */
};

enum trig_verdict { TRIG_KEPT = 0, TRIG_MERGED = 1, TRIG_DEBOUNCED = 2, TRIG_RATE_LIMITED = 3 };

struct trig_state {
    struct trig_cfg cfg;
    struct trig_win win[TRIG_WIN_MAX];
    unsigned nwin;
    uint64_t last_ns[16];   /* last accepted trigger per pid hash bucket */
    uint32_t last_pid[16];
    uint64_t rate_t[TRIG_RATE_SLOTS];
    unsigned rate_head, rate_n;
    uint64_t fired, debounced, rate_limited, forgotten;
};

void trig_cfg_default(struct trig_cfg *c);
/* Sets one key (the config-file name, e.g. "trigger-lookback-ms", or the
 * flag without its dashes) from text. Returns 0, or -EINVAL with a one-line
 * reason in err (an unknown key, a value that is not a number, or out of
 * range). */
int trig_cfg_set(struct trig_cfg *c, const char *key, const char *value, char *err, size_t errlen);
/* The key "trigger-field" adds one rule per call (up to TRIG_FIELD_MAX;
 * an empty value removes every rule so far): SCHEMA.FIELD then one of >,
 * >=, <, <= then a finite decimal number, spaces allowed around the
 * operator; names of letters, digits, '_', '-' and '.', the field after the
 * last '.'. "op" is the comparison as text (">", ">=", ...). */
const char *trig_op_name(int op);
/* 1 when x compares with the rule's threshold as its op says. */
int trig_field_match(const struct trig_field *f, double x);
/* The whole configuration's sanity (absurd windows, a rate of 0). */
int trig_cfg_check(const struct trig_cfg *c, char *err, size_t errlen);

void trig_init(struct trig_state *s, const struct trig_cfg *c);
/* A trigger from pid at t_ns: returns an enum trig_verdict. */
int trig_fire(struct trig_state *s, uint32_t pid, uint64_t t_ns);
/* 1 when [t0_ns, t1_ns] overlaps a kept window. */
int trig_kept(const struct trig_state *s, uint64_t t0_ns, uint64_t t1_ns);
/* 1 when data ending at t1_ns may be dropped at now_ns in triggered mode:
 * its lookback has passed (no future trigger can keep it) and no kept
 * window overlaps [t0_ns, t1_ns]. Always 0 in retain-all mode. */
int trig_droppable(const struct trig_state *s, uint64_t t0_ns, uint64_t t1_ns, uint64_t now_ns);
/* Forgets windows that ended before before_ns; returns how many. */
unsigned trig_expire(struct trig_state *s, uint64_t before_ns);

#endif
