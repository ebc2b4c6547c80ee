#!/usr/bin/python3
"""Tests of the bench tools' process registry (compare_lib.PROCS, issue 35).

Every bench child runs under a wall-clock limit and is stopped by the tool that started it, group
and all, on normal exit, on an exception, on SIGINT and on SIGTERM; a child past its limit is
killed and the run is reported as exceeded (exit 124, no figure); scheduling is normal unless
--rt N is given. No real server runs: the children are sleep, tiny Python scripts and fakes of
a server and trove-bench. Takes a few seconds.

  /usr/bin/python3 -m pytest -q bench/compare_procs_test.py
"""

import importlib.machinery
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
sys.path.insert(0, HERE)
import compare_lib as lib  # noqa: E402

# A driver that uses compare_lib the way the tools do: lib.run_tool(name, main). main starts a
# `sleep 60` and a Python child that starts a grandchild `sleep 60`, prints their pids as one
# JSON line, then does what the scenario says. After run_tool returns (the tool's clean-up has
# run, and before this process exits, so PR_SET_PDEATHSIG cannot have helped), it prints which
# of those pids are still alive and exits with run_tool's status.
DRIVER = textwrap.dedent(r'''
    import json, os, subprocess, sys, time
    sys.path.insert(0, sys.argv[1])
    import compare_lib as lib
    scenario = sys.argv[2]
    CHILD = ("import subprocess, sys, time; p = subprocess.Popen(['sleep', '60']); "
             "print(p.pid, flush=True); time.sleep(60)")
    pids = {}

    def alive(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    def start_family(limit=None):
        # (Not on this driver's stdout/stderr: a survivor must not hold the test's pipes.)
        s = lib.PROCS.popen(["sleep", "60"], name="sleeper", limit=limit,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        c = lib.PROCS.popen([sys.executable, "-c", CHILD], name="parent of a grandchild",
                            limit=limit, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
        pids.update(sleeper=s.pid, child=c.pid, grandchild=int(c.stdout.readline()))
        print(json.dumps(pids), flush=True)
        return s, c

    def main():
        if scenario == "normal":
            start_family()
            sys.stdin.readline()  # the test checks that all three run, then says go
            return 0
        if scenario == "exception":
            start_family()
            raise RuntimeError("boom")
        if scenario == "signal":
            start_family()
            time.sleep(60)
            return 0
        if scenario == "child-limit":
            _, c = start_family(limit=1.0)
            lib.PROCS.communicate(c)
            print("FIGURE 12345 ops/s", flush=True)  # must never be reached
            return 0
        if scenario == "tool-limit":
            lib.PROCS.set_time_limit(1.0)
            start_family()  # no limit of their own: the tool's
            time.sleep(60)
            print("FIGURE 12345 ops/s", flush=True)
            return 0
        if scenario == "run-limit":
            # BenchRunner.run: trove-bench hangs past -w + -D + GEN_MARGIN_S.
            lib.GEN_MARGIN_S = 0.5
            fake = os.path.join(sys.argv[3], "hung-bench")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\nsleep 60 >/dev/null 2>&1 &\necho $! > " + sys.argv[3] +
                        "/gc\nwait\n")
            os.chmod(fake, 0o755)
            layout = lib.CpuLayout.detect()
            server = Fake()
            runner = lib.BenchRunner(fake, layout, 0.5, 0.0, 1000)
            doc = runner.run(server, 1, ["-P", "text", "-c", "50"])
            print("FIGURE %s ops/s" % doc["total"]["ops_per_sec"], flush=True)
            return 0
        raise SystemExit("unknown scenario " + scenario)

    class Fake:
        name, threads = "fake", 1
        def cpu_seconds(self): return 0.0
        def running(self): return True

    try:
        code = lib.run_tool("driver", main)
    except RuntimeError:  # run_tool lets a tool's own error through, after its clean-up
        import traceback
        traceback.print_exc()
        code = 1
    if scenario == "run-limit":
        try:
            pids["grandchild"] = int(open(sys.argv[3] + "/gc").read())
        except (OSError, ValueError):
            pass
        print(json.dumps(pids), flush=True)
    print(json.dumps({"alive_after_cleanup": [p for p in pids.values() if alive(p)],
                      "registered": lib.PROCS.pids()}), flush=True)
    sys.exit(code)
''')


def alive(pid):
    """True if pid runs (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pids, timeout=3.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and any(alive(p) for p in pids):
        time.sleep(0.02)
    return [p for p in pids if alive(p)]


class ProcessRegistryTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.driver = os.path.join(self.tmp.name, "driver.py")
        with open(self.driver, "w") as f:
            f.write(DRIVER)
        self.seen = []

    def tearDown(self):
        for p in self.seen:  # never leave a sleeper behind, whatever failed
            if alive(p):
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        self.tmp.cleanup()

    def start(self, scenario):
        return subprocess.Popen([PY, self.driver, HERE, scenario, self.tmp.name],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def first_pids(self, proc):
        line = proc.stdout.readline()
        if not line:  # (read stderr only then: it blocks until the driver exits)
            self.fail("the driver printed no pids: " + proc.stderr.read())
        pids = json.loads(line)
        self.seen += pids.values()
        return pids

    def finish(self, proc, timeout=15):
        out, err = proc.communicate(timeout=timeout)
        lines = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
        return proc.returncode, out, err, lines

    def assert_all_stopped(self, pids, lines, err):
        after = lines[-1]
        self.assertEqual(after["alive_after_cleanup"], [],
                         f"still running after the tool's clean-up: {after}; stderr: {err}")
        self.assertEqual(after["registered"], [], "registry not empty after clean-up")
        self.assertEqual(wait_gone(list(pids.values())), [])
        for name in ("sleeper", "child", "grandchild"):
            self.assertIn(name, pids)

    def test_normal_exit_stops_children_and_grandchildren(self):
        p = self.start("normal")
        pids = self.first_pids(p)
        for pid in pids.values():
            self.assertTrue(alive(pid), f"{pid} should run while the tool runs")
        p.stdin.write("go\n")
        p.stdin.flush()
        code, out, err, lines = self.finish(p)
        self.assertEqual(code, 0, err)
        self.assert_all_stopped(pids, lines, err)

    def test_exception_stops_everything(self):
        p = self.start("exception")
        pids = self.first_pids(p)
        code, out, err, lines = self.finish(p)
        self.assertNotEqual(code, 0)
        self.assertIn("RuntimeError: boom", err)
        self.assert_all_stopped(pids, lines, err)

    def check_signal(self, sig, want_code, want_text):
        p = self.start("signal")
        pids = self.first_pids(p)
        t0 = time.monotonic()
        p.send_signal(sig)
        code, out, err, lines = self.finish(p)
        self.assertLess(time.monotonic() - t0, 8.0)
        self.assertEqual(code, want_code, err)
        self.assertIn(want_text, err)
        self.assert_all_stopped(pids, lines, err)

    def test_sigint_stops_everything(self):
        self.check_signal(signal.SIGINT, 130, "stopped by SIGINT")

    def test_sigterm_stops_everything(self):
        self.check_signal(signal.SIGTERM, 143, "stopped by SIGTERM")

    def test_child_past_its_limit_is_killed_and_reported(self):
        t0 = time.monotonic()
        p = self.start("child-limit")
        pids = self.first_pids(p)
        code, out, err, lines = self.finish(p)
        self.assertLess(time.monotonic() - t0, 8.0)
        self.assertEqual(code, lib.EXIT_LIMIT, err)
        self.assertIn("EXCEEDED ITS LIMIT", err)
        self.assertIn("past its limit of 1.0 s", err)
        self.assertNotIn("FIGURE", out)
        self.assert_all_stopped(pids, lines, err)

    def test_tool_past_its_time_limit_is_stopped_and_reported(self):
        p = self.start("tool-limit")
        pids = self.first_pids(p)
        code, out, err, lines = self.finish(p)
        self.assertEqual(code, lib.EXIT_LIMIT, err)
        self.assertIn("EXCEEDED ITS LIMIT", err)
        self.assertIn("--time-limit of 1.0 s", err)
        self.assertNotIn("FIGURE", out)
        self.assert_all_stopped(pids, lines, err)

    def test_hung_generator_run_gives_no_figure(self):
        t0 = time.monotonic()
        p = self.start("run-limit")
        code, out, err, lines = self.finish(p)
        self.assertLess(time.monotonic() - t0, 8.0)
        self.assertEqual(code, lib.EXIT_LIMIT, err)
        self.assertIn("EXCEEDED ITS LIMIT: trove-bench on fake", err)
        self.assertNotIn("FIGURE", out)
        pids = lines[0]
        self.seen += pids.values()
        self.assertIn("grandchild", pids)  # the hung generator's own child `sleep 60`
        self.assertEqual(lines[-1]["alive_after_cleanup"], [], err)
        self.assertEqual(wait_gone(list(pids.values())), [])


# A fake server: answers "version" on the port it is given with VERSION, and writes the
# scheduling policy it runs under to a file, so the test sees how bench tools start it.
FAKE_SERVER = textwrap.dedent(r'''
    import os, socket, sys
    with open(sys.argv[2], "w") as f:
        f.write("%d" % os.sched_getscheduler(0))
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(sys.argv[1])))
    s.listen(8)
    while True:
        c, _ = s.accept()
        c.recv(64)
        c.sendall(b"VERSION fake\r\n")
        c.close()
''')


class DefaultSchedulingTest(unittest.TestCase):
    def load(self, name):
        path = os.path.join(HERE, name)
        loader = importlib.machinery.SourceFileLoader(name.replace(".", "_"), path)
        spec = importlib.util.spec_from_loader(loader.name, loader)
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        return mod

    def test_layout_default_has_no_chrt(self):
        layout = lib.CpuLayout.detect()
        self.assertEqual(layout.rt, 0)
        for cores in (layout.server_cores, layout.gen_cores):
            self.assertNotIn("chrt", layout.prefix(cores))
        self.assertIn("normal priority", layout.describe())
        layout.rt = 10  # --rt 10: still possible, as an explicit opt-in
        self.assertEqual(layout.prefix(layout.server_cores)[:3], ["chrt", "-f", "10"])

    def test_compare_defaults_to_normal_scheduling_even_as_root(self):
        compare = self.load("compare")
        with mock.patch.object(sys, "argv", ["compare"]), \
                mock.patch("os.geteuid", return_value=0), \
                mock.patch("shutil.which", return_value="/usr/bin/memcached"):
            args = compare.parse_args()
        self.assertEqual(args.rt, 0)
        layout = lib.CpuLayout.detect()
        layout.rt = args.rt
        server = lib.TroveServer("/nonexistent/trove", 1, layout)
        server.ports = {"mc": 1, "resp": 2}
        cmd = layout.prefix(layout.server_cores) + server.command()
        self.assertNotIn("chrt", cmd)

    def test_every_tool_says_rt_is_opt_in(self):
        for tool in ("compare", "ab.py", "compare_proxy", "compare_validate.py", "acl_cost.py",
                     "tracking_cost.py", "pubsub_bench.py"):
            r = subprocess.run([PY, os.path.join(HERE, tool), "--help"], capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(r.returncode, 0, tool + ": " + r.stderr)
            text = " ".join(r.stdout.split())
            self.assertIn("Default 0: normal scheduling", text, tool)
            self.assertIn("not on a shared machine", text, tool)
            self.assertIn("--time-limit", text, tool)

    def test_server_and_generator_start_at_normal_priority(self):
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "fake_server.py")
            with open(script, "w") as f:
                f.write(FAKE_SERVER)
            info = os.path.join(tmp, "info")

            class FakeServer(lib.Server):
                name = "fake"
                families = ("mc",)

                def command(self):
                    return [PY, script, str(self.ports["mc"]), info]

                def probes(self):
                    return [("mc", b"version\r\n", b"VERSION")]

            layout = lib.CpuLayout.detect()  # as every tool: rt 0 unless --rt N
            s = FakeServer(1, layout)
            try:
                self.assertTrue(s.start(timeout=10.0), s.last_error)
                pid = s.proc.pid
                self.assertIn(pid, lib.PROCS.pids())
                self.assertEqual(os.getpgid(pid), pid)  # its own process group
                self.assertNotIn("chrt", s.proc.args)  # the command line it was started with
                with open(info) as f:
                    self.assertEqual(int(f.read()), os.SCHED_OTHER)
                self.assertEqual(os.sched_getscheduler(pid), os.SCHED_OTHER)
            finally:
                s.stop()
                lib.PROCS.uninstall()
                try:
                    os.unlink(f"/tmp/compare-fake-{os.getpid()}.log")  # Server.start's log
                except OSError:
                    pass
            self.assertFalse(alive(pid))
            self.assertNotIn(pid, lib.PROCS.pids())


if __name__ == "__main__":
    unittest.main()
