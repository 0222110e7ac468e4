"""mc_client.py PORT N: memcached's text protocol on 127.0.0.1:PORT: set N
keys (pipelined, noreply), get one, then one multiget of all N (the slow
request: one command that makes the server look up and copy N items).
Prints the replies (the multiget as its value count and SHA-1) so that two
servers' answers compare with cmp; bounded by a 30 s socket timeout."""
import hashlib
import socket
import sys
port, n = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port), timeout=30)
def rd_until(tok):
    buf = b""
    while not buf.endswith(tok):
        d = s.recv(1 << 20)
        if not d: break
        buf += d
    return buf
req = b"".join(b"set k%d 0 0 %d noreply\r\n%s\r\n" % (i, len(b"v%d" % i), b"v%d" % i) for i in range(n))
s.sendall(req)
s.sendall(b"get k0\r\n"); print(rd_until(b"END\r\n").decode().strip().replace("\r\n", " "))
s.sendall(b"get " + b" ".join(b"k%d" % i for i in range(n)) + b"\r\n")
r = rd_until(b"END\r\n")
print("multiget", n, "values", r.count(b"VALUE"), hashlib.sha1(r).hexdigest())
