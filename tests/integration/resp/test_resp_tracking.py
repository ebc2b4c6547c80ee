"""Client-side caching: CLIENT TRACKING / CACHING / GETREDIR / TRACKINGINFO and
the invalidation messages (docs/resp_modes.md section 7; Redis's
tests/unit/tracking.tcl). Trove runs at -t 4, and consecutive connections land
on different workers, so tracking clients, writers and redirect targets are on
different workers. Also runs against redis-server (TROVE_TEST_TARGET=redis);
the memcached-port, eviction and Trove-only cases skip there."""

import os
import socket
import time

import pytest
import redis

from blocked_clients import SLOW, command, silent, wait_blocked

SERVER_ARGS = ["-t", "4"]
pytestmark = pytest.mark.skipif(bool(os.environ.get("TROVE_RESP_FAKE")),
                                reason="the fake RESP front has no workers")


def parse(c):
    """The next reply on raw connection c as Python values (bytes, int, None,
    lists; maps as dicts; pushes as ("push", [...]))."""
    line = c.readline()
    t, body = line[:1], line[1:-2]
    if t in b"+":
        return body
    if t == b"-":
        return ("error", body)
    if t == b":":
        return int(body)
    if t == b"_":
        return None
    if t in b"$=":
        n = int(body)
        if n < 0:
            return None
        while len(c.buf) < n + 2:
            c._fill()
        v, c.buf = c.buf[:n], c.buf[n + 2:]
        return v[4:] if t == b"=" else v  # verbatim: drop "txt:"
    if t in b"*~>":
        n = int(body)
        if n < 0:
            return None
        items = [parse(c) for _ in range(n)]
        return ("push", items) if t == b">" else items
    if t == b"%":
        n = int(body)
        out = {}
        for _ in range(n):
            k = parse(c)
            out[k] = parse(c)
        return out
    raise AssertionError("unexpected reply %r" % line)


def call(c, *args):
    c.send(command(*args))
    return parse(c)


def client_id(c):
    return call(c, "CLIENT", "ID")


def redirect_target(raw):
    """A RESP2 connection subscribed to __redis__:invalidate, and its id."""
    t = raw()
    tid = client_id(t)
    assert call(t, "SUBSCRIBE", "__redis__:invalidate") == [b"subscribe",
                                                            b"__redis__:invalidate", 1]
    return t, tid


def invalidated(t):
    """The keys of the next invalidation on t (a RESP2 redirect target or a
    RESP3 client); None for a flush."""
    m = parse(t)
    if isinstance(m, tuple):  # RESP3 push
        assert m[0] == "push" and m[1][0] == b"invalidate", m
        return m[1][1]
    assert m[:2] == [b"message", b"__redis__:invalidate"], m
    return m[2]


def resp3(raw):
    c = raw()
    assert isinstance(call(c, "HELLO", "3"), dict)
    return c


@pytest.fixture(params=["resp3", "resp2-redirect"])
def tracker(request, raw):
    """A tracking client c, where its invalidations arrive (c itself on
    RESP3, or a RESP2 __redis__:invalidate subscriber), and the REDIRECT
    arguments CLIENT TRACKING needs for that."""
    if request.param == "resp3":
        c = resp3(raw)
        return c, c, []
    t, tid = redirect_target(raw)
    return raw(), t, ["REDIRECT", str(tid)]


def nothing_more(c, t):
    """Nothing is pending for t (on a RESP3 self target: a PING answers first)."""
    if t is c:
        assert call(c, "PING") == b"PONG"
    else:
        assert silent(t)


def info(r, field, section="stats"):
    return r.info(section)[field]


# --- syntax and errors ---------------------------------------------------------------------

def test_errors(raw):
    c = raw()
    err = lambda *a: call(c, "CLIENT", *a)  # noqa: E731
    assert err("TRACKING", "on", "REDIRECT", "999999") == \
        ("error", b"ERR The client ID you want redirect to does not exist")
    me = client_id(c)
    assert err("TRACKING", "on", "REDIRECT", str(me), "REDIRECT", str(me)) == \
        ("error", b"ERR A client can only redirect to a single other client")
    assert err("TRACKING", "on", "REDIRECT", "x") == \
        ("error", b"ERR value is not an integer or out of range")
    assert err("TRACKING", "on", "PREFIX", "a") == \
        ("error", b"ERR PREFIX option requires BCAST mode to be enabled")
    assert err("TRACKING", "on", "BCAST", "OPTIN") == \
        ("error", b"ERR OPTIN and OPTOUT are not compatible with BCAST")
    assert err("TRACKING", "on", "OPTIN", "OPTOUT") == \
        ("error", b"ERR You can't specify both OPTIN mode and OPTOUT mode")
    assert err("TRACKING", "maybe") == ("error", b"ERR syntax error")
    assert err("TRACKING", "on", "bogus") == ("error", b"ERR syntax error")
    assert err("CACHING", "yes")[1].startswith(b"ERR CLIENT CACHING can be called only when")
    assert err("TRACKING", "on", "OPTIN") == b"OK"
    assert err("TRACKING", "on", "OPTOUT") == \
        ("error", b"ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this "
                  b"client, and then re-enabling it with a different mode.")
    assert err("TRACKING", "on", "BCAST") == \
        ("error", b"ERR You can't switch BCAST mode on/off before disabling tracking for this "
                  b"client, and then re-enabling it with a different mode.")
    assert err("CACHING", "no") == \
        ("error", b"ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
    assert err("CACHING", "maybe") == ("error", b"ERR syntax error")
    assert err("TRACKING", "off") == b"OK"
    assert err("TRACKING", "on", "OPTOUT") == b"OK"
    assert err("CACHING", "yes") == \
        ("error", b"ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
    assert err("TRACKING", "off") == b"OK"
    assert err("TRACKING", "on", "BCAST", "PREFIX", "ab", "PREFIX", "a") == \
        ("error", b"ERR Prefix 'ab' overlaps with another provided prefix 'a'. "
                  b"Prefixes for a single client must not overlap.")
    assert err("TRACKING", "on", "BCAST", "PREFIX", "ab") == b"OK"
    assert err("TRACKING", "on", "BCAST", "PREFIX", "abc") == \
        ("error", b"ERR Prefix 'abc' overlaps with an existing prefix 'ab'. "
                  b"Prefixes for a single client must not overlap.")
    assert err("CACHING")[1].startswith(b"ERR wrong number of arguments for 'client|caching'")
    assert err("GETREDIR", "x")[1].startswith(b"ERR wrong number of arguments")


# --- default mode ---------------------------------------------------------------------------

def test_default_mode_redirect_resp2(raw):
    t, tid = redirect_target(raw)
    c, w = raw(), raw()
    assert call(c, "CLIENT", "TRACKING", "on", "REDIRECT", str(tid)) == b"OK"
    call(w, "SET", "a{t}", "1")
    call(w, "SET", "b{t}", "1")
    assert call(c, "MGET", "a{t}", "b{t}", "missing{t}") == [b"1", b"1", None]
    call(w, "SET", "a{t}", "2")
    assert invalidated(t) == [b"a{t}"]
    call(w, "INCR", "c{t}")       # never read: not reported
    call(w, "SET", "a{t}", "3")   # already invalidated: forgotten until read again
    call(w, "DEL", "missing{t}")  # a no-op write: nothing changed
    call(w, "SET", "missing{t}", "now")
    assert invalidated(t) == [b"missing{t}"]
    call(w, "HSET", "h", "f", "v")  # another type, another key: nothing
    call(w, "SET", "b{t}", "2")
    assert invalidated(t) == [b"b{t}"]
    assert silent(t)
    # Tracking off: no more messages.
    assert call(c, "CLIENT", "TRACKING", "off") == b"OK"
    call(c, "GET", "a{t}")
    call(w, "SET", "a{t}", "4")
    assert silent(t)


def test_resp3_push_and_own_write_after_reply(raw):
    c, w = resp3(raw), raw()
    assert call(c, "CLIENT", "TRACKING", "on") == b"OK"
    call(c, "HSET", "myhash", "f", "1")
    assert call(c, "HGET", "myhash", "f") == b"1"
    # The invalidation its own HDEL causes comes after the HDEL's reply.
    assert call(c, "HDEL", "myhash", "f") == 1
    assert invalidated(c) == [b"myhash"]
    call(c, "GET", "k")
    call(w, "SET", "k", "v")
    assert invalidated(c) == [b"k"]
    # RESP2 without a redirect: nothing can be sent.
    c2 = raw()
    call(c2, "CLIENT", "TRACKING", "on")
    call(c2, "GET", "k2")
    call(w, "SET", "k2", "v")
    assert call(c2, "PING") == b"PONG"


def test_noloop(tracker, raw):
    c, t, redir = tracker
    w = raw()
    call(c, "CLIENT", "TRACKING", "on", *redir, "NOLOOP")
    call(c, "MGET", "n1", "n2")
    call(c, "SET", "n1", "mine")  # its own write: not reported
    call(w, "SET", "n2", "theirs")
    assert invalidated(t) == [b"n2"]
    nothing_more(c, t)



def test_transaction_reply_comes_first(raw):
    c = resp3(raw)
    call(c, "CLIENT", "TRACKING", "on")
    call(c, "MGET", "x1", "x2")
    assert call(c, "MULTI") == b"OK"
    assert call(c, "SET", "x1", "a") == b"QUEUED"
    assert call(c, "SET", "x2", "b") == b"QUEUED"
    assert call(c, "EXEC") == [b"OK", b"OK"]
    got = [invalidated(c), invalidated(c)]
    assert sorted(got) == [[b"x1"], [b"x2"]]


def test_keys_tracked_across_databases_by_name(raw):
    # Redis keeps one table for every database: a write to k in db 1
    # invalidates k read in db 0.
    c, w = resp3(raw), raw()
    call(c, "CLIENT", "TRACKING", "on")
    call(c, "GET", "dbk")
    call(w, "SELECT", "1")
    call(w, "SET", "dbk", "v")
    assert invalidated(c) == [b"dbk"]


# --- BCAST ----------------------------------------------------------------------------------

def test_bcast_empty_prefix_reports_every_key(raw):
    t, tid = redirect_target(raw)
    c, w = raw(), raw()
    call(c, "CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", str(tid))
    call(w, "MSET", "a", "1", "b", "2", "c", "3")
    assert sorted(invalidated(t)) == [b"a", b"b", b"c"]


def test_bcast_prefixes_separate_messages(tracker, raw):
    c, t, redir = tracker
    w = raw()
    call(c, "CLIENT", "TRACKING", "on", "BCAST", *redir, "PREFIX", "a:", "PREFIX", "b:")
    call(w, "MSET", "a:1", "1", "a:2", "2", "b:1", "3", "c:1", "4")
    got = sorted(sorted(invalidated(t)) for _ in range(2))
    assert got == [[b"a:1", b"a:2"], [b"b:1"]]
    # ON again adds a prefix.
    assert call(c, "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "c:", *redir) == b"OK"
    call(w, "SET", "c:2", "x")
    assert invalidated(t) == [b"c:2"]
    call(w, "SET", "d:1", "x")
    nothing_more(c, t)



def test_bcast_noloop(tracker, raw):
    c, t, redir = tracker
    w = raw()
    call(c, "CLIENT", "TRACKING", "on", "BCAST", *redir, "NOLOOP")
    call(c, "SET", "own", "1")
    call(w, "SET", "other", "1")
    assert invalidated(t) == [b"other"]
    nothing_more(c, t)



def test_no_message_for_keys_read_before_bcast(raw):
    t, tid = redirect_target(raw)
    c, w = raw(), raw()
    call(c, "CLIENT", "TRACKING", "on", "REDIRECT", str(tid))
    call(c, "GET", "pre")
    call(c, "CLIENT", "TRACKING", "off")
    call(c, "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "zz", "REDIRECT", str(tid))
    call(w, "SET", "pre", "1")
    assert silent(t)


# --- OPTIN / OPTOUT -------------------------------------------------------------------------

def test_optin(tracker, raw):
    c, t, redir = tracker
    w = raw()
    call(c, "CLIENT", "TRACKING", "on", "OPTIN", *redir)
    call(c, "GET", "o1")  # not after CACHING yes: not tracked
    call(w, "SET", "o1", "v")
    nothing_more(c, t)
    assert call(c, "CLIENT", "CACHING", "yes") == b"OK"
    call(c, "GET", "o2")
    call(c, "GET", "o3")  # CACHING yes covers one command only
    call(w, "MSET", "o2", "v", "o3", "v")
    assert invalidated(t) == [b"o2"]
    nothing_more(c, t)
    # ... or a whole transaction started right after it.
    call(c, "CLIENT", "CACHING", "yes")
    call(c, "MULTI")
    call(c, "GET", "o4")
    call(c, "GET", "o5")
    assert call(c, "EXEC") == [None, None]
    call(w, "MSET", "o4", "v", "o5", "v")
    assert sorted([invalidated(t), invalidated(t)]) == [[b"o4"], [b"o5"]]



def test_optout(tracker, raw):
    c, t, redir = tracker
    w = raw()
    call(c, "CLIENT", "TRACKING", "on", "OPTOUT", *redir)
    call(c, "GET", "p1")
    assert call(c, "CLIENT", "CACHING", "no") == b"OK"
    call(c, "GET", "p2")  # not tracked
    call(c, "GET", "p3")
    call(w, "MSET", "p1", "v", "p2", "v", "p3", "v")
    assert sorted([invalidated(t), invalidated(t)]) == [[b"p1"], [b"p3"]]
    nothing_more(c, t)


# --- flush, expiry, table limit -------------------------------------------------------------

def test_flushall_and_flushdb_send_null(raw):
    t, tid = redirect_target(raw)
    c, w = raw(), raw()
    call(c, "CLIENT", "TRACKING", "on", "REDIRECT", str(tid))
    call(c, "GET", "f1")
    assert call(w, "FLUSHALL") == b"OK"
    assert invalidated(t) is None
    call(w, "FLUSHDB", "ASYNC")
    assert invalidated(t) is None  # to every tracking client, even with nothing read


def test_flushdb_in_transaction_after_exec_reply(raw):
    c = resp3(raw)
    call(c, "CLIENT", "TRACKING", "on")
    call(c, "SET", "a{t}", "1")
    call(c, "GET", "a{t}")
    call(c, "MULTI")
    call(c, "FLUSHDB")
    assert call(c, "EXEC") == [b"OK"]
    assert invalidated(c) is None


def test_expired_key_is_invalidated(raw):
    t, tid = redirect_target(raw)
    c = raw()
    call(c, "CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", str(tid), "NOLOOP")
    call(c, "SET", "mykey", "v", "PX", "1")
    # Its own SET is NOLOOP; the expiry (nobody's write) is reported.
    t.sock.settimeout(30 * SLOW)  # the expiry crawl: slow under ASan and load
    assert invalidated(t) == [b"mykey"]


def test_read_key_expiring_is_invalidated(raw):
    c, w = resp3(raw), raw()
    call(c, "CLIENT", "TRACKING", "on")
    call(w, "SET", "ek", "v", "PX", "200")
    assert call(c, "GET", "ek") == b"v"
    c.sock.settimeout(30 * SLOW)  # the expiry crawl: slow under ASan and load
    assert invalidated(c) == [b"ek"]


def test_tracking_table_max_keys_evicts_with_invalidations(r, raw):
    t, tid = redirect_target(raw)
    c, w = raw(), raw()
    call(c, "CLIENT", "TRACKING", "on", "REDIRECT", str(tid))
    w.send(b"".join(command("SET", "key%d" % i, str(i)) for i in range(250)))
    assert [parse(w) for _ in range(250)] == [b"OK"] * 250
    c.send(b"".join(command("GET", "key%d" % i) for i in range(250)))
    assert [parse(c) for _ in range(250)] == [str(i).encode() for i in range(250)]
    assert info(r, "tracking_total_keys") == 250
    try:
        assert r.config_set("tracking-table-max-keys", 1)
        keys = set()
        for _ in range(249):
            got = invalidated(t)
            assert len(got) == 1
            keys.add(got[0])
        assert len(keys) == 249
        assert silent(t)
        assert info(r, "tracking_total_keys") == 1
    finally:
        r.config_set("tracking-table-max-keys", 1000000)
    assert r.config_get("tracking-table-max-keys") == {"tracking-table-max-keys": "1000000"}


def test_table_limit_on_reads_and_after_exec(r, raw):
    t, tid = redirect_target(raw)
    c = raw()
    call(c, "CLIENT", "TRACKING", "on", "REDIRECT", str(tid))
    try:
        assert r.config_set("tracking-table-max-keys", 2)
        call(c, "MGET", "l1", "l2")
        assert silent(t)
        call(c, "GET", "l3")  # the read that crosses the limit evicts one key
        assert len(invalidated(t)) == 1
        assert info(r, "tracking_total_keys") == 2
        call(c, "MULTI")
        call(c, "GET", "l4")
        call(c, "GET", "l5")
        assert call(c, "EXEC") == [None, None]  # evicted after the EXEC, not inside it
        assert len(invalidated(t)) == 1 and len(invalidated(t)) == 1
        assert info(r, "tracking_total_keys") == 2
        assert silent(t)
    finally:
        r.config_set("tracking-table-max-keys", 1000000)


# --- redirect target gone, introspection ----------------------------------------------------

def test_redirect_broken(raw):
    t, tid = redirect_target(raw)
    c, w = resp3(raw), raw()
    call(c, "CLIENT", "TRACKING", "on", "REDIRECT", str(tid))
    call(c, "GET", "rb")
    t.close()
    deadline = time.monotonic() + 5 * SLOW
    while call(w, "CLIENT", "LIST", "ID", str(tid)) != b"":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    call(w, "SET", "rb", "1")
    assert parse(c) == ("push", [b"tracking-redir-broken", tid])
    info_map = call(c, "CLIENT", "TRACKINGINFO")
    assert info_map[b"flags"] == [b"on", b"broken_redirect"]
    line = call(c, "CLIENT", "INFO")
    assert b" flags=tR " in line and (b" redir=%d " % tid) in line


def test_redirect_broken_as_soon_as_quit_is_answered(raw):
    """Redis's tracking unit, "tracking-redir-broken with client reply off":
    the redirect target sends QUIT, and once its +OK arrives another client
    changes a tracked key. The target is gone for redirects when QUIT runs,
    not when its worker gets round to closing the socket: before, the
    invalidation could go to the closing target and be dropped, and the
    tracking client waited for ever (the suite's runner gave up on the unit)."""
    w = raw()
    for i in range(30):
        t, tid = redirect_target(raw)
        c = resp3(raw)
        key = "rbq%d" % i
        call(c, "CLIENT", "TRACKING", "on", "REDIRECT", str(tid))
        call(c, "GET", key)
        assert call(t, "QUIT") == b"OK"
        call(w, "SET", key, "1")
        c.sock.settimeout(3)
        assert parse(c) == ("push", [b"tracking-redir-broken", tid]), "iteration %d" % i
        c.sock.close()
        t.sock.close()


def test_trackinginfo_and_getredir(raw):
    c, t = resp3(raw), raw()
    tid = client_id(t)
    assert call(c, "CLIENT", "GETREDIR") == -1
    assert call(c, "CLIENT", "TRACKINGINFO") == {b"flags": [b"off"], b"redirect": -1,
                                                 b"prefixes": []}
    call(c, "CLIENT", "TRACKING", "on")
    assert call(c, "CLIENT", "GETREDIR") == 0
    call(c, "CLIENT", "TRACKING", "on", "REDIRECT", str(tid), "NOLOOP")
    assert call(c, "CLIENT", "GETREDIR") == tid
    assert call(c, "CLIENT", "TRACKINGINFO") == {b"flags": [b"on", b"noloop"], b"redirect": tid,
                                                 b"prefixes": []}
    call(c, "CLIENT", "TRACKING", "off")
    call(c, "CLIENT", "TRACKING", "on", "OPTIN")
    call(c, "CLIENT", "CACHING", "yes")
    assert call(c, "CLIENT", "TRACKINGINFO")[b"flags"] == [b"on", b"optin", b"caching-yes"]
    call(c, "CLIENT", "TRACKING", "off")
    call(c, "CLIENT", "TRACKING", "on", "OPTOUT")
    assert call(c, "CLIENT", "TRACKINGINFO")[b"flags"] == [b"on", b"optout"]
    call(c, "CLIENT", "TRACKING", "off")
    call(c, "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "b", "PREFIX", "a")
    assert call(c, "CLIENT", "TRACKINGINFO") == {b"flags": [b"on", b"bcast"], b"redirect": 0,
                                                 b"prefixes": [b"a", b"b"]}
    line = call(c, "CLIENT", "INFO")
    assert b" flags=tB " in line and b" redir=0 " in line
    call(c, "CLIENT", "TRACKING", "off")
    call(c, "CLIENT", "TRACKING", "on", "BCAST")
    assert call(c, "CLIENT", "TRACKINGINFO")[b"prefixes"] == [b""]


def test_info_fields(r, raw):
    base = info(r, "tracking_clients", "clients")
    c1, c2 = raw(), raw()
    call(c1, "CLIENT", "TRACKING", "on")
    call(c2, "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p1", "PREFIX", "p2")
    call(c1, "MGET", "i1", "i2")
    c3 = raw()
    call(c3, "CLIENT", "TRACKING", "on")
    call(c3, "GET", "i1")
    assert info(r, "tracking_clients", "clients") == base + 3
    assert info(r, "tracking_total_keys") == 2
    assert info(r, "tracking_total_items") == 3
    assert info(r, "tracking_total_prefixes") == 2
    call(c2, "RESET")
    assert info(r, "tracking_total_prefixes") == 0
    assert info(r, "tracking_clients", "clients") == base + 2
    r.flushall()
    assert info(r, "tracking_total_keys") == 0
    c1.close()
    c3.close()
    deadline = time.monotonic() + 5 * SLOW
    while info(r, "tracking_clients", "clients") != base:
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_client_reply_off_still_gets_invalidations(raw):
    c, w = resp3(raw), raw()
    call(c, "CLIENT", "TRACKING", "on")
    call(c, "GET", "ro")
    c.send(command("CLIENT", "REPLY", "OFF"))
    call(w, "SET", "ro", "1")
    assert invalidated(c) == [b"ro"]


def test_served_blmove_invalidation_after_its_reply(r, raw):
    c, w = resp3(raw), raw()
    call(w, "RPUSH", "list2{t}", "a")
    call(c, "CLIENT", "TRACKING", "on")
    assert call(c, "LRANGE", "list2{t}", "0", "-1") == [b"a"]
    c.send(command("BLMOVE", "list1{t}", "list2{t}", "LEFT", "LEFT", "0"))
    wait_blocked(r, 1)
    call(w, "RPUSH", "list1{t}", "foo")
    assert parse(c) == b"foo"
    assert invalidated(c) == [b"list2{t}"]


def test_redis_py_resp2_redirect_through_pubsub(resp_port):
    """A RESP2 redirect done as client libraries do it: redis-py's pub/sub
    object subscribes to __redis__:invalidate, another connection tracks."""
    r1 = redis.Redis(host="127.0.0.1", port=resp_port, socket_timeout=10)
    p = r1.pubsub()
    p.subscribe("__redis__:invalidate")
    assert p.get_message(timeout=5)["type"] == "subscribe"
    target = p.connection
    target_id = None
    for cl in r1.client_list():
        if cl["cmd"] == "subscribe":
            target_id = int(cl["id"])
    reader = redis.Redis(host="127.0.0.1", port=resp_port, single_connection_client=True)
    reader.execute_command("CLIENT", "TRACKING", "on", "REDIRECT", target_id)
    reader.set("py:k", "1")
    assert reader.get("py:k") == b"1"
    r1.set("py:k", "2")
    m = p.get_message(timeout=5)
    assert m["channel"] == b"__redis__:invalidate"
    assert m["data"] == [b"py:k"]
    assert target is not None
    p.close()
    reader.close()
    r1.close()


# --- writes through the memcached port (Trove only) -----------------------------------------

def mc(trove, payload, replies):
    s = socket.create_connection(("127.0.0.1", trove.port), timeout=5)
    s.sendall(payload)
    buf = b""
    while buf.count(b"\r\n") < replies:
        buf += s.recv(4096)
    s.close()
    return buf


def test_memcached_writes_invalidate(trove, raw):
    c = resp3(raw)
    call(c, "CLIENT", "TRACKING", "on")
    cases = [
        (b"set mk 0 0 1\r\nv\r\n", 1),
        (b"append mk 0 0 1\r\nw\r\n", 1),
        (b"touch mk 100\r\n", 1),
        (b"delete mk\r\n", 1),
        (b"set mk 0 0 1\r\n5\r\n", 1),
        (b"incr mk 1\r\n", 1),
        (b"ms mk 1\r\n7\r\n", 1),
        (b"ma mk\r\n", 1),
        (b"md mk\r\n", 1),
    ]
    for payload, n in cases:
        call(c, "GET", "mk")
        mc(trove, payload, n)
        assert invalidated(c) == [b"mk"], payload
    call(c, "GET", "mk")
    mc(trove, b"flush_all\r\n", 1)
    assert invalidated(c) is None


def test_memcached_expiry_invalidates(trove, raw):
    c = resp3(raw)
    call(c, "CLIENT", "TRACKING", "on")
    mc(trove, b"set mx 0 1 1\r\nv\r\n", 1)
    assert call(c, "GET", "mx") == b"v"
    c.sock.settimeout(10 * SLOW)
    assert invalidated(c) == [b"mx"]


def test_eviction_invalidates(trove, make_server):
    srv = make_server("-m", "2", "-t", "2")
    from conftest import RawConn
    rc = RawConn(srv.resp_port)
    call(rc, "HELLO", "3")
    call(rc, "CLIENT", "TRACKING", "on")
    value = b"v" * 2000
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    for i in range(5):
        s.sendall(b"set ev%d 0 0 %d\r\n%s\r\n" % (i, len(value), value))
    buf = b""
    while buf.count(b"STORED") < 5:
        buf += s.recv(4096)
    for i in range(5):
        assert call(rc, "GET", "ev%d" % i) == value
    # Nobody writes ev0..ev4 again: what invalidates them is their eviction.
    for i in range(3000):
        s.sendall(b"set fill%d 0 0 %d noreply\r\n%s\r\n" % (i, len(value), value))
    s.sendall(b"mn\r\n")
    buf = b""
    while not buf.endswith(b"MN\r\n"):
        buf += s.recv(4096)
    s.close()
    rc.sock.settimeout(10 * SLOW)
    got = sorted(invalidated(rc)[0] for _ in range(5))
    assert got == [b"ev%d" % i for i in range(5)]
    rc.close()
