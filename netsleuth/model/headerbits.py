"""The OpenFlow 1.0 header (without in_port) packed into one int, and packed keys per pattern.

A flow table indexes its entries by these packed keys as they are installed
(``FlowTable.pattern_index``), and header-space analysis
(``netsleuth.invariants.headerspace.space``) computes on the same bits; the layout
lives here, in the model, so that the table does not depend on the analysis.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from netsleuth.model.match import FIELDS, FULL_MASKS

if TYPE_CHECKING:
    import numpy as np

# --------------------------------------------------------------------------- layout
# (field index in FIELDS, bit offset, width); least significant first.
_LAYOUT: tuple[tuple[int, int, int], ...] = (
    (11, 0, 16),    # tp_dst
    (10, 16, 16),   # tp_src
    (9, 32, 32),    # nw_dst
    (8, 64, 32),    # nw_src
    (7, 96, 8),     # nw_proto
    (6, 104, 8),    # nw_tos (only the DSCP bits 0xfc are ever matched)
    (5, 112, 16),   # dl_type
    (4, 128, 8),    # dl_vlan_pcp
    (3, 136, 16),   # dl_vlan
    (2, 152, 48),   # dl_dst
    (1, 200, 48),   # dl_src
)
WIDTH = 248
SHIFT: dict[int, int] = {i: off for i, off, _ in _LAYOUT}
SHIFT_BY_NAME: dict[str, int] = {FIELDS[i]: off for i, off, _ in _LAYOUT}
# Every bit a match can test in each field, in place.
FIELD_MASK: dict[str, int] = {FIELDS[i]: FULL_MASKS[i] << off for i, off, _ in _LAYOUT}
_ORDER = tuple(sorted(_LAYOUT, key=lambda t: t[0]))  # in FIELDS order (dl_src first)
ALL_BITS = (1 << WIDTH) - 1

def pack(fields: Sequence[int]) -> int:
    """A 12-tuple (``Packet.match_fields`` order; in_port ignored) as one int."""
    return (fields[1] << 200 | fields[2] << 152 | fields[3] << 136 | fields[4] << 128 | fields[5] << 112
            | fields[6] << 104 | fields[7] << 96 | fields[8] << 64 | fields[9] << 32 | fields[10] << 16
            | fields[11])


_PACKERS: dict[tuple[int, ...], Callable[[Sequence[int]], int]] = {}


def packer(masks: Sequence[int]) -> Callable[[Sequence[int]], int]:
    """A fast ``values -> packed int`` for one wildcard pattern (only its matched fields).
    Found by the masks themselves when they are a tuple (a match's are): a check compiling
    every port asks for one per pattern group, of the same few patterns."""
    fn = _BY_MASKS.get(masks) if isinstance(masks, tuple) else None
    if fn is not None:
        return fn
    key = tuple(1 if masks[i] else 0 for i in range(1, 12))
    fn = _PACKERS.get(key)
    if fn is None:
        idx = [i for i in range(1, 12) if masks[i]]
        if not idx:
            fn = _PACKERS[key] = lambda vals: 0
        else:
            terms = " | ".join(f"(v[{i}] << {SHIFT[i]})" for i in idx)
            fn = _PACKERS[key] = eval(f"lambda v: {terms}")  # noqa: S307 - built from constants only
    if isinstance(masks, tuple) and len(_BY_MASKS) < 1 << 12:
        _BY_MASKS[masks] = fn
    return fn


_BY_MASKS: dict[tuple[int, ...], Callable[[Sequence[int]], int]] = {}


# Interned keys, per pattern mask: key -> small id, and id -> key.  Ids are stable for the
# life of the process, so compiled switches built at different times (and the flow tables'
# pattern indexes, see FlowTable.pattern_index) agree on them.
_INTERN: dict[int, tuple[dict[int, int], list[int]]] = {}


def interner(mask: int) -> tuple[dict[int, int], list[int]]:
    t = _INTERN.get(mask)
    if t is None:
        t = _INTERN[mask] = ({}, [])
    return t


# The same keys as packed little-endian 64-bit words (``KEY_BYTES`` per key, by id), written
# as each key is interned.  A check that needs one field of a million keys (the MAC
# addresses of every host pair's flows) reads it as a numpy column from these bytes in
# milliseconds; taking it from the Python ints would cost a shift per key, about as much as
# the rest of such a check.  32 bytes per key, beside the int itself.
KEY_BYTES = (WIDTH + 63) // 64 * 8
_WORDS: dict[int, bytearray] = {}
_COLUMNS: dict[tuple[int, int, int], tuple[np.ndarray, int]] = {}  # (room, used)


def intern_new(mask: int, key: int) -> int:
    """Intern ``key`` (not interned yet) for pattern ``mask``: its new id."""
    intern, keys = interner(mask)
    j = intern[key] = len(keys)
    keys.append(key)
    words = _WORDS.get(mask)
    if words is None:
        words = _WORDS[mask] = bytearray()
    if len(words) == j * KEY_BYTES:
        words += key.to_bytes(KEY_BYTES, "little")
    return j


def key_field(mask: int, name: str) -> np.ndarray:
    """Field ``name`` (a 1.0 match field of at most 64 bits) of every interned key of
    ``mask``, by id, as an int64 array (read-only: it is shared).  Kept between calls and
    extended by the keys interned since, so a check after one new flow pays for one key."""
    import numpy as np  # here: the flow tables use this module's layout in processes that run no check

    off = SHIFT_BY_NAME[name]
    width = FULL_MASKS[FIELDS.index(name)].bit_length()
    keys = interner(mask)[1]
    n = len(keys)
    ck = (mask, off, width)
    buf, have = _COLUMNS.get(ck, (None, 0))
    if buf is None or have != n:
        words = _WORDS.setdefault(mask, bytearray())
        done = len(words) // KEY_BYTES
        if done < n:  # keys interned some other way: write their words now
            words += b"".join(k.to_bytes(KEY_BYTES, "little") for k in keys[done:n])
        if buf is None or len(buf) < n:  # room to grow into, so that appending is not copying
            bigger = np.empty(max(n, 2 * have, 1024), dtype=np.int64)
            if buf is not None:
                bigger[:have] = buf[:have]
            buf = bigger
        w, sh = divmod(off, 64)
        # a view of the bytearray blocks resizing it while it lives: only new arrays leave here
        v = np.frombuffer(words, dtype="<u8", count=(n - have) * (KEY_BYTES // 8),
                          offset=have * KEY_BYTES).reshape(-1, KEY_BYTES // 8)
        lo = v[:, w] >> np.uint64(sh)
        if sh + width > 64:
            lo |= v[:, w + 1] << np.uint64(64 - sh)
        del v
        buf[have:n] = lo & np.uint64((1 << width) - 1)
        have = n
        _COLUMNS[ck] = (buf, have)
    col = buf[:n]
    col.flags.writeable = False
    return col


def unpacker(masks: Sequence[int]) -> Callable[[int], list[int]]:
    """The inverse of :func:`packer` for one pattern: a packed key back to the 11 header
    values (``FIELDS[1:]`` order; wildcarded fields 0)."""
    idx = [i for i in range(1, 12) if masks[i]]
    shifts = [(i, SHIFT[i], FULL_MASKS[i]) for i in idx]

    def unpack(key: int) -> list[int]:
        out = [0] * 11
        for i, sh, full in shifts:
            out[i - 1] = (key >> sh) & full
        return out

    return unpack


# Shared int objects for small counters (slot numbers of the flow tables' columns): a dict
# holding a million slot numbers then holds references to these instead of a million ints.
_SMALL: list[int] = list(range(1 << 16))


def small_int(n: int) -> int:
    """``n`` as a shared object (``n >= 0``); grows the shared range as needed."""
    ints = _SMALL
    if n >= len(ints):
        ints.extend(range(len(ints), n + 1 + len(ints) // 4))
    return ints[n]
