/*
 * bench_startup.c — what preloading a library costs a short program's start:
 * CPU, wall time, peak RSS and the number of shared objects the loader
 * initialises, with and without LD_PRELOAD, measured in the same run.
 *
 *   bench_startup [--runs N] [--cmd PROGRAM] LABEL=PRELOAD... [LABEL=none]
 *
 * Each round runs PROGRAM (default /bin/true) once per variant, the order
 * rotated from round to round (paired, interleaved: drift of the machine
 * falls on every variant alike), with fork + execve from this small process
 * and the child's own accounting from wait4 (CPU, ru_maxrss) and
 * CLOCK_MONOTONIC around it (wall). "none" runs PROGRAM without
 * LD_PRELOAD. The shared objects are counted once per variant from the
 * loader's own trace (LD_DEBUG=libs: one "calling init" per object).
 * Printed: min / median / max of every figure per variant, and the median
 * of the per-round ratio against the first variant.
 *
 * Peak RSS cannot read below this launcher's own (ru_maxrss keeps the
 * forked copy's peak across execve): the "none" variant shows that floor.
 *
 * Never part of make test. Called by: tests/bench/bench.mk (bench-startup).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BS_VARIANTS_MAX 8
#define BS_RUNS_MAX 1000
#define BS_RUNS_DEFAULT 40

struct variant {
    const char *label;
    const char *preload;        /* NULL: none */
    char preload_var[4096];     /* "LD_PRELOAD=..." for its environment */
    double cpu_ms[BS_RUNS_MAX], wall_ms[BS_RUNS_MAX], rss_kib[BS_RUNS_MAX];
    int libs;
};

static struct variant g_v[BS_VARIANTS_MAX];

extern char **environ;

static double ms_of(struct timeval tv)
{
    return (double)tv.tv_sec * 1e3 + (double)tv.tv_usec / 1e3;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The child's environment: ours without LD_PRELOAD / LD_DEBUG, plus the variant's. */
static char **child_env(struct variant *v, int libs_trace)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **e = calloc(n + 3, sizeof *e);
    if (!e)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0 && strncmp(environ[i], "LD_DEBUG", 8) != 0)
            e[k++] = environ[i];
    if (v->preload) {
        snprintf(v->preload_var, sizeof v->preload_var, "LD_PRELOAD=%s", v->preload);
        e[k++] = v->preload_var;
    }
    if (libs_trace)
        e[k++] = "LD_DEBUG=libs";
    return e;
}

/* One run: 0 and the figures, or -1. With err_fd >= 0 the child's stderr
 * goes there (the loader's trace) and its stdout to /dev/null. */
static int run_one(const char *cmd, char **env, int err_fd, double *cpu, double *wall, double *rss)
{
    double t0 = now_ms();
    pid_t p = fork();
    if (p < 0)
        return -1;
    if (p == 0) {
        if (err_fd >= 0)
            dup2(err_fd, STDERR_FILENO);
        char *argv[] = { (char *)cmd, NULL };
        execve(cmd, argv, env);
        _exit(127);
    }
    int st;
    struct rusage ru;
    if (wait4(p, &st, 0, &ru) != p)
        return -1;
    *wall = now_ms() - t0;
    *cpu = ms_of(ru.ru_utime) + ms_of(ru.ru_stime);
    *rss = (double)ru.ru_maxrss;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int count_libs(const char *cmd, struct variant *v)
{
    char path[] = "/tmp/bench_startup.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    unlink(path);
    char **env = child_env(v, 1);
    double c, w, r;
    int rc = env ? run_one(cmd, env, fd, &c, &w, &r) : -1;
    free(env);
    int n = 0;
    FILE *f = rc == 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        close(fd);
        return -1;
    }
    rewind(f);
    char line[4096];
    while (fgets(line, sizeof line, f))
        if (strstr(line, "calling init:"))
            n++;
    fclose(f);
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void stats(const double *in, int n, double *mn, double *med, double *mx)
{
    double s[BS_RUNS_MAX];
    memcpy(s, in, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    *mn = s[0];
    *mx = s[n - 1];
    *med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void print_row(const char *label, const char *what, const double *x, int n, const char *unit)
{
    double mn, med, mx;
    stats(x, n, &mn, &med, &mx);
    printf("  %-12s %-8s %10.3f %10.3f %10.3f %s\n", label, what, mn, med, mx, unit);
}

int main(int argc, char **argv)
{
    int runs = BS_RUNS_DEFAULT, nv = 0;
    const char *cmd = "/bin/true";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--cmd") && i + 1 < argc) {
            cmd = argv[++i];
        } else if (strchr(argv[i], '=') && nv < BS_VARIANTS_MAX) {
            char *eq = strchr(argv[i], '=');
            *eq = '\0';
            g_v[nv].label = argv[i];
            g_v[nv].preload = strcmp(eq + 1, "none") ? eq + 1 : NULL;
            nv++;
        } else {
            fprintf(stderr, "usage: bench_startup [--runs N] [--cmd PROGRAM] LABEL=PRELOAD|none...\n");
            return 2;
        }
    }
    if (nv == 0 || runs < 1 || runs > BS_RUNS_MAX) {
        fprintf(stderr, "bench_startup: give 1..%d variants and 1..%d runs\n", BS_VARIANTS_MAX, BS_RUNS_MAX);
        return 2;
    }
    char **env[BS_VARIANTS_MAX];
    for (int v = 0; v < nv; v++) {
        env[v] = child_env(&g_v[v], 0);
        g_v[v].libs = count_libs(cmd, &g_v[v]);
        if (!env[v] || g_v[v].libs < 0) {
            fprintf(stderr, "bench_startup: %s does not run under %s\n", cmd, g_v[v].label);
            return 1;
        }
    }
    /* warm-up: one untimed run of each */
    for (int v = 0; v < nv; v++) {
        double c, w, r;
        run_one(cmd, env[v], -1, &c, &w, &r);
    }
    for (int i = 0; i < runs; i++)
        for (int k = 0; k < nv; k++) {
            struct variant *v = &g_v[(i + k) % nv];
            if (run_one(cmd, env[(i + k) % nv], -1, &v->cpu_ms[i], &v->wall_ms[i], &v->rss_kib[i]) != 0) {
                fprintf(stderr, "bench_startup: %s failed under %s\n", cmd, v->label);
                return 1;
            }
        }
    printf("bench_startup: %s, %d interleaved rounds (order rotated each round)\n", cmd, runs);
    printf("  %-12s %-8s %10s %10s %10s\n", "variant", "figure", "min", "median", "max");
    for (int v = 0; v < nv; v++) {
        print_row(g_v[v].label, "cpu", g_v[v].cpu_ms, runs, "ms");
        print_row(g_v[v].label, "wall", g_v[v].wall_ms, runs, "ms");
        print_row(g_v[v].label, "maxrss", g_v[v].rss_kib, runs, "KiB");
        printf("  %-12s %-8s %10d shared objects initialised (LD_DEBUG=libs)\n", g_v[v].label, "libs",
               g_v[v].libs);
    }
    for (int v = 1; v < nv; v++) {
        double rc[BS_RUNS_MAX], rw[BS_RUNS_MAX], mn, med, mx;
        for (int i = 0; i < runs; i++) {
            rc[i] = g_v[0].cpu_ms[i] > 0 ? g_v[v].cpu_ms[i] / g_v[0].cpu_ms[i] : 0;
            rw[i] = g_v[v].wall_ms[i] / g_v[0].wall_ms[i];
        }
        stats(rc, runs, &mn, &med, &mx);
        printf("  %s/%s cpu ratio: median %.3f (min %.3f, max %.3f)\n", g_v[v].label, g_v[0].label, med, mn, mx);
        stats(rw, runs, &mn, &med, &mx);
        printf("  %s/%s wall ratio: median %.3f (min %.3f, max %.3f)\n", g_v[v].label, g_v[0].label, med, mn, mx);
    }
    for (int v = 0; v < nv; v++)
        free(env[v]);
    return 0;
}
