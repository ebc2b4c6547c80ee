"""RESP framing over raw sockets: pipelining, inline commands, RESP3 and the
exact protocol errors (after which the server closes the connection)."""

import pytest


def test_pipeline_in_one_write_answers_in_order(raw):
    c = raw()
    c.send(b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\nINCR a\r\n*2\r\n$3\r\nGET\r\n$1\r\na\r\nPING\r\n")
    assert c.read_reply() == b"+OK\r\n"
    assert c.read_reply() == b":2\r\n"
    assert c.read_reply() == b"$1\r\n2\r\n"
    assert c.read_reply() == b"+PONG\r\n"


def test_request_split_byte_by_byte(raw):
    c = raw()
    req = b"*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n"
    for i in range(len(req)):
        c.send(req[i:i + 1])
    assert c.read_reply() == b"$5\r\nhello\r\n"


def test_inline_quotes_and_empty_lines(raw):
    c = raw()
    c.send(b"\r\n\r\nECHO \"a b\\x41\"\r\nECHO 'c d'\n")
    assert c.read_reply() == b"$4\r\na bA\r\n"
    assert c.read_reply() == b"$3\r\nc d\r\n"


def test_binary_safe_values(raw):
    c = raw()
    v = b"a\r\nb\x00c"
    assert c.cmd("SET", "bin", v) == b"+OK\r\n"
    assert c.cmd("GET", "bin") == b"$6\r\n" + v + b"\r\n"


@pytest.mark.parametrize("req,err", [
    (b"*1\r\nx\r\n", b"-ERR Protocol error: expected '$', got 'x'\r\n"),
    (b"*x\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*1\r\n$-1\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$536870913\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"SET a \"b\r\n", b"-ERR Protocol error: unbalanced quotes in request\r\n"),
])
def test_protocol_errors_reply_and_close(raw, req, err):
    c = raw()
    c.send(req)
    assert c.read_reply() == err
    assert c.closed()
    # Other clients are unaffected.
    assert raw().cmd("PING") == b"+PONG\r\n"


def test_too_big_inline_request(raw):
    c = raw()
    c.send(b"a" * (64 * 1024 + 10))
    assert c.read_reply() == b"-ERR Protocol error: too big inline request\r\n"
    assert c.closed()


def test_unknown_command_and_arity_errors(raw):
    c = raw()
    assert c.cmd("NOPE", "a", "b") == \
        b"-ERR unknown command 'NOPE', with args beginning with: 'a' 'b' \r\n"
    assert c.cmd("GET") == b"-ERR wrong number of arguments for 'get' command\r\n"
    assert c.cmd("PING") == b"+PONG\r\n"


def test_resp3_types(raw):
    c = raw()
    hello = c.cmd("HELLO", "3")
    assert hello.startswith(b"%7\r\n")
    assert b"$5\r\nproto\r\n:3\r\n" in hello
    assert c.cmd("GET", "missing") == b"_\r\n"
    c.cmd("HSET", "h", "f", "v")
    assert c.cmd("HGETALL", "h") == b"%1\r\n$1\r\nf\r\n$1\r\nv\r\n"
    c.cmd("SADD", "s", "1")
    assert c.cmd("SMEMBERS", "s") == b"~1\r\n$1\r\n1\r\n"
    c.cmd("ZADD", "z", "1.5", "m")
    assert c.cmd("ZSCORE", "z", "m") == b",1.5\r\n"
    assert c.cmd("ZRANGE", "z", "0", "-1", "WITHSCORES") == b"*1\r\n*2\r\n$1\r\nm\r\n,1.5\r\n"
    assert c.cmd("INFO", "server").startswith(b"=")
    assert c.cmd("HELLO", "2").startswith(b"*14\r\n")
    assert c.cmd("GET", "missing") == b"$-1\r\n"


def test_hello_errors(raw):
    c = raw()
    assert c.cmd("HELLO", "4") == b"-NOPROTO unsupported protocol version\r\n"
    assert c.cmd("HELLO", "x") == b"-ERR Protocol version is not an integer or out of range\r\n"
    assert c.cmd("HELLO", "3", "FOO") == b"-ERR Syntax error in HELLO option 'FOO'\r\n"


def test_quit_closes(raw):
    c = raw()
    assert c.cmd("QUIT") == b"+OK\r\n"
    assert c.closed()


def test_reset(raw):
    c = raw()
    c.cmd("HELLO", "3")
    c.cmd("SELECT", "2")
    c.cmd("MULTI")
    assert c.cmd("RESET") == b"+RESET\r\n"
    assert c.cmd("GET", "x") == b"$-1\r\n"
    assert c.cmd("EXEC") == b"-ERR EXEC without MULTI\r\n"


def test_large_value_roundtrip(raw):
    c = raw()
    v = b"x" * (300 * 1024)
    assert c.cmd("SET", "big", v) == b"+OK\r\n"
    assert c.cmd("GET", "big") == b"$%d\r\n" % len(v) + v + b"\r\n"
