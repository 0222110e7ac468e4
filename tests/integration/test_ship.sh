#!/bin/sh
# test_ship.sh — d9collectd --ship against a real S3-compatible server (s3rver)
# behind tests/integration/s3proxy.py, which checks every request's Signature
# V4, body SHA-256 and Content-MD5 independently of the C client and injects
# faults. Each segment must reach the bucket byte for byte, exactly once, with
# its manifest, through server errors, slow answers, a server that is down, and
# a collector killed in the middle of uploads; refusals (wrong bucket, wrong
# secret) must be readable in the log and d9 status while recording goes on;
# the disk cap may delete an unshipped segment only when nothing else is left,
# and says so.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/lib_s3.sh
URL=s3://d9-test/fleet
TOOL="$TBIN/tool_s3"

if ! s3_start d9-test || ! s3_proxy_start; then
    check "s3rver and the proxy start" false
    d9_finish ship; exit
fi

# key of a local segment file PID-START-ID.d9seg, without HOST/DATE/
seg_suffix() { echo "$1" | sed 's/^\([0-9]*-[0-9]*\)-\([0-9]*\)\.d9seg$/\1\/\2/'; }
bucket_list() { "$TOOL" $URL list >"$T/bucket.list" 2>"$T/bucket.err"; }
# every local segment is in the bucket, byte for byte, with a manifest that
# names it and hashes it right
all_shipped_identical() {
    bucket_list || { cat "$T/bucket.err"; return 1; }
    n=0
    for f in "$STORE"/*.d9seg; do
        [ -e "$f" ] || continue
        sfx=$(seg_suffix "$(basename "$f")")
        key=$(awk '{print $1}' "$T/bucket.list" | grep "/$sfx\.d9seg\$")
        [ "$(echo "$key" | grep -c .)" -eq 1 ] || { echo "$f: not once in the bucket ($key)"; return 1; }
        "$TOOL" $URL get "$key" "$T/got" || return 1
        cmp "$f" "$T/got" || return 1
        "$TOOL" $URL get "${key%.d9seg}.manifest.json" "$T/man" || return 1
        python3 - "$T/man" "$f" "${sfx##*/}" <<'PY' || return 1
import hashlib, json, os, sys
m = json.load(open(sys.argv[1]))
data = open(sys.argv[2], "rb").read()
assert m["format"] == 1 and m["segment_id"] == int(sys.argv[3]), m
assert m["bytes"] == len(data) == os.path.getsize(sys.argv[2]), m
assert m["sha256"] == hashlib.sha256(data).hexdigest(), m
assert m["host"] and m["pid"] and m["records"] > 0 and m["t_max_ns"] >= m["t_min_ns"], m
# the segment's named threads (the index's names: segment files hold none)
assert isinstance(m["threads"], list) and len(m["threads"]) <= 256, m
for t in m["threads"]:
    assert sorted(t) == ["generation", "name", "ring", "tid"], t
    assert t["tid"] > 0 and 0 < len(t["name"].encode()) <= 16, t
PY
        n=$((n + 1))
    done
    [ $n -gt 0 ] || { echo "no local segments"; return 1; }
}
# no segment key got two successful PUTs (the proxy sees every request)
each_put_once() {
    grep '\.d9seg 200$' "$PROXY_LOG" | grep '^PUT ' | sort | uniq -d >"$T/dups"
    [ ! -s "$T/dups" ] || { echo "uploaded twice:"; cat "$T/dups"; return 1; }
}
stv() { "$TBIN/tool_ctl" "$EP" status | sed -n "s/^ship\.$1=//p"; }
backlog_empty() { [ "$(stv backlog)" = 0 ] && [ "$(sql "select count(*) from uploads where state != 'shipped'")" = 0 ]; }
nlocal() { ls "$STORE" | grep -c 'd9seg$'; }
# the upload threads' scheduling policies and nice values ("5/10 5/10": SCHED_IDLE)
ship_policies() {
    for t in /proc/$COLPID/task/*; do
        [ "$(cat "$t/comm" 2>/dev/null)" = d9-ship ] && awk '{ printf "%s/%s ", $41, $19 }' "$t/stat"
    done
}
all_policies() {  # WANT: every upload thread's policy/nice is WANT, and there is one
    p=$(ship_policies)
    [ -n "$p" ] && [ -z "$(echo $p | tr ' ' '\n' | grep -v "^$1\$")" ] ||
        { echo "upload threads (policy/nice): '$p', want all $1"; return 1; }
}
run_workload() {  # NAME: ~3 s of records, several 1 s segments
    workload "$1" --threads 2 --events 60000 --pace-us 2000 --batch 100
    wait_for 60 wl_done "$1"
    wait "$(wl_pid "$1")" 2>/dev/null
    flush
}

# ---- round trip
check "collector starts with --ship" start_collector --segment-seconds 1 --ship $URL \
    --s3-endpoint "$S3_PROXY"
check "the upload threads run on idle CPU time only (SCHED_IDLE) while the backlog is short" \
    wait_for 10 all_policies 5/10
check "d9 status: not catching up" eq "$(stv catching_up)" 0
run_workload a
check "the backlog drains" wait_for 60 backlog_empty
check "several segments were sealed" ge "$(nlocal)" 2
check "every segment is in the bucket byte for byte, with its manifest" all_shipped_identical
check "every request carried a valid signature and body checksums" sh -c "! grep -q ' 40[03]\$' '$PROXY_LOG'"
check "d9 status counts them shipped" eq "$(stv shipped)" "$(nlocal)"
check "d9 status shows the shipping line" sh -c "'$BIN/d9' --endpoint '$EP' status | grep -q '^shipping   to $URL: $(nlocal) shipped'"

# ---- 500 and 503, then back
s3_proxy_mode 503
run_workload b
check "503: attempts fail and are counted" wait_for 30 sh -c "[ \$('$TBIN/tool_ctl' '$EP' status | sed -n 's/^ship.failures=//p') -ge 2 ]"
check "503: d9 status shows the S3 error" sh -c "'$TBIN/tool_ctl' '$EP' status | grep -q '^ship.error=PUT s3://d9-test/fleet/.*: HTTP 503 SlowDown: injected'"
check "503: the segments wait as pending with their attempts and error" \
    ge "$(sql "select count(*) from uploads where state = 'pending' and attempts >= 1 and last_error like '%503%'")" 1
s3_proxy_mode 500
sleep 2
check "500: d9 status shows InternalError" sh -c "'$TBIN/tool_ctl' '$EP' status | grep -q 'HTTP 500 InternalError'"
check "recording goes on meanwhile" ge "$(nlocal)" 4
s3_proxy_mode ok
check "after the errors the backlog drains" wait_for 90 backlog_empty
check "all segments byte for byte after the errors" all_shipped_identical
check "no segment was uploaded twice" each_put_once

# ---- a collector killed during slow uploads, then restarted
s3_proxy_mode slow 3
run_workload c
check "an upload is in flight (attempt recorded, not shipped)" wait_for 20 sh -c \
    "[ \$(sqlite3 '$STORE/index.sqlite' \"select count(*) from uploads where state = 'pending' and attempts >= 1\") -ge 1 ]"
kill -9 "$COLPID"
wait "$COLPID" 2>/dev/null
sleep 4                                   # the proxy's delayed requests land meanwhile
s3_proxy_mode ok
check "the collector restarts on the same store" start_collector --segment-seconds 1 --ship $URL \
    --s3-endpoint "$S3_PROXY"
check "after the restart the backlog drains" wait_for 90 backlog_empty
check "every segment is in the bucket once, byte for byte" all_shipped_identical
check "no segment was uploaded twice across the kill" each_put_once
check "the restart asked the server before uploading again (HEAD)" grep -q '^HEAD .*\.d9seg 200$' "$PROXY_LOG"
check "SIGTERM exits 0" stop_collector

# ---- the server down, then back (no proxy: connection refused)
check "collector starts against the server directly" start_collector --segment-seconds 1 \
    --ship $URL --s3-endpoint "$S3_ENDPOINT"
s3_stop
run_workload d
check "server down: failures counted, connection refused shown" wait_for 30 sh -c \
    "'$TBIN/tool_ctl' '$EP' status | grep -q \"^ship.error=.*Couldn't connect\""
check "server down: a backlog builds" ge "$(stv backlog)" 1
check "the server comes back" s3_start d9-test
check "the backlog drains once it is back" wait_for 90 backlog_empty
check "all segments byte for byte after the outage" all_shipped_identical
check "SIGTERM exits 0" stop_collector

# ---- refusals: a wrong bucket, a wrong secret; recording goes on
STORE=$T/store-nobucket
check "collector starts shipping to a bucket that does not exist" start_collector \
    --segment-seconds 1 --ship s3://no-such-bucket/x --s3-endpoint "$S3_PROXY"
run_workload e
check "wrong bucket: the log says NoSuchBucket" wait_for 30 grep -q 'ship: segment .*HTTP 404 NoSuchBucket' "$T/col.log"
check "wrong bucket: d9 status says NoSuchBucket" sh -c "'$BIN/d9' --endpoint '$EP' status | grep -q '^SHIP ERROR PUT s3://no-such-bucket/.*NoSuchBucket'"
check "wrong bucket: the segments are marked failed" ge "$(stv failed)" 1
check "wrong bucket: recording goes on locally" ge "$(nlocal)" 2
check "SIGTERM exits 0" stop_collector
STORE=$T/store-badkey
AWS_SECRET_ACCESS_KEY=not-the-secret start_collector --segment-seconds 1 --ship $URL \
    --s3-endpoint "$S3_PROXY"
check "collector starts with a wrong secret" wait_for 5 "$TBIN/tool_ctl" "$EP" status
run_workload f
check "wrong secret: d9 status says SignatureDoesNotMatch" wait_for 30 sh -c \
    "'$TBIN/tool_ctl' '$EP' status | grep -q '^ship.error=.*HTTP 403 SignatureDoesNotMatch'"
check "wrong secret: recording goes on locally" ge "$(nlocal)" 2
check "SIGTERM exits 0" stop_collector
STORE=$T/store-nokey
AWS_ACCESS_KEY_ID= AWS_SECRET_ACCESS_KEY= AWS_SHARED_CREDENTIALS_FILE=$T/none \
    start_collector --segment-seconds 1 --ship $URL --s3-endpoint "$S3_PROXY"
check "no credentials: the collector runs and records" wait_for 5 "$TBIN/tool_ctl" "$EP" status
check "no credentials: the log says so" grep -q 'shipping to s3://d9-test/fleet is off: no AWS credentials' "$T/col.log"
check "no credentials: d9 status says so" sh -c "'$TBIN/tool_ctl' '$EP' status | grep -q '^ship.error=no AWS credentials'"
check "SIGTERM exits 0" stop_collector

# ---- the disk cap deletes shipped segments before older unshipped ones
STORE=$T/store-order
check "collector ships a first batch" start_collector --segment-seconds 1 --ship $URL \
    --s3-endpoint "$S3_PROXY"
run_workload h
check "the first batch is shipped" wait_for 60 backlog_empty
check "SIGTERM exits 0" stop_collector
check "the first batch has two segments or more" ge "$(sql 'select count(*) from segments')" 2
# the oldest segment waits (as after failed attempts); the newer ones are shipped
old=$(sql "select min(id) from segments")
sql "update uploads set state = 'pending', next_ns = 9000000000000000000 where segment_id = $old"
check "collector restarts with a 1 MiB cap, the server unreachable" start_collector \
    --segment-seconds 1 --segment-mb 1 --store-mb 1 --ship $URL --s3-endpoint http://127.0.0.1:1 \
    --log-level debug
run_workload i
run_workload j
check "the cap deleted segments" grep -q 'retention: evicted segment' "$T/col.log"
check "the first deleted was a newer shipped one, not the older unshipped" sh -c \
    "grep -m 1 'retention: evicted segment' '$T/col.log' | grep -qv 'evicted segment $old '"
check "unshipped ones went only once no shipped one was left" sh -c \
    "[ \$('$TBIN/tool_ctl' '$EP' status | sed -n 's/^ship.evicted_unshipped=//p') -eq 0 ] || [ \$(sqlite3 '$STORE/index.sqlite' \"select count(*) from uploads where state = 'shipped'\") -eq 0 ]"
check "SIGTERM exits 0" stop_collector

# ---- the disk cap with an unshipped backlog
STORE=$T/store-cap
check "collector starts with a 2 MiB cap, shipping to a dead endpoint" start_collector \
    --segment-mb 1 --store-mb 2 --ship $URL --s3-endpoint http://127.0.0.1:1
workload g --threads 4 --events 300000 --pace-us 500 --batch 500
check "the workload finishes" wait_for 90 wl_done g
flush
check "the cap deleted unshipped segments and counts them" ge "$(stv evicted_unshipped)" 1
check "the log says a segment went before it was shipped" grep -q 'retention: .*before it was shipped' "$T/col.log"
check "the store keeps to its cap" sh -c "[ \$(sqlite3 '$STORE/index.sqlite' 'select sum(bytes) from segments') -le $((2 * 1048576)) ]"
check "a backlog past half the cap: uploads catch up (d9 status)" wait_for 10 sh -c \
    "[ \"\$('$TBIN/tool_ctl' '$EP' status | sed -n 's/^ship.catching_up=//p')\" = 1 ]"
check "catching up: the upload threads compete for CPU at nice 10 (SCHED_OTHER)" \
    wait_for 10 all_policies 0/10
check "the log says why uploads compete" grep -q 'ship: backlog .* MiB, oldest sealed .*: uploads now compete for CPU (nice 10) to catch up' "$T/col.log"
check "d9 status says catching up" sh -c "'$BIN/d9' --endpoint '$EP' status | grep -q '^shipping   to .*, catching up)'"
check "SIGTERM exits 0" stop_collector
# ---- a saturated drain holds new uploads back, and they go on after
STORE=$T/store-busy
check "collector starts shipping with a large cap" start_collector --segment-mb 4 \
    --store-mb 65536 --ship $URL --s3-endpoint "$S3_PROXY"
workload busy --threads 2 --events 400000000
# two producers flat out on the collector's CPUs: its loop never sleeps.
# Polls d9 status while they run; once it says uploads wait, keeps that
# output and stops the load (a bounded amount of data for the rest)
saw_wait() {
    n=150
    while [ $n -gt 0 ] && kill -0 "$(wl_pid busy)" 2>/dev/null; do
        "$BIN/d9" --endpoint "$EP" status >"$T/busy.status" 2>&1
        if grep -q '^shipping   to .*, waiting: the drain is saturated)' "$T/busy.status"; then
            kill -9 "$(wl_pid busy)"
            return 0
        fi
        sleep 0.1
        n=$((n - 1))
    done
    kill -9 "$(wl_pid busy)" 2>/dev/null
    return 1
}
check "a saturated drain: no new upload starts (d9 status says so)" saw_wait
check "with the load gone the wait ends" wait_for 10 sh -c \
    "[ \"\$('$TBIN/tool_ctl' '$EP' status | sed -n 's/^ship.waiting_for_drain=//p')\" = 0 ]"
check "and the backlog drains" wait_for 120 backlog_empty
check "SIGTERM exits 0" stop_collector
d9_finish ship
