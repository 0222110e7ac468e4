#!/usr/bin/env python3
"""check_layout.py — the house rules of the source tree, checked on every `make test`.

1. Folder rules: each folder may include only the folders ARCHITECTURE.md allows
   (the table RULES below is that list; change both together).
2. No import circles: two modules that call each other, directly or around a
   loop, are one module in two files. Modules are the compiled objects; an edge
   A -> B means A's object uses a symbol B's object defines (read with `nm`), so
   a circle is caught whichever header declares the symbol.
3. A file's name is its prefix (in the folders of PREFIX_DIRS): every symbol an
   object exports starts with its file's base name plus "_" (or is that name),
   and no other file of the folder has a longer name that also prefixes it, so
   a symbol names the file it lives in (idx_read_* is in idx_read.c, idx_* in
   idx.c). Objects whose source is gone (a renamed file) are not modules.
4. One owner of index.sqlite: only the index module (SQL_OWNERS) includes
   <sqlite3.h>; besides it, `d9 sql` (SQL_ENGINE) hosts its virtual tables on
   a private in-memory connection and may open nothing but ":memory:"; the
   Parquet export (cli_parquet.c) reads the same tables the same way.

Usage: check_layout.py BUILD_DIR. Prints one line per finding and a closing
"layout: N passed, N failed" line; exits 1 on any finding.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# folder -> folders it may include (its own always allowed). Longest prefix wins.
RULES = {
    "shm": [],
    "agent": ["shm", "proto"],
    "agent/uv": ["agent", "shm"],
    "agent/demo": ["agent"],
    "collector/store": ["shm"],
    "collector/lazy": [],
    "collector/ctl": ["collector/store", "collector/lazy", "shm", "proto"],
    "collector/s3": ["collector/store", "collector/lazy", "shm"],
    "collector/daemon": ["collector/store", "collector/ctl", "collector/s3", "shm", "proto"],
    "collector/query": ["collector/store", "shm"],
    "collector/parquet": ["collector/lazy"],
    "collector/export": ["collector/query", "collector/store", "shm", "proto"],
    "collector/serve": ["collector/query", "collector/store", "shm"],
    "collector/sql": ["collector/query", "collector/store", "shm"],
    "collector/cli": ["collector/query", "collector/export", "collector/parquet", "collector/serve", "collector/sql",
                      "collector/store", "collector/ctl", "collector/s3", "collector/lazy", "shm", "proto"],
}
SOURCE_DIRS = ["shm", "agent", "collector"]
# (not collector/lazy: lazy_syms.c defines the lazily loaded libraries'
# functions under their own names, by design)
PREFIX_DIRS = ["collector/store", "collector/ctl", "collector/s3", "collector/query",
               "collector/parquet", "collector/export", "collector/serve", "collector/sql", "collector/cli"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SQLITE = re.compile(r'^\s*#\s*include\s+<sqlite3\.h>', re.M)
# The only files that may run SQL: the index module owns index.sqlite.
SQL_OWNERS = ("collector/store/idx.c", "collector/store/idx_read.c", "collector/store/idx_trig.c",
              "collector/store/idx_int.h")
# `d9 sql`: SQLite as a query engine over virtual tables whose rows come through
# the index module and the segment reader; its connection is in memory only.
SQL_ENGINE = tuple(sorted("collector/sql/" + f for f in os.listdir(os.path.join(ROOT, "collector/sql"))
                          if f.endswith((".c", ".h")))) + ("collector/cli/cli_sql.c",
                                                               "collector/cli/cli_parquet.c")
SQL_OPEN = re.compile(r'sqlite3_open\w*\s*\(\s*([^,]*),')


def folder_rule(path):
    best = None
    for f in RULES:
        if path.startswith(f + "/") and (best is None or len(f) > len(best)):
            best = f
    return best


def check_includes():
    bad = []
    checked = 0
    for top in SOURCE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if not name.endswith((".c", ".h")):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), ROOT)
                rule = folder_rule(rel)
                if rule is None:
                    bad.append(f"{rel}: folder has no rule in tests/layout/check_layout.py")
                    continue
                own = os.path.dirname(rel)
                allowed = [rule, own] + RULES[rule]
                with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                if SQLITE.search(text) and rel in SQL_ENGINE:
                    for target in SQL_OPEN.findall(text):
                        if target.strip() != '":memory:"':
                            bad.append(f"{rel}: opens {target.strip()}: d9 sql's connection "
                                       "is in memory only")
                elif SQLITE.search(text) and rel not in SQL_OWNERS:
                    bad.append(f"{rel}: includes <sqlite3.h>: only {', '.join(SQL_OWNERS)} "
                               "run SQL on index.sqlite")
                for inc in INCLUDE.findall(text):
                    checked += 1
                    if "/" not in inc:
                        continue  # a file of its own folder, or a system header in quotes
                    inc_dir = os.path.dirname(inc)
                    if inc_dir in allowed:
                        continue
                    bad.append(f"{rel}: includes {inc} ({rule}/ may include only "
                               f"{', '.join(RULES[rule]) or 'itself'})")
    return checked, bad


def nm_symbols(obj):
    out = subprocess.run(["nm", "--defined-only", "-g", obj], capture_output=True, text=True,
                         check=True).stdout
    defined = {ln.split()[-1] for ln in out.splitlines() if len(ln.split()) == 3}
    out = subprocess.run(["nm", "-u", obj], capture_output=True, text=True, check=True).stdout
    used = {ln.split()[-1] for ln in out.splitlines() if ln.strip()}
    return defined, used


def strongly_connected(graph):
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def module_objects(objdir, tops):
    objs = []
    for top in tops:
        for dirpath, _, files in os.walk(os.path.join(objdir, top)):
            objs += [os.path.join(dirpath, f) for f in files if f.endswith(".o") and
                     os.path.exists(os.path.join(ROOT, os.path.relpath(
                         os.path.join(dirpath, f), objdir)[:-2] + ".c"))]
    return objs


def check_prefixes(build):
    objdir = os.path.join(build, "obj")
    bad = []
    n = 0
    for top in PREFIX_DIRS:
        objs = [o for o in module_objects(objdir, [top]) if os.path.dirname(o).endswith(top)]
        names = [os.path.basename(o)[:-2] for o in objs]
        for o in objs:
            n += 1
            name = os.path.basename(o)[:-2]
            for sym in sorted(nm_symbols(o)[0]):
                if sym == "main":
                    continue
                fits = [f for f in names if sym == f or sym.startswith(f + "_")]
                if not fits or max(fits, key=len) != name:
                    bad.append(f"{top}/{name}.c exports {sym}: a symbol starts with its "
                               f"file's name")
    return n, bad


def check_circles(build):
    objdir = os.path.join(build, "obj")
    objs = module_objects(objdir, SOURCE_DIRS)
    if not objs:
        return 0, [f"no objects under {objdir}: build first"]
    owner, uses = {}, {}
    for o in objs:
        mod = os.path.relpath(o, objdir)[:-2]
        d, u = nm_symbols(o)
        for s in d:
            owner.setdefault(s, mod)
        uses[mod] = u
    graph = {m: sorted({owner[s] for s in u if s in owner and owner[s] != m})
             for m, u in uses.items()}
    bad = []
    for comp in strongly_connected(graph):
        if len(comp) < 2:
            continue
        comp = sorted(comp)
        ties = []
        for a in comp:
            for b in graph[a]:
                if b in comp:
                    names = sorted(s for s in uses[a] if owner.get(s) == b)
                    ties.append(f"{a} -> {b} ({', '.join(names[:4])}{', ...' if len(names) > 4 else ''})")
        bad.append("import circle: " + "; ".join(ties))
    return len(graph), bad


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    n_inc, bad_inc = check_includes()
    n_mod, bad_circ = check_circles(build)
    n_pre, bad_pre = check_prefixes(build)
    for line in bad_inc + bad_circ + bad_pre:
        print("layout: " + line)
    print(f"layout: {n_inc} includes, {n_mod} modules and {n_pre} file prefixes checked")
    failed = (1 if bad_inc else 0) + (1 if bad_circ else 0) + (1 if bad_pre else 0)
    print(f"layout: {3 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
