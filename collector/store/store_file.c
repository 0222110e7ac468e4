/*
 * store_file.c — non-blocking, no-follow, regular-only opens of store files
 * (see store_file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collector/store/store_file.h"

static const char *kind(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISDIR(m) ? "a directory" : "not a plain file";
}

static int say(char *why, size_t cap, int e, const struct stat *st)
{
    if (!why || !cap)
        return e;
    if (e == -ELOOP)
        snprintf(why, cap, "a symbolic link (store files are never followed)");
    else if (e == -EINVAL && st)
        snprintf(why, cap, "%s, not a regular file", kind(st->st_mode));
    else
        snprintf(why, cap, "%s", strerror(-e));
    return e;
}

int store_file_open(const char *path, char *why, size_t why_cap)
{
    if (why && why_cap)
        why[0] = 0;
    if (!path)
        return say(why, why_cap, -EINVAL, NULL);
    /* O_NONBLOCK: opening a FIFO without a writer returns at once instead
     * of waiting for one; O_NOFOLLOW: a symlink fails with ELOOP */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        int e = -errno;
        /* a socket fails with ENXIO: name what is there, not the errno */
        if (e != -ENOENT && e != -ELOOP && lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
            return say(why, why_cap, S_ISLNK(st.st_mode) ? -ELOOP : -EINVAL, &st);
        return say(why, why_cap, e, NULL);
    }
    if (fstat(fd, &st) != 0) {
        int e = -errno;
        close(fd);
        return say(why, why_cap, e, NULL);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return say(why, why_cap, -EINVAL, &st);
    }
    /* a regular file: reads never block anyway; clear the flag all the same */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = -errno;
        close(fd);
        return say(why, why_cap, e, NULL);
    }
    return fd;
}

int store_file_check(const char *path, int *exists, char *why, size_t why_cap)
{
    struct stat st;
    if (why && why_cap)
        why[0] = 0;
    if (exists)
        *exists = 0;
    if (!path)
        return say(why, why_cap, -EINVAL, NULL);
    /* by lstat, never by an open: closing any descriptor of a file drops
     * every fcntl lock this process holds on it, and SQLite's locks on the
     * index's -shm (its "someone has it open" lock among them) are what
     * keep another process from truncating the mapped wal-index */
    if (lstat(path, &st) != 0)
        return 0;       /* absent, or an error the opener reports in its words */
    if (exists)
        *exists = 1;
    if (S_ISLNK(st.st_mode))
        return say(why, why_cap, -ELOOP, &st);
    if (!S_ISREG(st.st_mode))
        return say(why, why_cap, -EINVAL, &st);
    return 0;
}
