/*
 * prog_procend.c — a traced program that ends in a chosen way, for
 * test_proc_end.sh: d9 ps must show how it really ended.
 *
 *   prog_procend _exit0 | _exit9 | exit9 | fork_exit | sigkill | sigsegv
 *   prog_procend exec GOFILE
 *
 * Each records one poll, prints "pid=PID" (flushed), waits for SIGUSR1
 * (the test sends it once the collector has adopted the process) and ends:
 * _exit(0), _exit(9), exit(9), raise(SIGKILL), a write through a null
 * pointer (SIGSEGV); fork_exit first forks a child that records a poll,
 * prints "child=PID", waits for its own SIGUSR1 and ends with _exit(7); the
 * parent, after its SIGUSR1, reaps it and exits 0. exec replaces itself
 * (execve, same pid) with a shell that waits until GOFILE exists, then
 * exits 0.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agent/d9.h"

static void one_poll(void)
{
    d9_runtime rt = d9_runtime_default();
    d9_loc loc = D9_LOC();
    d9_poll_start(rt, 0, 1, loc);
    d9_poll_end(rt, 0, 1);
}

int main(int argc, char **argv)
{
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, NULL);    /* before the agent's threads start */
    int want = argc > 1 && strcmp(argv[1], "exec") == 0 ? 3 : 2;
    if (argc != want || d9_init() != 0) {
        fprintf(stderr, "usage: prog_procend MODE (d9_init must succeed)\n");
        return 2;
    }
    const char *m = argv[1];
    one_poll();
    printf("pid=%d\n", (int)getpid());
    fflush(stdout);
    pid_t child = -1;
    if (strcmp(m, "fork_exit") == 0 && (child = fork()) == 0) {
        one_poll();
        printf("child=%d\n", (int)getpid());
        fflush(stdout);
        int sig;
        sigwait(&usr1, &sig);   /* its own SIGUSR1: adopted too */
        _exit(7);
    }
    int sig;
    sigwait(&usr1, &sig);
    if (strcmp(m, "_exit0") == 0)
        _exit(0);
    if (strcmp(m, "_exit9") == 0)
        _exit(9);
    if (strcmp(m, "exit9") == 0)
        exit(9);
    if (strcmp(m, "exec") == 0) {
        execl("/bin/sh", "sh", "-c", "while [ ! -e \"$0\" ]; do sleep 0.1; done", argv[2],
              (char *)NULL);
        return 3;
    }
    if (strcmp(m, "sigkill") == 0)
        raise(SIGKILL);
    if (strcmp(m, "sigsegv") == 0) {
        volatile int *nil = NULL;
        *nil = 1;
    }
    if (strcmp(m, "fork_exit") == 0) {
        int ws;
        return child > 0 && waitpid(child, &ws, 0) == child ? 0 : 3;
    }
    return 2;
}
