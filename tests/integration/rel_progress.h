/*
 * rel_progress.h — the progress file shared by prog_rel_workload (writer)
 * and tool_rel_seqcheck (reader): how many events each workload thread has
 * offered to the agent, kept in a MAP_SHARED file so it survives kill -9.
 *
 * Layout (native endianness, one host): header, then count[threads].
 * count[t] is release-stored after each completed d9_emit() of thread t.
 * Test helper only; not part of the product.
 */
#ifndef D9_TESTS_REL_PROGRESS_H
#define D9_TESTS_REL_PROGRESS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define REL_PROGRESS_MAGIC       0x31474f52504c4552ULL   /* "RELPROG1" */
#define REL_PROGRESS_MAX_THREADS 256u

struct rel_progress {
    _Atomic uint64_t magic;     /* REL_PROGRESS_MAGIC once the header is valid */
    uint32_t pid;
    uint32_t threads;
    _Atomic uint64_t count[];   /* per thread: emits completed */
};

static inline size_t rel_progress_size(unsigned threads)
{
    return sizeof(struct rel_progress) + (size_t)threads * sizeof(uint64_t);
}

#endif /* D9_TESTS_REL_PROGRESS_H */
