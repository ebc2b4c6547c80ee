"""TLS in the proxy, as memcached's proxy has it: mcp.init_tls() and TLS
backends (tls=true, mcp.backend_use_tls) whose handshake runs non-blocking
on the loop that owns the backend socket (a worker, or the IO thread with
iothread=true), and rctx:tls_peer_cn() for clients of an mtls: listener."""

import os
import socket
import ssl

import pytest

from harness import server as hserver
from harness.certs import Pki
from test_proxy import T, proxy, write

pytestmark = pytest.mark.trove_only


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    p = Pki(str(tmp_path_factory.mktemp("pki")))
    p.alice = p.issue("alice")
    return p


def tls_backend(make_server, pki, *extra):
    cert, key = pki.server
    return make_server("-Z", "-o", "ssl_chain_cert=%s,ssl_key=%s" % (cert, key), *extra)


CONFIG = r"""
function mcp_config_pools()
  mcp.init_tls()
  %s
  return { main = mcp.pool({ b }, { iothread = %s }) }
end
function mcp_config_routes(p)
  local fg = mcp.funcgen_new()
  local h = fg:new_handle(p.main)
  fg:ready({ n = "main", f = function(rctx)
    return function(r) return rctx:enqueue_and_wait(r, h) end
  end })
  for _, c in ipairs({mcp.CMD_MG, mcp.CMD_MS, mcp.CMD_GET, mcp.CMD_SET}) do
    mcp.attach(c, fg)
  end
end
"""


@pytest.mark.parametrize("iothread", ["false", "true"])
@pytest.mark.parametrize("how", ["option", "default"])
def test_requests_reach_a_tls_backend(make_server, pki, tmp_path, iothread, how):
    be = tls_backend(make_server, pki)
    if how == "option":
        backend = "local b = mcp.backend({ label = 'b', host = '127.0.0.1', port = %d, tls = true })" % be.port
    else:
        backend = "mcp.backend_use_tls(true)\n  local b = mcp.backend('b', '127.0.0.1', %d)" % be.port
    cfg = write(tmp_path, "p.lua", CONFIG % (backend, iothread))
    px = proxy(make_server, cfg, "-t", "2")
    c = T.to(px)
    assert c.call("ms foo 2\r\nhi\r\n") == "HD\r\n"
    assert c.call("mg foo v\r\n") == "VA 2\r\n"
    assert c.read_line() == "hi\r\n"
    big = "x" * 300000
    assert c.call("set big 0 0 %d\r\n%s\r\n" % (len(big), big)) == "STORED\r\n"
    assert c.rt("get big\r\n") == "VALUE big 0 %d\r\n%s\r\nEND\r\n" % (len(big), big)
    # The value is on the backend, read over TLS from it directly.
    ctx = ssl.create_default_context(cafile=pki.ca)
    ctx.check_hostname = False
    with ctx.wrap_socket(socket.create_connection(("127.0.0.1", be.port), timeout=5)) as s:
        s.sendall(b"get foo\r\n")
        out = b""
        while not out.endswith(b"END\r\n"):
            out += s.recv(4096)
        assert out == b"VALUE foo 0 2\r\nhi\r\nEND\r\n"


def test_tls_backend_that_does_not_speak_tls_fails_requests(make_server, pki, tmp_path):
    plain = make_server()
    backend = ("local b = mcp.backend({ label = 'b', host = '127.0.0.1', port = %d, tls = true, "
               "connecttimeout = 1, retrytimeout = 1 })" % plain.port)
    cfg = write(tmp_path, "p.lua", CONFIG % (backend, "false"))
    px = proxy(make_server, cfg, "-t", "1")
    c = T.to(px)
    assert c.call("mg foo v\r\n").startswith("SERVER_ERROR")
    assert c.call("mn\r\n") == "MN\r\n"


PEER_CN = r"""
function mcp_config_pools() return {} end
function mcp_config_routes()
  local fg = mcp.funcgen_new()
  fg:ready({ n = "cn", f = function(rctx)
    return function(r) return "SERVER_ERROR cn " .. tostring(rctx:tls_peer_cn()) .. "\r\n" end
  end })
  mcp.attach(mcp.CMD_MD, fg)
end
"""


def test_tls_peer_cn_on_mtls_and_plain_listeners(make_server, pki, tmp_path):
    cfg = write(tmp_path, "cn.lua", PEER_CN)
    plain, mutual, basic = (hserver.free_port() for _ in range(3))
    cert, key = pki.server
    px = proxy(make_server, cfg, "-t", "1", "-Z", "-o",
               "ssl_chain_cert=%s,ssl_key=%s,ssl_ca_cert=%s" % (cert, key, pki.ca), "-l",
               "notls:127.0.0.1:%d,mtls:127.0.0.1:%d,btls:127.0.0.1:%d" % (plain, mutual, basic))
    ctx = ssl.create_default_context(cafile=pki.ca)
    ctx.check_hostname = False
    ctx.load_cert_chain(*pki.alice)
    with ctx.wrap_socket(socket.create_connection(("127.0.0.1", mutual), timeout=5)) as s:
        s.sendall(b"md k\r\n")
        assert s.recv(4096) == b"SERVER_ERROR cn alice\r\n"
    with ctx.wrap_socket(socket.create_connection(("127.0.0.1", basic), timeout=5)) as s:
        s.sendall(b"md k\r\n")  # btls: no certificate asked for, none verified
        assert s.recv(4096) == b"SERVER_ERROR cn nil\r\n"
    with socket.create_connection(("127.0.0.1", plain), timeout=5) as s:
        s.sendall(b"md k\r\n")
        assert s.recv(4096) == b"SERVER_ERROR cn nil\r\n"


def test_routelib_backend_use_tls(make_server, pki, tmp_path):
    from test_routelib import start
    be = tls_backend(make_server, pki)
    config = ('settings{ backend_use_tls = true }\n'
              'pools{ main = { backends = { "127.0.0.1:%d" } } }\n'
              'routes{ default = route_direct{ child = "main" } }\n' % be.port)
    px = start(make_server, tmp_path, config)
    c = T.to(px)
    assert c.call("ms rl 2\r\nok\r\n") == "HD\r\n"
    assert c.call("mg rl v\r\n") == "VA 2\r\n"
    assert c.read_line() == "ok\r\n"
