/*
 * crashpt.c — named crash points for fault-injection tests (see crashpt.h).
 *
 * The armed name and count are set once by crashpt_init before the upload
 * threads start; afterwards they are only read. The hit counter is one
 * atomic: two threads reaching the armed point count separately.
 */
#include "collector/daemon/crashpt.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char armed[64];          /* "" = nothing armed */
static unsigned long armed_at = 1;
static atomic_ulong hits;

void crashpt_init(void)
{
    const char *v = getenv(CRASHPT_ENV);
    armed[0] = 0;
    if (!v || !*v)
        return;
    const char *colon = strchr(v, ':');
    size_t n = colon ? (size_t)(colon - v) : strlen(v);
    if (n == 0 || n >= sizeof armed)
        return;
    unsigned long at = 1;
    if (colon) {
        char *end;
        at = strtoul(colon + 1, &end, 10);
        if (*end || at == 0)
            return;
    }
    memcpy(armed, v, n);
    armed[n] = 0;
    armed_at = at;
}

void crashpt(const char *name)
{
    if (!armed[0] || strcmp(name, armed) != 0)
        return;
    if (atomic_fetch_add(&hits, 1) + 1 != armed_at)
        return;
    char line[128];
    int len = snprintf(line, sizeof line, "d9collectd: crash point %s reached (hit %lu): SIGKILL\n",
                       name, armed_at);
    if (len > 0)
        (void)!write(STDERR_FILENO, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
    raise(SIGKILL);
}
