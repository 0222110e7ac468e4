/*
 * listener.h — something listening at a test's collector endpoint, as a
 * collector would (for the agent's unit tests: test_agent_api.c,
 * test_agent_config.c). With a listener there, a traced child's region stays
 * after its clean exit for the test to read; with nobody listening an agent
 * removes its region at a clean exit. It never accepts. For tests only;
 * header-only.
 */
#ifndef D9_TEST_LISTENER_H
#define D9_TEST_LISTENER_H

#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* A unix socket listening at DIR/c.sock, its endpoint ("ipc://DIR/c.sock")
 * into endpoint[cap]: the socket, or -1. */
static inline int listener_open(const char *dir, char *endpoint, size_t cap)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int n = snprintf(sa.sun_path, sizeof sa.sun_path, "%s/c.sock", dir);
    if (n < 0 || (size_t)n >= sizeof sa.sun_path)
        return -1;
    snprintf(endpoint, cap, "ipc://%s", sa.sun_path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 16) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Close *fd if open; *fd = -1. */
static inline void listener_close(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

#endif
