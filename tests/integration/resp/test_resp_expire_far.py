"""Expiries centuries ahead are kept to the millisecond, up to the largest
Redis accepts (INT64_MAX ms), and the ones whose ms form overflows are
refused with Redis 7's errors. Found by redis-py's own suite: EXPIREAT k
33177117420 read back 6091445510 (32-bit seconds). Checked against Redis 7.
"""

import time

import pytest
import redis

from resp_errors import err

FAR = 33177117420                 # seconds: the year 3021
INT64_MAX = 9223372036854775807
MAX_EXPIREAT = INT64_MAX // 1000  # 9223372036854775: larger overflows in ms


def now_ms():
    return int(time.time() * 1000)


def assert_ttls(r, key, at_ms):
    """TTL and PTTL agree with an absolute expiry at_ms (unix ms)."""
    before = now_ms()
    pttl = r.pttl(key)
    ttl = r.ttl(key)
    after = now_ms()
    assert at_ms - after - 1000 <= pttl <= at_ms - before + 1000
    assert abs(ttl - (pttl + 500) // 1000) <= 1


def test_expireat_centuries_ahead_reads_back_exactly(r):
    r.set("k", "v")
    assert r.execute_command("EXPIREAT", "k", FAR) == 1
    assert r.execute_command("EXPIRETIME", "k") == FAR
    assert r.execute_command("PEXPIRETIME", "k") == FAR * 1000
    assert_ttls(r, "k", FAR * 1000)
    assert r.get("k") == b"v"


def test_pexpireat_far_keeps_its_milliseconds(r):
    r.set("k", "v")
    assert r.execute_command("PEXPIREAT", "k", FAR * 1000 + 123) == 1
    assert r.execute_command("PEXPIRETIME", "k") == FAR * 1000 + 123
    assert r.execute_command("EXPIRETIME", "k") == FAR  # rounded to the nearest second
    assert_ttls(r, "k", FAR * 1000 + 123)
    assert r.execute_command("PEXPIREAT", "k", FAR * 1000 + 789) == 1
    assert r.execute_command("PEXPIRETIME", "k") == FAR * 1000 + 789
    assert r.execute_command("EXPIRETIME", "k") == FAR + 1


def test_largest_absolute_expiries_redis_accepts(r):
    r.set("k", "v")
    assert r.execute_command("EXPIREAT", "k", MAX_EXPIREAT) == 1
    assert r.execute_command("EXPIRETIME", "k") == MAX_EXPIREAT
    assert r.execute_command("PEXPIRETIME", "k") == MAX_EXPIREAT * 1000
    assert_ttls(r, "k", MAX_EXPIREAT * 1000)
    assert r.execute_command("PEXPIREAT", "k", INT64_MAX) == 1
    assert r.execute_command("PEXPIRETIME", "k") == INT64_MAX
    assert r.execute_command("EXPIRETIME", "k") == MAX_EXPIREAT + 1  # .807 rounds up
    assert_ttls(r, "k", INT64_MAX)
    assert r.get("k") == b"v"


def test_largest_relative_expiries_redis_accepts(r):
    r.set("k", "v")
    assert r.execute_command("EXPIRE", "k", 9000000000000000) == 1
    assert_ttls(r, "k", now_ms() + 9000000000000000 * 1000)
    assert r.execute_command("PEXPIRE", "k", 9223000000000000000) == 1
    assert_ttls(r, "k", now_ms() + 9223000000000000000)


def test_set_and_getex_take_far_expiries(r):
    assert r.execute_command("SET", "k", "v", "EXAT", MAX_EXPIREAT) is True
    assert r.execute_command("PEXPIRETIME", "k") == MAX_EXPIREAT * 1000
    assert r.execute_command("SET", "k", "v", "PXAT", INT64_MAX) is True
    assert r.execute_command("PEXPIRETIME", "k") == INT64_MAX
    assert r.execute_command("SET", "k", "v", "EX", 9000000000000000) is True
    assert_ttls(r, "k", now_ms() + 9000000000000000 * 1000)
    assert r.execute_command("GETEX", "k", "PXAT", INT64_MAX - 1) == b"v"
    assert r.execute_command("PEXPIRETIME", "k") == INT64_MAX - 1
    assert r.execute_command("GETEX", "k", "EXAT", FAR) == b"v"
    assert r.execute_command("PEXPIRETIME", "k") == FAR * 1000


def test_expiries_whose_milliseconds_overflow_are_refused(r):
    r.set("k", "v")
    assert r.execute_command("PEXPIREAT", "k", FAR * 1000 + 5) == 1
    for cmd, args in [
        ("expireat", [MAX_EXPIREAT + 1]),
        ("expireat", [-MAX_EXPIREAT - 1]),
        ("expire", [MAX_EXPIREAT]),       # fits in ms, not once now is added
        ("pexpire", [INT64_MAX]),
    ]:
        err(r.execute_command, cmd.upper(), "k", *args,
            match="invalid expire time in '%s' command" % cmd)
    for args in (["EX", MAX_EXPIREAT + 1], ["EX", MAX_EXPIREAT], ["PX", INT64_MAX],
                 ["EXAT", MAX_EXPIREAT + 1]):
        err(r.execute_command, "SET", "k", "w", *args,
            match="invalid expire time in 'set' command")
    for args in (["EXAT", MAX_EXPIREAT + 1], ["EX", MAX_EXPIREAT]):
        err(r.execute_command, "GETEX", "k", *args,
            match="invalid expire time in 'getex' command")
    err(r.execute_command, "PEXPIREAT", "k", INT64_MAX + 1,
        match="value is not an integer or out of range")
    # Nothing changed.
    assert r.get("k") == b"v"
    assert r.execute_command("PEXPIRETIME", "k") == FAR * 1000 + 5


def test_gt_and_lt_compare_far_expiries_exactly(r):
    r.set("k", "v")
    assert r.execute_command("EXPIREAT", "k", FAR) == 1
    assert r.execute_command("PEXPIREAT", "k", FAR * 1000 + 1, "GT") == 1
    assert r.execute_command("PEXPIREAT", "k", FAR * 1000, "GT") == 0
    assert r.execute_command("PEXPIREAT", "k", INT64_MAX, "LT") == 0
    assert r.execute_command("PEXPIRETIME", "k") == FAR * 1000 + 1


def test_far_expiry_survives_writes_that_keep_the_ttl(r):
    r.set("k", "9")
    assert r.execute_command("PEXPIREAT", "k", INT64_MAX - 7) == 1
    assert r.append("k", "9") == 2
    assert r.incr("k") == 100
    assert r.execute_command("SET", "k", "w", "KEEPTTL") is True
    assert r.execute_command("PEXPIRETIME", "k") == INT64_MAX - 7
    assert r.rename("k", "k2")
    assert r.execute_command("PEXPIRETIME", "k2") == INT64_MAX - 7
    assert r.copy("k2", "k3")
    assert r.execute_command("PEXPIRETIME", "k3") == INT64_MAX - 7
    assert r.persist("k3")
    assert r.ttl("k3") == -1


def test_far_expiry_on_collections(r):
    r.rpush("l", "a", "b")
    r.hset("h", "f", "v")
    r.sadd("s", "m")
    r.zadd("z", {"m": 1})
    for i, key in enumerate(("l", "h", "s", "z")):
        at = FAR * 1000 + i
        assert r.execute_command("PEXPIREAT", key, at) == 1
        assert r.execute_command("PEXPIRETIME", key) == at
    r.rpush("l", "c")
    r.hset("h", "g", "w")
    assert r.execute_command("PEXPIRETIME", "l") == FAR * 1000
    assert r.execute_command("PEXPIRETIME", "h") == FAR * 1000 + 1
