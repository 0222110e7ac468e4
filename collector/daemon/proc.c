/*
 * proc.c — per-process state and lifecycle in d9collectd (see proc.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "collector/daemon/drain.h"
#include "collector/store/idx.h"
#include "collector/store/idx_read.h"
#include "collector/daemon/proc.h"
#include "collector/daemon/prof.h"
#include "collector/daemon/store.h"

static int g_header(struct col_proc *p, uint32_t *state, uint32_t *untraced, uint32_t *sampler,
                    uint64_t *created)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    col_guard_arm(&jb, p->region.base, p->region.size);
    struct d9_region_hdr *h = p->region.hdr;
    *state = atomic_load_explicit(&h->state, memory_order_acquire);
    *untraced = atomic_load_explicit(&h->threads_untraced, memory_order_relaxed);
    *sampler = atomic_load_explicit(&h->sampler, memory_order_relaxed);
    if (created)
        *created = __atomic_load_n(&h->created_ns, __ATOMIC_RELAXED);
    col_guard_disarm();
    return 0;
}

int col_proc_refresh_header(struct col_proc *p)
{
    if (p->quarantined)
        return -EFAULT;
    uint32_t state, untraced, sampler;
    if (g_header(p, &state, &untraced, &sampler, NULL)) {
        col_proc_quarantine(p, "SIGBUS while reading its header (file truncated?)");
        return -EFAULT;
    }
    p->region_state = state;
    p->threads_untraced = untraced;
    p->sampler = sampler;
    return 0;
}

/* shm_region_map() reads the header right after mmap: a file truncated in
 * between raises SIGBUS there. The mapping of such a region is leaked (we
 * never learn its address); only a hostile owner can cause it, once per file
 * (the file is rejected). */
static int g_map(const char *path, uint32_t expected_uid, struct shm_region *r,
                 struct shm_geometry *g)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EBADMSG;
    col_guard_arm_any(&jb);
    int rc = shm_region_map(path, expected_uid, r, g);
    col_guard_disarm();
    return rc;
}

/* A ring's 'lost' counter is cumulative over its life; drops already
 * written into indexed blocks (by an earlier collector run) must not be
 * reported again after a restart. */
static void resume_lost_counters(struct col_proc *p, struct col_store *st)
{
    for (uint32_t ring = 0; st->idx && ring < p->geo.ring_count; ring++) {
        uint64_t lost = 0;
        if (idx_read_ring_lost(st->idx, p->process_id, ring, &lost) == 0 && lost > 0)
            p->rings[ring].lost_seen = lost;
    }
}

int col_proc_adopt(const char *path, const char *file, uint32_t expected_uid,
                   struct col_store *st, const struct shm_clock_cal *host_cal,
                   struct col_proc **out)
{
    struct col_proc *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    int rc = g_map(path, expected_uid, &p->region, &p->geo);
    if (rc) {
        free(p);
        return rc;
    }
    p->rings = calloc(p->geo.ring_count, sizeof *p->rings);
    if (!p->rings) {
        shm_region_close(&p->region);
        free(p);
        return -ENOMEM;
    }
    p->pid = p->geo.pid;
    p->uid = p->geo.uid;
    p->start_time = p->geo.start_time;
    snprintf(p->file, sizeof p->file, "%s", file);
    p->exit_code = -1;
    p->host_cal = host_cal;
    if (p->geo.clock_source == D9_CLOCK_TSC && host_cal)
        p->cal = *host_cal;       /* until the region's own pairs are read */
    else
        memset(&p->cal, 0, sizeof p->cal);   /* identity: ts is CLOCK_MONOTONIC */

    uint32_t state, untraced, sampler;
    uint64_t created = 0;
    if (g_header(p, &state, &untraced, &sampler, &created)) {
        col_proc_free(p);
        return -EBADMSG;
    }
    p->region_state = state;
    p->threads_untraced = untraced;
    p->sampler = sampler;
    uint64_t now = shm_mono_ns();
    p->first_ns = created && created <= now ? created : now;

    struct idx_process ip = {
        .pid = p->pid, .uid = p->uid, .start_time = p->start_time,
        .comm = p->geo.comm, .exe = p->geo.exe, .first_ns = p->first_ns,
    };
    rc = idx_process_upsert(st->idx, &ip, &p->process_id);
    if (rc) {
        col_err("pid %u: cannot index process: %s", p->pid, strerror(-rc));
        col_proc_free(p);
        return rc;
    }
    resume_lost_counters(p, st);
    *out = p;
    return 0;
}

/* 1 if /proc/<pid>/stat says zombie or dead: it will never write again,
 * even if nobody has reaped it yet. */
static int proc_is_zombie(uint32_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%u/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    /* comm may contain ') ': the state follows the last ')' */
    const char *rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

int col_proc_alive(const struct col_proc *p)
{
    if (kill((pid_t)p->pid, 0) != 0 && errno == ESRCH)
        return 0;
    if (proc_is_zombie(p->pid))
        return 0;
    uint64_t st;
    int rc = shm_proc_start_time(p->pid, &st);
    if (rc == -ESRCH)
        return 0;
    if (rc == 0 && st != p->start_time)
        return 0;           /* the pid now belongs to another process */
    return 1;
}

int col_proc_writer(struct col_proc *p, struct col_store *st, uint64_t now_ns)
{
    if (p->writer)
        return 0;
    struct seg_proc_info pi = {
        .pid = p->pid, .uid = p->uid, .start_time = p->start_time,
        .clock_source = p->geo.clock_source,
        .ns_per_tick = p->cal.ns_per_tick, .cal_tsc0 = p->cal.tsc0, .cal_ns0 = p->cal.ns0,
        .host = st->host, .comm = p->geo.comm, .exe = p->geo.exe,
    };
    int rc = col_store_writer_open(st, &pi, p->meta, p->meta_len, &p->writer);
    if (rc) {
        p->writer = NULL;
        col_store_write_failed(st, rc, "segment open", p->pid, now_ns);
        return rc;
    }
    p->meta_in_writer = p->meta_len;
    p->writer_records = 0;
    return 0;
}

void col_proc_index_threads(struct col_proc *p, struct col_store *st)
{
    if (!st->idx || p->process_id <= 0)
        return;
    for (uint32_t i = 0; i < p->geo.ring_count; i++) {
        struct col_ring *r = &p->rings[i];
        if (!r->active || !r->thread_dirty || !r->first_ns)
            continue;
        int rc = idx_thread_upsert(st->idx, p->process_id, r->tid, i, r->generation, r->name,
                                   r->first_ns, r->last_ns, 0);
        if (rc)
            col_log_limited(&p->rl, COL_LOG_WARN, "pid %u: cannot index thread %u: %s",
                            p->pid, r->tid, strerror(-rc));
        else
            r->thread_dirty = 0;
    }
}

int col_proc_seal(struct col_proc *p, struct col_store *st)
{
    if (!p->writer)
        return 0;
    /* write what is buffered first: if that fails (disk full) the writer
     * stays open and nothing is lost; a failed seal would delete the file */
    int frc = seg_writer_flush(p->writer);
    if (frc) {
        col_store_write_failed(st, frc, "segment write", p->pid, shm_mono_ns());
        return frc;
    }
    struct seg_writer *w = p->writer;
    uint64_t pending = 0;
    for (uint32_t i = 0; i < p->geo.ring_count; i++)
        pending += p->rings[i].pend_records;
    uint64_t recs = p->writer_records;
    p->writer = NULL;
    p->writer_records = 0;
    p->meta_in_writer = 0;
    /* records whose tails were already published are lost if sealing fails;
     * pending ones are not: their tails go out only after the seal */
    int rc = col_store_seal(st, w, p->process_id, p->pid, recs >= pending ? recs - pending : 0);
    if (rc == 0) {
        col_drain_publish(p);
    } else {
        uint64_t again = col_drain_rewind(p);
        p->records = p->records >= again ? p->records - again : 0;
    }
    col_proc_index_threads(p, st);
    return rc;
}

void col_proc_quarantine(struct col_proc *p, const char *why)
{
    if (p->quarantined)
        return;
    p->quarantined = 1;
    col_warn("pid %u (%s): region quarantined: %s; it is not read again", p->pid, p->file, why);
}

static const char *end_state(const struct col_proc *p, int *reason)
{
    if (p->quarantined) {
        *reason = SEG_EXIT_UNKNOWN;
        return "quarantined";
    }
    if (p->region_state == D9_REGION_CLOSED) {
        *reason = SEG_EXIT_CLEAN;
        return "exited";
    }
    *reason = SEG_EXIT_CRASHED;
    return "crashed";
}

int col_proc_finish(struct col_proc *p, struct col_store *st)
{
    uint64_t now = shm_mono_ns();
    if (!col_store_writable(st, now))
        return -EAGAIN;
    if (!p->quarantined && col_proc_refresh_header(p) == 0) {
        struct col_drain_result res = { 0 };
        col_drain_proc_all(p, st, &res);
        if (res.write_failed)
            return -EAGAIN;
        perf_prof_pass(p, st, now, 1);      /* profiler: last samples and maps */
        /* a final state read: the agent may have closed while we drained */
        col_proc_refresh_header(p);
    }
    int reason;
    const char *state = end_state(p, &reason);
    if (col_proc_writer(p, st, now))
        return -EAGAIN;
    /* every thread still tracked ends with the process */
    for (uint32_t i = 0; i < p->geo.ring_count; i++) {
        struct col_ring *r = &p->rings[i];
        if (!r->active)
            continue;
        uint64_t t = r->last_ns ? r->last_ns : now;
        int rc = seg_writer_add_thread_end(p->writer, r->tid, i, r->generation, t);
        if (rc) {
            col_store_write_failed(st, rc, "thread-end block", p->pid, now);
            return -EAGAIN;
        }
        if (p->process_id > 0 && r->first_ns)
            idx_thread_upsert(st->idx, p->process_id, r->tid, i, r->generation, r->name,
                              r->first_ns, t, 1);
        r->active = 0;
        r->thread_dirty = 0;
    }
    struct seg_exit ex = { .t_ns = now, .reason = reason, .code = p->exit_code };
    int rc = seg_writer_add_exit(p->writer, &ex);
    if (rc) {
        col_store_write_failed(st, rc, "exit block", p->pid, now);
        return -EAGAIN;
    }
    if ((rc = col_proc_seal(p, st)))
        return -EAGAIN;
    rc = idx_process_end(st->idx, p->process_id, now, state, p->exit_code);
    if (rc)
        col_warn("pid %u: cannot index the process end: %s", p->pid, strerror(-rc));
    if (unlink(p->region.path) != 0 && errno != ENOENT)
        col_warn("pid %u: cannot remove region %s: %s", p->pid, p->region.path,
                 strerror(errno));
    col_info("pid %u (%s) %s: %" PRIu64 " records, %" PRIu64 " lost", p->pid, p->geo.comm,
             state, p->records, p->lost);
    return 0;
}

void col_proc_abandon_writer(struct col_proc *p)
{
    /* not seg_writer_free(), which would unlink the temp file: abandon frees
     * the writer (fd, buffers) but keeps the file for the next start-up's
     * salvage (it writes what is still buffered first, best effort) */
    seg_writer_abandon(p->writer);
    p->writer = NULL;
}

void col_proc_free(struct col_proc *p)
{
    if (!p)
        return;
    if (p->writer)
        seg_writer_free(p->writer);
    perf_prof_free(p);                      /* profiler */
    shm_region_close(&p->region);
    free(p->rings);
    free(p->meta);
    free(p);
}

static const char *sampler_name(uint32_t s)
{
    switch (s) {
    case D9_SAMPLER_PERF: return "perf";
    case D9_SAMPLER_ITIMER: return "itimer";
    default: return "none";
    }
}

static char *dupstr(const char *s)
{
    char *d = strdup(s ? s : "");
    return d;
}

int col_proc_status(const struct col_proc *p, D9__ProcessStatus *ps)
{
    d9__process_status__init(ps);
    ps->pid = p->pid;
    ps->uid = p->uid;
    ps->comm = dupstr(p->geo.comm);
    ps->exe = dupstr(p->geo.exe);
    int reason;
    ps->state = dupstr(p->ended || p->quarantined ? end_state(p, &reason) : "alive");
    ps->sampler = dupstr(sampler_name(p->sampler));
    ps->records = p->records;
    ps->bytes_written = p->bytes_written;
    ps->lost = p->lost;
    ps->lag_bytes = p->lag_bytes;
    ps->rings_in_use = p->rings_in_use;
    ps->threads_untraced = p->threads_untraced;
    if (!ps->comm || !ps->exe || !ps->state || !ps->sampler)
        return -ENOMEM;
    size_t n = 0;
    for (uint32_t i = 0; i < p->geo.ring_count; i++)
        n += p->rings[i].active || p->rings[i].quarantined;
    if (!n)
        return 0;
    ps->rings = calloc(n, sizeof *ps->rings);
    if (!ps->rings)
        return -ENOMEM;
    for (uint32_t i = 0; i < p->geo.ring_count; i++) {
        const struct col_ring *r = &p->rings[i];
        if (!r->active && !r->quarantined)
            continue;
        D9__RingStatus *rs = calloc(1, sizeof *rs);
        if (!rs)
            return -ENOMEM;
        d9__ring_status__init(rs);
        rs->index = i;
        rs->tid = r->tid;
        rs->thread_name = dupstr(r->name);
        rs->state = r->state;
        rs->lag_bytes = r->lag_bytes;
        rs->lost = r->lost;
        rs->quarantined = r->quarantined;
        ps->rings[ps->n_rings++] = rs;
        if (!rs->thread_name)
            return -ENOMEM;
    }
    return 0;
}

void col_proc_status_free(D9__ProcessStatus *ps)
{
    free(ps->comm);
    free(ps->exe);
    free(ps->state);
    free(ps->sampler);
    for (size_t i = 0; i < ps->n_rings; i++) {
        free(ps->rings[i]->thread_name);
        free(ps->rings[i]);
    }
    free(ps->rings);
}
