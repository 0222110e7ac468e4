/*
 * cbslot.h — a fixed, lock-free table that gives a code address (a
 * program's callback, a call site) a slot, once: the slot holds its code
 * location id and whether to trace it. The libevent wrappers (evwrap.c)
 * keep one table per callback kind and pass libevent trampoline k for the
 * function in slot k; the epoll loop mode (eploop.c) keeps one for the
 * places that call epoll_wait.
 *
 * A slot is written once: key by CAS (0 = free), then loc, then state
 * (release). A reader that finds its key acquires state; while another
 * thread is still classifying the key (CBSLOT_CLAIMING) cbslot_find
 * reports it busy (the epoll sites treat it as untraced this once), and
 * cbslot_find_wait yields until the classification is done: a wrapper
 * that hands the library a callback for good (libuv, libevent) must not
 * pass it unwrapped just because another thread registered the same
 * function a moment earlier. Slots never change or go away afterwards, so
 * a trampoline reads its slot without a lock and a slot read by one
 * thread was complete before any other thread could be handed its
 * trampoline. A program has tens of callbacks, not millions: a full table
 * hands out no slot (the caller passes the code unwrapped, counted), it
 * never grows.
 *
 * Readers name a sample inside a trampoline as the function it calls:
 * cbslot_tell publishes that pairing (D9_LOC_TRAMP_FILE in shm/d9_abi.h)
 * once per slot, before the wrapper hands the trampoline out; since a slot
 * is never reused, the pairing holds for the process's life.
 *
 * Called by: evwrap.c, uvwrap.c, eploop.c. Must never: lock, allocate or
 * make a syscall, except classify (once per key, caller-supplied),
 * cbslot_find_wait's sched_yield (only while another thread classifies)
 * and cbslot_tell's registration (once per slot); change errno.
 */
#ifndef D9_UV_CBSLOT_H
#define D9_UV_CBSLOT_H

#include <stdatomic.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

#define CBSLOT_N 64u                    /* slots per table (power of 2) */
#define CBSLOT_BUSY_SPINS 10000u        /* cbslot_find_wait: yields while another thread
                                         * classifies (bounded: a child forked mid-claim
                                         * would otherwise wait for ever) */

enum cbslot_state {
    CBSLOT_CLAIMING = 0,                /* key set, being classified */
    CBSLOT_TRACE = 1,                   /* wrap / trace it */
    CBSLOT_PASS = 2,                    /* leave it alone (the library's own code, ...) */
};

struct cbslot {
    _Atomic uintptr_t key;              /* the code address; 0 = free; set once by CAS */
    _Atomic uint32_t loc;               /* its code location id (0: none) */
    _Atomic uint32_t state;             /* enum cbslot_state, release-stored after loc */
    _Atomic uint32_t told;              /* 1: cbslot_tell published its trampoline */
};

/* Decides key's slot on its first use: returns CBSLOT_TRACE or CBSLOT_PASS
 * and the location id (*loc) to record for it. May lock and make syscalls. */
typedef uint32_t (*cbslot_classify_fn)(uintptr_t key, uint32_t *loc);

#define CBSLOT_NONE  (-1)              /* key is 0, classified PASS, or the table is full */
#define CBSLOT_BUSY  (-2)               /* another thread is classifying key: ask again later */

/* The slot index of key in table (CBSLOT_N slots), claiming and
 * classifying one on first use; CBSLOT_NONE (*full set to 1 when the table
 * is full) or CBSLOT_BUSY. */
int cbslot_find(struct cbslot *table, uintptr_t key, cbslot_classify_fn classify, int *full);

/* cbslot_find, but while another thread classifies key: sched_yield and ask
 * again, up to CBSLOT_BUSY_SPINS times (then CBSLOT_BUSY). */
int cbslot_find_wait(struct cbslot *table, uintptr_t key, cbslot_classify_fn classify, int *full);

/* Publish once that trampoline tramp (code address) calls slot k's
 * function: a D9_LOC_TRAMP_FILE location naming the slot's code location.
 * k must have come from cbslot_find (the slot is complete). Nothing when
 * the slot has no location (tracing off); keeps errno. */
void cbslot_tell(struct cbslot *table, int k, uintptr_t tramp);

/* The key of slot k (0 when k is out of range or the slot is free). */
static inline uintptr_t cbslot_key(const struct cbslot *table, int k)
{
    if (k < 0 || (unsigned)k >= CBSLOT_N)
        return 0;
    return atomic_load_explicit(&table[k].key, memory_order_relaxed);
}

#pragma GCC visibility pop

#endif /* D9_UV_CBSLOT_H */
