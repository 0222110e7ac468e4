#!/bin/sh
# d9collectd (often root) creates and removes files at paths from its flags:
# it never truncates, binds over or removes a file it did not create. A
# device node, a regular file with data or a symlink at the --pidfile or
# --endpoint ipc:// path makes it refuse to start and leaves the file as it
# was; its own pidfile and socket are removed at exit only while they are
# still the files it made; a stale pidfile or socket of a crashed collector
# is replaced. The store's .lock and .tmp.* paths follow the same rule.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

mkdir -p "$T/p"
echo "precious data" >"$T/p/file"
ln -s "$T/p/file" "$T/p/link"
NODES="file link"
if [ "$(id -u)" -eq 0 ] && mknod "$T/p/dev" c 1 3 2>/dev/null; then
    NODES="$NODES dev"
else
    echo "skip - device node cases: mknod needs root"
fi

# intact KIND: the thing at $T/p/KIND is what the test made
intact() {
    case $1 in
    file) [ -f "$T/p/file" ] && [ ! -L "$T/p/file" ] && [ "$(cat "$T/p/file")" = "precious data" ] ;;
    link) [ -L "$T/p/link" ] && [ "$(readlink "$T/p/link")" = "$T/p/file" ] &&
          [ "$(cat "$T/p/file")" = "precious data" ] ;;
    dev)  [ -c "$T/p/dev" ] ;;
    esac
}
# refused FLAGS...: the collector exits 1 without starting
refused() {
    "$BIN/d9collectd" --store "$STORE" --shm-dir "$SHM" --scan-ms 100 "$@" \
        >"$T/r.out" 2>"$T/r.err" &
    _p=$!
    wait_for 10 sh -c "! kill -0 $_p 2>/dev/null" || { kill -TERM $_p; wait $_p; return 1; }
    wait $_p
    [ $? -eq 1 ]
}

for k in $NODES; do
    check "--pidfile over a $k: refused" refused --endpoint "$EP" --pidfile "$T/p/$k"
    check "  and the $k is untouched" intact $k
    check "--endpoint ipc:// over a $k: refused" refused --endpoint "ipc://$T/p/$k"
    check "  and the $k is untouched" intact $k
done
check "the refusal says why" grep -q "not a socket of ours" "$T/r.err"

# a file swapped in while it runs is not removed at exit
check "collector starts with a pidfile" start_collector --pidfile "$T/pid"
check "the pidfile holds its pid" eq "$(cat "$T/pid")" "$COLPID"
mv "$T/pid" "$T/pid.moved" && echo "not mine" >"$T/pid"
SOCK=${EP#ipc://}
mv "$SOCK" "$SOCK.moved" && echo "not mine" >"$SOCK"
check "SIGTERM exits 0" stop_collector
check "a file put at the pidfile path is left alone" grep -q "not mine" "$T/pid"
check "a file put at the socket path is left alone" grep -q "not mine" "$SOCK"
rm -f "$T/pid" "$SOCK" "$T/pid.moved" "$SOCK.moved"

# its own files are removed; leftovers of a crashed collector are replaced
check "collector starts" start_collector --pidfile "$T/pid"
check "SIGTERM exits 0" stop_collector
check "its pidfile is removed at exit" test ! -e "$T/pid"
check "its socket is removed at exit" test ! -e "$SOCK"
check "collector starts" start_collector --pidfile "$T/pid"
kill -9 "$COLPID"; wait "$COLPID" 2>/dev/null
check "after a SIGKILL the stale pidfile and socket are replaced" \
    start_collector --pidfile "$T/pid"
check "SIGTERM exits 0" stop_collector

# store paths: .lock and a .tmp.* segment name that are not regular files
for k in $NODES; do
    S2=$T/store-$k
    mkdir -p "$S2"
    [ $k = file ] && continue       # a regular .lock file is the normal case
    cp -a "$T/p/$k" "$S2/.lock"
    check ".lock as a $k: refused" refused --endpoint "ipc://$T/s-$k.sock" --store "$S2"
    check "  and left as it was" sh -c "[ -L '$S2/.lock' ] || [ -c '$S2/.lock' ]"
done
mkdir -p "$T/store-tmp"
ln -s "$T/p/file" "$T/store-tmp/.tmp.1-1-7.d9seg"
STORE=$T/store-tmp
check "collector starts on a store with a symlinked temp name" start_collector
check "SIGTERM exits 0" stop_collector
check "  the symlink is left alone" test -L "$T/store-tmp/.tmp.1-1-7.d9seg"
check "  and its target untouched" intact file

# a missing --shm-dir is created, as --store is (root: like /dev/shm; others: theirs)
SHM=$T/new-shm
STORE=$T/store-newshm
check "collector starts with a --shm-dir that does not exist yet" start_collector
want=700; [ "$(id -u)" -eq 0 ] && want=1777
check "  the directory exists with mode $want" sh -c "[ -d '$SHM' ] && [ \$(stat -c %a '$SHM') = $want ]"
check "  and says so in its log" grep -q "created shm directory $SHM" "$T/col.log"
check "SIGTERM exits 0" stop_collector
SHM=$T/no/such/parent
check "a --shm-dir whose parent is missing: refused" refused --endpoint "ipc://$T/s-np.sock"
check "  with one line naming it" grep -q "cannot create shm directory $SHM" "$T/r.err"
d9_finish collector-paths
