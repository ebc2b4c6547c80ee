"""The same command sequences against redis-server 7.0.15 and Trove, byte for byte.

differential/datatypes.txt holds issue 41's families where 7.0.15 implements
them too (replies and errors, RESP2 and RESP3); every reply must be the same.
Skipped without Debian's redis-server, or when the suite itself targets Redis.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "differential"))
import respdiff  # noqa: E402
from conftest import _free_port, _wait_port, resp_target  # noqa: E402

REDIS = os.environ.get("REDIS_BIN", "/usr/bin/redis-server")


@pytest.fixture(scope="module")
def redis_port():
    if resp_target() != "trove":
        pytest.skip("compares Trove with redis-server")
    if not os.path.exists(REDIS):
        pytest.skip("needs Debian's redis-server")
    tmp = tempfile.mkdtemp(prefix="trove-respdiff-")
    port = _free_port()
    proc = subprocess.Popen([REDIS, "--port", str(port), "--save", "", "--appendonly", "no",
                             "--dir", tmp], stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT)
    try:
        if not _wait_port(port, proc):
            pytest.fail("redis-server did not start")
        yield port
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.parametrize("listing", ["datatypes.txt"])
def test_same_replies_as_redis(redis_port, resp_port, listing):
    cmds = respdiff.load([os.path.join(HERE, "differential", listing)])
    assert len(cmds) > 50
    started = time.monotonic()
    diffs = respdiff.differences(redis_port, resp_port, cmds)
    assert time.monotonic() - started < 60
    assert diffs == [], "\n".join("RESP%s %s\n  redis: %r\n  trove: %r" % d for d in diffs)
