/*
 * discover.c — region discovery and the ownership rule (see discover.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "collector/daemon/discover.h"
#include "collector/store/col_log.h"
#include "shm/region.h"

void discover_init(struct discover *d, const char *dir)
{
    memset(d, 0, sizeof *d);
    snprintf(d->dir, sizeof d->dir, "%s", dir);
}

void discover_free(struct discover *d)
{
    struct discover_rejected *r = d->rejected;
    while (r) {
        struct discover_rejected *n = r->next;
        free(r);
        r = n;
    }
    d->rejected = NULL;
}

int discover_owner(uint32_t pid, uint32_t *uid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%u", pid);
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ENOENT ? -ESRCH : -errno;
    *uid = (uint32_t)st.st_uid;
    return 0;
}

int discover_classify(struct discover_candidate *c)
{
    uint64_t st = 0;
    int rc = shm_proc_start_time(c->pid, &st);
    c->alive = 0;
    c->expected_uid = c->uid;
    c->pid_taken = rc == 0 && st != c->start_time;
    if (rc == 0 && st == c->start_time) {
        uint32_t owner;
        rc = discover_owner(c->pid, &owner);
        if (rc == 0) {
            c->alive = 1;
            c->expected_uid = owner;
            /* re-check: the pid could have been reused between the two reads */
            if (shm_proc_start_time(c->pid, &st) != 0 || st != c->start_time) {
                c->alive = 0;
                c->expected_uid = c->uid;
                c->pid_taken = rc == 0;
            }
        }
    }
    return 0;
}

int discover_remove(const struct discover_candidate *c)
{
    struct stat st;
    if (lstat(c->path, &st) != 0)
        return -errno;
    if (!S_ISREG(st.st_mode) || st.st_ino != c->ino || st.st_dev != c->dev)
        return -ESTALE;
    return unlink(c->path) == 0 ? 0 : -errno;
}

/* The file (st) of a process that is gone is older than the reclaim age. */
static int aged(const struct discover *d, const struct stat *st)
{
    time_t now = time(NULL);
    return d->reclaim_age_s && now > st->st_mtime &&
           (uint64_t)(now - st->st_mtime) >= d->reclaim_age_s;
}

static void remove_aged(struct discover *d, const struct discover_candidate *c)
{
    if (discover_remove(c) == 0) {
        d->aged_removed++;
        col_info("removed region %s: its process (pid %u) is gone and nothing drained it "
                 "for %u s",
                 c->path, c->pid, d->reclaim_age_s);
    }
}

static struct discover_rejected *find_rejected(struct discover *d, const char *name, ino_t ino)
{
    for (struct discover_rejected *r = d->rejected; r; r = r->next)
        if (r->ino == ino && strcmp(r->name, name) == 0)
            return r;
    return NULL;
}

static void reject(struct discover *d, const struct discover_candidate *c, int err)
{
    struct discover_rejected *r = calloc(1, sizeof *r);
    d->rejected_count++;
    const char *why = err == -EPERM ? "file owner is not the owner of the process"
                    : err == -EBADMSG ? "invalid region header"
                    : err == -ELOOP ? "symbolic link"
                    : err == -ENODEV ? "not a regular file"
                    : err == -EEXIST ? "the index holds this process as another user's (a "
                                       "late region never changes its owner; the file is "
                                       "left in place)"
                    : err == -EALREADY ? "the index holds this process as ended (a late "
                                         "region never rewrites a finished process)"
                    : strerror(-err);
    col_warn("rejected region %s (pid %u, uid in name %u, expected owner %u): %s; "
             "it will not be opened again", c->path, c->pid, c->uid, c->expected_uid, why);
    if (!r)
        return;
    snprintf(r->name, sizeof r->name, "%s", c->name);
    r->ino = c->ino;
    r->seen = 1;
    r->keep = err == -EEXIST;
    r->next = d->rejected;
    d->rejected = r;
}

static int is_reject_error(int rc)
{
    return rc == -EPERM || rc == -EBADMSG || rc == -ELOOP || rc == -EINVAL || rc == -ENODEV ||
           rc == -EACCES || rc == -EEXIST || rc == -EALREADY;
}

/* One directory entry: 1 offered, 0 skipped. */
static int consider(struct discover *d, const char *name, discover_known_fn known,
                    discover_fn adopt, void *arg)
{
    struct discover_candidate c;
    memset(&c, 0, sizeof c);
    if (strlen(name) >= sizeof c.name ||
        shm_region_parse_name(name, &c.uid, &c.pid, &c.start_time) != 0)
        return 0;
    if (known(arg, c.pid, c.start_time))
        return 0;
    snprintf(c.name, sizeof c.name, "%s", name);
    if (snprintf(c.path, sizeof c.path, "%s/%s", d->dir, name) >= (int)sizeof c.path)
        return 0;
    struct stat st;
    if (lstat(c.path, &st) != 0)
        return 0;
    c.ino = st.st_ino;
    c.dev = st.st_dev;
    struct discover_rejected *r = find_rejected(d, name, st.st_ino);
    discover_classify(&c);
    if (r) {
        r->seen = 1;
        /* nobody will drain it: once its process is gone it is debris */
        if (!c.alive && !r->keep && S_ISREG(st.st_mode) && discover_remove(&c) == 0) {
            d->rejected_removed++;
            col_info("removed rejected region %s: pid %u is gone", c.path, c.pid);
        } else if (!c.alive && S_ISREG(st.st_mode) && aged(d, &st)) {
            remove_aged(d, &c);
        }
        return 0;
    }
    if (c.pid_taken) {
        /* not while the pid is another process's (see discover.h) */
        if (S_ISREG(st.st_mode) && st.st_uid == c.uid && aged(d, &st))
            remove_aged(d, &c);
        return 0;
    }
    int rc;
    if (S_ISLNK(st.st_mode))
        rc = -ELOOP;
    else if (!S_ISREG(st.st_mode))
        rc = -ENODEV;
    else if (st.st_uid != c.expected_uid)
        rc = -EPERM;        /* decided without opening the file */
    else
        rc = adopt(arg, &c);
    if (is_reject_error(rc))
        reject(d, &c, rc);
    return 1;
}

int discover_scan(struct discover *d, discover_known_fn known, discover_fn adopt,
                  void *arg)
{
    DIR *dir = opendir(d->dir);
    if (!dir)
        return -errno;
    for (struct discover_rejected *r = d->rejected; r; r = r->next)
        r->seen = 0;
    size_t pl = strlen(D9_REGION_PREFIX);
    int offered = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (strncmp(de->d_name, D9_REGION_PREFIX, pl) != 0)
            continue;
        offered += consider(d, de->d_name, known, adopt, arg);
    }
    closedir(dir);
    /* forget rejected files that are gone: a new file of that name is new */
    struct discover_rejected **pp = &d->rejected;
    while (*pp) {
        if (!(*pp)->seen) {
            struct discover_rejected *dead = *pp;
            *pp = dead->next;
            free(dead);
        } else {
            pp = &(*pp)->next;
        }
    }
    return offered;
}

int discover_one(struct discover *d, const char *name, discover_known_fn known,
                 discover_fn adopt, void *arg)
{
    if (!name || strchr(name, '/') || strncmp(name, D9_REGION_PREFIX, strlen(D9_REGION_PREFIX)))
        return -EINVAL;
    return consider(d, name, known, adopt, arg);
}
