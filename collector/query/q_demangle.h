/*
 * q_demangle.h — C++ symbol names as people write them, for every name d9
 * prints: the frames of q_sym (d9 flame, serve's flame graph, sql's stacks
 * table, both exports) and the code locations of q_loc (top-polls, events,
 * sql's locations, findings). "_ZN3app6Server7on_readEi" becomes
 * "app::Server::on_read(int)".
 *
 * Called by q_sym.c and q_loc.c on what sym_resolve returns. Uses
 * libstdc++'s __cxa_demangle (the Itanium ABI demangler gcc and clang
 * share).
 *
 * Invariants: a name that is not a mangled C++ name ("_Z" prefix), is
 * longer than Q_DEMANGLE_IN_MAX or does not demangle is copied unchanged;
 * the output is always NUL-terminated within cap (a long demangled name is
 * cut). Must never fail a query: the names come from ELF files of the
 * traced machine (hostile), so the input is bounded before the demangler
 * sees it.
 */
#ifndef D9_COL_Q_DEMANGLE_H
#define D9_COL_Q_DEMANGLE_H

#include <stddef.h>

#define Q_DEMANGLE_IN_MAX 1024u     /* longer mangled names are left as they are */

/* The readable form of name into out (cap > 0); returns out. */
char *q_demangle(const char *name, char *out, size_t cap);

#endif /* D9_COL_Q_DEMANGLE_H */
