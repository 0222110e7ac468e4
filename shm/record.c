/*
 * record.c — framing and per-type validation of records (see record.h).
 *
 * Called by the collector on private copies of ring bytes and by segment
 * readers on file bytes; both are untrusted. Every check is on lengths that
 * the caller proved readable: nothing here reads past rec + avail.
 */
#include <errno.h>
#include <string.h>
#include "shm/record.h"

static const char *const rec_names[D9_REC_TYPE_COUNT] = {
    [D9_REC_PAD] = "pad",
    [D9_REC_POLL_START] = "poll_start",
    [D9_REC_POLL_END] = "poll_end",
    [D9_REC_WAKE] = "wake",
    [D9_REC_WORKER_PARK] = "worker_park",
    [D9_REC_WORKER_UNPARK] = "worker_unpark",
    [D9_REC_TASK_SPAWN] = "task_spawn",
    [D9_REC_TASK_TERMINATE] = "task_terminate",
    [D9_REC_QUEUE_DEPTH] = "queue_depth",
    [D9_REC_CUSTOM] = "custom",
    [D9_REC_CPU_SAMPLE] = "cpu_sample",
    [D9_REC_SCHED_SWITCH] = "sched_switch",
};

const int16_t shm_record_len_table[D9_REC_TYPE_COUNT] = {
    [D9_REC_PAD] = -1,
    [D9_REC_POLL_START] = sizeof(struct d9_rec_poll_start),
    [D9_REC_POLL_END] = sizeof(struct d9_rec_poll_end),
    [D9_REC_WAKE] = sizeof(struct d9_rec_wake),
    [D9_REC_WORKER_PARK] = sizeof(struct d9_rec_worker),
    [D9_REC_WORKER_UNPARK] = sizeof(struct d9_rec_worker),
    [D9_REC_TASK_SPAWN] = sizeof(struct d9_rec_task),
    [D9_REC_TASK_TERMINATE] = sizeof(struct d9_rec_task),
    [D9_REC_QUEUE_DEPTH] = sizeof(struct d9_rec_queue_depth),
    [D9_REC_CUSTOM] = 0,
    [D9_REC_CPU_SAMPLE] = 0,
    [D9_REC_SCHED_SWITCH] = 0,
};

int shm_record_fixed_len(uint16_t type)
{
    if (type >= D9_REC_TYPE_COUNT)
        return -1;
    return shm_record_len_table[type];
}

const char *shm_record_type_name(uint16_t type)
{
    if (type >= D9_REC_TYPE_COUNT)
        return "unknown";
    return rec_names[type];
}

int shm_record_type_from_name(const char *name)
{
    if (!name)
        return -1;
    for (int t = 1; t < D9_REC_TYPE_COUNT; t++)
        if (strcmp(rec_names[t], name) == 0)
            return t;
    return -1;
}

/* Variable-length types; shm_record_check (record.h) handled the rest. */
int shm_record_check_var(const void *rec, size_t avail)
{
    struct d9_rec_hdr h;
    if (avail < D9_REC_HDR_SIZE)
        return -EBADMSG;
    memcpy(&h, rec, sizeof h);
    if (h.len < D9_REC_HDR_SIZE || h.len > D9_REC_MAX || h.len > avail ||
        h.len % D9_REC_ALIGN != 0)
        return -EBADMSG;
    if (h.type != D9_REC_CUSTOM && h.type != D9_REC_CPU_SAMPLE &&
        h.type != D9_REC_SCHED_SWITCH)
        return -EBADMSG;

    const uint8_t *p = rec;
    if (h.type == D9_REC_CUSTOM) {
        struct d9_rec_custom c;
        if (h.len < sizeof c)
            return -EBADMSG;
        memcpy(&c, p, sizeof c);
        /* payload must fit; the record is the payload rounded up to 8 */
        if (c.payload_len > h.len - sizeof c ||
            h.len - sizeof c - c.payload_len >= D9_REC_ALIGN)
            return -EBADMSG;
        if (c.schema == 0)
            return -EBADMSG;
        return h.len;
    }
    /* CPU_SAMPLE, SCHED_SWITCH */
    struct d9_rec_stack s;
    if (h.len < sizeof s)
        return -EBADMSG;
    memcpy(&s, p, sizeof s);
    if (s.nframes > D9_STACK_MAX_FRAMES ||
        sizeof s + (size_t)s.nframes * sizeof(uint64_t) != h.len)
        return -EBADMSG;
    return h.len;
}
