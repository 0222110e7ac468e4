/*
 * pagemap.h — a test helper shared by the agent's unit tests: how many pages
 * of [addr, addr + len) are not present in this process, from
 * /proc/self/pagemap (bit 63 "present"; readable without privileges).
 * Used to check that a claimed ring was mapped before its first record.
 */
#ifndef D9_TEST_PAGEMAP_H
#define D9_TEST_PAGEMAP_H
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

/* Pages of [addr, addr + len) not present, or -1 when pagemap cannot be read. */
static inline long pages_not_present(const void *addr, size_t len)
{
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)addr / (uintptr_t)page, hi = ((uintptr_t)addr + len - 1) / (uintptr_t)page;
    int fd = open("/proc/self/pagemap", O_RDONLY);
    if (fd < 0)
        return -1;
    long missing = 0;
    for (uintptr_t pg = lo; pg <= hi; pg++) {
        uint64_t e;
        if (pread(fd, &e, sizeof e, (off_t)(pg * sizeof e)) != (ssize_t)sizeof e) {
            missing = -1;
            break;
        }
        missing += !(e >> 63);
    }
    close(fd);
    return missing;
}

#endif
