/*
 * prog_cxx.cpp — a C++ program using every macro and every function of
 * agent/d9.h, linked against libd9agent.so: the public header must compile
 * as C++ (g++ and clang++, -Wall -Wextra -Werror) and mean the same there.
 *
 * Usage: prog_cxx [EVENTS]   (default 100)
 * Records EVENTS rounds of every built-in record and one custom event
 * "cxx_event" per round, then one mismatched custom event (dropped and
 * counted), and checks what it can see from inside: ids, stats, region,
 * shutdown. Prints "pid=P events=N lost=L rings=R region=PATH" on success;
 * any failed check prints one line on stderr and exits 1.
 * tests/integration/test_cxx.sh runs it against a real collector.
 */
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include "agent/d9.h"

D9_SCHEMA(cxx_event, "cxx_event",
          D9_FIELD_STR("name"), D9_FIELD_U64("n"), D9_FIELD_I64("delta"),
          D9_FIELD_F64("half"), D9_FIELD_BOOL("odd"));

#define EXPECT(cond)                                                          \
    do {                                                                      \
        if (!(cond)) {                                                        \
            std::fprintf(stderr, "prog_cxx: line %d: %s\n", __LINE__, #cond); \
            std::exit(1);                                                     \
        }                                                                     \
    } while (0)

static d9_loc loop_site()
{
    return D9_LOC();            /* one call site: the same id every time */
}

int main(int argc, char **argv)
{
    long events = argc > 1 ? std::strtol(argv[1], NULL, 10) : 100;
    EXPECT(events > 0);

    EXPECT(d9_init() == 0);
    EXPECT(d9_init() == 0);     /* idempotent */
    EXPECT(d9_enabled() == 1);

    d9_runtime rt;
    EXPECT(d9_runtime_register("cxxrt", &rt) == 0 && rt.id != 0);
    d9_runtime again;
    EXPECT(d9_runtime_register("cxxrt", &again) == 0 && again.id == rt.id);
    EXPECT(d9_runtime_register("", &again) == -EINVAL);
    d9_runtime def = d9_runtime_default();
    EXPECT(def.id != 0 && def.id != rt.id);

    d9_loc here = loop_site();
    EXPECT(here != 0 && loop_site() == here);
    d9_loc manual = d9_loc_register("prog_cxx.cpp", 4242, "manual_site");
    EXPECT(manual != 0 && manual != here);
    EXPECT(d9_loc_register("prog_cxx.cpp", 4242, "manual_site") == manual);

    for (long i = 0; i < events; i++) {
        uint64_t task = (uint64_t)i + 1;
        d9_task_spawn(rt, task, here);
        d9_wake(rt, 0, task, 0);
        d9_poll_start(rt, 0, task, manual);
        d9_queue_depth(rt, D9_WORKER_NONE_ID, (uint64_t)i);
        d9_emit(&cxx_event, D9_STR("item"), D9_U64(i), D9_I64(-i), D9_F64(i / 2.0),
                D9_BOOL(i % 2));
        d9_poll_end(rt, 0, task);
        d9_task_terminate(rt, task);
    }
    d9_worker_park(def, 0);
    d9_worker_unpark(def, 0);
    d9_value one[] = { D9_U64(1) };
    d9_emit_values(&cxx_event, one, 1);     /* 1 value for 5 fields: dropped, counted */

    d9_stats st;
    d9_get_stats(&st);
    EXPECT(st.lost == 1);
    EXPECT(st.rings_in_use == 1);
    EXPECT(st.threads_untraced == 0);
    const char *region = d9_region_path();
    EXPECT(region != NULL && access(region, F_OK) == 0);
    std::printf("pid=%ld events=%ld lost=%llu rings=%u region=%s\n", (long)getpid(), events,
                (unsigned long long)st.lost, st.rings_in_use, region);
    std::fflush(stdout);

    d9_shutdown();
    d9_shutdown();              /* harmless twice */
    EXPECT(d9_enabled() == 0);
    EXPECT(d9_init() == -ESHUTDOWN);
    return 0;
}
