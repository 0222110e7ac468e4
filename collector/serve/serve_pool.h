/*
 * serve_pool.h — the workers that answer `d9 serve`'s API requests, so a
 * cheap request never waits for an expensive one.
 *
 * The HTTP thread (cli_serve.c) never reads the store: it parses a request,
 * hands it here as a job and goes on with the other connections; one of
 * SERVE_POOL_WORKERS_MAX threads runs serve_api() on it and calls the job's
 * done(). Each worker has its own store handle (q_store: its own SQLite
 * connection and segment readers), so no query state is shared between
 * threads.
 *
 * Scheduling: first in, first out, with these rules.
 *   - Heavy jobs (flame graphs, findings, the events table: seconds on a big
 *     store, as they read every record of their window) never hold every
 *     worker: with W workers at most max(1, W - 1) run at once, and a light
 *     job queued behind waiting heavy ones is taken first. So while one
 *     worker is free of heavy work, a timeline is answered in its own time.
 *   - A job whose client has gone (the page cancelled a superseded request:
 *     the browser closes the connection) is not run: before running a job
 *     the worker peeks at its socket, and EOF or a reset ends the job with
 *     status 0.
 *   - A job that has started stops when its client goes: its scans ask
 *     every few blocks (q_scan_set_cancel) and end with -ECANCELED; the
 *     answer of a job whose client has gone is dropped (status 0). So
 *     superseded zoom steps free their workers instead of running on
 *     (except a timeline's look-back before its window, bounded: its state
 *     is kept for the next step, serve_edge.h).
 *
 * Called by cli_serve.c and tests/unit/test_serve_pool.c. Must never write
 * to the store or touch a job after calling its done().
 */
#ifndef D9_COL_SERVE_POOL_H
#define D9_COL_SERVE_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include "collector/serve/serve_api.h"

#define SERVE_POOL_WORKERS_DEFAULT  4u
#define SERVE_POOL_WORKERS_MAX      64u
#define SERVE_POOL_PATH_MAX         64u     /* an API path; longer ones are 404 before here */

struct serve_job {
    /* filled by the submitter */
    char path[SERVE_POOL_PATH_MAX];
    struct serve_params p;
    bool heavy;
    int fd;                             /* the client's socket (peeked, never read); -1: none */
    void (*done)(struct serve_job *j);  /* from a worker thread, or from submit/stop */
    void *arg;
    /* filled by the pool before done() */
    int status;                         /* HTTP status; 0: not run (client gone, or stopping) */
    char *body;                         /* malloc'ed answer, the receiver frees it */
    size_t len;
    /* private */
    struct serve_job *next;
    struct timespec queued;             /* when submitted (the request log) */
};

struct serve_pool;
struct q_store;

/* Start workers threads over the store at dir (each opens it). 0, or
 * -errno with a one-line reason in why. */
int serve_pool_start(struct serve_pool **out, const char *dir, unsigned workers, char *why,
                     size_t whycap);

/* Queue a job. After serve_pool_stop has begun, done() is called at once
 * with status 0. */
void serve_pool_submit(struct serve_pool *pl, struct serve_job *j);

/* true when the job should be heavy (its path is the flame graph's, the findings' or the
 * events table's). */
bool serve_pool_is_heavy(const char *path);

/* Finish: running jobs complete, queued ones get done() with status 0, the
 * workers are joined and their stores closed; pl is freed. */
void serve_pool_stop(struct serve_pool *pl);

#endif /* D9_COL_SERVE_POOL_H */
