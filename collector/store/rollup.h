/*
 * rollup.h — a segment's aggregates, computed once from its records so that
 * aggregate questions (poll counts and durations per location, a worker's
 * busy and parked time and run-queue waits, per second) are answered without
 * reading the records again.
 *
 * Called by: seg_writer.c (live feeding while the collector writes a
 * segment: seg_writer_rollup_*, the seal's rollups without reading the
 * file back), reindex.c and the seal's fallback (rollup_file: the same
 * computation from a sealed file, for salvaged segments, start-up recovery,
 * `d9 fsck --repair`, `d9 pull`, and a segment whose live feeding was
 * interrupted; both give the same bytes), idx.c (stores the bytes), and
 * readers (d9 sql's *_stats tables, fsck) through
 * rollup_decode. Must never: trust stored bytes (rollup_decode checks
 * everything: lengths, CRC, order, sums; fuzzed by tests/fuzz/fuzz_rollup.c),
 * or keep memory per record (per key and per histogram bin in use only;
 * the one exception: 24 bytes per wake and poll_start for the wake->poll
 * pairing's time order: fed live, those of the last ROLLUP_PAIR_LAG_NS and
 * a step; read from a file, those of the whole segment, freed at its end).
 *
 * What is counted (the definitions readers rely on), from one segment file
 * alone, in file order, per thread (ring generation):
 *   - a poll is a poll_start record; its key is (runtime, worker, location)
 *     of that record and its bucket the ROLLUP_BUCKET_NS interval holding
 *     its start. Pairing is q_pair's (collector/query/q_pair.h): a poll_end
 *     closes the latest open start of its task on the same thread, and only
 *     that one (polls nest: block_on inside a poll; a poll opened inside it
 *     and still open stays open for its own end). A poll without an end in
 *     the segment (still running at the seal, its end dropped, replaced by
 *     a second start of the same task on the thread, or ended in the next
 *     segment after a rotation: polls are never paired across segments) is
 *     `unfinished`: counted in count, not in sum, max or the histogram. A
 *     poll_end without a start in the segment adds nothing;
 *   - sum_ns, max_ns and the histogram are over the finished polls'
 *     durations (end.ts - start.ts), the whole duration in the start's bucket;
 *   - per worker (runtime, worker) and bucket: polls (as above), busy_ns =
 *     the union of its finished polls (q_sched.h's definition): a finished
 *     poll with no poll open below it adds its time (from its start, or
 *     from the end of a poll that covered it) to its start's bucket; one
 *     finished inside an open poll adds it to that poll's pending time,
 *     dropped when that poll ends (its own time covers it) and passed down
 *     when it leaves without an end (replaced, or still open at the end of
 *     the segment: then to the bucket of the thread's oldest open poll), so
 *     an unfinished poll stops no later poll from counting; parks = worker_park
 *     records, parked_ns = unpark.ts - park.ts of the park intervals that
 *     close in the segment (in the park's bucket), waits / wait_sum_ns /
 *     wait_max_ns = every sampled park AND unpark record's sched_wait_ns (the
 *     definition of collector/query/q_sched.h), in the record's bucket;
 *   - per bucket (version 3): wakes per runtime (wake records) and custom
 *     events per schema (custom records), in the record's bucket;
 *   - per worker and bucket (version 4): cpu_first / cpu_last = the first
 *     and the largest cpu_ns of its sampled park/unpark records in the
 *     bucket (q_sched.h's CPU: last - first of the window's sampled
 *     records; a window merges them as min(first) and max(last));
 *   - per runtime and bucket (version 4): wake->poll delays, paired by
 *     q_wake.h's rule (collector/query/q_wake.h: a wake is answered by the
 *     wakee task's next poll_start on any thread of the process, in time
 *     order; a later wake of the same task before that poll replaces it).
 *     The segment's wakes and poll starts are put in time order (ties in
 *     file order) before pairing, so blocks of different threads that
 *     overlap in time pair as a time-ordered scan does; wakes are never
 *     paired across segments (a wake still pending at the end adds nothing).
 *     Key: the answered wake's runtime and bucket; value: count, sum, max
 *     and a histogram of poll.ts - wake.ts;
 *   - per custom-event schema, numeric field and bucket (version 4): count,
 *     sum, min, max and a histogram of the field's values, decoded by the
 *     schema of the segment's metadata (q_decode.h's layout; the fields
 *     decoded before a malformed part of a payload count, an unknown
 *     schema's events add nothing). u64 and bool (0/1) fields: sum modulo
 *     2^64, histogram of the value; i64: sum modulo 2^64 as two's
 *     complement, histogram of |value|; f64: sum as a double (not exact),
 *     histogram of |value| cut to an integer, NaN left out (SQL reads a
 *     NaN as NULL); str fields: nothing.
 * So for whole buckets, the counts and sums equal a raw scan of the same
 * segments that uses the same pairing rule per segment. Whether a poll is
 * finished depends only on the records after its start, so a poll is the
 * same fact in every bucket of a window (collector/query/q_agg.h answers a
 * window that cuts buckets from the whole buckets plus rollup_only scans).
 *
 * Histogram: log-linear, ROLLUP_SUB sub-bins per power of two; values below
 * ROLLUP_SUB have a bin each. A quantile is reported as its bin's middle,
 * within 1/(2*ROLLUP_SUB) = 6.25 % of the true value (and never above max).
 *
 * Stored bytes (little-endian; version ROLLUP_VERSION; rollups of another
 * version (1, 2: busy_ns counted only outermost polls; 3: no CPU, delays or
 * fields) do not check, and
 * readers answer those segments from their records, as for missing ones;
 * `d9 fsck --repair` rewrites them):
 *   header   magic "D9RU", u16 version, u16 0, u32 npoll, u32 nworker,
 *            u64 bucket_ns, u32 crc32c (of everything after the header), u32 ncount,
 *            u32 ndelay, u32 nfield
 *   npoll x  u16 runtime, u16 worker, u32 loc, u64 bucket (start ns),
 *            u64 count, u64 unfinished, u64 sum_ns, u64 max_ns, u32 nbins, u32 0,
 *            nbins x (u32 bin, u32 n): bins strictly increasing, n > 0,
 *            sum of n = count - unfinished
 *   nworker x u16 runtime, u16 worker, u32 0, u64 bucket, u64 polls, u64 busy_ns,
 *            u64 parks, u64 parked_ns, u64 waits, u64 wait_sum_ns, u64 wait_max_ns
 *   ncount x u16 runtime, u16 kind, u32 id, u64 bucket, u64 n (> 0): kind
 *            ROLLUP_COUNT_WAKE (id 0) or ROLLUP_COUNT_EVENT (runtime 0, id =
 *            the schema)
 * Entries are sorted by key (poll: bucket, runtime, worker, loc; worker:
 * bucket, runtime, worker; count: bucket, kind, runtime, id; delay:
 * bucket, runtime; field: bucket, schema, field), each key once.
 */
#ifndef D9_COL_ROLLUP_H
#define D9_COL_ROLLUP_H

#include <stddef.h>
#include <stdint.h>

struct seg_block;

#define ROLLUP_VERSION     4u             /* 2: q_pair's pairing; 3: busy = union, counts;
                                             4: CPU, wake delays, event fields */
#define ROLLUP_BUCKET_NS   1000000000ull          /* 1 s */
#define ROLLUP_SUB_BITS    3u
#define ROLLUP_SUB         (1u << ROLLUP_SUB_BITS)  /* sub-bins per power of two */
#define ROLLUP_BINS        ((64u - ROLLUP_SUB_BITS + 1u) * ROLLUP_SUB)
#define ROLLUP_HDR_SIZE    40u
#define ROLLUP_POLL_SIZE   56u                    /* without its bins */
#define ROLLUP_BIN_SIZE    8u
#define ROLLUP_WORKER_SIZE 88u
#define ROLLUP_COUNT_SIZE  24u
#define ROLLUP_DELAY_SIZE  40u                    /* without its bins */
#define ROLLUP_FIELD_SIZE  56u                    /* without its bins */
#define ROLLUP_WORKER_CPU  1u   /* a worker entry's flags: cpu_first / cpu_last are set */
#define ROLLUP_COUNT_WAKE  0u   /* a count entry's kind: wake records of a runtime */
#define ROLLUP_COUNT_EVENT 1u   /* custom events of a schema (id) */

struct rollup;

int rollup_new(struct rollup **out);
void rollup_free(struct rollup *r);
/* Count only what happens inside these inclusive time ranges (at most
 * ROLLUP_ONLY_MAX; n = 0: everything, the default): a poll by its start, a
 * park interval by its park, a park/unpark's wait by its record. Records
 * outside are still fed for pairing, so a poll counted here is finished
 * exactly when it is in the unrestricted rollups. For readers' window edges
 * (q_agg); never for stored rollups. 0 or -EINVAL. */
#define ROLLUP_ONLY_MAX 2u
struct rollup_range {
    uint64_t from, to;
};
int rollup_only(struct rollup *r, const struct rollup_range *ranges, unsigned n);
/* Count the poll entries only, per location (a reader's question about
 * locations: d9 top-polls --by-location, location_stats): each (bucket,
 * runtime, location) one entry with worker 0, its workers' polls merged;
 * no worker entry, no wake or event count, no wake->poll delay, no custom
 * field is kept. Polls are paired exactly as without it, so each entry
 * (count, unfinished, sum, max, bins) is the sum (max) of the full
 * rollups' entries of its location over their workers. Each poll entry's
 * bins are counted in an array of its own (4 KiB, for the first 2048
 * entries; the rest as usual): a few entries updated by every poll.
 * For readers (q_edge.c); never for stored rollups. Before the first
 * block; 0 or -EINVAL. */
int rollup_polls_only(struct rollup *r);

/* Feed one block of a segment, in file order (META blocks give the schemas
 * of the custom events after them; other non-DATA blocks are ignored), as
 * seg_reader_next returned it: its records checked there are walked by
 * their lengths (bounds checked) and not checked again. 0 or -ENOMEM /
 * -EBADMSG (a record length that does not fit the block). */
int rollup_feed_block(struct rollup *r, const struct seg_block *b);
/* A DATA block of thread (ring, generation) that could not be read: what
 * the thread had open (polls, a park) ends here without its end, as the
 * record scans' pairing ends it at a gap (q_pair.c): the polls count
 * unfinished. 0 or -ENOMEM. */
int rollup_feed_gap(struct rollup *r, uint32_t ring, uint32_t generation);
/* Live feeding (the collector, through seg_writer_rollup_*): the same
 * accumulation from what the writer appends, in file order, without the
 * file: a META block's entries (already checked), and a DATA block's records
 * in ring framing (already checked; a block may come in several runs, one
 * call each, in order). Fed exactly the blocks of a segment, then
 * rollup_finish gives the bytes rollup_file gives for the sealed file.
 * Fed this way, the wakes and poll starts are paired as they come: those
 * more than ROLLUP_PAIR_LAG_NS before the latest one fed, each time that
 * mark has moved ROLLUP_PAIR_STEP_NS, and then freed (the pairing's memory
 * holds that lag's events, not the segment's). A thread whose records come
 * later than that lag behind another's (a wake or poll start before the
 * mark) makes the call fail with -ESTALE: the live rollups are then given
 * up (seg_writer) and the seal computes them from the file. 0 or -ENOMEM /
 * -EBADMSG (a record's length out of its run) / -ESTALE. */
#define ROLLUP_PAIR_LAG_NS  2000000000ull  /* 20 x the drain's batch age (drain.h) */
#define ROLLUP_PAIR_STEP_NS 1000000000ull
int rollup_feed_meta(struct rollup *r, const uint8_t *entries, size_t len);
int rollup_feed_records(struct rollup *r, uint32_t ring, uint32_t generation,
                        const uint8_t *records, size_t len);
/* The wakes and poll starts held for the pairing now (24 bytes each). */
uint64_t rollup_events_kept(const struct rollup *r);
/* The work of polls leaving their threads' stacks of open polls so far:
 * slots let go, walked past or moved. A few per poll however many are
 * open at once (a second start of a task open deep in the stack, ends lost
 * by a ring): the tests' check that a removal is not O(open polls). */
uint64_t rollup_open_steps(const struct rollup *r);
/* The stored bytes of everything fed (malloc'ed into *out). 0 or -ENOMEM. */
int rollup_encode(const struct rollup *r, uint8_t **out, size_t *len);

/* THE computation: the rollups of the sealed segment file at path. 0 or
 * -errno (the file unreadable or corrupt: seg_reader's checks). */
int rollup_file(const char *path, uint8_t **out, size_t *len);
/* A block of a segment that cannot be read (offset, why), left out. */
typedef void (*rollup_skip_fn)(void *arg, uint64_t offset, const char *why);
/* The same counting only inside ranges (rollup_only; none: everywhere): a
 * window's edges. With skip, a DATA block whose payload is damaged but
 * whose header checks is left out (skip is told), as the record scans
 * leave it out (q_scan.c), and the rest counts: its thread's open polls
 * and park end there, unfinished (rollup_feed_gap, q_pair's rule at a
 * gap); a bad header (where the next block starts is unknown) or a damaged
 * META block (the names after it unknown; the scans refuse the file too)
 * still fails the whole file. Without skip, any damage fails it. */
int rollup_file_only(const char *path, const struct rollup_range *ranges, unsigned n,
                     rollup_skip_fn skip, void *arg, uint8_t **out, size_t *len);

/* For a reader that feeds only some blocks of a segment (collector/query/
 * q_edge.c): whether thread (ring, generation) still holds something that a
 * later record of it may count inside rollup_only's ranges (a counted poll
 * open, a counted park not yet closed; 0 once nothing counted waits on it:
 * its later blocks can change no counted fact). rollup_finish: the end of
 * what was fed (the pends of polls still open count and the wakes are
 * paired, as at a segment's end) and rollup_encode. 0 or -errno. */
int rollup_pending(const struct rollup *r, uint32_t ring, uint32_t generation);
int rollup_finish(struct rollup *r, uint8_t **out, size_t *len);

/* ---- reading stored bytes ---- */

struct rollup_poll {
    uint16_t runtime, worker;
    uint32_t loc;
    uint64_t bucket_ns, count, unfinished, sum_ns, max_ns;
    uint32_t nbins;
    const uint8_t *bins;            /* nbins x (u32 bin, u32 n), inside the checked bytes */
};

struct rollup_worker {
    uint16_t runtime, worker;
    uint32_t flags;                 /* ROLLUP_WORKER_CPU */
    uint64_t bucket_ns, polls, busy_ns, parks, parked_ns, waits, wait_sum_ns, wait_max_ns;
    uint64_t cpu_first, cpu_last;
};

struct rollup_delay {
    uint16_t runtime;
    uint64_t bucket_ns, count, sum_ns, max_ns;
    uint32_t nbins;
    const uint8_t *bins;
};

/* A field's sum/min/max as the type's bits: read them with these. */
union rollup_val {
    uint64_t u;
    int64_t i;
    double f;
};

struct rollup_field {
    uint32_t schema;
    uint16_t field;
    uint8_t type;                   /* D9_FT_U64, I64, F64 or BOOL */
    uint64_t bucket_ns, count;
    union rollup_val sum, min, max;
    uint32_t nbins;
    const uint8_t *bins;
};

struct rollup_count {
    uint16_t kind, runtime;         /* ROLLUP_COUNT_*; runtime: wakes only (events: 0) */
    uint32_t id;                    /* events: the schema id of the segment's metadata */
    uint64_t bucket_ns, n;
};

struct rollup_view {
    const uint8_t *buf;
    size_t len;
    uint32_t npoll, nworker, ncount, ndelay, nfield;
    size_t workers_off, counts_off, delays_off, fields_off;
};

/* Check stored bytes completely (see the header); 0 or -EBADMSG with a
 * reason in why. */
int rollup_decode(const uint8_t *buf, size_t len, struct rollup_view *v, char *why,
                  size_t why_cap);
/* Iterate a decoded view: *off = 0 first; 1 = *out set, 0 = end. */
int rollup_next_poll(const struct rollup_view *v, size_t *off, uint32_t *i,
                     struct rollup_poll *out);
int rollup_worker_at(const struct rollup_view *v, uint32_t i, struct rollup_worker *out);
int rollup_count_at(const struct rollup_view *v, uint32_t i, struct rollup_count *out);
int rollup_next_delay(const struct rollup_view *v, size_t *off, uint32_t *i,
                      struct rollup_delay *out);
int rollup_next_field(const struct rollup_view *v, size_t *off, uint32_t *i,
                      struct rollup_field *out);

/* Histograms merged at query time. */
struct rollup_hist {
    uint64_t n[ROLLUP_BINS];
    uint64_t total;
};
void rollup_hist_add(struct rollup_hist *h, const struct rollup_poll *p);
/* The same for checked bins of any entry (nbins x (u32 bin, u32 n)). */
void rollup_hist_add_bins(struct rollup_hist *h, const uint8_t *bins, uint32_t nbins);
uint32_t rollup_bin(uint64_t v);
/* The same over one checked entry's own bins (no merge). */
uint64_t rollup_poll_quantile(const struct rollup_poll *p, double q);
/* The same over checked bins holding total values, at most max. */
uint64_t rollup_bins_quantile(const uint8_t *bins, uint32_t nbins, uint64_t total, uint64_t max,
                              double q);
/* The q-quantile (0 < q <= 1) of h, as its bin's middle, at most max_ns; 0 if empty. */
uint64_t rollup_hist_quantile(const struct rollup_hist *h, double q, uint64_t max_ns);

#endif /* D9_COL_ROLLUP_H */
