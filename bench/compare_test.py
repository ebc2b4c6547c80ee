#!/usr/bin/env python3
"""Unit tests for bench/compare's option parsing and report labels (issue 11).

No server runs: fake memcached binaries are shell scripts that answer -V.

  /usr/bin/python3 bench/compare_test.py
"""

import importlib.machinery
import importlib.util
import os
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_lib as lib  # noqa: E402


def load_compare():
    loader = importlib.machinery.SourceFileLoader("compare", os.path.join(HERE, "compare"))
    spec = importlib.util.spec_from_loader("compare", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


compare = load_compare()


class CompareOptionsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.a = self.fake("a", "memcached 1.6.45")
        self.b = self.fake("b", "memcached 1.6.18")

    def tearDown(self):
        self.tmp.cleanup()

    def fake(self, name, version):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\necho '{version}'\n")
        os.chmod(path, 0o755)
        return path

    def parse(self, argv, env=None):
        environ = {k: v for k, v in os.environ.items() if k != "MEMCACHED_BIN"}
        environ.update(env or {})
        with mock.patch.object(sys, "argv", ["compare"] + argv), \
                mock.patch.dict(os.environ, environ, clear=True):
            return compare.parse_args()

    def test_default_is_memcached_on_path(self):
        with mock.patch("shutil.which", return_value="/usr/bin/memcached"):
            a = self.parse([])
        self.assertEqual(a.memcached_bins, ["/usr/bin/memcached"])

    def test_env_overrides_path(self):
        self.assertEqual(self.parse([], {"MEMCACHED_BIN": self.a}).memcached_bins, [self.a])

    def test_flag_overrides_env_and_may_repeat(self):
        a = self.parse(["--memcached-bin", self.b, "--memcached-bin", self.a,
                        "--memcached-bin", self.b], {"MEMCACHED_BIN": self.a})
        self.assertEqual(a.memcached_bins, [self.b, self.a])  # order kept, duplicates dropped

    def test_missing_binary_is_an_error(self):
        for argv, env in ((["--memcached-bin", "/nonexistent/memcached"], None),
                          ([], {"MEMCACHED_BIN": self.tmp.name})):  # a folder is no binary
            with self.assertRaises(SystemExit), mock.patch("sys.stderr"):
                self.parse(argv, env)

    def test_server_is_named_by_its_version(self):
        m = lib.MemcachedServer(1, lib.CpuLayout.detect(), self.a)
        self.assertEqual(m.name, "memcached 1.6.45")
        self.assertEqual(m.clone().name, "memcached 1.6.45")
        self.assertIn(self.a, m.version())
        m.ports = {"mc": 11211}
        self.assertEqual(m.command()[0], self.a)
        broken = lib.MemcachedServer(1, lib.CpuLayout.detect(), "/nonexistent/memcached")
        self.assertEqual(broken.name, "memcached (/nonexistent/memcached)")


class ReportLabelsTest(unittest.TestCase):
    def run_doc(self, ops, cpu):
        return {"total": {"ops_per_sec": ops, "latency_us": {"p50": 1, "p99": 2, "p99_9": 3}},
                "server_cpu_us_per_op": cpu, "server_util": 0.9, "gen_util": 0.5,
                "errors": {"total": 0}, "saturated": "server", "loadavg_1m_before": 1.0}

    def test_every_memcached_gets_its_own_labelled_ratio(self):
        servers = ["trove", "memcached 1.6.45", "memcached 1.6.18"]
        results = {("W2", "trove"): [self.run_doc(900.0, 1.0)],
                   ("W2", "memcached 1.6.45"): [self.run_doc(600.0, 1.5)],
                   ("W2", "memcached 1.6.18"): [self.run_doc(150.0, 6.0)]}
        meta = {"date_utc": "x", "command": "c", "commit": "c", "machine": "m", "layout": "l",
                "server_threads": 1, "runs": 1, "duration_s": 1, "warmup_s": 0,
                "versions": {}, "notes": [], "elapsed_s": 0}
        md = lib.render_markdown(meta, compare.WORKLOADS, ["W2"], servers, results, {}, {})
        self.assertIn("# Trove vs memcached 1.6.45 and memcached 1.6.18", md)
        self.assertIn("| W2 | memcached 1.6.45 | 600 |", md)
        self.assertIn("| W2 | memcached 1.6.45 | 1.50x | 1.50x | 0.67 | 0.67 | "
                      ">= 4.0x ops/s (NOT met) |", md)
        self.assertIn("| W2 | memcached 1.6.18 | 6.00x | 6.00x | 0.17 | 0.17 | "
                      ">= 4.0x ops/s (met) |", md)
        self.assertNotIn("| W2 | memcached |", md)

    def test_paired_ratio_pairs_run_i_with_run_i(self):
        # The load moves both servers by up to 4x from run to run; each pair stays 2x apart.
        trove = [self.run_doc(200.0, 1.0), self.run_doc(100.0, 2.0), self.run_doc(400.0, 0.5)]
        peer = [self.run_doc(100.0, 2.0), self.run_doc(50.0, 4.0), self.run_doc(200.0, 1.0)]
        self.assertEqual(lib.paired_ratios(trove, peer), ("2.00x", "0.50"))
        self.assertEqual(lib.paired_ratios(trove, []), ("n/a", "n/a"))


if __name__ == "__main__":
    unittest.main()
