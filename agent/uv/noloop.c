/*
 * noloop.c — the preload shim's "no supported loop found" record (see
 * noloop.h).
 *
 * Rules:
 *   - made only when the agent's own configuration (ag_env_parse: the same
 *     DIAL9_* rules, DIAL9_ENABLED and DIAL9_SHM_DIR included) is valid and
 *     enabled, DIAL9_COLLECTOR is not "none", and a collector listens at an
 *     ipc:// endpoint: a file no collector takes would stay in the shm
 *     directory, so with no collector (or one at an endpoint that cannot be
 *     probed) nothing is made;
 *   - the region is laid out as any other (shm_region_create, so the
 *     collector's usual validation applies), with the smallest geometry: one
 *     ring of D9_RING_DATA_MIN bytes, an 8-byte metadata log (about 8 KiB in
 *     all, sparse), flag D9_REGION_F_NOLOOP set before READY, and CLOSED
 *     right after: the process is exiting. Its file stays (adopted is left
 *     0): the collector adopts the region of a process that is gone,
 *     indexes the process as "noloop" and removes the file.
 * This file is linked into libd9preload.so with the shm and env objects it
 * needs (agent/uv/uv.mk): the agent library exports only agent/d9.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "agent/env.h"
#include "agent/uv/noloop.h"
#include "shm/paths.h"
#include "shm/region.h"

#define NOLOOP_META_SIZE 8u     /* the smallest metadata log (a multiple of 8) */

static const char *noloop_getenv(const char *name, void *ctx)
{
    (void)ctx;
    return secure_getenv(name);
}

/* 1 when something accepts a connection at the ipc:// endpoint (the test
 * agent/control.c's ag_control_reachable makes; that file needs libzmq),
 * else 0 (refused, absent, or another transport). Non-blocking. */
static int noloop_listening(const char *endpoint)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (paths_ipc_path(endpoint, sa.sun_path, sizeof sa.sun_path) != 0 || !sa.sun_path[0])
        return 0;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 ? 1
             : (errno == EAGAIN || errno == EINPROGRESS) ? 1 : 0;
    close(fd);
    return rc;
}

static void noloop_comm(char *out, size_t cap)
{
    out[0] = 0;
    int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    out[n > 0 ? n : 0] = 0;
    char *nl = strchr(out, '\n');
    if (nl)
        *nl = 0;
}

int noloop_record(void)
{
    int err = errno;
    int made = 0;
    char comm[D9_COMM_MAX + 1], exe[D9_EXE_MAX + 1], msg[AG_ERR_MAX];
    noloop_comm(comm, sizeof comm);
    struct ag_config cfg;
    ag_env_defaults(&cfg, (uint32_t)getuid(), secure_getenv("XDG_RUNTIME_DIR"), comm);
    if (ag_env_parse(&cfg, noloop_getenv, NULL, msg, sizeof msg) != 0 || !cfg.enabled ||
        !cfg.control || !noloop_listening(cfg.collector))
        goto out;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    struct shm_region_params p = {
        .ring_count = 1,
        .ring_data_size = D9_RING_DATA_MIN,
        .meta_size = NOLOOP_META_SIZE,
        .clock_source = D9_CLOCK_MONOTONIC,
        .dir = cfg.shm_dir,
        .comm = comm,
        .exe = exe,
        .flags = D9_REGION_F_NOLOOP,
    };
    struct shm_region r;
    if (shm_region_create(&p, &r) != 0)
        goto out;
    atomic_store_explicit(&r.hdr->state, D9_REGION_CLOSED, memory_order_release);
    shm_region_close(&r);
    made = 1;
out:
    errno = err;
    return made;
}
