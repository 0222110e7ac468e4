/*
 * reindex.c — index a sealed segment from its contents (see reindex.h).
 *
 * Reads the file through the validating segment reader only; writes only
 * through idx_*. Strings from the file's header (comm, exe) are bounded by
 * their field sizes and their control bytes replaced before they reach the
 * index.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/idx.h"
#include "collector/store/idx_trig.h"
#include "collector/store/reindex.h"
#include "collector/store/rollup.h"
#include "collector/store/seg_reader.h"
#include "collector/store/seg_salvage.h"
#include "collector/store/sym.h"
#include "shm/meta.h"

static void clean_str(char *dst, const char *src, size_t n)
{
    memcpy(dst, src, n);
    dst[n] = 0;
    for (char *c = dst; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
}

struct thr {
    uint32_t tid, ring, generation;
    uint64_t first, last;
    int ended;
};

/* A SEG_BLK_TRIGGER block's trigger back into the index (idx_trig_restore:
 * one the index has already is left alone). Its strings are the file's:
 * ended here, control bytes replaced. */
static int restore_trigger(struct idx *x, int64_t pid_row, const void *payload)
{
    struct seg_trigger st;
    memcpy(&st, payload, sizeof st);
    char source[SEG_TRIG_NAME_MAX + 1], verdict[SEG_TRIG_NAME_MAX + 1];
    char reason[SEG_TRIG_REASON_MAX + 1];
    clean_str(source, st.source, sizeof st.source);
    clean_str(verdict, st.verdict, sizeof st.verdict);
    clean_str(reason, st.reason, sizeof st.reason);
    struct idx_trigger t = {
        .pid = st.pid, .process_id = pid_row, .t_ns = st.t_ns, .source = source,
        .reason = reason, .verdict = verdict, .win_t0_ns = st.win_t0_ns,
        .win_t1_ns = st.win_t1_ns,
    };
    return idx_trig_restore(x, &t);
}

/* Runtimes, threads, triggers and the process's end, from the file's
 * blocks, in one transaction. */
static int index_extras(struct idx *x, int64_t pid_row, struct seg_reader *r)
{
    int e = 0;
    struct thr *t = NULL;
    size_t nt = 0, capt = 0;
    struct seg_exit ex = { 0 };
    int have_exit = 0;
    if (idx_begin(x) < 0)
        return -EBUSY;
    struct seg_block b;
    while (e >= 0 && (e = seg_reader_next(r, &b)) == 1) {
        if (b.h.kind == SEG_BLK_META) {
            size_t off = 0;
            struct shm_meta_entry me;
            while (e >= 0 && shm_meta_next(b.payload, b.h.len, &off, &me) == 1)
                if (me.kind == D9_META_RUNTIME)
                    e = idx_runtime_upsert(x, pid_row, me.id, me.name);
        } else if (b.h.kind == SEG_BLK_EXIT) {
            memcpy(&ex, b.payload, sizeof ex);
            have_exit = 1;
        } else if (b.h.kind == SEG_BLK_TRIGGER) {
            e = restore_trigger(x, pid_row, b.payload);
        } else if (b.h.ring >= SYM_SEG_RING) {
            /* the collector's pseudo rings (mappings, perf samples: SYM_SEG_RING and
             * the one above it) are no thread of the process: the collector never
             * indexes them as threads, so neither does a re-index */
        } else {
            size_t i = 0;
            while (i < nt && (t[i].ring != b.h.ring || t[i].generation != b.h.generation))
                i++;
            if (i == nt) {
                if (nt == capt) {
                    size_t cap = capt ? capt * 2 : 32;
                    struct thr *n = realloc(t, cap * sizeof *t);
                    if (!n) {
                        e = -ENOMEM;
                        break;
                    }
                    t = n;
                    capt = cap;
                }
                t[nt++] = (struct thr){ b.h.tid, b.h.ring, b.h.generation, 0, 0, 0 };
            }
            if (b.h.kind == SEG_BLK_THREAD_END)
                t[i].ended = 1;
            if (b.h.kind == SEG_BLK_THREAD_END || b.h.nrec > 0) {
                if (!t[i].first || b.h.t_first < t[i].first)
                    t[i].first = b.h.t_first;
                if (b.h.t_last > t[i].last)
                    t[i].last = b.h.t_last;
            }
        }
    }
    for (size_t i = 0; e >= 0 && i < nt; i++)
        e = idx_thread_upsert(x, pid_row, t[i].tid, t[i].ring, t[i].generation, NULL,
                              t[i].first, t[i].last, t[i].ended);
    if (e >= 0 && have_exit && ex.reason != SEG_EXIT_UNKNOWN)
        e = idx_process_end(x, pid_row, ex.t_ns,
                            ex.reason == SEG_EXIT_CRASHED ? "crashed"
                            : ex.reason == SEG_EXIT_EXEC ? "exec" : "exited", ex.code);
    if (e >= 0 && idx_commit(x) < 0)
        e = -EIO;
    if (e < 0)
        idx_rollback(x);
    free(t);
    return e < 0 ? e : 0;
}

int reindex_summary(struct idx *x, const char *store_dir, const char *path,
                    const struct seg_summary *sum)
{
    struct seg_reader *r;
    int e = seg_reader_open(&r, path, 0);
    if (e < 0)
        return e;
    const struct seg_file_hdr *h = seg_reader_header(r);
    char comm[sizeof h->comm + 1], exe[sizeof h->exe + 1];
    clean_str(comm, h->comm, sizeof h->comm);
    clean_str(exe, h->exe, sizeof h->exe);
    struct idx_process ip = { .pid = sum->pid, .uid = sum->uid, .start_time = sum->start_time,
                              .comm = comm, .exe = exe, .first_ns = sum->t_min };
    int64_t pid_row;
    uint8_t *ru = NULL;
    size_t ru_len = 0;
    if (rollup_file(path, &ru, &ru_len) < 0)    /* none: readers scan its records */
        ru = NULL;
    if ((e = idx_process_upsert(x, &ip, &pid_row)) == 0 &&
        (e = idx_segment_commit_rollup(x, pid_row, sum, store_dir, ru, ru_len)) == 0)
        e = index_extras(x, pid_row, r);
    free(ru);
    seg_reader_close(r);
    return e;
}

int reindex_file(struct idx *x, const char *store_dir, const char *path)
{
    if (!x || !store_dir || !path)
        return -EINVAL;
    struct seg_summary sum;
    memset(&sum, 0, sizeof sum);
    int e = seg_salvage_summarize(path, &sum);
    if (e < 0)
        return e;
    e = reindex_summary(x, store_dir, path, &sum);
    seg_salvage_release(&sum);
    return e;
}
