"""What a test reads of a server process (/proc) and needs of its own
process limits: shared by the memcache and RESP suites."""

import resource


def rss_kib(pid):
    """The process's resident set (VmRSS) in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for %d" % pid)


def open_file_limit(pid):
    """The process's soft limit of open files."""
    with open("/proc/%d/limits" % pid) as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    raise AssertionError("no open-file limit for %d" % pid)


def sanitized(pid):
    """True when the process runs under ASan, TSan or UBSan (their
    allocators, not the server's, decide its memory)."""
    with open("/proc/%d/maps" % pid) as f:
        maps = f.read()
    return "libasan" in maps or "libtsan" in maps or "libubsan" in maps


def raise_nofile(want):
    """Raises this process's open-file soft limit to `want` (servers it
    starts inherit it): past the hard limit too when allowed (root with
    CAP_SYS_RESOURCE), else up to the hard limit. Returns the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= want:
        return soft
    if hard != resource.RLIM_INFINITY and hard < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
            return want
        except (ValueError, OSError):
            want = hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]
