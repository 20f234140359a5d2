"""Which classes of an incremental header-space check (OpenFlow 1.0) a flow_mod's match names at a
cell.  A class is the batch engine's int (ingress number << 32 | key id, keys interned per
pattern); a cell keeps the classes re-traced since the full check as key ids in a dictionary and
the full check's own as the bytes of an int64 array (see ``incremental_classes.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

import numpy as np

from netsleuth.invariants.headerspace.batch import _IDM, TAG_SHIFT
from netsleuth.invariants.headerspace.compiled import interner

_ORDER = sys.byteorder
_LOW_AT = 0 if _ORDER == "little" else 4   # where a class's key id is among its 8 bytes
assert TAG_SHIFT == 32  # (what the byte search relies on)


def overlapping_keys(mask: int, v: int, m: int, js: Iterable[int]) -> list[int]:
    """The key ids among ``js`` (of pattern ``mask``) whose classes overlap the wildcard (v, m)."""
    intern, keys = interner(mask)
    if not (mask & ~m):  # the match fixes every bit of the classes: one key at most
        j = intern.get(v & mask)
        return [] if j is None or j not in js else [j]
    cm = mask & m
    cv = v & cm
    return [j for j in js if keys[j] & cm == cv]


def overlapping_classes(xs: np.ndarray | memoryview, mask: int, v: int, m: int) -> list[int]:
    """The classes among ``xs`` (an int64 array, or a memoryview of one, of classes of pattern
    ``mask``) whose key overlaps the wildcard (v, m), in their order.

    A match that fixes every bit of the pattern (the usual flow_mod) names one key, and its
    classes hold its id in their low 32 bits: the array's bytes are searched for the id's, a copy
    and a memchr-like scan (no sort: a random flow_mod rarely asks the same cell twice).  A
    flow_mod meets the cell, and whatever code it runs, out of the CPU's caches; numpy's
    comparison then costs its per-call machinery, several times the scan even for the biggest
    cells of a K=16 fat tree (7,680 classes), and copying from a memoryview calls no numpy at all."""
    intern, keys = interner(mask)
    if not (mask & ~m):  # the match fixes every bit of the classes: one key at most
        j = intern.get(v & mask)
        if j is None:
            return []
        b = xs.tobytes()
        needle = j.to_bytes(4, _ORDER)
        out = []
        # (from the end: a key id's high byte is 0, as are most bytes of the array, and the
        # reverse search's test of the needle's first byte then skips faster than the forward
        # search's test of its last)
        at = b.rfind(needle)
        while at >= 0:
            if at & 7 == _LOW_AT:  # (the key id's own bytes, not a tag's or a straddle)
                x = at - _LOW_AT
                out.append(int.from_bytes(b[x:x + 8], _ORDER))
                if not x:
                    break
                at = b.rfind(needle, 0, x - 4)   # (the previous class's bytes and before)
            else:
                at = b.rfind(needle, 0, at + 3)
        out.reverse()
        return out
    arr = np.frombuffer(xs, dtype=np.int64)
    js = arr & _IDM
    cm = mask & m
    cv = v & cm
    hit = [j for j in np.unique(js).tolist() if keys[j] & cm == cv]
    return arr[np.isin(js, hit)].tolist() if hit else []
