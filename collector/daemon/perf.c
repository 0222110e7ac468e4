/*
 * perf.c — per-thread perf_event_open sampling of a traced process (see
 * perf.h for the model). Called by the daemon's drain loop only: one
 * perf_proc per adopted process, polled from the single collector thread.
 *
 * Invariants:
 *   - th[] is sorted by tid (bsearch on rescan); every open thread has a
 *     mapped ring of 1 + cfg.ring_pages pages and fd_lead >= 0.
 *   - The consumer cursor (data_tail) is only ever advanced to a position
 *     inside [old tail, data_head] that perf_ring_walk proved to be a record
 *     boundary, or resynchronised to data_head after corrupt framing.
 *   - Pending records live in one byte arena, bounded by
 *     PERF_PENDING_MAX_BYTES; beyond that samples are dropped and counted.
 * Never: trust data_head (checked against the ring size), trust a record
 * size (checked against the bytes left), or read outside the mapping.
 */
#include <dirent.h>
#include <stddef.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "collector/daemon/perf.h"
#include "collector/daemon/unwind.h"

#define PERF_PENDING_MAX_BYTES (64u * 1024u * 1024u)
/* File descriptors left to the rest of the collector (segments, SQLite,
 * sockets): perf events are refused above RLIMIT_NOFILE minus this. */
#define PERF_FD_RESERVE        256

struct perf_thread {
    uint32_t tid;
    int fd_lead;                /* owns the mmap ring */
    int fd_cpu, fd_sw;          /* -1 when not opened (one may alias fd_lead) */
    uint64_t id_cpu, id_sw;     /* PERF_EVENT_IOC_ID */
    uint8_t *base;              /* perf_event_mmap_page + data */
    size_t map_len;
    uint32_t data_pages;        /* <= cfg.ring_pages: halved while the lock limit refuses */
    int seen;                   /* rescan mark */
    /* the last sampled switch-out, waiting for its switch-in */
    int pend_valid;
    uint16_t pend_n, pend_flags;
    uint64_t pend_ts;
    uint64_t pend_ips[D9_STACK_MAX_FRAMES];
};

struct perf_pend {
    uint64_t ts;
    uint32_t off, len;          /* into arena */
};

struct perf_proc {
    uint32_t pid;
    struct perf_config cfg;
    size_t page_size;
    int kernel;                 /* 1: kernel callchains allowed */
    int use_max_stack;          /* 1: attr.sample_max_stack accepted */
    struct perf_thread *th;
    uint32_t nth, cap;
    uint64_t last_scan_ns;
    int scanned;
    uint8_t *arena;
    size_t arena_len, arena_cap;
    struct perf_pend *pend;
    size_t npend, pend_cap, pend_pos;
    int sorted;
    uint32_t seq;
    uint64_t lost_unreported;
    struct perf_stats st;
    struct perf_thread *cur;    /* thread being parsed (walk callback) */
    uint8_t *scratch;
    struct unw *unw;            /* --stack-mode dwarf: the DWARF unwinder, else NULL */
};

static int perf_dwarf;          /* perf_set_stack_dwarf */
static uint32_t perf_stack_copy = UNW_STACK_BYTES;     /* perf_set_stack_bytes */

void perf_set_stack_bytes(uint32_t bytes)
{
    if (bytes < UNW_STACK_BYTES_MIN)
        bytes = UNW_STACK_BYTES_MIN;
    if (bytes > UNW_STACK_BYTES_MAX)
        bytes = UNW_STACK_BYTES_MAX;
    perf_stack_copy = bytes & ~7u;
}

uint32_t perf_stack_bytes(void)
{
    return perf_stack_copy;
}

void perf_set_stack_dwarf(int on)
{
    perf_dwarf = on ? 1 : 0;
}

int perf_stack_dwarf(void)
{
    return perf_dwarf;
}

/* perf_event_open(2) with PERF_FLAG_FD_CLOEXEC, no group: fd or -1 / errno. */
static long perf_sys_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
    return syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

int perf_callchain_keeper(void)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.sample_period = 1000000000u;
    a.sample_type = PERF_SAMPLE_CALLCHAIN;
    a.disabled = 1;             /* never enabled: it only holds the buffers */
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    long fd = perf_sys_open(&a, 0, -1);
    return fd < 0 ? -errno : (int)fd;
}

void perf_config_default(struct perf_config *c)
{
    c->freq_hz = PERF_FREQ_DEFAULT;
    c->switch_period = PERF_SWITCH_PERIOD_DEFAULT;
    c->ring_pages = PERF_RING_PAGES_DEFAULT;
    c->rescan_ns = PERF_RESCAN_NS_DEFAULT;
    c->host_cpu = 0;
}

/* ---- pure parsers ------------------------------------------------------ */

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

int perf_ring_walk(const uint8_t *data, uint64_t size, uint64_t tail, uint64_t head,
                   uint8_t *scratch, perf_rec_fn fn, void *ctx, uint64_t *new_tail)
{
    *new_tail = tail;
    if (size == 0 || (size & (size - 1)) != 0 || head - tail > size)
        return -EBADMSG;
    while (tail != head) {
        uint64_t avail = head - tail;
        if (avail < sizeof(struct perf_event_header))
            return -EBADMSG;
        uint64_t pos = tail & (size - 1);
        struct perf_event_header h;
        /* the header itself may wrap (8 bytes, 8-aligned positions never
         * straddle, but do not rely on the kernel for that) */
        for (size_t i = 0; i < sizeof h; i++)
            ((uint8_t *)&h)[i] = data[(pos + i) & (size - 1)];
        if (h.size < sizeof h || h.size % 8 != 0 || h.size > avail)
            return -EBADMSG;
        const uint8_t *rec;
        if (pos + h.size <= size) {
            rec = data + pos;
        } else {
            uint64_t first = size - pos;
            memcpy(scratch, data + pos, first);
            memcpy(scratch + first, data, h.size - first);
            rec = scratch;
        }
        int rc = fn(ctx, &h, rec, h.size);
        if (rc != 0)
            return rc;
        tail += h.size;
        *new_tail = tail;
    }
    return 0;
}

int perf_ring_consume(uint8_t *base, size_t page_size, uint64_t size, uint8_t *scratch,
                      perf_rec_fn fn, void *ctx)
{
    struct perf_event_mmap_page *mp = (struct perf_event_mmap_page *)base;
    /* acquire: the record bytes before data_head are visible (pairs with
     * the kernel's smp_wmb before it publishes data_head) */
    uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = __atomic_load_n(&mp->data_tail, __ATOMIC_RELAXED);
    if (head == tail)
        return 0;
    uint64_t nt;
    int rc = perf_ring_walk(base + page_size, size, tail, head, scratch, fn, ctx, &nt);
    if (rc == -EBADMSG)
        nt = head;              /* resynchronise: skip what we cannot frame */
    /* release: we are done reading everything before nt; the kernel may
     * overwrite it (pairs with the kernel's smp_mb before reading tail) */
    __atomic_store_n(&mp->data_tail, nt, __ATOMIC_RELEASE);
    return rc;
}

#define LOST_FIXED (sizeof(struct perf_event_header) + 8 /* id */ + 8 /* lost */)

int perf_parse_lost(const uint8_t *rec, size_t len, uint64_t *lost)
{
    if (len < LOST_FIXED)
        return -EBADMSG;
    *lost = rd64(rec + sizeof(struct perf_event_header) + 8);
    return 0;
}

#define SAMPLE_HEAD (sizeof(struct perf_event_header) + 8 /* id */ + 8 /* pid,tid */ + \
                     8 /* time */)

/* The PERF_DWARF_SAMPLE_BITS fields after the callchain at p[0, left). */
static int parse_dwarf(const uint8_t *p, size_t left, struct perf_sample *s)
{
    if (left < 8)
        return -EBADMSG;
    uint64_t abi = rd64(p);
    p += 8;
    left -= 8;
    if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
        if (left < UNW_REGS_N * 8u)
            return -EBADMSG;
        s->regs = abi == PERF_SAMPLE_REGS_ABI_64 ? p : NULL;
        p += UNW_REGS_N * 8u;
        left -= UNW_REGS_N * 8u;
    }
    if (left < 8)
        return -EBADMSG;
    uint64_t size = rd64(p);
    p += 8;
    left -= 8;
    if (size == 0)
        return 0;
    if (size > left || left - size < 8)
        return -EBADMSG;
    uint64_t dyn = rd64(p + size);
    s->stack = p;
    s->stack_len = dyn < size ? dyn : size;
    return 0;
}

int perf_parse_sample_as(const uint8_t *rec, size_t len, uint64_t sample_type,
                         struct perf_sample *s)
{
    uint64_t extra = sample_type & PERF_DWARF_SAMPLE_BITS;
    sample_type &= ~PERF_DWARF_SAMPLE_BITS;
    if (sample_type != PERF_D9_SAMPLE_TYPE && sample_type != PERF_TICK_SAMPLE_TYPE)
        return -EINVAL;
    if (extra && extra != PERF_DWARF_SAMPLE_BITS)
        return -EINVAL;
    s->regs = NULL;
    s->stack = NULL;
    s->stack_len = 0;
    size_t fixed = SAMPLE_HEAD + (sample_type & PERF_SAMPLE_PERIOD ? 8 : 0) + 8 /* nr */;
    if (len < fixed)
        return -EBADMSG;
    const uint8_t *p = rec + sizeof(struct perf_event_header);
    s->id = rd64(p);
    s->pid = rd32(p + 8);
    s->tid = rd32(p + 12);
    s->time = rd64(p + 16);
    s->period = sample_type & PERF_SAMPLE_PERIOD ? rd64(p + 24) : 0;
    s->nr = rd64(rec + fixed - 8);
    if (s->nr > (len - fixed) / 8)
        return -EBADMSG;
    s->ips = rec + fixed;
    if (extra)
        return parse_dwarf(s->ips + s->nr * 8, len - fixed - s->nr * 8, s);
    return 0;
}

int perf_parse_sample(const uint8_t *rec, size_t len, struct perf_sample *s)
{
    return perf_parse_sample_as(rec, len, PERF_D9_SAMPLE_TYPE, s);
}

#define SAMPLE_ID_SIZE 24u      /* pid,tid + time + identifier */

int perf_parse_sample_id(const uint8_t *rec, size_t len, struct perf_sample_id *s)
{
    if (len < sizeof(struct perf_event_header) + SAMPLE_ID_SIZE)
        return -EBADMSG;
    const uint8_t *p = rec + len - SAMPLE_ID_SIZE;
    s->pid = rd32(p);
    s->tid = rd32(p + 4);
    s->time = rd64(p + 8);
    s->id = rd64(p + 16);
    return 0;
}

uint16_t perf_callchain_to_frames(const uint8_t *ips, uint64_t nr, uint64_t *out, uint16_t max,
                                  uint16_t *flags)
{
    uint16_t n = 0;
    int mode = 1;               /* 1 user/unknown, 2 kernel, 0 skip (guest, hv) */
    *flags = 0;
    for (uint64_t i = 0; i < nr; i++) {
        uint64_t ip = rd64(ips + i * 8);
        if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
            if (ip == (uint64_t)PERF_CONTEXT_KERNEL)
                mode = 2;
            else if (ip == (uint64_t)PERF_CONTEXT_USER)
                mode = 1;
            else
                mode = 0;
            continue;
        }
        if (mode == 0)
            continue;
        if (n == max) {
            *flags |= D9_STACK_TRUNCATED;
            break;
        }
        if (mode == 2)
            *flags |= D9_STACK_KERNEL;
        out[n++] = ip;
    }
    return n;
}

/* Frames of an on-CPU sample: the callchain, its user part replaced by the
 * DWARF unwind of the sample's stack copy when that reaches further. */
static uint16_t sample_frames(struct perf_proc *p, const struct perf_sample *s, uint64_t *ips,
                              uint16_t *flags)
{
    uint16_t n = perf_callchain_to_frames(s->ips, s->nr, ips, D9_STACK_MAX_FRAMES, flags);
    if (!p->unw || !s->regs)
        return n;
    uint16_t k = 0;             /* kernel frames: they come first */
    if (*flags & D9_STACK_KERNEL) {
        int mode = 1;
        for (uint64_t i = 0; i < s->nr && k < n; i++) {
            uint64_t ip = rd64(s->ips + i * 8);
            if (ip >= (uint64_t)PERF_CONTEXT_MAX)
                mode = ip == (uint64_t)PERF_CONTEXT_KERNEL ? 2 : 1;
            else if (mode == 2)
                k++;
        }
    }
    uint64_t u[D9_STACK_MAX_FRAMES];
    uint16_t m = unw_sample(p->unw, s->tid, s->regs, s->stack, (size_t)s->stack_len, u,
                            (uint16_t)(D9_STACK_MAX_FRAMES - k), s->time);
    if (m <= n - k)
        return n;
    memcpy(ips + k, u, (size_t)m * 8);
    if (k + m == D9_STACK_MAX_FRAMES)
        *flags |= D9_STACK_TRUNCATED;
    return (uint16_t)(k + m);
}

/* ---- pending records --------------------------------------------------- */

static int pend_add(struct perf_proc *p, uint16_t type, uint64_t ts, uint32_t tid,
                    uint16_t n, uint16_t flags, uint64_t weight, const uint64_t *ips)
{
    size_t len = sizeof(struct d9_rec_stack) + (size_t)n * 8;
    if (p->arena_len + len > PERF_PENDING_MAX_BYTES) {
        p->st.lost++;
        p->lost_unreported++;
        return -ENOBUFS;
    }
    if (p->arena_len + len > p->arena_cap) {
        size_t nc = p->arena_cap ? p->arena_cap * 2 : 65536;
        while (nc < p->arena_len + len)
            nc *= 2;
        uint8_t *na = realloc(p->arena, nc);
        if (!na)
            return -ENOMEM;
        p->arena = na;
        p->arena_cap = nc;
    }
    if (p->npend == p->pend_cap) {
        size_t nc = p->pend_cap ? p->pend_cap * 2 : 1024;
        struct perf_pend *np = realloc(p->pend, nc * sizeof *np);
        if (!np)
            return -ENOMEM;
        p->pend = np;
        p->pend_cap = nc;
    }
    struct d9_rec_stack r;
    memset(&r, 0, sizeof r);
    r.h.len = (uint16_t)len;
    r.h.type = type;
    r.h.ts = ts;
    r.tid = tid;
    r.nframes = n;
    r.flags = flags;
    r.weight = weight;
    memcpy(p->arena + p->arena_len, &r, sizeof r);
    if (n)
        memcpy(p->arena + p->arena_len + sizeof r, ips, (size_t)n * 8);
    p->pend[p->npend].ts = ts;
    p->pend[p->npend].off = (uint32_t)p->arena_len;
    p->pend[p->npend].len = (uint32_t)len;
    p->npend++;
    p->arena_len += len;
    p->sorted = 0;
    if (type == D9_REC_CPU_SAMPLE)
        p->st.cpu_samples++;
    else
        p->st.switch_samples++;
    return 0;
}

uint64_t perf_switch_weight(uint64_t off_ns, uint32_t switch_period)
{
    uint64_t w;
    if (__builtin_mul_overflow(off_ns, switch_period ? switch_period : 1u, &w))
        return UINT64_MAX;
    return w;
}

/* Emit the pending switch-out of t with the given weight (0 = unknown). */
static int pend_flush_switch(struct perf_proc *p, struct perf_thread *t, uint64_t weight)
{
    if (!t->pend_valid)
        return 0;
    t->pend_valid = 0;
    return pend_add(p, D9_REC_SCHED_SWITCH, t->pend_ts, t->tid, t->pend_n, t->pend_flags,
                    weight, t->pend_ips);
}

static int on_record(void *ctx, const struct perf_event_header *h, const uint8_t *rec,
                     size_t len)
{
    struct perf_proc *p = ctx;
    struct perf_thread *t = p->cur;
    int rc = 0;

    switch (h->type) {
    case PERF_RECORD_SAMPLE: {
        struct perf_sample s;
        uint64_t ips[D9_STACK_MAX_FRAMES];
        uint16_t flags, n;
        /* the two events share the ring with different layouts: the
         * identifier comes first in both and says which one wrote it */
        uint64_t id = 0;
        if (len >= sizeof *h + sizeof id)
            memcpy(&id, rec + sizeof *h, sizeof id);
        uint64_t type = t->fd_sw >= 0 && id == t->id_sw
                            ? PERF_TICK_SAMPLE_TYPE
                            : PERF_D9_SAMPLE_TYPE | (perf_dwarf ? PERF_DWARF_SAMPLE_BITS : 0);
        if (perf_parse_sample_as(rec, len, type, &s) != 0) {
            p->st.bad++;
            break;
        }
        n = s.regs ? sample_frames(p, &s, ips, &flags)
                   : perf_callchain_to_frames(s.ips, s.nr, ips, D9_STACK_MAX_FRAMES, &flags);
        if (s.id == t->id_cpu && t->fd_cpu >= 0) {
            rc = pend_add(p, D9_REC_CPU_SAMPLE, s.time, s.tid, n, flags, s.period, ips);
        } else if (s.id == t->id_sw && t->fd_sw >= 0) {
            rc = pend_flush_switch(p, t, 0);   /* its switch-in was never seen */
            t->pend_valid = 1;
            t->pend_ts = s.time;
            t->pend_n = n;
            t->pend_flags = flags;
            memcpy(t->pend_ips, ips, (size_t)n * 8);
        } else {
            p->st.bad++;
        }
        break;
    }
    case PERF_RECORD_SWITCH: {
        struct perf_sample_id sid;
        if (perf_parse_sample_id(rec, len, &sid) != 0) {
            p->st.bad++;
            break;
        }
        if (!(h->misc & PERF_RECORD_MISC_SWITCH_OUT) && t->pend_valid && sid.time >= t->pend_ts)
            rc = pend_flush_switch(p, t, perf_switch_weight(sid.time - t->pend_ts,
                                                            p->cfg.switch_period));
        break;
    }
    case PERF_RECORD_LOST: {
        uint64_t n;
        if (perf_parse_lost(rec, len, &n) != 0) {
            p->st.bad++;
            break;
        }
        p->st.lost += n;
        p->lost_unreported += n;
        /* switch records may be among the lost: the pending switch-in
         * cannot be matched reliably any more */
        rc = pend_flush_switch(p, t, 0);
        break;
    }
    default:
        break;                  /* THROTTLE, UNTHROTTLE, ...: nothing to do */
    }
    return rc == -ENOBUFS ? 0 : rc;
}

/* ---- threads ----------------------------------------------------------- */

/* The attr of d9's sampling events (see perf_open_event, perf_open_tracepoint):
 * kind PERF_EV_CPU_CLOCK at freq_hz, PERF_EV_SWITCHES 1 in period, or
 * PERF_EV_TRACEPOINT tp_id 1 in period. A tracepoint fires in the kernel, so
 * !kernel drops only its kernel callchain (exclude_kernel would drop it all). */
enum { PERF_EV_CPU_CLOCK, PERF_EV_SWITCHES, PERF_EV_TRACEPOINT };
static void perf_fill_attr(struct perf_event_attr *a, int kind, uint32_t freq_hz,
                           uint64_t period, uint64_t tp_id, int kernel, int max_stack)
{
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->type = PERF_TYPE_SOFTWARE;
    a->sample_type = PERF_D9_SAMPLE_TYPE;
    a->use_clockid = 1;
    a->clockid = CLOCK_MONOTONIC;
    a->sample_id_all = 1;
    a->exclude_kernel = kernel ? 0 : 1;
    a->exclude_hv = 1;
    if (max_stack)
        a->sample_max_stack = D9_STACK_MAX_FRAMES;
    if (perf_dwarf && kind != PERF_EV_SWITCHES) {
        a->sample_type |= PERF_DWARF_SAMPLE_BITS;
        a->sample_regs_user = UNW_REGS_MASK;
        a->sample_stack_user = perf_stack_copy;
    }
    if (kind == PERF_EV_CPU_CLOCK) {
        a->config = PERF_COUNT_SW_CPU_CLOCK;
        a->freq = 1;
        a->sample_freq = freq_hz;
    } else if (kind == PERF_EV_SWITCHES) {
        a->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
        a->sample_type = PERF_TICK_SAMPLE_TYPE;    /* 1 in period for real: see perf.h */
        a->sample_period = period;
        a->context_switch = 1;
    } else {
        a->type = PERF_TYPE_TRACEPOINT;
        a->sample_type = PERF_TICK_SAMPLE_TYPE | (a->sample_type & PERF_DWARF_SAMPLE_BITS);
        a->config = tp_id;
        a->sample_period = period;
        a->exclude_kernel = 0;
        a->exclude_callchain_kernel = kernel ? 0 : 1;
    }
}

/* 1 if the new perf fd leaves PERF_FD_RESERVE descriptors below
 * RLIMIT_NOFILE for segments, SQLite and sockets. */
static int perf_fd_budget_ok(int fd)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 1;
    return (rlim_t)fd + PERF_FD_RESERVE < rl.rlim_cur;
}

/* Open a (refilled) attr on (pid, cpu), giving up kernel frames and then
 * sample_max_stack when refused (see perf_open_event). */
static int open_degrading(int kind, uint32_t freq_hz, uint64_t period, uint64_t tp_id,
                          int exclude_idle, pid_t pid, int cpu, int may_drop_kernel,
                          int *kernel, int *max_stack)
{
    for (int attempt = 0; attempt < 3; attempt++) {
        struct perf_event_attr a;
        perf_fill_attr(&a, kind, freq_hz, period, tp_id, *kernel, *max_stack);
        a.exclude_idle = exclude_idle ? 1 : 0;
        long fd = perf_sys_open(&a, pid, cpu);
        if (fd >= 0 && !perf_fd_budget_ok((int)fd)) {
            close((int)fd);     /* keep descriptors for segments and the index */
            return -EMFILE;
        }
        if (fd >= 0)
            return (int)fd;
        int e = errno;
        if ((e == EACCES || e == EPERM) && *kernel && may_drop_kernel) {
            *kernel = 0;
            continue;
        }
        if (e == EINVAL && *max_stack) {
            *max_stack = 0;
            continue;
        }
        return -e;
    }
    return -EACCES;
}

int perf_open_event(int cpu_clock, uint32_t freq_hz, uint32_t switch_period, int exclude_idle,
                    pid_t pid, int cpu, int may_drop_kernel, int *kernel, int *max_stack)
{
    return open_degrading(cpu_clock ? PERF_EV_CPU_CLOCK : PERF_EV_SWITCHES, freq_hz,
                          switch_period, 0, exclude_idle, pid, cpu, may_drop_kernel, kernel,
                          max_stack);
}

int perf_open_tracepoint(uint64_t tp_id, uint64_t period, const char *filter, pid_t pid,
                         int cpu, int may_drop_kernel, int *kernel, int *max_stack)
{
    if (!tp_id || !period)
        return -EINVAL;
    int fd = open_degrading(PERF_EV_TRACEPOINT, 0, period, tp_id, 0, pid, cpu,
                            may_drop_kernel, kernel, max_stack);
    if (fd >= 0 && filter && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

/* Open one event of a thread; the degradations stick for the whole process. */
static int open_event(struct perf_proc *p, uint32_t tid, int cpu_clock)
{
    return perf_open_event(cpu_clock, p->cfg.freq_hz, p->cfg.switch_period, 0, (pid_t)tid, -1,
                           1, &p->kernel, &p->use_max_stack);
}

static void thread_close(struct perf_thread *t)
{
    if (t->base && t->base != MAP_FAILED)
        munmap(t->base, t->map_len);
    t->base = NULL;
    if (t->fd_cpu >= 0)
        close(t->fd_cpu);
    if (t->fd_sw >= 0)
        close(t->fd_sw);
    t->fd_cpu = t->fd_sw = t->fd_lead = -1;
}

static int thread_open(struct perf_proc *p, struct perf_thread *t, uint32_t tid)
{
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->fd_cpu = t->fd_sw = t->fd_lead = -1;
    int rc;
    if (p->cfg.freq_hz && !p->cfg.host_cpu) {
        rc = open_event(p, tid, 1);
        if (rc < 0)
            goto fail;
        t->fd_cpu = rc;
    }
    if (p->cfg.switch_period) {
        rc = open_event(p, tid, 0);
        if (rc < 0)
            goto fail;
        t->fd_sw = rc;
    }
    t->fd_lead = t->fd_cpu >= 0 ? t->fd_cpu : t->fd_sw;
    /* unprivileged: perf rings count against perf_event_mlock_kb +
     * RLIMIT_MEMLOCK; a smaller ring beats no ring (it is drained often) */
    for (t->data_pages = p->cfg.ring_pages;; t->data_pages /= 2) {
        t->map_len = (1 + (size_t)t->data_pages) * p->page_size;
        t->base = mmap(NULL, t->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd_lead, 0);
        if (t->base != MAP_FAILED)
            break;
        t->base = NULL;
        rc = -errno;
        if ((rc != -EPERM && rc != -ENOMEM) || t->data_pages == 1)
            goto fail;
    }
    if (t->fd_cpu >= 0 && ioctl(t->fd_cpu, PERF_EVENT_IOC_ID, &t->id_cpu) != 0) {
        rc = -errno;
        goto fail;
    }
    if (t->fd_sw >= 0) {
        if (ioctl(t->fd_sw, PERF_EVENT_IOC_ID, &t->id_sw) != 0) {
            rc = -errno;
            goto fail;
        }
        if (t->fd_sw != t->fd_lead &&
            ioctl(t->fd_sw, PERF_EVENT_IOC_SET_OUTPUT, t->fd_lead) != 0) {
            rc = -errno;
            goto fail;
        }
    }
    return 0;
fail:
    thread_close(t);
    return rc;
}

/* Parse the ring of t into pending records. */
static int thread_drain(struct perf_proc *p, struct perf_thread *t)
{
    if (!t->base)
        return 0;
    p->cur = t;
    int rc = perf_ring_consume(t->base, p->page_size, (uint64_t)t->data_pages * p->page_size,
                               p->scratch, on_record, p);
    if (rc == -EBADMSG) {
        p->st.bad++;
        t->pend_valid = 0;
    }
    return rc == -ENOMEM ? rc : 0;
}

static int cmp_tid(const void *a, const void *b)
{
    uint32_t x = ((const struct perf_thread *)a)->tid, y = ((const struct perf_thread *)b)->tid;
    return x < y ? -1 : x > y;
}

static struct perf_thread *find_thread(struct perf_proc *p, uint32_t tid)
{
    struct perf_thread key;
    key.tid = tid;
    return p->nth ? bsearch(&key, p->th, p->nth, sizeof *p->th, cmp_tid) : NULL;
}

static uint32_t parse_tid(const char *s)
{
    uint64_t v = 0;
    if (!*s)
        return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return 0;
        v = v * 10 + (uint64_t)(*s - '0');
        if (v > UINT32_MAX)
            return 0;
    }
    return (uint32_t)v;
}

/* 1 if p opens events on its threads (else it only gathers perf_host's samples). */
static int per_thread(const struct perf_proc *p)
{
    return p->cfg.switch_period || (p->cfg.freq_hz && !p->cfg.host_cpu);
}

/* Open new threads, drain and close vanished ones. Returns the number of
 * threads found, -ESRCH if the task dir is gone, or the first hard error of
 * an open when nothing at all could be opened. */
static int rescan(struct perf_proc *p)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%u/task", p->pid);
    DIR *d = opendir(path);
    for (uint32_t i = 0; i < p->nth; i++)
        p->th[i].seen = 0;
    int found = 0, first_err = 0, added = 0;
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            uint32_t tid = parse_tid(de->d_name);
            if (!tid)
                continue;
            found++;
            struct perf_thread *t = find_thread(p, tid);
            if (t) {
                t->seen = 1;
                continue;
            }
            if (p->nth + (uint32_t)added >= PERF_THREADS_MAX)
                continue;
            if (p->nth + (uint32_t)added == p->cap) {
                uint32_t nc = p->cap ? p->cap * 2 : 16;
                struct perf_thread *nt = realloc(p->th, nc * sizeof *nt);
                if (!nt) {
                    closedir(d);
                    return -ENOMEM;
                }
                p->th = nt;
                p->cap = nc;
            }
            /* new threads go past nth so bsearch over [0, nth) stays valid */
            struct perf_thread *slot = &p->th[p->nth + (uint32_t)added];
            int rc = thread_open(p, slot, tid);
            if (rc == 0) {
                slot->seen = 1;
                added++;
            } else if (rc != -ESRCH) {
                p->st.open_errors++;
                if (!first_err)
                    first_err = rc;
            }
        }
        closedir(d);
    }
    p->nth += (uint32_t)added;
    /* drain and drop threads that are gone */
    uint32_t w = 0;
    for (uint32_t i = 0; i < p->nth; i++) {
        struct perf_thread *t = &p->th[i];
        if (!t->seen) {
            thread_drain(p, t);
            pend_flush_switch(p, t, 0);
            thread_close(t);
            continue;
        }
        if (w != i)
            p->th[w] = *t;
        w++;
    }
    p->nth = w;
    if (p->nth > 1)
        qsort(p->th, p->nth, sizeof *p->th, cmp_tid);
    p->st.threads = p->nth;
    if (!d)
        return -ESRCH;
    if (p->nth == 0 && first_err)
        return first_err;
    return found;
}

/* ---- public ------------------------------------------------------------ */

int perf_proc_open(struct perf_proc **out, uint32_t pid, const struct perf_config *cfg)
{
    *out = NULL;
    if (!pid || !cfg || cfg->freq_hz > PERF_FREQ_MAX || (!cfg->freq_hz && !cfg->switch_period) ||
        cfg->ring_pages == 0 || cfg->ring_pages > PERF_RING_PAGES_MAX ||
        (cfg->ring_pages & (cfg->ring_pages - 1)) != 0)
        return -EINVAL;
    struct perf_proc *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->scratch = malloc(PERF_REC_SCRATCH);
    if (!p->scratch) {
        free(p);
        return -ENOMEM;
    }
    p->pid = pid;
    p->cfg = *cfg;
    p->page_size = (size_t)sysconf(_SC_PAGESIZE);
    p->kernel = 1;
    p->use_max_stack = 1;
    p->sorted = 1;
    if (perf_dwarf)
        p->unw = unw_open(pid);     /* NULL: frame pointers only */
    if (per_thread(p)) {
        int rc = rescan(p);
        if (rc <= 0 || p->nth == 0) {
            perf_proc_close(p);
            return rc < 0 ? rc : -ESRCH;
        }
    } else {
        char path[32];
        snprintf(path, sizeof path, "/proc/%u", pid);
        if (access(path, F_OK) != 0) {
            perf_proc_close(p);
            return -ESRCH;
        }
    }
    p->st.kernel_frames = p->kernel;
    p->last_scan_ns = 0;
    p->scanned = 1;
    *out = p;
    return 0;
}

void perf_proc_close(struct perf_proc *p)
{
    if (!p)
        return;
    for (uint32_t i = 0; i < p->nth; i++)
        thread_close(&p->th[i]);
    free(p->th);
    free(p->arena);
    free(p->pend);
    free(p->scratch);
    unw_close(p->unw);
    free(p);
}

long perf_proc_poll(struct perf_proc *p, uint64_t now_ns, int force_rescan)
{
    if (per_thread(p) &&
        (force_rescan || !p->scanned || now_ns - p->last_scan_ns >= p->cfg.rescan_ns)) {
        int rc = rescan(p);
        if (rc == -ENOMEM)
            return rc;
        p->last_scan_ns = now_ns;
        p->scanned = 1;
        p->st.kernel_frames = p->kernel;
    }
    for (uint32_t i = 0; i < p->nth; i++)
        if (thread_drain(p, &p->th[i]) == -ENOMEM)
            return -ENOMEM;
    return (long)(p->npend - p->pend_pos);
}

int perf_proc_add_cpu_sample(struct perf_proc *p, const struct perf_sample *s)
{
    uint64_t ips[D9_STACK_MAX_FRAMES];
    uint16_t flags;
    uint16_t n = sample_frames(p, s, ips, &flags);
    return pend_add(p, D9_REC_CPU_SAMPLE, s->time, s->tid, n, flags, s->period, ips);
}

static int cmp_pend(const void *a, const void *b)
{
    const struct perf_pend *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;  /* stable: arrival order */
}

size_t perf_proc_take(struct perf_proc *p, uint8_t *out, size_t cap, uint64_t *lost)
{
    if (lost) {
        *lost = p->lost_unreported;
        p->lost_unreported = 0;
    }
    if (!p->sorted && p->npend - p->pend_pos > 1) {
        qsort(p->pend + p->pend_pos, p->npend - p->pend_pos, sizeof *p->pend, cmp_pend);
    }
    p->sorted = 1;
    size_t n = 0;
    while (p->pend_pos < p->npend) {
        const struct perf_pend *e = &p->pend[p->pend_pos];
        if (n + e->len > cap)
            break;
        memcpy(out + n, p->arena + e->off, e->len);
        uint32_t seq = p->seq++;
        memcpy(out + n + offsetof(struct d9_rec_hdr, seq), &seq, sizeof seq);
        n += e->len;
        p->pend_pos++;
    }
    if (p->pend_pos == p->npend) {
        p->pend_pos = p->npend = 0;
        p->arena_len = 0;
    }
    return n;
}

void perf_proc_stats(const struct perf_proc *p, struct perf_stats *out)
{
    *out = p->st;
    out->threads = p->nth;
    out->kernel_frames = p->kernel;
    out->ring_kib = 0;
    for (uint32_t i = 0; i < p->nth; i++) {
        uint32_t kib = (uint32_t)(p->th[i].data_pages * p->page_size / 1024);
        if (p->th[i].base && (!out->ring_kib || kib < out->ring_kib))
            out->ring_kib = kib;
    }
    unw_counts(p->unw, &out->dwarf_unwound, &out->dwarf_failed, &out->dwarf_ns);
}
