"""The same commands through a real client library (Debian's
python3-pymemcache), as an application would use them."""

import pytest
from pymemcache.client.base import Client
from pymemcache.exceptions import MemcacheClientError, MemcacheIllegalInputError


def test_set_get(mc, key):
    assert mc.set(key, b"value") is True
    assert mc.get(key) == b"value"
    assert mc.get(key + "_missing") is None
    assert mc.get(key + "_missing", default=b"d") == b"d"


def test_set_many_get_many(mc, key):
    data = {"%s_%d" % (key, i): b"v%d" % i for i in range(50)}
    assert mc.set_many(data) == []
    got = mc.get_many(list(data) + [key + "_none"])
    assert got == data


def test_flags_roundtrip(mc, conn, key):
    mc.set(key, b"x", flags=1234, noreply=False)
    assert conn.rt(b"get %s\r\n" % key.encode()) == b"VALUE %s 1234 1\r\nx\r\nEND\r\n" % key.encode()


def test_add_replace_append_prepend(mc, key):
    assert mc.add(key, b"a", noreply=False) is True
    assert mc.add(key, b"b", noreply=False) is False
    assert mc.replace(key, b"c", noreply=False) is True
    assert mc.replace(key + "_no", b"c", noreply=False) is False
    assert mc.append(key, b"d", noreply=False) is True
    assert mc.prepend(key, b"e", noreply=False) is True
    assert mc.get(key) == b"ecd"
    assert mc.append(key + "_no", b"d", noreply=False) is False


def test_gets_cas(mc, key):
    mc.set(key, b"1")
    value, cas = mc.gets(key)
    assert value == b"1" and cas is not None
    assert mc.cas(key, b"2", cas, noreply=False) is True
    assert mc.cas(key, b"3", cas, noreply=False) is False
    assert mc.get(key) == b"2"
    assert mc.cas(key + "_no", b"3", cas, noreply=False) is None
    many = mc.gets_many([key, key + "_no"])
    assert list(many) == [key] and many[key][0] == b"2"


def test_incr_decr(mc, key):
    assert mc.incr(key, 1, noreply=False) is None
    mc.set(key, b"10")
    assert mc.incr(key, 5, noreply=False) == 15
    assert mc.decr(key, 20, noreply=False) == 0
    mc.set(key, b"abc")
    with pytest.raises(MemcacheClientError):
        mc.incr(key, 1, noreply=False)


def test_delete_touch(mc, key):
    mc.set(key, b"x")
    assert mc.touch(key, 100, noreply=False) is True
    assert mc.delete(key, noreply=False) is True
    assert mc.delete(key, noreply=False) is False
    assert mc.touch(key, 100, noreply=False) is False
    mc.set_many({key + "1": b"1", key + "2": b"2"})
    assert mc.delete_many([key + "1", key + "2"]) is True
    assert mc.get_many([key + "1", key + "2"]) == {}


def test_noreply_default(mc, key):
    # pymemcache sends noreply by default for storage commands.
    assert mc.set(key, b"quiet") is True
    assert mc.delete(key) is True
    assert mc.get(key) is None


def test_stats_and_version(mc, key):
    before = mc.stats()
    mc.get(key + "_nope")
    after = mc.stats()
    assert after[b"cmd_get"] == before[b"cmd_get"] + 1
    assert after[b"get_misses"] == before[b"get_misses"] + 1
    settings = mc.stats("settings")
    assert settings[b"item_size_max"] == 1024 * 1024
    v = mc.version()
    assert v and v[0:1].isdigit()


def test_large_value(mc, key):
    value = bytes(range(256)) * 4000
    assert mc.set(key, value, noreply=False) is True
    assert mc.get(key) == value


def test_too_large_value_is_reported(mc, key):
    from pymemcache.exceptions import MemcacheServerError
    with pytest.raises(MemcacheServerError):
        mc.set(key, b"x" * (2 * 1024 * 1024), noreply=False)
    assert mc.get(key + "_ok") is None


def test_illegal_key_rejected_by_client(mc):
    with pytest.raises(MemcacheIllegalInputError):
        mc.set("bad key", b"x")


def test_flush_all(make_server):
    srv = make_server()
    c = Client(("127.0.0.1", srv.port), timeout=5)
    c.set("a", b"1")
    assert c.flush_all(noreply=False) is True
    assert c.get("a") is None
    c.close()


def test_quit(server):
    c = Client(("127.0.0.1", server.port), timeout=5)
    # Wait for STORED: with pymemcache's default noreply the set could still be
    # unprocessed on its worker when the new connection's get runs elsewhere.
    assert c.set("q", b"1", noreply=False) is True
    c.quit()
    # The client reconnects on next use.
    assert c.get("q") == b"1"
    c.close()
