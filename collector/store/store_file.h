/*
 * store_file.h — opening a file of a store (segment, index, its -wal and
 * -shm) as the hostile input it is: never blocking, never through a
 * symbolic link, only a regular file.
 *
 * A store can be a copy from anywhere (a tarball, another user's directory,
 * a bucket pulled by hand), so a name in it may be a FIFO (open(2) would
 * wait for a writer forever, and every reader with it), a device or a
 * symbolic link to a file the store's owner never meant to show. Every
 * store reader opens through here: seg_reader (segments, so every command,
 * fsck, salvage and re-indexing) and idx (the index and its WAL files,
 * checked before SQLite opens them).
 *
 * Called by: seg_reader.c, idx.c. Must never: block in open(2), follow a
 * symbolic link in the last component, or hand out a descriptor of
 * anything but a regular file.
 */
#ifndef D9_COL_STORE_FILE_H
#define D9_COL_STORE_FILE_H

#include <stddef.h>

/* Open path for reading (O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
 * then O_NONBLOCK cleared) and require a regular file: the descriptor, or
 * -ELOOP (a symbolic link), -EINVAL (not a regular file: FIFO, socket,
 * device, directory) or -errno. why (may be NULL) gets one line without
 * the path: "a symbolic link (not followed)", "a FIFO, not a regular
 * file", strerror. */
int store_file_open(const char *path, char *why, size_t why_cap);

/* The same check for a file another library opens by name (SQLite):
 * -ELOOP or -EINVAL (and why) when path is a symbolic link or not a regular
 * file; else 0, *exists (may be NULL) saying whether it is there (another
 * error, EACCES say, is left to the opener to report). By lstat only: it
 * never opens (and so never closes) the file, whose fcntl locks the
 * process may hold through SQLite. */
int store_file_check(const char *path, int *exists, char *why, size_t why_cap);

#endif /* D9_COL_STORE_FILE_H */
