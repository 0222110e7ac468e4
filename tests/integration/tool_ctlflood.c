/*
 * tool_ctlflood.c — a local user holding control connections, for
 * tests/integration/test_sec_ctl_flood.sh: opens N connections to the
 * collector's ipc:// socket, bare (connect and nothing else) or as a libzmq
 * DEALER would (greeting and READY, then idle), holds them for SECONDS and
 * exits. Prints "connected=C failed=F" (F: connects the kernel refused, the
 * listener's backlog being full, or a peer gone before the handshake was
 * written; each is retried, for FLOOD_CONNECT_SECONDS at most). Bounded in
 * count and time.
 *
 *   tool_ctlflood ipc://PATH bare|dealer N SECONDS
 * Linked with libcol.a (it needs none of it). Test helper only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define FLOOD_MAX 5000
#define FLOOD_SECONDS_MAX 60
#define FLOOD_CONNECT_SECONDS 3     /* connects are retried this long at most */
#define FLOOD_RETRY_US 1000

static const unsigned char dealer_hello[] = {
    0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 3, 1, 'N', 'U', 'L', 'L',
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0x04, 28, 5, 'R', 'E', 'A', 'D', 'Y', 11, 'S', 'o', 'c', 'k', 'e', 't', '-', 'T', 'y', 'p',
    'e', 0, 0, 0, 6, 'D', 'E', 'A', 'L', 'E', 'R',
};

int main(int argc, char **argv)
{
    if (argc != 5 || strncmp(argv[1], "ipc://", 6) || (strcmp(argv[2], "bare") &&
                                                       strcmp(argv[2], "dealer"))) {
        fprintf(stderr, "usage: tool_ctlflood ipc://PATH bare|dealer N SECONDS\n");
        return 2;
    }
    int n = atoi(argv[3]), secs = atoi(argv[4]), dealer = !strcmp(argv[2], "dealer");
    if (n < 0 || n > FLOOD_MAX || secs < 0 || secs > FLOOD_SECONDS_MAX) {
        fprintf(stderr, "tool_ctlflood: N at most %d, SECONDS at most %d\n", FLOOD_MAX,
                FLOOD_SECONDS_MAX);
        return 2;
    }
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    snprintf(a.sun_path, sizeof a.sun_path, "%s", argv[1] + 6);
    int connected = 0, failed = 0;
    /* a full backlog refuses a connect (EAGAIN): try again for a while, so
     * N connections are made however fast the server accepts */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (connected < n) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec >= FLOOD_CONNECT_SECONDS)
            break;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            failed++;
            continue;
        }
        if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
            close(fd);
            failed++;
            usleep(FLOOD_RETRY_US);
            continue;
        }
        if (dealer && send(fd, dealer_hello, sizeof dealer_hello, MSG_NOSIGNAL) !=
                          (ssize_t)sizeof dealer_hello) {
            close(fd);
            failed++;
            continue;
        }
        connected++;    /* kept open (and leaked on purpose) until exit */
    }
    printf("connected=%d failed=%d\n", connected, failed);
    fflush(stdout);
    sleep((unsigned)secs);
    return 0;
}
