/*
 * prog_rel_workload.c — traced workload for the reliability tests
 * (tests/integration/test_rel_*.sh, stress_*.sh).
 *
 * N threads each emit custom events "rel_seq" {thread: u64, seq: u64} with
 * seq = 0, 1, 2 ... per thread, until --events M per thread (0 = forever).
 * It behaves like a real application: when d9_init() fails (bad DIAL9_*
 * value, tracing disabled) it runs untraced and still exits 0.
 *
 * --progress FILE: a shared, mmap'ed file of struct rel_progress. After each
 * d9_emit() returns, the thread release-stores its count of completed emits
 * (seq + 1), so after a kill -9 the file says exactly how many events each
 * thread offered (one more may have been committed while the kill landed).
 * tool_rel_seqcheck reads it; `tool_rel_seqcheck --progress FILE` prints the
 * total, which the collector-kill test watches grow while the collector is
 * down (the agent must never block).
 *
 * --pace-us U sleeps U microseconds every --batch B events (default none).
 * --done-file F: written (atomically) when every thread finished.
 * --stop-file F: threads stop once F exists (checked every --batch events),
 * so a test can let an endless workload finish normally (d9_shutdown, exit 0).
 * --exit clean|hang: return from main, or sleep until killed.
 * --counters 1: after each event the thread also records its queue depth
 * (d9_queue_depth, depth = seq), so the rings carry two record kinds of
 * different sizes, like a program writing counters.
 *
 * Not part of the product. Must never: block on the collector.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "agent/d9.h"
#include "tests/integration/rel_progress.h"

D9_SCHEMA(rel_seq, "rel_seq", D9_FIELD_U64("thread"), D9_FIELD_U64("seq"));

#define REL_THREADS_DEFAULT 2u
#define REL_BATCH_DEFAULT   100u

struct opts {
    unsigned threads, batch, pace_us, counters;
    uint64_t events;
    const char *progress, *done_file, *exit_mode, *stop_file;
};

struct worker {
    pthread_t th;
    unsigned idx;
    const struct opts *o;
    _Atomic uint64_t *count;        /* in the progress file, or a private slot */
};

static void usage(FILE *f)
{
    fprintf(f,
"usage: prog_rel_workload [--threads N] [--events M] [--pace-us U] [--batch B]\n"
"                         [--progress FILE] [--done-file FILE] [--stop-file FILE]\n"
"                         [--exit clean|hang] [--counters 0|1]\n"
"  N threads (default %u) each emit M custom events rel_seq{thread,seq}\n"
"  (M = 0: until killed). Runs untraced when d9_init fails.\n", REL_THREADS_DEFAULT);
}

static uint64_t arg_u(const char *s, const char *name, uint64_t max)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || !*s || v > max) {
        fprintf(stderr, "prog_rel_workload: bad value '%s' for %s\n", s, name);
        exit(2);
    }
    return v;
}

static void sleep_us(unsigned us)
{
    struct timespec ts = { .tv_sec = us / 1000000u, .tv_nsec = (long)(us % 1000000u) * 1000 };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static void *run(void *arg)
{
    struct worker *w = arg;
    const struct opts *o = w->o;
    char name[16];
    snprintf(name, sizeof name, "rel-%u", w->idx);
    pthread_setname_np(pthread_self(), name);
    for (uint64_t i = 0; o->events == 0 || i < o->events; i++) {
        d9_emit(&rel_seq, D9_U64(w->idx), D9_U64(i));
        if (o->counters)
            d9_queue_depth(d9_runtime_default(), (uint16_t)w->idx, i);
        /* release: the count never runs ahead of the emit it counts */
        atomic_store_explicit(w->count, i + 1, memory_order_release);
        if (o->batch && (i + 1) % o->batch == 0) {
            if (o->pace_us)
                sleep_us(o->pace_us);
            if (o->stop_file && access(o->stop_file, F_OK) == 0)
                break;
        }
    }
    return NULL;
}

static struct rel_progress *map_progress(const char *path, unsigned threads)
{
    size_t size = rel_progress_size(threads);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        fprintf(stderr, "prog_rel_workload: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        fprintf(stderr, "prog_rel_workload: mmap %s: %s\n", path, strerror(errno));
        exit(1);
    }
    struct rel_progress *p = m;
    p->pid = (uint32_t)getpid();
    p->threads = threads;
    atomic_store_explicit(&p->magic, REL_PROGRESS_MAGIC, memory_order_release);
    return p;
}

int main(int argc, char **argv)
{
    struct opts o = { .threads = REL_THREADS_DEFAULT, .batch = REL_BATCH_DEFAULT,
                      .exit_mode = "clean" };
    for (int i = 1; i < argc; i += 2) {   /* every option takes a value */
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!v) {
            usage(stderr);
            return 2;
        }
        if (!strcmp(a, "--threads")) o.threads = (unsigned)arg_u(v, a, REL_PROGRESS_MAX_THREADS);
        else if (!strcmp(a, "--events")) o.events = arg_u(v, a, UINT64_MAX);
        else if (!strcmp(a, "--batch")) o.batch = (unsigned)arg_u(v, a, UINT32_MAX);
        else if (!strcmp(a, "--pace-us")) o.pace_us = (unsigned)arg_u(v, a, UINT32_MAX);
        else if (!strcmp(a, "--progress")) o.progress = v;
        else if (!strcmp(a, "--done-file")) o.done_file = v;
        else if (!strcmp(a, "--stop-file")) o.stop_file = v;
        else if (!strcmp(a, "--exit")) o.exit_mode = v;
        else if (!strcmp(a, "--counters")) o.counters = (unsigned)arg_u(v, a, 1);
        else {
            usage(stderr);
            return 2;
        }
    }
    if (o.threads == 0 || (strcmp(o.exit_mode, "clean") && strcmp(o.exit_mode, "hang"))) {
        usage(stderr);
        return 2;
    }
    /* like an application: tracing that cannot start is not our failure
     * (d9_init has already printed its one line) */
    int traced = d9_init() == 0;
    struct rel_progress *prog = o.progress ? map_progress(o.progress, o.threads) : NULL;
    struct worker *ws = calloc(o.threads, sizeof *ws);
    _Atomic uint64_t *priv = calloc(o.threads, sizeof *priv);
    if (!ws || !priv)
        return 1;
    for (unsigned t = 0; t < o.threads; t++) {
        ws[t].idx = t;
        ws[t].o = &o;
        ws[t].count = prog ? &prog->count[t] : &priv[t];
        if (pthread_create(&ws[t].th, NULL, run, &ws[t]) != 0) {
            fprintf(stderr, "prog_rel_workload: pthread_create failed\n");
            return 1;
        }
    }
    for (unsigned t = 0; t < o.threads; t++)
        pthread_join(ws[t].th, NULL);
    d9_stats st;
    d9_get_stats(&st);
    unsigned long long total = 0;
    for (unsigned t = 0; t < o.threads; t++)
        total += atomic_load(ws[t].count);
    char line[256];
    snprintf(line, sizeof line, "done pid=%ld traced=%d threads=%u emitted=%llu lost=%llu\n",
             (long)getpid(), traced, o.threads, total, (unsigned long long)st.lost);
    fputs(line, stdout);
    fflush(stdout);
    if (o.done_file) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", o.done_file);
        FILE *f = fopen(tmp, "w");
        if (f) {
            fputs(line, f);
            fclose(f);
            rename(tmp, o.done_file);
        }
    }
    free(ws);
    free(priv);
    if (!strcmp(o.exit_mode, "hang"))
        for (;;)
            pause();
    return 0;
}
