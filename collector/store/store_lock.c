/*
 * store_lock.c — the store's writer lock (see store_lock.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collector/store/store_lock.h"

int store_lock(const char *store_dir)
{
    if (!store_dir)
        return -EINVAL;
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/%s", store_dir, STORE_LOCK_FILE);
    if (n < 0 || (size_t)n >= sizeof path)
        return -ENAMETOOLONG;
    /* never through a symlink, never blocking on a FIFO; only a regular file */
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0640);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -EEXIST;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno == EWOULDBLOCK ? -EBUSY : -errno;
        close(fd);
        return e;
    }
    return fd;
}
