"""memcached -Y users are ACL users: after memcached's ASCII authentication
the user's ACL categories and key patterns apply to memcached commands, and
ACL LIST shows them. Trove only (no peer has per-user permissions on the
memcached protocol)."""

import pytest
import redis

from conftest import RawConn, resp_target
from harness.client import Conn

pytestmark = pytest.mark.skipif(resp_target() != "trove", reason="Trove's memcached port")


def auth(c, user, pw):
    token = ("%s %s" % (user, pw)).encode()
    return c.call(b"set a 0 0 %d\r\n%s\r\n" % (len(token), token))


@pytest.fixture
def srv(make_server, tmp_path):
    (tmp_path / "auth").write_text("full:fullpw\nreader:readpw\nlimited:limpw\nslow:slowpw\n")
    (tmp_path / "users.acl").write_text(
        "user reader on >readpw -@all +@read ~*\n"
        "user limited on >limpw +@all -@dangerous ~app:*\n"
        "user slow on >slowpw +@all ~* &* ratelimit:cps=3\n")
    return make_server("-Y", str(tmp_path / "auth"), "--resp-port", "0",
                       "--aclfile", str(tmp_path / "users.acl"))


def test_authfile_users_are_acl_users(srv):
    rd = redis.Redis(port=srv.resp_port, decode_responses=True)
    users = rd.execute_command("ACL", "USERS")
    assert sorted(users) == ["default", "full", "limited", "reader", "slow"]
    line = [l for l in rd.execute_command("ACL", "LIST") if l.startswith("user full ")][0]
    assert line.startswith("user full on sanitize-payload #") and line.endswith("~* &* +@all")
    # The same password works on the RESP port.
    c = redis.Redis(port=srv.resp_port, decode_responses=True)
    assert c.execute_command("AUTH", "full", "fullpw")


def test_full_user_runs_everything(srv):
    c = Conn.to(srv)
    assert auth(c, "full", "fullpw") == b"STORED\r\n"
    assert c.call(b"set k 0 0 1\r\nv\r\n") == b"STORED\r\n"
    assert c.rt(b"get k\r\n") == b"VALUE k 0 1\r\nv\r\nEND\r\n"
    assert c.call(b"flush_all\r\n") == b"OK\r\n"


def test_categories_apply_to_memcached_commands(srv):
    c = Conn.to(srv)
    assert auth(c, "reader", "readpw") == b"STORED\r\n"
    assert c.call(b"set k 0 0 1\r\nv\r\n") == \
        b"SERVER_ERROR NOPERM User reader has no permissions to run the 'memcache|set' command\r\n"
    # The value block was swallowed: the next command parses normally.
    assert c.rt(b"get k\r\n") == b"END\r\n"
    assert c.call(b"delete k\r\n").startswith(b"SERVER_ERROR NOPERM")
    assert c.call(b"incr n 1\r\n").startswith(b"SERVER_ERROR NOPERM")
    assert c.call(b"ms k 1\r\nv\r\n").startswith(b"SERVER_ERROR NOPERM")
    assert c.rt(b"mg k v\r\n") == b"EN\r\n"
    assert c.call(b"version\r\n").startswith(b"VERSION ")  # never checked
    assert c.call(b"verbosity 1\r\n") == (b"SERVER_ERROR NOPERM User reader has no permissions "
                                          b"to run the 'memcache|other' command\r\n")


def test_key_patterns_apply_to_memcached_commands(srv):
    c = Conn.to(srv)
    assert auth(c, "limited", "limpw") == b"STORED\r\n"
    assert c.call(b"set app:1 0 0 1\r\nv\r\n") == b"STORED\r\n"
    assert c.call(b"set other 0 0 1\r\nv\r\n") == \
        b"SERVER_ERROR NOPERM No permissions to access a key\r\n"
    # A multiget with one forbidden key is refused whole, before any value.
    assert c.rt(b"get app:1 other\r\n") == \
        b"SERVER_ERROR NOPERM No permissions to access a key\r\n"
    assert c.rt(b"get app:1\r\n") == b"VALUE app:1 0 1\r\nv\r\nEND\r\n"
    assert c.call(b"flush_all\r\n").startswith(b"SERVER_ERROR NOPERM")  # @dangerous
    # ACL changes apply to live memcached connections at their next command.
    rd = redis.Redis(port=srv.resp_port, decode_responses=True)
    rd.execute_command("ACL", "SETUSER", "limited", "~other")
    assert c.call(b"set other 0 0 1\r\nv\r\n") == b"STORED\r\n"
    rd.execute_command("ACL", "DELUSER", "limited")
    c.send(b"get app:1\r\n")
    c.expect_closed()


def test_rate_limits_apply_on_both_ports_with_one_bucket(srv):
    c = Conn.to(srv)
    assert auth(c, "slow", "slowpw") == b"STORED\r\n"
    assert c.rt(b"get a b c\r\n") == b"END\r\n"  # a multiget is one request
    assert c.call(b"set a 0 0 1\r\nv\r\n") == b"STORED\r\n"
    # The refused set's value is swallowed, and nothing is stored.
    assert c.call(b"set b 0 0 1\r\nv\r\n") == b"STORED\r\n"
    assert c.call(b"set c 0 0 1\r\nv\r\n") == \
        b"SERVER_ERROR rate limit exceeded: commands per second\r\n"
    assert c.call(b"version\r\n").startswith(b"VERSION ")  # never charged
    r = RawConn(srv.resp_port)
    assert r.cmd("AUTH", "slow", "slowpw") == b"+OK\r\n"
    assert r.cmd("GET", "c") == b"-ERR rate limit exceeded: commands per second\r\n"
    # Both ports' refusals are counted per user, in INFO and in stats.
    full = Conn.to(srv)
    assert auth(full, "full", "fullpw") == b"STORED\r\n"
    stats = full.stats()
    assert stats["ratelimit_rejected_slow_cps"] == "2"
    assert stats["ratelimit_rejected_slow_bps"] == "0"
    info = redis.Redis(port=srv.resp_port, decode_responses=True).info("stats")
    assert info["ratelimit_rejected_slow"] == {"cps": 2, "bps": 0}
