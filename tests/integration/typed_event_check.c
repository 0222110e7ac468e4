/*
 * typed_event_check.c — D9_EVENT's emit function and D9_TRIGGER_EVENT's
 * trigger function are checked by the compiler (test_api_compile.sh). Built with -DBAD=0 it compiles; each
 * -DBAD=n below is one wrong call that must not compile, as C and as C++.
 */
#include "agent/d9.h"

D9_EVENT(req_ev, "request", (STR, path), (U64, status), (I64, delta), (F64, ms), (BOOL, ok));
D9_TRIGGER_EVENT(slow_tg, (U64, latency_ms), (STR, path));

void emit_one(const char *path);
void emit_one(const char *path)
{
#if BAD == 0
    req_ev_emit(path, 200, -1, 1.5, 1);
    slow_tg_trigger("slow", 250, path);
    slow_tg_trigger(NULL, 250, path);
#elif BAD == 1
    req_ev_emit(200, 200, -1, 1.5, 1);          /* a number for the string */
#elif BAD == 2
    req_ev_emit(path, path, -1, 1.5, 1);        /* a pointer for a U64 */
#elif BAD == 3
    req_ev_emit(path, 200, -1, 1.5);            /* a field missing */
#elif BAD == 4
    req_ev_emit(path, 200, -1, 1.5, 1, 7);      /* one too many */
#elif BAD == 5
    req_ev_emit(path, 200, path, 1.5, 1);       /* a pointer for an I64 */
#elif BAD == 6
    req_ev_emit(path, 200, -1, path, 1);        /* a pointer for an F64 */
#elif BAD == 7
    slow_tg_trigger("slow", path, path);        /* D9_TRIGGER_EVENT: a pointer for a U64 */
#elif BAD == 8
    slow_tg_trigger(250, path);                 /* the reason missing */
#endif
}
