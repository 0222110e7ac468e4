/*
 * sql_val.c — values between SQLite and the store (see sql_val.h).
 */
#include <math.h>
#include <stdio.h>
#include "collector/sql/sql_val.h"

void sql_val_u64(sqlite3_context *cx, uint64_t v)
{
    if (v > (uint64_t)INT64_MAX)
        sqlite3_result_double(cx, (double)v);
    else
        sqlite3_result_int64(cx, (int64_t)v);
}

void sql_val_str(sqlite3_context *cx, const char *s)
{
    sqlite3_result_text(cx, s, -1, SQLITE_TRANSIENT);
}

int sql_val_error(struct vt *v, const char *fmt, const char *what)
{
    sqlite3_free(v->base.zErrMsg);
    v->base.zErrMsg = sqlite3_mprintf(fmt, what);
    return SQLITE_ERROR;
}

/* A constraint value as a number: false when it is not numeric (then it is
 * left to SQLite). */
bool sql_val_num(sqlite3_value *v, bool *is_int, int64_t *i, double *d)
{
    switch (sqlite3_value_numeric_type(v)) {
    case SQLITE_INTEGER:
        *is_int = true;
        *i = sqlite3_value_int64(v);
        *d = (double)*i;
        return true;
    case SQLITE_FLOAT:
        *is_int = false;
        *d = sqlite3_value_double(v);
        return !isnan(*d);
    default:
        return false;
    }
}

/* Narrow [from, to] by "col op v"; false when nothing can match. */
bool sql_val_narrow_time(char op, sqlite3_value *v, uint64_t *from, uint64_t *to)
{
    bool is_int;
    int64_t i;
    double d;
    if (!sql_val_num(v, &is_int, &i, &d))
        return true;
    double lo = 0, hi = 0;
    bool has_lo = false, has_hi = false;
    switch (op) {
    case '=': lo = hi = d; has_lo = has_hi = true;
        if (!is_int && floor(d) != d)
            return false;
        break;
    case '>': lo = floor(d) + 1; has_lo = true; break;
    case 'g': lo = ceil(d); has_lo = true; break;
    case '<': hi = ceil(d) - 1; has_hi = true; break;
    case 'l': hi = floor(d); has_hi = true; break;
    }
    if (is_int) {           /* exact integer arithmetic where it matters */
        if (op == '=' || op == 'g')
            lo = hi = (double)i;
        if (op == '>' && i < INT64_MAX) {
            uint64_t f = i < 0 ? 0 : (uint64_t)i + 1;
            if (f > *from)
                *from = f;
            return *from <= *to;
        }
        if (op == '<') {
            if (i <= 0)
                return false;
            if ((uint64_t)i - 1 < *to)
                *to = (uint64_t)i - 1;
            return *from <= *to;
        }
        if (op == '=' || op == 'g' || op == 'l') {
            if (i < 0)
                return op == 'g';
            if ((op == '=' || op == 'g') && (uint64_t)i > *from)
                *from = (uint64_t)i;
            if ((op == '=' || op == 'l') && (uint64_t)i < *to)
                *to = (uint64_t)i;
            return *from <= *to;
        }
    }
    if (has_lo && lo > 0) {
        uint64_t f = lo >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)lo;
        if (f > *from)
            *from = f;
    }
    if (has_hi) {
        if (hi < 0)
            return false;
        uint64_t t = hi >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)hi;
        if (t < *to)
            *to = t;
    }
    return *from <= *to;
}

/* "col = v" for an id column (pid, tid): false when nothing can match. */
bool sql_val_narrow_id(sqlite3_value *v, uint32_t *id)
{
    bool is_int;
    int64_t i;
    double d;
    if (!sql_val_num(v, &is_int, &i, &d))
        return true;
    if (!is_int) {
        if (floor(d) != d || d < 1 || d > UINT32_MAX)
            return false;
        i = (int64_t)d;
    }
    if (i < 1 || i > UINT32_MAX || (*id && *id != (uint32_t)i))
        return false;
    *id = (uint32_t)i;
    return true;
}
