#!/bin/sh
# test_s3_pull.sh — reading a host's traces back from a bucket: `d9 pull` and
# `d9 --store s3://...` against a real S3-compatible server (s3rver, lib_s3.sh)
# behind the signature-checking proxy (s3proxy.py), and a store a real
# d9collectd recorded from a real traced program (prog_cli) and shipped with
# --ship (other prefixes are uploaded in the same layout by tool_s3up).
# Byte-identical segments and the same ps/events/top-polls output as the
# original store; the threads keep their names (shipped in the manifests:
# segment files hold none; older manifests without them still pull); a
# second pull fetches nothing; --host/--pid/--from/--until
# filtering; several hosts; a corrupt object is reported and skipped; an
# interrupted pull's partial file is never indexed; errors (bad URL, no
# credentials, wrong secret, no such bucket); the original store deleted
# (host gone) still queryable.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/lib_s3.sh

if ! s3_start d9-pull || ! s3_proxy_start; then
    check "s3rver and the proxy start (make deps installs s3rver)" false
    d9_finish s3-pull
    exit 1
fi
URL=s3://$S3_BUCKET/fleet
HOSTKEY=$(hostname | sed 's/[^A-Za-z0-9._-]/_/g')
ps_of() { "$BIN/d9" --store "$1" ps 2>/dev/null; }
ev_of() { "$BIN/d9" --store "$1" events 2>/dev/null; }
tp_of() { "$BIN/d9" --store "$1" top-polls --limit 50 2>/dev/null; }
threads_of() { "$BIN/d9" --store "$1" sql --format csv \
    'select pid, tid, ring, generation, name from threads order by pid, ring, generation' 2>/dev/null; }
# same_names A B: every thread of pulled store B has the name it has in A,
# and B's workers (prog_cli names them cliwN) are among them
same_names() {
    threads_of "$1" >"$T/thr.a"; threads_of "$2" >"$T/thr.b"
    [ "$(grep -c ',cliw[0-9]*' "$T/thr.b")" -ge 2 ] && [ -z "$(grep -vxFf "$T/thr.a" "$T/thr.b")" ]
}
# same_files A B: the same segment files, byte for byte
same_files() {
    a=$(cd "$1" && ls *.d9seg | sort); b=$(cd "$2" && ls *.d9seg | sort)
    [ -n "$a" ] && [ "$a" = "$b" ] || { echo "files: $a"; echo "vs:    $b"; return 1; }
    for f in $a; do cmp "$1/$f" "$2/$f" || return 1; done
}
same_output() {   # same_output CMD STORE_A STORE_B
    "$1" "$2" >"$T/out.a"; "$1" "$3" >"$T/out.b"
    [ -s "$T/out.a" ] && diff "$T/out.a" "$T/out.b"
}

# ---- a store recorded by a real collector ---------------------------------------
T0=$(date +%s)
check "collector answers d9 status" start_collector --ship "$URL" --s3-endpoint "$S3_PROXY"
check "both processes reached their final state" cli_runs
unshipped() { sqlite3 "$STORE/index.sqlite" "select count(*) from segments s left join uploads u
                                              on u.segment_id = s.id where u.state is not 'shipped'"; }
# read again at every try of the wait (a "$(unshipped)" argument would be read once)
all_shipped() { [ "$(unshipped)" = 0 ]; }
check "d9collectd --ship uploads every sealed segment" wait_for 60 all_shipped
stop_collector
check "... and every segment of the stopped collector is shipped" test "$(unshipped)" = 0
NSEG=$(ls "$STORE"/*.d9seg | wc -l)
check "the store has sealed segments of both processes" sh -c "
    [ $NSEG -ge 2 ] && ls '$STORE' | grep -q '^$OKPID-' && ls '$STORE' | grep -q '^$CRPID-'"
"$TBIN/tool_s3" "$URL" list >"$T/up.out"
check "the bucket holds segment and manifest under HOST/DAY/PID-START/" sh -c "
    [ \$(grep -c '^$HOSTKEY/[0-9-]*/[0-9]*-[0-9]*/[0-9]*\\.d9seg ' '$T/up.out') -eq $NSEG ] &&
    [ \$(grep -c '\\.manifest\\.json ' '$T/up.out') -eq $NSEG ]"
S3_ENDPOINT=$S3_PROXY                     # every request from here on is signature-checked

# ---- d9 pull into an empty directory -----------------------------------------------
P1=$T/p1
check "d9 pull fetches every segment" sh -c "
    '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' '$URL' '$P1' 2>'$T/p1.err' &&
    grep -q '$NSEG segments fetched' '$T/p1.err' && grep -q '\\[$NSEG/$NSEG\\]' '$T/p1.err'"
check "pulled segment files are byte-identical" same_files "$STORE" "$P1"
check "d9 ps: the same output as the original store" same_output ps_of "$STORE" "$P1"
check "d9 events: the same output" same_output ev_of "$STORE" "$P1"
check "d9 top-polls: the same output" same_output tp_of "$STORE" "$P1"
check "the threads keep their names (d9 sql on threads)" same_names "$STORE" "$P1"
check "d9 fsck finds the pulled store consistent" "$BIN/d9" --store "$P1" fsck
check "the pulled index keeps the origin's host and boot" sh -c "
    [ \"\$(sqlite3 '$P1/index.sqlite' \"select value from meta where key in ('host','boot_id','boot_realtime_ns') order by key\")\" = \
      \"\$(sqlite3 '$STORE/index.sqlite' \"select value from meta where key in ('host','boot_id','boot_realtime_ns') order by key\")\" ]"

ls -li --full-time "$P1" >"$T/p1.ls"
G=$(grep -c '^GET .*\.d9seg ' "$PROXY_LOG")
check "a second pull fetches nothing" sh -c "
    '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' '$URL' '$P1' 2>'$T/p1b.err' &&
    grep -q '0 segments fetched.*$NSEG already present' '$T/p1b.err' && ! grep -q '\\[1/' '$T/p1b.err' &&
    [ \$(grep -c '^GET .*\\.d9seg ' '$PROXY_LOG') -eq $G ] &&
    ls -li --full-time '$P1' | grep '\\.d9seg\$' >'$T/p1b.ls' && grep '\\.d9seg\$' '$T/p1.ls' | diff - '$T/p1b.ls'"
check "... and leaves the store as it was" same_output ps_of "$STORE" "$P1"
check "... names included" same_names "$STORE" "$P1"

# ---- filters ------------------------------------------------------------------------
NOK=$(ls "$STORE" | grep -c "^$OKPID-.*\.d9seg$")
check "--pid: only that process's segments" sh -c "
    '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' --pid $OKPID '$URL' '$T/ppid' 2>/dev/null &&
    [ \$(ls '$T/ppid' | grep -c '\\.d9seg\$') -eq $NOK ] && [ \$(ls '$T/ppid' | grep -c '^$OKPID-') -eq $NOK ]"
check "--until before the recording: nothing matches (success, said on stderr)" sh -c "
    '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' --host '$HOSTKEY' --until @$((T0 - 60)) '$URL' '$T/pold' 2>'$T/pold.err' &&
    ls '$T/pold' >'$T/.neg121' && ! grep -q '\\.d9seg\$' '$T/.neg121' && grep -q 'no segment matches' '$T/pold.err'"
check "--from after the recording: nothing" sh -c "
    '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' --from @$(($(date +%s) + 60)) '$URL' '$T/pnew' 2>/dev/null &&
    ls '$T/pnew' >'$T/.neg124' && ! grep -q '\\.d9seg\$' '$T/.neg124'"
check "--host with --since 1h: everything, listing only the host's days" sh -c "
    n0=\$(grep -c 'Fetched bucket' '$S3_LOG');
    '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' --host '$HOSTKEY' --since 1h '$URL' '$T/psince' 2>/dev/null &&
    [ \$(ls '$T/psince' | grep -c '\\.d9seg\$') -eq $NSEG ] &&
    grep 'Fetched bucket' '$S3_LOG' | tail -n +\$((n0 + 1)) >'$T/lists' &&
    grep -q 'prefix\":\"fleet/$HOSTKEY/20[0-9-]*/\"' '$T/lists' && ! grep -q 'prefix\":\"fleet/\"' '$T/lists' &&
    ! grep -q 'prefix\":\"fleet/$HOSTKEY/\"' '$T/lists'"
check "--host of an unknown host: nothing" sh -c "
    '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' --host nosuchhost '$URL' '$T/pnone' 2>/dev/null &&
    ls '$T/pnone' >'$T/.neg134' && ! grep -q '\\.d9seg\$' '$T/.neg134'"

# ---- a second host in the same prefix ------------------------------------------------
"$TBIN/tool_s3up" "$STORE" "$URL" otherhost >/dev/null
check "two hosts without --host: refused, naming both" sh -c "
    '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' '$URL' '$T/pboth' 2>'$T/pboth.err';
    [ \$? -eq 1 ] && grep -q '2 hosts' '$T/pboth.err' && grep -q otherhost '$T/pboth.err' && grep -q -- '--host' '$T/pboth.err'"
check "--host picks the other host" sh -c "
    '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' --host otherhost '$URL' '$T/pother' 2>/dev/null"
check "... its segments byte-identical" same_files "$STORE" "$T/pother"
check "manifests without thread names (older uploads): pulled, the names empty" sh -c "
    [ \$(sqlite3 '$T/pother/index.sqlite' 'select count(*) from threads') -gt 0 ] &&
    [ \$(sqlite3 '$T/pother/index.sqlite' \"select count(*) from threads where coalesce(name, '') != ''\") -eq 0 ]"
check "a store of one host refuses another host's segments" sh -c "
    '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' --host otherhost '$URL' '$P1' 2>'$T/pmix.err';
    [ \$? -eq 1 ] && grep -q 'holds host' '$T/pmix.err'"

# ---- corrupt objects, partial downloads ---------------------------------------------
BAD=s3://$S3_BUCKET/bad
"$TBIN/tool_s3up" "$STORE" "$BAD" >"$T/upbad.out"
VICTIM=$(grep '\.d9seg ' "$T/upbad.out" | head -n 1 | cut -d' ' -f1)
VNAME=$(echo "$VICTIM" | awk -F/ '{ split($3, p, "-"); sub(/\.d9seg$/, "", $4); print p[1] "-" p[2] "-" $4 ".d9seg" }')
cp "$STORE/$VNAME" "$T/victim"
printf 'ZZZZ' | dd of="$T/victim" bs=1 seek=2000 conv=notrunc 2>/dev/null
"$TBIN/tool_s3" "$BAD" put "$VICTIM" "$T/victim" >/dev/null
mkdir -p "$T/pbad"
echo garbage >"$T/pbad/.pull.$VNAME.part"
check "a corrupt object: reported, skipped, exit 1, the others fetched" sh -c "
    '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' '$BAD' '$T/pbad' 2>'$T/pbad.err';
    [ \$? -eq 1 ] && grep -q 'corrupt: CRC-32C' '$T/pbad.err' && grep -q '1 corrupt segment skipped' '$T/pbad.err' &&
    [ ! -e '$T/pbad/$VNAME' ] && [ \$(ls '$T/pbad' | grep -c '\\.d9seg\$') -eq $((NSEG - 1)) ]"
check "no partial download is left or indexed" sh -c "
    ls -a '$T/pbad' >'$T/.neg166' && ! grep -q '\\.part\$' '$T/.neg166' && '$BIN/d9' --store '$T/pbad' fsck >/dev/null &&
    [ \$(sqlite3 '$T/pbad/index.sqlite' 'select count(*) from segments') -eq $((NSEG - 1)) ]"
"$TBIN/tool_s3" "$BAD" put "$VICTIM" "$STORE/$VNAME" >/dev/null
check "once the object is repaired, a pull fetches just it" sh -c "
    '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' '$BAD' '$T/pbad' 2>'$T/pfix.err' &&
    grep -q '1 segment fetched' '$T/pfix.err' && cmp '$STORE/$VNAME' '$T/pbad/$VNAME'"
check "... and the store is whole again" same_output ev_of "$STORE" "$T/pbad"
V2=$(grep '\.d9seg ' "$T/upbad.out" | sed -n 2p | cut -d' ' -f1)
"$TBIN/tool_s3" "$BAD" get "${VICTIM%.d9seg}.manifest.json" "$T/m1.json" >/dev/null
"$TBIN/tool_s3" "$BAD" put "${V2%.d9seg}.manifest.json" "$T/m1.json" >/dev/null
check "a manifest naming another segment: reported, its segment skipped" sh -c "
    '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' '$BAD' '$T/pbad2' 2>'$T/pbad2.err';
    [ \$? -eq 1 ] && grep -q 'corrupt manifest: it names another segment' '$T/pbad2.err' &&
    [ \$(ls '$T/pbad2' | grep -c '\\.d9seg\$') -eq $((NSEG - 1)) ]"

# ---- errors -------------------------------------------------------------------------
check "a bad URL is a usage error" sh -c "
    '$BIN/d9' pull 'http://x/y' '$T/e1' 2>'$T/e1.err'; [ \$? -eq 2 ]"
check "a bad bucket name is a usage error naming it" sh -c "
    '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' 's3://B_ad/x' '$T/e2' 2>'$T/e2.err'; [ \$? -eq 2 ] && grep -qi 'bucket' '$T/e2.err'"
check "no credentials: a clear error" sh -c "
    env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME='$T/nohome' AWS_SHARED_CREDENTIALS_FILE='$T/none' \
        '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' '$URL' '$T/e3' 2>'$T/e3.err';
    [ \$? -eq 1 ] && grep -q 'no credentials' '$T/e3.err'"
check "a wrong secret: access denied (403, the proxy checks signatures)" sh -c "
    AWS_SECRET_ACCESS_KEY=wrong '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' '$URL' '$T/e4b' 2>'$T/e4b.err';
    [ \$? -eq 1 ] && grep -q '403' '$T/e4b.err' && grep -q 'access denied' '$T/e4b.err'"
check "an unknown access key: access denied (403)" sh -c "
    AWS_ACCESS_KEY_ID=nobody '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' '$URL' '$T/e4' 2>'$T/e4.err';
    [ \$? -eq 1 ] && grep -q '403' '$T/e4.err' && grep -q 'access denied' '$T/e4.err'"
check "no such bucket: said so" sh -c "
    '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' 's3://nosuchbucket/x' '$T/e5' 2>'$T/e5.err';
    [ \$? -eq 1 ] && grep -q 'NoSuchBucket' '$T/e5.err'"
check "the server down: a clear error" sh -c "
    '$BIN/d9' pull --s3-endpoint 'http://127.0.0.1:1' '$URL' '$T/e6' 2>'$T/e6.err';
    [ \$? -eq 1 ] && grep -q 'cannot list' '$T/e6.err'"
check "d9 pull --help is a manual page" sh -c "
    '$BIN/d9' pull --help | grep -q SYNOPSIS && '$BIN/d9' pull --help | grep -q 'EXIT STATUS'"

# ---- d9 --store s3://... -------------------------------------------------------------
XDG_CACHE_HOME=$T/xdg
export XDG_CACHE_HOME
check "--store s3://: ps as on the original store" sh -c "
    '$BIN/d9' --s3-endpoint '$S3_ENDPOINT' --host '$HOSTKEY' --store '$URL' ps >'$T/s3ps.out' 2>'$T/s3ps.err' && '$BIN/d9' --store '$STORE' ps >'$T/ps.out' 2>/dev/null && diff '$T/ps.out' '$T/s3ps.out'"
check "... pulled into the XDG cache" sh -c "ls '$XDG_CACHE_HOME'/d9/s3/$(echo "${S3_ENDPOINT#http://}" | tr : _)/$S3_BUCKET/fleet/@$HOSTKEY/*.d9seg >/dev/null"
check "--store s3://: events (after the command too)" sh -c "
    '$BIN/d9' --s3-endpoint '$S3_ENDPOINT' --host '$HOSTKEY' events --store '$URL' >'$T/s3ev.out' 2>/dev/null &&
    '$BIN/d9' --store '$STORE' events >'$T/ev.out' 2>/dev/null && [ -s '$T/ev.out' ] && diff '$T/ev.out' '$T/s3ev.out'"
check "--store s3://: sql" sh -c "
    [ \"\$('$BIN/d9' --s3-endpoint '$S3_ENDPOINT' --host '$HOSTKEY' --store '$URL' sql --format csv \
        'select count(*) from polls where pid = $OKPID' 2>/dev/null | tail -n 1 | tr -d '\\r')\" = 401 ]"
check "--store s3:// --pid: only that process is pulled into --cache" sh -c "
    '$BIN/d9' --s3-endpoint '$S3_ENDPOINT' --host '$HOSTKEY' --cache '$T/c2' --store '$URL' top-polls --pid $OKPID >'$T/c2.out' 2>/dev/null &&
    [ -s '$T/c2.out' ] && [ \$(ls '$T/c2' | grep -c '\\.d9seg\$') -eq $NOK ]"
check "--store s3:// with fsck is refused" sh -c "
    '$BIN/d9' --s3-endpoint '$S3_ENDPOINT' --store '$URL' fsck 2>/dev/null; [ \$? -eq 2 ]"
check "--store s3:// with the server unreachable: the cache, with a warning" sh -c "
    '$BIN/d9' --s3-endpoint '$S3_ENDPOINT' --host '$HOSTKEY' --cache '$T/c3' --store '$URL' ps >/dev/null 2>&1 &&
    '$BIN/d9' --s3-endpoint 'http://127.0.0.1:1' --host '$HOSTKEY' --cache '$T/c3' --store '$URL' ps >'$T/off.out' 2>'$T/off.err' &&
    diff '$T/s3ps.out' '$T/off.out' && grep -q 'cannot list' '$T/off.err' && grep -q 'may miss segments' '$T/off.err'"
check "... and an error without a cache" sh -c "
    '$BIN/d9' --s3-endpoint 'http://127.0.0.1:1' --host '$HOSTKEY' --cache '$T/nocache' --store '$URL' ps >/dev/null 2>'$T/off2.err';
    [ \$? -eq 1 ] && grep -q 'cannot list' '$T/off2.err'"
"$BIN/d9" --store "$STORE" ps >"$T/ps.orig" 2>/dev/null
"$BIN/d9" --store "$STORE" events >"$T/ev.orig" 2>/dev/null
threads_of "$STORE" >"$T/thr.orig"
rm -rf "$STORE" "$XDG_CACHE_HOME"
check "host gone (its store deleted): --store s3:// still answers ps" sh -c "
    '$BIN/d9' --s3-endpoint '$S3_ENDPOINT' --host '$HOSTKEY' --store '$URL' ps >'$T/gone.out' 2>/dev/null &&
    diff '$T/ps.orig' '$T/gone.out'"
check "... and events" sh -c "
    '$BIN/d9' --s3-endpoint '$S3_ENDPOINT' --host '$HOSTKEY' --store '$URL' events >'$T/gone.ev' 2>/dev/null &&
    diff '$T/ev.orig' '$T/gone.ev'"
check "... and its threads' names" sh -c "
    '$BIN/d9' --s3-endpoint '$S3_ENDPOINT' --host '$HOSTKEY' --store '$URL' sql --format csv \
        'select pid, tid, ring, generation, name from threads order by pid, ring, generation' \
        >'$T/gone.thr' 2>/dev/null &&
    [ \$(grep -c ',cliw[0-9]*' '$T/gone.thr') -ge 2 ] && [ -z \"\$(grep -vxFf '$T/thr.orig' '$T/gone.thr')\" ]"

d9_finish s3-pull
