"""Fixtures shared by every integration test directory (memcache/, resp/).

  server          one server per test module, default flags (or the
                  module's SERVER_ARGS)
  make_server     factory: make_server("-m", "8", "-A") -> a fresh Server for
                  this test only, stopped at teardown
  conn            a raw Conn to the module server
  connect         factory for more raw connections (closed at teardown)
  mc              a pymemcache Client to the module server
  key             a key unique to the test (servers are shared per module)

A test that fails gets the logs (stderr/stdout) of the servers it used
attached to its report. A module server that dies during a test fails that
test, unless the test called server.wait_exit() / server.signal().
"""

import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import server as hserver  # noqa: E402
from harness.client import Conn  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "trove_only: Trove extension, skipped against memcached")


def pytest_report_header(config):
    return "server under test: %s (%s)" % (hserver.find_binary(), hserver.target_kind())


def pytest_collection_modifyitems(config, items):
    if hserver.is_memcached():
        skip = pytest.mark.skip(reason="Trove extension; not in memcached")
        for item in items:
            if "trove_only" in item.keywords:
                item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "setup":
        item._it_started = time.monotonic()
    if not rep.failed:
        return
    started = getattr(item, "_it_started", 0)
    for srv in hserver.REGISTRY:
        used = srv.alive() or (srv.stopped_at or 0) >= started
        if used:
            rc = srv.proc.poll()
            title = "server log: %s (exit %s)" % (" ".join(srv.cmdline), rc)
            text = srv.log()
            if len(text) > 20000:
                text = "...\n" + text[-20000:]
            rep.sections.append((title, text))


@pytest.fixture(autouse=True)
def _servers_stay_alive():
    alive = [s for s in hserver.REGISTRY if s.alive()]
    yield
    dead = [s for s in alive if not s.alive() and not s.allow_exit]
    if dead:
        s = dead[0]
        s.stopped_at = time.monotonic()
        pytest.fail("server died during the test (exit %s): %s"
                    % (s.proc.poll(), " ".join(s.cmdline)), pytrace=False)


def _start(args):
    try:
        return hserver.Server(args)
    except hserver.ServerError as e:
        msg = str(e)
    pytest.fail(msg, pytrace=False)


@pytest.fixture(scope="module")
def server(request):
    """The module's server; a module sets SERVER_ARGS (e.g. ["-t", "4"]) for
    flags of its own."""
    srv = _start(list(getattr(request.module, "SERVER_ARGS", [])))
    yield srv
    srv.cleanup()


@pytest.fixture
def make_server():
    started = []

    def make(*args):
        srv = _start(list(args))
        started.append(srv)
        return srv
    yield make
    for srv in started:
        srv.cleanup()


@pytest.fixture
def connect(server):
    conns = []

    def make(srv=None, **kw):
        c = Conn.to(srv or server, **kw)
        conns.append(c)
        return c
    yield make
    for c in conns:
        c.close()


@pytest.fixture
def conn(connect):
    return connect()


@pytest.fixture
def mc(server):
    from pymemcache.client.base import Client
    client = Client(("127.0.0.1", server.port), connect_timeout=5, timeout=5)
    yield client
    client.close()


@pytest.fixture
def key(request):
    """A key prefix unique to this test: key, key + "2", ..."""
    name = request.node.name
    for ch in "[]-/ ,.=":
        name = name.replace(ch, "_")
    return "%s_%d" % (name[:150], os.getpid())
