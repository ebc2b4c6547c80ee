"""Per-user rate limits (docs/resp_modes.md section 11): ratelimit:cps / ratelimit:bps in
ACL SETUSER, one pair of token buckets per user shared by all its
connections on every worker, one second of burst, refused commands consume
nothing, MULTI/EXEC charged as one batch, AUTH HELLO PING QUIT RESET and the
admin port never limited. Trove only (Redis has no rate limits)."""

import threading
import time

import pytest
import redis

from conftest import RawConn, resp_target

pytestmark = pytest.mark.skipif(resp_target() != "trove", reason="Trove's rate limits")

CPS_ERR = b"-ERR rate limit exceeded: commands per second\r\n"
BPS_ERR = b"-ERR rate limit exceeded: bytes per second\r\n"


@pytest.fixture
def limited(rd, raw):
    def make(*rules, name="rl"):
        rd.execute_command("ACL", "SETUSER", name, "reset", "on", ">pw", "+@all", "~*", "&*",
                           *rules)

        def conn():
            c = raw()
            assert c.cmd("AUTH", name, "pw") == b"+OK\r\n"
            return c
        return conn
    yield make
    for u in rd.execute_command("ACL", "USERS"):
        if u != "default":
            rd.execute_command("ACL", "DELUSER", u)


def test_burst_of_one_second_then_refusal(limited):
    conn = limited("ratelimit:cps=10")
    c = conn()
    replies = [c.cmd("SET", "k%d" % i, "v") for i in range(11)]
    assert replies[:10] == [b"+OK\r\n"] * 10
    assert replies[10] == CPS_ERR


def test_connections_of_one_user_share_the_bucket(limited, rd):
    conn = limited("ratelimit:cps=10")
    a, b = conn(), conn()
    ok = [a.cmd("INCR", "n") for _ in range(6)] + [b.cmd("INCR", "n") for _ in range(4)]
    assert all(r.startswith(b":") for r in ok)
    assert b.cmd("INCR", "n") == CPS_ERR
    assert a.cmd("INCR", "n") == CPS_ERR
    # A refused command consumed nothing and did nothing.
    assert rd.get("n") == "10"


def test_refill_in_proportion_and_capped(limited):
    conn = limited("ratelimit:cps=10")
    c = conn()
    for i in range(10):
        assert c.cmd("GET", "k") == b"$-1\r\n"
    assert c.cmd("GET", "k") == CPS_ERR
    time.sleep(0.5)
    got = 0
    while c.cmd("GET", "k") == b"$-1\r\n":
        got += 1
    assert 4 <= got <= 6
    time.sleep(1.6)  # far more than a second idle: still one second's worth
    got = 0
    while c.cmd("GET", "k") == b"$-1\r\n":
        got += 1
    assert 10 <= got <= 11


def test_bytes_per_second(limited):
    conn = limited("ratelimit:bps=100")
    c = conn()
    assert c.cmd("SET", "k", "x" * 60) == b"+OK\r\n"  # 3 + 1 + 60 = 64 bytes
    assert c.cmd("SET", "k", "x" * 60) == BPS_ERR
    assert c.cmd("GET", "k") == b"$60\r\n" + b"x" * 60 + b"\r\n"  # 4 bytes still fit


def test_exec_is_admitted_or_refused_whole(limited, rd):
    conn = limited("ratelimit:cps=5")
    c = conn()
    assert c.cmd("MULTI") == b"+OK\r\n"
    for i in range(6):
        assert c.cmd("SET", "t%d" % i, "v") == b"+QUEUED\r\n"
    assert c.cmd("EXEC") == CPS_ERR
    assert rd.exists(*["t%d" % i for i in range(6)]) == 0
    assert c.cmd("EXEC") == b"-ERR EXEC without MULTI\r\n"
    c2 = limited("ratelimit:cps=5", name="rl2")()
    assert c2.cmd("MULTI") == b"+OK\r\n"
    for i in range(5):
        assert c2.cmd("SET", "u%d" % i, "v") == b"+QUEUED\r\n"
    assert c2.cmd("EXEC") == b"*5\r\n" + b"+OK\r\n" * 5
    assert rd.exists(*["u%d" % i for i in range(5)]) == 5


def test_exempt_commands_pass_on_an_empty_bucket(limited):
    conn = limited("ratelimit:cps=2")
    c = conn()
    c.cmd("GET", "a")
    c.cmd("GET", "a")
    assert c.cmd("GET", "a") == CPS_ERR
    assert c.cmd("PING") == b"+PONG\r\n"
    assert c.cmd("AUTH", "rl", "pw") == b"+OK\r\n"
    assert c.cmd("HELLO", "2").startswith(b"*14\r\n")
    assert c.cmd("RESET") == b"+RESET\r\n"
    assert c.cmd("QUIT") == b"+OK\r\n"


def test_rules_shown_and_reset(limited, rd):
    limited("ratelimit:cps=100", "ratelimit:bps=5000")
    line = [l for l in rd.execute_command("ACL", "LIST") if l.startswith("user rl ")][0]
    assert "ratelimit:cps=100 ratelimit:bps=5000" in line
    u = rd.execute_command("ACL", "GETUSER", "rl")
    assert dict(zip(u[::2], u[1::2]))["ratelimit"] == "ratelimit:cps=100 ratelimit:bps=5000"
    assert "Syntax error" in str(pytest.raises(
        redis.ResponseError, rd.execute_command, "ACL", "SETUSER", "rl", "ratelimit:cps=x").value)
    rd.execute_command("ACL", "SETUSER", "rl", "resetratelimit")
    u = rd.execute_command("ACL", "GETUSER", "rl")
    assert "ratelimit" not in dict(zip(u[::2], u[1::2]))


def test_rejections_counted_per_user_in_info(limited, rd):
    c = limited("ratelimit:cps=1", name="counted")()
    c.cmd("GET", "a")
    assert c.cmd("GET", "a") == CPS_ERR
    assert c.cmd("GET", "a") == CPS_ERR
    info = rd.info("stats")
    assert info["ratelimit_rejected_counted"] == {"cps": 2, "bps": 0}


def test_the_admin_port_is_never_limited(make_server):
    srv = make_server("--resp-port", "0", "--admin-port", "0")
    r = redis.Redis(port=srv.resp_port, decode_responses=True)
    r.execute_command("ACL", "SETUSER", "ops", "on", ">pw", "+@all", "~*", "ratelimit:cps=1")
    admin = RawConn(srv.admin_port)
    assert admin.cmd("AUTH", "ops", "pw") == b"+OK\r\n"
    assert [admin.cmd("GET", "k") for _ in range(20)] == [b"$-1\r\n"] * 20
    normal = RawConn(srv.resp_port)
    assert normal.cmd("AUTH", "ops", "pw") == b"+OK\r\n"
    normal.cmd("GET", "k")
    assert normal.cmd("GET", "k") == CPS_ERR


def test_limit_holds_across_workers_at_a_high_rate(limited):
    """Four pipelining connections (on different workers) of one user with
    cps=2000: what is admitted stays within a few percent of one second's
    burst plus the rate times the elapsed time (leases included)."""
    conn = limited("ratelimit:cps=2000")
    conns = [conn() for _ in range(4)]
    ok = [0] * 4
    stop = time.monotonic() + 1.0
    start = time.monotonic()

    def run(i):
        c = conns[i]
        batch = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n" * 50
        while time.monotonic() < stop:
            c.send(batch)
            for _ in range(50):
                if c.read_reply() == b"$-1\r\n":
                    ok[i] += 1
    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    allowed = 2000 * (1 + elapsed)
    assert sum(ok) <= allowed * 1.03 + 4 * 2000 / 64
    assert sum(ok) >= allowed * 0.8
