"""Starting and stopping the server under test.

The target comes from the environment:
  TROVE_TEST_TARGET=memcached  run against /usr/bin/memcached (or $MEMCACHED_BIN)
  TROVE_BIN=/path/to/trove     run against that Trove binary
  neither                      the newest build/*/src/server/trove of this repo

Trove is started with `-p 0 --resp-port 0 --port-file F` and the harness reads
the ports it bound from F ("memcache <port>" and "resp <port>" lines).
memcached has no port file, so the harness picks a free port itself and
retries if another process takes it first.
"""

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

# Every server started in this session, for log reporting and liveness checks.
REGISTRY = []


def target_kind():
    """'memcached' or 'trove'."""
    t = os.environ.get("TROVE_TEST_TARGET", "").strip().lower()
    if t in ("memcached", "memcache", "mc"):
        return "memcached"
    return "trove"


def is_memcached():
    return target_kind() == "memcached"


def find_binary():
    """Path of the binary under test, or None when there is none."""
    if is_memcached():
        path = os.environ.get("MEMCACHED_BIN", "/usr/bin/memcached")
        return path if os.access(path, os.X_OK) else None
    env = os.environ.get("TROVE_BIN")
    if env:
        return env if os.access(env, os.X_OK) else None
    found = [p for p in glob.glob(os.path.join(REPO_ROOT, "build", "*", "src", "server", "trove"))
             if os.access(p, os.X_OK)]
    if not found:
        return None
    found.sort(key=os.path.getmtime, reverse=True)
    return found[0]


def binary_or_fail():
    import pytest
    path = find_binary()
    if path is None:
        pytest.fail("no server binary: build trove, set TROVE_BIN=/path/to/trove, "
                    "or set TROVE_TEST_TARGET=memcached", pytrace=False)
    return path


def _die_with_parent():
    """preexec_fn: the server gets SIGKILL when the test process dies, so a
    pytest killed by a timeout leaves no server behind (the server runs in
    its own session, out of reach of the caller's process-group kill)."""
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def root_args(args):
    """memcached (and Trove, which follows its rule) refuses to run as root
    without -u; add `-u root` when we are root and the test did not pass -u."""
    if os.geteuid() == 0 and "-u" not in args and not any(a.startswith("--user") for a in args):
        return ["-u", "root"]
    return []


def run_binary(args, timeout=10, input=None):
    """Runs the binary to completion (for -h, -V, bad options).
    Returns (exit code, stdout, stderr) as text."""
    binary = binary_or_fail()
    p = subprocess.run([binary] + root_args(args) + list(args), capture_output=True,
                       timeout=timeout, input=input)
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"))


class ServerError(Exception):
    pass


class Server:
    """One running server process.

    args: extra command-line arguments (memcached's flags). Do not pass -p;
    the harness chooses the port. Pass -s PATH for a unix socket server (no
    TCP port then, as with memcached).
    """

    def __init__(self, args=(), start_timeout=15.0):
        self.args = list(args)
        self.binary = binary_or_fail()
        self.kind = target_kind()
        self.tmpdir = tempfile.mkdtemp(prefix="trove-it-")
        self.log_path = os.path.join(self.tmpdir, "server.log")
        self.port = None       # memcache protocol TCP port
        self.resp_port = None  # RESP port (Trove only)
        self.admin_port = None  # --admin-port (Trove only)
        self.resp_tls_port = None  # --tls-port, the TLS RESP port (Trove only)
        self.unix_path = None
        self.proc = None
        self.allow_exit = False  # set by tests that stop the server themselves
        self.started_at = None
        self.stopped_at = None
        self.start_timeout = start_timeout
        self._start()
        REGISTRY.append(self)

    # ---- lifecycle -------------------------------------------------------

    def _cmdline(self, port):
        cmd = [self.binary] + root_args(self.args) + self.args
        unix = "-s" in self.args
        if unix:
            self.unix_path = self.args[self.args.index("-s") + 1]
        if self.kind == "memcached":
            if not unix:
                cmd += ["-p", str(port)]
            if "-U" not in self.args:
                cmd += ["-U", "0"]
        else:
            cmd += ["--resp-port", "0"]
            if not unix:
                cmd += ["-p", "0"]
            cmd += ["--port-file", self.port_file]
        return cmd

    def _start(self):
        self.port_file = os.path.join(self.tmpdir, "ports")
        attempts = 5 if self.kind == "memcached" else 1
        last = ""
        for _ in range(attempts):
            port = free_port() if self.kind == "memcached" else 0
            cmd = self._cmdline(port)
            self.cmdline = cmd
            log = open(self.log_path, "ab")
            log.write(("$ " + " ".join(cmd) + "\n").encode())
            log.flush()
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True,
                                         preexec_fn=_die_with_parent)
            log.close()
            self.started_at = time.monotonic()
            ok = self._wait_ready(port)
            if ok:
                return
            last = self.log()
            self._kill()
            if "in use" not in last and "bind" not in last:
                break  # not a port clash: retrying will not help
        raise ServerError("server did not start: %s\n%s" % (" ".join(self.cmdline), last))

    def _wait_ready(self, port):
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            if self.unix_path:
                if os.path.exists(self.unix_path) and self._probe_unix():
                    if self.kind == "trove":
                        self._read_port_file()
                    return True
            elif self.kind == "memcached":
                if self._probe_tcp(port):
                    self.port = port
                    return True
            else:
                if self._read_port_file() and self._probe_tcp(self.port):
                    return True
            time.sleep(0.02)
        return False

    def _read_port_file(self):
        try:
            with open(self.port_file) as f:
                text = f.read()
        except OSError:
            return False
        if not text.endswith("\n"):
            return False
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "memcache":
                self.port = int(parts[1])
            elif len(parts) == 2 and parts[0] == "resp":
                self.resp_port = int(parts[1])
            elif len(parts) == 2 and parts[0] == "admin":
                self.admin_port = int(parts[1])
            elif len(parts) == 2 and parts[0] == "resp-tls":
                self.resp_tls_port = int(parts[1])
        return self.port is not None

    def _probe_tcp(self, port):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=0.5)
            s.close()
            return True
        except OSError:
            return False

    def _probe_unix(self):
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(0.5)
            s.connect(self.unix_path)
            s.close()
            return True
        except OSError:
            return False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def wait_exit(self, timeout=10.0):
        """Waits for the process to end by itself; returns its exit code."""
        self.allow_exit = True
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        self.stopped_at = time.monotonic()
        return rc

    def signal(self, sig):
        self.allow_exit = True
        self.proc.send_signal(sig)

    def _kill(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def stop(self):
        """SIGTERM, then SIGKILL after a grace period. Returns the exit code
        (None if it had to be killed)."""
        if self.proc is None:
            return None
        rc = self.proc.poll()
        if rc is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._kill()
                rc = None
        self.stopped_at = time.monotonic()
        return rc

    def cleanup(self):
        if self.kind == "memcached":
            # memcached takes a second to notice SIGTERM; the suite does not
            # need its clean exit, so save the time.
            self._kill()
            self.stopped_at = time.monotonic()
        else:
            self.stop()
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    # ---- information -----------------------------------------------------

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def address(self):
        return ("127.0.0.1", self.port)

    def pid(self):
        return self.proc.pid

    def __repr__(self):
        return "Server(%s, port=%s, args=%r)" % (self.kind, self.port, self.args)
