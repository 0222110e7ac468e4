/*
 * prog_demangle.cpp — a traced C++ program whose callbacks and hot frames
 * are C++ functions, for test_demangle.sh: every name d9 prints of them
 * must be the demangled one.
 *
 *   prog_demangle [SECONDS]
 *
 * The location of the polls is a code address (d9_loc_register_code) of
 * app::Server::on_read(int), a static member function; each poll runs it,
 * and it spins in app::detail::hot_spin(unsigned long) (noinline, frame
 * pointers: both are frames of the CPU samples). Prints "pid=PID" at exit.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "agent/d9.h"

namespace app {
namespace detail {
/* gcc sets up no frame in a leaf function even with frame pointers asked
 * for, which would hide hot_spin's caller: this rare call keeps it a non-leaf */
__attribute__((noinline)) void tick(uint64_t x);
__attribute__((noinline)) void tick(uint64_t x)
{
    __asm__ volatile("" : : "r"(x) : "memory");
}

__attribute__((noinline)) uint64_t hot_spin(unsigned long rounds);
__attribute__((noinline)) uint64_t hot_spin(unsigned long rounds)
{
    uint64_t x = rounds | 1;
    for (unsigned long i = 0; i < rounds; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if ((i & 0xffff) == 0)
            tick(x);
    }
    return x;
}
}  // namespace detail

struct Server {
    __attribute__((noinline)) static uint64_t on_read(int fd);
};

uint64_t Server::on_read(int fd)
{
    uint64_t r = detail::hot_spin(200000ul + (unsigned long)fd);
    __asm__ volatile("" : "+r"(r));     /* not a tail call: on_read stays a frame */
    return r;
}
}  // namespace app

static double now_s()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    if (d9_init() != 0) {
        fprintf(stderr, "prog_demangle: d9_init failed\n");
        return 1;
    }
    d9_runtime rt = d9_runtime_default();
    d9_loc loc = d9_loc_register_code((const void *)&app::Server::on_read);
    uint64_t sink = 0, task = 1;
    double end = now_s() + seconds;
    while (now_s() < end) {
        d9_poll_start(rt, 0, task, loc);
        sink += app::Server::on_read((int)(task & 7));
        d9_poll_end(rt, 0, task);
        task++;
    }
    printf("pid=%d polls=%llu sink=%llu\n", (int)getpid(), (unsigned long long)(task - 1),
           (unsigned long long)sink);
    return 0;
}
