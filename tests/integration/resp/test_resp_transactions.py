"""MULTI/EXEC/DISCARD/WATCH, including a transaction racing writers on other
connections (other workers in Trove): EXEC is all-or-nothing and WATCH aborts."""

import threading
import time

import pytest
import redis


def test_multi_exec_and_discard(raw):
    c = raw()
    assert c.cmd("MULTI") == b"+OK\r\n"
    assert c.cmd("SET", "a", "1") == b"+QUEUED\r\n"
    assert c.cmd("INCR", "a") == b"+QUEUED\r\n"
    assert c.cmd("EXEC") == b"*2\r\n+OK\r\n:2\r\n"
    assert c.cmd("MULTI") == b"+OK\r\n"
    assert c.cmd("MULTI") == b"-ERR MULTI calls can not be nested\r\n"
    assert c.cmd("SET", "a", "9") == b"+QUEUED\r\n"
    assert c.cmd("DISCARD") == b"+OK\r\n"
    assert c.cmd("GET", "a") == b"$1\r\n2\r\n"
    assert c.cmd("DISCARD") == b"-ERR DISCARD without MULTI\r\n"
    assert c.cmd("EXEC") == b"-ERR EXEC without MULTI\r\n"


def test_queue_time_error_aborts_exec(raw):
    c = raw()
    c.cmd("MULTI")
    assert c.cmd("SET", "a", "1") == b"+QUEUED\r\n"
    assert c.cmd("NOSUCH") == b"-ERR unknown command 'NOSUCH', with args beginning with: \r\n"
    assert c.cmd("EXEC") == b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    assert c.cmd("GET", "a") == b"$-1\r\n"
    c.cmd("MULTI")
    assert c.cmd("GET") == b"-ERR wrong number of arguments for 'get' command\r\n"
    assert c.cmd("EXEC") == b"-EXECABORT Transaction discarded because of previous errors.\r\n"


def test_runtime_error_fails_only_its_command(raw):
    c = raw()
    c.cmd("MULTI")
    c.cmd("SET", "a", "1")
    c.cmd("LPUSH", "a", "x")
    c.cmd("INCR", "a")
    assert c.cmd("EXEC") == (b"*3\r\n+OK\r\n-WRONGTYPE Operation against a key holding the "
                             b"wrong kind of value\r\n:2\r\n")


def test_watch_inside_multi_and_unwatch(raw):
    c = raw()
    c.cmd("MULTI")
    assert c.cmd("WATCH", "x") == b"-ERR WATCH inside MULTI is not allowed\r\n"
    assert c.cmd("EXEC") == b"*0\r\n"
    assert c.cmd("WATCH", "x") == b"+OK\r\n"
    assert c.cmd("UNWATCH") == b"+OK\r\n"
    raw().cmd("SET", "x", "1")
    c.cmd("MULTI")
    c.cmd("PING")
    assert c.cmd("EXEC") == b"*1\r\n+PONG\r\n"


@pytest.mark.parametrize("change", [
    ["SET", "w", "2"],
    ["DEL", "w"],
    ["EXPIRE", "w", "100"],
    ["APPEND", "w", "x"],
])
def test_watch_aborts_when_another_client_changes_the_key(raw, change):
    c, other = raw(), raw()
    c.cmd("SET", "w", "1")
    assert c.cmd("WATCH", "w") == b"+OK\r\n"
    other.cmd(*change)
    c.cmd("MULTI")
    c.cmd("SET", "w", "mine")
    assert c.cmd("EXEC") == b"*-1\r\n"
    assert c.cmd("GET", "w") != b"$4\r\nmine\r\n"


def test_watch_aborts_on_delete_and_recreate_with_same_value(raw):
    c, other = raw(), raw()
    c.cmd("SET", "w", "same")
    c.cmd("WATCH", "w")
    other.cmd("DEL", "w")
    other.cmd("SET", "w", "same")
    c.cmd("MULTI")
    c.cmd("SET", "w", "mine")
    assert c.cmd("EXEC") == b"*-1\r\n"


def test_watch_aborts_on_missing_key_created(raw):
    c, other = raw(), raw()
    c.cmd("WATCH", "new")
    other.cmd("SET", "new", "1")
    c.cmd("MULTI")
    c.cmd("SET", "new", "mine")
    assert c.cmd("EXEC") == b"*-1\r\n"


def test_watch_aborts_on_expiry(raw):
    c = raw()
    c.cmd("SET", "w", "1", "PX", "500")
    c.cmd("WATCH", "w")
    time.sleep(1.6)
    c.cmd("MULTI")
    c.cmd("SET", "w", "mine")
    assert c.cmd("EXEC") == b"*-1\r\n"


def test_watch_aborts_on_collection_change(raw):
    c, other = raw(), raw()
    c.cmd("RPUSH", "l", "a")
    c.cmd("WATCH", "l")
    other.cmd("RPUSH", "l", "b")
    c.cmd("MULTI")
    c.cmd("DEL", "l")
    assert c.cmd("EXEC") == b"*-1\r\n"
    assert c.cmd("LLEN", "l") == b":2\r\n"


def test_watch_untouched_key_executes(raw):
    c, other = raw(), raw()
    c.cmd("SET", "w", "1")
    c.cmd("WATCH", "w")
    other.cmd("SET", "unrelated", "1")
    c.cmd("MULTI")
    c.cmd("INCR", "w")
    assert c.cmd("EXEC") == b"*1\r\n:2\r\n"


def test_exec_is_all_or_nothing_under_concurrent_writers(resp_port, r):
    """One connection swaps a/b together in transactions while others write
    them with MSET and read them with MGET: nobody ever sees a half-applied
    transaction."""
    stop = threading.Event()
    bad = []
    r.mset({"a": "0", "b": "0"})

    def txn_loop():
        c = redis.Redis(port=resp_port)
        i = 0
        while not stop.is_set():
            i += 1
            p = c.pipeline(transaction=True)
            p.set("a", "t%d" % i)
            p.set("b", "t%d" % i)
            p.execute()

    def mset_loop(n):
        c = redis.Redis(port=resp_port)
        i = 0
        while not stop.is_set():
            i += 1
            c.mset({"a": "w%d-%d" % (n, i), "b": "w%d-%d" % (n, i)})

    def reader():
        c = redis.Redis(port=resp_port)
        while not stop.is_set():
            p = c.pipeline(transaction=True)
            p.get("a")
            p.get("b")
            a, b = p.execute()
            if a != b:
                bad.append((a, b))

    threads = [threading.Thread(target=txn_loop), threading.Thread(target=mset_loop, args=(1,)),
               threading.Thread(target=mset_loop, args=(2,)), threading.Thread(target=reader),
               threading.Thread(target=reader)]
    for t in threads:
        t.start()
    time.sleep(2.0)
    stop.set()
    for t in threads:
        t.join()
    assert bad == []


def test_watch_gives_no_lost_updates_under_contention(resp_port, r):
    """Optimistic increments with WATCH from several connections: every
    successful EXEC counts exactly once, so aborted EXECs must really abort."""
    r.set("counter", 0)
    per_thread = 60
    done = []

    def worker():
        c = redis.Redis(port=resp_port)
        ok = 0
        aborts = 0
        while ok < per_thread:
            with c.pipeline(transaction=True) as p:
                try:
                    p.watch("counter")
                    v = int(p.get("counter"))
                    p.multi()
                    p.set("counter", v + 1)
                    p.execute()
                    ok += 1
                except redis.WatchError:
                    aborts += 1
        done.append(aborts)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert int(r.get("counter")) == 4 * per_thread
