#!/usr/bin/python3
"""What a hostnet link gives (make bench-scaling prints it with each link rate): TCP round trip of one byte
and stream throughput: one way, and both directions at once (as a ring allreduce uses a link) with 1 and 2
connections.

  hostnet_link.py serve PORT            on one host: echo and sink, until the client is done
  hostnet_link.py probe ADDR PORT       on another: prints one line of figures

Plain sockets, no dependencies. The round trip is the median of 2000 one-byte ping-pongs (TCP_NODELAY);
throughput is bytes moved in 2 s per direction through each connection, summed."""
import socket
import statistics
import sys
import threading
import time

CHUNK = 1 << 20
SECONDS = 2.0


def serve(port):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(16)
    while True:
        c, _ = ls.accept()
        kind = c.recv(1)
        if kind == b"q":
            return
        threading.Thread(target={b"e": echo, b"s": both, b"r": drain}[kind], args=(c,), daemon=True).start()


def echo(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        b = c.recv(1)
        if not b:
            return
        c.sendall(b)


def pump(c, out, i):
    """Sends for SECONDS while a reader drains: out[i] gets the bytes sent."""
    buf, sent, end = bytes(CHUNK), 0, time.perf_counter() + SECONDS
    while time.perf_counter() < end:
        sent += c.send(buf)
    out[i] = sent
    c.shutdown(socket.SHUT_WR)


def drain(c):
    while c.recv(CHUNK):
        pass


def both(c):
    """Server side of a stream: sends and receives at once."""
    got = [0]
    r = threading.Thread(target=drain, args=(c,))
    r.start()
    pump(c, got, 0)
    r.join()
    c.close()


def connect(addr, port, kind):
    c = socket.create_connection((addr, port))
    c.sendall(kind)
    return c


def streams(addr, port, n, kind=b"s"):
    """Gbit/s this side sent through n connections; kind s: the other side sends back at once, r: it only
    receives."""
    conns = [connect(addr, port, kind) for _ in range(n)]
    sent, ts = [0] * n, []
    start = time.perf_counter()
    for i, c in enumerate(conns):
        ts.append(threading.Thread(target=pump, args=(c, sent, i)))
        if kind == b"s":
            ts.append(threading.Thread(target=drain, args=(c,)))
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(sent) * 8 / (time.perf_counter() - start) / 1e9


def probe(addr, port):
    for _ in range(100):
        try:
            c = connect(addr, port, b"e")
            break
        except OSError:
            time.sleep(0.05)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rtts = []
    for _ in range(2000):
        t = time.perf_counter()
        c.sendall(b"x")
        c.recv(1)
        rtts.append(time.perf_counter() - t)
    c.close()
    one = streams(addr, port, 1, b"r")
    g1, g2 = streams(addr, port, 1), streams(addr, port, 2)
    connect(addr, port, b"q").close()
    print("round trip %.1f us (median of 2000, one byte); TCP %.2f Gbit/s one way (1 stream); both ways at once, "
          "per direction: %.2f Gbit/s with 1 stream, %.2f with 2" % (statistics.median(rtts) * 1e6, one, g1, g2))


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    else:
        probe(sys.argv[2], int(sys.argv[3]))
