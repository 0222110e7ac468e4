/*
 * q_wake.h — a wake and the poll it caused: "the wakee's next poll".
 *
 * The rule, one for every reader (the JSON and Perfetto exports' flows,
 * d9 serve's wake arrows): a wake record (waker -> wakee task) is answered
 * by the next poll_start of the wakee task in the same process, on any
 * thread, in scan (time) order. A second wake of the same task before that
 * poll replaces the first (the poll answers the latest wake; the earlier
 * one is answered by none). Matching is exact on (process, task): tasks
 * whose hashes share a slot never answer each other's wakes.
 *
 * Called from scan callbacks in time order (q_scan.h). Memory: one entry
 * per woken task not polled since; never per wake.
 */
#ifndef D9_COL_Q_WAKE_H
#define D9_COL_Q_WAKE_H

#include <stdint.h>

struct q_wake;

/* What a reader keeps of a pending wake: its time and one value of its own
 * (a flow id, the waker's lane). */
struct q_wake_pending {
    uint64_t ts;
    uint64_t data;
};

int q_wake_new(struct q_wake **out);
void q_wake_free(struct q_wake *w);

/* A wake of task in process_id at p->ts. 0, or -ENOMEM. */
int q_wake_put(struct q_wake *w, int64_t process_id, uint64_t task,
               const struct q_wake_pending *p);

/* A poll_start of task: 1 and *p = the wake it answers (no longer
 * pending), or 0 when no wake of task is pending. */
int q_wake_take(struct q_wake *w, int64_t process_id, uint64_t task, struct q_wake_pending *p);

/* Wakes pending now (woken, not polled since). */
uint64_t q_wake_pending_count(const struct q_wake *w);

#endif /* D9_COL_Q_WAKE_H */
