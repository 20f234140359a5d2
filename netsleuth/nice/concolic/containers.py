"""The app's own dicts and sets, made symbolic-aware: ``in`` and ``d[x]`` on a symbolic key.

A plain dict concretizes a symbolic key through ``__hash__`` (recorded as
``x == value``), so the engine can only ask for other values one at a time.
:func:`instrument` replaces the containers in a throw-away copy of the app
with :class:`SymDict`/:class:`SymSet`, which record ``key in keys`` as the
disjunction over the concrete keys, and ``d[x]`` returns an if-then-else
over the values when they are ints.  The symbolic values themselves are in
``sym.py``.
"""

from __future__ import annotations

from typing import Any

import z3

from netsleuth.nice.concolic.sym import SymInt, _ctx, concrete, is_sym, sym_eq, tracer_of


def _member(container: Any, x: Any) -> bool:
    """``x in container`` for a symbolic ``x``: record the disjunction over the concrete keys."""
    tr = tracer_of(x)
    assert tr is not None  # x is symbolic: callers check is_sym first
    found = container._plain_contains(concrete(x))
    keys = list(container._plain_keys())
    cond = z3.Or(*[sym_eq(x, k) for k in keys]) if keys else z3.BoolVal(False, _ctx(x))
    tr.record(cond if found else z3.Not(cond), found, "member")
    return found


def _pin(k: Any) -> Any:
    """The concrete key a container stores for ``k``; a symbolic ``k`` records that it was pinned to it."""
    if is_sym(k):
        ck = concrete(k)
        tr = tracer_of(k)
        assert tr is not None  # k is symbolic (is_sym above)
        tr.record(sym_eq(k, ck), True, tr.pin_kind, ck)
        return ck
    return k


class SymDict(dict):
    """A dict whose lookups with symbolic keys record ``key in keys`` precisely.

    Only ever lives in the throw-away copy of an app that a concolic run uses.
    """

    __slots__ = ()

    def _plain_contains(self, k: Any) -> bool:
        return dict.__contains__(self, k)

    def _plain_keys(self):
        return dict.keys(self)

    def __contains__(self, k: Any) -> bool:
        if is_sym(k):
            return _member(self, k)
        return dict.__contains__(self, k)

    def __getitem__(self, k: Any) -> Any:
        if not is_sym(k):
            return dict.__getitem__(self, k)
        if not _member(self, k):
            raise KeyError(concrete(k))
        return self._value_of(k)

    def _value_of(self, k: Any) -> Any:
        """The value under symbolic key ``k`` (known present): an if-then-else when the values are ints."""
        ck = concrete(k)
        value = dict.__getitem__(self, ck)
        items = list(dict.items(self))
        ints: list[Any] = [v for _, v in items if type(v) is int or type(v) is SymInt]
        if len(items) < 2 or len(ints) != len(items) or type(value) is bool:
            # Not all ints: pin the key to the one found (a per-key branch the engine can negate).
            pin = tracer_of(k)
            assert pin is not None  # k is symbolic: only called for symbolic keys
            pin.record(sym_eq(k, ck), True, "member", ck)
            return value
        width = max(16, max(int.bit_length(int(v) if type(v) is int else v.value) for v in ints))
        width = max([width] + [v.width for v in ints if type(v) is SymInt])
        tr = tracer_of(k)
        assert tr is not None  # k is symbolic: only called for symbolic keys
        ctx = _ctx(k)

        def as_bv(v: Any) -> z3.BitVecRef:
            if type(v) is SymInt:
                e = v.expr
                return z3.ZeroExt(width - e.size(), e) if e.size() < width else e
            return z3.BitVecVal(v, width, ctx)

        expr = as_bv(items[-1][1])
        for key, v in reversed(items[:-1]):
            expr = z3.If(sym_eq(k, key), as_bv(v), expr)
        cv = value.value if type(value) is SymInt else value
        return SymInt(cv, expr, tr)

    def get(self, k: Any, default: Any = None) -> Any:
        if not is_sym(k):
            return dict.get(self, k, default)
        return self._value_of(k) if _member(self, k) else default

    def __setitem__(self, k: Any, v: Any) -> None:
        dict.__setitem__(self, _pin(k), v)

    def __delitem__(self, k: Any) -> None:
        if is_sym(k) and not _member(self, k):
            raise KeyError(concrete(k))
        dict.__delitem__(self, _pin(k))

    def pop(self, k: Any, *default: Any) -> Any:
        if is_sym(k) and not _member(self, k):
            if default:
                return default[0]
            raise KeyError(concrete(k))
        return dict.pop(self, _pin(k), *default)

    def setdefault(self, k: Any, default: Any = None) -> Any:
        if is_sym(k) and _member(self, k):
            return self._value_of(k)
        return dict.setdefault(self, _pin(k), default)


class SymSet(set):
    """A set whose ``in`` with a symbolic element records the disjunction over its elements."""

    __slots__ = ()

    def _plain_contains(self, k: Any) -> bool:
        return set.__contains__(self, k)

    def _plain_keys(self):
        return iter(self)

    def __contains__(self, k: Any) -> bool:
        if is_sym(k):
            return _member(self, k)
        return set.__contains__(self, k)

    def add(self, k: Any) -> None:
        set.add(self, _pin(k))

    def discard(self, k: Any) -> None:
        set.discard(self, _pin(k))

    def remove(self, k: Any) -> None:
        if is_sym(k) and not _member(self, k):
            raise KeyError(concrete(k))
        set.remove(self, _pin(k))


def _wrap(value: Any, depth: int = 0) -> Any:
    if depth > 6:
        return value
    t = type(value)
    if t is dict:
        return SymDict({k: _wrap(v, depth + 1) for k, v in value.items()})
    if t is set:
        return SymSet(value)
    if t is frozenset:
        return SymSet(value)
    if t is list:
        return [_wrap(v, depth + 1) for v in value]
    return value


def instrument(app: Any) -> Any:
    """Replace the plain dicts/sets/lists in ``app``'s state by their symbolic-aware versions, in place.

    Call it only on a copy: the engine discards that copy after the run.
    Why not proxy everything: an app's state is plain data by the App API's
    contract (see netsleuth.nice.app), and those are the containers apps
    test membership in (MAC tables, host sets).
    """
    d = app.__dict__
    for k in list(d):
        if not k.startswith("_"):
            d[k] = _wrap(d[k])
    return app
