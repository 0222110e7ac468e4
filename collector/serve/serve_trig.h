/*
 * serve_trig.h — `d9 serve`'s /api/triggers: the triggers of a window from
 * the index's triggers table (idx_trig.h), for the page's trigger markers.
 *
 *   /api/triggers?[pid=][&from=&to=][&limit=]
 *   {"pid":P,"from":F,"to":T,"total":N,"triggers":[
 *     {"id":..,"pid":..,"t":NS,"source":"marker|shell|poll|crash",
 *      "reason":"..","verdict":"kept|merged|debounced|rate-limited",
 *      "win_t0":NS,"win_t1":NS,   -- win_t0/win_t1 null: no kept window
 *      "fields":{..}}             -- a typed trigger's fields (idx_trig.h's
 *                                    triggers.fields, the object as stored);
 *                                    null: none, or not a JSON object
 *   ]}
 *
 * Every trigger whose time is in [from, to] (default: all) or whose kept
 * window overlaps [from, to] (so a window reaching into the view from a
 * trigger outside it is shaded too), of pid (0 or
 * absent: every pid), by time; at most limit (default and cap
 * SERVE_API_MAX_ITEMS) listed, total counts them all. Times are absolute
 * CLOCK_MONOTONIC ns (as from and to), not offsets. A store without the
 * table (index schema version 3) answers an empty list.
 *
 * Called by serve_api.c (its dispatcher). Must never write to the store.
 */
#ifndef D9_COL_SERVE_TRIG_H
#define D9_COL_SERVE_TRIG_H

#include <stdio.h>

struct q_store;
struct serve_params;

/* The answer to /api/triggers: the HTTP status (200, 400, 500), body to out. */
int serve_trig_api(struct q_store *s, const struct serve_params *p, FILE *out);

#endif
