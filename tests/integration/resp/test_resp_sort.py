"""SORT and SORT_RO through redis-py and raw sockets: numeric and ALPHA order,
BY and GET patterns over strings and hash fields, GET #, LIMIT's clamping,
BY <constant> (no sorting, Redis's native-order and script rules), STORE
(empty results delete the destination, other types are replaced), WATCH,
keyspace events, the dirty counter, ACL's refusal of patterns without full
key read access, COMMAND metadata, RESP3 shapes, scripts and MULTI/EXEC, and
SORT with patterns racing writers of the keys they name (Trove runs it
holding the stripes of every key it reads; commands/sort_patterns.h).

Redis is the reference: every test without the `trove` fixture also runs
against redis-server (TROVE_TEST_TARGET=redis). Expected values come from
Redis's own tests (sort.tcl, acl-v2.tcl, multi.tcl, scripting.tcl) or are
worked out from sortCommandGeneric's rules.
"""

import random
import threading
import time

import pytest
import redis

from conftest import resp_target
from resp_errors import err
from keyspace_observe import keyevents, listen  # noqa: E402

SERVER_ARGS = ["-t", "4"]  # readers and writers on different workers

TARGET = resp_target()

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
NOT_INT = "value is not an integer or out of range"
BAD_DOUBLE = "One or more scores can't be converted into double"
BY_DENIED = "BY option of SORT denied due to insufficient ACL permissions."
GET_DENIED = "GET option of SORT denied due to insufficient ACL permissions."


def x(r, *args):
    return r.execute_command(*args)


def s(r, *args):
    return x(r, "SORT", *args)


def b(*items):
    return [i if isinstance(i, bytes) or i is None else str(i).encode() for i in items]


# ---- order ------------------------------------------------------------------------

def test_numeric_order_of_each_type(r):
    r.rpush("l", 3, 1, 10, 2, -1.5, "1e2")
    assert s(r, "l") == b(-1.5, 1, 2, 3, 10, "1e2")
    assert s(r, "l", "DESC") == b("1e2", 10, 3, 2, 1, -1.5)
    assert s(r, "l", "desc", "asc") == s(r, "l")  # the last word wins
    r.sadd("s", 5, 3, 40, 1)
    assert s(r, "s") == b(1, 3, 5, 40)
    r.zadd("z", {"7": 1, "2": 5, "11": 3})
    assert s(r, "z") == b(2, 7, 11)  # by the members, not the scores
    assert s(r, "missing") == []
    assert x(r, "SORT_RO", "l", "DESC", "LIMIT", 0, 2) == b("1e2", 10)


def test_floats_and_infinities(r):
    floats = ["1.1", "5.10", "3.10", "7.44", "2.1", "5.75", "6.12", "0.25", "1.15"]
    r.lpush("l", *floats)  # sort.tcl, issue #19
    assert s(r, "l") == b(*sorted(floats, key=float))
    r.rpush("inf", "inf", "-inf", "0", "+inf", "-3")
    assert s(r, "inf") == b("-inf", "-3", "0", "+inf", "inf")  # ties: by the bytes


def test_equal_scores_sort_by_the_element(r):
    members = "a b c d e f g h i l m n o p q r s t u v z aa aaa azz".split()
    r.sadd("myset", *members)
    for m in members:
        r.set("score:" + m, 100)
    expected = b(*sorted(members))
    assert s(r, "myset", "BY", "score:*") == expected
    assert s(r, "myset", "BY", "score:*", "DESC") == expected[::-1]
    # Missing weights are 0: the same tie.
    assert s(r, "myset", "BY", "nothing:*") == expected


def test_alpha_order(r):
    r.lpush("mylist", 2, 1, 3, 10)
    assert s(r, "mylist", "ALPHA") == b(1, 10, 2, 3)
    assert s(r, "mylist", "ALPHA", "DESC") == b(3, 2, 10, 1)
    r.zadd("zset", {"a": 1, "b": 5, "c": 2, "d": 10, "e": 3})
    assert s(r, "zset", "ALPHA", "DESC") == b("e", "d", "c", "b", "a")
    r.rpush("words", "pear", "apple", "fig", "apples", "app")
    assert s(r, "words", "ALPHA") == b("app", "apple", "apples", "fig", "pear")


def test_alpha_binary_order_with_store(r):
    # With STORE Redis compares bytes (no locale): high bytes after ASCII,
    # a prefix before its extensions.
    vals = [b"\xff", b"a", b"\x01", b"ab", b"\x80\x00", b"\x80", b"A"]
    r.rpush("bin", *vals)
    assert s(r, "bin", "ALPHA", "STORE", "out") == len(vals)
    assert r.lrange("out", 0, -1) == sorted(vals)
    assert s(r, "bin", "ALPHA", "DESC", "STORE", "out") == len(vals)
    assert r.lrange("out", 0, -1) == sorted(vals, reverse=True)


def test_alpha_binary_order_without_store(r, trove):
    # Trove keeps byte order without STORE too (Redis uses strcoll there,
    # which stops at a NUL byte).
    vals = [b"b\x00b", b"b\x00a", b"b", b"\xfe", b"\x00"]
    r.rpush("bin", *vals)
    assert s(r, "bin", "ALPHA") == sorted(vals)


def test_alpha_by_weights(r):
    r.rpush("l", "x", "y", "z", "w")
    r.mset({"wt_x": "banana", "wt_y": "apple", "wt_z": "cherry"})  # wt_w missing: first
    assert s(r, "l", "BY", "wt_*", "ALPHA") == b("w", "y", "x", "z")
    assert s(r, "l", "BY", "wt_*", "ALPHA", "DESC") == b("z", "x", "y", "w")
    # ALPHA weights need not be numbers.
    err(s, r, "l", "BY", "wt_*", match=BAD_DOUBLE)


def test_numeric_errors(r):
    r.sadd("myset", 1, 2, 3, 4, "not-a-double")
    err(s, r, "myset", match=BAD_DOUBLE)
    assert s(r, "myset", "ALPHA") == b(1, 2, 3, 4, "not-a-double")
    r.delete("myset")
    r.sadd("myset", 1, 2, 3, 4)
    r.mset({"score:1": 10, "score:2": 20, "score:3": 30, "score:4": "not-a-double"})
    err(s, r, "myset", "BY", "score:*", match=BAD_DOUBLE)
    err(s, r, "myset", "BY", "score:*", "STORE", "dst", match=BAD_DOUBLE)
    assert r.exists("dst") == 0  # nothing stored
    r.set("score:4", "")  # an empty weight reads as 0
    assert s(r, "myset", "BY", "score:*") == b(4, 1, 2, 3)
    r.set("score:4", "-inf")
    assert s(r, "myset", "BY", "score:*") == b(4, 1, 2, 3)
    r.set("score:4", "25")
    assert s(r, "myset", "BY", "score:*") == b(1, 2, 4, 3)
    for bad in ("nan", "1e400", "1e-400", "12abc", "1.5.6"):
        r.set("score:4", bad)
        err(s, r, "myset", "BY", "score:*", match=BAD_DOUBLE)


# ---- BY and GET patterns ----------------------------------------------------------

def _dataset(r, n, cmd):
    rnd = random.Random(n)
    weights = rnd.sample(range(1_000_000), n)
    pipe = r.pipeline(transaction=False)
    for i, w in enumerate(weights):
        getattr(pipe, cmd)("tosort", i)
        pipe.set("weight_%d" % i, w)
        pipe.hset("wobj_%d" % i, "weight", w)
    pipe.execute()
    return [str(i).encode() for i, _ in sorted(enumerate(weights), key=lambda p: p[1])]


@pytest.mark.parametrize("n,cmd", [(16, "lpush"), (1000, "lpush"), (16, "sadd"),
                                   (1000, "sadd")])
def test_by_key_and_hash_field(r, n, cmd):
    result = _dataset(r, n, cmd)
    assert s(r, "tosort", "BY", "weight_*") == result
    assert s(r, "tosort", "BY", "weight_*", "LIMIT", 5, 5) == result[5:10]
    assert s(r, "tosort", "BY", "wobj_*->weight") == result
    assert s(r, "tosort", "BY", "wobj_*->weight", "DESC", "LIMIT", 0, 3) == result[::-1][:3]


def test_get_patterns(r):
    result = _dataset(r, 16, "lpush")
    ids = sorted(result, key=int)
    assert s(r, "tosort", "GET", "#") == ids
    got = s(r, "tosort", "GET", "#", "GET", "weight_*", "GET", "wobj_*->weight")
    assert got[0::3] == ids
    assert got[1::3] == [r.get(b"weight_" + i) for i in ids]
    assert got[2::3] == got[1::3]
    assert s(r, "tosort", "BY", "weight_*", "GET", "#") == result
    # A GET without '*' names no key: nil for each element.
    for cmd in ("SORT", "SORT_RO"):
        assert x(r, cmd, "tosort", "GET", "foo") == [None] * 16
    # No key, or the wrong type, or no such field: nil.
    assert s(r, "tosort", "LIMIT", 0, 2, "GET", "nokey_*", "GET", "weight_*->weight",
             "GET", "wobj_*", "GET", "wobj_*->nofield") == [None] * 8


def test_pattern_parts(r):
    r.rpush("l", "a", "b")
    r.set("pre_a_post", "A")
    r.set("x:b->", "100")  # "->" with no field: a plain key
    r.hset("h{a}", mapping={"f->g": "deep", "f": "flat"})
    assert s(r, "l", "BY", "nosort", "GET", "pre_*_post") == b("A", None)
    assert s(r, "l", "BY", "nosort", "GET", "x:*->") == b(None, 100)
    # Only the first '*' is replaced; the field is all after the first "->".
    assert s(r, "l", "BY", "nosort", "GET", "h{*}->f->g") == b("deep", None)
    r.set("a*", "star")
    assert s(r, "l", "BY", "nosort", "GET", "**") == b("star", None)
    r.delete("l")
    r.lpush("mylist", "a")
    r.set("x:a->", 100)
    assert s(r, "mylist", "BY", "num", "GET", "x:*->") == b(100)  # sort.tcl
    assert x(r, "SORT_RO", "mylist", "BY", "nosort", "GET", "x:*->") == b(100)


def test_by_constant_keeps_native_order(r):
    r.lpush("testa", 2, 1, 4, 3, 5)
    assert s(r, "testa", "BY", "nosort") == b(5, 3, 4, 1, 2)
    assert s(r, "testa", "BY", "nosort", "DESC") == b(2, 1, 4, 3, 5)
    assert s(r, "testa", "BY", "nosort", "LIMIT", 1, 2) == b(3, 4)
    assert s(r, "testa", "BY", "nosort", "DESC", "LIMIT", 1, 2) == b(1, 4)
    assert s(r, "testa", "BY", "nosort", "STORE", "testb") == 5
    assert r.lrange("testb", 0, -1) == b(5, 3, 4, 1, 2)
    assert s(r, "testa", "BY", "nosort", "LIMIT", 0, 3, "STORE", "testb") == 3
    assert r.lrange("testb", 0, -1) == b(5, 3, 4)
    # A constant BY, once given, wins over a later pattern (Redis's rule).
    r.mset({"w_5": 9, "w_3": 1})
    assert s(r, "testa", "BY", "nosort", "BY", "w_*") == b(5, 3, 4, 1, 2)
    assert s(r, "testa", "BY", "w_*", "BY", "nosort") == b(5, 3, 4, 1, 2)


def test_sorted_set_by_nosort(r):
    r.zadd("zset", {"a": 1, "b": 5, "c": 2, "d": 10, "e": 3})
    with r.pipeline() as p:  # sort.tcl runs these in MULTI
        p.execute_command("SORT", "zset", "BY", "nosort", "ASC")
        p.execute_command("SORT", "zset", "BY", "nosort", "DESC")
        assert p.execute() == [b("a", "c", "e", "b", "d"), b("d", "b", "e", "c", "a")]
    assert s(r, "zset", "BY", "nosort", "ASC", "LIMIT", 0, 1) == b("a")
    assert s(r, "zset", "BY", "nosort", "DESC", "LIMIT", 0, 1) == b("d")
    assert s(r, "zset", "BY", "nosort", "ASC", "LIMIT", 0, 2) == b("a", "c")
    assert s(r, "zset", "BY", "nosort", "DESC", "LIMIT", 0, 2) == b("d", "b")
    assert s(r, "zset", "BY", "nosort", "DESC", "LIMIT", 1, 3) == b("b", "e", "c")
    assert s(r, "zset", "BY", "nosort", "LIMIT", 5, 10) == []
    assert s(r, "zset", "BY", "nosort", "LIMIT", -10, 100) == b("a", "c", "e", "b", "d")


def test_set_by_constant(r):
    members = "a b c d e f g h i l m n o p q r s t u v z aa aaa azz".split()
    r.sadd("myset", *members)
    # Stored: sorted (ALPHA), so the result is the same everywhere.
    assert s(r, "myset", "ALPHA", "BY", "_", "STORE", "mylist") == len(members)
    assert r.lrange("mylist", 0, -1) == b(*sorted(members))
    assert s(r, "myset", "BY", "_", "DESC", "STORE", "mylist") == len(members)
    assert r.lrange("mylist", 0, -1) == b(*sorted(members, reverse=True))
    # Returned: the set's own order, which Redis leaves open.
    assert sorted(s(r, "myset", "BY", "_")) == b(*sorted(members))
    r.sadd("ints", 3, 1, 2)  # an intset's order is ascending
    assert s(r, "ints", "BY", "nosort") == b(1, 2, 3)
    assert s(r, "ints", "BY", "nosort", "DESC") == b(1, 2, 3)  # not reversed for sets
    assert s(r, "ints", "BY", "nosort", "LIMIT", 1, 1) == b(2)


# ---- LIMIT --------------------------------------------------------------------------

def limit_model(seq, start, count):
    """sortCommandGeneric's LIMIT: start clamped to [0, len], count to
    [-1, len] (-1: to the end), nothing when start is past the end."""
    n = len(seq)
    first = min(max(start, 0), n)
    count = min(max(count, -1), n)
    last = n - 1 if count < 0 else first + count - 1
    if first >= n:
        return []
    return seq[first:min(last, n - 1) + 1]


@pytest.mark.parametrize("start,count,expected", [
    (0, 0, []), (1, 2, [2, 3]), (-1, 2, [1, 2]), (2, -1, [3, 4, 5]), (2, -5, [3, 4, 5]),
    (5, 1, []), (4, 100, [5]), (0, 9223372036854775807, [1, 2, 3, 4, 5]),
    (-9223372036854775808, 3, [1, 2, 3]), (9223372036854775807, 1, []),
    (4, 9223372036854775807, [5]),
])
def test_limit_clamping(r, start, count, expected):
    native = [5, 3, 1, 4, 2]
    r.rpush("l", *native)
    assert limit_model(sorted(native), start, count) == expected  # the model agrees
    assert s(r, "l", "LIMIT", start, count) == b(*expected)
    assert x(r, "SORT_RO", "l", "LIMIT", start, count) == b(*expected)
    assert s(r, "l", "BY", "nosort", "LIMIT", start, count) == \
        b(*limit_model(native, start, count))
    assert s(r, "l", "BY", "nosort", "DESC", "LIMIT", start, count) == \
        b(*limit_model(native[::-1], start, count))
    assert s(r, "l", "LIMIT", start, count, "STORE", "dst") == len(expected)
    assert r.lrange("dst", 0, -1) == b(*expected)


def test_limit_on_short_and_empty_inputs(r):
    r.lpush("L", 2, 1, 0)
    assert x(r, "SORT_RO", "L", "BY", "a", "LIMIT", 2, 9223372036854775807) == b(2)
    assert s(r, "nolist", "LIMIT", 0, 10) == []
    assert s(r, "nolist", "LIMIT", -5, -5, "GET", "#", "GET", "x_*") == []


def test_limit_errors(r):
    r.rpush("l", 1, 2)
    err(s, r, "l", "LIMIT", "x", 1, match=NOT_INT)
    err(s, r, "l", "LIMIT", 0, "1.5", match=NOT_INT)
    err(s, r, "l", "LIMIT", 0, "99999999999999999999", match=NOT_INT)
    err(s, r, "l", "LIMIT", 1, match="syntax error")
    err(s, r, "l", "LIMIT", match="syntax error")


# ---- errors -------------------------------------------------------------------------

def test_errors(r):
    r.rpush("l", 1)
    r.set("str", "x")
    r.hset("h", "f", "v")
    err(s, r, "str", match=WRONGTYPE)
    err(s, r, "h", match=WRONGTYPE)
    err(x, r, "SORT_RO", "h", match=WRONGTYPE)
    err(s, r, "str", "BADOPT", match="syntax error")  # options first, then the key
    for args in (["BY"], ["GET"], ["STORE"], ["ASC", "foo"], ["ALPHAS"], ["LIMIT", 0]):
        err(s, r, "l", *args, match="syntax error")
    err(x, r, "SORT", match="wrong number of arguments for 'sort' command")
    err(x, r, "SORT_RO", match="wrong number of arguments for 'sort_ro' command")
    # SORT_RO has no STORE (sort.tcl).
    err(x, r, "SORT_RO", "foolist", "STORE", "bar", match="syntax error")
    assert r.exists("bar") == 0


# ---- STORE --------------------------------------------------------------------------

def test_store(r):
    r.rpush("l", 3, 1, 2)
    assert s(r, "l", "STORE", "dst") == 3
    assert r.type("dst") == b"list" and r.lrange("dst", 0, -1) == b(1, 2, 3)
    r.mset({"v_1": "one", "v_3": "three"})
    r.hset("h_2", "f", "two")
    assert s(r, "l", "GET", "v_*", "GET", "h_*->f", "GET", "#", "STORE", "dst") == 9
    # nil is stored as an empty string.
    assert r.lrange("dst", 0, -1) == b("one", "", 1, "", "two", 2, "three", "", 3)
    # Sorting a key into itself.
    assert s(r, "l", "DESC", "STORE", "l") == 3
    assert r.lrange("l", 0, -1) == b(3, 2, 1)
    # The last STORE wins.
    assert s(r, "l", "STORE", "a", "STORE", "c") == 3
    assert r.exists("a") == 0 and r.lrange("c", 0, -1) == b(1, 2, 3)


def test_store_replaces_other_types_and_ttl(r):
    r.rpush("l", 2, 1)
    for make in (lambda: r.set("dst", "str"), lambda: r.hset("dst", "f", "v"),
                 lambda: r.sadd("dst", "m"), lambda: r.zadd("dst", {"m": 1}),
                 lambda: r.rpush("dst", "old", "older")):
        r.delete("dst")
        make()
        r.expire("dst", 100)
        assert s(r, "l", "STORE", "dst") == 2
        assert r.type("dst") == b"list" and r.lrange("dst", 0, -1) == b(1, 2)
        assert r.ttl("dst") == -1


def test_store_empty_result_deletes(r):
    # sort.tcl, github issues 224 and 227.
    assert s(r, "foo", "STORE", "bar") == 0
    assert r.exists("bar") == 0
    r.lpush("foo", "bar")
    assert s(r, "foo", "ALPHA", "LIMIT", 10, 10, "STORE", "zap") == 0
    assert r.exists("zap") == 0
    assert s(r, "emptylist", "STORE", "foo") == 0
    assert r.exists("foo") == 0
    r.set("strdst", "x")
    assert s(r, "emptylist", "STORE", "strdst") == 0
    assert r.exists("strdst") == 0


def test_store_counts_changes(r):
    def dirty():
        return int(r.info("persistence")["rdb_changes_since_last_save"])
    r.rpush("l", 1, 2, 3)
    before = dirty()
    s(r, "l", "STORE", "d")
    assert dirty() - before == 3
    before = dirty()
    s(r, "l", "GET", "#", "GET", "x", "STORE", "d")
    assert dirty() - before == 6
    before = dirty()
    s(r, "none", "STORE", "d")  # deletes d
    assert dirty() - before == 1
    before = dirty()
    s(r, "none", "STORE", "d")
    s(r, "l")
    assert dirty() - before == 0


def test_watch_sees_sort_store(raw):
    c, other = raw(), raw()
    # multi.tcl: an empty result that deletes the WATCHed key aborts EXEC.
    c.cmd("LPUSH", "foo", "bar")
    assert c.cmd("WATCH", "foo") == b"+OK\r\n"
    other.cmd("SORT", "emptylist", "STORE", "foo")
    c.cmd("MULTI")
    c.cmd("PING")
    assert c.cmd("EXEC") == b"*-1\r\n"
    # A stored result aborts it too, even with the same contents.
    c.cmd("RPUSH", "src", "1")
    other.cmd("SORT", "src", "STORE", "dst")
    assert c.cmd("WATCH", "dst") == b"+OK\r\n"
    other.cmd("SORT", "src", "STORE", "dst")
    c.cmd("MULTI")
    c.cmd("PING")
    assert c.cmd("EXEC") == b"*-1\r\n"
    # Nothing stored and nothing deleted: EXEC runs.
    assert c.cmd("WATCH", "gone") == b"+OK\r\n"
    other.cmd("SORT", "emptylist", "STORE", "gone")
    other.cmd("SORT", "src", "STORE", "elsewhere")
    c.cmd("MULTI")
    c.cmd("PING")
    assert c.cmd("EXEC") == b"*1\r\n+PONG\r\n"


@pytest.mark.skipif(TARGET == "fake", reason="the fake RESP front has no workers to deliver")
def test_sort_store_keyspace_events(r):
    r.rpush("src", 2, 1)
    p = listen(r, "Elgn")
    try:
        s(r, "src")                          # no STORE: nothing
        s(r, "src", "STORE", "dst")          # new dst, sortstore dst
        s(r, "src", "STORE", "dst")          # sortstore dst
        s(r, "none", "STORE", "dst")         # del dst
        s(r, "none", "STORE", "dst")         # nothing to delete: none
        s(r, "src", "STORE", "src")          # sortstore src
        r.set("end", 1)
        assert keyevents(p, 5) == ["new dst", "sortstore dst", "sortstore dst", "del dst",
                                    "sortstore src"]
        assert keyevents(p, 1) == ["new end"]  # nothing else came before it
    finally:
        p.close()
        r.config_set("notify-keyspace-events", "")


# ---- ACL ------------------------------------------------------------------------

def _client(rd, user):
    return redis.Redis(host="127.0.0.1", port=rd.connection_pool.connection_kwargs["port"],
                       username=user, password="pw", decode_responses=True, socket_timeout=20)


def test_acl_patterns_need_every_key(rd):
    rd.rpush("mylist", 1)
    rd.set("v1", 5)
    user = "sorter"
    c = None
    try:
        # acl-v2.tcl, "Test sort with ACL permissions", with selectors.
        rd.execute_command("ACL", "SETUSER", user, "on", ">pw", "(+sort ~mylist)")
        c = _client(rd, user)
        err(c.execute_command, "SORT", "mylist", "BY", "v*", match=BY_DENIED)
        err(c.execute_command, "SORT", "mylist", "GET", "v*", match=GET_DENIED)
        for rules in (["(+sort ~mylist ~v*)"], ["(+sort ~mylist %W~*)"],
                      ["+sort", "~mylist", "~v*"]):
            rd.execute_command("ACL", "SETUSER", user, "resetkeys", "-@all", "clearselectors",
                               *rules)
            err(c.execute_command, "SORT", "mylist", "BY", "v*", match=BY_DENIED)
            err(c.execute_command, "SORT", "mylist", "GET", "v*", match=GET_DENIED)
        # Without '*' BY names no key: allowed. GET is refused even for "#".
        assert c.execute_command("SORT", "mylist", "BY", "nosort") == ["1"]
        err(c.execute_command, "SORT", "mylist", "GET", "#", match=GET_DENIED)
        # The refusal comes where the option is parsed.
        err(c.execute_command, "SORT", "mylist", "BADOPT", "GET", "v*", match="syntax error")
        err(c.execute_command, "SORT", "mylist", "GET", "v*", "BADOPT", match=GET_DENIED)
        for rules in (["(+sort +sort_ro ~mylist %R~*)"], ["+sort", "+sort_ro", "%R~*"],
                      ["+sort", "+sort_ro", "allkeys"]):
            rd.execute_command("ACL", "SETUSER", user, "resetkeys", "-@all", "clearselectors",
                               *rules)
            assert c.execute_command("SORT", "mylist", "BY", "v*") == ["1"]
            assert c.execute_command("SORT_RO", "mylist", "GET", "v*", "GET", "#") == ["5", "1"]
        # A selector that reads every key but may not run SORT does not count.
        rd.execute_command("ACL", "SETUSER", user, "resetkeys", "-@all", "clearselectors",
                           "+sort", "~mylist", "(+get %R~*)")
        err(c.execute_command, "SORT", "mylist", "BY", "v*", match=BY_DENIED)
    finally:
        if c is not None:
            c.close()
        rd.execute_command("ACL", "DELUSER", user)


def test_acl_key_permissions(rd):
    rd.execute_command("ACL", "SETUSER", "ks", "+@all", "%R~read*", "%W~write*")
    try:
        def ok(*a):
            return rd.execute_command("ACL", "DRYRUN", "ks", *a) == "OK"
        # acl-v2.tcl: SORT reads its key and writes only its destination.
        assert ok("SORT", "read", "STORE", "write")
        assert not ok("SORT", "read", "STORE", "read")
        assert not ok("SORT", "write", "STORE", "write")
        assert ok("SORT", "read") and not ok("SORT", "write")
        assert ok("SORT_RO", "read") and not ok("SORT_RO", "write")
    finally:
        rd.execute_command("ACL", "DELUSER", "ks")


# ---- COMMAND, RESP3 -------------------------------------------------------------

def test_command_metadata(rd):
    infos = {i[0]: i for i in rd.execute_command("COMMAND INFO", "sort", "sort_ro")}
    sort, sort_ro = infos["sort"], infos["sort_ro"]
    assert (sort[1], set(sort[2]), sort[3], sort[4], sort[5]) == \
        (-2, {"write", "denyoom", "movablekeys"}, 1, 1, 1)
    assert set(sort[6]) == {"@write", "@set", "@sortedset", "@list", "@slow", "@dangerous"}
    assert (sort_ro[1], set(sort_ro[2]), sort_ro[3], sort_ro[4], sort_ro[5]) == \
        (-2, {"readonly", "movablekeys"}, 1, 1, 1)
    assert set(sort_ro[6]) == {"@read", "@set", "@sortedset", "@list", "@slow", "@dangerous"}
    assert "sort" in rd.execute_command("ACL", "CAT", "list")
    assert "sort_ro" in rd.execute_command("ACL", "CAT", "sortedset")
    assert "sort" not in rd.execute_command("ACL", "CAT", "keyspace")
    getkeys = lambda *a: rd.execute_command("COMMAND GETKEYS", *a)  # noqa: E731
    assert getkeys("sort", "abc", "store", "def") == ["abc", "def"]
    assert getkeys("sort_ro", "abc") == ["abc"]
    assert getkeys("sort", "abc", "store", "invalid", "store", "stillbad", "store", "def") == \
        ["abc", "def"]
    assert getkeys("sort", "abc", "by", "store", "get", "store", "limit", "store", "store",
                   "desc") == ["abc"]
    assert getkeys("sort", "abc", "store", "store", "d") == ["abc", "d"]
    got = rd.execute_command("COMMAND GETKEYSANDFLAGS", "sort", "a", "by", "x", "store", "d")
    assert [(k, set(f)) for k, f in got] == [("a", {"RO", "access"}), ("d", {"OW", "update"})]
    docs = rd.execute_command("COMMAND DOCS", "sort", "sort_ro")
    if isinstance(docs, list):
        docs = dict(zip(docs[::2], docs[1::2]))
    for name, since in (("sort", "1.0.0"), ("sort_ro", "7.0.0")):
        doc = docs[name]
        if isinstance(doc, list):
            doc = dict(zip(doc[::2], doc[1::2]))
        assert doc["group"] == "generic" and doc["since"] == since, doc


def test_resp2_and_resp3_shapes(raw):
    c = raw()
    c.cmd("RPUSH", "l", "2", "1")
    c.cmd("SET", "w_1", "x")
    assert c.cmd("SORT", "l", "GET", "#", "GET", "w_*") == \
        b"*4\r\n$1\r\n1\r\n$1\r\nx\r\n$1\r\n2\r\n$-1\r\n"
    assert c.cmd("SORT", "nokey") == b"*0\r\n"
    assert c.cmd("SORT", "l", "STORE", "d") == b":2\r\n"
    assert c.cmd("HELLO", "3").startswith(b"%")
    assert c.cmd("SORT", "l", "GET", "#", "GET", "w_*") == \
        b"*4\r\n$1\r\n1\r\n$1\r\nx\r\n$1\r\n2\r\n_\r\n"
    assert c.cmd("SORT_RO", "l", "LIMIT", "0", "0") == b"*0\r\n"
    assert c.cmd("SORT", "l", "STORE", "d") == b":2\r\n"
    assert c.cmd("SORT", "l", "LIMIT", "x", "1") == \
        b"-ERR value is not an integer or out of range\r\n"


# ---- scripts and transactions ----------------------------------------------------

def test_sort_in_scripts(r):
    r.sadd("myset", 1, 2, 3, 4, 10)
    # scripting.tcl: numbers are not re-ordered as strings...
    assert r.eval("return redis.call('sort', KEYS[1], 'desc')", 1, "myset") == b(10, 4, 3, 2, 1)
    members = "a b c d e f g h i l m n o p q r s t u v z aa aaa azz".split()
    r.delete("myset")
    r.sadd("myset", *members)
    # ...but an unsorted set is ordered (ALPHA) for a script.
    assert r.eval("return redis.call('sort', KEYS[1], 'by', '_')", 1, "myset") == \
        b(*sorted(members))
    r.delete("myset")
    r.sadd("myset", "a", "b", "c")
    assert r.eval("return redis.call('sort', KEYS[1], 'by', '_', 'get', '#', 'get', '_:*')",
                  1, "myset") == b("a", None, "b", None, "c", None)
    # A sorted set keeps its order (sort.tcl).
    r.zadd("zset", {"a": 1, "b": 5, "c": 2, "d": 10, "e": 3})
    assert r.eval("return {redis.call('sort', KEYS[1], 'by', 'nosort', 'asc'),"
                  "redis.call('sort', KEYS[1], 'by', 'nosort', 'desc')}", 1, "zset") == \
        [b("a", "c", "e", "b", "d"), b("d", "b", "e", "c", "a")]
    # Patterns reach keys the script did not declare.
    r.rpush("ids", 1, 2)
    r.mset({"w_1": 20, "w_2": 10, "n_1": "one", "n_2": "two"})
    assert r.eval("return redis.call('sort', KEYS[1], 'by', 'w_*', 'get', 'n_*')", 1, "ids") == \
        b("two", "one")
    assert r.eval("redis.call('sort', KEYS[1], 'by', 'w_*', 'store', KEYS[2]);"
                  "return redis.call('lrange', KEYS[2], 0, -1)", 2, "ids", "out") == b(2, 1)


def test_sort_in_multi_exec(r):
    r.rpush("ids", 1, 2, 3)
    r.mset({"w_1": 3, "w_2": 1, "w_3": 2})
    r.hset("h_1", "f", "a")
    with r.pipeline() as p:
        p.execute_command("SORT", "ids", "BY", "w_*", "GET", "#", "GET", "h_*->f")
        p.set("w_1", 0)
        p.execute_command("SORT", "ids", "BY", "w_*", "STORE", "out")
        p.lrange("out", 0, -1)
        assert p.execute() == [b(2, None, 3, None, 1, "a"), True, 3, b(1, 2, 3)]


# ---- concurrency -------------------------------------------------------------------

def test_patterns_read_a_consistent_snapshot(resp_port, r):
    """Writers replace every weight and hash field the patterns name in one
    transaction; readers SORT BY/GET those keys from other connections (so
    other workers). Each reply must show one transaction's values, in the
    order they give, and no call may hang or fail."""
    n_ids, rounds = 20, 150
    ids = list(range(n_ids))
    r.rpush("ids", *ids)

    def state(k):  # round k: weights reverse the ids; every value carries k
        m = {"w_%d" % i: k * 100 + (n_ids - i) for i in ids}
        return m

    r.mset(state(0))
    for i in ids:
        r.hset("h_%d" % i, "v", 0)
    errors = []
    stop = threading.Event()

    def writer(base):
        c = redis.Redis(host="127.0.0.1", port=resp_port, socket_timeout=30)
        try:
            for k in range(base, base + rounds):
                with c.pipeline(transaction=True) as p:
                    p.mset(state(k))
                    for i in ids:
                        p.hset("h_%d" % i, "v", k)
                    p.execute()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    expected_order = [str(i).encode() for i in reversed(ids)]

    def reader(me):
        c = redis.Redis(host="127.0.0.1", port=resp_port, socket_timeout=30)
        try:
            checks = 0
            while not stop.is_set() or checks < 20:
                got = c.execute_command("SORT", "ids", "BY", "w_*", "GET", "#", "GET", "w_*",
                                        "GET", "h_*->v")
                assert got[0::3] == expected_order, got
                ks = {int(w) // 100 for w in got[1::3]}
                hs = {int(h) for h in got[2::3]}
                assert len(ks) == 1 and ks == hs, got
                dst = "dst_%d" % me
                assert c.execute_command("SORT", "ids", "BY", "wobj_*->none", "GET", "h_*->v",
                                         "STORE", dst) == n_ids
                assert len(set(c.lrange(dst, 0, -1))) == 1
                checks += 1
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    writers = [threading.Thread(target=writer, args=(k,)) for k in (1, 10_000)]
    readers = [threading.Thread(target=reader, args=(i,)) for i in range(3)]
    for t in writers + readers:
        t.start()
    for t in writers:
        t.join(120)
    stop.set()
    for t in readers:
        t.join(120)
    assert not any(t.is_alive() for t in writers + readers), "a SORT or a writer hung"
    assert errors == []


def test_pattern_key_held_by_a_script(resp_port, r):
    """A script holds a key a GET pattern names between two writes; a SORT on
    another connection must wait for it (in Trove: its try-lock meets the
    busy stripe, so it runs again holding every stripe) and see the final
    value, never the intermediate one."""
    r.rpush("ids", 1, 2)
    r.mset({"val_1": "before", "val_2": "other"})
    started = threading.Event()
    result = {}

    def writer():
        c = redis.Redis(host="127.0.0.1", port=resp_port, socket_timeout=60,
                        decode_responses=True)
        started.set()
        result["writer"] = c.eval(
            "redis.call('set', KEYS[1], 'half'); local x = 0\n"
            "for i = 1, 20000000 do x = x + 1 end\n"
            "redis.call('set', KEYS[1], 'done'); return x", 1, "val_1")

    t = threading.Thread(target=writer)
    t.start()
    started.wait()
    time.sleep(0.2)  # the script is in its loop now
    reader = redis.Redis(host="127.0.0.1", port=resp_port, socket_timeout=60)
    seen = reader.execute_command("SORT", "ids", "GET", "val_*")
    t.join()
    reader.close()
    assert result["writer"] == 20000000
    assert seen == b("done", "other")
