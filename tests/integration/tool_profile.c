/*
 * tool_profile.c — sample a live process with collector/daemon/perf.c for a while,
 * snapshot its maps with collector/store/sym.c, symbolize like `d9 flame` and
 * print folded stacks ("root;...;leaf count", weights in samples or ns).
 * Exercises the perf + symbolizer path end to end without the daemon.
 *
 *   tool_profile --pid P [--seconds S] [--freq HZ] [--switch-period N]
 *                [--kind cpu|switch] [--weight]
 * Exit status: 0 ok, 77 perf not permitted here (tests skip), 1 other error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "collector/daemon/perf.h"
#include "collector/store/sym.h"
#include "shm/clock.h"

#define BUF_BYTES (1u << 20)
#define POLL_NS   50000000L

struct stack_count {
    char *key;
    uint64_t count;
};

static struct stack_count *g_stacks;
static size_t g_n, g_cap;

static void count_stack(const char *key, uint64_t w)
{
    for (size_t i = 0; i < g_n; i++)
        if (!strcmp(g_stacks[i].key, key)) {
            g_stacks[i].count += w;
            return;
        }
    if (g_n == g_cap) {
        g_cap = g_cap ? g_cap * 2 : 64;
        g_stacks = realloc(g_stacks, g_cap * sizeof *g_stacks);
        if (!g_stacks)
            exit(1);
    }
    g_stacks[g_n].key = strdup(key);
    g_stacks[g_n].count = w;
    g_n++;
}

int main(int argc, char **argv)
{
    struct perf_config cfg;
    perf_config_default(&cfg);
    unsigned pid = 0;
    double seconds = 1.0;
    int want = D9_REC_CPU_SAMPLE, by_weight = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--pid") && i + 1 < argc)
            pid = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--freq") && i + 1 < argc)
            cfg.freq_hz = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--switch-period") && i + 1 < argc)
            cfg.switch_period = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--kind") && i + 1 < argc) {
            i++;
            want = !strcmp(argv[i], "switch") ? D9_REC_SCHED_SWITCH : D9_REC_CPU_SAMPLE;
        } else if (!strcmp(argv[i], "--weight"))
            by_weight = 1;
        else {
            fprintf(stderr, "usage: tool_profile --pid P [--seconds S] [--freq HZ] "
                            "[--switch-period N] [--kind cpu|switch] [--weight]\n");
            return 2;
        }
    }
    struct perf_proc *pp;
    int rc = perf_proc_open(&pp, pid, &cfg);
    if (rc == -EACCES || rc == -EPERM || rc == -ENOSYS) {
        fprintf(stderr, "tool_profile: perf_event_open not permitted: %s\n", strerror(-rc));
        return 77;
    }
    if (rc < 0) {
        fprintf(stderr, "tool_profile: pid %u: %s\n", pid, strerror(-rc));
        return 1;
    }
    uint8_t *buf = malloc(BUF_BYTES), *mbuf = malloc(BUF_BYTES);
    struct sym_maps_state ms;
    memset(&ms, 0, sizeof ms);
    struct sym_resolver *res;
    if (!buf || !mbuf || sym_resolver_new(&res, "") < 0)
        return 1;
    long ml = sym_maps_emit(pid, shm_mono_ns(), &ms, mbuf, BUF_BYTES);
    for (long o = 0; ml > 0 && o < ml;) {
        struct sym_map_rec m;
        uint16_t len;
        memcpy(&len, mbuf + o, 2);
        if (sym_map_decode(mbuf + o, (size_t)(ml - o), &m) == 0)
            sym_resolver_add(res, &m);
        o += len;
    }
    uint64_t end = shm_mono_ns() + (uint64_t)(seconds * 1e9);
    uint64_t nrec = 0, lost_total = 0;
    for (;;) {
        uint64_t now = shm_mono_ns();
        int last = now >= end;
        if (perf_proc_poll(pp, now, 0) < 0)
            return 1;
        size_t n;
        uint64_t lost;
        while ((n = perf_proc_take(pp, buf, BUF_BYTES, &lost)) > 0) {
            lost_total += lost;
            for (size_t o = 0; o < n;) {
                struct d9_rec_stack s;
                memcpy(&s, buf + o, sizeof s);
                if (s.h.type == want) {
                    char key[8192] = "", name[512];
                    for (int f = s.nframes - 1; f >= 0; f--) {
                        uint64_t ip;
                        memcpy(&ip, buf + o + sizeof s + (size_t)f * 8, 8);
                        /* return addresses point after the call: look up ip-1 */
                        sym_resolve(res, f == 0 ? ip : ip - 1, 0, name, sizeof name);
                        if (key[0])
                            strncat(key, ";", sizeof key - strlen(key) - 1);
                        strncat(key, name, sizeof key - strlen(key) - 1);
                    }
                    count_stack(key[0] ? key : "[no frames]", by_weight ? s.weight : 1);
                    nrec++;
                }
                o += s.h.len;
            }
        }
        if (last)
            break;
        struct timespec ts = { 0, POLL_NS };
        nanosleep(&ts, NULL);
    }
    struct perf_stats st;
    perf_proc_stats(pp, &st);
    for (size_t i = 0; i < g_n; i++)
        printf("%s %llu\n", g_stacks[i].key, (unsigned long long)g_stacks[i].count);
    fprintf(stderr,
            "tool_profile: %llu records, threads %u, kernel %d, cpu %llu, switch %llu, lost %llu, "
            "bad %llu\n",
            (unsigned long long)nrec, st.threads, st.kernel_frames,
            (unsigned long long)st.cpu_samples, (unsigned long long)st.switch_samples,
            (unsigned long long)lost_total, (unsigned long long)st.bad);
    perf_proc_close(pp);
    sym_resolver_free(res);
    free(buf);
    free(mbuf);
    return 0;
}
