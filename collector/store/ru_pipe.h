/*
 * ru_pipe.h — segments' live rollups (rollup.h) computed on a thread of
 * their own: the thread that writes segments (d9collectd's drain) only
 * hands each chunk of records over, so the rollups add almost nothing to
 * its cost per record, and on a host with a core to spare nothing to how
 * fast it can empty the rings.
 *
 * Called by: seg_writer.c (seg_writer_rollup_start with a pipe: every feed
 * of the segment's live rollups goes through the pipe), storedir.c (one
 * pipe per store, made at the first segment and freed at storedir_close),
 * and the drain (seg_writer_rollup_slot: a chunk is read from the ring
 * straight into the buffer the pipe will carry, so handing it over copies
 * nothing).
 *
 * Model: one producer thread (the one that makes the pipe; every call here
 * but ru_pipe_free's join is the producer's) and one consumer thread (the
 * pipe's). Messages go through a ring of RU_PIPE_SLOTS, each with a
 * RU_PIPE_SLOT-byte buffer; a stream is one segment's rollups and belongs
 * to the pipe's thread from ru_pipe_open until the message that ends it
 * (ru_pipe_drop or ru_pipe_finish) is consumed. The consumer applies a
 * stream's messages in the order they were sent, with exactly the code of
 * inline feeding (rollup_feed_meta, rollup_feed_records, rollup_finish), so
 * a piped stream's bytes equal inline feeding's and rollup_file's.
 * Back-pressure, never loss: a full ring makes the producer wait for room
 * (on one core this costs what inline feeding costs), and ru_pipe_finish
 * waits for the stream's last message to be consumed.
 *
 * Invariants: a message's buffer is the producer's until the message is
 * published and the consumer's from then until it is consumed; a feed the
 * consumer fails (no memory) breaks only its stream, whose finish then
 * answers -ESTALE (the seal reads the file back, as for an interrupted
 * segment). Must never: drop or reorder a stream's messages, block the
 * consumer on anything but an empty ring, or take signals on the consumer
 * thread (the daemon's signalfd and SIGBUS guard belong to the drain).
 */
#ifndef D9_COL_RU_PIPE_H
#define D9_COL_RU_PIPE_H

#include <stddef.h>
#include <stdint.h>

#define RU_PIPE_SLOT  (32u * 1024u)     /* bytes a records message carries in place */
#define RU_PIPE_SLOTS 32u               /* messages in flight (1 MiB of buffers: the drain
                                           writes into them, so few stay in cache) */

struct ru_pipe;
struct ru_stream;

/* Starts the consumer thread. 0 or -errno. */
int ru_pipe_new(struct ru_pipe **out);
/* Consumes what was sent, stops the thread, frees. Every stream must have
 * ended (dropped or finished) before. NULL is a no-op. */
void ru_pipe_free(struct ru_pipe *p);

/* A new stream: empty rollups. 0 or -ENOMEM. */
int ru_pipe_open(struct ru_pipe *p, struct ru_stream **out);
/* The buffer (RU_PIPE_SLOT bytes) that the next ru_pipe_records carries
 * without a copy when its records are there; waits while the ring is full.
 * Valid until the next message is sent. */
uint8_t *ru_pipe_slot(struct ru_pipe *p);
/* Feed whole records of a thread (rollup_feed_records) / META entries
 * (rollup_feed_meta). Records at ru_pipe_slot()'s buffer travel in place;
 * others are copied (into the slot, or a heap copy when longer). Waits
 * while the ring is full. 0, -ENOMEM or -EINVAL (records in a slot's
 * buffer that is not the current one: a message was sent since that
 * ru_pipe_slot) with nothing sent: the caller ends the stream. */
int ru_pipe_records(struct ru_pipe *p, struct ru_stream *s, uint32_t ring,
                    uint32_t generation, const uint8_t *records, size_t len);
int ru_pipe_meta(struct ru_pipe *p, struct ru_stream *s, const uint8_t *entries, size_t len);
/* End a stream, its rollups unwanted. Never fails (waits for room). */
void ru_pipe_drop(struct ru_pipe *p, struct ru_stream *s);
/* End a stream: waits until every message of it is consumed, then *out
 * (malloc'ed) and *len are rollup_finish's bytes. 0, -ESTALE (a feed of
 * the stream failed on the pipe's thread) or rollup_finish's error. */
int ru_pipe_finish(struct ru_pipe *p, struct ru_stream *s, uint8_t **out, size_t *len);

/* Counters (the producer's; d9collectd logs them at shutdown). */
struct ru_pipe_stats {
    uint64_t sent, copied, waits;  /* messages; records messages copied; waits for room */
    uint64_t wakes;                /* times the producer woke the consumer */
};
void ru_pipe_get_stats(const struct ru_pipe *p, struct ru_pipe_stats *out);

#endif /* D9_COL_RU_PIPE_H */
