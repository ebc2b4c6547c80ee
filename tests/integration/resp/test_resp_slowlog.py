"""SLOWLOG, LATENCY and their CONFIG parameters (Redis 7's replies).

Runs against Trove and, with TROVE_TEST_TARGET=redis, redis-server 7.0.15.
The module server is shared, so every test starts from Redis's defaults.
"""

import time

import pytest
import redis

DEFAULTS = {
    "slowlog-log-slower-than": "10000",
    "slowlog-max-len": "128",
    "latency-monitor-threshold": "0",
    "latency-tracking": "yes",
}

# Redis's histogram_usec bounds: HdrHistogram levels 1024 * 2^k ns.
BOUNDS = [1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056, 2113, 4227, 8454, 16908, 33816, 67633,
          135266, 270532, 541065, 1073741]


def err(fn, *a):
    with pytest.raises(redis.ResponseError) as e:
        fn(*a)
    return str(e.value)


@pytest.fixture
def s(r):
    """r, with the slow log and latency settings at their defaults, both logs empty."""
    for k, v in DEFAULTS.items():
        r.config_set(k, v)
    r.execute_command("SLOWLOG", "RESET")
    r.execute_command("LATENCY", "RESET")
    yield r
    for k, v in DEFAULTS.items():
        r.config_set(k, v)


def decode(raw):
    """One raw RESP2/RESP3 reply -> Python values (maps as dicts)."""
    def one(b, i):
        j = b.index(b"\r\n", i)
        t, line, i = b[i:i + 1], b[i + 1:j], j + 2
        if t in b"+":
            return line, i
        if t == b"-":
            return redis.ResponseError(line.decode()), i
        if t == b":":
            return int(line), i
        if t in b"$=":
            n = int(line)
            if n < 0:
                return None, i
            return b[i:i + n], i + n + 2
        if t in b"*~>%":
            n = int(line)
            if n < 0:
                return None, i
            out = []
            for _ in range(n * (2 if t == b"%" else 1)):
                v, i = one(b, i)
                out.append(v)
            if t == b"%":
                return dict(zip(out[::2], out[1::2])), i
            return out, i
        if t == b"_":
            return None, i
        raise AssertionError("bad reply %r" % b[i - 1:])
    v, end = one(raw, 0)
    assert end == len(raw)
    return v


def entries(r, *count):
    return r.execute_command("SLOWLOG", "GET", *count)


# --- SLOWLOG ---


def test_starts_empty_with_defaults(s):
    assert s.config_get("slowlog-*") == {"slowlog-log-slower-than": "10000",
                                          "slowlog-max-len": "128"}
    assert s.config_get("latency-monitor-threshold") == {"latency-monitor-threshold": "0"}
    assert s.execute_command("SLOWLOG", "LEN") == 0
    assert entries(s) == []


def test_entry_format(s, raw):
    c = raw()
    assert c.cmd("CLIENT", "SETNAME", "slowpoke") == b"+OK\r\n"
    assert c.cmd("CONFIG", "SET", "slowlog-log-slower-than", "0") == b"+OK\r\n"
    assert c.cmd("SET", "sk", "sv") == b"+OK\r\n"
    e = decode(c.cmd("SLOWLOG", "GET", "2"))
    assert len(e) == 2 and len(e[0]) == 6
    eid, when, usec, argv, addr, name = e[0]
    assert isinstance(eid, int) and eid >= 1
    assert abs(when - s.time()[0]) <= 2
    assert 0 <= usec < 1000000
    assert argv == [b"SET", b"sk", b"sv"]
    ip, port = c.sock.getsockname()
    assert addr == ("%s:%d" % (ip, port)).encode()
    assert name == b"slowpoke"
    # The entry before it is the CONFIG SET (logged once it ended), one id lower.
    prev = e[1]
    assert prev[0] == eid - 1 and prev[3] == [b"CONFIG", b"SET", b"slowlog-log-slower-than", b"0"]
    assert prev[5] == b"slowpoke"
    # redis-py's parser accepts it too.
    got = s.slowlog_get(1)[0]
    assert got["command"] == b"TIME"  # s.time() above


def test_unnamed_client_logs_empty_name(s):
    s.config_set("slowlog-log-slower-than", 0)
    s.ping()
    assert entries(s, 1)[0][5] == b""


def test_debug_sleep_makes_a_slow_entry(s):
    s.config_set("slowlog-log-slower-than", 10000)
    s.ping()
    s.execute_command("DEBUG", "SLEEP", "0.02")
    s.ping()
    e = entries(s)
    assert [x[3] for x in e] == [[b"DEBUG", b"SLEEP", b"0.02"]]
    assert e[0][2] >= 20000


def test_only_commands_slower_than_the_threshold(s):
    s.config_set("slowlog-log-slower-than", 50000)
    s.execute_command("DEBUG", "SLEEP", "0.02")
    assert s.execute_command("SLOWLOG", "LEN") == 0


def test_disabled_with_minus_one(s):
    s.config_set("slowlog-log-slower-than", -1)
    s.execute_command("DEBUG", "SLEEP", "0.02")
    s.ping()
    assert s.execute_command("SLOWLOG", "LEN") == 0
    s.config_set("slowlog-log-slower-than", 0)
    s.ping()
    assert s.execute_command("SLOWLOG", "LEN") == 2  # the CONFIG SET and the PING


def test_too_many_arguments_are_trimmed(s):
    s.config_set("slowlog-log-slower-than", 0)
    s.sadd("set", *range(3, 36))
    argv = entries(s, 1)[0][3]
    assert len(argv) == 32
    assert argv[:3] == [b"SADD", b"set", b"3"]
    assert argv[30] == b"31"
    assert argv[31] == b"... (4 more arguments)"


def test_too_long_arguments_are_trimmed(s):
    s.config_set("slowlog-log-slower-than", 0)
    s.set("k", "A" * 129)
    s.set("k", "B" * 128)
    e = entries(s, 2)
    assert e[0][3] == [b"SET", b"k", b"B" * 128]
    assert e[1][3] == [b"SET", b"k", b"A" * 128 + b"... (1 more bytes)"]


def test_get_count(s):
    s.config_set("slowlog-log-slower-than", 0)
    for _ in range(15):
        s.ping()
    assert len(entries(s)) == 10
    assert len(entries(s, 5)) == 5
    assert entries(s, 0) == []
    n = s.execute_command("SLOWLOG", "LEN")
    assert n == 16 + 3  # CONFIG SET, 15 PINGs, three SLOWLOG GETs
    assert len(entries(s, -1)) == n + 1  # and the LEN
    ids = [e[0] for e in entries(s, -1)]
    assert ids == sorted(ids, reverse=True)
    assert err(entries, s, -2) == "count should be greater than or equal to -1"
    assert err(entries, s, "x") == "count should be greater than or equal to -1"


def test_reset(s):
    s.config_set("slowlog-log-slower-than", 0)
    s.ping()
    assert s.execute_command("SLOWLOG", "RESET") == b"OK"
    assert s.execute_command("SLOWLOG", "LEN") == 1  # the RESET itself
    s.config_set("slowlog-log-slower-than", -1)
    s.execute_command("SLOWLOG", "RESET")
    assert s.execute_command("SLOWLOG", "LEN") == 0


def test_max_len(s):
    s.config_set("slowlog-log-slower-than", 0)
    s.config_set("slowlog-max-len", 10)
    for _ in range(30):
        s.ping()
    assert s.execute_command("SLOWLOG", "LEN") == 10
    s.config_set("slowlog-max-len", 3)
    assert s.execute_command("SLOWLOG", "LEN") == 3
    s.execute_command("SLOWLOG", "RESET")
    s.config_set("slowlog-max-len", 0)
    for _ in range(5):
        s.ping()
    assert s.execute_command("SLOWLOG", "LEN") == 0


def test_exec_is_not_logged_its_commands_are(s):
    s.config_set("slowlog-log-slower-than", 0)
    p = s.pipeline(transaction=True)
    p.ping()
    p.set("x", "1")
    p.execute()
    s.config_set("slowlog-log-slower-than", -1)
    cmds = [e[3][0].lower() for e in entries(s, -1)]
    assert b"exec" not in cmds
    assert cmds[:3] == [b"set", b"ping", b"multi"]


def test_secrets_are_redacted(s):
    s.config_set("slowlog-log-slower-than", 0)
    s.config_set("requirepass", "")
    err(s.execute_command, "AUTH", "nosuchpass")
    err(s.execute_command, "AUTH", "user", "pw")
    s.config_set("slowlog-log-slower-than", -1)
    e = [x[3] for x in entries(s, 3)]
    assert e == [[b"AUTH", b"(redacted)", b"(redacted)"], [b"AUTH", b"(redacted)"],
                 [b"CONFIG", b"SET", b"requirepass", b"(redacted)"]]


def test_subcommand_errors(s):
    assert err(s.execute_command, "SLOWLOG", "GET", "1", "2") == (
        "unknown subcommand or wrong number of arguments for 'GET'. Try SLOWLOG HELP.")
    assert err(s.execute_command, "SLOWLOG", "LEN", "x") == (
        "wrong number of arguments for 'slowlog|len' command")
    assert err(s.execute_command, "SLOWLOG", "nope") == (
        "unknown subcommand 'nope'. Try SLOWLOG HELP.")
    help_ = s.execute_command("SLOWLOG", "HELP")
    assert help_[0] == b"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert help_[-2:] == [b"HELP", b"    Prints this help."]
    assert len(help_) == 12


# --- LATENCY ---


def test_latency_latest_and_history_after_debug_sleep(s):
    s.config_set("latency-monitor-threshold", 5)
    s.ping()
    s.execute_command("DEBUG", "SLEEP", "0.02")
    s.execute_command("DEBUG", "SLEEP", "0.03")  # same second: one sample, the worst
    latest = s.execute_command("LATENCY", "LATEST")
    assert len(latest) == 1
    event, when, ms, worst = latest[0]
    assert event == b"command"
    assert abs(when - s.time()[0]) <= 2
    assert 20 <= ms <= worst and worst >= 30
    hist = s.execute_command("LATENCY", "HISTORY", "command")
    assert 1 <= len(hist) <= 2
    assert all(len(x) == 2 and x[1] >= 20 for x in hist)
    assert hist[-1] == [when, ms]
    assert s.execute_command("LATENCY", "HISTORY", "fast-command") == []
    graph = s.execute_command("LATENCY", "GRAPH", "command").decode()
    lines = graph.split("\n")
    assert lines[0].startswith("command - high ") and lines[0].endswith(" ms)")
    assert lines[1] == "-" * 80
    assert s.execute_command("LATENCY", "RESET", "nosuch", "command") == 1
    assert s.execute_command("LATENCY", "LATEST") == []


def test_latency_below_threshold_or_disabled_records_nothing(s):
    s.config_set("latency-monitor-threshold", 200)
    s.execute_command("DEBUG", "SLEEP", "0.02")
    s.config_set("latency-monitor-threshold", 0)
    s.execute_command("DEBUG", "SLEEP", "0.02")
    assert s.execute_command("LATENCY", "LATEST") == []
    assert s.execute_command("LATENCY", "RESET") == 0


def test_latency_wrong_event_is_fine(s):
    assert s.execute_command("LATENCY", "HISTORY", "blabla") == []
    assert s.execute_command("LATENCY", "RESET", "blabla") == 0
    assert err(s.execute_command, "LATENCY", "GRAPH", "blabla") == (
        "No samples available for event 'blabla'")


def test_latency_doctor(s):
    report = s.execute_command("LATENCY", "DOCTOR").decode()
    assert report.startswith("I'm sorry, Dave, I can't do that.")
    s.config_set("latency-monitor-threshold", 5)
    assert s.execute_command("LATENCY", "DOCTOR").decode().startswith(
        "Dave, no latency spike was observed")
    s.execute_command("DEBUG", "SLEEP", "0.02")
    report = s.execute_command("LATENCY", "DOCTOR").decode()
    assert report.startswith("Dave, I have observed latency spikes in this Redis instance.")
    assert "1. command: 1 latency spikes" in report
    assert "'CONFIG SET slowlog-log-slower-than 5000'" in report


def test_latency_help_and_errors(s):
    assert err(s.execute_command, "LATENCY", "HELP", "xxx") == (
        "wrong number of arguments for 'latency|help' command")
    assert err(s.execute_command, "LATENCY", "nope") == (
        "unknown subcommand 'nope'. Try LATENCY HELP.")
    help_ = s.execute_command("LATENCY", "HELP")
    assert help_[0] == b"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert b"HISTOGRAM [COMMAND ...]" in help_ and len(help_) == 17


def test_latency_histogram_after_resetstat(s):
    s.config_resetstat()
    h = s.execute_command("LATENCY", "HISTOGRAM")
    assert h[0] == b"config|resetstat" and len(h) == 2
    assert h[1][:3] == [b"calls", 1, b"histogram_usec"]


def test_latency_histogram_shape_resp3(s, raw):
    s.config_resetstat()
    c = raw()
    assert c.cmd("HELLO", "3").startswith(b"%")
    for _ in range(3):
        assert c.cmd("SET", "hk", "v") == b"+OK\r\n"
    c.cmd("CLIENT", "ID")
    c.cmd("CLIENT", "GETNAME")
    c.cmd("DEBUG", "SLEEP", "0.02")
    h = decode(c.cmd("LATENCY", "HISTOGRAM", "set", "client", "nosuchcmd", "debug"))
    assert set(h) == {b"set", b"client|id", b"client|getname", b"debug"}
    for name, calls in ((b"set", 3), (b"client|id", 1), (b"debug", 1)):
        v = h[name]
        assert set(v) == {b"calls", b"histogram_usec"}
        assert v[b"calls"] == calls
        buckets = v[b"histogram_usec"]
        assert set(buckets) <= set(BOUNDS)
        counts = [buckets[k] for k in sorted(buckets)]
        assert counts == sorted(counts) and counts[-1] == calls  # cumulative
    assert min(h[b"debug"][b"histogram_usec"]) >= 33816  # 20 ms and more
    one = decode(c.cmd("LATENCY", "HISTOGRAM", "CLIENT|ID"))
    assert list(one) == [b"client|id"]
    assert decode(c.cmd("LATENCY", "HISTOGRAM", "nosuchcmd", "get")) == {}


def test_latency_tracking_off_stops_the_histogram(s):
    s.config_resetstat()
    s.config_set("latency-tracking", "no")
    s.set("a", "1")
    h = s.execute_command("LATENCY", "HISTOGRAM", "set", "config")
    # Neither the SET nor the CONFIG SET that turned tracking off is recorded.
    assert h[0] == b"config|resetstat" and len(h) == 2 and h[1][1] == 1
    s.config_set("latency-tracking", "yes")


def test_config_round_trip_and_ranges(s):
    for k, v in (("slowlog-log-slower-than", "1234"), ("slowlog-max-len", "7"),
                 ("latency-monitor-threshold", "9"), ("latency-tracking", "no")):
        assert s.config_set(k, v)
        got = s.config_get(k)[k]
        assert got == v
        assert s.config_set(k, got)
    assert "argument must be between -1 and 9223372036854775807 inclusive" in err(
        s.config_set, "slowlog-log-slower-than", -2)
    assert "argument must be between 0 and 9223372036854775807 inclusive" in err(
        s.config_set, "slowlog-max-len", -1)
    assert "argument must be between 0 and 9223372036854775807 inclusive" in err(
        s.config_set, "latency-monitor-threshold", -1)
    assert "argument couldn't be parsed into an integer" in err(
        s.config_set, "slowlog-max-len", "x")


def test_timestamps_follow_wall_clock(s):
    s.config_set("slowlog-log-slower-than", 0)
    before = int(time.time())
    s.ping()
    assert entries(s, 1)[0][1] >= before - 1


# ---- memcached-port commands (a Trove addition: no peer logs them) ----------

def _mc(trove, data):
    from harness.client import Conn
    c = Conn.to(trove)
    c.send(data)
    return c


def test_memcache_commands_enter_the_slowlog(s, trove):
    s.config_set("slowlog-log-slower-than", "0")
    c = _mc(trove, "set mcslow 0 0 2\r\nhi\r\nget mcslow other\r\n")
    assert c.read_until(b"END\r\n").startswith(b"STORED\r\nVALUE mcslow 0 2\r\nhi\r\n")
    entries = s.execute_command("SLOWLOG", "GET", "-1")
    mine = [e for e in entries if e[5] == b"memcache"]
    argvs = [e[3] for e in mine]
    assert [b"get", b"mcslow", b"other"] in argvs, entries
    assert [b"set", b"mcslow", b"0", b"0", b"2"] in argvs, entries
    e = next(e for e in mine if e[3][0] == b"get")
    assert isinstance(e[2], int) and e[2] >= 0
    assert e[4].startswith(b"127.0.0.1:")


def test_memcache_commands_respect_the_slowlog_threshold(s, trove):
    s.config_set("slowlog-log-slower-than", "10000000")
    c = _mc(trove, "get mcfast\r\n")
    assert c.read_until(b"END\r\n") == b"END\r\n"
    assert not [e for e in s.execute_command("SLOWLOG", "GET", "-1") if e[5] == b"memcache"]


def test_memcache_commands_in_latency_histogram(s, trove):
    s.execute_command("CONFIG", "RESETSTAT")
    c = _mc(trove, "get h1\r\nget h2\r\nset h3 0 0 1\r\nx\r\nmn\r\n")
    c.read_until(b"MN\r\n")
    h = s.execute_command("LATENCY", "HISTOGRAM", "memcache")
    flat = dict(zip(h[::2], h[1::2])) if isinstance(h, list) else h
    names = {k.decode() if isinstance(k, bytes) else k for k in flat}
    assert {"memcache|get", "memcache|set", "memcache|mn"} <= names, flat
    get = flat[b"memcache|get"] if b"memcache|get" in flat else flat["memcache|get"]
    info = dict(zip(get[::2], get[1::2])) if isinstance(get, list) else get
    assert info[b"calls"] == 2
    one = s.execute_command("LATENCY", "HISTOGRAM", "memcache|set")
    assert len(one) == 2 and one[0] == b"memcache|set"


def test_memcache_commands_untimed_when_both_logs_are_off(s, trove):
    s.config_set("latency-tracking", "no")
    s.config_set("slowlog-log-slower-than", "-1")
    s.execute_command("CONFIG", "RESETSTAT")
    c = _mc(trove, "get off1\r\n")
    assert c.read_until(b"END\r\n") == b"END\r\n"
    s.config_set("latency-tracking", "yes")
    h = s.execute_command("LATENCY", "HISTOGRAM", "memcache")
    assert not h, h
