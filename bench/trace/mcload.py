#!/usr/bin/env python3
"""mcload.py PORT N: 4 client threads, each N set+get round trips against a
memcached at 127.0.0.1:PORT; prints the md5 of every value served (equal
traced and untraced)."""
import socket, sys, threading, hashlib
N = int(sys.argv[2]); port = int(sys.argv[1])
def worker(k, out):
    s = socket.create_connection(("127.0.0.1", port)); f = s.makefile("rb")
    h = hashlib.md5()
    for i in range(N):
        v = (b"v%d-%d" % (k, i)) * 10
        s.sendall(b"set k%d_%d 0 0 %d\r\n%s\r\n" % (k, i, len(v), v)); f.readline()
        s.sendall(b"get k%d_%d\r\n" % (k, i))
        l = f.readline(); d = f.read(int(l.split()[3]) + 2); f.readline(); h.update(d)
    out[k] = h.hexdigest()
out = {}
ts = [threading.Thread(target=worker, args=(k, out)) for k in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print(hashlib.md5("".join(out[k] for k in range(4)).encode()).hexdigest())
