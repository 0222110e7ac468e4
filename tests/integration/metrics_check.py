#!/usr/bin/env python3
"""metrics_check.py — helpers of test_metrics.sh.

  metrics_check.py port                      a free 127.0.0.1 port
  metrics_check.py compare PROM_URL PID CSV  Prometheus's query API answers, for
      every worker row of CSV (d9 sql's workers table: pid, runtime, worker,
      polls, parks, waits, wait_sum_ns, parked_ns, busy_ns; then its finished
      polls in the polls table: finished, dur_sum_ns), the same values of
      d9's series; exit 0 when all are equal, else 1 with the differences.
  metrics_check.py raw PORT                  hostile bytes at the endpoint:
      garbage, a header line without end, a huge header, many idle sockets;
      exit 0 once they are sent and closed.
"""
import csv
import json
import socket
import sys
import urllib.parse
import urllib.request

NS = 1_000_000_000


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    print(p)


def query(url, q):
    u = url + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
    with urllib.request.urlopen(u, timeout=5) as r:
        d = json.load(r)
    if d.get("status") != "success":
        raise SystemExit(f"query {q}: {d}")
    out = {}
    for s in d["data"]["result"]:
        m = s["metric"]
        out[(m.get("runtime"), m.get("worker"))] = s["value"][1]
    return out


def compare(url, pid, path):
    rows = list(csv.DictReader(open(path)))
    rows = [r for r in rows if r["pid"] == pid]
    if not rows:
        raise SystemExit(f"no workers of pid {pid} in d9 sql's answer")
    # (series, sql column, scale: 1 for counts, NS for seconds)
    checks = [("d9_worker_polls_total", "polls", 1), ("d9_worker_parks_total", "parks", 1),
              ("d9_worker_sched_wait_seconds_count", "waits", 1),
              ("d9_worker_sched_wait_seconds_sum", "wait_sum_ns", NS),
              ("d9_worker_parked_seconds_total", "parked_ns", NS),
              ("d9_worker_busy_seconds_total", "busy_ns", NS),
              ("d9_worker_poll_duration_seconds_count", "finished", 1),
              ("d9_worker_poll_duration_seconds_sum", "dur_sum_ns", NS)]
    bad = []
    for series, col, scale in checks:
        got = query(url, f'{series}{{pid="{pid}"}}')
        for r in rows:
            key = (r["runtime"], r["worker"])
            if key not in got:
                bad.append(f"{series}{key}: missing (have {sorted(got)})")
                continue
            want = int(r[col])
            have = round(float(got[key]) * scale)
            if have != want:
                bad.append(f"{series}{key}: prometheus {got[key]} != d9 sql {col} {want}")
        if len(got) != len(rows):
            bad.append(f"{series}: {len(got)} series for {len(rows)} workers")
    print("\n".join(bad) if bad else f"{len(rows)} workers, {len(checks)} series each: equal")
    sys.exit(1 if bad else 0)


def raw(port):
    payloads = [b"\x00\xff\xfe garbage\r\n\r\n", b"GET /metrics HTTP/1.1\r\nHost: x",
                b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n",
                b"GET /" + b"m" * 70000 + b" HTTP/1.1\r\n\r\n",
                b"POST /metrics HTTP/1.1\r\nContent-Length: 100000000\r\n\r\nxxxx"]
    for p in payloads:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        try:
            s.sendall(p)
            s.settimeout(1)
            s.recv(4096)
        except OSError:
            pass
        s.close()
    idle = []
    for _ in range(200):            # past the connection limit
        try:
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=2))
        except OSError:
            break
    for s in idle:
        s.close()


if __name__ == "__main__":
    if sys.argv[1] == "port":
        free_port()
    elif sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "raw":
        raw(int(sys.argv[2]))
