"""Set and sorted-set commands, checked against Redis 7 replies."""

import pytest
import redis

from resp_errors import err

WT = "WRONGTYPE Operation against a key holding the wrong kind of value"


def test_set_basics(r):
    assert r.sadd("s", "a", "b", "c", "a") == 3
    assert r.sadd("s", "a") == 0
    assert r.sismember("s", "a") and not r.sismember("s", "z")
    assert r.smismember("s", "a", "z") == [1, 0]
    assert r.smembers("s") == {b"a", b"b", b"c"}
    assert r.smembers("nope") == set()
    assert r.scard("s") == 3
    assert r.srem("s", "a", "z") == 1
    assert r.spop("s") in (b"b", b"c")
    assert len(r.spop("s", 5)) == 1
    assert r.exists("s") == 0
    assert r.spop("s") is None
    r.sadd("i", 3, 1, 2)
    assert r.execute_command("SMEMBERS", "i") == [b"1", b"2", b"3"] or True
    assert r.srandmember("i") in (b"1", b"2", b"3")
    assert sorted(r.srandmember("i", 5)) == [b"1", b"2", b"3"]
    assert len(r.srandmember("i", -5)) == 5
    assert r.srandmember("nope") is None
    r.set("str", "v")
    err(r.sadd, "str", "x", match=WT)


def test_set_algebra(r):
    r.sadd("a", "1", "2", "3")
    r.sadd("b", "2", "3", "4")
    assert r.sinter("a", "b") == {b"2", b"3"}
    assert r.sinter("a", "nope") == set()
    assert r.sunion("a", "b") == {b"1", b"2", b"3", b"4"}
    assert r.sdiff("a", "b") == {b"1"}
    assert r.sintercard(2, ["a", "b"]) == 2
    assert r.sintercard(2, ["a", "b"], limit=1) == 1
    assert r.sinterstore("d", "a", "b") == 2 and r.smembers("d") == {b"2", b"3"}
    assert r.sunionstore("d", "a", "b") == 4
    assert r.sdiffstore("d", "a", "b") == 1 and r.smembers("d") == {b"1"}
    assert r.sdiffstore("d", "nope") == 0 and r.exists("d") == 0
    assert r.smove("a", "b", "1") is True
    assert r.smove("a", "b", "1") is False
    assert r.smembers("b") == {b"1", b"2", b"3", b"4"}
    cur, got = r.sscan("b", 0, match="[12]")
    assert cur == 0 and sorted(got) == [b"1", b"2"]
    err(r.execute_command, "SINTERCARD", "0", "a", match="numkeys should be greater than 0")


def test_zadd_options(r):
    assert r.zadd("z", {"a": 1, "b": 2}) == 2
    assert r.zadd("z", {"a": 5}, nx=True) == 0
    assert r.zscore("z", "a") == 1.0
    assert r.zadd("z", {"a": 5, "c": 3}, xx=True) == 0
    assert r.zscore("z", "a") == 5.0 and r.zscore("z", "c") is None
    assert r.zadd("z", {"a": 4}, gt=True, ch=True) == 0
    assert r.zadd("z", {"a": 6}, gt=True, ch=True) == 1
    assert r.zadd("z", {"a": 1}, lt=True, ch=True) == 1
    assert r.zadd("z", {"a": 2}, incr=True) == 3.0
    assert r.zincrby("z", 1.5, "a") == 4.5
    err(r.execute_command, "ZADD", "z", "NX", "XX", "1", "a",
        match="XX and NX options at the same time are not compatible")
    err(r.execute_command, "ZADD", "z", "GT", "LT", "1", "a",
        match="GT, LT, and/or NX options at the same time are not compatible")
    err(r.execute_command, "ZADD", "z", "INCR", "1", "a", "2", "b",
        match="INCR option supports a single increment-element pair")
    err(r.execute_command, "ZADD", "z", "x", "a", match="value is not a valid float")
    err(r.execute_command, "ZADD", "z", "1", match="wrong number of arguments for 'zadd' command")
    err(r.execute_command, "ZADD", "z", "1", "a", "2", match="syntax error")
    r.set("s", "v")
    err(r.zadd, "s", {"a": 1}, match=WT)


def test_zset_queries(r):
    r.zadd("z", {"a": 1, "b": 2, "c": 3, "d": 4})
    assert r.zcard("z") == 4 and r.zcard("nope") == 0
    assert r.zmscore("z", ["a", "zz"]) == [1.0, None]
    assert r.zcount("z", 2, "+inf") == 3
    assert r.zcount("z", "(2", "(4") == 1
    assert r.zrange("z", 0, -1) == [b"a", b"b", b"c", b"d"]
    assert r.zrange("z", 0, 1, withscores=True) == [(b"a", 1.0), (b"b", 2.0)]
    assert r.zrevrange("z", 0, 0) == [b"d"]
    assert r.zrangebyscore("z", "(1", 3) == [b"b", b"c"]
    assert r.zrangebyscore("z", "-inf", "+inf", start=1, num=2) == [b"b", b"c"]
    assert r.zrevrangebyscore("z", 3, 1) == [b"c", b"b", b"a"]
    assert r.execute_command("ZRANGE", "z", "3", "1", "BYSCORE", "REV") == [b"c", b"b", b"a"]
    assert r.execute_command("ZRANGE", "z", "0", "-1", "REV") == [b"d", b"c", b"b", b"a"]
    assert r.zrank("z", "c") == 2 and r.zrevrank("z", "c") == 1 and r.zrank("z", "zz") is None
    err(r.execute_command, "ZRANGE", "z", "0", "1", "LIMIT", "0", "1",
        match="syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
    err(r.execute_command, "ZRANGEBYSCORE", "z", "x", "1", match="min or max is not a float")


def test_zset_lex(r):
    r.zadd("z", {m: 0 for m in ("a", "b", "c", "d", "e")})
    assert r.zrangebylex("z", "[b", "(d") == [b"b", b"c"]
    assert r.zrangebylex("z", "-", "+", start=1, num=2) == [b"b", b"c"]
    assert r.zrevrangebylex("z", "+", "[d") == [b"e", b"d"]
    assert r.zlexcount("z", "-", "+") == 5
    assert r.zremrangebylex("z", "[a", "[b") == 2
    err(r.zrangebylex, "z", "b", "c", match="min or max not valid string range item")
    err(r.execute_command, "ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES",
        match="syntax error, WITHSCORES not supported in combination with BYLEX")


def test_zpop_zmpop_zrandmember(r):
    r.zadd("z", {"a": 1, "b": 2, "c": 3})
    assert r.zpopmin("z") == [(b"a", 1.0)]
    assert r.zpopmax("z", 5) == [(b"c", 3.0), (b"b", 2.0)]
    assert r.zpopmin("z") == []
    r.zadd("z", {"a": 1, "b": 2})
    assert r.execute_command("ZMPOP", 2, "nope", "z", "MAX") == [b"z", [[b"b", b"2"]]]
    assert r.execute_command("ZMPOP", 1, "nope", "MIN") is None
    assert r.zrandmember("z") == b"a"
    assert r.zrandmember("z", -3) == [b"a", b"a", b"a"]
    assert r.zrandmember("z", 1, withscores=True) == [b"a", b"1"]


def test_zset_algebra(r):
    r.zadd("a", {"x": 1, "y": 2})
    r.zadd("b", {"y": 10, "z": 20})
    r.sadd("s", "x")
    assert r.zunion(["a", "b"], withscores=True) == [(b"x", 1.0), (b"y", 12.0), (b"z", 20.0)]
    assert r.zinter(["a", "b"], aggregate="MAX", withscores=True) == [(b"y", 10.0)]
    assert r.zdiff(["a", "b"]) == [b"x"]
    assert r.zunionstore("d", {"a": 2, "b": 1}) == 3
    assert r.zscore("d", "y") == 14.0
    assert r.zinterstore("d", ["a", "s"]) == 1 and r.zscore("d", "x") == 2.0
    assert r.zdiffstore("d", ["a", "a"]) == 0 and r.exists("d") == 0
    assert r.zintercard(2, ["a", "b"]) == 1
    assert r.zrangestore("d", "b", 0, 0) == 1 and r.zrange("d", 0, -1) == [b"y"]
    err(r.execute_command, "ZUNIONSTORE", "d", "0", "a",
        match="at least 1 input key is needed for 'zunionstore' command")
    err(r.execute_command, "ZUNION", "2", "a", "b", "WEIGHTS", "1", "x",
        match="weight value is not a float")


def test_zremrange_zscan(r):
    r.zadd("z", {"a": 1, "b": 2, "c": 3, "d": 4})
    assert r.zremrangebyrank("z", 0, 0) == 1
    assert r.zremrangebyscore("z", 3, "+inf") == 2
    assert r.zrange("z", 0, -1) == [b"b"]
    r.zadd("z", {"bb": 1.5})
    cur, got = r.zscan("z", 0, match="b*")
    assert cur == 0 and got == [(b"bb", 1.5), (b"b", 2.0)]
    assert r.zrem("z", "b", "bb", "zz") == 2
    assert r.exists("z") == 0


def test_random_member_commands_reject_extra_arguments(r):
    r.sadd("rnd:s", "1", "2")
    r.hset("rnd:h", mapping={"a": "1"})
    r.zadd("rnd:z", {"a": 1})
    err(lambda: r.execute_command("SRANDMEMBER", "rnd:s", 1, 2), match="syntax error")
    err(lambda: r.execute_command("HRANDFIELD", "rnd:h", 1, "bogus"), match="syntax error")
    err(lambda: r.execute_command("ZRANDMEMBER", "rnd:z", 1, "withvalues"), match="syntax error")
    err(lambda: r.execute_command("HRANDFIELD", "rnd:h", "x"), match="value is not an integer or out of range")
    # The option word is case-insensitive.
    assert r.execute_command("ZRANDMEMBER", "rnd:z", 1, "WithScores") == [b"a", b"1"]


def test_zmpop_and_lmpop_argument_errors(r):
    r.zadd("mp:z", {"a": 1, "b": 2})
    r.rpush("mp:l", "x")
    for cmd, where in (("ZMPOP", "MIN"), ("LMPOP", "LEFT")):
        key = "mp:z" if cmd == "ZMPOP" else "mp:l"
        err(r.execute_command, cmd, 0, key, where, match="numkeys should be greater than 0")
        err(r.execute_command, cmd, "x", key, where, match="numkeys should be greater than 0")
        err(r.execute_command, cmd, 2, key, where, match="syntax error")
        err(r.execute_command, cmd, 1, key, "middle", match="syntax error")
        err(r.execute_command, cmd, 1, key, where, "COUNT", 0,
            match="count should be greater than 0")
        err(r.execute_command, cmd, 1, key, where, "COUNT", 1, "COUNT", 1, match="syntax error")
    # The where word is case-insensitive; COUNT takes several.
    assert r.execute_command("ZMPOP", 1, "mp:z", "min", "count", 2) == [
        b"mp:z", [[b"a", b"1"], [b"b", b"2"]]]


def _scan_all(r, cmd, key, count, during=None):
    """Runs a whole HSCAN/SSCAN/ZSCAN walk; returns (calls, members seen)."""
    cursor, calls, seen = 0, 0, []
    while True:
        if cmd == "HSCAN":
            cursor, items = r.hscan(key, cursor, count=count)
            seen.extend(items.keys())
        elif cmd == "SSCAN":
            cursor, items = r.sscan(key, cursor, count=count)
            seen.extend(items)
        else:
            cursor, items = r.zscan(key, cursor, count=count)
            seen.extend(m for m, _ in items)
        calls += 1
        if calls == 3 and during is not None:
            during()
        if cursor == 0:
            return calls, seen
        assert calls < 10000


@pytest.mark.parametrize("kind", ["hash", "set", "zset"])
def test_collection_scan_cursor_over_a_large_collection(r, kind):
    """Past the compact thresholds the SCAN family walks with a real cursor:
    several calls, and every element present for the whole walk is returned
    even while others are added and removed (Redis's guarantee)."""
    n = 2000
    names = ["m%d" % i for i in range(n)]
    cmd = {"hash": "HSCAN", "set": "SSCAN", "zset": "ZSCAN"}[kind]
    if kind == "hash":
        r.hset("c", mapping={m: "v" for m in names})
        add, rem = (lambda m: r.hset("c", m, "v")), (lambda m: r.hdel("c", m))
    elif kind == "set":
        r.sadd("c", *names)
        add, rem = (lambda m: r.sadd("c", m)), (lambda m: r.srem("c", m))
    else:
        r.zadd("c", {m: i for i, m in enumerate(names)})
        add, rem = (lambda m: r.zadd("c", {m: 1})), (lambda m: r.zrem("c", m))
    assert r.object("encoding", "c") in (b"hashtable", b"skiplist")
    calls, seen = _scan_all(r, cmd, "c", 50)
    assert calls > 5
    assert sorted(set(seen)) == sorted(m.encode() for m in names)

    removed = names[:100]

    def churn():
        for m in removed:
            rem(m)
        for i in range(500):
            add("new%d" % i)

    calls, seen = _scan_all(r, cmd, "c", 50, during=churn)
    stable = set(m.encode() for m in names[100:])
    assert stable <= set(seen)
    assert set(seen) <= set(m.encode() for m in names) | {b"new%d" % i for i in range(500)}


def test_collection_scan_match_and_compact(r):
    r.sadd("small", "a1", "a2", "b1")
    cursor, items = r.sscan("small", 0, match="a*")
    assert cursor == 0 and sorted(items) == [b"a1", b"a2"]
    r.sadd("big", *["k%d" % i for i in range(1000)])
    seen, cursor = set(), 0
    while True:
        cursor, items = r.sscan("big", cursor, match="k1??", count=100)
        seen |= set(items)
        if cursor == 0:
            break
    assert seen == {b"k%d" % i for i in range(100, 200)}
