"""stats and its sub-commands, lru_crawler, slabs. Each test that checks
counter movement runs on its own server so no other test moves them."""

import os
import re
import time

import pytest

from harness import server as hserver
from harness.client import Conn, wait_for


def b(s):
    return s.encode("latin1") if isinstance(s, str) else s


@pytest.fixture
def fresh(make_server):
    srv = make_server()
    c = Conn.to(srv)
    yield srv, c
    c.close()


GENERAL_STATS = [
    "pid", "uptime", "time", "version", "pointer_size", "rusage_user", "rusage_system",
    "max_connections", "curr_connections", "total_connections", "rejected_connections",
    "connection_structures", "cmd_get", "cmd_set", "cmd_flush", "cmd_touch",
    "get_hits", "get_misses", "get_expired", "get_flushed", "delete_misses", "delete_hits",
    "incr_misses", "incr_hits", "decr_misses", "decr_hits", "cas_misses", "cas_hits",
    "cas_badval", "touch_hits", "touch_misses", "threads", "conn_yields",
    "bytes_read", "bytes_written", "limit_maxbytes", "curr_items", "total_items",
    "bytes", "evictions", "reclaimed", "expired_unfetched", "evicted_unfetched",
    "hash_power_level", "hash_bytes", "accepting_conns", "listen_disabled_num",
    "time_in_listen_disabled_us", "auth_cmds", "auth_errors",
]


def test_general_stats_names_and_types(fresh):
    srv, c = fresh
    st = c.stats()
    missing = [n for n in GENERAL_STATS if n not in st]
    assert not missing, missing
    assert int(st["pid"]) == srv.pid()
    assert abs(int(st["time"]) - time.time()) < 5
    assert int(st["uptime"]) < 60
    assert st["version"] == c.rt(b"version\r\n").split()[1].decode()
    assert re.fullmatch(r"\d+\.\d{6}", st["rusage_user"]), st["rusage_user"]
    assert st["pointer_size"] == "64"
    assert st["threads"] == "4"
    assert st["limit_maxbytes"] == str(64 * 1024 * 1024)
    assert st["max_connections"] == "1024"
    assert st["curr_items"] == "0"
    for name, value in st.items():
        assert value != "", name


def test_counters_move(fresh):
    srv, c = fresh
    before = c.stats()
    c.set("a", "1")
    c.set("b", "22")
    c.get("a")
    c.get("missing")
    c.send(b"get a b missing2\r\n")
    c.read_value_reply()
    assert c.rt(b"delete b\r\ndelete nob\r\n") == b"DELETED\r\nNOT_FOUND\r\n"
    assert c.rt(b"incr a 1\r\nincr noa 1\r\ndecr a 1\r\ndecr noa 1\r\n") == \
        b"2\r\nNOT_FOUND\r\n1\r\nNOT_FOUND\r\n"
    assert c.rt(b"touch a 0\r\ntouch noa 0\r\n") == b"TOUCHED\r\nNOT_FOUND\r\n"
    _, cas = c.gets("a")
    assert c.rt(b"cas a 0 0 1 %d\r\n5\r\ncas a 0 0 1 %d\r\n6\r\ncas noa 0 0 1 1\r\n7\r\n" % (cas, cas)) == \
        b"STORED\r\nEXISTS\r\nNOT_FOUND\r\n"
    after = c.stats()

    def d(name):
        return int(after[name]) - int(before[name])
    assert d("cmd_get") == 1 + 1 + 3 + 1   # get a, get missing, 3 keys, gets a
    assert d("get_hits") == 1 + 2 + 1
    assert d("get_misses") == 1 + 1
    assert d("cmd_set") == 2 + 3
    assert d("delete_hits") == 1 and d("delete_misses") == 1
    assert d("incr_hits") == 1 and d("incr_misses") == 1
    assert d("decr_hits") == 1 and d("decr_misses") == 1
    assert d("touch_hits") == 1 and d("touch_misses") == 1
    assert d("cmd_touch") == 2
    assert d("cas_hits") == 1 and d("cas_badval") == 1 and d("cas_misses") == 1
    assert after["curr_items"] == "1"
    assert int(after["total_items"]) >= 3
    assert int(after["bytes"]) > 0
    assert d("bytes_read") > 0 and d("bytes_written") > 0


def test_gat_and_meta_counters(fresh):
    srv, c = fresh
    c.set("a", "1")

    def delta(cmd):
        before = c.stats()
        c.rt(cmd)
        after = c.stats()
        names = ("cmd_get", "get_hits", "get_misses", "cmd_touch", "touch_hits", "touch_misses",
                 "cmd_set", "delete_hits", "delete_misses", "incr_hits", "incr_misses")
        return {n: int(after[n]) - int(before[n]) for n in names if after[n] != before[n]}
    # gat/gats count as touches, not as gets.
    assert delta(b"gat 10 a b\r\n") == {"cmd_touch": 2, "touch_hits": 1, "touch_misses": 1}
    assert delta(b"gats 10 a\r\n") == {"cmd_touch": 1, "touch_hits": 1}
    # Meta commands count like their text counterparts.
    assert delta(b"mg a v\r\n") == {"cmd_get": 1, "get_hits": 1}
    assert delta(b"mg b v\r\n") == {"cmd_get": 1, "get_misses": 1}
    assert delta(b"ms a 1\r\n2\r\n") == {"cmd_set": 1}
    assert delta(b"md zz\r\n") == {"delete_misses": 1}
    assert delta(b"ma zz\r\n") == {"incr_misses": 1}
    assert delta(b"ma a\r\n") == {"incr_hits": 1}
    assert delta(b"md a\r\n") == {"delete_hits": 1}


def test_curr_items_and_bytes(fresh):
    srv, c = fresh
    for i in range(10):
        c.set("k%d" % i, "v" * 100)
    st = c.stats()
    assert st["curr_items"] == "10"
    assert int(st["bytes"]) >= 10 * 100
    c.rt(b"delete k0\r\n")
    assert c.stat("curr_items") == "9"
    c.flush()
    assert c.get("k1") is None


def _conns(c):
    """stats conns as {id: {field: value}}."""
    out = {}
    for line in c.rt(b"stats conns\r\n").split(b"\r\n"):
        m = re.match(rb"STAT (\d+):(\w+) (.*)", line)
        if m:
            out.setdefault(m.group(1), {})[m.group(2).decode()] = m.group(3).decode()
    return out


def test_stats_conns_lists_each_client(fresh):
    srv, c = fresh
    idle = Conn.to(srv)
    idle.rt(b"")
    idle_addr = "tcp:127.0.0.1:%d" % idle.sock.getsockname()[1]
    own_addr = "tcp:127.0.0.1:%d" % c.sock.getsockname()[1]
    conns = _conns(c)
    by_addr = {f.get("addr"): f for f in conns.values()}
    assert idle_addr in by_addr and own_addr in by_addr, conns
    for addr in (idle_addr, own_addr):
        f = by_addr[addr]
        assert f["state"].startswith("conn_"), f
        assert int(f["secs_since_last_cmd"]) >= 0
        assert f["listen_addr"].startswith("tcp:"), f
    # The asking connection is parsing its command.
    assert by_addr[own_addr]["state"] == "conn_parse_cmd"
    idle.close()
    assert wait_for(lambda: idle_addr not in {f.get("addr") for f in _conns(c).values()})


def test_connection_stats(fresh):
    srv, c = fresh

    def settled():
        # The harness's readiness probe may still be closing: wait until
        # the count holds still.
        a = c.stat("curr_connections")
        time.sleep(0.1)
        return a == c.stat("curr_connections") and a
    base = int(wait_for(settled))
    total = int(c.stat("total_connections"))
    others = [Conn.to(srv) for _ in range(5)]
    for o in others:
        o.rt(b"")
    assert wait_for(lambda: int(c.stat("curr_connections")) == base + 5), c.stat("curr_connections")
    assert int(c.stat("total_connections")) >= total + 5
    for o in others:
        o.close()
    assert wait_for(lambda: int(c.stat("curr_connections")) == base)


def test_stats_reset(fresh):
    srv, c = fresh
    c.set("a", "1")
    c.get("a")
    c.get("zz")
    assert int(c.stat("cmd_get")) == 2
    assert c.rt(b"stats reset\r\n") == b"RESET\r\n"
    st = c.stats()
    assert st["cmd_get"] == "0" and st["get_hits"] == "0" and st["get_misses"] == "0"
    assert st["cmd_set"] == "0"
    # Gauges survive a reset.
    assert st["curr_items"] == "1"


def test_stats_settings(fresh):
    srv, c = fresh
    st = c.stats("settings")
    expect = {
        "maxbytes": str(64 * 1024 * 1024), "maxconns": "1024", "growth_factor": "1.25",
        "chunk_size": "48", "num_threads": "4", "cas_enabled": "yes", "evictions": "on",
        "item_size_max": "1048576", "reqs_per_event": "20", "shutdown_command": "no",
        "detail_enabled": "no", "idle_timeout": "0", "tcp_backlog": "1024",
    }
    for name, value in expect.items():
        assert st.get(name) == value, (name, st.get(name))
    for name in ("verbosity", "oldest", "domain_socket", "binding_protocol", "slab_reassign",
                 "slab_automove", "lru_crawler", "lru_maintainer_thread", "hot_lru_pct",
                 "warm_lru_pct", "temp_lru", "hash_algorithm", "slab_chunk_max", "stat_key_prefix"):
        assert name in st, name


def test_verbosity_visible_in_settings(fresh):
    srv, c = fresh
    assert c.rt(b"verbosity 2\r\n") == b"OK\r\n"
    assert c.stat("verbosity", "settings") == "2"
    assert c.rt(b"verbosity 0\r\n") == b"OK\r\n"
    assert c.stat("verbosity", "settings") == "0"


def test_stats_items_and_slabs(fresh):
    srv, c = fresh
    assert c.stats("items") == {}
    for i in range(5):
        c.set("small%d" % i, "x")
    c.set("big", "y" * 5000)
    c.get("small0")
    items = c.stats("items")
    classes = sorted({int(n.split(":")[1]) for n in items})
    assert len(classes) == 2, items
    small, big = classes
    assert items["items:%d:number" % small] == "5"
    assert items["items:%d:number" % big] == "1"
    for field in ("number_hot", "number_warm", "number_cold", "age", "evicted",
                  "outofmemory", "reclaimed", "expired_unfetched", "evicted_unfetched"):
        assert "items:%d:%s" % (small, field) in items, field
    slabs = c.stats("slabs")
    assert "active_slabs" in slabs and "total_malloced" in slabs
    assert slabs["active_slabs"] == "2"
    for field in ("chunk_size", "chunks_per_page", "total_pages", "total_chunks",
                  "used_chunks", "free_chunks", "get_hits", "cmd_set"):
        assert "%d:%s" % (small, field) in slabs, field
    assert slabs["%d:used_chunks" % small] == "5"
    assert slabs["%d:get_hits" % small] == "1"
    assert int(slabs["%d:chunk_size" % big]) >= 5000
    assert int(slabs["%d:chunk_size" % small]) < int(slabs["%d:chunk_size" % big])


def test_stats_sizes(fresh):
    srv, c = fresh
    c.send(b"stats sizes\r\n")
    out = c.read_until(b"END\r\n")
    for line in out.split(b"\r\n")[:-2]:
        assert line.startswith(b"STAT "), out


def test_stats_conns(fresh):
    srv, c = fresh
    other = Conn.to(srv)
    other.rt(b"")
    conns = c.stats("conns")
    addrs = [v for k, v in conns.items() if k.endswith(":addr")]
    assert sum(1 for a in addrs if a.startswith("tcp:127.0.0.1:")) >= 2, conns
    assert any(k.endswith(":state") for k in conns)
    other.close()


def test_stats_detail(fresh):
    srv, c = fresh
    assert c.rt(b"stats detail dump\r\n") == b"END\r\n"
    assert c.rt(b"stats detail on\r\n") == b"OK\r\n"
    assert c.stat("detail_enabled", "settings") == "yes"
    c.set("pfx:a", "1")
    c.send(b"get pfx:a pfx:b\r\n")
    c.read_value_reply()
    assert c.rt(b"delete pfx:a\r\n") == b"DELETED\r\n"
    assert c.rt(b"stats detail dump\r\n") == b"PREFIX pfx get 2 hit 1 set 1 del 1\r\nEND\r\n"
    assert c.rt(b"stats detail off\r\n") == b"OK\r\n"
    c.get("pfx:a")
    assert c.rt(b"stats detail dump\r\n") == b"PREFIX pfx get 2 hit 1 set 1 del 1\r\nEND\r\n"
    assert c.rt(b"stats detail\r\n") == b"CLIENT_ERROR usage: stats detail on|off|dump\r\n"


def test_stats_unknown_subcommand(conn):
    assert conn.rt(b"stats nonsense\r\n") == b"ERROR\r\n"


# ---- lru_crawler --------------------------------------------------------

def test_lru_crawler_commands(fresh):
    srv, c = fresh
    assert c.rt(b"lru_crawler sleep 100\r\n") == b"OK\r\n"
    assert c.stat("lru_crawler_sleep", "settings") == "100"
    assert c.rt(b"lru_crawler sleep 2000000\r\n") == b"CLIENT_ERROR sleep must be one second or less\r\n"
    assert c.rt(b"lru_crawler sleep abc\r\n") == BAD
    assert c.rt(b"lru_crawler tocrawl 10\r\n") == b"OK\r\n"
    assert c.stat("lru_crawler_tocrawl", "settings") == "10"
    assert c.rt(b"lru_crawler tocrawl abc\r\n") == BAD
    assert c.rt(b"lru_crawler foo\r\n") == b"ERROR\r\n"
    assert c.rt(b"lru_crawler\r\n") == b"ERROR\r\n"
    c.set("a", "1")
    assert c.rt(b"lru_crawler crawl all\r\n") == b"OK\r\n"
    assert wait_for(lambda: c.rt(b"lru_crawler crawl 1\r\n") == b"OK\r\n")
    assert c.rt(b"lru_crawler crawl abc\r\n") == b"BADCLASS invalid class id\r\n"
    assert c.rt(b"lru_crawler crawl 0\r\n") == b"BADCLASS invalid class id\r\n"


def test_lru_crawler_reclaims_expired(fresh):
    srv, c = fresh
    for i in range(20):
        c.set("x%d" % i, "v", exptime=1)
    c.set("keep", "v")
    time.sleep(2.1)
    assert c.rt(b"lru_crawler crawl all\r\n") == b"OK\r\n"
    # The crawler (or, in memcached, the LRU maintainer first) frees expired
    # items that nobody reads.
    assert wait_for(lambda: c.stat("curr_items") == "1", timeout=10), c.stats()
    st = c.stats()
    assert int(st["crawler_reclaimed"]) + int(st["reclaimed"]) >= 20


def test_lru_crawler_metadump(fresh):
    srv, c = fresh
    c.set("md1", "x")
    c.set("md2", "yy", exptime=int(time.time()) + 1000)
    c.send(b"lru_crawler metadump all\r\n")
    out = c.read_until(b"END\r\n", timeout=10)
    # memcached 1.6.45: OK, then one line per item (every field followed by
    # a space, LF-terminated), then END.
    assert out.startswith(b"OK\r\n")
    lines = out[4:].split(b"\n")
    assert lines[-1] == b"" and lines[-2] == b"END\r"
    items = {}
    for line in lines[:-2]:
        assert line.endswith(b" "), line
        fields = dict(f.split(b"=", 1) for f in line.split(b" ") if f)
        items[fields[b"key"]] = fields
    assert set(items) == {b"md1", b"md2"}
    for f in (b"exp", b"la", b"cas", b"fetch", b"cls", b"size", b"flags"):
        assert f in items[b"md1"]
    assert items[b"md1"][b"exp"] == b"-1"
    assert int(items[b"md2"][b"exp"]) > time.time()
    assert c.rt(b"") == b""


def test_stats_cachedump(fresh):
    srv, c = fresh
    c.set("cd1", "abc")
    c.set("cd2", "defgh", exptime=int(time.time()) + 1000)

    def dump():
        c.send(b"stats cachedump 1 100\r\n")
        return c.read_until(b"END\r\n", timeout=10)
    # As memcached, the dump shows the class's COLD LRU: new items reach it
    # once the LRU maintainer moves them out of HOT (quickly, with so few).
    assert wait_for(lambda: dump().count(b"ITEM ") == 2, timeout=10)
    lines = dump().split(b"\r\n")
    assert lines[-2:] == [b"END", b""]
    items = {}
    for line in lines[:-2]:
        m = re.match(rb"^ITEM (\S+) \[(\d+) b; (\d+) s\]$", line)
        assert m, line
        items[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    assert items[b"cd1"] == (3, 0)
    assert items[b"cd2"][0] == 5 and items[b"cd2"][1] > time.time()
    # A limit, and memcached 1.6.45's errors.
    c.send(b"stats cachedump 1 1\r\n")
    assert c.read_until(b"END\r\n", timeout=10).count(b"ITEM ") == 1
    assert c.rt(b"stats cachedump 1\r\n") == b"CLIENT_ERROR bad command line\r\n"
    assert c.rt(b"stats cachedump x 1\r\n") == b"CLIENT_ERROR bad command line format\r\n"
    assert c.rt(b"stats cachedump 64 1\r\n") == b"CLIENT_ERROR Illegal slab id\r\n"
    assert c.rt(b"stats cachedump 2 1\r\n") == b"END\r\n"


def test_dumps_refused_with_X(make_server):
    srv = make_server("-X")
    c = Conn.to(srv)
    assert c.rt(b"stats cachedump 1 1\r\n") == b"CLIENT_ERROR stats cachedump not allowed\r\n"
    assert c.rt(b"lru_crawler metadump all\r\n") == b"ERROR metadump not allowed\r\n"
    assert c.rt(b"lru_crawler mgdump all\r\n") == b"ERROR key dump not allowed\r\n"
    c.close()


def test_lru_crawler_mgdump_and_hash(fresh):
    srv, c = fresh
    c.set("mg1", "x")
    c.send(b"lru_crawler mgdump all\r\n")
    out = c.read_until(b"EN\r\n", timeout=10)
    assert out == b"OK\r\nmg mg1\r\nEN\r\n"
    c.send(b"lru_crawler metadump hash\r\n")
    out = c.read_until(b"END\r\n", timeout=10)
    assert out.startswith(b"OK\r\nkey=mg1 ") and out.endswith(b" flags=0 \nEND\r\n")
    assert c.rt(b"lru_crawler metadump 99\r\n") == b"BADCLASS invalid class id\r\n"


def test_pipelined_metadump_is_refused(fresh):
    srv, c = fresh
    c.send(b"version\r\nlru_crawler metadump all\r\n")
    assert c.read_line(timeout=5).startswith(b"VERSION ")
    assert c.read_line(timeout=5) == b"ERROR cannot pipeline other commands before metadump\r\n"
    c.send(b"version\r\nlru_crawler mgdump all\r\n")
    assert c.read_line(timeout=5).startswith(b"VERSION ")
    assert c.read_line(timeout=5) == b"ERROR cannot pipeline other commands before mgdump\r\n"


def test_lru_crawler_disable_enable(fresh):
    srv, c = fresh
    assert c.rt(b"lru_crawler disable\r\n") == b"OK\r\n"
    assert c.stat("lru_crawler", "settings") == "no"
    assert c.rt(b"lru_crawler crawl all\r\n") == b"CLIENT_ERROR lru crawler disabled\r\n"
    assert c.rt(b"lru_crawler metadump all\r\n") == b"CLIENT_ERROR lru crawler disabled\r\n"
    assert c.rt(b"lru_crawler enable\r\n") == b"OK\r\n"
    assert c.stat("lru_crawler", "settings") == "yes"
    assert c.rt(b"lru_crawler crawl all\r\n") == b"OK\r\n"


BAD = b"CLIENT_ERROR bad command line format\r\n"


# ---- slabs --------------------------------------------------------------

def test_slabs_commands(fresh):
    srv, c = fresh
    assert c.rt(b"slabs automove 0\r\n") == b"OK\r\n"
    assert c.stat("slab_automove", "settings") == "0"
    assert c.rt(b"slabs automove 2\r\n") == b"OK\r\n"
    assert c.stat("slab_automove", "settings") == "2"
    assert c.rt(b"slabs automove 1\r\n") == b"OK\r\n"
    assert c.rt(b"slabs automove 3\r\n") == b"ERROR\r\n"
    assert c.rt(b"slabs automove ratio 0.5\r\n") == b"OK\r\n"
    assert c.rt(b"slabs automove ratio x\r\n") == b"ERROR\r\n"
    assert c.rt(b"slabs automove ratio\r\n") == b"ERROR\r\n"
    assert c.stat("slab_automove_ratio", "settings") == "0.50"
    # The window: memcached's range and error strings; it is applied.
    assert c.rt(b"slabs automove window 30\r\n") == b"OK\r\n"
    assert c.stat("slab_automove_window", "settings") == "30"
    assert c.rt(b"slabs automove window 2\r\n") == b"CLIENT_ERROR automove window too low or too high\r\n"
    assert c.rt(b"slabs automove window 1801\r\n") == b"CLIENT_ERROR automove window too low or too high\r\n"
    assert c.rt(b"slabs automove window x\r\n") == BAD
    assert c.stat("slab_automove_window", "settings") == "30"
    assert c.rt(b"slabs automove freeratio 0.05\r\n") == b"OK\r\n"
    assert c.rt(b"slabs automove freeratio x\r\n") == b"ERROR\r\n"
    assert c.rt(b"slabs reassign 1 1\r\n") == b"SAME src and dst class are identical\r\n"
    assert c.rt(b"slabs reassign 99 1\r\n") == b"BADCLASS invalid src or dst class id\r\n"
    assert c.rt(b"slabs reassign 1 200\r\n") == b"BADCLASS invalid src or dst class id\r\n"
    assert c.rt(b"slabs reassign 1 2\r\n") == b"NOSPARE source class has no spare pages\r\n"
    assert c.rt(b"slabs reassign a b\r\n") == BAD
    assert c.rt(b"slabs\r\n") == b"ERROR\r\n"
    assert c.rt(b"slabs foo\r\n") == b"ERROR\r\n"


def test_slabs_reassign_moves_a_page(make_server):
    srv = make_server("-m", "16", "-o", "slab_reassign")
    c = Conn.to(srv)
    small = b"x" * 10
    # Fill class A with a few pages of small items, then free them.
    for i in range(40000):
        c.send(b"set s%d 0 0 10 noreply\r\n%s\r\n" % (i, small))
    c.rt(b"")
    slabs = c.stats("slabs")
    cls_small = min(int(k.split(":")[0]) for k in slabs if k[0].isdigit())
    pages = int(slabs["%d:total_pages" % cls_small])
    assert pages >= 2, slabs
    c.flush()
    c.set("big", b"y" * 3000)
    slabs = c.stats("slabs")
    cls_big = max(int(k.split(":")[0]) for k in slabs if k[0].isdigit())
    res = c.rt(b"slabs reassign %d %d\r\n" % (cls_small, cls_big))
    assert res in (b"OK\r\n", b"BUSY currently processing reassign request\r\n",
                   b"NOTFULL dest class has spare memory\r\n"), res
    if res == b"OK\r\n":
        assert wait_for(lambda: int(c.stats("slabs")["%d:total_pages" % cls_small]) < pages, timeout=10)
    c.close()


# ---- memcached 1.6.45 behaviours its own t/ files check ----------------------

def test_store_too_large_is_counted(fresh):
    srv, c = fresh
    size = 1024 * 1024 + 1
    assert c.rt(b"set big 0 0 %d\r\n%s\r\n" % (size, b"x" * size), timeout=20) == \
        b"SERVER_ERROR object too large for cache\r\n"
    assert c.stat("store_too_large") == "1"


def test_unsegmented_lru_without_maintainer(make_server):
    # As memcached: no_lru_maintainer turns segmentation off; new items go
    # straight to COLD, so `stats cachedump` (COLD) shows them at once.
    srv = make_server("-o", "no_lru_maintainer")
    c = Conn.to(srv)
    assert c.stat("lru_segmented", "settings") == "no"
    c.set("foo", "fooval")
    assert c.get("foo") == b"fooval"
    # Without the maintainer memcached shows no segment counts.
    assert "items:1:number_hot" not in c.stats("items")
    assert c.stat("items:1:number", "items") == "1"
    c.send(b"stats cachedump 1 100\r\n")
    assert c.read_until(b"END\r\n", timeout=5) == b"ITEM foo [6 b; 0 s]\r\nEND\r\n"
    c.close()


def test_initial_malloc_test_hook(make_server, monkeypatch):
    # memcached's T_MEMD_INITIAL_MALLOC (t/64bit.t): total_malloced starts
    # there, so -m is reached after a couple of pages.
    monkeypatch.setenv("T_MEMD_INITIAL_MALLOC", "4294967328")
    srv = make_server("-m", "4098", "-M")
    c = Conn.to(srv)
    assert c.stat("limit_maxbytes") == "4297064448"
    assert c.stat("total_malloced", "slabs") == "4294967328"
    size = 400 * 1024
    replies = [c.rt(b"set big%d 0 0 %d\r\n%s\r\n" % (i, size, b"a" * size), timeout=20)
               for i in range(5)]
    assert replies[0] == b"STORED\r\n"
    assert any(r.startswith(b"SERVER_ERROR") for r in replies), replies
    c.close()


# memcached 1.6.45's `stats` with default flags: these keys, in this order.
STATS_1_6_45 = [
    "pid", "uptime", "time", "version", "libevent", "pointer_size", "rusage_user",
    "rusage_system", "max_connections", "curr_connections", "total_connections",
    "rejected_connections", "connection_structures", "response_obj_oom", "response_obj_count",
    "response_obj_bytes", "read_buf_count", "read_buf_bytes", "read_buf_bytes_free",
    "read_buf_oom", "reserved_fds", "cmd_get", "cmd_set", "cmd_flush", "cmd_touch", "cmd_meta",
    "get_hits", "get_misses", "get_expired", "get_flushed", "delete_misses", "delete_hits",
    "incr_misses", "incr_hits", "decr_misses", "decr_hits", "cas_misses", "cas_hits",
    "cas_badval", "touch_hits", "touch_misses", "store_too_large", "store_no_memory",
    "auth_cmds", "auth_errors", "bytes_read", "bytes_written", "limit_maxbytes",
    "accepting_conns", "listen_disabled_num", "time_in_listen_disabled_us", "threads",
    "conn_yields", "hash_power_level", "hash_bytes", "hash_is_expanding",
    "slab_reassign_rescues", "slab_reassign_chunk_rescues", "slab_reassign_inline_reclaim",
    "slab_reassign_busy_items", "slab_reassign_busy_deletes", "slab_reassign_busy_nomem",
    "slab_reassign_last_busy_status", "slab_reassign_running", "slabs_moved",
    "lru_crawler_running", "lru_crawler_starts", "lru_maintainer_juggles", "malloc_fails",
    "log_worker_dropped", "log_worker_written", "log_watcher_skipped", "log_watcher_sent",
    "log_watchers", "unexpected_napi_ids", "round_robin_fallback", "bytes", "curr_items",
    "total_items", "slab_global_page_pool", "expired_unfetched", "evicted_unfetched",
    "evicted_active", "evictions", "reclaimed", "crawler_reclaimed", "crawler_items_checked",
    "lrutail_reflocked", "moves_to_cold", "moves_to_warm", "moves_within_lru",
    "direct_reclaims", "lru_bumps_dropped",
]


def test_stats_keys_and_order_match_memcached(fresh):
    srv, c = fresh
    c.send(b"stats\r\n")
    out = c.read_until(b"END\r\n", timeout=5).decode()
    names = [line.split(" ")[1] for line in out.split("\r\n") if line.startswith("STAT ")]
    assert names == STATS_1_6_45


def test_stats_leave_out_what_is_off(make_server):
    srv = make_server("-o", "no_lru_crawler,no_lru_maintainer,no_maxconns_fast,idle_timeout=30")
    c = Conn.to(srv)
    st = c.stats()
    for k in ("lru_crawler_running", "lru_crawler_starts", "lru_maintainer_juggles",
              "moves_to_cold", "evicted_active", "rejected_connections"):
        assert k not in st, k
    assert st["idle_kicks"] == "0"
    c.close()


def test_stats_reset_clears_item_and_detail_stats(make_server):
    # memcached 1.6.45's t/issue_22: evictions counted per class, and
    # `stats reset` zeroes them; it also empties the `stats detail` table.
    srv = make_server("-m", "3")
    c = Conn.to(srv)
    value = b"B" * 66560
    for i in range(40):
        assert c.rt(b"set key%d 0 0 66560\r\n%s\r\n" % (i, value)) == b"STORED\r\n"
    items = c.stats("items")
    cls = [k.split(":")[1] for k in items if k.endswith(":evicted") and items[k] != "0"]
    assert cls, items
    assert c.rt(b"stats detail on\r\n") == b"OK\r\n"
    c.get("pfx:a")
    assert b"PREFIX pfx" in c.rt(b"stats detail dump\r\n")
    assert c.rt(b"stats reset\r\n") == b"RESET\r\n"
    assert c.stat("items:%s:evicted" % cls[0], "items") == "0"
    assert c.rt(b"stats detail dump\r\n") == b"END\r\n"
    assert c.stat("total_items") == "0"
    c.close()


def test_unsegmented_set_reclaims_a_flushed_tail_item(make_server):
    # memcached's compat mode (t/issue_183): a store first looks at the COLD
    # tail, so a flushed item is reclaimed (counted) instead of lingering.
    srv = make_server("-o", "no_modern")
    c = Conn.to(srv)
    c.set("key", "1")
    assert c.stat("reclaimed") == "0"
    time.sleep(2)  # flush_all spares items stored in its own second (memcached)
    assert c.rt(b"flush_all\r\n") == b"OK\r\n"
    c.set("key", "1")
    assert c.stat("reclaimed") == "1"
    c.close()


def test_crawler_is_running_as_soon_as_a_crawl_is_accepted(fresh):
    srv, c = fresh
    for i in range(2000):
        c.send(b"set cr%d 0 0 1 noreply\r\nx\r\n" % i)
    c.set("last", "x")
    # lru-crawler.t polls lru_crawler_running right after OK: never 0 before it ran.
    assert c.rt(b"lru_crawler crawl all\r\n") == b"OK\r\n"
    starts = int(c.stat("lru_crawler_starts"))
    assert c.stat("lru_crawler_running") == "1" or starts >= 1


def test_stats_conns_lists_listeners_and_states_by_fd(make_server):
    # memcached 1.6.45 (t/stats-conns.t): entries keyed by fd, listening TCP
    # and UDP sockets included, a client in the middle of a value block is
    # conn_nread and the asking one conn_parse_cmd.
    udp_port = hserver.free_port()
    srv = make_server("-U", str(udp_port), "-l", "127.0.0.1")
    sending = Conn.to(srv)
    sending.send(b"set foo 0 0 6\r\n")
    time.sleep(0.2)
    asking = Conn.to(srv)
    asking.send(b"stats conns\r\n")
    out = asking.read_until(b"END\r\n", timeout=5).decode()
    entries = {}
    for line in out.split("\r\n"):
        if line.startswith("STAT "):
            key, value = line[5:].split(" ", 1)
            fd, field = key.split(":", 1)
            entries.setdefault(int(fd), {})[field] = value
    states = {e.get("state") for e in entries.values()}
    assert {"conn_listening", "conn_read", "conn_nread", "conn_parse_cmd"} <= states, entries
    addrs = {e.get("addr") for e in entries.values()}
    assert "udp:127.0.0.1:%d" % udp_port in addrs, addrs
    assert "tcp:127.0.0.1:%d" % srv.port in addrs, addrs
    sending.close()
    asking.close()


def test_cache_memlimit_below_use_gives_pages_back(make_server):
    # memcached 1.6.45 (t/dyn-maxbytes.t): the limit may drop below what is
    # allocated; pages that come free then go back to the OS.
    srv = make_server("-m", "16")
    c = Conn.to(srv)
    value = b"B" * 66560
    for i in range(150):
        assert c.rt(b"set key%d 0 0 66560\r\n%s\r\n" % (i, value)) == b"STORED\r\n"
    before = int(c.stat("total_malloced", "slabs"))
    assert c.rt(b"cache_memlimit 8\r\n") == b"OK\r\n"
    assert c.stat("limit_maxbytes") == str(8 << 20)
    for i in range(150):
        c.rt(b"delete key%d\r\n" % i)
    assert wait_for(lambda: int(c.stat("total_malloced", "slabs")) < before, timeout=10)
    c.close()


def test_automove_returns_free_pages_promptly(make_server):
    # memcached 1.6.45 (t/slabs-reassign2.t): automove gives pages back to the
    # global pool without waiting a second between them.
    srv = make_server("-m", "60", "-o", "slab_reassign,slab_automove,lru_crawler,lru_maintainer")
    c = Conn.to(srv)
    value = b"B" * 11000
    for i in range(6000):
        c.send(b"set nfoo%d 0 0 11000 noreply\r\n%s\r\n" % (i, value))
    assert int(c.stat("curr_items")) > 4000
    for i in range(0, 6000, 2):
        c.send(b"delete nfoo%d noreply\r\n" % i)
    assert wait_for(lambda: int(c.stat("slab_global_page_pool")) > 24, timeout=15)
    c.close()


def test_o_slab_automove_window(make_server):
    srv = make_server("-o", "slab_automove_window=60")
    with Conn.to(srv) as c:
        assert c.stat("slab_automove_window", "settings") == "60"


def test_o_slab_automove_window_out_of_range_is_refused():
    rc, _, err = hserver.run_binary(["-p", "0", "-o", "slab_automove_window=2"])
    assert rc != 0
    assert "slab_automove_window must be > 2 and < 1800" in err


@pytest.mark.trove_only  # memcached prints slab_automove_freeratio only with extstore
def test_freeratio_shows_in_settings(make_server):
    srv = make_server("-o", "slab_automove_freeratio=0.1")
    with Conn.to(srv) as c:
        assert c.stat("slab_automove_freeratio", "settings") == "0.100"
        assert c.rt(b"slabs automove freeratio 0.25\r\n") == b"OK\r\n"
        assert c.stat("slab_automove_freeratio", "settings") == "0.250"


def test_automove_returns_free_pages_after_a_quiet_window(make_server):
    # Automove 1 with a 3-second window: memory full of one class, then
    # everything deleted; once a window passes without evictions the free
    # pages go back to the global pool (memcached's slab_automove.c).
    srv = make_server("-m", "8", "-o", "slab_reassign,slab_automove=1,slab_automove_window=3")
    c = Conn.to(srv)
    v = b"x" * 2000
    for i in range(6000):
        c.send(b"set k%d 0 0 2000 noreply\r\n%s\r\n" % (i, v))
    c.call(b"version\r\n")
    for i in range(6000):
        c.send(b"delete k%d noreply\r\n" % i)
    c.call(b"version\r\n")
    assert wait_for(lambda: int(c.stat("slab_global_page_pool")) > 0, timeout=15)
    c.close()
