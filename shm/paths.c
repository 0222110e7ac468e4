/*
 * paths.c — default endpoint and store paths (see paths.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "shm/paths.h"

static int copy_str(char *dst, const char *v, size_t cap)
{
    size_t n = strlen(v);
    if (n >= cap)
        return -ENAMETOOLONG;
    memcpy(dst, v, n + 1);
    return 0;
}

int paths_default_endpoint(uint32_t uid, const char *xdg_runtime_dir, char *buf, size_t cap)
{
    if (uid == 0)
        return copy_str(buf, PATHS_ENDPOINT_ROOT, cap);
    if (xdg_runtime_dir && xdg_runtime_dir[0] == '/') {
        int n = snprintf(buf, cap, PATHS_IPC_PREFIX "%s" PATHS_ENDPOINT_SUBPATH, xdg_runtime_dir);
        if (n >= 0 && (size_t)n < cap)
            return 0;
    }
    int n = snprintf(buf, cap, PATHS_ENDPOINT_NOXDG, (unsigned)uid);
    return n >= 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

int paths_default_store(uint32_t uid, char *buf, size_t cap)
{
    return copy_str(buf, uid == 0 ? PATHS_STORE_ROOT : PATHS_STORE_USER, cap);
}

int paths_ipc_path(const char *endpoint, char *buf, size_t cap)
{
    static const char pfx[] = PATHS_IPC_PREFIX;
    if (strncmp(endpoint, pfx, sizeof pfx - 1) != 0)
        return -EINVAL;
    return copy_str(buf, endpoint + sizeof pfx - 1, cap);
}
