"""Issue 9: a rejected storage line must not desynchronise the connection.

memcached 1.6.45 rule, which Trove follows: once a storage command's <bytes>
token parses, every later rejection of the line (bad flags or exptime, a
missing or bad cas unique, a key over 250 bytes; for ms an invalid flag, too
many flags or a long key) answers its error and swallows <bytes> + 2 bytes,
so no byte of the value is ever read as a command. The error is silent under
noreply (ms reports it whatever q says). While <bytes> itself does not parse,
the block cannot be sized: the error is the whole reply and the next line is
read as a command.

Each case below sends the bad line and a well-framed data block whose value
is itself a pipeline of commands, `flush_all\\r\\nset x 0 0 1\\r\\n`. Had the
value been read as commands, the flush would drop the guard item and x would
be pending or set.

One deliberate difference: for `ms <key> <bytes> <malformed flag token>`
(a token not starting with a letter or digit, e.g. `!x`) memcached 1.6.45
cannot size the block and reads it as commands; Trove swallows it like every
other rejection. That case is trove_only.
"""

import time

import pytest

from harness.client import Conn

BAD_FORMAT = b"CLIENT_ERROR bad command line format\r\n"
PAYLOAD = b"flush_all\r\nset x 0 0 1\r\n"
N = len(PAYLOAD)  # 24: the <bytes> of every storage line here
BLOCK = PAYLOAD + b"\r\n"
LONG_KEY = b"k" * 251


def b(s):
    return s.encode("latin1") if isinstance(s, str) else s


# (command, field) -> (line without noreply/q, reply when not quiet). %(k)s is
# the key of the test; %(n)d is N.
TEXT_CASES = {}
for _cmd in ("set", "add", "replace", "append", "prepend", "cas"):
    _cas = " 1" if _cmd == "cas" else ""
    TEXT_CASES[(_cmd, "bad flags")] = "%s %%(k)s abc 0 %%(n)d%s" % (_cmd, _cas)
    TEXT_CASES[(_cmd, "negative flags")] = "%s %%(k)s -1 0 %%(n)d%s" % (_cmd, _cas)
    TEXT_CASES[(_cmd, "bad exptime")] = "%s %%(k)s 0 abc %%(n)d%s" % (_cmd, _cas)
    TEXT_CASES[(_cmd, "key of 251 bytes")] = "%s %%(long)s 0 0 %%(n)d%s" % (_cmd, _cas)
TEXT_CASES[("cas", "missing cas unique")] = "cas %(k)s 0 0 %(n)d"
TEXT_CASES[("cas", "bad cas unique")] = "cas %(k)s 0 0 %(n)d abc"

MS_CASES = {
    "invalid flag": ("ms %(k)s %(n)d zz", b"CLIENT_ERROR invalid flag\r\n"),
    "too many flags": ("ms %(k)s %(n)d " + " ".join("T%d" % i for i in range(24)),
                       b"CLIENT_ERROR options flags are too long\r\n"),
    "key of 251 bytes": ("ms %(long)s %(n)d T0", BAD_FORMAT),
}


def render(tmpl, key):
    return b(tmpl % {"k": key, "n": N, "long": LONG_KEY.decode()})


@pytest.fixture
def guarded(conn, key):
    """A guard item written before the bad line, and x cleared. Yields the
    guard's key; afterwards proves the guard survived, x was never set and
    the connection is in step."""
    guard = b(key) + b"_guard"
    conn.set(guard, "safe", flags=7)
    conn.send(b"delete x noreply\r\n")
    yield guard
    assert conn.rt(b"get %s x\r\n" % guard) == b"VALUE %s 7 4\r\nsafe\r\nEND\r\n" % guard
    assert conn.rt(b"") == b""


def check_swallowed(conn, line, want):
    """line + block + mn: exactly `want`, then MN."""
    assert conn.rt(line + b"\r\n" + BLOCK) == want


# ---- text storage commands ------------------------------------------------

@pytest.mark.parametrize("noreply", [False, True], ids=["reply", "noreply"])
@pytest.mark.parametrize("cmd,field", sorted(TEXT_CASES), ids=lambda v: v.replace(" ", "_"))
def test_text_storage_rejection_swallows_block(conn, key, guarded, cmd, field, noreply):
    line = render(TEXT_CASES[(cmd, field)], key)
    if noreply:
        line += b" noreply"
    check_swallowed(conn, line, b"" if noreply else BAD_FORMAT)
    assert conn.get(key) is None


# ---- ms -----------------------------------------------------------------

@pytest.mark.parametrize("quiet", [False, True], ids=["reply", "q"])
@pytest.mark.parametrize("field", sorted(MS_CASES), ids=lambda v: v.replace(" ", "_"))
def test_ms_rejection_swallows_block(conn, key, guarded, field, quiet):
    tmpl, want = MS_CASES[field]
    line = render(tmpl, key)
    if quiet:
        line += b" q"
    # q hides HD only: the error is reported either way.
    check_swallowed(conn, line, want)
    assert conn.get(key) is None


@pytest.mark.trove_only
@pytest.mark.parametrize("quiet", [False, True], ids=["reply", "q"])
def test_ms_malformed_flag_token_swallows_block(conn, key, guarded, quiet):
    # Deliberate difference: memcached 1.6.45 leaves this block to be read as
    # commands (it runs the flush_all); Trove swallows it.
    line = render("ms %(k)s %(n)d !x", key)
    if quiet:
        line += b" q"
    check_swallowed(conn, line, BAD_FORMAT)
    assert conn.get(key) is None


# ---- the rejected lines back to back, and split across reads --------------

def test_every_rejection_pipelined_in_one_write(conn, key, guarded):
    data = b""
    want = b""
    for (cmd, field), tmpl in sorted(TEXT_CASES.items()):
        for noreply in (False, True):
            data += render(tmpl, key) + (b" noreply" if noreply else b"") + b"\r\n" + BLOCK
            want += b"" if noreply else BAD_FORMAT
    for field, (tmpl, reply) in sorted(MS_CASES.items()):
        for quiet in (False, True):
            data += render(tmpl, key) + (b" q" if quiet else b"") + b"\r\n" + BLOCK
            want += reply
    data += b"get %s x\r\n" % guarded
    conn.send(data)
    got = conn.read_until(b"END\r\n")
    assert got == want + b"VALUE %s 7 4\r\nsafe\r\nEND\r\n" % guarded
    assert conn.get(key) is None


@pytest.mark.parametrize("line", [
    "set %(k)s abc 0 %(n)d",
    "cas %(k)s 0 0 %(n)d",
    "prepend %(long)s 0 0 %(n)d noreply",
    "ms %(k)s %(n)d zz q",
], ids=["set_bad_flags", "cas_missing_unique", "prepend_long_key_noreply", "ms_invalid_flag_q"])
@pytest.mark.parametrize("split", [0, 1, 11, N, N + 1])
def test_rejected_block_split_across_reads(connect, key, line, split):
    # The block arrives in two writes, `split` bytes into it; nothing of it
    # may be read as a command whichever read it lands in.
    c = connect()
    guard = b(key) + b"_guard"
    c.set(guard, "safe", flags=7)
    c.send(b"delete x noreply\r\n")
    data = render(line, key) + b"\r\n"
    c.send(data + BLOCK[:split])
    time.sleep(0.05)
    c.send(BLOCK[split:])
    want = b"" if line.endswith("noreply") else (
        b"CLIENT_ERROR invalid flag\r\n" if " zz" in line else BAD_FORMAT)
    assert c.rt(b"") == want
    assert c.rt(b"get %s x\r\n" % guard) == b"VALUE %s 7 4\r\nsafe\r\nEND\r\n" % guard


def test_other_connections_are_untouched(connect, key):
    # The guard lives on another connection: a flush run from the value would
    # be server-wide.
    other = connect()
    guard = b(key) + b"_other"
    other.set(guard, "safe", flags=7)
    c = connect()
    for tmpl in ("set %(k)s abc 0 %(n)d", "cas %(k)s 0 0 %(n)d noreply", "ms %(long)s %(n)d"):
        c.send(render(tmpl, key) + b"\r\n" + BLOCK)
    assert c.rt(b"") == BAD_FORMAT + BAD_FORMAT
    assert other.rt(b"get %s x\r\n" % guard) == b"VALUE %s 7 4\r\nsafe\r\nEND\r\n" % guard


# ---- a bad <bytes>: nothing is swallowed ----------------------------------

BAD_LENGTHS = [
    "abc",            # not a number
    "-1",             # negative
    "000000000024",   # 12 characters: longer than a 32-bit token may be
    "+24",            # a sign other than '-'
    "24x",            # trailing junk
    "2147483648",     # past int32
]

BAD_LENGTH_LINES = {
    "set": "set %(k)s 0 0 {v}",
    "add": "add %(k)s 0 0 {v}",
    "replace": "replace %(k)s 0 0 {v}",
    "append": "append %(k)s 0 0 {v}",
    "prepend": "prepend %(k)s 0 0 {v}",
    "cas": "cas %(k)s 0 0 {v} 1",
    "ms": "ms %(k)s {v} T0",
}


@pytest.mark.parametrize("quiet", [False, True], ids=["reply", "quiet"])
@pytest.mark.parametrize("value", BAD_LENGTHS)
@pytest.mark.parametrize("cmd", sorted(BAD_LENGTH_LINES))
def test_bad_length_then_next_line_is_a_command(conn, key, guarded, cmd, value, quiet):
    line = render(BAD_LENGTH_LINES[cmd].format(v=value), key)
    if quiet:
        line += b" q" if cmd == "ms" else b" noreply"
    # Not silenced by noreply: the line is not understood far enough. The
    # mn that rt() sends next is read as a command and answers MN.
    assert conn.rt(line + b"\r\n") == BAD_FORMAT
    # A get as the next line is answered too.
    conn.send(line + b"\r\nget %s\r\n" % guarded)
    assert conn.read_value_reply() == BAD_FORMAT
    assert conn.read_value_reply() == b"VALUE %s 7 4\r\nsafe\r\nEND\r\n" % guarded
    assert conn.get(key) is None


@pytest.mark.parametrize("tmpl", [
    "set %(k)s 0 0", "cas %(k)s 0 0", "cas %(k)s 0 0 %(n)d", "ms %(k)s", "set", "ms",
], ids=["set_3_args", "cas_3_args", "cas_4_args_noreply_as_unique", "ms_key_only", "set_alone",
        "ms_alone"])
def test_too_few_words_then_next_line_is_a_command(conn, key, tmpl):
    line = render(tmpl, key)
    if tmpl == "cas %(k)s 0 0 %(n)d":
        # "noreply" is then the cas unique: not a number, and <bytes> has
        # parsed, so the block is swallowed, silently.
        assert conn.rt(line + b" noreply\r\n" + BLOCK) == b""
        return
    assert conn.rt(line + b"\r\n") == BAD_FORMAT
    # "noreply" in the place of a missing argument is that argument, and the
    # line is still short of <bytes>: answered, and nothing swallowed.
    assert conn.rt(line + b" noreply\r\n") == BAD_FORMAT
