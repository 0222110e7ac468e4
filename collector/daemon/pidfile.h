/*
 * pidfile.h — d9collectd's --pidfile: created safely, removed only if it is
 * still the file this process wrote.
 *
 * Called by d9collectd.c at start-up and at exit. The daemon usually runs as
 * root and PATH comes from a flag or a config file, so whatever is at PATH
 * may be someone else's: a device node, a file with data, a symlink.
 *
 * Rule: the file is created with O_CREAT | O_EXCL | O_NOFOLLOW (never
 * truncated, never through a symlink). Something already at PATH is replaced
 * only if it is a leftover pidfile: a regular file owned by our euid, with
 * one link, holding one decimal pid and a newline, whose process is gone or
 * is not a d9collectd. Anything else is refused (-EEXIST; -EBUSY when a
 * d9collectd runs with that pid). The created file's device and inode are
 * kept: pidfile_remove unlinks PATH only while it names that same file.
 *
 * Must never: truncate, follow or remove a file it did not create.
 */
#ifndef D9_DAEMON_PIDFILE_H
#define D9_DAEMON_PIDFILE_H

#include <stdint.h>
#include "collector/daemon/config.h"

struct pidfile {
    char path[CONFIG_PATH_MAX];     /* "" = none created */
    uint64_t dev, ino;
};

/* Write getpid() to path. 0, -EEXIST (something else is there), -EBUSY (a
 * running d9collectd's pidfile) or -errno; pf->path is "" on failure. */
int pidfile_create(struct pidfile *pf, const char *path);

/* Remove the pidfile if path still names the file pidfile_create made. */
void pidfile_remove(struct pidfile *pf);

/* Remove path only if it is (dev, ino) and of the type mode_type (S_IFREG,
 * S_IFSOCK, ...), never through a symlink. 0, -ESTALE (another file is
 * there, left alone) or -errno. Used for every file the daemon made. */
int pidfile_unlink_same(const char *path, uint64_t dev, uint64_t ino, unsigned mode_type);

#endif /* D9_DAEMON_PIDFILE_H */
