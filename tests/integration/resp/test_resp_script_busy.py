"""The script time limit: busy-reply-threshold (lua-time-limit), BUSY
replies, SCRIPT KILL and FUNCTION KILL from any worker, UNKILLABLE after a
write, FUNCTION STATS' running_script, transactions meeting a busy script.

Trove runs with -t 2 (worker = CLIENT ID % 2). A busy script holds only its
own worker's clients (they get BUSY, as every client does in Redis) and the
commands on other workers that need a key stripe it holds; other clients
go on. Tests that place connections on workers are Trove's only; the rest
also run against redis-server (TROVE_TEST_TARGET=redis).
"""

import os
import time

import pytest

from blocked_clients import SLOW, client_id, command
from blocked_clients import on_worker as _on_worker


WORKERS = 2
SERVER_ARGS = ["-t", str(WORKERS)]

TARGET = os.environ.get("TROVE_TEST_TARGET", "").strip().lower() or (
    "fake" if os.environ.get("TROVE_RESP_FAKE") else "trove")
IS_TROVE = TARGET == "trove"
pytestmark = pytest.mark.skipif(TARGET == "fake", reason="the fake RESP front runs no scripts")
trove_only = pytest.mark.skipif(not IS_TROVE, reason="places connections on Trove's workers")

BUSY_EVAL = (b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or "
             b"SHUTDOWN NOSAVE.\r\n")
BUSY_FUNCTION = (b"-BUSY Redis is busy running a script. You can only call FUNCTION KILL or "
                 b"SHUTDOWN NOSAVE.\r\n")
LOOP = "while true do end"


def on_worker(raw, worker):
    return _on_worker(raw, worker, WORKERS, placed=IS_TROVE)


def wait_busy(c, timeout=5.0):
    """Pings on c (a client of the script's worker) until it answers BUSY."""
    deadline = time.monotonic() + timeout * SLOW
    while True:
        reply = c.cmd("PING")
        if reply.startswith(b"-BUSY"):
            return reply
        assert time.monotonic() < deadline, "the script never became busy: %r" % reply
        time.sleep(0.02)


def wait_pong(c, timeout=5.0):
    deadline = time.monotonic() + timeout * SLOW
    while c.cmd("PING") != b"+PONG\r\n":
        assert time.monotonic() < deadline, "still busy"
        time.sleep(0.02)


@pytest.fixture
def limit(r):
    r.config_set("busy-reply-threshold", 10)
    yield
    r.config_set("busy-reply-threshold", 5000)


def test_threshold_config_and_its_alias(r):
    assert r.config_get("busy-reply-threshold") == {"busy-reply-threshold": "5000"}
    r.config_set("lua-time-limit", 250)
    assert r.config_get("busy-reply-threshold") == {"busy-reply-threshold": "250"}
    assert r.config_get("lua-time-limit") == {"lua-time-limit": "250"}
    r.config_set("busy-reply-threshold", 5000)


def test_kill_with_nothing_running_is_notbusy(raw):
    c = raw()
    assert c.cmd("SCRIPT", "KILL") == b"-NOTBUSY No scripts in execution right now.\r\n"
    assert c.cmd("FUNCTION", "KILL") == b"-NOTBUSY No scripts in execution right now.\r\n"


def test_kill_from_the_scripts_own_worker(raw, limit):
    """Redis's 'Timedout read-only scripts can be killed by SCRIPT KILL': a
    client of the same worker gets BUSY for PING and can send SCRIPT KILL;
    the script's own client gets the kill error."""
    a = on_worker(raw, 0)
    b = on_worker(raw, 0)
    a.send(command("EVAL", LOOP, "0"))
    assert wait_busy(b) == BUSY_EVAL
    assert b.cmd("SCRIPT", "KILL") == b"+OK\r\n"
    err = a.read_reply()
    assert err.startswith(b"-ERR Script killed by user with SCRIPT KILL..."), err
    wait_pong(b)
    assert a.cmd("PING") == b"+PONG\r\n"


@trove_only
def test_other_workers_go_on_and_kill_it(raw, limit):
    """A busy script holds its own worker only: a client of another worker
    keeps reading and writing other keys, and its SCRIPT KILL stops it."""
    a = on_worker(raw, 0)
    b = on_worker(raw, 0)
    c = on_worker(raw, 1)
    assert c.cmd("SET", "other", "1") == b"+OK\r\n"
    a.send(command("EVAL", LOOP, "0"))
    wait_busy(b)
    for i in range(20):
        assert c.cmd("PING") == b"+PONG\r\n"
        assert c.cmd("GET", "other") == b"$%d\r\n%d\r\n" % (len(str(i + 1)), i + 1)
        assert c.cmd("INCR", "other") == b":%d\r\n" % (i + 2)
    assert c.cmd("SCRIPT", "KILL") == b"+OK\r\n"
    assert a.read_reply().startswith(b"-ERR Script killed by user")
    wait_pong(b)


@trove_only
def test_a_key_the_busy_script_holds_is_busy_on_other_workers(raw, limit):
    """A command of another worker that needs a stripe the script holds gets
    BUSY instead of waiting (its whole worker would wait with it)."""
    a = on_worker(raw, 0)
    b = on_worker(raw, 0)
    c = on_worker(raw, 1)
    c.cmd("SET", "held", "v")
    a.send(command("EVAL", "local v = redis.call('get', KEYS[1]) " + LOOP, "1", "held"))
    wait_busy(b)
    assert c.cmd("GET", "held") == BUSY_EVAL
    assert c.cmd("SET", "held", "w") == BUSY_EVAL
    assert c.cmd("EVAL", "return redis.call('get', KEYS[1])", "1", "held") == BUSY_EVAL
    # Queued while busy: the transaction is aborted, as in Redis.
    assert c.cmd("MULTI") == b"+OK\r\n"
    assert c.cmd("GET", "held") == BUSY_EVAL
    assert b.cmd("SCRIPT", "KILL") == b"+OK\r\n"
    assert a.read_reply().startswith(b"-ERR Script killed by user")
    assert c.cmd("EXEC").startswith(b"-EXECABORT Transaction discarded because of previous errors")
    assert c.cmd("GET", "held") == b"$1\r\nv\r\n"


@trove_only
def test_walks_exec_and_later_keys_of_a_busy_script_are_busy_elsewhere(raw, limit):
    """On another worker: a keyspace walk (it would meet the script's
    stripe), an EXEC whose queued command needs a held key, and a key the
    script locked only after it became busy (undeclared) all answer BUSY;
    the transaction is discarded."""
    a = on_worker(raw, 0)
    b = on_worker(raw, 0)
    c = on_worker(raw, 1)
    c.cmd("SET", "held2", "v")
    c.cmd("SET", "late", "v")
    assert c.cmd("MULTI") == b"+OK\r\n"
    assert c.cmd("SET", "held2", "w") == b"+QUEUED\r\n"
    body = ("redis.call('get', KEYS[1]) "
            "local t0 = redis.call('time') "
            "while redis.call('time')[1] - t0[1] < 2 do end "
            "redis.call('get', 'late') " + LOOP)
    a.send(command("EVAL", body, "1", "held2"))
    wait_busy(b)
    assert c.cmd("KEYS", "*") == BUSY_EVAL
    assert c.cmd("EXEC") == b"-EXECABORT Transaction discarded because of: " + BUSY_EVAL[1:]
    deadline = time.monotonic() + 10 * SLOW  # the script takes 'late' 1-2 s in
    while c.cmd("GET", "late") != BUSY_EVAL:
        assert time.monotonic() < deadline, "'late' never held"
        time.sleep(0.05)
    assert b.cmd("SCRIPT", "KILL") == b"+OK\r\n"
    assert a.read_reply().startswith(b"-ERR Script killed by user")
    assert c.cmd("GET", "held2") == b"$1\r\nv\r\n"
    assert c.cmd("GET", "late") == b"$1\r\nv\r\n"


def test_pcall_cannot_outlast_a_kill(raw, limit):
    """Redis's 'killed by SCRIPT KILL even when use pcall'."""
    a = on_worker(raw, 0)
    b = on_worker(raw, 0)
    a.send(command("EVAL", "local f = function() while 1 do redis.call('ping') end end "
                           "while 1 do pcall(f) end", "0"))
    wait_busy(b)
    assert b.cmd("SCRIPT", "KILL") == b"+OK\r\n"
    assert b"killed by user" in a.read_reply()
    wait_pong(b)


def test_pipelined_command_behind_a_killed_script(raw, limit):
    """Redis's 'Timedout script does not cause a false dead client': the
    PING pipelined behind the script is answered after the kill error."""
    a = on_worker(raw, 0)
    b = on_worker(raw, 0)
    a.send(command("EVAL", "while 1 do redis.call('ping') end", "0") + command("PING"))
    wait_busy(b)
    assert b.cmd("SCRIPT", "KILL") == b"+OK\r\n"
    assert b"killed by user" in a.read_reply()
    assert a.read_reply() == b"+PONG\r\n"


def test_a_script_that_wrote_is_unkillable(raw, r, limit):
    """After a write, SCRIPT KILL answers UNKILLABLE and the script runs to
    its end (here it stops itself after about a second)."""
    a = on_worker(raw, 0)
    b = on_worker(raw, 0)
    body = ("redis.call('set', KEYS[1], 'y') "
            "local t0 = tonumber(redis.call('time')[1]) "
            "while tonumber(redis.call('time')[1]) < t0 + 2 do end return 'done'")
    a.send(command("EVAL", body, "1", "wrote"))
    wait_busy(b)
    assert b.cmd("SCRIPT", "KILL").startswith(
        b"-UNKILLABLE Sorry the script already executed write commands against the dataset.")
    assert b.cmd("PING") == BUSY_EVAL
    a.sock.settimeout(10 * SLOW)
    assert a.read_reply() == b"$4\r\ndone\r\n"
    assert r.get("wrote") == b"y"


def test_busy_script_link_is_still_usable(raw, limit):
    """Redis's 'Timedout script link is still usable after Lua returns'."""
    a = raw()
    assert a.cmd("EVAL", "for i=1,100000 do redis.call('ping') end return 'ok'", "0") == \
        b"$2\r\nok\r\n"
    assert a.cmd("PING") == b"+PONG\r\n"


FUNCTION_LIB = ("#!lua name=busylib\n"
                "redis.register_function('spin', function() local a = 1 while true do a = a + 1 end end)")


def test_function_kill_and_running_script(raw, r, limit):
    """FUNCTION KILL stops a busy function, SCRIPT KILL refuses to (and
    FUNCTION KILL refuses an EVAL); FUNCTION STATS names the running one."""
    r.function_load(FUNCTION_LIB, replace=True)
    a = on_worker(raw, 0)
    b = on_worker(raw, 0)
    a.send(command("FCALL", "spin", "0"))
    assert wait_busy(b) == BUSY_FUNCTION
    stats = b.cmd("FUNCTION", "STATS")
    assert stats.startswith(b"*4\r\n$14\r\nrunning_script\r\n*6\r\n$4\r\nname\r\n$4\r\nspin\r\n"
                            b"$7\r\ncommand\r\n*3\r\n$5\r\nFCALL\r\n$4\r\nspin\r\n$1\r\n0\r\n"
                            b"$11\r\nduration_ms\r\n:"), stats
    assert b.cmd("SCRIPT", "KILL") == BUSY_FUNCTION
    assert b.cmd("FUNCTION", "KILL") == b"+OK\r\n"
    assert b"killed by user" in a.read_reply()
    wait_pong(b)
    assert b.cmd("FUNCTION", "STATS").startswith(b"*4\r\n$14\r\nrunning_script\r\n$-1\r\n")
    r.function_delete("busylib")


def test_function_kill_refuses_an_eval(raw, limit):
    a = on_worker(raw, 0)
    b = on_worker(raw, 0)
    a.send(command("EVAL", LOOP, "0"))
    wait_busy(b)
    assert b.cmd("FUNCTION", "KILL") == BUSY_EVAL
    assert b.cmd("SCRIPT", "KILL") == b"+OK\r\n"
    assert b"killed by user" in a.read_reply()


def test_transactions_meeting_a_busy_script(raw, r, limit):
    """Redis's multi.tcl 'MULTI-EXEC body and script timeout' and 'just EXEC
    and script timeout': never half a transaction."""
    r.set("xx", 1)
    a = on_worker(raw, 0)
    b = on_worker(raw, 0)
    p = on_worker(raw, 0)  # polls for the busy state (b is in MULTI)
    # Queued before, one command refused while busy: EXEC aborts.
    assert b.cmd("MULTI") == b"+OK\r\n"
    assert b.cmd("INCR", "xx") == b"+QUEUED\r\n"
    a.send(command("EVAL", LOOP, "0"))
    wait_busy(p)
    assert b.cmd("INCR", "xx") == BUSY_EVAL
    assert p.cmd("SCRIPT", "KILL") == b"+OK\r\n"
    assert b"killed by user" in a.read_reply()
    assert b.cmd("EXEC").startswith(b"-EXECABORT Transaction discarded because of previous errors")
    # EXEC itself while busy: aborted with the BUSY reason, MULTI state left.
    assert b.cmd("MULTI") == b"+OK\r\n"
    assert b.cmd("INCR", "xx") == b"+QUEUED\r\n"
    a.send(command("EVAL", LOOP, "0"))
    wait_busy(p)
    assert b.cmd("EXEC") == b"-EXECABORT Transaction discarded because of: " + BUSY_EVAL[1:]
    assert p.cmd("SCRIPT", "KILL") == b"+OK\r\n"
    assert b"killed by user" in a.read_reply()
    wait_pong(b)
    assert r.get("xx") == b"1"
    assert b.cmd("PING", "asdf") == b"$4\r\nasdf\r\n"


@trove_only
def test_scope_all_answers_busy_on_every_worker(raw, r, limit):
    """busy-reply-scope all: Redis's behaviour, BUSY on every worker (a
    client of the other worker included), the allow-busy commands still run."""
    assert r.config_get("busy-reply-scope") == {"busy-reply-scope": "worker"}
    with pytest.raises(Exception, match="must be one of the following: worker, all"):
        r.config_set("busy-reply-scope", "some")
    r.config_set("busy-reply-scope", "all")
    try:
        a = on_worker(raw, 0)
        b = on_worker(raw, 0)
        c = on_worker(raw, 1)
        a.send(command("EVAL", LOOP, "0"))
        wait_busy(b)
        assert c.cmd("PING") == BUSY_EVAL
        assert c.cmd("GET", "any") == BUSY_EVAL
        assert c.cmd("FUNCTION", "STATS").startswith(b"*4\r\n$14\r\nrunning_script\r\n$-1\r\n")
        assert c.cmd("SCRIPT", "KILL") == b"+OK\r\n"
        assert b"killed by user" in a.read_reply()
        wait_pong(c)
    finally:
        r.config_set("busy-reply-scope", "worker")


@trove_only
def test_server_stop_ends_a_looping_script(make_server):
    """A script that never ends (here below the threshold: never busy)
    does not hold up the server's exit."""
    from conftest import RawConn
    srv = make_server("-t", "2", "--resp-port", "0")
    c = RawConn(srv.resp_port)
    c.send(command("EVAL", "redis.call('set', 'k', 'v') " + LOOP, "0"))
    time.sleep(0.3)  # the script runs (and wrote: unkillable)
    t0 = time.monotonic()
    assert srv.stop() == 0
    assert time.monotonic() - t0 < 5


@trove_only
def test_shutdown_from_the_busy_worker_ends_an_unkillable_script(make_server):
    """Redis's 'SHUTDOWN NOSAVE can kill a timedout script anyway': SHUTDOWN
    is allowed while busy (with -A), and the stop ends the script even
    though it wrote."""
    from conftest import RawConn
    srv = make_server("-t", "2", "--resp-port", "0", "-A")
    conns = [RawConn(srv.resp_port) for _ in range(4)]
    mine = [c for c in conns if client_id(c) % WORKERS == 0]
    assert len(mine) >= 2
    a, b = mine[0], mine[1]
    assert b.cmd("CONFIG", "SET", "busy-reply-threshold", "10") == b"+OK\r\n"
    a.send(command("EVAL", "redis.call('set', 'k', 'v') " + LOOP, "0"))
    wait_busy(b)
    assert b.cmd("SCRIPT", "KILL").startswith(b"-UNKILLABLE")
    b.send(command("SHUTDOWN", "NOSAVE"))
    assert srv.wait_exit(timeout=10) == 0
