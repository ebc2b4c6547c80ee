"""List and hash commands, checked against Redis 7 replies."""

import pytest
import redis

from resp_errors import err

WT = "WRONGTYPE Operation against a key holding the wrong kind of value"


def test_push_pop_range(r):
    assert r.rpush("l", "a", "b", "c") == 3
    assert r.lpush("l", "z") == 4
    assert r.lrange("l", 0, -1) == [b"z", b"a", b"b", b"c"]
    assert r.lrange("l", -2, 100) == [b"b", b"c"]
    assert r.lrange("l", 3, 1) == []
    assert r.lrange("nope", 0, -1) == []
    assert r.llen("l") == 4
    assert r.lpushx("nope", "x") == 0 and r.rpushx("nope", "x") == 0
    assert r.rpushx("l", "d") == 5
    assert r.lpop("l") == b"z"
    assert r.rpop("l") == b"d"
    assert r.lpop("l", 2) == [b"a", b"b"]
    assert r.rpop("l", 5) == [b"c"]
    assert r.exists("l") == 0
    assert r.lpop("l") is None
    assert r.lpop("l", 2) is None
    r.rpush("l", "x")
    err(r.lpop, "l", -1, match="value is out of range, must be positive")
    r.set("s", "v")
    err(r.rpush, "s", "x", match=WT)


def test_lindex_lset_linsert_lrem_ltrim(r):
    r.rpush("l", "a", "b", "c", "b", "a")
    assert r.lindex("l", 0) == b"a" and r.lindex("l", -1) == b"a" and r.lindex("l", 9) is None
    assert r.lset("l", 1, "B")
    err(r.lset, "l", 9, "x", match="index out of range")
    err(r.lset, "nope", 0, "x", match="no such key")
    assert r.linsert("l", "before", "c", "C") == 6
    assert r.linsert("l", "after", "c", "D") == 7
    assert r.linsert("l", "after", "zz", "D") == -1
    assert r.linsert("nope", "after", "c", "D") == 0
    err(r.execute_command, "LINSERT", "l", "middle", "c", "x", match="syntax error")
    assert r.lrange("l", 0, -1) == [b"a", b"B", b"C", b"c", b"D", b"b", b"a"]
    assert r.lrem("l", -1, "a") == 1
    assert r.lrem("l", 0, "zz") == 0
    assert r.lrange("l", 0, -1) == [b"a", b"B", b"C", b"c", b"D", b"b"]
    assert r.ltrim("l", 1, -2)
    assert r.lrange("l", 0, -1) == [b"B", b"C", b"c", b"D"]
    assert r.ltrim("l", 5, 10)
    assert r.exists("l") == 0


def test_lpos(r):
    r.rpush("l", "a", "b", "c", "1", "2", "3", "c", "c")
    assert r.lpos("l", "c") == 2
    assert r.lpos("l", "c", rank=2) == 6
    assert r.lpos("l", "c", rank=-1) == 7
    assert r.lpos("l", "c", count=0) == [2, 6, 7]
    assert r.lpos("l", "c", count=2, rank=-1) == [7, 6]
    assert r.lpos("l", "c", maxlen=2) is None
    assert r.lpos("l", "zz") is None
    err(r.lpos, "l", "c", 0, match="RANK can't be zero: use 1 to start from the first match, "
        "2 from the second ... or use negative to start from the end of the list")
    err(r.execute_command, "LPOS", "l", "c", "COUNT", "-1", match="COUNT can't be negative")


def test_lmove_rpoplpush_lmpop(r):
    r.rpush("a", "1", "2", "3")
    assert r.lmove("a", "b", "LEFT", "RIGHT") == b"1"
    assert r.rpoplpush("a", "b") == b"3"
    assert r.lrange("b", 0, -1) == [b"3", b"1"]
    assert r.lmove("a", "a", "LEFT", "RIGHT") == b"2"
    assert r.lmove("nope", "b", "LEFT", "LEFT") is None
    err(r.execute_command, "LMOVE", "a", "b", "UP", "LEFT", match="syntax error")
    assert r.execute_command("LMPOP", 2, "nope", "b", "LEFT", "COUNT", 5) == [b"b", [b"3", b"1"]]
    assert r.execute_command("LMPOP", 1, "b", "LEFT") is None
    err(r.execute_command, "LMPOP", 0, "b", "LEFT", match="numkeys should be greater than 0")
    r.rpush("c", "x")
    err(r.execute_command, "LMPOP", 1, "c", "LEFT", "COUNT", 0, match="count should be greater than 0")


def test_hash_basics(r):
    assert r.hset("h", mapping={"a": "1", "b": "2"}) == 2
    assert r.hset("h", "a", "9") == 0
    assert r.hget("h", "a") == b"9"
    assert r.hget("h", "zz") is None and r.hget("nope", "a") is None
    assert r.hsetnx("h", "a", "x") == 0 and r.hsetnx("h", "c", "3") == 1
    assert r.hmset("h", {"d": "4"})
    assert r.hmget("h", "a", "zz", "d") == [b"9", None, b"4"]
    assert r.hlen("h") == 4 and r.hlen("nope") == 0
    assert r.hexists("h", "a") and not r.hexists("h", "zz")
    assert r.hstrlen("h", "a") == 1 and r.hstrlen("h", "zz") == 0
    assert sorted(r.hkeys("h")) == [b"a", b"b", b"c", b"d"]
    assert sorted(r.hvals("h")) == [b"2", b"3", b"4", b"9"]
    assert r.hgetall("h") == {b"a": b"9", b"b": b"2", b"c": b"3", b"d": b"4"}
    assert r.hgetall("nope") == {}
    assert r.hdel("h", "a", "b", "zz") == 2
    assert r.hdel("h", "c", "d") == 2
    assert r.exists("h") == 0
    err(r.execute_command, "HSET", "h", "a", match="wrong number of arguments for 'hset' command")
    r.set("s", "v")
    err(r.hget, "s", "a", match=WT)


def test_hincr(r):
    assert r.hincrby("h", "n", 5) == 5
    assert r.hincrby("h", "n", -10) == -5
    r.hset("h", "s", "abc")
    err(r.hincrby, "h", "s", 1, match="hash value is not an integer")
    r.hset("h", "m", "9223372036854775807")
    err(r.hincrby, "h", "m", 1, match="increment or decrement would overflow")
    assert r.hincrbyfloat("h", "f", 10.5) == 10.5
    assert r.hincrbyfloat("h", "f", 0.1) == 10.6
    assert r.hget("h", "f") == b"10.6"
    err(r.hincrbyfloat, "h", "s", 1, match="hash value is not a float")


def test_hrandfield_hscan(r):
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    assert r.hrandfield("h") in (b"a", b"b", b"c")
    assert sorted(r.hrandfield("h", 5)) == [b"a", b"b", b"c"]
    assert len(r.hrandfield("h", -5)) == 5
    pairs = r.hrandfield("h", 2, withvalues=True)
    assert len(pairs) == 4
    assert r.hrandfield("nope") is None
    assert r.hrandfield("nope", 2) == []
    cur, got = r.hscan("h", 0, match="[ab]")
    assert cur == 0 and got == {b"a": b"1", b"b": b"2"}
