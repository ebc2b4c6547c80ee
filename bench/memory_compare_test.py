#!/usr/bin/env python3
"""Unit tests for bench/memory_compare.py (issue 42): the per-item and per-connection
arithmetic, the request and load formats, the reply checks and the SVG writer.

No server runs: replies come from the other end of a socketpair.

  /usr/bin/python3 -m pytest -q bench/memory_compare_test.py
"""

import math
import os
import socket
import sys
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memory_compare as mc  # noqa: E402

NS = "{http://www.w3.org/2000/svg}"


class ArithmeticTest(unittest.TestCase):
    def test_items_per_size_fit_the_budget(self):
        self.assertEqual(mc.items_for(10, 1000000), 1000000)
        self.assertEqual(mc.items_for(4096, 1000000), 700 * 2**20 // 4111)  # 178,546
        self.assertEqual(mc.items_for(1000, 1000000), 700 * 2**20 // 1015)
        self.assertEqual(mc.items_for(100, 500), 500)

    def test_bytes_per_item_and_overhead(self):
        self.assertEqual(mc.bytes_per(1000, 2000, 1024), 1000.0)  # 1000 KiB over 1024 items
        self.assertEqual(mc.bytes_per(1000, 1000, 0), 0.0)
        self.assertEqual(mc.overhead(150.0, 100), 35.0)  # 150 - 15-byte key - 100-byte value
        self.assertEqual(mc.ratio(90.0, 60.0), "1.50")
        self.assertEqual(mc.ratio(90.0, None), "-")
        self.assertEqual(mc.ratio(None, 60.0), "-")

    def test_keys_are_15_bytes_in_both_loaders(self):
        m = mc.template("mc", 3) % 7
        self.assertEqual(m, b"set key:00000000007 0 0 3 noreply\r\nvvv\r\n")
        self.assertEqual(len(m.split()[1]), 15)
        r = mc.template("resp", 3) % 123456
        self.assertEqual(r, b"*3\r\n$3\r\nSET\r\n$15\r\nkey:00000123456\r\n$3\r\nvvv\r\n")
        self.assertEqual(mc.resp("SET", b"k1", b"ab"), b"*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$2\r\nab\r\n")

    def test_source_addresses_are_fresh_and_hold_20000_each(self):
        a = mc.source_addrs(45000)
        b = mc.source_addrs(1)
        self.assertEqual(len(a), 3)
        self.assertEqual(len(b), 1)
        self.assertFalse(set(a) & set(b))
        self.assertTrue(all(x.startswith("127.") and x != "127.0.0.1" for x in a + b))


class RepliesTest(unittest.TestCase):
    def pairs(self, n):
        out = [socket.socketpair() for _ in range(n)]
        self.addCleanup(lambda: [s.close() for p in out for s in p])
        return out

    def test_serve_each_counts_exact_replies(self):
        for fam in ("mc", "resp"):
            pairs = self.pairs(3)
            pairs[0][1].sendall(mc.reply(fam, 0))
            pairs[1][1].sendall(b"SERVER_ERROR out of memory\r\n" if fam == "mc"
                                else b"-ERR max number of clients reached\r\n")
            pairs[2][1].sendall(mc.reply(fam, 2))
            ok, bad, first = mc.serve_each([p[0] for p in pairs], fam)
            self.assertEqual((ok, bad), (2, 1), fam)
            self.assertIn("reply on 1", first)
            self.assertEqual(pairs[2][1].recv(1000), mc.request(fam, 2))

    def test_stats_and_info_parsing(self):
        a, b = self.pairs(1)[0]
        b.sendall(b"STAT pid 1\r\nSTAT curr_connections 12\r\nEND\r\n")
        self.assertEqual(mc.connected(a, "mc"), 12)
        body = b"# Clients\r\nconnected_clients:7\r\nmaxclients:10100\r\n"
        b.sendall(b"$%d\r\n%s\r\n" % (len(body), body))
        self.assertEqual(mc.connected(a, "resp"), 7)

    def test_load_counts_error_replies(self):
        a, b = self.pairs(1)[0]
        b.sendall(b"+OK\r\n" * 2 + b"-OOM command not allowed\r\n")
        self.assertEqual(mc.load(a, "resp", 5, 3), (1, "-OOM command not allowed"))
        a, b = self.pairs(1)[0]
        b.sendall(b"MN\r\n")
        self.assertEqual(mc.load(a, "mc", 5, 3), (0, ""))


class SvgTest(unittest.TestCase):
    def chart(self):
        series = {"trove": [(10, 40.0), (100, 30.0), (1000, 20.0)],
                  "memcached <1.6.45>": [(1000, 60.0), (10, 50.0), (100, 55.0)]}
        return ET.fromstring(mc.svg_chart(series, "t", "value size (bytes)", "overhead"))

    def test_one_polyline_per_series_and_a_legend(self):
        root = self.chart()
        self.assertEqual(len(root.findall(f"{NS}polyline")), 2)
        texts = [t.text for t in root.iter(f"{NS}text")]
        self.assertIn("trove", texts)
        self.assertIn("memcached <1.6.45>", texts)  # escaped in the file, parsed back
        self.assertIn("value size (bytes)", texts)
        self.assertIn("overhead", texts)

    def test_x_is_log_scaled_and_y_grows_upward(self):
        pts = [[tuple(map(float, p.split(","))) for p in pl.get("points").split()]
               for pl in self.chart().findall(f"{NS}polyline")]
        (x10, y40), (x100, y30), (x1000, y20) = pts[0]
        self.assertAlmostEqual(x100 - x10, x1000 - x100, places=1)  # decades equally wide
        self.assertTrue(y40 < y30 < y20)  # a larger y is higher up: a smaller SVG y
        self.assertEqual([p[0] for p in pts[1]], [x10, x100, x1000])  # sorted by x

    def test_nice_steps_and_empty_input(self):
        self.assertEqual(mc.nice_step(7), 10)
        self.assertEqual(mc.nice_step(1.5), 2)
        self.assertTrue(math.isclose(mc.nice_step(0.3), 0.5))
        with self.assertRaises(ValueError):
            mc.svg_chart({}, "t", "x", "y")


class RenderTest(unittest.TestCase):
    def test_items_table_ratios_and_failures(self):
        meta = {"date_utc": "d", "command": "c", "commit": "x", "machine": "m", "versions": {}}
        ok = {"items": 1000, "bytes_per_item": 90.0, "overhead": 65.0}
        items = {10: {"trove": ok, "memcached 1.6.45": dict(ok, bytes_per_item=60.0),
                      "redis 7.0.15": {"items": 1000, "error": "3 evictions"}}}
        md = mc.render(meta, [], [], [10], items, ["trove", "memcached 1.6.45", "redis 7.0.15"])
        self.assertIn("| 10 | 1,000 | 90.0 (65.0) | 60.0 (65.0) | FAILED | 1.50 | - |", md)
        self.assertIn("- 10 B, redis 7.0.15: 3 evictions", md)


if __name__ == "__main__":
    unittest.main()
