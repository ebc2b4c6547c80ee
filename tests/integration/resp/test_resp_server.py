"""Connection and server commands."""

import os

import pytest
import redis

from resp_errors import err


def test_ping_echo_time(r):
    assert r.ping() is True
    assert r.echo("x") == b"x"
    t = r.time()
    assert t[0] > 1600000000 and 0 <= t[1] < 1000000
    err(r.execute_command, "PING", "a", "b", match="wrong number of arguments for 'ping' command")


def test_select_dbsize_flush(r, resp_port):
    r.set("a", 1)
    assert r.dbsize() == 1
    one = redis.Redis(port=resp_port, db=1)
    assert one.get("a") is None
    one.set("a", "one")
    one.set("b", "one")
    assert one.dbsize() == 2
    assert r.get("a") == b"1"
    assert one.flushdb()
    assert one.dbsize() == 0
    assert r.dbsize() == 1
    err(r.execute_command, "SELECT", "16", match="DB index is out of range")
    err(r.execute_command, "SELECT", "x", match="value is not an integer or out of range")
    one.set("c", 1)
    assert r.execute_command("FLUSHALL", "ASYNC")
    assert r.dbsize() == 0 and one.dbsize() == 0
    err(r.execute_command, "FLUSHDB", "FOO", match="syntax error")
    one.close()


def test_swapdb(r, resp_port):
    r.set("a", "zero")
    one = redis.Redis(port=resp_port, db=1)
    one.set("a", "one")
    one.set("b", "onlyone")
    assert r.swapdb(0, 1)
    assert r.get("a") == b"one" and r.get("b") == b"onlyone"
    assert one.get("a") == b"zero" and one.get("b") is None
    err(r.execute_command, "SWAPDB", "x", "1", match="invalid first DB index")
    err(r.execute_command, "SWAPDB", "0", "99", match="DB index is out of range")
    one.close()


def test_info_sections(r):
    info = r.info()
    for k in ("redis_version", "connected_clients", "used_memory", "total_commands_processed",
              "keyspace_hits", "uptime_in_seconds"):
        assert k in info
    r.set("a", 1)
    r.get("a")
    assert "db0" in r.info("keyspace")
    assert r.info("keyspace")["db0"]["keys"] == 1
    cs = r.info("commandstats")
    assert cs["cmdstat_set"]["calls"] >= 1
    assert "redis_version" not in r.info("stats")


# Which commands count INFO keyspace_hits / keyspace_misses, as Redis 7
# counts them: read lookups only (lookupKeyRead), so writes never count, but
# GETSET, SET ... GET, COPY and the *STORE commands count the keys they read.
KEYSPACE_CASES = [
    ("set", lambda r: r.set("a", "1"), 0, 0),
    ("setnx", lambda r: r.setnx("a", "1"), 0, 0),
    ("set get", lambda r: r.set("a", "1", get=True), 1, 0),
    ("incr", lambda r: r.incr("n"), 0, 0),
    ("append", lambda r: r.append("a", "x"), 0, 0),
    ("getset", lambda r: r.getset("a", "2"), 1, 0),
    ("getdel", lambda r: r.getdel("a"), 1, 0),
    ("getex miss", lambda r: r.getex("zz"), 0, 1),
    ("lpush", lambda r: r.lpush("l", "y"), 0, 0),
    ("lpop", lambda r: r.lpop("l"), 0, 0),
    ("hset", lambda r: r.hset("h", "g", "1"), 0, 0),
    ("hget", lambda r: r.hget("h", "g"), 1, 0),
    ("hincrby", lambda r: r.hincrby("h", "n", 1), 0, 0),
    ("sadd", lambda r: r.sadd("s", "n"), 0, 0),
    ("zincrby", lambda r: r.zincrby("z", 1, "n"), 0, 0),
    ("exists", lambda r: r.exists("s"), 1, 0),
    ("expire", lambda r: r.expire("s", 100), 0, 0),
    ("ttl", lambda r: r.ttl("s"), 1, 0),
    ("type", lambda r: r.type("s"), 1, 0),
    ("lrange", lambda r: r.lrange("l", 0, -1), 1, 0),
    ("mget", lambda r: r.mget("l", "q"), 1, 1),
    ("sinterstore", lambda r: r.sinterstore("d", ["s", "q"]), 1, 1),
    ("zunionstore", lambda r: r.zunionstore("d2", ["z", "q"]), 1, 1),
    ("lmove", lambda r: r.lmove("l", "l2"), 0, 0),
    ("strlen", lambda r: r.strlen("k"), 0, 1),
    ("touch", lambda r: r.touch("s"), 1, 0),
    ("copy", lambda r: r.copy("s", "s9"), 1, 0),
    ("object", lambda r: r.object("encoding", "s"), 1, 0),
    ("hgetall miss", lambda r: r.hgetall("nohash"), 0, 1),
    ("sunion", lambda r: r.sunion(["s", "q"]), 1, 1),
    ("del", lambda r: r.delete("h"), 0, 0),
]


def test_keyspace_hits_count_reads_only(r):
    r.set("a", "1")
    r.rpush("l", "x")
    r.hset("h", "f", "v")
    r.sadd("s", "m")
    r.zadd("z", {"m": 1})

    def counts():
        i = r.info("stats")
        return i["keyspace_hits"], i["keyspace_misses"]

    wrong = []
    for name, fn, hits, misses in KEYSPACE_CASES:
        h0, m0 = counts()
        fn(r)
        h1, m1 = counts()
        if (h1 - h0, m1 - m0) != (hits, misses):
            wrong.append((name, h1 - h0, m1 - m0, hits, misses))
    assert wrong == []


def test_config(r):
    assert r.config_get("hash-max-listpack-entries") == {"hash-max-listpack-entries": "512"}
    got = r.config_get("zset-max-*")
    assert got["zset-max-listpack-entries"] == "128" and got["zset-max-listpack-value"] == "64"
    assert r.config_set("hash-max-listpack-entries", 4)
    assert r.config_get("hash-max-listpack-entries")["hash-max-listpack-entries"] == "4"
    r.config_set("hash-max-listpack-entries", 512)
    err(r.config_set, "no-such-param", 1,
        match="Unknown option or number of arguments for CONFIG SET - 'no-such-param'")
    err(r.execute_command, "CONFIG", "GET", match="wrong number of arguments for 'config|get' command")
    err(r.execute_command, "CONFIG", "FOO", match="unknown subcommand 'FOO'. Try CONFIG HELP.")
    assert r.config_resetstat()


def test_command_introspection(raw):
    c = raw()
    n = c.cmd("COMMAND", "COUNT")
    assert n.startswith(b":") and int(n[1:-2]) >= 140
    info = c.cmd("COMMAND", "INFO", "get", "nosuchcmd")
    assert info.startswith(b"*2\r\n*10\r\n$3\r\nget\r\n:2\r\n")
    assert info.endswith(b"$-1\r\n")
    names = c.cmd("COMMAND", "LIST")
    assert b"$4\r\nzadd\r\n" in names and b"$5\r\nlmpop\r\n" in names
    assert c.cmd("COMMAND", "DOCS", "get").startswith(b"*2\r\n$3\r\nget\r\n")
    assert c.cmd("COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2") == \
        b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"


def test_object_memory_debug(r):
    r.set("i", "12345")
    r.set("e", "short")
    r.set("raw", "x" * 100)
    assert r.object("encoding", "i") == b"int"
    assert r.object("encoding", "e") == b"embstr"
    assert r.object("encoding", "raw") == b"raw"
    assert r.object("encoding", "missing") is None
    assert r.object("refcount", "raw") == 1
    assert r.object("idletime", "raw") >= 0
    assert r.memory_usage("raw") > 100
    assert r.memory_usage("missing") is None
    assert r.execute_command("DEBUG", "SLEEP", "0")
    assert r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    assert b"encoding:raw" in r.execute_command("DEBUG", "OBJECT", "raw")
    err(r.execute_command, "DEBUG", "OBJECT", "missing", match="no such key")
    err(r.execute_command, "OBJECT", "FOO", "x", match="unknown subcommand 'FOO'. Try OBJECT HELP.")


def test_encodings_follow_thresholds(r):
    r.hset("h", mapping={"f%d" % i: "v" for i in range(10)})
    assert r.object("encoding", "h") == b"listpack"
    r.hset("h", "long", "x" * 100)
    assert r.object("encoding", "h") == b"hashtable"
    r.sadd("s", *range(10))
    assert r.object("encoding", "s") == b"intset"
    r.sadd("s", "abc")
    # Redis 7.2+: a small set of strings is a listpack (7.0: hashtable).
    small = b"hashtable" if os.environ.get("TROVE_TEST_TARGET", "") == "redis" else b"listpack"
    assert r.object("encoding", "s") == small
    r.sadd("s", *("m%d" % i for i in range(200)))
    assert r.object("encoding", "s") == b"hashtable"
    r.zadd("z", {"a": 1})
    assert r.object("encoding", "z") == b"listpack"
    r.zadd("z", {"m%d" % i: i for i in range(200)})
    assert r.object("encoding", "z") == b"skiplist"
    r.rpush("l", "a")
    assert r.object("encoding", "l") == b"quicklist"


def test_client_commands(r):
    assert isinstance(r.client_id(), int)
    assert r.client_setname("me")
    assert r.client_getname() in ("me", b"me")
    err(r.client_setname, "a b",
        match="Client names cannot contain spaces, newlines or special characters.")


def test_auth_without_password(r):
    err(r.execute_command, "AUTH", "pw",
        match="AUTH <password> called without any password configured for the default user. "
              "Are you sure your configuration is correct?")
