/*
 * perfmap.c — bounded, incremental parser and safe reader of
 * /tmp/perf-PID.map files (see perfmap.h for the format, the rules and the
 * callers).
 */
#include "collector/store/perfmap.h"
#include "collector/store/sym.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void perfmap_init(struct perfmap *m)
{
    memset(m, 0, sizeof *m);
}

void perfmap_free(struct perfmap *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->e[i].name);
    free(m->e);
    perfmap_init(m);
}

/* Hex field at s[*i, len) (optional 0x), 1..16 digits; 0 or -1. */
static int hexfield(const char *s, size_t len, size_t *i, uint64_t *out)
{
    size_t p = *i;
    if (p + 1 < len && s[p] == '0' && (s[p + 1] == 'x' || s[p + 1] == 'X'))
        p += 2;
    const char *q = s + p;
    if (!sym_parse_hex(&q, s + len, out))
        return -1;
    *i = (size_t)(q - s);
    return 0;
}

/* One line without its '\n': 1 entry added, 0 skipped, -ENOMEM. */
static int parse_line(struct perfmap *m, const char *s, size_t len)
{
    size_t i = 0;
    uint64_t start, size;
    if (len && s[len - 1] == '\r')
        len--;
    if (hexfield(s, len, &i, &start) || i >= len || s[i] != ' ')
        goto bad;
    while (i < len && s[i] == ' ')
        i++;
    if (hexfield(s, len, &i, &size) || i >= len || s[i] != ' ')
        goto bad;
    while (i < len && s[i] == ' ')
        i++;
    if (size == 0 || start + size < start || i >= len)
        goto bad;
    if (m->n >= PERFMAP_ENTRIES_MAX) {
        m->full = 1;
        return 0;
    }
    size_t nl = len - i;
    if (nl > PERFMAP_NAME_MAX)
        nl = PERFMAP_NAME_MAX;
    char *name = malloc(nl + 1);
    if (!name)
        return -ENOMEM;
    for (size_t k = 0; k < nl; k++) {
        unsigned char c = (unsigned char)s[i + k];
        name[k] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    name[nl] = 0;
    if (m->n == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 64;
        struct perfmap_entry *ne = realloc(m->e, nc * sizeof *ne);
        if (!ne) {
            free(name);
            return -ENOMEM;
        }
        m->e = ne;
        m->cap = nc;
    }
    m->e[m->n++] = (struct perfmap_entry){ .start = start, .end = start + size, .name = name };
    return 1;
bad:
    if (len)
        m->bad++;
    return 0;
}

long perfmap_feed(struct perfmap *m, const char *buf, size_t len)
{
    long added = 0;
    for (size_t i = 0; i < len; i++) {
        char c = buf[i];
        if (c == '\n') {
            if (m->overlong) {
                m->overlong = 0;
                m->bad++;
            } else {
                int r = parse_line(m, m->line, m->linelen);
                if (r < 0)
                    return r;
                added += r;
            }
            m->linelen = 0;
            continue;
        }
        if (m->overlong)
            continue;
        if (m->linelen == sizeof m->line) {
            m->overlong = 1;
            m->linelen = 0;
            continue;
        }
        m->line[m->linelen++] = c;
    }
    m->off += len;
    return added;
}

long perfmap_poll(struct perfmap *m, uint32_t pid, uint32_t uid, const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/perf-%u.map", dir ? dir : PERFMAP_DIR, pid);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    struct stat sb;
    long rc = 0;
    if (fstat(fd, &sb) != 0) {
        rc = -errno;
        goto out;
    }
    if (!S_ISREG(sb.st_mode)) {
        rc = -EINVAL;
        goto out;
    }
    if (sb.st_uid != uid) {
        rc = -EPERM;
        goto out;
    }
    if ((uint64_t)sb.st_size > PERFMAP_FILE_MAX) {
        rc = -EFBIG;
        goto out;
    }
    if ((uint64_t)sb.st_size < m->off) {
        /* shrunk: another file (pid reuse) or rewritten; start over */
        perfmap_free(m);
    }
    char buf[65536];
    while (m->off < (uint64_t)sb.st_size) {
        size_t want = (uint64_t)sb.st_size - m->off;
        if (want > sizeof buf)
            want = sizeof buf;
        ssize_t r = pread(fd, buf, want, (off_t)m->off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            goto out;
        }
        if (r == 0)
            break;
        long a = perfmap_feed(m, buf, (size_t)r);
        if (a < 0) {
            rc = a;
            goto out;
        }
        rc += a;
    }
out:
    close(fd);
    return rc;
}

const struct perfmap_entry *perfmap_lookup(const struct perfmap *m, uint64_t addr)
{
    for (size_t i = m->n; i-- > 0;)
        if (addr >= m->e[i].start && addr < m->e[i].end)
            return &m->e[i];
    return NULL;
}
