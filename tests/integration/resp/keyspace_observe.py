"""What the RESP tests observe of a write besides its reply: the keyevent
notifications it raised, and how much it moved Redis's dirty counter
(INFO persistence rdb_changes_since_last_save)."""

import os
import time

import pytest
import redis

from conftest import resp_target

# TSan slows every delivery: its waits are ten times as long.
SLOW = 10 if "tsan" in os.environ.get("TROVE_BIN", "") else 1


def listen(r, flags, pattern="__keyevent@0__:*"):
    """Sets notify-keyspace-events to flags and returns a pub/sub connection
    subscribed to pattern (database 0's keyevent channels by default). The
    fake RESP front has no workers to deliver them: the test is skipped there."""
    if resp_target() == "fake":
        pytest.skip("the fake RESP front has no workers to deliver messages")
    r.config_set("notify-keyspace-events", flags)
    p = r.pubsub()
    p.psubscribe(pattern)
    m = p.get_message(timeout=5)
    assert m is not None and m["type"] == "psubscribe", m
    return p


def keyevents(p, n, timeout=5.0):
    """The next n keyevent messages as "event key" strings (fewer when they
    do not come within the timeout)."""
    out = []
    deadline = time.monotonic() + timeout * SLOW
    while len(out) < n and time.monotonic() < deadline:
        m = p.get_message(timeout=0.2)
        if m is not None and m["type"] == "pmessage":
            out.append("%s %s" % (m["channel"].decode().split("__:", 1)[1], m["data"].decode()))
    return out


def dirty(r):
    return int(r.info("persistence")["rdb_changes_since_last_save"])


def changes(r, *args, call=None):
    """How much the command moved the dirty counter (an error reply is fine).
    call: how to send it (default r.execute_command)."""
    before = dirty(r)
    try:
        (call or r.execute_command)(*args)
    except redis.exceptions.ResponseError:
        pass
    return dirty(r) - before
