"""memcached 1.6's `watch` log streams, as memcached 1.6.45 prints them.

A watcher connection gets "OK" and then one line per event of the types it
asked for; it reads no more commands. Lines are "ts=<sec>.<usec> gid=<n> "
plus the event. Every check here also runs against memcached 1.6.45 when
TROVE_TEST_TARGET=memcached, except those marked trove_only (rawcmds lines,
which memcached defines but never writes).
"""

import re
import socket
import time

import pytest

from harness.client import Conn, wait_for

TS = r"ts=\d+\.\d+ gid=\d+ "


def watcher(srv, types=""):
    w = Conn.to(srv)
    line = w.call("watch %s\r\n" % types if types else "watch\r\n")
    assert line == b"OK\r\n"
    return w


def next_line(w, pattern, tries=50):
    """The first line matching pattern (other event lines are skipped)."""
    for _ in range(tries):
        line = w.read_until(b"\n", timeout=5).decode()
        if re.search(pattern, line):
            return line
    raise AssertionError("no line matched %r" % pattern)


def test_fetchers_and_mutations_in_memcached_order(server, connect):
    w = watcher(server, "fetchers mutations")
    c = connect()
    assert c.call("set vfoo 0 0 4\r\nvbar\r\n") == b"STORED\r\n"
    assert c.call("get vfoo\r\n", ) .startswith(b"VALUE vfoo 0 4")
    c.read_until(b"END\r\n")
    # A store looks the key up first, and fetchers shows that lookup.
    l1 = w.read_until(b"\n", timeout=5).decode()
    l2 = w.read_until(b"\n", timeout=5).decode()
    l3 = w.read_until(b"\n", timeout=5).decode()
    assert re.match(TS + r"type=item_get key=vfoo status=not_found clsid=0 cfd=\d+ size=0\r?\n$", l1), l1
    assert re.match(TS + r"type=item_store key=vfoo status=stored cmd=set ttl=0 clsid=\d+ cfd=\d+ size=4\n$", l2), l2
    assert re.match(TS + r"type=item_get key=vfoo status=found clsid=\d+ cfd=\d+ size=4\n$", l3), l3


def test_default_type_is_fetchers_and_gids_increase(server, connect):
    w = watcher(server)
    c = connect()
    c.call("get nothere1\r\n")
    c.call("get nothere2\r\n")
    a = next_line(w, "key=nothere1")
    b = next_line(w, "key=nothere2")
    ga = int(re.search(r"gid=(\d+)", a).group(1))
    gb = int(re.search(r"gid=(\d+)", b).group(1))
    assert gb > ga


def test_deletions_delete_and_md_but_not_md_invalidate(server, connect):
    w = watcher(server, "deletions")
    c = connect()
    assert c.call("md non-existing-key\r\n") == b"NF\r\n"
    c.call("set vdel 0 0 4\r\nvbar\r\n")
    assert c.call("delete vdel\r\n") == b"DELETED\r\n"
    line = w.read_until(b"\n", timeout=5).decode()
    assert re.match(TS + r"type=deleted key=vdel cmd=delete clsid=\d+ size=4\n$", line), line
    c.call("set vdel 0 0 4\r\nvbar\r\n")
    assert c.call("md vdel I\r\n") == b"HD\r\n"   # marks stale: no line
    assert c.call("md vdel\r\n") == b"HD\r\n"
    line = w.read_until(b"\n", timeout=5).decode()
    assert re.match(TS + r"type=deleted key=vdel cmd=md clsid=\d+ size=4\n$", line), line


def test_key_is_uri_encoded(server, connect):
    w = watcher(server, "mutations")
    c = connect()
    key = "#" * 250
    assert c.call("set %s 0 0 9\r\nmemcached\r\n" % key) == b"STORED\r\n"
    line = w.read_until(b"\n", timeout=5).decode()
    assert line.split()[3] == "key=" + "%23" * 250


def test_connevents_normal_and_error_close(make_server):
    # Lines are matched by the client's port: the harness's own start-up
    # probe connection may close after the watcher is added.
    srv = make_server()
    w = watcher(srv, "connevents")
    c = Conn.to(srv)
    port = c.sock.getsockname()[1]
    c.call("version\r\n")
    c.send("quit\r\n")
    new = next_line(w, "type=conn_new .*rport=%d " % port)
    assert re.match(TS + r"type=conn_new rip=127\.0\.0\.1 rport=\d+ transport=tcp cfd=\d+\n$", new), new
    closed = next_line(w, "type=conn_close .*rport=%d " % port)
    assert re.search(r"transport=tcp reason=normal cfd=\d+\n$", closed), closed
    # A request line ending in an HTTP/ token: closed without a reply.
    h = Conn.to(srv)
    hport = h.sock.getsockname()[1]
    h.send("GET / HTTP/1.1\r\n")
    h.expect_closed()
    next_line(w, "type=conn_new .*rport=%d " % hport)
    closed = next_line(w, "type=conn_close .*rport=%d " % hport)
    assert "reason=error" in closed, closed


def test_unknown_type_is_error_and_connection_stays(server):
    c = Conn.to(server)
    assert c.call("watch bogus\r\n") == b"ERROR\r\n"
    assert c.call("version\r\n").startswith(b"VERSION ")


def test_disabled_with_W(make_server):
    srv = make_server("-W")
    c = Conn.to(srv)
    assert c.call("watch mutations\r\n") == b"CLIENT_ERROR watch commands not allowed\r\n"


def test_watcher_stats_and_limit(make_server):
    srv = make_server()
    c = Conn.to(srv)
    ws = [watcher(srv, "fetchers") for _ in range(2)]
    assert wait_for(lambda: c.stat("log_watchers") == "2")
    for w in ws:
        w.close()
    assert wait_for(lambda: c.stat("log_watchers") == "0")
    settings = c.stats("settings")
    assert settings["watcher_logbuf_size"] == str(256 * 1024)
    assert settings["worker_logbuf_size"] == str(64 * 1024)
    for k in ("log_worker_dropped", "log_worker_written", "log_watcher_skipped", "log_watcher_sent"):
        assert k in c.stats()


@pytest.mark.trove_only
def test_twenty_watchers_at_most(make_server):
    # memcached's WATCHER_LIMIT is 20 too; its reply text is the same.
    srv = make_server()
    ws = [watcher(srv) for _ in range(20)]
    extra = Conn.to(srv)
    assert extra.call("watch\r\n") == b"WATCHER_TOO_MANY log watcher limit reached\r\n"
    assert len(ws) == 20


def test_watcher_ignores_what_it_is_sent(server, connect):
    w = watcher(server, "fetchers")
    w.send("get a\r\nset b 0 0 1\r\nx\r\n")
    assert not w.pending(wait=0.3)
    c = connect()
    c.call("get watched_key\r\n")
    assert "key=watched_key" in next_line(w, "watched_key")


def test_pipelined_watch_is_refused(server):
    c = Conn.to(server)
    c.send("version\r\nwatch\r\n")
    assert c.read_line(timeout=5).startswith(b"VERSION ")
    assert c.read_line(timeout=5) == b"ERROR cannot pipeline other commands before watch\r\n"


def test_evictions_and_mutations_together(make_server):
    srv = make_server("-m", "8")
    c = Conn.to(srv)
    value = "B" * 11000
    for i in range(1000):
        c.send("set n,foo%d 0 0 11000 noreply\r\n%s\r\n" % (i, value))
    c.call("version\r\n")
    mw = watcher(srv, "mutations evictions")
    c.send("set bfoo 0 0 11000 noreply\r\n%s\r\n" % value)
    seen = set()
    for _ in range(50):
        line = mw.read_until(b"\n", timeout=5).decode()
        if "type=item_store" in line:
            seen.add("store")
        if "type=eviction" in line:
            assert re.match(TS + r"type=eviction key=n%2Cfoo\d+ fetch=no ttl=-1 la=\d+ clsid=\d+ size=11000\n$", line), line
            seen.add("eviction")
        if seen == {"store", "eviction"}:
            break
    assert seen == {"store", "eviction"}


@pytest.mark.trove_only  # not yet run against memcached 1.6.45's automove
def test_sysevents_show_automove_slab_moves(make_server):
    # Aggressive automove (2): one class holds all memory, then another
    # evicts; a page moves, and `watch sysevents` shows memcached's line.
    srv = make_server("-m", "4", "-I", "64k", "-o", "slab_reassign,slab_automove=2,slab_chunk_max=32")
    c = Conn.to(srv)
    small = "a" * 1000
    for i in range(4000):
        c.send("set a%d 0 0 1000 noreply\r\n%s\r\n" % (i, small))
    c.call("version\r\n")
    w = watcher(srv, "sysevents")
    big = "b" * 8000
    deadline = time.monotonic() + 20
    line = None
    while line is None and time.monotonic() < deadline:
        for i in range(100):
            c.send("set b%d 0 0 8000 noreply\r\n%s\r\n" % (i, big))
        c.call("version\r\n")
        try:
            line = w.read_until(b"\n", timeout=1).decode()
        except Exception:  # nothing yet: keep evicting
            line = None
    assert line is not None, "no sysevent within 20 s"
    assert re.match(TS + r"type=slab_move src=\d+ dst=\d+ state=(ok|fail)\n$", line), line


@pytest.mark.trove_only  # memcached's own t/watcher.t checks its timing of this
def test_slow_watcher_is_told_what_it_skipped(make_server):
    # An 8 KiB watcher buffer and a watcher that does not read: lines are
    # dropped (never queued without bound) and "skipped=N" precedes the
    # next line it gets.
    srv = make_server("-o", "watcher_logbuf_size=8")
    w = Conn.to(srv)
    w.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    assert w.call("watch\r\n") == b"OK\r\n"
    c = Conn.to(srv)
    spacer = "X" * 180
    batch = "".join("get foo%d%s\r\n" % (i, spacer) for i in range(500))
    for _ in range(40):
        c.send(batch)
        c.read_until(b"END\r\n" * 1, timeout=10)
    c.call("version\r\n")
    time.sleep(0.5)
    found = False
    for i in range(200000):
        line = w.read_until(b"\n", timeout=5)
        if i % 100 == 0:
            c.call("get foo\r\n")
        if line.startswith(b"skipped="):
            assert re.match(rb"skipped=\d+\n$", line)
            found = True
            break
    assert found
    assert int(Conn.to(srv).stat("log_watcher_skipped")) > 0


@pytest.mark.trove_only
def test_rawcmds_shows_request_lines(server, connect):
    w = watcher(server, "rawcmds")
    c = connect()
    c.call("get raw_key_1\r\n")
    line = next_line(w, "raw_key_1")
    assert re.match(TS + r"<\d+ get raw_key_1\n$", line), line
