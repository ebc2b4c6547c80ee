"""Server-side Lua scripts: EVAL, EVALSHA, EVAL_RO, SCRIPT LOAD/EXISTS/FLUSH/KILL,
redis-py's register_script, the conversions between RESP (2 and 3) and Lua in
both directions, the error texts (Redis 7's, with the script's location),
read-only scripts, a rate limiter, WATCH and keyspace notifications seeing a
script's writes.

Trove differs from Redis where the tests are marked `trove`: keyspace walks
are refused inside scripts. A script may touch keys it did not declare and
stays atomic (see test_undeclared_keys_stay_atomic_under_contention).
"""

import hashlib
import os
import socket
import time

import pytest
import redis


SERVER_ARGS = ["-t", "4"]

TARGET = os.environ.get("TROVE_TEST_TARGET", "").strip().lower() or (
    "fake" if os.environ.get("TROVE_RESP_FAKE") else "trove")


def sha1(s):
    return hashlib.sha1(s.encode()).hexdigest()


def located(msg, body, line=1):
    """Redis 7's text for an error raised at `line` of script `body`."""
    return "-%s script: %s, on @user_script:%d.\r\n" % (msg, sha1(body), line)


def ev(c, body, *keys_then_args, numkeys=None):
    n = len(keys_then_args) if numkeys is None else numkeys
    return c.cmd("EVAL", body, str(n), *keys_then_args)


# ---- EVAL, EVALSHA, SCRIPT ---------------------------------------------------

def test_eval_keys_and_argv(r):
    assert r.eval("return 1", 0) == 1
    assert r.eval("return {KEYS[1], KEYS[2], ARGV[1], #ARGV}", 2, "k1", "k2", "a1", "a2") == \
        [b"k1", b"k2", b"a1", 2]


def test_script_load_exists_evalsha_flush(rd):
    rd.script_flush()
    body = "return 'loaded'"
    sha = rd.script_load(body)
    assert sha == sha1(body)
    assert rd.evalsha(sha, 0) == "loaded"
    assert rd.evalsha(sha.upper(), 0) == "loaded"
    assert rd.script_exists(sha, "0" * 40) == [True, False]
    assert rd.eval("return 2", 0) == 2  # EVAL caches its body too
    assert rd.script_exists(sha1("return 2")) == [True]
    assert rd.script_flush() is True
    assert rd.script_exists(sha, sha1("return 2")) == [False, False]
    with pytest.raises(redis.exceptions.NoScriptError):
        rd.evalsha(sha, 0)


def test_script_subcommand_replies(raw):
    c = raw()
    assert c.cmd("SCRIPT", "FLUSH", "ASYNC") == b"+OK\r\n"
    assert c.cmd("SCRIPT", "FLUSH", "SYNC") == b"+OK\r\n"
    assert c.cmd("SCRIPT", "FLUSH", "LATER") == \
        b"-ERR SCRIPT FLUSH only support SYNC|ASYNC option\r\n"
    assert c.cmd("SCRIPT", "KILL") == b"-NOTBUSY No scripts in execution right now.\r\n"
    assert c.cmd("EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0") == \
        b"-NOSCRIPT No matching script. Please use EVAL.\r\n"
    assert c.cmd("EVALSHA", "abc", "0") == b"-NOSCRIPT No matching script. Please use EVAL.\r\n"
    assert c.cmd("SCRIPT", "LOAD", "return (") .startswith(
        b"-ERR Error compiling script (new function): user_script:1: ")
    assert c.cmd("SCRIPT", "NOPE").startswith(b"-ERR unknown subcommand")
    assert c.cmd("SCRIPT", "HELP").startswith(b"*")


def test_register_script_survives_flush(r):
    incr = r.register_script("return redis.call('incr', KEYS[1])")
    assert incr(keys=["c"]) == 1
    assert incr(keys=["c"]) == 2
    r.script_flush()
    assert incr(keys=["c"]) == 3  # redis-py loads it again after NOSCRIPT


def test_numkeys_errors(raw):
    c = raw()
    assert ev(c, "return 1", "a", numkeys=2) == \
        b"-ERR Number of keys can't be greater than number of args\r\n"
    assert ev(c, "return 1", numkeys=-1) == b"-ERR Number of keys can't be negative\r\n"
    assert c.cmd("EVAL", "return 1", "x") == b"-ERR value is not an integer or out of range\r\n"
    assert c.cmd("EVAL", "return 1") == b"-ERR wrong number of arguments for 'eval' command\r\n"


# ---- Lua to RESP -------------------------------------------------------------

@pytest.mark.parametrize("body,reply", [
    ("return 3.99", b":3\r\n"),
    ("return -3.99", b":-3\r\n"),
    ("return 'hi'", b"$2\r\nhi\r\n"),
    ("return {1, 2, nil, 4}", b"*2\r\n:1\r\n:2\r\n"),
    ("return {1, {2, 'x'}, {ok='y'}}", b"*3\r\n:1\r\n*2\r\n:2\r\n$1\r\nx\r\n+y\r\n"),
    ("return {ok='FINE'}", b"+FINE\r\n"),
    ("return {err='BAD thing'}", b"-BAD thing\r\n"),
    ("return redis.error_reply('MY error')", b"-MY error\r\n"),
    ("return redis.status_reply('QUEUED')", b"+QUEUED\r\n"),
    ("return true", b":1\r\n"),
    ("return false", b"$-1\r\n"),
    ("return nil", b"$-1\r\n"),
    ("return {}", b"*0\r\n"),
    ("return {double=3.5}", b"$3\r\n3.5\r\n"),
    ("return {map={a=1}}", b"*2\r\n$1\r\na\r\n:1\r\n"),
    ("return {set={a=true}}", b"*1\r\n$1\r\na\r\n"),
    ("return redis.sha1hex('')", b"$40\r\nda39a3ee5e6b4b0d3255bfef95601890afd80709\r\n"),
])
def test_lua_to_resp2(raw, body, reply):
    assert ev(raw(), body) == reply


@pytest.mark.parametrize("body,reply", [
    ("return nil", b"_\r\n"),
    ("return false", b"_\r\n"),
    ("return true", b":1\r\n"),
    ("redis.setresp(3) return true", b"#t\r\n"),
    ("redis.setresp(3) return false", b"#f\r\n"),
    ("return {double=3.5}", b",3.5\r\n"),
    ("return {map={a=1}}", b"%1\r\n$1\r\na\r\n:1\r\n"),
    ("return {set={a=true}}", b"~1\r\n$1\r\na\r\n"),
    ("return {big_number='123'}", b"(123\r\n"),
    ("return {verbatim_string={format='txt', string='hey'}}", b"=7\r\ntxt:hey\r\n"),
])
def test_lua_to_resp3(raw, body, reply):
    c = raw()
    assert c.cmd("HELLO", "3").startswith(b"%")
    assert ev(c, body) == reply


# ---- RESP to Lua -------------------------------------------------------------

def test_resp2_to_lua(raw):
    c = raw()
    c.cmd("SET", "s", "v")
    c.cmd("RPUSH", "l", "a", "b")
    c.cmd("SET", "n", "41")
    assert ev(c, "return type(redis.call('get', KEYS[1]))", "s") == b"$6\r\nstring\r\n"
    assert ev(c, "return tostring(redis.call('get', KEYS[1]))", "missing") == \
        b"$5\r\nfalse\r\n"
    assert ev(c, "local n = redis.call('incr', KEYS[1]) return {type(n), n}", "n") == \
        b"*2\r\n$6\r\nnumber\r\n:42\r\n"
    assert ev(c, "return redis.call('set', KEYS[1], 'w').ok", "s") == b"$2\r\nOK\r\n"
    assert ev(c, "local t = redis.call('lrange', KEYS[1], 0, -1) return {#t, t[2]}", "l") == \
        b"*2\r\n:2\r\n$1\r\nb\r\n"
    assert ev(c, "return redis.pcall('incr', KEYS[1]).err", "l") == \
        b"$65\r\nWRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    # Numbers as arguments: integers as such, floats as %.17g.
    assert ev(c, "redis.call('set', KEYS[1], 10) return redis.call('get', KEYS[1])", "s") == \
        b"$2\r\n10\r\n"
    assert ev(c, "redis.call('set', KEYS[1], 1.5) return redis.call('get', KEYS[1])", "s") == \
        b"$3\r\n1.5\r\n"


def test_resp3_to_lua(raw):
    c = raw()
    c.cmd("HSET", "h", "f", "v")
    c.cmd("ZADD", "z", "1.5", "m")
    body = "redis.setresp(3) return redis.call('hgetall', KEYS[1])"
    assert ev(c, body, "h") == b"*2\r\n$1\r\nf\r\n$1\r\nv\r\n"  # a RESP2 caller
    assert ev(c, "redis.setresp(3) return redis.call('hgetall', KEYS[1]).map.f", "h") == \
        b"$1\r\nv\r\n"
    assert ev(c, "redis.setresp(3) return type(redis.call('get', KEYS[1]))", "nokey") == \
        b"$3\r\nnil\r\n"
    assert ev(c, "redis.setresp(3) return redis.call('zscore', KEYS[1], 'm').double * 2",
              "z") == b":3\r\n"
    assert c.cmd("HELLO", "3").startswith(b"%")
    assert ev(c, body, "h") == b"%1\r\n$1\r\nf\r\n$1\r\nv\r\n"


def test_redis_log_writes_notice_and_warning(raw, trove):
    """redis.log: LOG_WARNING and LOG_NOTICE lines reach the server's log
    (stderr), arguments joined with spaces, non-strings skipped; LOG_DEBUG
    and LOG_VERBOSE are dropped (Redis's default loglevel, notice)."""
    c = raw()
    assert ev(c, "redis.log(redis.LOG_WARNING, 'trove-log-w', 42) "
                 "redis.log(redis.LOG_NOTICE, 'trove-log-n', {}, 'end') "
                 "redis.log(redis.LOG_DEBUG, 'trove-log-d') "
                 "redis.log(redis.LOG_VERBOSE, 'trove-log-v') return 1") == b":1\r\n"
    deadline = time.monotonic() + 5
    while "trove-log-n" not in trove.log() and time.monotonic() < deadline:
        time.sleep(0.02)
    log = trove.log()
    assert "# trove-log-w 42\n" in log
    assert "* trove-log-n  end\n" in log
    assert "trove-log-d" not in log and "trove-log-v" not in log


def test_lua_environment(raw):
    c = raw()
    assert ev(c, "return {unpack({1, 2})}") == b"*2\r\n:1\r\n:2\r\n"
    assert ev(c, "return {table.getn({1, 2, 3}), math.mod(7, 4), string.format('%d', 5)}") == \
        b"*3\r\n:3\r\n:3\r\n$1\r\n5\r\n"
    assert ev(c, "return loadstring('return 7')()") == b":7\r\n"
    assert ev(c, "return redis.REDIS_VERSION") == b"$6\r\n7.0.15\r\n"
    assert ev(c, "return redis.replicate_commands()") == b":1\r\n"
    assert ev(c, "redis.log(redis.LOG_WARNING, 'x') return redis.LOG_NOTICE") == b":2\r\n"
    body = "return os.time()"
    assert ev(c, body) == located(
        "ERR user_script:1: Script attempted to access nonexistent global variable 'os'",
        body).encode()
    body = "x = 5"
    assert ev(c, body) == located("ERR user_script:1: Attempt to modify a readonly table",
                                  body).encode()


@pytest.mark.parametrize("trick", [
    "setmetatable(_G, {})",
    "local g = getmetatable(_G); g.__index = {}",
    "redis = function() return 1 end",
    "_G = {}",
    "rawset(_G, 'redis', 1)",
    "redis.call = function() return 1 end",
    "string.upper = function() return 'x' end",
    "getmetatable('').__index = {}",
    "setmetatable(redis, {})",
    "table.insert = nil",
])
def test_globals_and_libraries_are_read_only(raw, trick):
    # One VM serves every client of a worker: no script may change what the
    # next one sees (Redis's read-only tables).
    c = raw()
    reply = ev(c, trick)
    assert reply.startswith(b"-") and b"Attempt to modify a readonly table" in reply, reply
    assert ev(c, "return redis.call('PING')") == b"+PONG\r\n"
    assert ev(c, "return string.upper('a') .. ('b'):upper()") == b"$2\r\nAB\r\n"
    assert ev(c, "local t = {} table.insert(t, 1) return #t") == b":1\r\n"
    # Reading through the views still works: iteration and length.
    assert ev(c, "local n = 0 for k in pairs(redis) do n = n + 1 end return n > 5") == b":1\r\n"


def test_shebang_names_the_engine(raw):
    c = raw()
    assert ev(c, "#!not-lua\nreturn 1").startswith(b"-ERR Unexpected engine in script shebang")
    assert ev(c, "#!lua\nreturn 1") == b":1\r\n"


# ---- errors ------------------------------------------------------------------

def test_runtime_error_location(raw):
    c = raw()
    body = "return foo()"
    assert ev(c, body) == located(
        "ERR user_script:1: Script attempted to access nonexistent global variable 'foo'",
        body).encode()
    body = "local a = 1\nerror('boom')"
    assert ev(c, body) == located("ERR user_script:2: boom", body, 2).encode()


def test_recursive_return_value_ends_in_an_error(raw):
    # A cyclic table nests arrays until Redis's "reached lua stack limit"
    # error closes the reply; the connection stays usable.
    c = raw()
    body = "local a = {}; local b = {a}; a[1] = b; return a"
    c.send(b"*3\r\n$4\r\nEVAL\r\n$%d\r\n%s\r\n$1\r\n0\r\n" % (len(body), body.encode()))
    end = b"-ERR reached lua stack limit\r\n"
    while end not in c.buf:  # read without recursing: the reply nests deep
        c._fill()
    reply, c.buf = c.buf.split(end, 1)
    assert reply.startswith(b"*1\r\n*1\r\n")
    assert set(reply.split(b"\r\n")) == {b"*1", b""}
    assert c.cmd("PING") == b"+PONG\r\n"


def test_redis_call_errors(raw):
    c = raw()
    c.cmd("SET", "k", "v")
    body = "return redis.call('incr', KEYS[1])"
    assert ev(c, body, "k") == located("ERR value is not an integer or out of range",
                                       body).encode()
    for body, msg in [
        ("return redis.call('nosuch')", "ERR Unknown Redis command called from script"),
        ("return redis.call('get')", "ERR Wrong number of args calling Redis command from script"),
        ("return redis.call('multi')", "ERR This Redis command is not allowed from script"),
        ("return redis.call('eval', 'return 1', 0)",
         "ERR This Redis command is not allowed from script"),
        ("return redis.call('subscribe', 'ch')",
         "ERR This Redis command is not allowed from script"),
        ("return redis.call()",
         "ERR Please specify at least one argument for this redis lib call"),
        ("return redis.call('get', {})",
         "ERR Lua redis lib command arguments must be strings or integers"),
    ]:
        assert ev(c, body) == located(msg, body).encode(), body
    # pcall hands the error to the script; returned, it carries no location.
    assert ev(c, "return redis.pcall('nosuch')") == \
        b"-ERR Unknown Redis command called from script\r\n"
    assert ev(c, "local e = redis.pcall('incr', KEYS[1]) return e.err", "k") == \
        b"$43\r\nERR value is not an integer or out of range\r\n"


def test_blocking_commands_refused(raw):
    # Redis 7.0 flags them noscript: refused even when data is there.
    c = raw()
    c.cmd("RPUSH", "full", "x")
    for body in ["return redis.call('blpop', KEYS[1], 0)",
                 "return redis.call('brpoplpush', KEYS[1], KEYS[1], 0)",
                 "return redis.call('bzpopmin', KEYS[1], 0)"]:
        assert ev(c, body, "full") == \
            located("ERR This Redis command is not allowed from script", body).encode()
    assert c.cmd("LLEN", "full") == b":1\r\n"


def test_eval_ro_refuses_writes(raw):
    c = raw()
    c.cmd("SET", "k", "v")
    assert c.cmd("EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k") == b"$1\r\nv\r\n"
    body = "return redis.call('set', KEYS[1], 'x')"
    assert c.cmd("EVAL_RO", body, "1", "k") == \
        located("ERR Write commands are not allowed from read-only scripts.", body).encode()
    sha = c.cmd("SCRIPT", "LOAD", body).split(b"\r\n")[1].decode()
    assert c.cmd("EVALSHA_RO", sha, "1", "k") == \
        located("ERR Write commands are not allowed from read-only scripts.", body).encode()
    body = "#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'x')"
    assert ev(c, body, "k") == \
        located("ERR Write commands are not allowed from read-only scripts.", body, 2).encode()
    assert c.cmd("GET", "k") == b"$1\r\nv\r\n"


def test_acl_applies_to_calls(rd, resp_port):
    rd.acl_setuser("scripter", enabled=True, passwords=["+pw"], keys=["~*"],
                   commands=["+eval", "+get"])
    try:
        c = redis.Redis(host="127.0.0.1", port=resp_port, username="scripter", password="pw",
                        decode_responses=True)
        rd.set("k", "v")
        assert c.eval("return redis.call('get', KEYS[1])", 1, "k") == "v"
        body = "return redis.call('set', KEYS[1], 'x')"
        with pytest.raises(redis.exceptions.ResponseError) as e:
            c.eval(body, 1, "k")
        assert str(e.value) == ("The user executing the script can't run this command or "
                                "subcommand script: %s, on @user_script:1." % sha1(body))
        assert c.eval("return redis.pcall('set', KEYS[1], 'x')['err']", 1, "k") == \
            "ERR The user executing the script can't run this command or subcommand"
        entry = rd.acl_log(count=1)[0]
        assert (entry["context"], entry["object"], entry["username"]) == ("lua", "set", "scripter")
        c.close()
    finally:
        rd.acl_deluser("scripter")


# ---- behaviour -----------------------------------------------------------------

RATE_LIMITER = """
local n = redis.call('incr', KEYS[1])
if n == 1 then redis.call('expire', KEYS[1], ARGV[1]) end
if n > tonumber(ARGV[2]) then return 0 end
return 1
"""


def test_rate_limiter(r):
    allow = r.register_script(RATE_LIMITER)
    got = [allow(keys=["rl:user"], args=[60, 5]) for _ in range(7)]
    assert got == [1, 1, 1, 1, 1, 0, 0]
    assert r.get("rl:user") == b"7"
    assert 0 < r.ttl("rl:user") <= 60


def test_watch_sees_a_script_write(raw, r):
    c = raw()
    assert c.cmd("WATCH", "w") == b"+OK\r\n"
    assert c.cmd("MULTI") == b"+OK\r\n"
    assert c.cmd("SET", "w", "from-multi") == b"+QUEUED\r\n"
    r.eval("redis.call('set', KEYS[1], 'from-script')", 1, "w")
    assert c.cmd("EXEC") == b"*-1\r\n"
    assert r.get("w") == b"from-script"


def test_eval_inside_multi(raw):
    c = raw()
    c.cmd("MULTI")
    assert c.cmd("EVAL", "return redis.call('incr', KEYS[1])", "1", "m") == b"+QUEUED\r\n"
    assert c.cmd("EVAL", "return redis.call('incr', KEYS[1])", "1", "m") == b"+QUEUED\r\n"
    assert c.cmd("EXEC") == b"*2\r\n:1\r\n:2\r\n"


@pytest.mark.skipif(TARGET == "fake", reason="the fake RESP front delivers no messages")
def test_keyspace_notification_from_a_script(r):
    r.config_set("notify-keyspace-events", "KA")
    try:
        p = r.pubsub()
        p.psubscribe("__keyspace@0__:*")
        assert p.get_message(timeout=5)["type"] == "psubscribe"
        r.eval("redis.call('set', KEYS[1], 'v') redis.call('expire', KEYS[1], 100)", 1, "ks")
        got = []
        deadline = time.monotonic() + 5
        while len(got) < 2 and time.monotonic() < deadline:
            m = p.get_message(timeout=0.2)
            if m is not None and m["type"] == "pmessage":
                got.append((m["channel"], m["data"]))
        assert got == [(b"__keyspace@0__:ks", b"set"), (b"__keyspace@0__:ks", b"expire")]
        p.close()
    finally:
        r.config_set("notify-keyspace-events", "")


# ---- Trove's differences ---------------------------------------------------------

def test_undeclared_keys_work(r):
    r.set("other", "v")
    assert r.eval("return redis.call('get', 'other')", 0) == b"v"
    assert r.eval("redis.call('set', 'other2', 'w'); return redis.call('get', 'other2')",
                  1, "declared") == b"w"
    assert r.get("other2") == b"w"


def test_undeclared_keys_stay_atomic_under_contention(resp_port, r):
    """Read-modify-write of a key no script declares, from scripts on several
    connections (so several workers) racing plain INCRs of the same key:
    nothing is lost, so no other client ran between a script's GET and SET."""
    import threading
    n = 150
    script = ("local v = tonumber(redis.call('get', 'ctr') or '0'); "
              "redis.call('set', 'ctr', v + 1); return v + 1")
    errors = []

    def scripts():
        c = redis.Redis(host="127.0.0.1", port=resp_port, socket_timeout=20)
        try:
            for _ in range(n):
                c.eval(script, 0)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def incrs():
        c = redis.Redis(host="127.0.0.1", port=resp_port, socket_timeout=20)
        try:
            for _ in range(n):
                c.incr("ctr")
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=f) for f in (scripts, scripts, scripts, incrs, incrs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert int(r.get("ctr")) == 5 * n


def test_select_inside_script_is_its_own(rd):
    rd.execute_command("SELECT", "10")
    rd.set("mykey", "original")
    assert rd.eval("redis.call('select', '9'); redis.call('set', 'mykey', 'nine'); "
                   "return redis.call('get', 'mykey')", 0) == "nine"
    assert rd.get("mykey") == "original"  # the caller's database did not change
    rd.execute_command("SELECT", "9")
    assert rd.get("mykey") == "nine"
    with pytest.raises(redis.exceptions.ResponseError, match="DB index is out of range"):
        rd.eval("return redis.call('select', '100000')", 0)
    rd.execute_command("SELECT", "0")


def test_acl_check_cmd(rd):
    rd.execute_command("ACL", "SETUSER", "scripter", "on", ">pw", "+@scripting", "+set", "~x*")
    c = redis.Redis(host="127.0.0.1", port=rd.connection_pool.connection_kwargs["port"],
                    username="scripter", password="pw", decode_responses=True)
    try:
        assert c.eval("return redis.acl_check_cmd('set', 'xx', 1)", 0) == 1
        assert c.eval("return redis.acl_check_cmd('hset', 'xx', 'f', 1)", 0) is None
        assert c.eval("return redis.acl_check_cmd('set', 'yy', 1)", 0) is None
        with pytest.raises(redis.exceptions.ResponseError,
                           match=r"Invalid command passed to redis.acl_check_cmd\(\)"):
            c.eval("return redis.acl_check_cmd('invalid-cmd', 'arg')", 0)
    finally:
        c.close()
        rd.execute_command("ACL", "DELUSER", "scripter")


def test_shebang_scripts_checked_before_running(rd):
    rd.config_set("maxmemory", 1)
    try:
        with pytest.raises(redis.exceptions.ResponseError, match="^OOM command not allowed"):
            rd.eval("#!lua\nreturn 1", 0)
        assert rd.eval("#!lua flags=no-writes\nreturn 1", 0) == 1
        assert rd.eval("return 1", 0) == 1  # no shebang: only its writes are refused
    finally:
        rd.config_set("maxmemory", 0)
    with pytest.raises(redis.exceptions.ResponseError,
                       match=r"Can not execute a script with write flag using \*_ro command"):
        rd.execute_command("EVAL_RO", "#!lua\nreturn 1", 0)
    assert rd.execute_command("EVAL_RO", "#!lua flags=no-writes\nreturn 1", 0) == 1


def test_bit_library(rd):
    assert rd.eval("return {bit.band(0xff, 0x0f), bit.bor(1, 2, 4), bit.bxor(5, 1), "
                   "bit.bnot(0), bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-16, 2), "
                   "bit.rol(0x80000000, 1), bit.ror(1, 1), bit.bswap(0x01020304), "
                   "bit.tohex(255), bit.tohex(255, -2), bit.tobit(0xffffffff)}", 0) == \
        [15, 7, 4, -1, -2147483648, 15, -4, 1, -2147483648, 0x04030201, "000000ff", "FF", -1]


def test_keyspace_walks_refused_in_scripts(raw, trove):
    c = raw()
    body = "return redis.call('keys', '*')"
    assert ev(c, body) == located("ERR this command is not supported inside scripts yet",
                                  body).encode()


def test_info_memory_counts_scripts(rd, trove):
    rd.script_flush()
    info = rd.info("memory")
    assert info["number_of_cached_scripts"] == 0
    assert info["used_memory_scripts"] == 0
    rd.script_load("return 'abc'")
    info = rd.info("memory")
    assert info["number_of_cached_scripts"] == 1
    assert info["used_memory_scripts"] == len("return 'abc'")


def test_allow_oom_shebang_lets_writes_run_over_maxmemory(trove, make_server):
    # Over maxmemory (lowered below what is in use; -M: no eviction), a
    # script's first deny-oom command is refused, unless the script says
    # allow-oom. SADD of a member the set already has needs no memory, so it
    # shows the check alone.
    srv = make_server("-M")
    c = redis.Redis(port=srv.resp_port, socket_timeout=20)
    assert c.sadd("s", "a") == 1
    for i in range(20):
        c.set("k%d" % i, "x" * 50000)
    c.config_set("maxmemory", 1)
    body = "return redis.call('SADD', KEYS[1], 'a')"
    with pytest.raises(redis.ResponseError) as e:
        c.eval(body, 1, "s")
    assert "OOM command not allowed when used memory > 'maxmemory'" in str(e.value)
    assert c.eval("#!lua flags=allow-oom\n" + body, 1, "s") == 0
    c.config_set("maxmemory", 0)
    c.close()


def test_errorstats_count_script_errors_once(rd):
    """INFO errorstats counts error replies by code; a called command's error
    counts where it arises, once, whether the script passes it on or not."""
    rd.config_resetstat()
    with pytest.raises(redis.exceptions.ResponseError, match="^MY_ERR_CODE custom msg$"):
        rd.eval("return redis.error_reply('MY_ERR_CODE custom msg')", 0)
    with pytest.raises(redis.exceptions.ResponseError):
        rd.eval("return redis.error_reply('')", 0)
    rd.set("notnum", "x")
    for body in ("return redis.call('incr', KEYS[1])", "return redis.pcall('incr', KEYS[1])",
                 "local t = redis.pcall('incr', KEYS[1]); return 1"):
        try:
            rd.eval(body, 1, "notnum")
        except redis.exceptions.ResponseError:
            pass
    with pytest.raises(redis.exceptions.ResponseError):
        rd.execute_command("NOSUCHCOMMAND")
    stats = rd.info("errorstats")
    assert stats == {"errorstat_MY_ERR_CODE": {"count": 1}, "errorstat_ERR": {"count": 5}} or \
        stats == {"errorstat_MY_ERR_CODE": "count=1", "errorstat_ERR": "count=5"}
    assert rd.info("stats")["total_error_replies"] == 6
    rd.config_resetstat()
    assert rd.info("errorstats") == {}
    assert rd.info("stats")["total_error_replies"] == 0


def test_commandstats_failed_and_rejected_calls(rd):
    """Redis 7's failed_calls (ran, replied an error) and rejected_calls
    (refused before running), also for commands a script calls."""
    rd.config_resetstat()
    rd.set("nn", "x")
    with pytest.raises(redis.exceptions.ResponseError):
        rd.execute_command("INCR", "nn")  # (redis-py's incr sends INCRBY)
    with pytest.raises(redis.exceptions.ResponseError):
        rd.eval("return redis.call('incr', KEYS[1])", 1, "nn")
    rd.config_set("maxmemory", 1)
    try:
        with pytest.raises(redis.exceptions.ResponseError, match="^OOM"):
            rd.eval("return redis.call('set', KEYS[1], 'y')", 1, "nn")
    finally:
        rd.config_set("maxmemory", 0)
    stats = rd.info("commandstats")
    assert stats["cmdstat_incr"]["calls"] == 2
    assert stats["cmdstat_incr"]["failed_calls"] == 2
    assert stats["cmdstat_set"]["rejected_calls"] == 1
    assert stats["cmdstat_eval"]["failed_calls"] == 2


def test_eval_scripts_are_bounded_script_load_ones_are_not(rd, trove):
    """Redis 7.4's bound: the 500 most recent EVAL bodies stay cached, older
    ones are evicted (INFO evicted_scripts); SCRIPT LOAD bodies stay."""
    rd.script_flush()
    kept = rd.script_load("return 'kept'")
    before = rd.info("stats")["evicted_scripts"]
    for i in range(520):
        assert rd.eval("return %d" % i, 0) == i
    assert rd.info("stats")["evicted_scripts"] - before == 20
    assert rd.info("memory")["number_of_cached_scripts"] == 501
    assert rd.evalsha(kept, 0) == "kept"
    with pytest.raises(redis.exceptions.NoScriptError):
        rd.evalsha(sha1("return 0"), 0)  # the oldest EVAL body: evicted
    assert rd.evalsha(sha1("return 519"), 0) == 519
    rd.script_flush()


def test_info_memory_reports_vm_and_functions(rd, trove):
    rd.function_flush()
    rd.function_load("#!lua name=infolib\nredis.register_function('i1', function() return 1 end)")
    assert rd.fcall("i1", 0) == 1
    m = rd.info("memory")
    assert m["number_of_functions"] == 1 and m["number_of_libraries"] == 1
    assert m["used_memory_functions"] > 0
    assert m["used_memory_vm_eval"] > 10000  # a worker's VM with its libraries
    assert m["used_memory_vm_total"] == m["used_memory_vm_eval"]
    rd.function_flush()


def test_struct_library(rd):
    assert rd.eval(
        "local s = struct.pack('>I2i4c3sd', 258, -2, 'abcdef', 'zz', 1.5)\n"
        "local a, b, c, d, e, nxt = struct.unpack('>I2i4c3sd', s)\n"
        "return {#s, a, b, c, d, tostring(e), nxt, struct.size('>I2i4c3d'), "
        "struct.size('!4bi'), struct.pack('<h', 1) == '\\1\\0'}", 0) == \
        [20, 258, -2, "abc", "zz", "1.5", 21, 17, 8, 1]
    with pytest.raises(redis.exceptions.ResponseError, match="invalid format option 'y'"):
        rd.eval("return struct.pack('y', 1)", 0)
    with pytest.raises(redis.exceptions.ResponseError, match="data string too short"):
        rd.eval("return struct.unpack('i4', 'ab')", 0)


def test_monitor_shows_script_commands_after_the_script(resp_port, rd):
    m = socket.create_connection(("127.0.0.1", resp_port), timeout=5)
    try:
        m.sendall(b"MONITOR\r\n")
        assert m.recv(100).startswith(b"+OK")
        rd.eval("redis.call('set', KEYS[1], ARGV[1])", 1, "monkey", "bar")
        seen = b""
        deadline = time.time() + 5
        while seen.count(b"\r\n") < 2 and time.time() < deadline:
            seen += m.recv(4096)
        lines = seen.split(b"\r\n")
        assert b"eval" in lines[0].lower()
        assert b'[0 lua] "set" "monkey" "bar"' in lines[1]
    finally:
        m.close()


def test_tracking_remembers_declared_keys_of_reading_scripts(resp_port, rd):
    """Redis's rule: a script that called a read-only command tracks its
    declared keys; one that only wrote or pinged tracks nothing."""
    c = socket.create_connection(("127.0.0.1", resp_port), timeout=5)
    try:
        c.sendall(b"HELLO 3\r\nCLIENT TRACKING on\r\n")
        time.sleep(0.2)
        c.recv(65536)
        c.sendall(b"EVAL \"redis.call('set', 'tk3', 'x')\" 2 tk1 tk2\r\n")
        time.sleep(0.1)
        c.recv(1000)
        rd.mset({"tk1": 1, "tk2": 1})
        c.sendall(b"EVAL \"redis.call('get', 'tk3')\" 2 tk1 tk2\r\n")
        time.sleep(0.1)
        assert c.recv(1000) == b"_\r\n"  # no invalidation before this reply
        rd.mset({"tk2": 2, "tk1": 2})
        got = b""
        deadline = time.time() + 5
        while got.count(b"invalidate") < 2 and time.time() < deadline:
            got += c.recv(4096)
        assert b"tk1" in got and b"tk2" in got
    finally:
        c.close()


def test_undeclared_reader_never_sees_a_script_half_done(resp_port, rd):
    """A long script holds its declared key between two writes; a script on
    another connection reads that key without declaring it: it must wait
    (its try-lock is busy, so it runs again holding every key) and see the
    final value, never the intermediate one."""
    import threading
    writer_started = threading.Event()
    result = {}

    def writer():
        c = redis.Redis(host="127.0.0.1", port=resp_port, socket_timeout=60,
                        decode_responses=True)
        writer_started.set()
        result["writer"] = c.eval(
            "redis.call('set', KEYS[1], 'half'); local x = 0\n"
            "for i = 1, 20000000 do x = x + 1 end\n"
            "redis.call('set', KEYS[1], 'done'); return x", 1, "held")
    rd.set("held", "before")
    t = threading.Thread(target=writer)
    t.start()
    writer_started.wait()
    time.sleep(0.2)  # the writer is in its loop now
    reader = redis.Redis(host="127.0.0.1", port=resp_port, socket_timeout=60,
                         decode_responses=True)
    seen = reader.eval("return redis.call('get', 'held')", 0)
    t.join()
    assert result["writer"] == 20000000
    assert seen == "done"  # never "half": the writer was mid-run when the reader came
