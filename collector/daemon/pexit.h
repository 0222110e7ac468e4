/*
 * pexit.h — how a traced process ended, from the kernel: the collector is
 * not the parent, so waitid() cannot tell it; instead it holds a pidfd of
 * each adopted process (pidfd_open at adoption) and, once the process is
 * gone, asks the kernel for its wait status (PIDFD_GET_INFO with
 * PIDFD_INFO_EXIT, Linux 6.15+), or reads it from /proc/PID/stat
 * (exit_code, field 52) while the process is a zombie. This sees what the
 * agent cannot: _exit(2), exit_group without atexit, and SIGKILL; and an
 * execve, which keeps the process (pid and start time) but ends the image
 * the agent ran in (pexit_image).
 *
 * Called by proc.c (adopt, finish, free). On an older kernel, or when the
 * pidfd cannot be opened, pexit_status says "unknown" and proc.c keeps the
 * agent's record (exitinfo.h).
 *
 * Invariants: the pidfd is taken only when the pid still has the adopted
 * start time after it was opened (no reused pid); the values read from
 * /proc are parsed bounded.
 */
#ifndef D9_COL_PEXIT_H
#define D9_COL_PEXIT_H

#include <stdint.h>

/* A pidfd of pid whose start time is start_time (O_CLOEXEC), or -1. */
int pexit_open(uint32_t pid, uint64_t start_time);

/* The wait status (as waitpid's) of the ended process into *wstatus: 0, or
 * -ENODATA when the kernel does not say (still running, old kernel, no
 * pidfd and no zombie). pidfd may be -1. */
int pexit_status(int pidfd, uint32_t pid, int *wstatus);

/* An identity of the program image pid runs now: /proc/PID/exe's device and
 * inode with the start of its code and of its stack (/proc/PID/stat fields
 * 26 and 28, laid out anew by every execve, randomized by ASLR). A
 * different value for the same pid and start time means the process called
 * execve: the adopted image (and its agent) ended there. 0 = unreadable. */
uint64_t pexit_image(uint32_t pid);

#endif /* D9_COL_PEXIT_H */
