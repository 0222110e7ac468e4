/*
 * prog_jitstub.c — traced workload whose hot code is generated at run time,
 * as LuaJIT's traces are: a stub of machine code copied into an anonymous
 * mapping (no object, no CFI) that moves the stack pointer (40 bytes, a
 * pointer to read-only data and its count in them) and spins. main ->
 * jit_outer -> jit_caller -> the stub; built without frame pointers
 * (jitstub.mk), so a sample in the stub reaches main only when the
 * collector finds the stub's caller (d9collectd --stack-mode dwarf scans
 * the stack copy for a return address, unwind.h). For test_stack_jit.sh.
 *
 *   prog_jitstub [--seconds S]     (x86-64 only; exits 77 elsewhere)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "agent/d9.h"

typedef void (*jit_fn)(uint64_t n, const void *decoy);

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char g_decoy[] = "read-only data: not code";
static volatile uint64_t g_calls;

__attribute__((noinline)) static void jit_caller(jit_fn f, uint64_t n)
{
    f(n, g_decoy);
    g_calls++;
}

__attribute__((noinline)) static void jit_outer(jit_fn f, double end)
{
    while (now_s() < end)
        jit_caller(f, 2000000);
    g_calls++;
}

int main(int argc, char **argv)
{
    double seconds = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else {
            fprintf(stderr, "usage: prog_jitstub [--seconds S]\n");
            return 2;
        }
    }
#if defined(__x86_64__)
    static const uint8_t stub[] = {
        0x48, 0x83, 0xec, 0x28,             /* sub $40, %rsp */
        0x48, 0x89, 0x34, 0x24,             /* mov %rsi, (%rsp)   the decoy */
        0x48, 0x89, 0x7c, 0x24, 0x08,       /* mov %rdi, 8(%rsp)  the count */
        0x48, 0xff, 0xcf,                   /* 1: dec %rdi */
        0x75, 0xfb,                         /* jnz 1b */
        0x48, 0x83, 0xc4, 0x28,             /* add $40, %rsp */
        0xc3,                               /* ret */
    };
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 1;
    memcpy(m, stub, sizeof stub);
    if (mprotect(m, 4096, PROT_READ | PROT_EXEC) != 0)
        return 1;
    jit_fn f;
    memcpy(&f, &m, sizeof f);
    d9_init();
    jit_outer(f, now_s() + seconds);
    d9_shutdown();
    printf("prog_jitstub: calls %llu\n", (unsigned long long)g_calls);
    return 0;
#else
    (void)seconds;
    fprintf(stderr, "prog_jitstub: x86-64 only\n");
    return 77;
#endif
}
