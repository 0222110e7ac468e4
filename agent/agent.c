/*
 * agent.c — the agent core (see agent.h): region lifecycle, metadata
 * publication, thread states (their rings claimed through ring_claim.c),
 * the housekeeping thread and fork handling.
 *
 * Called by agent/api.c (public API) and the unit tests. Everything here is
 * slow path: it may lock, allocate and make syscalls, but it must never
 * block the application for long (no waiting on the collector, zmq only on
 * the housekeeping thread) and never abort it: failures are logged once
 * and leave tracing off.
 *
 * Invariants:
 *   - a->live != 0 only while a region is mapped (or, in a fork child
 *     before reinit, while a->need_reinit says it will be made on demand);
 *   - metadata entries are appended only under a->lock, in id order per
 *     kind, so the log replayed into a child's region keeps every id;
 *   - the parent's region is never written by a fork child;
 *   - calibration pairs are written by one thread at a time (start, then
 *     the housekeeping thread, then stop after joining it), under the
 *     cal_seq seqlock.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "agent/agent.h"
#include "agent/ring_claim.h"
#include "agent/sampler.h"
#include "shm/clock.h"
#include "shm/meta.h"

#define AG_LOC_INIT_CAP   64u
#define AG_META_ENTRY_MAX (D9_NAME_MAX * 24u)   /* largest payload we encode */
#define AG_CAL_TRIES      8
#define AG_SCHEDSTAT_PATH "/proc/thread-self/schedstat"
#define AG_SCHEDSTAT_BUF  96

struct ag_loc {
    uint32_t hash;              /* 0 = empty slot */
    uint32_t line;
    uint32_t id;
    char *file;
    char *func;
};

/* ---- small helpers ------------------------------------------------------ */

static uint32_t ag_gettid(void) { return (uint32_t)syscall(SYS_gettid); }

static struct d9_ring_hdr *ring_hdr(struct shm_region *r, uint32_t idx)
{
    return (struct d9_ring_hdr *)(r->base + r->hdr->rings_offset +
                                  (uint64_t)idx * r->hdr->ring_stride);
}

/* Copy a string into a fixed field, NUL-padded, cut to the field size. */
static void copy_field(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap);
    memset(dst, 0, cap);
    memcpy(dst, src, n);
}

static uint8_t *meta_area(struct shm_region *r) { return r->base + r->hdr->meta_offset; }

void ag_agent_read_comm(char *out, size_t cap)
{
    out[0] = 0;
    int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    if (n <= 0)
        n = 0;
    out[n] = 0;
    char *nl = strchr(out, '\n');
    if (nl)
        *nl = 0;
}

static void read_exe(char *out, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", out, cap - 1);
    out[n > 0 ? n : 0] = 0;
}

/* A (tsc, ns) pair with the TSC reads bracketing the clock read as tightly
 * as possible: the narrowest of a few tries wins. */
static void cal_pair(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < AG_CAL_TRIES; i++) {
        uint64_t a = shm_rdtsc();
        uint64_t n = shm_mono_ns();
        uint64_t b = shm_rdtsc();
        if (b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *ns = n;
        }
    }
}

/* Seqlock write of one calibration pair (which = 0 or 1). Single writer. */
static void cal_write(struct d9_region_hdr *h, int which)
{
    uint64_t tsc = 0, ns = 0;
    cal_pair(&tsc, &ns);
    uint32_t s = atomic_load_explicit(&h->cal_seq, memory_order_relaxed);
    atomic_store_explicit(&h->cal_seq, s + 1, memory_order_relaxed);
    /* release fence: the odd seq is visible before any of the pair's bytes */
    atomic_thread_fence(memory_order_release);
    if (which == 0) {
        __atomic_store_n(&h->cal_tsc0, tsc, __ATOMIC_RELAXED);
        __atomic_store_n(&h->cal_ns0, ns, __ATOMIC_RELAXED);
    } else {
        __atomic_store_n(&h->cal_tsc1, tsc, __ATOMIC_RELAXED);
        __atomic_store_n(&h->cal_ns1, ns, __ATOMIC_RELAXED);
    }
    /* release: the pair happens-before the even seq a reader re-checks */
    atomic_store_explicit(&h->cal_seq, s + 2, memory_order_release);
}

static int meta_put(struct ag_agent *a, uint16_t kind, uint32_t id, const uint8_t *payload,
                    size_t len)
{
    return shm_meta_append(a->region.hdr, meta_area(&a->region), kind, id, payload, len);
}

/* ---- loaded objects ---------------------------------------------------------
 * What symbolization needs, in the metadata log (D9_META_OBJECT): every
 * executable PT_LOAD of every loaded object with its path and build id, at
 * start and whenever the loader's dlpi_adds says an object was added. So a
 * process that dies before the collector maps /proc/<pid>/maps still
 * symbolizes. Housekeeping thread and ag_agent_start only; never a record
 * path. The dedup table is a->objs (start addresses published). */

static size_t note_build_id(const ElfW(Nhdr) *n, size_t len, uint8_t *out)
{
    const uint8_t *p = (const uint8_t *)n, *end = p + len;
    while ((size_t)(end - p) >= sizeof *n) {
        const ElfW(Nhdr) *h = (const ElfW(Nhdr) *)(const void *)p;
        size_t name = (h->n_namesz + 3u) & ~3u, desc = (h->n_descsz + 3u) & ~3u;
        if ((size_t)(end - p) < sizeof *h + name + desc)
            break;
        if (h->n_type == NT_GNU_BUILD_ID && h->n_namesz == 4 &&
            memcmp(p + sizeof *h, "GNU", 4) == 0 && h->n_descsz <= D9_BUILD_ID_MAX) {
            memcpy(out, p + sizeof *h + name, h->n_descsz);
            return h->n_descsz;
        }
        p += sizeof *h + name + desc;
    }
    return 0;
}

static int obj_seen(struct ag_agent *a, uint64_t start)
{
    for (uint32_t i = 0; i < a->nobjs; i++)
        if (a->objs[i] == start)
            return 1;
    return 0;
}

static int object_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct ag_agent *a = arg;
    const char *path = info->dlpi_name;
    if (!path || !*path)
        path = a->exe;                  /* the main program */
    if (path[0] != '/')
        return 0;                       /* the vDSO: not a file */
    uint8_t bid[D9_BUILD_ID_MAX];
    size_t bid_len = 0;
    for (int i = 0; i < info->dlpi_phnum && !bid_len; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE)
            bid_len = note_build_id((const ElfW(Nhdr) *)(info->dlpi_addr + ph->p_vaddr),
                                    ph->p_memsz, bid);
    }
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || ph->p_memsz == 0)
            continue;
        struct d9_meta_object o = {
            .start = info->dlpi_addr + ph->p_vaddr,
            .end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz,
            .pgoff = ph->p_offset,
            .build_id_len = (uint8_t)bid_len,
        };
        if (obj_seen(a, o.start) || a->nobjs >= AG_OBJECTS_MAX)
            continue;
        uint8_t buf[sizeof o + D9_BUILD_ID_MAX + D9_NAME_MAX * 4 + 1];
        int n = shm_meta_encode_object(buf, sizeof buf, &o, bid, path);
        /* a full metadata log is counted in meta_lost */
        if (n > 0 && meta_put(a, D9_META_OBJECT, a->nobjs + 1, buf, (size_t)n) == 0)
            a->objs[a->nobjs++] = o.start;
    }
    return 0;
}

static int adds_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        *(uint64_t *)arg = (uint64_t)info->dlpi_adds;
    return 1;                           /* the counter is the same in every entry */
}

void ag_agent_objects_refresh(struct ag_agent *a)
{
    uint64_t adds = 0;
    dl_iterate_phdr(adds_cb, &adds);
    if (adds && adds == a->objs_adds)
        return;                         /* nothing was loaded since the last look */
    pthread_mutex_lock(&a->lock);
    if (a->region.hdr && !a->need_reinit && a->objs) {
        dl_iterate_phdr(object_cb, a);
        a->objs_adds = adds;
    }
    pthread_mutex_unlock(&a->lock);
}

/* ---- region --------------------------------------------------------------- */

/* DIAL9_SHM_CAP_MB: no new region while this user's regions that no
 * collector drains hold the cap (shm_region_unadopted_bytes). -EDQUOT with
 * one stderr line; the program runs untraced. */
static int region_cap_check(const struct ag_agent *a)
{
    if (!a->cfg.shm_cap_mb)
        return 0;
    uint64_t used;
    uint32_t files;
    if (shm_region_unadopted_bytes(a->cfg.shm_dir, (uint32_t)getuid(), &used, &files) != 0)
        return 0;               /* an unreadable directory fails at the create below */
    if (used < (uint64_t)a->cfg.shm_cap_mb * AG_MIB)
        return 0;
    fprintf(stderr, "d9: %u region(s) in %s that no collector drains use %" PRIu64 " MiB, "
            "DIAL9_SHM_CAP_MB=%u; tracing disabled (start d9collectd to drain and remove them)\n",
            files, a->cfg.shm_dir, used / AG_MIB, a->cfg.shm_cap_mb);
    return -EDQUOT;
}

/* Clean exit, region CLOSED: remove it when nothing will drain it. A
 * collector adopted it (it drains the rest and removes it), or one may
 * still take it (the hello reached one, one listens at DIAL9_COLLECTOR, or
 * the endpoint cannot be probed, or there is no channel to ask): the file
 * stays. Otherwise shm_region_abandon, which loses to a collector's
 * adoption in the same instant. */
static void region_release(struct ag_agent *a)
{
    struct d9_region_hdr *h = a->region.hdr;
    if (atomic_load_explicit(&h->adopted, memory_order_seq_cst) == D9_ADOPT_COLLECTOR)
        return;
    if (!a->cfg.control || a->hello_sent || ag_control_reachable(a->cfg.collector) != 0)
        return;
    int rc = shm_region_abandon(&a->region);
    if (rc < 0 && rc != -ENOENT)
        fprintf(stderr, "d9: cannot remove %s at exit: %s\n", a->region.path, strerror(-rc));
}

static int region_open(struct ag_agent *a)
{
    struct shm_region_params p = {
        .ring_count = a->cfg.max_threads,
        .ring_data_size = a->cfg.ring_data_size,
        .meta_size = a->cfg.meta_size,
        .clock_source = a->clock_source,
        .dir = a->cfg.shm_dir,
        .comm = a->comm,
        .exe = a->exe,
    };
    int rc = region_cap_check(a);
    if (rc) {
        memset(&a->region, 0, sizeof a->region);
        return rc;
    }
    rc = shm_region_create(&p, &a->region);
    if (rc == -EEXIST) {
        /* same pid and start time: an earlier image of this process (exec
         * without fork) still has its region there; it is not ours to reuse */
        fprintf(stderr, "d9: %s already holds a region of this process (exec of a traced "
                "program?); tracing disabled\n", a->cfg.shm_dir);
        memset(&a->region, 0, sizeof a->region);
        return rc;
    }
    if (rc) {
        fprintf(stderr, "d9: cannot create a region in %s: %s; tracing disabled\n",
                a->cfg.shm_dir, strerror(-rc));
        memset(&a->region, 0, sizeof a->region);
        return rc;
    }
    struct d9_region_hdr *h = a->region.hdr;
    a->pid = h->pid;
    a->start_time = h->start_time;
    a->region_fd = open(a->region.path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    rc = ag_ring_claim_reserve(a->region_fd, 0, h->rings_offset);
    if (rc) {
        fprintf(stderr, "d9: cannot reserve memory for %s: %s; tracing disabled\n",
                a->region.path, strerror(-rc));
        atomic_store_explicit(&h->state, D9_REGION_CLOSED, memory_order_release);
        unlink(a->region.path);     /* empty: nothing for a collector to drain */
        shm_region_close(&a->region);
        if (a->region_fd >= 0)
            close(a->region_fd);
        a->region_fd = -1;
        return rc;
    }
    if (a->clock_source == D9_CLOCK_TSC)
        cal_write(h, 0);
    atomic_store_explicit(&h->heartbeat_ns, shm_mono_ns(), memory_order_relaxed);
    return 0;
}

/* ---- housekeeping thread ------------------------------------------------ */

void ag_agent_tick(struct ag_agent *a)
{
    struct d9_region_hdr *h = a->region.hdr;
    if (!h)
        return;
    if (a->clock_source == D9_CLOCK_TSC)
        cal_write(h, 1);
    atomic_store_explicit(&h->heartbeat_ns, shm_mono_ns(), memory_order_relaxed);
    /* the file's mtime is the last heartbeat too: writes through the mapping
     * do not change it, and a collector ages regions of dead processes by it */
    if (a->region_fd >= 0)
        futimens(a->region_fd, NULL);
    atomic_store_explicit(&h->lost_no_ring,
                          atomic_load_explicit(&a->lost_no_ring, memory_order_relaxed),
                          memory_order_relaxed);
}

void ag_agent_count_no_ring(struct ag_agent *a)
{
    atomic_fetch_add_explicit(&a->lost_no_ring, 1, memory_order_relaxed);
}

void ag_agent_set_exit(struct ag_agent *a, uint32_t status)
{
    struct d9_region_hdr *h = a->region.hdr;
    uint32_t none = 0;
    /* the region stays mapped until ag_agent_destroy; a fork child without
     * a region of its own has need_reinit set and must not write the parent's */
    if (h && !a->need_reinit)
        atomic_compare_exchange_strong_explicit(&h->exit_status, &none, status,
                                                memory_order_relaxed, memory_order_relaxed);
}

static int control_send_hello(struct ag_agent *a)
{
    uint8_t buf[AG_CONTROL_MSG_MAX];
    struct ag_hello_info hi = {
        .pid = a->pid, .uid = (uint32_t)getuid(), .start_time = a->start_time,
        .region_path = a->region.path, .comm = a->comm, .exe = a->exe,
    };
    long n = ag_control_pack_hello(&hi, buf, sizeof buf);
    return n > 0 ? ag_control_send(&a->ctl, buf, (size_t)n) : (int)n;
}

static void control_send_goodbye(struct ag_agent *a)
{
    uint8_t buf[AG_CONTROL_MSG_MAX];
    int32_t code = -1;
    if (a->region.hdr) {
        uint32_t s = atomic_load_explicit(&a->region.hdr->exit_status, memory_order_relaxed);
        if ((s & D9_EXIT_KIND_MASK) == D9_EXIT_CODE)
            code = (int32_t)(s & 0xffu);
    }
    long n = ag_control_pack_goodbye(a->pid, a->start_time, code, buf, sizeof buf);
    if (n > 0)
        ag_control_send(&a->ctl, buf, (size_t)n);
}

static void deadline_after(struct timespec *ts, uint64_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += (time_t)(ms / 1000u);
    ts->tv_nsec += (long)(ms % 1000u) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void *probe_thread(void *arg) { return arg; }

/* libzmq aborts the process when it cannot create its own threads (at the
 * first socket). Telemetry must never do that: check first that two threads
 * with default attributes can start, as zmq's I/O and reaper threads will. */
static int threads_can_start(void)
{
    pthread_t t[2];
    int n = 0;
    while (n < 2 && pthread_create(&t[n], NULL, probe_thread, NULL) == 0)
        n++;
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    return n == 2;
}

/* Open the control channel once a collector is there (or the endpoint
 * cannot be probed): libzmq is loaded only now, so a program that never
 * meets a collector never maps it. Returns 1 when a hello is to be sent,
 * 0 when the channel stays shut for good (it could not open), -EAGAIN when
 * nobody listens yet (probe again at the next heartbeat). */
static int control_try_open(struct ag_agent *a)
{
    if (ag_control_reachable(a->cfg.collector) == 0)
        return -EAGAIN;
    if (!threads_can_start()) {
        fprintf(stderr, "d9: cannot start threads for the control channel; "
                "tracing continues without collector messages\n");
        return 0;
    }
    a->ctl_state = ag_control_open(&a->ctl, a->cfg.collector);
    if (a->ctl_state != 0)
        return 0;
    a->ctl_state = 1;
    return 1;
}

/*
 * The housekeeping thread: heartbeat and calibration every AG_HEARTBEAT_MS,
 * and the control channel. The channel opens (and libzmq loads) only once
 * ag_control_reachable sees a collector at an ipc:// endpoint: probed at
 * start, then at every heartbeat until one answers (one connect(2) a
 * second, no zmq); an endpoint it cannot probe (tcp://) opens at once. The
 * DEALER uses ZMQ_IMMEDIATE, so nothing is queued while no collector is
 * connected: the hello is retried with a backoff (AG_HELLO_RETRY_MIN_MS
 * doubling up to AG_HEARTBEAT_MS) until a collector takes it, and at
 * shutdown an agent that never reached one closes at once instead of
 * lingering. Only this thread touches the zmq socket.
 */
static void *hk_main(void *arg)
{
    struct ag_agent *a = arg;
    pthread_setname_np(pthread_self(), AG_HK_THREAD_NAME);
    int hello_pending = 0;
    uint64_t retry_ms = AG_HELLO_RETRY_MIN_MS;
    int probing = a->cfg.control;   /* no collector seen yet: probe each heartbeat */
    if (probing) {
        int rc = control_try_open(a);
        probing = rc == -EAGAIN;
        hello_pending = rc == 1;
    }
    uint64_t next_tick = shm_mono_ns() + (uint64_t)AG_CAL_FIRST_MS * 1000000u;
    pthread_mutex_lock(&a->lock);
    while (!a->hk_stop) {
        pthread_mutex_unlock(&a->lock);
        if (hello_pending && control_send_hello(a) == 0) {
            hello_pending = 0;
            a->hello_sent = 1;
        }
        uint64_t now = shm_mono_ns();
        if (now >= next_tick) {
            ag_agent_tick(a);
            ag_sampler_tick(a);             /* profiler: perf/itimer handshake */
            ag_agent_objects_refresh(a);    /* a dlopen since the last look? */
            if (probing) {
                int rc = control_try_open(a);
                probing = rc == -EAGAIN;
                hello_pending = rc == 1;
            }
            next_tick = now + (uint64_t)AG_HEARTBEAT_MS * 1000000u;
        }
        uint64_t wait_ms = (next_tick - now) / 1000000u + 1;
        if (hello_pending) {
            if (retry_ms < wait_ms)
                wait_ms = retry_ms;
            if (retry_ms < AG_HEARTBEAT_MS)
                retry_ms *= 2;
        }
        struct timespec dl;
        deadline_after(&dl, wait_ms);
        pthread_mutex_lock(&a->lock);
        int rc = 0;
        while (!a->hk_stop && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&a->hk_cond, &a->lock, &dl);
    }
    pthread_mutex_unlock(&a->lock);
    if (a->ctl_state == 1) {
        /* a collector that got our hello gets a goodbye (delivery bounded by
         * the linger); with none connected there is nothing to wait for */
        if (a->hello_sent)
            control_send_goodbye(a);
        ag_control_close(&a->ctl, a->hello_sent ? AG_CONTROL_LINGER_MS : 0);
    }
    return NULL;
}

static int hk_start(struct ag_agent *a)
{
    pthread_attr_t attr;
    sigset_t all, old;
    a->hk_stop = 0;
    a->ctl_state = 0;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, AG_HK_STACK_SIZE);
    /* the thread (and zmq's I/O thread it starts) must not take the
     * application's signals: create it with every signal blocked */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&a->hk, &attr, hk_main, a);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc) {
        fprintf(stderr, "d9: cannot start the agent thread: %s; tracing without heartbeat\n",
                strerror(rc));
        return -rc;
    }
    a->hk_running = 1;
    return 0;
}

static void hk_stop_join(struct ag_agent *a)
{
    if (!a->hk_running)
        return;
    pthread_mutex_lock(&a->lock);
    a->hk_stop = 1;
    pthread_cond_signal(&a->hk_cond);
    pthread_mutex_unlock(&a->lock);
    pthread_join(a->hk, NULL);
    a->hk_running = 0;
}

/* ---- lifecycle ------------------------------------------------------------ */

static int runtime_publish(struct ag_agent *a, uint16_t id)
{
    uint8_t buf[D9_NAME_MAX + 1];
    int n = shm_meta_encode_runtime(buf, sizeof buf, a->runtimes[id - 1]);
    return n < 0 ? n : meta_put(a, D9_META_RUNTIME, id, buf, (size_t)n);
}

int ag_agent_start(struct ag_agent *a, const struct ag_config *cfg)
{
    memset(a, 0, sizeof *a);
    a->cfg = *cfg;
    a->region_fd = -1;
    pthread_mutex_init(&a->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&a->hk_cond, &ca);
    pthread_condattr_destroy(&ca);
    a->started = 1;
    a->stopped = 1;             /* until everything below worked */

    a->clock_source = cfg->clock_source ? cfg->clock_source
                      : shm_tsc_invariant() ? D9_CLOCK_TSC : D9_CLOCK_MONOTONIC;
    ag_agent_read_comm(a->comm, sizeof a->comm);
    read_exe(a->exe, sizeof a->exe);
    a->runtimes = calloc(AG_RUNTIME_MAX, sizeof *a->runtimes);
    if (!a->runtimes) {
        fprintf(stderr, "d9: out of memory at start; tracing disabled\n");
        return -ENOMEM;
    }
    int rc = region_open(a);
    if (rc)
        return rc;

    /* the default runtime is always id 1 */
    copy_field(a->runtimes[0], D9_NAME_MAX, cfg->runtime_name);
    a->nruntimes = 1;
    a->default_runtime = 1;
    runtime_publish(a, 1);

    a->objs = calloc(AG_OBJECTS_MAX, sizeof *a->objs);
    ag_agent_objects_refresh(a);        /* what is loaded now, for the symbolizer */

    a->stopped = 0;
    if (cfg->housekeeping)
        hk_start(a);
    /* release: the region and tables above happen-before a claim that saw live */
    atomic_store_explicit(&a->live, a->clock_source, memory_order_release);
    return 0;
}

void ag_agent_stop(struct ag_agent *a)
{
    pthread_mutex_lock(&a->lock);
    if (a->stopped) {
        pthread_mutex_unlock(&a->lock);
        return;
    }
    a->stopped = 1;
    atomic_store_explicit(&a->live, 0, memory_order_relaxed);
    int child_without_region = a->need_reinit;
    pthread_mutex_unlock(&a->lock);
    if (child_without_region)
        return;                 /* the mapping is the parent's: hands off */

    hk_stop_join(a);            /* sends goodbye */
    if (a->region.hdr) {
        ag_agent_tick(a);       /* a last calibration pair for short runs */
        /* release: every earlier write of ours happens-before CLOSED */
        atomic_store_explicit(&a->region.hdr->state, D9_REGION_CLOSED, memory_order_release);
        region_release(a);
    }
}

void ag_agent_destroy(struct ag_agent *a)
{
    if (!a->started)
        return;
    ag_agent_stop(a);
    shm_region_close(&a->region);
    shm_region_close(&a->stale);
    if (a->region_fd >= 0)
        close(a->region_fd);
    a->region_fd = -1;
    for (uint32_t i = 0; i < a->loc_cap; i++) {
        free(a->locs[i].file);
        free(a->locs[i].func);
    }
    free(a->locs);
    free(a->runtimes);
    free(a->objs);
    pthread_cond_destroy(&a->hk_cond);
    pthread_mutex_destroy(&a->lock);
    memset(a, 0, sizeof *a);
    a->region_fd = -1;
}

/* Child after fork, first use: a fresh region with the same ids. Lock held. */
static int reinit_child(struct ag_agent *a)
{
    int rc = region_open(a);
    if (rc) {
        atomic_store_explicit(&a->live, 0, memory_order_relaxed);
        a->need_reinit = 0;
        a->stopped = 1;
        shm_region_close(&a->stale);
        return rc;
    }
    /* the parent's log up to the fork is ours too: same ids, same names */
    uint32_t n = a->fork_meta_head;
    if (a->stale.hdr && n <= a->stale.hdr->meta_size && n <= a->region.hdr->meta_size) {
        memcpy(meta_area(&a->region), meta_area(&a->stale), n);
        atomic_store_explicit(&a->region.hdr->meta_head, n, memory_order_release);
    }
    shm_region_close(&a->stale);
    a->need_reinit = 0;
    if (a->cfg.housekeeping)
        hk_start(a);
    return 0;
}

/* Lock held: 1 if the agent can take registrations and claims now. */
static int ready_locked(struct ag_agent *a)
{
    if (!atomic_load_explicit(&a->live, memory_order_relaxed) || a->stopped)
        return 0;
    if (a->need_reinit && reinit_child(a) != 0)
        return 0;
    return a->region.hdr != NULL;
}

void ag_agent_fork_prepare(struct ag_agent *a)
{
    if (!a->started)
        return;
    pthread_mutex_lock(&a->lock);
    /* with the lock held no entry is half-written; before a child's reinit
     * (need_reinit) the value from the earlier fork still describes stale */
    if (a->region.hdr)
        a->fork_meta_head = atomic_load_explicit(&a->region.hdr->meta_head,
                                                 memory_order_relaxed);
}

void ag_agent_fork_parent(struct ag_agent *a)
{
    if (!a->started)
        return;
    pthread_mutex_unlock(&a->lock);
}

void ag_agent_fork_child(struct ag_agent *a)
{
    if (!a->started)
        return;
    /* only this thread exists now; nothing below writes to the parent's
     * region, its rings, its zmq context or its thread */
    if (!a->stopped && !a->need_reinit) {
        a->stale = a->region;
        memset(&a->region, 0, sizeof a->region);
        a->need_reinit = 1;
    }
    /* forked again before the first event (need_reinit already set): stale
     * stays the ancestor's mapping, still read-only */
    if (a->region_fd >= 0)
        close(a->region_fd);
    a->region_fd = -1;
    a->hk_running = 0;
    a->hk_stop = 0;
    /* the inherited zmq context is unusable here (its I/O thread did not
     * survive the fork): never closed, only kept reachable */
    if (a->ctl.ctx)
        a->ctl_inherited = a->ctl;
    memset(&a->ctl, 0, sizeof a->ctl);
    a->ctl_state = 0;
    pthread_mutex_unlock(&a->lock);
}

/* ---- registration --------------------------------------------------------- */

static int valid_name(const char *s)
{
    if (!s)
        return 0;
    size_t n = strnlen(s, D9_NAME_MAX + 1);
    if (n == 0 || n > D9_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    return 1;
}

int ag_agent_runtime_register(struct ag_agent *a, const char *name, uint16_t *id)
{
    *id = 0;
    if (!valid_name(name))
        return -EINVAL;
    pthread_mutex_lock(&a->lock);
    int rc = 0;
    if (!ready_locked(a)) {
        rc = -ENOTCONN;
        goto out;
    }
    for (uint16_t i = 0; i < a->nruntimes; i++) {
        if (strcmp(a->runtimes[i], name) == 0) {
            *id = (uint16_t)(i + 1);
            goto out;
        }
    }
    if (a->nruntimes >= AG_RUNTIME_MAX) {
        rc = -ENOSPC;
        goto out;
    }
    copy_field(a->runtimes[a->nruntimes], D9_NAME_MAX, name);
    a->nruntimes++;
    *id = a->nruntimes;
    /* a full metadata log is counted in meta_lost; the id stays usable */
    runtime_publish(a, *id);
out:
    pthread_mutex_unlock(&a->lock);
    return rc;
}

static uint32_t loc_hash(const char *file, uint32_t line, const char *func)
{
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (const char *p = file; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    h = (h ^ line) * 16777619u;
    for (const char *p = func; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    return h ? h : 1;           /* 0 marks an empty slot */
}

static struct ag_loc *loc_slot(struct ag_loc *tab, uint32_t cap, uint32_t h,
                               const char *file, uint32_t line, const char *func)
{
    for (uint32_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
        struct ag_loc *l = &tab[i];
        if (l->hash == 0 || (l->hash == h && l->line == line && strcmp(l->file, file) == 0 &&
                             strcmp(l->func, func) == 0))
            return l;
    }
}

static int loc_grow(struct ag_agent *a)
{
    uint32_t cap = a->loc_cap ? a->loc_cap * 2 : AG_LOC_INIT_CAP;
    struct ag_loc *tab = calloc(cap, sizeof *tab);
    if (!tab)
        return -ENOMEM;
    for (uint32_t i = 0; i < a->loc_cap; i++) {
        struct ag_loc *o = &a->locs[i];
        if (o->hash)
            *loc_slot(tab, cap, o->hash, o->file, o->line, o->func) = *o;
    }
    free(a->locs);
    a->locs = tab;
    a->loc_cap = cap;
    return 0;
}

uint32_t ag_agent_loc_register(struct ag_agent *a, const char *file, int line, const char *func)
{
    if (!file || !*file || line < 0)
        return 0;
    if (!func)
        func = "";
    uint32_t id = 0, ul = (uint32_t)line;
    pthread_mutex_lock(&a->lock);
    if (!ready_locked(a))
        goto out;
    /* keep the load factor under 1/2 */
    if ((a->nlocs + 1) * 2 > a->loc_cap && loc_grow(a) != 0)
        goto out;
    uint32_t h = loc_hash(file, ul, func);
    struct ag_loc *l = loc_slot(a->locs, a->loc_cap, h, file, ul, func);
    if (l->hash) {
        id = l->id;
        goto out;
    }
    if (a->nlocs >= AG_LOC_MAX)
        goto out;
    char *f = strdup(file), *fn = strdup(func);
    if (!f || !fn) {
        free(f);
        free(fn);
        goto out;
    }
    l->hash = h;
    l->line = ul;
    l->file = f;
    l->func = fn;
    l->id = id = ++a->nlocs;
    uint8_t buf[AG_META_ENTRY_MAX];
    int n = shm_meta_encode_location(buf, sizeof buf, file, ul, func);
    if (n > 0)
        meta_put(a, D9_META_LOCATION, id, buf, (size_t)n);
out:
    pthread_mutex_unlock(&a->lock);
    return id;
}

static int schema_check(const d9_schema *s)
{
    if (!valid_name(s->name) || s->nfields > D9_SCHEMA_MAX_FIELDS || (s->nfields && !s->fields))
        return -EINVAL;
    for (uint16_t i = 0; i < s->nfields; i++)
        if (!valid_name(s->fields[i].name) || s->fields[i].type < D9_T_U64 ||
            s->fields[i].type > D9_T_STR)
            return -EINVAL;
    return 0;
}

uint32_t ag_agent_schema_id(struct ag_agent *a, d9_schema *s)
{
    /* acquire: pairs with the release below; the entry is in the log */
    uint32_t id = __atomic_load_n(&s->id, __ATOMIC_ACQUIRE);
    if (id)
        return id;
    pthread_mutex_lock(&a->lock);
    if (!ready_locked(a))
        goto out;
    id = s->id;
    if (id)
        goto out;
    int rc = schema_check(s);
    uint8_t buf[AG_META_ENTRY_MAX * 2];
    if (!rc) {
        uint8_t types[D9_SCHEMA_MAX_FIELDS];
        const char *names[D9_SCHEMA_MAX_FIELDS];
        for (uint16_t i = 0; i < s->nfields; i++) {
            types[i] = (uint8_t)s->fields[i].type;     /* == d9_field_type (emit.h) */
            names[i] = s->fields[i].name;
        }
        int n = shm_meta_encode_schema(buf, sizeof buf, s->name, s->nfields, types, names);
        rc = n < 0 ? n : meta_put(a, D9_META_SCHEMA, a->nschemas + 1, buf, (size_t)n);
    }
    if (rc) {
        fprintf(stderr, "d9: custom event schema \"%.64s\" cannot be published (%s); "
                "its events are dropped\n", s->name && valid_name(s->name) ? s->name : "?",
                rc == -ENOSPC ? "metadata log full" : "bad name, field or type");
        id = AG_SCHEMA_INVALID;
    } else {
        id = ++a->nschemas;
    }
    __atomic_store_n(&s->id, id, __ATOMIC_RELEASE);
out:
    pthread_mutex_unlock(&a->lock);
    return id;
}

/* ---- threads --------------------------------------------------------------- */

int ag_agent_thread_attach(struct ag_agent *a, struct ag_thread *t)
{
    if (t->state == AG_T_TRACED)
        return 0;
    if (t->state == AG_T_EXITED)
        return -ESRCH;
    if (t->state == AG_T_UNTRACED && --t->retry_countdown != 0)
        return -ENOSPC;

    char name[D9_COMM_MAX] = { 0 };
    pthread_getname_np(pthread_self(), name, sizeof name);
    uint32_t tid = ag_gettid();

    pthread_mutex_lock(&a->lock);
    if (!ready_locked(a)) {
        pthread_mutex_unlock(&a->lock);
        return -ENOTCONN;
    }
    struct d9_region_hdr *h = a->region.hdr;
    int was_counted = t->state == AG_T_UNTRACED;
    int idx = ag_ring_claim(a, tid, name, &t->p);
    if (idx == -ENOMEM) {
        /* no memory behind the ring: an untraced thread like one without a ring */
        atomic_fetch_add_explicit(&h->threads_untraced, 1, memory_order_relaxed);
        idx = -ENOSPC;
    }
    /* threads_untraced counts threads, not attempts: a retry was counted once already */
    if (was_counted)
        atomic_fetch_sub_explicit(&h->threads_untraced, 1, memory_order_relaxed);
    if (idx < 0) {
        t->state = AG_T_UNTRACED;
        t->retry_countdown = AG_CLAIM_RETRY_EVENTS;
        pthread_mutex_unlock(&a->lock);
        return -ENOSPC;
    }
    t->ring = idx;
    t->state = AG_T_TRACED;
    pthread_mutex_unlock(&a->lock);
    return 0;
}

static void sched_close(struct ag_thread *t)
{
    if (t->sched_state == AG_SCHED_OPEN)
        close(t->sched_fd);
    t->sched_state = AG_SCHED_UNOPENED;
    t->sched_fd = -1;
    t->sched_next_ns = 0;
}

void ag_agent_thread_detach(struct ag_agent *a, struct ag_thread *t)
{
    if (t->state == AG_T_TRACED && a->region.hdr)
        shm_slot_release(&a->region, (uint32_t)t->ring);
    sched_close(t);
    memset(&t->p, 0, sizeof t->p);
    t->ring = -1;
    t->state = AG_T_EXITED;
}

void ag_agent_thread_forget(struct ag_thread *t)
{
    sched_close(t);
    memset(t, 0, sizeof *t);
    t->ring = -1;
}

/* Parse one decimal field of schedstat; NULL when malformed. */
static const char *sched_field(const char *p, uint64_t *v)
{
    uint64_t x = 0;
    const char *s = p;
    for (; *p >= '0' && *p <= '9' && p - s < 20; p++)
        x = x * 10 + (uint64_t)(*p - '0');
    if (p == s)
        return NULL;
    *v = x;
    return p;
}

/* Fields 1 and 2 of schedstat: ns on CPU (sum_exec_runtime) and ns waiting
 * on a run queue. 1 when both were read, 0 when unreadable or malformed. */
static int sched_read(struct ag_thread *t, uint64_t *exec_ns, uint64_t *wait_ns)
{
    if (t->sched_state == AG_SCHED_UNOPENED) {
        t->sched_fd = open(AG_SCHEDSTAT_PATH, O_RDONLY | O_CLOEXEC);
        t->sched_state = t->sched_fd >= 0 ? AG_SCHED_OPEN : AG_SCHED_NONE;
    }
    if (t->sched_state != AG_SCHED_OPEN)
        return 0;
    char buf[AG_SCHEDSTAT_BUF];
    ssize_t n = pread(t->sched_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    const char *p = sched_field(buf, exec_ns);
    if (!p || *p != ' ' || !sched_field(p + 1, wait_ns))
        return 0;
    return 1;
}

uint32_t ag_agent_thread_sched(struct ag_thread *t, uint32_t interval_us, uint64_t *cpu_ns,
                               uint64_t *wait_delta_ns)
{
    *cpu_ns = *wait_delta_ns = 0;
    if (interval_us) {
        /* vDSO clock read, no syscall: most park/unpark calls end here */
        uint64_t now = shm_mono_ns();
        if (now < t->sched_next_ns)
            return D9_WORKER_UNSAMPLED;
        t->sched_next_ns = now + (uint64_t)interval_us * 1000u;
    }
    int first = t->sched_state == AG_SCHED_UNOPENED;
    uint64_t exec = 0, w = 0;
    if (!sched_read(t, &exec, &w)) {
        struct timespec ts;
        *cpu_ns = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0
            ? (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec : 0;
        return 0;
    }
    *cpu_ns = exec;
    /* the first sample is the baseline; the counter never goes backwards,
     * but a bad read must not turn into a huge delta */
    *wait_delta_ns = (!first && w >= t->last_wait_ns) ? w - t->last_wait_ns : 0;
    if (w >= t->last_wait_ns)
        t->last_wait_ns = w;
    return 0;
}

/* ---- status ----------------------------------------------------------------- */

void ag_agent_stats(struct ag_agent *a, d9_stats *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&a->lock);
    struct shm_region *r = &a->region;
    if (r->hdr) {
        /* only rings this process claimed: reading the header of a ring
         * never touched would allocate its page (cost scaling with
         * DIAL9_MAX_THREADS, not with the threads) */
        uint32_t hw = atomic_load_explicit(&a->rings_hw, memory_order_relaxed);
        uint32_t n = hw < r->hdr->ring_count ? hw : r->hdr->ring_count;
        for (uint32_t i = 0; i < n; i++) {
            struct d9_ring_hdr *rh = ring_hdr(r, i);
            out->lost += atomic_load_explicit(&rh->lost, memory_order_relaxed);
            out->lost_mismatch += atomic_load_explicit(&rh->lost_mismatch, memory_order_relaxed);
            out->lost_too_big += atomic_load_explicit(&rh->lost_too_big, memory_order_relaxed);
            uint32_t s = atomic_load_explicit(&rh->state, memory_order_relaxed);
            if (s == D9_RING_OWNED || s == D9_RING_CLAIMING)
                out->rings_in_use++;
        }
        out->threads_untraced =
            atomic_load_explicit(&r->hdr->threads_untraced, memory_order_relaxed);
        out->lost_full = out->lost - out->lost_mismatch - out->lost_too_big;
    }
    pthread_mutex_unlock(&a->lock);
    out->lost_no_ring = atomic_load_explicit(&a->lost_no_ring, memory_order_relaxed);
}

const char *ag_agent_region_path(struct ag_agent *a)
{
    return a->region.hdr ? a->region.path : NULL;
}
