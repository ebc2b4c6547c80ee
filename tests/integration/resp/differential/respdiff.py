"""Manual differential check: runs a command list against redis-server and
Trove in RESP2 and RESP3 and prints every reply that differs byte for byte.

  python3 respdiff.py REDIS_PORT TROVE_RESP_PORT replies.txt [errors.txt ...]

One command per line, words split on spaces ("\\s" is a space inside a word);
lines starting with # are skipped. Known, documented differences: RANDOMKEY,
random picks, OBJECT ENCODING raw-vs-embstr after APPEND, ZRANK WITHSCORE
(Redis 7.2), DEBUG (disabled by default in Redis)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from conftest import RawConn  # noqa: E402


def load(paths):
    cmds = []
    for path in paths:
        for line in open(path).read().splitlines():
            if line.strip() and not line.startswith("#"):
                cmds.append([w.replace("\\s", " ") for w in line.split()])
    return cmds


def differences(rport, tport, cmds):
    """(protocol, command, redis's reply, Trove's reply) for every reply that differs."""
    out = []
    for proto in ("2", "3"):
        a, b = RawConn(rport), RawConn(tport)
        for c in (a, b):
            c.cmd("FLUSHALL")
            c.cmd("HELLO", proto)
        for cmd in cmds:
            ra, rb = a.cmd(*cmd), b.cmd(*cmd)
            if ra != rb:
                out.append((proto, " ".join(cmd), ra, rb))
        a.close()
        b.close()
    return out


def main():
    rport, tport = int(sys.argv[1]), int(sys.argv[2])
    diffs = differences(rport, tport, load(sys.argv[3:]))
    for proto, cmd, ra, rb in diffs:
        print("RESP%s %s\n  redis: %r\n  trove: %r" % (proto, cmd, ra[:300], rb[:300]))
    print("%d differences" % len(diffs))


if __name__ == "__main__":
    main()
