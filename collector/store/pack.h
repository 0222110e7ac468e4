/*
 * pack.h — the packed encoding of DATA block records (segment format 2).
 *
 * The drain writes a thread's records into a DATA block; in ring framing a
 * poll-start costs 32 bytes, most of them the same from record to record
 * (length, type, a sequence number that counts up by one, timestamps a few
 * hundred ns apart, the same runtime/worker/location words). Packed, the same
 * record takes 4-12 bytes: less to checksum, to copy into the page cache and
 * to keep on disk. The encoding is lossless (unpacking gives back the ring
 * framing byte for byte) and self-contained per block, so a reader can seek
 * to any indexed block.
 *
 * Packed payload (flags SEG_BF_PACKED in the block header):
 *
 *   u32 raw_len        bytes of the records once unpacked (ring framing)
 *   u32 zero
 *   one entry per record, in order:
 *     tag    u8        bits 0-3 type, bit 4 SEQ: a seq follows, bit 5 LEN: a
 *                      len follows, bits 6-7 zero
 *     [seq]  LEB128    when seq != previous seq + 1 (always for the first)
 *     [len]  LEB128    when len != the type's fixed length (variable types)
 *     values n = 1 + (len - 16) / 8 unsigned 64-bit values: first
 *            zigzag(ts - previous ts) (previous = 0 for the first record),
 *            then the record's payload words, each word i < PACK_XOR_WORDS
 *            XORed with word i of the previous record of the same type (0
 *            for the first). Two values per control byte: its low nibble is
 *            the first value's byte count (0..8), its high nibble the
 *            second's; then those bytes, little endian (leading zero bytes
 *            are not stored). An odd last value has a high nibble of 0.
 *   zero bytes up to a multiple of 8
 *
 * Bound: an entry is at most ceil((n + 1) / 2) bytes longer than its record,
 * so a packed payload never exceeds PACK_BOUND(raw_len).
 *
 * Both functions are pure (caller memory, no allocation). The unpacker
 * treats its input as hostile: every count, length and byte is checked, it
 * never writes past out_cap and never reads past len.
 */
#ifndef D9_COL_PACK_H
#define D9_COL_PACK_H

#include <stddef.h>
#include <stdint.h>
#include "shm/d9_abi.h"

#define PACK_PREFIX      8u     /* u32 raw_len + u32 zero */
#define PACK_XOR_WORDS   4u     /* payload words remembered per type */
/* Largest packed payload for raw_len bytes of records (prefix and padding included). */
#define PACK_BOUND(raw)  ((raw) + (raw) / 16u + PACK_PREFIX + 8u)

/* Encoder state: one per block, reset with pack_init. */
struct pack_state {
    uint64_t ts;
    uint32_t seq;
    int first;
    uint64_t xw[D9_REC_TYPE_COUNT][PACK_XOR_WORDS];
};

void pack_init(struct pack_state *s);

/* Pack records in[0, len) (ring framing, validated by the caller: every
 * record passes shm_record_check, no PADs) at out, continuing the state of
 * earlier calls for the same block. Returns the bytes written, or -ENOSPC
 * when they would exceed cap (nothing is then defined about out). Entries
 * only: the caller writes the prefix and the padding (pack_finish). */
long pack_records(struct pack_state *restrict s, const uint8_t *restrict in, size_t len,
                  uint8_t *restrict out, size_t cap);

/* Complete a packed payload of entries_len entry bytes that starts with
 * PACK_PREFIX reserved bytes at payload: writes the prefix (raw_len) and the
 * zero padding; returns the payload length (a multiple of 8). The caller
 * guarantees room for PACK_PREFIX + entries_len + 7 bytes. */
size_t pack_finish(uint8_t *payload, size_t entries_len, uint32_t raw_len);

/* Unpack a packed payload in[0, len) holding exactly nrec records into out
 * (out_cap bytes; out must not be NULL). Returns the raw length (every record passed
 * shm_record_check), or -EBADMSG for anything malformed: a bad prefix or
 * tag, a truncated or oversized value, a record that does not check, a
 * record count or raw length that disagrees, non-zero padding; -ENOBUFS
 * when out_cap is smaller than the prefix's raw_len. */
long pack_unpack(const uint8_t *in, size_t len, uint32_t nrec, uint8_t *out, size_t out_cap);

/* raw_len announced by a packed payload's prefix; -EBADMSG if it has none. */
long pack_raw_len(const uint8_t *in, size_t len);

#endif /* D9_COL_PACK_H */
