/*
 * preload.c — libd9preload.so: LD_PRELOAD=libd9preload.so program traces
 * every libuv loop of an unmodified program.
 *
 * The library is libd9uv's wrappers (uvwrap.c, uvloop.c) plus this file,
 * which turns on auto mode at load: d9_init runs at the first libuv call
 * the wrappers see (so a program that never calls libuv starts no agent,
 * creates no region and runs exactly as without the library), and every
 * loop is traced at its first uv_run as a worker of the default runtime
 * (DIAL9_RUNTIME_NAME, else the program's name). With no collector the
 * agent still records into its region; with a bad DIAL9_* value d9_init
 * logs one line and the wrappers forward unchanged.
 *
 * Called by: the dynamic loader (constructor). Must never: fail, print
 * (except d9_init's one line on a bad setting) or change errno.
 */
#include <errno.h>
#include "uvloop.h"

__attribute__((constructor)) static void preload_start(void)
{
    int err = errno;
    uvloop_set_auto(1);
    errno = err;
}
