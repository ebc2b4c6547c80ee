"""The RESP tests' shared error helper."""

import pytest
import redis


def err(fn, *a, match=None):
    """Calls fn(*a), which must fail with a server error; returns its text,
    checked against `match` (the whole text) when given."""
    with pytest.raises(redis.ResponseError) as e:
        fn(*a)
    if match is not None:
        assert str(e.value) == match
    return str(e.value)
