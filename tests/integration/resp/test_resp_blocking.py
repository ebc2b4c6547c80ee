"""Blocking commands on the RESP port: BLPOP, BRPOP, BRPOPLPUSH, BLMOVE,
BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP and CLIENT UNBLOCK, with blocked clients and
writers on different workers (Trove runs with -t 4; worker = CLIENT ID % 4).

Redis 7 is the reference (docs/resp_modes.md section 6): the tests
also run against redis-server (TROVE_TEST_TARGET=redis); those that place
connections on Trove's workers, or check where Redis 7.0.15 differs from the
newest Redis, skip there.
"""

import os
import threading
import time

import pytest
import redis

from blocked_clients import blocked, client_id, command, silent, wait_blocked
from blocked_clients import on_worker as _on_worker


WORKERS = 4
SERVER_ARGS = ["-t", str(WORKERS)]


def _target():
    t = os.environ.get("TROVE_TEST_TARGET", "").strip().lower()
    if t == "redis":
        return "redis"
    if os.environ.get("TROVE_RESP_FAKE"):
        return "fake"
    return "trove"


TARGET = _target()
IS_TROVE = TARGET == "trove"
pytestmark = pytest.mark.skipif(TARGET == "fake", reason="the fake RESP front has no workers")
trove_only = pytest.mark.skipif(not IS_TROVE, reason="places connections on Trove's workers")




def bulks(*items):
    """The RESP2 array of bulk strings."""
    return b"*%d\r\n" % len(items) + b"".join(
        b"$%d\r\n%s\r\n" % (len(i), i) for i in (x.encode() if isinstance(x, str) else x
                                                  for x in items))


def on_worker(raw, worker):
    return _on_worker(raw, worker, WORKERS, placed=IS_TROVE)






def block(c, r, *args, n=None):
    """Sends a blocking command on raw connection c and waits until the server
    counts it blocked (n: the expected blocked_clients afterwards)."""
    before = blocked(r)
    c.send(command(*args))
    wait_blocked(r, before + 1 if n is None else n)




# ---- served at once ----------------------------------------------------------

def test_data_present_is_served_from_the_first_non_empty_key(r, raw):
    r.rpush("k2", "a", "b")
    c = raw()
    assert c.cmd("BLPOP", "k1", "k2", "0") == bulks("k2", "a")
    assert c.cmd("BRPOP", "k1", "k2", "0") == bulks("k2", "b")
    assert r.exists("k2") == 0
    r.rpush("same", "x")
    assert c.cmd("BLPOP", "same", "same", "0") == bulks("same", "x")  # Redis issue #801


def test_wrong_type_and_timeout_errors(r, raw):
    r.set("str", "v")
    c = raw()
    assert c.cmd("BLPOP", "nokey", "str", "0").startswith(b"-WRONGTYPE")
    assert c.cmd("BZPOPMIN", "str", "0").startswith(b"-WRONGTYPE")
    assert c.cmd("BLPOP", "k", "-1") == b"-ERR timeout is negative\r\n"
    assert c.cmd("BLPOP", "k", "abc") == b"-ERR timeout is not a float or out of range\r\n"
    assert c.cmd("BLMOVE", "a", "b", "up", "left", "0") == b"-ERR syntax error\r\n"
    assert c.cmd("BZMPOP", "0", "0", "z", "MIN") == b"-ERR numkeys should be greater than 0\r\n"
    assert c.cmd("BZMPOP", "0", "1", "z", "MIDDLE") == b"-ERR syntax error\r\n"
    assert c.cmd("BZMPOP", "0", "1", "z", "MIN", "COUNT", "0") == \
        b"-ERR count should be greater than 0\r\n"
    assert c.cmd("BLMPOP", "x", "1", "l", "LEFT") == \
        b"-ERR timeout is not a float or out of range\r\n"


@pytest.mark.skipif(not IS_TROVE, reason="Redis 7.0.15 accepts it (fixed in later Redis)")
def test_timeout_out_of_range(raw):
    c = raw()
    assert c.cmd("BLPOP", "k", "0x7FFFFFFFFFFFFF").startswith(b"-ERR timeout is out of range")


def test_inside_multi_never_blocks(r, raw):
    r.rpush("xlist", "foo", "bar")
    c = raw()
    assert c.cmd("MULTI") == b"+OK\r\n"
    for cmd in (("BLPOP", "xlist", "0"), ("BLPOP", "xlist", "0"), ("BLPOP", "xlist", "0"),
                ("BLMOVE", "none", "dst", "LEFT", "LEFT", "0"), ("BZPOPMIN", "nz", "0")):
        assert c.cmd(*cmd) == b"+QUEUED\r\n"
    assert c.cmd("EXEC") == (b"*5\r\n" + bulks("xlist", "foo") + bulks("xlist", "bar") +
                             b"*-1\r\n$-1\r\n*-1\r\n")


# ---- blocking and waking -------------------------------------------------------

@trove_only
def test_waiter_woken_by_a_push_on_another_worker(r, raw):
    a = on_worker(raw, 0)
    b = on_worker(raw, 1)
    block(a, r, "BLPOP", "q", "0")
    assert silent(a)
    assert b.cmd("RPUSH", "q", "x") == b":1\r\n"
    assert a.read_reply() == bulks("q", "x")
    wait_blocked(r, 0)
    assert r.exists("q") == 0


def test_waiters_are_served_first_in_first_out(r, raw):
    waiters = [on_worker(raw, i % WORKERS) for i in range(5)]
    for i, c in enumerate(waiters):
        block(c, r, "BLPOP", "fifo", "0", n=i + 1)
    r.rpush("fifo", "1", "2", "3", "4", "5")
    for i, c in enumerate(waiters):
        assert c.read_reply() == bulks("fifo", str(i + 1))
    wait_blocked(r, 0)


def test_blmpop_and_bzmpop_waiters_fifo(r, raw):
    a, b = raw(), raw()
    block(a, r, "BLMPOP", "0", "2", "l1", "l2", "LEFT", "COUNT", "2")
    block(b, r, "BZMPOP", "0", "1", "z1", "MAX", "COUNT", "5")
    r.rpush("l2", "x", "y", "z")
    assert a.read_reply() == b"*2\r\n$2\r\nl2\r\n" + bulks("x", "y")
    r.zadd("z1", {"m1": 1, "m2": 2})
    assert b.read_reply() == (b"*2\r\n$2\r\nz1\r\n*2\r\n" + bulks("m2", "2") + bulks("m1", "1"))
    assert r.lrange("l2", 0, -1) == [b"z"]


def test_served_only_after_exec(r, raw):
    a = raw()
    block(a, r, "BLPOP", "t", "0")
    p = r.pipeline(transaction=True)
    p.lpush("t", "a")
    p.lpush("t", "b")
    p.lpush("t", "c")
    p.execute()
    assert a.read_reply() == bulks("t", "c")
    assert r.lrange("t", 0, -1) == [b"b", b"a"]
    # MULTI { LPUSH, DEL } wakes no one.
    r.delete("t")
    block(a, r, "BLPOP", "t", "0")
    p = r.pipeline(transaction=True)
    p.lpush("t", "x")
    p.delete("t")
    p.execute()
    assert silent(a, 0.2)
    assert blocked(r) == 1
    r.rpush("t", "later")
    assert a.read_reply() == bulks("t", "later")


def test_variadic_push_gives_the_last_pushed_head(r, raw):
    a = raw()
    block(a, r, "BLPOP", "v", "0")
    r.lpush("v", "foo", "bar")
    assert a.read_reply() == bulks("v", "bar")
    assert r.lrange("v", 0, -1) == [b"foo"]


def test_linked_lmoves_are_served_in_the_same_pass(r, raw):
    a, b = on_worker(raw, 1), on_worker(raw, 2)
    block(a, r, "BLMOVE", "list1", "list2", "RIGHT", "LEFT", "0")
    block(b, r, "BLMOVE", "list2", "list3", "LEFT", "RIGHT", "0")
    c = on_worker(raw, 3)
    assert c.cmd("RPUSH", "list1", "foo") == b":1\r\n"
    # The same client, at once: both moves are done.
    assert c.cmd("LRANGE", "list1", "0", "-1") == b"*0\r\n"
    assert c.cmd("LRANGE", "list2", "0", "-1") == b"*0\r\n"
    assert c.cmd("LRANGE", "list3", "0", "-1") == bulks("foo")
    assert a.read_reply() == b"$3\r\nfoo\r\n"
    assert b.read_reply() == b"$3\r\nfoo\r\n"


def test_rename_and_copy_wake_waiters(r, raw):
    a, b = raw(), raw()
    block(a, r, "BLPOP", "target", "0")
    block(b, r, "BZPOPMIN", "ztarget", "0")
    r.rpush("src", "moved-in")
    r.rename("src", "target")
    assert a.read_reply() == bulks("target", "moved-in")
    r.zadd("zsrc", {"m": 1})
    r.execute_command("COPY", "zsrc", "ztarget")
    assert b.read_reply() == bulks("ztarget", "m", "1")
    assert r.zcard("zsrc") == 1


def test_circular_brpoplpush(r, raw):
    a, b = raw(), raw()
    block(a, r, "BRPOPLPUSH", "list1", "list2", "0")
    block(b, r, "BRPOPLPUSH", "list2", "list1", "0")
    r.rpush("list1", "foo")
    assert a.read_reply() == b"$3\r\nfoo\r\n"
    assert b.read_reply() == b"$3\r\nfoo\r\n"
    assert r.lrange("list1", 0, -1) == [b"foo"]
    assert r.lrange("list2", 0, -1) == []


def test_unblock_fairness_while_pipelining(r, raw):
    a, b = raw(), raw()
    block(a, r, "BLPOP", "mylist", "0")
    b.send(command("LPUSH", "mylist", "1") + command("BLPOP", "mylist", "0"))
    assert a.read_reply() == bulks("mylist", "1")
    assert b.read_reply() == b":1\r\n"
    wait_blocked(r, 1)  # b now waits
    r.lpush("mylist", "2")
    assert b.read_reply() == bulks("mylist", "2")


def test_pipelined_commands_wait_for_the_blocked_one(r, raw):
    a = raw()
    a.send(command("BLPOP", "pp", "0") + command("PING") + command("GET", "nokey"))
    wait_blocked(r, 1)
    assert silent(a, 0.2)
    r.rpush("pp", "v")
    assert a.read_reply() == bulks("pp", "v")
    assert a.read_reply() == b"+PONG\r\n"
    assert a.read_reply() == b"$-1\r\n"


def test_brpoplpush_wrong_destination_type(r, raw):
    r.set("dst", "string")
    a, b = raw(), raw()
    block(a, r, "BRPOPLPUSH", "src", "dst", "0")
    block(b, r, "BRPOPLPUSH", "src", "dst2", "0")
    r.rpush("src", "elem")
    assert a.read_reply().startswith(b"-WRONGTYPE")
    assert b.read_reply() == b"$4\r\nelem\r\n"
    assert r.lrange("dst2", 0, -1) == [b"elem"]


@trove_only
def test_blocked_clients_are_served_in_order_of_arrival(r, raw):
    """Redis's type/list "BRPOPLPUSH with multiple blocked clients": two
    blocking commands and a push sent back to back on three connections,
    without waiting for either to block. Redis reads them in arrival order.
    Here the first and the push share worker 0, the second is on worker 1,
    as two of any three connections do with -t 2 (the Redis suite's runs).
    Three rules make the first client come first whatever the workers'
    timing: a worker parses a turn's reads in the kernel's arrival order
    (level-triggered epoll may list the push's socket first); a push's serve
    waits for an input fence, so the second client is read by then; and a
    blocking command that finds data with clients still queued on the key
    queues behind them, by arrival. Before: the second client took the
    element in about one try in six and the first stayed blocked. Stamps
    start with the server's first blocking command, hence the first BLPOP."""
    assert r.blpop("ord:none", 0.01) is None
    for i in range(20):
        src, dst, dst2 = "ord:src%d" % i, "ord:dst%d" % i, "ord:dst2%d" % i
        r.set(dst, "nolist")
        a = on_worker(raw, 0)
        b = on_worker(raw, 1)
        w = on_worker(raw, 0)
        a.send(command("BRPOPLPUSH", src, dst, "0"))
        b.send(command("BRPOPLPUSH", src, dst2, "0"))
        w.send(command("LPUSH", src, "foo"))
        a.sock.settimeout(3)
        b.sock.settimeout(3)
        assert w.read_reply() == b":1\r\n"
        assert a.read_reply().startswith(b"-WRONGTYPE"), "iteration %d" % i
        assert b.read_reply() == b"$3\r\nfoo\r\n", "iteration %d" % i
        assert r.lrange(dst2, 0, -1) == [b"foo"]
        for c in (a, b, w):
            c.sock.close()


def test_bzpop_reply_shapes_resp2_and_resp3(r, raw):
    a = raw()
    block(a, r, "BZPOPMIN", "z", "zz", "0")
    r.zadd("zz", {"a": 1.5, "b": 3})
    assert a.read_reply() == bulks("zz", "a", "1.5")
    c = raw()
    assert c.cmd("HELLO", "3").startswith(b"%")
    assert c.cmd("BZPOPMAX", "zz", "0") == b"*3\r\n$2\r\nzz\r\n$1\r\nb\r\n,3\r\n"
    block(c, r, "BZPOPMAX", "zz", "0.05")
    assert c.read_reply() == b"_\r\n"


# ---- timeouts, CLIENT UNBLOCK, close ----------------------------------------

def test_timeouts(r, raw):
    a = raw()
    t0 = time.monotonic()
    assert a.cmd("BLPOP", "tq", "0.1") == b"*-1\r\n"
    assert time.monotonic() - t0 >= 0.099
    assert a.cmd("BLPOP", "tq", "0.001") == b"*-1\r\n"  # does not block forever
    # A time-out is a null array for every blocking command (a null bulk
    # only inside MULTI, test_inside_multi_never_blocks).
    assert a.cmd("BLMOVE", "tq", "d", "LEFT", "LEFT", "0.01") == b"*-1\r\n"
    assert a.cmd("BRPOPLPUSH", "tq", "d", "0.01") == b"*-1\r\n"
    assert a.cmd("BZMPOP", "0.01", "1", "tz", "MIN") == b"*-1\r\n"
    block(a, r, "BLPOP", "tq", "100000000000")  # about 3 years: effectively forever
    r.rpush("tq", "soon")
    assert a.read_reply() == bulks("tq", "soon")
    block(a, r, "BLPOP", "tq", "0")
    time.sleep(0.2)
    assert silent(a, 0.05)
    r.rpush("tq", "late")
    assert a.read_reply() == bulks("tq", "late")


def test_client_unblock(r, raw):
    a, b = on_worker(raw, 0), on_worker(raw, 3)
    ida = client_id(a)
    assert b.cmd("CLIENT", "UNBLOCK", str(ida)) == b":0\r\n"  # not blocked
    block(a, r, "BLPOP", "u", "0")
    assert b.cmd("CLIENT", "UNBLOCK", str(ida)) == b":1\r\n"
    assert a.read_reply() == b"*-1\r\n"
    block(a, r, "BLMOVE", "u", "v", "LEFT", "LEFT", "0")
    assert b.cmd("CLIENT", "UNBLOCK", str(ida), "TIMEOUT") == b":1\r\n"
    assert a.read_reply() == b"*-1\r\n"
    block(a, r, "BLPOP", "u", "0")
    assert b.cmd("CLIENT", "UNBLOCK", str(ida), "ERROR") == b":1\r\n"
    assert a.read_reply() == b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
    wait_blocked(r, 0)
    assert b.cmd("CLIENT", "UNBLOCK", str(ida), "maybe") == \
        b"-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n"
    assert b.cmd("CLIENT", "UNBLOCK", "x") == b"-ERR value is not an integer or out of range\r\n"
    assert a.cmd("PING") == b"+PONG\r\n"  # the connection goes on


def test_closed_waiter_leaves_no_trace(r, raw):
    a = raw()
    block(a, r, "BLPOP", "gone", "0")
    a.close()
    wait_blocked(r, 0)
    r.rpush("gone", "kept")
    assert r.lrange("gone", 0, -1) == [b"kept"]


def test_info_and_client_list_while_blocked(r, raw):
    a, b = raw(), raw()
    block(a, r, "BLPOP", "i1", "i2", "0")
    block(b, r, "BZPOPMIN", "i2", "5")
    info = r.info("clients")
    assert info["blocked_clients"] == 2
    assert info["clients_in_timeout_table"] == 1
    if IS_TROVE:  # Redis 7.2's fields, not in 7.0.15
        assert info["total_blocking_keys"] == 2
        assert info["total_blocking_keys_on_nokey"] == 0
    flags = [c["flags"] for c in r.client_list() if c["cmd"] in ("blpop", "bzpopmin")]
    assert flags == ["b", "b"]
    r.rpush("i1", "x")
    r.zadd("i2", {"m": 1})
    assert a.read_reply() == bulks("i1", "x")
    assert b.read_reply() == bulks("i2", "m", "1")
    wait_blocked(r, 0)
    if IS_TROVE:
        assert r.info("clients")["total_blocking_keys"] == 0


def test_commandstats_count_a_blocking_command_once(r, raw):
    r.config_resetstat()
    a = raw()
    block(a, r, "BLPOP", "cs", "0")
    if IS_TROVE:  # counted when served, as Redis 7.2+ (7.0.15 counts it when it blocks)
        assert "cmdstat_blpop" not in r.info("commandstats")
    r.rpush("cs", "x")
    assert a.read_reply() == bulks("cs", "x")
    assert a.cmd("BLPOP", "cs", "0.01") == b"*-1\r\n"
    st = r.info("commandstats")["cmdstat_blpop"]
    assert st["calls"] == 2


# ---- a client library -----------------------------------------------------------

def test_redis_py_blocking_calls(resp_port, r):
    results = {}

    def waiter(name, fn):
        c = redis.Redis(host="127.0.0.1", port=resp_port, socket_timeout=20)
        results[name] = fn(c)
        c.close()

    ts = [threading.Thread(target=waiter, args=("blpop", lambda c: c.blpop(["py1"], 5))),
          threading.Thread(target=waiter, args=("bzpopmin", lambda c: c.bzpopmin(["pyz"], 5))),
          threading.Thread(target=waiter,
                           args=("blmove", lambda c: c.blmove("pysrc", "pydst", 5, "LEFT",
                                                              "RIGHT")))]
    for t in ts:
        t.start()
    wait_blocked(r, 3)
    r.rpush("py1", "one")
    r.zadd("pyz", {"m": 2.5})
    r.rpush("pysrc", "moved")
    for t in ts:
        t.join(10)
    assert results["blpop"] == (b"py1", b"one")
    assert results["bzpopmin"] == (b"pyz", b"m", 2.5)
    assert results["blmove"] == b"moved"
    assert r.lrange("pydst", 0, -1) == [b"moved"]
    assert r.blpop(["nothing"], 0.05) is None


# ---- the memcached port ---------------------------------------------------------

def test_memcached_write_to_a_waited_key(trove, r, raw):
    """Overwriting a key with a string wakes no list waiter in Redis (7.2's
    signalDeletedKeyAsReady only wakes clients that block on a missing key):
    a memcached `set` leaves the BLPOP blocked; once the key is a list again
    the waiter is served."""
    from pymemcache.client.base import Client
    mc = Client(("127.0.0.1", trove.port), timeout=5, default_noreply=False)
    a = raw()
    block(a, r, "BLPOP", "mcq", "0")
    assert mc.set("mcq", b"string")
    assert silent(a, 0.2)
    assert blocked(r) == 1
    assert mc.delete("mcq")
    r.rpush("mcq", "v")
    assert a.read_reply() == bulks("mcq", "v")
    mc.close()


@trove_only
def test_idle_timeout_spares_a_blocked_client(make_server):
    import socket
    srv = make_server("-o", "idle_timeout=1")
    port = srv.resp_port
    blocked_c = socket.create_connection(("127.0.0.1", port), timeout=10)
    idle_c = socket.create_connection(("127.0.0.1", port), timeout=10)
    idle_c.sendall(command("PING"))
    assert idle_c.recv(100) == b"+PONG\r\n"
    blocked_c.sendall(command("BLPOP", "idleq", "0"))
    time.sleep(2.5)
    assert idle_c.recv(100) == b""  # closed for idling
    pusher = socket.create_connection(("127.0.0.1", port), timeout=10)
    pusher.sendall(command("RPUSH", "idleq", "v"))
    assert pusher.recv(100) == b":1\r\n"
    assert blocked_c.recv(100) == bulks("idleq", "v")


def test_monitor_and_slowlog_show_a_blocking_command_once(r, raw):
    r.config_set("slowlog-log-slower-than", 0)
    try:
        r.slowlog_reset()
        mon = raw()
        assert mon.cmd("MONITOR") == b"+OK\r\n"
        a = raw()
        block(a, r, "BLPOP", "monq", "0")
        r.rpush("monq", "v")
        assert a.read_reply() == bulks("monq", "v")
        r.set("monitor-end", "1")
        lines = []
        while True:
            line = mon.readline()
            lines.append(line)
            if b'"monitor-end"' in line:
                break
        assert sum(1 for ln in lines if b'"blpop"' in ln.lower()) == 1
        entries = [e for e in r.slowlog_get(128) if e["command"].lower().startswith(b"blpop")]
        assert len(entries) == 1
        assert entries[0]["command"] == b"BLPOP monq 0"
    finally:
        r.config_set("slowlog-log-slower-than", 10000)
