"""Meta protocol: mg, ms, md, ma, mn, me and their flags, exact bytes.

Behaviour is memcached 1.6.45's. E explicit CAS and md x are Trove
requirements of issue 3 and marked trove_only.
"""

import base64
import re

import pytest


def b(s):
    return s.encode("latin1") if isinstance(s, str) else s


def flags_of(line, ttl=None):
    """'VA 2 c5 t30 X W' -> ('VA', {'2', 'c5', 't30', 'X', 'W'}) ignoring
    order, for the win/stale flags whose order is not part of the protocol.
    With ttl=N, a remaining TTL of N-1 (a second boundary passed between two
    requests) reads as tN."""
    parts = line.rstrip(b"\r\n").decode().split()
    if ttl is not None:
        parts = ["t%d" % ttl if p == "t%d" % (ttl - 1) else p for p in parts]
    return parts[0], set(parts[1:])


def cas_of(conn, k):
    line = conn.rt(b"mg %s c\r\n" % b(k))
    m = re.match(rb"HD c(\d+)\r\n$", line)
    assert m, line
    return int(m.group(1))


# ---- mn / me ------------------------------------------------------------

def test_mn(conn):
    conn.send(b"mn\r\n")
    assert conn.read_exact(4) == b"MN\r\n"
    conn.send(b"mn\r\nmn\r\n")
    assert conn.read_exact(8) == b"MN\r\nMN\r\n"
    assert conn.rt(b"") == b""


def test_me(conn, key):
    k = b(key)
    assert conn.rt(b"me %s\r\n" % k) == b"EN\r\n"
    conn.set(k, "hello")
    line = conn.rt(b"me %s\r\n" % k)
    assert line.startswith(b"ME %s " % k) and line.endswith(b"\r\n"), line
    fields = dict(f.split(b"=", 1) for f in line.split()[2:])
    for name in (b"exp", b"la", b"cas", b"fetch", b"cls", b"size"):
        assert name in fields, line
    assert fields[b"exp"] == b"-1"
    assert fields[b"fetch"] == b"no"
    assert int(fields[b"cas"]) == cas_of(conn, k)
    conn.get(k)
    assert b"fetch=yes" in conn.rt(b"me %s\r\n" % k)


# ---- mg -----------------------------------------------------------------

def test_mg_miss_and_hit_without_flags(conn, key):
    k = b(key)
    assert conn.rt(b"mg %s v\r\n" % k) == b"EN\r\n"
    assert conn.rt(b"mg %s\r\n" % k) == b"EN\r\n"
    assert conn.rt(b"ms %s 3\r\nabc\r\n" % k) == b"HD\r\n"
    assert conn.rt(b"mg %s\r\n" % k) == b"HD\r\n"
    assert conn.rt(b"mg %s v\r\n" % k) == b"VA 3\r\nabc\r\n"


def test_mg_return_flags_in_request_order(conn, key):
    k = b(key)
    assert conn.rt(b"ms %s 3 T0 F5\r\nabc\r\n" % k) == b"HD\r\n"
    cas = cas_of(conn, k)
    assert conn.rt(b"mg %s k v c f s t O123\r\n" % k) == \
        b"VA 3 k%s c%d f5 s3 t-1 O123\r\nabc\r\n" % (k, cas)
    assert conn.rt(b"mg %s O99 s k\r\n" % k) == b"HD O99 s3 k%s\r\n" % k


def test_mg_hit_and_last_access(conn, key):
    k = b(key)
    conn.set(k, "x")
    # (l may read 1 if a second boundary passes between the requests)
    assert conn.rt(b"mg %s h l\r\n" % k) in (b"HD h0 l0\r\n", b"HD h0 l1\r\n")
    assert conn.rt(b"mg %s h l\r\n" % k) in (b"HD h1 l0\r\n", b"HD h1 l1\r\n")


def test_mg_ttl(conn, key):
    k = b(key)
    conn.set(k, "x", exptime=100)
    line = conn.rt(b"mg %s t\r\n" % k)
    assert line in (b"HD t100\r\n", b"HD t99\r\n"), line
    assert conn.rt(b"mg %s T30 t\r\n" % k) == b"HD t30\r\n"
    assert conn.rt(b"mg %s t\r\n" % k) in (b"HD t30\r\n", b"HD t29\r\n")
    assert conn.rt(b"mg %s T0 t\r\n" % k) == b"HD t-1\r\n"


def test_mg_no_bump_flag_accepted(conn, key):
    k = b(key)
    conn.set(k, "x")
    assert conn.rt(b"mg %s u v h\r\n" % k) == b"VA 1 h0\r\nx\r\n"


def test_mg_quiet_mode_with_mn(conn, key):
    k = b(key)
    conn.set(k, "hit")
    # q hides EN (a miss); hits are still returned. mn marks the end.
    batch = (b"mg %s_a v q k\r\n" % k + b"mg %s v q k\r\n" % k + b"mg %s_b v q O5\r\n" % k
             + b"mg %s q\r\n" % k)
    assert conn.rt(batch) == b"VA 3 k%s\r\nhit\r\nHD\r\n" % k


def test_mg_opaque_and_key_echoed_on_miss(conn, key):
    k = b(key)
    assert conn.rt(b"mg %s_miss v O42 k\r\n" % k) == b"EN O42 k%s_miss\r\n" % k
    assert conn.rt(b"mg %s_miss s v\r\n" % k) == b"EN\r\n"


def test_mg_base64_key(conn, key):
    raw = b"bin\x00key\r\n " + b(key)
    enc = base64.b64encode(raw)
    assert conn.rt(b"ms %s 2 b\r\nhi\r\n" % enc) == b"HD\r\n"
    assert conn.rt(b"mg %s b v k\r\n" % enc) == b"VA 2 k%s b\r\nhi\r\n" % enc
    assert conn.rt(b"md %s b\r\n" % enc) == b"HD\r\n"
    assert conn.rt(b"mg %s b v\r\n" % enc) == b"EN\r\n"


def test_mg_base64_key_matches_text_key(conn, key):
    k = b(key)
    conn.set(k, "plain")
    enc = base64.b64encode(k)
    assert conn.rt(b"mg %s b v\r\n" % enc) == b"VA 5\r\nplain\r\n"


def test_mg_key_returned_in_the_form_it_was_stored(conn, key):
    # memcached remembers per item whether its key was given in base64: k
    # returns the key the way it was stored, whatever form the reader used.
    k = b(key)
    enc = base64.b64encode(k)
    conn.set(k, "t")
    assert conn.rt(b"mg %s b k v\r\n" % enc) == b"VA 1 k%s\r\nt\r\n" % k
    k2 = k + b"_2"
    enc2 = base64.b64encode(k2)
    assert conn.rt(b"ms %s 1 b\r\nq\r\n" % enc2) == b"HD\r\n"
    assert conn.rt(b"mg %s k\r\n" % k2) == b"HD k%s b\r\n" % enc2


def test_mg_bad_base64(conn):
    assert conn.rt(b"mg !!!! b v\r\n") == b"CLIENT_ERROR error decoding key\r\n"


def test_mg_vivify_on_miss(conn, key):
    k = b(key)
    first = conn.rt(b"mg %s N30 v c t\r\n" % k)
    code, fl = flags_of(first.split(b"\r\n")[0] + b"\r\n", ttl=30)
    assert code == "VA" and "W" in fl and "0" in fl and "t30" in fl, first
    assert first.endswith(b"\r\n\r\n")
    # Everyone after the winner sees Z (a win token was already handed out).
    second = conn.rt(b"mg %s N30 v t\r\n" % k)
    assert flags_of(second.split(b"\r\n")[0], ttl=30)[1] == {"0", "t30", "Z"}, second
    assert flags_of(conn.rt(b"mg %s v\r\n" % k).split(b"\r\n")[0])[1] == {"0", "Z"}
    # The winner fills it in; the placeholder state is gone.
    assert conn.rt(b"ms %s 3 T60\r\nnew\r\n" % k) == b"HD\r\n"
    assert conn.rt(b"mg %s v s N30\r\n" % k) == b"VA 3 s3\r\nnew\r\n"


def test_mg_vivify_quiet_still_reports_win(conn, key):
    k = b(key)
    assert flags_of(conn.rt(b"mg %s N30 q\r\n" % k)) == ("HD", {"W"})
    assert flags_of(conn.rt(b"mg %s q k\r\n" % k)) == ("HD", {"k" + key, "Z"})


def test_mg_recache(conn, key):
    k = b(key)
    conn.set(k, "x", exptime=10)
    # Remaining TTL 10 < 30: the first asker wins, later ones see Z.
    assert flags_of(conn.rt(b"mg %s R30 v t\r\n" % k).split(b"\r\n")[0], ttl=10) == ("VA", {"1", "t10", "W"})
    assert flags_of(conn.rt(b"mg %s R30 v t\r\n" % k).split(b"\r\n")[0], ttl=10) == ("VA", {"1", "t10", "Z"})
    assert flags_of(conn.rt(b"mg %s v\r\n" % k).split(b"\r\n")[0]) == ("VA", {"1", "Z"})
    # TTL above the threshold: no win.
    k2 = k + b"2"
    conn.set(k2, "x", exptime=100)
    assert conn.rt(b"mg %s R30 v\r\n" % k2) == b"VA 1\r\nx\r\n"


def test_mg_errors(conn, key):
    k = b(key)
    conn.set(k, "x")
    assert conn.rt(b"mg %s O1 O2\r\n" % k) == b"CLIENT_ERROR duplicate flag\r\n"
    assert conn.rt(b"mg %s v v\r\n" % k) == b"CLIENT_ERROR duplicate flag\r\n"
    assert conn.rt(b"mg %s zz\r\n" % k) == b"CLIENT_ERROR invalid flag\r\n"
    # Flags are checked before the lookup: a miss does not hide a bad flag.
    assert conn.rt(b"mg %s_missing v zz\r\n" % k) == b"CLIENT_ERROR invalid flag\r\n"
    assert conn.rt(b"mg %s v O%s\r\n" % (k, b"1" * 40)) == b"CLIENT_ERROR opaque token too long\r\n"
    assert conn.rt(b"mg %s v\r\n" % (b"k" * 251)) == b"CLIENT_ERROR bad command line format\r\n"
    # memcached 1.6.45: too few words, or a flag token that does not start
    # with a letter or digit, is a bad command line format.
    assert conn.rt(b"mg\r\n") == b"CLIENT_ERROR bad command line format\r\n"
    assert conn.rt(b"mg %s v !x\r\n" % k) == b"CLIENT_ERROR bad command line format\r\n"
    # The connection is still fine.
    assert conn.rt(b"mg %s v\r\n" % k) == b"VA 1\r\nx\r\n"


def test_mg_accepts_x_as_memcached_1_6_45(conn, key):
    # x is md's flag; 1.6.45's shared flag parser accepts it on mg too (no effect).
    k = b(key)
    conn.set(k, "x")
    assert conn.rt(b"mg %s v x\r\n" % k) == b"VA 1\r\nx\r\n"
    assert conn.rt(b"mg %s v y\r\n" % k) == b"CLIENT_ERROR invalid flag\r\n"


# ---- ms -----------------------------------------------------------------

def test_ms_basic_and_return_flags(conn, key):
    k = b(key)
    line = conn.rt(b"ms %s 1 F9 T0 k O55 c\r\nq\r\n" % k)
    cas = cas_of(conn, k)
    assert line == b"HD k%s O55 c%d\r\n" % (k, cas)
    assert conn.rt(b"get %s\r\n" % k) == b"VALUE %s 9 1\r\nq\r\nEND\r\n" % k


def test_ms_ttl(conn, key):
    k = b(key)
    assert conn.rt(b"ms %s 1 T100\r\nx\r\n" % k) == b"HD\r\n"
    assert conn.rt(b"mg %s t\r\n" % k) in (b"HD t100\r\n", b"HD t99\r\n")
    assert conn.rt(b"ms %s 1 T-1\r\nx\r\n" % k) == b"HD\r\n"
    assert conn.rt(b"mg %s v\r\n" % k) == b"EN\r\n"


def test_ms_modes(conn, key):
    k = b(key)
    assert conn.rt(b"ms %s 1 MR\r\n3\r\n" % k) == b"NS\r\n"
    assert conn.rt(b"ms %s 1 MA\r\n4\r\n" % k) == b"NS\r\n"
    assert conn.rt(b"ms %s 1 MP\r\n5\r\n" % k) == b"NS\r\n"
    assert conn.rt(b"ms %s 1 ME\r\n1\r\n" % k) == b"HD\r\n"
    assert conn.rt(b"ms %s 1 ME\r\n2\r\n" % k) == b"NS\r\n"
    assert conn.rt(b"ms %s 1 MR\r\n3\r\n" % k) == b"HD\r\n"
    assert conn.rt(b"ms %s 1 MA\r\n4\r\n" % k) == b"HD\r\n"
    assert conn.rt(b"ms %s 1 MP\r\n5\r\n" % k) == b"HD\r\n"
    assert conn.rt(b"mg %s v\r\n" % k) == b"VA 3\r\n534\r\n"
    assert conn.rt(b"ms %s 1 MS\r\n6\r\n" % k) == b"HD\r\n"
    assert conn.rt(b"mg %s v\r\n" % k) == b"VA 1\r\n6\r\n"


def test_ms_invalid_mode_swallows_value(conn, key):
    k = b(key)
    assert conn.rt(b"ms %s 1 MX\r\n1\r\n" % k) == b"CLIENT_ERROR invalid mode for ms M token\r\n"
    assert conn.rt(b"mg %s v\r\n" % k) == b"EN\r\n"


def test_ms_compare_cas(conn, key):
    k = b(key)
    assert conn.rt(b"ms %s 1 C5\r\nx\r\n" % k) == b"NF\r\n"
    conn.set(k, "a")
    cas = cas_of(conn, k)
    assert conn.rt(b"ms %s 1 C%d\r\nx\r\n" % (k, cas + 100)) == b"EX\r\n"
    assert conn.rt(b"ms %s 1 C%d c\r\nx\r\n" % (k, cas + 100)) == b"EX c0\r\n"
    line = conn.rt(b"ms %s 1 C%d c\r\ny\r\n" % (k, cas))
    m = re.match(rb"HD c(\d+)\r\n$", line)
    assert m and int(m.group(1)) != cas, line
    assert conn.rt(b"mg %s v\r\n" % k) == b"VA 1\r\ny\r\n"


def test_ms_quiet(conn, key):
    k = b(key)
    # q suppresses HD only; failures are still reported.
    assert conn.rt(b"ms %s 1 q\r\n1\r\n" % k) == b""
    assert conn.rt(b"ms %s 1 q ME\r\n2\r\n" % k) == b"NS\r\n"
    assert conn.rt(b"ms %s 1 q C1\r\n3\r\n" % k) == b"EX\r\n"
    assert conn.rt(b"mg %s v\r\n" % k) == b"VA 1\r\n1\r\n"


def test_ms_invalidate_with_old_cas_marks_stale(conn, key):
    k = b(key)
    conn.set(k, "1")
    cas = cas_of(conn, k)
    # I with a CAS older than the item's: stored, but marked stale.
    line = conn.rt(b"ms %s 1 I C%d c\r\n2\r\n" % (k, cas - 1))
    m = re.match(rb"HD c(\d+)\r\n$", line)
    assert m, line
    newcas = int(m.group(1))
    assert flags_of(conn.rt(b"mg %s v c\r\n" % k).split(b"\r\n")[0]) == \
        ("VA", {"1", "c%d" % newcas, "X", "W"})
    assert flags_of(conn.rt(b"mg %s v c\r\n" % k).split(b"\r\n")[0]) == \
        ("VA", {"1", "c%d" % newcas, "X", "Z"})
    # A CAS newer than the item's is simply a mismatch.
    assert conn.rt(b"ms %s 1 I C%d\r\n3\r\n" % (k, newcas + 1000)) == b"EX\r\n"
    # A plain store clears the stale state.
    assert conn.rt(b"ms %s 1\r\n4\r\n" % k) == b"HD\r\n"
    assert conn.rt(b"mg %s v\r\n" % k) == b"VA 1\r\n4\r\n"


def test_ms_base64_and_opaque(conn, key):
    enc = base64.b64encode(b(key) + b"\x01\x02")
    assert conn.rt(b"ms %s 2 b k O77\r\nhi\r\n" % enc) == b"HD k%s b O77\r\n" % enc


def test_ms_errors(conn, key):
    k = b(key)
    bad = b"CLIENT_ERROR bad command line format\r\n"
    assert conn.rt(b"ms\r\n") == bad
    assert conn.rt(b"ms %s\r\n" % k) == bad
    # A non-numeric length: the line is rejected and the data line is then
    # parsed as a command ("1\r\n" is too short to be one, "abcd" unknown).
    assert conn.rt(b"ms %s S1\r\n1\r\n" % k) == bad + bad
    assert conn.rt(b"ms %s S1\r\nabcd\r\n" % k) == bad + b"ERROR\r\n"
    assert conn.rt(b"ms %s 1 zz\r\n1\r\n" % k) == b"CLIENT_ERROR invalid flag\r\n"
    # 1 + 2 bytes are the block; the "\r\n" left is a line too short.
    assert conn.rt(b"ms %s 1\r\nabc\r\n" % k) == b"CLIENT_ERROR bad data chunk\r\n" + bad
    # A long key: the block is swallowed (issue 9).
    assert conn.rt(b"ms %s 1\r\n1\r\n" % (b"k" * 251)) == bad
    assert conn.rt(b"ms %s 2000000\r\n%s\r\n" % (k, b"x" * 2000000)) == \
        b"SERVER_ERROR object too large for cache\r\n"
    assert conn.rt(b"mg %s v\r\n" % k) == b"EN\r\n"


@pytest.mark.trove_only
def test_ms_explicit_cas(conn, key):
    k = b(key)
    assert conn.rt(b"ms %s 1 E777 c\r\nn\r\n" % k) == b"HD c777\r\n"
    assert cas_of(conn, k) == 777
    assert conn.rt(b"ms %s 1 C777 E900\r\nm\r\n" % k) == b"HD\r\n"
    assert cas_of(conn, k) == 900
    assert conn.rt(b"gets %s\r\n" % k) == b"VALUE %s 0 1 900\r\nm\r\nEND\r\n" % k


# ---- md -----------------------------------------------------------------

def test_md(conn, key):
    k = b(key)
    assert conn.rt(b"md %s\r\n" % k) == b"NF\r\n"
    conn.set(k, "x")
    assert conn.rt(b"md %s\r\n" % k) == b"HD\r\n"
    assert conn.rt(b"mg %s v\r\n" % k) == b"EN\r\n"
    conn.set(k, "x")
    assert conn.rt(b"md %s k O7\r\n" % k) == b"HD k%s O7\r\n" % k


def test_md_quiet(conn, key):
    k = b(key)
    conn.set(k, "x")
    assert conn.rt(b"md %s q\r\n" % k) == b""
    assert conn.rt(b"md %s q\r\n" % k) == b"NF\r\n"


def test_md_compare_cas(conn, key):
    k = b(key)
    conn.set(k, "x")
    cas = cas_of(conn, k)
    assert conn.rt(b"md %s C%d k O7\r\n" % (k, cas + 1)) == b"EX k%s O7\r\n" % k
    assert conn.rt(b"mg %s v\r\n" % k) == b"VA 1\r\nx\r\n"
    assert conn.rt(b"md %s C%d\r\n" % (k, cas)) == b"HD\r\n"
    assert conn.rt(b"mg %s v\r\n" % k) == b"EN\r\n"


def test_md_invalidate_then_win_then_refill(conn, key):
    k = b(key)
    conn.set(k, "xy", flags=3, exptime=100)
    assert conn.rt(b"md %s I T30\r\n" % k) == b"HD\r\n"
    assert flags_of(conn.rt(b"mg %s v t\r\n" % k).split(b"\r\n")[0], ttl=30) == ("VA", {"2", "t30", "X", "W"})
    assert flags_of(conn.rt(b"mg %s v t\r\n" % k).split(b"\r\n")[0], ttl=30) == ("VA", {"2", "t30", "X", "Z"})
    # Stale data is still served.
    assert conn.rt(b"mg %s v t\r\n" % k).endswith(b"\r\nxy\r\n")
    assert conn.rt(b"ms %s 2\r\nzz\r\n" % k) == b"HD\r\n"
    assert conn.rt(b"mg %s v\r\n" % k) == b"VA 2\r\nzz\r\n"


def test_md_compare_cas_zero_is_a_mismatch(conn, key):
    # C0 is a real comparison (no item has cas 0), not "no compare".
    k = b(key)
    conn.set(k, "x")
    assert conn.rt(b"md %s C0\r\n" % k) == b"EX\r\n"
    assert conn.rt(b"mg %s v\r\n" % k) == b"VA 1\r\nx\r\n"


def test_md_base64(conn, key):
    enc = base64.b64encode(b(key))
    conn.set(key, "x")
    assert conn.rt(b"md %s b\r\n" % enc) == b"HD\r\n"
    assert conn.get(key) is None


def test_md_errors(conn, key):
    assert conn.rt(b"md %s zz\r\n" % b(key)) == b"CLIENT_ERROR invalid flag\r\n"
    assert conn.rt(b"md %s O1 O1\r\n" % b(key)) == b"CLIENT_ERROR duplicate flag\r\n"
    assert conn.rt(b"md %s\r\n" % (b"k" * 251)) == b"CLIENT_ERROR bad command line format\r\n"


@pytest.mark.trove_only
def test_md_x_removes_value_keeps_item(conn, key):
    k = b(key)
    conn.set(k, "value")
    assert conn.rt(b"md %s x\r\n" % k) == b"HD\r\n"
    line = conn.rt(b"mg %s v s\r\n" % k)
    assert line.startswith(b"VA 0 ") and line.endswith(b"\r\n\r\n"), line


# ---- ma -----------------------------------------------------------------

def test_ma_incr_decr_modes(conn, key):
    k = b(key)
    assert conn.rt(b"ma %s\r\n" % k) == b"NF\r\n"
    conn.set(k, "10")
    assert conn.rt(b"ma %s\r\n" % k) == b"HD\r\n"
    assert conn.rt(b"ma %s v\r\n" % k) == b"VA 2\r\n12\r\n"
    assert conn.rt(b"ma %s D5 v\r\n" % k) == b"VA 2\r\n17\r\n"
    assert conn.rt(b"ma %s MD D3 v\r\n" % k) == b"VA 2\r\n14\r\n"
    assert conn.rt(b"ma %s M- D100 v\r\n" % k) == b"VA 1\r\n0\r\n"
    assert conn.rt(b"ma %s MI v\r\n" % k) == b"VA 1\r\n1\r\n"
    assert conn.rt(b"ma %s M+ v\r\n" % k) == b"VA 1\r\n2\r\n"
    assert conn.get(k).rstrip(b" ") == b"2"


def test_ma_wraps(conn, key):
    k = b(key)
    conn.set(k, "3")
    assert conn.rt(b"ma %s D18446744073709551615 v\r\n" % k) == b"VA 1\r\n2\r\n"


def test_ma_return_flags(conn, key):
    k = b(key)
    conn.set(k, "5", exptime=0)
    line = conn.rt(b"ma %s v t c k O9\r\n" % k)
    cas = cas_of(conn, k)
    assert line == b"VA 1 t-1 c%d k%s O9\r\n6\r\n" % (cas, k)


def test_ma_vivify_and_initial(conn, key):
    k = b(key)
    # On a miss with N the initial value J is stored; the delta is not applied.
    assert conn.rt(b"ma %s N0 J10\r\n" % k) == b"HD\r\n"
    assert conn.rt(b"ma %s v\r\n" % k) == b"VA 2\r\n11\r\n"
    k2 = k + b"2"
    line = conn.rt(b"ma %s N100 J7 v t\r\n" % k2)
    assert line in (b"VA 1 t100\r\n7\r\n", b"VA 1 t99\r\n7\r\n"), line
    k3 = k + b"3"
    assert conn.rt(b"ma %s N0 v\r\n" % k3) == b"VA 1\r\n0\r\n"


def test_ma_vivify_is_quiet_too(conn, key):
    # q hides HD, also for an item N created (memcached 1.6.45).
    k = b(key)
    assert conn.rt(b"ma %s N30 q\r\n" % k) == b""
    assert conn.rt(b"mg %s v\r\n" % k) == b"VA 1\r\n0\r\n"


def test_ma_ttl_update(conn, key):
    k = b(key)
    conn.set(k, "1")
    assert conn.rt(b"ma %s T50 t v\r\n" % k) == b"VA 1 t50\r\n2\r\n"


def test_ma_compare_cas(conn, key):
    k = b(key)
    conn.set(k, "1")
    cas = cas_of(conn, k)
    assert conn.rt(b"ma %s C%d v\r\n" % (k, cas + 1)) == b"EX\r\n"
    assert conn.rt(b"ma %s C%d v\r\n" % (k, cas)) == b"VA 1\r\n2\r\n"
    assert cas_of(conn, k) != cas


def test_ma_quiet(conn, key):
    k = b(key)
    conn.set(k, "1")
    assert conn.rt(b"ma %s q\r\n" % k) == b""
    assert conn.rt(b"ma %s q v\r\n" % k) == b""
    assert conn.get(k).rstrip(b" ") == b"3"
    assert conn.rt(b"ma %s_miss q\r\n" % k) == b"NF\r\n"


def test_ma_errors(conn, key):
    k = b(key)
    conn.set(k, "ab")
    assert conn.rt(b"ma %s\r\n" % k) == b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
    conn.set(k, "1")
    assert conn.rt(b"ma %s MX\r\n" % k) == b"CLIENT_ERROR invalid mode for ma M token\r\n"
    assert conn.rt(b"ma %s Dabc\r\n" % k) == b"CLIENT_ERROR invalid or duplicate flag\r\n"
    assert conn.rt(b"ma %s zz\r\n" % k) == b"CLIENT_ERROR invalid or duplicate flag\r\n"
    # memcached 1.6.45 calls an over-long ma key a flag error.
    assert conn.rt(b"ma %s\r\n" % (b"k" * 251)) == b"CLIENT_ERROR invalid or duplicate flag\r\n"
    assert conn.get(k) == b"1"


@pytest.mark.trove_only
def test_ma_explicit_cas(conn, key):
    k = b(key)
    conn.set(k, "1")
    assert conn.rt(b"ma %s E4242 c v\r\n" % k) == b"VA 1 c4242\r\n2\r\n"
    assert cas_of(conn, k) == 4242


# ---- mixing text and meta -----------------------------------------------

def test_meta_and_text_share_items(conn, key):
    k = b(key)
    assert conn.rt(b"ms %s 5 F12 T0\r\nhello\r\n" % k) == b"HD\r\n"
    _, cas = conn.gets(k)
    assert conn.rt(b"mg %s c f v\r\n" % k) == b"VA 5 c%d f12\r\nhello\r\n" % cas
    assert conn.rt(b"incr %s 1\r\n" % k) == b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
    assert conn.rt(b"cas %s 0 0 2 %d\r\nhi\r\n" % (k, cas)) == b"STORED\r\n"
    assert conn.rt(b"mg %s v f\r\n" % k) == b"VA 2 f0\r\nhi\r\n"


def test_meta_pipeline(conn, key):
    k = b(key)
    batch = b"".join(b"ms %s_%d 1 q\r\n%d\r\n" % (k, i, i % 10) for i in range(50))
    batch += b"".join(b"mg %s_%d v q k\r\n" % (k, i) for i in range(55))
    got = conn.rt(batch)
    want = b"".join(b"VA 1 k%s_%d\r\n%d\r\n" % (k, i, i % 10) for i in range(50))
    assert got == want


def test_ms_s_returns_the_final_size(conn, key):
    k = b(key)
    assert conn.rt(b"ms %s 2 s\r\nab\r\n" % k) == b"HD s2\r\n"
    # After an append the size is the whole item's (memcached 1.6.45).
    assert conn.rt(b"ms %s 3 MA s\r\ncde\r\n" % k) == b"HD s5\r\n"


def test_mg_vivify_takes_an_explicit_cas(conn, key):
    k = b(key)
    line = conn.rt(b"mg %s s c v N30 t E9876\r\n" % k)
    assert line.startswith(b"EN") is False and b" c9876" in line, line
    # E is ignored when nothing is created.
    line = conn.rt(b"mg %s c E5\r\n" % k)
    assert b" c9876" in line, line


def test_mg_matching_cas_masks_the_value(conn, key):
    # memcached 1.6.45: C<cas> equal to the item's CAS means the client has
    # the value already; the reply is HD with the flags.
    k = b(key)
    line = conn.rt(b"ms %s 2 c\r\nva\r\n" % k)
    cas = line.split()[1][1:]
    assert conn.rt(b"mg %s C%s v c\r\n" % (k, cas)) == b"HD c%s\r\n" % cas
    assert conn.rt(b"mg %s C999999 v\r\n" % k) == b"VA 2\r\nva\r\n"


def test_stale_set_keeps_ttl_stale_mark_and_token(conn, key):
    # memcached 1.6.45 (t/metaget.t): after md I, a reader wins the token; an
    # older writer's ms I then replaces the value but keeps the TTL, the stale
    # mark and the token already handed out.
    k = b(key)
    assert conn.rt(b"ms %s 3 T100\r\nmoo\r\n" % k) == b"HD\r\n"
    assert conn.rt(b"md %s I T30\r\n" % k) == b"HD\r\n"
    first = conn.rt(b"mg %s s t c v\r\n" % k).split(b"\r\n")[0]
    assert b"W" in first.split() and b"X" in first.split(), first
    assert conn.rt(b"ms %s 1 I T90 C1\r\nf\r\n" % k) == b"HD\r\n"
    again = conn.rt(b"mg %s s t c v\r\n" % k).split(b"\r\n")[0].split()
    assert b"X" in again and b"Z" in again and b"W" not in again, again
    ttl = int(next(f for f in again if f.startswith(b"t"))[1:])
    assert 0 < ttl <= 30


def test_md_x_with_I_empties_and_marks_stale(conn, key):
    k = b(key)
    assert conn.rt(b"ms %s 2 T50\r\nmz\r\n" % k) == b"HD\r\n"
    assert conn.rt(b"md %s x I\r\n" % k) == b"HD\r\n"
    reply = conn.rt(b"mg %s t v\r\n" % k)
    head, value = reply.split(b"\r\n")[0], reply.split(b"\r\n")[1]
    assert head.startswith(b"VA 0 ") and value == b"", reply
    assert b"X" in head.split() and b"W" in head.split(), head
