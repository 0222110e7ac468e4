#!/usr/bin/env python3
"""check_links.py FILE.md... — every relative link of the manual resolves.

For each Markdown FILE, every link and image outside code (`[text](target)`,
`![alt](target)`) whose target is not a URL (scheme:...) must name a file or
directory that exists, relative to FILE; a `#anchor` (alone, or after a .md
target) must be the slug of a heading of that file, as GitHub makes them:
lower case, punctuation dropped, spaces to '-', a repeated heading gets -1,
-2, ... Prints one line per broken link (FILE:LINE: target: why) and exits 1
on any. Used by tests/integration/test_docs.sh.
"""
import os
import re
import sys

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    fenced = False
    for n, line in enumerate(lines, 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def slug(text):
    text = CODE_SPAN.sub(lambda m: m.group(2), text)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)   # a link's text only
    text = text.strip().lower()
    return "".join(c for c in text if c.isalnum() or c in " -_").replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, out = {}, set()
        for _, line in prose_lines(path):
            m = HEADING.match(line)
            if not m:
                continue
            s = slug(m.group(2))
            k = seen.get(s, 0)
            seen[s] = k + 1
            out.add(s if k == 0 else "%s-%d" % (s, k))
        cache[path] = out
    return cache[path]


def check(path):
    bad = []
    for n, line in prose_lines(path):
        line = CODE_SPAN.sub("", line)
        for m in LINK.finditer(line):
            target = m.group(1)
            if SCHEME.match(target):
                continue
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(dest):
                bad.append("%s:%d: %s: no such file" % (path, n, target))
                continue
            if anchor:
                if not dest.endswith(".md"):
                    bad.append("%s:%d: %s: an anchor into a file that is not Markdown" % (path, n, target))
                elif anchor not in anchors(dest):
                    bad.append("%s:%d: %s: no heading '#%s' in %s" % (path, n, target, anchor, dest))
    return bad


def main():
    bad = []
    for path in sys.argv[1:]:
        bad += check(path)
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
