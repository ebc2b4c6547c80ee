"""DUMP and RESTORE through redis-py and raw sockets: round trips of every
type (small and large, binary, empty members), every RESTORE option and
error, TTL/ABSTTL/past TTLs, REPLACE over another type, keyspace events and
WATCH, payloads captured from redis-server 7.0.15 (restored here with the
same contents), the older RDB forms Redis 7.x still loads (built here), and
malformed payloads: every truncation of a valid body (with a correct
footer) is "Bad data format", never a crash.

Redis is the reference: every test without the `trove` fixture also runs
against redis-server (TROVE_TEST_TARGET=redis). Cross-server compatibility
runs both ways through the KNOWN payloads: test_known_payloads_restore
restores them on either server (run against redis-server 7.0.15, it proves
Redis loads what Trove writes), and the Trove-only test_trove_dump_bytes
checks that Trove's DUMP produces exactly those bytes.

Hashes with field TTLs (Redis 7.4's RDB types 22-25) have their own section
at the end; they skip against a server without field TTLs (7.0.15).

Redis's own unit (tests/unit/dump.tcl) has 27 tests. Its 15 MIGRATE tests
do not apply (Trove has no MIGRATE: "unknown command"). Of the 12 DUMP/
RESTORE ones, all are covered here but two: "RESTORE can set LRU" restores
with IDLETIME 1000, and Trove's last-access clock reaches back only to its
engine's start (test_restore_idletime_is_clamped); "RESTORE can set LFU"
needs an LFU maxmemory-policy, which Trove does not have.
"""

import base64
import math
import struct
import time
import zlib

import pytest
import redis

from conftest import resp_target
from resp_errors import err
from keyspace_observe import keyevents  # noqa: E402

TARGET = resp_target()
ON_TROVE = TARGET == "trove"

BAD_DATA = "Bad data format"
BAD_FOOTER = "DUMP payload version or checksum are wrong"
BUSY = "Target key name already exists."
NOT_INT = "value is not an integer or out of range"


# ---- RDB pieces (for building payloads) ---------------------------------------

_POLY = 0x95AC9329AC4BC9B5  # CRC-64/Jones, reflected
_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ _POLY if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc64(data, crc=0):
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def footer(body, version=10):
    body = body + struct.pack("<H", version)
    return body + struct.pack("<Q", crc64(body))


def truncations(body):
    """footer(body[:n]) for every n < len(body), the CRC kept running."""
    crc = 0
    for n in range(len(body)):
        tail = struct.pack("<H", 10)
        yield body[:n] + tail + struct.pack("<Q", crc64(tail, crc))
        crc = crc64(body[n:n + 1], crc)


def body_of(payload):
    return payload[:-10]


def rlen(n):
    if n < 64:
        return bytes([n])
    if n < 16384:
        return bytes([0x40 | (n >> 8), n & 0xFF])
    return b"\x80" + struct.pack(">I", n)


def rstr(s):
    if isinstance(s, str):
        s = s.encode()
    return rlen(len(s)) + s


def ziplist(entries):
    """A ziplist of short strings (1-byte prevlens, 6-bit lengths)."""
    data, prev, last = b"", 0, 10
    for s in entries:
        s = s.encode() if isinstance(s, str) else s
        last = 10 + len(data)
        e = bytes([prev, len(s)]) + s
        prev = len(e)
        data += e
    return struct.pack("<IIH", 10 + len(data) + 1, last, len(entries)) + data + b"\xff"


def listpack(entries):
    """A listpack of short strings (6-bit lengths, 1-byte backlens)."""
    data = b""
    for s in entries:
        s = s.encode() if isinstance(s, str) else s
        data += bytes([0x80 | len(s)]) + s + bytes([1 + len(s)])
    return struct.pack("<IH", 6 + len(data) + 1, len(entries)) + data + b"\xff"


def packed(type_byte, blob):
    return footer(bytes([type_byte]) + rstr(blob))


def ok(reply):
    """RESTORE's +OK as redis-py returns it (True or b"OK", by version)."""
    return reply is True or reply == b"OK"


# ---- contents ------------------------------------------------------------------

def contents(r, key):
    t = r.type(key).decode()
    if t == "string":
        return t, r.get(key)
    if t == "list":
        return t, r.lrange(key, 0, -1)
    if t == "set":
        return t, sorted(r.smembers(key))
    if t == "zset":
        return t, r.zrange(key, 0, -1, withscores=True)
    if t == "hash":
        return t, sorted(r.hgetall(key).items())
    return t, None


# ---- round trips ---------------------------------------------------------------

def fill(r):
    """Keys of every type, small and large; returns their names."""
    r.set("s:small", "hello")
    r.set("s:int", "12345")
    r.set("s:neg", "-2147483648")
    r.set("s:empty", "")
    r.set("s:binary", bytes(range(256)) * 3)
    r.set("s:big", b"0123456789abcdef" * 20000)
    r.rpush("l:small", "a", "", "123")
    r.rpush("l:big", *["e%d" % i for i in range(1000)])
    r.rpush("l:longitems", *[b"x" * 9000, b"y", b"\x00\xff" * 3000])
    r.sadd("set:ints", *range(-10, 10))
    r.sadd("set:bigints", *range(0, 600 * 7, 7))
    r.sadd("set:strs", "a", "b", "")
    r.sadd("set:bigstrs", *["m%d" % i for i in range(400)])
    r.zadd("z:small", {"a": 1, "b": 2.5, "": -3})
    r.zadd("z:inf", {"lo": "-inf", "hi": "+inf", "mid": 0})
    r.zadd("z:big", {"m%d" % i: i / 7 for i in range(300)})
    r.hset("h:small", mapping={"f": "v", "": "empty", "n": 17})
    r.hset("h:big", mapping={"f%d" % i: "v" * (i % 100) for i in range(1000)})
    r.hset("h:longval", mapping={"f": "v" * 5000})
    r.set(b"\x00bin\xffkey", b"\x00v")
    return r.keys("*")


def test_dump_missing_key_is_nil(r):
    assert r.dump("nokey") is None


def test_round_trip_every_type(r):
    for k in fill(r):
        before = contents(r, k)
        payload = r.dump(k)
        assert ok(r.restore(k + b":copy", 0, payload))
        assert contents(r, k + b":copy") == before, k
        # REPLACE onto itself keeps the same contents.
        assert ok(r.restore(k, 0, payload, replace=True))
        assert contents(r, k) == before, k
        assert r.ttl(k + b":copy") == -1


def test_binary_key_and_value(r):
    r.set(b"\x00bin\xffkey", b"\x00\r\n\xff")
    p = r.dump(b"\x00bin\xffkey")
    r.restore(b"\r\n", 0, p)
    assert r.get(b"\r\n") == b"\x00\r\n\xff"


# ---- options and errors ---------------------------------------------------------

def test_busykey_and_replace_over_another_type(r):
    r.set("src", "value")
    p = r.dump("src")
    r.rpush("dst", "x")
    assert BUSY in err(r.restore, "dst", 0, p)  # the raw reply: test_busykey_raw_reply
    assert r.lrange("dst", 0, -1) == [b"x"]
    assert ok(r.restore("dst", 0, p, replace=True))
    assert r.type("dst") == b"string" and r.get("dst") == b"value"


def test_busykey_raw_reply(raw, r):
    r.set("k", "v")
    p = r.dump("k")
    c = raw()
    assert c.cmd("RESTORE", "k", "0", p) == b"-BUSYKEY Target key name already exists.\r\n"


def test_option_and_argument_errors(r, raw):
    r.set("src", "v")
    p = r.dump("src")
    c = raw()

    def e(*args):
        return c.cmd("RESTORE", *args)
    assert e("k", "-1", p) == b"-ERR Invalid TTL value, must be >= 0\r\n"
    assert e("k", "x", p) == b"-ERR " + NOT_INT.encode() + b"\r\n"
    assert e("k", "0", p, "IDLETIME", "-1") == b"-ERR Invalid IDLETIME value, must be >= 0\r\n"
    assert e("k", "0", p, "IDLETIME", "x") == b"-ERR " + NOT_INT.encode() + b"\r\n"
    assert e("k", "0", p, "FREQ", "256") == b"-ERR Invalid FREQ value, must be >= 0 and <= 255\r\n"
    assert e("k", "0", p, "FREQ", "-1") == b"-ERR Invalid FREQ value, must be >= 0 and <= 255\r\n"
    for bad in (["IDLETIME"], ["FREQ"], ["NOPE"], ["IDLETIME", "1", "FREQ", "1"],
                ["FREQ", "1", "IDLETIME", "1"], ["REPLACE", "x"]):
        assert e("k", "0", p, *bad) == b"-ERR syntax error\r\n", bad
    assert c.cmd("RESTORE", "k", "0").startswith(b"-ERR wrong number of arguments")
    assert c.cmd("DUMP").startswith(b"-ERR wrong number of arguments")
    assert c.cmd("DUMP", "a", "b").startswith(b"-ERR wrong number of arguments")
    # Options are checked before the key: an option error wins over BUSYKEY,
    # BUSYKEY over the TTL and the payload.
    assert e("src", "0", p, "FREQ", "300").startswith(b"-ERR Invalid FREQ")
    assert e("src", "-1", b"junk") == b"-BUSYKEY Target key name already exists.\r\n"
    assert e("k", "-1", b"junk") == b"-ERR Invalid TTL value, must be >= 0\r\n"
    assert r.exists("k") == 0
    # Accepted combinations, in any case.
    assert e("k", "0", p, "replace", "AbsTtl", "freq", "5", "REPLACE") == b"+OK\r\n"
    assert e("k2", "0", p, "IDLETIME", "0", "replace") == b"+OK\r\n"


def test_footer_errors(r, raw):
    r.set("src", "v")
    p = r.dump("src")
    c = raw()
    for bad in (b"", b"short", p[:-1], p[:-2] + bytes([p[-2] ^ 1]) + p[-1:],
                footer(body_of(p), version=255),
                bytes([p[0] ^ 0]) + bytes([p[1] ^ 0xFF]) + p[2:]):
        assert c.cmd("RESTORE", "k", "0", bad) == b"-ERR " + BAD_FOOTER.encode() + b"\r\n", bad
    assert r.exists("k") == 0


def test_unknown_and_unsupported_types_are_bad_data(r, raw):
    c = raw()
    # 8 is no type; 15/19/21 streams; 200 nothing. A stream or module
    # payload is refused too. (22-25, hashes with field TTLs: below.)
    for t in (8, 15, 19, 21, 200):
        assert c.cmd("RESTORE", "k", "0", footer(bytes([t]) + b"\x01\x01x")) == \
            b"-ERR Bad data format\r\n", t
    assert c.cmd("RESTORE", "k", "0", footer(b"")) == b"-ERR Bad data format\r\n"


# ---- TTL -------------------------------------------------------------------------

def test_ttl_absttl_and_past(r):
    r.set("src", "v")
    p = r.dump("src")
    assert ok(r.restore("k", 3000, p))
    assert 2000 < r.pttl("k") <= 3000
    when = int(time.time() * 1000) + 100000
    assert ok(r.restore("k2", when, p, absttl=True))
    assert 98000 < r.pttl("k2") <= 100000
    # A TTL already past: OK, and no key.
    assert ok(r.restore("k3", 1, p, absttl=True))
    assert r.exists("k3") == 0
    # ... and REPLACE then deletes what was there.
    r.rpush("k4", "old")
    assert ok(r.restore("k4", 1000, p, absttl=True, replace=True))
    assert r.exists("k4") == 0
    # Past 32 bits of milliseconds (about 30 days).
    assert ok(r.restore("k6", 2569591501, p))
    assert 2569591501 - 3000 <= r.pttl("k6") <= 2569591501
    # TTL 0: no expiry, even over a key that had one.
    r.set("k5", "x", ex=100)
    assert ok(r.restore("k5", 0, p, replace=True))
    assert r.ttl("k5") == -1


# ---- IDLETIME, FREQ --------------------------------------------------------------

def test_restore_idletime_sets_object_idletime(r):
    r.set("src", "v")
    p = r.dump("src")
    r.restore("k", 0, p, idletime=2)
    assert 2 <= r.object("idletime", "k") <= 3
    r.get("k")  # a read renews the access time
    assert r.object("idletime", "k") <= 1


def test_restore_idletime_is_clamped(trove, r):
    # Trove keeps last-access times on its engine's clock, which starts two
    # seconds before the engine: a longer idle time is what that reaches.
    r.set("src", "v")
    p = r.dump("src")
    r.restore("k", 0, p, idletime=10 ** 12)
    up = r.info("server")["uptime_in_seconds"]
    assert 2 <= r.object("idletime", "k") <= up + 3


def test_restore_freq_is_accepted_without_lfu(r):
    # Under an LRU (or noeviction) maxmemory-policy Redis accepts FREQ and
    # keeps no frequency; Trove has no LFU policy at all.
    r.set("src", "v")
    p = r.dump("src")
    assert ok(r.restore("k", 0, p, frequency=100))
    with pytest.raises(redis.ResponseError) as e:
        r.object("freq", "k")
    assert "An LFU maxmemory policy is not selected" in str(e.value)


# ---- events, WATCH -----------------------------------------------------------------

def test_keyspace_events(r):
    r.set("src", "v")
    p_payload = r.dump("src")
    r.config_set("notify-keyspace-events", "KEA")
    try:
        p = r.pubsub()
        p.psubscribe("__keyevent@*")
        assert p.get_message(timeout=5)["type"] == "psubscribe"
        r.restore("k", 0, p_payload)
        assert keyevents(p, 1) == ["restore k"]
        r.restore("k", 0, p_payload, replace=True)
        assert keyevents(p, 1) == ["restore k"]
        r.restore("k", 1, p_payload, absttl=True, replace=True)  # past: the key goes
        assert keyevents(p, 1) == ["del k"]
        r.restore("k", 1, p_payload, absttl=True)  # past, nothing there: no event
        r.set("marker", "1")
        assert keyevents(p, 1) == ["set marker"]
        r.config_set("notify-keyspace-events", "En")
        r.restore("n", 0, p_payload)
        assert keyevents(p, 1) == ["new n"]
        p.close()
    finally:
        r.config_set("notify-keyspace-events", "")


def test_watch_sees_restore(r, resp_port):
    r.set("src", "v")
    payload = r.dump("src")
    c = redis.Redis(host="127.0.0.1", port=resp_port)
    pipe = c.pipeline()
    pipe.watch("w")
    r.restore("w", 0, payload)
    pipe.multi()
    pipe.set("w", "mine")
    with pytest.raises(redis.WatchError):
        pipe.execute()
    assert r.get("w") == b"v"
    c.close()


def test_restore_inside_multi(r):
    r.rpush("src", "a", "b")
    p = r.dump("src")
    pipe = r.pipeline()
    pipe.restore("k", 0, p)
    pipe.lrange("k", 0, -1)
    res = pipe.execute()
    assert ok(res[0]) and res[1] == [b"a", b"b"]


def test_command_metadata(r):
    assert [bytes(k) if isinstance(k, bytes) else k.encode() for k in r.command_getkeys("RESTORE", "k", "0", "payload")] == [b"k"]
    assert [k if isinstance(k, bytes) else k.encode() for k in r.command_getkeys("DUMP", "k")] == [b"k"]
    info = r.execute_command("COMMAND", "INFO", "dump", "restore")
    assert info["dump"]["arity"] == 2 and info["restore"]["arity"] == -4
    assert set(info["dump"]["flags"]) == {"readonly"}
    assert set(info["restore"]["flags"]) == {"write", "denyoom"}
    assert (info["restore"]["first_key_pos"], info["restore"]["last_key_pos"]) == (1, 1)
    keyspace = set(r.acl_cat("keyspace"))
    assert {b"dump", b"restore"} <= keyspace or {"dump", "restore"} <= keyspace
    assert b"restore" in r.acl_cat("dangerous") or "restore" in r.acl_cat("dangerous")
    assert b"dump" in r.acl_cat("read") or "dump" in r.acl_cat("read")


# ---- malformed payloads --------------------------------------------------------------

def test_every_truncation_is_bad_data(r, raw):
    # Trove reads a body only up to its footer. Redis reads on into the
    # footer's bytes (a string cut short may take them as its tail) and
    # ignores bytes after the value, so there a truncation may restore
    # garbage: only "no crash" is checked against it.
    fill(r)
    c = raw()
    for k in ("s:small", "s:int", "l:small", "l:big", "set:ints", "set:strs", "z:small",
              "h:small", "set:bigstrs"):
        for n, p in enumerate(truncations(body_of(r.dump(k)))):
            got = c.cmd("RESTORE", "t", "0", p, "REPLACE")
            if ON_TROVE:
                assert got == b"-ERR Bad data format\r\n", (k, n, got)
            else:
                assert got in (b"+OK\r\n", b"-ERR Bad data format\r\n"), (k, n, got)
    assert c.cmd("PING") == b"+PONG\r\n"
    if ON_TROVE:
        assert r.exists("t") == 0


def test_every_truncation_of_a_payload_fails_the_checksum(r, raw):
    r.hset("h", mapping={"a": "1", "b": "2"})
    p = r.dump("h")
    c = raw()
    for n in range(len(p)):
        assert c.cmd("RESTORE", "t", "0", p[:n]) == b"-ERR " + BAD_FOOTER.encode() + b"\r\n", n


def test_malformed_packed_blobs(trove, raw):
    # Redis checks these only with sanitize-dump-payload (off by default);
    # Trove checks every structure always.
    c = raw()
    zl = ziplist(["f", "v"])
    lp = listpack(["f", "v"])
    cases = [
        packed(16, listpack(["f", "1", "f", "2"])),          # duplicate field
        packed(16, listpack(["f", "1", "g"])),               # odd count
        packed(16, listpack([])),                            # empty
        packed(16, lp[:4] + b"\x05\x00" + lp[6:]),           # wrong count
        packed(16, lp[:-2] + b"\x09" + lp[-1:]),             # wrong backlen
        packed(16, lp[:-1]),                                 # no end marker
        packed(16, struct.pack("<I", 999) + lp[4:]),         # wrong total
        packed(13, zl[:8] + b"\x07\x00" + zl[10:]),          # ziplist count
        packed(13, zl[:4] + b"\x00\x00\x00\x00" + zl[8:]),   # ziplist tail
        packed(13, zl[:11] + b"\x3f" + zl[12:]),             # string past the end
        packed(11, struct.pack("<II", 2, 2) + struct.pack("<hh", 5, 5)),  # intset dup
        packed(11, struct.pack("<II", 2, 3) + struct.pack("<hh", 1, 2)),  # intset short
        packed(11, struct.pack("<II", 3, 1) + b"\x00\x00\x00"),           # width 3
        packed(17, listpack(["a", "x"])),                    # score not a number
        packed(17, listpack(["a", "nan"])),                  # NaN score
        packed(20, listpack(["a", "a"])),                    # set duplicate
        footer(b"\x02\x02" + rstr("a") + rstr("a")),         # set duplicate
        footer(b"\x04\x02" + rstr("f") + rstr("1") + rstr("f") + rstr("2")),
        footer(b"\x05\x01" + rstr("m") + struct.pack("<d", math.nan)),
        footer(b"\x12\x01\x03" + rstr("x")),                 # quicklist container 3
        footer(b"\x12\x01\x02" + rstr("")),                  # empty node
        footer(b"\x0e\x01" + rstr(ziplist([]))),             # only empty nodes
        footer(b"\x00" + rstr("x") + b"trailing"),
        footer(b"\x00\xc3\x05\x40" + b"\x00" * 5),           # LZF lying about its size
    ]
    for i, p in enumerate(cases):
        assert c.cmd("RESTORE", "k", "0", p) == b"-ERR Bad data format\r\n", i
    assert c.cmd("DBSIZE") == b":0\r\n"


def test_corrupted_payloads_never_crash(trove, r, raw):
    import random
    fill(r)
    c = raw()
    rng = random.Random(2024)
    bodies = [body_of(r.dump(k)) for k in ("l:small", "z:small", "h:small", "set:ints")]
    bodies += [body_of(packed(16, listpack(["f", "v", "g", "w"]))),
               body_of(packed(13, ziplist(["f", "v"])))]
    for _ in range(1500):
        b = bytearray(rng.choice(bodies))
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        got = c.cmd("RESTORE", "k", "0", footer(bytes(b)), "REPLACE")
        assert got in (b"+OK\r\n", b"-ERR Bad data format\r\n"), got
    assert c.cmd("PING") == b"+PONG\r\n"


# ---- compatibility with redis-server -------------------------------------------------

# What Trove's DUMP writes for these values (test_trove_dump_bytes), each
# checked to RESTORE in redis-server 7.0.15 with these contents
# (test_known_payloads_restore under TROVE_TEST_TARGET=redis).
KNOWN = {
    "str": (b"\x00\x05hello\n\x00cr\xdfve4 \n", ("string", b"hello")),
    "int": (b"\x00\xc2\x90\xee\xfe\xff\n\x00(u\xde{\x13\xeb(\x00", ("string", b"-70000")),
    "list": (b"\x01\x05\x01a\xc0\x01\x00\xc0\xf9@F" + b"x" * 70 +
             b"\n\x00\x0b\x9bn\x03\xb2\x87^\x9c",
             ("list", [b"a", b"1", b"", b"-7", b"x" * 70])),
    "set": (b"\x02\x03\xc0\xfb\xc0\x02\xc1,\x01\n\x00\xb2RPt\xc5\xdd\xea\x0e",
            ("set", [b"-5", b"2", b"300"])),
    "zset": (b"\x05\x03\x01c\x00\x00\x00\x00\x00\x00\xf0\xff\x01a\x00\x00\x00\x00\x00\x00\xf0?"
             b"\x01b\x00\x00\x00\x00\x00\x00\x04@\n\x00M\xb6\xeb\xa0\x8f\xd75e",
             ("zset", [(b"c", -math.inf), (b"a", 1.0), (b"b", 2.5)])),
    "hash": (b"\x04\x02\x02f1\x02v1\x02f2\xc0\x02\n\x00\xb9\xb4He\x88TD)",
             ("hash", [(b"f1", b"v1"), (b"f2", b"2")])),
}


def test_known_payloads_restore(r):
    for name, (payload, want) in KNOWN.items():
        assert ok(r.restore(name, 0, payload))
        assert contents(r, name) == want, name


def test_trove_dump_bytes(trove, r):
    r.set("str", "hello")
    r.set("int", "-70000")
    r.rpush("list", "a", "1", "", "-7", "x" * 70)
    r.sadd("set", 300, -5, 2)
    r.zadd("zset", {"a": 1, "b": 2.5, "c": "-inf"})
    r.hset("hash", "f1", "v1")
    r.hset("hash", "f2", "2")
    for name, (payload, _) in KNOWN.items():
        assert r.dump(name) == payload, name


# DUMP replies of redis-server 7.0.15.
REDIS70 = {
    # HSET hlp f1 v1 f2 2 "" empty: listpack
    "hlp": (b'\x10\x1e\x1e\x00\x00\x00\x06\x00\x82f1\x03\x82v1\x03\x82f2\x03\x02\x01\x80\x01'
            b'\x85empty\x06\xff\n\x00*(\x03\xdab\x0f\x88z',
            ("hash", [(b"", b"empty"), (b"f1", b"v1"), (b"f2", b"2")])),
    # SADD iset 1 2 3 -5 70000: intset
    "iset": (b'\x0b\x1c\x04\x00\x00\x00\x05\x00\x00\x00\xfb\xff\xff\xff\x01\x00\x00\x00\x02\x00'
             b'\x00\x00\x03\x00\x00\x00p\x11\x01\x00\n\x00#\xe5\xf3vU\x98a}',
             ("set", sorted([b"1", b"2", b"3", b"-5", b"70000"]))),
    # SADD sht m0 m1 m2: hashtable (type 2)
    "sht": (b'\x02\x03\x02m1\x02m2\x02m0\n\x00O\xee:\x9cj&\xd9\x15',
            ("set", [b"m0", b"m1", b"m2"])),
    # RPUSH ql a b 123 -7 "": quicklist (QUICKLIST_2, one listpack node)
    "ql": (b'\x12\x01\x02\x14\x14\x00\x00\x00\x05\x00\x81a\x02\x81b\x02{\x01\xdf\xf9\x02\x80'
           b'\x01\xff\n\x00)\x91_\xc4\x0b?\xaeH',
           ("list", [b"a", b"b", b"123", b"-7", b""])),
    # ZADD zlp 1 a 2.5 b -3 c: listpack
    "zlp": (b'\x11\x1a\x1a\x00\x00\x00\x06\x00\x81c\x02\xdf\xfd\x02\x81a\x02\x01\x01\x81b\x02'
            b'\x832.5\x04\xff\n\x00\xa6\x8a\x1a\xb1\xa9\xf2\xdc\xc2',
            ("zset", [(b"c", -3.0), (b"a", 1.0), (b"b", 2.5)])),
    # SET lzf <"abcdefgh" x 20>: LZF-compressed string
    "lzf": (b'\x00\xc3\x10@\xa0\x08abcdefgha\xe0\x8c\x07\x01gh\n\x00\xa2\xb2\xee\x8c\xb4w\xf1J',
            ("string", b"abcdefgh" * 20)),
    # SET int 12345: integer-encoded string
    "int": (b"\x00\xc190\n\x00\x9d\x94\xea'\x93\xfc\x08\xb9", ("string", b"12345")),
}

# Larger ones, zlib-compressed and base64-encoded: a skiplist zset (130
# members > 128), a hashtable hash (600 fields), a quicklist of 1000
# elements (several listpack nodes) and a hashtable set of 200 strings.
REDIS70_BIG = {
    "zsk": (
        "eNot1MtKVlEchvE1UAhxIBEiImHnLA/f+VCpW81Tmor34T0svLJv1NArCOoODJo0jP0+zx7t3+APD+9gzTf3c3fd"
        "3rS03/pN02ISFDDO/+w6GAUVDIMGDLgBfW6ugh43oMsN6HATdCmYfQ8oqICCBlBQAAWzy4CCCihoAAUFUDC7CCio"
        "QYeCBrgBcINvgRsANwBuANzgPHAD4AbADVp0pm5wFrgBcAPgBsANTgM3AG4A3AC4wUngBsHEDYAbADc4DtwAuAFw"
        "A+AGXwM3AG4A3CAYu8FR4AbADYAbADc4DNwAuAFwA+AGB4EbBCM3AG4A3KAJ3AC4AXADQEHdDywAFNS9wA2CIQV1"
        "N7AAUFC/BG4AKKifAwuABZ8CC4AF08CCYGDBJLAAWDAOLAAWjAILgAXDwAJgwSCwIOhb0A8sABb0AguABd3AAmBB"
        "J7AAUFB2Agu2W/gmlq3Ags2AgvIxsOBDQEHZCCx4H1BQ3gUWvA0seBNY8LqFb2J5FVjwMrDgRWDBemDB88CCtcCC"
        "1cCClcCC5cCCZy18E8vTwIKlwILFwIIngQVzgQUlsODffgsL/gQW/A4sKGWhPPz8dX77+PfHf1yr7UQ="),
    "hht": (
        "eNol2LmxK8GxBFDGfVeiQkOoTG8ARqUVtAAmwBIaQZEm0Jkf8c1gnoSSMTFLdy1ZWdXz+49//r7n6/H7Ae9xxu8H"
        "vNfj+v2A9xiv3Au8z71+P+A9z8wXgfe5nrkXeM95ci/wPo88Be/zzLfgPZ55Ct7XevzJyrm4Xj8fj2a2B+81bBrI"
        "Yi+L5ena2QC8x2PnvcB7P2IIiOlPpnvqC/A+i5mB9/EUvNfKtyDvPb2Xe9c9/nzu+HqN8yde5+KRi0cu1s2Qm/d8"
        "ATF3/nz4tCy6eDzubB54X6/4JIBrvewTK6bXwHusLAbeYwtv4H0EFcSDzQOWPW5b3QLtaeC9n4kNeO8RQ0DMvWLu"
        "JbqX6ArXGCyRtyNch8vPhAFkYQF+CPk943LWmKIKYnp8fvH54nMgXwpW4H3t+LV9+HrmLc48GRlIIEUmENNeTJOs"
        "8ZBAHzxWQpnN95SrKRubV7tkYBCvxkALsZ9X3gO5ZwthPUwC7y2Tu5lE1tVY4wN4X3P/iTfCuoV1o81AmyGEWwjd"
        "w8FVDt5x+s7FeMnNqzTnjvhu+QLJzSU3Qi3ApwG+LYw2W6hBPPPUZte8YwlGnPh/MJTXIMRRFssOima3aB6ePmR6"
        "HbuKhNKbLT3lA+KrtD7sdbC7K4siSLUoR6kYT+wOvDcKg7ynMJ+l9c32m2fuSfs4InD4yFuQp6x6sYp9IPeQ/VV2"
        "es/KGwFBrBdk9XVED7wPQQDvcYnthbs78dkWOR4GYijHv8nw2gs9lRHIZg+bKYCNSBuRCAZIcIVq4+xEhtkyEjQm"
        "j41cmyKhOwjNEF/oz5S0KaVWWV1lCPNQFtf5+bCOrOzKinSDJF4pnlJlcFviTyrLrckQEKYyqZU9Fm6phu3TLRIr"
        "HyDDkRSQD1DrRR6me+XRSMAqMdf4+QzSa/1DBb20+9Lz9eeDJtPyIMnk3auWpXQrCFRzVTVV3fxWnaxelbDYI/ab"
        "+IAsm1vP3pLdu3tKlpxO9QLCILrMooO5IJWL6zI+H6QpEB2UmCYVS0FW4c1o6XKZp1NiQKreblh6VB1IaJR4E32o"
        "yKEEagKkslh6sfSFLi/37LuryZu3pR/SnZLuVjG3lI+4WwHATZCMKBikn9QUhGlURAg2AQJZWEAxbZMsEDcwTaMZ"
        "OAcSAtK2qp4oQRaHlUd1enOI3B4MA7knuJu75AOETtoIMRoKECQYnvriuqPZLRjxAcltOkZF7lIRV91mSaWAes+2"
        "Iv6A+MjvWQmWFgTZEgSyF4uFexBjkHDzu1JplVNZvtbPR72SNhDBIHyVJ5MGSGQR6VnLQ+N2Pa6CNKWpKSG0IgVx"
        "n9OjqiPHqwMJzpwqcNynDddIex/dQCJsOnQREAYKsE3nbXs98XrkgxIVOUCIz2dRuu6EsJpnCAJZAyefBARjQcJF"
        "nXWxhdkgNY9/uwWVUqz3XNjfQYeCTVdcBXHLrliyjnHi0DINYLQBYA6IKaJZ6q4sbNZY9gcJ/v3zkUACBpI2KT+W"
        "faCwQedQepDJRV/tXDazGN5uzAQJEn43IhgE0hBUhAKb7AUhWhrxq62WkHJ1cRAkrGhzVwUVDlJfKylXmsNqIDx3"
        "tfqavXYbFxp0cKFrIN4jiXtD+EFynv2rJprAaV/VG0F6T1ry7oChpka3T1Y7mfF+1PuTW6cjh7QJzRDU0aRe8nFZ"
        "9lJcVyedyIYBceuzIM7YoHGgfiBx8GkbifdO+7Heu7qZ3IAUoVDLzdRcQBqUcqRb1yPx4tY1M8FUhLAQhOfSYDSb"
        "WtVsqzK+gpjOkkvgOAGylxQ+Opsp8+4w407DNbJVhzpyuCqHUrNab1owiDfoiCSH5SD0ZtPo8GX/1pmanq1pbX61"
        "zSMwCDeVXPcgZKvNleaD7MYzcrQJMkh9iUmnRDE+LVwaAcL+58+n7Z6k6QdDwkC8wM3VJn/9fDpnyZcR8aA3SL7U"
        "Q4cM8ZqNlxiC8FvmOvkQ7d0Z+Q757rIqPbvlcJIkTk2D3Ow5yDwD8lYeEsUj96e51zxA6tK9+ukpCH/zQXsMsoKY"
        "IamSv7X03UPMM2bwZfoSxCuSfHWgD7sror4cpY0wz56D7hRI69OBYffA8Ior33AjwWhPRGR1MYVt9pyw8iVeXDMa"
        "2plKVwHZMvao9UWjQYJgErjbkW3eMV1gdvsWIdydHTBldighf7vyRzpBnMcU3Dpk8lQmMWW0cTlNgbAcV3kzjXcg"
        "rDVCdnaWydlDFH0CqRXaLV4Lk1dbLbkZ7RMnMRHWbarcnSqZN2ueK5DQJRSEajoUgYQOazTJ65EuxaStaHbPnAoE"
        "hJb75yOqJxXIq+uOIrdMlOn4DjD2uXv4UIB0bZMdEPpwT1++dj7tOW8m82R4GQtASlL+VluUUmsahBxEdGQc366R"
        "NToUr6SyQ76BFoRtceR7PtUs3BpYPL4sxrvqoCpZrZIZp2ZTL9zsvk4i1Z8Obq1KtEEWJEAqXh63LIOoqtXKz2eI"
        "V/FRE6cC/oyjzx6PMYAeLnwDqWpBrrxdj59Pq5veXu2FZoKvLuFEuz2F3lVoTWO3aTwShc43z9j9rO5ozt/TdLxr"
        "baAziLE2r2Y/Q5zqs4EIxB5a9P0bkYc9BThArR6g1NxpTa/s1GPGI6n4HgP52+GXxIM0MSLaZQ3sIKuRD2J0dNjT"
        "gVgZ7JaBkjydwuwKskUMad2IN8hDzlRwuLXqFj0FqTnq2eO3vg4SN9HqmcAVSNsVpdGfCLLbypXJ00Kwyu4qaAkS"
        "RAS9q2UsqLvytTqA4BRIv1UWr46mlOX0tM01MduKBmQPjne0oe4gluJth1lz2uhJXa2DpMBVTzmsGiU/q06tIqKz"
        "DFDGo2VsxlydMXXX038gOtTuFGCP1VlwhykuNnnY/WdyUkt8PG6BlKMvqcjQe8a3f7O4f0ro1KhOifyqyqocEO1S"
        "TaPTMb71sK0mQCJg5Uo13VvVPaoIQiq06b8oWQPpwgp2duBzVb3fIeZuAJj3qILwpz9oaNSqbjkzjf4blILTFDhZ"
        "gNBGkGsyBoMkw8xFChYCgaisdtD/io50p0c6hs4vXRnVRErQaCfeGWZ2j0za7jfIqV6rLTMtiED7smo2Iic9p2vY"
        "uw1buxsdA51GR/+Z0AcQd5jePy+mBBAGWLjvyd749gDlpWsN8/DoPGxKGz2ZK00QdYwBne0dpUH88ml/0CA8SPI8"
        "na3WqF1fU4+z9aihg+QT2/r/SO5WF8YjkKnAct+JSJdbTSPreoK37anymZd256VXrHv1xypl6sHccqe0NHyBlC3h"
        "ILfDp6MHE8QD+ULuGijFBVLKCr0HgmeGnM7QbAJJNh3voVlFje+8yoD+2hGK01CMlI8UT6e2WS118l49eWPbKNtM"
        "Laf/A90L/PUv//7/f/33//7zt7//D7As39I="),
    "qlbig": (
        "eNrt0z1KBDEYBuAvZmZxrcRG7EZPMPlPWItZLyDYTLsKw95DvYFH8BAWVuIBvIa30Hd2ELFY/BCUICmel/wT8pED"
        "sfN8/tLPd+eHRK/yemgbSQo0GLDgwEOA2MhZkjeDaqumItVVpMGABQceAkRIzTivWAyTZXJMnikwRab0PZlSdXv8"
        "JNq6q0mtatJgwIIDDwEipM2aBYtmMkyWyTF5psAUmRJHh7e56v8zod1y/SUu1+OoX95vidUig5ub4oMw/uzuM6ah"
        "MPa2x/RXfuE+tvgpYVGbqRFRJFZsasg53xV/RbiE2jCDPDYV+QhFVmKRlVTk46Sntz163L8YjmanD+/MWYkK"),
    "sbig": (
        "eNodksFxYCEMQzP85JJqAAOG21awtWSGAlJICsikixy3rNXTgf/BtmQhU/78e72tx3PPeu5cHOpzh1brCqQSh6A2"
        "cZ7bh5JaXdV9P3etckP52vhUfZqiowlGVhS5FVyCDq3dOSSESiegpnCILUj1Vi6tifFXp6XOCZSOSgNetJyguzqE"
        "quYpVwWbLPo2OqcYLE6bM4EgsCKKEjXYungjuFWS3H6ZFbnqS/TQH3AdqBW46XZhOh066Jnl4lKKMpGQs1xhF8pQ"
        "0MB6N6EkjE1ahyAyFgTOYC92Y6L9IkC/DsuxSj7hTtg7LILYALCh2k4QO+xsb7CbHogR1AWkWBUSYWTgG8DkNBRG"
        "9ITALm6wjHhpNdgs8+DchG1LvRsskqm5NKQ2PMYhrjzslwo9xvAHF3a5ptCk5e5RB0Y8GLPJ6FRtFe8DOUl99UX1"
        "CGRpJ109eNpWUUJvp5ufHLvlq4h3E0rMRnL4ztJl6zbcwa6p3dTy0+P12/2FHMbYPUaFLdDTSvxEs73kOWOl29qO"
        "k+8vX78/H29/vz//A4hHxNg="),
}
REDIS70_BIG_CONTENTS = {
    "zsk": ("zset", [(("m%03d" % i).encode(), i * 0.5) for i in range(130)]),
    "hht": ("hash", sorted((("f%03d" % i).encode(), ("v%d" % i).encode()) for i in range(600))),
    "qlbig": ("list", [("e%d" % i).encode() for i in range(1000)]),
    "sbig": ("set", sorted(("s%d" % i).encode() for i in range(200))),
}


def test_redis70_payloads_restore(r):
    for name, (payload, want) in REDIS70.items():
        assert ok(r.restore(name, 0, payload)), name
        assert contents(r, name) == want, name
    for name, b64 in REDIS70_BIG.items():
        payload = zlib.decompress(base64.b64decode("".join(b64)))
        assert ok(r.restore(name, 0, payload)), name
        assert contents(r, name) == REDIS70_BIG_CONTENTS[name], name


def test_older_forms_redis_7_still_loads(r):
    """The forms Redis 3.2-6.2 (and 2.4) wrote, which Redis 7 still loads."""
    cases = {
        "zl_hash": (packed(13, ziplist(["f", "v", "g", "w"])),
                    ("hash", [(b"f", b"v"), (b"g", b"w")])),
        "zl_zset": (packed(12, ziplist(["b", "-2", "a", "1.5"])),
                    ("zset", [(b"b", -2.0), (b"a", 1.5)])),
        "zl_list": (packed(10, ziplist(["x", "", "y"])), ("list", [b"x", b"", b"y"])),
        "quicklist": (footer(b"\x0e\x02" + rstr(ziplist(["a", "b"])) + rstr(ziplist(["c"]))),
                      ("list", [b"a", b"b", b"c"])),
        "ql2_plain": (footer(b"\x12\x03\x02" + rstr(listpack(["a"])) + b"\x01" + rstr(b"P" * 100)
                             + b"\x02" + rstr(listpack(["z"]))),
                      ("list", [b"a", b"P" * 100, b"z"])),
        "zipmap": (packed(9, b"\x02\x03foo\x03\x01barX\x05hello\x05\x00world\xff"),
                   ("hash", [(b"foo", b"bar"), (b"hello", b"world")])),
        "zset_text": (footer(b"\x03\x03" + rstr("a") + b"\x031.5" + rstr("b") + b"\xfe" +
                             rstr("c") + b"\xff"),
                      ("zset", [(b"c", -math.inf), (b"a", 1.5), (b"b", math.inf)])),
        "list_plain": (footer(b"\x01\x02" + rstr("p") + rstr("q")), ("list", [b"p", b"q"])),
    }
    for name, (payload, want) in cases.items():
        assert ok(r.restore(name, 0, payload)), name
        assert contents(r, name) == want, name


# ---- hashes with field TTLs (Redis 7.4) -------------------------------------------
#
# Debian's redis-server 7.0.15 has no field TTLs: against it these skip (the
# `hfe` fixture); a redis-server 7.4+ runs them, but the Trove-only ones.
# Redis's tests/unit/type/hash-field-expire.tcl has three DUMP/RESTORE tests,
# each run for listpackex and hashtable: test_redis_tcl_* below.

FAR_MS = 4102444800000  # 2100-01-01, in ms


@pytest.fixture
def hfe(r):
    """Skips unless the server has hash field TTLs; puts back what a test
    changes."""
    info = r.execute_command("COMMAND INFO", "hexpire")
    if not info or info[0] is None:
        pytest.skip("hash field TTLs: Redis 7.4+; this server predates them")
    entries = r.config_get("hash-max-listpack-entries")["hash-max-listpack-entries"]
    yield
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    r.config_set("hash-max-listpack-entries", entries)


def wait_until(fn, timeout=3.0, step=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fn():
            return True
        time.sleep(step)
    return fn()


def pexpiretimes(r, key, fields):
    return r.execute_command("HPEXPIRETIME", key, "FIELDS", len(fields), *fields)


def version_of(payload):
    return struct.unpack("<H", payload[-10:-8])[0]


def lp_int(v):
    """A listpack integer entry (7-bit or int64 form), as Redis writes TTLs."""
    if 0 <= v <= 127:
        return bytes([v, 1])
    return b"\xf4" + struct.pack("<q", v) + b"\x09"


def lp_str(s):
    s = s.encode() if isinstance(s, str) else s
    return bytes([0x80 | len(s)]) + s + bytes([1 + len(s)])


def listpack_of(entries):
    data = b"".join(entries)
    return struct.pack("<IH", 6 + len(data) + 1, len(entries)) + data + b"\xff"


def lp_ex(triplets):
    """Field, value, TTL triplets as a listpack (TTL 0: none)."""
    out = []
    for f, v, t in triplets:
        out += [lp_str(f), lp_str(v), lp_int(t)]
    return listpack_of(out)


def metadata(triplets, earliest):
    """RDB_TYPE_HASH_METADATA (24): TTLs relative to the earliest, +1."""
    body = b"\x18" + struct.pack("<Q", earliest) + rlen(len(triplets))
    for f, v, t in triplets:
        body += rlen(t - earliest + 1 if t else 0) + rstr(f) + rstr(v)
    return footer(body, 12)


@pytest.mark.parametrize("n", [5, 600])
def test_field_ttls_round_trip(r, hfe, n):
    """Small (listpackex) and large (hashtable) hashes, some fields without a
    TTL, TTLs in ms (some equal): the copy has the same fields, values,
    expiry times, encoding and (small) order."""
    fields = ["f%d" % i for i in range(n)]
    r.hset("h", mapping={f: "v%d" % i for i, f in enumerate(fields)})
    for i in range(0, n, 2):
        r.execute_command("HPEXPIREAT", "h", FAR_MS + (i % 7) * 1001, "FIELDS", 1, fields[i])
    p = r.dump("h")
    assert p[0] in (24, 25)  # Trove writes 24; Redis 24 (hashtable) or 25 (listpackex)
    assert version_of(p) == 12
    assert ok(r.restore("copy", 0, p))
    if n <= 512:  # a listpackex's order is kept; a hashtable's is its own
        assert list(r.hgetall("copy").items()) == list(r.hgetall("h").items())
    assert sorted(r.hgetall("copy").items()) == sorted(r.hgetall("h").items())
    assert pexpiretimes(r, "copy", fields) == pexpiretimes(r, "h", fields)
    assert pexpiretimes(r, "copy", ["f0", "f1"]) == [FAR_MS, -1]
    assert r.execute_command("HTTL", "copy", "FIELDS", 1, "f1") == [-1]
    assert r.object("encoding", "copy") == r.object("encoding", "h")
    assert r.object("encoding", "copy") == (b"listpackex" if n <= 512 else b"hashtable")
    assert r.ttl("copy") == -1
    # A key TTL and field TTLs together.
    assert ok(r.restore("copy2", 100000, p))
    assert 0 < r.pttl("copy2") <= 100000
    assert pexpiretimes(r, "copy2", fields) == pexpiretimes(r, "h", fields)


def test_field_ttls_restored_hash_expires_actively(r, hfe):
    """RESTORE registers the hash with the active field expiry: its fields go,
    and then the key, with nobody reading it."""
    for key, n in (("small", 3), ("big", 200)):
        r.hset(key, mapping={"f%d" % i: "v" for i in range(n)})
        r.execute_command("HPEXPIRE", key, 300, "FIELDS", n, *["f%d" % i for i in range(n)])
        p = r.dump(key)
        r.delete(key)
        assert ok(r.restore(key + ":r", 0, p))
    assert wait_until(lambda: r.dbsize() == 0, timeout=5), r.keys()


def test_field_ttls_passed_between_dump_and_restore(r, hfe):
    """Fields whose TTL passed before RESTORE are loaded, as Redis loads them
    (rdbLoadObject keeps every field): gone for reads, counted by HLEN until
    deleted, then deleted by the active expiry."""
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    r.execute_command("HPEXPIRE", "h", 100, "FIELDS", 2, "a", "b")
    p = r.dump("h")
    time.sleep(0.25)
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    assert ok(r.restore("copy", 0, p))
    assert r.hgetall("copy") == {b"c": b"3"}
    assert r.hlen("copy") == 3
    assert pexpiretimes(r, "copy", ["a", "b", "c"]) == [-2, -2, -1]
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    assert wait_until(lambda: r.hlen("copy") == 1)
    assert r.hgetall("copy") == {b"c": b"3"}


def test_field_ttls_all_passed_before_restore(r, hfe):
    """Every field passed: RESTORE still answers OK and adds the key (Redis
    loads the fields blindly), which reads see as empty and the active expiry
    deletes."""
    r.hset("h", mapping={"a": "1", "b": "2"})
    r.execute_command("HPEXPIRE", "h", 100, "FIELDS", 2, "a", "b")
    p = r.dump("h")
    time.sleep(0.25)
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    assert ok(r.restore("copy", 0, p))
    assert r.exists("copy") == 1
    assert r.hgetall("copy") == {}
    assert r.hget("copy", "a") is None  # lazily deleted
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    assert wait_until(lambda: r.exists("copy") == 0)


@pytest.mark.parametrize("encoding", ["listpackex", "hashtable"])
def test_redis_tcl_dump_restore_a_hash(r, hfe, encoding):
    """"DUMP / RESTORE are able to serialize / unserialize a hash"."""
    if encoding == "hashtable":
        r.config_set("hash-max-listpack-entries", 0)
    r.hset("myhash", mapping={"a": 1, "b": 2, "c": 3})
    r.execute_command("HEXPIREAT", "myhash", 2524600800, "FIELDS", 1, "a")
    r.execute_command("HEXPIREAT", "myhash", 2524600801, "FIELDS", 1, "b")
    encoded = r.dump("myhash")
    r.delete("myhash")
    assert ok(r.restore("myhash", 0, encoded))
    assert sorted(r.hgetall("myhash").items()) == [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]
    assert r.execute_command("HEXPIRETIME", "myhash", "FIELDS", 3, "a", "b", "c") == \
        [2524600800, 2524600801, -1]
    assert r.object("encoding", "myhash") == encoding.encode()


@pytest.mark.parametrize("encoding", ["listpackex", "hashtable"])
def test_redis_tcl_restore_hash_that_had_ttls(r, hfe, encoding):
    """"RESTORE hash that had in the past HFEs but not during the dump"."""
    if encoding == "hashtable":
        r.config_set("hash-max-listpack-entries", 0)
    r.hset("myhash", mapping={"a": 1, "b": 2, "c": 3})
    r.execute_command("HPEXPIRE", "myhash", 1, "FIELDS", 1, "a")
    time.sleep(0.01)
    encoded = r.dump("myhash")
    r.delete("myhash")
    assert ok(r.restore("myhash", 0, encoded))
    assert sorted(r.hgetall("myhash").items()) == [(b"b", b"2"), (b"c", b"3")]
    r.execute_command("HPEXPIRE", "myhash", 1, "FIELDS", 2, "b", "c")
    assert wait_until(lambda: r.exists("myhash") == 0, timeout=1)


@pytest.mark.parametrize("encoding", ["listpackex", "hashtable"])
def test_redis_tcl_dump_restore_ttl_0_for_all_fields(r, hfe, encoding):
    """"DUMP / RESTORE are able to serialize / unserialize a hash with TTL 0
    for all fields"; the encoding survives too (a listpackex is dumped with
    its TTLs, all 0, and restored as listpackex)."""
    if encoding == "hashtable":
        r.config_set("hash-max-listpack-entries", 0)
    r.hset("myhash", mapping={"a": 1, "b": 2, "c": 3})
    r.execute_command("HEXPIRE", "myhash", 9999999, "FIELDS", 1, "a")
    r.execute_command("HPERSIST", "myhash", "FIELDS", 1, "a")
    assert r.object("encoding", "myhash") == encoding.encode()
    encoded = r.dump("myhash")
    r.delete("myhash")
    assert ok(r.restore("myhash", 0, encoded))
    assert sorted(r.hgetall("myhash").items()) == [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]
    assert r.execute_command("HEXPIRETIME", "myhash", "FIELDS", 3, "a", "b", "c") == [-1, -1, -1]
    assert r.object("encoding", "myhash") == encoding.encode()


def test_restore_hand_made_field_ttl_forms(r, hfe):
    """The four forms, built here from rdb.c's layout: 25 and 23 keep the
    listpack's order (ties included); 24's TTLs are relative to the earliest
    (+1), 22's absolute; each loads as listpackex when small."""
    t = FAR_MS
    trip = [("x", "1", t), ("y", "2", t), ("z", "3", t + 9), ("w", "", 0)]
    cases = {
        "t25": footer(b"\x19" + struct.pack("<Q", t) + rstr(lp_ex(trip)), 12),
        "t23": footer(b"\x17" + rstr(lp_ex(trip)), 12),
        "t24": metadata([("w", "", 0), ("z", "3", t + 9), ("y", "2", t), ("x", "1", t)], t),
        "t22": footer(b"\x16\x04" + b"".join(rlen(0) + rstr(f) + rstr(v) for f, v, _ in trip[3:]) +
                      b"".join(b"\x81" + struct.pack(">Q", tt) + rstr(f) + rstr(v)
                               for f, v, tt in reversed(trip[:3])), 12),
    }
    for key, p in cases.items():
        assert ok(r.restore(key, 0, p)), key
        assert list(r.hgetall(key).items()) == \
            [(b"x", b"1"), (b"y", b"2"), (b"z", b"3"), (b"w", b"")], key
        assert pexpiretimes(r, key, ["x", "y", "z", "w"]) == [t, t, t + 9, -1], key
        assert r.object("encoding", key) == b"listpackex", key
    # All TTLs 0 is still a listpackex.
    assert ok(r.restore("zeros", 0, footer(b"\x19" + b"\0" * 8 + rstr(lp_ex([("a", "1", 0)])), 12)))
    assert r.object("encoding", "zeros") == b"listpackex"
    assert r.execute_command("HTTL", "zeros", "FIELDS", 1, "a") == [-1]
    # Past the listpack thresholds: a hashtable with the same TTLs.
    r.config_set("hash-max-listpack-entries", 2)
    assert ok(r.restore("big", 0, cases["t25"]))
    assert r.object("encoding", "big") == b"hashtable"
    assert pexpiretimes(r, "big", ["x", "y", "z", "w"]) == [t, t, t + 9, -1]


def test_restore_bad_field_ttl_forms(r, raw, hfe):
    """What Redis's loader refuses (with sanitize-dump-payload yes; Trove
    always checks as deeply)."""
    if not ON_TROVE:
        r.config_set("sanitize-dump-payload", "yes")
    t = FAR_MS

    def ex(entries):
        return footer(b"\x19" + struct.pack("<Q", t) + rstr(listpack_of(entries)), 12)
    bad = [
        ex([lp_str("a"), lp_str("1"), lp_str("5")]),                  # a TTL as a string
        ex([lp_str("a"), lp_str("1"), lp_int(t + 1), lp_str("b"), lp_str("2"), lp_int(t)]),
        ex([lp_str("a"), lp_str("1"), lp_int(0), lp_str("b"), lp_str("2"), lp_int(t)]),
        ex([lp_str("a"), lp_str("1"), lp_int(-1)]),
        ex([lp_str("a"), lp_str("1"), lp_int(1 << 48)]),
        ex([lp_str("a"), lp_str("1"), lp_int(0), lp_str("a"), lp_str("2"), lp_int(0)]),
        ex([lp_str("a"), lp_str("1")]),                               # not whole triplets
        ex([]),                                                       # empty
        footer(b"\x19" + b"\0" * 7, 12),                               # cut short
        footer(b"\x18" + struct.pack("<Q", t) + b"\x00", 12),           # no fields
        footer(b"\x18" + struct.pack("<Q", t) + b"\x01\x81" + struct.pack(">Q", 1 << 48) +
               rstr("a") + rstr("A"), 12),                            # past 2^48 - 1
        footer(b"\x16\x02" + (rlen(0) + rstr("a") + rstr("A")) * 2, 12),  # duplicate
    ]
    c = raw()
    try:
        for p in bad:
            assert c.cmd("RESTORE", "k", "0", p) == b"-ERR Bad data format\r\n", p
        assert r.exists("k") == 0
    finally:
        if not ON_TROVE:
            r.config_set("sanitize-dump-payload", "no")


def test_field_ttls_past_hexpire_limit_refused(trove, r, raw, hfe):
    """Trove refuses a field expiry past 2^46 - 1 ms, the latest HEXPIRE sets
    (so the latest any Redis writes); Redis's loader takes up to 2^48 - 1."""
    c = raw()
    limit = (1 << 46) - 1
    assert c.cmd("RESTORE", "k", "0", metadata([("a", "A", limit + 1)], limit + 1)) == \
        b"-ERR Bad data format\r\n"
    assert ok(r.restore("k", 0, metadata([("a", "A", limit)], limit)))
    assert pexpiretimes(r, "k", ["a"]) == [limit]


def test_trove_dump_bytes_with_field_ttls(trove, r, hfe):
    """Trove writes RDB_TYPE_HASH_METADATA in RDB version 12: the earliest
    expiry, then the fields with a TTL last first, then the others; a hash
    without TTLs keeps its type-4 version-10 bytes (KNOWN["hash"]); a small
    one that had TTLs keeps the form (all TTLs 0), a large one does not."""
    r.hset("h", mapping={"a": "va", "b": "vb", "c": "vc", "d": "vd"})
    r.execute_command("HPEXPIREAT", "h", FAR_MS + 5, "FIELDS", 2, "a", "b")
    r.execute_command("HPEXPIREAT", "h", FAR_MS + 1, "FIELDS", 1, "c")
    assert list(r.hgetall("h")) == [b"c", b"b", b"a", b"d"]  # listpackex order
    assert r.dump("h") == metadata([("a", "va", FAR_MS + 5), ("b", "vb", FAR_MS + 5),
                                    ("c", "vc", FAR_MS + 1), ("d", "vd", 0)], FAR_MS + 1)
    assert ok(r.restore("copy", 0, r.dump("h")))
    assert list(r.hgetall("copy")) == [b"c", b"b", b"a", b"d"]
    r.hset("had", mapping={"a": "va", "b": "vb"})
    r.execute_command("HPEXPIRE", "had", 1000, "FIELDS", 1, "a")
    r.execute_command("HPERSIST", "had", "FIELDS", 1, "a")
    assert r.dump("had") == metadata([("b", "vb", 0), ("a", "va", 0)], 0)
    r.config_set("hash-max-listpack-entries", 1)
    r.hset("had", "c", "vc")  # now a hashtable without TTLs: type 4, version 10
    p = r.dump("had")
    assert p[0] == 4 and version_of(p) == 10


def test_migrate_is_not_supported(trove, raw):
    got = raw().cmd("MIGRATE", "127.0.0.1", "1", "k", "0", "1000")
    assert got.startswith(b"-ERR unknown command 'MIGRATE'"), got


def test_sanitize_dump_payload_parameter(trove, r):
    """Trove checks every payload whole: CONFIG GET says `yes`; `yes` and
    `clients` are accepted, `no` (a promise to skip the check) is refused."""
    assert r.config_get("sanitize-dump-payload") == {"sanitize-dump-payload": "yes"}
    assert r.config_set("sanitize-dump-payload", "yes")
    assert r.config_set("sanitize-dump-payload", "clients")
    with pytest.raises(redis.ResponseError, match="always checks DUMP payloads in full"):
        r.config_set("sanitize-dump-payload", "no")
    with pytest.raises(redis.ResponseError, match="must be one of the following: no, yes, clients"):
        r.config_set("sanitize-dump-payload", "maybe")
    assert r.config_get("sanitize-dump-payload") == {"sanitize-dump-payload": "yes"}
