/*
 * col_log.h — one-line diagnostics for d9collectd (and the d9 CLI if it wants).
 *
 * Every message is one line on stderr: "<prog>: <level>: <text>". Under
 * systemd the journal adds time and unit, so no timestamp is printed.
 * col_log_limited() is for conditions a hostile or broken peer can trigger
 * at will (malformed messages, corrupt rings): it prints the first one and
 * then at most one line per COL_LOG_LIMIT_NS, saying how many it suppressed.
 *
 * State: the program name and threshold are process-wide settings written
 * once at start-up by main() (col_log_init) and only read afterwards; this is
 * the only global state of this module. Must never allocate or block beyond
 * one write to stderr.
 */
#ifndef D9_COL_LOG_H
#define D9_COL_LOG_H

#include <stdint.h>

enum col_log_level {
    COL_LOG_ERROR = 0,
    COL_LOG_WARN = 1,
    COL_LOG_INFO = 2,
    COL_LOG_DEBUG = 3,
};

#define COL_LOG_LIMIT_NS 10000000000ULL     /* one suppressed-burst line per 10 s */

/* Rate-limit state, one per message source (e.g. per control socket). */
struct col_ratelimit {
    uint64_t last_ns;           /* when a line was last printed, 0 = never */
    uint64_t suppressed;        /* lines dropped since then */
};

void col_log_init(const char *prog, int level);
int col_log_level(void);

/* "error", "warn", "info", "debug" -> level; 0 or -EINVAL. */
int col_log_level_parse(const char *s, int *level);
const char *col_log_level_name(int level);

void col_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void col_log_limited(struct col_ratelimit *rl, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define col_err(...)   col_log(COL_LOG_ERROR, __VA_ARGS__)
#define col_warn(...)  col_log(COL_LOG_WARN, __VA_ARGS__)
#define col_info(...)  col_log(COL_LOG_INFO, __VA_ARGS__)
#define col_debug(...) col_log(COL_LOG_DEBUG, __VA_ARGS__)

#endif /* D9_COL_LOG_H */
