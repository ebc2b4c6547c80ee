"""Warm restart (-e FILE, issue 11): item memory in a file, saved on SIGUSR1
and reused by the next start with the same settings.

memcached 1.6.45 is the reference (its t/restart.t): items of every size
come back, an item whose TTL passed while the server was down is gone, a
changed setting starts clean with memcached's "[restart]" messages, an empty
metadata file refuses to start. RESP keys (Trove only) come back as well,
large collections included. memcached refuses a restart in the same second
as the stop, so each downtime here lasts more than a second.
"""

import os
import signal
import time

import pytest

from harness.client import Conn

BIG = 600 * 1024  # past slab_chunk_max (512 KiB): a chunked item


def graceful_stop(srv):
    srv.signal(signal.SIGUSR1)
    assert srv.wait_exit(timeout=30) == 0, srv.log()


def get(c, key):
    """The value of key, or None on a miss."""
    c.send("get %s\r\n" % key)
    line = c.read_until(b"\r\n", timeout=10)
    if line == b"END\r\n":
        return None
    n = int(line.split()[3])
    data = c.read_exact(n + 2, timeout=10)
    assert c.read_until(b"\r\n", timeout=10) == b"END\r\n"
    return data[:-2]


def store(c, key, value, ttl=0, flags=0):
    c.send(b"set %s %d %d %d\r\n" % (key.encode(), flags, ttl, len(value)) + value + b"\r\n")
    assert c.read_until(b"\r\n", timeout=10) == b"STORED\r\n"


def test_items_survive_and_expired_ones_are_gone(make_server, tmp_path):
    mem = str(tmp_path / "mem")
    args = ("-m", "64", "-e", mem)
    srv = make_server(*args)
    c = Conn.to(srv)
    values = {"k%d" % i: os.urandom(1 << (i % 16)) for i in range(300)}
    for k, v in values.items():
        store(c, k, v)
    big = os.urandom(BIG)
    big2 = os.urandom(1000 * 1024)
    store(c, "big", big)
    store(c, "big2", big2, flags=77)
    store(c, "short", b"s", ttl=2)
    store(c, "long", b"l", ttl=300)
    c.call("delete k7\r\n")
    c.send("gets k1\r\n")
    cas_line = c.read_until(b"\r\n", timeout=5)
    c.read_until(b"END\r\n", timeout=5)
    c.close()
    graceful_stop(srv)
    assert os.path.exists(mem + ".meta")
    time.sleep(3)  # "short" expires meanwhile

    srv2 = make_server(*args)
    c = Conn.to(srv2)
    assert get(c, "short") is None
    assert get(c, "long") == b"l"
    assert get(c, "big") == big
    assert get(c, "big2") == big2
    assert get(c, "k7") is None
    for k, v in values.items():
        if k != "k7":
            assert get(c, k) == v, k
    # Flags and CAS are the item's own.
    assert c.rt("gets k1\r\n").startswith(cas_line)
    assert c.rt("mg big2 s f\r\n") == b"HD s%d f77\r\n" % len(big2)
    # TTLs keep counting from before the stop.
    ttl = int(c.rt("mg long t\r\n").split()[1][1:])
    assert 290 <= ttl <= 297
    assert not os.path.exists(mem + ".meta")  # read once (memcached)
    assert c.stat("memory_file", "settings") == mem
    # The memory that expired and deleted items held is usable again.
    for i in range(80):
        store(c, "fill%d" % i, os.urandom(BIG))


def test_setting_mismatch_starts_clean_with_memcacheds_message(make_server, tmp_path):
    mem = str(tmp_path / "mem")
    srv = make_server("-m", "64", "-e", mem)
    c = Conn.to(srv)
    store(c, "k", b"v")
    c.close()
    graceful_stop(srv)
    time.sleep(1.1)
    srv2 = make_server("-m", "64", "-C", "-e", mem)  # CAS off
    c = Conn.to(srv2)
    assert get(c, "k") is None
    log = srv2.log()
    assert "[restart] restart incompatible due to setting for [use_cas] [old value: true]" in log
    assert "[restart] missing some metadata lines" in log
    assert "[restart] failed to validate metadata, starting with a clean cache" in log
    store(c, "k2", b"v2")
    assert get(c, "k2") == b"v2"


def test_new_file_starts_empty_and_a_plain_stop_saves_nothing(make_server, tmp_path):
    mem = str(tmp_path / "mem")
    srv = make_server("-e", mem)
    assert "[restart] no metadata save file, starting with a clean cache" in srv.log()
    c = Conn.to(srv)
    store(c, "k", b"v")
    c.close()
    assert srv.stop() == 0  # SIGTERM: no save
    assert not os.path.exists(mem + ".meta")
    srv2 = make_server("-e", mem)
    assert get(Conn.to(srv2), "k") is None


def test_empty_metadata_file_refuses_to_start(tmp_path):
    from harness import server as hserver
    mem = str(tmp_path / "mem")
    open(mem + ".meta", "w").close()
    with pytest.raises(hserver.ServerError) as e:
        hserver.Server(["-e", mem])
    assert "Failed to read a tag from metadata file" in str(e.value)


def test_sigusr1_without_e_stops_gracefully(make_server):
    srv = make_server()
    graceful_stop(srv)
    assert "Gracefully stopping" in srv.log()


@pytest.mark.trove_only
def test_resp_keys_and_large_collections_survive(make_server, tmp_path):
    redis = pytest.importorskip("redis")
    mem = str(tmp_path / "mem")
    args = ("-m", "64", "-e", mem)
    srv = make_server(*args)
    r = redis.Redis(port=srv.resp_port)
    r.set("s", "hello")
    r.set("sx", "bye", ex=2)
    r.set("sp", "later", px=300000)
    r.hset("hsmall", mapping={"a": "1", "b": "2"})
    big_hash = {("f%d" % i).encode(): os.urandom(i % 50) for i in range(3000)}
    r.hset("hbig", mapping=big_hash)
    big_list = [("e%d" % i).encode() for i in range(10000)]
    r.rpush("lbig", *big_list)
    big_zset = {("m%d" % i).encode(): i * 0.5 - 100 for i in range(2000)}
    r.zadd("zbig", big_zset)
    big_set = {("x%d" % i).encode() for i in range(1500)}
    r.sadd("sbig", *big_set)
    r.sadd("iset", 3, 1, 2)
    r.expire("hbig", 600)
    r.select(3)
    r.set("db3", "three")
    r.select(0)
    enc = {k: r.object("encoding", k) for k in ("hbig", "lbig", "zbig", "sbig", "iset", "hsmall")}
    r.close()
    graceful_stop(srv)
    time.sleep(3)  # "sx" expires meanwhile

    srv2 = make_server(*args)
    r = redis.Redis(port=srv2.resp_port)
    assert r.get("s") == b"hello"
    assert r.get("sx") is None
    assert r.get("sp") == b"later"
    assert 290000 <= r.pttl("sp") <= 297500
    assert r.hgetall("hsmall") == {b"a": b"1", b"b": b"2"}
    assert r.hgetall("hbig") == big_hash
    assert 590 <= r.ttl("hbig") <= 597
    assert r.lrange("lbig", 0, -1) == big_list
    assert dict(r.zrange("zbig", 0, -1, withscores=True)) == big_zset
    assert r.zrange("zbig", 0, 2) == [b"m0", b"m1", b"m2"]
    assert r.smembers("sbig") == big_set
    assert r.smembers("iset") == {b"1", b"2", b"3"}
    assert {k: r.object("encoding", k) for k in enc} == enc
    r.select(3)
    assert r.get("db3") == b"three"
    r.select(0)
    # Collections keep working after the restart.
    r.hset("hbig", "new", "v")
    assert r.hlen("hbig") == len(big_hash) + 1
    r.lpush("lbig", "head")
    assert r.lindex("lbig", 0) == b"head"
    assert r.dbsize() == 8  # sx expired; db3 is another database
