"""ACL users, rules, checks and the ACL command, ported from Redis's
tests/unit/acl.tcl and acl-v2.tcl (which run only against a server they
start themselves). Also runs against redis-server 7.0.15
(TROVE_TEST_TARGET=redis); where newer Redis (and Trove, which follows it)
answers differently, the test says so and checks Trove's form only on Trove.
"""

import hashlib
import os
import time

import pytest
import redis

from conftest import RawConn, resp_target

TROVE = resp_target() == "trove"


@pytest.fixture(autouse=True)
def clean_acl(rd):
    yield
    for u in rd.execute_command("ACL", "USERS"):
        if u != "default":
            rd.execute_command("ACL", "DELUSER", u)
    rd.execute_command("ACL", "SETUSER", "default", "reset", "on", "nopass", "~*", "&*", "+@all")
    rd.execute_command("ACL", "LOG", "RESET")
    rd.config_set("acl-pubsub-default", "resetchannels")


def client(resp_port, user=None, password=None, **kw):
    c = redis.Redis(host="127.0.0.1", port=resp_port, socket_timeout=10,
                    decode_responses=True, **kw)
    if user is not None:
        c.execute_command("AUTH", user, password)
    return c


def error_of(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    # redis-py strips the NOPERM code into the exception's type.
    if isinstance(e.value, redis.exceptions.NoPermissionError):
        return "NOPERM " + str(e.value)
    return str(e.value)


def noperm_cmd(user, cmd):
    # Redis 7.2+ names the user; 7.0 said "this user".
    if TROVE:
        return "User %s has no permissions to run the '%s' command" % (user, cmd)
    return "this user has no permissions to run the '%s' command" % cmd


def test_connections_start_with_the_default_user(rd):
    assert rd.execute_command("ACL", "WHOAMI") == "default"
    lines = rd.execute_command("ACL", "LIST")
    assert lines in (["user default on nopass ~* &* +@all"],
                     ["user default on nopass sanitize-payload ~* &* +@all"])
    if TROVE:
        assert lines == ["user default on nopass sanitize-payload ~* &* +@all"]


def test_new_users_start_disabled_without_anything(rd, resp_port):
    assert rd.execute_command("ACL", "SETUSER", "newuser") == "OK"
    u = rd.execute_command("ACL", "GETUSER", "newuser")
    d = dict(zip(u[::2], u[1::2]))
    assert "off" in d["flags"]
    assert d["passwords"] == [] and d["commands"] == "-@all" and d["keys"] == ""
    assert d["channels"] == ""
    assert "newuser" in rd.execute_command("ACL", "USERS")
    assert "WRONGPASS" in error_of(client, resp_port, "newuser", "x")
    rd.execute_command("ACL", "SETUSER", "newuser", "on", ">passwd1")
    c = client(resp_port, "newuser", "passwd1")
    assert error_of(c.get, "k") == "NOPERM " + noperm_cmd("newuser", "get")


def test_usernames_without_spaces_or_nul(rd):
    assert error_of(rd.execute_command, "ACL", "SETUSER", "a b") == \
        "Usernames can't contain spaces or null characters"
    assert error_of(rd.execute_command, "ACL", "SETUSER", "a\x00b") == \
        "Usernames can't contain spaces or null characters"


def test_passwords_hashes_and_removal(rd, resp_port):
    rd.execute_command("ACL", "SETUSER", "u", "on", ">p1", ">p2", "+acl")
    client(resp_port, "u", "p1")
    client(resp_port, "u", "p2")
    rd.execute_command("ACL", "SETUSER", "u", "<p1")
    assert "WRONGPASS" in error_of(client, resp_port, "u", "p1")
    h = hashlib.sha256(b"p3").hexdigest()
    rd.execute_command("ACL", "SETUSER", "u", "#" + h)
    client(resp_port, "u", "p3")
    u = rd.execute_command("ACL", "GETUSER", "u")
    d = dict(zip(u[::2], u[1::2]))
    assert sorted(d["passwords"]) == sorted([hashlib.sha256(b"p2").hexdigest(), h])
    assert "p2" not in " ".join(rd.execute_command("ACL", "LIST"))
    rd.execute_command("ACL", "SETUSER", "u", "!" + h)
    assert "WRONGPASS" in error_of(client, resp_port, "u", "p3")
    bad = error_of(rd.execute_command, "ACL", "SETUSER", "u", "#" + h[:-1])
    assert bad == ("Error in ACL SETUSER modifier '#%s': The password hash must be exactly 64 "
                   "characters and contain only lowercase hexadecimal characters" % h[:-1])
    assert "does not exist" in error_of(rd.execute_command, "ACL", "SETUSER", "u", "<nope")
    # nopass: any password works; resetpass: none does.
    rd.execute_command("ACL", "SETUSER", "u", "nopass")
    client(resp_port, "u", "anything")
    rd.execute_command("ACL", "SETUSER", "u", "resetpass")
    assert "WRONGPASS" in error_of(client, resp_port, "u", "anything")


def test_binary_password(rd, resp_port, raw):
    rd.execute_command("ACL", "SETUSER", "bin", "on", ">a\x00b", "+ping")
    c = raw()
    assert c.cmd("AUTH", "bin", "a\x00b") == b"+OK\r\n"
    assert c.cmd("AUTH", "bin", "a") .startswith(b"-WRONGPASS")


def test_command_rules_and_errors(rd, resp_port):
    rd.execute_command("ACL", "SETUSER", "u", "on", "nopass", "~*", "+@string", "-set",
                       "+client|id")
    c = client(resp_port, "u", "x")
    c.execute_command("GET", "k")
    assert error_of(c.set, "k", "v") == "NOPERM " + noperm_cmd("u", "set")
    assert c.execute_command("CLIENT", "ID") > 0
    assert error_of(c.execute_command, "CLIENT", "LIST") == \
        "NOPERM " + noperm_cmd("u", "client|list")
    assert error_of(c.hset, "h", "a", "b") == "NOPERM " + noperm_cmd("u", "hset")
    # Commands that need no authentication are always allowed.
    c.execute_command("AUTH", "u", "x")
    assert error_of(rd.execute_command, "ACL", "SETUSER", "u", "+nosuch") == \
        "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"
    assert error_of(rd.execute_command, "ACL", "SETUSER", "u", "bad") == \
        "Error in ACL SETUSER modifier 'bad': Syntax error"
    assert error_of(rd.execute_command, "ACL", "SETUSER", "u", "+@nosuch") == \
        "Error in ACL SETUSER modifier '+@nosuch': Unknown command or category name in ACL"
    # A rejected SETUSER changes nothing.
    with pytest.raises(redis.ResponseError):
        rd.execute_command("ACL", "SETUSER", "u", "+hset", "bad")
    assert "NOPERM" in error_of(c.hset, "h", "a", "b")


def test_allcommands_includes_subcommands_and_categories(rd, resp_port):
    rd.execute_command("ACL", "SETUSER", "u", "on", "nopass", "~*", "+@all", "-@dangerous")
    c = client(resp_port, "u", "x")
    c.set("k", "v")
    assert "NOPERM" in error_of(c.execute_command, "FLUSHALL")
    assert "NOPERM" in error_of(c.execute_command, "CONFIG", "GET", "maxmemory")
    assert "NOPERM" in error_of(c.execute_command, "KEYS", "*")
    rd.execute_command("ACL", "SETUSER", "u", "+config|get")
    c.execute_command("CONFIG", "GET", "maxmemory")
    assert "NOPERM" in error_of(c.execute_command, "CONFIG", "SET", "maxmemory", "0")


def test_getuser_command_rules_are_compacted(rd):
    """ACL GETUSER provides correct results (acl.tcl). Redis 7.0 compacts
    differently; this is 7.2+'s behaviour."""
    if not TROVE:
        pytest.skip("Redis 7.2+ rule compaction")

    def rules(*ops):
        rd.execute_command("ACL", "SETUSER", "adv", *ops)
        u = rd.execute_command("ACL", "GETUSER", "adv")
        return dict(zip(u[::2], u[1::2]))["commands"]

    assert rules("+@all", "-@hash", "-@slow", "+hget") == "+@all -@hash -@slow +hget"
    assert rules("-@hash") == "+@all -@slow +hget -@hash"
    assert rules("+@hash") == "+@all -@slow +hget +@hash"
    assert rules("-@all") == "-@all"
    assert rules("-@string", "-@slow", "+@all") == "+@all"
    assert rules("-@all", "+@HASH", "+@hash", "+@HaSh") == "-@all +@hash"
    assert rules("-@all", "+HGET", "+hget", "+hGeT") == "-@all +hget"
    assert rules("-@all", "+@hash", "+@slow", "+@set", "+@set", "+@slow", "+@hash") == \
        "-@all +@set +@slow +@hash"
    assert rules("-@all", "+hget", "-hset", "+hset", "-hget") == "-@all +hset -hget"
    assert rules("-@all", "+client|list", "+client|list", "+config|get", "+config", "+acl|list",
                 "-acl") == "-@all +client|list +config -acl"


def test_key_patterns_read_and_write(rd, resp_port):
    rd.execute_command("ACL", "SETUSER", "u", "on", "nopass", "+@all", "~obj:*", "%R~read*",
                       "%W~write*")
    c = client(resp_port, "u", "x")
    c.set("obj:1", "v")
    assert c.get("obj:1") == "v"
    key_err = "NOPERM No permissions to access a key" if TROVE else \
        "NOPERM this user has no permissions to access one of the keys used as arguments"
    assert error_of(c.get, "other") == key_err
    assert error_of(c.set, "read1", "v") == key_err
    rd.set("read1", "x")
    assert c.get("read1") == "x"
    c.set("write1", "v")
    assert error_of(c.get, "write1") == key_err
    # SET ... GET reads too; EXISTS needs either permission.
    assert error_of(c.execute_command, "SET", "write1", "v", "GET") == key_err
    assert c.exists("read1", "write1") == 2
    assert error_of(c.exists, "nothing") == key_err
    # Every key argument is checked.
    assert error_of(c.mget, "obj:1", "other") == key_err
    assert error_of(c.execute_command, "COPY", "read1", "read2") == key_err
    assert c.execute_command("COPY", "read1", "write2") == 1


def test_dryrun(rd):
    rd.execute_command("ACL", "SETUSER", "dr", "+@all", "%R~read*", "%W~write*", "%RW~rw*")
    run = lambda *a: rd.execute_command("ACL", "DRYRUN", "dr", *a)  # noqa: E731
    assert run("GET", "read") == "OK"
    assert run("SET", "write", "v") == "OK"
    who = "User dr" if TROVE else "This user"
    assert run("GET", "write") == "%s has no permissions to access the 'write' key" % who
    assert run("SET", "read", "v") == "%s has no permissions to access the 'read' key" % who
    assert run("HEXISTS", "read", "f") == "OK" and run("HEXISTS", "write", "f") == "OK"
    assert run("LLEN", "write") == "OK" and run("TYPE", "read") == "OK"
    assert run("ZCOUNT", "write", 0, 1).endswith("the 'write' key")
    assert run("LMOVE", "rw", "write", "LEFT", "RIGHT") == "OK"
    assert run("LMOVE", "read", "write", "LEFT", "RIGHT").endswith("the 'read' key")
    rd.execute_command("ACL", "SETUSER", "dr2", "-@all", "+get", "~*")
    assert rd.execute_command("ACL", "DRYRUN", "dr2", "SET", "k", "v") == \
        "%s has no permissions to run the 'set' command" % ("User dr2" if TROVE else "This user")
    assert error_of(rd.execute_command, "ACL", "DRYRUN", "nosuch", "GET", "k") == \
        "User 'nosuch' not found"
    assert error_of(rd.execute_command, "ACL", "DRYRUN", "dr", "NOSUCH", "k") == \
        "Command 'NOSUCH' not found"
    assert error_of(rd.execute_command, "ACL", "DRYRUN", "dr", "GET") == \
        "wrong number of arguments for 'get' command"


def test_channels(rd, resp_port):
    # New users have no channels (acl-pubsub-default resetchannels).
    rd.execute_command("ACL", "SETUSER", "ps", "on", "nopass", "+@all", "~*")
    c = client(resp_port, "ps", "x")
    ch_err = "NOPERM No permissions to access a channel" if TROVE else \
        "NOPERM this user has no permissions to access one of the channels used as arguments"
    assert error_of(c.publish, "foo", "x") == ch_err
    rd.execute_command("ACL", "SETUSER", "ps", "&foo", "&zap:*")
    assert c.publish("foo", "x") == 0
    assert c.publish("zap:1", "x") == 0
    assert error_of(c.publish, "bar", "x") == ch_err
    # A publish in MULTI is refused at queue time.
    rc = RawConn(resp_port)
    assert rc.cmd("AUTH", "ps", "x") == b"+OK\r\n"
    assert rc.cmd("MULTI") == b"+OK\r\n"
    assert rc.cmd("PUBLISH", "bar", "x") == b"-" + ch_err.encode() + b"\r\n"
    assert rc.cmd("SUBSCRIBE", "bar") == b"-" + ch_err.encode() + b"\r\n"
    assert rc.cmd("EXEC").startswith(b"-EXECABORT")
    # PSUBSCRIBE patterns match the rules literally.
    rd.execute_command("ACL", "SETUSER", "ps", "&pat*")
    s = c.pubsub()
    s.psubscribe("pat*")
    s.get_message(timeout=1)
    with pytest.raises(redis.ResponseError):
        s2 = client(resp_port, "ps", "x").pubsub()
        s2.psubscribe("pa*")
        s2.get_message(timeout=1)


def _wait_closed(pubsub, timeout=5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            pubsub.get_message(timeout=0.2)
        except (redis.ConnectionError, ConnectionError, OSError):
            return True
    return False


def test_subscribers_killed_when_permission_revoked(rd, resp_port):
    rd.execute_command("ACL", "SETUSER", "sub", "on", "nopass", "+@all", "resetchannels",
                       "&foo", "&keep")
    keep = client(resp_port, "sub", "x").pubsub()
    keep.subscribe("keep")
    assert keep.get_message(timeout=2)["type"] == "subscribe"
    gone = client(resp_port, "sub", "x").pubsub()
    gone.subscribe("foo")
    assert gone.get_message(timeout=2)["type"] == "subscribe"
    rd.execute_command("ACL", "SETUSER", "sub", "resetchannels", "&keep")
    assert _wait_closed(gone)
    # The one whose channel is still allowed is spared.
    assert rd.publish("keep", "hi") == 1
    m = keep.get_message(timeout=2)
    assert m["type"] == "message" and m["data"] == "hi"


def test_multi_checks_at_queue_time_and_at_exec(rd, resp_port, raw):
    rd.execute_command("ACL", "SETUSER", "tx", "on", ">p", "+@all", "-set", "~*")
    c = raw()
    assert c.cmd("AUTH", "tx", "p") == b"+OK\r\n"
    assert c.cmd("MULTI") == b"+OK\r\n"
    assert c.cmd("SET", "k", "v").startswith(b"-NOPERM")
    assert c.cmd("EXEC").startswith(b"-EXECABORT")
    # Rules that change between queueing and EXEC: the command is refused then.
    assert c.cmd("MULTI") == b"+OK\r\n"
    assert c.cmd("GET", "k") == b"+QUEUED\r\n"
    assert c.cmd("INCR", "n") == b"+QUEUED\r\n"
    rd.execute_command("ACL", "SETUSER", "tx", "-get")
    assert c.cmd("EXEC") == (b"*2\r\n-NOPERM ACLs rules changed between the moment the transaction "
                              b"was accumulated and the EXEC call. This command is no longer "
                              b"allowed for the following reason: no permission to execute the "
                              b"command or subcommand\r\n:1\r\n")


def test_deleting_users_disconnects_their_clients(rd, raw):
    assert error_of(rd.execute_command, "ACL", "DELUSER", "default") == \
        "The 'default' user cannot be removed"
    rd.execute_command("ACL", "SETUSER", "del", "on", "nopass", "+@all", "~*")
    victim = raw()
    assert victim.cmd("AUTH", "del", "x") == b"+OK\r\n"
    bystander = raw()
    assert rd.execute_command("ACL", "DELUSER", "del", "nosuch") == 1
    assert victim.closed()
    assert bystander.cmd("PING") == b"+PONG\r\n"
    # Deleting one's own user: the reply arrives, then the connection closes.
    rd.execute_command("ACL", "SETUSER", "me", "on", "nopass", "+@all", "~*")
    me = raw()
    assert me.cmd("AUTH", "me", "x") == b"+OK\r\n"
    assert me.cmd("ACL", "DELUSER", "me") == b":1\r\n"
    assert me.closed()


@pytest.mark.skipif(not TROVE, reason="Trove disconnects the clients of a disabled user")
def test_disabling_a_user_disconnects_its_clients(rd, raw):
    rd.execute_command("ACL", "SETUSER", "dis", "on", "nopass", "+@all", "~*")
    c = raw()
    assert c.cmd("AUTH", "dis", "x") == b"+OK\r\n"
    rd.execute_command("ACL", "SETUSER", "dis", "off")
    assert c.closed()


def test_default_user_off_means_unauthenticated(rd, resp_port, raw):
    rd.execute_command("ACL", "SETUSER", "admin", "on", ">a", "+@all", "~*", "&*")
    rd.execute_command("ACL", "SETUSER", "default", "off")
    c = raw()
    assert c.cmd("PING").startswith(b"-NOAUTH")
    assert c.cmd("AUTH", "admin", "a") == b"+OK\r\n"
    assert c.cmd("ACL", "SETUSER", "default", "on") == b"+OK\r\n"


def test_hello_auth_last_wins_and_failure_keeps_the_name(rd, resp_port, raw):
    if not TROVE:
        pytest.skip("Redis 7.2+: the last HELLO AUTH wins")
    rd.execute_command("ACL", "SETUSER", "h", "on", ">h", "-@all")
    c = raw()
    r = c.cmd("HELLO", "2", "AUTH", "nosuch", "x", "AUTH", "h", "h", "SETNAME", "n1")
    assert r.startswith(b"*14\r\n")
    assert c.cmd("CLIENT", "GETNAME").startswith(b"-NOPERM")
    c2 = raw()
    assert c2.cmd("HELLO", "2", "AUTH", "h", "bad", "SETNAME", "n2").startswith(b"-WRONGPASS")
    assert c2.cmd("CLIENT", "GETNAME") == b"$-1\r\n"


def test_acl_log(rd, resp_port):
    rd.execute_command("ACL", "LOG", "RESET")
    rd.execute_command("ACL", "SETUSER", "lg", "on", ">p", "+get", "~obj*")
    c = client(resp_port, "lg", "p")
    for _ in range(3):
        with pytest.raises(redis.ResponseError):
            c.set("obj", "v")
    with pytest.raises(redis.ResponseError):
        c.get("secret")
    with pytest.raises(redis.ResponseError):
        client(resp_port, "lg", "wrong")
    entries = rd.execute_command("ACL", "LOG")
    e = [dict(zip(x[::2], x[1::2])) for x in entries]
    assert [x["reason"] for x in e] == ["auth", "key", "command"]
    assert e[2]["count"] == 3 and e[2]["object"] == "set" and e[2]["username"] == "lg"
    assert e[2]["context"] == "toplevel"
    assert e[1]["object"] == "secret"
    assert e[0]["object"] == "AUTH" and e[0]["username"] == "lg"
    assert "addr=" in e[2]["client-info"] and float(e[2]["age-seconds"]) >= 0
    if TROVE:
        assert e[0]["entry-id"] == e[2]["entry-id"] + 2
    assert len(rd.execute_command("ACL", "LOG", 1)) == 1
    info = rd.info("stats")
    if TROVE:  # Redis 7.2+ fields
        assert info["acl_access_denied_auth"] >= 1 and info["acl_access_denied_cmd"] >= 3
        assert info["acl_access_denied_key"] >= 1
    # In MULTI the context is "multi".
    rd.execute_command("ACL", "SETUSER", "lg", "+multi", "+exec")
    p = c.pipeline(transaction=True)
    p.set("obj", "v")
    with pytest.raises(redis.ResponseError):
        p.execute()
    e = dict(zip(*[iter(rd.execute_command("ACL", "LOG", 1)[0])] * 2))
    assert e["context"] == "multi"
    assert rd.execute_command("ACL", "LOG", "RESET") == "OK"
    assert rd.execute_command("ACL", "LOG") == []
    rd.config_set("acllog-max-len", 1)
    for k in ("secret1", "secret2"):
        with pytest.raises(redis.ResponseError):
            c.get(k)
    assert len(rd.execute_command("ACL", "LOG")) == 1
    rd.config_set("acllog-max-len", 128)


def test_cat_genpass_help_and_errors(rd):
    cats = rd.execute_command("ACL", "CAT")
    assert len(cats) == 21 and cats[0] == "keyspace" and cats[-1] == "scripting"
    hashcmds = rd.execute_command("ACL", "CAT", "hash")
    assert "hset" in hashcmds and "get" not in hashcmds
    assert "client|kill" in rd.execute_command("ACL", "CAT", "dangerous")
    assert error_of(rd.execute_command, "ACL", "CAT", "nosuch") == "Unknown category 'nosuch'"
    assert len(rd.execute_command("ACL", "GENPASS")) == 64
    assert len(rd.execute_command("ACL", "GENPASS", 5)) == 2
    assert "GENPASS argument must be" in error_of(rd.execute_command, "ACL", "GENPASS", 0)
    assert rd.execute_command("ACL", "GENPASS") != rd.execute_command("ACL", "GENPASS")
    assert "unknown subcommand" in error_of(rd.execute_command, "ACL", "NOSUCH")
    assert any("DRYRUN" in l for l in rd.execute_command("ACL", "HELP"))
    assert "not configured to use an ACL file" in error_of(rd.execute_command, "ACL", "LOAD")


def test_selectors(rd, resp_port):
    rd.execute_command("ACL", "SETUSER", "sel", "on", "nopass", "-@all", "+get", "~a*",
                       "(+set ~b*)", "(+incr", "~c*)")
    c = client(resp_port, "sel", "x")
    rd.set("a1", "1")
    assert c.get("a1") == "1"
    assert c.set("b1", "1")
    assert c.execute_command("INCR", "c1") == 1
    assert "NOPERM" in error_of(c.set, "a1", "v")  # each selector on its own
    assert "NOPERM" in error_of(c.get, "b1")
    u = rd.execute_command("ACL", "GETUSER", "sel")
    d = dict(zip(u[::2], u[1::2]))
    sels = [dict(zip(s[::2], s[1::2])) for s in d["selectors"]]
    assert sels[0]["commands"] == "-@all +set" and sels[0]["keys"] == "~b*"
    assert sels[1]["commands"] == "-@all +incr" and sels[1]["keys"] == "~c*"
    line = [l for l in rd.execute_command("ACL", "LIST") if l.startswith("user sel ")][0]
    assert line.endswith("(~b* resetchannels -@all +set) (~c* resetchannels -@all +incr)")
    assert error_of(rd.execute_command, "ACL", "SETUSER", "sel", "(+get") == \
        "Unmatched parenthesis in acl selector starting at '(+get'."
    rd.execute_command("ACL", "SETUSER", "sel", "clearselectors")
    assert "NOPERM" in error_of(c.set, "b1", "v")


def test_requirepass_is_the_default_users_password(rd, resp_port, raw):
    rd.config_set("requirepass", "rp")
    try:
        u = rd.execute_command("ACL", "GETUSER", "default")
        d = dict(zip(u[::2], u[1::2]))
        assert d["passwords"] == [hashlib.sha256(b"rp").hexdigest()]
        assert "nopass" not in d["flags"]
        c = raw()
        assert c.cmd("GET", "k").startswith(b"-NOAUTH")
        assert c.cmd("AUTH", "default", "rp") == b"+OK\r\n"
    finally:
        rd.config_set("requirepass", "")


def test_acl_pubsub_default(rd, resp_port):
    rd.config_set("acl-pubsub-default", "allchannels")
    rd.execute_command("ACL", "SETUSER", "pub", "on", "nopass", "+@all")
    assert client(resp_port, "pub", "x").publish("any", "m") == 0
    u = rd.execute_command("ACL", "GETUSER", "pub")
    assert dict(zip(u[::2], u[1::2]))["channels"] == "&*"
    assert rd.config_get("acl-pubsub-default") == {"acl-pubsub-default": "allchannels"}


@pytest.mark.skipif(not TROVE, reason="needs a server started with --aclfile")
def test_acl_file_load_and_save(make_server, tmp_path):
    f = tmp_path / "users.acl"
    f.write_text("user alice on >alice ~* &* +@all\nuser bob on >bob -@all +@set +acl ~set*\n")
    srv = make_server("--resp-port", "0", "--aclfile", str(f))
    rd = redis.Redis(port=srv.resp_port, decode_responses=True, socket_timeout=10)
    assert sorted(rd.execute_command("ACL", "USERS")) == ["alice", "bob", "default"]
    bob = redis.Redis(port=srv.resp_port, decode_responses=True)
    bob.execute_command("AUTH", "bob", "bob")
    assert bob.sadd("set1", "a") == 1
    assert "NOPERM" in error_of(bob.set, "set2", "v")
    rd.execute_command("ACL", "SETUSER", "carol", "on", ">c", "+get", "~c*")
    assert rd.execute_command("ACL", "SAVE") == "OK"
    text = f.read_text()
    assert "user carol on sanitize-payload #%s ~c* resetchannels -@all +get" % \
        hashlib.sha256(b"c").hexdigest() in text
    assert ">c" not in text and ">bob" not in text
    # LOAD replaces everything, and disconnects the clients of users it drops.
    bob_raw, alice_raw = RawConn(srv.resp_port), RawConn(srv.resp_port)
    assert bob_raw.cmd("AUTH", "bob", "bob") == b"+OK\r\n"
    assert alice_raw.cmd("AUTH", "alice", "alice") == b"+OK\r\n"
    f.write_text("user alice on >alice ~* &* +@all\n")
    assert rd.execute_command("ACL", "LOAD") == "OK"
    assert sorted(rd.execute_command("ACL", "USERS")) == ["alice", "default"]
    assert bob_raw.closed()
    assert alice_raw.cmd("PING") == b"+PONG\r\n"
    # A broken file changes nothing.
    f.write_text("user alice on >alice ~* &* +@all\nuser bad +nosuch\n")
    err = error_of(rd.execute_command, "ACL", "LOAD")
    assert "Error in applying operation '+nosuch'" in err and "no change" in err
    assert sorted(rd.execute_command("ACL", "USERS")) == ["alice", "default"]


@pytest.mark.skipif(not TROVE, reason="Trove's start-up check")
def test_a_broken_aclfile_stops_the_start(tmp_path):
    from harness import server as hserver
    f = tmp_path / "bad.acl"
    f.write_text("user x +nosuch\n")
    rc, out, err = hserver.run_binary(["--resp-port", "0", "-p", "0", "--aclfile", str(f)])
    assert rc != 0
    assert "Unknown command" in (out + err)


def test_slowlog_and_monitor_redact_setuser(rd, resp_port):
    rd.config_set("slowlog-log-slower-than", 0)
    rd.execute_command("ACL", "SETUSER", "red", ">topsecret")
    rd.config_set("slowlog-log-slower-than", 10000)
    entries = rd.execute_command("SLOWLOG", "GET", 10)
    text = repr(entries)
    assert "topsecret" not in text
    rd.execute_command("SLOWLOG", "RESET")
