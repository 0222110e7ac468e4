/*
 * paths.h — where the agent, d9collectd and d9 meet by default: the
 * collector's control endpoint and the store directory for a user.
 *
 * One contract, written once: the agent computes the endpoint it reports to
 * (agent/env.c), d9collectd the one it binds and the store it writes
 * (collector/daemon/config.c), d9 the ones it reads and asks
 * (collector/cli/cli.c). Pure: no I/O; callers pass uid and
 * $XDG_RUNTIME_DIR.
 *
 * Rule: root uses the system paths (PATHS_ENDPOINT_ROOT, PATHS_STORE_ROOT);
 * another user $XDG_RUNTIME_DIR/dial9/collector.sock when that variable is
 * an absolute path that fits, else /tmp/dial9-<uid>/collector.sock, and
 * ./d9-store as the store.
 */
#ifndef D9_SHM_PATHS_H
#define D9_SHM_PATHS_H

#include <stddef.h>
#include <stdint.h>

#define PATHS_STORE_ROOT       "/var/lib/dial9"
#define PATHS_STORE_USER       "./d9-store"
#define PATHS_ENDPOINT_ROOT    "ipc:///run/dial9/collector.sock"
#define PATHS_ENDPOINT_SUBPATH "/dial9/collector.sock"   /* under $XDG_RUNTIME_DIR */
#define PATHS_ENDPOINT_NOXDG   "ipc:///tmp/dial9-%u/collector.sock" /* %u = uid */
#define PATHS_IPC_PREFIX       "ipc://"

/* The default control endpoint of uid into buf. 0, or -ENAMETOOLONG when
 * even the fallback does not fit cap. */
int paths_default_endpoint(uint32_t uid, const char *xdg_runtime_dir, char *buf, size_t cap);

/* The default store directory of uid. 0 or -ENAMETOOLONG. */
int paths_default_store(uint32_t uid, char *buf, size_t cap);

/* For "ipc://PATH" endpoints, copy PATH into buf and return 0; -EINVAL for
 * other transports, -ENAMETOOLONG if it does not fit. */
int paths_ipc_path(const char *endpoint, char *buf, size_t cap);

#endif /* D9_SHM_PATHS_H */
