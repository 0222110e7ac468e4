/*
 * perfmap.h — JIT and interpreter frame names from /tmp/perf-PID.map, the
 * perf map a runtime writes about its generated code (node
 * --perf-basic-prof, Python 3.12 -X perf, LuaJIT's perf support): one
 * "START SIZE name" line per code range, START and SIZE in hex.
 *
 * The collector (never the traced process) reads the file of every traced
 * process incrementally (it only grows: each poll reads from where the last
 * stopped, a partial last line waits for its end) and writes its entries
 * into the segment as "d9.map" records whose path is SYM_JIT_PREFIX + name
 * (sym.h), so the query-time symbolizer names a frame in anonymous
 * executable memory by the runtime's name.
 *
 * The file is written by the traced process's uid, so it is hostile input:
 * opened with O_NOFOLLOW (a symlink is refused), must be a regular file
 * owned by the process's uid, at most PERFMAP_FILE_MAX bytes; lines longer
 * than PERFMAP_LINE_MAX, without two hex fields, with a zero size or a range
 * that wraps are skipped and counted; names are cut at PERFMAP_NAME_MAX and
 * control bytes become '?'; at most PERFMAP_ENTRIES_MAX entries are kept.
 * Overlapping entries are all kept: the later one wins (code memory is
 * reused by the JIT).
 *
 * Callers: d9collectd's prof.c (perfmap_poll), the unit test and the fuzz
 * target (perfmap_feed). Never: follow a symlink, read past the cap, abort.
 */
#ifndef D9_COL_PERFMAP_H
#define D9_COL_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

#define PERFMAP_DIR          "/tmp"
#define PERFMAP_FILE_MAX     (16u << 20)     /* refuse larger files */
#define PERFMAP_ENTRIES_MAX  65536u
#define PERFMAP_LINE_MAX     1024u
#define PERFMAP_NAME_MAX     200u

struct perfmap_entry {
    uint64_t start, end;        /* [start, end) */
    char *name;                 /* owned, NUL-terminated, printable */
};

struct perfmap {
    struct perfmap_entry *e;
    size_t n, cap;
    uint64_t off;               /* bytes of the file consumed */
    char line[PERFMAP_LINE_MAX];
    size_t linelen;
    int overlong;               /* inside a line longer than PERFMAP_LINE_MAX */
    uint64_t bad;               /* lines skipped */
    int full;                   /* PERFMAP_ENTRIES_MAX reached */
};

void perfmap_init(struct perfmap *m);
void perfmap_free(struct perfmap *m);

/* Feed len bytes of the file (continuing the previous feed). Returns the
 * number of entries added, or -ENOMEM. */
long perfmap_feed(struct perfmap *m, const char *buf, size_t len);

/* Open dir/perf-<pid>.map (dir NULL = PERFMAP_DIR) safely and feed what it
 * gained since the last poll. Returns entries added (0 also when there is no
 * file), or a refusal: -ELOOP symlink, -EPERM not owned by uid, -EINVAL not
 * a regular file, -EFBIG above PERFMAP_FILE_MAX, -errno. */
long perfmap_poll(struct perfmap *m, uint32_t pid, uint32_t uid, const char *dir);

/* The newest entry containing addr, NULL if none (tests). */
const struct perfmap_entry *perfmap_lookup(const struct perfmap *m, uint64_t addr);

#endif /* D9_COL_PERFMAP_H */
