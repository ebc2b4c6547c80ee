"""String commands through redis-py, checked against Redis 7 replies."""

import time

import pytest
import redis

from resp_errors import err


def test_set_get_options(r):
    assert r.set("k", "v") is True
    assert r.get("k") == b"v"
    assert r.set("k", "w", nx=True) is None
    assert r.set("n", "1", xx=True) is None
    assert r.set("k", "w", xx=True, get=True) == b"v"
    assert r.set("new", "1", nx=True, get=True) is None
    assert r.get("new") == b"1"
    assert r.set("e", "1", ex=100)
    assert 99 <= r.ttl("e") <= 100
    assert r.set("e", "2", keepttl=True)
    assert 99 <= r.ttl("e") <= 100
    assert r.set("e", "3")
    assert r.ttl("e") == -1
    assert r.set("px", "1", px=100000)
    assert 98000 <= r.pttl("px") <= 100500  # Trove: whole-second expiry
    at = int(time.time()) + 1000
    assert r.set("xa", "1", exat=at)
    assert r.expiretime("xa") == at
    err(r.execute_command, "SET", "k", "v", "NX", "XX", match="syntax error")
    err(r.execute_command, "SET", "k", "v", "EX", "10", "PX", "10", match="syntax error")
    err(r.execute_command, "SET", "k", "v", "KEEPTTL", "EX", "1", match="syntax error")
    err(r.execute_command, "SET", "k", "v", "EX", "0", match="invalid expire time in 'set' command")
    err(r.execute_command, "SET", "k", "v", "EX", "a", match="value is not an integer or out of range")
    err(r.execute_command, "SET", "k", "v", "BOGUS", match="syntax error")


def test_wrongtype(r):
    r.rpush("l", "a")
    err(r.get, "l", match="WRONGTYPE Operation against a key holding the wrong kind of value")
    err(r.append, "l", "x", match="WRONGTYPE Operation against a key holding the wrong kind of value")
    err(r.execute_command, "SET", "l", "v", "GET",
        match="WRONGTYPE Operation against a key holding the wrong kind of value")
    assert r.set("l", "plain")  # plain SET overwrites any type
    assert r.type("l") == b"string"


def test_setnx_setex_psetex_getset_getdel(r):
    assert r.setnx("a", "1") is True
    assert r.setnx("a", "2") is False
    assert r.setex("b", 100, "x")
    assert 99 <= r.ttl("b") <= 100
    assert r.psetex("c", 100000, "y")
    assert r.pttl("c") > 90000
    err(r.setex, "b", 0, "x", match="invalid expire time in 'setex' command")
    err(r.psetex, "b", -5, "x", match="invalid expire time in 'psetex' command")
    assert r.getset("a", "3") == b"1"
    assert r.getset("zz", "3") is None
    assert r.getdel("a") == b"3"
    assert r.getdel("a") is None
    assert r.exists("a") == 0


def test_getex(r):
    r.set("k", "v")
    assert r.getex("k", ex=100) == b"v"
    assert 99 <= r.ttl("k") <= 100
    assert r.getex("k", persist=True) == b"v"
    assert r.ttl("k") == -1
    assert r.getex("missing") is None
    err(r.execute_command, "GETEX", "k", "EX", "1", "PERSIST", match="syntax error")


def test_mget_mset_msetnx(r):
    assert r.mset({"a": "1", "b": "2"})
    assert r.mget("a", "b", "c") == [b"1", b"2", None]
    r.rpush("l", "x")
    assert r.mget("a", "l") == [b"1", None]
    assert r.msetnx({"c": "3", "a": "9"}) is False
    assert r.get("c") is None
    assert r.msetnx({"c": "3", "d": "4"}) is True
    err(r.execute_command, "MSET", "a", "1", "b", match="wrong number of arguments for 'mset' command")


def test_append_strlen_ranges(r):
    assert r.append("s", "Hello") == 5
    assert r.append("s", " World") == 11
    assert r.strlen("s") == 11
    assert r.strlen("missing") == 0
    assert r.getrange("s", 0, 4) == b"Hello"
    assert r.getrange("s", -5, -1) == b"World"
    assert r.getrange("s", 5, 2) == b""
    assert r.getrange("s", 0, 100) == b"Hello World"
    assert r.execute_command("SUBSTR", "s", 0, 0) == b"H"
    assert r.setrange("s", 6, "Redis") == 11
    assert r.get("s") == b"Hello Redis"
    assert r.setrange("pad", 3, "x") == 4
    assert r.get("pad") == b"\x00\x00\x00x"
    assert r.setrange("nothing", 0, "") == 0
    assert r.exists("nothing") == 0
    err(r.setrange, "s", -1, "x", match="offset is out of range")


def test_incr_decr(r):
    assert r.incr("n") == 1
    assert r.incrby("n", 10) == 11
    assert r.decr("n") == 10
    assert r.decrby("n", 20) == -10
    r.set("f", "1.5")
    err(r.incr, "f", match="value is not an integer or out of range")
    r.set("sp", " 1")
    err(r.incr, "sp", match="value is not an integer or out of range")
    r.set("max", "9223372036854775807")
    err(r.incr, "max", match="increment or decrement would overflow")
    err(r.execute_command, "INCRBY", "n", "x", match="value is not an integer or out of range")
    err(r.execute_command, "DECRBY", "n", "-9223372036854775808", match="decrement would overflow")
    r.set("t", "5", ex=100)
    r.incr("t")
    assert r.ttl("t") > 0


def test_incrbyfloat(r):
    assert r.incrbyfloat("f", 10.5) == 10.5
    assert r.execute_command("INCRBYFLOAT", "f", "0.1") == 10.6
    r.set("g", "5.0e3")
    assert r.execute_command("INCRBYFLOAT", "g", "2.0e2") == 5200.0
    assert r.get("g") == b"5200"
    r.set("bad", "abc")
    err(r.incrbyfloat, "bad", 1, match="value is not a valid float")
    err(r.execute_command, "INCRBYFLOAT", "f", "x", match="value is not a valid float")
    err(r.execute_command, "INCRBYFLOAT", "f", "inf",
        match="increment would produce NaN or Infinity")


def test_lcs(r):
    r.mset({"key1": "ohmytext", "key2": "mynewtext"})
    assert r.execute_command("LCS", "key1", "key2") == b"mytext"
    assert r.execute_command("LCS", "key1", "key2", "LEN") == 6
    res = r.execute_command("LCS", "key1", "key2", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN")
    assert res == [b"matches", [[[4, 7], [5, 8], 4]], b"len", 6]
    res = r.execute_command("LCS", "key1", "key2", "IDX")
    assert res == [b"matches", [[[4, 7], [5, 8]], [[2, 3], [0, 1]]], b"len", 6]
