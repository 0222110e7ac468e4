/*
 * pidfile.c — create and remove d9collectd's pidfile safely (see pidfile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collector/daemon/pidfile.h"

#define PIDFILE_MAX 32      /* a pid and a newline fit easily */

int pidfile_unlink_same(const char *path, uint64_t dev, uint64_t ino, unsigned mode_type)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return -errno;
    if ((st.st_mode & S_IFMT) != mode_type || (uint64_t)st.st_dev != dev ||
        (uint64_t)st.st_ino != ino)
        return -ESTALE;
    return unlink(path) == 0 ? 0 : -errno;
}

/* 1 if pid runs a program named d9collectd. */
static int is_collector(long pid)
{
    char p[64], comm[32] = "";
    snprintf(p, sizeof p, "/proc/%ld/comm", pid);
    FILE *f = fopen(p, "re");
    if (!f)
        return 0;
    int ok = fgets(comm, sizeof comm, f) != NULL;
    fclose(f);
    return ok && strcmp(comm, "d9collectd\n") == 0;
}

/* What is at path: 0 a leftover pidfile (removed here), -EBUSY a running
 * collector's, -EEXIST anything else. */
static int clear_leftover(const char *path)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -EEXIST;     /* a symlink (ELOOP), unreadable, ... */
    struct stat st;
    char b[PIDFILE_MAX + 1];
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
        st.st_nlink == 1 && st.st_size > 0 && st.st_size <= PIDFILE_MAX)
        n = read(fd, b, PIDFILE_MAX);
    close(fd);
    if (n <= 1 || b[n - 1] != '\n')
        return -EEXIST;
    long pid = 0;
    for (ssize_t i = 0; i < n - 1; i++) {
        if (b[i] < '0' || b[i] > '9' || pid > 4194304)
            return -EEXIST;
        pid = pid * 10 + (b[i] - '0');
    }
    if (pid <= 0)
        return -EEXIST;
    if ((kill((pid_t)pid, 0) == 0 || errno == EPERM) && is_collector(pid))
        return -EBUSY;
    int rc = pidfile_unlink_same(path, (uint64_t)st.st_dev, (uint64_t)st.st_ino, S_IFREG);
    return rc == 0 || rc == -ENOENT ? 0 : -EEXIST;
}

int pidfile_create(struct pidfile *pf, const char *path)
{
    memset(pf, 0, sizeof *pf);
    if (strlen(path) >= sizeof pf->path)
        return -ENAMETOOLONG;
    int fd = -1;
    for (int tries = 0; tries < 2 && fd < 0; tries++) {
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST)
            return -errno;
        if (fd < 0 && tries == 0) {
            int rc = clear_leftover(path);
            if (rc)
                return rc;
        }
    }
    if (fd < 0)
        return -EEXIST;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    pf->dev = (uint64_t)st.st_dev;
    pf->ino = (uint64_t)st.st_ino;
    memcpy(pf->path, path, strlen(path) + 1);
    char b[PIDFILE_MAX];
    int n = snprintf(b, sizeof b, "%ld\n", (long)getpid());
    int ok = write(fd, b, (size_t)n) == n;
    close(fd);
    if (!ok) {
        pidfile_remove(pf);
        return -EIO;
    }
    return 0;
}

void pidfile_remove(struct pidfile *pf)
{
    if (pf->path[0])
        (void)pidfile_unlink_same(pf->path, pf->dev, pf->ino, S_IFREG);
    pf->path[0] = 0;
}
