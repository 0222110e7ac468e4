/*
 * crashpt.h — named crash points for fault-injection tests: the collector
 * kills itself (SIGKILL, as `kill -9` would) at an exact step of its work,
 * so a test can check what a crash between two steps leaves behind (a
 * segment written but its ring tails not published, a segment sealed but
 * not indexed, an upload done but not recorded).
 *
 * Armed by the environment: D9_CRASH_AT=NAME[:N] kills the process at the
 * N-th time (default 1) the point NAME is reached; unset, every point is a
 * load and a compare. Names (CRASHPT_*, below) are the only values that
 * mean anything; any other value arms nothing. Read once, by crashpt_init.
 *
 * Called by: d9collectd.c (crashpt_init at start-up), drain.c, storedir.c,
 * ship.c (crashpt, at the steps named below).
 *
 * Must never: do anything when D9_CRASH_AT is unset, or take a lock.
 */
#ifndef D9_DAEMON_CRASHPT_H
#define D9_DAEMON_CRASHPT_H

#define CRASHPT_ENV "D9_CRASH_AT"

/* Records are in the segment file (write(2) done), their ring tails are not
 * published yet (drain.c, commit). */
#define CRASHPT_FLUSHED "flushed-unpublished"
/* A segment with records whose tails are not published yet is sealed and
 * indexed; the tails are not published (drain.c, drain_seal). */
#define CRASHPT_SEALED "sealed-unpublished"
/* A segment is sealed (renamed to its final name); no index row yet
 * (storedir.c, storedir_seal). */
#define CRASHPT_RENAMED "renamed-unindexed"
/* A sealed segment is indexed; the upload threads were not told yet
 * (storedir.c, storedir_seal). */
#define CRASHPT_INDEXED "indexed-unkicked"
/* A segment and its manifest are uploaded; the index does not say so yet
 * (ship.c). */
#define CRASHPT_UPLOADED "uploaded-unrecorded"

/* Read D9_CRASH_AT; call once, before any thread starts. */
void crashpt_init(void);
/* Kill the process here if `name` is the armed point and this is its N-th
 * hit. Thread-safe (one atomic counter). */
void crashpt(const char *name);

#endif
