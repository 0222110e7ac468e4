/*
 * q_text.h — text in and out for every reader of the store: JSON string
 * literals, text with control bytes escaped, CLOCK_MONOTONIC times as wall
 * clock, decimal numbers from untrusted text (query arguments, options).
 *
 * Called by the decoder, the exports, d9 serve, d9 sql and the d9
 * subcommands. Output is always valid: JSON strings parse whatever the bytes
 * (invalid UTF-8 becomes U+FFFD), text never carries a raw control
 * character: C0, DEL or C1 (U+0080..U+009F, which terminals obey like ESC).
 * Must never: allocate or keep state.
 */
#ifndef D9_COL_Q_TEXT_H
#define D9_COL_Q_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Decimal unsigned integer, whole string, no sign, no overflow. 0 or -EINVAL/-ERANGE. */
int q_text_parse_u64(const char *s, uint64_t *out);

/* A CLOCK_MONOTONIC time: local wall clock "2026-12-02 12:59:28.123" when
 * the boot offset is known (have_wall), else "mono 1234.567s". cap >= 40.
 * ns_digits = fraction digits (3, 6 or 9). */
const char *q_text_time(uint64_t mono_ns, int64_t boot_realtime_ns, bool have_wall,
                        int ns_digits, bool with_date, char *buf, size_t cap);

/* Write s[0, n) as a JSON string literal (quotes included). Control
 * characters (C0, DEL, C1) as \u00NN, quotes and backslashes escaped; invalid
 * UTF-8 bytes become U+FFFD so the output always parses. */
void q_text_json(FILE *f, const char *s, size_t n);

/* Write s[0, n) for a text line: printable ASCII and valid UTF-8 as is, C1
 * controls as \u00NN, a backslash as \\, the rest as \xNN, inside double
 * quotes when quote is set. */
void q_text_escaped(FILE *f, const char *s, size_t n, bool quote);

/* Write s[0, n) as one CSV field (RFC 4180: quoted when it holds a comma,
 * a quote or a newline; quotes doubled). Safe on a terminal: tab and
 * newline stay, other control characters and bytes that are not UTF-8 are
 * written as q_text_escaped writes them; a backslash stays as it is. */
void q_text_csv(FILE *f, const char *s, size_t n);

#endif /* D9_COL_Q_TEXT_H */
