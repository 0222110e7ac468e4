/*
 * q_loopwork.h — loop work: the time a loop thread spends neither in a
 * callback nor in its wait. The one definition every reader uses:
 * `d9 top-polls --loop-work`, d9 sql's `loop_work` table, `d9 findings`'
 * loop-work kind.
 *
 * Why: a loop does work between callbacks that no poll covers: Neovim's
 * vim.schedule work runs after uv_run returns, a program's own code between
 * two uv_run(UV_RUN_ONCE) calls, libuv's own bookkeeping. Without this it
 * shows only as busy time that no poll explains.
 *
 * The definition. On one thread (process, tid), a loop worker's records
 * say where it is: inside a poll (poll_start .. poll_end, nested polls
 * counted), parked (worker_park .. worker_unpark: its wait), or neither.
 * A loop-work interval is a stretch of "neither" that starts at a record
 * that leaves a poll or the wait (the outermost poll_end, an unpark; a
 * poll_end without its start counts as leaving one) and ends at the next
 * record that enters one (a poll_start or a park), lasting >= min_ns. Only
 * a loop worker's threads count: a thread that has had a park or unpark
 * record in the scan (the closing park itself makes it one); so a thread
 * pool that runs jobs as polls and waits unrecorded has no loop work.
 * Intervals not known whole are left out: one open at the scan's start (the
 * thread's state is unknown until its first record that leaves a poll or the
 * wait), one still open at its end, one cut by a gap (a block not read).
 *
 * CPU samples: a cpu_sample record of the thread (its tid field) inside the
 * interval (by time) counts in `samples`; the innermost frames of the first
 * Q_LOOPWORK_SAMPLES of them are handed out with it (ips), so a reader can
 * name the work (q_sym).
 *
 * Called from scan callbacks in time order (q_scan.h). Memory: one entry
 * per thread seen, with a bounded sample buffer; never per record or per
 * interval. Must never: write to the store.
 */
#ifndef D9_COL_Q_LOOPWORK_H
#define D9_COL_Q_LOOPWORK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collector/query/q_scan.h"

/* The record types q_loopwork_feed uses: scan these. */
#define Q_LOOPWORK_TYPES (1u << D9_REC_POLL_START | 1u << D9_REC_POLL_END |                     \
                          1u << D9_REC_WORKER_PARK | 1u << D9_REC_WORKER_UNPARK |               \
                          1u << D9_REC_CPU_SAMPLE)

#define Q_LOOPWORK_DEF_MIN_NS  1000000ull   /* shorter gaps are the loop's own dispatch */
#define Q_LOOPWORK_SAMPLES     64u          /* innermost frames kept per interval */
#define Q_LOOPWORK_NAME        "[loop work]"  /* how readers name it where a location goes */

struct q_loopwork_iv {
    int64_t process_id;
    uint32_t pid, tid, ring, generation;
    uint16_t runtime, worker;       /* of the thread's latest poll, park or unpark record */
    uint64_t start_ns, end_ns;
    uint64_t samples;               /* CPU samples of the thread inside */
    uint32_t nips;                  /* <= Q_LOOPWORK_SAMPLES */
    const uint64_t *ips;            /* innermost frame of the first nips samples; valid
                                       until the next feed */
};

struct q_loopwork;
/* min_ns: the shortest interval delivered (0 = Q_LOOPWORK_DEF_MIN_NS). 0 or -ENOMEM. */
int q_loopwork_new(struct q_loopwork **out, uint64_t min_ns);
void q_loopwork_free(struct q_loopwork *w);

/* One record in scan order (other types are ignored), or a gap of src's
 * ring (rec == NULL: the thread's state becomes unknown). Returns 1 and
 * fills *done when rec ends a loop-work interval, 0 otherwise, -ENOMEM. */
int q_loopwork_feed(struct q_loopwork *w, const struct q_rec_src *src,
                    const struct d9_rec_hdr *rec, size_t len, struct q_loopwork_iv *done);

/* Carry the thread states an earlier scan left in from (a look-back over
 * records before the window) into w, before w is fed the records after
 * them: a stretch open at the boundary then ends in w whole. Threads of
 * from overwrite w's. 0 or -ENOMEM. */
int q_loopwork_carry(struct q_loopwork *w, const struct q_loopwork *from);

/* When thread (process_id, tid), a loop worker, is outside its polls and
 * its wait now: the time it left them; else 0 (a look-ahead reads on past
 * a window while this is not 0). */
uint64_t q_loopwork_open_since(const struct q_loopwork *w, int64_t process_id, uint32_t tid);

#endif /* D9_COL_Q_LOOPWORK_H */
