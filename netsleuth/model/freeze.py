"""A hashable, canonical form of plain data, for keys that must not depend on dict order.

Fingerprints of recorded messages, the keys ``netsleuth diff`` compares
events by, and the model checker's state hashes all need two values that
hold the same data to become the same hashable value, whatever order their
dicts were built in and whether a sequence was read back from JSON as a
list or made as a tuple. One definition keeps those keys in agreement; it
lives in the model, the lowest layer, because it needs nothing of
netsleuth and every layer above uses it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["freeze"]

_LEAVES = frozenset({int, str, float, bool, bytes, type(None)})  # exactly these types: none is frozen further


def freeze(value: Any) -> Any:
    """``value`` as nested tuples: a dict as its (key, value) pairs sorted by key,
    a list or tuple as a tuple, a set as a sorted tuple; anything else as it is.

    Keys or members of mixed types that do not compare are sorted by ``repr``,
    so the result stays canonical for any plain data.
    """
    if type(value) in _LEAVES:  # most values are: returned as they are, without the checks below
        return value
    if isinstance(value, dict):
        try:
            keys = sorted(value)
        except TypeError:
            keys = sorted(value, key=repr)
        return tuple([(k, freeze(value[k])) for k in keys])
    if isinstance(value, (list, tuple)):
        return tuple([freeze(v) for v in value])
    if isinstance(value, (set, frozenset)):
        items = [freeze(v) for v in value]
        try:
            items.sort()
        except TypeError:
            items.sort(key=repr)
        return tuple(items)
    return value
