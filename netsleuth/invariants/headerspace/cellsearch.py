"""Which classes of an incremental header-space check (OpenFlow 1.0) a flow_mod's match names at a
cell.  A class is the batch engine's int (ingress number << 32 | key id, keys interned per
pattern); a cell keeps the classes re-traced since the full check as key ids in a dictionary and
the full check's own as one int64 array per pattern, each class stored key first
(key id << 32 | ingress number) and the array sorted, so that a key's classes are one run found
by bisection (see ``incremental_classes.py``).  A big cell's array starts with every
``_STRIDE``-th item of it: the bisection reads a few lines of that first, then a few of one
stretch of the rest, where a plain bisection's dozen probes would each meet a line (and a page)
of their own, out of the CPU's caches when a flow_mod comes.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable

import numpy as np

from netsleuth.invariants.headerspace.batch import _IDM, TAG_SHIFT
from netsleuth.invariants.headerspace.compiled import interner

assert TAG_SHIFT == 32  # (a key id and an ingress number each fill one half of a class)
_STRIDE = 64       # items of a big cell per fence item
_FENCED = 4 * _STRIDE   # cells with more items than this have fences
_SWAP_RUN = 1 << 18     # classes swapped key first per step (a 1 MB temporary)


def keyed_cell(parts: list[np.ndarray]) -> memoryview:
    """A cell's classes (``parts``: int64 arrays of classes of one pattern) as the cell keeps
    them: the number of fence items F, F fence items (every ``_STRIDE``-th of the rest; none for a
    small cell), then the classes key first, sorted; as a memoryview (a flow_mod then reads a few
    of its items without a call into numpy, whose machinery is seldom in the CPU's caches when a
    flow_mod comes)."""
    return keyed_cells([parts])[0]


def keyed_cells(cells: list[list[np.ndarray]]) -> list[memoryview]:
    """:func:`keyed_cell` of each of ``cells``, all in one buffer: the full check makes thousands
    (5,094,400 classes in 3,552 cells at K=16), and numpy's fixed cost per call, not the sorting,
    was most of their time, so the copy and the key-first swap are one pass over every class and
    each cell costs a sort in place (and no more memory than one copy of the classes)."""
    lens = [sum(len(xs) for xs in parts) for parts in cells]
    fences = [-(-n // _STRIDE) if n > _FENCED else 0 for n in lens]
    # every cell's room (its count and fences, zeros for now) and classes in one new array
    pieces: list[np.ndarray] = []
    for parts, f in zip(cells, fences, strict=True):
        pieces.append(np.zeros(1 + f, dtype=np.int64))
        pieces.extend(parts)
    out = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
    del pieces
    # key first: the two 32-bit halves of each class swapped (the zeros stay zeros), a stretch
    # at a time so that the temporary stays small (the first check's peak is the process's)
    halves = out.view(np.uint32).reshape(-1, 2)
    for at in range(0, len(halves), _SWAP_RUN):
        run = halves[at:at + _SWAP_RUN]
        low = run[:, 0].copy()
        run[:, 0] = run[:, 1]
        run[:, 1] = low
    views = []
    at = 0
    for n, f in zip(lens, fences, strict=True):
        start = at + 1 + f
        data = out[start:start + n]
        data.sort(kind="stable")  # (timsort: a cell's classes often come in as a few sorted runs)
        out[at] = f
        if f:
            out[at + 1:start] = data[::_STRIDE]
        views.append(memoryview(out[at:start + n]))  # type: ignore[arg-type]
        at = start + n
    return views


def _keyed(cell: memoryview) -> np.ndarray:
    arr = np.frombuffer(cell, dtype=np.int64)
    return arr[1 + int(arr[0]):]


def cell_classes(cell: memoryview) -> list[int]:
    """Every class a cell kept by :func:`keyed_cell` holds (ingress number << 32 | key id)."""
    keyed = _keyed(cell)
    return (((keyed & _IDM) << TAG_SHIFT) | (keyed >> TAG_SHIFT)).tolist()


def _first_at_least(cell: memoryview, lo: int) -> int:
    """The position in ``cell`` of its first class item >= ``lo`` (len(cell) if none)."""
    f = cell[0]
    base = 1 + f
    if not f:
        return bisect_left(cell, lo, 1)
    k = bisect_left(cell, lo, 1, base) - 1   # fence items < lo: the answer is past item (k-1)*_STRIDE
    start = base + max(0, (k - 1) * _STRIDE)
    end = min(len(cell), base + k * _STRIDE)   # (fence item k, if any, is >= lo)
    return bisect_left(cell, lo, start, end)


def overlapping_keys(mask: int, v: int, m: int, js: Iterable[int]) -> list[int]:
    """The key ids among ``js`` (of pattern ``mask``) whose classes overlap the wildcard (v, m)."""
    intern, keys = interner(mask)
    if not (mask & ~m):  # the match fixes every bit of the classes: one key at most
        j = intern.get(v & mask)
        return [] if j is None or j not in js else [j]
    cm = mask & m
    cv = v & cm
    return [j for j in js if keys[j] & cm == cv]


def overlapping_classes(cell: memoryview, mask: int, v: int, m: int) -> list[int]:
    """The classes of a cell kept by :func:`keyed_cell` (of pattern ``mask``) whose key overlaps
    the wildcard (v, m), ascending by ingress number for each key.

    A match that fixes every bit of the pattern (the usual flow_mod) names one key, whose classes
    are one run of the sorted array: a bisection reads a dozen of its items (the biggest cells of
    a K=16 fat tree hold 7,680 classes), where a scan would read them all."""
    intern, keys = interner(mask)
    if not (mask & ~m):  # the match fixes every bit of the classes: one key at most
        j = intern.get(v & mask)
        if j is None:
            return []
        lo = j << TAG_SHIFT
        at = _first_at_least(cell, lo)
        out = []
        n = len(cell)
        hi = lo + _IDM
        while at < n:
            y = cell[at]
            if y > hi:
                break
            out.append(((y & _IDM) << TAG_SHIFT) | j)
            at += 1
        return out
    keyed = _keyed(cell)
    js = keyed >> TAG_SHIFT
    cm = mask & m
    cv = v & cm
    hit = [j for j in np.unique(js).tolist() if keys[j] & cm == cv]
    if not hit:
        return []
    got = keyed[np.isin(js, hit)]
    return (((got & _IDM) << TAG_SHIFT) | (got >> TAG_SHIFT)).tolist()
