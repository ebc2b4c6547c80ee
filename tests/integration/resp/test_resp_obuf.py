"""client-output-buffer-limit for normal and pub/sub clients, the INFO clients
fields that watch buffers and WATCH, and pub/sub under CLIENT REPLY OFF|SKIP.

Redis 7 is the reference: tests/unit/obuf-limits.tcl (its tests 1 and 5-9 are
mirrored here), info.tcl "clients: watching clients", pubsub.tcl "PubSub
messages with CLIENT REPLY OFF". Every test also runs against redis-server
(TROVE_TEST_TARGET=redis); the WATCH counters need Redis 7.2 and skip on an
older one. Trove runs with `-t 4`, so clients land on different workers.

A client that "never reads" has a 4 KiB receive buffer and reads nothing, so
what the server could not write stays in its output buffer.
"""

import os
import socket
import time

import pytest


WORKERS = 4
TARGET = "redis" if os.environ.get("TROVE_TEST_TARGET", "").strip().lower() == "redis" else (
    "fake" if os.environ.get("TROVE_RESP_FAKE") else "trove")
pytestmark = pytest.mark.skipif(TARGET == "fake", reason="the fake RESP front has no limits")
LIMIT = "client-output-buffer-limit"


# The module server (conftest `server`) runs with this many workers.
SERVER_ARGS = ["-t", str(WORKERS)]


def get_limit(r):
    (value,) = r.config_get(LIMIT).values()
    return value.encode() if isinstance(value, str) else value


@pytest.fixture
def limits(r):
    """Restores client-output-buffer-limit after the test."""
    old = get_limit(r)
    yield
    r.config_set(LIMIT, old)


def command(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def disconnections(r):
    """INFO's count (Redis 7.2; None on an older Redis, where it is not checked)."""
    return r.info("stats").get("client_output_buffer_limit_disconnections")


def assert_disconnections(r, want):
    if want is not None:
        assert disconnections(r) == want


def client_names(r):
    return [c.get("name") for c in r.client_list()]


def wait_until(fn, timeout=5.0, interval=0.02):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(interval)


def read_to_eof(c, timeout=5):
    """Everything the server sends until it closes (raises on a timeout)."""
    c.sock.settimeout(timeout)
    data = c.buf
    c.buf = b""
    try:
        while True:
            chunk = c.sock.recv(65536)
            if not chunk:
                return data
            data += chunk
    except (ConnectionResetError, BrokenPipeError):
        return data


def non_reader(resp_port, name):
    """A named connection that will read nothing after its SETNAME reply."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", resp_port))
    s.settimeout(10)
    s.sendall(command("CLIENT", "SETNAME", name))
    assert s.recv(5) == b"+OK\r\n"
    return s


# ---- CONFIG -----------------------------------------------------------------

def test_config_set_client_output_buffer_limit(r, limits):
    """obuf-limits.tcl "CONFIG SET client-output-buffer-limit"."""
    for value, err in [("wrong number", "Wrong number of arguments"),
                       ("invalid_class 10mb 10mb 60", "Invalid client class"),
                       ("master 10mb 10mb 60", "Invalid client class"),
                       ("normal 10mbs 10mb 60", "Error in hard, soft or soft_seconds"),
                       ("replica 10mb 10mbs 60", "Error in hard, soft or soft_seconds"),
                       ("pubsub 10mb 10mb 60s", "Error in hard, soft or soft_seconds"),
                       ("pubsub 10mb 10mb -1", "Error in hard, soft or soft_seconds")]:
        with pytest.raises(Exception, match=err):
            r.config_set(LIMIT, value)
    r.config_set(LIMIT, "normal 1mb 2mb 60 replica 3mb 4mb 70 pubsub 5mb 6mb 80")
    want = b"normal 1048576 2097152 60 slave 3145728 4194304 70 pubsub 5242880 6291456 80"
    assert get_limit(r) == want
    # All or nothing: a bad class later in the value changes nothing.
    with pytest.raises(Exception, match="Invalid client class"):
        r.config_set(LIMIT, "normal 0 0 0 master 1 1 1")
    assert get_limit(r) == want
    # One class alone leaves the others; "slave" is a class name too; what
    # CONFIG GET returns is accepted back unchanged (introspection "CONFIG sanity").
    r.config_set(LIMIT, "slave 1k 2kb 3")
    got = get_limit(r)
    assert got == b"normal 1048576 2097152 60 slave 1000 2048 3 pubsub 5242880 6291456 80"
    r.config_set(LIMIT, got)
    assert get_limit(r) == got


def test_default_normal_class_has_no_limit(r, raw):
    """normal 0 0 0: a 4 MB reply is delivered whole."""
    assert get_limit(r).startswith(b"normal 0 0 0 ")
    r.rpush("big", *([b"x" * 4000] * 1000))
    c = raw()
    reply = c.cmd("LRANGE", "big", "0", "-1")
    assert reply.startswith(b"*1000\r\n") and len(reply) > 4000000


# ---- normal class -------------------------------------------------------------

def test_no_response_for_single_command_over_hard_limit(r, raw, limits):
    """obuf-limits.tcl "No response for single command if client output buffer
    hard limit is enforced": the client is closed and gets nothing."""
    r.config_set(LIMIT, "normal 100000 0 0")
    r.rpush("mylist", *([b"x" * 1000] * 150))
    before = disconnections(r)
    c = raw()
    assert c.cmd("CLIENT", "SETNAME", "mybiglist") == b"+OK\r\n"
    # Below the limit it answers (the limit is what kills, not the command).
    assert c.cmd("LRANGE", "mylist", "0", "49").startswith(b"*50\r\n")
    c.send(command("LRANGE", "mylist", "0", "-1"))
    assert read_to_eof(c) == b""
    assert b"mybiglist" not in [n.encode() if isinstance(n, str) else n for n in client_names(r)]
    assert_disconnections(r, None if before is None else before + 1)


def test_pipeline_stops_at_the_limit(r, raw, limits):
    """obuf-limits.tcl "No response for multi commands in pipeline if client
    output buffer limit is enforced"; and what follows the limit never runs."""
    r.config_set(LIMIT, "normal 100000 0 0")
    r.set("bigkey", "x" * 10000)
    c = raw()
    assert c.cmd("CLIENT", "SETNAME", "multicommands") == b"+OK\r\n"
    buf = b""
    for i in range(15):
        buf += b"set %d %d\r\nget %d\r\ndel %d\r\nget bigkey\r\n" % (i, i, i, i)
    buf += b"set after 1\r\n"
    c.send(buf)  # one write: one read on the server
    assert read_to_eof(c) == b""
    assert r.ping()
    assert r.get("after") is None
    assert wait_until(lambda: b"multicommands" not in
                      [n.encode() if isinstance(n, str) else n for n in client_names(r)])


def test_transaction_runs_whole_when_its_client_is_killed(r, raw, limits):
    """obuf-limits.tcl "Execute transactions completely even if client output
    buffer limit is enforced"."""
    r.config_set(LIMIT, "normal 100000 0 0")
    r.rpush("mylist2", *([b"x" * 1000] * 150))
    c = raw()
    assert c.cmd("CLIENT", "SETNAME", "transactionclient") == b"+OK\r\n"
    assert c.cmd("SET", "k1", "v1") == b"+OK\r\n"
    assert c.cmd("MULTI") == b"+OK\r\n"
    for args in [("SET", "k2", "v2"), ("GET", "k2"), ("LRANGE", "mylist2", "0", "-1"),
                 ("SET", "k3", "v3"), ("DEL", "k1")]:
        assert c.cmd(*args) == b"+QUEUED\r\n"
    c.send(command("EXEC"))
    assert read_to_eof(c) == b""
    assert r.get("k1") is None
    assert r.get("k2") == b"v2"
    assert r.get("k3") == b"v3"


def test_hrandfield_with_huge_count_stopped_mid_run(r, raw, limits):
    """obuf-limits.tcl "Obuf limit, HRANDFIELD with huge count stopped mid-run"."""
    r.config_set(LIMIT, "normal 1000000 0 0")
    r.hset("myhash", "a", "b")
    c = raw()
    c.send(command("HRANDFIELD", "myhash", "-999999999"))
    assert read_to_eof(c, timeout=20) == b""
    assert r.hrandfield("myhash", -3) == [b"a", b"a", b"a"]


def test_keys_stopped_mid_run(r, raw, limits):
    """obuf-limits.tcl "Obuf limit, KEYS stopped mid-run"."""
    prefix = "long-key-name-prefix-of-100-chars-" + "-" * 66
    pipe = r.pipeline(transaction=False)
    for i in range(1000):
        pipe.set("%s%d" % (prefix, i), i)
    pipe.execute()
    r.config_set(LIMIT, "normal 100000 0 0")
    before = disconnections(r)
    c = raw()
    c.send(command("KEYS", "*"))
    assert read_to_eof(c) == b""
    assert_disconnections(r, None if before is None else before + 1)
    # A pattern with a short answer still works.
    assert r.keys(prefix + "99") == [(prefix + "99").encode()]


def test_normal_soft_limit_enforced_without_traffic(r, resp_port, limits):
    """Soft limit: not before soft-seconds, then without any traffic (obuf-limits.tcl
    soft-limit tests, for the normal class)."""
    r.set("half", "x" * 500000)
    r.config_set(LIMIT, "normal 0 100000 2")
    before = disconnections(r)
    s = non_reader(resp_port, "softnormal")
    s.sendall(command("GET", "half") * 40)  # 20 MB: far more than the socket buffers hold
    t0 = time.monotonic()
    assert wait_until(lambda: "softnormal" in [n if isinstance(n, str) else n.decode()
                                              for n in client_names(r)])
    time.sleep(1.2)
    assert "softnormal" in [n if isinstance(n, str) else n.decode() for n in client_names(r)], \
        "closed before soft-seconds"
    gone = wait_until(lambda: "softnormal" not in [n if isinstance(n, str) else n.decode()
                                                  for n in client_names(r)], timeout=6)
    elapsed = time.monotonic() - t0
    s.close()
    assert gone, "still connected %.1f s after passing the soft limit" % elapsed
    assert elapsed >= 2, elapsed
    assert_disconnections(r, None if before is None else before + 1)


def test_pubsub_soft_limit_enforced_without_traffic(r, resp_port, limits):
    """obuf-limits.tcl "Client output buffer soft limit is not enforced too early
    and is enforced when no traffic"."""
    r.config_set(LIMIT, "pubsub 0 100000 2")
    s = non_reader(resp_port, "softsub")
    s.sendall(command("SUBSCRIBE", "soft"))
    assert wait_until(lambda: r.pubsub_numsub("soft") == [(b"soft", 1)])
    for _ in range(64):  # 4 MB, then silence
        r.publish("soft", b"y" * 65536)
    t0 = time.monotonic()
    time.sleep(1.2)
    assert r.pubsub_numsub("soft") == [(b"soft", 1)], "closed before soft-seconds"
    gone = wait_until(lambda: r.pubsub_numsub("soft") == [(b"soft", 0)], timeout=6)
    s.close()
    assert gone, "subscriber still connected %.1f s later" % (time.monotonic() - t0)


# ---- INFO clients -------------------------------------------------------------

def test_info_recent_max_output_buffer(r, resp_port):
    """client_recent_max_output_buffer shows a client's unsent output of the last
    seconds, whichever worker it is on."""
    r.set("half", "x" * 500000)
    s = non_reader(resp_port, "bigout")
    s.sendall(command("GET", "half") * 20)  # 10 MB
    try:
        assert wait_until(lambda: r.info("clients")["client_recent_max_output_buffer"] >
                          4000000, timeout=3), r.info("clients")
    finally:
        s.close()


def test_info_recent_max_input_buffer(r, resp_port):
    """client_recent_max_input_buffer shows a large request still arriving."""
    s = socket.create_connection(("127.0.0.1", resp_port))
    s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4000000\r\n" + b"z" * 2000000)
    try:
        assert wait_until(lambda: r.info("clients")["client_recent_max_input_buffer"] >
                          2000000, timeout=3), r.info("clients")
    finally:
        s.close()


def _redis_at_least(r, major, minor):
    v = tuple(int(x) for x in r.info("server")["redis_version"].split(".")[:2])
    return v >= (major, minor)


def test_info_watching_clients(r, resp_port):
    """info.tcl "clients: watching clients" (Redis 7.2): distinct keys, across
    workers, and every way a client stops watching."""
    import redis
    if TARGET == "redis" and not _redis_at_least(r, 7, 2):
        pytest.skip("watching_clients is Redis 7.2's")

    def s(field):
        return r.info("clients")[field]
    assert s("watching_clients") == 0 and s("total_watched_keys") == 0
    clients = [redis.Redis(host="127.0.0.1", port=resp_port) for _ in range(WORKERS)]
    a, b = clients[0], clients[1]
    a.execute_command("WATCH", "key")
    assert (s("watching_clients"), s("total_watched_keys")) == (1, 1)
    a.execute_command("WATCH", "key")  # the same key again: no change
    assert (s("watching_clients"), s("total_watched_keys")) == (1, 1)
    b.execute_command("WATCH", "key")  # another client, same key: counted once
    assert (s("watching_clients"), s("total_watched_keys")) == (2, 1)
    for c in clients[2:]:  # the other workers, other keys
        c.execute_command("WATCH", "key2", "key3")
    assert (s("watching_clients"), s("total_watched_keys")) == (WORKERS, 3)
    assert "watch=1" in a.execute_command("CLIENT", "INFO").decode()
    a.execute_command("UNWATCH")
    assert (s("watching_clients"), s("total_watched_keys")) == (WORKERS - 1, 3)
    a.execute_command("UNWATCH")  # unwatch without watch has no effect
    assert s("watching_clients") == WORKERS - 1
    b.execute_command("MULTI")
    b.execute_command("EXEC")
    assert (s("watching_clients"), s("total_watched_keys")) == (WORKERS - 2, 2)
    clients[2].execute_command("MULTI")
    clients[2].execute_command("DISCARD")
    assert s("watching_clients") == WORKERS - 3
    clients[3].execute_command("RESET")
    assert (s("watching_clients"), s("total_watched_keys")) == (0, 0)
    a.execute_command("WATCH", "key")
    with pytest.raises(redis.ResponseError):
        a.execute_command("DISCARD")  # DISCARD without MULTI keeps the watch
    assert s("watching_clients") == 1
    a.connection_pool.disconnect()  # a closed connection's watches go
    assert wait_until(lambda: s("watching_clients") == 0 and s("total_watched_keys") == 0), \
        (s("watching_clients"), s("total_watched_keys"))
    for c in clients:
        c.close()


# ---- pub/sub under CLIENT REPLY OFF|SKIP ----------------------------------------

def push(proto, *items):
    def enc(x):
        if isinstance(x, int):
            return b":%d\r\n" % x
        x = x.encode() if isinstance(x, str) else x
        return b"$%d\r\n%s\r\n" % (len(x), x)
    return (b">" if proto == 3 else b"*") + b"%d\r\n" % len(items) + b"".join(map(enc, items))


@pytest.mark.parametrize("proto", [2, 3])
def test_pubsub_with_client_reply_off(r, raw, proto):
    """pubsub.tcl "PubSub messages with CLIENT REPLY OFF" (RESP3 there; RESP2
    too, as the keyspace tests use it)."""
    c = raw()
    if proto == 3:
        assert c.cmd("HELLO", "3").startswith(b"%")
    c.send(command("CLIENT", "REPLY", "OFF"))
    c.send(command("SUBSCRIBE", "channel"))
    assert c.read_reply() == push(proto, "subscribe", "channel", 1)
    c.send(command("PSUBSCRIBE", "ch*"))
    assert c.read_reply() == push(proto, "psubscribe", "ch*", 2)
    assert wait_until(lambda: r.publish("channel", "hello") == 2)
    assert c.read_reply() == push(proto, "message", "channel", "hello")
    assert c.read_reply() == push(proto, "pmessage", "ch*", "channel", "hello")
    c.send(command("UNSUBSCRIBE", "channel"))
    assert c.read_reply() == push(proto, "unsubscribe", "channel", 1)
    c.send(command("PUNSUBSCRIBE", "ch*"))
    assert c.read_reply() == push(proto, "punsubscribe", "ch*", 0)
    # Ordinary replies stay silenced; CLIENT REPLY ON answers again.
    c.send(command("PING"))
    assert c.cmd("CLIENT", "REPLY", "ON") == b"+OK\r\n"


def test_pubsub_with_client_reply_skip(r, raw):
    """pubsub.tcl keyspace tests run PSUBSCRIBE after CLIENT REPLY SKIP."""
    c = raw()
    c.send(command("CLIENT", "REPLY", "SKIP"))
    c.send(command("PSUBSCRIBE", "sk*"))
    assert c.read_reply() == push(2, "psubscribe", "sk*", 1)
    assert wait_until(lambda: r.publish("skip", "x") == 1)
    assert c.read_reply() == push(2, "pmessage", "sk*", "skip", "x")
    c.send(command("PING"))  # SKIP covered one command only
    assert c.read_reply() == push(2, "pong", "")
