/*
 * store_fix.h — what the hand-built store tools (tool_store_known,
 * tool_store_findings, tool_store_window, tool_store_aggs) share: a ring of
 * records kept in memory with its block statistics, one ring's records
 * written as one packed DATA block of a segment, a metadata log, and the
 * way they die on an error.
 *
 * Callers: tests/integration/tool_store_*.c (linked in by the Makefile
 * rule of those four tools). Invariants: a ring's seq numbers the records
 * it was given, in order; st covers exactly the records held (n bytes).
 * Test code: dies on any error (message on stderr, exit 1), never returns one.
 */
#ifndef D9_TESTS_STORE_FIX_H
#define D9_TESTS_STORE_FIX_H

#include <stddef.h>
#include <stdint.h>
#include "collector/store/idx.h"
#include "collector/store/seg_writer.h"

#define STORE_FIX_META_MAX 4096u

struct store_fix_ring {
    uint8_t *raw;               /* records, grown as needed */
    size_t n, cap;              /* bytes held, allocated */
    uint32_t seq;               /* the next record's seq */
    struct seg_data_stats st;   /* of the records held */
};

struct store_fix_meta {
    uint8_t b[STORE_FIX_META_MAX];
    size_t len;
};

/* A new store in dir (which must not exist): its index, open. */
struct idx *store_fix_create(const char *dir);

/* "PROGRAM: what: strerror(|rc|)" on stderr, exit 1. */
__attribute__((noreturn)) void store_fix_die(const char *what, int rc);

/* Count the record with header h into st (time range, per type, total). */
void store_fix_count(struct seg_data_stats *st, const struct d9_rec_hdr *h);

/* Append rec (len bytes, header first) to r: its seq is r's next one. */
void store_fix_put(struct store_fix_ring *r, void *rec, size_t len);

/* A poll_start / poll_end of task on worker w of runtime 1 at t, into r. */
void store_fix_poll_start(struct store_fix_ring *r, unsigned w, uint64_t task, uint32_t loc,
                          uint64_t t);
void store_fix_poll_end(struct store_fix_ring *r, unsigned w, uint64_t task, uint64_t t);

/* A CPU sample of thread tid at t into r: two frames, leaf under caller
 * (addresses), weighing 1 ms. */
void store_fix_sample(struct store_fix_ring *r, uint32_t tid, uint64_t t, uint64_t leaf,
                      uint64_t caller);

/* Forget r's records and statistics (seq goes on); free its memory. */
void store_fix_clear(struct store_fix_ring *r);
void store_fix_free(struct store_fix_ring *r);

/* raw[0..n) (whole records, statistics st) as one packed DATA block of
 * thread tid, ring ring, with lost records counted. */
void store_fix_block(struct seg_writer *sw, const uint8_t *raw, size_t n, uint32_t tid,
                     uint32_t ring, uint64_t lost, const struct seg_data_stats *st);

/* r's records as DATA blocks of thread tid, ring ring, at most per_block
 * records each (none lost). */
void store_fix_blocks(struct seg_writer *sw, const struct store_fix_ring *r, unsigned per_block,
                      uint32_t tid, uint32_t ring);

/* One metadata entry (kind, id, n bytes of payload p) at the end of m. */
void store_fix_meta_add(struct store_fix_meta *m, uint16_t kind, uint32_t id, const uint8_t *p,
                        int n);

#endif /* D9_TESTS_STORE_FIX_H */
