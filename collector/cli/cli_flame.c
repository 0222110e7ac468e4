/*
 * cli_flame.c — `d9 flame`: CPU (or off-CPU) profile of a window, a process,
 * a thread or one task's polls, as folded stacks ("root;...;leaf COUNT"),
 * the input format of flamegraph.pl, inferno and speedscope.
 *
 * Two scans of the store (cli_store.h): first the "d9.map" records of the
 * selected processes (collector pseudo ring SYM_SEG_RING, any time: a
 * process's maps are recorded when it is adopted and when they change),
 * which feed one sym.c resolver per process; then the samples
 * (CPU_SAMPLE, or SCHED_SWITCH with --off-cpu) of the window, plus the
 * poll_start/poll_end records when --task is given. Scan order is time
 * order, so --task keeps, per thread, how many polls of that task are open
 * and keeps a sample of that thread only while one is: "samples whose
 * timestamp falls inside the task's polls on the same thread".
 *
 * Symbolization happens here, at query time (see sym.h for why), with
 * an (process, address) -> name cache. Frames are return addresses except
 * the innermost and the first user frame under kernel frames: return
 * addresses are looked up at ip - 1 so a call at the end of a function is
 * not attributed to the next one.
 *
 * Memory: one entry per distinct stack, per distinct address and per thread
 * with open polls; never per sample. Called by main.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "collector/cli/cli.h"
#include "collector/cli/cli_store.h"
#include "collector/store/sym.h"
#include "shm/record.h"

static const char usage[] =
"NAME\n"
"    d9 flame - CPU and off-CPU profiles as folded stacks (flame graphs)\n"
"\n"
"SYNOPSIS\n"
"    d9 [--store DIR] flame [--pid PID] [--tid TID] [--task ID] [--off-cpu]\n"
"                           [--weight | --count] [--no-kernel] [--addresses]\n"
"                           [--since DUR | --from NS --to NS | --last] [-o FILE]\n"
"\n"
"DESCRIPTION\n"
"    Prints one line per distinct call stack, outermost frame first:\n"
"        main;worker_main;parse_request;memcpy 42\n"
"    the \"folded\" format read by flamegraph.pl, inferno-flamegraph and\n"
"    speedscope (d9 flame --pid 1234 > out.folded; flamegraph.pl out.folded\n"
"    > out.svg). Samples come from d9collectd's perf_event_open sampling\n"
"    (on-CPU at about --perf-freq Hz, default 99, taken on the scheduler\n"
"    tick where it can be: see d9collectd --perf-clock; off-CPU, 1 in N\n"
"    context switches, when the collector runs with --switch-period N), or\n"
"    from the agent's in-process fallback (DIAL9_SAMPLER=itimer) when perf\n"
"    is not permitted. Stacks are walked with frame pointers: build with\n"
"    -fno-omit-frame-pointer for complete stacks.\n"
"\n"
"    Frames are named at query time from the memory maps the collector\n"
"    recorded and the ELF files they name (.symtab, .dynsym; debug files\n"
"    under /usr/lib/debug/.build-id are used when the build-id matches).\n"
"    A frame whose file is missing or changed prints as file+0xOFFSET;\n"
"    kernel frames print as name_[k] when /proc/kallsyms is readable and\n"
"    the store comes from this boot, else [kernel].\n"
"\n"
"OPTIONS\n"
"    --pid PID       only samples of this process.\n"
"    --tid TID       only samples of this thread.\n"
"    --task ID       only samples taken while task ID was being polled on\n"
"                    the sampled thread (between its poll_start and\n"
"                    poll_end): the profile of one task.\n"
"    --off-cpu       off-CPU profile: where threads went to sleep or were\n"
"                    preempted (sampled context switches) instead of where\n"
"                    they ran. Implies --weight.\n"
"    --weight        sum each sample's weight in nanoseconds (CPU: the CPU\n"
"                    time a sample stands for, its period; off-CPU: the time\n"
"                    until the thread ran again).\n"
"    --count         count samples (the default for CPU profiles).\n"
"    --no-kernel     drop kernel frames.\n"
"    --addresses     print raw addresses (0x...) instead of names.\n"
"    -o, --output FILE  write to FILE instead of standard output.\n"
"\n"
CLI_HELP_WINDOW "\n" CLI_HELP_COMMON "\n"
"EXAMPLES\n"
"    d9 flame --pid 1234 --since 30s > cpu.folded\n"
"    d9 flame --pid 1234 --task 77 | flamegraph.pl > task77.svg\n"
"    d9 flame --pid 1234 --off-cpu > offcpu.folded\n"
"\n"
CLI_HELP_EXIT;

enum {
    OPT_TASK = CLI_OPT_FIRST_PRIVATE,
    OPT_OFFCPU,
    OPT_WEIGHT,
    OPT_COUNT,
    OPT_NO_KERNEL,
    OPT_ADDRESSES,
};

struct flame_opts {
    bool have_task;
    uint64_t task;
    bool off_cpu;
    int weight;                 /* -1 unset, 0 count, 1 weight */
    bool no_kernel;
    bool addresses;
};

static int priv(struct cli_env *env, void *arg, int opt, const char *val)
{
    struct flame_opts *o = arg;
    switch (opt) {
    case OPT_TASK:
        if (cli_parse_u64(val, &o->task) != 0) {
            cli_usage_error(env, "--task: '%s' is not a task id", val);
            return -1;
        }
        o->have_task = true;
        return 0;
    case OPT_OFFCPU:
        o->off_cpu = true;
        return 0;
    case OPT_WEIGHT:
        o->weight = 1;
        return 0;
    case OPT_COUNT:
        o->weight = 0;
        return 0;
    case OPT_NO_KERNEL:
        o->no_kernel = true;
        return 0;
    case OPT_ADDRESSES:
        o->addresses = true;
        return 0;
    default:
        cli_usage_error(env, "unexpected option");
        return -1;
    }
}

/* ---- hash tables ----------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static uint64_t str_hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* folded stack -> total */
struct stack_ent {
    char *key;                  /* NULL = empty slot */
    uint64_t total;
};
struct stack_tab {
    struct stack_ent *e;
    size_t cap, n;
};

static int stack_add(struct stack_tab *t, const char *key, size_t klen, uint64_t w)
{
    if (t->n * 2 >= t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 1024;
        struct stack_ent *ne = calloc(nc, sizeof *ne);
        if (!ne)
            return -ENOMEM;
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->e[i].key)
                continue;
            size_t j = str_hash(t->e[i].key, strlen(t->e[i].key)) & (nc - 1);
            while (ne[j].key)
                j = (j + 1) & (nc - 1);
            ne[j] = t->e[i];
        }
        free(t->e);
        t->e = ne;
        t->cap = nc;
    }
    size_t j = str_hash(key, klen) & (t->cap - 1);
    while (t->e[j].key) {
        if (strlen(t->e[j].key) == klen && memcmp(t->e[j].key, key, klen) == 0) {
            t->e[j].total += w;
            return 0;
        }
        j = (j + 1) & (t->cap - 1);
    }
    t->e[j].key = strndup(key, klen);
    if (!t->e[j].key)
        return -ENOMEM;
    t->e[j].total = w;
    t->n++;
    return 0;
}

/* (process, address, kernel) -> name */
struct name_ent {
    int64_t process_id;
    uint64_t ip;
    char *name;                 /* NULL = empty slot */
};
struct name_tab {
    struct name_ent *e;
    size_t cap, n;
};

static size_t name_slot(const struct name_tab *t, int64_t pid, uint64_t ip)
{
    return mix(ip ^ mix((uint64_t)pid)) & (t->cap - 1);
}

static const char *name_get(struct name_tab *t, int64_t pid, uint64_t ip)
{
    if (!t->cap)
        return NULL;
    for (size_t j = name_slot(t, pid, ip); t->e[j].name; j = (j + 1) & (t->cap - 1))
        if (t->e[j].ip == ip && t->e[j].process_id == pid)
            return t->e[j].name;
    return NULL;
}

static const char *name_put(struct name_tab *t, int64_t pid, uint64_t ip, const char *name)
{
    if (t->n * 2 >= t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 4096;
        struct name_ent *ne = calloc(nc, sizeof *ne);
        if (!ne)
            return NULL;
        struct name_tab nt = { ne, nc, 0 };
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->e[i].name)
                continue;
            size_t j = name_slot(&nt, t->e[i].process_id, t->e[i].ip);
            while (ne[j].name)
                j = (j + 1) & (nc - 1);
            ne[j] = t->e[i];
        }
        free(t->e);
        t->e = ne;
        t->cap = nc;
    }
    size_t j = name_slot(t, pid, ip);
    while (t->e[j].name)
        j = (j + 1) & (t->cap - 1);
    t->e[j].process_id = pid;
    t->e[j].ip = ip;
    t->e[j].name = strdup(name);
    if (!t->e[j].name)
        return NULL;
    t->n++;
    return t->e[j].name;
}

/* ---- per process / per thread state ------------------------------------------ */

struct proc_res {
    int64_t process_id;
    struct sym_resolver *r;
};

struct thread_polls {
    int64_t process_id;
    uint32_t tid;
    uint32_t open;              /* polls of the task open on this thread */
};

struct flame {
    struct flame_opts o;
    uint32_t tid;               /* --tid: of the sample (perf blocks hold many threads) */
    struct proc_res *procs;
    size_t nprocs;
    struct thread_polls *th;
    size_t nth;
    struct stack_tab stacks;
    struct name_tab names;
    uint64_t samples, kept, maps;
    uint16_t want_type;
    char key[D9_STACK_MAX_FRAMES * 256];
};

static struct sym_resolver *resolver_of(struct flame *f, int64_t process_id, bool create)
{
    for (size_t i = 0; i < f->nprocs; i++)
        if (f->procs[i].process_id == process_id)
            return f->procs[i].r;
    if (!create)
        return NULL;
    struct proc_res *np = realloc(f->procs, (f->nprocs + 1) * sizeof *np);
    if (!np)
        return NULL;
    f->procs = np;
    struct sym_resolver *r;
    if (sym_resolver_new(&r, "") < 0)
        return NULL;
    f->procs[f->nprocs].process_id = process_id;
    f->procs[f->nprocs].r = r;
    f->nprocs++;
    return r;
}

static struct thread_polls *thread_of(struct flame *f, int64_t process_id, uint32_t tid,
                                      bool create)
{
    for (size_t i = 0; i < f->nth; i++)
        if (f->th[i].process_id == process_id && f->th[i].tid == tid)
            return &f->th[i];
    if (!create)
        return NULL;
    struct thread_polls *nt = realloc(f->th, (f->nth + 1) * sizeof *nt);
    if (!nt)
        return NULL;
    f->th = nt;
    f->th[f->nth] = (struct thread_polls){ process_id, tid, 0 };
    return &f->th[f->nth++];
}

/* ---- scans ----------------------------------------------------------------------- */

static int on_map(void *arg, const struct cli_rec_src *src, const struct d9_rec_hdr *rec,
                  size_t len)
{
    struct flame *f = arg;
    struct sym_map_rec m;
    if (src->ring != SYM_SEG_RING || sym_map_decode((const uint8_t *)rec, len, &m) != 0)
        return 0;
    struct sym_resolver *r = resolver_of(f, src->process_id, true);
    if (!r || sym_resolver_add(r, &m) < 0)
        return -ENOMEM;
    f->maps++;
    return 0;
}

static int add_sample(struct flame *f, const struct cli_rec_src *src, const uint8_t *rec)
{
    struct d9_rec_stack s;
    memcpy(&s, rec, sizeof s);
    struct sym_resolver *r = resolver_of(f, src->process_id, true);
    if (!r)
        return -ENOMEM;
    size_t kl = 0;
    for (int i = (int)s.nframes - 1; i >= 0; i--) {
        uint64_t ip;
        memcpy(&ip, rec + sizeof s + (size_t)i * 8, 8);
        if (ip == 0)
            continue;           /* the end of a frame-pointer chain, not code */
        bool kernel = ip >= SYM_KERNEL_SPACE_MIN;
        if (kernel && f->o.no_kernel)
            continue;
        char buf[300];
        const char *name;
        if (f->o.addresses) {
            snprintf(buf, sizeof buf, "0x%" PRIx64, ip);
            name = buf;
        } else {
            /* frames are return addresses (look inside the call, ip - 1) except
             * the innermost and the first user frame under kernel frames,
             * which are where the thread was interrupted or entered the kernel */
            uint64_t inner = 0;
            if (i > 0)
                memcpy(&inner, rec + sizeof s + (size_t)(i - 1) * 8, 8);
            bool exact = i == 0 || (!kernel && inner >= SYM_KERNEL_SPACE_MIN);
            uint64_t look = exact ? ip : ip - 1;
            name = name_get(&f->names, src->process_id, look);
            if (!name) {
                sym_resolve(r, look, kernel, buf, sizeof buf);
                name = name_put(&f->names, src->process_id, look, buf);
                if (!name)
                    return -ENOMEM;
            }
        }
        size_t nl = strlen(name);
        if (kl + nl + 2 > sizeof f->key)
            break;              /* cannot happen with 127 frames of <300 bytes */
        if (kl)
            f->key[kl++] = ';';
        memcpy(f->key + kl, name, nl);
        kl += nl;
    }
    if (kl == 0) {
        static const char none[] = "[no frames]";
        memcpy(f->key, none, sizeof none - 1);
        kl = sizeof none - 1;
    }
    f->kept++;
    return stack_add(&f->stacks, f->key, kl, f->o.weight == 1 ? s.weight : 1);
}

static int on_record(void *arg, const struct cli_rec_src *src, const struct d9_rec_hdr *rec,
                     size_t len)
{
    struct flame *f = arg;
    if (rec->type == D9_REC_POLL_START || rec->type == D9_REC_POLL_END) {
        struct d9_rec_poll_end pe;      /* task is at the same offset in both */
        if (len < sizeof pe)
            return 0;
        memcpy(&pe, rec, sizeof pe);
        if (pe.task != f->o.task)
            return 0;
        struct thread_polls *t = thread_of(f, src->process_id, src->tid, true);
        if (!t)
            return -ENOMEM;
        if (rec->type == D9_REC_POLL_START)
            t->open++;
        else if (t->open)
            t->open--;
        return 0;
    }
    if (rec->type != f->want_type || shm_record_check(rec, len) <= 0)
        return 0;
    f->samples++;
    struct d9_rec_stack s;
    memcpy(&s, rec, sizeof s);
    if (f->tid && s.tid != f->tid)
        return 0;
    if (f->o.have_task) {
        const struct thread_polls *t = thread_of(f, src->process_id, s.tid, false);
        if (!t || t->open == 0)
            return 0;
    }
    return add_sample(f, src, (const uint8_t *)rec);
}

static int by_key(const void *a, const void *b)
{
    const struct stack_ent *x = a, *y = b;
    return strcmp(x->key, y->key);
}

static void flame_free(struct flame *f)
{
    for (size_t i = 0; i < f->nprocs; i++)
        sym_resolver_free(f->procs[i].r);
    free(f->procs);
    free(f->th);
    for (size_t i = 0; i < f->stacks.cap; i++)
        free(f->stacks.e[i].key);
    free(f->stacks.e);
    for (size_t i = 0; i < f->names.cap; i++)
        free(f->names.e[i].name);
    free(f->names.e);
    free(f);
}

CLI_DECLARE_CMD(flame)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP, CLI_OPTE_STORE, CLI_OPTE_PID, CLI_OPTE_TID, CLI_OPTE_WINDOW,
        CLI_OPTE_OUTPUT,
        { "task", 1, NULL, OPT_TASK },
        { "off-cpu", 0, NULL, OPT_OFFCPU },
        { "weight", 0, NULL, OPT_WEIGHT },
        { "count", 0, NULL, OPT_COUNT },
        { "no-kernel", 0, NULL, OPT_NO_KERNEL },
        { "addresses", 0, NULL, OPT_ADDRESSES },
        CLI_OPTE_END,
    };
    struct flame *f = calloc(1, sizeof *f);
    if (!f)
        return cli_fail(env, "out of memory");
    f->o.weight = -1;
    struct cli_args a;
    cli_args_init(&a);
    int rc = cli_getopt(env, &a, argc, argv, opts, usage, priv, &f->o);
    if (rc != 0) {
        flame_free(f);
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    }
    if (f->o.weight < 0)
        f->o.weight = f->o.off_cpu ? 1 : 0;
    f->want_type = f->o.off_cpu ? D9_REC_SCHED_SWITCH : D9_REC_CPU_SAMPLE;

    FILE *out = stdout;
    if (a.output && strcmp(a.output, "-") != 0) {
        out = fopen(a.output, "w");
        if (!out) {
            int e = errno;
            flame_free(f);
            return cli_fail(env, "-o %s: %s", a.output, strerror(e));
        }
    }
    struct cli_store *s;
    if ((rc = cli_open_store(env, &s)) != CLI_EXIT_OK) {
        if (out != stdout)
            fclose(out);
        flame_free(f);
        return rc;
    }

    /* pass 1: memory maps of the processes, whatever their time */
    struct cli_filter mf = { .from = 0, .to = UINT64_MAX, .pid = a.pid,
                             .types = 1u << D9_REC_CUSTOM };
    int r = f->o.addresses ? 0 : cli_store_scan(s, &mf, on_map, f, NULL, "d9 flame");

    /* pass 2: samples (and the task's polls) of the window */
    struct cli_filter sf = { .pid = a.pid, .types = 1u << f->want_type };
    if (f->o.have_task)
        sf.types |= 1u << D9_REC_POLL_START | 1u << D9_REC_POLL_END;
    f->tid = a.tid;             /* by the sample's tid, not the block's: see on_record */
    cli_store_window_resolve(s, &a.win, a.pid, &sf.from, &sf.to);
    struct cli_scan_stats st;
    memset(&st, 0, sizeof st);
    if (r >= 0)
        r = cli_store_scan(s, &sf, on_record, f, &st, "d9 flame");
    if (r < 0) {
        rc = cli_fail(env, "%s: scan failed (error %d)", env->store, r);
    } else if (f->stacks.n == 0) {
        char w[160];
        fprintf(stderr, "d9 flame: no %s samples%s in %s%s%s\n",
                f->o.off_cpu ? "off-CPU" : "CPU", f->o.have_task ? " inside the task's polls" : "",
                cli_window_text(&a.win, cli_store_live(s), w, sizeof w),
                st.blocks == 0 ? " (no indexed blocks: unsealed data needs 'd9 flush')" : "",
                f->o.off_cpu && st.blocks ? " (off-CPU samples need d9collectd --switch-period N)"
                                          : "");
    } else {
        struct stack_ent *v = malloc(f->stacks.n * sizeof *v);
        if (!v) {
            rc = cli_fail(env, "out of memory");
        } else {
            size_t n = 0;
            for (size_t i = 0; i < f->stacks.cap; i++)
                if (f->stacks.e[i].key)
                    v[n++] = f->stacks.e[i];
            qsort(v, n, sizeof *v, by_key);
            for (size_t i = 0; i < n; i++)
                fprintf(out, "%s %" PRIu64 "\n", v[i].key, v[i].total);
            free(v);
            if (fflush(out) != 0)
                rc = cli_fail(env, "%s: write error", out == stdout ? "standard output" : a.output);
            fprintf(stderr, "d9 flame: %" PRIu64 " samples, %" PRIu64 " kept, %zu stacks, "
                    "%zu processes%s\n", f->samples, f->kept, f->stacks.n, f->nprocs,
                    f->maps == 0 && !f->o.addresses ? " (no memory maps recorded: raw addresses)"
                                                     : "");
        }
    }
    if (st.lost && r >= 0)
        cli_warn(env, "%" PRIu64 " records were dropped by full rings in the blocks read", st.lost);
    if (out != stdout && fclose(out) != 0 && rc == CLI_EXIT_OK)
        rc = cli_fail(env, "-o %s: write error", a.output);
    cli_store_close(s);
    flame_free(f);
    return rc;
}
