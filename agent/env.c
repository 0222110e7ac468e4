/*
 * env.c — DIAL9_* parsing into struct ag_config (see env.h).
 *
 * Called once by d9_init() and by the unit tests. Pure: no getenv, no I/O,
 * no allocation; it only formats the error line for the caller to print.
 * It must never accept a value it cannot honour exactly (a ring size it
 * would silently clamp, an endpoint zmq cannot connect): a demanding user
 * prefers "tracing disabled, here is why" over a quietly different setup.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "agent/env.h"
#include "shm/paths.h"

/* d9.h documents these ranges and defaults for its users */
_Static_assert(AG_RING_KB_MIN == 4u && AG_RING_KB_MAX == 65536u && D9_RING_KB_DEFAULT == 1024u,
               "d9.h: DIAL9_RING_KB 4..65536, default 1024");
_Static_assert(AG_MAX_THREADS_MIN == 1u && D9_RINGS_MAX == 4096u && D9_RINGS_DEFAULT == 64u,
               "d9.h: DIAL9_MAX_THREADS 1..4096, default 64");
_Static_assert(AG_SCHED_SAMPLE_US_DEFAULT == 1000u && AG_SCHED_SAMPLE_US_MAX == 60000000u,
               "d9.h: DIAL9_SCHED_SAMPLE_US 0..60000000, default 1000");

#define AG_DEFAULT_RUNTIME "main"
#define AG_ERR_VALUE_SHOWN 64u          /* bytes of a bad value quoted in the error */
#define AG_IPC_PATH_MAX    107u         /* sizeof(sockaddr_un.sun_path) - 1 */

static void copy_cstr(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = 0;
}

void ag_env_defaults(struct ag_config *c, uint32_t uid, const char *xdg_runtime_dir,
                     const char *comm)
{
    memset(c, 0, sizeof *c);
    c->enabled = 1;
    c->ring_data_size = D9_RING_KB_DEFAULT * 1024u;
    c->max_threads = D9_RINGS_DEFAULT;
    paths_default_endpoint(uid, xdg_runtime_dir, c->collector, sizeof c->collector);
    copy_cstr(c->runtime_name, sizeof c->runtime_name,
              comm && comm[0] ? comm : AG_DEFAULT_RUNTIME);
    copy_cstr(c->shm_dir, sizeof c->shm_dir, D9_SHM_DIR);
    c->sched_sample_us = AG_SCHED_SAMPLE_US_DEFAULT;
    c->shm_cap_mb = AG_SHM_CAP_MB_DEFAULT;
    c->meta_size = D9_META_SIZE_DEFAULT;
    c->clock_source = 0;
    c->housekeeping = 1;
    c->control = 1;
}

int ag_env_parse_bool(const char *s)
{
    static const char *const yes[] = { "1", "true", "yes", "on" };
    static const char *const no[] = { "0", "false", "no", "off" };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(s, yes[i]) == 0)
            return 1;
        if (strcasecmp(s, no[i]) == 0)
            return 0;
    }
    return -EINVAL;
}

int ag_env_log_on(const char *value)
{
    return value && *value && strcmp(value, "0") != 0;
}

int ag_env_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
    if (!s || !*s)
        return -EINVAL;
    uint64_t v = 0;
    int big = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -EINVAL;
        if (!big) {
            v = v * 10 + (uint64_t)(*p - '0');
            if (v > UINT32_MAX)
                big = 1;        /* keep scanning: "99999999999x" is still not a number */
        }
    }
    if (big || v < lo || v > hi)
        return -ERANGE;
    *out = (uint32_t)v;
    return 0;
}

static uint32_t round_up_pow2(uint32_t v)
{
    uint32_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

/* Quote a value for the error line: control bytes shown as '?', long values cut. */
static void shown_value(char *dst, size_t cap, const char *v)
{
    size_t n = strlen(v), k = 0;
    int cut = n > AG_ERR_VALUE_SHOWN;
    if (cut)
        n = AG_ERR_VALUE_SHOWN;
    for (size_t i = 0; i < n && k + 1 < cap; i++) {
        unsigned char ch = (unsigned char)v[i];
        dst[k++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
    }
    dst[k] = 0;
    if (cut && k + 4 <= cap)
        memcpy(dst + k, "...", 4);
}

static int fail(struct ag_config *c, char *err, size_t errcap, const char *var,
                const char *value, const char *what)
{
    char shown[AG_ERR_VALUE_SHOWN + 4];
    shown_value(shown, sizeof shown, value);
    if (err && errcap)
        snprintf(err, errcap, "d9: %s=%s %s; tracing disabled", var, shown, what);
    c->enabled = 0;
    return -EINVAL;
}

static int printable_name(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    return 1;
}

/* ipc://PATH (PATH fits a unix socket address) or tcp://HOST:PORT. */
static int valid_endpoint(const char *s)
{
    if (strlen(s) >= AG_ENDPOINT_MAX || !printable_name(s, AG_ENDPOINT_MAX))
        return 0;
    if (strncmp(s, "ipc://", 6) == 0) {
        size_t n = strlen(s + 6);
        return n > 0 && n <= AG_IPC_PATH_MAX;
    }
    if (strncmp(s, "tcp://", 6) == 0) {
        const char *colon = strrchr(s + 6, ':');
        uint32_t port;
        return colon && colon > s + 6 && ag_env_parse_u32(colon + 1, 1, 65535, &port) == 0;
    }
    return 0;
}

static const char *lookup(ag_getenv_fn get, void *ctx, const char *name)
{
    const char *v = get(name, ctx);
    return (v && *v) ? v : NULL;
}

int ag_env_parse(struct ag_config *c, ag_getenv_fn get, void *ctx, char *err, size_t errcap)
{
    const char *v;
    char what[96];
    if (err && errcap)
        err[0] = 0;

    if ((v = lookup(get, ctx, "DIAL9_ENABLED"))) {
        int b = ag_env_parse_bool(v);
        if (b < 0)
            return fail(c, err, errcap, "DIAL9_ENABLED", v,
                        "is not a boolean (1/0, true/false, yes/no, on/off)");
        c->enabled = b;
    }
    if ((v = lookup(get, ctx, "DIAL9_RING_KB"))) {
        uint32_t kb;
        int rc = ag_env_parse_u32(v, AG_RING_KB_MIN, AG_RING_KB_MAX, &kb);
        snprintf(what, sizeof what, "%s (%u..%u)",
                 rc == -ERANGE ? "is out of range for a ring size in KiB"
                               : "is not a number of KiB",
                 AG_RING_KB_MIN, AG_RING_KB_MAX);
        if (rc)
            return fail(c, err, errcap, "DIAL9_RING_KB", v, what);
        c->ring_data_size = round_up_pow2(kb) * 1024u;
    }
    if ((v = lookup(get, ctx, "DIAL9_MAX_THREADS"))) {
        uint32_t n;
        int rc = ag_env_parse_u32(v, AG_MAX_THREADS_MIN, D9_RINGS_MAX, &n);
        snprintf(what, sizeof what, "%s (%u..%u)",
                 rc == -ERANGE ? "is out of range for a number of threads"
                               : "is not a number of threads",
                 AG_MAX_THREADS_MIN, D9_RINGS_MAX);
        if (rc)
            return fail(c, err, errcap, "DIAL9_MAX_THREADS", v, what);
        c->max_threads = n;
    }
    if ((v = lookup(get, ctx, "DIAL9_COLLECTOR")) && strcmp(v, AG_COLLECTOR_NONE) == 0) {
        c->control = 0;         /* no control channel; regions are still found by scanning */
        c->collector[0] = 0;
    } else if (v) {
        if (!valid_endpoint(v))
            return fail(c, err, errcap, "DIAL9_COLLECTOR", v,
                        "is not a collector endpoint (ipc://PATH, tcp://HOST:PORT or none)");
        copy_cstr(c->collector, sizeof c->collector, v);
    }
    if ((v = lookup(get, ctx, "DIAL9_RUNTIME_NAME"))) {
        snprintf(what, sizeof what, "is not a runtime name (1..%u printable bytes)",
                 D9_NAME_MAX);
        if (!printable_name(v, D9_NAME_MAX))
            return fail(c, err, errcap, "DIAL9_RUNTIME_NAME", v, what);
        copy_cstr(c->runtime_name, sizeof c->runtime_name, v);
    }
    if ((v = lookup(get, ctx, "DIAL9_SCHED_SAMPLE_US"))) {
        uint32_t us;
        int rc = ag_env_parse_u32(v, 0, AG_SCHED_SAMPLE_US_MAX, &us);
        snprintf(what, sizeof what, "%s (0..%u)",
                 rc == -ERANGE ? "is out of range for an interval in microseconds"
                               : "is not a number of microseconds",
                 AG_SCHED_SAMPLE_US_MAX);
        if (rc)
            return fail(c, err, errcap, "DIAL9_SCHED_SAMPLE_US", v, what);
        c->sched_sample_us = us;
    }
    if ((v = lookup(get, ctx, "DIAL9_SHM_CAP_MB"))) {
        uint32_t mb;
        int rc = ag_env_parse_u32(v, 0, AG_SHM_CAP_MB_MAX, &mb);
        snprintf(what, sizeof what, "%s (0..%u, 0 = no cap)",
                 rc == -ERANGE ? "is out of range for a size in MiB" : "is not a number of MiB",
                 AG_SHM_CAP_MB_MAX);
        if (rc)
            return fail(c, err, errcap, "DIAL9_SHM_CAP_MB", v, what);
        c->shm_cap_mb = mb;
    }
    if ((v = lookup(get, ctx, "DIAL9_CLOCK"))) {
        if (strcasecmp(v, "auto") == 0)
            c->clock_source = 0;
        else if (strcasecmp(v, "monotonic") == 0)
            c->clock_source = D9_CLOCK_MONOTONIC;
        else
            return fail(c, err, errcap, "DIAL9_CLOCK", v, "is not auto or monotonic");
    }
    if ((v = lookup(get, ctx, "DIAL9_SHM_DIR"))) {
        snprintf(what, sizeof what, "is not an absolute directory path (at most %u bytes)",
                 AG_SHM_DIR_MAX - 1);
        if (v[0] != '/' || strlen(v) >= AG_SHM_DIR_MAX || !printable_name(v, AG_SHM_DIR_MAX))
            return fail(c, err, errcap, "DIAL9_SHM_DIR", v, what);
        copy_cstr(c->shm_dir, sizeof c->shm_dir, v);
    }
    return 0;
}

/* ---- d9_config: the program's own settings ---------------------------------- */

enum cfg_kind { CFG_BOOL, CFG_LONG, CFG_STR };

static const struct cfg_field {
    const char *var, *field;
    enum cfg_kind kind;
    size_t off;
} cfg_fields[] = {
    { "DIAL9_ENABLED",         "enabled",         CFG_BOOL, offsetof(d9_config, enabled) },
    { "DIAL9_RING_KB",         "ring_kb",         CFG_LONG, offsetof(d9_config, ring_kb) },
    { "DIAL9_MAX_THREADS",     "max_threads",     CFG_LONG, offsetof(d9_config, max_threads) },
    { "DIAL9_COLLECTOR",       "collector",       CFG_STR,  offsetof(d9_config, collector) },
    { "DIAL9_RUNTIME_NAME",    "runtime_name",    CFG_STR,  offsetof(d9_config, runtime_name) },
    { "DIAL9_SHM_DIR",         "shm_dir",         CFG_STR,  offsetof(d9_config, shm_dir) },
    { "DIAL9_CLOCK",           "clock",           CFG_STR,  offsetof(d9_config, clock) },
    { "DIAL9_SCHED_SAMPLE_US", "sched_sample_us", CFG_LONG, offsetof(d9_config, sched_sample_us) },
    { "DIAL9_SAMPLER",         "sampler",         CFG_STR,  offsetof(d9_config, sampler) },
    { "DIAL9_SAMPLER_HZ",      "sampler_hz",      CFG_LONG, offsetof(d9_config, sampler_hz) },
    { "DIAL9_SAMPLER_WAIT_MS", "sampler_wait_ms", CFG_LONG, offsetof(d9_config, sampler_wait_ms) },
};

const char *ag_env_config_value(const d9_config *pc, const char *var, char *buf, size_t cap,
                            const char **field)
{
    for (size_t i = 0; i < sizeof cfg_fields / sizeof cfg_fields[0]; i++) {
        const struct cfg_field *f = &cfg_fields[i];
        if (strcmp(f->var, var) != 0)
            continue;
        if (field)
            *field = f->field;
        const char *p = (const char *)pc + f->off;
        switch (f->kind) {
        case CFG_BOOL: {
            int v;
            memcpy(&v, p, sizeof v);
            if (v == D9_UNSET)
                return NULL;
            snprintf(buf, cap, "%d", v);    /* anything but 1 or 0 fails as a boolean */
            return buf;
        }
        case CFG_LONG: {
            long v;
            memcpy(&v, p, sizeof v);
            if (v == D9_UNSET)
                return NULL;
            snprintf(buf, cap, "%ld", v);   /* negative: "is not a number" */
            return buf;
        }
        case CFG_STR: {
            const char *v;
            memcpy(&v, p, sizeof v);
            return v;
        }
        }
    }
    if (field)
        *field = NULL;
    return NULL;
}
