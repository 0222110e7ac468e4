#!/bin/sh
# test_serve_hostile.sh — `d9 serve` against hostile clients on a demo store:
# DNS rebinding (a Host or Origin naming another site is refused with a
# one-line 403; the loopback names, IP literals and --allow-host names are
# answered), 2 000 half-open sockets and 40 slow-header clients do not stop
# normal requests, a query of 1 000 arguments is a 400 (not a hang), a cheap
# request is not held behind running flame graphs (it completes before
# them: ordering, no time threshold), and listening beyond loopback prints
# one warning line.
. tests/integration/lib.sh
d9_setup
trap 'd9_finish >/dev/null 2>&1; exit 1' INT TERM HUP
demo_store
STORE=$T/d9-demo-store
check "demo store made" test -f "$STORE/index.sqlite"
PID=$("$BIN/d9" --store "$STORE" ps 2>/dev/null | awk '$3 == "d9demo" { print $1; exit }')

# serve NAME ARGS...: start d9 serve (stdout NAME.out, stderr NAME.err), wait
# for its URL; sets SPID and PORT.
serve() {
    _sn=$1; shift
    "$BIN/d9" --store "$STORE" serve "$@" >"$T/$_sn.out" 2>"$T/$_sn.err" &
    SPID=$!
    at_exit kill "$SPID"
    wait_for 10 grep -q "^d9 serve: http://" "$T/$_sn.out" || { cat "$T/$_sn.err"; return 1; }
    PORT=$(sed -n 's|^d9 serve: http://[^ ]*:\([0-9]*\)/.*|\1|p' "$T/$_sn.out")
}
serve main --listen 127.0.0.1:0 --allow-host d9.test
check "serve starts on loopback" test -n "$PORT"
check "no warning on loopback" sh -c "! grep -q . '$T/main.err'"

# req METHOD PATH [HEADER: VALUE]... -> prints the status; body in $T/body.
# Host is 127.0.0.1:PORT unless a Host header is given.
req() { python3 - "$PORT" "$@" <<'PY'
import http.client, os, sys
port, method, path, hdrs = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
c = http.client.HTTPConnection('127.0.0.1', port, timeout=20)
h = dict(x.split(': ', 1) for x in hdrs)
c.putrequest(method, path, skip_host='Host' in h)
for k, v in h.items():
    c.putheader(k, v)
c.endheaders(b'x' if method == 'POST' else None)
r = c.getresponse()
open(os.environ['T'] + '/body', 'wb').write(r.read())
print(r.status)
PY
}
is() { _want=$1; shift; c=$(req "$@"); [ "$c" = "$_want" ] || { echo "$*: HTTP $c, want $_want"; head -c 300 "$T/body"; echo; return 1; }; }
one_line_reason() { python3 -c "
import json, sys
b = open('$T/body').read()
assert b.count('\n') == 1 and b.endswith('\n'), repr(b)
e = json.loads(b)['error']
assert '$1' in e and '\n' not in e, e
"; }

# ---- DNS rebinding: Host and Origin ------------------------------------------
check "a foreign Host is refused (403)" is 403 GET /api/processes "Host: evil.example:$PORT"
check "with a one-line reason naming the Host header" one_line_reason "Host header"
check "the page too is refused to a foreign Host" is 403 GET / "Host: evil.example:$PORT"
check "a foreign Host without a port is refused" is 403 GET /api/processes "Host: evil.example"
check "a foreign Host with a trailing dot is refused" is 403 GET /api/processes "Host: evil.example.:$PORT"
check "our address with another port is refused" is 403 GET /api/processes "Host: 127.0.0.1:1"
check "a Host with junk after the port is refused" is 403 GET /api/processes "Host: localhost:${PORT}x"
check "127.0.0.1:PORT is answered" is 200 GET /api/processes "Host: 127.0.0.1:$PORT"
check "localhost:PORT is answered" is 200 GET /api/processes "Host: localhost:$PORT"
check "LOCALHOST.:PORT is answered (case, trailing dot)" is 200 GET /api/processes "Host: LOCALHOST.:$PORT"
check "[::1]:PORT is answered" is 200 GET /api/processes "Host: [::1]:$PORT"
check "an --allow-host name is answered" is 200 GET /api/processes "Host: d9.test:$PORT"
check "a foreign Origin on GET is refused" is 403 GET /api/processes "Origin: http://evil.example:$PORT"
check "with a one-line reason" one_line_reason "cross-origin"
check "a foreign Origin on POST is refused before anything else" \
    is 403 POST /api/processes "Origin: http://evil.example:$PORT"
check "a null Origin is refused" is 403 GET /api/processes "Origin: null"
check "our own Origin is answered" is 200 GET /api/processes "Origin: http://127.0.0.1:$PORT"
check "POST with our own Origin is still 405" is 405 POST /api/processes "Origin: http://localhost:$PORT"
check "curl -H 'Host: evil.example:PORT' is refused" sh -c "
  c=\$(curl -s -o '$T/curl.body' -w '%{http_code}' -H 'Host: evil.example:$PORT' \
      http://127.0.0.1:$PORT/api/processes); [ \"\$c\" = 403 ] || { echo \$c; exit 1; }"

# ---- arguments -----------------------------------------------------------------
check "a query of 1 000 arguments is a 400, not a hang" sh -c "
  c=\$(python3 - $PORT <<'PY'
import http.client, sys
c = http.client.HTTPConnection('127.0.0.1', int(sys.argv[1]), timeout=10)
c.request('GET', '/api/timeline?' + '&'.join('a%d=1' % i for i in range(1000)))
r = c.getresponse(); print(r.status, r.read().decode()[:100])
PY
); echo \"\$c\"; case \$c in '400 '*too\ many*) exit 0;; *) exit 1;; esac"
check "30 000 empty arguments are a 400 too" sh -c "
  c=\$(python3 - $PORT <<'PY'
import http.client, sys
c = http.client.HTTPConnection('127.0.0.1', int(sys.argv[1]), timeout=10)
c.request('GET', '/api/processes?' + '&' * 30000)
r = c.getresponse(); print(r.status)
PY
); [ \"\$c\" = 400 ] || { echo \"\$c\"; exit 1; }"

# ---- many idle and slow clients --------------------------------------------------
# hold N [slow]: N connections to the server kept open (slow: each sends a
# request line and then one header line a second, never ending the headers)
# while 12 normal requests are made; prints "OK/12" and how many sockets held.
hold() { python3 - "$PORT" "$1" "${2:-}" <<'PY'
import http.client, resource, socket, sys, threading, time
port, n, slow = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == 'slow'
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 256), hard))
held = []
for _ in range(n):
    s = socket.create_connection(('127.0.0.1', port), timeout=5)
    if slow:
        s.sendall(b'GET /api/processes HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n' % port)
    held.append(s)
stop = threading.Event()
def trickle():
    i = 0
    while not stop.wait(1.0):
        for s in held:
            try:
                s.sendall(b'X-Slow-%d: 1\r\n' % i)
            except OSError:
                pass
        i += 1
if slow:
    threading.Thread(target=trickle, daemon=True).start()
ok = 0
for _ in range(12):
    try:
        c = http.client.HTTPConnection('127.0.0.1', port, timeout=10)
        c.request('GET', '/api/processes')
        r = c.getresponse(); r.read()
        ok += r.status == 200
        c.close()
    except Exception as e:
        print('request failed:', e)
    if slow:
        time.sleep(0.25)
stop.set()
open_now = sum(1 for s in held if s.fileno() >= 0)
print('%d/12 held=%d' % (ok, open_now))
for s in held:
    s.close()
PY
}
shows() { cat "$2"; grep -q "$1" "$2"; }
hold 2000 >"$T/hold.txt" 2>&1
check "2 000 half-open sockets: 12 of 12 normal requests answered" shows '^12/12 held=2000$' "$T/hold.txt"
hold 40 slow >"$T/slow.txt" 2>&1
check "40 slow-header clients: 12 of 12 normal requests answered" shows '^12/12 held=40$' "$T/slow.txt"
check "the server is still running" kill -0 "$SPID"

# ---- a cheap request is not held behind expensive ones ---------------------------
# A second server whose heavy jobs each wait 1.5 s first (D9_TEST_SERVE_HEAVY_MS,
# serve_pool.c), so the flame graphs are expensive whatever the store's size
# and the machine's speed. Three flame graphs are sent, then, once they are
# on their way, a process listing; the listing must complete before every
# one of the flame graphs. A server answering one request at a time finishes
# at least one flame graph first, every time.
MAIN_SPID=$SPID MAIN_PORT=$PORT
export D9_TEST_SERVE_HEAVY_MS=1500
serve slow --listen 127.0.0.1:0
unset D9_TEST_SERVE_HEAVY_MS
check "a cheap request completes before the running flame graphs" python3 - "$PORT" "$PID" <<'PY'
import http.client, sys, threading, time
port, pid = int(sys.argv[1]), sys.argv[2]
done = []
lock = threading.Lock()
def get(name, path):
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
    c.request('GET', path)
    r = c.getresponse(); r.read()
    assert r.status == 200, (name, r.status)
    with lock:
        done.append(name)
slow = [threading.Thread(target=get, args=('flame%d' % i, '/api/flame?pid=%s&kind=cpu' % pid))
        for i in range(3)]
for t in slow:
    t.start()
time.sleep(0.2)
cheap = threading.Thread(target=get, args=('cheap', '/api/processes'))
cheap.start()
for t in slow + [cheap]:
    t.join()
print(done)
assert len(done) == 4 and done[0] == 'cheap', done
PY
check "and after that the server still answers" is 200 GET /api/processes
kill "$SPID"
SPID=$MAIN_SPID PORT=$MAIN_PORT
kill "$SPID"
check "serve stops on SIGTERM" wait_for 10 sh -c "! kill -0 $SPID"

# ---- beyond loopback: a warning, and the same Host rule --------------------------
serve any --listen 0.0.0.0:0
check "--listen 0.0.0.0 prints one warning line: the store is readable by the network" sh -c "
  cat '$T/any.err'; [ \$(grep -c . '$T/any.err') = 1 ] &&
  grep -q 'warning: listening on 0.0.0.0, not loopback: anyone who can reach it can read the whole store' '$T/any.err'"
check "there too a foreign Host is refused" is 403 GET /api/processes "Host: evil.example:$PORT"
check "there an IP literal Host is answered" is 200 GET /api/processes "Host: 127.0.0.1:$PORT"
kill "$SPID"
check "--allow-host with a bad name is a usage error" sh -c "
  '$BIN/d9' --store '$STORE' serve --allow-host 'ev il' >/dev/null 2>'$T/bad.err'; [ \$? -eq 2 ] &&
  grep -q 'not a host name' '$T/bad.err'"
check "--threads 0 is a usage error" sh -c "
  '$BIN/d9' --store '$STORE' serve --threads 0 >/dev/null 2>&1; [ \$? -eq 2 ]"
d9_finish serve-hostile
