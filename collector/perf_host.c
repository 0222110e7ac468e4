/*
 * perf_host.c — one cpu-clock sampling event per CPU, read by the daemon's
 * loop and routed by pid (see perf_host.h for why and for the model).
 *
 * Invariants:
 *   - cpu[0, ncpu) each have an open fd and a mapped ring of 1 + data_pages
 *     pages; all rings have the same data size.
 *   - A ring's data_tail only moves to a record boundary perf_ring_walk
 *     proved, or to data_head after corrupt framing (counted in bad).
 * Never: trust data_head or a record size, or read outside a mapping.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "collector/perf_host.h"

struct host_cpu {
    int fd;
    uint8_t *base;              /* perf_event_mmap_page + data */
};

struct perf_host {
    struct host_cpu *cpu;
    uint32_t ncpu;
    size_t page_size, map_len;
    uint64_t data_size;
    uint8_t *scratch;           /* PERF_REC_SCRATCH: a record that wraps */
    perf_host_route_fn route;   /* of the poll in progress */
    void *route_ctx;
    long polled;
    struct perf_host_stats st;
};

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Open the event of one CPU, giving up kernel frames, then max_stack, when
 * refused; what was given up stays given up for the other CPUs. */
static int open_cpu(struct perf_host *h, int cpu, uint32_t freq_hz, int *kernel, int *max_stack)
{
    for (;;) {
        struct perf_event_attr a;
        perf_fill_attr(&a, 1, freq_hz, 0, *kernel, *max_stack);
        a.exclude_idle = 1;     /* the idle task's samples would all be dropped */
        long fd = perf_sys_open(&a, -1, cpu);
        if (fd >= 0) {
            if (!perf_fd_budget_ok((int)fd)) {
                close((int)fd);
                return -EMFILE;
            }
            return (int)fd;
        }
        int e = errno;
        if ((e == EACCES || e == EPERM) && *kernel && h->ncpu == 0) {
            *kernel = 0;        /* maybe only kernel frames are refused */
            continue;
        }
        if (e == EINVAL && *max_stack) {
            *max_stack = 0;
            continue;
        }
        return -e;
    }
}

int perf_host_open(struct perf_host **out, uint32_t freq_hz, uint32_t ring_pages)
{
    *out = NULL;
    if (freq_hz == 0 || freq_hz > PERF_FREQ_MAX || ring_pages == 0 || ring_pages > 1024 ||
        (ring_pages & (ring_pages - 1)) != 0)
        return -EINVAL;
    long conf = sysconf(_SC_NPROCESSORS_CONF);
    if (conf < 1)
        conf = 1;
    if (conf > (long)PERF_HOST_CPUS_MAX)
        conf = PERF_HOST_CPUS_MAX;
    struct perf_host *h = calloc(1, sizeof *h);
    if (!h)
        return -ENOMEM;
    h->cpu = calloc((size_t)conf, sizeof *h->cpu);
    h->scratch = malloc(PERF_REC_SCRATCH);
    if (!h->cpu || !h->scratch) {
        perf_host_close(h);
        return -ENOMEM;
    }
    h->page_size = (size_t)sysconf(_SC_PAGESIZE);
    h->map_len = (1 + (size_t)ring_pages) * h->page_size;
    h->data_size = (uint64_t)ring_pages * h->page_size;
    int kernel = 1, max_stack = 1, first_err = 0;
    for (int c = 0; c < (int)conf; c++) {
        int fd = open_cpu(h, c, freq_hz, &kernel, &max_stack);
        if (fd == -ENODEV || fd == -ENOENT)
            continue;           /* offline CPU */
        if (fd < 0) {
            first_err = fd;
            break;
        }
        uint8_t *base = mmap(NULL, h->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (base == MAP_FAILED) {
            first_err = -errno;
            close(fd);
            break;
        }
        h->cpu[h->ncpu].fd = fd;
        h->cpu[h->ncpu].base = base;
        h->ncpu++;
    }
    /* all or nothing: a host sampler missing some CPUs would silently miss
     * the threads that run there; the per-thread fallback does not */
    if (first_err || h->ncpu == 0) {
        perf_host_close(h);
        return first_err ? first_err : -ENODEV;
    }
    h->st.cpus = h->ncpu;
    h->st.kernel_frames = kernel;
    *out = h;
    return 0;
}

void perf_host_close(struct perf_host *h)
{
    if (!h)
        return;
    for (uint32_t i = 0; i < h->ncpu; i++) {
        munmap(h->cpu[i].base, h->map_len);
        close(h->cpu[i].fd);
    }
    free(h->cpu);
    free(h->scratch);
    free(h);
}

static int on_record(void *ctx, const struct perf_event_header *hd, const uint8_t *rec,
                     size_t len)
{
    struct perf_host *h = ctx;
    if (hd->type == PERF_RECORD_SAMPLE) {
        struct perf_sample s;
        if (perf_parse_sample(rec, len, &s) != 0) {
            h->st.bad++;
            return 0;
        }
        h->st.samples++;
        h->polled++;
        if (h->route(h->route_ctx, &s))
            h->st.routed++;
    } else if (hd->type == PERF_RECORD_LOST) {
        /* header, u64 id, u64 lost, sample_id */
        if (len < sizeof(struct perf_event_header) + 16)
            h->st.bad++;
        else
            h->st.lost += rd64(rec + sizeof(struct perf_event_header) + 8);
    }
    return 0;                   /* THROTTLE, UNTHROTTLE, ...: nothing to do */
}

long perf_host_poll(struct perf_host *h, perf_host_route_fn route, void *ctx)
{
    h->route = route;
    h->route_ctx = ctx;
    h->polled = 0;
    for (uint32_t i = 0; i < h->ncpu; i++) {
        struct perf_event_mmap_page *mp = (struct perf_event_mmap_page *)h->cpu[i].base;
        const uint8_t *data = h->cpu[i].base + h->page_size;
        /* acquire: the record bytes before data_head are visible (pairs
         * with the kernel's smp_wmb before it publishes data_head) */
        uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
        uint64_t tail = __atomic_load_n(&mp->data_tail, __ATOMIC_RELAXED);
        if (head == tail)
            continue;
        uint64_t nt;
        if (perf_ring_walk(data, h->data_size, tail, head, h->scratch, on_record, h, &nt) != 0) {
            h->st.bad++;
            nt = head;          /* resynchronise: skip what we cannot frame */
        }
        /* release: done reading everything before nt; the kernel may
         * overwrite it (pairs with its smp_mb before it reads data_tail) */
        __atomic_store_n(&mp->data_tail, nt, __ATOMIC_RELEASE);
    }
    return h->polled;
}

void perf_host_stats(const struct perf_host *h, struct perf_host_stats *out)
{
    *out = h->st;
}
