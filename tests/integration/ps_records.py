#!/usr/bin/env python3
"""ps_records.py D9 STORE — `d9 ps`'s record count of every process equals the
records its segments hold (the index's segments rows, each its file's
footer count), and at least one process holds records. Prints the counts;
exit 1 on a difference."""
import json
import sqlite3
import subprocess
import sys

d9, store = sys.argv[1], sys.argv[2]
out = subprocess.run([d9, "--store", store, "ps", "--format", "jsonl"], check=True,
                     stdout=subprocess.PIPE).stdout.decode()
ps = {}
for line in out.splitlines():
    r = json.loads(line)
    ps[r["pid"]] = ps.get(r["pid"], 0) + r["records"]
db = sqlite3.connect("file:%s/index.sqlite?mode=ro" % store, uri=True)
held = dict(db.execute("SELECT p.pid, sum(s.records) FROM segments s JOIN processes p"
                       " ON p.id = s.process_id GROUP BY p.pid"))
print("d9 ps:", sorted(ps.items()), "held:", sorted(held.items()))
ok = held and sum(held.values()) > 0 and all(ps.get(pid) == n for pid, n in held.items())
sys.exit(0 if ok else 1)
