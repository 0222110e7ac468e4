/*
 * bench_lttng_tp.h — LTTng-UST tracepoint provider "d9bench" for the
 * comparison benchmarks: one event, poll_start, with the same payload as a
 * d9 poll-start record (task u64, loc u32, runtime u16, worker u16; LTTng
 * adds its own timestamp in the event header). Included by bench_lttng.c
 * (the probe call) and bench_lttng_tp.c (the probe definitions).
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER d9bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "tests/bench/bench_lttng_tp.h"

#if !defined(D9_BENCH_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define D9_BENCH_LTTNG_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(
    d9bench, poll_start,
    LTTNG_UST_TP_ARGS(uint64_t, task, uint32_t, loc, uint16_t, runtime, uint16_t, worker),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, task, task)
        lttng_ust_field_integer(uint32_t, loc, loc)
        lttng_ust_field_integer(uint16_t, runtime, runtime)
        lttng_ust_field_integer(uint16_t, worker, worker)
    )
)

#endif /* D9_BENCH_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
