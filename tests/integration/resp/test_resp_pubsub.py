"""Pub/sub on the RESP port: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH,
SPUBLISH, PUBSUB, RESP2 subscribed mode and RESP3 pushes, fan-out across
workers and the slow-subscriber output limit.

Redis 7 is the reference (docs/resp_modes.md section 5, "Pub/sub"): every test
also runs against redis-server (TROVE_TEST_TARGET=redis) except the ones
that place connections on Trove's workers, which skip there. Trove runs with
`-t 4` so that connections (assigned round-robin, worker = CLIENT ID % 4)
land on different workers; subscribers and publishers are spread over them.

Exact wire checks use raw sockets (Debian's redis-py has no protocol=3).
"""

import os
import socket
import threading
import time

import pytest

from harness.proc import rss_kib

from blocked_clients import client_id
from blocked_clients import on_worker as _on_worker


WORKERS = 4
# TSan builds run several times slower: time bounds are scaled, and the PING
# latency bound (a performance figure, not a behaviour) is only printed.
TSAN = "tsan" in os.environ.get("TROVE_BIN", "")
ASAN = "asan" in os.environ.get("TROVE_BIN", "")
SLOW = 10 if TSAN else 1


def _target():
    t = os.environ.get("TROVE_TEST_TARGET", "").strip().lower()
    if t == "redis":
        return "redis"
    if os.environ.get("TROVE_RESP_FAKE"):
        return "fake"
    return "trove"


TARGET = _target()
IS_TROVE = TARGET == "trove"
pytestmark = pytest.mark.skipif(TARGET == "fake",
                                reason="the fake RESP front has no workers to deliver messages")
# Tests that need connections placed on Trove's worker threads.
trove_workers = pytest.mark.skipif(not IS_TROVE,
                                   reason="places connections on Trove's -t 4 workers")


# The module server (conftest `server`) runs with this many workers.
SERVER_ARGS = ["-t", str(WORKERS)]


# ---- RESP encoding helpers -------------------------------------------------

def enc(x, proto=2):
    if x is None:
        return b"$-1\r\n" if proto == 2 else b"_\r\n"
    if isinstance(x, int):
        return b":%d\r\n" % x
    if isinstance(x, str):
        x = x.encode()
    return b"$%d\r\n%s\r\n" % (len(x), x)


def frame(*items, proto=2):
    """A pub/sub frame: an array in RESP2, a push in RESP3."""
    head = b"*" if proto == 2 else b">"
    return head + b"%d\r\n" % len(items) + b"".join(enc(i, proto) for i in items)


def command(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def decode(raw_reply):
    """Raw RESP bytes of one reply -> Python value (bytes, int, None, list,
    or ('err', text)). Maps come back as flat lists."""
    value, rest = _decode(raw_reply)
    assert rest == b"", raw_reply
    return value


def _decode(b):
    line, rest = b.split(b"\r\n", 1)
    t, body = line[:1], line[1:]
    if t in b"+":
        return body, rest
    if t == b"-":
        return ("err", body.decode()), rest
    if t == b":":
        return int(body), rest
    if t == b"_":
        return None, rest
    if t == b"$":
        n = int(body)
        if n < 0:
            return None, rest
        return rest[:n], rest[n + 2:]
    if t in b"*>%~":
        n = int(body)
        if n < 0:
            return None, rest
        if t == b"%":
            n *= 2
        out = []
        for _ in range(n):
            v, rest = _decode(rest)
            out.append(v)
        return out, rest
    raise AssertionError("unexpected reply %r" % b)


def replies(c, n):
    return [c.read_reply() for _ in range(n)]


def on_worker(raw, worker, limit=64):
    """A raw connection owned by Trove worker `worker` (CLIENT ID % 4)."""
    return _on_worker(raw, worker, WORKERS, limit=limit)


def wait_until(fn, timeout=5.0, interval=0.01):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(interval)


def numsub(r, ch):
    return dict(r.pubsub_numsub(ch)).get(ch.encode() if isinstance(ch, str) else ch, 0)


def redis_version(r):
    return tuple(int(x) for x in r.info("server")["redis_version"].split(".")[:2])


def server_pid(request, r):
    if IS_TROVE:
        return request.getfixturevalue("server").pid()
    return int(r.info("server")["process_id"])


# ---- subscribe / unsubscribe confirmations and counts ---------------------

def test_subscribe_confirmations_and_counts(raw):
    c = raw()
    c.send(command("SUBSCRIBE", "a", "b", "a"))
    assert replies(c, 3) == [frame("subscribe", "a", 1), frame("subscribe", "b", 2),
                             frame("subscribe", "a", 2)]  # again: n unchanged
    # Patterns count together with channels.
    c.send(command("PSUBSCRIBE", "p*", "q?", "p*"))
    assert replies(c, 3) == [frame("psubscribe", "p*", 3), frame("psubscribe", "q?", 4),
                             frame("psubscribe", "p*", 4)]
    # Shard channels are counted apart.
    c.send(command("SSUBSCRIBE", "s1", "s2", "s1"))
    assert replies(c, 3) == [frame("ssubscribe", "s1", 1), frame("ssubscribe", "s2", 2),
                             frame("ssubscribe", "s1", 2)]
    c.send(command("SUBSCRIBE", "c"))
    assert c.read_reply() == frame("subscribe", "c", 5)


def test_unsubscribe_with_arguments(raw):
    c = raw()
    c.send(command("SUBSCRIBE", "a", "b"))
    replies(c, 2)
    c.send(command("PSUBSCRIBE", "p*"))
    c.read_reply()
    c.send(command("SSUBSCRIBE", "s1", "s2"))
    replies(c, 2)
    # One reply per argument, the count after removal; one not held: same count.
    c.send(command("UNSUBSCRIBE", "a", "zz"))
    assert replies(c, 2) == [frame("unsubscribe", "a", 2), frame("unsubscribe", "zz", 2)]
    c.send(command("PUNSUBSCRIBE", "nomatch", "p*"))
    assert replies(c, 2) == [frame("punsubscribe", "nomatch", 2), frame("punsubscribe", "p*", 1)]
    c.send(command("SUNSUBSCRIBE", "s2"))
    assert c.read_reply() == frame("sunsubscribe", "s2", 1)
    c.send(command("UNSUBSCRIBE", "b"))
    assert c.read_reply() == frame("unsubscribe", "b", 0)
    c.send(command("SUNSUBSCRIBE", "s1"))
    assert c.read_reply() == frame("sunsubscribe", "s1", 0)
    # Out of pub/sub mode: a plain PONG.
    assert c.cmd("PING") == b"+PONG\r\n"


def test_unsubscribe_without_arguments_drops_all(raw):
    c = raw()
    c.send(command("SUBSCRIBE", "a", "b", "c"))
    replies(c, 3)
    c.send(command("PSUBSCRIBE", "x*", "y*"))
    replies(c, 2)
    c.send(command("UNSUBSCRIBE"))
    got = [decode(x) for x in replies(c, 3)]
    assert [g[0] for g in got] == [b"unsubscribe"] * 3
    assert sorted(g[1] for g in got) == [b"a", b"b", b"c"]
    assert [g[2] for g in got] == [4, 3, 2]
    c.send(command("PUNSUBSCRIBE"))
    got = [decode(x) for x in replies(c, 2)]
    assert sorted(g[1] for g in got) == [b"x*", b"y*"]
    assert [g[2] for g in got] == [1, 0]
    # Exactly those replies: the next one is PING's, and it is a plain PONG.
    assert c.cmd("PING") == b"+PONG\r\n"
    assert c.cmd("SET", "k", "v") == b"+OK\r\n"


def test_unsubscribe_with_nothing_subscribed_replies_once(raw):
    c = raw()
    # Pipelined with a PING: exactly one reply each, with a null name.
    c.send(command("UNSUBSCRIBE") + command("PUNSUBSCRIBE") + command("SUNSUBSCRIBE") +
           command("PING"))
    assert c.read_reply() == b"*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n"
    assert c.read_reply() == b"*3\r\n$12\r\npunsubscribe\r\n$-1\r\n:0\r\n"
    assert c.read_reply() == b"*3\r\n$12\r\nsunsubscribe\r\n$-1\r\n:0\r\n"
    assert c.read_reply() == b"+PONG\r\n"
    # The count is the client's, even when it holds other kinds.
    c.send(command("SUBSCRIBE", "a"))
    c.read_reply()
    c.send(command("PUNSUBSCRIBE"))
    assert c.read_reply() == b"*3\r\n$12\r\npunsubscribe\r\n$-1\r\n:1\r\n"
    c.send(command("SUNSUBSCRIBE"))
    assert c.read_reply() == b"*3\r\n$12\r\nsunsubscribe\r\n$-1\r\n:0\r\n"


def test_shard_subscription_alone_keeps_pubsub_mode(raw):
    c = raw()
    c.send(command("SSUBSCRIBE", "s"))
    assert c.read_reply() == frame("ssubscribe", "s", 1)
    c.send(command("UNSUBSCRIBE"))
    assert c.read_reply() == b"*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n"
    assert c.cmd("PING") == b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"  # still subscribed
    c.send(command("SUNSUBSCRIBE"))
    assert c.read_reply() == frame("sunsubscribe", "s", 0)
    assert c.cmd("PING") == b"+PONG\r\n"


# ---- message shapes --------------------------------------------------------

def test_message_shapes_resp2(raw, r):
    sub = raw()
    sub.send(command("SUBSCRIBE", "news"))
    sub.read_reply()
    sub.send(command("PSUBSCRIBE", "ne*"))
    sub.read_reply()
    sub.send(command("SSUBSCRIBE", "shard"))
    sub.read_reply()
    assert r.publish("news", "hello") == 2
    assert sub.read_reply() == b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n"
    assert sub.read_reply() == (b"*4\r\n$8\r\npmessage\r\n$3\r\nne*\r\n$4\r\nnews\r\n"
                                b"$5\r\nhello\r\n")
    assert r.execute_command("SPUBLISH", "shard", "x\r\ny") == 1
    assert sub.read_reply() == b"*3\r\n$8\r\nsmessage\r\n$5\r\nshard\r\n$4\r\nx\r\ny\r\n"
    # Empty and binary payloads are bulk strings like any other.
    assert r.publish("news", b"") == 2
    assert sub.read_reply() == b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$0\r\n\r\n"
    assert sub.read_reply() == b"*4\r\n$8\r\npmessage\r\n$3\r\nne*\r\n$4\r\nnews\r\n$0\r\n\r\n"


def test_push_shapes_resp3(raw, r):
    sub = raw()
    assert sub.cmd("HELLO", "3").startswith(b"%")
    sub.send(command("UNSUBSCRIBE"))
    assert sub.read_reply() == b">3\r\n$11\r\nunsubscribe\r\n_\r\n:0\r\n"
    sub.send(command("SUBSCRIBE", "news"))
    assert sub.read_reply() == b">3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n"
    sub.send(command("PSUBSCRIBE", "ne*"))
    assert sub.read_reply() == b">3\r\n$10\r\npsubscribe\r\n$3\r\nne*\r\n:2\r\n"
    sub.send(command("SSUBSCRIBE", "shard"))
    assert sub.read_reply() == b">3\r\n$10\r\nssubscribe\r\n$5\r\nshard\r\n:1\r\n"
    assert r.publish("news", "hello") == 2
    assert sub.read_reply() == b">3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n"
    assert sub.read_reply() == (b">4\r\n$8\r\npmessage\r\n$3\r\nne*\r\n$4\r\nnews\r\n"
                                b"$5\r\nhello\r\n")
    assert r.execute_command("SPUBLISH", "shard", "s") == 1
    assert sub.read_reply() == b">3\r\n$8\r\nsmessage\r\n$5\r\nshard\r\n$1\r\ns\r\n"
    sub.send(command("UNSUBSCRIBE", "news"))
    assert sub.read_reply() == b">3\r\n$11\r\nunsubscribe\r\n$4\r\nnews\r\n:1\r\n"
    sub.send(command("PUNSUBSCRIBE"))
    assert sub.read_reply() == b">3\r\n$12\r\npunsubscribe\r\n$3\r\nne*\r\n:0\r\n"
    sub.send(command("SUNSUBSCRIBE", "shard"))
    assert sub.read_reply() == b">3\r\n$12\r\nsunsubscribe\r\n$5\r\nshard\r\n:0\r\n"
    assert sub.cmd("PING") == b"+PONG\r\n"


# ---- PUBLISH / SPUBLISH receivers ------------------------------------------

def test_publish_counts_channel_and_each_matching_pattern(raw, r):
    a = raw()
    b = raw()
    a.send(command("SUBSCRIBE", "foo.bar"))
    a.read_reply()
    a.send(command("PSUBSCRIBE", "foo.*"))
    assert a.read_reply() == frame("psubscribe", "foo.*", 2)
    b.send(command("PSUBSCRIBE", "foo.*", "*bar", "nomatch*"))
    replies(b, 3)
    # a: channel + pattern; b: two patterns.
    assert r.publish("foo.bar", "hi") == 4
    assert a.read_reply() == frame("message", "foo.bar", "hi")
    assert a.read_reply() == frame("pmessage", "foo.*", "foo.bar", "hi")
    got = sorted(decode(x)[1] for x in replies(b, 2))
    assert got == [b"*bar", b"foo.*"]
    # Glob patterns: foo.* needs the literal dot.
    assert r.publish("foo1", "x") == 0
    assert r.publish("barfoo.1", "x") == 0
    assert r.publish("foo.", "x") == 2  # foo.* in a and b
    assert a.read_reply() == frame("pmessage", "foo.*", "foo.", "x")
    assert b.read_reply() == frame("pmessage", "foo.*", "foo.", "x")
    assert r.publish("nobody", "x") == 0
    # Nothing else arrived: a PING answers next.
    assert a.cmd("PING") == b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"
    assert b.cmd("PING") == b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"


def test_spublish_and_publish_namespaces_are_separate(raw, r):
    s = raw()
    g = raw()
    s.send(command("SSUBSCRIBE", "ch"))
    s.read_reply()
    g.send(command("SUBSCRIBE", "ch"))
    g.read_reply()
    g.send(command("PSUBSCRIBE", "c*"))
    g.read_reply()
    assert r.execute_command("SPUBLISH", "ch", "shard") == 1  # patterns never see it
    assert s.read_reply() == frame("smessage", "ch", "shard")
    assert r.publish("ch", "global") == 2
    assert g.read_reply() == frame("message", "ch", "global")
    assert g.read_reply() == frame("pmessage", "c*", "ch", "global")
    assert r.execute_command("SPUBLISH", "cx", "x") == 0
    assert s.cmd("PING") == b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"
    assert g.cmd("PING") == b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"


@trove_workers
def test_publish_reaches_every_worker(raw):
    subs = [on_worker(raw, w) for w in range(WORKERS)]
    for s in subs:
        s.send(command("SUBSCRIBE", "everywhere"))
        assert s.read_reply() == frame("subscribe", "everywhere", 1)
        s.send(command("PSUBSCRIBE", "every*"))
        assert s.read_reply() == frame("psubscribe", "every*", 2)
    for w in range(WORKERS):
        pub = on_worker(raw, w)
        assert pub.cmd("PUBLISH", "everywhere", "from%d" % w) == b":%d\r\n" % (2 * WORKERS)
        for s in subs:
            assert s.read_reply() == frame("message", "everywhere", "from%d" % w)
            assert s.read_reply() == frame("pmessage", "every*", "everywhere", "from%d" % w)


def _read_messages(sock, want, out, errors):
    """Reads `want` RESP2 pub/sub frames of bulk strings from sock into out
    (as lists of bytes)."""
    buf = b""
    pos = 0
    try:
        while len(out) < want:
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise EOFError("subscriber closed after %d messages" % len(out))
            buf = buf[pos:] + chunk
            pos = 0
            while len(out) < want:
                end = buf.find(b"\r\n", pos)
                if end < 0:
                    break
                n = int(buf[pos + 1:end])
                p = end + 2
                items = []
                for _ in range(n):
                    e = buf.find(b"\r\n", p)
                    if e < 0:
                        break
                    ln = int(buf[p + 1:e])
                    if len(buf) < e + 2 + ln + 2:
                        break
                    items.append(buf[e + 2:e + 2 + ln])
                    p = e + 2 + ln + 2
                if len(items) < n:
                    break
                out.append(items)
                pos = p
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.append(e)


def test_fanout_and_order_across_workers(raw, resp_port):
    nsubs, npubs, count = 8, 2, 2000
    subs = []
    workers = set()
    for i in range(nsubs):
        c = raw()
        workers.add(client_id(c) % WORKERS)
        if i % 2 == 0:
            c.send(command("SUBSCRIBE", "fan"))
            assert c.read_reply() == frame("subscribe", "fan", 1)
        else:
            c.send(command("PSUBSCRIBE", "fa?"))
            assert c.read_reply() == frame("psubscribe", "fa?", 1)
        subs.append(c)
    if IS_TROVE:
        assert workers == set(range(WORKERS)), "subscribers not spread over the workers"
    results = [[] for _ in subs]
    errors = []
    readers = [threading.Thread(target=_read_messages, args=(s.sock, npubs * count, results[i],
                                                               errors))
               for i, s in enumerate(subs)]
    for t in readers:
        t.start()
    pubs = [raw() for _ in range(npubs)]
    if IS_TROVE:
        assert len({client_id(p) % WORKERS for p in pubs}) == npubs

    def publish(idx):
        try:
            p = pubs[idx]
            batch = 100
            for start in range(0, count, batch):
                p.send(b"".join(command("PUBLISH", "fan", "p%d:%d" % (idx, n))
                                for n in range(start, start + batch)))
                got = [p.read_reply() for _ in range(batch)]
                assert got == [b":%d\r\n" % nsubs] * batch, got[:3]
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    writers = [threading.Thread(target=publish, args=(i,)) for i in range(npubs)]
    for t in writers:
        t.start()
    for t in writers + readers:
        t.join(60)
        assert not t.is_alive(), "fan-out stalled"
    assert not errors, errors
    for i, msgs in enumerate(results):
        assert len(msgs) == npubs * count
        seen = {}
        for m in msgs:
            if i % 2 == 0:
                assert m[:2] == [b"message", b"fan"], m
                payload = m[2]
            else:
                assert m[:3] == [b"pmessage", b"fa?", b"fan"], m
                payload = m[3]
            who, n = payload.split(b":")
            seen.setdefault(who, []).append(int(n))
        # Every message, and each publisher's in its order.
        assert sorted(seen) == [b"p%d" % k for k in range(npubs)]
        for who, ns in seen.items():
            assert ns == list(range(count)), (i, who)


# ---- RESP2 subscribed mode, RESP3 ------------------------------------------

RESTRICTED = ("-ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT "
              "/ RESET are allowed in this context\r\n")


def test_resp2_subscribed_mode_allows_only_pubsub_commands(raw):
    c = raw()
    c.send(command("SUBSCRIBE", "a"))
    c.read_reply()
    assert c.cmd("GET", "x") == (RESTRICTED % "get").encode()
    assert c.cmd("SET", "x", "1") == (RESTRICTED % "set").encode()
    assert c.cmd("PING") == b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"
    assert c.cmd("PING", "hi") == b"*2\r\n$4\r\npong\r\n$2\r\nhi\r\n"
    c.send(command("PSUBSCRIBE", "b*"))
    assert c.read_reply() == frame("psubscribe", "b*", 2)
    c.send(command("SSUBSCRIBE", "s"))
    assert c.read_reply() == frame("ssubscribe", "s", 1)
    # Still subscribed, still restricted; QUIT is allowed and closes.
    assert c.cmd("ECHO", "x") == (RESTRICTED % "echo").encode()
    assert c.cmd("QUIT") == b"+OK\r\n"
    assert c.closed()


def test_resp2_subscribed_mode_error_names_the_subcommand(raw):
    """Redis names the command by c->cmd->fullname (server.c processCommand):
    'pubsub|numsub' for a known subcommand, the plain name otherwise; an
    unknown subcommand is rejected before, by the command lookup."""
    c = raw()
    c.send(command("SUBSCRIBE", "a"))
    c.read_reply()
    assert c.cmd("PUBSUB", "NUMSUB", "a") == (RESTRICTED % "pubsub|numsub").encode()
    assert c.cmd("CLIENT", "LIST") == (RESTRICTED % "client|list").encode()
    assert c.cmd("CONFIG", "GET", "x") == (RESTRICTED % "config|get").encode()
    assert c.cmd("GET", "a") == (RESTRICTED % "get").encode()
    assert c.cmd("PUBSUB") == \
        b"-ERR wrong number of arguments for 'pubsub' command\r\n"
    assert c.cmd("PUBSUB", "NOSUCH") == \
        b"-ERR unknown subcommand 'NOSUCH'. Try PUBSUB HELP.\r\n"
    # Still subscribed, still restricted.
    assert c.cmd("PING") == frame("pong", "")


def test_reset_leaves_pubsub_mode(raw, r):
    c = raw()
    c.send(command("SUBSCRIBE", "rs"))
    c.read_reply()
    c.send(command("PSUBSCRIBE", "rs*"))
    c.read_reply()
    c.send(command("SSUBSCRIBE", "rss"))
    c.read_reply()
    assert r.pubsub_numsub("rs") == [(b"rs", 1)]
    assert c.cmd("RESET") == b"+RESET\r\n"
    assert r.pubsub_numsub("rs") == [(b"rs", 0)]
    assert r.pubsub_numpat() == 0
    assert r.execute_command("PUBSUB", "SHARDNUMSUB", "rss") == [b"rss", 0]
    assert r.publish("rs", "x") == 0
    assert c.cmd("PING") == b"+PONG\r\n"
    assert c.cmd("GET", "x") == b"$-1\r\n"


def test_resp3_any_command_while_subscribed(raw, r):
    c = raw()
    c.cmd("HELLO", "3")
    c.send(command("SUBSCRIBE", "r3"))
    assert c.read_reply() == frame("subscribe", "r3", 1, proto=3)
    r.set("x", "1")
    assert c.cmd("GET", "x") == b"$1\r\n1\r\n"
    assert c.cmd("PING") == b"+PONG\r\n"
    assert c.cmd("PING", "hi") == b"$2\r\nhi\r\n"
    assert c.cmd("SET", "y", "2") == b"+OK\r\n"
    assert r.publish("r3", "m") == 1
    assert c.read_reply() == frame("message", "r3", "m", proto=3)


def test_resp3_publish_to_self_gets_reply_first(raw, r):
    if TARGET == "redis" and redis_version(r) < (7, 2):
        pytest.skip("Redis < 7.2 sends the push before the reply")
    c = raw()
    c.cmd("HELLO", "3")
    c.send(command("SUBSCRIBE", "self"))
    c.read_reply()
    c.send(command("PUBLISH", "self", "me"))
    assert c.read_reply() == b":1\r\n"
    assert c.read_reply() == b">3\r\n$7\r\nmessage\r\n$4\r\nself\r\n$2\r\nme\r\n"
    assert c.cmd("PING") == b"+PONG\r\n"


# ---- PUBSUB introspection ---------------------------------------------------

def test_pubsub_channels_numsub_numpat(raw, r):
    a = raw()
    b = raw()
    a.send(command("SUBSCRIBE", "news.tech", "news.art", "weather"))
    replies(a, 3)
    b.send(command("SUBSCRIBE", "news.tech"))
    b.read_reply()
    a.send(command("PSUBSCRIBE", "n*", "w*"))
    replies(a, 2)
    b.send(command("PSUBSCRIBE", "w*", "x*"))
    replies(b, 2)
    assert sorted(r.pubsub_channels()) == [b"news.art", b"news.tech", b"weather"]
    assert sorted(r.pubsub_channels("news.*")) == [b"news.art", b"news.tech"]
    assert r.pubsub_channels("zz*") == []
    # NUMSUB: a flat array of name, count (patterns not counted).
    assert r.execute_command("PUBSUB", "NUMSUB", "news.tech", "weather", "none") == \
        [b"news.tech", 2, b"weather", 1, b"none", 0]
    assert r.execute_command("PUBSUB", "NUMSUB") == []
    # NUMPAT: unique patterns over all clients.
    assert r.pubsub_numpat() == 3


def test_pubsub_shardchannels_shardnumsub(raw, r):
    a = raw()
    b = raw()
    a.send(command("SSUBSCRIBE", "s.one", "s.two", "t"))
    replies(a, 3)
    b.send(command("SSUBSCRIBE", "s.one"))
    b.read_reply()
    b.send(command("SUBSCRIBE", "global"))
    b.read_reply()
    assert sorted(r.execute_command("PUBSUB", "SHARDCHANNELS")) == [b"s.one", b"s.two", b"t"]
    assert sorted(r.execute_command("PUBSUB", "SHARDCHANNELS", "s.*")) == [b"s.one", b"s.two"]
    assert r.execute_command("PUBSUB", "SHARDNUMSUB", "s.one", "t", "global") == \
        [b"s.one", 2, b"t", 1, b"global", 0]
    assert r.execute_command("PUBSUB", "SHARDNUMSUB") == []
    assert r.pubsub_channels() == [b"global"]
    assert r.pubsub_numsub("s.one") == [(b"s.one", 0)]


def test_pubsub_numsub_is_flat_array_in_resp3(raw):
    s = raw()
    s.send(command("SUBSCRIBE", "n3"))
    s.read_reply()
    c = raw()
    c.cmd("HELLO", "3")
    assert c.cmd("PUBSUB", "NUMSUB", "n3", "none") == \
        b"*4\r\n$2\r\nn3\r\n:1\r\n$4\r\nnone\r\n:0\r\n"
    assert c.cmd("PUBSUB", "SHARDNUMSUB", "n3") == b"*2\r\n$2\r\nn3\r\n:0\r\n"


def test_pubsub_help(raw):
    c = raw()
    got = decode(c.cmd("PUBSUB", "HELP"))
    assert got[0] == b"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    for entry in (b"CHANNELS [<pattern>]", b"NUMPAT", b"NUMSUB [<channel> ...]",
                  b"SHARDCHANNELS [<pattern>]", b"SHARDNUMSUB [<shardchannel> ...]"):
        assert entry in got
    # Redis 7.0 says "Prints this help.", 7.2 and later "Print this help.".
    assert got[-2] == b"HELP" and got[-1] in (b"    Prints this help.", b"    Print this help.")
    assert len(got) == 14


def test_pubsub_syntax_error_for_known_subcommand(raw):
    c = raw()
    assert c.cmd("PUBSUB", "CHANNELS", "a", "b") == (
        b"-ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. "
        b"Try PUBSUB HELP.\r\n")
    assert c.cmd("PUBSUB") == b"-ERR wrong number of arguments for 'pubsub' command\r\n"


def test_pubsub_unknown_subcommand(raw):
    c = raw()
    assert c.cmd("PUBSUB", "foo") == b"-ERR unknown subcommand 'foo'. Try PUBSUB HELP.\r\n"


def test_pubsub_subcommand_arity(raw):
    c = raw()
    assert c.cmd("PUBSUB", "NUMPAT", "x") == \
        b"-ERR wrong number of arguments for 'pubsub|numpat' command\r\n"
    assert c.cmd("PUBSUB", "HELP", "x") == \
        b"-ERR wrong number of arguments for 'pubsub|help' command\r\n"


# ---- disconnects -----------------------------------------------------------

def test_disconnect_removes_subscriptions(raw, r):
    c = raw()
    c.send(command("SUBSCRIBE", "gone"))
    c.read_reply()
    c.send(command("PSUBSCRIBE", "gone*"))
    c.read_reply()
    c.send(command("SSUBSCRIBE", "gone.s"))
    c.read_reply()
    ps = r.pubsub()  # redis-py subscriber too
    ps.subscribe("gone")
    assert wait_until(lambda: numsub(r, "gone") == 2)
    assert r.publish("gone", "x") == 3
    c.close()
    assert wait_until(lambda: numsub(r, "gone") == 1), r.pubsub_numsub("gone")
    assert wait_until(lambda: r.pubsub_numpat() == 0)
    assert r.execute_command("PUBSUB", "SHARDNUMSUB", "gone.s") == [b"gone.s", 0]
    assert r.publish("gone", "y") == 1
    ps.close()
    assert wait_until(lambda: numsub(r, "gone") == 0)
    assert r.publish("gone", "z") == 0
    assert r.pubsub_channels() == []


def test_slow_subscriber_is_disconnected(raw, r, resp_port, request):
    """A subscriber that never reads passes client-output-buffer-limit pubsub
    (32 MB hard) and is disconnected; the server's memory stays bounded and
    other clients of the subscriber's worker keep being served."""
    pid = server_pid(request, r)
    rss_start = rss_kib(pid)

    sub = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sub.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sub.connect(("127.0.0.1", resp_port))
    sub.settimeout(10)
    sub.sendall(command("CLIENT", "ID"))
    head = sub.recv(64)
    assert head.startswith(b":") and head.endswith(b"\r\n"), head
    sub_worker = int(head[1:-2]) % WORKERS
    sub.sendall(command("SUBSCRIBE", "slow"))
    want = frame("subscribe", "slow", 1)
    got = b""
    while len(got) < len(want):
        got += sub.recv(len(want) - len(got))
    assert got == want
    # From here on the subscriber reads nothing.

    if IS_TROVE:
        pinger = on_worker(raw, sub_worker)
        publisher = on_worker(raw, (sub_worker + 1) % WORKERS)
    else:
        pinger, publisher = raw(), raw()
    pinger.sock.settimeout(5)

    stop = threading.Event()
    latencies = []
    rss_peak = [rss_start]
    errors = []

    def ping_loop():
        try:
            while not stop.is_set():
                t0 = time.monotonic()
                reply = pinger.cmd("PING")
                latencies.append(time.monotonic() - t0)
                assert reply == b"+PONG\r\n", reply
                rss_peak[0] = max(rss_peak[0], rss_kib(pid))
                time.sleep(0.002)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    pinger_thread = threading.Thread(target=ping_loop)
    pinger_thread.start()
    payload = b"x" * 65536
    batch = 16
    total_target = 100 << 20
    chunk = command("PUBLISH", "slow", payload) * batch
    sent = 0
    receivers = []
    started = time.monotonic()
    try:
        while sent < total_target:
            publisher.send(chunk)
            receivers += [publisher.read_reply() for _ in range(batch)]
            sent += batch * len(payload)
            rss_peak[0] = max(rss_peak[0], rss_kib(pid))
            assert time.monotonic() - started < 15 * SLOW, "publishing 100 MB took too long"
        # The subscription goes when the connection does.
        gone = wait_until(lambda: numsub(r, "slow") == 0, timeout=5)
    finally:
        stop.set()
        pinger_thread.join(10)
    assert not errors, errors
    assert set(receivers) <= {b":1\r\n", b":0\r\n"}
    assert gone, r.pubsub_numsub("slow")
    assert r.publish("slow", "after") == 0

    # The subscriber finally reads: some buffered messages, then EOF/reset,
    # far short of what was published.
    received = 0
    sub.settimeout(10)
    closed = False
    try:
        while True:
            data = sub.recv(1 << 20)
            if not data:
                closed = True
                break
            received += len(data)
    except (ConnectionResetError, BrokenPipeError):
        closed = True
    except socket.timeout:
        pass
    sub.close()
    assert closed, "subscriber still connected after %d bytes" % received
    assert received < sent // 2, (received, sent)

    growth_mb = (rss_peak[0] - rss_start) / 1024
    assert growth_mb < 300, "RSS grew by %.0f MB" % growth_mb
    assert len(latencies) >= 5, latencies
    lat = sorted(latencies)
    worst = lat[-1]
    median = lat[len(lat) // 2]
    p90 = lat[int(len(lat) * 0.9)]
    print("slow subscriber: published %d MB, subscriber read %d KB, RSS +%.0f MB, %d pings, "
          "median %.1f ms, p90 %.1f ms, worst %.1f ms" %
          (sent >> 20, received >> 10, growth_mb, len(lat), median * 1000, p90 * 1000,
           worst * 1000))
    # Generous for a shared 2-core machine and a debug or ASan build. Before
    # payloads were shared (each 64 KiB message copied into the stuck
    # subscriber's buffer, page-faulting fresh blocks), p90 here was 25-60 ms
    # and the worst 70-120 ms; since, p90 is under 1 ms and the worst ~10 ms
    # (Redis: worst ~4 ms).
    if not TSAN:
        assert p90 < (0.060 if ASAN else 0.020), "p90 of PINGs on the subscriber's worker: %.0f ms" % (p90 * 1000)
        assert worst < 1.0, "a PING on the subscriber's worker took %.0f ms" % (worst * 1000)
