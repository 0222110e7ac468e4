#!/bin/sh
# The collector survives hostile peers: malformed control messages, a region
# with a corrupt ring, a region truncated under it (SIGBUS), a region of
# the wrong owner.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

check "collector starts" start_collector
check "malformed control messages are sent" "$TBIN/tool_ctl" "$EP" garbage
check "the collector still answers after malformed messages" "$TBIN/tool_ctl" "$EP" status
check "malformed messages are counted" ge "$(st malformed_messages)" 6
check "a rate-limited warning names the problem" grep -q "dropped a malformed message" "$T/col.log"
check "a hello pointing outside the shm dir adopts nothing" eq "$(st processes)" 0

"$TBIN/tool_badregion" corrupt "$T/bad.ready" >"$T/bad.out" 2>&1 &
BADPID=$!
at_exit kill -9 $BADPID
check "the corrupt-ring process is set up" wait_for 10 test -s "$T/bad.ready"
check "it is adopted" wait_for 10 sh -c "[ \"\$('$TBIN/tool_ctl' '$EP' status | sed -n 's/^processes=//p')\" = 1 ]"
check "the corrupt ring is quarantined and reported" wait_for 10 sh -c \
    "'$TBIN/tool_ctl' '$EP' status | grep -q '^quarantined_rings=1'"
check "the quarantined ring is flagged in the ring list" sh -c \
    "'$TBIN/tool_ctl' '$EP' status | grep -q '^ring\.$BADPID\.[0-9]*\.quarantined=1'"
check "flush succeeds" flush
check "the good ring of the same process is stored" eq "$(seg type.poll_end $BADPID)" 50
kill -9 $BADPID
check "the killed process is finished as crashed" wait_for 10 sh -c \
    "[ \"\$(sqlite3 '$STORE/index.sqlite' \"select state from processes where pid=$BADPID\")\" = crashed ]"

"$TBIN/tool_badregion" truncate "$T/trunc.ready" >"$T/trunc.out" 2>&1 &
TRPID=$!
at_exit kill -9 $TRPID
check "the truncating process is set up" wait_for 10 test -s "$T/trunc.ready"
check "the collector survives the truncation (SIGBUS)" wait_for 10 sh -c \
    "'$TBIN/tool_ctl' '$EP' status | grep -q '^proc\.$TRPID\.state=quarantined'"
check "the quarantine is logged" grep -q "region quarantined" "$T/col.log"
kill -9 $TRPID
check "the quarantined process is finished" wait_for 10 sh -c \
    "[ \"\$(sqlite3 '$STORE/index.sqlite' \"select state from processes where pid=$TRPID\")\" = quarantined ]"
check "the collector is still alive" kill -0 "$COLPID"
check "SIGTERM exits 0" stop_collector
d9_finish collector-hostile
