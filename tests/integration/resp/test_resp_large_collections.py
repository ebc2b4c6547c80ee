"""Large hashes and sorted sets and integer sets (issue 16's compact representations: a pointer
index over packed hash entries, a member index over the sorted set's nodes, Redis's fixed-width
intset bytes), checked against a Python model through every command family that reads them.
Also passes against redis-server (RESP_TARGET=redis)."""

import random


def scan_all(fn, key, **kw):
    cursor, seen = 0, []
    while True:
        cursor, part = fn(key, cursor, **kw)
        seen.extend(part.items() if isinstance(part, dict) else part)
        if cursor == 0:
            return seen


def test_large_hash_matches_a_model_through_updates_and_deletes(r):
    rng = random.Random(16)
    model = {}
    for i in range(3000):
        f = f"field:{rng.randrange(1500):05d}"
        op = rng.random()
        if op < 0.6:
            v = "x" * rng.choice([0, 1, 10, 254, 255, 256, 300])  # short and long entry forms
            assert r.hset("h", f, v) == (0 if f in model else 1)
            model[f] = v
        elif op < 0.8:
            assert r.hdel("h", f) == (1 if f in model else 0)
            model.pop(f, None)
        else:
            assert r.hget("h", f) == (model[f].encode() if f in model else None)
    assert r.object("encoding", "h") == b"hashtable"
    assert r.hlen("h") == len(model)
    got = {k.decode(): v.decode() for k, v in r.hgetall("h").items()}
    assert got == model
    assert {k.decode(): v.decode() for k, v in scan_all(r.hscan, "h")} == model
    some = sorted(model)[:50]
    assert [v.decode() for v in r.hmget("h", some)] == [model[f] for f in some]
    assert r.hstrlen("h", some[0]) == len(model[some[0]])
    assert r.hexists("h", some[0]) and not r.hexists("h", "field:missing")
    picks = r.hrandfield("h", 20, withvalues=True)
    for k, v in zip(picks[::2], picks[1::2]):
        assert model[k.decode()] == v.decode()
    # A field rewritten with a longer and then a shorter value keeps the last.
    r.hset("h", "grow", "a")
    r.hset("h", "grow", "b" * 1000)
    r.hset("h", "grow", "c")
    assert r.hget("h", "grow") == b"c"
    assert r.hincrbyfloat("h", "num", 1.5) == 1.5
    assert r.hincrby("h", "int", 7) == 7


def test_large_hash_copy_is_independent(r):
    r.hset("src", mapping={f"f{i}": f"v{i}" for i in range(500)})
    assert r.copy("src", "dst")
    r.hset("src", "f1", "changed")
    r.hdel("src", "f2")
    assert r.hget("dst", "f1") == b"v1" and r.hget("dst", "f2") == b"v2"
    assert r.hlen("dst") == 500 and r.hlen("src") == 499


def test_large_zset_matches_a_model_through_score_moves(r):
    rng = random.Random(17)
    model = {}
    for _ in range(4000):
        m = f"member:{rng.randrange(1500):05d}"
        if rng.random() < 0.75:
            s = float(rng.randrange(-500, 500))
            r.zadd("z", {m: s})
            model[m] = s
        else:
            assert r.zrem("z", m) == (1 if m in model else 0)
            model.pop(m, None)
    assert r.object("encoding", "z") == b"skiplist"
    order = sorted(model.items(), key=lambda kv: (kv[1], kv[0]))
    assert r.zcard("z") == len(model)
    assert [(m.decode(), s) for m, s in r.zrange("z", 0, -1, withscores=True)] == order
    for i in (0, 1, len(order) // 2, len(order) - 1):
        m = order[i][0]
        assert r.zrank("z", m) == i
        assert r.zscore("z", m) == model[m]
    assert r.zscore("z", "member:missing") is None and r.zrank("z", "member:missing") is None
    assert sorted((m.decode(), s) for m, s in scan_all(r.zscan, "z")) == sorted(model.items())
    assert r.zincrby("z", 10000, order[0][0]) == order[0][1] + 10000
    assert r.zrevrange("z", 0, 0) == [order[0][0].encode()]
    r.zadd("z", {order[1][0]: 5.0}, xx=True)
    assert r.zscore("z", order[1][0]) == 5.0


def test_large_zset_copy_is_independent(r):
    r.zadd("zs", {f"m{i}": i for i in range(300)})
    assert r.copy("zs", "zd")
    r.zadd("zs", {"m1": 1000})
    r.zrem("zs", "m2")
    assert r.zscore("zd", "m1") == 1.0 and r.zrank("zd", "m2") == 2
    assert r.zcard("zd") == 300


def _raw_members(r, key):
    conn = r.connection_pool.get_connection("SMEMBERS")
    try:
        conn.send_command("SMEMBERS", key)
        return conn.read_response()
    finally:
        r.connection_pool.release(conn)


def test_intsets_of_every_width_read_back_in_order(r):
    for key, values in (("i16", [5, -3, 32767, -32768]),
                        ("i32", [1, 40000, -2147483648, 2147483647]),
                        ("i64", [0, 9223372036854775807, -9223372036854775808])):
        r.sadd(key, *values)
        assert r.object("encoding", key) == b"intset"
        assert _raw_members(r, key) == [str(v).encode() for v in sorted(values)]
        assert r.sismember(key, values[0]) and not r.sismember(key, 12345)
        assert sorted(int(x) for x in scan_all(r.sscan, key)) == sorted(values)
    # 200 random integers, added in two commands, as the memory benchmark does.
    rng = random.Random(18)
    vals = {rng.randrange(10**9) for _ in range(200)}
    vs = sorted(vals)
    r.sadd("big", *vs[:100])
    r.sadd("big", *vs[100:])
    assert r.object("encoding", "big") == b"intset"
    assert _raw_members(r, "big") == [str(v).encode() for v in vs]
    assert r.srem("big", vs[0]) == 1 and r.scard("big") == len(vs) - 1
    assert r.sinter("big", "big") == {str(v).encode() for v in vs[1:]}


def test_non_canonical_numbers_leave_the_intset(r):
    # Redis keeps "01", "+1" and " 1" as strings: the set becomes a hashtable and keeps them.
    r.sadd("nc", 1, 2)
    assert r.object("encoding", "nc") == b"intset"
    r.sadd("nc", "01")
    assert r.object("encoding", "nc") in (b"listpack", b"hashtable")  # Redis 7.2 / 7.0
    assert r.smembers("nc") == {b"1", b"2", b"01"}
