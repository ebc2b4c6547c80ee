"""Redis's `timeout` (CONFIG SET at run time) on the RESP port: an idle
client is closed without a reply; blocked, subscribed and MONITOR clients
are spared (Redis's clientsCronHandleTimeout). Trove at -t 4; also runs
against redis-server (TROVE_TEST_TARGET=redis)."""

import os
import time

import pytest

from blocked_clients import SLOW, command, wait_blocked

SERVER_ARGS = ["-t", "4"]
pytestmark = pytest.mark.skipif(bool(os.environ.get("TROVE_RESP_FAKE")),
                                reason="the fake RESP front has no workers")


def test_timeout_closes_idle_clients_only(r, raw):
    idle, active, blocked, sub, mon = raw(), raw(), raw(), raw(), raw()
    assert idle.cmd("PING") == b"+PONG\r\n"
    blocked.send(command("BLPOP", "tq", "0"))
    wait_blocked(r, 1)
    assert sub.cmd("SUBSCRIBE", "tch").startswith(b"*3")
    assert mon.cmd("MONITOR") == b"+OK\r\n"
    assert r.config_get("timeout") == {"timeout": "0"}
    r.config_set("timeout", 1)
    try:
        assert r.config_get("timeout") == {"timeout": "1"}
        deadline = time.monotonic() + 4 * SLOW
        while time.monotonic() < deadline:
            assert active.cmd("PING") == b"+PONG\r\n"  # keeps talking: stays
            time.sleep(0.2)
        assert idle.closed(timeout=1)
        assert active.cmd("PING") == b"+PONG\r\n"
        r.rpush("tq", "v")
        assert blocked.read_reply() == b"*2\r\n$2\r\ntq\r\n$1\r\nv\r\n"
        assert r.publish("tch", "m") == 1
        assert sub.read_reply() == b"*3\r\n$7\r\nmessage\r\n$3\r\ntch\r\n$1\r\nm\r\n"
    finally:
        r.config_set("timeout", 0)


def test_timeout_range(r):
    import redis
    for bad in ("-1", "2147483648", "abc"):
        with pytest.raises(redis.ResponseError):
            r.config_set("timeout", bad)
    assert r.config_get("timeout") == {"timeout": "0"}
