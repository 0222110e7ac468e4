/*
 * test_agent_api.c — the public API of agent/d9.h on the process singleton.
 *
 * The singleton reads the environment once per process, so every test runs
 * the traced program in a forked child with its own DIAL9_* variables (a
 * temp DIAL9_SHM_DIR, never /dev/shm, and a collector socket nobody listens
 * on). The child checks what only it can see and exits non-zero on failure;
 * the test then maps the regions the child left behind, as the collector
 * would, and checks what was recorded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agent/d9.h"
#include "shm/clock.h"
#include "shm/meta.h"
#include "shm/record.h"
#include "shm/region.h"
#include "shm/ring.h"
#include "tests/unit/listener.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "child %d: %s:%d: %s\n", (int)getpid(), \
        __FILE__, __LINE__, #c); _exit(1); } } while (0)

struct fx {
    char dir[64];
    char endpoint[128];
    char err[4096];             /* the child's stderr */
    uint8_t out[1 << 20];
};

static int g_listener = -1;

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/d9-test-api.XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    /* the children's regions stay at exit for the test to read */
    g_listener = listener_open(f->dir, f->endpoint, sizeof f->endpoint);
    if (g_listener < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    listener_close(&g_listener);
    struct fx *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    int rc = system(cmd);
    free(f);
    return rc == 0 ? 0 : -1;
}

typedef void (*child_fn)(struct fx *f, void *arg);

/* Fork a traced child with env ("K=V", NULL-terminated) on top of the test's
 * DIAL9_SHM_DIR/DIAL9_COLLECTOR, running fn; *errfd reads its stderr.
 * The test process must be single-threaded here: under ASan a fork while
 * another thread is inside the allocator leaves its lock held in the child. */
static pid_t spawn_child(struct fx *f, const char *const *env, child_fn fn, void *arg,
                         int *errfd)
{
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);          /* so a hung child and its children can be killed */
        close(pfd[0]);
        dup2(pfd[1], 2);
        close(pfd[1]);
        setvbuf(stderr, NULL, _IONBF, 0);
        const char *vars[] = { "DIAL9_ENABLED", "DIAL9_RING_KB", "DIAL9_MAX_THREADS",
                               "DIAL9_COLLECTOR", "DIAL9_RUNTIME_NAME", "DIAL9_SHM_DIR",
                               "DIAL9_SAMPLER", "DIAL9_SAMPLER_HZ", "DIAL9_SAMPLER_WAIT_MS",
                               "DIAL9_CLOCK", "DIAL9_SCHED_SAMPLE_US" };
        for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
            unsetenv(vars[i]);
        setenv("DIAL9_SHM_DIR", f->dir, 1);
        setenv("DIAL9_COLLECTOR", f->endpoint, 1);
        /* the profiler fallback takes rings of its own: keep ring counts exact */
        setenv("DIAL9_SAMPLER", "off", 1);
        for (; env && *env; env++)
            putenv((char *)*env);
        fn(f, arg);
        _exit(0);
    }
    close(pfd[1]);
    *errfd = pfd[0];
    return pid;
}

/* Collect the child's stderr into f->err and require exit status 0. A child
 * still running after CHILD_GUARD_MS is killed with its process group (only
 * so a broken agent cannot hang the suite; no test depends on timing). */
#define CHILD_GUARD_MS 120000
static void finish_child(struct fx *f, pid_t pid, int errfd)
{
    size_t n = 0;
    ssize_t r = 1;
    int hung = 0;
    while (n < sizeof f->err - 1 && r > 0) {
        struct pollfd pfd = { .fd = errfd, .events = POLLIN };
        if (poll(&pfd, 1, CHILD_GUARD_MS) <= 0) {
            hung = 1;
            break;
        }
        r = read(errfd, f->err + n, sizeof f->err - 1 - n);
        if (r > 0)
            n += (size_t)r;
    }
    f->err[n] = 0;
    close(errfd);
    if (hung) {
        kill(-pid, SIGKILL);
        waitpid(pid, NULL, 0);
        fail_msg("traced child hung; its stderr so far:\n%s", f->err);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("traced child failed (status %#x); its stderr:\n%s", status, f->err);
}

/* spawn_child + finish_child; returns the pid of the child (now exited). */
static pid_t run_child(struct fx *f, const char *const *env, child_fn fn, void *arg)
{
    int errfd;
    pid_t pid = spawn_child(f, env, fn, arg, &errfd);
    finish_child(f, pid, errfd);
    return pid;
}

static int count_regions(struct fx *f)
{
    DIR *d = opendir(f->dir);
    struct dirent *e;
    int n = 0;
    uint32_t u, p;
    uint64_t s;
    while ((e = readdir(d)))
        n += shm_region_parse_name(e->d_name, &u, &p, &s) == 0;
    closedir(d);
    return n;
}

/* Map the region of pid, as the collector would. */
static void map_region(struct fx *f, pid_t pid, struct shm_region *r, struct shm_geometry *g)
{
    DIR *d = opendir(f->dir);
    struct dirent *e;
    char path[512] = "";
    uint32_t u, p;
    uint64_t s;
    while ((e = readdir(d)))
        if (shm_region_parse_name(e->d_name, &u, &p, &s) == 0 && p == (uint32_t)pid)
            snprintf(path, sizeof path, "%s/%s", f->dir, e->d_name);
    closedir(d);
    assert_true(path[0] != 0);
    assert_int_equal(shm_region_map(path, (uint32_t)getuid(), r, g), 0);
}

/* The committed records of ring idx into f->out; consumes them when asked. */
static long read_ring(struct fx *f, struct shm_region *r, struct shm_geometry *g, uint32_t idx,
                      int consume)
{
    struct shm_ring_snapshot s;
    shm_ring_snapshot(shm_ring_hdr(r, g, idx), &s);
    uint64_t nt;
    long n = shm_ring_read(shm_ring_data(r, g, idx), g->ring_data_size, &s, f->out,
                           sizeof f->out, &nt, NULL);
    assert_true(n >= 0);
    if (consume)
        shm_ring_consume(shm_ring_hdr(r, g, idx), nt);
    return n;
}

static int find_meta(struct shm_region *r, struct shm_geometry *g, uint16_t kind, uint32_t id,
                     struct shm_meta_entry *out)
{
    size_t off = 0;
    uint32_t len = atomic_load(&r->hdr->meta_head);
    if (len > g->meta_size)
        return 0;
    while (shm_meta_next(r->base + g->meta_offset, len, &off, out) == 1)
        if (out->kind == kind && out->id == id)
            return 1;
    return 0;
}

static void emit_everything(d9_runtime rt)
{
    d9_poll_start(rt, 1, 100, 0);
    d9_poll_end(rt, 1, 100);
    d9_wake(rt, 100, 101, 2);
    d9_worker_park(rt, 1);
    d9_worker_unpark(rt, 1);
    d9_task_spawn(rt, 102, 0);
    d9_task_terminate(rt, 102);
    d9_queue_depth(rt, D9_WORKER_NONE_ID, 7);
}

/* ---- configuration ------------------------------------------------------------ */

static void child_bad_env(struct fx *f, void *arg)
{
    (void)f;
    (void)arg;
    CHECK(d9_init() == -EINVAL);
    CHECK(d9_init() == -EINVAL);            /* idempotent, and says it only once */
    CHECK(!d9_enabled());
    CHECK(d9_region_path() == NULL);
    d9_runtime rt;
    CHECK(d9_runtime_register("x", &rt) == D9_OFF && rt.id == 0);
    CHECK(d9_runtime_default().id == 0);
    emit_everything((d9_runtime){ 1 });
    d9_shutdown();
}

static void test_bad_env_prints_one_line_and_runs_untraced(void **state)
{
    struct fx *f = *state;
    const char *env[] = { "DIAL9_RING_KB=abc", NULL };
    run_child(f, env, child_bad_env, NULL);
    assert_string_equal(f->err,
        "d9: DIAL9_RING_KB=abc is not a number of KiB (4..65536); tracing disabled\n");
    assert_int_equal(count_regions(f), 0);
}

static void test_bad_max_threads_prints_one_line_and_runs_untraced(void **state)
{
    struct fx *f = *state;
    const char *env[] = { "DIAL9_MAX_THREADS=0", NULL };
    run_child(f, env, child_bad_env, NULL);
    assert_string_equal(f->err, "d9: DIAL9_MAX_THREADS=0 is out of range for a number of "
                        "threads (1..4096); tracing disabled\n");
    assert_int_equal(count_regions(f), 0);
}

static void child_disabled(struct fx *f, void *arg)
{
    (void)f;
    (void)arg;
    CHECK(d9_init() == 1);
    CHECK(!d9_enabled());
    CHECK(d9_region_path() == NULL);
    CHECK(d9_loc_register("a.c", 1, "f") == 0);
    d9_runtime rt;
    CHECK(d9_runtime_register("x", &rt) == D9_OFF && rt.id == 0);
    emit_everything((d9_runtime){ 1 });
    D9_SCHEMA(s, "s", D9_FIELD_U64("n"));
    d9_emit(&s, D9_U64(1));
    CHECK(s.id == 0);                        /* nothing published */
    d9_stats st;
    d9_get_stats(&st);
    CHECK(st.lost == 0 && st.rings_in_use == 0 && st.threads_untraced == 0);
}

static void test_disabled_by_config_records_nothing(void **state)
{
    struct fx *f = *state;
    const char *env[] = { "DIAL9_ENABLED=0", NULL };
    run_child(f, env, child_disabled, NULL);
    assert_string_equal(f->err, "");
    assert_int_equal(count_regions(f), 0);
}

static void child_unwritable_dir(struct fx *f, void *arg)
{
    (void)f;
    (void)arg;
    CHECK(d9_init() == -ENOENT);
    CHECK(!d9_enabled());
    emit_everything((d9_runtime){ 1 });
}

static void test_region_creation_failure_is_one_line_and_untraced(void **state)
{
    struct fx *f = *state;
    char var[200];
    snprintf(var, sizeof var, "DIAL9_SHM_DIR=%s/missing", f->dir);
    const char *env[] = { var, NULL };
    run_child(f, env, child_unwritable_dir, NULL);
    char want[300];
    snprintf(want, sizeof want, "d9: cannot create a region in %s/missing: No such file or "
             "directory; tracing disabled\n", f->dir);
    assert_string_equal(f->err, want);
}

/* ---- recording -------------------------------------------------------------------- */

D9_SCHEMA(sch_req, "request", D9_FIELD_STR("path"), D9_FIELD_U64("status"));

static void child_records(struct fx *f, void *arg)
{
    (void)f;
    (void)arg;
    /* park samples schedstat, the unpark right after it falls in the interval */
    CHECK(setenv("DIAL9_SCHED_SAMPLE_US", "60000000", 1) == 0);
    CHECK(d9_init() == 0);
    CHECK(d9_init() == 0);
    CHECK(d9_enabled());
    CHECK(d9_region_path() != NULL);
    d9_runtime rt;
    CHECK(d9_runtime_register("http", &rt) == 0 && rt.id == 2);
    d9_loc loc = D9_LOC();
    d9_poll_start(rt, 3, 0xabcdef, loc);
    d9_poll_end(rt, 3, 0xabcdef);
    d9_wake(rt, 0xabcdef, 0x1234, D9_WORKER_NONE_ID);
    d9_worker_park(rt, 3);
    d9_worker_unpark(rt, 3);
    d9_task_spawn(rt, 0x1234, loc);
    d9_task_terminate(rt, 0x1234);
    d9_queue_depth(rt, D9_WORKER_NONE_ID, UINT64_MAX);
    d9_emit(&sch_req, D9_STR("/x"), D9_U64(200));
    d9_poll_start((d9_runtime){ 0 }, 3, 1, loc);    /* unregistered runtime: discarded */
    d9_stats st;
    d9_get_stats(&st);
    CHECK(st.rings_in_use == 1 && st.lost == 0 && st.threads_untraced == 0);
    d9_shutdown();
    d9_shutdown();
    /* stderr (a pipe to the test) carries the ids the child got */
    fprintf(stderr, "loc=%u rt=%u\n", (unsigned)loc, (unsigned)rt.id);
}

/* ---- errno: record functions never change it ---------------------------------------- */

D9_SCHEMA(errno_ev, "errno_ev", D9_FIELD_U64("n"));

/* Close every fd of this process open on a schedstat file. */
static void close_schedstat_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int fds[64], n = 0;
    while (d && (e = readdir(d)) && n < 64) {
        char path[300], target[256];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, target, sizeof target - 1);
        if (len > 0) {
            target[len] = 0;
            if (strstr(target, "schedstat"))
                fds[n++] = atoi(e->d_name);
        }
    }
    if (d)
        closedir(d);
    for (int i = 0; i < n; i++)
        close(fds[i]);
}

/* Every record function, each with errno set to a value no syscall sets;
 * the first of them claims the thread's ring (syscalls), park/unpark read
 * schedstat (DIAL9_SCHED_SAMPLE_US=0: every time). */
static void *errno_thread(void *arg)
{
    int *bad = arg;
    d9_runtime rt = d9_runtime_default();
#define KEEPS(call) do { errno = EDOM; call; if (errno != EDOM) (*bad)++; } while (0)
    KEEPS(d9_poll_start(rt, 1, 100, 0));
    KEEPS(d9_poll_end(rt, 1, 100));
    KEEPS(d9_wake(rt, 100, 101, 2));
    KEEPS(d9_worker_park(rt, 1));
    KEEPS(d9_worker_unpark(rt, 1));
    KEEPS(d9_task_spawn(rt, 102, 0));
    KEEPS(d9_task_terminate(rt, 102));
    KEEPS(d9_queue_depth(rt, D9_WORKER_NONE_ID, 7));
    KEEPS(d9_emit(&errno_ev, D9_U64(1)));
    /* a program that closes file descriptors it does not know (as daemons
     * do) closes the agent's schedstat fd: the next read fails (EBADF) */
    close_schedstat_fds();
    KEEPS(d9_worker_park(rt, 1));
    KEEPS(d9_worker_unpark(rt, 1));
#undef KEEPS
    return NULL;
}

static void child_errno(struct fx *f, void *arg)
{
    (void)f;
    (void)arg;
    CHECK(d9_init() == 0);
    int bad = 0;
    errno_thread(&bad);                         /* the main thread: claims ring 0 */
    CHECK(bad == 0);
    pthread_t th;                               /* a second thread: no ring left */
    CHECK(pthread_create(&th, NULL, errno_thread, &bad) == 0);
    pthread_join(th, NULL);
    CHECK(bad == 0);
    d9_stats st;
    d9_get_stats(&st);
    CHECK(st.threads_untraced == 1);
}

static void test_record_functions_never_change_errno(void **state)
{
    struct fx *f = *state;
    const char *env[] = { "DIAL9_SCHED_SAMPLE_US=0", "DIAL9_MAX_THREADS=1", NULL };
    run_child(f, env, child_errno, NULL);
}

static void child_custom_in_polls(struct fx *f, void *arg)
{
    (void)f;
    (void)arg;
    CHECK(d9_init() == 0);
    d9_runtime rt;
    CHECK(d9_runtime_register("http", &rt) == 0);
    d9_emit(&sch_req, D9_STR("/out"), D9_U64(1));           /* outside: none */
    d9_poll_start(rt, 0, 7, 0);
    d9_emit(&sch_req, D9_STR("/in7"), D9_U64(2));           /* 7 */
    d9_poll_start(rt, 0, 9, 0);                             /* nested (block_on) */
    d9_emit(&sch_req, D9_STR("/in9"), D9_U64(3));           /* 9, the innermost */
    d9_poll_end(rt, 0, 9);
    d9_emit(&sch_req, D9_STR("/in7"), D9_U64(4));           /* 7 again */
    d9_poll_start((d9_runtime){ 0 }, 0, 5, 0);              /* discarded: not a poll */
    d9_emit(&sch_req, D9_STR("/in7"), D9_U64(5));           /* still 7 */
    d9_poll_end(rt, 0, 7);
    d9_emit(&sch_req, D9_STR("/out"), D9_U64(6));           /* none */
}

/* A custom event records the task whose poll its thread is in (the
 * innermost), D9_TASK_NONE outside polls. */
static void test_custom_events_record_the_task_being_polled(void **state)
{
    struct fx *f = *state;
    pid_t pid = run_child(f, NULL, child_custom_in_polls, NULL);
    struct shm_region r;
    struct shm_geometry g;
    map_region(f, pid, &r, &g);
    long n = read_ring(f, &r, &g, 0, 0);
    const uint64_t want[] = { D9_TASK_NONE, 7, 9, 7, 7, D9_TASK_NONE };
    unsigned k = 0;
    for (long off = 0; off < n;) {
        struct d9_rec_hdr h;
        memcpy(&h, f->out + off, sizeof h);
        if (h.type == D9_REC_CUSTOM) {
            struct d9_rec_custom c;
            memcpy(&c, f->out + off, sizeof c);
            assert_true(k < sizeof want / sizeof want[0]);
            assert_int_equal(c.task, want[k]);
            k++;
        }
        off += h.len;
    }
    assert_int_equal(k, sizeof want / sizeof want[0]);
    shm_region_close(&r);
}

D9_TRIGGER_EVENT(slow_tg, (U64, latency_ms), (STR, path));

static void child_typed_trigger(struct fx *f, void *arg)
{
    (void)f;
    (void)arg;
    CHECK(d9_init() == 0);
    slow_tg_trigger("slow", 250, "/api");
    slow_tg_trigger(NULL, 7, "");
}

/* A typed trigger is a custom event of a schema named "d9_trigger" whose
 * first field is the reason, then its own fields, values in order. */
static void test_a_typed_trigger_records_its_reason_and_fields(void **state)
{
    struct fx *f = *state;
    pid_t pid = run_child(f, NULL, child_typed_trigger, NULL);
    struct shm_region r;
    struct shm_geometry g;
    map_region(f, pid, &r, &g);
    long n = read_ring(f, &r, &g, 0, 0);
    static const char *const reasons[] = { "slow", "" };
    static const uint64_t ms[] = { 250, 7 };
    static const char *const paths[] = { "/api", "" };
    unsigned k = 0;
    for (long off = 0; off < n;) {
        struct d9_rec_hdr h;
        memcpy(&h, f->out + off, sizeof h);
        if (h.type == D9_REC_CUSTOM) {
            struct d9_rec_custom c;
            memcpy(&c, f->out + off, sizeof c);
            struct shm_meta_entry me;
            assert_true(find_meta(&r, &g, D9_META_SCHEMA, c.schema, &me));
            assert_string_equal(me.name, D9_TRIGGER_SCHEMA);
            assert_int_equal(me.nfields, 3);
            assert_string_equal(me.fields[0].name, "reason");
            assert_int_equal(me.fields[0].type, D9_FT_STR);
            assert_string_equal(me.fields[1].name, "latency_ms");
            assert_int_equal(me.fields[1].type, D9_FT_U64);
            assert_string_equal(me.fields[2].name, "path");
            assert_int_equal(me.fields[2].type, D9_FT_STR);
            assert_true(k < 2);
            const uint8_t *p = f->out + off + sizeof c;
            uint32_t sl;
            memcpy(&sl, p, 4);
            assert_int_equal(sl, strlen(reasons[k]));
            assert_memory_equal(p + 4, reasons[k], sl);
            p += (4 + sl + 7) & ~7u;
            uint64_t v;
            memcpy(&v, p, 8);
            assert_int_equal(v, ms[k]);
            p += 8;
            memcpy(&sl, p, 4);
            assert_int_equal(sl, strlen(paths[k]));
            assert_memory_equal(p + 4, paths[k], sl);
            k++;
        }
        off += h.len;
    }
    assert_int_equal(k, 2);
    shm_region_close(&r);
}

static void test_events_are_recorded_in_the_threads_ring(void **state)
{
    struct fx *f = *state;
    pid_t pid = run_child(f, NULL, child_records, NULL);
    unsigned loc = 0, rtid = 0;
    assert_int_equal(sscanf(f->err, "loc=%u rt=%u", &loc, &rtid), 2);
    struct shm_region r;
    struct shm_geometry g;
    map_region(f, pid, &r, &g);
    assert_int_equal(atomic_load(&r.hdr->state), D9_REGION_CLOSED);
    struct shm_ring_snapshot s;
    shm_ring_snapshot(shm_ring_hdr(&r, &g, 0), &s);
    assert_int_equal(s.tid, (uint32_t)pid);          /* the main thread's tid is the pid */
    long n = read_ring(f, &r, &g, 0, 0);
    const uint16_t types[] = { D9_REC_POLL_START, D9_REC_POLL_END, D9_REC_WAKE,
                               D9_REC_WORKER_PARK, D9_REC_WORKER_UNPARK, D9_REC_TASK_SPAWN,
                               D9_REC_TASK_TERMINATE, D9_REC_QUEUE_DEPTH, D9_REC_CUSTOM };
    long off = 0;
    uint64_t last_ts = 0;
    for (unsigned i = 0; i < sizeof types / sizeof types[0]; i++) {
        assert_true(off < n);
        struct d9_rec_hdr h;
        memcpy(&h, f->out + off, sizeof h);
        assert_int_equal(h.type, types[i]);
        assert_int_equal(h.seq, i);
        assert_true(h.ts >= last_ts);
        last_ts = h.ts;
        if (h.type == D9_REC_POLL_START) {
            struct d9_rec_poll_start p;
            memcpy(&p, f->out + off, sizeof p);
            assert_int_equal(p.loc, loc);
            assert_int_equal(p.runtime, rtid);
            assert_int_equal(p.task, 0xabcdef);
        } else if (h.type == D9_REC_QUEUE_DEPTH) {
            struct d9_rec_queue_depth q;
            memcpy(&q, f->out + off, sizeof q);
            assert_int_equal(q.depth, UINT64_MAX);
        } else if (h.type == D9_REC_WORKER_PARK) {
            struct d9_rec_worker w;
            memcpy(&w, f->out + off, sizeof w);
            assert_int_equal(w.flags, 0);               /* the thread's first: sampled */
            assert_true(w.cpu_ns > 0);
            assert_int_equal(w.runtime, rtid);
            assert_int_equal(w.worker, 3);
        } else if (h.type == D9_REC_WORKER_UNPARK) {
            struct d9_rec_worker w;
            memcpy(&w, f->out + off, sizeof w);
            assert_int_equal(w.flags, D9_WORKER_UNSAMPLED);   /* within the interval */
            assert_int_equal(w.cpu_ns, 0);
            assert_int_equal(w.sched_wait_ns, 0);
        } else if (h.type == D9_REC_CUSTOM) {
            struct d9_rec_custom c;
            memcpy(&c, f->out + off, sizeof c);
            struct shm_meta_entry me;
            assert_true(find_meta(&r, &g, D9_META_SCHEMA, c.schema, &me));
            assert_string_equal(me.name, "request");
            assert_int_equal(me.nfields, 2);
        }
        off += h.len;
    }
    assert_int_equal(off, n);                        /* the id-0 runtime event is not there */
    struct shm_meta_entry me;
    assert_true(find_meta(&r, &g, D9_META_RUNTIME, rtid, &me));
    assert_string_equal(me.name, "http");
    assert_true(find_meta(&r, &g, D9_META_LOCATION, loc, &me));
    assert_non_null(strstr(me.name, "test_agent_api.c"));
    assert_string_equal(me.func, "child_records");
    shm_region_close(&r);
}

static void child_default_runtime(struct fx *f, void *arg)
{
    (void)f;
    (void)arg;
    CHECK(d9_init() == 0);
    CHECK(d9_runtime_default().id == 1);
    d9_runtime rt;
    CHECK(d9_runtime_register("myrt", &rt) == 0 && rt.id == 1);
    CHECK(d9_runtime_register("other", &rt) == 0 && rt.id == 2);
    CHECK(d9_runtime_register("", &rt) == -EINVAL && rt.id == 0);
    CHECK(d9_runtime_register(NULL, NULL) == -EINVAL);
    d9_shutdown();
}

/* The program's own executable is in the metadata as a loaded object, so
 * stacks symbolize without the collector ever reading /proc/<pid>/maps. */
static void test_loaded_objects_are_published_at_start(void **state)
{
    struct fx *f = *state;
    const char *env[] = { "DIAL9_RUNTIME_NAME=myrt", NULL };
    pid_t pid = run_child(f, env, child_default_runtime, NULL);
    struct shm_region r;
    struct shm_geometry g;
    map_region(f, pid, &r, &g);
    char self[512];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(n > 0);
    self[n] = 0;
    int found = 0;
    struct shm_meta_entry me;
    for (uint32_t id = 1; find_meta(&r, &g, D9_META_OBJECT, id, &me); id++) {
        assert_true(me.end > me.start);
        if (strcmp(me.name, self) == 0 && me.build_id_len > 0)
            found = 1;
    }
    assert_true(found);
    shm_region_close(&r);
}

static void test_default_runtime_is_named_by_env(void **state)
{
    struct fx *f = *state;
    const char *env[] = { "DIAL9_RUNTIME_NAME=myrt", NULL };
    pid_t pid = run_child(f, env, child_default_runtime, NULL);
    struct shm_region r;
    struct shm_geometry g;
    map_region(f, pid, &r, &g);
    struct shm_meta_entry me;
    assert_true(find_meta(&r, &g, D9_META_RUNTIME, 1, &me));
    assert_string_equal(me.name, "myrt");
    shm_region_close(&r);
}

/* Without DIAL9_RUNTIME_NAME the default runtime is named after the
 * program's comm; registering that name is registering the default runtime
 * (one name, one runtime), documented in d9.h. */
static void child_comm_runtime(struct fx *f, void *arg)
{
    (void)f;
    (void)arg;
    CHECK(d9_init() == 0);
    char comm[32] = "";
    FILE *c = fopen("/proc/self/comm", "r");
    CHECK(c && fgets(comm, sizeof comm, c));
    fclose(c);
    comm[strcspn(comm, "\n")] = 0;
    d9_runtime rt, other;
    CHECK(d9_runtime_register(comm, &rt) == 0);
    CHECK(rt.id == d9_runtime_default().id && rt.id == 1);
    CHECK(d9_runtime_register("pool", &other) == 0 && other.id == 2);
    d9_shutdown();
    CHECK(d9_runtime_register("late", &other) == D9_OFF && other.id == 0);
}

static void test_registering_the_programs_name_is_the_default_runtime(void **state)
{
    struct fx *f = *state;
    run_child(f, NULL, child_comm_runtime, NULL);
}

static void child_locs(struct fx *f, void *arg)
{
    (void)f;
    (void)arg;
    CHECK(d9_init() == 0);
    d9_loc first = 0;
    for (int i = 0; i < 3; i++) {
        d9_loc l = D9_LOC();
        CHECK(l != 0);
        if (!first)
            first = l;
        CHECK(l == first);
    }
    d9_loc other = D9_LOC();
    CHECK(other != first);
    CHECK(d9_loc_register("f.c", 9, "g") == d9_loc_register("f.c", 9, "g"));
    d9_shutdown();
}

static void test_loc_macro_registers_once_per_call_site(void **state)
{
    struct fx *f = *state;
    run_child(f, NULL, child_locs, NULL);
}

static void child_exit_without_shutdown(struct fx *f, void *arg)
{
    (void)f;
    (void)arg;
    CHECK(d9_init() == 0);
    d9_poll_start(d9_runtime_default(), 0, 1, 0);
    exit(0);                                 /* atexit runs d9_shutdown */
}

static void test_exit_marks_region_closed(void **state)
{
    struct fx *f = *state;
    pid_t pid = run_child(f, NULL, child_exit_without_shutdown, NULL);
    struct shm_region r;
    struct shm_geometry g;
    map_region(f, pid, &r, &g);
    assert_int_equal(atomic_load(&r.hdr->state), D9_REGION_CLOSED);
    assert_int_equal(read_ring(f, &r, &g, 0, 0), sizeof(struct d9_rec_poll_start));
    shm_region_close(&r);
}

static void *shutdown_thread(void *arg)
{
    (void)arg;
    d9_shutdown();
    return NULL;
}

static void child_shutdown_elsewhere(struct fx *f, void *arg)
{
    (void)f;
    (void)arg;
    CHECK(d9_init() == 0);
    d9_runtime rt = d9_runtime_default();
    d9_poll_start(rt, 0, 1, 0);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, shutdown_thread, NULL) == 0);
    CHECK(pthread_join(th, NULL) == 0);
    CHECK(!d9_enabled());
    d9_poll_start(rt, 0, 2, 0);              /* after shutdown: not recorded */
    d9_shutdown();
    CHECK(d9_init() == -ESHUTDOWN);
    CHECK(d9_region_path() != NULL);         /* the file stays for the collector */
}

static void test_shutdown_from_another_thread_stops_recording(void **state)
{
    struct fx *f = *state;
    pid_t pid = run_child(f, NULL, child_shutdown_elsewhere, NULL);
    struct shm_region r;
    struct shm_geometry g;
    map_region(f, pid, &r, &g);
    assert_int_equal(atomic_load(&r.hdr->state), D9_REGION_CLOSED);
    assert_int_equal(read_ring(f, &r, &g, 0, 0), sizeof(struct d9_rec_poll_start));
    shm_region_close(&r);
}

/* ---- drops ------------------------------------------------------------------------ */

/* Each drop says why: values not matching the schema, an event too large
 * for a record, a full ring; every one is a seq gap in lost. */
static void child_drop_causes(struct fx *f, void *arg)
{
    (void)f;
    (void)arg;
    CHECK(d9_init() == 0);
    D9_SCHEMA(sig, "signed", D9_FIELD_I64("v"));
    D9_SCHEMA(wide, "wide", D9_FIELD_STR("a"), D9_FIELD_STR("b"), D9_FIELD_STR("c"),
              D9_FIELD_STR("d"), D9_FIELD_STR("e"), D9_FIELD_STR("f"), D9_FIELD_STR("g"),
              D9_FIELD_STR("h"), D9_FIELD_STR("i"), D9_FIELD_STR("j"), D9_FIELD_STR("k"),
              D9_FIELD_STR("l"), D9_FIELD_STR("m"), D9_FIELD_STR("n"), D9_FIELD_STR("o"),
              D9_FIELD_STR("p"));
    static char big[256];
    memset(big, 'x', 255);
    d9_value w[16];
    for (int i = 0; i < 16; i++)
        w[i] = D9_STR(big);
    for (int i = 0; i < 3; i++)
        d9_emit(&sig, D9_U64(1));               /* U64 for an I64 */
    d9_emit(&sig, D9_I64(1), D9_I64(2));        /* one value too many */
    for (int i = 0; i < 2; i++)
        d9_emit_values(&wide, w, 16);           /* 16 x 264 bytes: larger than a record */
    d9_runtime rt = d9_runtime_default();
    for (uint64_t i = 0; i < 1000; i++)         /* 32 KiB into a 4 KiB ring */
        d9_poll_start(rt, 1, i, 0);
    d9_stats st;
    d9_get_stats(&st);
    CHECK(st.lost_mismatch == 4 && st.lost_too_big == 2);
    CHECK(st.lost_full > 0 && st.lost == st.lost_full + 6);
    CHECK(st.lost_no_ring == 0);
    d9_shutdown();
}

static void test_drops_are_counted_by_cause(void **state)
{
    struct fx *f = *state;
    const char *env[] = { "DIAL9_RING_KB=4", NULL };
    pid_t pid = run_child(f, env, child_drop_causes, NULL);
    struct shm_region r;
    struct shm_geometry g;
    map_region(f, pid, &r, &g);
    struct d9_ring_hdr *rh = shm_ring_hdr(&r, &g, 0);
    assert_int_equal(atomic_load(&rh->lost_mismatch), 4);
    assert_int_equal(atomic_load(&rh->lost_too_big), 2);
    assert_true(atomic_load(&rh->lost) > 6);
    shm_region_close(&r);
}

/* A thread that finds no ring loses its events; they are counted (no ring)
 * and reach the region header through the housekeeping thread. */
static void *untraced_thread(void *arg)
{
    (void)arg;
    d9_runtime rt = d9_runtime_default();
    for (uint64_t i = 0; i < 10; i++)
        d9_poll_start(rt, 2, i, 0);
    return NULL;
}

static void child_no_ring(struct fx *f, void *arg)
{
    (void)f;
    (void)arg;
    CHECK(d9_init() == 0);
    d9_poll_start(d9_runtime_default(), 1, 1, 0);   /* main takes the only ring */
    pthread_t t;
    CHECK(pthread_create(&t, NULL, untraced_thread, NULL) == 0);
    pthread_join(t, NULL);
    d9_stats st;
    d9_get_stats(&st);
    CHECK(st.lost_no_ring == 10 && st.lost == 0 && st.threads_untraced == 1);
    d9_shutdown();                      /* a last housekeeping round copies the count */
}

static void test_events_of_threads_without_a_ring_are_counted(void **state)
{
    struct fx *f = *state;
    const char *env[] = { "DIAL9_MAX_THREADS=1", NULL };
    pid_t pid = run_child(f, env, child_no_ring, NULL);
    struct shm_region r;
    struct shm_geometry g;
    map_region(f, pid, &r, &g);
    assert_int_equal(atomic_load(&r.hdr->lost_no_ring), 10);
    shm_region_close(&r);
}

/* How the process ended is in its region: exit(3) here. */
static void child_exit_3(struct fx *f, void *arg)
{
    (void)f;
    (void)arg;
    CHECK(d9_init() == 0);
    exit(3);
}

static void test_exit_code_is_recorded_in_the_region(void **state)
{
    struct fx *f = *state;
    int errfd;
    pid_t pid = spawn_child(f, NULL, child_exit_3, NULL, &errfd);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    close(errfd);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 3);
    struct shm_region r;
    struct shm_geometry g;
    map_region(f, pid, &r, &g);
    assert_int_equal(atomic_load(&r.hdr->exit_status), D9_EXIT_CODE | 3u);
    shm_region_close(&r);
}

enum { K1 = 500, K2 = 300 };

struct sync_pipes { int to_test[2], to_child[2]; };

static void child_fill_ring(struct fx *f, void *arg)
{
    (void)f;
    struct sync_pipes *sp = arg;
    CHECK(d9_init() == 0);
    d9_runtime rt = d9_runtime_default();
    for (uint64_t i = 0; i < K1; i++)
        d9_poll_start(rt, 1, i, 0);
    d9_stats st;
    d9_get_stats(&st);
    uint64_t lost1 = st.lost;
    CHECK(write(sp->to_test[1], &lost1, sizeof lost1) == sizeof lost1);
    char go;
    CHECK(read(sp->to_child[0], &go, 1) == 1);      /* the test drained the ring */
    for (uint64_t i = 0; i < K2; i++)
        d9_poll_start(rt, 1, K1 + i, 0);
    d9_get_stats(&st);
    uint64_t lost2 = st.lost;
    CHECK(write(sp->to_test[1], &lost2, sizeof lost2) == sizeof lost2);
    d9_shutdown();
}

struct drain_ctx { struct fx *f; struct sync_pipes *sp; uint64_t lost1, lost2;
                   long c1, c2; uint32_t first_seq2; int ok; };

static void drain_side(struct drain_ctx *dc);

static void test_full_ring_drop_counts_are_exact_through_the_api(void **state)
{
    struct fx *f = *state;
    struct sync_pipes sp;
    assert_int_equal(pipe(sp.to_test), 0);
    assert_int_equal(pipe(sp.to_child), 0);
    /* the test plays the collector while the child records */
    struct drain_ctx dc = { .f = f, .sp = &sp };
    const char *env[] = { "DIAL9_RING_KB=4", NULL };
    int errfd;
    pid_t pid = spawn_child(f, env, child_fill_ring, &sp, &errfd);
    close(sp.to_test[1]);       /* the child's ends: EOF here if it dies */
    close(sp.to_child[0]);
    drain_side(&dc);
    finish_child(f, pid, errfd);
    assert_true(dc.ok);
    size_t rec = sizeof(struct d9_rec_poll_start);
    assert_int_equal(dc.c1, D9_RING_DATA_MIN / rec);
    assert_int_equal((uint64_t)dc.c1 + dc.lost1, K1);
    assert_int_equal(dc.first_seq2, K1);              /* the gap is exactly the drop */
    assert_int_equal((uint64_t)dc.first_seq2 - (uint64_t)dc.c1, dc.lost1);
    assert_int_equal((uint64_t)(dc.c1 + dc.c2) + dc.lost2, K1 + K2);
    close(sp.to_test[0]);
}

/* On any failure the child is released (its read of to_child sees EOF). */
static void drain_side(struct drain_ctx *dc)
{
    struct fx *f = dc->f;
    size_t rec = sizeof(struct d9_rec_poll_start);
    if (read(dc->sp->to_test[0], &dc->lost1, sizeof dc->lost1) != sizeof dc->lost1)
        goto release;
    /* find the child's region: the only one in the dir */
    DIR *d = opendir(f->dir);
    struct dirent *e;
    char path[512] = "";
    uint32_t u, p;
    uint64_t s;
    while ((e = readdir(d)))
        if (shm_region_parse_name(e->d_name, &u, &p, &s) == 0)
            snprintf(path, sizeof path, "%s/%s", f->dir, e->d_name);
    closedir(d);
    struct shm_region r;
    struct shm_geometry g;
    if (!path[0] || shm_region_map(path, (uint32_t)getuid(), &r, &g) != 0)
        goto release;
    static uint8_t buf[1 << 16];
    struct shm_ring_snapshot snap;
    uint64_t nt;
    shm_ring_snapshot(shm_ring_hdr(&r, &g, 0), &snap);
    long n = shm_ring_read(shm_ring_data(&r, &g, 0), g.ring_data_size, &snap, buf, sizeof buf, &nt, NULL);
    int seq_ok = n > 0 && snap.lost == dc->lost1;
    for (long i = 0; seq_ok && i < n / (long)rec; i++) {
        struct d9_rec_poll_start ps;
        memcpy(&ps, buf + (size_t)i * rec, rec);
        seq_ok = ps.h.seq == (uint32_t)i && ps.task == (uint64_t)i;
    }
    dc->c1 = n / (long)rec;
    shm_ring_consume(shm_ring_hdr(&r, &g, 0), nt);
    char go = 1;
    if (write(dc->sp->to_child[1], &go, 1) != 1 ||
        read(dc->sp->to_test[0], &dc->lost2, sizeof dc->lost2) != sizeof dc->lost2) {
        shm_region_close(&r);
        goto release;
    }
    shm_ring_snapshot(shm_ring_hdr(&r, &g, 0), &snap);
    n = shm_ring_read(shm_ring_data(&r, &g, 0), g.ring_data_size, &snap, buf, sizeof buf, &nt, NULL);
    dc->c2 = n / (long)rec;
    if (n > 0) {
        struct d9_rec_poll_start ps;
        memcpy(&ps, buf, rec);
        dc->first_seq2 = ps.h.seq;
        seq_ok = seq_ok && ps.task == K1;
    }
    dc->ok = seq_ok && snap.lost == dc->lost2;
    shm_region_close(&r);
release:
    close(dc->sp->to_child[1]);
    dc->sp->to_child[1] = -1;
}

/* ---- threads ------------------------------------------------------------------------ */

struct th_ctx { pthread_barrier_t *emitted, *release; };

static void *traced_thread(void *arg)
{
    struct th_ctx *c = arg;
    d9_poll_start(d9_runtime_default(), 0, 1, 0);
    pthread_barrier_wait(c->emitted);
    pthread_barrier_wait(c->release);
    return NULL;                             /* the key destructor releases the ring */
}

/* Start n threads that each record one event and hold; check stats while
 * they hold; let them exit. */
static void hold_threads(int n, uint32_t want_in_use, uint32_t want_untraced)
{
    pthread_t th[16];
    pthread_barrier_t b1, b2;
    pthread_barrier_init(&b1, NULL, (unsigned)n + 1);
    pthread_barrier_init(&b2, NULL, (unsigned)n + 1);
    struct th_ctx c = { &b1, &b2 };
    for (int i = 0; i < n; i++)
        CHECK(pthread_create(&th[i], NULL, traced_thread, &c) == 0);
    pthread_barrier_wait(&b1);
    d9_stats st;
    d9_get_stats(&st);
    CHECK(st.rings_in_use == want_in_use);
    CHECK(st.threads_untraced == want_untraced);
    pthread_barrier_wait(&b2);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&b1);
    pthread_barrier_destroy(&b2);
}

static void child_threads(struct fx *f, void *arg)
{
    (void)f;
    (void)arg;
    CHECK(d9_init() == 0);
    hold_threads(5, 2, 3);                   /* DIAL9_MAX_THREADS=2 */
    d9_stats st;
    d9_get_stats(&st);
    CHECK(st.rings_in_use == 0);             /* released at thread exit */

    /* act as the collector: drain both rings so they can be reused */
    struct shm_region r;
    struct shm_geometry g;
    CHECK(shm_region_map(d9_region_path(), (uint32_t)getuid(), &r, &g) == 0);
    for (uint32_t i = 0; i < g.ring_count; i++) {
        struct d9_ring_hdr *h = shm_ring_hdr(&r, &g, i);
        CHECK(atomic_load(&h->state) == D9_RING_RELEASED);
        shm_ring_consume(h, atomic_load(&h->head));
    }
    hold_threads(2, 2, 3);                   /* both traced again, no new untraced */
    for (uint32_t i = 0; i < g.ring_count; i++)
        CHECK(shm_ring_hdr(&r, &g, i)->generation == 2);
    shm_region_close(&r);
    d9_shutdown();
}

static void test_threads_over_max_are_untraced_and_rings_released_at_exit(void **state)
{
    struct fx *f = *state;
    const char *env[] = { "DIAL9_MAX_THREADS=2", NULL };
    run_child(f, env, child_threads, NULL);
}

/* ---- fork ------------------------------------------------------------------------------ */

enum { P_BEFORE = 10, G_EVENTS = 20, P_AFTER = 5 };

/* A fork child inherits objects of the parent's zmq I/O thread that only
 * that thread's stack pointed to; the thread does not exist in the child,
 * so LeakSanitizer would report them at the grandchild's exit(). */
static int in_grandchild;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return in_grandchild; }

static void child_forks(struct fx *f, void *arg)
{
    (void)f;
    (void)arg;
    CHECK(d9_init() == 0);
    d9_runtime rt;
    CHECK(d9_runtime_register("forky", &rt) == 0);
    D9_SCHEMA(s, "forked", D9_FIELD_U64("n"));
    d9_emit(&s, D9_U64(0));                  /* schema published before the fork */
    for (uint64_t i = 1; i < P_BEFORE; i++)
        d9_poll_start(rt, 0, i, 0);
    char parent_path[256];
    snprintf(parent_path, sizeof parent_path, "%s", d9_region_path());
    struct shm_region r;
    struct shm_geometry g;
    CHECK(shm_region_map(parent_path, (uint32_t)getuid(), &r, &g) == 0);
    uint64_t head = atomic_load(&shm_ring_hdr(&r, &g, 0)->head);
    /* under ASan (GCC 12) a fork racing the start of the agent thread can
     * inherit an allocator lock that thread holds: wait for its first tick */
    uint64_t hb = atomic_load(&r.hdr->heartbeat_ns);
    for (int i = 0; i < 10000 && atomic_load(&r.hdr->heartbeat_ns) == hb; i++)
        usleep(1000);
    CHECK(atomic_load(&r.hdr->heartbeat_ns) != hb);

    pid_t gc = fork();
    CHECK(gc >= 0);
    if (gc == 0) {
        in_grandchild = 1;
        /* grandchild: a fresh region on first use, the parent's ids still valid */
        CHECK(d9_enabled());
        for (uint64_t i = 0; i < G_EVENTS - 1; i++)
            d9_poll_start(rt, 0, 1000 + i, 0);
        d9_emit(&s, D9_U64(1));
        CHECK(d9_region_path() != NULL);
        CHECK(strcmp(d9_region_path(), parent_path) != 0);
        d9_stats st;
        d9_get_stats(&st);
        CHECK(st.rings_in_use == 1);
        exit(0);                             /* atexit: closes the grandchild's region only */
    }
    pid_t quiet = fork();                    /* a child that never records: no region */
    CHECK(quiet >= 0);
    if (quiet == 0)
        _exit(0);
    int status;
    CHECK(waitpid(gc, &status, 0) == gc && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(waitpid(quiet, &status, 0) == quiet);
    CHECK(atomic_load(&shm_ring_hdr(&r, &g, 0)->head) == head);
    CHECK(atomic_load(&r.hdr->state) == D9_REGION_READY);
    for (uint64_t i = 0; i < P_AFTER; i++)
        d9_poll_start(rt, 0, 2000 + i, 0);
    shm_region_close(&r);
    d9_shutdown();
    fprintf(stderr, "grandchild=%d\n", (int)gc);
}

static void check_region_records(struct fx *f, pid_t pid, uint32_t want, uint16_t rt_id)
{
    struct shm_region r;
    struct shm_geometry g;
    map_region(f, pid, &r, &g);
    assert_int_equal(atomic_load(&r.hdr->state), D9_REGION_CLOSED);
    long n = read_ring(f, &r, &g, 0, 0);
    uint32_t count = 0;
    for (long off = 0; off < n; count++) {
        struct d9_rec_hdr h;
        memcpy(&h, f->out + off, sizeof h);
        assert_int_equal(h.seq, count);
        if (h.type == D9_REC_POLL_START) {
            struct d9_rec_poll_start p;
            memcpy(&p, f->out + off, sizeof p);
            assert_int_equal(p.runtime, rt_id);
        } else {
            assert_int_equal(h.type, D9_REC_CUSTOM);
            struct d9_rec_custom c;
            memcpy(&c, f->out + off, sizeof c);
            struct shm_meta_entry me;
            assert_true(find_meta(&r, &g, D9_META_SCHEMA, c.schema, &me));
            assert_string_equal(me.name, "forked");
        }
        off += h.len;
    }
    assert_int_equal(count, want);
    struct shm_meta_entry me;
    assert_true(find_meta(&r, &g, D9_META_RUNTIME, rt_id, &me));
    assert_string_equal(me.name, "forky");
    for (uint32_t i = 1; i < g.ring_count; i++)
        assert_int_equal(atomic_load(&shm_ring_hdr(&r, &g, i)->head), 0);
    shm_region_close(&r);
}

static void test_fork_child_gets_its_own_region_and_never_touches_the_parents(void **state)
{
    struct fx *f = *state;
    /* no zmq threads: under ASan a fork while another thread is inside the
     * sanitizer's allocator would leave its lock held in the child */
    const char *env[] = { "DIAL9_COLLECTOR=none", NULL };
    pid_t pid = run_child(f, env, child_forks, NULL);
    int gc = 0;
    const char *line = strstr(f->err, "grandchild=");
    assert_non_null(line);
    assert_int_equal(sscanf(line, "grandchild=%d", &gc), 1);
    assert_int_equal(count_regions(f), 2);          /* the quiet child made none */
    check_region_records(f, pid, P_BEFORE + P_AFTER, 2);
    check_region_records(f, gc, G_EVENTS, 2);
}

/* ---- exec ------------------------------------------------------------------------------ */

#define EXEC_FLAG "--exec-image"

static void child_execs_itself(struct fx *f, void *arg)
{
    (void)f;
    (void)arg;
    CHECK(d9_init() == 0);
    d9_poll_start(d9_runtime_default(), 0, 1, 0);
    char *argv[] = { "test_agent_api", EXEC_FLAG, NULL };
    execv("/proc/self/exe", argv);
    CHECK(!"execv failed");
}

/* The exec'd image: same pid and start time, so the same region name. */
static int exec_image(void)
{
    int rc = d9_init();
    d9_poll_start(d9_runtime_default(), 0, 2, 0);     /* harmless: untraced */
    return rc == -EEXIST && !d9_enabled() ? 0 : 1;
}

static void test_exec_without_fork_runs_untraced_with_one_line(void **state)
{
    struct fx *f = *state;
    /* no control channel: threads cannot start while exec tears this image
     * down, which the agent reports on stderr (and zmq would abort on) */
    const char *env[] = { "DIAL9_COLLECTOR=none", NULL };
    pid_t pid = run_child(f, env, child_execs_itself, NULL);
    char want[300];
    snprintf(want, sizeof want, "d9: %s already holds a region of this process (exec of a "
             "traced program?); tracing disabled\n", f->dir);
    assert_string_equal(f->err, want);
    struct shm_region r;
    struct shm_geometry g;
    map_region(f, pid, &r, &g);         /* the first image's region, untouched */
    assert_int_equal(read_ring(f, &r, &g, 0, 0), sizeof(struct d9_rec_poll_start));
    assert_int_equal(atomic_load(&r.hdr->state), D9_REGION_READY);
    shm_region_close(&r);
}

/* ---- every fixed-size record function, both clocks, wrap and drops ------------------ */

/* Record i of the mixed stream: sizes 32 and 40 interleave, so a 4 KiB ring
 * wraps behind PAD records. */
static const uint16_t mix_type[] = { D9_REC_POLL_START, D9_REC_WAKE, D9_REC_POLL_END,
                                     D9_REC_TASK_SPAWN, D9_REC_QUEUE_DEPTH,
                                     D9_REC_TASK_TERMINATE };
#define MIX_N (sizeof mix_type / sizeof mix_type[0])
enum { M1 = 400, M2 = 250 };

static void emit_mix(d9_runtime rt, uint64_t i)
{
    switch (mix_type[i % MIX_N]) {
    case D9_REC_POLL_START: d9_poll_start(rt, 1, i, 0); break;
    case D9_REC_WAKE: d9_wake(rt, i, i + 1, 2); break;
    case D9_REC_POLL_END: d9_poll_end(rt, 1, i); break;
    case D9_REC_TASK_SPAWN: d9_task_spawn(rt, i, 0); break;
    case D9_REC_QUEUE_DEPTH: d9_queue_depth(rt, 1, i); break;
    default: d9_task_terminate(rt, i); break;
    }
}

static void child_mix(struct fx *f, void *arg)
{
    (void)f;
    struct sync_pipes *sp = arg;
    CHECK(d9_init() == 0);
    d9_runtime rt = d9_runtime_default();
    d9_stats st;
    for (int phase = 0; phase < 2; phase++) {
        for (uint64_t i = phase ? M1 : 0; i < (phase ? M1 + M2 : M1); i++)
            emit_mix(rt, i);
        d9_get_stats(&st);
        CHECK(write(sp->to_test[1], &st.lost, sizeof st.lost) == sizeof st.lost);
        char go;
        CHECK(read(sp->to_child[0], &go, 1) == 1);      /* the test drained the ring */
    }
    d9_shutdown();
}

/* Drain ring 0 of the child's region, checking every record against the
 * stream by its seq: returns the records read, -1 on a mismatch. */
static long drain_mix(struct fx *f, struct shm_region *r, struct shm_geometry *g,
                      uint32_t clock, uint64_t t0, uint64_t *seq_next)
{
    /* no assert here: the child waits for us, a failure must not strand it */
    struct shm_ring_snapshot snap;
    shm_ring_snapshot(shm_ring_hdr(r, g, 0), &snap);
    uint64_t nt;
    long n = shm_ring_read(shm_ring_data(r, g, 0), g->ring_data_size, &snap, f->out,
                           sizeof f->out, &nt, NULL), count = 0;
    if (n < 0)
        return -1;
    shm_ring_consume(shm_ring_hdr(r, g, 0), nt);
    for (long off = 0; off < n;) {
        struct d9_rec_hdr h;
        memcpy(&h, f->out + off, sizeof h);
        if (h.seq < *seq_next || h.type != mix_type[h.seq % MIX_N])
            return -1;
        if (clock == D9_CLOCK_MONOTONIC && (h.ts < t0 || h.ts > shm_mono_ns()))
            return -1;                      /* CLOCK_MONOTONIC ns of this boot */
        uint64_t arg;                       /* every mixed record carries i at offset 16 */
        memcpy(&arg, f->out + off + 16, sizeof arg);
        if (arg != h.seq)
            return -1;
        *seq_next = (uint64_t)h.seq + 1;
        off += h.len;
        count++;
    }
    return count;
}

static void mixed_stream(struct fx *f, const char *clock_env, uint32_t clock)
{
    struct sync_pipes sp;
    assert_int_equal(pipe(sp.to_test), 0);
    assert_int_equal(pipe(sp.to_child), 0);
    const char *env[] = { "DIAL9_RING_KB=4", clock_env, NULL };
    uint64_t t0 = shm_mono_ns();
    int errfd;
    pid_t pid = spawn_child(f, env, child_mix, &sp, &errfd);
    close(sp.to_test[1]);
    close(sp.to_child[0]);
    uint64_t lost[2] = { 0, 0 }, seq_next = 0, head1 = 0;
    long got[2] = { -1, -1 };
    struct shm_region r;
    struct shm_geometry g;
    int mapped = 0;
    for (int phase = 0; phase < 2; phase++) {
        if (read(sp.to_test[0], &lost[phase], sizeof lost[phase]) != sizeof lost[phase])
            break;
        if (!mapped) {
            map_region(f, pid, &r, &g);
            mapped = 1;
        }
        got[phase] = drain_mix(f, &r, &g, clock, t0, &seq_next);
        if (phase == 0)
            head1 = atomic_load(&shm_ring_hdr(&r, &g, 0)->head);
        if (write(sp.to_child[1], "g", 1) != 1)
            break;
    }
    close(sp.to_child[1]);
    finish_child(f, pid, errfd);
    close(sp.to_test[0]);
    assert_true(mapped);
    assert_int_equal(r.hdr->clock_source, clock);
    assert_true(got[0] > 0 && got[1] > 0);
    assert_true(lost[0] > 0);                       /* phase 1 overfilled the ring */
    assert_int_equal((uint64_t)got[0] + lost[0], M1);
    /* phase 2 starts behind phase 1's last record: the ring wrapped (PADs) */
    assert_int_equal((uint64_t)(got[0] + got[1]) + lost[1], M1 + M2);
    /* the records after the last one read were dropped in phase 2 */
    assert_true(seq_next <= M1 + M2 && M1 + M2 - seq_next <= lost[1] - lost[0]);
    assert_true(head1 % D9_RING_DATA_MIN != 0);      /* phase 2 started mid-ring: it wrapped */
    shm_region_close(&r);
}

static void test_every_fixed_record_wraps_and_drops_exactly_with_the_tsc(void **state)
{
    mixed_stream(*state, "DIAL9_CLOCK=auto",
                 shm_tsc_invariant() ? D9_CLOCK_TSC : D9_CLOCK_MONOTONIC);
}

static void test_every_fixed_record_wraps_and_drops_exactly_with_clock_monotonic(void **state)
{
    mixed_stream(*state, "DIAL9_CLOCK=monotonic", D9_CLOCK_MONOTONIC);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], EXEC_FLAG) == 0)
        return exec_image();
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_bad_env_prints_one_line_and_runs_untraced),
        T(test_bad_max_threads_prints_one_line_and_runs_untraced),
        T(test_disabled_by_config_records_nothing),
        T(test_region_creation_failure_is_one_line_and_untraced),
        T(test_events_are_recorded_in_the_threads_ring),
        T(test_custom_events_record_the_task_being_polled),
        T(test_a_typed_trigger_records_its_reason_and_fields),
        T(test_record_functions_never_change_errno),
        T(test_default_runtime_is_named_by_env),
        T(test_registering_the_programs_name_is_the_default_runtime),
        T(test_loaded_objects_are_published_at_start),
        T(test_loc_macro_registers_once_per_call_site),
        T(test_exit_marks_region_closed),
        T(test_shutdown_from_another_thread_stops_recording),
        T(test_full_ring_drop_counts_are_exact_through_the_api),
        T(test_drops_are_counted_by_cause),
        T(test_events_of_threads_without_a_ring_are_counted),
        T(test_exit_code_is_recorded_in_the_region),
        T(test_every_fixed_record_wraps_and_drops_exactly_with_the_tsc),
        T(test_every_fixed_record_wraps_and_drops_exactly_with_clock_monotonic),
        T(test_threads_over_max_are_untraced_and_rings_released_at_exit),
        T(test_fork_child_gets_its_own_region_and_never_touches_the_parents),
        T(test_exec_without_fork_runs_untraced_with_one_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
