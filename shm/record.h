/*
 * record.h — record framing and per-type validation, shared by the ring
 * reader (collector, untrusted shm) and the segment decoder (collector and
 * d9 CLI, untrusted files). Pure functions over bytes the caller owns: they
 * never read outside [rec, rec + avail).
 */
#ifndef D9_SHM_RECORD_H
#define D9_SHM_RECORD_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include "shm/d9_abi.h"

/* Fixed length of a built-in record type, or 0 for variable-length types
 * (CUSTOM, CPU_SAMPLE, SCHED_SWITCH) and -1 for unknown types. */
int shm_record_fixed_len(uint16_t type);

/* Exact length of each fixed-size type; 0 = variable, -1 = not a record type. */
extern const int16_t shm_record_len_table[D9_REC_TYPE_COUNT];

/* Out-of-line part of shm_record_check for CUSTOM / CPU_SAMPLE / SCHED_SWITCH. */
int shm_record_check_var(const void *rec, size_t avail);

/*
 * Validate one non-PAD record at rec with avail readable bytes: length
 * aligned and within [D9_REC_HDR_SIZE, min(avail, D9_REC_MAX)], type known,
 * fixed-size types exactly sized, variable types internally consistent
 * (custom payload_len fits; stack nframes fits and <= D9_STACK_MAX_FRAMES).
 * Returns the record length, or -EBADMSG. Inline: it runs once per record
 * on the collector's drain path, and the fixed-size case is a table lookup.
 */
static inline int shm_record_check(const void *rec, size_t avail)
{
    uint16_t len, type;
    if (avail < D9_REC_HDR_SIZE)
        return -EBADMSG;
    __builtin_memcpy(&len, rec, 2);
    __builtin_memcpy(&type, (const uint8_t *)rec + 2, 2);
    if (type >= D9_REC_TYPE_COUNT || len > avail)
        return -EBADMSG;
    int fixed = shm_record_len_table[type];
    if (fixed > 0)
        return len == fixed ? (int)len : -EBADMSG;
    if (fixed < 0)
        return -EBADMSG;
    return shm_record_check_var(rec, avail);
}

/* Human-readable name of a record type ("poll_start", ...), "unknown" otherwise. */
const char *shm_record_type_name(uint16_t type);

/* Inverse of shm_record_type_name; returns -1 when name is not a type. */
int shm_record_type_from_name(const char *name);

#endif /* D9_SHM_RECORD_H */
