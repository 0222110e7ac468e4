/*
 * met_text.h — the Prometheus text exposition format (version 0.0.4)
 * written into a growable buffer: family headers (# HELP, # TYPE), samples
 * with escaped label values, counters in whole units and seconds written
 * exactly from nanoseconds.
 *
 * Called by met.c (rendering the collector's metrics) and the unit tests.
 * Pure: no I/O, no locks; one writer per buffer.
 *
 * Invariants: the buffer always holds whole lines; a label value is written
 * escaped (backslash, double quote, newline) and with every byte outside
 * printable ASCII replaced by '_', so hostile text (a traced process's comm)
 * can neither break a line nor hand Prometheus invalid UTF-8, which would
 * fail the whole scrape. A failed allocation sets oom and stops writing (the
 * caller drops the buffer).
 * Must never: write a partial line, or a label name or metric name it was
 * not given as a constant (names are the caller's literals).
 */
#ifndef D9_DAEMON_MET_TEXT_H
#define D9_DAEMON_MET_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* The Content-Type of the format written here. */
#define MET_TEXT_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
/* A label value is cut to this many bytes (after replacement, before escaping). */
#define MET_TEXT_LABEL_MAX 128u

struct met_text {
    char *buf;
    size_t len, cap;
    int oom;                    /* an allocation failed: the text is incomplete */
};

/* One label: name is a constant identifier, value any bytes (escaped). */
struct met_text_label {
    const char *name;
    const char *value;
};

void met_text_init(struct met_text *t);
void met_text_free(struct met_text *t);
/* Empty the buffer, keeping its memory. */
void met_text_reset(struct met_text *t);

/* n bytes of text as they are (the caller's whole lines). */
void met_text_raw(struct met_text *t, const char *s, size_t n);

/* "# HELP name help" and "# TYPE name type" (type: counter, gauge, histogram). */
void met_text_family(struct met_text *t, const char *name, const char *type, const char *help);

/* "name{labels} value": an integer value. */
void met_text_u64(struct met_text *t, const char *name, const struct met_text_label *l, size_t nl,
                  uint64_t v);
/* "name{labels} value": ns written as seconds, exactly (ns / 1e9 in decimal). */
void met_text_ns(struct met_text *t, const char *name, const struct met_text_label *l, size_t nl,
                 uint64_t ns);
/* A histogram's samples: name_bucket{labels,le="B"} for each bound (ns,
 * ascending, written as seconds) with the cumulative counts of counts[]
 * (nb + 1 entries: the last one counts values above every bound), then
 * le="+Inf", name_sum (sum_ns as seconds) and name_count. */
void met_text_hist_ns(struct met_text *t, const char *name, const struct met_text_label *l,
                      size_t nl, const uint64_t *bounds_ns, const uint64_t *counts, size_t nb,
                      uint64_t sum_ns);

/* A summary without quantiles: name_sum{labels} (sum_ns as seconds) and
 * name_count{labels}. */
void met_text_summary_ns(struct met_text *t, const char *name, const struct met_text_label *l,
                         size_t nl, uint64_t count, uint64_t sum_ns);

#endif /* D9_DAEMON_MET_TEXT_H */
