"""Hash field expiry (Redis 7.4): HEXPIRE HPEXPIRE HEXPIREAT HPEXPIREAT, HTTL
HPTTL HEXPIRETIME HPEXPIRETIME, HPERSIST -- per-field replies, conditions,
errors and their order, RESP2/RESP3 shapes; fields that expire, found by a
read (lazy) or with nobody reading (active), and what each hash command does
with them; keyspace events; OBJECT ENCODING (listpackex); RENAME, COPY, MOVE
and SWAPDB keeping the TTLs (and the renamed key still expiring); HSET
dropping a TTL and HINCRBY keeping it; WATCH; COMMAND metadata; and (Trove
only) MEMORY USAGE of a hash without TTLs left as it was.

Redis is the reference (src/t_hash.c, tests/unit/type/hash-field-expire.tcl,
src/commands/h*expire*.json). Debian's redis-server 7.0.15 predates these
commands, so against it every test here skips; a redis-server 7.4+ runs them.
Timing: TTLs of 100-300 ms, and every wait polls with a deadline.
"""

import os
import time

import pytest
import redis

from conftest import resp_target
from resp_errors import err
from keyspace_observe import keyevents, listen  # noqa: E402

SERVER_ARGS = ["-t", "2"]

TARGET = resp_target()
ON_REDIS = TARGET == "redis"
# TSan builds run several times slower: deadlines are scaled.
SLOW = 10 if "tsan" in os.environ.get("TROVE_BIN", "") else 1

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
NOT_INT = "value is not an integer or out of range"
NO_FIELDS = "Mandatory argument FIELDS is missing or not at the right position"
MISMATCH = "The `numfields` parameter must match the number of arguments"
EXPIRE_COUNT = "Parameter `numFields` should be greater than 0"
READ_COUNT = "Number of fields must be a positive integer"
NEGATIVE = "invalid expire time, must be >= 0"
MAX_ABS_MS = (1 << 46) - 1  # Redis's HFE_MAX_ABS_TIME_MSEC

SET_CMDS = ["HEXPIRE", "HPEXPIRE", "HEXPIREAT", "HPEXPIREAT"]
TTL_CMDS = ["HTTL", "HPTTL", "HEXPIRETIME", "HPEXPIRETIME"]


@pytest.fixture(autouse=True)
def _needs_field_expiry(r):
    """Skips against a server without the commands (Redis before 7.4), and
    puts back what a test may change."""
    info = r.execute_command("COMMAND INFO", "hexpire")
    if not info or info[0] is None:
        pytest.skip("hash field expiry: Redis 7.4+; this server predates it")
    entries = r.config_get("hash-max-listpack-entries")["hash-max-listpack-entries"]
    yield
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    r.config_set("notify-keyspace-events", "")
    r.config_set("hash-max-listpack-entries", entries)


def x(r, *args):
    return r.execute_command(*args)


def now_ms():
    return int(time.time() * 1000)


def wait_until(fn, timeout=3.0, step=0.02):
    deadline = time.monotonic() + timeout * SLOW
    while time.monotonic() < deadline:
        if fn():
            return True
        time.sleep(step)
    return fn()


def lazy_only(r):
    """Only lazy expiry from here on (restored by the autouse fixture)."""
    x(r, "DEBUG", "SET-ACTIVE-EXPIRE", "0")


def hashtable(r):
    x(r, "CONFIG", "SET", "hash-max-listpack-entries", "0")


# ---- setting TTLs ---------------------------------------------------------------

@pytest.mark.parametrize("cmd", SET_CMDS)
def test_missing_key_answers_minus_two_per_field(r, cmd):
    t = {"HEXPIREAT": int(time.time()) + 100, "HPEXPIREAT": now_ms() + 100000}.get(cmd, 1000)
    assert x(r, cmd, "nokey", t, "FIELDS", 1, "a") == [-2]
    assert x(r, cmd, "nokey", t, "FIELDS", 2, "a", "b") == [-2, -2]
    assert r.exists("nokey") == 0


@pytest.mark.parametrize("cmd", TTL_CMDS + ["HPERSIST"])
def test_missing_key_reads_answer_minus_two(r, cmd):
    assert x(r, cmd, "nokey", "FIELDS", 1, "a") == [-2]
    assert x(r, cmd, "nokey", "FIELDS", 3, "a", "b", "c") == [-2, -2, -2]


@pytest.mark.parametrize("encoding", ["listpack", "hashtable"])
def test_set_and_read_back_every_unit(r, encoding):
    if encoding == "hashtable":
        hashtable(r)
    r.hset("h", mapping={"f1": "v1", "f2": "v2", "f3": "v3", "f4": "v4"})
    assert x(r, "HEXPIRE", "h", 100, "FIELDS", 2, "f1", "nosuch") == [1, -2]
    assert x(r, "HPEXPIRE", "h", 200000, "FIELDS", 1, "f2") == [1]
    at_s = int(time.time()) + 300
    assert x(r, "HEXPIREAT", "h", at_s, "FIELDS", 1, "f3") == [1]
    at_ms = now_ms() + 400000
    assert x(r, "HPEXPIREAT", "h", at_ms, "FIELDS", 1, "f4") == [1]
    assert 99 <= x(r, "HTTL", "h", "FIELDS", 1, "f1")[0] <= 100
    assert 190000 < x(r, "HPTTL", "h", "FIELDS", 1, "f2")[0] <= 200000
    assert x(r, "HEXPIRETIME", "h", "FIELDS", 1, "f3") == [at_s]
    assert x(r, "HPEXPIRETIME", "h", "FIELDS", 1, "f4") == [at_ms]
    assert x(r, "HEXPIRETIME", "h", "FIELDS", 1, "f4") == [(at_ms + 999) // 1000]
    # Several fields in one call, in argument order; a field without a TTL is -1.
    r.hset("h", "plain", "x")
    assert x(r, "HPEXPIRETIME", "h", "FIELDS", 3, "f4", "plain", "nosuch") == [at_ms, -1, -2]
    assert r.hgetall("h") == {b"f1": b"v1", b"f2": b"v2", b"f3": b"v3", b"f4": b"v4",
                              b"plain": b"x"}


def test_httl_rounds_seconds_up(r):
    r.hset("h", "f", "v")
    x(r, "HPEXPIRE", "h", 1500, "FIELDS", 1, "f")
    assert x(r, "HTTL", "h", "FIELDS", 1, "f") == [2]  # (ms + 999) / 1000
    x(r, "HPEXPIRE", "h", 1000, "FIELDS", 1, "f")
    assert x(r, "HTTL", "h", "FIELDS", 1, "f")[0] in (0, 1)


@pytest.mark.parametrize("encoding", ["listpack", "hashtable"])
def test_conditions_nx_xx_gt_lt(r, encoding):
    if encoding == "hashtable":
        hashtable(r)
    r.hset("h", mapping={"f1": "1", "f2": "2", "f3": "3"})
    assert x(r, "HPEXPIRE", "h", 100000, "NX", "FIELDS", 1, "f1") == [1]
    assert x(r, "HPEXPIRE", "h", 100000, "NX", "FIELDS", 2, "f1", "f2") == [0, 1]
    assert x(r, "HPEXPIRE", "h", 100000, "XX", "FIELDS", 2, "f1", "f3") == [1, 0]
    # GT: a field without a TTL never passes; LT: it always does.
    assert x(r, "HPEXPIRE", "h", 50000, "GT", "FIELDS", 2, "f1", "f3") == [0, 0]
    assert x(r, "HPEXPIRE", "h", 150000, "GT", "FIELDS", 1, "f1") == [1]
    assert x(r, "HPEXPIRE", "h", 120000, "LT", "FIELDS", 3, "f1", "f2", "f3") == [1, 0, 1]
    # Case-insensitive words.
    assert x(r, "HPEXPIRE", "h", 90000, "lt", "fields", 1, "f3") == [1]
    assert 80000 < x(r, "HPTTL", "h", "FIELDS", 1, "f3")[0] <= 90000


def test_time_in_the_past_deletes_fields_and_then_the_hash(r):
    r.hset("h", mapping={"f1": "1", "f2": "2", "f3": "3", "f4": "4"})
    x(r, "HEXPIRE", "h", 1000, "NX", "FIELDS", 1, "f4")
    past = now_ms() - 1000
    # f4 fails NX (it has a TTL) and stays; the others go at once.
    assert x(r, "HPEXPIREAT", "h", past, "NX", "FIELDS", 4, "f1", "f2", "nosuch", "f4") == \
        [2, 2, -2, 0]
    assert sorted(r.hkeys("h")) == [b"f3", b"f4"]
    # 0 seconds from now is "now": deleted too.
    assert x(r, "HEXPIRE", "h", 0, "FIELDS", 1, "f3") == [2]
    assert x(r, "HEXPIREAT", "h", 0, "FIELDS", 1, "f4") == [2]
    assert r.exists("h") == 0


def test_limits_of_the_expire_time(r):
    r.hset("h", "f", "v")
    assert x(r, "HPEXPIRE", "h", MAX_ABS_MS - now_ms() - 10000, "FIELDS", 1, "f") == [1]
    err(x, r, "HPEXPIRE", "h", MAX_ABS_MS - now_ms() + 1000, "FIELDS", 1, "f",
        match="invalid expire time in 'hpexpire' command")
    err(x, r, "HPEXPIREAT", "h", MAX_ABS_MS + 1, "FIELDS", 1, "f",
        match="invalid expire time in 'hpexpireat' command")
    assert x(r, "HPEXPIREAT", "h", MAX_ABS_MS, "FIELDS", 1, "f") == [1]
    assert x(r, "HPEXPIRETIME", "h", "FIELDS", 1, "f") == [MAX_ABS_MS]
    err(x, r, "HEXPIRE", "h", (1 << 48) // 1000, "FIELDS", 1, "f",
        match="invalid expire time in 'hexpire' command")
    err(x, r, "HEXPIREAT", "h", (1 << 48) // 1000 + int(time.time()) + 100, "FIELDS", 1, "f",
        match="invalid expire time in 'hexpireat' command")
    err(x, r, "HPEXPIRE", "h", 1 << 48, "FIELDS", 1, "f",
        match="invalid expire time in 'hpexpire' command")
    for big in ("9223372036854775807", "-9223372036854775808"):
        msg = err(x, r, "HEXPIRE", "h", big, "FIELDS", 1, "f")
        assert msg in ("invalid expire time in 'hexpire' command", NEGATIVE)


# ---- errors ---------------------------------------------------------------------------

@pytest.mark.parametrize("args,msg", [
    (["HEXPIRE", "h", -1, "FIELDS", 1, "f"], NEGATIVE),
    (["HPEXPIREAT", "h", -5, "FIELDS", 1, "f"], NEGATIVE),
    (["HEXPIRE", "h", "abc", "FIELDS", 1, "f"], NOT_INT),
    (["HEXPIRE", "h", "1.5", "FIELDS", 1, "f"], NOT_INT),
    (["HEXPIRE", "h", 10, "FIELDS", 0, "f"], EXPIRE_COUNT),
    (["HEXPIRE", "h", 10, "FIELDS", -1, "f"], EXPIRE_COUNT),
    (["HEXPIRE", "h", 10, "FIELDS", "x", "f"], EXPIRE_COUNT),
    (["HPEXPIRE", "h", 10, "NX", "FIELDS", 4, "f1", "f2", "f3"], MISMATCH),
    (["HPEXPIRE", "h", 10, "NX", "FIELDS", 2, "f1", "f2", "f3"], MISMATCH),
    (["HEXPIRE", "h", 10, "FIELDS", 1, "f", "g"], MISMATCH),
    (["HEXPIRE", "h", 10, "NX", "XX", "FIELDS", 1, "f"], NO_FIELDS),
    (["HEXPIRE", "h", 10, "GT", "LT", "FIELDS", 1, "f"], NO_FIELDS),
    (["HEXPIRE", "h", 10, "BOGUS", 1, "f"], NO_FIELDS),
    (["HEXPIRE", "h", 10, "NX", 1, "f", "g"], NO_FIELDS),
    (["HTTL", "h", "FIELDS", 0, "f"], READ_COUNT),
    (["HTTL", "h", "FIELDS", "x", "f"], READ_COUNT),
    (["HPTTL", "h", "FIELDS", 3, "f1", "f2"], MISMATCH),
    (["HPTTL", "h", "FIELDS", 1, "f1", "f2"], MISMATCH),
    (["HEXPIRETIME", "h", "FIELD", 1, "f"], NO_FIELDS),
    (["HPERSIST", "h", "FIELDS", 0, "f"], READ_COUNT),
    (["HPERSIST", "h", "FIELDS", 2, "f1", "f2", "f3"], MISMATCH),
    (["HPERSIST", "h", "NOPE", 1, "f"], NO_FIELDS),
])
def test_argument_errors(r, args, msg):
    r.hset("h", "f", "v")
    err(x, r, *args, match=msg)
    assert r.hget("h", "f") == b"v"  # nothing changed
    # The same errors for a key that does not exist.
    err(x, r, *[("missing" if a == "h" else a) for a in args], match=msg)


@pytest.mark.parametrize("args", [
    ["HEXPIRE", "h", 10, "FIELDS", 1], ["HEXPIRE", "h", 10, "FIELDS"], ["HPEXPIREAT", "h"],
    ["HTTL", "h", "FIELDS", 1], ["HPTTL", "h"], ["HPERSIST", "h"], ["HPERSIST", "h", "FIELDS", 1],
])
def test_wrong_arity(r, args):
    msg = err(x, r, *args)
    assert msg == "wrong number of arguments for '%s' command" % args[0].lower()


@pytest.mark.parametrize("args", [
    ["HEXPIRE", "s", 10, "FIELDS", 1, "f"],
    ["HPEXPIREAT", "s", 10, "FIELDS", 1, "f"],
    # The type is checked before the arguments, as Redis does.
    ["HEXPIRE", "s", -1, "FIELDS", 1, "f"],
    ["HEXPIRE", "s", 10, "FIELDS", 5, "f"],
    ["HTTL", "s", "FIELDS", 1, "f"], ["HPEXPIRETIME", "s", "FIELDS", 1, "f"],
    ["HPERSIST", "s", "FIELDS", 1, "f"], ["HPERSIST", "s", "NOPE", 1, "f"],
])
def test_wrong_type(r, args):
    r.set("s", "x")
    err(x, r, *args, match=WRONGTYPE)
    assert r.get("s") == b"x"


def test_string_commands_on_a_hash_with_ttls_are_wrongtype(r):
    r.hset("h", "f", "v")
    x(r, "HEXPIRE", "h", 100, "FIELDS", 1, "f")
    err(r.get, "h", match=WRONGTYPE)
    err(r.lpush, "h", "a", match=WRONGTYPE)


# ---- reply shapes -----------------------------------------------------------------------

@pytest.mark.parametrize("proto", [2, 3])
def test_reply_shapes(raw, proto, r):
    c = raw()
    if proto == 3:
        c.cmd("HELLO", "3")
    r.hset("h", mapping={"a": "1", "b": "2"})
    assert c.cmd("HPEXPIRE", "h", "100000", "FIELDS", "2", "a", "zz") == b"*2\r\n:1\r\n:-2\r\n"
    assert c.cmd("HTTL", "h", "FIELDS", "2", "b", "zz") == b"*2\r\n:-1\r\n:-2\r\n"
    assert c.cmd("HTTL", "nokey", "FIELDS", "1", "a") == b"*1\r\n:-2\r\n"
    assert c.cmd("HPERSIST", "h", "FIELDS", "3", "a", "b", "zz") == b"*3\r\n:1\r\n:-1\r\n:-2\r\n"
    assert c.cmd("HEXPIRE", "h", "0", "FIELDS", "1", "b") == b"*1\r\n:2\r\n"
    assert c.cmd("HEXPIRE", "h", "-1", "FIELDS", "1", "a") == \
        b"-ERR invalid expire time, must be >= 0\r\n"


# ---- lazy expiry: what each command does with a passed field ---------------------------

def expired_subkeys(r):
    return r.info("stats").get("expired_subkeys", 0)


@pytest.mark.parametrize("encoding", ["listpack", "hashtable"])
def test_lazy_expiry_read_by_read(r, encoding):
    lazy_only(r)
    if encoding == "hashtable":
        hashtable(r)
    r.hset("h", mapping={"f1": "v1", "f2": "v2", "f3": "v3"})
    x(r, "HPEXPIRE", "h", 1, "NX", "FIELDS", 3, "f1", "f2", "f3")
    time.sleep(0.02)
    assert r.exists("h") == 1      # nothing deleted yet
    assert r.hlen("h") == 3        # HLEN counts fields not yet deleted (Redis)
    before = expired_subkeys(r)
    assert r.hexists("h", "f1") is False
    assert r.hlen("h") == 2
    assert r.hget("h", "f2") is None
    assert r.hlen("h") == 1
    assert r.hstrlen("h", "f3") == 0
    assert r.hlen("h") == 0
    assert r.exists("h") == 0      # the last field took the hash with it
    assert expired_subkeys(r) - before == 3


@pytest.mark.parametrize("encoding", ["listpack", "hashtable"])
def test_listings_skip_passed_fields_without_deleting(r, encoding):
    lazy_only(r)
    if encoding == "hashtable":
        hashtable(r)
    r.hset("h", mapping={"f%d" % i: "v%d" % i for i in range(1, 7)})
    x(r, "HPEXPIRE", "h", 1, "FIELDS", 3, "f2", "f4", "f6")
    time.sleep(0.02)
    before = expired_subkeys(r)
    assert r.hgetall("h") == {b"f1": b"v1", b"f3": b"v3", b"f5": b"v5"}
    assert sorted(r.hkeys("h")) == [b"f1", b"f3", b"f5"]
    assert sorted(r.hvals("h")) == [b"v1", b"v3", b"v5"]
    cursor, found = 0, {}
    while True:
        cursor, page = r.hscan("h", cursor, count=2)
        found.update(page)
        if cursor == 0:
            break
    assert found == {b"f1": b"v1", b"f3": b"v3", b"f5": b"v5"}
    assert r.hlen("h") == 6  # nothing was deleted
    assert expired_subkeys(r) == before
    # All fields passed: the listings are empty though the key exists.
    r.delete("g")
    r.hset("g", mapping={"a": "1", "b": "2"})
    x(r, "HPEXPIRE", "g", 1, "FIELDS", 2, "a", "b")
    time.sleep(0.02)
    assert r.hgetall("g") == {}
    assert r.hkeys("g") == []
    assert r.exists("g") == 1


def test_hmget_nulls_passed_fields(r):
    lazy_only(r)
    r.hset("h1", mapping={"f1": "v1", "f2": "v2", "f3": "v3"})
    r.hset("h2", mapping={"f1": "v1", "f2": "v2", "f3": "v3"})
    x(r, "HPEXPIRE", "h1", 10000000, "NX", "FIELDS", 1, "f1")
    x(r, "HPEXPIRE", "h1", 1, "NX", "FIELDS", 2, "f2", "f3")
    x(r, "HPEXPIRE", "h2", 1, "NX", "FIELDS", 3, "f1", "f2", "f3")
    time.sleep(0.02)
    assert r.hmget("h1", "f1", "f2", "f3") == [b"v1", None, None]
    assert r.hmget("h2", "f1", "f2", "f3") == [None, None, None]
    assert r.hlen("h1") == 1
    assert r.exists("h2") == 0


def test_hrandfield_deletes_every_passed_field_first(r):
    lazy_only(r)
    r.hset("h", mapping={"f%d" % i: "v" for i in range(1, 6)})
    x(r, "HPEXPIRE", "h", 1, "FIELDS", 2, "f1", "f2")
    time.sleep(0.02)
    before = expired_subkeys(r)
    assert sorted(r.hrandfield("h", 5)) == [b"f3", b"f4", b"f5"]
    assert expired_subkeys(r) - before == 2
    x(r, "HPEXPIRE", "h", 1, "FIELDS", 3, "f3", "f4", "f5")
    time.sleep(0.02)
    assert r.hrandfield("h", 5) == []
    assert r.exists("h") == 0
    r.hset("h", mapping={"a": "1"})
    x(r, "HPEXPIRE", "h", 1, "FIELDS", 1, "a")
    time.sleep(0.02)
    assert r.hrandfield("h") is None
    assert r.exists("h") == 0


def test_hdel_counts_a_passed_field(r):
    lazy_only(r)
    r.hset("h", mapping={"a": "1", "b": "2"})
    x(r, "HPEXPIRE", "h", 1, "FIELDS", 1, "a")
    time.sleep(0.02)
    assert r.hdel("h", "a") == 1
    assert r.hgetall("h") == {b"b": b"2"}


def test_hincrby_restarts_a_passed_field_and_keeps_a_live_ttl(r):
    lazy_only(r)
    r.hset("h1", mapping={"f1": "10", "f2": "2"})
    r.hset("h2", "f1", "10")
    x(r, "HPEXPIRE", "h1", 1, "FIELDS", 1, "f1")
    x(r, "HPEXPIRE", "h2", 1, "FIELDS", 1, "f1")
    time.sleep(0.02)
    assert r.hincrby("h1", "f1", 1) == 1
    assert r.hincrby("h2", "f1", 1) == 1  # the hash was deleted and made anew
    assert x(r, "HTTL", "h2", "FIELDS", 1, "f1") == [-1]
    r.hset("h3", "f", "10")
    x(r, "HPEXPIRE", "h3", 100000, "FIELDS", 1, "f")
    assert r.hincrby("h3", "f", 2) == 12
    assert r.hincrbyfloat("h3", "f", 0.5) == 12.5
    assert 90000 < x(r, "HPTTL", "h3", "FIELDS", 1, "f")[0] <= 100000


def test_hsetnx_sets_a_passed_field(r):
    lazy_only(r)
    r.hset("h", mapping={"a": "old"})
    x(r, "HPEXPIRE", "h", 1, "FIELDS", 1, "a")
    time.sleep(0.02)
    assert r.hsetnx("h", "a", "new") == 1
    assert r.hget("h", "a") == b"new"
    assert x(r, "HTTL", "h", "FIELDS", 1, "a") == [-1]


def test_hset_drops_the_ttl(r):
    r.hset("h", mapping={"f1": "v1", "f2": "v2", "f3": "v3"})
    x(r, "HPEXPIRE", "h", 100000, "NX", "FIELDS", 1, "f1")
    x(r, "HPEXPIRE", "h", 200, "NX", "FIELDS", 1, "f2")
    assert r.hset("h", "f2", "v4") == 0  # an update, not a new field
    assert x(r, "HTTL", "h", "FIELDS", 2, "f2", "f3") == [-1, -1]
    assert x(r, "HTTL", "h", "FIELDS", 1, "f1")[0] > 0
    time.sleep(0.3)
    assert r.hget("h", "f2") == b"v4"
    # HMSET too; new fields count as new.
    x(r, "HPEXPIRE", "h", 100000, "FIELDS", 1, "f3")
    r.hmset("h", {"f3": "x"})
    assert x(r, "HTTL", "h", "FIELDS", 1, "f3") == [-1]
    assert r.hset("h", mapping={"f3": "y", "f5": "z"}) == 1


def test_hpersist(r):
    r.hset("h", mapping={"f1": "v1", "f2": "v2"})
    x(r, "HPEXPIRE", "h", 200, "NX", "FIELDS", 2, "f1", "f2")
    assert x(r, "HPERSIST", "h", "FIELDS", 2, "f1", "f2") == [1, 1]
    assert x(r, "HPERSIST", "h", "FIELDS", 1, "f1") == [-1]
    time.sleep(0.35)
    assert r.hgetall("h") == {b"f1": b"v1", b"f2": b"v2"}
    assert x(r, "HTTL", "h", "FIELDS", 2, "f1", "f2") == [-1, -1]


def test_a_passed_field_is_gone_for_ttl_reads_and_hpersist(r):
    lazy_only(r)
    r.hset("h", mapping={"a": "1", "b": "2"})
    x(r, "HPEXPIRE", "h", 1, "FIELDS", 1, "a")
    time.sleep(0.02)
    for cmd in TTL_CMDS + ["HPERSIST"]:
        assert x(r, cmd, "h", "FIELDS", 1, "a") == [-2], cmd
    assert r.hlen("h") == 2  # none of them deleted it


# ---- active expiry ------------------------------------------------------------------------

@pytest.mark.parametrize("encoding", ["listpack", "hashtable"])
def test_active_expiry_deletes_fields_and_emptied_hashes(r, encoding):
    if encoding == "hashtable":
        hashtable(r)
    for n in (1, 17, 40):
        for i in range(n):
            r.hset("same%d" % n, "f%d" % i, "v")
            r.hset("mix%d" % n, mapping={"f%d" % i: "v", "keep%d" % i: "v"})
        x(r, "HPEXPIRE", "same%d" % n, 150, "FIELDS", n, *["f%d" % i for i in range(n)])
        x(r, "HPEXPIRE", "mix%d" % n, 150, "FIELDS", n, *["f%d" % i for i in range(n)])
    # Nobody reads them: HLEN and DBSIZE delete nothing themselves.
    assert wait_until(lambda: r.dbsize() == 3), r.keys()
    for n in (1, 17, 40):
        assert r.exists("same%d" % n) == 0
        assert wait_until(lambda: r.hlen("mix%d" % n) == n)
        assert r.hexists("mix%d" % n, "f0") is False


def test_active_expiry_of_a_big_hash(r):
    for i in range(0, 2048, 256):
        r.hset("big", mapping={"f%d" % j: "v" for j in range(i, i + 256)})
    x(r, "HPEXPIRE", "big", 100, "FIELDS", 2048, *["f%d" % j for j in range(2048)])
    assert r.object("encoding", "big") == b"hashtable"
    assert wait_until(lambda: r.exists("big") == 0, timeout=5)


def test_active_expiry_off_then_on(r):
    lazy_only(r)
    r.hset("h", "f", "v")
    x(r, "HPEXPIRE", "h", 50, "FIELDS", 1, "f")
    time.sleep(0.4)
    assert r.exists("h") == 1
    x(r, "DEBUG", "SET-ACTIVE-EXPIRE", "1")
    assert wait_until(lambda: r.exists("h") == 0)


def test_expired_subkeys_counts_active_expiry(r):
    r.config_resetstat()
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    x(r, "HPEXPIRE", "h", 100, "FIELDS", 2, "a", "b")
    assert wait_until(lambda: expired_subkeys(r) == 2)
    assert r.hgetall("h") == {b"c": b"3"}


# ---- keys moving: RENAME COPY MOVE SWAPDB --------------------------------------------

@pytest.mark.parametrize("encoding", ["listpack", "hashtable"])
def test_rename_keeps_ttls_and_the_new_key_expires(r, encoding):
    if encoding == "hashtable":
        hashtable(r)
    r.hset("h", mapping={"f1": "v1", "f2": "v2"})
    x(r, "HPEXPIRE", "h", 300, "FIELDS", 1, "f1")
    r.rename("h", "h2")
    assert r.exists("h") == 0
    assert 0 < x(r, "HPTTL", "h2", "FIELDS", 1, "f1")[0] <= 300
    assert wait_until(lambda: r.hlen("h2") == 1)  # active expiry found the new name
    assert r.hgetall("h2") == {b"f2": b"v2"}
    x(r, "HPEXPIRE", "h2", 100, "FIELDS", 1, "f2")
    assert wait_until(lambda: r.exists("h2") == 0)


def test_copy_keeps_ttls(r):
    r.hset("h1", mapping={"f1": "v1", "f2": "v2"})
    big = {"f%d" % i: "v" for i in range(200)}
    r.hset("hb", mapping=big)
    x(r, "HPEXPIRE", "h1", 200, "FIELDS", 1, "f1")
    x(r, "HPEXPIRE", "hb", 200, "FIELDS", 200, *big.keys())
    assert r.copy("h1", "h1c") and r.copy("hb", "hbc")
    assert x(r, "HPEXPIRETIME", "h1c", "FIELDS", 1, "f1") == \
        x(r, "HPEXPIRETIME", "h1", "FIELDS", 1, "f1")
    assert r.hget("h1c", "f1") == b"v1"
    assert wait_until(lambda: r.exists("hb") == 0 and r.exists("hbc") == 0)
    assert wait_until(lambda: r.hlen("h1") == 1 and r.hlen("h1c") == 1)


def test_copy_to_another_db_keeps_ttls(r, resp_port):
    r.hset("h1", mapping={"f1": "v1", "f2": "v2"})
    x(r, "HPEXPIRE", "h1", 100000, "FIELDS", 1, "f2")
    assert r.copy("h1", "h1", destination_db=1)
    r1 = redis.Redis(host="127.0.0.1", port=resp_port, db=1)
    try:
        assert x(r1, "HTTL", "h1", "FIELDS", 2, "f1", "f2")[0] == -1
        assert x(r1, "HTTL", "h1", "FIELDS", 1, "f2")[0] > 90
    finally:
        r1.flushdb()
        r1.close()


def test_move_and_swapdb_keep_ttls_and_keep_expiring(r, resp_port):
    r.hset("m", "f", "v")
    x(r, "HPEXPIRE", "m", 250, "FIELDS", 1, "f")
    assert r.move("m", 1)
    r1 = redis.Redis(host="127.0.0.1", port=resp_port, db=1)
    try:
        assert r.exists("m") == 0
        assert r1.hget("m", "f") == b"v"
        assert 0 < x(r1, "HPTTL", "m", "FIELDS", 1, "f")[0] <= 250
        assert wait_until(lambda: r1.exists("m") == 0)
        r.hset("s", mapping={"f": "v", "g": "w"})
        x(r, "HPEXPIRE", "s", 250, "FIELDS", 1, "f")
        x(r, "SWAPDB", 0, 1)
        assert r.exists("s") == 0
        assert r1.hget("s", "f") == b"v"
        assert wait_until(lambda: r1.hlen("s") == 1)
        assert r1.hgetall("s") == {b"g": b"w"}
    finally:
        r1.flushdb()
        r1.close()


# ---- encodings -----------------------------------------------------------------------

def test_object_encoding(r):
    r.hset("h", mapping={"f%d" % i: "v" for i in range(5)})
    assert r.object("encoding", "h") == b"listpack"
    x(r, "HPEXPIRE", "h", 100000, "FIELDS", 2, "f1", "f3")
    assert r.object("encoding", "h") == b"listpackex"
    # Once listpackex, it stays so (Redis keeps the encoding with no TTL left).
    x(r, "HPERSIST", "h", "FIELDS", 2, "f1", "f3")
    assert r.object("encoding", "h") == b"listpackex"
    x(r, "CONFIG", "SET", "hash-max-listpack-entries", "10")
    for i in range(5, 11):
        r.hset("h", "f%d" % i, "v")
    assert r.object("encoding", "h") == b"hashtable"
    r.hset("big", "f", "x" * 100)  # past hash-max-listpack-value
    x(r, "HPEXPIRE", "big", 100000, "FIELDS", 1, "f")
    assert r.object("encoding", "big") == b"hashtable"


def test_listpackex_order_is_ttl_first(r):
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3", "d": "4"})
    x(r, "HPEXPIRE", "h", 200000, "FIELDS", 1, "c")
    x(r, "HPEXPIRE", "h", 100000, "FIELDS", 1, "b")
    assert r.hkeys("h") == [b"b", b"c", b"a", b"d"]
    x(r, "HPERSIST", "h", "FIELDS", 1, "b")  # re-inserted last
    assert r.hkeys("h") == [b"c", b"a", b"d", b"b"]


def test_converting_to_a_hashtable_keeps_ttls(r):
    lazy_only(r)
    x(r, "CONFIG", "SET", "hash-max-listpack-entries", "10")
    r.hset("h", mapping={"f%d" % i: "v%d" % i for i in range(1, 6)})
    x(r, "HPEXPIRE", "h", 1, "FIELDS", 2, "f2", "f4")
    for i in range(6, 11):
        r.hset("h", "f%d" % i, "v%d" % i)
    time.sleep(0.05)
    assert sorted(r.hkeys("h")) == sorted(b"f%d" % i for i in (1, 3, 5, 6, 7, 8, 9, 10))


# ---- keyspace events ------------------------------------------------------------------

def quiet(p, wait=0.3):
    m = p.get_message(timeout=wait)
    return m is None


def test_events_of_the_commands(r):
    p = listen(r, "Egh")
    try:
        r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
        x(r, "HEXPIRE", "h", 100, "FIELDS", 2, "a", "zz")
        x(r, "HEXPIRE", "h", 100, "NX", "FIELDS", 1, "a")  # nothing changes: no event
        x(r, "HPERSIST", "h", "FIELDS", 1, "a")
        x(r, "HPERSIST", "h", "FIELDS", 1, "a")  # nothing changes: no event
        x(r, "HEXPIRE", "h", 0, "FIELDS", 1, "a")  # deleted: hdel
        x(r, "HEXPIRE", "h", 0, "FIELDS", 2, "b", "c")  # the hash goes: hdel, del
        x(r, "HEXPIRE", "nokey", 100, "FIELDS", 1, "a")
        assert keyevents(p, 6) == ["hset h", "hexpire h", "hpersist h", "hdel h", "hdel h",
                                   "del h"]
        assert quiet(p)
    finally:
        p.close()


def test_events_of_lazy_expiry(r):
    lazy_only(r)
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    x(r, "HPEXPIRE", "h", 1, "FIELDS", 3, "a", "b", "c")
    time.sleep(0.02)
    p = listen(r, "Egh")
    try:
        assert r.hget("h", "a") is None
        assert r.hmget("h", "b", "c", "zz") == [None, None, None]  # one hexpired for both
        assert keyevents(p, 3) == ["hexpired h", "hexpired h", "del h"]
        assert quiet(p)
    finally:
        p.close()


def test_events_of_active_expiry(r):
    p = listen(r, "Egh")
    try:
        r.hset("h", mapping={"a": "1", "b": "2"})
        x(r, "HPEXPIRE", "h", 100, "FIELDS", 1, "a")
        x(r, "HPEXPIRE", "h", 800, "FIELDS", 1, "b")
        # One cycle takes a, a later one b and the emptied hash.
        assert keyevents(p, 6) == ["hset h", "hexpire h", "hexpire h", "hexpired h",
                                   "hexpired h", "del h"]
    finally:
        p.close()


# ---- WATCH ------------------------------------------------------------------------------

def test_watch_sees_hexpire_and_hpersist_not_httl(r, resp_port):
    other = redis.Redis(host="127.0.0.1", port=resp_port)
    try:
        r.hset("h", "f", "v")
        for change in (lambda: x(other, "HEXPIRE", "h", 100, "FIELDS", 1, "f"),
                       lambda: x(other, "HPERSIST", "h", "FIELDS", 1, "f")):
            with r.pipeline() as pipe:
                pipe.watch("h")
                change()
                pipe.multi()
                pipe.hget("h", "f")
                with pytest.raises(redis.WatchError):
                    pipe.execute()
        with r.pipeline() as pipe:
            pipe.watch("h")
            x(other, "HTTL", "h", "FIELDS", 1, "f")
            x(other, "HEXPIRE", "h", 100, "XX", "FIELDS", 1, "f")  # no TTL: nothing changes
            x(other, "HPERSIST", "h", "FIELDS", 1, "f")            # nothing to persist
            pipe.multi()
            pipe.hget("h", "f")
            assert pipe.execute() == [b"v"]
    finally:
        other.close()


def test_watch_sees_a_field_expiring(r, resp_port):
    """Redis signals the key modified when a field expires (lazily or
    actively), so an EXEC watching it fails."""
    other = redis.Redis(host="127.0.0.1", port=resp_port)
    try:
        r.hset("h", mapping={"a": "1", "b": "2"})
        x(r, "HPEXPIRE", "h", 150, "FIELDS", 1, "a")
        with r.pipeline() as pipe:
            pipe.watch("h")
            assert wait_until(lambda: other.hlen("h") == 1)  # active expiry; HLEN deletes nothing
            pipe.multi()
            pipe.hget("h", "b")
            with pytest.raises(redis.WatchError):
                pipe.execute()
    finally:
        other.close()


# ---- COMMAND metadata ----------------------------------------------------------------

def test_command_info(rd):
    infos = rd.execute_command("COMMAND INFO", "hexpire", "hpexpireat", "httl", "hpexpiretime",
                               "hpersist")
    by_name = {e[0]: e for e in infos}
    assert set(by_name) == {"hexpire", "hpexpireat", "httl", "hpexpiretime", "hpersist"}
    for name in ("hexpire", "hpexpireat"):
        e = by_name[name]
        assert (e[1], set(e[2]), e[3:6]) == (-6, {"write", "denyoom", "fast"}, [1, 1, 1]), e
        assert set(e[6]) == {"@write", "@hash", "@fast"}, e
    for name in ("httl", "hpexpiretime"):
        e = by_name[name]
        assert (e[1], set(e[2]), e[3:6]) == (-5, {"readonly", "fast"}, [1, 1, 1]), e
        assert set(e[6]) == {"@read", "@hash", "@fast"}, e
    e = by_name["hpersist"]
    assert (e[1], set(e[2]), set(e[6])) == (-5, {"write", "fast"}, {"@write", "@hash", "@fast"})
    assert rd.execute_command("COMMAND GETKEYS", "HEXPIRE", "k", "10", "FIELDS", "1", "f") == \
        ["k"]
    hashes = rd.execute_command("ACL", "CAT", "hash")
    for name in ("hexpire", "hpexpire", "hexpireat", "hpexpireat", "httl", "hpttl",
                 "hexpiretime", "hpexpiretime", "hpersist"):
        assert name in hashes, name


@pytest.mark.parametrize("args,flags", [
    (["hexpire", "k", "10", "FIELDS", "1", "f"], {"RW", "update"}),
    (["hpexpireat", "k", "10", "FIELDS", "1", "f"], {"RW", "update"}),
    (["hpersist", "k", "FIELDS", "1", "f"], {"RW", "update"}),
    (["httl", "k", "FIELDS", "1", "f"], {"RO", "access"}),
    (["hpexpiretime", "k", "FIELDS", "1", "f"], {"RO", "access"}),
])
def test_command_getkeysandflags(rd, args, flags):
    got = rd.execute_command("COMMAND GETKEYSANDFLAGS", *args)
    assert [(k, set(f)) for k, f in got] == [("k", flags)]


def test_acl_key_permissions(rd):
    rd.execute_command("ACL", "SETUSER", "hfe", "+@all", "%R~read*", "%W~write*")
    try:
        def ok(*a):
            return rd.execute_command("ACL", "DRYRUN", "hfe", *a) == "OK"

        # The TTL setters only update their key (RW update, no access): write.
        assert ok("HEXPIRE", "write", 10, "FIELDS", 1, "f")
        assert not ok("HEXPIRE", "read", 10, "FIELDS", 1, "f")
        assert ok("HPERSIST", "write", "FIELDS", 1, "f")
        assert not ok("HPERSIST", "read", "FIELDS", 1, "f")
        # The TTL readers read it (RO access).
        assert ok("HTTL", "read", "FIELDS", 1, "f")
        assert not ok("HTTL", "write", "FIELDS", 1, "f")
    finally:
        rd.execute_command("ACL", "DELUSER", "hfe")


# ---- Trove: memory ---------------------------------------------------------------------

def test_memory_usage_of_a_hash_without_ttls_is_unchanged(r):
    """Field TTLs cost nothing to a hash that has none: MEMORY USAGE is what it
    was before they existed (Trove's figures: key + 48, plus the compact bytes,
    or the heap hash's accounting + 64)."""
    if ON_REDIS:
        pytest.skip("Trove's own memory figures")
    r.hset("h", mapping={"f1": "v1", "f2": "v2"})
    assert r.memory_usage("h") == 62  # 49 + 13 bytes: count, then 4 strings of 1 + 2
    r.hset("big", "f", "x" * 65)  # a heap hash: 51 + (1 + 65 + 32) + 64
    assert r.memory_usage("big") == 213
    x(r, "HPEXPIRE", "h", 100000, "FIELDS", 1, "f1")
    assert r.memory_usage("h") > 62
    x(r, "HPEXPIRE", "big", 100000, "FIELDS", 1, "f")
    assert r.memory_usage("big") > 213
