/*
 * proc.c — a traced process's lifecycle in d9collectd (see proc.h): maps
 * and adopts its region, reads its header under the guard, tells whether
 * it still runs, ends it (final drain and profile, exit block, seal, index,
 * unlink) and reports its status. A region flagged D9_REGION_F_NOLOOP that
 * recorded nothing ends as "noloop" (the preload shim found no loop).
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
#include <sys/wait.h>
#include <unistd.h>
#include "collector/daemon/drain.h"
#include "collector/daemon/guard.h"
#include "collector/daemon/pexit.h"
#include "collector/store/idx.h"
#include "collector/store/idx_read.h"
#include "collector/daemon/proc.h"
#include "collector/daemon/prof.h"
#include "collector/daemon/storedir.h"
#include "collector/store/col_log.h"
#include "collector/store/seg_reader.h"

static int g_header(struct proc *p, uint32_t *state, uint32_t *untraced, uint32_t *sampler,
                    uint64_t *created)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    guard_arm(&jb, p->region.base, p->region.size);
    struct d9_region_hdr *h = p->region.hdr;
    *state = atomic_load_explicit(&h->state, memory_order_acquire);
    p->exit_status = atomic_load_explicit(&h->exit_status, memory_order_relaxed);
    *untraced = atomic_load_explicit(&h->threads_untraced, memory_order_relaxed);
    *sampler = atomic_load_explicit(&h->sampler, memory_order_relaxed);
    if (created)
        *created = __atomic_load_n(&h->created_ns, __ATOMIC_RELAXED);
    guard_disarm();
    return 0;
}

/* The region is ours to drain and remove: the agent leaves it at exit. */
static int g_mark_adopted(struct proc *p)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    guard_arm(&jb, p->region.base, p->region.size);
    shm_region_mark_adopted(p->region.hdr);
    guard_disarm();
    return 0;
}

/* The producer's head and lost counter of ring i, as they are now. */
static int g_ring_counters(const struct proc *p, uint32_t i, uint64_t *head, uint64_t *lost)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    guard_arm(&jb, p->region.base, p->region.size);
    struct d9_ring_hdr *rh = shm_ring_hdr(&p->region, &p->geo, i);
    *head = atomic_load_explicit(&rh->head, memory_order_acquire);
    *lost = atomic_load_explicit(&rh->lost, memory_order_relaxed);
    guard_disarm();
    return 0;
}

/* Ring i's live backlog (bytes not yet in a written segment: head - the
 * tail we published) and drops not yet in a block, read from the ring
 * itself: a pass that cannot write (disk full) updates neither, and status
 * must not say "no lag, no loss" while the rings overflow. */
static void live_ring(const struct proc *p, const struct proc_ring *r, uint32_t i,
                      uint64_t *lag, uint64_t *lost_new)
{
    uint64_t head, lost;
    *lag = r->lag_bytes;
    *lost_new = 0;
    if (p->quarantined || r->quarantined || !r->tail_known ||
        g_ring_counters(p, i, &head, &lost))
        return;
    if (head >= r->consumed_tail && head - r->consumed_tail <= p->geo.ring_data_size)
        *lag = head - r->consumed_tail;
    if (lost > r->lost_seen)
        *lost_new = lost - r->lost_seen;
}

int proc_refresh_header(struct proc *p)
{
    if (p->quarantined)
        return -EFAULT;
    uint32_t state, untraced, sampler;
    if (g_header(p, &state, &untraced, &sampler, NULL)) {
        drain_quarantine(p, "SIGBUS while reading its header (file truncated?)");
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
    guard_arm_any(&jb);
    int rc = shm_region_map(path, expected_uid, r, g);
    guard_disarm();
    return rc;
}

/* A ring's 'lost' counter is cumulative over its life; drops already
 * written into indexed blocks (by an earlier collector run) must not be
 * reported again after a restart. The same for the region's count of
 * events of threads without a ring (the drops row of an earlier run): its
 * growth since is what fires the lost trigger. */
static void resume_lost_counters(struct proc *p, struct storedir *st)
{
    uint64_t *lost = st->idx ? calloc(p->geo.ring_count, sizeof *lost) : NULL;
    if (lost && idx_read_rings_lost(st->idx, p->process_id, 0, p->geo.ring_count, lost) == 0)
        for (uint32_t ring = 0; ring < p->geo.ring_count; ring++)
            if (lost[ring] > 0)
                p->rings[ring].lost_seen = lost[ring];
    free(lost);
    struct idx_read_drops d;
    if (st->idx && p->process_id > 0 &&
        idx_read_drops(st->idx, p->process_id, 0, 0, UINT64_MAX, &d) == 0) {
        p->no_ring_seen = d.no_ring;
        p->drops.no_ring = d.no_ring;
    }
}

/* The seq and time of the last record of the DATA block at `offset` of
 * segment `path`. 0, or -errno (the file is untrusted: the reader checks
 * it; a block without records is -ENODATA). */
static int last_record_of(const char *path, uint64_t offset, uint32_t *seq, uint64_t *ts)
{
    struct seg_reader *r;
    int rc = seg_reader_open(&r, path, 0);
    if (rc)
        return rc;
    struct seg_block b;
    if ((rc = seg_reader_seek(r, offset)) == 0 && (rc = seg_reader_next(r, &b)) == 1) {
        rc = -ENODATA;
        size_t off = 0;
        const struct d9_rec_hdr *h;
        int got;
        while (b.h.kind == SEG_BLK_DATA && (got = seg_reader_next_record(&b, &off, &h)) == 1) {
            *seq = h->seq;
            *ts = h->ts;
            rc = 0;
        }
    } else if (rc == 0) {
        rc = -ENODATA;
    }
    seg_reader_close(r);
    return rc < 0 ? rc : 0;
}

/* Where an earlier collector run left each ring: the last record it
 * persisted (proc_ring.stored_*). A run killed after it wrote records into
 * a segment (a temp file salvaged at start-up, or a sealed one) but before
 * it published their ring tail leaves them in the ring too: drain.c skips
 * them instead of writing them twice. Best effort: a ring whose last block
 * cannot be read is drained from its tail as before (and logged). */
static void resume_stored(struct proc *p, struct storedir *st)
{
    struct idx_ring_last *last = st->idx ? calloc(p->geo.ring_count, sizeof *last) : NULL;
    if (!last || idx_read_rings_last(st->idx, p->process_id, p->geo.ring_count, last) != 0) {
        free(last);
        return;
    }
    for (uint32_t i = 0; i < p->geo.ring_count; i++) {
        if (!last[i].found || strchr(last[i].path, '/') || last[i].path[0] == '.')
            continue;
        char path[CONFIG_PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", st->dir, last[i].path);
        struct proc_ring *r = &p->rings[i];
        int rc = last_record_of(path, last[i].offset, &r->stored_seq, &r->stored_ts);
        if (rc) {
            col_warn("pid %u: ring %u: cannot read its last stored block (%s at %" PRIu64
                     "): %s; its records are drained from the ring's tail", p->pid, i, path,
                     last[i].offset, strerror(-rc));
            continue;
        }
        r->stored_gen = last[i].generation;
        r->stored_known = 1;
    }
    free(last);
}

/* The process's start (clock ticks since boot, from its name, checked
 * against /proc for a live process) in CLOCK_MONOTONIC ns, a tick and a
 * millisecond early; CLOCK_BOOTTIME - CLOCK_MONOTONIC is the time the host
 * spent suspended. Never after now (a gone process's name is only a claim). */
static uint64_t start_floor(uint64_t start_ticks, uint64_t now)
{
    struct timespec bt;
    long hz = sysconf(_SC_CLK_TCK);
    if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &bt) != 0 || start_ticks > UINT64_MAX / 1000000000u)
        return 0;
    uint64_t tick = 1000000000u / (uint64_t)hz;
    uint64_t boot = (uint64_t)bt.tv_sec * 1000000000u + (uint64_t)bt.tv_nsec;
    uint64_t suspended = boot > now ? boot - now : 0;
    uint64_t s = start_ticks * tick, margin = suspended + tick + 1000000u;
    s = s > margin ? s - margin : 0;
    return s < now ? s : now;
}

int proc_adopt(const char *path, const char *file, uint32_t expected_uid,
               struct storedir *st, const struct shm_clock_cal *host_cal,
               struct proc **out)
{
    struct proc *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->pidfd = -1;
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
    p->pidfd = pexit_open(p->pid, p->start_time);
    p->image = pexit_image(p->pid);
    p->host_cal = host_cal;
    if (p->geo.clock_source == D9_CLOCK_TSC && host_cal)
        p->cal = *host_cal;       /* until the region's own pairs are read */
    else
        memset(&p->cal, 0, sizeof p->cal);   /* identity: ts is CLOCK_MONOTONIC */

    uint32_t state, untraced, sampler;
    uint64_t created = 0;
    if (g_header(p, &state, &untraced, &sampler, &created)) {
        proc_free(p);
        return -EBADMSG;
    }
    p->region_state = state;
    p->threads_untraced = untraced;
    p->sampler = sampler;
    uint64_t now = shm_mono_ns();
    p->first_ns = created && created <= now ? created : now;
    p->start_floor_ns = start_floor(p->start_time, now);

    struct idx_process ip = {
        .pid = p->pid, .uid = p->uid, .start_time = p->start_time,
        .comm = p->geo.comm, .exe = p->geo.exe, .first_ns = p->first_ns,
    };
    rc = idx_process_adopt(st->idx, &ip, &p->process_id);
    if (rc) {
        /* -EEXIST (another uid's row) and -EALREADY (an ended one) are the
         * ownership rule's, logged where the file is rejected (discover.c) */
        if (rc != -EEXIST && rc != -EALREADY)
            col_err("pid %u: cannot index process: %s", p->pid, strerror(-rc));
        proc_free(p);
        return rc;
    }
    if (g_mark_adopted(p)) {
        proc_free(p);
        return -EBADMSG;
    }
    resume_lost_counters(p, st);
    resume_stored(p, st);
    *out = p;
    return 0;
}

int proc_execd(struct proc *p)
{
    if (!p->execd && p->image) {
        uint64_t now = pexit_image(p->pid);
        p->execd = now && now != p->image && proc_alive(p);
    }
    return p->execd;
}

int proc_alive(const struct proc *p)
{
    if (kill((pid_t)p->pid, 0) != 0 && errno == ESRCH)
        return 0;
    char state = 0;
    uint64_t st = 0;
    int rc = shm_proc_stat(p->pid, &state, &st);
    if (rc == -ESRCH)
        return 0;
    /* zombie or dead: it will never write again, even if nobody reaped it */
    if (rc == 0 && (state == 'Z' || state == 'X'))
        return 0;
    if (rc == 0 && st != p->start_time)
        return 0;           /* the pid now belongs to another process */
    return 1;
}

static const char *end_state(const struct proc *p, int *reason)
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

int proc_finish(struct proc *p, struct storedir *st)
{
    uint64_t now = shm_mono_ns();
    if (!storedir_writable(st, now))
        return -EAGAIN;
    if (!p->quarantined && proc_refresh_header(p) == 0) {
        struct drain_result res = { 0 };
        drain_proc_all(p, st, &res);
        if (res.write_failed)
            return -EAGAIN;
        prof_pass(p, st, now, 1);      /* profiler: last samples and maps */
        /* a final state read: the agent may have closed while we drained */
        proc_refresh_header(p);
    }
    int reason;
    const char *state = end_state(p, &reason);
    /* the agent's record of how it ended: exited(CODE), crashed(SIGNAL);
     * untrusted, so only a well-formed value of the matching kind is kept */
    uint32_t kind = p->exit_status & D9_EXIT_KIND_MASK, val = p->exit_status & 0xffu;
    if (p->exit_status == (kind | val) && reason == SEG_EXIT_CLEAN && kind == D9_EXIT_CODE)
        p->exit_code = (int32_t)val;
    else if (p->exit_status == (kind | val) && reason == SEG_EXIT_CRASHED &&
             kind == D9_EXIT_SIGNAL && val > 0)
        p->exit_code = (int32_t)val;
    /* the kernel's wait status, where it has one, is the truth: it sees
     * _exit(2) and SIGKILL, which the agent cannot (pexit.h) */
    int ws;
    if (!p->quarantined && !proc_alive(p) && pexit_status(p->pidfd, p->pid, &ws) == 0) {
        if (WIFEXITED(ws)) {
            state = "exited";
            reason = SEG_EXIT_CLEAN;
            p->exit_code = WEXITSTATUS(ws);
        } else if (WIFSIGNALED(ws)) {
            state = "crashed";
            reason = SEG_EXIT_CRASHED;
            p->exit_code = WTERMSIG(ws);
        }
    }
    /* execve: the process lives on, the image the agent ran in ended */
    if (!p->quarantined && proc_execd(p)) {
        state = "exec";
        reason = SEG_EXIT_EXEC;     /* in the segment too: a re-index restores it */
        p->exit_code = -1;
    }
    /* the preload shim found no loop to trace (D9_REGION_F_NOLOOP): a claim,
     * honoured only for a region that recorded nothing and was not quarantined
     * or exec'd; the exit code, where known, is kept */
    if (!p->quarantined && reason != SEG_EXIT_EXEC && (p->geo.flags & D9_REGION_F_NOLOOP) &&
        p->records == 0 && p->lost == 0)
        state = "noloop";
    if (drain_writer(p, st, now))
        return -EAGAIN;
    /* every thread still tracked ends with the process */
    uint64_t last_ns = 0;       /* its last record: where a crash trigger fires */
    for (uint32_t i = 0; i < p->geo.ring_count; i++) {
        struct proc_ring *r = &p->rings[i];
        if (r->last_ns > last_ns)
            last_ns = r->last_ns;
        if (!r->active)
            continue;
        uint64_t t = r->last_ns ? r->last_ns : now;
        int rc = seg_writer_add_thread_end(p->writer, r->tid, i, r->generation, t);
        if (rc) {
            storedir_write_failed(st, rc, "thread-end block", p->pid, now);
            return -EAGAIN;
        }
        if (p->process_id > 0 && r->first_ns)
            idx_thread_upsert(st->idx, p->process_id, r->tid, i, r->generation, r->name,
                              r->first_ns, t, 1);
        r->active = 0;
        r->thread_dirty = 0;
    }
    /* the crash trigger before the exit block: drain_seal writes it into this
     * segment (trigd_write_blocks), so a re-index finds it */
    if (reason == SEG_EXIT_CRASHED && trigd_state()->cfg.crash && !p->crash_fired) {
        char why[48] = "crashed";     /* the signal when it is known */
        if (p->exit_code > 0)
            snprintf(why, sizeof why, "crashed (signal %d)", (int)p->exit_code);
        trigd_fire(p->pid, p->process_id, last_ns ? last_ns : now, TRIGD_SRC_CRASH, why, NULL);
        p->crash_fired = 1;
    }
    struct seg_exit ex = { .t_ns = now, .reason = reason, .code = p->exit_code };
    int rc = seg_writer_add_exit(p->writer, &ex);
    if (rc) {
        storedir_write_failed(st, rc, "exit block", p->pid, now);
        return -EAGAIN;
    }
    if ((rc = drain_seal(p, st)))
        return -EAGAIN;
    rc = idx_process_end(st->idx, p->process_id, now, state, p->exit_code);
    if (rc)
        col_warn("pid %u: cannot index the process end: %s", p->pid, strerror(-rc));
    if ((rc = shm_region_unlink(&p->region)) != 0 && rc != -ENOENT)
        col_warn("pid %u: cannot remove region %s: %s", p->pid, p->region.path,
                 rc == -ESTALE ? "another file is in its place (left alone)" : strerror(-rc));
    col_info("pid %u (%s) %s: %" PRIu64 " records, %" PRIu64 " lost", p->pid, p->geo.comm,
             state, p->records, p->lost);
    return 0;
}

void proc_abandon_writer(struct proc *p)
{
    /* not seg_writer_free(), which would unlink the temp file: abandon frees
     * the writer (fd, buffers) but keeps the file for the next start-up's
     * salvage (it writes what is still buffered first, best effort) */
    seg_writer_abandon(p->writer);
    p->writer = NULL;
}

void proc_free(struct proc *p)
{
    if (!p)
        return;
    if (p->writer)
        seg_writer_free(p->writer);
    prof_free(p);                      /* profiler */
    if (p->pidfd >= 0)
        close(p->pidfd);
    shm_region_close(&p->region);
    free(p->rings);
    free(p->meta);
    trigd_proc_free(&p->trig);
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

int proc_status(const struct proc *p, D9__ProcessStatus *ps)
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
    ps->bad_stamps = p->ts_bad;
    ps->bad_counters = p->counters_bad;
    if (!ps->comm || !ps->exe || !ps->state || !ps->sampler)
        return -ENOMEM;
    size_t n = 0;
    uint64_t lag = 0;
    for (uint32_t i = 0; i < p->geo.ring_count; i++) {
        const struct proc_ring *r = &p->rings[i];
        n += r->active || r->quarantined;
        if (r->active) {
            uint64_t l, d;
            live_ring(p, r, i, &l, &d);
            lag += l;
            ps->lost += d;
        }
    }
    ps->lag_bytes = lag;
    if (!n)
        return 0;
    ps->rings = calloc(n, sizeof *ps->rings);
    if (!ps->rings)
        return -ENOMEM;
    for (uint32_t i = 0; i < p->geo.ring_count; i++) {
        const struct proc_ring *r = &p->rings[i];
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
        uint64_t lost_new = 0;
        rs->lag_bytes = r->lag_bytes;
        if (r->active)
            live_ring(p, r, i, &rs->lag_bytes, &lost_new);
        rs->lost = r->lost + lost_new;
        rs->quarantined = r->quarantined;
        ps->rings[ps->n_rings++] = rs;
        if (!rs->thread_name)
            return -ENOMEM;
    }
    return 0;
}

void proc_status_free(D9__ProcessStatus *ps)
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
