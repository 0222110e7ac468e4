/*
 * config.c — defaults, flags and config file for d9collectd (see config.h).
 *
 * One table describes every option: its key, kind, range and where it is
 * stored. Flags, file lines and --help are all driven by it, so they cannot
 * drift apart.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "collector/daemon/config.h"
#include "collector/daemon/unwind.h"
#include "collector/daemon/met.h"
#include "collector/daemon/met_addr.h"
#include "collector/daemon/pace.h"
#include "collector/s3/s3_cfg.h"
#include "shm/paths.h"
#include "collector/store/col_log.h"

enum opt_kind { OPT_STR, OPT_U32, OPT_LEVEL, OPT_ENUM, OPT_TRIG };

struct opt {
    const char *key;
    enum opt_kind kind;
    size_t off;                 /* offset in struct config */
    uint32_t min, max;          /* OPT_U32 range */
    const char *const *names;   /* OPT_ENUM: the values' names, by value, NULL-terminated */
    const char *expect;         /* OPT_ENUM: "a, b or c", for the error message */
};

static const char *const scope_names[] = { "auto", "cpu", "thread", NULL };
static const char *const clock_names[] = { "auto", "tick", "cpu-clock", NULL };
static const char *const stack_names[] = { "auto", "fp", "dwarf", NULL }; /* enum config_stack_mode */
static const char *const doorbell_names[] = { "off", "on", NULL };   /* by enum config_doorbell */
static const char *const onoff_names[] = { "off", "on", NULL };      /* by enum config_ship_parquet */

#define OFF(f) offsetof(struct config, f)
static const struct opt opts[] = {
    { "store",           OPT_STR,   OFF(store),           0, 0, NULL, NULL },
    { "endpoint",        OPT_STR,   OFF(endpoint),        0, 0, NULL, NULL },
    { "shm-dir",         OPT_STR,   OFF(shm_dir),         0, 0, NULL, NULL },
    { "pidfile",         OPT_STR,   OFF(pidfile),         0, 0, NULL, NULL },
    { "store-group",     OPT_STR,   OFF(store_group),     0, 0, NULL, NULL },
    { "segment-mb",      OPT_U32,   OFF(segment_mb),      1, CONFIG_SEGMENT_MB_MAX, NULL, NULL },
    { "segment-seconds", OPT_U32,   OFF(segment_seconds), 1, CONFIG_SEGMENT_SECONDS_MAX, NULL, NULL },
    { "store-mb",        OPT_U32,   OFF(store_mb),        1, CONFIG_STORE_MB_MAX, NULL, NULL },
    { "poll-min-us",     OPT_U32,   OFF(poll_min_us),     1, CONFIG_POLL_US_MAX, NULL, NULL },
    { "poll-max-us",     OPT_U32,   OFF(poll_max_us),     1, CONFIG_POLL_US_MAX, NULL, NULL },
    { "scan-ms",         OPT_U32,   OFF(scan_ms),         CONFIG_SCAN_MS_MIN, CONFIG_SCAN_MS_MAX,
      NULL, NULL },
    { "reclaim-age",     OPT_U32,   OFF(reclaim_age),     1, CONFIG_RECLAIM_AGE_MAX, NULL, NULL },
    { "log-level",       OPT_LEVEL, OFF(log_level),       0, 0, NULL, NULL },
    { "perf-freq",       OPT_U32,   OFF(perf_freq),       0, PERF_FREQ_MAX, NULL, NULL },
    { "switch-period",   OPT_U32,   OFF(switch_period),   0, CONFIG_SWITCH_PERIOD_MAX, NULL, NULL },
    { "perf-scope",      OPT_ENUM,  OFF(perf_scope),      0, 0, scope_names,
      "auto, cpu or thread" },
    { "perf-clock",      OPT_ENUM,  OFF(perf_clock),      0, 0, clock_names,
      "auto, tick or cpu-clock" },
    { "stack-mode",      OPT_ENUM,  OFF(stack_mode),      0, 0, stack_names,
      "auto, fp or dwarf" },
    { "doorbell",        OPT_ENUM,  OFF(doorbell),        0, 0, doorbell_names, "on or off" },
    { "ship",            OPT_STR,   OFF(ship),            0, 0, NULL, NULL },
    { "s3-endpoint",     OPT_STR,   OFF(s3_endpoint),     0, 0, NULL, NULL },
    { "s3-region",       OPT_STR,   OFF(s3_region),       0, 0, NULL, NULL },
    { "ship-jobs",       OPT_U32,   OFF(ship_jobs),       1, CONFIG_SHIP_JOBS_MAX, NULL, NULL },
    { "metrics",         OPT_STR,   OFF(metrics),         0, 0, NULL, NULL },
    { "ship-parquet",    OPT_ENUM,  OFF(ship_parquet),    0, 0, onoff_names, "on or off" },
    { "host",            OPT_STR,   OFF(host),            0, 0, NULL, NULL },
    /* triggers (trig.h): parsed, ranged and checked by trig_cfg_set/trig_cfg_check */
    { "retain",                 OPT_TRIG, OFF(trig), 0, 0, NULL, NULL },
    { "trigger-lookback-ms",    OPT_TRIG, OFF(trig), 0, 0, NULL, NULL },
    { "trigger-lookforward-ms", OPT_TRIG, OFF(trig), 0, 0, NULL, NULL },
    { "trigger-debounce-ms",    OPT_TRIG, OFF(trig), 0, 0, NULL, NULL },
    { "trigger-rate",           OPT_TRIG, OFF(trig), 0, 0, NULL, NULL },
    { "trigger-poll-ms",        OPT_TRIG, OFF(trig), 0, 0, NULL, NULL },
    { "trigger-crash",          OPT_TRIG, OFF(trig), 0, 0, NULL, NULL },
    { "trigger-sched-ms",       OPT_TRIG, OFF(trig), 0, 0, NULL, NULL },
    { "trigger-lost",           OPT_TRIG, OFF(trig), 0, 0, NULL, NULL },
    { "trigger-field",          OPT_TRIG, OFF(trig), 0, 0, NULL, NULL },
    { "debug-dir",       OPT_STR,   OFF(debug_dir),       0, 0, NULL, NULL },
    { "stack-bytes",     OPT_U32,   OFF(stack_bytes),     UNW_STACK_BYTES_MIN, UNW_STACK_BYTES_MAX,
      NULL, NULL },
};
#define NOPTS (sizeof opts / sizeof opts[0])

static const char *enum_name(const char *const *names, int v)
{
    for (int i = 0; names[i]; i++)
        if (i == v)
            return names[i];
    return "?";
}

const char *config_perf_scope_name(int scope)
{
    return enum_name(scope_names, scope);
}

const char *config_perf_clock_name(int clock)
{
    return enum_name(clock_names, clock);
}

static int set_str(char *dst, const char *v, size_t cap)
{
    size_t n = strlen(v);
    if (n >= cap)
        return -ENAMETOOLONG;
    memcpy(dst, v, n + 1);
    return 0;
}

void config_defaults(struct config *c, uid_t euid, const char *xdg)
{
    memset(c, 0, sizeof *c);
    paths_default_store((uint32_t)euid, c->store, sizeof c->store);
    paths_default_endpoint((uint32_t)euid, xdg, c->endpoint, sizeof c->endpoint);
    snprintf(c->shm_dir, sizeof c->shm_dir, "%s", "/dev/shm");
    c->segment_mb = CONFIG_SEGMENT_MB_DEFAULT;
    c->segment_seconds = CONFIG_SEGMENT_SECONDS_DEFAULT;
    c->store_mb = CONFIG_STORE_MB_DEFAULT;
    c->poll_min_us = CONFIG_POLL_MIN_US_DEFAULT;
    c->poll_max_us = CONFIG_POLL_MAX_US_DEFAULT;
    c->scan_ms = CONFIG_SCAN_MS_DEFAULT;
    c->reclaim_age = CONFIG_RECLAIM_AGE_DEFAULT;
    c->ship_jobs = CONFIG_SHIP_JOBS_DEFAULT;
    c->perf_freq = CONFIG_PERF_FREQ_DEFAULT;
    c->stack_bytes = UNW_STACK_BYTES;
    c->switch_period = CONFIG_SWITCH_PERIOD_DEFAULT;
    c->doorbell = CONFIG_DOORBELL_ON;
    c->log_level = COL_LOG_INFO;
    trig_cfg_default(&c->trig);
}

static const struct opt *find_opt(const char *key)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (strcmp(opts[i].key, key) == 0)
            return &opts[i];
    /* any other trigger-* key: trig_cfg_set refuses it, naming the known ones */
    if (strncmp(key, "trigger-", 8) == 0)
        for (size_t i = 0; i < NOPTS; i++)
            if (opts[i].kind == OPT_TRIG)
                return &opts[i];
    return NULL;
}

/* Strict decimal: digits only (no sign, no spaces, no suffix), no overflow. */
static int parse_u32(const char *s, uint32_t *out)
{
    if (!*s)
        return -EINVAL;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -EINVAL;
        v = v * 10 + (uint64_t)(*p - '0');
        if (v > UINT32_MAX)
            return -ERANGE;
    }
    *out = (uint32_t)v;
    return 0;
}

int config_set(struct config *c, const char *key, const char *value,
               char *err, size_t errcap)
{
    const struct opt *o = find_opt(key);
    if (!o) {
        snprintf(err, errcap, "unknown option '%s' (see --help)", key);
        return -EINVAL;
    }
    if (!value) {
        snprintf(err, errcap, "option '%s' needs a value", key);
        return -EINVAL;
    }
    char *field = (char *)c + o->off;
    switch (o->kind) {
    case OPT_TRIG:
        return trig_cfg_set(&c->trig, key, value, err, errcap);
    case OPT_STR:
        if (!*value && strcmp(key, "pidfile") != 0 && strcmp(key, "ship") != 0 &&
            strncmp(key, "s3-", 3) != 0 && strcmp(key, "metrics") != 0) {
            snprintf(err, errcap, "option '%s' must not be empty", key);
            return -EINVAL;
        }
        if (strcmp(key, "endpoint") == 0 && !strstr(value, "://")) {
            snprintf(err, errcap, "bad endpoint '%s': expected a ZeroMQ endpoint such as "
                     "ipc:///run/dial9/collector.sock", value);
            return -EINVAL;
        }
        struct sockaddr_in sin;
        if (strcmp(key, "metrics") == 0 && *value && met_addr_parse(value, &sin)) {
            snprintf(err, errcap, "bad value '%.64s' for 'metrics': %s", value, MET_ADDR_EXPECT);
            return -EINVAL;
        }
        if (strcmp(key, "host") == 0) {
            /* a path element of shipped keys (s3_key.h): no byte they would rewrite */
            size_t n = strspn(value, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                     "0123456789._-");
            if (value[n] || strlen(value) > CONFIG_HOST_MAX || value[0] == '.') {
                snprintf(err, errcap, "bad host '%.80s': expected 1..%u bytes of "
                         "[A-Za-z0-9._-], not starting with '.'", value, CONFIG_HOST_MAX);
                return -EINVAL;
            }
            return set_str(field, value, CONFIG_HOST_MAX + 1);
        }
        if (set_str(field, value, CONFIG_PATH_MAX)) {
            snprintf(err, errcap, "value of '%s' is too long (max %d bytes)", key,
                     CONFIG_PATH_MAX - 1);
            return -EINVAL;
        }
        return 0;
    case OPT_U32: {
        uint32_t v;
        if (parse_u32(value, &v) || v < o->min || v > o->max) {
            snprintf(err, errcap, "bad value '%s' for '%s': expected an integer in %" PRIu32
                     "..%" PRIu32, value, key, o->min, o->max);
            return -EINVAL;
        }
        memcpy(field, &v, sizeof v);
        return 0;
    }
    case OPT_LEVEL: {
        int lv;
        if (col_log_level_parse(value, &lv)) {
            snprintf(err, errcap, "bad value '%s' for '%s': expected error, warn, info or debug",
                     value, key);
            return -EINVAL;
        }
        memcpy(field, &lv, sizeof lv);
        return 0;
    }
    case OPT_ENUM:
        for (int i = 0; o->names[i]; i++)
            if (strcmp(value, o->names[i]) == 0) {
                memcpy(field, &i, sizeof i);
                return 0;
            }
        snprintf(err, errcap, "bad value '%s' for '%s': expected %s", value, key, o->expect);
        return -EINVAL;
    }
    return -EINVAL;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = 0;
    return s;
}

int config_load_file(struct config *c, const char *path, char *err, size_t errcap)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        snprintf(err, errcap, "cannot read config file %s: %s", path, strerror(e));
        return -e;
    }
    char line[CONFIG_PATH_MAX + 128];
    unsigned lineno = 0;
    int rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t n = strlen(line);
        if (n == sizeof line - 1 && line[n - 1] != '\n' && !feof(f)) {
            snprintf(err, errcap, "%s:%u: line too long", path, lineno);
            rc = -EINVAL;
            break;
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *s = trim(line);
        if (!*s)
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, errcap, "%s:%u: expected 'key = value', got '%s'", path, lineno, s);
            rc = -EINVAL;
            break;
        }
        *eq = 0;
        char *key = trim(s), *val = trim(eq + 1);
        if (strcmp(key, "config") == 0) {
            snprintf(err, errcap, "%s:%u: 'config' cannot be set from a config file", path,
                     lineno);
            rc = -EINVAL;
            break;
        }
        char msg[512];
        if (config_set(c, key, val, msg, sizeof msg)) {
            snprintf(err, errcap, "%s:%u: %s", path, lineno, msg);
            rc = -EINVAL;
            break;
        }
    }
    if (!rc && ferror(f)) {
        snprintf(err, errcap, "cannot read config file %s", path);
        rc = -EIO;
    }
    fclose(f);
    return rc;
}

int config_check(const struct config *c, char *err, size_t errcap)
{
    if (c->debug_dir[0] && c->debug_dir[0] != '/') {
        snprintf(err, errcap, "debug-dir '%.200s' must be an absolute path", c->debug_dir);
        return -EINVAL;
    }
    if (c->poll_min_us > c->poll_max_us) {
        snprintf(err, errcap, "poll-min-us (%" PRIu32 ") is larger than poll-max-us (%" PRIu32 ")",
                 c->poll_min_us, c->poll_max_us);
        return -EINVAL;
    }
    if (c->perf_clock == CONFIG_PERF_CLOCK_TICK && c->perf_scope == CONFIG_PERF_SCOPE_THREAD) {
        snprintf(err, errcap, "perf-clock tick needs per-CPU events: it cannot go with "
                 "perf-scope thread");
        return -EINVAL;
    }
    if (c->segment_mb > c->store_mb) {
        snprintf(err, errcap, "segment-mb (%" PRIu32 ") is larger than store-mb (%" PRIu32
                 "): a single segment would not fit in the store", c->segment_mb, c->store_mb);
        return -EINVAL;
    }
    if (trig_cfg_check(&c->trig, err, errcap))
        return -EINVAL;
    if (c->ship[0]) {
        struct s3_cfg s3;          /* the URL, endpoint and region; credentials at start-up */
        char why[256];
        if (s3_cfg_init(&s3, c->ship, c->s3_endpoint, c->s3_region, why, sizeof why)) {
            snprintf(err, errcap, "ship: %s", why);
            return -EINVAL;
        }
    } else if (c->ship_parquet == CONFIG_SHIP_PARQUET_ON) {
        snprintf(err, errcap, "ship-parquet needs ship s3://BUCKET/PREFIX");
        return -EINVAL;
    } else if (c->s3_endpoint[0] || c->s3_region[0]) {
        snprintf(err, errcap, "s3-endpoint and s3-region need ship s3://BUCKET/PREFIX");
        return -EINVAL;
    }
    return 0;
}

/* Split "--key=value" / "--key value"; returns the number of argv slots used
 * (1 or 2) or -EINVAL. */
static int split_flag(int argc, char *const argv[], int i, char *key, size_t kcap,
                      const char **val, char *err, size_t errcap)
{
    const char *a = argv[i] + 2;
    const char *eq = strchr(a, '=');
    size_t kl = eq ? (size_t)(eq - a) : strlen(a);
    if (kl >= kcap) {
        snprintf(err, errcap, "unknown option '%s' (see --help)", argv[i]);
        return -EINVAL;
    }
    memcpy(key, a, kl);
    key[kl] = 0;
    if (strcmp(key, "config") != 0 && !find_opt(key)) {
        snprintf(err, errcap, "unknown option '--%s' (see --help)", key);
        return -EINVAL;
    }
    if (eq) {
        *val = eq + 1;
        return 1;
    }
    if (i + 1 >= argc) {
        snprintf(err, errcap, "option '--%s' needs a value", key);
        return -EINVAL;
    }
    *val = argv[i + 1];
    return 2;
}

/* Control bytes (< 0x20, 0x7f) of an error line shown as '?', as the agent
 * shows a bad DIAL9_* value: a message quotes file contents and
 * arguments, and must not write terminal escapes or a binary file to the
 * user's terminal or the journal. */
static void escape_err(char *err)
{
    for (unsigned char *p = (unsigned char *)err; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            *p = '?';
}

static void trig_dump(FILE *f, const struct trig_cfg *t)
{
    fprintf(f, "retain = %s\n", t->retain == TRIG_RETAIN_TRIGGERED ? "triggered" : "all");
    fprintf(f, "trigger-lookback-ms = %" PRIu32 "\n", t->lookback_ms);
    fprintf(f, "trigger-lookforward-ms = %" PRIu32 "\n", t->lookforward_ms);
    fprintf(f, "trigger-debounce-ms = %" PRIu32 "\n", t->debounce_ms);
    fprintf(f, "trigger-rate = %" PRIu32 "\n", t->rate_per_min);
    fprintf(f, "trigger-poll-ms = %" PRIu32 "\n", t->poll_ms);
    fprintf(f, "trigger-crash = %s\n", t->crash ? "yes" : "no");
    fprintf(f, "trigger-sched-ms = %" PRIu32 "\n", t->sched_ms);
    fprintf(f, "trigger-lost = %s\n", t->lost ? "yes" : "no");
    for (uint32_t i = 0; i < t->nfield && i < TRIG_FIELD_MAX; i++)
        fprintf(f, "trigger-field = %s\n", t->field[i].text);
}

static int parse_args(struct config *c, int argc, char *const argv[],
                      uid_t euid, const char *xdg, char *err, size_t errcap);

int config_parse_args(struct config *c, int argc, char *const argv[],
                      uid_t euid, const char *xdg, char *err, size_t errcap)
{
    int rc = parse_args(c, argc, argv, euid, xdg, err, errcap);
    if (rc < 0 && errcap)
        escape_err(err);
    return rc;
}

static int parse_args(struct config *c, int argc, char *const argv[],
                      uid_t euid, const char *xdg, char *err, size_t errcap)
{
    config_defaults(c, euid, xdg);
    char key[64];
    const char *val;

    /* pass 1: --help/--version win; find --config and validate the syntax */
    const char *cfg = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return CONFIG_HELP;
        if (!strcmp(a, "--version") || !strcmp(a, "-V"))
            return CONFIG_VERSION;
    }
    int print = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--print-config")) {
            print = 1;
            continue;
        }
        if (strncmp(a, "--", 2) != 0 || !a[2]) {
            snprintf(err, errcap, "unexpected argument '%s' (d9collectd takes only options; "
                     "see --help)", a);
            return -EINVAL;
        }
        int used = split_flag(argc, argv, i, key, sizeof key, &val, err, errcap);
        if (used < 0)
            return used;
        if (!strcmp(key, "config"))
            cfg = val;
        i += used - 1;
    }
    if (cfg) {
        if (set_str(c->config_file, cfg, sizeof c->config_file)) {
            snprintf(err, errcap, "config file path is too long");
            return -EINVAL;
        }
        int rc = config_load_file(c, cfg, err, errcap);
        if (rc)
            return -EINVAL;
    }
    /* pass 2: flags override the file */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--print-config"))
            continue;
        int used = split_flag(argc, argv, i, key, sizeof key, &val, err, errcap);
        if (used < 0)
            return used;
        if (strcmp(key, "config") != 0) {
            char msg[512];
            if (config_set(c, key, val, msg, sizeof msg)) {
                snprintf(err, errcap, "--%s: %s", key, msg);
                return -EINVAL;
            }
        }
        i += used - 1;
    }
    if (config_check(c, err, errcap))
        return -EINVAL;
    return print ? CONFIG_PRINT : CONFIG_RUN;
}

void config_dump(FILE *f, const struct config *c)
{
    for (size_t i = 0; i < NOPTS; i++) {
        const char *field = (const char *)c + opts[i].off;
        switch (opts[i].kind) {
        case OPT_STR:
            if (*field)
                fprintf(f, "%s = %s\n", opts[i].key, field);
            break;
        case OPT_U32: {
            uint32_t v;
            memcpy(&v, field, sizeof v);
            fprintf(f, "%s = %" PRIu32 "\n", opts[i].key, v);
            break;
        }
        case OPT_LEVEL: {
            int v;
            memcpy(&v, field, sizeof v);
            fprintf(f, "%s = %s\n", opts[i].key, col_log_level_name(v));
            break;
        }
        case OPT_ENUM: {
            int v;
            memcpy(&v, field, sizeof v);
            fprintf(f, "%s = %s\n", opts[i].key, enum_name(opts[i].names, v));
            break;
        }
        case OPT_TRIG:
            break;
        }
    }
    trig_dump(f, &c->trig);
}

void config_usage(FILE *f, const char *prog)
{
    fprintf(f,
"NAME\n"
"    %1$s - d9 telemetry collector: drains the shared-memory rings of traced\n"
"    processes into segment files and indexes them in SQLite\n"
"\n"
"SYNOPSIS\n"
"    %1$s [--config FILE] [--OPTION VALUE | --OPTION=VALUE]...\n"
"    %1$s --print-config [--config FILE] [--OPTION VALUE]...\n"
"    %1$s --help | --version\n"
"\n"
"DESCRIPTION\n"
"    Runs in the foreground (systemd style) and logs to stderr. Traced\n"
"    programs (linked with libd9agent) record events into per-thread rings in\n"
"    a region file under --shm-dir; the collector finds those regions by\n"
"    scanning that directory and when an agent announces itself on\n"
"    --endpoint, copies their records into segment files under --store, and\n"
"    indexes them in STORE/index.sqlite for the d9 command. A region is adopted\n"
"    only if its file is owned by the uid that owns the traced process.\n"
"    When a traced process exits or is killed, what is left in its rings is\n"
"    drained, its exit is recorded, its last segment sealed and its region\n"
"    file removed.\n"
"\n"
"OPTIONS\n"
"    --config FILE\n"
"        Read options from FILE first: one 'key = value' per line, keys are\n"
"        the long option names below without '--', '#' starts a comment.\n"
"        Command-line flags override the file.\n"
"    --store DIR\n"
"        Store directory for segment files and index.sqlite; created if\n"
"        missing. Default: " PATHS_STORE_ROOT " when run as root,\n"
"        otherwise " PATHS_STORE_USER ".\n"
"    --store-group GROUP\n"
"        Group (name or number) whose members may read the store: the\n"
"        directory is made mode 2750 with that group, its files 0640, so\n"
"        only the collector's user and the group's members read traces\n"
"        (process names, exe paths, thread names, events). Applied at\n"
"        every start, to a store of ours created before too. Default: the\n"
"        collector's own group (root's for the root collector: root only).\n"
"    --endpoint ENDPOINT\n"
"        ZeroMQ endpoint of the control socket (agents announce themselves,\n"
"        d9 asks for status and flushes). For ipc:// endpoints the directory\n"
"        is created (mode 0755) and the socket is made connectable by every\n"
"        local user (mode 0666): the collector asks the kernel who is on\n"
"        the other end, and shows a user other than root only its own\n"
"        processes in d9 status and lets it flush only those; a caller it\n"
"        cannot identify (a tcp:// endpoint) sees and flushes none.\n"
"        Default: " PATHS_ENDPOINT_ROOT " as root,\n"
"        otherwise ipc://$XDG_RUNTIME_DIR" PATHS_ENDPOINT_SUBPATH "\n"
"        (ipc:///tmp/dial9-UID/collector.sock without XDG_RUNTIME_DIR).\n"
"    --shm-dir DIR\n"
"        Directory scanned for region files named d9.UID.PID.START.\n"
"        Default: /dev/shm. Agents use DIAL9_SHM_DIR for the same purpose.\n"
"        Created when missing (its parent must exist): mode 1777 when the\n"
"        collector runs as root (like /dev/shm), else 0700.\n"
"    --segment-mb N\n"
"        Seal a process's segment once it holds N MiB (1..%2$u). Default: %3$u.\n"
"    --segment-seconds N\n"
"        Seal a process's segment N seconds after it was opened (1..%4$u).\n"
"        Default: %5$u.\n"
"    --store-mb N\n"
"        Cap on the total size of sealed segments; the oldest segments are\n"
"        deleted first when it is exceeded (1..%6$u). Must be at least\n"
"        --segment-mb. Default: %7$u.\n"
"    --poll-min-us N, --poll-max-us N\n"
"        Adaptive drain sleep: while a ring is at least 1/8 full (or a pass\n"
"        left data behind) it is drained again immediately; otherwise the\n"
"        sleep starts at poll-min-us and doubles up to poll-max-us\n"
"        (1..%8$u), but never past the time the fullest ring needs, at the\n"
"        rate just seen, to reach a quarter full; after a ring was drained\n"
"        immediately, the sleep keeps that pace (rings filling a quarter in\n"
"        under 2 ms restart it from poll-min-us). A trickle of events thus\n"
"        costs one wake-up per poll-max-us, a steady stream one per quarter\n"
"        ring, never a busy loop; a larger poll-max-us means fewer wake-ups,\n"
"        but a burst arriving while the collector sleeps must fit the rings\n"
"        (1 MiB: 32768 poll records). A sleep may end anywhere in its second\n"
"        half, at the first interrupt there (timer slack), so that on a busy\n"
"        CPU it needs no timer interrupt of its own. While every traced\n"
"        process rings its doorbell (--doorbell) the idle sleep may grow to\n"
"        %18$u us if poll-max-us is smaller: a burst rings anyway.\n"
"        Defaults: %9$u and %10$u.\n"
"    --scan-ms N\n"
"        How often DIR is rescanned for new regions and traced processes are\n"
"        checked for exit (%11$u..%12$u). Default: %13$u.\n"
"    --reclaim-age SECONDS\n"
"        A region file in DIR of a process that is gone, which this collector\n"
"        cannot adopt (its pid now runs another process, or the file was\n"
"        rejected), is removed once its modification time (the agent's last\n"
"        heartbeat) is this old (1..%19$u). Regions it adopts are removed when\n"
"        drained. Default: %20$u (an hour).\n"
"    --log-level LEVEL\n"
"        error, warn, info or debug. Default: info.\n"
"    --perf-freq HZ\n"
"        CPU profile: sample every thread of every traced process HZ times per\n"
"        second of CPU time with perf_event_open (0..%14$u, 0 = off); on the\n"
"        tick (--perf-clock), at the nearest rate that divides the tick rate.\n"
"        Where perf is not permitted (perf_event_paranoid, containers), the\n"
"        agents sample themselves instead (DIAL9_SAMPLER). Default: %15$u.\n"
"    --switch-period N\n"
"        Off-CPU profile: record the stack of 1 in N context switches and how\n"
"        long the thread stayed off CPU (0..%16$u, 0 = off; 16 is a good\n"
"        value). Default: %17$u: while it is on, every context switch of every\n"
"        traced thread costs about 3 us more (the kernel schedules the event\n"
"        in and out), so turn it on to investigate where threads block.\n"
"    --perf-scope auto|cpu|thread\n"
"        Where the CPU profile's sampling events live. cpu: one event per CPU\n"
"        of the host, its samples routed to traced processes by pid; it needs\n"
"        CAP_PERFMON (or root, or perf_event_paranoid <= 0) and costs the\n"
"        traced threads nothing at a context switch. Its events are on only\n"
"        while a traced process is live: they interrupt every busy CPU,\n"
"        whoever runs there. thread: one event per traced thread, allowed to\n"
"        the traced processes' owner at perf_event_paranoid <= 2, but each\n"
"        context switch of a traced thread costs about 1.3 us more (about\n"
"        0.3 %% of a busy 2-CPU workload at 99 Hz). auto: cpu when permitted,\n"
"        else thread. Default: auto.\n"
"    --stack-mode auto|fp|dwarf\n"
"        How user stacks are taken. fp: the kernel walks frame pointers (a\n"
"        program built without them shows its leaf frame only). dwarf: each\n"
"        on-CPU sample also copies --stack-bytes of the user stack and the\n"
"        user registers, and the collector unwinds them with DWARF CFI\n"
"        (elfutils libdwfl: .eh_frame, .debug_frame of debug files by\n"
"        build-id under --debug-dir, then /usr/lib/debug). auto: dwarf.\n"
"        Default: auto.\n"
"    --stack-bytes N\n"
"        Bytes of user stack copied per on-CPU sample with --stack-mode\n"
"        dwarf (rounded down to a multiple of 8; %25$u..%26$u). A frame the copy\n"
"        does not reach ends the stack: a loop whose poll function keeps a\n"
"        large array on its stack (libuv's uv__io_poll: about 12 KiB) needs\n"
"        more than the default. Costs ring space (the perf rings grow with\n"
"        it, up to 16 times) and copy time per sample.\n"
"        Default: %27$u.\n"
"    --debug-dir DIR\n"
"        A build-id tree (DIR/xx/rest.debug, as d9's --debug-dir) searched\n"
"        for debug files before /usr/lib/debug/.build-id, which is searched\n"
"        too. Default: $D9_DEBUG_DIR, else none.\n"
"    --perf-clock auto|tick|cpu-clock\n"
"        What the per-CPU events (--perf-scope cpu) take their samples on.\n"
"        tick: the scheduler tick a busy CPU takes anyway (the tracepoint\n"
"        timer:hrtimer_expire_entry of the tick's timer), 1 tick in N, at the\n"
"        rate nearest to --perf-freq that divides the tick rate (99 Hz is\n"
"        83.3 Hz at HZ=250 and 100 Hz at HZ=1000); a sample then costs no\n"
"        interrupt of its own (on a VM, where each timer interrupt is an exit,\n"
"        about 4 us instead of 20 us). It needs tracefs mounted on\n"
"        /sys/kernel/tracing, kernel addresses in /proc/kallsyms and no\n"
"        nohz_full CPUs, and is checked at start-up on a spinning thread.\n"
"        cpu-clock: a timer per CPU at exactly --perf-freq, one interrupt per\n"
"        sample. auto: tick when the check passes, else cpu-clock; the log\n"
"        says which and why. Default: auto.\n"
"    --doorbell on|off\n"
"        on: besides its timer the collector sleeps on every region's doorbell,\n"
"        which a producer rings (one system call) when its ring passes half\n"
"        full and each further quarter, so a burst is drained before the ring\n"
"        overflows however long the timer sleeps. A region whose doorbell\n"
"        rings without data is muted for a while and drained on the timer.\n"
"        Needs futex_waitv (Linux 5.16); without it the timer alone, as off.\n"
"        Default: on.\n"
"    --ship s3://BUCKET/PREFIX\n"
"        Upload every sealed segment, and a small JSON manifest beside it, to\n"
"        S3 or an S3-compatible store under\n"
"        PREFIX/HOST/YYYY-MM-DD/PID-START/ID.d9seg (and ID.manifest.json).\n"
"        Uploads run in their own threads, off the drain path, with retries\n"
"        and backoff; each segment's state (pending, shipped, failed) is kept\n"
"        in the index, so a restart resumes where it stopped. While shipping,\n"
"        retention (--store-mb) deletes shipped segments first and an\n"
"        unshipped one only when the cap leaves no choice (logged and counted\n"
"        in d9 status). Credentials come from AWS_ACCESS_KEY_ID,\n"
"        AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, or from profile\n"
"        AWS_PROFILE (default 'default') of AWS_SHARED_CREDENTIALS_FILE\n"
"        (default ~/.aws/credentials); never from the command line.\n"
"        Default: none (no shipping).\n"
"    --s3-endpoint URL\n"
"        http(s)://HOST[:PORT] of an S3-compatible server, addressed\n"
"        path-style (URL/BUCKET/KEY). Default: AWS S3 of the region.\n"
"    --s3-region REGION\n"
"        Region in the signature. Default: AWS_REGION, AWS_DEFAULT_REGION,\n"
"        else us-east-1.\n"
"    --ship-jobs N\n"
"        Uploads in flight at once (1..16). Default: 2.\n"
"    --metrics [IPV4ADDR:]PORT\n"
"        Serve Prometheus metrics (text format 0.0.4, or OpenMetrics 1.0\n"
"        when the scrape's Accept header prefers\n"
"        application/openmetrics-text, as Prometheus 2.x does) at\n"
"        http://IPV4ADDR:PORT/metrics: per traced process and worker (pid,\n"
"        comm, runtime, worker) polls, a poll duration histogram, busy and\n"
"        parked seconds, scheduling wait (sum and count), wakes and lost\n"
"        records by cause; and the collector's health (drain lag and pass\n"
"        time, rings, segments, bytes written, write errors, with --ship the\n"
"        upload backlog and failures). Counted from the records as the drain\n"
"        copies them, by the definitions of d9 sched and d9 sql's workers\n"
"        table. A PORT alone listens on 127.0.0.1 (port 0: a free one, named\n"
"        in the log); another address than loopback is logged as a warning\n"
"        (no authentication, no encryption).\n"
"        Series: the first %21$u workers of a process, the others in\n"
"        worker=\"other\"; the first %22$u processes, the others in\n"
"        pid=\"other\"; an exited process's series stay %23$u s. The text is\n"
"        rendered by the drain thread every %24$u ms and served from its own\n"
"        thread. docs/collector.md lists every metric. Default: none (off).\n"
"    --ship-parquet on|off\n"
"        on: with each shipped segment also upload its rows as Parquet, one\n"
"        file per table of d9 sql (polls, parks, wakes, cpu_samples, stacks,\n"
"        custom events, ...), under\n"
"        PREFIX/parquet/table=NAME/date=YYYY-MM-DD/host=HOST/ID.parquet, for\n"
"        DuckDB, Athena, Trino or Spark (docs/fleet.md). They are written by\n"
"        'd9 export --format parquet' run as a child process at the upload\n"
"        threads' priority (idle CPU time only), staged in STORE/parquet/\n"
"        until uploaded, and uploaded once each like segments. It needs the\n"
"        d9 program beside d9collectd or on PATH. Default: off.\n"
"    --host NAME\n"
"        The host name in shipped keys, manifests and segment headers\n"
"        (1..63 bytes of [A-Za-z0-9._-]), for hosts whose own name says\n"
"        little (containers). Default: the system's host name.\n"
"    --retain all|triggered\n"
"        all: keep every record (up to --store-mb). triggered: the flight\n"
"        recorder, which keeps the windows around triggers (see below):\n"
"        once a segment's newest record is older than the lookback (plus\n"
"        2 s), each kept window in it is cut out into a segment of its own,\n"
"        indexed with its trigger (the index's kept table: time, pid,\n"
"        bounds, source, reason; every traced process's records in the\n"
"        window are kept), and the rest is deleted. Segments are sealed\n"
"        at least every lookback. --ship uploads the kept windows only,\n"
"        each manifest naming its trigger; --store-mb deletes untriggered\n"
"        data before kept windows. At shutdown every segment of the run is\n"
"        decided; segments of earlier runs are left to --store-mb.\n"
"        Default: all.\n"
"    --trigger-lookback-ms N, --trigger-lookforward-ms N\n"
"        A trigger at time t keeps the window [t - lookback, t + lookforward]\n"
"        of its process; windows that overlap or touch merge (lookback\n"
"        1..3600000, lookforward 0..3600000). Triggers: d9_trigger(reason)\n"
"        in the program, d9 trigger --pid PID from the shell, and the\n"
"        automatic ones below. Each is recorded in the index with its\n"
"        verdict (kept, merged, debounced, rate-limited) and the kept\n"
"        window's bounds: d9 sql's triggers table, d9 events, d9 findings.\n"
"        Defaults: %28$u and %29$u.\n"
"    --trigger-debounce-ms N\n"
"        A trigger less than N ms after the last accepted one of the same\n"
"        process is debounced: recorded, keeps no window (0..3600000).\n"
"        Default: %30$u.\n"
"    --trigger-rate N\n"
"        At most N accepted triggers in any minute (1..6000); the others\n"
"        are rate-limited: recorded, keep no window. Default: %31$u.\n"
"    --trigger-poll-ms N\n"
"        Automatic trigger: a poll longer than N ms, at its end, seen when\n"
"        the drain reads the end (0..3600000, 0 = off). Default: 0.\n"
"    --trigger-crash yes|no\n"
"        Automatic trigger: a traced process that ended on a fatal signal,\n"
"        at its last record, keeping the window before the crash.\n"
"        Default: no.\n"
"    --trigger-sched-ms N\n"
"        Automatic trigger: a worker park/unpark record whose sampled\n"
"        scheduling wait is longer than N ms, at its stamp (0..3600000,\n"
"        0 = off). Default: 0.\n"
"    --trigger-lost yes|no\n"
"        Automatic trigger: records lost by a ring (full, too big), when\n"
"        the drain sees the ring's lost count grow. Default: no.\n"
"    --trigger-field SCHEMA.FIELD>N\n"
"        Automatic trigger: a custom event of schema SCHEMA whose numeric\n"
"        field FIELD is over N (also >=, <, <=), at its stamp, with the\n"
"        reason SCHEMA.FIELD=VALUE > N. Repeatable, up to 8 rules (in the\n"
"        config file one trigger-field line each; an empty value drops the\n"
"        rules before it). Bad syntax is refused at start-up; a schema\n"
"        without the field, or with a string field, is logged once per\n"
"        process and ignored. Default: none.\n"
"    --pidfile FILE\n"
"        Write the collector's pid to FILE at start-up, remove it at exit.\n"
"        Default: none.\n"
"    --print-config\n"
"        Check the configuration, print the effective settings as a config\n"
"        file and exit (0 if valid, 2 if not).\n"
"    -h, --help\n"
"        Print this help and exit.\n"
"    -V, --version\n"
"        Print the version and exit.\n"
"\n"
"FILES\n"
"    STORE/index.sqlite        SQLite index (WAL mode) read by d9\n"
"    STORE/*" ".d9seg" "             sealed segment files\n"
"    STORE/.tmp.*              segments being written; salvaged at start-up\n"
"                              after a crash\n"
"    STORE/parquet/ID/         --ship-parquet: a shipped segment's Parquet\n"
"                              files until they are uploaded\n"
"    SHM_DIR/d9.UID.PID.START  region files of traced processes\n"
"    /etc/dial9/d9collectd.conf\n"
"                              conventional --config file (make install\n"
"                              and the package put a commented one there)\n"
"\n"
"ENVIRONMENT\n"
"    XDG_RUNTIME_DIR  where the default endpoint lives when not run as root.\n"
"    D9_DEBUG_DIR     the default of --debug-dir.\n"
"\n"
"DATA SAFETY\n"
"    A ring's tail is advanced only after its records were written to the\n"
"    segment file, so a traced process that crashes loses nothing it\n"
"    committed, and a collector that is killed resumes from the tails after\n"
"    salvaging its temp segments (records written in the instant between\n"
"    the write and the tail update may then be stored twice). When the store\n"
"    cannot be written (disk full) records stay in the rings, failed writes\n"
"    are counted in `d9 status`, and writing resumes once space returns.\n"
"\n"
"SIGNALS\n"
"    SIGTERM, SIGINT  drain every ring, seal and index all open segments,\n"
"                     exit 0.\n"
"    SIGHUP           ignored (the configuration is read only at start-up).\n"
"\n"
"EXIT STATUS\n"
"    0  clean shutdown\n"
"    1  runtime error (store not writable, endpoint cannot be bound, ...)\n"
"    2  usage error (unknown option, bad value, unreadable config file)\n"
"\n"
"SEE ALSO\n"
"    d9(1) status, d9 flush; the systemd unit d9collectd.service\n",
        prog, CONFIG_SEGMENT_MB_MAX, CONFIG_SEGMENT_MB_DEFAULT, CONFIG_SEGMENT_SECONDS_MAX,
        CONFIG_SEGMENT_SECONDS_DEFAULT, CONFIG_STORE_MB_MAX, CONFIG_STORE_MB_DEFAULT, CONFIG_POLL_US_MAX,
        CONFIG_POLL_MIN_US_DEFAULT, CONFIG_POLL_MAX_US_DEFAULT, CONFIG_SCAN_MS_MIN, CONFIG_SCAN_MS_MAX,
        CONFIG_SCAN_MS_DEFAULT, PERF_FREQ_MAX, CONFIG_PERF_FREQ_DEFAULT, CONFIG_SWITCH_PERIOD_MAX,
        CONFIG_SWITCH_PERIOD_DEFAULT, PACE_BELL_MAX_US, CONFIG_RECLAIM_AGE_MAX,
        CONFIG_RECLAIM_AGE_DEFAULT, MET_WORKERS_MAX, MET_PROCS_MAX,
        (unsigned)(MET_EXITED_KEEP_NS / 1000000000ull), (unsigned)(MET_PUBLISH_NS / 1000000ull),
        UNW_STACK_BYTES_MIN, UNW_STACK_BYTES_MAX, UNW_STACK_BYTES,
        TRIG_LOOKBACK_MS_DEFAULT, TRIG_LOOKFORWARD_MS_DEFAULT, TRIG_DEBOUNCE_MS_DEFAULT,
        TRIG_RATE_PER_MIN_DEFAULT);
}
