"""Helpers for bench/compare: servers, CPU pinning, generator runs, the report.

Kept apart from bench/compare so the driver reads as the steps of issue 4.

Every process a bench tool starts (servers, trove-bench, proxy backends, builds, probes) goes
through PROCS, the one process registry (issue 35): each child runs in its own session and
process group with a wall-clock limit, and the tool that started it always stops it, group and
all, on normal exit, on an exception, on Ctrl-C (SIGINT) and on SIGTERM. A child that outlives
its limit is killed and the tool stops with "EXCEEDED ITS LIMIT" and exit status 124; it never
reports a figure from that run. Tools run their main() through run_tool(), which also enforces
the tool's overall --time-limit. Scheduling is normal by default; --rt N (chrt -f) is opt-in.
"""

import atexit
import json
import os
import platform
import random
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
SATURATED = 0.85  # a side whose CPU use is above this share of its cores is the bottleneck

# Wall-clock limits (seconds). A timed trove-bench run stops itself after -w + -D; the margin
# covers connecting 50 connections and the report. Prefills and loads are bounded by request
# counts, so their limits are generous (a loaded machine at normal priority is slower).
GEN_MARGIN_S = 30.0
PREFILL_LIMIT_S = 120.0
PROBE_LIMIT_S = 10.0  # -V, --version, git, -h
BUILD_LIMIT_S = 1800.0  # cmake configure or build (the build, not the benchmark)
DEPS_LIMIT_S = 900.0  # scripts/deps.sh (apt-get)
DEFAULT_CAP_S = 3600.0  # a process started without a limit while no tool limit is set
STOP_GRACE_S = 5.0  # SIGTERM, then SIGKILL after this long
EXIT_LIMIT = 124  # exit status of a tool that exceeded a limit (as timeout(1))

# Planning figures for a tool's expected time on an idle machine (its default --time-limit is
# default_time_limit(planned)): a server start, a 100k-key prefill, the per-run overhead of
# trove-bench (50 connections, the report), and keys per second of a memory-test load.
START_EST_S = 1.0
PREFILL_EST_S = 3.0
RUN_OVERHEAD_S = 0.5
LOAD_KEYS_PER_S = 250000.0

# The keyspaces each server is prefilled with, once per protocol family it speaks and the
# workloads use: (family, key prefix, value size).
PREFILLS = (("mc", "key:", 32), ("mc", "w6:", 4096), ("resp", "key:", 32))

RT_HELP = ("SCHED_FIFO priority (chrt -f) for servers and generator. Default 0: normal "
           "scheduling. Opt-in only, and not on a shared machine: real-time processes starve "
           "everything else on their cores, and a hung one stalls the machine")
TIME_LIMIT_HELP = ("wall-clock limit in seconds for the whole run (default: the planned time of "
                   "the chosen options x 1.3 + 60 s); past it every process is stopped and the "
                   "tool exits {} saying it exceeded its limit".format(EXIT_LIMIT))

_TOOL = ["compare"]  # the name say() prints; run_tool() sets it


def say(msg):
    sys.stderr.write(f"[{_TOOL[0]}] {msg}\n")
    sys.stderr.flush()


def default_time_limit(planned_s, floor_s=0.0):
    """A tool's default --time-limit: a bit above its planned time."""
    return float(round(max(floor_s, planned_s * 1.3 + 60.0)))


class LimitExceeded(BaseException):
    """A process, or the whole tool, ran past its wall-clock limit. A BaseException so that no
    `except Exception` in a tool turns it into a figure; run_tool() reports it and exits 124."""


class Interrupted(BaseException):
    """SIGINT or SIGTERM reached the tool; run_tool() stops everything and exits 128 + signum."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _die_with_parent():
    """preexec_fn: the child gets SIGKILL if the tool itself dies (even by SIGKILL, which no
    handler sees). Runs in the child between fork and exec."""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


try:
    import ctypes
    _PRCTL = ctypes.CDLL("libc.so.6", use_errno=True).prctl
except (ImportError, OSError, AttributeError):
    _PRCTL = None


class _Entry:
    def __init__(self, proc, name, limit, deadline):
        self.proc, self.name, self.limit, self.deadline = proc, name, limit, deadline
        self.started = time.monotonic()
        self.exceeded = False


class Procs:
    """The registry every bench child goes through (see the module docstring).

    Deadlines are enforced by one ITIMER_REAL set to the earliest of them: its SIGALRM handler
    SIGKILLs each overdue process group, records it in `exceeded` and raises LimitExceeded in
    the main thread, which interrupts whatever it was waiting on (communicate, sleep, a socket).
    Signals that arrive while the registry itself is being changed are held until it is
    consistent again, so no child is ever started unregistered."""

    def __init__(self):
        self._entries = {}  # pid -> _Entry
        self._owner = os.getpid()
        self._installed = False
        self._atexit = False
        self._handlers = False  # the signal handlers (main thread only) and so the watchdog
        self._old = {}
        self._hold = 0
        self._pending = []
        self._stopping = False
        self.deadline = None  # the tool's overall deadline (monotonic), or None
        self.time_limit = None
        self.exceeded = []  # messages, one per process (or the tool) that ran past its limit

    # -- signals and the watchdog --

    def _ensure_atexit(self):
        if not self._atexit:
            atexit.register(self.stop_all)
            self._atexit = True

    def install(self):
        """Installs the SIGINT/SIGTERM/SIGALRM handlers (the watchdog) and the atexit clean-up;
        once, main thread only. run_tool() and set_time_limit() call it; popen() alone only
        registers the atexit clean-up, so a library user (a test) keeps its own handlers."""
        self._ensure_atexit()
        if self._installed or os.getpid() != self._owner:
            return
        try:
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM):
                self._old[sig] = signal.signal(sig, self._on_signal)
            self._handlers = True
        except ValueError:  # not the main thread: clean-up still runs (atexit, stop_all)
            for sig, old in self._old.items():
                signal.signal(sig, old)
            self._old = {}
        self._installed = True

    def uninstall(self):
        if self._handlers:
            signal.setitimer(signal.ITIMER_REAL, 0)
        self._handlers = False
        for sig, old in self._old.items():
            try:
                signal.signal(sig, old)
            except (ValueError, TypeError):
                pass
        self._old = {}
        self._installed = False

    def _on_signal(self, signum, frame):
        if os.getpid() != self._owner:
            # A forked helper (multiprocessing) inherited this handler: behave as by default.
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if self._hold or self._stopping:
            self._pending.append(signum)
            return
        self._dispatch(signum)

    def _dispatch(self, signum):
        if signum == signal.SIGALRM:
            self._check_deadlines()
        else:
            raise Interrupted(signum)

    def _release(self):
        self._hold -= 1
        if self._hold == 0 and self._pending and not self._stopping:
            pending, self._pending = self._pending, []
            for sig in sorted(set(pending), key=lambda s: s != signal.SIGALRM):
                self._dispatch(sig)
            self._arm()

    def _check_deadlines(self):
        now = time.monotonic()
        msgs = []
        for e in list(self._entries.values()):
            if not e.exceeded and e.deadline <= now + 0.005:
                e.exceeded = True
                self._signal_group(e, signal.SIGKILL)
                msgs.append(f"{e.name} (pid {e.proc.pid}) ran {now - e.started:.1f} s, past its "
                            f"limit of {e.limit:.1f} s; killed")
        if self.deadline is not None and now >= self.deadline - 0.005:
            msgs.append(f"the whole run took {now - self._t0:.1f} s, past its --time-limit of "
                        f"{self.time_limit:.1f} s")
            self.deadline = None
        if msgs:
            self.exceeded += msgs
            raise LimitExceeded("; ".join(msgs))
        self._arm()

    def _arm(self):
        if not self._handlers or os.getpid() != self._owner:
            return
        ds = [e.deadline for e in self._entries.values() if not e.exceeded]
        if self.deadline is not None:
            ds.append(self.deadline)
        if not ds:
            signal.setitimer(signal.ITIMER_REAL, 0)
            return
        signal.setitimer(signal.ITIMER_REAL, max(0.001, min(ds) - time.monotonic()))

    def set_time_limit(self, seconds):
        """The tool's overall wall-clock limit, from now."""
        self.install()
        self._t0 = time.monotonic()
        self.time_limit = float(seconds)
        self.deadline = self._t0 + self.time_limit
        self._arm()

    def remaining(self):
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    # -- starting and stopping --

    def popen(self, cmd, name=None, limit=None, **kw):
        """subprocess.Popen in a new session (its own process group), registered with a
        wall-clock limit in seconds (None: the tool's remaining time limit + 30 s, or
        DEFAULT_CAP_S when the tool has none). Deadlines are enforced once install() ran."""
        self._ensure_atexit()
        if limit is None:
            rem = self.remaining()
            limit = DEFAULT_CAP_S if rem is None else rem + 30.0
        kw.setdefault("stdin", subprocess.DEVNULL)
        self._hold += 1
        try:
            proc = subprocess.Popen(cmd, start_new_session=True, preexec_fn=_die_with_parent,
                                    **kw)
            self._entries[proc.pid] = _Entry(proc, name or os.path.basename(str(cmd[0])),
                                             float(limit), time.monotonic() + float(limit))
        finally:
            self._release()
        self._arm()
        return proc

    def adopt(self, pid, name, limit):
        """Registers a child started otherwise (a multiprocessing.Process, same process group
        as the tool): stopped by pid only."""
        self._ensure_atexit()
        self._hold += 1
        try:
            self._entries[pid] = _Entry(_Adopted(pid), name, float(limit),
                                        time.monotonic() + float(limit))
        finally:
            self._release()
        self._arm()

    def forget(self, pid):
        """Unregisters an adopted child that its owner has reaped (multiprocessing's join)."""
        self._hold += 1
        try:
            self._entries.pop(pid, None)
        finally:
            self._release()
        self._arm()

    def _signal_group(self, e, sig):
        """Signals e's process group while its leader is unreaped (the group id cannot be reused
        then); once the leader is reaped, the members still in that group one by one."""
        pid = e.proc.pid
        if isinstance(e.proc, _Adopted):
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
            return
        targets = [pid] if e.proc.returncode is None else _group_members(pid)
        for t in targets:
            try:
                if t == pid and e.proc.returncode is None:
                    os.killpg(pid, sig)
                else:
                    os.kill(t, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def communicate(self, proc, input=None):
        """proc.communicate(), then stop(proc) (which kills anything left in its group)."""
        try:
            return proc.communicate(input)
        finally:
            self.stop(proc)

    def run(self, cmd, limit, name=None, input=None, capture_output=False, **kw):
        """subprocess.run with a wall-clock limit: the child (and its group) is killed at the
        limit and LimitExceeded is raised. Returns a CompletedProcess."""
        if capture_output:
            kw["stdout"] = subprocess.PIPE
            kw["stderr"] = subprocess.PIPE
        if input is not None:
            kw["stdin"] = subprocess.PIPE
        proc = self.popen(cmd, name=name, limit=limit, **kw)
        out, err = self.communicate(proc, input)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def probe(self, cmd, limit=PROBE_LIMIT_S, **kw):
        """A short query (-V, --version, git): run() with text output, or None if it could not
        run or did not answer within limit (then it is killed, said, and not fatal)."""
        try:
            proc = self.popen(cmd, name=os.path.basename(str(cmd[0])) + " (probe)",
                              limit=limit + 5.0, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, **kw)
        except OSError:
            return None
        timed_out = False
        try:
            out, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            self.stop(proc, grace=0 if timed_out else STOP_GRACE_S)
        if timed_out:
            say(f"{' '.join(map(str, cmd))} did not answer in {limit:.0f} s; killed")
            return None
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def stop(self, proc, grace=STOP_GRACE_S):
        """SIGTERM to proc's process group, SIGKILL after grace seconds; reaps and unregisters
        it. Safe to call on a process that has exited (its group's leftovers are killed)."""
        e = self._entries.get(proc.pid)
        if e is None:
            e = _Entry(proc, "?", 0, float("inf"))
        self._hold += 1
        try:
            self._stop_entries([e], grace)
            self._entries.pop(proc.pid, None)
        finally:
            self._release()
        self._arm()

    def _stop_entries(self, entries, grace):
        for e in entries:
            if _unreaped_running(e.proc):
                self._signal_group(e, signal.SIGTERM if grace > 0 else signal.SIGKILL)
        end = time.monotonic() + grace
        for e in entries:
            while _unreaped_running(e.proc) and time.monotonic() < end:
                time.sleep(0.02)
        for e in entries:
            self._signal_group(e, signal.SIGKILL)  # the leader if still up, and every member
            if isinstance(e.proc, _Adopted):
                e.proc.reap()
                continue
            try:
                e.proc.wait(10)
            except subprocess.TimeoutExpired:  # stuck in the kernel (D state): cannot help it
                say(f"{e.name} (pid {e.proc.pid}) did not die of SIGKILL within 10 s")
        # Its children were killed with it but are not ours to wait for: return only once no
        # live process is left in any of the groups (SIGKILL again to any straggler).
        groups = [e.proc.pid for e in entries if not isinstance(e.proc, _Adopted)]
        end = time.monotonic() + 2.0
        while groups:
            left = [(g, _group_members(g)) for g in groups]
            groups = [g for g, members in left if members]
            if not groups or time.monotonic() >= end:
                break
            for _, members in left:
                for m in members:
                    try:
                        os.kill(m, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
            time.sleep(0.01)
        for g in groups:
            say(f"process group {g} still has members after SIGKILL: {_group_members(g)}")

    def stop_all(self, grace=STOP_GRACE_S):
        """Stops every registered process (all groups at once: SIGTERM, grace, SIGKILL)."""
        if os.getpid() != self._owner:
            return
        self._stopping = True
        try:
            if self._handlers:
                signal.setitimer(signal.ITIMER_REAL, 0)
            entries = list(self._entries.values())
            if entries:
                self._stop_entries(entries, grace)
            self._entries.clear()
        finally:
            self._stopping = False
            self._pending = []

    def pids(self):
        return sorted(self._entries)


class _Adopted:
    """Enough of Popen for a pid the registry did not start."""

    def __init__(self, pid):
        self.pid = pid
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            try:
                p, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = -1
                return self.returncode
            if p:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def reap(self):
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        self.returncode = self.returncode if self.returncode is not None else -1


def _unreaped_running(proc):
    """True while proc runs. Does not reap it (WNOWAIT), so its group id stays ours."""
    if proc.returncode is not None:
        return False
    try:
        r = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return r is None


def _group_members(pgid):
    """Pids of the live (not zombie) processes in process group pgid, read from /proc."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(rest[2]) == pgid and rest[0] != "Z":  # fields 5 (pgrp) and 3 (state)
            out.append(int(d))
    return out


PROCS = Procs()


def run_tool(name, main):
    """Runs a tool's main() so that everything it started is stopped however it ends, and a
    run past a limit or interrupted is reported as such. Returns the exit status."""
    _TOOL[0] = name
    PROCS.install()
    code, why = 1, None
    try:
        code = main()
        code = 0 if code is None else code
    except LimitExceeded as e:
        code, why = EXIT_LIMIT, f"EXCEEDED ITS LIMIT: {e}"
    except Interrupted as e:
        code, why = 128 + e.signum, f"stopped by {e}"
    except KeyboardInterrupt:
        code, why = 130, "stopped by SIGINT"
    finally:
        PROCS.stop_all()
        PROCS.uninstall()
    if why:
        say(f"{why}. Every process it started has been stopped; this run produced no figures "
            f"(exit status {code}).")
    return code


def start_servers(servers, planned_s, time_limit=None):
    """Sets the run's wall-clock limit (time_limit, or one derived from
    planned_s), says both, and starts every server; False (having said which
    and why) when one did not start. The caller stops them (PROCS)."""
    limit = time_limit or default_time_limit(planned_s)
    PROCS.set_time_limit(limit)
    say(f"planned {planned_s:.0f} s on an idle machine; time limit {limit:.0f} s")
    for s in servers:
        if not s.start():
            say(f"{s.name} did not start: {s.last_error}")
            return False
    return True


def git_commit(root):
    r = PROCS.probe(["git", "-C", root, "rev-parse", "--short", "HEAD"])
    d = PROCS.probe(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"])
    dirty = d.stdout.strip() if d else ""
    return ((r.stdout.strip() if r else "") or "unknown") + ("+dirty" if dirty else "")


def machine_description():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{model}, {os.cpu_count()} logical CPUs, {mem_gb:.0f} GiB RAM, "
            f"Linux {platform.release()}")


class CpuLayout:
    """Which cores the servers and the generator get."""

    def __init__(self, cpus, server_cores, gen_cores, pinned, reason):
        self.nice = 0  # niceness for servers and generator alike (negative: ahead of other work)
        # > 0: SCHED_FIFO priority for servers and generator alike (chrt -f). Opt-in (--rt N)
        # only, never on a shared machine; 0, the default, is normal scheduling.
        self.rt = 0
        self.cpus = cpus
        self.server_cores = server_cores
        self.gen_cores = gen_cores
        self.pinned = pinned
        self.reason = reason

    @staticmethod
    def detect():
        try:
            cpus = sorted(os.sched_getaffinity(0))
        except AttributeError:
            cpus = list(range(os.cpu_count() or 1))
        if shutil.which("taskset") is None:
            return CpuLayout(cpus, cpus, cpus, False, "taskset is not installed")
        if len(cpus) < 2:
            return CpuLayout(cpus, cpus, cpus, False, "only one CPU is available")
        # Half the cores each, the server first; on 2 cores: server 0, generator 1.
        half = len(cpus) // 2
        return CpuLayout(cpus, cpus[:half], cpus[half:], True, "")

    def describe(self):
        nice = (f"; servers and generator run at nice {self.nice}" if self.nice else
                "; servers and generator run at normal priority")
        if self.rt:
            nice = f"; servers and generator run as SCHED_FIFO priority {self.rt} (chrt -f)"
        if not self.pinned:
            return (f"NOT pinned ({self.reason}): servers and generator share CPUs "
                    f"{self.cpus}, so figures mix both sides' load{nice}")
        return (f"pinned with taskset: servers on CPU {','.join(map(str, self.server_cores))}, "
                f"generator on CPU {','.join(map(str, self.gen_cores))}{nice}")

    def prefix(self, cores):
        """What goes before a server's or the generator's command: nice, chrt (only with
        rt > 0, i.e. --rt given), taskset. Each execs the next, so the pid stays the server's."""
        cmd = ["nice", "-n", str(self.nice)] if self.nice else []
        if self.rt:
            cmd += ["chrt", "-f", str(self.rt)]
        if self.pinned:
            cmd += ["taskset", "-c", ",".join(map(str, cores))]
        return cmd


def free_port():
    """A port free on every IPv4 and IPv6 address, taken below the kernel's
    ephemeral range: a server port must not collide with the client side of
    connections a tool opened (or left in TIME_WAIT) from that range."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    for _ in range(200):
        port = random.randrange(10000, max(10001, low))
        try:
            with socket.socket(socket.AF_INET) as s4, socket.socket(socket.AF_INET6) as s6:
                s4.bind(("0.0.0.0", port))
                s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                s6.bind(("::", port))
            return port
        except OSError:
            continue
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


def probe(port, payload, want, timeout=1.0):
    """Sends payload to 127.0.0.1:port and returns True if the reply starts with want."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(payload)
            got = b""
            while len(got) < len(want):
                chunk = s.recv(256)
                if not chunk:
                    break
                got += chunk
            return got.startswith(want)
    except OSError:
        return False


class Server:
    name = "?"
    families = ()  # the protocol families ("mc", "resp") this server speaks

    def __init__(self, threads, layout):
        self.threads = threads
        self.layout = layout
        self.proc = None
        self.log = None
        self.last_error = ""
        self.ports = {}

    def clone(self):
        return type(self)(self.threads, self.layout)

    def command(self):
        raise NotImplementedError

    def probes(self):
        """(family, payload, expected reply prefix) checks that say a port is up."""
        raise NotImplementedError

    def version(self):
        return ""

    def start(self, timeout=10.0, limit=None):
        """Starts the server through PROCS; limit: its wall-clock limit in seconds (default:
        the tool's remaining --time-limit, as a server lives for the whole run)."""
        self.ports = {"mc": free_port(), "resp": free_port()}
        cmd = self.layout.prefix(self.layout.server_cores) + self.command()
        tag = re.sub(r"[^\w.-]+", "-", self.name)
        self.log = open(f"/tmp/compare-{tag}-{os.getpid()}.log", "w+")
        self.proc = PROCS.popen(cmd, name=f"server {self.name}", limit=limit, stdout=self.log,
                                stderr=subprocess.STDOUT)
        self.up = {}
        deadline = time.time() + timeout
        checks = self.probes()
        while time.time() < deadline:
            if self.proc.poll() is not None:
                break
            for fam, payload, want in checks:
                if fam not in self.up and probe(self.ports[fam], payload, want):
                    self.up[fam] = True
            if len(self.up) == len(checks):
                return True
            time.sleep(0.1)
        if self.up and self.proc.poll() is None:
            return True  # partly up (e.g. Trove without its RESP port yet)
        self.log.seek(0)
        self.last_error = (self.log.read()[-500:].strip() or
                           f"exit status {self.proc.poll()}" or "no port answered")
        self.stop()
        return False

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def port_for(self, fam):
        return self.ports.get(fam) if self.running() and self.up.get(fam) else None

    def why_no_port(self, fam):
        return f"{'RESP' if fam == 'resp' else 'memcached'} port is not up"

    def stop(self):
        if self.proc is None:
            return
        PROCS.stop(self.proc)  # SIGTERM to its process group, SIGKILL after 5 s
        self.proc = None
        if self.log:
            self.log.close()
            self.log = None

    def _stat(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            # Fields after the ")" of the command name; utime and stime are 14 and 15.
            rest = f.read().rsplit(")", 1)[1].split()
        return rest

    def cpu_seconds(self):
        rest = self._stat()
        return (int(rest[11]) + int(rest[12])) / CLK_TCK

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0


def memcached_version(binary):
    """The first line of `binary -V` ("memcached 1.6.45"), or "" if it does not run."""
    r = PROCS.probe([binary, "-V"])
    if r is None:
        return ""
    line = (r.stdout or r.stderr).strip().splitlines()
    return line[0].strip() if r.returncode == 0 and line else ""


class MemcachedServer(Server):
    """One memcached binary. Its name is its version ("memcached 1.6.45"), so every row and
    ratio says which memcached it is; `label` overrides it when two binaries share a version."""
    families = ("mc",)

    def __init__(self, threads, layout, binary="memcached", label=None):
        super().__init__(threads, layout)
        self.binary = binary
        self.full_version = memcached_version(binary)
        self.name = label or self.full_version or f"memcached ({binary})"

    def clone(self):
        return MemcachedServer(self.threads, self.layout, self.binary, self.name)

    def command(self):
        cmd = [self.binary, "-p", str(self.ports["mc"]), "-l", "127.0.0.1", "-U", "0",
               "-t", str(self.threads), "-m", "1024", "-c", "4096"]
        if os.geteuid() == 0:
            cmd += ["-u", "root"]  # memcached refuses to run as root without -u
        return cmd

    def probes(self):
        return [("mc", b"version\r\n", b"VERSION")]

    def version(self):
        return f"{self.full_version or 'version unknown'} ({self.binary})"


class RedisServer(Server):
    families = ("resp",)

    def __init__(self, threads, layout):
        super().__init__(threads, layout)
        m = re.search(r"v=(\S+)", self.version())
        self.name = f"redis {m.group(1)}" if m else "redis"

    def command(self):
        cmd = ["redis-server", "--port", str(self.ports["resp"]), "--bind", "127.0.0.1",
               "--save", "", "--appendonly", "no", "--protected-mode", "no"]
        if self.threads > 1:
            cmd += ["--io-threads", str(self.threads), "--io-threads-do-reads", "yes"]
        return cmd

    def probes(self):
        return [("resp", b"PING\r\n", b"+PONG")]

    def version(self):
        r = PROCS.probe(["redis-server", "--version"])
        return r.stdout.strip() if r else ""


class TroveServer(Server):
    name = "trove"
    families = ("mc", "resp")

    def __init__(self, binary, threads, layout):
        super().__init__(threads, layout)
        self.binary = binary

    def clone(self):
        return TroveServer(self.binary, self.threads, self.layout)

    def command(self):
        cmd = [self.binary, "-p", str(self.ports["mc"]), "--resp-port", str(self.ports["resp"]),
               "-t", str(self.threads), "-U", "0", "-m", "1024", "-c", "4096"]
        if os.geteuid() == 0:
            cmd += ["-u", "root"]  # like memcached, Trove refuses root without -u
        return cmd

    def probes(self):
        return [("mc", b"version\r\n", b"VERSION"), ("resp", b"PING\r\n", b"+PONG")]

    def why_no_port(self, fam):
        if fam == "resp":
            return "Trove's RESP port is not up yet"
        return "Trove's memcached port is not up"

    def version(self):
        r = PROCS.probe([self.binary, "-V"])
        return (r.stdout or r.stderr).strip()[:80] if r else ""


def memory_limit(n):
    """Wall-clock limit of loading n keys for the memory test."""
    return 60.0 + n / 10000.0


class BenchRunner:
    def __init__(self, binary, layout, duration, warmup, keys):
        self.binary = binary
        self.layout = layout
        self.duration = duration
        self.warmup = warmup
        self.keys = keys
        self.gen_threads = len(layout.gen_cores) if layout.pinned else 1

    def run_limit(self):
        """Wall-clock limit of one timed trove-bench run: -w + -D + GEN_MARGIN_S."""
        return self.warmup + self.duration + GEN_MARGIN_S

    def _exec(self, args, limit, what="trove-bench"):
        """Runs trove-bench pinned, through PROCS with a wall-clock limit (past it: killed and
        LimitExceeded, never a figure); returns (json or None, children's rusage, wall s,
        stderr, rc)."""
        cmd = self.layout.prefix(self.layout.gen_cores) + [self.binary] + args + [
            "--json", "--no-progress"]
        t0 = time.monotonic()
        p = PROCS.popen(cmd, name=what, limit=limit, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
        out, err = PROCS.communicate(p)
        wall = time.monotonic() - t0
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            doc = json.loads(out) if p.returncode in (0, 3) else None
        except json.JSONDecodeError:
            doc = None
        return doc, usage, wall, err, p.returncode

    def _conn_args(self, wargs):
        # The workloads say 50 connections in total; split them over the generator threads.
        out = list(wargs)
        i = out.index("-c")
        total = int(out[i + 1])
        out[i + 1] = str(max(1, total // self.gen_threads))
        return out + ["-t", str(self.gen_threads)]

    def prefill(self, port, fam, prefix, size):
        args = ["-p", str(port), "-P", "resp" if fam == "resp" else "text", "--ratio", "1:0",
                "--pattern", "sequential", "--requests", str(self.keys), "-n", str(self.keys),
                "-v", str(size), "--key-prefix", prefix, "-c", "50", "-d", "16",
                "-t", str(self.gen_threads)]
        doc, _, _, err, rc = self._exec(args, PREFILL_LIMIT_S, f"trove-bench prefill {prefix}*")
        if doc is None:
            say(f"prefill failed (rc {rc}): {err.strip()[-300:]}")
            return {"completed": 0, "errors": {"total": -1}}
        return doc

    def run(self, server, port, wargs):
        args = ["-p", str(port), "-n", str(self.keys), "-D", str(self.duration),
                "-w", str(self.warmup)] + self._conn_args(wargs)
        load1 = os.getloadavg()[0]
        before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu0 = server.cpu_seconds()
        doc, after_children, wall, err, rc = self._exec(args, self.run_limit(),
                                                        f"trove-bench on {server.name}")
        cpu1 = server.cpu_seconds() if server.running() else cpu0
        gen_cpu = ((after_children.ru_utime - before_children.ru_utime) +
                   (after_children.ru_stime - before_children.ru_stime))
        if doc is None:
            doc = {"total": {"ops_per_sec": 0.0, "ops": 0,
                             "latency_us": {"p50": 0, "p90": 0, "p99": 0, "p99_9": 0, "max": 0}},
                   "completed": 0,
                   "errors": {"total": 1, "first": f"trove-bench rc {rc}: {err.strip()[-300:]}"}}
        server_cpu = cpu1 - cpu0
        completed = doc.get("completed", 0)
        server_cores = min(server.threads, len(self.layout.server_cores)) or 1
        doc["server_cpu_s"] = server_cpu
        doc["server_cpu_us_per_op"] = server_cpu * 1e6 / completed if completed else 0.0
        doc["server_util"] = server_cpu / wall / server_cores
        doc["gen_util"] = gen_cpu / wall / max(1, len(self.layout.gen_cores))
        doc["wall_s"] = wall
        doc["loadavg_1m_before"] = load1
        s_sat = doc["server_util"] >= SATURATED
        g_sat = doc["gen_util"] >= SATURATED
        doc["saturated"] = ("both" if s_sat and g_sat else "server" if s_sat else
                            "generator" if g_sat else "neither")
        return doc

    def memory(self, server, n):
        """RSS per item after loading n keys of 100-byte values into a fresh server."""
        if not server.start():
            return {"error": f"did not start: {server.last_error}"}
        try:
            fam = "mc" if server.port_for("mc") else "resp"
            port = server.port_for(fam)
            if port is None:
                return {"error": "no port up"}
            time.sleep(0.3)
            rss0 = server.rss_kib()
            args = ["-p", str(port), "-P", "resp" if fam == "resp" else "text", "--ratio", "1:0",
                    "--pattern", "sequential", "--requests", str(n), "-n", str(n), "-v", "100",
                    "--key-prefix", "mem:", "-c", "50", "-d", "16", "-t", str(self.gen_threads)]
            doc, _, _, err, rc = self._exec(args, memory_limit(n), "trove-bench memory load")
            time.sleep(0.3)
            rss1 = server.rss_kib()
            if doc is None:
                return {"error": f"load failed (rc {rc}): {err.strip()[-200:]}"}
            return {"items": n, "protocol": fam, "rss_before_mb": rss0 / 1024,
                    "rss_after_mb": rss1 / 1024,
                    "bytes_per_item": (rss1 - rss0) * 1024 / n,
                    "errors": doc["errors"]["total"]}
        finally:
            server.stop()


def _median(runs, path):
    vals = []
    for r in runs:
        v = r
        for k in path:
            v = v[k]
        vals.append(v)
    return statistics.median(vals) if vals else 0.0


def summarize(runs):
    return {
        "ops": _median(runs, ["total", "ops_per_sec"]),
        "p50": _median(runs, ["total", "latency_us", "p50"]),
        "p99": _median(runs, ["total", "latency_us", "p99"]),
        "p999": _median(runs, ["total", "latency_us", "p99_9"]),
        "cpu": _median(runs, ["server_cpu_us_per_op"]),
        "sutil": _median(runs, ["server_util"]),
        "gutil": _median(runs, ["gen_util"]),
        "errors": sum(r["errors"]["total"] for r in runs),
        "saturated": statistics.mode([r["saturated"] for r in runs]),
        "n": len(runs),
        "load": _median(runs, ["loadavg_1m_before"]),
        "first_error": next((r["errors"].get("first", "") for r in runs
                             if r["errors"]["total"]), ""),
    }


PEER = {"mc": "memcached", "resp": "redis"}  # the kind of server each family compares against
TARGET = {"W2": 4.0, "W5": 1.3}  # issue 4: Trove/peer ops/s the same run must reach


def kind(server_name):
    """The kind of a row: "memcached 1.6.45" is a memcached. Rows carry the version; ratios
    pick their peers by kind, one ratio row per peer."""
    return server_name.split(" ", 1)[0]


def paired_ratios(trove_runs, peer_runs):
    """Median over run i of trove/peer ops/s and CPU us/op, as text ("n/a" if none pair)."""
    pairs = [(t, p) for t, p in zip(trove_runs, peer_runs)
             if p["total"]["ops_per_sec"] > 0 and p["server_cpu_us_per_op"] > 0]
    if not pairs:
        return "n/a", "n/a"
    ops = statistics.median(t["total"]["ops_per_sec"] / p["total"]["ops_per_sec"] for t, p in pairs)
    cpu = statistics.median(t["server_cpu_us_per_op"] / p["server_cpu_us_per_op"] for t, p in pairs)
    return f"{ops:.2f}x", f"{cpu:.2f}"


def render_markdown(meta, workloads, order, servers, results, skipped, memory):
    L = []
    peers = [s for s in servers if kind(s) != "trove"]
    L.append(f"# Trove vs {' and '.join(peers) or 'no peer'}: {meta['date_utc']} UTC")
    L.append("")
    L.append(f"- Command: `{meta['command']}` (commit {meta['commit']})")
    L.append(f"- Machine: {meta['machine']}")
    L.append(f"- CPU layout: {meta['layout']}")
    L.append(f"- Server threads: {meta['server_threads']} each; {meta['runs']} run(s) per cell of "
             f"{meta['duration_s']} s after {meta['warmup_s']} s warm-up; medians shown")
    for k, v in meta["versions"].items():
        L.append(f"- {k}: {v}")
    for n in meta["notes"]:
        L.append(f"- NOTE: {n}")
    L.append("")
    L.append("Latencies are microseconds, measured by trove-bench from send to complete reply. "
             "Server CPU is utime+stime from /proc/PID/stat over the whole run (warm-up "
             "included) divided by every request completed in it. `saturated` names the side "
             f"whose CPU use was at least {int(SATURATED * 100)}% of its cores. `load avg` is the "
             "1-minute load average before the run: above the core count, other work shared "
             "the machine and the figures are noisier.")
    L.append("")
    L.append("| Workload | Server | ops/s | p50 | p99 | p99.9 | server CPU us/op | server CPU | "
             "generator CPU | saturated | errors | load avg |")
    L.append("|---|---|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|")
    sums = {}
    for w in order:
        for s in servers:
            runs = results.get((w, s))
            if not runs:
                why = skipped.get((w, s))
                if why is None:
                    continue  # this server doesn't speak the workload's protocol
                L.append(f"| {w} | {s} | skipped: {why} | | | | | | | | | |")
                continue
            m = summarize(runs)
            sums[(w, s)] = m
            L.append(f"| {w} | {s} | {m['ops']:,.0f} | {m['p50']:.1f} | {m['p99']:.1f} | "
                     f"{m['p999']:.1f} | {m['cpu']:.2f} | {m['sutil'] * 100:.0f}% | "
                     f"{m['gutil'] * 100:.0f}% | {m['saturated']} | {m['errors']} | "
                     f"{m['load']:.1f} |")
    L.append("")
    L.append("## Trove / peer (medians)")
    L.append("")
    L.append("Ratios of the medians above, and (paired) the median of the per-run ratios: run i "
             "of Trove and run i of the peer ran back to back, so a load swing between runs "
             "cancels out of the paired figure.")
    L.append("")
    L.append("| Workload | peer | ops/s ratio | paired | server CPU us/op ratio (lower is better "
             "for Trove) | paired | issue 4 target |")
    L.append("|---|---|--:|--:|--:|--:|---|")
    for w in order:
        t = sums.get((w, "trove"))
        for peer in [s for s in servers if kind(s) == PEER[workloads[w][0]]]:
            p = sums.get((w, peer))
            target = f">= {TARGET[w]}x ops/s" if w in TARGET else ""
            if t and p and p["ops"] > 0:
                cpu = f"{t['cpu'] / p['cpu']:.2f}" if p["cpu"] > 0 else "n/a"
                ratio = t["ops"] / p["ops"]
                pr_ops, pr_cpu = paired_ratios(results[(w, "trove")], results[(w, peer)])
                if w in TARGET:
                    target += " (met)" if ratio >= TARGET[w] else " (NOT met)"
                L.append(f"| {w} | {peer} | {ratio:.2f}x | {pr_ops} | {cpu} | {pr_cpu} | "
                         f"{target} |")
            else:
                who = "Trove" if not t else peer
                L.append(f"| {w} | {peer} | n/a ({who} skipped) | | n/a | | {target} |")
    L.append("")
    errs = [(k, m) for k, m in sums.items() if m["errors"]]
    if errs:
        L.append("## Reply errors")
        L.append("")
        for (w, s), m in errs:
            L.append(f"- {w} {s}: {m['errors']} errors; first: {m['first_error']}")
        L.append("")
    L.append("## Workloads")
    L.append("")
    for w in order:
        L.append(f"- {w}: {workloads[w][1]}; trove-bench `{' '.join(workloads[w][2])}`")
    L.append("")
    if memory:
        L.append("## Memory: resident size per item")
        L.append("")
        L.append("| Server | items (100 B values) | loaded over | RSS before MiB | RSS after MiB | "
                 "bytes/item |")
        L.append("|---|--:|---|--:|--:|--:|")
        for s, m in memory.items():
            if "error" in m:
                L.append(f"| {s} | skipped: {m['error']} | | | | |")
            else:
                L.append(f"| {s} | {m['items']:,} | {m['protocol']} | {m['rss_before_mb']:.1f} | "
                         f"{m['rss_after_mb']:.1f} | {m['bytes_per_item']:.1f} |")
        L.append("")
    L.append(f"Elapsed before the report: {meta['elapsed_s']} s.")
    L.append("")
    return "\n".join(L)


def draw_chart(base, order, servers, results):
    """A PNG with p50, p99 and p99.9 per workload, one bar per server (log scale)."""
    if shutil.which("gnuplot") is None:
        return None
    dat = base + "-latency.dat"
    with open(dat, "w") as f:
        f.write("# workload " + " ".join(f"{s}_p50 {s}_p99 {s}_p999" for s in servers) + "\n")
        for w in order:
            row = [w]
            for s in servers:
                runs = results.get((w, s))
                if runs:
                    m = summarize(runs)
                    row += [f"{max(m['p50'], 0.1):.2f}", f"{max(m['p99'], 0.1):.2f}",
                            f"{max(m['p999'], 0.1):.2f}"]
                else:
                    row += ["?", "?", "?"]
            f.write(" ".join(row) + "\n")
    png = base + "-latency.png"
    plots = []
    for i, (label, off) in enumerate((("p50", 0), ("p99", 1), ("p99.9", 2))):
        series = ", ".join(
            f"'{dat}' using {2 + 3 * j + off}:xtic(1) title '{s}'" for j, s in enumerate(servers))
        plots.append(f"set title 'latency {label} (us)'\nplot {series}")
    script = f"""set terminal pngcairo size 1500,500 noenhanced
set output '{png}'
set datafile missing '?'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set grid ytics
set key outside bottom center horizontal
set multiplot layout 1,3
{chr(10).join(plots)}
unset multiplot
"""
    r = PROCS.run(["gnuplot"], 60, input=script, text=True, capture_output=True)
    if r.returncode != 0:
        # pngcairo may be missing from gnuplot-nox builds; the plain png terminal is not.
        r = PROCS.run(["gnuplot"], 60, input=script.replace("pngcairo", "png"), text=True,
                      capture_output=True)
    if r.returncode != 0:
        say("gnuplot failed: " + r.stderr.strip()[-300:])
        return None
    return png
