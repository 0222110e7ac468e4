/*
 * reindex.c — index a sealed segment from its contents (see reindex.h).
 *
 * Reads the file through the validating segment reader only; writes only
 * through idx_*. Strings from the file's header (comm, exe) are bounded by
 * their field sizes and their control bytes replaced before they reach the
 * index.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/idx.h"
#include "collector/store/idx_trig.h"
#include "collector/store/reindex.h"
#include "collector/store/rollup.h"
#include "collector/store/seg_reader.h"
#include "collector/store/seg_salvage.h"
#include "collector/store/sym.h"
#include "collector/store/trig_rec.h"
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
 * one the index has already is left alone), with fields (NULL: none). Its
 * strings are the file's: ended here, control bytes replaced. */
static int restore_trigger(struct idx *x, int64_t pid_row, const struct seg_trigger *st,
                           const char *fields)
{
    char source[SEG_TRIG_NAME_MAX + 1], verdict[SEG_TRIG_NAME_MAX + 1];
    char reason[SEG_TRIG_REASON_MAX + 1];
    clean_str(source, st->source, sizeof st->source);
    clean_str(verdict, st->verdict, sizeof st->verdict);
    clean_str(reason, st->reason, sizeof st->reason);
    struct idx_trigger t = {
        .pid = st->pid, .process_id = pid_row, .t_ns = st->t_ns, .source = source,
        .reason = reason, .verdict = verdict, .win_t0_ns = st->win_t0_ns,
        .win_t1_ns = st->win_t1_ns, .fields = fields,
    };
    return idx_trig_restore(x, &t);
}

/* A marker trigger of the file, kept aside until its record is found. */
struct marker {
    struct seg_trigger st;
    char *fields;               /* malloc'ed JSON text; NULL: none (yet) */
    int found;                  /* its record was found */
};

static int marker_cmp(const void *a, const void *b)
{
    const struct marker *x = a, *y = b;
    return x->st.t_ns < y->st.t_ns ? -1 : x->st.t_ns > y->st.t_ns;
}

/* The first of m[0, n) (sorted by time) at t_ns, or n. */
static size_t marker_first(const struct marker *m, size_t n, uint64_t t_ns)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m[mid].st.t_ns < t_ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The record rec (len bytes, of marker schema e) is the record of the
 * markers of m[0, n) at its time with its reason: they get its fields. */
static void marker_record(struct marker *m, size_t n, const struct shm_meta_entry *e,
                          const uint8_t *rec, size_t len, uint64_t ts)
{
    size_t i = marker_first(m, n, ts);
    if (i == n || m[i].st.t_ns != ts)
        return;
    char why[TRIG_REC_REASON_MAX + 1], fields[TRIG_REC_FIELDS_MAX];
    trig_rec_reason(rec, len, why, sizeof why);
    uint8_t types[D9_SCHEMA_MAX_FIELDS];
    char names[D9_SCHEMA_MAX_FIELDS * (D9_NAME_MAX + 1)];
    unsigned nf = trig_rec_types(e, types);
    trig_rec_names(e, nf, names);
    int done = 0;
    for (; i < n && m[i].st.t_ns == ts; i++) {
        char reason[SEG_TRIG_REASON_MAX + 1];
        clean_str(reason, m[i].st.reason, sizeof m[i].st.reason);
        if (m[i].found || strcmp(reason, why) != 0)
            continue;
        m[i].found = 1;
        if (!done++)
            trig_rec_fields(rec, len, nf, types, names, fields, sizeof fields);
        if (fields[0])
            m[i].fields = strdup(fields);   /* no memory: no fields */
    }
}

/* The second walk of the file at path: each marker of m[0, n) gets the
 * fields of its record. A file that cannot be read again leaves them
 * without (its rows still come back). */
static void marker_fields(const char *path, struct marker *m, size_t n)
{
    struct seg_reader *r;
    if (seg_reader_open(&r, path, 0) < 0)
        return;
    qsort(m, n, sizeof *m, marker_cmp);
    uint64_t t_lo = m[0].st.t_ns, t_hi = m[n - 1].st.t_ns;
    struct seg_block b;
    while (seg_reader_next(r, &b) == 1) {
        if (b.h.kind != SEG_BLK_DATA || b.h.t_last < t_lo || b.h.t_first > t_hi)
            continue;
        size_t off = 0;
        const struct d9_rec_hdr *h;
        while (seg_reader_next_record(&b, &off, &h) == 1) {
            if (h->type != D9_REC_CUSTOM || h->len < sizeof(struct d9_rec_custom) ||
                h->ts < t_lo || h->ts > t_hi)
                continue;
            uint32_t id;
            memcpy(&id, (const uint8_t *)h + offsetof(struct d9_rec_custom, schema), sizeof id);
            const struct shm_meta_entry *e = seg_reader_schema(r, id);
            if (trig_rec_is_marker(e))
                marker_record(m, n, e, (const uint8_t *)h, h->len, h->ts);
        }
    }
    seg_reader_close(r);
}

/* Runtimes, threads, triggers and the process's end, from the blocks of
 * the file at path (r: its reader), in one transaction. */
/* Room for one more element after n in *arr (capacity *cap, doubled from
 * first). 0 or -ENOMEM (*arr untouched). */
static int room_for_one(void **arr, size_t *cap, size_t n, size_t size, size_t first)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : first;
    void *a = c > *cap ? realloc(*arr, c * size) : NULL;
    if (!a)
        return -ENOMEM;
    *arr = a;
    *cap = c;
    return 0;
}

static int index_extras(struct idx *x, int64_t pid_row, struct seg_reader *r, const char *path)
{
    int e = 0;
    struct thr *t = NULL;
    size_t nt = 0, capt = 0;
    struct marker *mk = NULL;
    size_t nmk = 0, capmk = 0;
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
            struct seg_trigger st;
            memcpy(&st, b.payload, sizeof st);
            if (strncmp(st.source, "marker", sizeof st.source) != 0) {
                e = restore_trigger(x, pid_row, &st, NULL);
                continue;
            }
            /* a marker: restored once its fields are known */
            if ((e = room_for_one((void **)&mk, &capmk, nmk, sizeof *mk, 16)) < 0)
                break;
            mk[nmk++] = (struct marker){ .st = st };
        } else if (b.h.ring >= SYM_SEG_RING) {
            /* the collector's pseudo rings (mappings, perf samples: SYM_SEG_RING and
             * the one above it) are no thread of the process: the collector never
             * indexes them as threads, so neither does a re-index */
        } else {
            size_t i = 0;
            while (i < nt && (t[i].ring != b.h.ring || t[i].generation != b.h.generation))
                i++;
            if (i == nt) {
                if ((e = room_for_one((void **)&t, &capt, nt, sizeof *t, 32)) < 0)
                    break;
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
    if (e >= 0 && nmk)
        marker_fields(path, mk, nmk);
    for (size_t i = 0; e >= 0 && i < nmk; i++)
        e = restore_trigger(x, pid_row, &mk[i].st, mk[i].fields);
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
    for (size_t i = 0; i < nmk; i++)
        free(mk[i].fields);
    free(mk);
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
        e = index_extras(x, pid_row, r, path);
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
