"""Test helper: a message as the other end of a real connection sees it.

Tests drive the sans-I/O switch and World with os-ken message objects; passing
each through the codec (encode, decode, and check re-encoding is identical)
keeps them honest about what actually crosses the wire.
"""

from __future__ import annotations

from typing import Any

from netsleuth.openflow import codec


def round_trip(msg: Any) -> Any:
    data = codec.encode(msg)
    back = codec.decode(data, None)   # the version the bytes name
    assert codec.encode(back) == data
    return back
