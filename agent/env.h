/*
 * env.h — the agent's configuration and its parsing from DIAL9_* variables.
 *
 * Pure: ag_env_parse() reads variables only through the lookup callback it
 * is given and touches no process state, so unit tests drive it with a
 * table. d9_init() (agent/api.c) passes getenv and prints the one error line
 * this module formats. Defaults live here, in ag_env_defaults(), and
 * nowhere else.
 *
 * d9_init_with() merges a program's d9_config in front of the environment
 * through the same lookup: ag_env_config_value() turns a set field into the
 * variable's text, so one parser checks both.
 *
 * Rules (documented for users in agent/d9.h):
 *   - an unset or empty variable means "use the default";
 *   - any other value that does not parse, or is out of range, is an error:
 *     the whole agent stays off (never a partial configuration).
 */
#ifndef D9_AGENT_ENV_H
#define D9_AGENT_ENV_H

#include <stddef.h>
#include <stdint.h>
#include "agent/d9.h"
#include "shm/d9_abi.h"

#define AG_ENDPOINT_MAX   256u      /* DIAL9_COLLECTOR, bytes including NUL */
#define AG_SHM_DIR_MAX    160u      /* DIAL9_SHM_DIR: leaves room for the region name */
#define AG_RING_KB_MIN    (D9_RING_DATA_MIN / 1024u)
#define AG_RING_KB_MAX    (D9_RING_DATA_MAX / 1024u)
#define AG_MAX_THREADS_MIN 1u
#define AG_SCHED_SAMPLE_US_DEFAULT 1000u    /* DIAL9_SCHED_SAMPLE_US */
#define AG_SCHED_SAMPLE_US_MAX 60000000u    /* one minute */
#define AG_SHM_CAP_MB_DEFAULT 1024u  /* DIAL9_SHM_CAP_MB: regions nobody collects, per user */
#define AG_SHM_CAP_MB_MAX  (1u << 24)   /* 16 TiB: beyond any shm directory */
#define AG_COLLECTOR_NONE "none"    /* DIAL9_COLLECTOR=none: no control channel */
#define AG_ERR_MAX        256u      /* room for one formatted error line */
#define AG_LOG_VAR        "DIAL9_LOG"   /* diagnostics on stderr (ag_env_log_on) */

struct ag_config {
    int enabled;                        /* DIAL9_ENABLED */
    uint32_t ring_data_size;            /* DIAL9_RING_KB * 1024 rounded up to 2^n */
    uint32_t max_threads;               /* DIAL9_MAX_THREADS: rings in the region */
    char collector[AG_ENDPOINT_MAX];    /* DIAL9_COLLECTOR ("" with control 0 for "none") */
    char runtime_name[D9_NAME_MAX + 1]; /* DIAL9_RUNTIME_NAME */
    char shm_dir[AG_SHM_DIR_MAX];       /* DIAL9_SHM_DIR */
    uint32_t shm_cap_mb;                /* DIAL9_SHM_CAP_MB: no new region while this user's
                                           regions that no collector drains hold this many
                                           MiB of the shm directory (0 = no cap) */
    uint32_t sched_sample_us;           /* DIAL9_SCHED_SAMPLE_US: schedstat reads per thread
                                           at most this often (0 = at every park/unpark) */

    uint32_t clock_source;              /* DIAL9_CLOCK: 0 = auto (TSC if invariant), else
                                           enum d9_clock_source (tests may set D9_CLOCK_TSC) */

    /* Not from the environment; tests change them. */
    uint32_t meta_size;                 /* metadata log bytes */
    int housekeeping;                   /* 1 = run the agent thread (heartbeat, clock, control) */
    int control;                        /* 1 = talk to the collector (needs housekeeping);
                                           DIAL9_COLLECTOR=none sets 0 */
};

/* Looks a variable up; returns NULL when unset. */
typedef const char *(*ag_getenv_fn)(const char *name, void *ctx);

/* Fill c with defaults. uid picks the default collector endpoint, the same
 * as d9collectd's (root: /run/dial9, others: $XDG_RUNTIME_DIR/dial9, or
 * /tmp/dial9-<uid> when xdg_runtime_dir is unset or not absolute);
 * comm is the default runtime name (NULL or empty: "main"). */
void ag_env_defaults(struct ag_config *c, uint32_t uid, const char *xdg_runtime_dir,
                     const char *comm);

/* Parse every DIAL9_* variable over the defaults already in c.
 * Returns 0 (c->enabled says whether tracing is on) or -EINVAL, in which case
 * err holds one line "d9: VAR=value <what is wrong>; tracing disabled"
 * (no trailing newline) and c->enabled is 0. */
int ag_env_parse(struct ag_config *c, ag_getenv_fn get, void *ctx, char *err, size_t errcap);

/*
 * d9_config (d9_init_with) as DIAL9_* values: the value the program set for
 * variable var, formatted as the variable would hold it ("4096", "none"),
 * or NULL when the program left it unset (or var is not a DIAL9_* setting).
 * field, when not NULL, gets the field's name ("ring_kb") for messages.
 * Uses buf (cap >= 24) for numbers. Pure. Feeding these values to
 * ag_env_parse in place of the environment's checks a d9_config with the
 * very same rules as the variables.
 */
const char *ag_env_config_value(const d9_config *pc, const char *var, char *buf, size_t cap,
                            const char **field);

/* Parse a boolean as DIAL9_ENABLED accepts it: 1 / 0 on success, -EINVAL. */
int ag_env_parse_bool(const char *s);

/* Whether DIAL9_LOG's value (NULL when unset) asks for the agent's and the
 * shim's diagnostic lines: set, not empty and not "0". */
int ag_env_log_on(const char *value);

/* Parse a decimal unsigned integer in [lo, hi]: 0, -EINVAL (not a number)
 * or -ERANGE (a number outside the range). */
int ag_env_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out);

#endif /* D9_AGENT_ENV_H */
