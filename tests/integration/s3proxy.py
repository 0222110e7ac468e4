#!/usr/bin/env python3
"""s3proxy.py — a fault-injecting, signature-checking proxy in front of the
test S3 server (s3rver), for tests/integration/test_ship.sh.

  s3proxy.py --upstream http://127.0.0.1:PORT --port-file F --mode-file M --log L

Every request is checked the way S3 checks it, independently of the C client:
the AWS Signature V4 in the Authorization header (secret AWS_SECRET_ACCESS_KEY
of the proxy's environment; 403 SignatureDoesNotMatch), x-amz-content-sha256
against the body (400 XAmzContentSHA256Mismatch) and Content-MD5 (400
BadDigest); then forwarded. The mode file, read at each request, injects
faults: "ok", "500", "503" (S3 error bodies), "slow S" (wait S seconds, then
forward). The log gets one line per request: "METHOD PATH STATUS".
"""
import argparse
import base64
import hashlib
import hmac
import http.client
import http.server
import os
import re
import sys
import threading
import time
import urllib.parse

LOCK = threading.Lock()


def sign_check(method, raw_path, headers, body, secret):
    auth = headers.get("authorization", "")
    m = re.match(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request,"
                 r" ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$", auth)
    if not m:
        return "malformed Authorization header"
    _, day, region, service, signed, sig = m.groups()
    path, _, query = raw_path.partition("?")
    pairs = []
    for part in query.split("&") if query else []:
        k, _, v = part.partition("=")
        pairs.append((k, v))
    pairs.sort()
    canon_query = "&".join(f"{k}={v}" for k, v in pairs)
    lines = []
    for name in signed.split(";"):
        value = headers.get(name)
        if value is None:
            return f"signed header {name} missing"
        lines.append(name + ":" + " ".join(value.split()))
    payload = headers.get("x-amz-content-sha256", "")
    canon = "\n".join([method, path, canon_query, "\n".join(lines) + "\n", signed, payload])
    date = headers.get("x-amz-date", "")
    scope = f"{day}/{region}/{service}/aws4_request"
    sts = "\n".join(["AWS4-HMAC-SHA256", date, scope,
                     hashlib.sha256(canon.encode()).hexdigest()])
    k = ("AWS4" + secret).encode()
    for part in (day, region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    want = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    return None if hmac.compare_digest(want, sig) else "signature differs"


def s3_error(code, msg):
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{msg}</Message></Error>").encode()


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, status):
        with LOCK, open(self.server.opts.log, "a") as f:
            f.write(f"{self.command} {urllib.parse.unquote(self.path)} {status}\n")

    def answer(self, status, body, headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.record(status)

    def handle_any(self):
        opts = self.server.opts
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        try:
            with open(opts.mode_file) as f:
                mode = f.read().split()
        except OSError:
            mode = ["ok"]
        if mode and mode[0] in ("500", "503"):
            code = "InternalError" if mode[0] == "500" else "SlowDown"
            return self.answer(int(mode[0]), s3_error(code, "injected by the test proxy"))
        if mode and mode[0] == "slow":
            time.sleep(float(mode[1]))
        hdrs = {k.lower(): v for k, v in self.headers.items()}
        why = sign_check(self.command, self.path, hdrs, body, os.environ.get("AWS_SECRET_ACCESS_KEY", ""))
        if why:
            return self.answer(403, s3_error("SignatureDoesNotMatch", why))
        sha = hdrs.get("x-amz-content-sha256", "")
        if sha != "UNSIGNED-PAYLOAD" and sha != hashlib.sha256(body).hexdigest():
            return self.answer(400, s3_error("XAmzContentSHA256Mismatch", "body hash differs"))
        md5 = hdrs.get("content-md5")
        if md5 is not None and md5 != base64.b64encode(hashlib.md5(body).digest()).decode():
            return self.answer(400, s3_error("BadDigest", "Content-MD5 differs"))
        up = urllib.parse.urlparse(opts.upstream)
        try:
            c = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
            fwd = {k: v for k, v in self.headers.items() if k.lower() not in ("connection",)}
            c.request(self.command, self.path, body=body if n else None, headers=fwd)
            r = c.getresponse()
            data = r.read()
            headers = [(k, v) for k, v in r.getheaders()
                       if k.lower() not in ("content-length", "connection", "transfer-encoding")]
            status = r.status
            c.close()
        except OSError as e:
            return self.answer(502, s3_error("BadGateway", str(e)))
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)) if self.command != "HEAD"
                         else r.getheader("Content-Length", "0"))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.record(status)

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = handle_any


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--mode-file", required=True)
    ap.add_argument("--log", required=True)
    opts = ap.parse_args()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    srv.daemon_threads = True
    srv.opts = opts
    with open(opts.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(opts.port_file + ".tmp", opts.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
