/*
 * bench_lttng_tp.c — instantiates the LTTng-UST probes of bench_lttng_tp.h.
 * Compiled without -Werror (LTTng's generated code is not ours to fix) and
 * linked only into bench_lttng.
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "tests/bench/bench_lttng_tp.h"
