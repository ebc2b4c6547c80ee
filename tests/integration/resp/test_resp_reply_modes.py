"""No reply mode can hang a connection: after switching to each of them
(CLIENT REPLY OFF/ON/SKIP, RESP2/RESP3, subscribed, blocked, paused,
MONITOR) a PING gets its answer within a second. Same expectations as
redis-server 7 (TROVE_TEST_TARGET=redis).
"""

import socket
import threading
import time

import pytest


def ping_within(c, expect=b"+PONG\r\n", timeout=1.0):
    c.sock.settimeout(timeout)
    c.send(b"*1\r\n$4\r\nPING\r\n")
    try:
        got = c.read_reply()
    except socket.timeout:
        pytest.fail("no reply to PING within %.1f s" % timeout)
    assert got == expect
    c.sock.settimeout(10)


def test_reply_off_then_on(raw):
    c = raw()
    c.send(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n")
    c.send(b"*1\r\n$4\r\nPING\r\n")
    assert c.cmd("CLIENT", "REPLY", "ON") == b"+OK\r\n"  # nothing before it
    ping_within(c)


def test_reply_skip_drops_exactly_one(raw):
    c = raw()
    c.send(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$4\r\nSKIP\r\n")
    c.send(b"*2\r\n$4\r\nPING\r\n$4\r\npong\r\n")
    assert c.cmd("PING", "pong2") == b"$5\r\npong2\r\n"
    ping_within(c)


def test_reply_on_right_after_skip_answers(raw):
    # Redis's "CLIENT REPLY ON: unset SKIP flag": ON clears SKIP, so its own
    # +OK is sent. This hung before the fix.
    c = raw()
    c.send(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$4\r\nSKIP\r\n")
    c.sock.settimeout(1.0)
    assert c.cmd("CLIENT", "REPLY", "ON") == b"+OK\r\n"
    ping_within(c)


def test_reply_skip_while_off_keeps_off(raw):
    c = raw()
    c.send(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n")
    c.send(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$4\r\nSKIP\r\n")
    c.send(b"*2\r\n$4\r\nPING\r\n$1\r\na\r\n")
    c.send(b"*2\r\n$4\r\nPING\r\n$1\r\nb\r\n")
    assert c.cmd("CLIENT", "REPLY", "ON") == b"+OK\r\n"
    ping_within(c)


def test_reply_skip_twice_skips_the_second_too(raw):
    c = raw()
    c.send(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$4\r\nSKIP\r\n")
    c.send(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$4\r\nSKIP\r\n")
    c.send(b"*2\r\n$4\r\nPING\r\n$1\r\na\r\n")
    ping_within(c)


@pytest.mark.parametrize("proto", [2, 3])
def test_protocol_switch(raw, proto):
    c = raw()
    c.cmd("HELLO", str(proto))
    ping_within(c)


def test_subscribed_resp2_and_resp3(raw):
    c = raw()
    c.cmd("SUBSCRIBE", "reply-modes-ch")
    ping_within(c, b"*2\r\n$4\r\npong\r\n$0\r\n\r\n")
    d = raw()
    d.cmd("HELLO", "3")
    d.cmd("SUBSCRIBE", "reply-modes-ch")
    ping_within(d)


def test_blocked_client_answers_after_its_timeout(raw):
    c = raw()
    c.send(b"*3\r\n$5\r\nBLPOP\r\n$11\r\nreply-modes\r\n$3\r\n0.2\r\n")
    c.sock.settimeout(1.0)
    assert c.read_reply() == b"*-1\r\n"
    ping_within(c)


def test_blocked_client_unblocked(raw):
    c = raw()
    cid = int(c.cmd("CLIENT", "ID")[1:-2])
    c.send(b"*3\r\n$5\r\nBLPOP\r\n$11\r\nreply-modes\r\n$1\r\n0\r\n")
    o = raw()
    deadline = time.monotonic() + 2
    while o.cmd("CLIENT", "UNBLOCK", str(cid)) != b":1\r\n":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    c.sock.settimeout(1.0)
    assert c.read_reply() == b"*-1\r\n"
    ping_within(c)


def test_paused_client_answers_when_the_pause_ends(raw):
    c = raw()
    o = raw()
    assert o.cmd("CLIENT", "PAUSE", "300", "ALL") == b"+OK\r\n"
    try:
        ping_within(c, timeout=1.0)
    finally:
        o.cmd("CLIENT", "UNPAUSE")


def test_monitor_client_still_answers(raw):
    c = raw()
    assert c.cmd("MONITOR") == b"+OK\r\n"
    ping_within(c)
