"""Redis 7 functions: FUNCTION LOAD / LIST / DELETE / FLUSH / DUMP / RESTORE /
STATS / KILL / HELP and FCALL / FCALL_RO, through redis-py and raw sockets:
the library metadata and registration errors (Redis's words), the load run's
restricted API, flags, DUMP/RESTORE policies, the payload format (Redis's
RDB footer: version 10 and CRC-64), and atomicity of a function with
writers on other connections.
"""

import re
import struct
import threading

import pytest
import redis


def code(lib, body, fname="f"):
    return "#!lua name=%s\nredis.register_function('%s', function(KEYS, ARGV)\n %s \nend)" % (
        lib, fname, body)


@pytest.fixture
def fr(rd):
    rd.function_flush()
    yield rd
    rd.function_flush()


def err(fr, *args):
    with pytest.raises(redis.exceptions.ResponseError) as e:
        fr.execute_command(*args)
    return str(e.value)


def test_load_and_call(fr):
    assert fr.function_load(code("lib", "return 'hello'", "hello")) == "lib"
    assert fr.fcall("hello", 0) == "hello"
    assert fr.fcall("HELLO", 0) == "hello"  # function names are case-insensitive
    assert fr.function_load(code("lib2", "return redis.call('set', KEYS[1], ARGV[1])", "put")) \
        == "lib2"
    assert fr.fcall("put", 1, "k", "v") == "OK"
    assert fr.get("k") == "v"


def test_load_errors(fr):
    fr.function_load(code("lib", "return 1"))
    assert "Library 'lib' already exists" in err(fr, "FUNCTION", "LOAD", code("lib", "return 2"))
    assert err(fr, "FUNCTION", "LOAD", "foo", code("x", "return 1")) == \
        "Unknown option given: foo"
    assert err(fr, "FUNCTION", "LOAD", "return 1") == "Missing library metadata"
    assert err(fr, "FUNCTION", "LOAD", "#!lua\nredis.register_function('a', function() end)") == \
        "Library name was not given"
    assert err(fr, "FUNCTION", "LOAD", "#!lua name=a name=b\nx") == \
        "Invalid metadata value, name argument was given multiple times"
    assert err(fr, "FUNCTION", "LOAD", "#!lua name=a foo=bar\nx") == \
        "Invalid metadata value given: foo=bar"
    assert err(fr, "FUNCTION", "LOAD", "#!bad name=a\nx") == "Engine 'bad' not found"
    assert "Library names can only contain letters" in err(
        fr, "FUNCTION", "LOAD", code("bad-name", "return 1"))
    assert err(fr, "FUNCTION", "LOAD", "REPLACE", code("lib", "bad script")).startswith(
        "Error compiling function")
    assert fr.fcall("f", 0) == 1  # a failed REPLACE keeps the old library
    assert "Function f already exists" in err(fr, "FUNCTION", "LOAD", code("other", "return 3"))
    assert "No functions registered" in err(fr, "FUNCTION", "LOAD", "#!lua name=e\nreturn 1")
    assert fr.function_load('#!lua name="quoted"\nredis.register_function(\'q\', '
                            'function() return 1 end)') == "quoted"


@pytest.mark.parametrize("body,message", [
    ("return math.random()", "Script attempted to access nonexistent global variable 'math'"),
    ("return redis.call('ping')",
     "Script attempted to access nonexistent global variable 'call'"),
    ("return redis.setresp(3)",
     "Script attempted to access nonexistent global variable 'setresp'"),
    ("a = 1", "Attempt to modify a readonly table"),
    ("mt = getmetatable(_G)",
     "Script attempted to access nonexistent global variable 'getmetatable'"),
    ("redis.register_function()", "wrong number of arguments to redis.register_function"),
    ("redis.register_function('f1')", "calling redis.register_function with a single argument "
     "is only applicable to Lua table"),
    ("redis.register_function(nil, function() end)",
     "first argument to redis.register_function must be a string"),
    ("redis.register_function('f1', 'x')",
     "second argument to redis.register_function must be a function"),
    ("redis.register_function('', function() end)", "Library names can only contain"),
    ("redis.register_function('f1', function() end) redis.register_function('f1', function() "
     "end)", "Function already exists in the library"),
    ("redis.register_function{function_name='f1'}",
     "redis.register_function must get a callback argument"),
    ("redis.register_function{callback=function() end}",
     "redis.register_function must get a function name argument"),
    ("redis.register_function{function_name='f1', callback=function() end, flags='x'}",
     "flags argument to redis.register_function must be a table"),
    ("redis.register_function{function_name='f1', callback=function() end, flags={'x'}}",
     "unknown flag given"),
    ("redis.register_function{function_name='f1', callback=function() end, other=1}",
     "unknown argument given to redis.register_function"),
    ("local a = 1 while true do a = a + 1 end", "FUNCTION LOAD timeout"),
])
def test_load_run_api_and_registration_errors(fr, body, message):
    e = err(fr, "FUNCTION", "LOAD", "#!lua name=lib\n" + body)
    assert message in e
    assert fr.function_list() == []


def test_register_function_outside_load(fr):
    fr.function_load("#!lua name=lib\nlocal lib = redis\n"
                     "lib.register_function('f1', function() lib.x = 1 end)\n"
                     "lib.register_function('f2', function() lib.register_function('f3', "
                     "function() end) end)\n")
    assert "Attempt to modify a readonly table" in err(fr, "FCALL", "f1", "0")
    assert "can only be called on FUNCTION LOAD command" in err(fr, "FCALL", "f2", "0")


def test_fcall_errors_and_flags(fr):
    fr.function_load(
        "#!lua name=lib\n"
        "redis.register_function('w', function(k) return redis.call('set', k[1], 1) end)\n"
        "redis.register_function{function_name='ro', callback=function(k) "
        "return redis.call('set', k[1], 1) end, flags={'no-writes'}}\n"
        "redis.register_function{function_name='rd', callback=function(k) "
        "return redis.call('get', k[1]) end, flags={'no-writes'}, description='reads'}\n"
        "redis.register_function{function_name='oom', callback=function(k) "
        "return redis.call('set', k[1], 2) end, flags={'allow-oom'}}\n"
        "redis.register_function('boom', function() return redis.call('nosuch') end)\n"
        "redis.register_function{function_name='hi', callback=function() return 'hi' end, "
        "flags={'no-writes'}}\n")
    assert err(fr, "FCALL", "nope", "0") == "Function not found"
    assert err(fr, "FCALL", "w", "x") == "Bad number of keys provided"
    assert err(fr, "FCALL", "w", "-1") == "Number of keys can't be negative"
    assert err(fr, "FCALL", "w", "3", "a") == \
        "Number of keys can't be greater than number of args"
    assert "Can not execute a script with write flag using *_ro command" in err(
        fr, "FCALL_RO", "w", "1", "x")
    assert "Write commands are not allowed from read-only scripts" in err(
        fr, "FCALL", "ro", "1", "x")
    fr.set("x", "1")
    assert fr.execute_command("FCALL_RO", "rd", "1", "x") == "1"
    assert err(fr, "FCALL", "boom", "0") == \
        "Unknown Redis command called from script script: boom, on @user_function:6."
    fr.config_set("maxmemory", 1)
    try:
        assert err(fr, "FCALL", "w", "1", "x").startswith("OOM command not allowed")
        assert fr.fcall("hi", 0) == "hi"  # no-writes: runs over maxmemory
        assert fr.fcall("oom", 1, "x") == "OK"  # allow-oom: writes over maxmemory
        assert err(fr, "FUNCTION", "LOAD", code("lib9", "return 1")).startswith("OOM")
    finally:
        fr.config_set("maxmemory", 0)


def test_list_stats_delete(fr):
    fr.function_load("#!lua name=library1\nredis.register_function{function_name='f1', "
                     "callback=function() return 1 end, description='desc', "
                     "flags={'no-writes', 'allow-stale'}}")
    fr.function_load(code("lib2", "return 2", "f2"))
    listed = sorted(fr.execute_command("FUNCTION", "LIST"), key=lambda lib: lib[1])
    assert listed == [
        ["library_name", "lib2", "engine", "LUA", "functions",
         [["name", "f2", "description", None, "flags", []]]],
        ["library_name", "library1", "engine", "LUA", "functions",
         [["name", "f1", "description", "desc", "flags", ["no-writes", "allow-stale"]]]]]
    only = fr.execute_command("FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "LIBRARY*")
    assert len(only) == 1 and only[0][1] == "library1" and only[0][6] == "library_code"
    assert "Unknown argument bad" in err(fr, "FUNCTION", "LIST", "bad")
    assert "library name argument was not given" in err(fr, "FUNCTION", "LIST", "LIBRARYNAME")
    assert "Unknown argument withcode" in err(fr, "FUNCTION", "LIST", "withcode", "withcode")
    assert fr.execute_command("FUNCTION", "STATS") == [
        "running_script", None, "engines",
        ["LUA", ["libraries_count", 2, "functions_count", 2]]]
    assert fr.function_delete("lib2") is True
    assert err(fr, "FUNCTION", "DELETE", "lib2") == "Library not found"
    assert err(fr, "FCALL", "f2", "0") == "Function not found"
    assert err(fr, "FUNCTION", "KILL") == "NOTBUSY No scripts in execution right now."
    assert "FUNCTION FLUSH only supports SYNC|ASYNC option" in err(fr, "FUNCTION", "FLUSH", "x")
    assert fr.execute_command("FUNCTION", "FLUSH", "ASYNC") == "OK"
    assert fr.function_list() == []
    assert "Try FUNCTION HELP" in err(fr, "FUNCTION", "nosuch")
    assert fr.execute_command("FUNCTION", "HELP")[0].startswith("FUNCTION <subcommand>")


def test_list_reply_in_resp3(raw):
    c = raw()
    c.cmd("FUNCTION", "FLUSH")
    c.cmd("FUNCTION", "LOAD", "#!lua name=l\nredis.register_function{function_name='f', "
          "callback=function() return 1 end, flags={'no-writes'}}")
    c.cmd("HELLO", "3")
    assert c.cmd("FUNCTION", "LIST") == (
        b"*1\r\n%3\r\n$12\r\nlibrary_name\r\n$1\r\nl\r\n$6\r\nengine\r\n$3\r\nLUA\r\n"
        b"$9\r\nfunctions\r\n*1\r\n%3\r\n$4\r\nname\r\n$1\r\nf\r\n$11\r\ndescription\r\n_\r\n"
        b"$5\r\nflags\r\n~1\r\n+no-writes\r\n")
    c.cmd("FUNCTION", "FLUSH")


def test_dump_restore_policies(fr, r):
    fr.function_load(code("lib1", "return 1", "f1"))
    fr.function_load(code("lib2", "return 2", "f2"))
    payload = r.function_dump()
    # Redis's footer: RDB version 10 (little-endian), then CRC-64/Jones.
    assert struct.unpack("<H", payload[-10:-8]) == (10,)
    assert payload[0] == 245  # RDB_OPCODE_FUNCTION2
    fr.function_flush()
    assert fr.function_restore(payload) is True
    assert fr.fcall("f1", 0) == 1 and fr.fcall("f2", 0) == 2
    assert re.search("Library lib[12] already exists", err(fr, "FUNCTION", "RESTORE", payload))
    fr.function_load(code("lib1", "return 10", "f1"), replace=True)
    assert fr.function_restore(payload, "REPLACE") is True
    assert fr.fcall("f1", 0) == 1
    fr.function_flush()
    fr.function_load(code("other", "return 3", "f1"))
    assert "Function f1 already exists" in err(fr, "FUNCTION", "RESTORE", payload, "REPLACE")
    assert fr.fcall("f1", 0) == 3  # nothing changed
    assert fr.function_restore(payload, "FLUSH") is True
    assert sorted(l[1] for l in fr.function_list()) == ["lib1", "lib2"]
    assert "payload version or checksum are wrong" in err(fr, "FUNCTION", "RESTORE", "bad")
    bad = bytearray(payload)
    bad[5] ^= 1
    assert "payload version or checksum are wrong" in err(fr, "FUNCTION", "RESTORE", bytes(bad))
    assert "Wrong restore policy given" in err(fr, "FUNCTION", "RESTORE", payload, "nope")
    assert "Try FUNCTION HELP" in err(fr, "FUNCTION", "RESTORE", "a", "b", "c")


def _crc64_jones(data):
    poly = 0x95AC9329AC4BC9B5
    crc = 0
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
    return crc


def test_restore_reads_redis_encodings(fr, r):
    """A payload as Redis writes it: the code LZF-compressed (RDB version 10)."""
    body = code("lz", "return 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'", "lz")
    raw_code = body.encode()
    # LZF: a literal run of the first 40 bytes, then the rest literal in 32-byte runs,
    # with one back reference copying 20 bytes of the 'a' run.
    i = raw_code.index(b"a" * 32)
    lit1 = raw_code[:i + 1]  # up to and including the first 'a'
    rest = raw_code[i + 1 + 20:]
    comp = b""
    for k in range(0, len(lit1), 32):
        chunk = lit1[k:k + 32]
        comp += bytes([len(chunk) - 1]) + chunk
    comp += bytes([(7 << 5) | 0, 20 - 2 - 7, 0])  # length 20, distance 1
    for k in range(0, len(rest), 32):
        chunk = rest[k:k + 32]
        comp += bytes([len(chunk) - 1]) + chunk

    def length(n):
        return bytes([n]) if n < 64 else bytes([0x40 | (n >> 8), n & 0xFF])
    payload = bytes([245, 0xC3]) + length(len(comp)) + length(len(raw_code)) + comp
    payload += struct.pack("<H", 10)
    payload += struct.pack("<Q", _crc64_jones(payload))
    assert fr.function_restore(payload) is True
    assert fr.fcall("lz", 0) == "a" * 32
    assert fr.function_list(withcode=True)[0][7] == body


def test_function_is_atomic_with_writers_on_other_connections(fr, resp_port):
    fr.function_load("#!lua name=bank\nredis.register_function('move', function(k, a)\n"
                     "  local n = tonumber(a[1])\n"
                     "  redis.call('decrby', k[1], n)\n"
                     "  redis.call('incrby', k[2], n)\n"
                     "  return redis.call('get', k[1]) + redis.call('get', k[2])\n"
                     "end)")
    fr.mset({"acct:a": 1000, "acct:b": 1000})
    bad = []

    def mover(src, dst):
        c = redis.Redis(host="127.0.0.1", port=resp_port, decode_responses=True)
        for _ in range(200):
            if c.fcall("move", 2, src, dst, 1) != 2000:
                bad.append("sum")

    def reader():
        c = redis.Redis(host="127.0.0.1", port=resp_port, decode_responses=True)
        for _ in range(200):
            a, b = c.mget("acct:a", "acct:b")
            if int(a) + int(b) != 2000:
                bad.append((a, b))
    threads = [threading.Thread(target=mover, args=("acct:a", "acct:b")),
               threading.Thread(target=mover, args=("acct:b", "acct:a")),
               threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []
    assert int(fr.get("acct:a")) + int(fr.get("acct:b")) == 2000


def test_functions_survive_flushall_and_reach_every_worker(fr, resp_port):
    fr.function_load(code("lib", "return 'everywhere'", "ev"))
    fr.flushall()
    for _ in range(6):  # new connections land on different workers
        c = redis.Redis(host="127.0.0.1", port=resp_port, decode_responses=True)
        assert c.fcall("ev", 0) == "everywhere"
        c.close()
    fr.function_delete("lib")
    for _ in range(6):
        c = redis.Redis(host="127.0.0.1", port=resp_port, decode_responses=True)
        with pytest.raises(redis.exceptions.ResponseError, match="Function not found"):
            c.fcall("ev", 0)
        c.close()


def test_redis_version_api_in_functions(fr):
    fr.function_load(
        "#!lua name=v\nlocal version = redis.REDIS_VERSION_NUM\n"
        "redis.register_function('v1', function() return string.format('%s.%s.%s', "
        "bit.band(bit.rshift(version, 16), 0xff), bit.band(bit.rshift(version, 8), 0xff), "
        "bit.band(version, 0xff)) end)\n"
        "redis.register_function('v2', function() return redis.REDIS_VERSION end)")
    assert fr.fcall("v1", 0) == fr.fcall("v2", 0)


def test_command_getkeys(raw):
    c = raw()
    assert c.cmd("COMMAND", "GETKEYS", "FCALL", "f", "2", "a", "b", "c") == \
        b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"
    assert c.cmd("COMMAND", "GETKEYS", "FCALL_RO", "f", "1", "x", "y") == b"*1\r\n$1\r\nx\r\n"
