"""INFO's sections (one, several, default, all, everything), the CPU section,
COMMAND GETKEYS / GETKEYSANDFLAGS / COUNT / LIST / INFO / DOCS, ACL rules that
name Redis commands Trove lacks, MEMORY STATS / DOCTOR / MALLOC-STATS / PURGE,
ROLE, LASTSAVE and LOLWUT: Redis 7's replies.

The same expectations hold for redis-server 7.0.15 (TROVE_TEST_TARGET=redis),
except the few that follow newer Redis, which skip there with the reason.
"""

import re

import pytest
import redis

from conftest import resp_target

ON_REDIS_7_0 = resp_target() == "redis"
newer_redis = pytest.mark.skipif(ON_REDIS_7_0, reason="Redis 7.2+ behaviour; 7.0.15 differs")

DEFAULT_SECTIONS = ["Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU",
                    "Modules", "Errorstats", "Cluster", "Keyspace"]
ALL_SECTIONS = ["Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU",
                "Modules", "Commandstats", "Errorstats", "Latencystats", "Cluster", "Keyspace"]
CPU_FIELDS = ["used_cpu_sys", "used_cpu_user", "used_cpu_sys_children", "used_cpu_user_children",
              "used_cpu_sys_main_thread", "used_cpu_user_main_thread"]


def error_of(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


def info(c, *sections):
    """INFO's text through a raw RESP2 connection (redis-py would parse it)."""
    reply = c.cmd("INFO", *sections)
    assert reply.startswith(b"$"), reply
    return reply.split(b"\r\n", 1)[1][:-2].decode()


def headers(text):
    return [line[2:] for line in text.split("\r\n") if line.startswith("# ")]


def fields(text):
    return dict(line.split(":", 1) for line in text.split("\r\n") if line and line[0] != "#")


def cmd(rd, *args):
    """A command's reply as the server sent it: redis-py applies its own parsing
    to some first words (COMMAND, INFO), never to a two-word name it lacks."""
    return rd.execute_command(*args)


# ---- INFO ------------------------------------------------------------------

def test_info_default_all_everything(raw):
    c = raw()
    c.cmd("PING")  # so that commandstats has a line
    assert headers(info(c)) == DEFAULT_SECTIONS
    assert headers(info(c, "default")) == DEFAULT_SECTIONS
    assert headers(info(c, "all")) == ALL_SECTIONS
    assert headers(info(c, "everything")) == ALL_SECTIONS
    for args in ((), ("all",), ("default",), ("everything",)):
        text = info(c, *args)
        for word in ("redis_version", "used_cpu_user", "used_memory"):
            assert word in text
        assert "sentinel_tilt" not in text
        assert ("rejected_calls" in text) == (args in (("all",), ("everything",)))
        # A blank line between sections, none after the last.
        assert "\r\n\r\n# Clients\r\n" in text and not text.endswith("\r\n\r\n")


def test_info_one_or_several_sections(raw):
    c = raw()
    c.cmd("SET", "k", "v")
    cpu = info(c, "cpu")
    assert headers(cpu) == ["CPU"]
    assert list(fields(cpu)) == CPU_FIELDS
    for v in fields(cpu).values():
        assert re.fullmatch(r"\d+\.\d{6}", v), v
    stats = info(c, "commandSTATS")  # case-insensitive
    assert headers(stats) == ["Commandstats"] and "rejected_calls" in stats
    assert "used_memory" not in stats
    assert headers(info(c, "clients", "stats")) == ["Clients", "Stats"]
    assert headers(info(c, "server", "cpu")) == ["Server", "CPU"]
    # Redis's order, whatever the arguments' order; each section once.
    assert headers(info(c, "keyspace", "cpu", "server")) == ["Server", "CPU", "Keyspace"]
    assert headers(info(c, "CPU", "cpu", "Cpu")) == ["CPU"]
    # Unknown names are ignored.
    assert headers(info(c, "cpu", "sentinel")) == ["CPU"]
    assert info(c, "nosuch") == ""
    assert headers(info(c, "module_list")) == ["Modules"]
    both = info(c, "cpu", "all")
    assert headers(both) == ALL_SECTIONS and both.count("used_cpu_user_children") == 1
    assert "master_repl_offset" in both
    dflt = info(c, "cpu", "default")
    assert headers(dflt) == DEFAULT_SECTIONS and dflt.count("used_cpu_user_children") == 1
    assert "rejected_calls" not in dflt


def test_info_section_contents(raw):
    c = raw()
    c.cmd("SET", "k", "v")
    c.cmd("GET", "k")
    repl = fields(info(c, "replication"))
    assert repl["role"] == "master" and repl["connected_slaves"] == "0"
    assert repl["master_repl_offset"] == "0"
    mem = fields(info(c, "memory"))
    for k in ("used_memory", "used_memory_rss", "used_memory_dataset", "maxmemory",
              "maxmemory_policy", "mem_fragmentation_ratio", "mem_allocator"):
        assert k in mem, k
    assert int(mem["used_memory"]) > 0
    persistence = fields(info(c, "persistence"))
    assert persistence["loading"] == "0" and persistence["aof_enabled"] == "0"
    latency = info(c, "latencystats")
    assert re.search(r"\r\nlatency_percentiles_usec_get:p50=\d+\.\d{3},p99=\d+\.\d{3},"
                     r"p99\.9=\d+\.\d{3}\r\n", latency + "\r\n"), latency
    assert "db0:keys=1,expires=0,avg_ttl=0" in info(c, "keyspace")
    assert headers(info(c, "errorstats")) == ["Errorstats"]


# ---- COMMAND ---------------------------------------------------------------

@pytest.mark.parametrize("args,keys", [
    (["get", "k"], ["k"]),
    (["GET", "K"], ["K"]),
    (["mset", "a", "1", "b", "2"], ["a", "b"]),
    (["del", "a", "b", "c"], ["a", "b", "c"]),
    (["lmove", "a", "b", "left", "right"], ["a", "b"]),
    (["blpop", "a", "b", "0"], ["a", "b"]),
    (["zunionstore", "d", "2", "a", "b", "weights", "1", "2"], ["d", "a", "b"]),
    (["zinterstore", "d", "1", "a", "weights", "1"], ["d", "a"]),
    (["sintercard", "2", "a", "b", "limit", "1"], ["a", "b"]),
    (["lmpop", "2", "a", "b", "left"], ["a", "b"]),
    (["blmpop", "0", "1", "a", "left"], ["a"]),
    (["zrangestore", "d", "s", "0", "-1"], ["d", "s"]),
    (["object", "encoding", "k"], ["k"]),
    (["memory", "usage", "k"], ["k"]),
    (["watch", "a", "b"], ["a", "b"]),
])
def test_command_getkeys(rd, args, keys):
    assert cmd(rd, "COMMAND GETKEYS", *args) == keys


@pytest.mark.parametrize("args,error", [
    (["nosuch", "a"], "Invalid command specified"),
    (["client", "nosuch"], "Invalid command specified"),
    (["client|list", "x"], "Invalid command specified"),
    (["client", "list"], "The command has no key arguments"),
    (["ping", "x"], "The command has no key arguments"),
    (["spublish", "ch", "m"], "The command has no key arguments"),
    (["ssubscribe", "ch"], "The command has no key arguments"),
    (["get", "a", "b"], "Invalid number of arguments specified for command"),
    (["memory", "usage"], "Invalid number of arguments specified for command"),
    (["zunionstore", "d", "0", "a"], "Invalid arguments specified for command"),
    (["zunionstore", "d", "3", "a", "b"], "Invalid arguments specified for command"),
    (["zunionstore", "d", "x", "a"], "Invalid arguments specified for command"),
    (["lmpop", "0", "a", "left"], "Invalid arguments specified for command"),
])
def test_command_getkeys_errors(rd, args, error):
    assert error_of(rd.execute_command, "COMMAND GETKEYS", *args) == error
    assert error_of(rd.execute_command, "COMMAND GETKEYSANDFLAGS", *args) == error


def test_command_getkeys_arity(rd):
    for sub in ("GETKEYS", "GETKEYSANDFLAGS"):
        assert error_of(rd.execute_command, "COMMAND", sub) == \
            "wrong number of arguments for 'command|%s' command" % sub.lower()


@newer_redis
def test_command_getkeys_needs_only_the_command(rd):
    # COMMAND GETKEYS's arity is -3 from Redis 7.2 (-4 in 7.0, an arity error).
    assert error_of(rd.execute_command, "COMMAND GETKEYS", "ping") == \
        "The command has no key arguments"
    assert error_of(rd.execute_command, "COMMAND GETKEYSANDFLAGS", "get") == \
        "Invalid number of arguments specified for command"
    assert error_of(rd.execute_command, "COMMAND GETKEYS", "nosuch") == "Invalid command specified"


@pytest.mark.parametrize("args,expected", [
    (["get", "k"], [("k", {"RO", "access"})]),
    (["exists", "k"], [("k", {"RO"})]),
    (["set", "k", "v"], [("k", {"OW", "update"})]),
    (["set", "k", "v", "get"], [("k", {"RW", "access", "update"})]),
    (["setnx", "k", "v"], [("k", {"OW", "insert"})]),
    (["incr", "k"], [("k", {"RW", "access", "update"})]),
    (["lpush", "k", "v"], [("k", {"RW", "insert"})]),
    (["hdel", "k", "f"], [("k", {"RW", "delete"})]),
    (["hset", "k", "f", "v"], [("k", {"RW", "update"})]),
    (["del", "a", "b"], [("a", {"RM", "delete"}), ("b", {"RM", "delete"})]),
    (["mset", "a", "1", "b", "2"], [("a", {"OW", "update"}), ("b", {"OW", "update"})]),
    (["lmove", "a", "b", "left", "right"],
     [("a", {"RW", "access", "delete"}), ("b", {"RW", "insert"})]),
    (["rename", "a", "b"], [("a", {"RW", "access", "delete"}), ("b", {"OW", "update"})]),
    (["copy", "a", "b"], [("a", {"RO", "access"}), ("b", {"OW", "update"})]),
    (["zunionstore", "d", "2", "a", "b"],
     [("d", {"OW", "update"}), ("a", {"RO", "access"}), ("b", {"RO", "access"})]),
    (["sinterstore", "d", "a", "b"],
     [("d", {"RW", "update"}), ("a", {"RO", "access"}), ("b", {"RO", "access"})]),
    (["blpop", "a", "0"], [("a", {"RW", "access", "delete"})]),
    (["object", "encoding", "k"], [("k", {"RO"})]),
    (["memory", "usage", "k"], [("k", {"RO"})]),
])
def test_command_getkeysandflags(rd, args, expected):
    got = cmd(rd, "COMMAND GETKEYSANDFLAGS", *args)
    assert [(k, set(f)) for k, f in got] == expected


def test_command_count_list_info_docs_agree(rd):
    count = rd.execute_command("COMMAND COUNT")
    names = cmd(rd, "COMMAND LIST")
    top = [n for n in names if "|" not in n]
    assert len(top) == count == len(set(top))
    assert len(rd.command()) == count  # COMMAND: one entry per command
    assert len(cmd(rd, "COMMAND INFO")) == count
    assert len(cmd(rd, "COMMAND DOCS")) == 2 * count  # a map, flat in RESP2
    for n in ("get", "role", "lastsave", "lolwut", "memory", "memory|stats", "memory|doctor",
              "memory|malloc-stats", "memory|purge", "memory|usage", "client|list",
              "command|getkeysandflags", "config|get"):
        assert n in names, n
    # Every name listed is a command COMMAND INFO describes, subcommands
    # within their container's entry.
    infos = cmd(rd, "COMMAND INFO", *names)
    assert [i[0] for i in infos] == names
    by_name = dict(zip(names, infos))
    for n in names:
        if "|" in n:
            parent = n.split("|")[0]
            assert n in [sub[0] for sub in by_name[parent][9]], n
    assert cmd(rd, "COMMAND INFO", "nosuchcmd", "get")[0] is None


def test_command_info_entries(rd):
    role, lastsave, lolwut, sub = cmd(rd, "COMMAND INFO", "role", "lastsave", "lolwut",
                                      "client|list")
    assert role[:2] == ["role", 1] and set(role[6]) == {"@admin", "@fast", "@dangerous"}
    assert lastsave[:2] == ["lastsave", 1]
    assert set(lastsave[6]) == {"@admin", "@fast", "@dangerous"}
    assert lolwut[:2] == ["lolwut", -1] and set(lolwut[6]) == {"@read", "@fast"}
    assert sub[:2] == ["client|list", -2] and "@admin" in sub[6]
    memory = cmd(rd, "COMMAND INFO", "memory")[0]
    usage = [s for s in memory[9] if s[0] == "memory|usage"][0]
    assert usage[1] == -3 and usage[3:6] == [2, 2, 1]
    docs = cmd(rd, "COMMAND DOCS", "get", "nosuchcmd")
    assert docs[0] == "get" and dict(zip(docs[1][::2], docs[1][1::2]))["group"] == "string"
    assert len(docs) == 2
    # Redis prints the sorted-set group with a hyphen for every member of it,
    # the blocking pops included.
    for name in ("zadd", "bzpopmin", "bzmpop"):
        d = cmd(rd, "COMMAND DOCS", name)
        assert dict(zip(d[1][::2], d[1][1::2]))["group"] == "sorted-set", name


def test_command_list_filters_and_help(rd):
    clients = cmd(rd, "COMMAND LIST", "FILTERBY", "PATTERN", "CLIENT*")
    assert "client" in clients and "client|list" in clients
    assert all(n.startswith("client") for n in clients)
    hashes = cmd(rd, "COMMAND LIST", "FILTERBY", "ACLCAT", "hash")
    assert "hset" in hashes and "get" not in hashes
    assert "client|kill" in cmd(rd, "COMMAND LIST", "FILTERBY", "ACLCAT", "DANGEROUS")
    assert cmd(rd, "COMMAND LIST", "FILTERBY", "ACLCAT", "nosuch") == []
    assert cmd(rd, "COMMAND LIST", "FILTERBY", "MODULE", "nosuch") == []
    for bad in (["FILTERBY", "foo", "bar"], ["FILTERBY", "PATTERN"], ["x"]):
        assert error_of(rd.execute_command, "COMMAND LIST", *bad) == "syntax error"
    help_lines = cmd(rd, "COMMAND HELP")
    assert help_lines[0].startswith("COMMAND <subcommand>")
    assert "GETKEYSANDFLAGS <full-command>" in help_lines
    assert error_of(rd.execute_command, "COMMAND COUNT", "x") == \
        "wrong number of arguments for 'command|count' command"
    assert error_of(rd.execute_command, "COMMAND", "nosuch") == \
        "unknown subcommand 'nosuch'. Try COMMAND HELP."


# ---- ACL rules naming Redis's commands ----------------------------------------

def acl_commands(rd, user):
    u = cmd(rd, "ACL", "GETUSER", user)
    return dict(zip(u[::2], u[1::2]))["commands"]


@pytest.mark.parametrize("rules,described", [
    (["+cluster"], "-@all +cluster"),
    (["+CLUSTER"], "-@all +cluster"),
    (["+@all", "-cluster"], "+@all -cluster"),
    (["+cluster|info"], "-@all +cluster|info"),
    (["+@all", "-cluster|info"], "+@all -cluster|info"),
    (["+geoadd|foo"], "-@all +geoadd|foo"),
    (["+@all", "-geoadd"], "+@all -geoadd"),
    (["+@scripting"], "-@all +@scripting"),
    (["+eval"], "-@all +eval"),
    (["+script|load"], "-@all +script|load"),
    (["+@all", "-@geo"], "+@all -@geo"),
    (["+@all", "-xadd"], "+@all -xadd"),
])
def test_acl_rules_name_commands_trove_lacks(rd, rules, described):
    try:
        assert cmd(rd, "ACL", "SETUSER", "lacks", "reset", *rules) == "OK"
        assert acl_commands(rd, "lacks") == described
    finally:
        rd.execute_command("ACL", "DELUSER", "lacks")


@pytest.mark.parametrize("rule,error", [
    ("+bogus", "Unknown command or category name in ACL"),
    ("-bogus", "Unknown command or category name in ACL"),
    ("+@bogus", "Unknown command or category name in ACL"),
    ("+cluster|bogus", "Unknown command or category name in ACL"),
    ("-cluster|bogus", "Unknown command or category name in ACL"),
    ("-geoadd|foo", "Unknown command or category name in ACL"),
    ("+cluster|", "Syntax error"),
    ("+geoadd|", "Syntax error"),
    ("+cluster|info|x", "Allowing first-arg of a subcommand is not supported"),
])
def test_acl_rules_redis_refuses(rd, rule, error):
    try:
        assert error_of(rd.execute_command, "ACL", "SETUSER", "lacks", rule) == \
            "Error in ACL SETUSER modifier '%s': %s" % (rule, error)
    finally:
        rd.execute_command("ACL", "DELUSER", "lacks")


@newer_redis
def test_acl_rules_kept_in_order(rd):
    # Redis 7.2+ keeps every rule as given; 7.0 rebuilt the list from its
    # bitmaps (dropping "-@geo" after -@all, reordering the rest).
    try:
        cmd(rd, "ACL", "SETUSER", "lacks", "reset", "-@geo")
        assert acl_commands(rd, "lacks") == "-@all -@geo"
        cmd(rd, "ACL", "SETUSER", "lacks", "reset", "+@all", "-cluster", "-geoadd")
        assert acl_commands(rd, "lacks") == "+@all -cluster -geoadd"
    finally:
        rd.execute_command("ACL", "DELUSER", "lacks")


def test_acl_cat_lists_redis_categories(rd):
    assert cmd(rd, "ACL", "CAT") == [
        "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
        "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking",
        "dangerous", "connection", "transaction", "scripting"]


# ---- MEMORY, ROLE, LASTSAVE, LOLWUT ----------------------------------------

MEMORY_STATS_FIELDS = [
    "peak.allocated", "total.allocated", "startup.allocated", "replication.backlog",
    "clients.slaves", "clients.normal", "cluster.links", "aof.buffer", "lua.caches",
    "functions.caches", "overhead.total", "keys.count", "keys.bytes-per-key", "dataset.bytes",
    "dataset.percentage", "peak.percentage", "allocator.allocated", "allocator.active",
    "allocator.resident", "allocator-fragmentation.ratio", "allocator-fragmentation.bytes",
    "allocator-rss.ratio", "allocator-rss.bytes", "rss-overhead.ratio", "rss-overhead.bytes",
    "fragmentation", "fragmentation.bytes"]


def test_memory_stats(rd):
    rd.mset({"a": "1", "b": "2", "c": "x" * 100})
    flat = cmd(rd, "MEMORY", "STATS")
    stats = dict(zip(flat[::2], flat[1::2]))
    names = [n for n in flat[::2] if not n.startswith("db.")]
    assert [n for n in names if n in MEMORY_STATS_FIELDS] == MEMORY_STATS_FIELDS
    assert stats["keys.count"] == 3
    assert 0 < stats["total.allocated"] <= stats["peak.allocated"]
    assert stats["dataset.bytes"] > 0 and stats["replication.backlog"] == 0
    assert float(stats["peak.percentage"]) <= 100
    assert error_of(rd.execute_command, "MEMORY", "STATS", "x") == \
        "wrong number of arguments for 'memory|stats' command"


def test_memory_doctor_malloc_stats_purge_help(rd):
    assert cmd(rd, "MEMORY", "DOCTOR").startswith("Hi Sam")
    assert len(cmd(rd, "MEMORY", "MALLOC-STATS")) > 0
    assert cmd(rd, "MEMORY", "PURGE") == "OK"
    help_lines = cmd(rd, "MEMORY", "HELP")
    assert help_lines[0].startswith("MEMORY <subcommand>")
    for sub in ("DOCTOR", "MALLOC-STATS", "PURGE", "STATS", "USAGE <key> [SAMPLES <count>]"):
        assert sub in help_lines
    for sub in ("doctor", "malloc-stats", "purge"):
        assert error_of(rd.execute_command, "MEMORY", sub, "x") == \
            "wrong number of arguments for 'memory|%s' command" % sub
    assert error_of(rd.execute_command, "MEMORY", "nosuch") == \
        "unknown subcommand 'nosuch'. Try MEMORY HELP."


def test_role_and_lastsave(rd, raw):
    assert cmd(rd, "ROLE") == ["master", 0, []]
    c = raw()
    assert c.cmd("ROLE") == b"*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"
    lastsave = int(c.cmd("LASTSAVE")[1:-2])
    now = int(cmd(rd, "TIME")[0])
    uptime = int(fields(info(c, "server"))["uptime_in_seconds"])
    assert abs(lastsave - (now - uptime)) <= 2
    assert error_of(rd.execute_command, "ROLE", "x") == \
        "wrong number of arguments for 'role' command"
    assert error_of(rd.execute_command, "LASTSAVE", "x") == \
        "wrong number of arguments for 'lastsave' command"


def test_lolwut(rd, raw):
    version = fields(info(raw(), "server"))["redis_version"]
    line = "Redis ver. %s\n" % version
    assert cmd(rd, "LOLWUT") == line
    assert cmd(rd, "LOLWUT", "nosuch", "args") == line
    assert cmd(rd, "LOLWUT", "VERSION") == line
    art = cmd(rd, "LOLWUT", "VERSION", "5", "10", "2", "2")
    assert art.endswith("\n\nGeorg Nees - schotter, plotter on paper, 1968. " + line)
    rows = art.split("\n\n")[0].split("\n")
    assert rows and all(len(r) == 10 and all("\u2800" <= ch <= "\u28ff" for ch in r)
                        for r in rows)
    assert cmd(rd, "LOLWUT", "VERSION", "5").endswith(line)
    for bad in (["VERSION", "x"], ["VERSION", "5", "x"]):
        assert error_of(rd.execute_command, "LOLWUT", *bad) == \
            "value is not an integer or out of range"
    c = raw()
    c.cmd("HELLO", "3")
    assert c.cmd("LOLWUT") == b"=%d\r\ntxt:%s\r\n" % (len(line) + 4, line.encode())
