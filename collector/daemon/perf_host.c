/*
 * perf_host.c — one sampling event per CPU (the tick's tracepoint or a
 * cpu-clock timer), read by the daemon's loop and routed by pid (see
 * perf_host.h for why and for the model).
 *
 * Invariants:
 *   - cpu[0, ncpu) each have an open fd and a mapped ring of 1 + data_pages
 *     pages; all rings have the same data size.
 *   - A ring's data_tail only moves to a record boundary perf_ring_walk
 *     proved, or to data_head after corrupt framing (counted in bad).
 *   - st.enabled is 1 only when every CPU's event was last enabled, 0 only
 *     when every one was last disabled (a failed switch leaves it as it was).
 *   - Tick mode: every routed sample has period = weight_ns and, when kernel
 *     frames are collected, no frame of the tick's handler (perf_tick_strip).
 * Never: trust data_head or a record size, or read outside a mapping.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include "collector/daemon/perf_host.h"

#define HOST_CHAIN_MAX 256u     /* raw callchain entries kept after a tick strip */

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
    int tick;                   /* 1: samples come from the tick (tk) */
    struct perf_tick tk;
    uint64_t weight_ns;         /* tick mode: a sample's weight, period x tick_ns */
    uint64_t chain[HOST_CHAIN_MAX];     /* tick mode: the stripped callchain */
    struct perf_host_stats st;
};

int perf_host_open(struct perf_host **out, uint32_t freq_hz, uint32_t ring_pages,
                   const struct perf_tick *tick)
{
    *out = NULL;
    if (freq_hz == 0 || freq_hz > PERF_FREQ_MAX || ring_pages == 0 ||
        ring_pages > PERF_RING_PAGES_MAX ||
        (ring_pages & (ring_pages - 1)) != 0 ||
        (tick && (!tick->tp_id || !tick->handler || tick->tick_ns < PERF_TICK_NS_MIN ||
                  tick->tick_ns > PERF_TICK_NS_MAX)))
        return -EINVAL;
    char filter[PERF_TICK_FILTER_MAX];
    uint32_t period = 0;
    if (tick) {
        if (perf_tick_filter(tick, filter, sizeof filter) < 0)
            return -EINVAL;
        period = perf_tick_period(tick->tick_ns, freq_hz);
    }
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
    if (tick) {
        h->tick = 1;
        h->tk = *tick;
        h->weight_ns = (uint64_t)period * tick->tick_ns;
    }
    /* a tick sample's kernel frames can only be kept where the interrupt's
     * entry is known (perf_tick_strip) */
    int kernel = !tick || perf_tick_has_entry(tick), max_stack = 1, first_err = 0;
    for (int c = 0; c < (int)conf; c++) {
        /* kernel frames are given up only at the first CPU: what was
         * given up stays given up for the others */
        int fd = tick ? perf_open_tracepoint(tick->tp_id, period, filter, -1, c, h->ncpu == 0,
                                             &kernel, &max_stack)
                      : perf_open_event(1, freq_hz, 0, 1, -1, c, h->ncpu == 0, &kernel,
                                        &max_stack);
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
    h->st.enabled = 1;          /* perf_open_event opens its events enabled */
    h->st.kernel_frames = kernel;
    h->st.clock = tick ? PERF_HOST_CLOCK_TICK : PERF_HOST_CLOCK_CPU;
    h->st.period_ticks = period;
    h->st.sample_ns = tick ? h->weight_ns : (1000000000ull + freq_hz / 2) / freq_hz;
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

int perf_host_enable(struct perf_host *h, int on)
{
    on = on != 0;
    if (h->st.enabled == on)
        return 0;
    int first_err = 0;
    for (uint32_t i = 0; i < h->ncpu; i++)
        if (ioctl(h->cpu[i].fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) != 0 &&
            !first_err)
            first_err = -errno;
    if (first_err)
        return first_err;
    h->st.enabled = on;
    h->st.switches++;
    return 0;
}

static int on_record(void *ctx, const struct perf_event_header *hd, const uint8_t *rec,
                     size_t len)
{
    struct perf_host *h = ctx;
    if (hd->type == PERF_RECORD_SAMPLE) {
        struct perf_sample s;
        uint64_t type = (h->tick ? PERF_TICK_SAMPLE_TYPE : PERF_D9_SAMPLE_TYPE) |
                        (perf_stack_dwarf() ? PERF_DWARF_SAMPLE_BITS : 0);
        if (perf_parse_sample_as(rec, len, type, &s) != 0) {
            h->st.bad++;
            return 0;
        }
        h->st.samples++;
        h->polled++;
        if (h->tick) {          /* the tick's handler frames off, the weight in ns */
            s.period = h->weight_ns;
            if (h->st.kernel_frames) {
                int unanchored;
                s.nr = perf_tick_strip(&h->tk, s.ips, s.nr, h->chain, HOST_CHAIN_MAX,
                                       &unanchored);
                s.ips = (const uint8_t *)h->chain;
                h->st.unanchored += (uint64_t)unanchored;
            }
        }
        if (h->route(h->route_ctx, &s))
            h->st.routed++;
    } else if (hd->type == PERF_RECORD_LOST) {
        uint64_t n;
        if (perf_parse_lost(rec, len, &n) != 0)
            h->st.bad++;
        else
            h->st.lost += n;
    }
    return 0;                   /* THROTTLE, UNTHROTTLE, ...: nothing to do */
}

long perf_host_poll(struct perf_host *h, perf_host_route_fn route, void *ctx)
{
    h->route = route;
    h->route_ctx = ctx;
    h->polled = 0;
    for (uint32_t i = 0; i < h->ncpu; i++)
        if (perf_ring_consume(h->cpu[i].base, h->page_size, h->data_size, h->scratch, on_record,
                              h) != 0)
            h->st.bad++;        /* corrupt framing: the ring was resynchronised */
    return h->polled;
}

void perf_host_stats(const struct perf_host *h, struct perf_host_stats *out)
{
    *out = h->st;
}
