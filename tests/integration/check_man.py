#!/usr/bin/env python3
"""check_man.py PAGE HELP... — a man page renders cleanly and says what the help says.

Renders PAGE with `man -l` (and groff -ww), fails on any warning, then checks
that the body of every section of every HELP text (a file holding what a
program's --help printed, or deploy/libd9agent.3.txt) appears in the rendered
page word for word, in one piece. So a help text changed without the page
being regenerated, or a generator that drops or mangles text, fails here.
Prints one line per finding; exit status 1 on any.
"""
import os
import re
import subprocess
import sys

HEADER = re.compile(r"^[A-Z][A-Z0-9 ,/()-]*$")


def render(page):
    env = dict(os.environ, LC_ALL="C", MANWIDTH="250", MAN_KEEP_FORMATTING="")
    r = subprocess.run(["man", "--warnings", "-l", page], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env)
    out = re.sub(r".\x08", "", r.stdout.decode("utf-8", "replace"))
    g = subprocess.run(["groff", "-man", "-ww", "-z", page], stderr=subprocess.PIPE)
    return r.returncode, out, (r.stderr + g.stderr).decode("utf-8", "replace")


def bodies(text):
    out = []
    for line in text.splitlines():
        if HEADER.match(line.rstrip()):
            out.append((line.strip(), []))
        elif out:
            out[-1][1].append(line)
    return out


def main():
    page, helps = sys.argv[1], sys.argv[2:]
    bad = 0
    rc, out, warn = render(page)
    if rc != 0 or warn.strip():
        print("%s: man/groff rc %d, warnings:\n%s" % (page, rc, warn))
        bad += 1
    words = " " + " ".join(out.split()) + " "
    for h in helps:
        with open(h, encoding="utf-8") as f:
            text = f.read()
        for title, body in bodies(text):
            want = " ".join(" ".join(body).split())
            if want and (" " + want + " ") not in words:
                print("%s: section %s of %s is not in the page" % (page, title, h))
                bad += 1
    print("%s: %s" % (page, "ok" if not bad else "%d findings" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
