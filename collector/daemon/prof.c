/*
 * prof.c — per-process profiling in d9collectd (see prof.h): opens perf
 * sampling for an adopted process, settles the sampler handshake in the
 * region header, and writes perf samples and memory-map snapshots into the
 * process's segment as pseudo-ring DATA blocks.
 *
 * Invariants: a segment gets the "d9.map" schema entry and a full maps
 * snapshot before its first block of samples from this module (tracked by
 * the writer's identity: pointer + open time); perf samples taken out of the
 * perf rings are either written or counted lost (they cannot be re-read).
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "collector/daemon/drain.h"
#include "collector/daemon/guard.h"
#include "collector/store/col_log.h"
#include "collector/daemon/proc.h"
#include "collector/daemon/prof.h"
#include "collector/store/seg_writer.h"
#include "collector/daemon/storedir.h"
#include "collector/store/sym.h"
#include "collector/store/perfmap.h"

_Static_assert(SYM_MAP_SCHEMA_ID <= SEG_META_IDS_MAX, "d9.map schema id must be kept by readers");

#define MAPS_BUF_SIZE (512u * 1024u)

struct prof {
    struct perf_proc *pp;       /* NULL: not sampling with perf */
    struct sym_maps_state maps;
    const struct seg_writer *seg;   /* segment the maps were last written to */
    uint64_t seg_opened_ns;
    uint64_t last_maps_ns, last_flush_ns;
    uint64_t maps_every_ns;     /* PROF_MAPS_NS, doubled while the maps stay the same */
    int maps_gone;              /* /proc/<pid>/maps no longer readable */
    uint8_t *buf;               /* PROF_BUF_SIZE */
    uint8_t *mbuf;              /* MAPS_BUF_SIZE */
    uint64_t lost;              /* samples that could not be written */
    uint64_t open_errors;       /* perf_stats.open_errors already reported */
    struct perfmap pm;          /* /tmp/perf-<pid>.map read so far */
    size_t pm_sent;             /* entries of pm written to the current segment */
    int pm_refused;             /* the file was refused: not read again */
    uint64_t pm_bad;            /* skipped lines already reported */
    int pm_full_logged;
};

/* CAS the region's sampler NONE -> PERF under the guard. Returns the mode
 * in force afterwards, or -EFAULT when the region faulted. */
static int claim_perf(struct proc *p)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    guard_arm(&jb, p->region.base, p->region.size);
    uint32_t expect = D9_SAMPLER_NONE;
    /* the one decision between us and the agent (agent/sampler.h) */
    if (atomic_compare_exchange_strong(&p->region.hdr->sampler, &expect, D9_SAMPLER_PERF))
        expect = D9_SAMPLER_PERF;
    guard_disarm();
    return (int)expect;
}

void prof_attach(struct proc *p, const struct perf_config *cfg)
{
    struct prof *pr = calloc(1, sizeof *pr);
    if (!pr)
        return;
    pr->buf = malloc(PROF_BUF_SIZE);
    pr->mbuf = malloc(MAPS_BUF_SIZE);
    if (!pr->buf || !pr->mbuf) {
        free(pr->buf);
        free(pr->mbuf);
        free(pr);
        return;
    }
    p->prof = pr;
    if (!cfg || (!cfg->freq_hz && !cfg->switch_period) || p->ended || p->quarantined)
        return;
    int rc = perf_proc_open(&pr->pp, p->pid, cfg);
    if (rc == -EACCES || rc == -EPERM || rc == -ENOSYS || rc == -ENOENT) {
        col_warn("pid %u (%s): perf_event_open not permitted (%s; see "
                 "/proc/sys/kernel/perf_event_paranoid): no collector-side profile, the agent's "
                 "in-process sampler takes over", p->pid, p->geo.comm, strerror(-rc));
        return;
    }
    if (rc < 0) {
        if (rc != -ESRCH)
            col_warn("pid %u (%s): cannot start perf sampling: %s", p->pid, p->geo.comm,
                     strerror(-rc));
        return;
    }
    int mode = claim_perf(p);
    if (mode == D9_SAMPLER_PERF) {
        struct perf_stats st;
        perf_proc_stats(pr->pp, &st);
        /* what is in force: the per-CPU events' rate is logged once, by perf_host */
        char off[64];
        if (cfg->switch_period)
            snprintf(off, sizeof off, "off-CPU 1 in %u context switches", cfg->switch_period);
        else
            snprintf(off, sizeof off, "no off-CPU sampling");
        if (cfg->host_cpu)
            col_info("pid %u (%s): on-CPU samples from the per-CPU events, %s", p->pid,
                     p->geo.comm, off);
        else
            col_info("pid %u (%s): perf sampling at %u Hz per thread, %s, %u threads%s, "
                     "rings of %u KiB", p->pid, p->geo.comm, cfg->freq_hz, off, st.threads,
                     st.kernel_frames ? ", kernel stacks" : ", user stacks only", st.ring_kib);
        return;
    }
    if (mode == D9_SAMPLER_ITIMER)
        col_info("pid %u (%s): the agent samples in-process (DIAL9_SAMPLER); no perf sampling",
                 p->pid, p->geo.comm);
    perf_proc_close(pr->pp);
    pr->pp = NULL;
}

int prof_sampling(const struct proc *p)
{
    return p->prof && p->prof->pp;
}

int prof_add_cpu_sample(struct proc *p, const struct perf_sample *s)
{
    if (!p->prof || !p->prof->pp)
        return 0;
    if (perf_proc_add_cpu_sample(p->prof->pp, s) == -ENOMEM)
        p->prof->lost++;        /* -ENOBUFS is counted by perf_proc itself */
    return 1;
}

static int write_block(struct proc *p, struct storedir *st, uint32_t ring, uint64_t lost,
                       const uint8_t *recs, size_t len, uint64_t now)
{
    int rc = seg_writer_add_data(p->writer, p->pid, ring, PERF_SEG_GENERATION, lost, recs, len);
    if (rc) {
        storedir_write_failed(st, rc, "profile block", p->pid, now);
        return rc;
    }
    uint64_t n = 0;
    for (size_t o = 0; o + sizeof(struct d9_rec_hdr) <= len;) {
        uint16_t l;
        memcpy(&l, recs + o, sizeof l);
        if (l == 0)
            break;
        o += l;
        n++;
    }
    p->records += n;
    p->writer_records += n;
    p->lost += lost;
    p->bytes_written += len;
    return 0;
}

/* A new segment: schema entry first, and every mapping again. */
static int new_segment(struct proc *p, struct prof *pr)
{
    uint8_t entry[512];
    int n = sym_map_schema_payload(entry + sizeof(struct d9_meta_hdr),
                                   sizeof entry - sizeof(struct d9_meta_hdr));
    if (n < 0)
        return n;
    struct d9_meta_hdr mh = {
        .len = (uint16_t)((sizeof mh + (size_t)n + 7) & ~(size_t)7),
        .kind = D9_META_SCHEMA, .id = SYM_MAP_SCHEMA_ID,
    };
    memset(entry + sizeof mh + n, 0, mh.len - sizeof mh - (size_t)n);
    memcpy(entry, &mh, sizeof mh);
    int rc = seg_writer_add_meta(p->writer, entry, mh.len);
    if (rc)
        return rc;
    pr->seg = p->writer;
    pr->seg_opened_ns = seg_writer_opened_ns(p->writer);
    sym_maps_state_reset(&pr->maps);
    pr->pm_sent = 0;            /* every segment names its JIT frames itself */
    return 0;
}

static const char *perfmap_why(long rc)
{
    switch (rc) {
    case -ELOOP: return "a symlink";
    case -EPERM: return "not owned by the process's uid";
    case -EINVAL: return "not a regular file";
    case -EFBIG: return "larger than 16 MiB";
    default: return strerror((int)-rc);
    }
}

/* Read what the process's perf map gained and write the entries the current
 * segment lacks as JIT "d9.map" records. */
static void write_perfmap(struct proc *p, struct storedir *st, struct prof *pr, uint64_t now)
{
    if (!pr->pm_refused) {
        long rc = perfmap_poll(&pr->pm, p->pid, p->uid, NULL);
        if (rc < 0) {
            pr->pm_refused = 1;
            col_log(COL_LOG_WARN, "pid %u: perf map %s/perf-%u.map refused (%s): its JIT "
                    "frames stay unnamed", p->pid, PERFMAP_DIR, p->pid, perfmap_why(rc));
        }
        if (pr->pm.bad > pr->pm_bad) {
            col_log_limited(&p->rl, COL_LOG_WARN, "pid %u: perf map: %" PRIu64
                            " malformed lines ignored", p->pid, pr->pm.bad - pr->pm_bad);
            pr->pm_bad = pr->pm.bad;
        }
        if (pr->pm.full && !pr->pm_full_logged) {
            pr->pm_full_logged = 1;
            col_log(COL_LOG_WARN, "pid %u: perf map: more than %u entries, the rest ignored",
                    p->pid, PERFMAP_ENTRIES_MAX);
        }
    }
    while (pr->pm_sent < pr->pm.n) {
        size_t w = 0, i = pr->pm_sent;
        for (; i < pr->pm.n; i++) {
            const struct perfmap_entry *e = &pr->pm.e[i];
            long n = sym_jit_encode(e->start, e->end, e->name, now, &pr->maps, pr->mbuf + w,
                                    MAPS_BUF_SIZE - w);
            if (n < 0)
                break;
            w += (size_t)n;
        }
        if (w == 0 || write_block(p, st, SYM_SEG_RING, 0, pr->mbuf, w, now) != 0)
            return;             /* again on the next maps pass */
        pr->pm_sent = i;
    }
}

static void write_maps(struct proc *p, struct storedir *st, struct prof *pr, uint64_t now)
{
    if (pr->maps_gone)
        return;
    long n = sym_maps_emit(p->pid, now, &pr->maps, pr->mbuf, MAPS_BUF_SIZE);
    /* unchanged: look again later; changed (a dlopen, a new segment): soon */
    if (n == 0)
        pr->maps_every_ns = pr->maps_every_ns >= PROF_MAPS_MAX_NS / 2 ? PROF_MAPS_MAX_NS
                                                                      : pr->maps_every_ns * 2;
    else
        pr->maps_every_ns = PROF_MAPS_NS;
    if (n == -ESRCH || n == -ENOENT) {
        pr->maps_gone = 1;      /* exited: the last snapshot stands */
        return;
    }
    if (n < 0) {
        col_log_limited(&p->rl, COL_LOG_WARN, "pid %u: cannot snapshot /proc/%u/maps: %s",
                        p->pid, p->pid, strerror((int)-n));
        return;
    }
    if (n > 0 && write_block(p, st, SYM_SEG_RING, 0, pr->mbuf, (size_t)n, now) != 0)
        sym_maps_state_reset(&pr->maps);   /* try again next time */
}

void prof_pass(struct proc *p, struct storedir *st, uint64_t now, int final)
{
    struct prof *pr = p->prof;
    if (!pr)
        return;
    if (!pr->maps_every_ns)
        pr->maps_every_ns = PROF_MAPS_NS;
    int maps_due = final || now - pr->last_maps_ns >= pr->maps_every_ns || pr->last_maps_ns == 0;
    /* the perf rings are emptied on every pass (one load of data_head per
     * thread when idle), so a thread switching very often cannot overflow
     * its ring between two block writes; blocks are written at most every
     * PROF_FLUSH_NS unless many samples are waiting */
    long pending = pr->pp ? perf_proc_poll(pr->pp, now, final) : 0;
    int flush_due = pr->pp && pending >= 0 &&
                    (final || now - pr->last_flush_ns >= PROF_FLUSH_NS ||
                     pending >= PROF_PENDING_MAX);
    if (!maps_due && !flush_due)
        return;
    if (flush_due) {
        pr->last_flush_ns = now;
        struct perf_stats ps;
        perf_proc_stats(pr->pp, &ps);
        if (ps.open_errors > pr->open_errors) {
            col_log_limited(&p->rl, COL_LOG_WARN, "pid %u: %" PRIu64 " threads could not be "
                            "sampled with perf (descriptor limit or permissions)", p->pid,
                            ps.open_errors - pr->open_errors);
            pr->open_errors = ps.open_errors;
        }
    }
    size_t n = 0;
    uint64_t lost = 0;
    if (flush_due) {
        n = perf_proc_take(pr->pp, pr->buf, PROF_BUF_SIZE, &lost);
        lost += pr->lost;
        pr->lost = 0;
    }
    if (!maps_due && n == 0 && lost == 0)
        return;
    if (!storedir_writable(st, now) || drain_writer(p, st, now) != 0) {
        /* samples already out of the perf rings: count what cannot be written */
        for (; n > 0; n = perf_proc_take(pr->pp, pr->buf, PROF_BUF_SIZE, NULL))
            for (size_t o = 0; o < n;) {
                uint16_t l;
                memcpy(&l, pr->buf + o, sizeof l);
                o += l;
                pr->lost++;
            }
        pr->lost += lost;
        return;
    }
    if (p->writer != pr->seg || seg_writer_opened_ns(p->writer) != pr->seg_opened_ns) {
        if (new_segment(p, pr) != 0)
            return;
        maps_due = 1;
    }
    if (maps_due) {
        pr->last_maps_ns = now;
        write_maps(p, st, pr, now);
        write_perfmap(p, st, pr, now);
    }
    while (n > 0 || lost > 0) {
        if (n == 0) {           /* only drops to report: an empty block carries them */
            write_block(p, st, PERF_SEG_RING, lost, NULL, 0, now);
            break;
        }
        if (write_block(p, st, PERF_SEG_RING, lost, pr->buf, n, now) != 0) {
            pr->lost += lost;
            for (size_t o = 0; o < n;) {
                uint16_t l;
                memcpy(&l, pr->buf + o, sizeof l);
                o += l;
                pr->lost++;
            }
        }
        lost = 0;
        n = perf_proc_take(pr->pp, pr->buf, PROF_BUF_SIZE, NULL);
    }
}

void prof_free(struct proc *p)
{
    struct prof *pr = p->prof;
    if (!pr)
        return;
    if (pr->pp) {
        struct perf_stats ps;
        perf_proc_stats(pr->pp, &ps);
        if (ps.dwarf_unwound || ps.dwarf_failed)   /* the cost of --stack-mode dwarf */
            col_info("pid %u: %" PRIu64 " samples unwound with DWARF CFI, %.1f us each; "
                     "%" PRIu64 " not (pc in no known object); %" PRIu64 " lost", p->pid,
                     ps.dwarf_unwound,
                     ps.dwarf_unwound ? (double)ps.dwarf_ns / 1e3 / (double)ps.dwarf_unwound : 0.0,
                     ps.dwarf_failed, ps.lost);
    }
    perf_proc_close(pr->pp);
    free(pr->buf);
    free(pr->mbuf);
    perfmap_free(&pr->pm);
    free(pr);
    p->prof = NULL;
}
