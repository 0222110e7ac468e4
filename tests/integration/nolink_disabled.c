/*
 * nolink_disabled.c — every function and macro of agent/d9.h, compiled with
 * -DD9_DISABLE and linked with nothing but libc (test_api_compile.sh): the
 * header's promise that a disabled build needs no library. Run, it checks
 * that every call says "off" (D9_OFF, id 0, NULL, zeros) and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/d9.h"

#ifndef D9_DISABLE
#error "build with -DD9_DISABLE"
#endif

D9_SCHEMA(dyn_ev, "dyn", D9_FIELD_STR("s"), D9_FIELD_U64("u"), D9_FIELD_I64("i"),
          D9_FIELD_F64("f"), D9_FIELD_BOOL("b"));
D9_EVENT(typed_ev, "typed", (STR, s), (U64, u), (I64, i), (F64, f), (BOOL, b));
D9_TRIGGER_EVENT(typed_tg, (U64, ms), (STR, path));

#define EXPECT(c) do { if (!(c)) { fprintf(stderr, "nolink_disabled: %s\n", #c); \
                                    return 1; } } while (0)

int main(void)
{
    EXPECT(d9_init() == D9_OFF);
    d9_config cfg = D9_CONFIG_INIT;
    cfg.ring_kb = 64;
    EXPECT(d9_init_with(&cfg) == D9_OFF);
    static const char code_marker = 0;
    EXPECT(d9_loc_register_code(&code_marker) == 0);
    EXPECT(d9_enabled() == 0);
    d9_runtime rt = { 7 };
    EXPECT(d9_runtime_register("rt", &rt) == D9_OFF && rt.id == 0);
    EXPECT(d9_runtime_default().id == 0);
    d9_loc here = D9_LOC();
    EXPECT(here == 0 && d9_loc_register("f.c", 1, "f") == 0);
    d9_task_spawn(rt, 1, here);
    d9_wake(rt, 0, 1, D9_WORKER_NONE_ID);
    d9_poll_start(rt, 0, 1, here);
    d9_queue_depth(rt, D9_WORKER_NONE_ID, 3);
    d9_emit(&dyn_ev, D9_STR("x"), D9_U64(1), D9_I64(-1), D9_F64(0.5), D9_BOOL(1));
    typed_ev_emit("x", 1, -1, 0.5, 1);
    typed_tg_trigger("slow", 250, "/x");
    d9_value one[] = { D9_U64(1) };
    d9_emit_values(&dyn_ev, one, 1);
    d9_poll_end(rt, 0, 1);
    d9_task_terminate(rt, 1);
    d9_worker_park(rt, 0);
    d9_worker_unpark(rt, 0);
    d9_stats st;
    memset(&st, 0xff, sizeof st);
    d9_get_stats(&st);
    EXPECT(st.lost == 0 && st.rings_in_use == 0 && st.threads_untraced == 0);
    EXPECT(st.lost_full == 0 && st.lost_mismatch == 0 && st.lost_too_big == 0 &&
           st.lost_no_ring == 0);
    EXPECT(d9_region_path() == NULL);
    d9_shutdown();
    puts("off");
    return 0;
}
