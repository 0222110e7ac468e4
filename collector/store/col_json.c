/*
 * col_json.c — the JSON text builder (see col_json.h).
 */
#include "collector/store/col_json.h"

#include <stdio.h>
#include <string.h>

#define COL_JSON_DEL 0x7f

void col_json_init(struct col_json *j, char *p, size_t cap, bool esc_del)
{
    *j = (struct col_json){ .p = p, .cap = cap, .esc_del = esc_del };
    if (cap)
        p[0] = '\0';
}

void col_json_raw(struct col_json *j, const char *s, size_t n)
{
    /* len < cap, so cap - len does not wrap; n + NUL must fit in it */
    if (j->full || j->cap == 0 || n >= j->cap - j->len) {
        j->full = true;
        return;
    }
    memcpy(j->p + j->len, s, n);
    j->len += n;
    j->p[j->len] = '\0';
}

void col_json_esc(struct col_json *j, const char *s, size_t n)
{
    char e[8];
    for (size_t i = 0; i < n && !j->full; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            e[0] = '\\';
            e[1] = (char)c;
            col_json_raw(j, e, 2);
        } else if (c < 0x20 || (c == COL_JSON_DEL && j->esc_del)) {
            snprintf(e, sizeof e, "\\u%04x", c);
            col_json_raw(j, e, 6);
        } else {
            col_json_raw(j, (const char *)&c, 1);
        }
    }
}

void col_json_str(struct col_json *j, const char *s, size_t n)
{
    col_json_raw(j, "\"", 1);
    col_json_esc(j, s, n);
    col_json_raw(j, "\"", 1);
}

void col_json_rewind(struct col_json *j, size_t mark)
{
    if (mark > j->len)
        return;
    j->len = mark;
    j->full = false;
    if (j->cap)
        j->p[mark] = '\0';
}
