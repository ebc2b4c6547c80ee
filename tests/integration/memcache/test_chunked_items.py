"""Chunked items (issue 11): slab_chunk_max in kilobytes as memcached 1.6
takes it, values with as many chunk parts as their size needs, eviction of
chunked values with memory full, and chunk rescues when the slab mover moves
a page of the class that holds the parts. Runs against memcached 1.6.45 too
(TROVE_TEST_TARGET=memcached)."""

import pytest

from harness import server as hserver
from harness.client import Conn, wait_for


def _pattern(n):
    # Non-repeating, so a misplaced or overlapping part shows in the value.
    out = bytearray()
    i = 0
    while len(out) < n:
        out += b"%d:" % i
        i += 1
    return bytes(out[:n])


def _set(c, key, value, timeout=20):
    return c.rt(b"set %s 0 0 %d\r\n%s\r\n" % (key.encode(), len(value), value), timeout=timeout)


def test_slab_chunk_max_is_in_kilobytes(make_server):
    srv = make_server("-o", "slab_chunk_max=16")
    with Conn.to(srv) as c:
        assert c.stats("settings")["slab_chunk_max"] == str(16 * 1024)
        # 40 KB: three parts of the 16 KiB class.
        value = _pattern(40 * 1024)
        assert _set(c, "k", value) == b"STORED\r\n"
        assert c.get("k") == value


@pytest.mark.parametrize("arg,msg", [
    ("slab_chunk_max=2048", "slab_chunk_max must be specified in kilobytes."),
    ("slab_chunk_max=0", "slab_chunk_max must be >= 0"),
])
def test_slab_chunk_max_out_of_range_is_refused(arg, msg):
    rc, _, err = hserver.run_binary(["-p", "0", "-o", arg])
    assert rc != 0
    assert msg in err


def test_one_kilobyte_chunks_give_a_thousand_parts(make_server):
    # -I 1m with 1 KiB chunks: a 1,000,000-byte value takes about 1,000
    # parts (the reply is sent in batches of iovecs) and reads back exact.
    srv = make_server("-m", "64", "-o", "slab_chunk_max=1")
    with Conn.to(srv) as c:
        value = _pattern(1000 * 1000)
        assert _set(c, "thousand", value) == b"STORED\r\n"
        assert c.get("thousand") == value
        # Pipelined gets of several big values, and a multiget.
        small = _pattern(5000)
        assert _set(c, "five", small) == b"STORED\r\n"
        c.send(b"get thousand\r\nget five thousand\r\n")
        one = c.read_until(b"END\r\n", timeout=20)
        two = c.read_until(b"END\r\n", timeout=20)
        assert one == b"VALUE thousand 0 %d\r\n%s\r\nEND\r\n" % (len(value), value)
        assert two == (b"VALUE five 0 5000\r\n%s\r\nVALUE thousand 0 %d\r\n%s\r\nEND\r\n"
                       % (small, len(value), value))


def test_append_and_prepend_grow_a_value_across_many_parts(make_server):
    srv = make_server("-m", "64", "-o", "slab_chunk_max=16")
    with Conn.to(srv) as c:
        expect = b"seed"
        assert _set(c, "grow", expect) == b"STORED\r\n"
        for i in range(300):
            part = b"%d-" % i + b"a" * 1000
            if i % 2:
                assert c.rt(b"append grow 0 0 %d\r\n%s\r\n" % (len(part), part)) == b"STORED\r\n"
                expect += part
            else:
                assert c.rt(b"prepend grow 0 0 %d\r\n%s\r\n" % (len(part), part)) == b"STORED\r\n"
                expect = part + expect
        assert c.get("grow") == expect  # about 300 KB over 16 KiB parts


def test_wide_range_of_large_values_with_memory_full(make_server):
    # memcached's t/chunked-items.t: -m 48 with 16 KiB chunks, values from
    # 200 KB to 1 MB in 2 KB steps (the last part lands in every class).
    srv = make_server("-m", "48", "-o", "slab_chunk_max=16")
    with Conn.to(srv) as c:
        n = 200 * 1024
        while n < 1024 * 1024:
            assert _set(c, "w%d" % n, b"B" * n) == b"STORED\r\n", n
            n += 8 * 1024
        assert int(c.stat("evictions")) > 0
        last = n - 8 * 1024
        assert c.get("w%d" % last) == b"B" * last


def test_chunk_parts_are_rescued_when_their_page_moves(make_server):
    # memcached's t/slabs-reassign-chunked.t, smaller: 11,000-byte values in
    # 4 KiB chunks fill memory; moving pages of the parts' class to the
    # global pool copies live parts out (slab_reassign_chunk_rescues) and
    # every value that is still there reads back intact.
    srv = make_server("-m", "60", "-o",
                      "slab_reassign,slab_automove=0,lru_crawler,lru_maintainer,slab_chunk_max=4")
    c = Conn.to(srv)
    value = _pattern(11000)
    for i in range(5100):
        c.send(b"set n%d 0 0 11000 noreply\r\n%s\r\n" % (i, value))
    c.call(b"version\r\n")
    slabs = c.stats("slabs")
    part_cls = max(int(k.split(":")[0]) for k in slabs if k.endswith(":chunk_size")
                   and int(slabs[k]) == 4096)
    for _ in range(3):
        assert c.rt(b"slabs reassign %d 0\r\n" % part_cls) in (b"OK\r\n", b"BUSY currently processing reassign request\r\n")
        assert wait_for(lambda: c.stat("slab_reassign_running") == "0", timeout=10)
    st = c.stats()
    assert int(st["slab_global_page_pool"]) > 0
    assert int(st["slab_reassign_chunk_rescues"]) > 0
    hits = 0
    for i in range(5100):
        got = c.get("n%d" % i)
        if got is not None:
            assert got == value, i
            hits += 1
    assert hits > 0
    c.close()
