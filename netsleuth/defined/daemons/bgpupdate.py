"""A BGP UPDATE decoded into the words :func:`~.wire.describe` shows, without os-ken (sans-I/O).

The relay describes every UPDATE it holds; importing os-ken's packet library for
that costs a third of a CPU-second in each relay process, more than the rest of
a short run's relay work. The UPDATEs BIRD and FRR send here carry IPv4 prefixes
and the ORIGIN, AS_PATH, NEXT_HOP, MED and LOCAL_PREF attributes only, all of
fixed form, so :func:`decode` reads exactly those, giving what os-ken's parser
would give for them (an AS_PATH's AS numbers are 2 bytes when the path parses
so, else 4 bytes, as os-ken guesses); anything else -- another attribute, a
length that does not add up -- returns None, and os-ken decodes it.
"""

from __future__ import annotations

import socket
import struct

HEADER = 19
ORIGIN, AS_PATH, NEXT_HOP, MED, LOCAL_PREF = 1, 2, 3, 4, 5
EXTENDED_LENGTH = 0x10
ZERO = bytes(1)
AS_SET, AS_SEQUENCE = 1, 2
# the attributes decode() reads, with the value length each must have (None: any)
FIXED = {ORIGIN: 1, AS_PATH: None, NEXT_HOP: 4, MED: 4, LOCAL_PREF: 4}


class _Unusual(Exception):
    """The message is not of the plain form decode() reads: os-ken decodes it."""


def _prefixes(b: bytes) -> list[str]:
    out, pos = [], 0
    while pos < len(b):
        plen = b[pos]
        n = (plen + 7) // 8
        if plen > 32 or pos + 1 + n > len(b):
            raise _Unusual
        addr = socket.inet_ntoa(b[pos + 1: pos + 1 + n].ljust(4, ZERO))
        out.append(f"{addr}/{plen}")
        pos += 1 + n
    return out


def _two_byte_as_path(v: bytes) -> bool:
    """os-ken's guess: the path reads whole as segments of 2-byte AS numbers."""
    pos = 0
    while pos < len(v):
        if pos + 2 > len(v):
            raise _Unusual   # os-ken's parser fails on a lone byte
        kind, count = v[pos], v[pos + 1]
        if kind not in (AS_SET, AS_SEQUENCE):
            return False
        pos += 2
        if len(v) - pos < count * 2:
            return False
        pos += count * 2
    return True


def _as_path(v: bytes) -> list[int]:
    """The AS numbers in order, each AS_SET's sorted (as describe flattens os-ken's list of lists and sets)."""
    size = 2 if _two_byte_as_path(v) else 4
    fmt = "!H" if size == 2 else "!I"
    out: list[int] = []
    pos = 0
    while pos < len(v):
        if pos + 2 > len(v):
            raise _Unusual
        kind, count = v[pos], v[pos + 1]
        pos += 2
        if kind not in (AS_SET, AS_SEQUENCE) or pos + count * size > len(v):
            raise _Unusual
        seg = [struct.unpack_from(fmt, v, pos + i * size)[0] for i in range(count)]
        pos += count * size
        out += seg if kind == AS_SEQUENCE else sorted(set(seg))
    return out


def _attributes(b: bytes) -> dict:
    out: dict = {}
    pos = 0
    while pos < len(b):
        if pos + 3 > len(b):
            raise _Unusual
        flags, kind = b[pos], b[pos + 1]
        if flags & EXTENDED_LENGTH:
            if pos + 4 > len(b):
                raise _Unusual
            length, pos = struct.unpack_from("!H", b, pos + 2)[0], pos + 4
        else:
            length, pos = b[pos + 2], pos + 3
        value = b[pos: pos + length]
        pos += length
        if kind not in FIXED or len(value) != length or FIXED[kind] not in (None, length):
            raise _Unusual
        if kind == AS_PATH:
            out["as_path"] = _as_path(value)
        elif kind == MED:
            out["med"] = struct.unpack("!I", value)[0]
        elif kind == NEXT_HOP:
            out["next_hop"] = socket.inet_ntoa(value)
    return out


def decode(msg: bytes) -> dict | None:
    """An UPDATE's nlri, withdrawn, as_path, med and next_hop as describe() words them; None: ask os-ken."""
    if len(msg) < HEADER + 4 or struct.unpack_from("!H", msg, 16)[0] != len(msg) or msg[18] != 2:
        return None
    body = msg[HEADER:]
    wlen = struct.unpack_from("!H", body, 0)[0]
    if 2 + wlen + 2 > len(body):
        return None
    alen = struct.unpack_from("!H", body, 2 + wlen)[0]
    start = 4 + wlen
    if start + alen > len(body):
        return None
    try:
        withdrawn = _prefixes(body[2: 2 + wlen])
        attrs = _attributes(body[start: start + alen])
        nlri = _prefixes(body[start + alen:])
    except _Unusual:
        return None
    return {"nlri": nlri, "withdrawn": withdrawn, **attrs}
