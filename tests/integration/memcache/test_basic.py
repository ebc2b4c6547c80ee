"""Text protocol: storage, retrieval, arithmetic, delete, touch, with exact
bytes over raw sockets. Each test uses its own keys; the server is shared by
the module."""

import time

import pytest


def b(s):
    return s.encode("latin1") if isinstance(s, str) else s


# ---- set / get ----------------------------------------------------------

def test_set_get_exact_bytes(conn, key):
    k = b(key)
    assert conn.rt(b"set %s 5 0 3\r\nabc\r\n" % k) == b"STORED\r\n"
    assert conn.rt(b"get %s\r\n" % k) == b"VALUE %s 5 3\r\nabc\r\nEND\r\n" % k


def test_get_miss_is_just_end(conn, key):
    assert conn.rt(b"get %s_missing\r\n" % b(key)) == b"END\r\n"


def test_binary_value_with_crlf_inside(conn, key):
    k = b(key)
    value = b"a\r\nb\x00c\r\n\xff"
    assert conn.rt(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(value), value)) == b"STORED\r\n"
    assert conn.rt(b"get %s\r\n" % k) == b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (k, len(value), value)


def test_empty_value(conn, key):
    k = b(key)
    assert conn.rt(b"set %s 0 0 0\r\n\r\n" % k) == b"STORED\r\n"
    assert conn.rt(b"get %s\r\n" % k) == b"VALUE %s 0 0\r\n\r\nEND\r\n" % k


def test_flags_are_32_bit(conn, key):
    k = b(key)
    assert conn.rt(b"set %s 4294967295 0 1\r\nx\r\n" % k) == b"STORED\r\n"
    assert conn.rt(b"get %s\r\n" % k) == b"VALUE %s 4294967295 1\r\nx\r\nEND\r\n" % k


def test_large_value_roundtrip(conn, key):
    k = b(key)
    value = bytes(range(256)) * 2000  # 512000 bytes, below the 1 MiB default limit
    assert conn.rt(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(value), value)) == b"STORED\r\n"
    assert conn.get(k) == value


def test_multiget_order_misses_and_duplicates(conn, key):
    k1, k2, k3 = b(key + "1"), b(key + "2"), b(key + "3")
    conn.set(k1, "one", flags=1)
    conn.set(k3, "three", flags=3)
    got = conn.rt(b"get %s %s %s %s\r\n" % (k1, k2, k3, k1))
    assert got == (b"VALUE %s 1 3\r\none\r\n" % k1 + b"VALUE %s 3 5\r\nthree\r\n" % k3
                   + b"VALUE %s 1 3\r\none\r\n" % k1 + b"END\r\n")


def test_set_overwrites(conn, key):
    conn.set(key, "first", flags=7)
    conn.set(key, "second", flags=8)
    assert conn.rt(b"get %s\r\n" % b(key)) == b"VALUE %s 8 6\r\nsecond\r\nEND\r\n" % b(key)


def test_gets_returns_cas_that_changes_on_update(conn, key):
    k = b(key)
    conn.set(k, "v1")
    reply = conn.rt(b"gets %s\r\n" % k)
    head = reply.split(b"\r\n")[0].split()
    assert head[:4] == [b"VALUE", k, b"0", b"2"]
    cas1 = int(head[4])
    assert cas1 > 0
    assert reply == b"VALUE %s 0 2 %d\r\nv1\r\nEND\r\n" % (k, cas1)
    # Reading does not change the cas; writing does.
    assert conn.gets(k) == (b"v1", cas1)
    conn.set(k, "v2")
    value, cas2 = conn.gets(k)
    assert value == b"v2" and cas2 != cas1


def test_pipelined_commands_in_one_write(conn, key):
    k = b(key)
    batch = (b"set %s 0 0 1\r\na\r\n" % k + b"get %s\r\n" % k + b"append %s 0 0 1\r\nb\r\n" % k
             + b"get %s\r\n" % k + b"delete %s\r\n" % k + b"get %s\r\n" % k)
    assert conn.rt(batch) == (b"STORED\r\nVALUE %s 0 1\r\na\r\nEND\r\nSTORED\r\n"
                              b"VALUE %s 0 2\r\nab\r\nEND\r\nDELETED\r\nEND\r\n" % (k, k))


def test_command_split_across_writes(conn, key):
    k = b(key)
    msg = b"set %s 0 0 10\r\n0123456789\r\n" % k
    for i in range(len(msg)):
        conn.send(msg[i:i + 1])
        if i % 7 == 0:
            time.sleep(0.001)
    assert conn.read_line() == b"STORED\r\n"
    assert conn.get(k) == b"0123456789"


# ---- add / replace / append / prepend -----------------------------------

def test_add(conn, key):
    k = b(key)
    assert conn.rt(b"add %s 1 0 1\r\na\r\n" % k) == b"STORED\r\n"
    assert conn.rt(b"add %s 2 0 1\r\nb\r\n" % k) == b"NOT_STORED\r\n"
    assert conn.rt(b"get %s\r\n" % k) == b"VALUE %s 1 1\r\na\r\nEND\r\n" % k


def test_replace(conn, key):
    k = b(key)
    assert conn.rt(b"replace %s 1 0 1\r\na\r\n" % k) == b"NOT_STORED\r\n"
    assert conn.get(k) is None
    conn.set(k, "x")
    assert conn.rt(b"replace %s 9 0 1\r\nb\r\n" % k) == b"STORED\r\n"
    assert conn.rt(b"get %s\r\n" % k) == b"VALUE %s 9 1\r\nb\r\nEND\r\n" % k


def test_append_prepend(conn, key):
    k = b(key)
    assert conn.rt(b"append %s 0 0 1\r\na\r\n" % k) == b"NOT_STORED\r\n"
    assert conn.rt(b"prepend %s 0 0 1\r\na\r\n" % k) == b"NOT_STORED\r\n"
    assert conn.get(k) is None
    conn.set(k, "mid", flags=42)
    # Flags and exptime given with append/prepend are ignored.
    assert conn.rt(b"append %s 7 0 4\r\n_end\r\n" % k) == b"STORED\r\n"
    assert conn.rt(b"prepend %s 8 0 6\r\nstart_\r\n" % k) == b"STORED\r\n"
    assert conn.rt(b"get %s\r\n" % k) == b"VALUE %s 42 13\r\nstart_mid_end\r\nEND\r\n" % k


def test_append_changes_cas(conn, key):
    conn.set(key, "a")
    _, cas1 = conn.gets(key)
    assert conn.rt(b"append %s 0 0 1\r\nb\r\n" % b(key)) == b"STORED\r\n"
    value, cas2 = conn.gets(key)
    assert value == b"ab" and cas2 != cas1


# ---- cas ----------------------------------------------------------------

def test_cas(conn, key):
    k = b(key)
    assert conn.rt(b"cas %s 0 0 1 12345\r\na\r\n" % k) == b"NOT_FOUND\r\n"
    conn.set(k, "a")
    _, cas = conn.gets(k)
    assert conn.rt(b"cas %s 3 0 1 %d\r\nb\r\n" % (k, cas + 1000)) == b"EXISTS\r\n"
    assert conn.rt(b"cas %s 3 0 1 %d\r\nb\r\n" % (k, cas)) == b"STORED\r\n"
    assert conn.rt(b"get %s\r\n" % k) == b"VALUE %s 3 1\r\nb\r\nEND\r\n" % k
    # The old cas is stale now.
    assert conn.rt(b"cas %s 0 0 1 %d\r\nc\r\n" % (k, cas)) == b"EXISTS\r\n"


def test_cas_noreply(conn, key):
    k = b(key)
    conn.set(k, "a")
    _, cas = conn.gets(k)
    assert conn.rt(b"cas %s 0 0 1 %d noreply\r\nz\r\n" % (k, cas)) == b""
    assert conn.get(k) == b"z"


# ---- incr / decr --------------------------------------------------------

def test_incr_decr(conn, key):
    k = b(key)
    assert conn.rt(b"incr %s 1\r\n" % k) == b"NOT_FOUND\r\n"
    assert conn.rt(b"decr %s 1\r\n" % k) == b"NOT_FOUND\r\n"
    conn.set(k, "10")
    assert conn.rt(b"incr %s 5\r\n" % k) == b"15\r\n"
    assert conn.rt(b"decr %s 3\r\n" % k) == b"12\r\n"
    assert conn.rt(b"incr %s 0\r\n" % k) == b"12\r\n"
    assert conn.get(k).rstrip(b" ") == b"12"


def test_incr_grows_length(conn, key):
    conn.set(key, "99")
    assert conn.rt(b"incr %s 1\r\n" % b(key)) == b"100\r\n"
    assert conn.get(key) == b"100"


def test_decr_shrinking_may_pad(conn, key):
    conn.set(key, "10")
    assert conn.rt(b"decr %s 1\r\n" % b(key)) == b"9\r\n"
    # memcached may leave trailing spaces when the number gets shorter.
    assert conn.get(key).rstrip(b" ") == b"9"
    assert conn.rt(b"incr %s 1\r\n" % b(key)) == b"10\r\n"


def test_decr_floors_at_zero(conn, key):
    conn.set(key, "5")
    assert conn.rt(b"decr %s 100\r\n" % b(key)) == b"0\r\n"
    assert conn.rt(b"decr %s 1\r\n" % b(key)) == b"0\r\n"


def test_incr_wraps_at_64_bits(conn, key):
    conn.set(key, "18446744073709551615")
    assert conn.rt(b"incr %s 1\r\n" % b(key)) == b"0\r\n"
    conn.set(key, "18446744073709551610")
    assert conn.rt(b"incr %s 10\r\n" % b(key)) == b"4\r\n"


def test_incr_keeps_flags_and_changes_cas(conn, key):
    k = b(key)
    conn.set(k, "1", flags=77)
    _, cas1 = conn.gets(k)
    assert conn.rt(b"incr %s 1\r\n" % k) == b"2\r\n"
    reply = conn.rt(b"gets %s\r\n" % k)
    parts = reply.split(b"\r\n")[0].split()
    assert parts[2] == b"77"
    assert int(parts[4]) != cas1


def test_incr_non_numeric_value(conn, key):
    conn.set(key, "abc")
    assert conn.rt(b"incr %s 1\r\n" % b(key)) == \
        b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
    assert conn.rt(b"decr %s 1\r\n" % b(key)) == \
        b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
    assert conn.get(key) == b"abc"


def test_incr_invalid_delta(conn, key):
    conn.set(key, "1")
    for delta in (b"abc", b"-1", b"18446744073709551616", b"1x"):
        assert conn.rt(b"incr %s %s\r\n" % (b(key), delta)) == \
            b"CLIENT_ERROR invalid numeric delta argument\r\n", delta
    assert conn.get(key) == b"1"


# ---- delete / touch / gat -----------------------------------------------

def test_delete(conn, key):
    k = b(key)
    assert conn.rt(b"delete %s\r\n" % k) == b"NOT_FOUND\r\n"
    conn.set(k, "x")
    assert conn.rt(b"delete %s\r\n" % k) == b"DELETED\r\n"
    assert conn.rt(b"get %s\r\n" % k) == b"END\r\n"
    assert conn.rt(b"delete %s\r\n" % k) == b"NOT_FOUND\r\n"


def test_delete_legacy_zero_time(conn, key):
    k = b(key)
    conn.set(k, "x")
    assert conn.rt(b"delete %s 0\r\n" % k) == b"DELETED\r\n"
    # memcached 1.6.45 dropped the legacy <time> check: words after the key
    # are ignored, so a non-zero time deletes too.
    conn.set(k, "x")
    assert conn.rt(b"delete %s 5\r\n" % k) == b"DELETED\r\n"
    assert conn.get(k) is None
    conn.set(k, "x")
    assert conn.rt(b"delete %s 5 noreply\r\n" % k) == b""
    assert conn.get(k) is None


def test_touch(conn, key):
    k = b(key)
    assert conn.rt(b"touch %s 100\r\n" % k) == b"NOT_FOUND\r\n"
    conn.set(k, "x")
    assert conn.rt(b"touch %s 100\r\n" % k) == b"TOUCHED\r\n"
    assert conn.get(k) == b"x"


def test_touch_negative_expires(conn, key):
    conn.set(key, "x")
    assert conn.rt(b"touch %s -1\r\n" % b(key)) == b"TOUCHED\r\n"
    assert conn.get(key) is None


def test_gat_and_gats(conn, key):
    k1, k2 = b(key + "1"), b(key + "2")
    conn.set(k1, "one", flags=5)
    _, cas = conn.gets(k1)
    assert conn.rt(b"gat 100 %s %s\r\n" % (k1, k2)) == b"VALUE %s 5 3\r\none\r\nEND\r\n" % k1
    assert conn.rt(b"gats 100 %s %s\r\n" % (k2, k1)) == \
        b"VALUE %s 5 3 %d\r\none\r\nEND\r\n" % (k1, cas)
    # gat with a negative time expires the item after returning it.
    assert conn.rt(b"gat -1 %s\r\n" % k1) == b"VALUE %s 5 3\r\none\r\nEND\r\n" % k1
    assert conn.rt(b"get %s\r\n" % k1) == b"END\r\n"


def test_gat_bad_exptime(conn, key):
    conn.set(key, "x")
    assert conn.rt(b"gat abc %s\r\n" % b(key)) == b"CLIENT_ERROR invalid exptime argument\r\n"


# ---- noreply ------------------------------------------------------------

def test_noreply_everywhere(conn, key):
    k = b(key)
    sent = (b"set %s 0 0 1 noreply\r\n1\r\n" % k
            + b"add %s 0 0 1 noreply\r\n2\r\n" % k          # fails silently
            + b"replace %s 0 0 1 noreply\r\n3\r\n" % k
            + b"append %s 0 0 1 noreply\r\n4\r\n" % k
            + b"prepend %s 0 0 1 noreply\r\n5\r\n" % k
            + b"incr %s 10 noreply\r\n" % k
            + b"decr %s 1 noreply\r\n" % k
            + b"touch %s 100 noreply\r\n" % k)
    assert conn.rt(sent) == b""
    assert conn.get(k) == b"543"  # "534" + 10 - 1
    assert conn.rt(b"delete %s noreply\r\n" % k) == b""
    assert conn.get(k) is None
    # Misses are silent too.
    assert conn.rt(b"incr %s 1 noreply\r\ndelete %s noreply\r\ntouch %s 1 noreply\r\n"
                   b"replace %s 0 0 1 noreply\r\nx\r\n" % (k, k, k, k)) == b""


def test_noreply_errors_still_reply(conn, key):
    # memcached swallows the bad-data-chunk error of a noreply set, but the
    # stray bytes after the <bytes>+2 it consumed ("\r\n" here) are then
    # parsed as a command line: one too short to be a command (1.6.45).
    assert conn.rt(b"set %s 0 0 1 noreply\r\nabc\r\n" % b(key)) == \
        b"CLIENT_ERROR bad command line format\r\n"
    assert conn.get(key) is None
    # Errors of a well-formed noreply line are silent too.
    conn.set(key, "1")
    assert conn.rt(b"incr %s abc noreply\r\ntouch %s abc noreply\r\n" % (b(key), b(key))) == b""
    assert conn.get(key) == b"1"


# ---- expiry -------------------------------------------------------------

def test_negative_exptime_is_immediately_expired(conn, key):
    assert conn.rt(b"set %s 0 -1 1\r\nx\r\n" % b(key)) == b"STORED\r\n"
    assert conn.get(key) is None


def test_absolute_exptime(conn, key):
    now = int(time.time())
    conn.set(key + "past", "x", exptime=now - 1000)
    conn.set(key + "future", "y", exptime=now + 1000)
    assert conn.get(key + "past") is None
    assert conn.get(key + "future") == b"y"


def test_relative_exptime_expires(conn, key):
    # One sleep covers set, touch and gat expiry. TTL 2 (not 1) so that the
    # "still there" checks hold on a loaded machine.
    conn.set(key + "s", "x", exptime=2)
    assert conn.get(key + "s") == b"x"
    conn.set(key + "t", "x")
    assert conn.rt(b"touch %s 2\r\n" % b(key + "t")) == b"TOUCHED\r\n"
    assert conn.get(key + "t") == b"x"
    conn.set(key + "g", "x")
    assert conn.rt(b"gat 2 %s\r\n" % b(key + "g")).startswith(b"VALUE ")
    assert conn.get(key + "g") == b"x"
    conn.set(key + "keep", "x", exptime=100)
    time.sleep(3.2)
    assert conn.get(key + "s") is None
    assert conn.get(key + "t") is None
    assert conn.get(key + "g") is None
    assert conn.get(key + "keep") == b"x"


# ---- misc commands ------------------------------------------------------

def test_version(conn):
    reply = conn.rt(b"version\r\n")
    assert reply.startswith(b"VERSION ") and reply.endswith(b"\r\n")
    assert len(reply.split()) == 2 and len(reply) > len(b"VERSION \r\n")


def test_verbosity(conn):
    assert conn.rt(b"verbosity 1\r\n") == b"OK\r\n"
    assert conn.rt(b"verbosity 0\r\n") == b"OK\r\n"
    assert conn.rt(b"verbosity 1 noreply\r\n") == b""
    assert conn.rt(b"verbosity 0 noreply\r\n") == b""
    assert conn.rt(b"verbosity\r\n") == b"CLIENT_ERROR bad command line format\r\n"
    # Words past the level are ignored; noreply is the last word.
    assert conn.rt(b"verbosity 0 x\r\n") == b"OK\r\n"
    assert conn.rt(b"verbosity 0 x noreply\r\n") == b""


def test_quit_closes_without_reply(server, connect, key):
    c = connect()
    c.set(key, "x")
    c.send(b"quit\r\n")
    assert c.expect_closed() == b""
    # Commands after quit in the same write are not executed.
    c2 = connect()
    c2.send(b"quit\r\nset %s 0 0 1\r\ny\r\n" % b(key))
    assert c2.expect_closed() == b""
    assert connect().get(key) == b"x"


def test_connection_close_mid_value_is_harmless(connect, key):
    c = connect()
    c.send(b"set %s 0 0 100\r\npartial" % b(key))
    c.close()
    c2 = connect()
    assert c2.get(key) is None
    c2.set(key, "ok")
    assert c2.get(key) == b"ok"


def test_cache_memlimit(make_server):
    from harness.client import Conn
    srv = make_server("-m", "64")
    c = Conn.to(srv)
    assert c.stat("maxbytes", "settings") == str(64 * 1024 * 1024)
    assert c.rt(b"cache_memlimit 100\r\n") == b"OK\r\n"
    assert c.stat("maxbytes", "settings") == str(100 * 1024 * 1024)
    assert c.stat("limit_maxbytes") == str(100 * 1024 * 1024)
    assert c.rt(b"cache_memlimit 100 noreply\r\n") == b""
    assert c.rt(b"cache_memlimit\r\n") == b"ERROR\r\n"
    c.close()


# ---- flush_all ----------------------------------------------------------

def test_flush_all(make_server):
    from harness.client import Conn
    srv = make_server()
    c = Conn.to(srv)
    for i in range(20):
        c.set("k%d" % i, "v")
    assert c.rt(b"flush_all\r\n") == b"OK\r\n"
    assert all(c.get("k%d" % i) is None for i in range(20))
    c.set("a", "1")
    assert c.rt(b"flush_all noreply\r\n") == b""
    assert c.get("a") is None
    c.set("a", "1")
    assert c.rt(b"flush_all 0\r\n") == b"OK\r\n"
    assert c.get("a") is None
    assert c.rt(b"flush_all abc\r\n") == b"CLIENT_ERROR invalid exptime argument\r\n"
    # Items stored after a flush are kept.
    c.set("b", "2")
    assert c.get("b") == b"2"
    # (memcached also counts the rejected "flush_all abc")
    assert int(c.stat("cmd_flush")) >= 3
    c.close()


def test_flush_all_with_delay(make_server):
    from harness.client import Conn
    srv = make_server()
    c = Conn.to(srv)
    c.set("d", "x")
    assert c.rt(b"flush_all 3\r\n") == b"OK\r\n"
    assert c.get("d") == b"x"
    time.sleep(4.2)
    assert c.get("d") is None
    c.close()
