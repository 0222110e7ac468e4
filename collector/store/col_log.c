/*
 * col_log.c — one-line stderr diagnostics with a level threshold and a
 * rate limiter for peer-triggered messages (see col_log.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "collector/store/col_log.h"

static const char *g_prog = "d9";          /* set once by col_log_init */
static int g_level = COL_LOG_INFO;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void col_log_init(const char *prog, int level)
{
    if (prog && *prog)
        g_prog = prog;
    if (level >= COL_LOG_ERROR && level <= COL_LOG_DEBUG)
        g_level = level;
}

int col_log_level(void) { return g_level; }

int col_log_level_parse(const char *s, int *level)
{
    for (int i = COL_LOG_ERROR; i <= COL_LOG_DEBUG; i++) {
        if (s && strcmp(s, level_names[i]) == 0) {
            *level = i;
            return 0;
        }
    }
    return -EINVAL;
}

const char *col_log_level_name(int level)
{
    if (level < COL_LOG_ERROR || level > COL_LOG_DEBUG)
        return "?";
    return level_names[level];
}

static void vlog(int level, const char *suffix, const char *fmt, va_list ap)
{
    char line[1024];
    int n = vsnprintf(line, sizeof line, fmt, ap);
    if (n < 0)
        return;
    /* one fprintf = one write on a line-buffered or unbuffered stderr */
    fprintf(stderr, "%s: %s: %s%s\n", g_prog, col_log_level_name(level), line,
            suffix ? suffix : "");
}

void col_log(int level, const char *fmt, ...)
{
    if (level > g_level)
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, NULL, fmt, ap);
    va_end(ap);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void col_log_limited(struct col_ratelimit *rl, int level, const char *fmt, ...)
{
    if (level > g_level)
        return;
    uint64_t now = mono_ns();
    if (rl->last_ns && now - rl->last_ns < COL_LOG_LIMIT_NS) {
        rl->suppressed++;
        return;
    }
    char suffix[96] = "";
    if (rl->suppressed)
        snprintf(suffix, sizeof suffix, " (%llu similar messages suppressed)",
                 (unsigned long long)rl->suppressed);
    rl->last_ns = now;
    rl->suppressed = 0;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, suffix, fmt, ap);
    va_end(ap);
}
