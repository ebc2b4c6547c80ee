"""Geo commands through redis-py and raw sockets: GEOADD (NX XX CH) GEOPOS
GEODIST GEOHASH GEOSEARCH GEOSEARCHSTORE GEORADIUS GEORADIUSBYMEMBER and the
_RO forms, with Redis's replies to the printed digit, its error texts, RESP2
and RESP3 shapes, keyspace events, WATCH, ACL key permissions and COMMAND
metadata, and geo.tcl's fuzz and edge cases.

Redis is the reference: every test runs against redis-server too
(TROVE_TEST_TARGET=redis). Expected values were read from redis-server
7.0.15 or come from Redis's tests/unit/geo.tcl and the redis.io examples.
"""

import math
import random

import pytest
import redis

from conftest import resp_target
from resp_errors import err
from keyspace_observe import changes, keyevents, listen  # noqa: E402

TARGET = resp_target()

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
BAD_UNIT = "unsupported unit provided. please use M, KM, FT, MI"
NOT_FLOAT = "value is not a valid float"
NOT_INT = "value is not an integer or out of range"
NO_MEMBER = "could not decode requested zset member"

NYC = ["-73.9454966", "40.747533", "lic market", "-73.9733487", "40.7648057",
       "central park n/q/r", "-73.9903085", "40.7362513", "union square", "-74.0131604",
       "40.7126674", "wtc one", "-73.7858139", "40.6428986", "jfk", "-73.9375699",
       "40.7498929", "q4", "-73.9564142", "40.7480973", "4545"]
SICILY = ["13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"]


def x(r, *args):
    """A command through r with redis-py's GEO reply callbacks removed."""
    for name in list(r.response_callbacks):
        if name.upper().startswith("GEO"):
            del r.response_callbacks[name]
    return r.execute_command(*args)


def _changes(r, *args):
    return changes(r, *args, call=lambda *a: x(r, *a))


@pytest.fixture
def g(resp_port, r):
    """A client that gives replies as Redis sends them: strings, no parsing."""
    c = redis.Redis(host="127.0.0.1", port=resp_port, socket_timeout=20, decode_responses=True)
    for name in list(c.response_callbacks):
        if name.upper().startswith("GEO"):
            del c.response_callbacks[name]
    yield c
    c.close()


def cmd(c, *args):
    return c.execute_command(*args)


# ---- GEOADD and the stored scores -------------------------------------------------

def test_geoadd_scores_are_redis_geohashes(g):
    assert cmd(g, "GEOADD", "nyc", *NYC) == 7
    # geo.tcl, "Check geoset values".
    assert g.zrange("nyc", 0, -1, withscores=True) == [
        ("wtc one", 1791873972053020.0), ("union square", 1791875485187452.0),
        ("central park n/q/r", 1791875761332224.0), ("4545", 1791875796750882.0),
        ("lic market", 1791875804419201.0), ("q4", 1791875830079666.0),
        ("jfk", 1791895905559723.0)]
    assert cmd(g, "GEOADD", "Sicily", *SICILY) == 2
    assert g.zscore("Sicily", "Palermo") == 3479099956230698.0
    assert g.zscore("Sicily", "Catania") == 3479447370796909.0
    assert g.type("Sicily") == "zset"
    # The upper edges keep the bit past the last cell, as in Redis.
    assert cmd(g, "GEOADD", "e", "180", "85.05112878", "ne", "-180", "-85.05112878", "sw",
               "180", "0", "e0", "0", "0", "z") == 4
    assert g.zrange("e", 0, -1, withscores=True) == [
        ("sw", 0.0), ("z", 3377699720527872.0), ("e0", 10133099161583616.0),
        ("ne", 13510798882111488.0)]


def test_geoadd_nx_xx_ch(g):
    # geo.tcl's GEOADD update tests.
    assert cmd(g, "GEOADD", "nyc", "-73.9454966", "40.747533", "lic market") == 1
    assert cmd(g, "GEOADD", "nyc", "-73.9454966", "40.747533", "lic market") == 0
    assert cmd(g, "GEOADD", "nyc", "CH", "40.747533", "-73.9454966", "lic market") == 1
    assert cmd(g, "GEOPOS", "nyc", "lic market") == [["40.7475319504737854",
                                                      "-73.94549769039056741"]]
    assert cmd(g, "GEOADD", "nyc", "NX", "-73.9454966", "40.747533", "lic market") == 0
    assert cmd(g, "GEOADD", "nyc", "XX", "-83.9454966", "40.747533", "lic market") == 0
    assert cmd(g, "GEOPOS", "nyc", "lic market")[0][0] == "-83.94549518823623657"
    assert cmd(g, "GEOADD", "nyc", "CH", "NX", "-73.9454966", "40.747533", "lic market") == 0
    assert cmd(g, "GEOADD", "nyc", "CH", "XX", "-73.9454966", "40.747533", "lic market") == 1
    # XX adds nothing, NX changes nothing; CH counts both kinds.
    assert cmd(g, "GEOADD", "nyc", "XX", "CH", "1", "1", "new", "2", "2", "lic market") == 1
    assert g.zscore("nyc", "new") is None
    assert cmd(g, "GEOADD", "nyc", "nx", "ch", "1", "1", "new", "3", "3", "lic market") == 1
    assert cmd(g, "GEOADD", "nyc", "ch", "1", "1", "new", "3", "3", "lic market") == 1
    assert cmd(g, "GEOADD", "nyc", "ch", "1", "1", "new", "3", "3", "lic market") == 0
    # XX on a missing key creates nothing.
    assert cmd(g, "GEOADD", "nokey", "XX", "1", "1", "a") == 0
    assert g.exists("nokey") == 0


def test_geoadd_errors(g):
    for args in (["xx", "nx", "-73.9454966", "40.747533", "lic market"],
                 ["ch", "xx", "foo", "-73.9454966", "40.747533", "lic market"],
                 ["1", "2", "a", "3"], ["nx", "xx", "ch"], ["ch", "ch", "ch"],
                 ["gt", "1", "1", "a", "b"]):
        assert err(cmd, g, "GEOADD", "k", *args) == "syntax error", args
    assert err(cmd, g, "GEOADD", "k", "gt", "1", "a") == NOT_FLOAT
    assert err(cmd, g, "GEOADD", "k", "1", "2", "a", "foo", "bar", "b") == NOT_FLOAT
    assert err(cmd, g, "GEOADD", "k", "200", "100", "a") == \
        "invalid longitude,latitude pair 200.000000,100.000000"
    assert err(cmd, g, "GEOADD", "k", "-0.0000001", "-85.06", "a") == \
        "invalid longitude,latitude pair -0.000000,-85.060000"
    assert err(cmd, g, "GEOADD", "k", "1", "2", "a", "180.0000001", "0", "b") == \
        "invalid longitude,latitude pair 180.000000,0.000000"
    assert err(cmd, g, "GEOADD", "k", "1e300", "1", "a") == (
        "invalid longitude,latitude pair %f,1.000000" % 1e300)
    assert err(cmd, g, "GEOADD", "k", "nan", "1", "a") == NOT_FLOAT
    assert err(cmd, g, "GEOADD", "k", "1", "2") == "wrong number of arguments for 'geoadd' command"
    assert g.exists("k") == 0  # nothing was added by a failed call
    g.set("str", "x")
    assert err(cmd, g, "GEOADD", "str", "1", "2", "a") == WRONGTYPE
    # The coordinates are checked before the key's type.
    assert err(cmd, g, "GEOADD", "str", "1", "200", "a") == \
        "invalid longitude,latitude pair 1.000000,200.000000"


# ---- GEOPOS, GEODIST, GEOHASH -----------------------------------------------------

def test_geopos_geodist_geohash_redis_io_examples(g):
    cmd(g, "GEOADD", "Sicily", *SICILY)
    assert cmd(g, "GEOPOS", "Sicily", "Palermo", "Catania", "NonExisting") == [
        ["13.36138933897018433", "38.11555639549629859"],
        ["15.08726745843887329", "37.50266842333162032"], None]
    assert cmd(g, "GEODIST", "Sicily", "Palermo", "Catania") == "166274.1516"
    assert cmd(g, "GEODIST", "Sicily", "Palermo", "Catania", "km") == "166.2742"
    assert cmd(g, "GEODIST", "Sicily", "Palermo", "Catania", "MI") == "103.3182"
    assert cmd(g, "GEODIST", "Sicily", "Palermo", "Catania", "Ft") == "545518.8700"
    assert cmd(g, "GEODIST", "Sicily", "Palermo", "Palermo") == "0.0000"
    assert cmd(g, "GEODIST", "Sicily", "Foo", "Bar") is None
    assert cmd(g, "GEODIST", "Sicily", "Palermo", "Agrigento") is None
    assert cmd(g, "GEODIST", "nokey", "Palermo", "Catania") is None
    assert cmd(g, "GEOHASH", "Sicily", "Palermo", "Catania", "nope") == [
        "sqc8b49rny0", "sqdtr74hyu0", None]
    assert cmd(g, "GEOPOS", "nokey", "a", "b") == [None, None]
    assert cmd(g, "GEOHASH", "nokey", "a") == [None]
    assert cmd(g, "GEOPOS", "Sicily") == []
    assert cmd(g, "GEOHASH", "Sicily") == []


def test_geohash_and_geopos_edges(g):
    cmd(g, "GEOADD", "points", "-5.6", "42.6", "test")
    assert cmd(g, "GEOHASH", "points", "test") == ["ezs42e44yx0"]  # geo.tcl, Wikipedia
    cmd(g, "GEOADD", "e", "180", "85.05112878", "ne", "-180", "-85.05112878", "sw",
        "180", "0", "e0", "0", "0", "z")
    assert cmd(g, "GEOPOS", "e", "ne", "sw", "e0", "z") == [
        ["180", "85.0511287799999991"], ["-179.99999731779098511", "-85.05112751263942528"],
        ["180", "0.00000126736058093"], ["0.00000268220901489", "0.00000126736058093"]]
    assert cmd(g, "GEOHASH", "e", "ne", "sw", "e0", "z") == [
        "bp05b5048p0", "00bh0hbj200", "80000000000", "s0000000000"]
    # Any sorted set is read as a geo set, whatever its scores.
    g.zadd("e", {"neg": -1, "huge": 1e300, "three": 3})
    assert cmd(g, "GEOPOS", "e", "neg", "huge", "three") == [
        ["180", "85.0511287799999991"], ["-179.99999731779098511", "-85.05112751263942528"],
        ["-179.99999195337295532", "-85.05112497791824921"]]
    assert cmd(g, "GEOHASH", "e", "neg", "huge", "three") == [
        "bp05b5048p0", "00bh0hbj200", "00bh0hbj210"]


def test_geopos_geodist_geohash_errors(g):
    cmd(g, "GEOADD", "Sicily", *SICILY)
    assert err(cmd, g, "GEODIST", "Sicily", "Palermo", "Catania", "yards") == BAD_UNIT
    assert err(cmd, g, "GEODIST", "Sicily", "Palermo", "Catania", "km", "x") == "syntax error"
    # The unit and the argument count are checked before the key.
    assert err(cmd, g, "GEODIST", "nokey", "a", "b", "yards") == BAD_UNIT
    g.set("str", "x")
    for c in (["GEOPOS", "str", "a"], ["GEOHASH", "str", "a"], ["GEODIST", "str", "a", "b"]):
        assert err(cmd, g, *c) == WRONGTYPE, c
    assert err(cmd, g, "GEODIST", "str", "a", "b", "x", "y") == "syntax error"
    assert err(cmd, g, "GEOPOS") == "wrong number of arguments for 'geopos' command"
    assert err(cmd, g, "GEODIST", "k", "a") == "wrong number of arguments for 'geodist' command"


# ---- searches ------------------------------------------------------------------------

@pytest.fixture
def nyc(g):
    assert cmd(g, "GEOADD", "nyc", *NYC) == 7
    return g


def test_georadius_and_geosearch_geo_tcl(nyc):
    g = nyc
    assert cmd(g, "GEORADIUS", "nyc", "-73.9798091", "40.7598464", "3", "km", "asc") == \
        ["central park n/q/r", "4545", "union square"]
    assert cmd(g, "GEOSEARCH", "nyc", "fromlonlat", "-73.9798091", "40.7598464", "bybox",
               "6", "6", "km", "asc") == \
        ["central park n/q/r", "4545", "union square", "lic market"]
    assert cmd(g, "GEORADIUS", "nyc", "-73.9798091", "40.7598464", "3", "km", "withdist",
               "asc") == [["central park n/q/r", "0.7750"], ["4545", "2.3651"],
                          ["union square", "2.7697"]]
    assert cmd(g, "GEOSEARCH", "nyc", "fromlonlat", "-73.9798091", "40.7598464", "bybox", "6",
               "6", "km", "withdist", "asc") == [
        ["central park n/q/r", "0.7750"], ["4545", "2.3651"], ["union square", "2.7697"],
        ["lic market", "3.1991"]]
    assert cmd(g, "GEORADIUS", "nyc", "-73.9798091", "40.7598464", "10", "km", "COUNT", "3") == \
        ["central park n/q/r", "4545", "union square"]
    assert cmd(g, "GEORADIUS", "nyc", "-73.9798091", "40.7598464", "10", "km", "COUNT", "3",
               "ANY") == ["wtc one", "union square", "central park n/q/r"]
    assert cmd(g, "GEORADIUS", "nyc", "-73.9798091", "40.7598464", "10", "km", "COUNT", "3",
               "ANY", "ASC") == ["central park n/q/r", "union square", "wtc one"]
    assert cmd(g, "GEORADIUS", "nyc", "-73.9798091", "40.7598464", "10", "km", "COUNT", "2",
               "DESC") == ["wtc one", "q4"]
    assert cmd(g, "GEORADIUSBYMEMBER", "nyc", "wtc one", "7", "km") == \
        ["wtc one", "union square", "central park n/q/r", "4545", "lic market"]
    assert cmd(g, "GEORADIUSBYMEMBER", "nyc", "wtc one", "7", "km", "withdist") == [
        ["wtc one", "0.0000"], ["union square", "3.2544"], ["central park n/q/r", "6.7000"],
        ["4545", "6.1975"], ["lic market", "6.8969"]]
    assert cmd(g, "GEOSEARCH", "nyc", "frommember", "wtc one", "bybox", "14", "14", "km") == \
        ["wtc one", "union square", "central park n/q/r", "4545", "lic market", "q4"]
    # The _RO forms answer the same.
    assert cmd(g, "GEORADIUS_RO", "nyc", "-73.9798091", "40.7598464", "3", "km", "asc") == \
        ["central park n/q/r", "4545", "union square"]
    assert cmd(g, "GEORADIUSBYMEMBER_RO", "nyc", "wtc one", "7", "km", "desc", "count", "2") \
        == ["lic market", "central park n/q/r"]


def test_search_with_options_shapes(g):
    cmd(g, "GEOADD", "Sicily", *SICILY)
    palermo = ["Palermo", "190.4424", 3479099956230698,
               ["13.36138933897018433", "38.11555639549629859"]]
    catania = ["Catania", "56.4413", 3479447370796909,
               ["15.08726745843887329", "37.50266842333162032"]]
    # Unsorted: the scan order (Palermo's cell first).
    assert cmd(g, "GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHDIST", "WITHCOORD",
               "WITHHASH") == [palermo, catania]
    # The extras always come as dist, hash, coord, whatever the argument order.
    assert cmd(g, "GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km",
               "WITHCOORD", "WITHHASH", "WITHDIST", "ASC") == [catania, palermo]
    assert cmd(g, "GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km",
               "WITHCOORD", "DESC") == [["Palermo", palermo[3]], ["Catania", catania[3]]]
    assert cmd(g, "GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km",
               "WITHHASH", "ASC", "COUNT", "1") == [["Catania", 3479447370796909]]
    assert cmd(g, "GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km",
               "ASC", "COUNT", "1", "ANY", "WITHDIST") == [["Palermo", "190.4424"]]
    assert cmd(g, "GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km",
               "ASC", "WITHDIST") == [["Catania", "56.4413"], ["Palermo", "190.4424"]]
    assert cmd(g, "GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "200", "km",
               "WITHDIST") == [["Palermo", "0.0000"], ["Catania", "166.2742"]]
    # Units: miles and feet.
    assert cmd(g, "GEORADIUS", "Sicily", "15", "37", "200", "mi", "WITHDIST", "ASC") == \
        [["Catania", "35.0711"], ["Palermo", "118.3357"]]
    assert cmd(g, "GEORADIUSBYMEMBER", "Sicily", "Catania", "600000", "ft", "WITHDIST") == \
        [["Palermo", "545518.8700"], ["Catania", "0.0000"]]
    # Nothing in range: an empty array; a zero radius finds the cell's own member.
    assert cmd(g, "GEOSEARCH", "Sicily", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km") == []
    assert cmd(g, "GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "0", "m") == \
        ["Palermo"]


def test_geo_tcl_edge_cases(g):
    # "GEOSEARCH vs GEORADIUS", "non square, long and narrow", "corner point".
    cmd(g, "GEOADD", "Sicily", *SICILY)
    cmd(g, "GEOADD", "Sicily", "12.758489", "38.788135", "edge1", "17.241510", "38.788135",
        "eage2")
    assert cmd(g, "GEORADIUS", "Sicily", "15", "37", "200", "km", "asc") == \
        ["Catania", "Palermo"]
    assert cmd(g, "GEOSEARCH", "Sicily", "fromlonlat", "15", "37", "bybox", "400", "400",
               "km", "asc") == ["Catania", "Palermo", "eage2", "edge1"]
    g.delete("Sicily")
    cmd(g, "GEOADD", "Sicily", "12.75", "36.995", "test1")
    cmd(g, "GEOADD", "Sicily", "12.75", "36.50", "test2")
    cmd(g, "GEOADD", "Sicily", "13.00", "36.50", "test3")
    assert cmd(g, "GEOSEARCH", "Sicily", "fromlonlat", "15", "37", "bybox", "400", "2",
               "km") == ["test1"]
    cmd(g, "GEOADD", "Sicily", "-1", "37.00", "test3")
    assert cmd(g, "GEOSEARCH", "Sicily", "fromlonlat", "15", "37", "bybox", "3000", "2", "km",
               "asc") == ["test1", "test3"]
    g.delete("Sicily")
    cmd(g, "GEOADD", "Sicily", "12.758489", "38.788135", "edge1", "17.241510", "38.788135",
        "edge2", "17.250000", "35.202000", "edge3", "12.750000", "35.202000", "edge4",
        "12.748489955781654", "37", "edge5", "15", "38.798135872540925", "edge6",
        "17.251510044218346", "37", "edge7", "15", "35.201864127459075", "edge8",
        "12.692799634687903", "38.798135872540925", "corner1", "12.692799634687903",
        "38.798135872540925", "corner2", "17.200560937451133", "35.201864127459075", "corner3",
        "12.799439062548865", "35.201864127459075", "corner4")
    assert sorted(cmd(g, "GEOSEARCH", "Sicily", "fromlonlat", "15", "37", "bybox", "400", "400",
                      "km", "asc")) == ["edge1", "edge2", "edge5", "edge7"]
    # Issue #2767: a huge radius.
    cmd(g, "GEOADD", "users", "-47.271613776683807", "-54.534504198047678", "user_000000")
    assert len(cmd(g, "GEORADIUS", "users", "0", "0", "50000", "km", "WITHCOORD")) == 1
    # Search areas in oblique directions and across the pole.
    cases = [(["-0.15307903289794921875", "85", "n1", "0.3515625", "85.00019260486917005437",
               "n2"], "4891.94"),
             (["-4.95211958885192871094", "85", "n1", "11.25", "85.0511", "n2"], "156544"),
             (["-45", "65.50900022111811438208", "n1", "90", "85.0511", "n2"], "5009431"),
             (["45", "65", "n1", "-135", "85.05", "n2"], "5009431")]
    for pts, radius in cases:
        g.delete("k1")
        cmd(g, "GEOADD", "k1", *pts)
        assert cmd(g, "GEORADIUSBYMEMBER", "k1", "n1", radius, "m") == ["n1", "n2"], pts
    # The box spans the antimeridian.
    cmd(g, "GEOADD", "points", "179.5", "36", "point1", "-179.5", "36", "point2")
    assert cmd(g, "GEOSEARCH", "points", "fromlonlat", "179", "37", "bybox", "400", "400",
               "km", "asc") == ["point1", "point2"]
    assert cmd(g, "GEOSEARCH", "points", "fromlonlat", "-179", "37", "bybox", "400", "400",
               "km", "asc") == ["point2", "point1"]
    # Small distances keep four decimals.
    cmd(g, "GEOADD", "small", "-122.407107", "37.794300", "1", "-122.227336", "37.794300", "2")
    assert cmd(g, "GEORADIUS", "small", "-122.407107", "37.794300", "30", "mi", "ASC",
               "WITHDIST") == [["1", "0.0001"], ["2", "9.8182"]]


def test_search_errors(nyc):
    g = nyc
    c0 = ["-73.9798091", "40.7598464"]
    syntax = "syntax error"
    assert err(cmd, g, "GEOSEARCH", "nyc", "fromlonlat", *c0, "frommember", "xxx", "bybox",
               "6", "6", "km", "asc") == syntax
    assert err(cmd, g, "GEOSEARCH", "nyc", "bybox", "3", "3", "km", "asc", "desc", "withhash",
               "withdist", "withcoord") == \
        "exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH"
    assert err(cmd, g, "geosearch", "nyc", "bybox", "3", "3", "km", "asc", "desc", "withhash") \
        == "exactly one of FROMMEMBER or FROMLONLAT can be specified for geosearch"
    assert err(cmd, g, "GEOSEARCH", "nyc", "fromlonlat", *c0, "byradius", "3", "km", "bybox",
               "3", "3", "km", "asc") == syntax
    assert err(cmd, g, "GEOSEARCH", "nyc", "fromlonlat", *c0, "asc", "desc", "withhash",
               "withdist", "withcoord") == \
        "exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH"
    assert err(cmd, g, "GEOSEARCH", "nyc", "fromlonlat", *c0, "bybox", "6", "6", "km", "asc",
               "storedist") == syntax
    assert err(cmd, g, "GEOSEARCH", "nyc", "frommember", "nope", "bybox", "6", "6", "km") == \
        NO_MEMBER
    assert err(cmd, g, "GEORADIUS", "nyc", *c0, "10", "km", "ANY", "ASC") == \
        "the ANY argument requires COUNT argument"
    assert err(cmd, g, "GEORADIUS", "nyc", *c0, "10", "km", "COUNT") == syntax
    assert err(cmd, g, "GEORADIUS", "nyc", *c0, "10", "km", "COUNT", "0") == \
        "COUNT must be > 0"
    assert err(cmd, g, "GEORADIUS", "nyc", *c0, "10", "km", "COUNT", "-1") == \
        "COUNT must be > 0"
    assert err(cmd, g, "GEORADIUS", "nyc", *c0, "10", "km", "COUNT", "x") == NOT_INT
    assert err(cmd, g, "GEORADIUS", "nyc", *c0, "10", "furlongs") == BAD_UNIT
    assert err(cmd, g, "GEORADIUS", "nyc", *c0, "ten", "km") == "need numeric radius"
    assert err(cmd, g, "GEORADIUS", "nyc", *c0, "-1", "km") == "radius cannot be negative"
    assert err(cmd, g, "GEORADIUS", "nyc", "x", "1", "10", "km") == NOT_FLOAT
    assert err(cmd, g, "GEORADIUS", "nyc", "181", "1", "10", "km") == \
        "invalid longitude,latitude pair 181.000000,1.000000"
    assert err(cmd, g, "GEORADIUS", "nyc", *c0, "10", "km", "foo") == syntax
    assert err(cmd, g, "GEORADIUSBYMEMBER", "nyc", "nope", "10", "km") == NO_MEMBER
    assert err(cmd, g, "GEORADIUSBYMEMBER", "nyc", "q4", "x", "km") == "need numeric radius"
    assert err(cmd, g, "GEOSEARCH", "nyc", "fromlonlat", *c0, "bybox", "x", "1", "km") == \
        "need numeric width"
    assert err(cmd, g, "GEOSEARCH", "nyc", "fromlonlat", *c0, "bybox", "1", "y", "km") == \
        "need numeric height"
    assert err(cmd, g, "GEOSEARCH", "nyc", "fromlonlat", *c0, "bybox", "1", "-1", "km") == \
        "height or width cannot be negative"
    assert err(cmd, g, "GEOSEARCH", "nyc", "fromlonlat", *c0, "bybox", "1", "1", "yd") == \
        BAD_UNIT
    assert err(cmd, g, "GEOSEARCH", "nyc", "fromlonlat", "0", "90", "byradius", "1", "km") == \
        "invalid longitude,latitude pair 0.000000,90.000000"
    # STORE is a syntax error where it is not an option.
    assert err(cmd, g, "GEORADIUS_RO", "nyc", *c0, "10", "km", "STORE", "d") == syntax
    assert err(cmd, g, "GEORADIUSBYMEMBER_RO", "nyc", "q4", "10", "km", "STOREDIST", "d") \
        == syntax
    assert err(cmd, g, "GEOSEARCH", "nyc", "fromlonlat", *c0, "byradius", "1", "km", "store",
               "d") == syntax
    assert err(cmd, g, "GEORADIUS", "nyc", *c0, "50", "km", "store") == syntax
    assert err(cmd, g, "GEOSEARCHSTORE", "d", "nyc", "fromlonlat", *c0, "byradius", "50", "km",
               "store", "d") == syntax
    for w in ("withdist", "withhash", "withcoord"):
        assert err(cmd, g, "GEORADIUS", "nyc", *c0, "50", "km", "store", "d", w) == \
            "STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and " \
            "WITHCOORD options"
        assert err(cmd, g, "GEOSEARCHSTORE", "d", "nyc", "fromlonlat", *c0, "byradius", "50",
                   "km", w) == \
            "GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
    assert g.exists("d") == 0
    assert err(cmd, g, "GEOSEARCH", "nyc", "fromlonlat", *c0) == \
        "wrong number of arguments for 'geosearch' command"


def test_wrong_type_and_missing_source(g):
    # geo.tcl's verify_geo_edge_response_* helpers.
    def bylonlat():
        return [cmd(g, "GEORADIUS", "src", "1", "1", "1", "km"),
                cmd(g, "GEORADIUS", "src", "1", "1", "1", "km", "store", "dest"),
                cmd(g, "GEOSEARCH", "src", "fromlonlat", "0", "0", "byradius", "1", "km"),
                cmd(g, "GEOSEARCHSTORE", "dest", "src", "fromlonlat", "0", "0", "byradius", "1",
                    "km")]

    def bymember():
        return [cmd(g, "GEORADIUSBYMEMBER", "src", "member", "1", "km"),
                cmd(g, "GEORADIUSBYMEMBER", "src", "member", "1", "km", "store", "dest"),
                cmd(g, "GEOSEARCH", "src", "frommember", "member", "bybox", "1", "1", "km"),
                cmd(g, "GEOSEARCHSTORE", "dest", "src", "frommember", "member", "bybox", "1",
                    "1", "m")]

    g.set("src", "wrong_type")
    for f in (bylonlat, bymember):
        with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
            f()
    for c in (["GEORADIUS", "src", "1", "1", "1", "km", "store", "dest"],
              ["GEORADIUSBYMEMBER", "src", "m", "1", "km"],
              ["GEOSEARCH", "src", "frommember", "m", "bybox", "1", "1", "km"],
              ["GEORADIUS_RO", "src", "x", "y", "1", "km"]):
        assert err(cmd, g, *c) == WRONGTYPE, c
    g.delete("src")
    g.zadd("dest", {"old": 1})
    assert bylonlat() == [[], 0, [], 0]
    assert g.exists("dest") == 0  # a missing source deletes the destination
    assert bymember() == [[], 0, [], 0]
    # With no source, GEORADIUSBYMEMBER reads neither member nor radius nor unit.
    assert cmd(g, "GEORADIUSBYMEMBER", "src", "m", "x", "furlongs") == []
    assert cmd(g, "GEOSEARCH", "src", "frommember", "m", "byradius", "1", "km") == []
    # But the options are still parsed.
    assert err(cmd, g, "GEORADIUSBYMEMBER", "src", "m", "1", "km", "bogus") == "syntax error"
    assert err(cmd, g, "GEOSEARCH", "src", "frommember", "m") == \
        "wrong number of arguments for 'geosearch' command"
    assert err(cmd, g, "GEOSEARCH", "src", "frommember", "m", "withdist", "asc", "desc") == \
        "exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH"
    cmd(g, "GEOADD", "src", *SICILY)
    assert bylonlat() == [[], 0, [], 0]
    assert err(cmd, g, "GEORADIUSBYMEMBER", "src", "member", "1", "km") == NO_MEMBER
    assert err(cmd, g, "GEOSEARCHSTORE", "dest", "src", "frommember", "member", "bybox", "1",
               "1", "m") == NO_MEMBER


def test_store_and_storedist(g):
    cmd(g, "GEOADD", "points", *SICILY)
    assert cmd(g, "GEORADIUS", "points", "13.361389", "38.115556", "500", "km", "store",
               "points2") == 2
    assert g.zrange("points2", 0, -1, withscores=True) == \
        g.zrange("points", 0, -1, withscores=True)
    assert cmd(g, "GEORADIUSBYMEMBER", "points", "Palermo", "500", "km", "store", "points2") == 2
    assert g.zrange("points2", 0, -1) == ["Palermo", "Catania"]
    assert cmd(g, "GEORADIUSBYMEMBER", "points", "Catania", "500", "km", "storedist",
               "points2") == 2
    assert g.zrange("points2", 0, -1, withscores=True) == [
        ("Catania", 0.0), ("Palermo", 166.27415156960032)]
    assert cmd(g, "GEOSEARCHSTORE", "points2", "points", "fromlonlat", "13.361389",
               "38.115556", "byradius", "500", "km") == 2
    assert g.zrange("points2", 0, -1) == g.zrange("points", 0, -1)
    assert cmd(g, "GEOSEARCHSTORE", "points2", "points", "fromlonlat", "13.361389",
               "38.115556", "byradius", "500", "km", "storedist") == 2
    assert g.zrange("points2", 0, -1, withscores=True) == [
        ("Palermo", 5.3056374386009927e-05), ("Catania", 166.27416107465282)]
    assert cmd(g, "GEOSEARCHSTORE", "points2", "points", "fromlonlat", "13.361389",
               "38.115556", "byradius", "500", "mi", "storedist") == 2
    assert g.zscore("points2", "Catania") == 103.31823050110781
    # COUNT, ASC and DESC pick what is stored.
    assert cmd(g, "GEORADIUS", "points", "13.361389", "38.115556", "500", "km", "storedist",
               "points2", "asc", "count", "1") == 1
    assert g.zrange("points2", 0, -1) == ["Palermo"]
    assert cmd(g, "GEORADIUS", "points", "13.361389", "38.115556", "500", "km", "storedist",
               "points2", "desc", "count", "1") == 1
    assert g.zrange("points2", 0, -1) == ["Catania"]
    # The last STORE/STOREDIST wins.
    assert cmd(g, "GEORADIUS", "points", "13.361389", "38.115556", "500", "km", "store", "a",
               "storedist", "b") == 2
    assert g.exists("a") == 0 and g.zscore("b", "Palermo") < 1
    # STORE repeated: the last one is written, the others are untouched.
    assert cmd(g, "GEORADIUS", "points", "13.361389", "38.115556", "500", "km", "store", "c",
               "store", "d", "storedist", "e", "storedist", "f") == 2
    assert g.exists("c", "d", "e") == 0 and g.zscore("f", "Palermo") < 1
    # The destination is replaced whatever its type or TTL, and deleted by an
    # empty result.
    g.set("dst", "string", ex=100)
    assert cmd(g, "GEOSEARCHSTORE", "dst", "points", "frommember", "Palermo", "bybox", "1", "1",
               "km") == 1
    assert g.type("dst") == "zset" and g.ttl("dst") == -1
    assert cmd(g, "GEOSEARCHSTORE", "dst", "points", "fromlonlat", "0", "0", "byradius", "1",
               "m") == 0
    assert g.exists("dst") == 0
    # Source and destination may be the same key.
    assert cmd(g, "GEORADIUSBYMEMBER", "points", "Palermo", "10", "km", "STORE", "points") == 1
    assert g.zrange("points", 0, -1, withscores=True) == [("Palermo", 3479099956230698.0)]


def test_resp2_and_resp3_shapes(raw):
    c = raw()
    c.cmd("GEOADD", "Sicily", *SICILY)
    pos = (b"*2\r\n$20\r\n13.36138933897018433\r\n$20\r\n38.11555639549629859\r\n")
    assert c.cmd("GEOPOS", "Sicily", "Palermo", "x") == b"*2\r\n" + pos + b"*-1\r\n"
    assert c.cmd("GEODIST", "Sicily", "Palermo", "Catania") == b"$11\r\n166274.1516\r\n"
    assert c.cmd("GEODIST", "Sicily", "Palermo", "x") == b"$-1\r\n"
    assert c.cmd("GEOHASH", "Sicily", "Palermo", "x") == b"*2\r\n$11\r\nsqc8b49rny0\r\n$-1\r\n"
    assert c.cmd("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km",
                 "ASC", "COUNT", "1", "WITHDIST", "WITHHASH", "WITHCOORD") == (
        b"*1\r\n*4\r\n$7\r\nCatania\r\n$7\r\n56.4413\r\n:3479447370796909\r\n"
        b"*2\r\n$20\r\n15.08726745843887329\r\n$20\r\n37.50266842333162032\r\n")
    assert c.cmd("GEOSEARCH", "Sicily", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m") == \
        b"*0\r\n"
    assert c.cmd("GEOSEARCH", "nokey", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m") == \
        b"*0\r\n"
    assert c.cmd("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "d") == b":2\r\n"
    assert c.cmd("GEOADD", "Sicily", "1", "2") == \
        b"-ERR wrong number of arguments for 'geoadd' command\r\n"
    c.cmd("HELLO", "3")
    # RESP3: coordinates are doubles; distances stay bulk strings.
    pos3 = b"*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n"
    assert c.cmd("GEOPOS", "Sicily", "Palermo", "x") == b"*2\r\n" + pos3 + b"_\r\n"
    assert c.cmd("GEODIST", "Sicily", "Palermo", "Catania", "km") == b"$8\r\n166.2742\r\n"
    assert c.cmd("GEODIST", "Sicily", "Palermo", "x") == b"_\r\n"
    assert c.cmd("GEODIST", "nokey", "Palermo", "x") == b"_\r\n"
    assert c.cmd("GEOHASH", "Sicily", "x") == b"*1\r\n_\r\n"
    assert c.cmd("GEORADIUSBYMEMBER", "Sicily", "Palermo", "200", "km", "WITHCOORD",
                 "WITHDIST") == (
        b"*2\r\n*3\r\n$7\r\nPalermo\r\n$6\r\n0.0000\r\n" + pos3 +
        b"*3\r\n$7\r\nCatania\r\n$8\r\n166.2742\r\n"
        b"*2\r\n,15.08726745843887329\r\n,37.50266842333162032\r\n")
    assert c.cmd("GEOADD", "e", "180", "0", "e0") == b":1\r\n"
    assert c.cmd("GEOPOS", "e", "e0") == b"*1\r\n*2\r\n,180\r\n,0.00000126736058093\r\n"


# ---- keyspace events, dirty, WATCH -------------------------------------------------

@pytest.mark.skipif(TARGET == "fake", reason="the fake RESP front has no workers to deliver")
def test_geo_keyspace_events(r):
    p = listen(r, "KEA")
    try:
        x(r, "GEOADD", "s", *SICILY)                                  # zadd
        x(r, "GEOADD", "s", *SICILY)                                  # no change: none
        x(r, "GEOADD", "s", "CH", "13", "38", "Palermo")              # zadd
        x(r, "GEOADD", "s", "XX", "1", "1", "nobody")                 # none
        x(r, "GEOSEARCH", "s", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km")  # read: none
        x(r, "GEORADIUS", "s", "15", "37", "300", "km")               # no STORE: none
        x(r, "GEORADIUS", "s", "15", "37", "300", "km", "STORE", "d1")  # georadiusstore
        x(r, "GEORADIUSBYMEMBER", "s", "Palermo", "1", "km", "STOREDIST", "d1")  # georadiusstore
        x(r, "GEOSEARCHSTORE", "d2", "s", "FROMLONLAT", "15", "37", "BYRADIUS", "300", "km")
        x(r, "GEOSEARCHSTORE", "d2", "s", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km")  # del
        x(r, "GEOSEARCHSTORE", "d2", "s", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km")  # none
        x(r, "GEORADIUS", "nosrc", "15", "37", "300", "km", "STORE", "d1")  # del
        x(r, "GEORADIUS", "s", "15", "37", "300", "km", "STORE", "s")  # georadiusstore
        x(r, "GEORADIUS", "s", "15", "37", "300", "km", "STORE", "a", "STOREDIST", "b")  # b
        r.set("end", "1")
        assert keyevents(p, 9) == [
            "zadd s", "zadd s", "georadiusstore d1", "georadiusstore d1", "geosearchstore d2",
            "del d2", "del d1", "georadiusstore s", "georadiusstore b"]
        assert keyevents(p, 1) == ["set end"]
    finally:
        p.close()
        r.config_set("notify-keyspace-events", "")


def test_geo_writes_count_their_changes(r):
    assert _changes(r, "GEOADD", "s", *SICILY) == 2
    assert _changes(r, "GEOADD", "s", *SICILY) == 0
    assert _changes(r, "GEOADD", "s", "CH", "1", "1", "Palermo", "2", "2", "new") == 2
    assert _changes(r, "GEORADIUS", "s", "15", "37", "300", "km") == 0
    assert _changes(r, "GEORADIUS", "s", "15", "37", "300000", "km", "STORE", "d") == 3
    assert _changes(r, "GEOSEARCHSTORE", "d", "s", "FROMLONLAT", "0", "0", "BYRADIUS", "1",
                    "m") == 1
    assert _changes(r, "GEOSEARCHSTORE", "d", "s", "FROMLONLAT", "0", "0", "BYRADIUS", "1",
                    "m") == 0
    assert _changes(r, "GEOADD", "s", "200", "1", "x") == 0


def test_watch_sees_geo_writes(raw):
    c, other = raw(), raw()
    other.cmd("GEOADD", "s", *SICILY)
    assert c.cmd("WATCH", "s", "d") == b"+OK\r\n"
    other.cmd("GEOADD", "s", *SICILY)  # nothing changed
    other.cmd("GEOSEARCH", "s", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km")
    c.cmd("MULTI")
    c.cmd("GEOPOS", "s", "Palermo")
    assert c.cmd("EXEC").startswith(b"*1\r\n")
    assert c.cmd("WATCH", "d") == b"+OK\r\n"
    other.cmd("GEORADIUS", "s", "15", "37", "300", "km", "STORE", "d")
    c.cmd("MULTI")
    c.cmd("PING")
    assert c.cmd("EXEC") == b"*-1\r\n"
    assert c.cmd("WATCH", "s") == b"+OK\r\n"
    other.cmd("GEOADD", "s", "CH", "1", "1", "Palermo")
    c.cmd("MULTI")
    c.cmd("PING")
    assert c.cmd("EXEC") == b"*-1\r\n"


def test_geo_commands_inside_multi(raw):
    c = raw()
    c.cmd("MULTI")
    assert c.cmd("GEOADD", "s", *SICILY) == b"+QUEUED\r\n"
    c.cmd("GEOSEARCHSTORE", "d", "s", "FROMMEMBER", "Catania", "BYRADIUS", "200", "km",
          "STOREDIST")
    c.cmd("GEODIST", "s", "Palermo", "Catania")
    assert c.cmd("EXEC") == b"*3\r\n:2\r\n:2\r\n$11\r\n166274.1516\r\n"


# ---- COMMAND, ACL --------------------------------------------------------------------

GEO_COMMANDS = {
    # name: (arity, flags, first, last, step, categories, since)
    "geoadd": (-5, {"write", "denyoom"}, 1, 1, 1, {"@write", "@geo", "@slow"}, "3.2.0"),
    "geodist": (-4, {"readonly"}, 1, 1, 1, {"@read", "@geo", "@slow"}, "3.2.0"),
    "geohash": (-2, {"readonly"}, 1, 1, 1, {"@read", "@geo", "@slow"}, "3.2.0"),
    "geopos": (-2, {"readonly"}, 1, 1, 1, {"@read", "@geo", "@slow"}, "3.2.0"),
    "georadius": (-6, {"write", "denyoom", "movablekeys"}, 1, 1, 1,
                  {"@write", "@geo", "@slow"}, "3.2.0"),
    "georadius_ro": (-6, {"readonly"}, 1, 1, 1, {"@read", "@geo", "@slow"}, "3.2.10"),
    "georadiusbymember": (-5, {"write", "denyoom", "movablekeys"}, 1, 1, 1,
                          {"@write", "@geo", "@slow"}, "3.2.0"),
    "georadiusbymember_ro": (-5, {"readonly"}, 1, 1, 1, {"@read", "@geo", "@slow"}, "3.2.10"),
    "geosearch": (-7, {"readonly"}, 1, 1, 1, {"@read", "@geo", "@slow"}, "6.2.0"),
    "geosearchstore": (-8, {"write", "denyoom"}, 1, 2, 1, {"@write", "@geo", "@slow"},
                       "6.2.0"),
}


def test_command_info_and_docs(rd):
    infos = rd.execute_command("COMMAND INFO", *GEO_COMMANDS)
    for info in infos:
        arity, flags, first, last, step, cats, _ = GEO_COMMANDS[info[0]]
        assert (info[1], set(info[2]), info[3], info[4], info[5], set(info[6])) == \
            (arity, flags, first, last, step, cats), info
    docs = rd.execute_command("COMMAND DOCS", *GEO_COMMANDS)
    if isinstance(docs, list):  # RESP2: a flat map
        docs = dict(zip(docs[::2], docs[1::2]))
    assert set(docs) == set(GEO_COMMANDS)
    for name, doc in docs.items():
        if isinstance(doc, list):
            doc = dict(zip(doc[::2], doc[1::2]))
        assert doc["group"] == "geo" and doc["since"] == GEO_COMMANDS[name][6], doc
    assert sorted(rd.execute_command("ACL", "CAT", "geo")) == sorted(GEO_COMMANDS)


@pytest.mark.parametrize("args,expected", [
    (["geoadd", "k", "1", "1", "m"], [("k", {"RW", "update"})]),
    (["geopos", "k", "m"], [("k", {"RO", "access"})]),
    (["geodist", "k", "a", "b"], [("k", {"RO", "access"})]),
    (["geohash", "k", "a"], [("k", {"RO", "access"})]),
    (["georadius", "k", "1", "1", "1", "km"], [("k", {"RO", "access"})]),
    (["georadius", "k", "1", "1", "1", "km", "store", "d"],
     [("k", {"RO", "access"}), ("d", {"OW", "update"})]),
    (["georadiusbymember", "k", "m", "1", "km", "count", "1", "storedist", "d"],
     [("k", {"RO", "access"}), ("d", {"OW", "update"})]),
    (["georadius_ro", "k", "1", "1", "1", "km"], [("k", {"RO", "access"})]),
    (["georadiusbymember_ro", "k", "m", "1", "km"], [("k", {"RO", "access"})]),
    (["geosearch", "k", "frommember", "m", "byradius", "1", "km"], [("k", {"RO", "access"})]),
    (["geosearchstore", "d", "k", "frommember", "m", "byradius", "1", "km"],
     [("d", {"OW", "update"}), ("k", {"RO", "access"})]),
])
def test_command_getkeysandflags(rd, args, expected):
    got = rd.execute_command("COMMAND GETKEYSANDFLAGS", *args)
    assert [(k, set(f)) for k, f in got] == expected


def test_command_getkeys_follows_the_key_specs(rd):
    # Redis 7's key specs: the first STORE's and the first STOREDIST's keys.
    assert rd.execute_command("COMMAND GETKEYS", "GEORADIUS", "k", "1", "1", "1", "km",
                              "STORE", "a", "STOREDIST", "b") == ["k", "a", "b"]
    assert rd.execute_command("COMMAND GETKEYS", "GEORADIUSBYMEMBER", "k", "m", "1", "km",
                              "STORE") == ["k"]
    assert rd.execute_command("COMMAND GETKEYS", "GEORADIUSBYMEMBER", "k", "store", "1", "km",
                              "store", "a") == ["k", "a"]


def test_acl_key_permissions(rd):
    rd.execute_command("ACL", "SETUSER", "gu", "+@all", "%R~read*", "%W~write*", "%RW~rw*")
    try:
        def ok(*a):
            return rd.execute_command("ACL", "DRYRUN", "gu", *a) == "OK"

        assert ok("GEOPOS", "read", "m") and not ok("GEOPOS", "write", "m")
        assert ok("GEOADD", "write", "1", "1", "m") and not ok("GEOADD", "read", "1", "1", "m")
        assert ok("GEORADIUS", "read", "1", "1", "1", "km")
        assert not ok("GEORADIUS", "write", "1", "1", "1", "km")
        assert ok("GEORADIUS", "read", "1", "1", "1", "km", "STORE", "write1")
        assert not ok("GEORADIUS", "read", "1", "1", "1", "km", "STORE", "read1")
        assert ok("GEORADIUSBYMEMBER", "read", "m", "1", "km", "STOREDIST", "write1")
        assert not ok("GEORADIUS", "read", "1", "1", "1", "km", "STORE", "write1", "STOREDIST",
                      "read1")
        assert ok("GEOSEARCHSTORE", "write1", "read", "FROMMEMBER", "m", "BYRADIUS", "1", "km")
        assert not ok("GEOSEARCHSTORE", "read1", "read", "FROMMEMBER", "m", "BYRADIUS", "1",
                      "km")
        assert ok("GEOSEARCH", "rw", "FROMMEMBER", "m", "BYRADIUS", "1", "km")
        rd.execute_command("ACL", "SETUSER", "nogeo", "on", "nopass", "+@all", "-@geo", "~*")
        assert rd.execute_command("ACL", "DRYRUN", "nogeo", "ZADD", "k", "1", "m") == "OK"
        assert rd.execute_command("ACL", "DRYRUN", "nogeo", "GEOPOS", "k", "m") != "OK"
    finally:
        rd.execute_command("ACL", "DELUSER", "gu", "nogeo")


# ---- geo.tcl's fuzz tests --------------------------------------------------------------

def _distance(lon1, lat1, lon2, lat2):
    """geo.tcl's geo_distance (haversine, Redis's earth radius)."""
    rad = math.pi / 180
    lon1r, lat1r, lon2r, lat2r = lon1 * rad, lat1 * rad, lon2 * rad, lat2 * rad
    v = math.sin((lon2r - lon1r) / 2)
    u = math.sin((lat2r - lat1r) / 2)
    return 2.0 * 6372797.560856 * math.asin(math.sqrt(u * u + math.cos(lat1r) * math.cos(lat2r)
                                                      * v * v))


def _in_rectangle(width_km, height_km, lon, lat, slon, slat, error):
    width_m = width_km * 1000 * error / 2
    height_m = height_km * 1000 * error / 2
    return (_distance(lon, lat, slon, lat) <= width_m and
            _distance(lon, lat, lon, slat) <= height_m)


# geo.tcl's regression vectors: seed, km, lon, lat.
REGRESSION = [
    (1482225976969, 7083, 81.634948934258375, 30.561509253718668),
    (1482340074151, 5416, -70.863281847379767, -46.347003465679947),
    (1499014685896, 6064, -89.818768962202014, -40.463868561416803),
    (1412, 156, 149.29737817929004, 15.95807862745508),
    (441574, 143, 59.235461856813856, 66.269555127373678),
    (160645, 187, -101.88575239939883, 49.061997951502917),
    (750269, 154, -90.187939661642517, 66.615930412251487),
    (342880, 145, 163.03472387745728, 64.012747720821181),
    (729955, 143, 137.86663517256579, 63.986745399416776),
    (939895, 151, 59.149620271823181, 65.204186651485145),
    (564862, 149, 84.062063109158544, -65.685403922426232),
    (1546032440391, 16751, -1.8175081637769495, 20.665668878082954),
]


@pytest.mark.parametrize("kind", ["byradius", "bybox"])
def test_geosearch_fuzzy(g, kind):
    rng = random.Random(7 if kind == "byradius" else 8)
    for attempt in range(len(REGRESSION) + 8):
        g.delete("mypoints")
        if attempt < len(REGRESSION):
            _, km, slon, slat = REGRESSION[attempt]
            radius = width = height = km
        else:
            big = rng.randrange(10) == 0
            top = 5000 if big else 200
            radius, width, height = (rng.randrange(top) + 10 for _ in range(3))
            slon, slat = -180 + rng.random() * 360, -70 + rng.random() * 140
        expected, argv = set(), []
        for j in range(2000):
            lon, lat = -180 + rng.random() * 360, -70 + rng.random() * 140
            argv += [repr(lon), repr(lat), "place:%d" % j]
            if kind == "byradius":
                inside = _distance(lon, lat, slon, slat) < radius * 1000
            else:
                inside = _in_rectangle(width, height, lon, lat, slon, slat, 1)
            if inside:
                expected.add("place:%d" % j)
        cmd(g, "GEOADD", "mypoints", *argv)
        if kind == "byradius":
            got = cmd(g, "GEOSEARCH", "mypoints", "fromlonlat", repr(slon), repr(slat),
                      "byradius", str(radius), "km")
        else:
            got = cmd(g, "GEOSEARCH", "mypoints", "fromlonlat", repr(slon), repr(slat), "bybox",
                      str(width), str(height), "km")
        got = set(got)
        # Differences are allowed only where rounding explains them (geo.tcl).
        for place in got ^ expected:
            lon, lat = map(float, cmd(g, "GEOPOS", "mypoints", place)[0])
            d = _distance(lon, lat, slon, slat) / 1000
            if kind == "byradius":
                assert d / radius > 0.999 or d < radius, (attempt, place, d, radius)
            else:
                assert _in_rectangle(width, height, lon, lat, slon, slat, 1.001), \
                    (attempt, place)


def test_geosearch_box_edges_fuzzy(g):
    rng = random.Random(11)
    for _ in range(30):
        g.delete("mypoints")
        slon, slat = -180 + rng.random() * 360, -70 + rng.random() * 140
        width_m, height_m = rng.randrange(10000) + 10, rng.randrange(10000) + 10
        rad = math.pi / 180
        lat_delta = height_m / 2 / 6372797.560856 / rad

        def lon_delta(lat):
            return width_m / 2 / 6372797.560856 / math.cos(lat * rad) / rad

        points = {
            "north": (slon, slat + lat_delta), "south": (slon, slat - lat_delta),
            "east": (slon + lon_delta(slat), slat), "west": (slon - lon_delta(slat), slat),
            "north_east": (slon + lon_delta(slat + lat_delta), slat + lat_delta),
            "north_west": (slon - lon_delta(slat + lat_delta), slat + lat_delta),
            "south_east": (slon + lon_delta(slat - lat_delta), slat - lat_delta),
            "south_west": (slon - lon_delta(slat - lat_delta), slat - lat_delta)}
        for name, (lon, lat) in points.items():
            if lon > 180:
                lon -= 360
            elif lon < -180:
                lon += 360
            cmd(g, "GEOADD", "mypoints", repr(lon), repr(lat), "place:" + name)

        def search(w, h):
            return sorted(cmd(g, "GEOSEARCH", "mypoints", "fromlonlat", repr(slon), repr(slat),
                              "bybox", str(w), str(h), "m"))

        assert search(width_m + 4, height_m + 4) == sorted("place:" + n for n in points)
        assert search(width_m - 4, height_m + 4) == ["place:north", "place:south"]
        assert search(width_m + 4, height_m - 4) == ["place:east", "place:west"]
        assert search(width_m - 4, height_m - 4) == []
