/*
 * store_lock.h — the store's writer lock: flock(LOCK_EX | LOCK_NB) on
 * <store>/.lock. One writer at a time: d9collectd for its whole run,
 * `d9 fsck --repair` and `d9 pull` while they write. Readers never take it.
 *
 * Called by: collector/daemon/d9collectd.c, collector/store/fsck.c,
 * collector/cli/cli_pull.c. Must never: follow a symlink, block on a FIFO,
 * or take a file that is not regular (the lock file is opened
 * O_NOFOLLOW | O_NONBLOCK and checked with fstat).
 */
#ifndef D9_COL_STORE_LOCK_H
#define D9_COL_STORE_LOCK_H

#define STORE_LOCK_FILE ".lock"

/* Take the lock of store_dir, creating .lock 0640 if missing. Returns the
 * fd (the caller keeps it open as long as it writes), -EBUSY if another
 * process holds the lock, -EEXIST if .lock is not a regular file (left
 * alone), -errno otherwise. */
int store_lock(const char *store_dir);

#endif /* D9_COL_STORE_LOCK_H */
