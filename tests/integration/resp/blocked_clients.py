"""Helpers shared by the RESP tests that place clients on Trove's workers
(blocking commands, CLIENT PAUSE, pub/sub, the script time limit): raw
command frames, a connection on a chosen worker, waiting for INFO
blocked_clients, and checking that a connection has received nothing (yet)."""

import os
import time

# TSan builds run several times slower: time bounds are scaled.
SLOW = 10 if "tsan" in os.environ.get("TROVE_BIN", "") else 1


def command(*args):
    """One command as a RESP array of bulk strings."""
    out = b"*%d\r\n" % len(args)
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def client_id(c):
    """CLIENT ID of raw connection c."""
    reply = c.cmd("CLIENT", "ID")
    assert reply.startswith(b":"), reply
    return int(reply[1:-2])


def on_worker(raw, worker, workers, placed=True, limit=64):
    """A raw connection owned by Trove worker `worker` (CLIENT ID % workers);
    any connection when not placed (a server without Trove's workers)."""
    for _ in range(limit):
        c = raw()
        if not placed or client_id(c) % workers == worker:
            return c
        c.close()
    raise AssertionError("no connection landed on worker %d" % worker)


def blocked(r):
    return r.info("clients")["blocked_clients"]


def wait_blocked(r, n, timeout=5.0):
    deadline = time.monotonic() + timeout * SLOW
    while blocked(r) != n:
        assert time.monotonic() < deadline, "blocked_clients %d, wanted %d" % (blocked(r), n)
        time.sleep(0.005)


def silent(c, wait=0.1):
    """True if raw connection c receives nothing within `wait` seconds (what
    does arrive stays in its buffer for the next read)."""
    c.sock.settimeout(wait)
    try:
        data = c.sock.recv(65536)
    except OSError:
        data = b""
    finally:
        c.sock.settimeout(10)
    c.buf += data
    return data == b""
