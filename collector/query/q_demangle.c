/*
 * q_demangle.c — C++ names through libstdc++'s demangler (see q_demangle.h).
 */
#include <stdlib.h>
#include <string.h>
#include "collector/query/q_demangle.h"

/* libstdc++ (<cxxabi.h>): a malloc'd demangled name, or NULL with *status != 0 */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

static void copy_cut(char *out, size_t cap, const char *s)
{
    size_t n = strnlen(s, cap - 1);
    memmove(out, s, n);
    out[n] = 0;
}

char *q_demangle(const char *name, char *out, size_t cap)
{
    if (!cap)
        return out;
    if (!name) {
        out[0] = 0;
        return out;
    }
    /* "_Z" then an encoding: the Itanium ABI's mark of a mangled name */
    if (name[0] != '_' || name[1] != 'Z' || strnlen(name, Q_DEMANGLE_IN_MAX + 1) > Q_DEMANGLE_IN_MAX) {
        copy_cut(out, cap, name);
        return out;
    }
    int status = -1;
    char *d = __cxa_demangle(name, NULL, NULL, &status);
    copy_cut(out, cap, status == 0 && d ? d : name);
    free(d);
    return out;
}
