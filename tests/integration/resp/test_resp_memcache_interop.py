"""Database 0 is the memcached keyspace: strings written through one protocol
are read through the other, and WATCH sees memcached writes. Trove only."""

import pytest


def test_resp_set_is_memcached_get(trove, rd):
    from pymemcache.client.base import Client
    mc = Client(("127.0.0.1", trove.port), timeout=5, default_noreply=False)
    rd.set("shared:a", "from-resp")
    assert mc.get("shared:a") == b"from-resp"
    assert mc.gets("shared:a")[0] == b"from-resp"
    mc.set("shared:b", b"from-mc")
    assert rd.get("shared:b") == "from-mc"
    assert rd.type("shared:b") == "string"
    mc.set("shared:n", b"41")
    assert rd.incr("shared:n") == 42
    assert mc.get("shared:n") == b"42"
    mc.delete("shared:a")
    assert rd.exists("shared:a") == 0
    mc.close()


def test_millisecond_expiry_seen_from_memcached(trove, rd):
    """A PX expiry's milliseconds are not memcached flags; a key with
    memcached flags keeps them under PEXPIRE (its expiry rounds up to the
    next second, documented in docs/resp.md)."""
    import socket
    import time
    s = socket.create_connection(("127.0.0.1", trove.port), timeout=5)

    def ask(line):
        s.sendall(line.encode() + b"\r\n")
        data = b""
        while not (data.endswith(b"END\r\n") or data.endswith(b"STORED\r\n")):
            data += s.recv(4096)
        return data

    rd.set("ms:a", "v", px=5123)
    assert ask("get ms:a") == b"VALUE ms:a 0 1\r\nv\r\nEND\r\n"
    assert ask("set ms:f 9 0 1\r\nx") == b"STORED\r\n"
    assert rd.pexpire("ms:f", 1500)
    assert ask("get ms:f") == b"VALUE ms:f 9 1\r\nx\r\nEND\r\n"
    assert rd.pexpiretime("ms:f") % 1000 == 0
    rd.set("ms:b", "v", px=300)
    time.sleep(0.45)
    assert ask("get ms:b") == b"END\r\n"
    s.close()


def test_other_databases_are_invisible_to_memcached(trove, resp_port):
    import redis
    from pymemcache.client.base import Client
    one = redis.Redis(port=resp_port, db=1)
    one.set("only-db1", "x")
    mc = Client(("127.0.0.1", trove.port), timeout=5, default_noreply=False)
    assert mc.get("only-db1") is None
    mc.close()
    one.close()


def test_watch_sees_memcached_write(trove, raw):
    from pymemcache.client.base import Client
    mc = Client(("127.0.0.1", trove.port), timeout=5, default_noreply=False)
    c = raw()
    c.cmd("SET", "wk", "1")
    c.cmd("WATCH", "wk")
    mc.set("wk", b"2")
    c.cmd("MULTI")
    c.cmd("SET", "wk", "3")
    assert c.cmd("EXEC") == b"*-1\r\n"
    mc.close()


def _mc_roundtrip(port, request):
    import socket
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(request + b"mn\r\n")
    buf = b""
    while not buf.endswith(b"MN\r\n"):
        chunk = s.recv(65536)
        assert chunk, "connection closed"
        buf += chunk
    s.close()
    return buf[:-4]


@pytest.mark.parametrize("size", [3, 2000])  # compact encoding and heap value
def test_memcached_reads_of_a_collection_get_client_error(trove, rd, size):
    key = "coll:list:%d" % size
    rd.rpush(key, *[str(i) for i in range(size)])
    err = b"CLIENT_ERROR wrong type: key holds a RESP collection\r\n"
    k = key.encode()
    assert _mc_roundtrip(trove.port, b"get " + k + b"\r\n") == err
    assert _mc_roundtrip(trove.port, b"gets " + k + b"\r\n") == err
    assert _mc_roundtrip(trove.port, b"gat 0 " + k + b"\r\n") == err
    assert _mc_roundtrip(trove.port, b"mg " + k + b" v\r\n") == err
    assert _mc_roundtrip(trove.port, b"incr " + k + b" 1\r\n") == (
        b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n")
    assert _mc_roundtrip(trove.port, b"append " + k + b" 0 0 1\r\nx\r\n") == b"NOT_STORED\r\n"
    # The collection is intact after all of that.
    assert rd.llen(key) == size
    assert rd.lindex(key, -1) == str(size - 1)
    # delete works on any type, as Redis DEL does.
    assert _mc_roundtrip(trove.port, b"delete " + k + b"\r\n") == b"DELETED\r\n"
    assert rd.exists(key) == 0


def test_memcached_set_replaces_a_collection(trove, rd):
    rd.sadd("coll:set", "a", "b")
    assert _mc_roundtrip(trove.port, b"set coll:set 0 0 2\r\nhi\r\n") == b"STORED\r\n"
    assert rd.type("coll:set") == "string"
    assert rd.get("coll:set") == "hi"


def test_maxmemory_and_policy_are_memcached_limit_and_evictions(trove, rd):
    """CONFIG SET maxmemory / maxmemory-policy change the limit and the
    eviction switch memcached's port reports (stats settings)."""
    from pymemcache.client.base import Client
    mc = Client(("127.0.0.1", trove.port), timeout=5)
    limit = rd.config_get("maxmemory")["maxmemory"]
    policy = rd.config_get("maxmemory-policy")["maxmemory-policy"]
    try:
        rd.config_set("maxmemory-policy", "noeviction")
        rd.config_set("maxmemory", str(200 << 20))
        settings = mc.stats("settings")
        assert settings[b"evictions"] == b"off"
        assert int(settings[b"maxbytes"]) == 200 << 20
        rd.config_set("maxmemory-policy", "allkeys-lru")
        assert mc.stats("settings")[b"evictions"] == b"on"
    finally:
        rd.config_set("maxmemory", limit)
        rd.config_set("maxmemory-policy", policy)
        mc.close()
