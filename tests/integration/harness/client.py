"""Raw socket clients that send exact bytes and read exact replies."""

import socket
import time

DEFAULT_TIMEOUT = 5.0


def _b(data):
    if isinstance(data, str):
        return data.encode("latin1")
    return bytes(data)


class ConnClosed(Exception):
    pass


class Conn:
    """A blocking socket with a receive buffer.

    Every read has a timeout (DEFAULT_TIMEOUT unless given); a timeout raises
    socket.timeout with what was read so far in the message, so a missing or
    short reply fails the test instead of hanging it.
    """

    def __init__(self, port=None, host="127.0.0.1", unix=None, timeout=DEFAULT_TIMEOUT):
        if unix is not None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(unix)
        else:
            self.sock = socket.create_connection((host, port), timeout=timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buf = b""

    @classmethod
    def to(cls, server, **kw):
        if server.port is None and server.unix_path:
            return cls(unix=server.unix_path, **kw)
        return cls(server.port, **kw)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- sending ---------------------------------------------------------

    def send(self, data):
        self.sock.sendall(_b(data))

    # ---- receiving -------------------------------------------------------

    def _fill(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout("timed out; have %r" % self.buf[:400])
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(1 << 16)
        except socket.timeout:
            raise socket.timeout("timed out; have %r" % self.buf[:400])
        if not chunk:
            raise ConnClosed("connection closed; have %r" % self.buf[:400])
        self.buf += chunk

    def read_exact(self, n, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while len(self.buf) < n:
            self._fill(deadline)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_until(self, term, timeout=None):
        """Bytes up to and including the first occurrence of term."""
        term = _b(term)
        deadline = time.monotonic() + (timeout or self.timeout)
        start = 0
        while True:
            i = self.buf.find(term, start)
            if i >= 0:
                end = i + len(term)
                out, self.buf = self.buf[:end], self.buf[end:]
                return out
            start = max(0, len(self.buf) - len(term) + 1)
            self._fill(deadline)

    def read_line(self, timeout=None):
        return self.read_until(b"\r\n", timeout)

    def read_value_reply(self, timeout=None):
        """Reads a get-style reply: VALUE blocks (sized by their header) up to
        END. Returns the raw bytes."""
        out = b""
        while True:
            line = self.read_line(timeout)
            out += line
            if line.startswith(b"VALUE "):
                size = int(line.split()[3])
                out += self.read_exact(size + 2, timeout)
            else:
                return out

    def call(self, data, timeout=None):
        """Sends data and returns the next line."""
        self.send(data)
        return self.read_line(timeout)

    def rt(self, data, timeout=None):
        """Round trip: sends data followed by a meta no-op and returns every
        byte the server sent before the no-op's "MN\\r\\n". The no-op proves
        that nothing else was sent (an empty result means no reply at all)
        without waiting for a timeout."""
        self.send(_b(data) + b"mn\r\n")
        out = self.read_until(b"MN\r\n", timeout)
        return out[:-4]

    def expect_closed(self, timeout=None):
        """Reads until EOF; returns what arrived before it. Fails (raises
        socket.timeout) if the server keeps the connection open."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            try:
                self._fill(deadline)
            except ConnClosed:
                out, self.buf = self.buf, b""
                return out
            except ConnectionResetError:
                out, self.buf = self.buf, b""
                return out

    def is_open(self, wait=0.2):
        """True if the connection stays open (no EOF) for `wait` seconds."""
        try:
            self.expect_closed(timeout=wait)
            return False
        except socket.timeout:
            return True

    def pending(self, wait=0.1):
        """Whatever arrives within `wait` seconds (for replies that must not
        exist, where rt() cannot be used)."""
        deadline = time.monotonic() + wait
        try:
            while True:
                self._fill(deadline)
        except (socket.timeout, ConnClosed):
            pass
        out, self.buf = self.buf, b""
        return out

    # ---- conveniences ----------------------------------------------------

    def set(self, key, value, flags=0, exptime=0):
        value = _b(value)
        reply = self.call(b"set %s %d %d %d\r\n%s\r\n" % (_b(key), flags, exptime, len(value), value))
        assert reply == b"STORED\r\n", reply
        return reply

    def get(self, key):
        """The value of key, or None on a miss."""
        self.send(b"get %s\r\n" % _b(key))
        reply = self.read_value_reply()
        if reply == b"END\r\n":
            return None
        head, rest = reply.split(b"\r\n", 1)
        size = int(head.split()[3])
        assert rest[size:] == b"\r\nEND\r\n", reply
        return rest[:size]

    def gets(self, key):
        """(value, cas) or None."""
        self.send(b"gets %s\r\n" % _b(key))
        reply = self.read_value_reply()
        if reply == b"END\r\n":
            return None
        head, rest = reply.split(b"\r\n", 1)
        parts = head.split()
        size = int(parts[3])
        return rest[:size], int(parts[4])

    def stats(self, sub=""):
        """A stats reply as a dict of name -> value (strings)."""
        cmd = b"stats\r\n" if not sub else b"stats %s\r\n" % _b(sub)
        self.send(cmd)
        out = {}
        while True:
            line = self.read_line()
            if line == b"END\r\n":
                return out
            parts = line.decode("latin1").rstrip("\r\n").split(" ", 2)
            assert parts[0] == "STAT", line
            out[parts[1]] = parts[2] if len(parts) > 2 else ""

    def stat(self, name, sub=""):
        return self.stats(sub)[name]

    def flush(self):
        assert self.call(b"flush_all\r\n") == b"OK\r\n"


def wait_for(pred, timeout=5.0, interval=0.02):
    """Polls pred() until it returns a true value (returned) or time runs out
    (returns the last false value)."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(interval)
