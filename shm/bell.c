/*
 * bell.c — ringing a region's doorbell (see bell.h).
 */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "shm/bell.h"

int shm_bell_ring(struct d9_bell *b)
{
    /* seq_cst add, then seq_cst load of listener: with the collector's
     * seq_cst store of listener before it reads word in futex_waitv, one of
     * the two sees the other (no lost wake-up). */
    atomic_fetch_add_explicit(&b->word, 1u, memory_order_seq_cst);
    if (atomic_load_explicit(&b->listener, memory_order_seq_cst) != D9_BELL_LISTENING)
        return 0;
    /* shared (not FUTEX_PRIVATE): the collector waits through its own
     * mapping of the file. A wake never blocks; its result is not needed. */
    (void)syscall(SYS_futex, (uint32_t *)&b->word, FUTEX_WAKE, 1, NULL, NULL, 0);
    return 1;
}
