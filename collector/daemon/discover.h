/*
 * discover.h — finding region files in --shm-dir and deciding whether
 * they may be adopted.
 *
 * Called by d9collectd.c every --scan-ms and when an agent says hello.
 * A region d9.<uid>.<pid>.<start> may be adopted only if the file's owner
 * is the owner of /proc/<pid> and the process's start time matches the
 * name; when the process is gone the owner must equal the uid in the name.
 * While the pid belongs to another process (another start time, whoever
 * owns it) the file is not offered at all: it either is debris of an
 * earlier process with a reused pid, adopted once that pid is free, or a
 * forgery that would mix its records into the live process's. shm_region_map()
 * enforces the owner check against the uid computed here.
 *
 * The index has the last word on a (pid, start) it already holds: a region
 * of a process indexed as another user's, or of one that has ended, is
 * rejected (proc_adopt's -EEXIST, -EALREADY), so a file planted after a
 * process died, under the same pid and start time, can neither change the
 * owner of its row nor rewrite its end, records or exit status.
 *
 * A rejected file (wrong owner, bad header, not a regular file, refused by
 * the index) is counted, logged once and remembered by name and inode, and
 * never opened again while it exists. Once the process its name claims is
 * gone, a rejected regular file (same inode) is removed: nobody drains it,
 * and a sparse region can claim a lot of the shm directory; except one the
 * index refused as another user's process (-EEXIST): once the process is
 * gone nothing tells which of two claimants is genuine, so neither file is
 * deleted until it is old (below). Symlinks and other non-regular files are
 * never removed.
 *
 * Age (--reclaim-age, reclaim_age_s): a regular region file of a process
 * that is gone and that this collector does not adopt (its pid runs another
 * process now, or the index refused it as another user's) is removed once
 * its modification time is reclaim_age_s old. The agent touches the file
 * with each heartbeat, so that is the time since the process last ran.
 * Regions the collector adopts are removed when drained (proc_finish). Must
 * never: follow symlinks, open a rejected file again, or trust anything a
 * hello message claims beyond a file name to look at.
 */
#ifndef D9_DAEMON_DISCOVER_H
#define D9_DAEMON_DISCOVER_H

#include <stdint.h>
#include <sys/types.h>
#include "collector/daemon/config.h"

struct discover_rejected {
    struct discover_rejected *next;
    char name[128];
    ino_t ino;
    int seen;                   /* still present at the last scan */
    int keep;                   /* never removed (refused as another user's process) */
};

struct discover {
    char dir[CONFIG_PATH_MAX];
    struct discover_rejected *rejected;
    uint64_t rejected_count;    /* regions ever rejected (status) */
    uint64_t rejected_removed;  /* rejected files removed once their process was gone */
    uint64_t aged_removed;      /* unadoptable files of gone processes removed by age */
    uint32_t reclaim_age_s;     /* 0: never by age; d9collectd sets --reclaim-age */
};

/* What a candidate file is, as seen from its name and /proc. */
struct discover_candidate {
    char path[CONFIG_PATH_MAX];
    char name[128];             /* basename */
    ino_t ino;
    dev_t dev;
    uint32_t uid, pid;          /* from the name */
    uint64_t start_time;
    int alive;                  /* the named process still runs (same start time) */
    int pid_taken;              /* the pid runs, but not the named process */
    uint32_t expected_uid;      /* owner the file must have */
};

/* Called for each candidate that is neither rejected nor filtered out;
 * returns 0, or a negative errno from the adoption attempt. -EPERM,
 * -EBADMSG, -ELOOP, -EINVAL, -ENODEV, -EACCES, -EEXIST and -EALREADY mark
 * the file rejected; others
 * (-EAGAIN: not ready yet, -ENOENT: vanished) are retried at the next scan. */
typedef int (*discover_fn)(void *arg, const struct discover_candidate *c);
/* Returns 1 if (pid, start_time) is already adopted (skip it). */
typedef int (*discover_known_fn)(void *arg, uint32_t pid, uint64_t start_time);

void discover_init(struct discover *d, const char *dir);
void discover_free(struct discover *d);

/* Scan the directory once. Returns the number of candidates offered, or -errno
 * if the directory cannot be read (logged by the caller). */
int discover_scan(struct discover *d, discover_known_fn known, discover_fn adopt,
                  void *arg);

/* Look at one file name in the directory (hello messages): same checks. */
int discover_one(struct discover *d, const char *name, discover_known_fn known,
                 discover_fn adopt, void *arg);

/* Remove the candidate's file if it is still the regular file seen by the
 * scan (same device and inode). 0, -ESTALE (another file is there) or -errno. */
int discover_remove(const struct discover_candidate *c);

/* Owner uid of a process (the owner of /proc/<pid>); -ESRCH if gone. */
int discover_owner(uint32_t pid, uint32_t *uid);

/* Fill c->alive/expected_uid from /proc (exposed for the unit tests). */
int discover_classify(struct discover_candidate *c);

#endif /* D9_DAEMON_DISCOVER_H */
