"""Keyspace notifications (notify-keyspace-events) on the RESP port: the
setting's parse and canonical form, the events of each command family on the
__keyspace@<db>__ and __keyevent@<db>__ channels, masking by class, expiry
(found by a read and found in the background), new keys, key misses,
transactions, and -- Trove only -- writes through the memcached port and
evictions.

Redis 7 is the reference: every test without the `trove` fixture also runs
against redis-server (TROVE_TEST_TARGET=redis). Trove runs with -t 4, so the
subscriber and the writer usually sit on different workers.
"""

import os
import socket
import time

import pytest
import redis

import keyspace_observe


SERVER_ARGS = ["-t", "4"]

TARGET = os.environ.get("TROVE_TEST_TARGET", "").strip().lower() or (
    "fake" if os.environ.get("TROVE_RESP_FAKE") else "trove")
pytestmark = pytest.mark.skipif(TARGET == "fake",
                                reason="the fake RESP front has no workers to deliver messages")
# TSan builds run several times slower: waits are scaled.
SLOW = 10 if "tsan" in os.environ.get("TROVE_BIN", "") else 1


@pytest.fixture(autouse=True)
def _events_off(r):
    yield
    r.config_set("notify-keyspace-events", "")


def listen(r, flags, pattern="__key*__:*"):
    """keyspace_observe.listen, on both the keyspace and keyevent channels."""
    return keyspace_observe.listen(r, flags, pattern)


def events(p, n, timeout=5.0):
    """The next n messages as (channel, data) strings."""
    out = []
    deadline = time.monotonic() + timeout * SLOW
    while len(out) < n and time.monotonic() < deadline:
        m = p.get_message(timeout=0.2)
        if m is not None and m["type"] == "pmessage":
            out.append((m["channel"].decode(), m["data"].decode()))
    return out


def quiet(p, wait=0.3):
    """True if nothing more arrives within `wait` seconds."""
    m = p.get_message(timeout=wait)
    return m is None, m


def keyevents(p, n, timeout=5.0):
    """The next n keyevent messages as "event key" (under flags with E only)."""
    return ["%s %s" % (ch.split("__:", 1)[1], data) for ch, data in events(p, n, timeout)]


# ---- the setting --------------------------------------------------------------

@pytest.mark.parametrize("given,shown", [
    ("KEA", "AKE"), ("gKE", "gKE"), ("$lshzxeKE", "$lshzxeKE"), ("KA", "AK"), ("EA", "AE"),
    ("", ""), ("nm", "nm"), ("Kx", "xK"), ("AKEm", "AKEm"), ("t", "t"), ("d", "d"),
])
def test_config_round_trip(r, given, shown):
    assert r.config_set("notify-keyspace-events", given)
    assert r.config_get("notify-keyspace-events")["notify-keyspace-events"] == shown
    # What CONFIG GET shows is accepted back unchanged.
    assert r.config_set("notify-keyspace-events", shown)
    assert r.config_get("notify-keyspace-events")["notify-keyspace-events"] == shown


def test_config_rejects_unknown_class(r):
    r.config_set("notify-keyspace-events", "KE$")
    with pytest.raises(redis.ResponseError) as e:
        r.config_set("notify-keyspace-events", "KEy")
    assert str(e.value) == ("CONFIG SET failed (possibly related to argument "
                            "'notify-keyspace-events') - Invalid event class character. "
                            "Use 'Ag$lshzxeKEtmdn'.")
    # The old value stays.
    assert r.config_get("notify-keyspace-events")["notify-keyspace-events"] == "$KE"


def test_off_by_default_and_without_K_or_E(r):
    p = listen(r, "")
    r.set("foo", "bar")
    assert quiet(p)[0]
    # Classes without K or E publish nothing either.
    r.config_set("notify-keyspace-events", "A")
    r.set("foo", "baz")
    assert quiet(p)[0]
    p.close()


# ---- channels and masking -----------------------------------------------------

def test_keyspace_channel(r):
    p = listen(r, "K$")
    r.set("foo", "bar")
    assert events(p, 1) == [("__keyspace@0__:foo", "set")]
    assert quiet(p)[0]
    p.close()


def test_keyevent_channel(r):
    p = listen(r, "E$")
    r.set("foo", "bar")
    assert events(p, 1) == [("__keyevent@0__:set", "foo")]
    assert quiet(p)[0]
    p.close()


def test_both_channels(r):
    p = listen(r, "KEA")
    r.set("foo", "bar")
    assert events(p, 2) == [("__keyspace@0__:foo", "set"), ("__keyevent@0__:set", "foo")]
    p.close()


def test_classes_mask_events(r):
    p = listen(r, "KEl")
    r.set("foo", "bar")
    r.lpush("mylist", "a")
    assert events(p, 2) == [("__keyspace@0__:mylist", "lpush"),
                            ("__keyevent@0__:lpush", "mylist")]
    assert quiet(p)[0]
    p.close()


def test_database_number_in_channel(resp_port, r):
    r9 = redis.Redis(host="127.0.0.1", port=resp_port, db=9)
    p = listen(r, "KE$")
    r9.set("k9", "v")
    assert events(p, 2) == [("__keyspace@9__:k9", "set"), ("__keyevent@9__:set", "k9")]
    r9.close()
    p.close()


# ---- command families (keyevent channel: "event key") ----------------------------

def test_generic_events(r):
    p = listen(r, "Eg")
    r.set("foo", "bar")
    r.expire("foo", 100)
    r.persist("foo")
    r.rename("foo", "bar")
    r.delete("bar", "nosuch")
    r.set("a", "1")
    r.set("b", "2")
    r.delete("a", "b", "a")
    r.set("c", "1")
    r.pexpire("c", -1)  # a past expiry deletes
    r.set("d", "1")
    r.copy("d", "d2")
    r.getdel("d")
    assert keyevents(p, 10) == [
        "expire foo", "persist foo", "rename_from foo", "rename_to bar", "del bar",
        "del a", "del b", "del c", "copy_to d2", "del d"]
    assert quiet(p)[0]
    p.close()


def test_string_events(r):
    p = listen(r, "E$g")
    r.set("s", "1")
    r.set("s", "2", nx=True)  # not stored: no event
    r.incr("s")
    r.decr("s")
    r.incrby("s", 5)
    r.decrby("s", 2)
    r.incrbyfloat("s", 1.5)
    r.append("s", "x")
    r.setrange("s", 0, "y")
    r.getset("s", "z")
    r.mset({"m1": "a", "m2": "b"})
    r.setex("t", 100, "v")
    r.set("u", "v", px=100000)
    r.getex("u", persist=True)
    r.getex("u", ex=50)
    assert keyevents(p, 17) == [
        "set s", "incrby s", "incrby s", "incrby s", "incrby s", "incrbyfloat s", "append s",
        "setrange s", "set s", "set m1", "set m2", "set t", "expire t", "set u", "expire u",
        "persist u", "expire u"]
    assert quiet(p)[0]
    p.close()


def test_list_events(r):
    p = listen(r, "Elg")
    r.rpush("l", "a", "b", "c")
    r.lpush("l", "z")
    r.lpushx("nolist", "x")  # no list: no event
    r.linsert("l", "before", "b", "q")
    r.lset("l", 0, "y")
    r.lrem("l", 0, "q")
    r.lrem("l", 0, "nothing")  # removes nothing: no event
    r.ltrim("l", 0, 10)
    r.lmove("l", "l2", "LEFT", "RIGHT")
    r.rpoplpush("l", "l2")
    r.rpop("l")
    r.lpop("l")  # empties it
    assert keyevents(p, 13) == [
        "rpush l", "lpush l", "linsert l", "lset l", "lrem l", "ltrim l",
        "rpush l2", "lpop l", "lpush l2", "rpop l", "rpop l", "lpop l", "del l"]
    assert quiet(p)[0]
    p.close()


def test_list_emptied_raises_del(r):
    p = listen(r, "Elg")
    r.rpush("l", "a")
    r.lpop("l")
    assert keyevents(p, 3) == ["rpush l", "lpop l", "del l"]
    p.close()


def test_list_move_events(r):
    p = listen(r, "Elg")
    r.rpush("src", "1", "2")
    r.lmove("src", "dst", "LEFT", "RIGHT")
    r.rpoplpush("src", "dst")
    # Redis reports the push before the pop, then the emptied source's del.
    assert keyevents(p, 6) == ["rpush src", "rpush dst", "lpop src", "lpush dst", "rpop src",
                               "del src"]
    assert quiet(p)[0]
    p.close()


def test_set_events(r):
    p = listen(r, "Esg")
    r.sadd("s", "a", "b", "c")
    r.sadd("s", "a")  # nothing added: no event
    r.srem("s", "a")
    r.smove("s", "s2", "b")
    r.sadd("o", "c")
    r.sinterstore("dst", ["s", "o"])
    r.sinterstore("dst", ["s", "nosuch"])  # empty result: dst deleted
    r.spop("s")  # empties it
    assert keyevents(p, 9) == ["sadd s", "srem s", "srem s", "sadd s2", "sadd o",
                               "sinterstore dst", "del dst", "spop s", "del s"]
    assert quiet(p)[0]
    p.close()


def test_hash_events(r):
    p = listen(r, "Ehg")
    r.hset("h", "f", "v")
    r.hsetnx("h", "f", "w")  # exists: no event
    r.hincrby("h", "n", 2)
    r.hincrbyfloat("h", "x", 1.5)
    r.hdel("h", "f", "n", "x")
    assert keyevents(p, 5) == ["hset h", "hincrby h", "hincrbyfloat h", "hdel h", "del h"]
    assert quiet(p)[0]
    p.close()


def test_zset_events(r):
    p = listen(r, "Ezg")
    r.zadd("z", {"a": 1, "b": 2, "c": 3, "d": 4})
    r.zadd("z", {"a": 5}, incr=True)
    r.zincrby("z", 1, "b")
    r.zrem("z", "c")
    r.zpopmin("z")
    r.zadd("y", {"m": 1})
    r.zunionstore("u", ["z", "y"])
    r.zremrangebyscore("z", 0, 100)
    assert keyevents(p, 9) == ["zadd z", "zincr z", "zincr z", "zrem z", "zpopmin z", "zadd y",
                               "zunionstore u", "zremrangebyscore z", "del z"]
    assert quiet(p)[0]
    p.close()


# ---- expiry, new keys, misses -------------------------------------------------

def test_expired_found_by_a_read(r):
    p = listen(r, "Ex")
    r.psetex("foo", 100, "1")
    deadline = time.monotonic() + 5
    while r.exists("foo") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert events(p, 1) == [("__keyevent@0__:expired", "foo")]
    p.close()


def test_expired_in_the_background(r):
    # Nobody reads the key: the server finds it expired by itself.
    p = listen(r, "Ex")
    r.psetex("bg", 100, "1")
    assert events(p, 1, timeout=10) == [("__keyevent@0__:expired", "bg")]
    p.close()


def test_new_key_events(r):
    p = listen(r, "En")
    r.set("foo", "1")
    r.set("foo", "2")  # exists: not new
    r.rpush("l", "a")
    r.rpush("l", "b")
    assert keyevents(p, 2) == ["new foo", "new l"]
    assert quiet(p)[0]
    p.close()


def test_new_comes_before_the_command_event(r):
    p = listen(r, "E$n")
    r.set("foo", "1")
    assert keyevents(p, 2) == ["new foo", "set foo"]
    p.close()


def test_keymiss_events(r):
    p = listen(r, "Em")
    r.get("nosuch")
    r.set("foo", "1")
    r.get("foo")
    r.lrange("nolist", 0, -1)
    assert keyevents(p, 2) == ["keymiss nosuch", "keymiss nolist"]
    assert quiet(p)[0]
    p.close()


# ---- transactions and workers -------------------------------------------------

def test_transaction_events_in_order(r):
    p = listen(r, "E$lg")
    tx = r.pipeline(transaction=True)
    tx.set("a", "1")
    tx.rpush("l", "x")
    tx.delete("a")
    tx.execute()
    assert keyevents(p, 3) == ["set a", "rpush l", "del a"]
    p.close()


def test_every_subscriber_on_every_worker(resp_port, r):
    r.config_set("notify-keyspace-events", "E$")
    subs = []
    for _ in range(4):  # consecutive connections: one per worker on Trove
        c = redis.Redis(host="127.0.0.1", port=resp_port)
        ps = c.pubsub()
        ps.subscribe("__keyevent@0__:set")
        assert ps.get_message(timeout=5)["type"] == "subscribe"
        subs.append((c, ps))
    for i in range(20):
        r.set("k%d" % i, "v")
    for c, ps in subs:
        got = []
        deadline = time.monotonic() + 5
        while len(got) < 20 and time.monotonic() < deadline:
            m = ps.get_message(timeout=0.2)
            if m is not None and m["type"] == "message":
                got.append(m["data"].decode())
        assert got == ["k%d" % i for i in range(20)]  # each writer's order kept
        ps.close()
        c.close()


# ---- the memcached port (no peer has this) ------------------------------------

def mc_send(port, data, expect_lines):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(data)
    buf = b""
    while buf.count(b"\r\n") < expect_lines:
        chunk = s.recv(4096)
        assert chunk, buf
        buf += chunk
    s.close()
    return buf


def test_memcached_writes_raise_events(trove, r):
    p = listen(r, "E$gn")
    mc_send(trove.port, b"set k 0 0 1\r\n1\r\nadd k 0 0 1\r\n2\r\nappend k 0 0 1\r\n2\r\n"
            b"prepend k 0 0 1\r\n3\r\nincr k 5\r\ndecr k 1\r\ntouch k 100\r\n"
            b"gat 0 k\r\ndelete k\r\ndelete k\r\n", 12)
    assert keyevents(p, 9) == ["new k", "set k", "append k", "prepend k", "incrby k", "incrby k",
                               "expire k", "persist k", "del k"]
    assert quiet(p)[0]
    p.close()


def test_memcached_set_with_exptime_and_large_value(trove, r):
    p = listen(r, "E$g")
    big = b"x" * 100000  # arrives in several reads: the direct-value path
    mc_send(trove.port, b"set big 0 100 %d\r\n%s\r\nset small 0 100 1\r\nv\r\n" % (len(big), big),
            2)
    assert keyevents(p, 4) == ["set big", "expire big", "set small", "expire small"]
    p.close()


def test_memcached_meta_commands_raise_events(trove, r):
    p = listen(r, "E$gn")
    mc_send(trove.port, b"ms mk 1 T0\r\n5\r\nms mk 1 MA\r\n6\r\nma mk\r\nmg mk T100 v\r\n"
            b"md mk I\r\nmd mk\r\nma nk N0 J7\r\n", 8)
    assert keyevents(p, 8) == ["new mk", "set mk", "append mk", "incrby mk", "expire mk",
                               "del mk", "new nk", "incrby nk"]
    assert quiet(p)[0]
    p.close()


def test_memcached_item_expiry_raises_expired(trove, r):
    p = listen(r, "Ex")
    mc_send(trove.port, b"set mx 0 1 1\r\nv\r\n", 1)
    assert events(p, 1, timeout=10) == [("__keyevent@0__:expired", "mx")]
    p.close()


def test_evicted_events(trove, make_server):
    srv = make_server("-m", "2", "-t", "2")
    rr = redis.Redis(host="127.0.0.1", port=srv.resp_port)
    p = listen(rr, "Ee")
    value = b"v" * 2000
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    for i in range(3000):
        s.sendall(b"set ev%d 0 0 %d noreply\r\n%s\r\n" % (i, len(value), value))
    s.sendall(b"mn\r\n")
    buf = b""
    while not buf.endswith(b"MN\r\n"):
        buf += s.recv(4096)
    s.close()
    got = events(p, 5)
    assert len(got) == 5, got
    for ch, key in got:
        assert ch == "__keyevent@0__:evicted"
        assert key.startswith("ev")
    p.close()
    rr.close()


def test_info_counts_dropped_removal_events(trove, r):
    # Trove's own field (the reporter queue is bounded); 0 when nothing was lost.
    assert r.info("stats")["keyspace_events_dropped"] == 0


def test_move_raises_move_from_and_move_to(resp_port, r):
    p = listen(r, "Egn")
    r.set("mv", "1")
    r.move("mv", 3)
    # new (in db 3, from dbAdd) comes first, then move_from in db 0, move_to in db 3.
    assert events(p, 4) == [("__keyevent@0__:new", "mv"), ("__keyevent@3__:new", "mv"),
                            ("__keyevent@0__:move_from", "mv"), ("__keyevent@3__:move_to", "mv")]
    p.close()
