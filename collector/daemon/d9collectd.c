/*
 * d9collectd.c — the d9 collector daemon: main(), the context struct and
 * the single-threaded loop that ties the modules together.
 *
 *   loop:  control requests (hello / goodbye / flush / status)
 *          every --scan-ms: scan --shm-dir (discover.c), check traced
 *          processes for exit (proc.c)
 *          drain every ring of every process (drain.c), profile it (prof.c)
 *          rotate segments by size/age (storedir.c), index their blocks a
 *          batch at a time while they are written, finish ended processes
 *          (proc.c)
 *          sleep: paced by pressure (pace.c): 0 while a ring is 1/8 full or
 *          data was left behind, else exponential backoff up to
 *          --poll-max-us capped so the fullest ring stays under a quarter
 *          full at the rate just seen; woken early by the control socket,
 *          a signal or a region's doorbell (bell.c: a producer's ring passed
 *          half full; that region is drained first)
 *
 * What a pass costs when little arrives, so that the collector's work
 * follows the data: the pacing's rate is what the fastest ring received
 * since the previous pass (its head's advance), not its backlog; rings whose
 * header page was never in memory are checked (mincore) only when the
 * region's ring_hint moved and every DRAIN_PROBE_NS (drain.h); the maps of
 * a process are re-read after PROF_MAPS_NS, doubling while they stay the
 * same (prof.h); a process's liveness is one read of /proc/PID/stat. The
 * loop thread and the doorbell listener ask for a short scheduler slice
 * (SLICE_NS, SCHED_OTHER, no privilege, Linux 6.12 or later): on a busy CPU
 * a waking collector then preempts the running task instead of waiting out
 * its slice, with the same share of the CPU.
 *
 * Calls every daemon module; none calls back into this file except through
 * the discover and perf_host callbacks it hands them. Every module runs on
 * this loop's thread, except bell.c's listener thread, which only sleeps on
 * the doorbells and makes an eventfd readable.
 *
 * Signals arrive through a signalfd (no async handlers besides the SIGBUS
 * guard, guard.c). SIGTERM/SIGINT: drain everything, seal and index every
 * open segment, exit 0.
 *
 * The store lock (store_lock, <store>/.lock) is held for the whole run,
 * from before start-up recovery to exit: a second collector on the same
 * store exits 1 with one error line instead of salvaging or writing the
 * first one's files.
 *
 * State: one struct col_ctx, owned by main(). Must never: block on a
 * traced process or a control peer, or exit with data it could have sealed.
 */
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "collector/daemon/bell.h"
#include "collector/daemon/config.h"
#include "collector/daemon/crashpt.h"
#include "collector/ctl/ctl_server.h"
#include "collector/daemon/discover.h"
#include "collector/daemon/drain.h"
#include "collector/daemon/guard.h"
#include "collector/daemon/met.h"
#include "collector/daemon/met_addr.h"
#include "collector/daemon/met_http.h"
#include "collector/daemon/pace.h"
#include "collector/daemon/pidfile.h"
#include "collector/store/ru_pipe.h"
#include "collector/store/store_lock.h"
#include "collector/store/idx.h"
#include "collector/store/idx_read.h"
#include "collector/store/col_log.h"
#include "collector/daemon/perf_host.h"
#include "collector/daemon/unwind.h"
#include "collector/daemon/proc.h"
#include "collector/daemon/prof.h"
#include "collector/daemon/storedir.h"
#include "collector/daemon/trigd.h"
#include "collector/daemon/flight.h"
#include "collector/daemon/ship.h"
#include "collector/s3/s3_cfg.h"
#include "shm/clock.h"

#define PROG "d9collectd"
#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define SHM_DIR_MODE_ROOT 01777     /* a --shm-dir created by root: like /dev/shm */
#define SHM_DIR_MODE_USER 0700      /* created by another user: theirs alone */
#define HOST_CAL_MS 20              /* collector's own TSC calibration at start-up */
#define SLICE_NS 100000u            /* the scheduler slice asked for (EEVDF's minimum) */

struct col_ctx {
    struct config cfg;
    struct storedir store;
    struct flight flight;       /* --retain triggered (flight.h) */
    int store_lock;             /* store_lock fd, held until exit */
    int perf_keeper;            /* perf_callchain_keeper fd, -1 when none */
    struct perf_host *perf_host;    /* per-CPU on-CPU sampling, NULL: per thread or off */
    struct bell *bell;              /* doorbell listener, NULL: timer only */
    struct ctl_server ctl;
    struct pidfile pidfile;         /* --pidfile as created by us */
    struct discover disc;
    struct proc *procs;
    struct shm_clock_cal host_cal;
    struct pace backoff;
    uint64_t last_pass_ns;          /* when the previous drain pass began */
    uint64_t timer_slack_ns;        /* this thread's timer slack as last set, 0: not set */
    int sigfd;
    int stop;
    uint64_t start_ns, next_scan_ns;
    /* totals of processes that already ended */
    uint64_t done_records, done_bytes, done_lost, done_quarantined_rings;
    uint64_t done_bad_stamps, done_bad_counters;
    uint64_t quarantined_regions;
    struct col_ratelimit scan_rl, ctl_rl;
    struct ship *ship;              /* --ship upload threads, NULL: off (or failed to start) */
    struct ship_drain_load drain_load;  /* the loop's load, for the upload threads */
    char ship_error[512];           /* why shipping could not start */
    struct ship_stats ship_st;      /* for the status reply */
    struct met met;                 /* --metrics: counters and the last render */
    struct met_http *met_http;      /* --metrics server, NULL: off */
    uint64_t met_next_ns;           /* the next render */
    uint64_t passes, pass_ns;       /* drain passes, the last one's duration */
};

/* ---- process list ---------------------------------------------------------------- */

static struct proc *find_proc(struct col_ctx *x, uint32_t pid)
{
    for (struct proc *p = x->procs; p; p = p->next)
        if (p->pid == pid)
            return p;
    return NULL;
}

static int known_cb(void *arg, uint32_t pid, uint64_t start)
{
    struct col_ctx *x = arg;
    for (struct proc *p = x->procs; p; p = p->next)
        if (p->pid == pid && p->start_time == start)
            return 1;
    return 0;
}

/* The perf rings' size factor, per CPU and per thread alike: 4 per 16 KiB
 * of stack copy a dwarf sample carries (a power of two, at most 16), 1
 * without. */
_Static_assert(PERF_RING_PAGES_DEFAULT * 16u <= PERF_RING_PAGES_MAX, "a thread's ring scaled x16");
static uint32_t dwarf_ring_factor(void)
{
    if (!perf_stack_dwarf())
        return 1;
    uint32_t f = 4;
    while (f < 16 && f * 4096u < perf_stack_bytes())
        f *= 2;
    return f;
}

static int adopt_cb(void *arg, const struct discover_candidate *c)
{
    struct col_ctx *x = arg;
    struct proc *p = NULL;
    int rc = proc_adopt(c->path, c->name, c->expected_uid, &x->store, &x->host_cal, &p);
    if (rc == -EAGAIN && !c->alive) {
        /* still INIT (or not even sized) and its process is gone: it died
         * while laying the region out, before READY published anything.
         * The owner check already passed, so the file is that process's. */
        if (discover_remove(c) == 0)
            col_info("removed region %s: pid %u died before it was ready", c->path, c->pid);
        return -ENOENT;
    }
    if (rc) {
        if (rc != -EAGAIN && rc != -ENOENT)
            col_debug("cannot adopt %s: %s", c->path, strerror(-rc));
        return rc;
    }
    p->next = x->procs;
    x->procs = p;
    if (x->met_http && !(p->met = met_proc_new(&x->met, p->pid, p->geo.comm)))
        col_warn("pid %u: out of memory: no metrics for this process", p->pid);
    if (!c->alive)
        p->ended = 1;
    else if (x->bell && !p->quarantined &&
             (rc = bell_watch(x->bell, p, p->pid, p->region.base, p->region.size)))
        col_debug("pid %u: doorbell not watched: %s", p->pid, strerror(-rc));
    struct perf_config pc;                  /* profiler: perf sampling + maps snapshots */
    perf_config_default(&pc);
    pc.freq_hz = x->cfg.perf_freq;
    pc.switch_period = x->cfg.switch_period;
    pc.host_cpu = x->perf_host != NULL;
    /* a DWARF sample carries its stack copy: the thread's ring holds as
     * many of them as the host's rings do (mmap halves it where the lock
     * limit refuses) */
    pc.ring_pages = PERF_RING_PAGES_DEFAULT * dwarf_ring_factor();
    prof_attach(p, &pc);
    col_info("adopted pid %u (%s, uid %u): %u rings of %u KiB%s", p->pid, p->geo.comm, p->uid,
             p->geo.ring_count, p->geo.ring_data_size / 1024,
             c->alive ? "" : "; the process is already gone");
    return 0;
}

static void scan(struct col_ctx *x)
{
    int rc = discover_scan(&x->disc, known_cb, adopt_cb, x);
    if (rc < 0) {
        col_log_limited(&x->scan_rl, COL_LOG_WARN, "cannot scan %s: %s", x->disc.dir, strerror(-rc));
    }
    for (struct proc *p = x->procs; p; p = p->next) {
        if (p->ended)
            continue;
        if (!p->quarantined)
            proc_refresh_header(p);
        if (!proc_alive(p) || proc_execd(p))
            p->ended = 1;
    }
}

/* A process's own counters into its metrics (met.h), before each render
 * and at its end. */
static void met_sync(struct proc *p)
{
    struct met_proc *m = p->met;
    if (!m)
        return;
    m->records = p->records;
    m->bytes = p->bytes_written;
    m->lost_full = p->drops.full;
    m->lost_mismatch = p->drops.mismatch;
    m->lost_too_big = p->drops.too_big;
    m->lost_no_ring = p->drops.no_ring;
    m->bad_stamps = p->ts_bad;
}

static void retire(struct col_ctx *x, struct proc *p)
{
    met_sync(p);
    met_proc_ended(p->met, shm_mono_ns());
    p->met = NULL;
    x->met_next_ns = 0;     /* the end is published in this pass, not up to MET_PUBLISH_NS later */
    struct proc **pp = &x->procs;
    while (*pp && *pp != p)
        pp = &(*pp)->next;
    if (*pp)
        *pp = p->next;
    x->done_records += p->records;
    x->done_bytes += p->bytes_written;
    x->done_lost += p->lost;
    x->done_quarantined_rings += p->quarantined_rings;
    x->done_bad_stamps += p->ts_bad;
    x->done_bad_counters += p->counters_bad;
    x->quarantined_regions += p->quarantined;
    if (x->bell)
        bell_forget(x->bell, p, !p->quarantined);
    proc_free(p);
}

static void finish_ended(struct col_ctx *x)
{
    /* drain_all just read the host sampler in this pass, after scan and
     * control set the ended flags */
    struct proc *p = x->procs;
    while (p) {
        struct proc *next = p->next;
        if (p->ended && proc_finish(p, &x->store) == 0)
            retire(x, p);
        p = next;
    }
}

/* perf_host route: the sample goes to the live process of its pid (an
 * ended one with the same pid is older), else to an ended one that has not
 * been finished yet. */
static int route_sample(void *arg, const struct perf_sample *s)
{
    struct col_ctx *x = arg;
    struct proc *ended = NULL;
    for (struct proc *p = x->procs; p; p = p->next) {
        if (p->pid != s->pid || p->quarantined)
            continue;
        if (!p->ended)
            return prof_add_cpu_sample(p, s);
        ended = p;
    }
    return ended ? prof_add_cpu_sample(ended, s) : 0;
}

/* Move the host sampler's samples to their processes: before every drain
 * pass, and before a process's final pass (it ended: all its samples are
 * in the per-CPU rings by now). */
static void host_samples(struct col_ctx *x)
{
    if (x->perf_host)
        perf_host_poll(x->perf_host, route_sample, x);
}

/* The host sampler's events sample only while some traced process is live:
 * a per-CPU event interrupts every busy CPU whoever runs there, so with
 * nothing to profile an idle collector would cost each CPU of the host its
 * samples for nothing. Called
 * after every pass; it makes no system call unless the answer changed. */
static void host_follow(struct col_ctx *x)
{
    if (!x->perf_host)
        return;
    int live = 0;
    for (struct proc *p = x->procs; p && !live; p = p->next)
        live = !p->ended && !p->quarantined;
    struct perf_host_stats hs;
    perf_host_stats(x->perf_host, &hs);
    if (hs.enabled == live)
        return;
    int rc = perf_host_enable(x->perf_host, live);
    if (rc)
        col_log_limited(&x->scan_rl, COL_LOG_WARN, "perf: cannot switch the per-CPU events %s: %s",
                        live ? "on" : "off", strerror(-rc));
    else
        col_info("perf: per-CPU sampling %s", live ? "on: a traced process is live"
                                                   : "off: no traced process is live");
}


/* The host sampler: per-CPU events on the tick when it works (perf_tick.h),
 * else on a cpu-clock timer; per-thread events when per-CPU ones are not
 * permitted (unless --perf-scope cpu). Returns 0 or EXIT_RUNTIME. */
static int host_open(struct col_ctx *x)
{
    struct perf_tick tick;
    const struct perf_tick *use = NULL;
    char why[256] = "";
    int rc;
    if (x->cfg.perf_clock != CONFIG_PERF_CLOCK_CPU) {
        rc = perf_tick_probe(&tick, NULL, why, sizeof why);
        if (rc == 0)
            use = &tick;
        else if (x->cfg.perf_clock == CONFIG_PERF_CLOCK_TICK) {
            col_err("--perf-clock tick: the scheduler tick cannot be sampled: %s", why);
            return EXIT_RUNTIME;
        }
    }
    /* a dwarf sample carries a stack copy: rings 4 times larger per 16 KiB of it */
    rc = perf_host_open(&x->perf_host, x->cfg.perf_freq,
                        PERF_HOST_RING_PAGES_DEFAULT * dwarf_ring_factor(), use);
    if (rc && use && x->cfg.perf_clock == CONFIG_PERF_CLOCK_TICK) {
        col_err("--perf-clock tick: cannot open per-CPU tracepoint events: %s", strerror(-rc));
        return EXIT_RUNTIME;
    }
    if (rc && use) {
        snprintf(why, sizeof why, "per-CPU tracepoint events: %s", strerror(-rc));
        use = NULL;
        rc = perf_host_open(&x->perf_host, x->cfg.perf_freq,
                            PERF_HOST_RING_PAGES_DEFAULT * dwarf_ring_factor(), NULL);
    }
    if (rc && x->cfg.perf_scope == CONFIG_PERF_SCOPE_CPU) {
        col_err("--perf-scope cpu: cannot open per-CPU perf events: %s (needs CAP_PERFMON, "
                "root or /proc/sys/kernel/perf_event_paranoid <= 0)", strerror(-rc));
        return EXIT_RUNTIME;
    }
    if (rc) {
        col_info("perf: per-CPU events not permitted (%s): sampling per thread", strerror(-rc));
        return 0;
    }
    struct perf_host_stats hs;
    perf_host_stats(x->perf_host, &hs);
    const char *frames = hs.kernel_frames ? ", kernel stacks" : ", user stacks only";
    if (use)
        col_info("perf: sampling %u CPUs on the scheduler tick, 1 tick in %u: %.1f Hz "
                 "(--perf-freq %u, tick %.1f ms; per-CPU events, on while a traced process "
                 "is live)%s", hs.cpus, hs.period_ticks, 1e9 / (double)hs.sample_ns,
                 x->cfg.perf_freq, (double)tick.tick_ns / 1e6, frames);
    else
        col_info("perf: sampling %u CPUs at %u Hz on cpu-clock timers (per-CPU events, on while "
                 "a traced process is live)%s%s%s", hs.cpus, x->cfg.perf_freq, frames,
                 why[0] ? "; not on the tick: " : "", why);
    host_follow(x);             /* nothing is traced yet: off until the first adoption */
    return 0;
}

/* What a pass saw, for pacing the next one (pace_by_pressure). */
struct pass_pressure {
    uint64_t fill, size;        /* the most bytes one ring received since the previous
                                 * pass, and its ring's size */
    int more;                   /* some ring still had data when the pass stopped */
    int fresh;                  /* a thread's first records were read */
};

/* The regions whose doorbells rang, before the pass over all of them: a
 * ring past half full goes first. Each ring is paid for by the records
 * drained from its region (bell_judge: a region ringing without data is
 * muted). */
static void drain_rung(struct col_ctx *x, uint64_t now)
{
    void *rung[64];
    size_t n = bell_collect(x->bell, now, rung, sizeof rung / sizeof rung[0]);
    for (size_t i = 0; i < n; i++) {
        struct proc *p = rung[i];      /* watched until retire(): still listed */
        if (p->ended || p->quarantined)
            continue;
        struct drain_result res = { 0 };
        drain_proc(p, &x->store, now, 0, &res);
        p->fill_rung = res.full_fill;
        bell_judge(x->bell, p, p->records, p->geo.ring_data_size, now);
    }
}

/* One pass over every live process. */
static void drain_all(struct col_ctx *x, uint64_t now, struct pass_pressure *pp)
{
    *pp = (struct pass_pressure){ 0 };
    host_samples(x);
    for (struct proc *p = x->procs; p; p = p->next) {
        if (p->ended || p->quarantined)
            continue;
        struct drain_result res = { 0 };
        drain_proc(p, &x->store, now, 0, &res);
        prof_pass(p, &x->store, now, 0);   /* profiler: throttled inside */
        if (res.more)
            pp->more = 1;
        if (res.fresh)
            pp->fresh = 1;
        /* what arrived since the previous pass: in this one, and in the
         * doorbell's pass just before it (a bound: the two maxima may be
         * of different rings) */
        uint64_t fill = res.full_fill + p->fill_rung;
        p->fill_rung = 0;
        /* fill/size > pp->fill/size, without division */
        if (fill && (pp->size == 0 || fill * pp->size > pp->fill * res.full_size)) {
            pp->fill = fill;
            pp->size = res.full_size;
        }
    }
}

/* The idle backoff's ceiling: PACE_BELL_MAX_US while every live region
 * says its producers ring (D9_REGION_F_BELL) and its doorbell is watched,
 * else --poll-max-us. Also stops watching quarantined regions. */
static void pace_ceiling(struct col_ctx *x)
{
    int covered = x->bell != NULL;
    for (struct proc *p = x->procs; p && x->bell; p = p->next) {
        if (p->quarantined)     /* its shm is off limits: stop reading its doorbell */
            bell_forget(x->bell, p, 0);
        else if (!p->ended && covered)
            covered = (p->geo.flags & D9_REGION_F_BELL) && bell_covers(x->bell, p);
    }
    uint32_t max = x->cfg.poll_max_us;
    if (covered && max < PACE_BELL_MAX_US)
        max = PACE_BELL_MAX_US;
    x->backoff.max_us = max;
    if (x->backoff.cur_us > max)    /* a region stopped ringing: no sleep past the old ceiling */
        x->backoff.cur_us = max;
}

static void rotate(struct col_ctx *x, uint64_t now)
{
    uint64_t max_bytes = (uint64_t)x->cfg.segment_mb << 20;
    uint64_t max_age = flight_segment_age_ns(&x->flight, &x->cfg.trig,
                                             (uint64_t)x->cfg.segment_seconds * 1000000000ULL);
    if (!storedir_writable(&x->store, now))
        return;
    for (struct proc *p = x->procs; p; p = p->next) {
        if (!p->writer)
            continue;
        if (storedir_rotate_due(seg_writer_bytes(p->writer), seg_writer_opened_ns(p->writer), now,
                                max_bytes, max_age))
            drain_seal(p, &x->store);
        else    /* block rows a batch at a time, not all at the seal */
            storedir_index_blocks(&x->store, p->writer, STOREDIR_INDEX_BATCH);
    }
}

/* Drain p completely and seal its segment. 0 or a write error. */
static int flush_proc(struct col_ctx *x, struct proc *p)
{
    host_samples(x);
    if (!p->quarantined) {
        struct drain_result res = { 0 };
        drain_proc_all(p, &x->store, &res);
        if (res.write_failed)
            return -EIO;
    }
    return drain_seal(p, &x->store);
}

/* ---- control requests --------------------------------------------------------------- */

static int ring_total(const struct col_ctx *x, uint64_t *quarantined)
{
    uint64_t q = x->done_quarantined_rings;
    for (const struct proc *p = x->procs; p; p = p->next)
        q += p->quarantined_rings;
    *quarantined = q;
    return 0;
}

static uint64_t count_segments(struct col_ctx *x)
{
    uint64_t n = 0;
    (void)idx_read_segment_count(x->store.idx, &n);
    return n;
}

/* The caller's view (ctl_server_may_see): root every process, a user its
 * own, a caller without credentials none; the collector's totals for all. */
static void handle_status(struct col_ctx *x, const struct ctl_server_msg *m,
                          D9__Reply *rep, D9__CollectorStatus *cs, char *msg, size_t cap)
{
    const D9__StatusRequest *sr = m->req->status;
    d9__collector_status__init(cs);
    cs->pid = (uint32_t)getpid();
    cs->version = (char *)D9_VERSION;
    cs->store = x->store.dir;
    cs->uptime_ns = shm_mono_ns() - x->start_ns;
    cs->records = x->done_records;
    cs->bytes_written = x->done_bytes;
    cs->lost = x->done_lost;
    cs->store_bytes = x->store.indexed_bytes;
    cs->bad_stamps = x->done_bad_stamps;
    cs->bad_counters = x->done_bad_counters;
    size_t n = 0;
    for (struct proc *p = x->procs; p; p = p->next) {
        cs->bad_stamps += p->ts_bad;
        cs->bad_counters += p->counters_bad;
        cs->records += p->records;
        cs->bytes_written += p->bytes_written;
        cs->lost += p->lost;
        cs->store_bytes += seg_writer_bytes(p->writer);
        n++;
    }
    ring_total(x, &cs->quarantined_rings);
    cs->segments = count_segments(x);
    cs->rejected_regions = x->disc.rejected_count;
    cs->write_errors = x->store.write_errors;
    cs->dropped_records = x->store.dropped_records;
    cs->malformed_messages = x->ctl.malformed;
    cs->ctl_connections = ctl_server_connections(&x->ctl);
    cs->ctl_refused = x->ctl.refused;
    cs->ctl_closed = x->ctl.closed;
    cs->writes_failing = x->store.failing != 0;
    if (x->store.failing)
        cs->write_error = (char *)strerror(-x->store.last_error);
    cs->caller_unknown = !m->cred_known;
    cs->own_only = !m->cred_known || m->uid != 0;
    cs->caller_uid = m->uid;
    cs->flight = x->flight.on != 0;
    cs->flight_settled = x->flight.dropped_segments;
    cs->flight_windows = x->flight.windows_cut;
    cs->flight_kept_bytes = x->flight.kept_bytes;
    cs->flight_dropped_bytes = x->flight.dropped_bytes;
    if (x->cfg.ship[0]) {
        cs->ship_url = x->cfg.ship;
        cs->ship_evicted_unshipped = x->store.evicted_unshipped;
        cs->ship_error = x->ship_error;
        if (x->ship) {
            ship_stats(x->ship, &x->ship_st);
            cs->ship_backlog = x->ship_st.backlog;
            cs->ship_backlog_bytes = x->ship_st.backlog_bytes;
            cs->ship_shipped = x->ship_st.shipped;
            cs->ship_shipped_bytes = x->ship_st.shipped_bytes;
            cs->ship_failed = x->ship_st.failed;
            cs->ship_failures = x->ship_st.failures;
            cs->ship_catching_up = x->ship_st.catching_up != 0;
            cs->ship_waiting_for_drain = x->ship_st.waiting_for_drain != 0;
            cs->ship_parquet = x->cfg.ship_parquet == CONFIG_SHIP_PARQUET_ON;
            cs->ship_pq_staged = x->ship_st.pq_staged;
            cs->ship_pq_staged_bytes = x->ship_st.pq_staged_bytes;
            cs->ship_pq_segments = x->ship_st.pq_segments;
            cs->ship_pq_uploaded = x->ship_st.pq_uploaded;
            cs->ship_pq_skipped = x->ship_st.pq_skipped;
            cs->ship_pq_failed = x->ship_st.pq_failed;
            cs->ship_error = x->ship_st.last_error;
        }
    }
    cs->processes = n ? calloc(n, sizeof *cs->processes) : NULL;
    if (n && !cs->processes) {
        rep->error = -ENOMEM;
        return;
    }
    int hidden = 0;
    for (struct proc *p = x->procs; p; p = p->next) {
        if (sr->pid && p->pid != sr->pid)
            continue;
        if (!ctl_server_may_see(m, p->uid)) {
            hidden++;
            continue;
        }
        D9__ProcessStatus *ps = calloc(1, sizeof *ps);
        if (!ps) {
            rep->error = -ENOMEM;
            break;
        }
        cs->processes[cs->n_processes++] = ps;
        if (proc_status(p, ps)) {
            rep->error = -ENOMEM;
            break;
        }
        cs->lost += ps->lost - p->lost;     /* drops the rings counted since the last pass */
    }
    if (sr->pid && cs->n_processes == 0) {
        rep->error = hidden ? -EPERM : -ESRCH;
        if (hidden && !m->cred_known)
            snprintf(msg, cap, "pid %u: the collector cannot tell who is asking (not an "
                     "ipc:// endpoint), so it shows no process", sr->pid);
        else if (hidden)
            snprintf(msg, cap, "pid %u belongs to another user: uid %u sees only its own "
                     "processes", sr->pid, m->uid);
        else
            snprintf(msg, cap, "no such traced process");
        rep->message = msg;
    }
    rep->status = cs;
}

static void free_status(D9__CollectorStatus *cs)
{
    for (size_t i = 0; i < cs->n_processes; i++) {
        proc_status_free(cs->processes[i]);
        free(cs->processes[i]);
    }
    free(cs->processes);
}

/* 1 when the asker's store (its realpath, untrusted text) is the one this
 * collector writes. Compared as text: the asker's path is never opened. */
static int same_store(const struct col_ctx *x, const char *asked)
{
    char mine[PATH_MAX];
    if (!realpath(x->store.dir, mine))
        return strcmp(x->store.dir, asked) == 0;
    return strcmp(mine, asked) == 0;
}

/* 1 when p's open segment is to be sealed by a flush with min_age_ns (0:
 * every one; else only a segment opened at least that long ago). */
static int flush_due(const struct proc *p, uint64_t min_age_ns, uint64_t now)
{
    if (min_age_ns == 0)
        return 1;
    uint64_t opened = seg_writer_opened_ns(p->writer);
    return p->writer && now >= opened && now - opened >= min_age_ns;
}

/* Only the processes the caller may see (ctl_server_may_see) are flushed.
 * A reader's refresh (store set, min_age_ns) flushes nothing for another
 * store and seals only segments old enough. */
static void handle_flush(struct col_ctx *x, const struct ctl_server_msg *m, D9__Reply *rep,
                         char *msg, size_t cap)
{
    const D9__Flush *f = m->req->flush;
    if (f->store && *f->store && !same_store(x, f->store)) {
        rep->error = -EXDEV;
        snprintf(msg, cap, "this collector writes another store: nothing flushed");
        rep->message = msg;
        return;
    }
    /* pick up regions and exits first, so "flush after the workload ran" sees them */
    scan(x);
    uint64_t now = shm_mono_ns();
    int failed = 0, n = 0, hidden = 0;
    for (struct proc *p = x->procs; p; p = p->next) {
        if (f->pid && p->pid != f->pid)
            continue;
        if (!ctl_server_may_see(m, p->uid)) {
            hidden++;
            continue;
        }
        n++;
        if (!p->ended && flush_due(p, f->min_age_ns, now) && flush_proc(x, p))
            failed++;
    }
    struct proc *p = x->procs;
    while (p) {
        struct proc *next = p->next;
        if (p->ended && (!f->pid || p->pid == f->pid) && ctl_server_may_see(m, p->uid)) {
            if (proc_finish(p, &x->store) == 0)
                retire(x, p);
            else
                failed++;
        }
        p = next;
    }
    if (!m->cred_known) {
        rep->error = -EPERM;
        snprintf(msg, cap, "the collector cannot tell who is asking (not an ipc:// endpoint): "
                 "nothing flushed");
    } else if (f->pid && n == 0 && hidden) {
        rep->error = -EPERM;
        snprintf(msg, cap, "pid %u belongs to another user: uid %u may flush only its own "
                 "processes", f->pid, m->uid);
    } else if (f->pid && n == 0) {
        rep->error = -ESRCH;
        snprintf(msg, cap, "pid %u is not traced by this collector", f->pid);
    } else if (failed) {
        rep->error = -EIO;
        snprintf(msg, cap, "%d of %d processes could not be flushed (store write errors; "
                 "see the collector log)", failed, n);
    } else {
        char only[64] = "";
        if (m->uid != 0 && !f->pid)
            snprintf(only, sizeof only, " of uid %u (a user flushes only its own)", m->uid);
        snprintf(msg, cap, "flushed %d process%s%s", n, n == 1 ? "" : "es", only);
    }
    rep->message = msg;
}

/* d9 trigger --pid: a trigger of a traced process the caller may see, at
 * the collector's now (trigd.h). */
static void handle_trigger(struct col_ctx *x, const struct ctl_server_msg *m, D9__Reply *rep,
                           char *msg, size_t cap)
{
    const D9__Trigger *t = m->req->trigger;
    struct proc *p = t->pid ? find_proc(x, t->pid) : NULL;
    if (!m->cred_known) {
        rep->error = -EPERM;
        snprintf(msg, cap, "the collector cannot tell who is asking (not an ipc:// endpoint): "
                 "no trigger");
    } else if (!p || p->ended) {
        rep->error = -ESRCH;
        snprintf(msg, cap, "pid %u is not a live process traced by this collector", t->pid);
    } else if (!ctl_server_may_see(m, p->uid)) {
        rep->error = -EPERM;
        snprintf(msg, cap, "pid %u belongs to another user: uid %u may trigger only its own "
                 "processes", t->pid, m->uid);
    } else {
        struct trig_win w;
        int v = trigd_fire(p->pid, p->process_id, shm_mono_ns(), TRIGD_SRC_SHELL,
                           t->reason ? t->reason : "", &w);
        if (w.t1_ns)
            snprintf(msg, cap, "trigger of pid %u: %s, keeping %" PRIu64 "..%" PRIu64, p->pid,
                     trigd_verdict_name(v), w.t0_ns, w.t1_ns);
        else
            snprintf(msg, cap, "trigger of pid %u: %s", p->pid, trigd_verdict_name(v));
    }
    rep->message = msg;
}

static void handle_goodbye(struct col_ctx *x, const struct ctl_server_msg *m)
{
    const D9__Goodbye *g = m->req->goodbye;
    struct proc *p = find_proc(x, g->pid);
    /* only the owner (or root) says goodbye for a process */
    if (!p || p->start_time != g->start_time || p->ended || !ctl_server_may_see(m, p->uid))
        return;
    /* a claim, not a fact: believe it only if the region says CLOSED or the
     * process is gone */
    if (!p->quarantined)
        proc_refresh_header(p);
    if (p->region_state == D9_REGION_CLOSED || !proc_alive(p)) {
        p->goodbye = 1;
        if (p->region_state == D9_REGION_CLOSED)
            p->exit_code = g->exit_code;
        p->ended = 1;
    }
}

static void handle_hello(struct col_ctx *x, const D9__Hello *h)
{
    if (!h->region_path)
        return;
    const char *base = strrchr(h->region_path, '/');
    base = base ? base + 1 : h->region_path;
    /* only a file name in our own --shm-dir is ever looked at */
    discover_one(&x->disc, base, known_cb, adopt_cb, x);
}

static void control(struct col_ctx *x)
{
    struct ctl_server_msg m;
    int rc;
    while ((rc = ctl_server_recv(&x->ctl, &m)) == 1) {
        D9__Reply rep = D9__REPLY__INIT;
        D9__CollectorStatus cs;
        int have_status = 0;
        char msg[256] = "";
        switch (m.req->body_case) {
        case D9__REQUEST__BODY_HELLO:
            handle_hello(x, m.req->hello);
            break;
        case D9__REQUEST__BODY_GOODBYE:
            handle_goodbye(x, &m);
            break;
        case D9__REQUEST__BODY_FLUSH:
            handle_flush(x, &m, &rep, msg, sizeof msg);
            break;
        case D9__REQUEST__BODY_TRIGGER:
            handle_trigger(x, &m, &rep, msg, sizeof msg);
            break;
        case D9__REQUEST__BODY_STATUS:
            handle_status(x, &m, &rep, &cs, msg, sizeof msg);
            have_status = 1;
            break;
        default:
            break;
        }
        ctl_server_reply(&x->ctl, &m, &rep);
        if (have_status)
            free_status(&cs);
        ctl_server_msg_done(&m);
    }
    if (rc < 0) {
        col_log_limited(&x->ctl_rl, COL_LOG_WARN, "control socket: %s", strerror(-rc));
    }
}

/* ---- start-up and shutdown -------------------------------------------------------- */

static int open_signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0)
        return -errno;
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);   /* a file size limit is a write error (EFBIG), not death */
    int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

static void read_signals(struct col_ctx *x)
{
    struct signalfd_siginfo si;
    while (read(x->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
            col_info("%s received: draining and sealing", strsignal((int)si.ssi_signo));
            x->stop = 1;
        } else {
            col_info("%s ignored (configuration is read at start-up only)",
                     strsignal((int)si.ssi_signo));
        }
    }
}

static int shutdown_all(struct col_ctx *x)
{
    int failed = 0;
    scan(x);
    host_samples(x);
    for (struct proc *p = x->procs; p; p = p->next)
        if (!p->ended && flush_proc(x, p))
            failed++;
    struct proc *p = x->procs;
    while (p) {
        struct proc *next = p->next;
        if (p->ended) {
            if (proc_finish(p, &x->store) == 0)
                retire(x, p);
            else
                failed++;
        }
        p = next;
    }
    while (x->procs) {
        if (x->procs->writer) {
            /* unsealed because of write errors: unpublished records are still in
             * the ring, the rest is in the temp file, salvaged at the next start */
            col_warn("pid %u: segment %s could not be sealed; left for salvage at the next "
                     "start", x->procs->pid, seg_writer_path(x->procs->writer));
            proc_abandon_writer(x->procs);
        }
        retire(x, x->procs);
    }
    return failed;
}

/* Sleep up to us (not past the next scan) or until a control message, a
 * signal or a doorbell arrives; *ctl, *sig and *bell say whether those fds
 * became readable. */
static void sleep_us(struct col_ctx *x, uint32_t us, int *ctl, int *sig, int *bell)
{
    struct pollfd fds[3] = {
        { .fd = x->ctl.fd, .events = POLLIN },
        { .fd = x->sigfd, .events = POLLIN },
        { .fd = x->bell ? bell_fd(x->bell) : -1, .events = POLLIN },
    };
    /* do not sleep past the next scan */
    uint64_t now = shm_mono_ns();
    uint64_t until = now + (uint64_t)us * 1000u;
    if (until > x->next_scan_ns)
        until = x->next_scan_ns > now ? x->next_scan_ns : now;
    /* wake by until, at the first interrupt near its end (pace_sleep_window) */
    uint64_t req, slack;
    pace_sleep_window(until - now, &req, &slack);
    /* A slack smaller than the window still wakes by until (request the
     * rest of the window): keep it unless the window is 4x wider, so
     * sleeps of varying length do not make a prctl each */
    uint64_t cur = x->timer_slack_ns;
    if (cur && slack > cur && slack < 4 * cur)
        req = until - now - cur;
    else if (slack != cur)
        x->timer_slack_ns = prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0) == 0 ? slack : 0;
    struct timespec ts = { .tv_sec = (time_t)(req / 1000000000u),
                           .tv_nsec = (long)(req % 1000000000u) };
    if (ppoll(fds, 3, &ts, NULL) < 0) {
        *ctl = *sig = *bell = 1;    /* EINTR or worse: look at all */
        return;
    }
    *ctl = fds[0].revents != 0;
    *sig = fds[1].revents != 0;
    *bell = fds[2].revents != 0;
}

/* --metrics: every MET_PUBLISH_NS, the counters and the collector's health
 * rendered (met.h) and offered to the HTTP thread (met_http.h); a publish
 * that finds a request copying the text is skipped: the next one comes. */
static void metrics_publish(struct col_ctx *x, uint64_t now)
{
    if (!x->met_http || now < x->met_next_ns)
        return;
    x->met_next_ns = now + MET_PUBLISH_NS;
    struct met_health h = { 0 };
    h.uptime_ns = now - x->start_ns;
    h.records = x->done_records;
    h.bytes_written = x->done_bytes;
    h.lost = x->done_lost;
    h.rings_quarantined = x->done_quarantined_rings;
    h.regions_quarantined = x->quarantined_regions;
    h.store_bytes = x->store.indexed_bytes;
    for (struct proc *p = x->procs; p; p = p->next) {
        met_sync(p);
        h.processes += !p->ended;
        h.rings_in_use += p->rings_in_use;
        h.rings_quarantined += p->quarantined_rings;
        h.regions_quarantined += p->quarantined;
        h.lag_bytes += p->lag_bytes;
        h.records += p->records;
        h.bytes_written += p->bytes_written;
        h.lost += p->lost;
        h.store_bytes += seg_writer_bytes(p->writer);
    }
    h.regions_rejected = x->disc.rejected_count;
    h.pass_ns = x->pass_ns;
    h.passes = x->passes;
    h.segments_sealed = x->store.segments_sealed;
    h.write_errors = x->store.write_errors;
    h.dropped_records = x->store.dropped_records;
    h.flight = x->flight.on;
    h.flight_settled = x->flight.dropped_segments;
    h.flight_windows = x->flight.windows_cut;
    h.flight_kept_bytes = x->flight.kept_bytes;
    h.flight_dropped_bytes = x->flight.dropped_bytes;
    for (int s = 0; s < TRIGD_SRC_COUNT; s++)
        for (int v = 0; v < (int)TRIGD_VERDICT_COUNT; v++)
            h.triggers[s][v] = trigd_count(s, v);
    if (x->ship) {
        ship_stats(x->ship, &x->ship_st);
        h.shipping = 1;
        h.ship_backlog = x->ship_st.backlog;
        h.ship_backlog_bytes = x->ship_st.backlog_bytes;
        h.ship_shipped = x->ship_st.shipped;
        h.ship_shipped_bytes = x->ship_st.shipped_bytes;
        h.ship_failed = x->ship_st.failed;
        h.ship_failures = x->ship_st.failures;
    }
    met_prune(&x->met, now);
    if (met_render(&x->met, &h)) {
        col_log_limited(&x->scan_rl, COL_LOG_WARN, "metrics: out of memory while rendering");
        return;
    }
    (void)met_http_publish(x->met_http, &x->met.text.buf, &x->met.text.len, &x->met.text.cap);
}

/* --metrics: the HTTP server, after the signal mask (its thread inherits
 * it: signals stay with the signalfd). 0 or -1 after one error line. */
static int metrics_open(struct col_ctx *x)
{
    met_init(&x->met);
    if (!x->cfg.metrics[0])
        return 0;
    struct sockaddr_in sin;
    char err[256];
    if (met_addr_parse(x->cfg.metrics, &sin)) {     /* config_set checked it */
        col_err("--metrics %s: %s", x->cfg.metrics, MET_ADDR_EXPECT);
        return -1;
    }
    if (met_http_start(&x->met_http, &sin, err, sizeof err)) {
        col_err("--metrics %s: cannot listen: %s", x->cfg.metrics, err);
        return -1;
    }
    char addr[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &sin.sin_addr, addr, sizeof addr);
    if (!met_addr_loopback(&sin))
        col_warn("--metrics: listening on %s, not loopback: anyone who can reach it can read "
                 "the traced processes' names and counters (no authentication, no encryption)",
                 addr);
    col_info("metrics: http://%s:%u%s", addr, met_http_port(x->met_http), MET_HTTP_PATH);
    return 0;
}

static void run(struct col_ctx *x)
{
    uint64_t scan_ns = (uint64_t)x->cfg.scan_ms * 1000000u;
    /* After a sleep, the signalfd and the control socket are read only if
     * ppoll saw them readable: most passes of a traced host are timer
     * wake-ups, and those two reads were two of a pass's five syscalls.
     * (The control server's epoll set stays readable while it has work,
     * its own buffers included.) A pass that follows another without
     * sleeping looks at both. */
    int ctl_ready = 1, sig_ready = 1, bell_ready = 0;
    uint64_t slept_ns = 0;              /* the sleep before this pass */
    while (!x->stop) {
        if (sig_ready)
            read_signals(x);
        if (x->stop)
            break;
        ctl_server_tick(&x->ctl, shm_mono_ns());    /* deadlines, request budget */
        if (ctl_ready)
            control(x);
        uint64_t now = shm_mono_ns();
        if (x->ship) {      /* a saturated drain holds new uploads back (ship.h) */
            int was = x->drain_load.saturated;
            ship_drain_load_note(&x->drain_load, now, slept_ns);
            if (x->drain_load.saturated != was)
                ship_drain_saturated(x->ship, x->drain_load.saturated);
        }
        if (now >= x->next_scan_ns) {
            scan(x);
            x->next_scan_ns = now + scan_ns;
        }
        if (x->bell) {
            bell_pass(x->bell, now);
            if (bell_ready)
                drain_rung(x, now);
        }
        struct pass_pressure pp;
        drain_all(x, now, &pp);
        x->passes++;
        x->pass_ns = shm_mono_ns() - now;
        rotate(x, now);
        finish_ended(x);
        flight_pass(&x->flight, &x->store, trigd_state(), now, 0);
        metrics_publish(x, now);
        host_follow(x);
        uint64_t dt_us = x->last_pass_ns && now > x->last_pass_ns
                             ? (now - x->last_pass_ns) / 1000u : 0;
        x->last_pass_ns = now;
        /* a thread that just started recording may be about to record
         * fast: the sleep grows again from its minimum instead of going on
         * at the idle maximum (a 1 MiB ring fills in 4 ms at 8 M events/s) */
        if (pp.fresh)
            pace_next(&x->backoff, 1);
        pace_ceiling(x);
        uint32_t us = pace_by_pressure(&x->backoff, pp.fill, pp.size, dt_us, pp.more);
        if (!x->procs)      /* nothing traced: wake for the next scan or a hello */
            us = x->cfg.scan_ms * 1000u;
        slept_ns = 0;
        if (us) {
            uint64_t t0 = shm_mono_ns();
            sleep_us(x, us, &ctl_ready, &sig_ready, &bell_ready);
            slept_ns = shm_mono_ns() - t0;
        } else {    /* the doorbell's eventfd is looked at only after a sleep it ended */
            ctl_ready = sig_ready = 1, bell_ready = 0;
        }
    }
}

/* --store-group: a group name, else a number; "" is our effective group. */
static int store_gid(const char *name, gid_t *gid, char *err, size_t errcap)
{
    if (!*name) {
        *gid = getegid();
        return 0;
    }
    struct group *g = getgrnam(name);
    if (g) {
        *gid = g->gr_gid;
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long v = strtoul(name, &end, 10);
    if (*name >= '0' && *name <= '9' && !*end && !errno && v < (gid_t)-1) {
        *gid = (gid_t)v;
        return 0;
    }
    snprintf(err, errcap, "--store-group %s: no such group", name);
    return -ENOENT;
}

/* Ask the scheduler for a short slice (Linux >= 6.12, SCHED_OTHER, no
 * privilege needed): a task with a shorter slice than the one running gets
 * an earlier deadline and preempts it at wake-up, instead of waiting out
 * the other task's slice (milliseconds on a busy CPU: longer than a 1 MiB
 * ring takes to fill at 10 M events/s). The collector runs briefly and
 * often, which is what the short slice is for; its share of the CPU is
 * unchanged. Called before bell_open: the listener thread inherits it.
 * Older kernels refuse or ignore sched_runtime for SCHED_OTHER: nothing
 * changes then. The operator's choices stand: the nice value is kept
 * (systemd's Nice=, nice(1)), and a collector started under another policy
 * (chrt, CPUSchedulingPolicy=) is left as it is. */
static void request_short_slice(void)
{
    if (sched_getscheduler(0) != SCHED_OTHER)
        return;
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    if (errno)
        nice = 0;
    struct {                    /* struct sched_attr, first version (48 bytes) */
        uint32_t size, sched_policy;
        uint64_t sched_flags;
        int32_t sched_nice;
        uint32_t sched_priority;
        uint64_t sched_runtime, sched_deadline, sched_period;
    } a = { .size = sizeof a, .sched_policy = SCHED_OTHER, .sched_nice = nice,
            .sched_runtime = SLICE_NS };
    _Static_assert(sizeof a == 48, "SCHED_ATTR_SIZE_VER0");
    if (syscall(SYS_sched_setattr, 0, &a, 0) != 0)
        col_debug("scheduler: no short slice (%s); default wake-up latency", strerror(errno));
}

/* Everything before the loop, in this order: the SIGBUS guard, the shm
 * directory, the store, its lock (before recovery: another collector's temp
 * files are live, not debris), its group and modes, recovery, the control endpoint, signals, the
 * pidfile, the host clock calibration, discovery and the perf keeper. Each
 * failure is one error line. 0 or EXIT_RUNTIME. */
static void ship_sealed(void *arg) { ship_kick(arg); }

/* --ship-parquet: the d9 program that writes the companions: the one
 * beside this binary (an install or a build tree), else the first d9 on
 * PATH. 0, or -ENOENT. */
static int parquet_program(char *out, size_t cap)
{
    char self[CONFIG_PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            if (snprintf(out, cap, "%s/d9", self) < (int)cap && access(out, X_OK) == 0)
                return 0;
        }
    }
    const char *path = getenv("PATH");
    while (path && *path) {
        size_t len = strcspn(path, ":");
        if (len && snprintf(out, cap, "%.*s/d9", (int)len, path) < (int)cap &&
            out[0] == '/' && access(out, X_OK) == 0)
            return 0;
        path += len + (path[len] == ':');
    }
    out[0] = '\0';
    return -ENOENT;
}

/* --ship: credentials and upload threads. A failure is logged and shown by
 * d9 status; the collector records locally all the same. */
static void ship_begin(struct col_ctx *x)
{
    struct s3_cfg s3;
    char d9[CONFIG_PATH_MAX] = "";
    if (x->cfg.ship_parquet == CONFIG_SHIP_PARQUET_ON && parquet_program(d9, sizeof d9) != 0)
        col_err("ship-parquet is off: no d9 program beside d9collectd nor on PATH; segments "
                "are shipped without Parquet companions");
    if (s3_cfg_init(&s3, x->cfg.ship, x->cfg.s3_endpoint, x->cfg.s3_region, x->ship_error,
                    sizeof x->ship_error) ||
        s3_cfg_credentials(&s3, x->ship_error, sizeof x->ship_error) ||
        ship_start(&x->ship, &s3, x->store.dir, x->store.host, x->cfg.ship_jobs,
                   (uint64_t)x->cfg.store_mb << 20, d9, x->ship_error, sizeof x->ship_error)) {
        col_err("shipping to %s is off: %s", x->cfg.ship, x->ship_error);
        x->ship = NULL;
    } else {
        x->store.on_sealed = ship_sealed;
        x->store.on_sealed_arg = x->ship;
        col_info("shipping sealed segments to %s (%s, %" PRIu32 " at once)%s%s", x->cfg.ship,
                 x->cfg.s3_endpoint[0] ? x->cfg.s3_endpoint : "AWS", x->cfg.ship_jobs,
                 d9[0] ? ", with Parquet companions written by " : "", d9);
    }
    s3_cfg_wipe(&s3);
}

/* --shm-dir: created when missing, as --store is. Root's collector serves
 * every user's agents: the directory is like /dev/shm (1777: anyone
 * creates a region, nobody removes another's; the ownership rule still
 * decides what is adopted). Another user's serves that user's agents
 * only: 0700. The parent must exist. 0, or -1 after one error line. */
static int shm_dir_ready(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0 && errno == ENOENT) {
        mode_t mode = geteuid() == 0 ? SHM_DIR_MODE_ROOT : SHM_DIR_MODE_USER;
        if (mkdir(dir, mode) != 0 && errno != EEXIST) {
            col_err("cannot create shm directory %s: %s", dir, strerror(errno));
            return -1;
        }
        if (chmod(dir, mode) == 0)     /* the umask does not take its bits */
            col_info("created shm directory %s (mode %04o)", dir, (unsigned)mode);
    }
    errno = 0;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        col_err("shm directory %s is not a directory: %s", dir,
                errno ? strerror(errno) : "wrong type");
        return -1;
    }
    return 0;
}

static int start_up(struct col_ctx *x)
{
    char err[1024] = "";
    int rc;
    col_log_init(PROG, x->cfg.log_level);
    x->start_ns = shm_mono_ns();
    x->sigfd = -1;
    x->perf_keeper = -1;
    if ((rc = guard_install())) {
        col_err("cannot install the SIGBUS handler: %s", strerror(-rc));
        return EXIT_RUNTIME;
    }
    if (shm_dir_ready(x->cfg.shm_dir) != 0)
        return EXIT_RUNTIME;
    if (storedir_open(&x->store, x->cfg.store, (uint64_t)x->cfg.store_mb << 20, err,
                      sizeof err)) {
        col_err("%s", err);
        return EXIT_RUNTIME;
    }
    if (x->cfg.host[0])
        snprintf(x->store.host, sizeof x->store.host, "%s", x->cfg.host);
    /* before recovery: another collector's temp files are live, not debris */
    if ((x->store_lock = store_lock(x->store.dir)) < 0) {
        if (x->store_lock == -EBUSY)
            col_err("store %s is in use by another collector (it holds %s/%s); stop it "
                    "first or use another --store", x->store.dir, x->store.dir,
                    STORE_LOCK_FILE);
        else
            col_err("cannot take the store lock %s/%s: %s", x->store.dir, STORE_LOCK_FILE,
                    strerror(-x->store_lock));
        storedir_close(&x->store);
        return EXIT_RUNTIME;
    }
    gid_t gid;
    if (store_gid(x->cfg.store_group, &gid, err, sizeof err) ||
        storedir_secure(&x->store, gid, err, sizeof err)) {
        col_err("%s", err);
        storedir_close(&x->store);
        return EXIT_RUNTIME;
    }
    x->store.segment_max_bytes = (uint64_t)x->cfg.segment_mb << 20;
    /* the flight recorder ships kept windows only: retention takes the
     * untriggered data first, then the oldest kept windows (flight.h) */
    x->store.keep_unshipped = x->cfg.ship[0] != 0 && x->cfg.trig.retain != TRIG_RETAIN_TRIGGERED;
    storedir_recover(&x->store);
    trigd_init(&x->cfg.trig);
    trigd_set_index(x->store.idx);
    flight_init(&x->flight, &x->cfg.trig, x->store.next_segment_id);
    ship_kept_only(x->flight.on);
    if (x->cfg.ship[0])
        ship_begin(x);
    if (ctl_server_open(&x->ctl, x->cfg.endpoint, err, sizeof err)) {
        col_err("%s", err);
        storedir_close(&x->store);
        return EXIT_RUNTIME;
    }
    if ((x->sigfd = open_signals()) < 0) {
        col_err("cannot set up signal handling: %s", strerror(-x->sigfd));
        ctl_server_close(&x->ctl);
        storedir_close(&x->store);
        return EXIT_RUNTIME;
    }
    if (metrics_open(x)) {
        ctl_server_close(&x->ctl);
        storedir_close(&x->store);
        return EXIT_RUNTIME;
    }
    if (x->cfg.pidfile[0] && (rc = pidfile_create(&x->pidfile, x->cfg.pidfile))) {
        col_err("cannot write pidfile %s: %s", x->cfg.pidfile,
                rc == -EEXIST ? "something else is there (not a leftover pidfile of ours; "
                                "it is left alone)"
                : rc == -EBUSY ? "a running d9collectd wrote it" : strerror(-rc));
        met_http_stop(x->met_http);
        x->met_http = NULL;
        ctl_server_close(&x->ctl);
        storedir_close(&x->store);
        return EXIT_RUNTIME;
    }
    if (shm_tsc_invariant() && shm_clock_calibrate(&x->host_cal, HOST_CAL_MS) != 0)
        memset(&x->host_cal, 0, sizeof x->host_cal);
    pace_init(&x->backoff, x->cfg.poll_min_us, x->cfg.poll_max_us);
    request_short_slice();
    if (x->cfg.doorbell == CONFIG_DOORBELL_ON && (rc = bell_open(&x->bell)))
        col_info("doorbell: %s: the drain runs on its timer alone",
                 rc == -ENOSYS ? "no futex_waitv in this kernel (Linux >= 5.16)" : strerror(-rc));
    discover_init(&x->disc, x->cfg.shm_dir);
    x->disc.reclaim_age_s = x->cfg.reclaim_age;
    if (x->cfg.perf_freq || x->cfg.switch_period)
        x->perf_keeper = perf_callchain_keeper();   /* < 0: perf not permitted, nothing to keep */
    return 0;
}

/* After the loop (or a failed host_open): release what start_up took; the
 * store lock last, once the store is closed and consistent. */
static void tear_down(struct col_ctx *x)
{
    met_http_stop(x->met_http);
    x->met_http = NULL;
    met_free(&x->met);
    ship_stop(x->ship);         /* first: its threads use the store's index */
    trigd_set_index(NULL);
    x->ship = NULL;
    x->store.on_sealed = NULL;
    discover_free(&x->disc);
    ctl_server_close(&x->ctl);
    ctl_server_unlink(&x->ctl);
    storedir_close(&x->store);
    close(x->store_lock);       /* last: the store is closed and consistent */
    pidfile_remove(&x->pidfile);
    close(x->sigfd);
    if (x->perf_keeper >= 0)
        close(x->perf_keeper);
    perf_host_close(x->perf_host);
    bell_close(x->bell);
}

int main(int argc, char **argv)
{
    static struct col_ctx ctx;      /* the daemon's one context (large: keep off the stack) */
    struct col_ctx *x = &ctx;
    char err[1024] = "";
    crashpt_init();             /* fault-injection tests only (D9_CRASH_AT) */
    int rc = config_parse_args(&x->cfg, argc, argv, geteuid(), getenv("XDG_RUNTIME_DIR"),
                               err, sizeof err);
    if (rc == CONFIG_HELP) {
        config_usage(stdout, PROG);
        return 0;
    }
    if (rc == CONFIG_VERSION) {
        printf("%s %s (shm ABI %u, segment format %u, index schema %d)\n", PROG, D9_VERSION,
               D9_ABI_VERSION, SEG_VERSION, IDX_SCHEMA_VERSION);
        return 0;
    }
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", PROG, err);
        return EXIT_USAGE;
    }
    if (rc == CONFIG_PRINT) {
        config_dump(stdout, &x->cfg);
        return 0;
    }
    perf_set_stack_dwarf(x->cfg.stack_mode != CONFIG_STACK_FP);   /* before any event opens */
    perf_set_stack_bytes(x->cfg.stack_bytes);
    unw_set_debug_dir(x->cfg.debug_dir[0] ? x->cfg.debug_dir : getenv("D9_DEBUG_DIR"));
    if (start_up(x))
        return EXIT_RUNTIME;
    /* after the store and the endpoint: their errors stay the one line */
    int exit_code = 0;
    if (x->cfg.perf_freq && x->cfg.perf_scope != CONFIG_PERF_SCOPE_THREAD)
        exit_code = host_open(x);
    if (!exit_code) {
        col_info("%s %s: store %s, endpoint %s, regions in %s", PROG, D9_VERSION, x->store.dir,
                 x->cfg.endpoint, x->cfg.shm_dir);
        run(x);
        int failed = shutdown_all(x);
        if (x->flight.on) {     /* no trigger can come now: everything is settled */
            flight_pass(&x->flight, &x->store, trigd_state(), shm_mono_ns(), 1);
            col_info("flight recorder: %" PRIu64 " kept windows written (%" PRIu64 " bytes), %"
                     PRIu64 " segments dropped (%" PRIu64 " bytes), %" PRIu64 " cut errors",
                     x->flight.windows_cut, x->flight.kept_bytes, x->flight.dropped_segments,
                     x->flight.dropped_bytes, x->flight.cut_errors);
        }
        if (x->bell) {
            struct bell_stats bs;
            bell_get_stats(x->bell, &bs);
            col_info("doorbell: %" PRIu64 " wake-ups, %" PRIu64 " rings, %" PRIu64 " spurious, %"
                     PRIu64 " mutes, %" PRIu64 " faults", bs.wakes, bs.rings, bs.spurious,
                     bs.mutes, bs.faults);
        }
        if (x->store.ru_pipe) {     /* waits for room: the rollup thread fell behind the drain */
            struct ru_pipe_stats rs;
            ru_pipe_get_stats(x->store.ru_pipe, &rs);
            col_info("rollup thread: %" PRIu64 " messages (%" PRIu64 " copied), %" PRIu64
                     " wake-ups, %" PRIu64 " waits for room", rs.sent, rs.copied, rs.wakes,
                     rs.waits);
        }
        col_info("shutdown: %" PRIu64 " records, %" PRIu64 " segments sealed this run%s",
                 x->done_records, x->store.segments_sealed,
                 failed ? " (some segments could not be written)" : "");
    }
    tear_down(x);
    return exit_code;
}
