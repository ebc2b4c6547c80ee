"""Bitmap commands through redis-py: SETBIT GETBIT BITCOUNT BITPOS BITOP
BITFIELD BITFIELD_RO, with Redis's replies and error texts, RESP3 shapes,
keyspace events, the dirty counter, WATCH, ACL key permissions, COMMAND
metadata, values that span several engine chunks, and (Trove only) the
memcached port reading what SETBIT wrote.

Redis is the reference: every test without the `trove` fixture also runs
against redis-server (TROVE_TEST_TARGET=redis). Where the newest behaviour
postdates that server (argument errors before the key lookup, Redis 7.4;
BITOP DIFF/DIFF1/ANDOR/ONE, Redis 8.2) the test skips there. Expected values
come from Redis's own tests (bitops.tcl, bitfield.tcl), its documentation,
or the small Python models below.
"""

import random

import pytest

from conftest import resp_target
from resp_errors import err
from keyspace_observe import changes, keyevents, listen  # noqa: E402

TARGET = resp_target()
ON_REDIS = TARGET == "redis"

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
BAD_OFFSET = "bit offset is not an integer or out of range"
BAD_BIT = "bit is not an integer or out of range"
NOT_INT = "value is not an integer or out of range"
BAD_TYPE = ("Invalid bitfield type. Use something like i16 u8. "
            "Note that u64 is not supported but i64 is.")


def redis_version(r):
    return tuple(int(x) for x in r.info("server")["redis_version"].split(".")[:2])


def needs_redis(r, version, what):
    """Skips against a redis-server older than `version` (Trove follows the newest)."""
    if ON_REDIS and redis_version(r) < version:
        pytest.skip("%s: Redis %d.%d+; this redis-server predates it" % ((what,) + version))


def x(r, *args):
    return r.execute_command(*args)


# ---- Python models of Redis's semantics ---------------------------------------

def bits_of(s):
    """The bits of s as a string of '0' and '1', bit 0 first."""
    return bin(int.from_bytes(s, "big"))[2:].zfill(len(s) * 8) if s else ""


def clamp(start, end, total):
    if start < 0:
        start += total
    if end < 0:
        end += total
    start, end = max(start, 0), max(end, 0)
    if end >= total:
        end = total - 1
    return start, end


def bitcount_model(s, start, end, unit="BYTE"):
    if start < 0 and end < 0 and start > end:
        return 0
    in_bits = unit.upper() == "BIT"
    start, end = clamp(start, end, len(s) * (8 if in_bits else 1))
    if start > end:
        return 0
    lo, hi = (start, end) if in_bits else (start * 8, end * 8 + 7)
    return bits_of(s)[lo:hi + 1].count("1")


def bitpos_model(s, bit, start=None, end=None, unit="BYTE"):
    if s is None:
        return -1 if bit else 0
    in_bits = unit.upper() == "BIT"
    end_given = end is not None
    start = 0 if start is None else start
    end = len(s) - 1 if end is None else end
    start, end = clamp(start, end, len(s) * (8 if in_bits else 1))
    if start > end:
        return -1
    lo, hi = (start, end) if in_bits else (start * 8, end * 8 + 7)
    pos = bits_of(s).find(str(bit), lo, hi + 1)
    if pos >= 0:
        return pos
    return hi + 1 if bit == 0 and not end_given else -1


def bitop_model(op, values):
    n = max(len(v) for v in values)
    cols = [v + b"\0" * (n - len(v)) for v in values]
    out = bytearray()
    for i in range(n):
        col = [c[i] for c in cols]
        rest = 0
        for c in col[1:]:
            rest |= c
        if op == "AND":
            b = 0xFF
            for c in col:
                b &= c
        elif op == "OR":
            b = col[0] | rest
        elif op == "XOR":
            b = 0
            for c in col:
                b ^= c
        elif op == "NOT":
            b = ~col[0]
        elif op == "DIFF":
            b = col[0] & ~rest
        elif op == "DIFF1":
            b = ~col[0] & rest
        elif op == "ANDOR":
            b = col[0] & rest
        else:  # ONE: set in exactly one source
            b = 0
            for k in range(8):
                if sum((c >> k) & 1 for c in col) == 1:
                    b |= 1 << k
        out.append(b & 0xFF)
    return bytes(out)


def field_range(signed, bits):
    if signed:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def wrap(v, signed, bits):
    lo, _ = field_range(signed, bits)
    return (v - lo) % (1 << bits) + lo


# ---- SETBIT / GETBIT ----------------------------------------------------------

def test_setbit_getbit_basics(r):
    assert x(r, "SETBIT", "k", 1, 1) == 0  # creates the key
    assert r.get("k") == b"\x40"
    assert r.type("k") == b"string"
    assert x(r, "SETBIT", "k", 1, 1) == 1  # returns the old bit
    assert x(r, "SETBIT", "k", 1, 0) == 1
    assert r.get("k") == b"\x00"
    assert x(r, "SETBIT", "k", 17, 1) == 0  # grows with zero bytes
    assert r.get("k") == b"\x00\x00\x40"
    assert x(r, "GETBIT", "k", 17) == 1
    assert x(r, "GETBIT", "k", 16) == 0
    assert x(r, "GETBIT", "k", 1000) == 0  # past the end reads 0
    assert x(r, "GETBIT", "missing", 0) == 0
    assert x(r, "SETBIT", "z", 100, 0) == 0  # clearing past the end still grows
    assert r.get("z") == b"\x00" * 13
    assert x(r, "SETBIT", "k", 0, "1") == 0 and x(r, "GETBIT", "k", "0") == 1


def test_setbit_on_string_and_integer_values(r):
    # string.tcl: "SETBIT against string-encoded key" / "integer-encoded key".
    r.set("s", "@")
    assert x(r, "SETBIT", "s", 2, 1) == 0
    assert r.get("s") == b"`"
    assert x(r, "SETBIT", "s", 1, 0) == 1
    assert r.get("s") == b" "
    r.set("i", "1")
    assert x(r, "SETBIT", "i", 6, 1) == 0
    assert r.get("i") == b"3"
    assert x(r, "SETBIT", "i", 2, 0) == 1
    assert r.get("i") == b"\x13"
    assert [x(r, "GETBIT", "i", n) for n in range(8)] == [0, 0, 0, 1, 0, 0, 1, 1]


def test_setbit_keeps_the_ttl(r):
    r.set("t", b"\x00", ex=100)
    assert x(r, "SETBIT", "t", 3, 1) == 0
    assert 99 <= r.ttl("t") <= 100
    assert x(r, "SETBIT", "t", 30, 1) == 0  # grown
    assert 99 <= r.ttl("t") <= 100
    assert r.get("t") == b"\x10\x00\x00\x02"


def test_setbit_getbit_errors(r):
    for off in (-1, 4294967296, "abc", "1.5", "", " 1"):
        err(x, r, "SETBIT", "k", off, 1, match=BAD_OFFSET)
        err(x, r, "GETBIT", "k", off, match=BAD_OFFSET)
    err(x, r, "SETBIT", "k", "#1", 1, match=BAD_OFFSET)  # '#' is BITFIELD's only
    for v in (-1, 2, 10, 20, "x", "1.0", ""):
        err(x, r, "SETBIT", "k", 0, v, match=BAD_BIT)
    assert r.exists("k") == 0
    r.rpush("l", "a")
    err(x, r, "SETBIT", "l", 0, 1, match=WRONGTYPE)
    err(x, r, "GETBIT", "l", 0, match=WRONGTYPE)
    err(x, r, "SETBIT", "l", -1, 1, match=BAD_OFFSET)  # arguments before the type
    err(x, r, "SETBIT", "l", 0, 5, match=BAD_BIT)
    err(x, r, "GETBIT", "l", -1, match=BAD_OFFSET)
    err(x, r, "SETBIT", "k", 0, match="wrong number of arguments for 'setbit' command")
    err(x, r, "GETBIT", "k", match="wrong number of arguments for 'getbit' command")


def test_bit_offsets_follow_proto_max_bulk_len(r):
    old = r.config_get("proto-max-bulk-len")["proto-max-bulk-len"]
    try:
        r.config_set("proto-max-bulk-len", 1048576)
        # The offset's byte (offset / 8) must be below the limit.
        err(x, r, "SETBIT", "k", 8388608, 1, match=BAD_OFFSET)
        err(x, r, "GETBIT", "k", 8388608, match=BAD_OFFSET)
        err(x, r, "BITFIELD", "k", "GET", "u8", 8388608, match=BAD_OFFSET)
        err(x, r, "BITFIELD", "k", "SET", "u8", "#1048576", 1, match=BAD_OFFSET)
        assert x(r, "GETBIT", "k", 8388607) == 0
        assert x(r, "SETBIT", "k", 8000, 1) == 0
        assert r.strlen("k") == 1001
    finally:
        r.config_set("proto-max-bulk-len", old)


def test_setbit_and_bitfield_grow_past_the_item_size(trove, r):
    # The RESP port's strings reach proto-max-bulk-len whatever -I (1 MiB)
    # is, as in Redis: SETBIT and BITFIELD build a 2 MiB string.
    assert x(r, "SETBIT", "big", 2 * 8 * 1024 * 1024, 1) == 0
    assert r.strlen("big") == 2 * 1024 * 1024 + 1
    assert x(r, "BITFIELD", "big2", "SET", "u8", "#2097152", 1) == [0]
    assert r.strlen("big2") == 2 * 1024 * 1024 + 1
    assert r.getrange("big", -1, -1) == b"\x80"


# ---- BITCOUNT -----------------------------------------------------------------
def test_bitcount_matches_python_across_sizes(r):
    # Every length around the counting loops' block edges (8-byte words,
    # 32-byte blocks, 64 bytes where the long-string version starts, 31
    # vector blocks between byte-counter folds), plus ranges cutting them.
    import random
    rnd = random.Random(41)
    for n in [0, 1, 7, 8, 31, 32, 33, 63, 64, 65, 95, 96, 991, 992, 993, 1000, 1024,
              4096 + 3, 65536, 100001]:
        v = bytes(rnd.getrandbits(8) for _ in range(n))
        r.set("pc", v)
        assert x(r, "BITCOUNT", "pc") == sum(bin(b).count("1") for b in v), n
        if n > 10:
            lo, hi = rnd.randrange(n), rnd.randrange(n)
            lo, hi = min(lo, hi), max(lo, hi)
            assert x(r, "BITCOUNT", "pc", lo, hi) == sum(bin(b).count("1") for b in v[lo:hi + 1])
    r.set("ones", b"\xff" * 40000)
    assert x(r, "BITCOUNT", "ones") == 320000


@pytest.mark.parametrize("vec,count", [
    (b"", 0), (b"\xaa", 4), (b"\x00\x00\xff", 8), (b"foobar", 26), (b"123", 10)])
def test_bitcount_vectors(r, vec, count):
    r.set("s", vec)
    assert x(r, "BITCOUNT", "s") == count
    assert x(r, "BITCOUNT", "s", 0, -1) == count
    assert x(r, "BITCOUNT", "s", 0, -1, "BIT") == count
    assert x(r, "BITCOUNT", "s", 0, -1, "byte") == count


def test_bitcount_ranges(r):
    assert x(r, "BITCOUNT", "missing") == 0
    assert x(r, "BITCOUNT", "missing", 0, 1000, "BIT") == 0
    r.set("s", "foobar")
    # redis.io's examples
    assert x(r, "BITCOUNT", "s", 0, 0) == 4
    assert x(r, "BITCOUNT", "s", 1, 1) == 6
    assert x(r, "BITCOUNT", "s", 1, 1, "BYTE") == 6
    assert x(r, "BITCOUNT", "s", 5, 30, "BIT") == 17
    # bitops.tcl, "BITCOUNT with start, end"
    assert x(r, "BITCOUNT", "s", 1, -2) == 18  # "ooba"
    assert x(r, "BITCOUNT", "s", -2, 1) == 0
    assert x(r, "BITCOUNT", "s", 0, 1000) == 26
    assert x(r, "BITCOUNT", "s", -2, 1, "BIT") == 0
    assert x(r, "BITCOUNT", "s", 0, 1000, "BIT") == 26
    for start, end, same in ((10, -34, 14), (3, -34, 14), (3, -19, 29)):
        assert x(r, "BITCOUNT", "s", start, end, "BIT") == bitcount_model(
            b"foobar", start, same, "BIT")
    r.set("x", "xxxx")
    assert x(r, "BITCOUNT", "x", 4, 10) == 0
    assert x(r, "BITCOUNT", "x", 32, 87, "BIT") == 0
    # Two negative ends the wrong way round: 0, also for a missing key.
    assert x(r, "BITCOUNT", "x", -6, -7) == 0
    assert x(r, "BITCOUNT", "x", -6, -15, "BIT") == 0
    assert x(r, "BITCOUNT", "gone", -6, -7) == 0
    assert x(r, "BITCOUNT", "gone", -6, -15, "BIT") == 0
    # Misaligned prefix, whole words, remainder.
    r.set("ab", "ab")
    assert x(r, "BITCOUNT", "ab", 1, -1) == 3
    r.set("w", "__PPxxxxxxxxxxxxxxxxRR__")
    assert x(r, "BITCOUNT", "w", 2, -3) == 74
    # A huge end (github issue 582): clamped to the string.
    r.delete("foo")
    x(r, "SETBIT", "foo", 0, 1)
    assert x(r, "BITCOUNT", "foo", 0, 4294967296) == 1


def test_bitcount_against_the_model(r):
    rnd = random.Random(582)
    for _ in range(60):
        n = rnd.choice([0, 1, 3, 7, 8, 9, 31, 33, 64, 100, 257])
        s = bytes(rnd.choice([0, 255, rnd.randrange(256)]) for _ in range(n))
        r.set("s", s)
        assert x(r, "BITCOUNT", "s") == bits_of(s).count("1")
        for _ in range(6):
            unit = rnd.choice(["BYTE", "BIT"])
            span = max(1, n * (8 if unit == "BIT" else 1))
            start = rnd.randint(-span - 3, span + 3)
            end = rnd.randint(-span - 3, span + 3)
            assert x(r, "BITCOUNT", "s", start, end, unit) == \
                bitcount_model(s, start, end, unit), (s, start, end, unit)


def test_bitcount_errors(r):
    r.set("s", "1")
    err(x, r, "BITCOUNT", "s", 0, match="syntax error")
    err(x, r, "BITCOUNT", "s", 0, 1, "hello", match="syntax error")
    err(x, r, "BITCOUNT", "s", 0, 1, "hello", "hello2", match="syntax error")
    err(x, r, "BITCOUNT", "s", "a", "b", match=NOT_INT)
    err(x, r, "BITCOUNT", "s", 0, "b", match=NOT_INT)
    err(x, r, "BITCOUNT", match="wrong number of arguments for 'bitcount' command")
    r.rpush("l", "a", "b", "c")
    err(x, r, "BITCOUNT", "l", match=WRONGTYPE)
    err(x, r, "BITCOUNT", "l", 0, 100, match=WRONGTYPE)
    err(x, r, "BITCOUNT", "l", -6, -7, match=WRONGTYPE)
    err(x, r, "BITCOUNT", "l", -6, -15, "BIT", match=WRONGTYPE)


def test_bitcount_checks_arguments_before_the_key(r):
    needs_redis(r, (7, 4), "BITCOUNT's argument errors on any key")
    err(x, r, "BITCOUNT", "missing", 0, match="syntax error")
    err(x, r, "BITCOUNT", "missing", 0, 1, "hello", match="syntax error")
    err(x, r, "BITCOUNT", "missing", "a", "b", match=NOT_INT)
    r.rpush("l", "a")
    err(x, r, "BITCOUNT", "l", "a", "b", match=NOT_INT)
    err(x, r, "BITCOUNT", "l", 0, 1, "hello", match="syntax error")


# ---- BITPOS -------------------------------------------------------------------

def test_bitpos_missing_and_short_strings(r):
    assert x(r, "BITPOS", "missing", 0) == 0
    assert x(r, "BITPOS", "missing", 0, 0, -1, "BIT") == 0
    assert x(r, "BITPOS", "missing", 1) == -1
    assert x(r, "BITPOS", "missing", 1, 0, -1) == -1
    r.set("s", b"\xff\xf0\x00")
    assert x(r, "BITPOS", "s", 0) == 12
    assert x(r, "BITPOS", "s", 0, 0, -1, "BIT") == 12
    assert x(r, "BITPOS", "s", 0, 1) == 12
    assert x(r, "BITPOS", "s", 0, 1, -1, "BIT") == 12
    r.set("s", b"\x00\x0f\x00")
    assert x(r, "BITPOS", "s", 1) == 12
    assert x(r, "BITPOS", "s", 1, 0, -1, "BIT") == 12
    r.set("s", b"\x00\x0f\xff")
    assert x(r, "BITPOS", "s", 1, 1) == 12
    assert x(r, "BITPOS", "s", 1, 1, -1, "BIT") == 12
    # An existing empty string: the range is empty, so neither bit is found.
    r.set("e", "")
    assert x(r, "BITPOS", "e", 1) == -1
    assert x(r, "BITPOS", "e", 0) == -1


def test_bitpos_documented_examples(r):
    r.set("k", b"\xff\xf0\x00")
    assert x(r, "BITPOS", "k", 0) == 12
    r.set("k", b"\x00\xff\xf0")
    assert x(r, "BITPOS", "k", 1, 0) == 8
    assert x(r, "BITPOS", "k", 1, 2) == 16
    assert x(r, "BITPOS", "k", 1, 2, -1, "BYTE") == 16
    assert x(r, "BITPOS", "k", 1, 7, 15, "BIT") == 8
    r.set("k", b"\x00\x00\x00")
    assert x(r, "BITPOS", "k", 1) == -1
    assert x(r, "BITPOS", "k", 1, 7, -3, "BIT") == -1


@pytest.mark.parametrize("bit,fill,last", [(0, b"\xff", b"\x0f"), (1, b"\x00", b"\xf0")])
def test_bitpos_unaligned_full_words_remainder(r, bit, fill, last):
    r.set("s", fill * 3 + fill * 24 + last)
    for start in range(9):
        assert x(r, "BITPOS", "s", bit, start) == 216
    for start in (1, 9, 17, 25, 33, 41, 49, 57, 65):
        assert x(r, "BITPOS", "s", bit, start, -1, "BIT") == 216


def test_bitpos_intervals_and_end(r):
    r.set("s", b"\x00\xff\x00")
    assert [x(r, "BITPOS", "s", 0, *a) for a in (
        (0, -1), (1, -1), (2, -1), (2, 200), (1, 1), (0, -1, "BIT"), (8, -1, "BIT"),
        (16, -1, "BIT"), (16, 200, "BIT"), (8, 8, "BIT"))] == \
        [0, 16, 16, 16, -1, 0, 16, 16, 16, -1]
    assert [x(r, "BITPOS", "s", 1, *a) for a in (
        (0, -1), (1, -1), (2, -1), (2, 200), (1, 1), (0, -1, "BIT"), (8, -1, "BIT"),
        (16, -1, "BIT"), (16, 200, "BIT"), (8, 8, "BIT"))] == \
        [8, 8, -1, -1, 8, 8, 8, -1, -1, 8]
    # bit=0 on all ones: without an end the string counts as zero-padded.
    r.set("ones", b"\xff\xff\xff")
    assert x(r, "BITPOS", "ones", 0) == 24
    assert x(r, "BITPOS", "ones", 0, 0) == 24
    assert x(r, "BITPOS", "ones", 0, 2) == 24
    assert x(r, "BITPOS", "ones", 0, 0, -1) == -1
    assert x(r, "BITPOS", "ones", 0, 0, -1, "BIT") == -1
    assert x(r, "BITPOS", "ones", 0, 5, 2) == -1  # empty range


def test_bitpos_all_zero_strings(r):
    r.set("s", "")
    for _ in range(20):
        assert x(r, "BITPOS", "s", 1) == -1
        assert x(r, "BITPOS", "s", 1, 0, -1, "BIT") == -1
        r.append("s", b"\x00")


def test_bitpos_against_the_model(r):
    rnd = random.Random(9324)
    for _ in range(60):
        n = rnd.choice([1, 2, 7, 8, 9, 16, 23, 40, 100])
        base = rnd.choice([0, 255])
        s = bytearray([base] * n)
        for _ in range(rnd.randint(0, 2)):
            s[rnd.randrange(n)] = rnd.randrange(256)
        s = bytes(s)
        r.set("s", s)
        for bit in (0, 1):
            assert x(r, "BITPOS", "s", bit) == bitpos_model(s, bit)
            for _ in range(4):
                unit = rnd.choice(["BYTE", "BIT"])
                span = n * (8 if unit == "BIT" else 1)
                start = rnd.randint(-span - 2, span + 2)
                end = rnd.randint(-span - 2, span + 2)
                assert x(r, "BITPOS", "s", bit, start) == bitpos_model(s, bit, start), \
                    (s, bit, start)
                assert x(r, "BITPOS", "s", bit, start, end, unit) == \
                    bitpos_model(s, bit, start, end, unit), (s, bit, start, end, unit)


def test_bitpos_and_bitcount_around_every_bit(r):
    # bitops.tcl, "BITPOS/BITCOUNT fuzzy testing using SETBIT", exhaustively:
    # one bit differs from the other 79; ranges around it in bytes and bits.
    for bit in (0, 1):
        r.set("s", (b"\x00" if bit else b"\xff") * 10)
        for j in range(80):
            x(r, "SETBIT", "s", j, bit)
            s = r.get("s")
            for unit, cur, top in (("BYTE", j >> 3, 10), ("BIT", j, 80)):
                for start, end in ((cur, cur), (0, cur), (cur, top - 1), (0, top - 1),
                                   (min(cur + 1, top - 1), top - 1)):
                    assert x(r, "BITPOS", "s", bit, start, end, unit) == \
                        bitpos_model(s, bit, start, end, unit)
                    assert x(r, "BITCOUNT", "s", start, end, unit) == \
                        bitcount_model(s, start, end, unit)
            x(r, "SETBIT", "s", j, 1 - bit)


def test_bitpos_errors(r):
    r.set("s", "1")
    for b in (2, -1, 10):
        err(x, r, "BITPOS", "s", b, match="The bit argument must be 1 or 0.")
    err(x, r, "BITPOS", "s", "a", match=NOT_INT)
    err(x, r, "BITPOS", "s", 0, "a", match=NOT_INT)
    err(x, r, "BITPOS", "s", 0, "a", "b", match=NOT_INT)
    err(x, r, "BITPOS", "s", 0, 0, "b", match=NOT_INT)
    err(x, r, "BITPOS", "s", 0, 1, "hello", "hello2", match="syntax error")
    err(x, r, "BITPOS", "s", 0, 0, 1, "hello", match="syntax error")
    err(x, r, "BITPOS", "s", 0, 0, "x", "hello", match="syntax error")  # the unit before end
    err(x, r, "BITPOS", "s", match="wrong number of arguments for 'bitpos' command")
    r.rpush("l", "a", "b", "c")
    err(x, r, "BITPOS", "l", 0, match=WRONGTYPE)
    err(x, r, "BITPOS", "l", 1, 10, 100, match=WRONGTYPE)
    err(x, r, "BITPOS", "l", 2, match="The bit argument must be 1 or 0.")
    err(x, r, "BITPOS", "missing", 2, match="The bit argument must be 1 or 0.")
    err(x, r, "BITPOS", "missing", "b", match=NOT_INT)


def test_bitpos_checks_arguments_before_the_key(r):
    needs_redis(r, (7, 4), "BITPOS's argument errors on any key")
    err(x, r, "BITPOS", "missing", 0, 1, "hello", "hello2", match="syntax error")
    err(x, r, "BITPOS", "missing", 0, 0, 1, "hello", match="syntax error")
    err(x, r, "BITPOS", "missing", 0, "a", "b", match=NOT_INT)
    r.rpush("l", "a")
    err(x, r, "BITPOS", "l", 1, "a", "b", match=NOT_INT)


# ---- BITOP --------------------------------------------------------------------

def test_bitop_not(r):
    r.set("s", b"\xaa\x00\xff\x55")
    assert x(r, "BITOP", "NOT", "dest", "s") == 4
    assert r.get("dest") == b"\x55\xff\x00\xaa"
    assert x(r, "BITOP", "not", "s", "s") == 4  # the destination is a source
    assert r.get("s") == b"\x55\xff\x00\xaa"
    # An empty result deletes the destination, whatever it held.
    r.set("e", "")
    r.set("dest", "old")
    assert x(r, "BITOP", "NOT", "dest", "e") == 0
    assert r.exists("dest") == 0
    r.rpush("dl", "a")
    assert x(r, "BITOP", "NOT", "dl", "missing") == 0
    assert r.exists("dl") == 0


def test_bitop_and_or_xor(r):
    r.set("a", b"\x01\x02\xff")
    for op in ("AND", "OR", "XOR"):  # one source: unchanged
        assert x(r, "BITOP", op, "res", "a") == 3
        assert r.get("res") == b"\x01\x02\xff"
    # A missing key is a run of zero bytes.
    assert x(r, "BITOP", "AND", "r1", "missing", "a") == 3
    assert x(r, "BITOP", "OR", "r2", "missing", "a", "missing2") == 3
    assert x(r, "BITOP", "XOR", "r3", "missing", "a") == 3
    assert [r.get(k) for k in ("r1", "r2", "r3")] == [b"\x00\x00\x00", b"\x01\x02\xff",
                                                      b"\x01\x02\xff"]
    # Shorter strings are zero-padded to the longest.
    r.set("a", b"\x01\x02\xff\xff")
    r.set("b", b"\x01\x02\xff")
    assert x(r, "BITOP", "AND", "r1", "a", "b") == 4
    assert x(r, "BITOP", "OR", "r2", "a", "b") == 4
    assert x(r, "BITOP", "XOR", "r3", "a", "b") == 4
    assert [r.get(k) for k in ("r1", "r2", "r3")] == [b"\x01\x02\xff\x00", b"\x01\x02\xff\xff",
                                                      b"\x00\x00\x00\xff"]
    assert x(r, "BITOP", "AND", "r4", "b", "a") == 4
    assert r.get("r4") == b"\x01\x02\xff\x00"
    # Integer-looking values are their digits' bytes.
    r.set("i1", "1")
    r.set("i2", "2")
    assert x(r, "BITOP", "XOR", "d", "i1", "i2", "i1") == 1
    assert r.get("d") == b"2"
    # 32 zero bytes OR nothing (issue 529).
    r.set("z", b"\x00" * 32)
    assert x(r, "BITOP", "OR", "x", "z", "nothing") == 32
    assert r.get("x") == b"\x00" * 32
    # Every source missing: 0, and the destination is deleted.
    r.set("d", "v")
    assert x(r, "BITOP", "OR", "d", "n1", "n2") == 0
    assert r.exists("d") == 0


def test_bitop_against_the_model(r):
    rnd = random.Random(529)
    for op in ("AND", "OR", "XOR", "NOT"):
        for _ in range(12):
            count = 1 if op == "NOT" else rnd.randint(1, 6)
            values = [bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 90)))
                      for _ in range(count)]
            keys = ["v%d" % i for i in range(count)]
            for k, v in zip(keys, values):
                r.set(k, v)
            want = bitop_model(op, values)
            assert x(r, "BITOP", op, "target", *keys) == len(want)
            assert r.get("target") == (want if want else None)


def test_bitop_stores_without_ttl_and_checks_types(r):
    r.set("a", "ab")
    r.set("dest", "x", ex=100)
    assert x(r, "BITOP", "OR", "dest", "a") == 2
    assert r.ttl("dest") == -1
    r.rpush("l", "foo")
    r.set("keep", "v")
    err(x, r, "BITOP", "XOR", "keep", "a", "l", "missing", match=WRONGTYPE)
    assert r.get("keep") == b"v"
    err(x, r, "BITOP", "NOT", "d", "l", match=WRONGTYPE)


def test_bitop_errors(r):
    err(x, r, "BITOP", "NAND", "d", "a", match="syntax error")
    err(x, r, "BITOP", "NOT", "d", "a", "b",
        match="BITOP NOT must be called with a single source key.")
    err(x, r, "BITOP", "AND", "d", match="wrong number of arguments for 'bitop' command")


def test_bitop_diff_diff1_andor_one(r):
    needs_redis(r, (8, 2), "BITOP DIFF, DIFF1, ANDOR and ONE")
    r.set("x", b"\xf0\x0f\xaa")
    r.set("y1", b"\xcc\x00")
    r.set("y2", b"\x11\x03\x0f\xff")
    assert x(r, "BITOP", "DIFF", "d", "x", "y1", "y2") == 4
    assert r.get("d") == b"\x20\x0c\xa0\x00"  # in X, in no Y
    assert x(r, "BITOP", "DIFF1", "d", "x", "y1", "y2") == 4
    assert r.get("d") == b"\x0d\x00\x05\xff"  # in some Y, not in X
    assert x(r, "BITOP", "ANDOR", "d", "x", "y1", "y2") == 4
    assert r.get("d") == b"\xd0\x03\x0a\x00"  # in X and in some Y
    assert x(r, "BITOP", "ONE", "d", "x", "y1", "y2") == 4
    assert r.get("d") == b"\x2d\x0c\xa5\xff"  # in exactly one
    assert x(r, "BITOP", "ONE", "d", "x") == 3  # one source: itself
    assert r.get("d") == b"\xf0\x0f\xaa"
    # A missing X is zeros; all empty deletes the destination.
    assert x(r, "BITOP", "DIFF1", "d", "nox", "y1") == 2
    assert r.get("d") == b"\xcc\x00"
    assert x(r, "BITOP", "ANDOR", "d", "nox", "y1") == 2
    assert r.get("d") == b"\x00\x00"
    assert x(r, "BITOP", "DIFF", "d", "n1", "n2") == 0
    assert r.exists("d") == 0
    for op in ("diff", "DIFF1", "AndOr"):
        err(x, r, "BITOP", op, "d", "x",
            match="BITOP %s must be called with at least two source keys." % op.upper())
    rnd = random.Random(13898)
    for op in ("DIFF", "DIFF1", "ANDOR", "ONE"):
        for _ in range(10):
            count = rnd.randint(2, 6)
            values = [bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 80)))
                      for _ in range(count)]
            keys = ["v%d" % i for i in range(count)]
            for k, v in zip(keys, values):
                r.set(k, v)
            want = bitop_model(op, values)
            assert x(r, "BITOP", op, "target", *keys) == len(want)
            assert r.get("target") == (want if want else None)


# ---- BITFIELD -----------------------------------------------------------------

def test_bitfield_set_get_incrby(r):
    # bitfield.tcl's basics
    assert x(r, "BITFIELD", "bits", "SET", "i8", 0, -100) == [0]
    assert x(r, "BITFIELD", "bits", "SET", "i8", 0, 101) == [-100]
    assert x(r, "BITFIELD", "bits", "GET", "i8", 0) == [101]
    r.delete("bits")
    assert x(r, "BITFIELD", "bits", "SET", "u8", 0, 255) == [0]
    assert x(r, "BITFIELD", "bits", "SET", "u8", 0, 100) == [255]
    assert x(r, "BITFIELD", "bits", "GET", "u8", 0) == [100]
    r.delete("bits")
    assert x(r, "BITFIELD", "bits", "SET", "i8", 0, 255, "SET", "i8", 0, 100, "GET", "i8", 0) == \
        [0, -1, 100]
    r.delete("bits")
    assert x(r, "BITFIELD", "bits", "set", "u8", 0, 255, "incrby", "u8", 0, 100,
             "get", "u8", 0) == [0, 99, 99]
    r.delete("bits")
    assert x(r, "BITFIELD", "bits") == []
    assert r.exists("bits") == 0
    for n, v in enumerate((65, 66, 67)):
        x(r, "BITFIELD", "bits", "SET", "u8", "#%d" % n, v)
    assert r.get("bits") == b"ABC"
    r.delete("bits")
    x(r, "BITFIELD", "bits", "SET", "u8", "#0", 10)
    assert x(r, "BITFIELD", "bits", "INCRBY", "u8", "#0", 100) == [110]
    assert x(r, "BITFIELD", "bits", "INCRBY", "u8", "#0", 100, "INCRBY", "u8", "#0", 100) == \
        [210, 54]
    # #N counts fields of the type's width.
    r.delete("bits")
    assert x(r, "BITFIELD", "bits", "SET", "u4", "#3", 15, "SET", "i12", "#1", -1) == [0, -256]
    assert r.get("bits") == b"\x00\x0f\xff"


def test_bitfield_field_layout(r):
    r.set("s", b"\x12\x34\x56")
    assert x(r, "BITFIELD", "s", "GET", "u12", 4, "GET", "i4", 8, "GET", "u1", 3,
             "GET", "u16", 4, "GET", "i8", 12) == [0x234, 3, 1, 0x2345, 0x45]
    # Past the end of the string the bits read as 0.
    r.set("f", b"\xff")
    assert x(r, "BITFIELD", "f", "GET", "u16", 0, "GET", "i16", 0, "GET", "u8", 100) == \
        [0xff00, -256, 0]
    assert x(r, "BITFIELD", "missing", "GET", "i64", 0, "GET", "u63", 1000) == [0, 0]
    # 64-bit fields at unaligned offsets.
    r.set("w", b"\x80" + b"\x00" * 8)
    assert x(r, "BITFIELD", "w", "GET", "i64", 0, "GET", "u63", 0, "GET", "i64", 1) == \
        [-9223372036854775808, 1 << 62, 0]
    r.delete("w")
    assert x(r, "BITFIELD", "w", "SET", "i64", 3, -2, "GET", "i64", 3, "GET", "u63", 4) == \
        [0, -2, (1 << 63) - 2]
    assert r.get("w") == b"\x1f" + b"\xff" * 7 + b"\xc0"
    # bitfield.tcl: regressions for #3221 and #3564.
    r.set("bits", "1")
    assert x(r, "BITFIELD", "bits", "GET", "u1", 0) == [0]
    for _ in range(3):
        r.delete("m")
        assert x(r, "BITFIELD", "m", "SET", "i8", 0, 10, "SET", "i8", 64, 10,
                 "INCRBY", "i8", 10, 99900) == [0, 0, 60]


def test_bitfield_overflow_modes(r):
    r.delete("bits")
    x(r, "BITFIELD", "bits", "SET", "u8", "#0", 100)
    assert x(r, "BITFIELD", "bits", "OVERFLOW", "WRAP", "INCRBY", "u8", "#0", 257) == [101]
    assert x(r, "BITFIELD", "bits", "OVERFLOW", "wrap", "INCRBY", "u8", "#0", 255) == [100]
    assert x(r, "BITFIELD", "bits", "OVERFLOW", "SAT", "INCRBY", "u8", "#0", 257) == [255]
    assert x(r, "BITFIELD", "bits", "OVERFLOW", "sat", "INCRBY", "u8", "#0", -256) == [0]
    x(r, "BITFIELD", "bits", "SET", "u8", "#0", 100)
    assert x(r, "BITFIELD", "bits", "OVERFLOW", "WRAP", "INCRBY", "i8", "#0", 257) == [101]
    assert x(r, "BITFIELD", "bits", "OVERFLOW", "WRAP", "INCRBY", "i8", "#0", 255) == [100]
    assert x(r, "BITFIELD", "bits", "OVERFLOW", "SAT", "INCRBY", "i8", "#0", 257) == [127]
    assert x(r, "BITFIELD", "bits", "OVERFLOW", "SAT", "INCRBY", "i8", "#0", -255) == [-128]
    # FAIL: nil, nothing written; OVERFLOW applies to the subcommands after it.
    x(r, "BITFIELD", "bits", "SET", "u8", "#0", 250)
    assert x(r, "BITFIELD", "bits", "INCRBY", "u8", "#0", 10, "OVERFLOW", "FAIL",
             "INCRBY", "u8", "#0", 300, "INCRBY", "u8", "#0", 1, "OVERFLOW", "SAT",
             "INCRBY", "u8", "#0", 300, "GET", "u8", "#0") == [4, None, 5, 255, 255]
    assert x(r, "BITFIELD", "bits", "OVERFLOW", "FAIL", "SET", "i8", 0, 128,
             "SET", "i8", 0, -129, "SET", "i8", 0, -128, "GET", "i8", 0) == [None, None, -1, -128]
    # A SET's value is taken as 64-bit two's complement for unsigned types.
    r.delete("u")
    assert x(r, "BITFIELD", "u", "OVERFLOW", "SAT", "SET", "u8", 0, -1, "GET", "u8", 0) == [0, 255]
    assert x(r, "BITFIELD", "u", "OVERFLOW", "WRAP", "SET", "u8", 0, -2, "GET", "u8", 0) == \
        [255, 254]
    assert x(r, "BITFIELD", "u", "OVERFLOW", "FAIL", "SET", "u8", 0, -1, "GET", "u8", 0) == \
        [None, 254]
    # The widest types.
    r.delete("w")
    imax, imin, umax = (1 << 63) - 1, -(1 << 63), (1 << 63) - 1
    assert x(r, "BITFIELD", "w", "SET", "i64", 0, imax, "OVERFLOW", "SAT", "INCRBY", "i64", 0, 1,
             "OVERFLOW", "WRAP", "INCRBY", "i64", 0, 1, "OVERFLOW", "FAIL",
             "INCRBY", "i64", 0, -1, "GET", "i64", 0) == [0, imax, imin, None, imin]
    assert x(r, "BITFIELD", "w", "SET", "u63", 0, umax, "OVERFLOW", "SAT", "INCRBY", "u63", 0, 5,
             "OVERFLOW", "WRAP", "INCRBY", "u63", 0, 2, "OVERFLOW", "SAT",
             "INCRBY", "u63", 0, imin) == [1 << 62, umax, 1, 0]


def test_bitfield_overflow_fail_still_creates_the_key(r):
    # As Redis, the string is made long enough for every write first.
    assert x(r, "BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u2", 0, 10) == [None]
    assert r.get("f") == b"\x00"
    assert x(r, "BITFIELD", "f", "OVERFLOW", "FAIL", "SET", "u2", 20, 4) == [None]
    assert r.get("f") == b"\x00\x00\x00"


def test_bitfield_against_the_model(r):
    # bitfield.tcl's overflow detection and wrap fuzzing, checked exactly.
    rnd = random.Random(3564)
    for _ in range(200):
        bits = rnd.randint(1, 64)
        signed = bits == 64 or rnd.random() < 0.5
        lo, hi = field_range(signed, bits)
        span = hi - lo + 1
        value = min(max(2 * lo + rnd.randrange(2 * span), -(1 << 63)), (1 << 63) - 1)
        incr = min(max(2 * lo + rnd.randrange(2 * span), -(1 << 63)), (1 << 63) - 1)
        t = ("i" if signed else "u") + str(bits)
        r.delete("bits")
        set_ok = lo <= value <= hi
        field = value if set_ok else 0
        got = x(r, "BITFIELD", "bits", "OVERFLOW", "FAIL", "SET", t, 0, value,
                "INCRBY", t, 0, incr)
        assert got == [0 if set_ok else None, field + incr if lo <= field + incr <= hi else None], \
            (t, value, incr)
        r.delete("bits")
        got = x(r, "BITFIELD", "bits", "SET", t, 0, value, "INCRBY", t, 0, incr, "GET", t, 0)
        assert got == [0, wrap(value + incr, signed, bits), wrap(value + incr, signed, bits)], \
            (t, value, incr)


def test_bitfield_keeps_the_ttl(r):
    r.set("t", "a", ex=100)
    assert x(r, "BITFIELD", "t", "SET", "u8", 8, 98) == [0]
    assert r.get("t") == b"ab"
    assert 99 <= r.ttl("t") <= 100


def test_bitfield_errors(r):
    for t in ("u64", "i65", "i0", "u0", "x8", "I8", "U8", "u", "i", "", "u-1", "i+8", "u8x"):
        err(x, r, "BITFIELD", "k", "GET", t, 0, match=BAD_TYPE)
    err(x, r, "BITFIELD", "k", "SET", "u64", 0, 1, match=BAD_TYPE)
    for off in (-1, "#-1", "abc", "#", "##1", 4294967296, "#536870912"):
        err(x, r, "BITFIELD", "k", "GET", "u8", off, match=BAD_OFFSET)
    err(x, r, "BITFIELD", "k", "SET", "u8", 0, "x", match=NOT_INT)
    err(x, r, "BITFIELD", "k", "INCRBY", "u8", 0, "1.5", match=NOT_INT)
    err(x, r, "BITFIELD", "k", "OVERFLOW", "BOGUS", "GET", "u8", 0,
        match="Invalid OVERFLOW type specified")
    err(x, r, "BITFIELD", "k", "BOGUS", match="syntax error")
    err(x, r, "BITFIELD", "k", "GET", "u8", match="syntax error")
    err(x, r, "BITFIELD", "k", "SET", "u8", 0, match="syntax error")
    err(x, r, "BITFIELD", "k", "OVERFLOW", match="syntax error")
    # Every subcommand is checked before any runs.
    err(x, r, "BITFIELD", "k", "SET", "u8", 0, 1, "GET", "u64", 0, match=BAD_TYPE)
    assert r.exists("k") == 0
    r.rpush("l", "a")
    err(x, r, "BITFIELD", "l", "GET", "u8", 0, match=WRONGTYPE)
    err(x, r, "BITFIELD", "l", "SET", "u8", 0, 1, match=WRONGTYPE)
    err(x, r, "BITFIELD", "l", "GET", "u64", 0, match=BAD_TYPE)  # arguments first
    err(x, r, "BITFIELD", match="wrong number of arguments for 'bitfield' command")


def test_bitfield_ro(r):
    assert x(r, "BITFIELD_RO", "bits") == []
    r.set("bits", b"\x12\x34")
    assert x(r, "BITFIELD_RO", "bits", "GET", "u8", 0, "GET", "i4", "#1", "GET", "u16", 8) == \
        [0x12, 2, 0x3400]
    assert x(r, "BITFIELD_RO", "missing", "GET", "i8", 0) == [0]
    ro_err = "BITFIELD_RO only supports the GET subcommand"
    err(x, r, "BITFIELD_RO", "bits", "SET", "u8", 0, 100, "GET", "u8", 0, match=ro_err)
    err(x, r, "BITFIELD_RO", "bits", "INCRBY", "u8", 0, 1, match=ro_err)
    assert r.get("bits") == b"\x12\x34"
    err(x, r, "BITFIELD_RO", "bits", "GET", "u64", 0, match=BAD_TYPE)
    err(x, r, "BITFIELD_RO", "bits", "SET", "u64", 0, 1, match=BAD_TYPE)  # parsed first
    r.rpush("l", "a")
    err(x, r, "BITFIELD_RO", "l", "GET", "u8", 0, match=WRONGTYPE)
    err(x, r, "BITFIELD_RO", "l", "SET", "u8", 0, 1, match=ro_err)  # before the type


# ---- RESP3, events, dirty, WATCH ----------------------------------------------

def test_bitfield_fail_is_a_null_in_both_protocols(raw):
    c = raw()
    assert c.cmd("BITFIELD", "bf", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "10",
                 "GET", "u2", "0") == b"*2\r\n$-1\r\n:0\r\n"
    assert c.cmd("SETBIT", "sb", "3", "1") == b":0\r\n"
    c.cmd("HELLO", "3")
    assert c.cmd("BITFIELD", "bf", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "10",
                 "GET", "u2", "0") == b"*2\r\n_\r\n:0\r\n"
    assert c.cmd("BITFIELD_RO", "bf", "GET", "i2", "0") == b"*1\r\n:0\r\n"
    assert c.cmd("BITFIELD", "bf") == b"*0\r\n"
    assert c.cmd("GETBIT", "sb", "3") == b":1\r\n"
    assert c.cmd("BITCOUNT", "sb") == b":1\r\n"
    assert c.cmd("BITPOS", "sb", "1") == b":3\r\n"
    assert c.cmd("BITOP", "NOT", "nb", "sb") == b":1\r\n"
    assert c.cmd("GET", "nb") == b"$1\r\n\xef\r\n"
    assert c.cmd("SETBIT", "sb", "x", "1") == \
        b"-ERR bit offset is not an integer or out of range\r\n"


@pytest.mark.skipif(TARGET == "fake", reason="the fake RESP front has no workers to deliver")
def test_bitmap_keyspace_events(r):
    p = listen(r, "E$g")
    try:
        x(r, "SETBIT", "b", 3, 1)      # setbit
        x(r, "SETBIT", "b", 3, 1)      # no change: no event
        x(r, "SETBIT", "b", 20, 0)     # only the length changes: setbit
        x(r, "GETBIT", "b", 3)
        x(r, "BITFIELD", "f", "SET", "u8", 0, 7)            # setbit
        x(r, "BITFIELD", "f", "SET", "u8", 0, 7)            # same value: none
        x(r, "BITFIELD", "f", "GET", "u8", 0)               # read: none
        x(r, "BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u8", 0, 255)  # failed: none
        x(r, "BITFIELD", "f", "INCRBY", "u8", 0, 1)         # setbit
        x(r, "BITOP", "OR", "d", "b", "f")                  # set
        x(r, "BITOP", "OR", "d", "b", "f")                  # set again (same value)
        x(r, "BITOP", "AND", "d", "nothing")                # del
        x(r, "BITOP", "AND", "d", "nothing")                # nothing to delete: none
        r.set("end", "1")
        assert keyevents(p, 7) == ["setbit b", "setbit b", "setbit f", "setbit f", "set d",
                                    "set d", "del d"]
        assert keyevents(p, 1) == ["set end"]
    finally:
        p.close()
        r.config_set("notify-keyspace-events", "")


def test_bitmap_writes_count_their_changes(r):
    # bitops.tcl, "SETBIT/BITFIELD only increase dirty when the value changed".
    assert changes(r, "SETBIT", "foo", 0, 0) == 1  # created
    assert changes(r, "BITFIELD", "foo2", "SET", "i5", 0, 0) == 1
    assert changes(r, "SETBIT", "foo", 0, 0) == 0
    assert changes(r, "BITFIELD", "foo2", "SET", "i5", 0, 0) == 0
    assert changes(r, "SETBIT", "foo", 0, 1) == 1
    assert changes(r, "SETBIT", "foo", 0, 1) == 0
    assert changes(r, "BITFIELD", "foo2", "SET", "i5", 0, 1) == 1
    assert changes(r, "BITFIELD", "foo2", "SET", "i5", 0, 1) == 0
    assert changes(r, "BITFIELD", "foo3", "INCRBY", "i5", 0, 1) == 1
    assert changes(r, "BITFIELD", "foo3", "INCRBY", "i5", 0, 1) == 1
    assert changes(r, "SETBIT", "foo", 90, 0) == 1  # length only
    assert changes(r, "BITFIELD", "foo2", "SET", "i5", 90, 0) == 1
    assert changes(r, "BITFIELD", "foo3", "SET", "u8", 0, 1, "SET", "u8", 8, 1) == 2
    assert changes(r, "BITFIELD", "foo3", "GET", "u8", 0) == 0
    assert changes(r, "SETBIT", "foo", -1, 0) == 0  # error
    assert changes(r, "BITOP", "OR", "d", "foo") == 1
    assert changes(r, "BITOP", "OR", "d", "none") == 1  # deletes d
    assert changes(r, "BITOP", "OR", "d", "none") == 0


def test_watch_sees_bit_changes_only(raw):
    c, other = raw(), raw()
    c.cmd("SETBIT", "w", "5", "1")
    assert c.cmd("WATCH", "w") == b"+OK\r\n"
    other.cmd("SETBIT", "w", "5", "1")  # the same bit: nothing changed
    other.cmd("BITFIELD", "w", "SET", "u1", "5", "1")
    c.cmd("MULTI")
    c.cmd("GET", "w")
    assert c.cmd("EXEC") == b"*1\r\n$1\r\n\x04\r\n"
    assert c.cmd("WATCH", "w") == b"+OK\r\n"
    other.cmd("SETBIT", "w", "5", "0")
    c.cmd("MULTI")
    c.cmd("GET", "w")
    assert c.cmd("EXEC") == b"*-1\r\n"
    assert c.cmd("WATCH", "w") == b"+OK\r\n"
    other.cmd("BITOP", "NOT", "w", "w")
    c.cmd("MULTI")
    c.cmd("GET", "w")
    assert c.cmd("EXEC") == b"*-1\r\n"


# ---- COMMAND, ACL --------------------------------------------------------------

BITMAP_COMMANDS = {
    # name: (arity, flags, first, last, step, categories, since)
    "setbit": (4, {"write", "denyoom"}, 1, 1, 1, {"@write", "@bitmap", "@slow"}, "2.2.0"),
    "getbit": (3, {"readonly", "fast"}, 1, 1, 1, {"@read", "@bitmap", "@fast"}, "2.2.0"),
    "bitcount": (-2, {"readonly"}, 1, 1, 1, {"@read", "@bitmap", "@slow"}, "2.6.0"),
    "bitpos": (-3, {"readonly"}, 1, 1, 1, {"@read", "@bitmap", "@slow"}, "2.8.7"),
    "bitop": (-4, {"write", "denyoom"}, 2, -1, 1, {"@write", "@bitmap", "@slow"}, "2.6.0"),
    "bitfield": (-2, {"write", "denyoom"}, 1, 1, 1, {"@write", "@bitmap", "@slow"}, "3.2.0"),
    "bitfield_ro": (-2, {"readonly", "fast"}, 1, 1, 1, {"@read", "@bitmap", "@fast"}, "6.0.0"),
}


def test_command_info_and_docs(rd):
    infos = rd.execute_command("COMMAND INFO", *BITMAP_COMMANDS)
    for info in infos:
        arity, flags, first, last, step, cats, _ = BITMAP_COMMANDS[info[0]]
        assert (info[1], set(info[2]), info[3], info[4], info[5], set(info[6])) == \
            (arity, flags, first, last, step, cats), info
    docs = rd.execute_command("COMMAND DOCS", *BITMAP_COMMANDS)
    if isinstance(docs, list):  # RESP2: a flat map
        docs = dict(zip(docs[::2], docs[1::2]))
    assert set(docs) == set(BITMAP_COMMANDS)
    for name, doc in docs.items():
        if isinstance(doc, list):
            doc = dict(zip(doc[::2], doc[1::2]))
        assert doc["group"] == "bitmap" and doc["since"] == BITMAP_COMMANDS[name][6], doc
    assert sorted(rd.execute_command("ACL", "CAT", "bitmap")) == sorted(BITMAP_COMMANDS)


@pytest.mark.parametrize("args,expected", [
    (["setbit", "k", "1", "1"], [("k", {"RW", "access", "update"})]),
    (["getbit", "k", "1"], [("k", {"RO", "access"})]),
    (["bitcount", "k"], [("k", {"RO", "access"})]),
    (["bitpos", "k", "1"], [("k", {"RO", "access"})]),
    (["bitop", "and", "d", "a", "b"],
     [("d", {"OW", "update"}), ("a", {"RO", "access"}), ("b", {"RO", "access"})]),
    (["bitfield", "k", "get", "u8", "0"], [("k", {"RO", "access"})]),
    (["bitfield", "k", "overflow", "sat", "get", "u8", "0"], [("k", {"RO", "access"})]),
    (["bitfield", "k", "get", "u8", "0", "set", "u8", "0", "1"],
     [("k", {"RW", "access", "update"})]),
    (["bitfield", "k", "incrby", "u8", "0", "1"], [("k", {"RW", "access", "update"})]),
    (["bitfield_ro", "k", "get", "u8", "0"], [("k", {"RO", "access"})]),
])
def test_command_getkeysandflags(rd, args, expected):
    got = rd.execute_command("COMMAND GETKEYSANDFLAGS", *args)
    assert [(k, set(f)) for k, f in got] == expected


def test_acl_key_permissions(rd):
    rd.execute_command("ACL", "SETUSER", "bm", "+@all", "%R~read*", "%W~write*", "%RW~rw*")
    try:
        def ok(*a):
            return rd.execute_command("ACL", "DRYRUN", "bm", *a) == "OK"

        assert ok("GETBIT", "read", 0) and not ok("GETBIT", "write", 0)
        assert ok("BITCOUNT", "read") and ok("BITPOS", "read", 1)
        assert ok("SETBIT", "rw", 0, 1)
        assert not ok("SETBIT", "write", 0, 1)  # SETBIT also reads its key
        assert not ok("SETBIT", "read", 0, 1)
        assert ok("BITOP", "AND", "write1", "read1", "read2")
        assert not ok("BITOP", "AND", "read1", "read2")
        assert not ok("BITOP", "AND", "write1", "write2")
        assert ok("BITFIELD", "read", "GET", "u8", 0)  # GETs only: a read
        assert not ok("BITFIELD", "write", "GET", "u8", 0)
        assert not ok("BITFIELD", "read", "SET", "u8", 0, 1)
        assert ok("BITFIELD", "rw", "GET", "u8", 0, "INCRBY", "u8", 0, 1)
        assert ok("BITFIELD_RO", "read", "GET", "u8", 0)
        rd.execute_command("ACL", "SETUSER", "nobits", "on", "nopass", "+@all", "-@bitmap", "~*")
        assert rd.execute_command("ACL", "DRYRUN", "nobits", "GET", "k") == "OK"
        assert rd.execute_command("ACL", "DRYRUN", "nobits", "GETBIT", "k", 0) != "OK"
    finally:
        rd.execute_command("ACL", "DELUSER", "bm", "nobits")


# ---- large values, other protocols -----------------------------------------------

def test_values_larger_than_an_engine_chunk(r):
    # 700,000 bytes: more than one engine chunk in Trove (-I 1m: 512 KiB
    # chunks), so every read walks the value's pieces across a boundary.
    rnd = random.Random(700)
    size = 700_000
    big = bytearray(size)
    for i in range(0, size, 4096):
        big[i] = rnd.randrange(256)
    big[524287] = 0x01
    big[524288] = 0x80
    big = bytes(big)
    r.set("big", big)
    total = bits_of(big).count("1")
    assert x(r, "BITCOUNT", "big") == total
    for start, end in ((0, -1), (524280, 524300), (1000, 699_000), (-200_000, -1)):
        assert x(r, "BITCOUNT", "big", start, end) == bitcount_model(big, start, end)
    assert x(r, "BITCOUNT", "big", 524287 * 8 + 7, 524288 * 8, "BIT") == 2
    assert x(r, "GETBIT", "big", 524287 * 8 + 7) == 1
    assert x(r, "GETBIT", "big", 524288 * 8) == 1
    assert x(r, "BITPOS", "big", 1, 520_193) == 524287 * 8 + 7
    assert x(r, "BITPOS", "big", 1, 524288) == 524288 * 8
    assert x(r, "BITFIELD_RO", "big", "GET", "u16", 524287 * 8) == [0x0180]
    zeros_then_one = b"\x00" * 600_000 + b"\x02" + b"\x00" * 99_999
    r.set("z", zeros_then_one)
    assert x(r, "BITPOS", "z", 1) == 600_000 * 8 + 6
    assert x(r, "BITPOS", "z", 1, 0, 600_000 * 8 + 5, "BIT") == -1
    ones_then_zero = b"\xff" * 600_000 + b"\xfe" + b"\xff" * 99_999
    r.set("o", ones_then_zero)
    assert x(r, "BITPOS", "o", 0) == 600_000 * 8 + 7
    assert x(r, "BITPOS", "o", 0, 600_001) == 700_000 * 8
    assert x(r, "BITPOS", "o", 0, 600_001, -1) == -1
    assert x(r, "BITOP", "AND", "d", "big", "o") == size
    assert r.get("d") == bytes(p & q for p, q in zip(big, ones_then_zero))
    assert x(r, "BITOP", "NOT", "d", "z") == size
    assert r.get("d") == bytes(255 - b for b in zeros_then_one)
    assert x(r, "BITOP", "XOR", "d", "z", "o", "big") == size
    assert r.get("d") == bytes(p ^ q ^ b for p, q, b in zip(zeros_then_one, ones_then_zero, big))
    assert x(r, "SETBIT", "big", 600_000 * 8, 1) == big[600_000] >> 7
    assert x(r, "GETBIT", "big", 600_000 * 8) == 1
    assert r.strlen("big") == size
    assert x(r, "BITFIELD", "big", "INCRBY", "u16", 524287 * 8, 1) == [0x0181]
    assert r.getrange("big", 524287, 524288) == b"\x01\x81"


def test_setbit_is_seen_by_memcached(trove, r):
    from pymemcache.client.base import Client
    mc = Client(("127.0.0.1", trove.port), timeout=5, default_noreply=False)
    try:
        assert x(r, "SETBIT", "mc:bits", 7, 1) == 0
        assert x(r, "SETBIT", "mc:bits", 9, 1) == 0
        assert mc.get("mc:bits") == b"\x01\x40"
        assert x(r, "BITFIELD", "mc:bits", "SET", "u8", 16, 0x41) == [0]
        assert mc.get("mc:bits") == b"\x01\x40\x41"
        mc.set("mc:raw", b"\xff\x0f")
        assert x(r, "BITCOUNT", "mc:raw") == 12
        assert x(r, "BITPOS", "mc:raw", 0) == 8
        assert x(r, "GETBIT", "mc:raw", 15) == 1
        assert x(r, "BITOP", "NOT", "mc:not", "mc:raw") == 2
        assert mc.get("mc:not") == b"\x00\xf0"
        assert x(r, "SETBIT", "mc:raw", 8, 1) == 0
        assert mc.get("mc:raw") == b"\xff\x8f"
    finally:
        mc.close()
