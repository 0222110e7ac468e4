# lib_s3.sh — a real S3-compatible server on 127.0.0.1 for the S3 tests
# (sourced after lib.sh and d9_setup).
#   s3_start [BUCKET]   start s3rver (tests/integration/s3rver_install.sh puts it in
#                       $BUILD/npm) on a free port with BUCKET (default d9-test);
#                       exports S3_ENDPOINT, S3_BUCKET, S3_DATA, S3_LOG and the AWS_*
#                       credentials s3rver accepts; returns 1 if it cannot start
#   s3_stop             stop it (also registered with at_exit); s3_start again later
#                       restarts it on the same port and data (a server that was down)
#   s3_requests METHOD  how many METHOD requests the server has logged so far
# s3rver checks the access key id (InvalidAccessKeyId) and the bucket
# (NoSuchBucket), not the V4 signature itself nor Content-MD5; its keys are
# S3RVER / S3RVER.
S3RVER=${S3RVER:-$BUILD/npm/node_modules/.bin/s3rver}
S3_BUCKET=${S3_BUCKET:-d9-test}

s3_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
s3_up() { curl -s -o /dev/null "http://127.0.0.1:$S3_PORT/"; }
s3_start() {
    [ -x "$S3RVER" ] || { echo "lib_s3: $S3RVER missing (make deps)"; return 1; }
    [ $# -gt 0 ] && S3_BUCKET=$1
    S3_DATA=${S3_DATA:-$T/s3data}
    S3_LOG=${S3_LOG:-$T/s3rver.log}
    S3_PORT=${S3_PORT:-$(s3_free_port)}
    mkdir -p "$S3_DATA"
    # s3rver's continuation tokens use DES, which OpenSSL 3 keeps in its legacy provider
    NODE_OPTIONS=--openssl-legacy-provider node "$(dirname "$S3RVER")/../s3rver/bin/s3rver.js" -d "$S3_DATA" -a 127.0.0.1 -p "$S3_PORT" \
        --configure-bucket "$S3_BUCKET" >>"$S3_LOG" 2>&1 &
    S3_PID=$!
    at_exit s3_stop
    S3_ENDPOINT=http://127.0.0.1:$S3_PORT
    AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
    export S3_ENDPOINT S3_BUCKET S3_DATA S3_LOG S3_PORT AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION
    unset AWS_SESSION_TOKEN AWS_PROFILE AWS_SHARED_CREDENTIALS_FILE
    wait_for 20 s3_up || { echo "lib_s3: s3rver did not start:"; tail -n 20 "$S3_LOG"; return 1; }
}
s3_stop() {
    [ -n "${S3_PID:-}" ] || return 0
    kill "$S3_PID" 2>/dev/null
    wait "$S3_PID" 2>/dev/null
    S3_PID=""
}
s3_requests() { grep -c -- "<-- $1 " "$S3_LOG" 2>/dev/null || true; }

# s3_proxy_start: tests/integration/s3proxy.py in front of the server (checks
# every signature, body hash and Content-MD5; injects faults). Exports
# S3_PROXY (its endpoint URL) and PROXY_LOG ("METHOD PATH STATUS" per request).
# s3_proxy_mode ok|500|503|"slow SECONDS" switches the fault of later requests.
s3_proxy_start() {
    PROXY_MODE=$T/proxy.mode
    PROXY_LOG=$T/proxy.log
    echo ok >"$PROXY_MODE"
    rm -f "$T/proxy.port"
    python3 tests/integration/s3proxy.py --upstream "$S3_ENDPOINT" --port-file "$T/proxy.port" \
        --mode-file "$PROXY_MODE" --log "$PROXY_LOG" >>"$T/proxy.err" 2>&1 &
    S3_PROXY_PID=$!
    at_exit kill "$S3_PROXY_PID"
    wait_for 10 test -s "$T/proxy.port" || { echo "lib_s3: the proxy did not start"; return 1; }
    S3_PROXY=http://127.0.0.1:$(cat "$T/proxy.port")
    export S3_PROXY PROXY_LOG PROXY_MODE
}
s3_proxy_mode() { echo "$*" >"$PROXY_MODE"; }
