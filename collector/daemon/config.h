/*
 * config.h — d9collectd settings: defaults, command-line flags and the
 * config file, all in one place.
 *
 * Precedence: built-in defaults < --config FILE < command-line flags.
 * The file holds "key = value" lines whose keys are the long option names
 * without "--" ('#' starts a comment). Every value goes through
 * config_set(), so a flag and a file line accept exactly the same
 * syntax and ranges. An unknown key or a bad value yields one message in
 * the caller's buffer ("FILE:LINE: ..." for file lines) and -EINVAL; main()
 * prints it and exits 2.
 *
 * Called by d9collectd.c (main) and by the unit tests; the d9 CLI uses
 * paths_default_endpoint()/paths_default_store() (shm/paths.h) so every binary agrees on the
 * defaults. Pure: no IO except reading the config file and the environment
 * variable named in config_defaults's caller.
 */
#ifndef D9_DAEMON_CONFIG_H
#define D9_DAEMON_CONFIG_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "collector/daemon/perf.h"
#include "collector/daemon/trig.h"

/* ---- defaults (the only place they are written down) ---------------------- */
#define CONFIG_SEGMENT_MB_DEFAULT      64u
#define CONFIG_SEGMENT_SECONDS_DEFAULT 60u
#define CONFIG_STORE_MB_DEFAULT        1024u
#define CONFIG_POLL_MIN_US_DEFAULT     50u
#define CONFIG_POLL_MAX_US_DEFAULT     10000u  /* a default 1 MiB ring absorbs a 3 M events/s burst
                                                  from idle */
#define CONFIG_SCAN_MS_DEFAULT         500u
#define CONFIG_RECLAIM_AGE_DEFAULT     3600u    /* s: an undrainable region of a dead process */
#define CONFIG_PERF_FREQ_DEFAULT       PERF_FREQ_DEFAULT            /* profiler: --perf-freq */
#define CONFIG_SWITCH_PERIOD_DEFAULT   PERF_SWITCH_PERIOD_DEFAULT   /* profiler: --switch-period */
#define CONFIG_SWITCH_PERIOD_MAX       1000000u
#define CONFIG_SHIP_JOBS_DEFAULT       2u      /* --ship-jobs: uploads at once */
#define CONFIG_SHIP_JOBS_MAX           16u
#define CONFIG_HOST_MAX                63u     /* bytes of --host (STOREDIR_HOST_MAX - 1) */

/* profiler: --perf-scope, where the on-CPU sampling events live */
enum config_perf_scope {
    CONFIG_PERF_SCOPE_AUTO,            /* per CPU when permitted, else per thread (default) */
    CONFIG_PERF_SCOPE_CPU,             /* per CPU, or exit 1 when not permitted */
    CONFIG_PERF_SCOPE_THREAD,          /* one event per traced thread */
};

/* profiler: --perf-clock, what the per-CPU sampling events are taken on */
enum config_perf_clock {
    CONFIG_PERF_CLOCK_AUTO,            /* the tick where it works (perf_tick_probe), else cpu-clock */
    CONFIG_PERF_CLOCK_TICK,            /* the tick, or exit 1 when it does not work */
    CONFIG_PERF_CLOCK_CPU,             /* a cpu-clock timer per CPU */
};

/* profiler: --stack-mode, how user stacks are taken (perf.h) */
enum config_stack_mode {
    CONFIG_STACK_AUTO,                 /* dwarf */
    CONFIG_STACK_FP,                   /* the kernel's frame-pointer callchain only */
    CONFIG_STACK_DWARF,                /* user stack copy + registers, unwound with DWARF CFI */
};

/* --doorbell */
enum config_doorbell {
    CONFIG_DOORBELL_OFF,               /* the drain runs on its timer alone */
    CONFIG_DOORBELL_ON,                /* it also sleeps on the regions' doorbells (default) */
};

/* --ship-parquet: Parquet companions of each shipped segment (ship.h) */
enum config_ship_parquet {
    CONFIG_SHIP_PARQUET_OFF,           /* segments and manifests only (default) */
    CONFIG_SHIP_PARQUET_ON,            /* also the segment's d9 sql tables as Parquet */
};

/* ---- accepted ranges -------------------------------------------------------- */
#define CONFIG_SEGMENT_MB_MAX          4096u
#define CONFIG_SEGMENT_SECONDS_MAX     86400u
#define CONFIG_STORE_MB_MAX            (16u * 1024u * 1024u)      /* 16 TiB */
#define CONFIG_POLL_US_MAX             10000000u                 /* 10 s */
#define CONFIG_SCAN_MS_MIN             10u
#define CONFIG_SCAN_MS_MAX             600000u
#define CONFIG_RECLAIM_AGE_MAX         31536000u    /* a year */

#define CONFIG_PATH_MAX 4096

struct config {
    char store[CONFIG_PATH_MAX];
    char endpoint[CONFIG_PATH_MAX];
    char shm_dir[CONFIG_PATH_MAX];
    char pidfile[CONFIG_PATH_MAX];     /* "" = none */
    char config_file[CONFIG_PATH_MAX]; /* "" = none */
    char store_group[CONFIG_PATH_MAX]; /* --store-group: name or gid, "" = our egid */
    uint32_t segment_mb;
    uint32_t segment_seconds;
    uint32_t store_mb;
    uint32_t poll_min_us;
    uint32_t poll_max_us;
    uint32_t scan_ms;
    uint32_t reclaim_age;       /* --reclaim-age seconds (discover.h) */
    uint32_t perf_freq;             /* profiler: perf CPU samples per second, 0 = off */
    uint32_t switch_period;         /* profiler: sample 1 in N context switches, 0 = off */
    int perf_scope;                 /* enum config_perf_scope */
    int perf_clock;                 /* enum config_perf_clock */
    int stack_mode;                 /* enum config_stack_mode */
    int doorbell;                   /* enum config_doorbell */
    int log_level;                  /* enum col_log_level */
    char ship[CONFIG_PATH_MAX];        /* "s3://BUCKET/PREFIX", "" = no shipping */
    char s3_endpoint[CONFIG_PATH_MAX]; /* "" = AWS */
    char s3_region[CONFIG_PATH_MAX];   /* "" = AWS_REGION, ..., us-east-1 */
    uint32_t ship_jobs;             /* uploads in flight at most */
    char metrics[CONFIG_PATH_MAX];  /* --metrics [ADDR:]PORT, "" = no metrics endpoint */
    int ship_parquet;               /* enum config_ship_parquet */
    char host[CONFIG_HOST_MAX + 1]; /* "" = gethostname() */
    struct trig_cfg trig;           /* --retain and --trigger-*: set through trig_cfg_set */
};

/* "auto", "cpu", "thread" for enum config_perf_scope. */
const char *config_perf_scope_name(int scope);
/* "auto", "tick", "cpu-clock" for enum config_perf_clock. */
const char *config_perf_clock_name(int clock);

enum config_action {
    CONFIG_RUN = 0,
    CONFIG_HELP = 1,
    CONFIG_VERSION = 2,
    CONFIG_PRINT = 3,           /* --print-config: parsed fine, print and exit */
};

/* Defaults for a daemon running with effective uid euid; xdg is the value of
 * $XDG_RUNTIME_DIR or NULL. */
void config_defaults(struct config *c, uid_t euid, const char *xdg);

/* Set one option by its long name (no leading "--"). 0 or -EINVAL with a
 * message in err. "config" is not a settable key. */
int config_set(struct config *c, const char *key, const char *value,
               char *err, size_t errcap);

/* Apply a config file. 0, -EINVAL (bad line: "FILE:LINE: ..."), or -errno
 * when the file cannot be read (message in err). */
int config_load_file(struct config *c, const char *path, char *err, size_t errcap);

/* Cross-option checks (poll-min <= poll-max, segment-mb <= store-mb). */
int config_check(const struct config *c, char *err, size_t errcap);

/* Defaults, then --config FILE (wherever it appears), then the other flags.
 * Returns enum config_action or -EINVAL (message in err). */
int config_parse_args(struct config *c, int argc, char *const argv[],
                      uid_t euid, const char *xdg, char *err, size_t errcap);

/* The --help text. */
void config_usage(FILE *f, const char *prog);

/* Write the config as "key = value" lines (loadable with --config). */
void config_dump(FILE *f, const struct config *c);

#endif /* D9_DAEMON_CONFIG_H */
