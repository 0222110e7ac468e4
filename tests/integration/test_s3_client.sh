#!/bin/sh
# test_s3_client.sh — the S3 client (collector/s3/) against a real S3-compatible
# server (s3rver, tests/integration/lib_s3.sh): a byte-identical round trip, HEAD,
# listing across pages, delete, and the errors a user must be able to read
# (wrong access key, wrong bucket, no credentials, server down).
. tests/integration/lib.sh
. tests/integration/lib_s3.sh
d9_setup
TOOL="$TBIN/tool_s3"
URL=s3://d9-test/fleet/a

if ! s3_start d9-test; then
    check "s3rver starts" false
    d9_finish s3-client; exit
fi

head -c 3000000 /dev/urandom >"$T/blob"
check "PUT of 3 MB succeeds" "$TOOL" $URL put host1/2026-01-01/1-2/3.d9seg "$T/blob"
check "GET gives the same bytes back" sh -c "'$TOOL' $URL get host1/2026-01-01/1-2/3.d9seg '$T/back' && cmp '$T/blob' '$T/back'"
check "HEAD gives the size" sh -c "'$TOOL' $URL head host1/2026-01-01/1-2/3.d9seg | grep -q '^3000000 \"'"
check "HEAD of a missing key is absent (exit 3)" sh -c "'$TOOL' $URL head nope; [ \$? -eq 3 ]"
printf 'odd name' >"$T/small"
check "keys with spaces, plus and unicode round-trip" sh -c "'$TOOL' $URL put 'we ird+k\$y/é.txt' '$T/small' && '$TOOL' $URL get 'we ird+k\$y/é.txt' '$T/small.back' && cmp '$T/small' '$T/small.back'"

# 1100 objects: more than one ListObjectsV2 page (s3rver pages at 1000)
printf 'x' >"$T/tiny"
i=0
while [ $i -lt 1100 ]; do echo "many/k$i"; i=$((i + 1)); done >"$T/names"
check "1100 small PUTs" sh -c "while read -r k; do '$TOOL' $URL put \"\$k\" '$T/tiny' || exit 1; done <'$T/names'"
"$TOOL" $URL list many/ >"$T/list" 2>"$T/list.err"
check "LIST follows continuation tokens (1100 keys, each once)" sh -c "[ \$(sort -u '$T/list' | wc -l) -eq 1100 ] && [ \$(wc -l <'$T/list') -eq 1100 ] && grep -qx 'many/k1099 1' '$T/list'"
check "DELETE removes the object" sh -c "'$TOOL' $URL delete many/k5 && '$TOOL' $URL list many/k5 >'$T/.neg32' && ! grep -qx 'many/k5 1' '$T/.neg32' && '$TOOL' $URL list many/k5 | grep -qx 'many/k50 1'"

AWS_ACCESS_KEY_ID=AKIDWRONG "$TOOL" $URL put bad "$T/tiny" 2>"$T/err.key"
check "a wrong access key is a readable InvalidAccessKeyId" grep -q 'HTTP 403 InvalidAccessKeyId: The AWS Access Key Id' "$T/err.key"
"$TOOL" s3://no-such-bucket/p put x "$T/tiny" 2>"$T/err.bucket"
check "a wrong bucket is a readable NoSuchBucket" grep -q 'HTTP 404 NoSuchBucket' "$T/err.bucket"
AWS_ACCESS_KEY_ID= AWS_SECRET_ACCESS_KEY= AWS_SHARED_CREDENTIALS_FILE=$T/nocreds "$TOOL" $URL head x 2>"$T/err.nokey"
check "no credentials: says where it looked" grep -q 'no AWS credentials.*nocreds' "$T/err.nokey"
printf '[default]\naws_access_key_id = S3RVER\n[ci]\naws_access_key_id=S3RVER\naws_secret_access_key = S3RVER\n' >"$T/creds"
check "credentials from a profile of the credentials file" env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_SHARED_CREDENTIALS_FILE="$T/creds" AWS_PROFILE=ci "$TOOL" $URL head host1/2026-01-01/1-2/3.d9seg

# A PUT whose connection dies after its body was sent: curl sends it again on
# a fresh connection, rewinding the body (the client's seek function). The
# server below answers the first PUT on a kept-alive connection, reads the
# second one's body and closes without an answer, then answers the retry.
cat >"$T/dropper.py" <<'PY'
import socket, sys, threading
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0)); srv.listen(8); srv.settimeout(20)
open(sys.argv[1], "w").write(str(srv.getsockname()[1]))
log = open(sys.argv[2], "w", buffering=1)
seen = [0]
def serve(conn):
    conn.settimeout(10)
    f = conn.makefile("rb")
    while True:
        line = f.readline()
        if not line:
            return
        n = 0
        while True:
            h = f.readline()
            if h in (b"\r\n", b"\n", b""):
                break
            k, _, v = h.decode().partition(":")
            if k.strip().lower() == "content-length":
                n = int(v)
        body = f.read(n)
        seen[0] += 1
        log.write("%s %d %d\n" % (line.split()[1].decode(), len(body), seen[0]))
        if seen[0] == 2:
            conn.close()
            return
        conn.sendall(b"HTTP/1.1 200 OK\r\nETag: \"e\"\r\nContent-Length: 0\r\n\r\n")
threads = []
for _ in range(3):
    try:
        c, _ = srv.accept()
    except OSError:
        break
    threads.append(threading.Thread(target=serve, args=(c,), daemon=True))
    threads[-1].start()
for t in threads:
    t.join(10)
PY
python3 "$T/dropper.py" "$T/dropper.port" "$T/dropper.log" &
DROPPER=$!
at_exit kill "$DROPPER"
wait_for 10 test -s "$T/dropper.port"
head -c 200000 /dev/urandom >"$T/rewind"
S3_ENDPOINT="http://127.0.0.1:$(cat "$T/dropper.port")" AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s \
    "$TOOL" s3://bkt/p put2 rw "$T/rewind" 2>"$T/err.rewind"
check "a PUT cut after its body is sent again whole on a fresh connection (the body rewound)" \
    sh -c "[ \$(grep -c '^/bkt/p/rw.2 200000 ' '$T/dropper.log') -eq 2 ] && ! [ -s '$T/err.rewind' ]"

s3_stop
"$TOOL" $URL head x 2>"$T/err.down"
check "server down: connection refused, retryable" grep -qi "couldn't connect" "$T/err.down"
d9_finish s3-client
