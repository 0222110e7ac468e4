/*
 * loopcfg.c — DIAL9_LOOP, starting the agent once, worker ids (see loopcfg.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include "agent/d9.h"
#include "loopcfg.h"

#define LOOPCFG_QUOTE_MAX 40u           /* bytes of a bad value quoted in the message */

static _Atomic unsigned g_auto;
static const char *g_sampler;           /* written before g_auto (release) */
static _Atomic int g_init_done;
static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;
static _Atomic uint32_t g_next_worker;

static const struct {
    const char *name;
    unsigned kinds;
} g_names[] = {
    { "uv", LOOPCFG_UV },
    { "event", LOOPCFG_EVENT },
    { "epoll", LOOPCFG_EPOLL },
    { "all", LOOPCFG_ALL },
    { "none", 0 },
};

/* value, cut and with anything unprintable as '?', into out */
static void quote(const char *value, char *out, unsigned n)
{
    unsigned i = 0;
    for (; value[i] && i + 1 < n && i < LOOPCFG_QUOTE_MAX; i++)
        out[i] = value[i] >= 0x20 && value[i] < 0x7f ? value[i] : '?';
    out[i] = 0;
}

int loopcfg_parse(const char *value, unsigned *kinds, char *err, unsigned errlen)
{
    unsigned k = 0;
    if (err && errlen)
        err[0] = 0;
    if (!value || !*value) {
        *kinds = LOOPCFG_DEFAULT;
        return 0;
    }
    for (const char *p = value;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        size_t i = 0;
        for (; i < sizeof g_names / sizeof g_names[0]; i++)
            if (strlen(g_names[i].name) == len && strncmp(g_names[i].name, p, len) == 0)
                break;
        if (i == sizeof g_names / sizeof g_names[0]) {
            if (err && errlen) {
                char q[LOOPCFG_QUOTE_MAX + 1];
                quote(value, q, sizeof q);
                snprintf(err, errlen, "d9: %s=\"%s\": expected a comma-separated list of "
                         "uv, event, epoll (or all, none); tracing disabled", LOOPCFG_VAR, q);
            }
            return -EINVAL;
        }
        k |= g_names[i].kinds;
        if (!end)
            break;
        p = end + 1;
    }
    *kinds = k;
    return 0;
}

void loopcfg_set_auto(unsigned kinds, const char *sampler)
{
    g_sampler = sampler;        /* before g_auto: read by init_once after it */
    atomic_store_explicit(&g_auto, kinds, memory_order_release);
}

unsigned loopcfg_auto(void)
{
    return atomic_load_explicit(&g_auto, memory_order_relaxed);
}

static void init_once(void)
{
    int err = errno;
    d9_config cfg = D9_CONFIG_INIT;
    cfg.sampler = g_sampler;
    d9_init_with(&cfg);         /* logs its own errors; the program runs untraced */
    errno = err;
    atomic_store_explicit(&g_init_done, 1, memory_order_release);
}

void loopcfg_ensure_init(void)
{
    if (__builtin_expect(atomic_load_explicit(&g_init_done, memory_order_acquire), 1))
        return;
    if (atomic_load_explicit(&g_auto, memory_order_acquire)) {
        int err = errno;
        pthread_once(&g_init_once, init_once);
        errno = err;
    }
}

int loopcfg_started(void)
{
    return atomic_load_explicit(&g_init_done, memory_order_acquire);
}

uint16_t loopcfg_worker_next(void)
{
    uint32_t w = atomic_load_explicit(&g_next_worker, memory_order_relaxed);
    do {
        if (w >= D9_WORKER_NONE_ID)
            return D9_WORKER_NONE_ID;
    } while (!atomic_compare_exchange_weak_explicit(&g_next_worker, &w, w + 1,
                                                    memory_order_relaxed,
                                                    memory_order_relaxed));
    return (uint16_t)w;
}
