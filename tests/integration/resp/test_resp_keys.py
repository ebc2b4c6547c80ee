"""Generic key commands, checked against Redis 7 replies."""

import time

import pytest
import redis

from resp_errors import err


def test_del_unlink_exists_touch_type(r):
    r.mset({"a": "1", "b": "2", "c": "3"})
    r.rpush("l", "x")
    r.hset("h", "f", "v")
    r.sadd("s", "m")
    r.zadd("z", {"m": 1})
    assert r.exists("a", "a", "nope") == 2
    assert r.touch("a", "b", "nope") == 2
    assert [r.type(k) for k in ("a", "l", "h", "s", "z", "nope")] == \
        [b"string", b"list", b"hash", b"set", b"zset", b"none"]
    assert r.delete("a", "b", "nope") == 2
    assert r.unlink("c", "l") == 2
    assert r.exists("a", "b", "c", "l") == 0


def test_expire_family(r):
    r.set("k", "v")
    assert r.expire("k", 100) is True
    assert 99 <= r.ttl("k") <= 100
    assert 99000 <= r.pttl("k") <= 100000
    assert r.execute_command("EXPIRE", "k", "50", "GT") == 0
    assert r.execute_command("EXPIRE", "k", "50", "LT") == 1
    assert r.execute_command("EXPIRE", "k", "10", "NX") == 0
    assert r.execute_command("EXPIRE", "k", "10", "XX") == 1
    assert r.persist("k") is True
    assert r.persist("k") is False
    assert r.execute_command("EXPIRE", "k", "10", "GT") == 0
    assert r.execute_command("EXPIRE", "k", "10", "LT") == 1
    assert r.expire("missing", 10) is False
    at = int(time.time()) + 500
    assert r.expireat("k", at)
    assert r.expiretime("k") == at
    assert r.pexpiretime("k") == at * 1000
    assert r.pexpireat("k", (at + 10) * 1000)
    assert r.expiretime("k") == at + 10
    assert r.pexpire("k", 200000)
    assert r.ttl("k") in (199, 200)
    assert r.ttl("missing") == -2
    assert r.pttl("missing") == -2
    assert r.expiretime("missing") == -2
    r.set("p", "v")
    assert r.ttl("p") == -1 and r.expiretime("p") == -1
    err(r.execute_command, "EXPIRE", "p", "10", "NX", "XX",
        match="NX and XX, GT or LT options at the same time are not compatible")
    err(r.execute_command, "EXPIRE", "p", "10", "GT", "LT",
        match="GT and LT options at the same time are not compatible")
    err(r.execute_command, "EXPIRE", "p", "10", "FOO", match="Unsupported option FOO")
    err(r.execute_command, "EXPIRE", "p", "x", match="value is not an integer or out of range")
    err(r.execute_command, "EXPIRE", "p", "9223372036854775807",
        match="invalid expire time in 'expire' command")
    assert r.expire("p", -1) is True
    assert r.exists("p") == 0


def test_expiry_happens(r):
    r.set("k", "v", px=1)
    r.set("k2", "v", ex=1)
    time.sleep(2.1)
    assert r.get("k") is None
    assert r.get("k2") is None


def test_millisecond_expiry(r, resp_port):
    """PX, PEXPIRE and PEXPIREAT keep their milliseconds (PTTL, PEXPIRETIME
    and the moment the key goes), through a rename and a KEEPTTL rewrite."""
    r.set("a", "v", px=300)
    assert 200 < r.pttl("a") <= 300
    r.set("b", "v")
    assert r.pexpire("b", 1700)
    assert 1600 < r.pttl("b") <= 1700
    assert r.ttl("b") == 2  # rounded as Redis: (ms + 500) / 1000
    at = int(time.time() * 1000) // 1000 * 1000 + 60789  # a fraction that rounds up
    assert r.pexpireat("b", at)
    assert r.pexpiretime("b") == at
    assert r.expiretime("b") == (at + 500) // 1000  # rounded to the nearest second
    assert r.rename("b", "c")
    assert r.pexpiretime("c") == at
    r.set("c", "w", keepttl=True)
    assert r.pexpiretime("c") == at
    r.hset("h", "f", "v")
    assert r.pexpire("h", 400)
    assert 300 < r.pttl("h") <= 400
    time.sleep(0.5)
    assert r.get("a") is None
    assert r.exists("h") == 0
    assert r.get("c") == b"w"


def test_rename_family(r):
    r.set("a", "1", ex=100)
    assert r.rename("a", "b")
    assert r.get("b") == b"1" and r.exists("a") == 0
    assert r.ttl("b") > 0
    err(r.rename, "nope", "x", match="no such key")
    r.set("c", "3")
    assert r.renamenx("b", "c") is False
    assert r.renamenx("b", "d") is True
    assert r.rename("d", "d")
    r.rpush("l", "x", "y")
    assert r.rename("l", "l2")
    assert r.lrange("l2", 0, -1) == [b"x", b"y"]


def test_copy_and_move(r):
    r.set("a", "1")
    assert r.copy("a", "b") is True
    assert r.copy("a", "b") is False
    r.set("a", "2")
    assert r.copy("a", "b", replace=True) is True
    assert r.get("b") == b"2"
    assert r.copy("a", "a2", destination_db=3) is True
    r.sadd("s", "x")
    assert r.copy("s", "s2") and r.smembers("s2") == {b"x"}
    r.sadd("s2", "y")
    assert r.smembers("s") == {b"x"}
    err(r.copy, "a", "a", match="source and destination objects are the same")
    assert r.move("a", 1) is True
    assert r.exists("a") == 0
    assert r.move("a", 1) is False
    err(r.move, "b", 0, match="source and destination objects are the same")
    err(r.move, "b", 99, match="DB index is out of range")
    r.execute_command("SELECT", 1)
    assert r.get("a") == b"2"
    r.execute_command("SELECT", 0)


def test_keys_scan_randomkey(r):
    for i in range(50):
        r.set("key:%d" % i, i)
    r.rpush("list:1", "x")
    assert sorted(r.keys("key:1*")) == sorted([b"key:1"] + [b"key:1%d" % i for i in range(10)])
    assert len(r.keys("*")) == 51
    assert r.keys("nomatch*") == []
    seen = set()
    cursor = 0
    while True:
        cursor, keys = r.scan(cursor, match="key:*", count=7)
        seen.update(keys)
        if cursor == 0:
            break
    assert len(seen) == 50
    seen = set(r.scan_iter(_type="list"))
    assert seen == {b"list:1"}
    assert r.randomkey() in set(r.keys("*"))
    err(r.execute_command, "SCAN", "x", match="invalid cursor")
    err(r.execute_command, "SCAN", "0", "COUNT", "0", match="syntax error")
    r.flushall()
    assert r.randomkey() is None


def test_key_patterns(r):
    for k in ("hello", "hallo", "hxllo", "hllo", "heeeello", "h[a]llo"):
        r.set(k, 1)
    assert sorted(r.keys("h?llo")) == [b"hallo", b"hello", b"hxllo"]
    assert sorted(r.keys("h*llo")) == sorted([b"hello", b"hallo", b"hxllo", b"hllo", b"heeeello", b"h[a]llo"])
    assert sorted(r.keys("h[ae]llo")) == [b"hallo", b"hello"]
    assert sorted(r.keys("h[^e]llo")) == [b"hallo", b"hxllo"]
    assert sorted(r.keys("h[a-b]llo")) == [b"hallo"]
    assert r.keys("h\\[a\\]llo") == [b"h[a]llo"]
