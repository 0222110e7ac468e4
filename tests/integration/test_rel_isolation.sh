#!/bin/sh
# test_rel_isolation.sh — regions of one uid are private to it, and a region
# planted by another uid is never adopted.
#
#   BUILD=... sh tests/integration/test_rel_isolation.sh     (root: setpriv to uid 65534)
#
# A root-owned traced process's region is mode 0600 and uid 65534 can neither
# read nor write it. Files planted by uid 65534 (copies of a valid root
# region) are rejected and counted in the status reply: one named for a
# live root-owned pid with uid 0, one named for that pid with uid 65534, and
# one whose name claims a dead pid while its header is another process's.
# Positive control: a real workload running as uid 65534 is adopted. And a
# collector running as uid 65534 cannot adopt a root process's region even
# when that process announces itself to it.
. tests/integration/lib.sh
. tests/integration/rel_lib.sh
d9_setup
rel_init
start=$(date +%s)
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
chmod 0755 "$T"
chmod 1777 "$SHM"

start_time() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $20 }'; }
rejected() { rel_status rejected_regions; }
rejected_at_least() { v=$(rejected); echo "rejected_regions=$v"; [ "${v:-0}" -ge "$1" ]; }

check "collector starts" rel_start_collector
rel_bg "$TBIN/prog_rel_workload" --threads 1 --pace-us 5000 --batch 10
rootw=$BGPID
check "root workload creates its region" wait_for 10 sh -c "ls '$SHM'/d9.0.$rootw.* >/dev/null 2>&1"
region=$(ls "$SHM"/d9.0.$rootw.* 2>/dev/null | head -n 1)
check "region is mode 0600, owned by root" sh -c "stat -c '%a %u' '$region' | grep -qx '600 0'"
check "uid 65534 cannot read a root region" sh -c "! $NOBODY cat '$region' >/dev/null 2>&1"
check "uid 65534 cannot write a root region" sh -c "! $NOBODY sh -c 'echo x >> \"$region\"' 2>/dev/null"
check "collector adopted the root region" wait_for 10 sh -c \
    "'$TBIN/tool_ctl' '$EP' status | grep -q '^proc.$rootw.state='"

base=$(rejected)
rel_bg sleep 120
victim=$BGPID
vst=$(start_time "$victim")
plant() {   # plant NAME: a copy of the root region owned by uid 65534
    cp "$region" "$SHM/$1" && chown 65534:65534 "$SHM/$1" && chmod 0600 "$SHM/$1"
}
plant "d9.0.$victim.$vst"
plant "d9.65534.$victim.$vst"
plant "d9.65534.999999.12345"      # a dead pid of uid 65534, header of the root process
check "planted regions are rejected and counted in status" wait_for 10 \
    rejected_at_least $(( ${base:-0} + 2 ))
check "a region named for a root pid but owned by uid 65534 is never adopted" sh -c \
    "'$TBIN/tool_ctl' '$EP' status >'$T/.neg52' && ! grep -q '^proc.$victim.' '$T/.neg52'"
check "a region whose name and header disagree is never adopted" sh -c \
    "'$TBIN/tool_ctl' '$EP' status >'$T/.neg54' && ! grep -q '^proc.999999.' '$T/.neg54'"
check "rejections are logged with the reason" grep -q 'rejected region' "$T/col.log"
check "the root workload is still traced" sh -c \
    "'$TBIN/tool_ctl' '$EP' status | grep -q '^proc.$rootw.state=alive'"
# header of the dead-pid impostor claims root's pid: it must not have been adopted under it
n=$(grep -c "adopted pid $rootw " "$T/col.log")
check "the impostor copy did not adopt a second instance of the root pid (adoptions: $n)" \
    test "$n" -eq 1

# positive control: the same rule adopts a genuine uid-65534 process
$NOBODY env DIAL9_SHM_DIR="$SHM" DIAL9_COLLECTOR="$EP" "$TBIN/prog_rel_workload" \
    --threads 1 --pace-us 5000 --batch 10 >/dev/null 2>&1 &
nobodyw=$!
_rel_pids="$_rel_pids $nobodyw"
check "a genuine uid-65534 process is adopted (the rule is not 'reject all')" wait_for 10 sh -c \
    "'$TBIN/tool_ctl' '$EP' status | grep -q '^proc.$nobodyw.state=alive'"
# a collector of another uid (65534) on the same shm dir, told about a root
# process by that process itself: it can neither read nor adopt the region
mkdir -p "$T/nobody"
chown 65534:65534 "$T/nobody"
NEP=ipc://$T/nobody/c.sock
$NOBODY "$COLLECTD" --store "$T/nobody/store" --shm-dir "$SHM" --endpoint "$NEP" --scan-ms 50 \
    >"$T/nobody/col.log" 2>&1 &
ncol=$!
_rel_pids="$_rel_pids $ncol"
check "a collector running as uid 65534 starts" wait_for 20 "$TBIN/tool_ctl" "$NEP" status
DIAL9_COLLECTOR=$NEP rel_bg "$TBIN/prog_rel_workload" --threads 1 --pace-us 5000 --batch 10
rootw2=$BGPID
check "root process announced itself to the uid-65534 collector (its region exists)" \
    wait_for 10 sh -c "ls '$SHM'/d9.0.$rootw2.* >/dev/null 2>&1"
sleep 0.5
check "the uid-65534 collector does not adopt the root region" sh -c \
    "'$TBIN/tool_ctl' '$NEP' status >'$T/.neg86' && ! grep -q '^proc.$rootw2.' '$T/.neg86'"
check "... and has written nothing of it" sh -c \
    "! ls '$T/nobody/store'/$rootw2-*.d9seg >/dev/null 2>&1"
check "... while the root collector does adopt it" wait_for 10 sh -c \
    "'$TBIN/tool_ctl' '$EP' status | grep -q '^proc.$rootw2.state=alive'"
check "collector still alive" kill -0 "$CPID"
echo "isolation: rejected_regions=$(rejected), $(( $(date +%s) - start ))s"
d9_finish rel-isolation
