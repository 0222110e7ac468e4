/*
 * trigger.c — d9_trigger(reason): the program asks the collector to keep
 * the window of time around now (the flight recorder, --retain triggered).
 *
 * A trigger is a custom event of the reserved schema D9_TRIGGER_SCHEMA
 * ("d9_trigger", one string field "reason"), so it travels the rings like
 * any event and is a marker in `d9 events` and the schema's `d9 sql` table;
 * "d9.*" names are the collector's own (hidden from events), hence "d9_".
 * The collector is to recognize the name while draining (not done yet:
 * today the marker is stored and shown, and keeps no window).
 * Called by: the application, on any thread.
 * Hot path, as d9_emit: no locks, no syscalls, no allocation after the
 * schema's first use (which publishes it, once).
 */
#include "agent/d9.h"

static const d9_field tg_fields[] = { D9_FIELD_STR("reason") };
static d9_schema tg_schema = { D9_TRIGGER_SCHEMA, tg_fields, 1, 0 };

void d9_trigger(const char *reason)
{
    d9_value v = { .type = D9_T_STR, .v.s = reason ? reason : "" };
    d9_emit_values(&tg_schema, &v, 1);
}
