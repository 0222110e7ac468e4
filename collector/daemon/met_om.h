/*
 * met_om.h — the OpenMetrics 1.0 text exposition of --metrics: which
 * format a scrape asks for (its Accept header), and the published
 * Prometheus text (met_text.h, version 0.0.4) rewritten as OpenMetrics.
 *
 * The rewrite works on families as met_text_family writes them ("# HELP
 * NAME text" then "# TYPE NAME type"): each becomes "# TYPE FAMILY type",
 * "# UNIT FAMILY unit" where NAME ends in _seconds or _bytes (before a
 * counter's _total), then "# HELP FAMILY text" with '"' escaped. A
 * counter's FAMILY is its NAME without "_total" (its samples keep
 * NAME_total, as OpenMetrics requires); other families keep NAME. Sample
 * lines are copied unchanged (their label escaping is the same in both
 * formats), and "# EOF" ends the text.
 *
 * Called by met_http.c on libmicrohttpd's thread, per request, on its own
 * copy of the published text; and the unit tests. Pure: no I/O, no locks.
 *
 * The Accept header is hostile input: it is read in place, bounded, never
 * copied; anything it does not say clearly picks the 0.0.4 text.
 * Must never: write a family name twice, or anything after "# EOF".
 */
#ifndef D9_DAEMON_MET_OM_H
#define D9_DAEMON_MET_OM_H

#include <stddef.h>
#include "collector/daemon/met_text.h"

#define MET_OM_CONTENT_TYPE "application/openmetrics-text; version=1.0.0; charset=utf-8"
/* An Accept header longer than this is not read (the 0.0.4 text is sent). */
#define MET_OM_ACCEPT_MAX 1024u

/* 1 when the Accept header (NULL: none) prefers OpenMetrics 1.0.0
 * (application/openmetrics-text without a version, or version 1.0.0 or
 * 0.0.1, Prometheus's older name of it) to the 0.0.4 text (text/plain,
 * text/ * or * / *): its q is above 0 and not below theirs. Else 0. */
int met_om_wanted(const char *accept);

/* The 0.0.4 text in[0..len) as OpenMetrics into out (appended). 0, or
 * -ENOMEM (out->oom set). */
int met_om_from_text(const char *in, size_t len, struct met_text *out);

#endif /* D9_DAEMON_MET_OM_H */
