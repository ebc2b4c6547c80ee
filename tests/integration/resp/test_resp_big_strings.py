"""Strings past memcached's item size (-I, 1 MiB by default) on the RESP port.

Redis stores strings up to proto-max-bulk-len (512 MiB by default); Trove's
RESP port does too, whatever -I is, as chunked items counted against -m. The
memcached port keeps memcached's -I rule for its own stores.
"""

import socket

import pytest

from resp_errors import err

MIB = 1024 * 1024
SERVER_ARGS = ["-m", "64"]


def test_very_big_payload_set_get(r):
    # Redis's "Very big payload in GET/SET" (unit/type/string).
    buf = b"abcd" * 1000000
    assert r.set("foo", buf)
    assert r.get("foo") == buf
    assert r.strlen("foo") == 4000000
    assert r.getrange("foo", 3999996, -1) == b"abcd"


def test_big_values_of_many_sizes_round_trip(r):
    sizes = [MIB - 200, MIB, MIB + 1, 3 * MIB + 17, 9 * MIB]
    for i, n in enumerate(sizes):
        v = bytes((j * 7 + i) & 0xFF for j in range(256)) * (n // 256) + b"z" * (n % 256)
        assert r.set(f"big:{i}", v)
        assert r.get(f"big:{i}") == v, n
    for i, n in enumerate(sizes):
        assert r.strlen(f"big:{i}") == n


def test_append_and_setrange_grow_past_the_item_size(r):
    r.set("a", b"x" * (MIB - 10))
    assert r.append("a", b"y" * 100) == MIB + 90
    assert r.append("a", b"tail") == MIB + 94
    assert r.getrange("a", -8, -1) == b"yyyytail"
    assert r.setrange("s", 2 * MIB, b"end") == 2 * MIB + 3
    assert r.getrange("s", 2 * MIB - 2, -1) == b"\x00\x00end"
    assert r.getrange("s", 0, 3) == b"\x00" * 4


def test_proto_max_bulk_len_is_the_limit(r):
    old = r.config_get("proto-max-bulk-len")["proto-max-bulk-len"]
    try:
        r.config_set("proto-max-bulk-len", 2 * MIB)
        r.set("p", b"x" * (2 * MIB - 1))
        err(r.append, "p", b"yy", match="string exceeds maximum allowed size (proto-max-bulk-len)")
        err(r.setrange, "p", 2 * MIB, b"y",
            match="string exceeds maximum allowed size (proto-max-bulk-len)")
        assert r.strlen("p") == 2 * MIB - 1
    finally:
        r.config_set("proto-max-bulk-len", old)


def test_bulk_longer_than_proto_max_bulk_len_is_a_protocol_error(resp_port, r):
    old = r.config_get("proto-max-bulk-len")["proto-max-bulk-len"]
    try:
        r.config_set("proto-max-bulk-len", 2 * MIB)
        s = socket.create_connection(("127.0.0.1", resp_port), timeout=5)
        s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (2 * MIB + 1))
        reply = s.recv(200)
        assert reply.startswith(b"-ERR Protocol error: invalid bulk length")
        s.close()
    finally:
        r.config_set("proto-max-bulk-len", old)


def test_big_string_is_served_to_memcached_but_not_stored_by_it(trove, r):
    from pymemcache.client.base import Client
    from pymemcache.exceptions import MemcacheServerError
    mc = Client(("127.0.0.1", trove.port), timeout=10, default_noreply=False)
    try:
        v = bytes(range(256)) * (3 * MIB // 256)
        r.set("mc:big", v)
        assert mc.get("mc:big") == v
        # memcached's own stores keep -I as their limit.
        with pytest.raises(MemcacheServerError, match="object too large for cache"):
            mc.set("mc:big2", v)
        # An append whose result would pass -I is NOT_STORED, as memcached
        # answers a failed allocation there.
        assert mc.append("mc:big", b"more") is False
        assert r.get("mc:big") == v
    finally:
        mc.close()


def test_big_string_counts_against_memory(trove, r):
    # Item memory (-m 64 by default in the tests' server) holds the parts:
    # a value larger than all of it is refused, the server stays usable.
    err(r.set, "huge", b"h" * (80 * MIB),
        match="OOM command not allowed when used memory > 'maxmemory'.")
    assert r.exists("huge") == 0
    assert r.set("after", "ok") and r.get("after") == b"ok"
    r.delete("huge", "after")


def test_big_strings_are_replaced_and_deleted(r):
    for round_ in range(3):
        v = bytes([round_]) * (5 * MIB)
        r.set("churn", v)
        assert r.get("churn") == v
    assert r.delete("churn") == 1
    assert r.get("churn") is None
