/*
 * prog_workload.c — traced workload for the collector integration tests.
 *
 * N threads each emit M custom events "wl_seq" {thread: u64, seq: u64}
 * (seq = 0..M-1 per thread) plus, with --polls, a poll_start/poll_end pair
 * per event. When every thread is done it prints one line
 *     done pid=P threads=N events=M emitted=E lost=L
 * (E = events it tried to record, L = what the agent dropped), writes the
 * same line to --done-file if given, and then:
 *     --exit clean    returns from main (d9_shutdown via atexit: region CLOSED)
 *     --exit hang     sleeps until killed (the test kill -9s it)
 *     --exit abort    calls abort() (crash without shutdown)
 * --wait-file F makes the threads wait until F exists before emitting;
 * --stop-file F makes them stop early once F exists (checked every --batch
 * events), so a test can keep a program alive as long as it needs.
 * --pace-us U sleeps U microseconds every --batch events (default: no pause),
 * so a test can keep the rings from overflowing or let them fill.
 *
 * Used by tests/integration/test_collector*.sh; not part of the product.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "agent/d9.h"

D9_SCHEMA(wl_seq, "wl_seq", D9_FIELD_U64("thread"), D9_FIELD_U64("seq"));

struct opts {
    unsigned threads, events, batch, pace_us;
    int polls;
    const char *exit_mode, *wait_file, *done_file, *stop_file;
};

struct worker {
    pthread_t th;
    unsigned idx;
    const struct opts *o;
    d9_runtime rt;
    unsigned long long done;        /* events emitted (fewer than --events after --stop-file) */
};

static void usage(FILE *f)
{
    fprintf(f,
"usage: prog_workload [--threads N] [--events M] [--polls] [--exit clean|hang|abort]\n"
"                     [--wait-file F] [--stop-file F] [--done-file F] [--pace-us U]\n"
"                     [--batch B]\n"
"  N threads (default 4) each emit M (default 10000) custom events wl_seq{thread,seq}.\n");
}

static unsigned arg_u(const char *s, const char *name)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || !*s || v > 0xffffffffUL) {
        fprintf(stderr, "prog_workload: bad value '%s' for %s\n", s, name);
        exit(2);
    }
    return (unsigned)v;
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
    snprintf(name, sizeof name, "wl-%u", w->idx);
    pthread_setname_np(pthread_self(), name);
    if (o->wait_file)
        while (access(o->wait_file, F_OK) != 0)
            sleep_us(10000);
    d9_loc loc = D9_LOC();
    for (unsigned i = 0; i < o->events; i++) {
        if (o->polls)
            d9_poll_start(w->rt, (uint16_t)w->idx, i, loc);
        d9_emit(&wl_seq, D9_U64(w->idx), D9_U64(i));
        if (o->polls)
            d9_poll_end(w->rt, (uint16_t)w->idx, i);
        w->done = i + 1ull;
        if (o->batch && (i + 1) % o->batch == 0) {
            if (o->stop_file && access(o->stop_file, F_OK) == 0)
                break;
            if (o->pace_us)
                sleep_us(o->pace_us);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    struct opts o = { .threads = 4, .events = 10000, .batch = 1000, .exit_mode = "clean" };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--polls")) {
            o.polls = 1;
            continue;
        }
        if (!v) {
            usage(stderr);
            return 2;
        }
        if (!strcmp(a, "--threads")) o.threads = arg_u(v, a);
        else if (!strcmp(a, "--events")) o.events = arg_u(v, a);
        else if (!strcmp(a, "--batch")) o.batch = arg_u(v, a);
        else if (!strcmp(a, "--pace-us")) o.pace_us = arg_u(v, a);
        else if (!strcmp(a, "--exit")) o.exit_mode = v;
        else if (!strcmp(a, "--wait-file")) o.wait_file = v;
        else if (!strcmp(a, "--stop-file")) o.stop_file = v;
        else if (!strcmp(a, "--done-file")) o.done_file = v;
        else {
            usage(stderr);
            return 2;
        }
        i++;
    }
    if (strcmp(o.exit_mode, "clean") && strcmp(o.exit_mode, "hang") && strcmp(o.exit_mode, "abort")) {
        fprintf(stderr, "prog_workload: --exit must be clean, hang or abort\n");
        return 2;
    }
    if (o.threads == 0 || o.threads > 1024) {
        fprintf(stderr, "prog_workload: --threads must be 1..1024\n");
        return 2;
    }
    int rc = d9_init();
    if (rc != 0) {
        fprintf(stderr, "prog_workload: d9_init failed: %d\n", rc);
        return 1;
    }
    d9_runtime rt;
    d9_runtime_register("workload", &rt);
    struct worker *ws = calloc(o.threads, sizeof *ws);
    if (!ws)
        return 1;
    for (unsigned t = 0; t < o.threads; t++) {
        ws[t].idx = t;
        ws[t].o = &o;
        ws[t].rt = rt;
        if (pthread_create(&ws[t].th, NULL, run, &ws[t]) != 0) {
            fprintf(stderr, "prog_workload: pthread_create failed\n");
            return 1;
        }
    }
    unsigned long long emitted = 0;
    for (unsigned t = 0; t < o.threads; t++) {
        pthread_join(ws[t].th, NULL);
        emitted += ws[t].done * (o.polls ? 3u : 1u);
    }
    d9_stats st;
    d9_get_stats(&st);
    char line[256];
    snprintf(line, sizeof line, "done pid=%ld threads=%u events=%u emitted=%llu lost=%llu\n",
             (long)getpid(), o.threads, o.events, emitted, (unsigned long long)st.lost);
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
    if (!strcmp(o.exit_mode, "hang"))
        for (;;)
            pause();
    if (!strcmp(o.exit_mode, "abort")) {
        struct rlimit nocore = { 0, 0 };   /* a test crash must not litter core files */
        setrlimit(RLIMIT_CORE, &nocore);
        abort();
    }
    return 0;
}
