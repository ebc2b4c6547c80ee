"""-M (no eviction): writes that find no memory answer Redis's -OOM error,
collections included, and the server keeps serving. Trove only."""

import pytest
import redis

OOM = "OOM command not allowed when used memory > 'maxmemory'."


def test_writes_get_oom_without_eviction(trove, make_server):
    srv = make_server("-m", "2", "-M")
    c = redis.Redis(port=srv.resp_port, socket_timeout=20)
    value = "x" * 50000
    got = None
    for i in range(400):
        try:
            c.set("k%d" % i, value)
        except redis.ResponseError as e:
            got = str(e)
            break
    assert got == OOM
    with pytest.raises(redis.ResponseError) as e:
        for i in range(2000):
            c.rpush("list%d" % i, value[:5000])
    assert str(e.value) == OOM
    assert c.ping()
    assert c.get("k0") == value.encode()
    c.close()
