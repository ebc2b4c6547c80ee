"""Keyspace replies that Redis's own suite checks (keyspace.tcl, type/zset.tcl,
type/list.tcl) and Trove got wrong or that guard a suite failure:

- ZUNION/ZINTER/ZDIFF (and STORE, ZINTERCARD) over sets and sorted sets:
  Redis's order of checks and of aggregation;
- KEYS with long nested patterns: Redis's nesting limit of 1000 star runs;
- MOVE from database 9, the suite's database;
- the dirty counter (INFO persistence rdb_changes_since_last_save).

Every test passes against redis-server too (TROVE_TEST_TARGET=redis), except
where Redis 7.0.15 predates the newer behaviour (skipped there).
"""

import os

import pytest
import redis

from blocked_clients import command, wait_blocked

ON_REDIS = os.environ.get("TROVE_TEST_TARGET", "").strip().lower() == "redis"
newer_than_7_0 = pytest.mark.skipif(ON_REDIS, reason="Redis 7.2+ behaviour; 7.0.15 differs")


# --- sorted-set algebra over sets and sorted sets ---

def _flat(reply):
    """A WITHSCORES reply as [member, score, ...] with float scores, whether
    redis-py paired it [(member, score), ...] or left it flat."""
    if reply and isinstance(reply[0], tuple):
        reply = [x for pair in reply for x in pair]
    return [float(x) if i % 2 else x for i, x in enumerate(reply)]


def test_zset_algebra_acts_on_set_and_zset(rd):
    # zset.tcl, "zunionInterDiffGenericCommand acts on SET and ZSET", without
    # its encodings: one input small and one big, each way round.
    rd.sadd("set_small{t}", 1, 2, 3)
    rd.sadd("set_big{t}", 1, 2, 3, 4, 5)
    rd.zadd("zset_small{t}", {"1": 1, "2": 2, "3": 3})
    rd.zadd("zset_big{t}", {"1": 1, "2": 2, "3": 3, "4": 4, "5": 5})
    for small_or_big, set_key, zset_key in (("small", "set_small{t}", "zset_big{t}"),
                                            ("big", "set_big{t}", "zset_small{t}")):
        assert sorted(rd.zunion([set_key, zset_key])) == ["1", "2", "3", "4", "5"]
        assert rd.zunionstore("zset_dest{t}", [set_key, zset_key]) == 5
        assert sorted(rd.zinter([set_key, zset_key])) == ["1", "2", "3"]
        assert rd.zinterstore("zset_dest{t}", [set_key, zset_key]) == 3
        assert rd.execute_command("ZINTERCARD", 2, set_key, zset_key) == 3
        if small_or_big == "small":
            assert rd.zdiff([set_key, zset_key]) == []
            assert rd.zdiffstore("zset_dest{t}", [set_key, zset_key]) == 0
            assert rd.exists("zset_dest{t}") == 0
        else:
            assert sorted(rd.zdiff([set_key, zset_key])) == ["4", "5"]
            assert rd.zdiffstore("zset_dest{t}", [set_key, zset_key]) == 2
            assert rd.zrange("zset_dest{t}", 0, -1, withscores=True) == [("4", 1.0), ("5", 1.0)]


def test_zset_algebra_scores_set_members_one_with_weights_and_aggregate(rd):
    rd.sadd("seta{t}", "a", "b", "c")
    rd.zadd("zsetb{t}", {"b": 1, "c": 2, "d": 3})
    assert rd.zunionstore("zsetc{t}", {"seta{t}": 2, "zsetb{t}": 3}) == 4
    assert _flat(rd.zrange("zsetc{t}", 0, -1, withscores=True)) == \
        ["a", 2.0, "b", 5.0, "c", 8.0, "d", 9.0]
    assert rd.zinterstore("zsetc{t}", {"seta{t}": 2, "zsetb{t}": 3}) == 2
    assert _flat(rd.zrange("zsetc{t}", 0, -1, withscores=True)) == ["b", 5.0, "c", 8.0]
    assert _flat(rd.zunion(["seta{t}", "zsetb{t}"], aggregate="MIN", withscores=True)) == \
        ["a", 1.0, "b", 1.0, "c", 1.0, "d", 3.0]
    assert _flat(rd.zinter({"zsetb{t}": 1, "seta{t}": 5}, aggregate="MAX", withscores=True)) == \
        ["b", 5.0, "c", 5.0]
    assert _flat(rd.zdiff(["seta{t}", "zsetb{t}"], withscores=True)) == ["a", 1.0]
    assert rd.zdiffstore("zsetc{t}", ["seta{t}", "zsetb{t}"]) == 1
    assert _flat(rd.zrange("zsetc{t}", 0, -1, withscores=True)) == ["a", 1.0]
    # zset.tcl, "ZINTERSTORE #516 regression, mixed sets and ziplist zsets".
    rd.sadd("one{t}", 100, 101, 102, 103)
    rd.sadd("two{t}", 100, 200, 201, 202)
    rd.zadd("three{t}", {"500": 1, "501": 1, "502": 1, "503": 1, "100": 1})
    assert rd.zinterstore("to_here{t}", {"one{t}": 0, "two{t}": 0, "three{t}": 1}) == 1
    assert rd.zrange("to_here{t}", 0, -1) == ["100"]


def test_zunion_and_zinter_aggregate_from_the_smallest_input(rd):
    # Redis sorts the inputs by size before it aggregates: inf + -inf gives
    # NaN, which SUM makes 0, and the order decides where that happens.
    rd.zadd("za{t}", {"x": float("inf"), "p": 0, "q": 0})
    rd.zadd("zb{t}", {"x": float("-inf")})
    rd.zadd("zc{t}", {"x": 5, "r": 0})
    for keys in (["za{t}", "zb{t}", "zc{t}"], ["zc{t}", "za{t}", "zb{t}"]):
        assert rd.zscore("zu{t}", "x") is None
        assert dict(rd.zunion(keys, withscores=True))["x"] == 0.0
        assert rd.zinter(keys, withscores=True) == [("x", 0.0)]
        rd.zunionstore("zu{t}", keys)
        assert rd.zscore("zu{t}", "x") == 0.0
        rd.delete("zu{t}")


def test_zinter_weighted_nan_of_a_later_input_is_aggregated_as_redis(rd):
    # The smallest input's weighted score has its NaN made 0; a later
    # input's weighted NaN (inf * 0) goes to the aggregate: SUM gives 0, MIN
    # and MAX keep the score so far.
    rd.zadd("na{t}", {"x": 3})
    rd.zadd("nb{t}", {"x": float("inf"), "y": 0})
    assert rd.zinter({"na{t}": 1, "nb{t}": 0}, withscores=True) == [("x", 0.0)]
    assert rd.zinter({"nb{t}": 0, "na{t}": 1}, withscores=True) == [("x", 0.0)]
    assert rd.zinter({"na{t}": 1, "nb{t}": 0}, aggregate="MIN", withscores=True) == [("x", 3.0)]
    assert rd.zinter({"na{t}": 1, "nb{t}": 0}, aggregate="MAX", withscores=True) == [("x", 3.0)]
    assert _flat(rd.zunion({"na{t}": 1, "nb{t}": 0}, withscores=True)) == ["y", 0.0, "x", 3.0]


def test_zset_algebra_checks_key_types_before_options(r):
    # Redis looks the keys up (WRONGTYPE) before it reads WEIGHTS, AGGREGATE
    # or LIMIT, so a wrong key wins over a bad option.
    r.set("str{t}", "v")
    r.zadd("zz{t}", {"a": 1})
    cases = [
        ("ZUNION", 2, "str{t}", "zz{t}", "WEIGHTS", "x"),
        ("ZUNION", 2, "zz{t}", "str{t}", "FOO"),
        ("ZINTERSTORE", "d{t}", 2, "zz{t}", "str{t}", "AGGREGATE", "foo"),
        ("ZDIFF", 2, "zz{t}", "str{t}", "WITHSCORES", "extra"),
        ("ZINTERCARD", 2, "zz{t}", "str{t}", "LIMIT", "-1"),
    ]
    for args in cases:
        with pytest.raises(redis.exceptions.ResponseError, match="^WRONGTYPE"):
            r.execute_command(*args)
    with pytest.raises(redis.exceptions.ResponseError, match="weight value is not a float"):
        r.execute_command("ZUNION", 2, "zz{t}", "nokey{t}", "WEIGHTS", "1", "x")
    with pytest.raises(redis.exceptions.ResponseError, match="LIMIT can't be negative"):
        r.execute_command("ZINTERCARD", 1, "zz{t}", "LIMIT", "-1")
    with pytest.raises(redis.exceptions.ResponseError, match="syntax error"):
        r.execute_command("ZINTERCARD", 1, "zz{t}", "WEIGHTS", "1")
    assert r.execute_command("ZINTERCARD", 1, "zz{t}", "LIMIT", "0") == 1


def test_zintercard_stops_at_limit(r):
    r.sadd("s1{t}", *range(100))
    r.zadd("z1{t}", {str(i): i for i in range(50, 150)})
    assert r.execute_command("ZINTERCARD", 2, "s1{t}", "z1{t}") == 50
    assert r.execute_command("ZINTERCARD", 2, "s1{t}", "z1{t}", "LIMIT", 7) == 7
    assert r.execute_command("ZINTERCARD", 2, "s1{t}", "z1{t}", "LIMIT", 500) == 50


# --- glob patterns: KEYS ---

def test_keys_very_long_nested_pattern_finds_nothing(r):
    # keyspace.tcl, "Regression for pattern matching very long nested loops".
    r.set("a" * 50000, 1)
    assert r.keys("*?" * 50000) == []


def test_keys_long_nested_pattern_finds_nothing(r):
    # keyspace.tcl, "Regression for pattern matching long nested loops".
    r.set("a" * 40, 1)
    assert r.keys("a*" * 20 + "b") == []


def test_keys_star_runs_past_redis_nesting_limit_match_nothing(r):
    # Redis gives up past 1000 nested star runs; a trailing run still
    # matches. Without the limit, every pattern below would match the
    # 3000-byte key.
    keys = sorted([b"a" * 1001, b"a" * 3000])
    for k in keys:
        r.set(k, 1)
    assert sorted(r.keys("*a" * 1000 + "*")) == keys
    assert sorted(r.keys("*a" * 1000 + "[a]")) == keys
    assert sorted(r.keys("?*" * 1001)) == keys
    assert r.keys("*a" * 1001) == []
    assert r.keys("?*" * 1000 + "?*?") == []


# --- MOVE from database 9 ---

def test_move_basic_usage_from_db_9(raw, r):
    # keyspace.tcl, "MOVE basic usage", in the suite's database 9. The suite
    # itself reports it failed on Trove only because an earlier test (COPY of
    # a stream) stops before its FLUSHDB: XADD is unknown to Trove, so keys of
    # the COPY tests stay in database 9 and DBSIZE counts them.
    c = raw()
    assert c.cmd("SELECT", "9") == b"+OK\r\n"
    assert c.cmd("SET", "mykey", "foobar") == b"+OK\r\n"
    assert c.cmd("MOVE", "mykey", "10") == b":1\r\n"
    res = [c.cmd("EXISTS", "mykey"), c.cmd("DBSIZE")]
    assert c.cmd("SELECT", "10") == b"+OK\r\n"
    res += [c.cmd("GET", "mykey"), c.cmd("DBSIZE")]
    assert c.cmd("SELECT", "9") == b"+OK\r\n"
    assert res == [b":0\r\n", b":0\r\n", b"$6\r\nfoobar\r\n", b":1\r\n"]
    # A key of that name already in database 10: nothing moves.
    assert c.cmd("SET", "mykey", "other") == b"+OK\r\n"
    assert c.cmd("MOVE", "mykey", "10") == b":0\r\n"
    assert c.cmd("DBSIZE") == b":1\r\n"
    assert c.cmd("MOVE", "mykey", "9").startswith(b"-ERR source and destination")


# --- the dirty counter ---

def _dirty(r):
    return int(r.info("persistence")["rdb_changes_since_last_save"])


def _changes(r, *args):
    before = _dirty(r)
    try:
        r.execute_command(*args)
    except redis.exceptions.ResponseError:
        pass
    return _dirty(r) - before


def test_writes_increase_dirty_by_their_changes(r):
    assert _changes(r, "LPUSH", "l", "a", "b", "c") == 3
    assert _changes(r, "RPUSHX", "nolist", "a") == 0
    assert _changes(r, "SET", "k", "v") == 1
    assert _changes(r, "GET", "k") == 0
    assert _changes(r, "LPUSH", "k", "a") == 0  # WRONGTYPE
    assert _changes(r, "EXPIRE", "nokey", "100") == 0
    assert _changes(r, "EXPIRE", "k", "100") == 1
    assert _changes(r, "PERSIST", "k") == 1
    assert _changes(r, "PERSIST", "k") == 0
    assert _changes(r, "SET", "k2", "v") == 1
    assert _changes(r, "DEL", "k", "l", "nokey") == 2
    assert _changes(r, "DEL", "nokey") == 0
    assert _changes(r, "MOVE", "k2", "1") == 1
    assert _changes(r, "MOVE", "k2", "1") == 0
    assert _changes(r, "ZUNIONSTORE", "zd", "1", "nokey") == 0
    assert _changes(r, "ZADD", "z", "1", "a") == 1
    assert _changes(r, "ZUNIONSTORE", "zd", "1", "z") == 1
    assert _changes(r, "ZUNIONSTORE", "zd", "1", "nokey") == 1  # deletes zd


@newer_than_7_0
def test_served_blpop_and_blmove_increase_dirty(raw, r):
    # list.tcl (newest), "BLPOP/BLMOVE should increase dirty": the LPUSH and
    # the pop that serves the blocked client are one change each.
    waiter = raw()
    before = _dirty(r)
    waiter.send(command("BLPOP", "lst{t}", "0"))
    wait_blocked(r, 1)
    assert r.lpush("lst{t}", "a") == 1
    waiter.sock.settimeout(5)
    assert waiter.read_reply() == b"*2\r\n$6\r\nlst{t}\r\n$1\r\na\r\n"
    assert _dirty(r) == before + 2

    before = _dirty(r)
    waiter.send(command("BLMOVE", "lst{t}", "lst1{t}", "LEFT", "LEFT", "0"))
    wait_blocked(r, 1)
    assert r.lpush("lst{t}", "a") == 1
    assert waiter.read_reply() == b"$1\r\na\r\n"
    assert _dirty(r) == before + 2
