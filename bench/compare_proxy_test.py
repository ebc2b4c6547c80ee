#!/usr/bin/env python3
"""Unit tests for bench/compare_proxy's topologies (issue 37): option parsing, the Lua files it
writes and the reply checks it runs before timing.

No proxy runs: the checks talk to a fake server on an ephemeral port that answers from a table.

  /usr/bin/python3 bench/compare_proxy_test.py
"""

import importlib.machinery
import importlib.util
import os
import socket
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def load_compare_proxy():
    loader = importlib.machinery.SourceFileLoader("compare_proxy",
                                                  os.path.join(HERE, "compare_proxy"))
    spec = importlib.util.spec_from_loader("compare_proxy", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


cp = load_compare_proxy()


class FakeServer:
    """Answers each request it knows (a whole request, as one recv) from a table; closes on
    anything else."""

    def __init__(self, table):
        self.table = table
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(5.0)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2.0)
                try:
                    req = conn.recv(4096)
                    if req in self.table:
                        conn.sendall(self.table[req])
                except OSError:
                    pass

    def close(self):
        self.sock.close()


class FakeProxy:
    def __init__(self, topology, port, backend_ports=()):
        self.topology = topology
        self.port = port
        self.backends = [type("B", (), {"ports": {"mc": p}})() for p in backend_ports]

    def port_for(self, fam):
        return self.port


def good_table(topology):
    return dict(cp.CHECKS + cp.TOPOLOGY_CHECKS.get(topology, []))


class OptionsTest(unittest.TestCase):
    def test_new_topologies_are_accepted(self):
        for t in ("inspect1", "internal"):
            self.assertEqual(cp.parse_args(["--topology", t]).topology, t)

    def test_old_topologies_and_default_remain(self):
        self.assertEqual(cp.parse_args([]).topology, "direct1")
        for t in ("direct1", "multiget4", "failover3", "allfastest3"):
            self.assertEqual(cp.parse_args(["--topology", t]).topology, t)

    def test_unknown_topology_is_refused(self):
        with open(os.devnull, "w") as null:
            saved, sys.stderr = sys.stderr, null
            try:
                with self.assertRaises(SystemExit):
                    cp.parse_args(["--topology", "inspect2"])
            finally:
                sys.stderr = saved

    def test_internal_has_no_backends_inspect1_one(self):
        self.assertEqual(cp.TOPOLOGIES["internal"][0], 0)
        self.assertEqual(cp.TOPOLOGIES["inspect1"][0], 1)


class ConfigTest(unittest.TestCase):
    def write(self, topology, ports):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "c.lua")
            cp.write_config(path, topology, ports)
            with open(path) as f:
                return f.read()

    def test_inspect1_inspects_mutates_and_names_its_backend(self):
        lua = self.write("inspect1", [12345])
        self.assertIn("mcp.backend('b1', '127.0.0.1', 12345)", lua)
        self.assertIn('{ t = "keybegin", str = "key:" }', lua)
        self.assertIn('{ t = "hasflag", flag = "q" }', lua)
        self.assertIn('{ t = "cmdset", cmd = "get" }', lua)
        self.assertIn('{ t = "keycopy", idx = 1 }', lua)
        self.assertIn("rctx:request_new()", lua)
        self.assertIn("u = 1", lua)
        # The Lua string keeps its escapes (a raw CR LF would end the string literal).
        self.assertIn(r'"SERVER_ERROR no route\r\n"', lua)

    def test_internal_has_no_backend_and_uses_the_internal_handler(self):
        lua = self.write("internal", [])
        self.assertNotIn("mcp.backend", lua)
        self.assertIn("fg:new_handle(mcp.internal_handler)", lua)
        self.assertIn("mcp.attach(mcp.CMD_GET, fg)", lua)
        self.assertIn("mcp.attach(mcp.CMD_SET, fg)", lua)

    def test_direct1_and_routelib_configs_unchanged(self):
        lua = self.write("direct1", [7])
        self.assertIn("mcp.backend('b1', '127.0.0.1', 7)", lua)
        self.assertNotIn("inspector", lua)
        lua = self.write("failover3", [1, 2, 3])
        self.assertIn("route_failover{", lua)
        self.assertIn('"127.0.0.1:3"', lua)


class ValidateTest(unittest.TestCase):
    def setUp(self):
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.close()

    def serve(self, table):
        s = FakeServer(table)
        self.servers.append(s)
        return s.port

    def test_correct_replies_pass(self):
        backend = self.serve({cp.CHECKS[1][0]: cp.CHECKS[1][1]})
        port = self.serve(good_table("inspect1"))
        self.assertIsNone(cp.validate(FakeProxy("inspect1", port, [backend])))
        port = self.serve(good_table("internal"))
        self.assertIsNone(cp.validate(FakeProxy("internal", port)))

    def test_a_wrong_reply_is_named(self):
        table = good_table("internal")
        table[cp.CHECKS[1][0]] = b"END\r\n"
        bad = cp.validate(FakeProxy("internal", self.serve(table)))
        self.assertIsNotNone(bad)
        self.assertIn("expected", bad)

    def test_inspect1_must_refuse_keys_outside_its_prefix(self):
        table = good_table("direct1")  # a route that sends every key on
        table[cp.TOPOLOGY_CHECKS["inspect1"][0][0]] = b"END\r\n"
        bad = cp.validate(FakeProxy("inspect1", self.serve(table)))
        self.assertIsNotNone(bad)
        self.assertIn("other:", bad)

    def test_the_item_must_reach_the_single_backend(self):
        backend = self.serve({cp.CHECKS[1][0]: b"END\r\n"})
        port = self.serve(good_table("inspect1"))
        bad = cp.validate(FakeProxy("inspect1", port, [backend]))
        self.assertIsNotNone(bad)
        self.assertIn("did not reach", bad)


if __name__ == "__main__":
    unittest.main()
