"""Symbolic proxy values: concrete ints that carry a z3 bit-vector and record branches.

A :class:`SymInt` *is* an ``int`` (a subclass, holding the concrete value of
this run) so app and model code that checks ``isinstance(v, int)`` -- the
model's ``Match`` does -- keeps working, and every operator is overridden so
the result carries a z3 expression alongside the concrete result.  Values
are unsigned bit-vectors of the header field's width: arithmetic wraps
modulo ``2**width`` and comparisons are ``ULT``/``UGT``/..., like the
field on the wire.  Mixed widths are zero-extended to the wider one.

Whenever the concrete value decides control flow -- ``__bool__`` of a
comparison, ``in`` on an instrumented dict/set, ``__hash__``, ``int()``,
``str()`` -- the condition that held is appended to the run's
:class:`Tracer` (the path condition).  Concretizations (hash, int, str) are
recorded as the equality ``x == value``: negating it later asks the solver
for a different value, which is how a dict lookup on a *plain* dict still
gets explored.  ``in`` on the app's own dicts and sets is precise instead:
:func:`instrument` (containers.py) replaces them (in a throw-away copy of the app) with
:class:`SymDict`/:class:`SymSet`, which record the disjunction over the
concrete keys, and ``d[x]`` returns an if-then-else over the values.

Known imprecision (the engine tolerates it: every generated input is run
concretely, and a path that was not the predicted one is just counted as a
divergence): C code that reads an int subclass's value directly --
``list[x]``, ``hex(x)``, ``'%d' % x``, ``struct.pack`` -- concretizes
silently, without a recorded constraint.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Literal, SupportsIndex

import z3

_PKG = __name__.rpartition(".")[0]  # netsleuth.nice.concolic: frames of ours are not branch sites


@dataclass(frozen=True, slots=True)
class Site:
    """Where a branch happened in the app's code: code object identity plus instruction offset."""

    filename: str
    qualname: str
    firstlineno: int
    lasti: int
    lineno: int

    def __str__(self) -> str:
        return f"{self.qualname} line {self.lineno}"


@dataclass(frozen=True, slots=True)
class Branch:
    """One entry of the path condition: ``cond`` held at ``site``; ``taken`` is its Python truth value.

    ``cond`` is already oriented (it is the constraint that was true), so
    negating the path at this point means adding ``Not(cond)``.
    """

    cond: z3.BoolRef
    site: Site | None
    taken: bool
    kind: str  # "branch" (bool/compare), "member" (in / lookup), "concretize" (hash/int/str), "state"
    pinned: Any = None  # for an equality pin (concretization, per-key lookup): the value pinned to

    @property
    def label(self) -> Any:
        """This entry's part of a path's signature: the outcome, or ("=", value) for a pin."""
        return self.taken if self.pinned is None else ("=", self.pinned)


class Tracer:
    """The per-run path-condition log (and an optional observer, the coverage tracer)."""

    __slots__ = ("log", "observer", "max_branches", "pin_kind")

    def __init__(self, observer: Any = None, max_branches: int = 10_000) -> None:
        self.log: list[Branch] = []
        self.observer = observer
        self.max_branches = max_branches
        #: kind given to concretizations: "concretize" while the handler runs; the engine's
        #: caller switches it to "state" while it hashes the resulting app state (not recorded)
        self.pin_kind = "concretize"

    def record(self, cond: z3.BoolRef, taken: bool, kind: str, pinned: Any = None) -> None:
        """Append ``cond`` (oriented to what happened) unless it is a constant or a state pin."""
        if kind == "state":
            # Hashing the state a handler left: a stored symbolic int is just its value there
            # (pinning it would enumerate counter values); stored SymBools still branch.
            return
        cond = z3.simplify(cond)
        if z3.is_true(cond):
            return  # holds for every input: nothing to negate, not a path split
        if len(self.log) >= self.max_branches:
            return  # a runaway loop: stop growing the path (the run still completes concretely)
        frame = None if self.pin_kind == "state" else _app_frame()
        site = _STATE_SITE if self.pin_kind == "state" else None
        if frame is not None:
            code = frame.f_code
            site = Site(code.co_filename, code.co_qualname, code.co_firstlineno, frame.f_lasti, frame.f_lineno)
            obs = self.observer
            if obs is not None:
                obs.on_branch(frame, site, taken)
        self.log.append(Branch(cond, site, taken, kind, pinned))

    def branch(self, cond: z3.BoolRef, value: bool, kind: str = "branch") -> bool:
        self.record(cond if value else z3.Not(cond), value, kind)
        return value


_STATE_SITE = Site("<state>", "App.key", 0, 0, 0)  # branches on symbolic values the handler stored


def _app_frame():
    """The innermost frame that is not this package's: the branch's site."""
    f = sys._getframe(2)
    while f is not None and f.f_globals.get("__name__", "").startswith(_PKG):
        f = f.f_back
    return f


# --------------------------------------------------------------------------- values


def _bv(value: int, width: int, ctx: z3.Context | None) -> z3.BitVecRef:
    return z3.BitVecVal(value & ((1 << width) - 1), width, ctx)


def _ctx(x: Any) -> z3.Context | None:
    """The z3 context of a symbolic value (each exploration has its own: see engine.explore)."""
    t = type(x)
    if t is SymInt or t is SymBool:
        return x.expr.ctx
    if t is tuple:
        for y in x:
            c = _ctx(y)
            if c is not None:
                return c
    return None


def _align(a: z3.BitVecRef, b: z3.BitVecRef) -> tuple[z3.BitVecRef, z3.BitVecRef]:
    wa, wb = a.size(), b.size()
    if wa < wb:
        a = z3.ZeroExt(wb - wa, a)
    elif wb < wa:
        b = z3.ZeroExt(wa - wb, b)
    return a, b


class SymBool:
    """The result of comparing symbolic values; branching on it records the condition."""

    __slots__ = ("value", "expr", "tr")

    def __init__(self, value: bool, expr: z3.BoolRef, tr: Tracer) -> None:
        self.value = value
        self.expr = expr
        self.tr = tr

    def __bool__(self) -> bool:
        return self.tr.branch(self.expr, self.value)

    def _other(self, o: Any) -> tuple[bool, z3.BoolRef] | None:
        if type(o) is SymBool:
            return o.value, o.expr
        if type(o) is bool:
            return o, z3.BoolVal(o, self.expr.ctx)
        return None

    def __and__(self, o: Any) -> Any:
        p = self._other(o)
        if p is None:
            return NotImplemented
        return SymBool(self.value and p[0], z3.And(self.expr, p[1]), self.tr)

    __rand__ = __and__

    def __or__(self, o: Any) -> Any:
        p = self._other(o)
        if p is None:
            return NotImplemented
        return SymBool(self.value or p[0], z3.Or(self.expr, p[1]), self.tr)

    __ror__ = __or__

    def __xor__(self, o: Any) -> Any:
        p = self._other(o)
        if p is None:
            return NotImplemented
        return SymBool(self.value != p[0], z3.Xor(self.expr, p[1]), self.tr)

    __rxor__ = __xor__

    def __eq__(self, o: Any) -> Any:
        p = self._other(o)
        if p is None:
            return NotImplemented
        return SymBool(self.value == p[0], self.expr == p[1], self.tr)

    def __ne__(self, o: Any) -> Any:
        p = self._other(o)
        if p is None:
            return NotImplemented
        return SymBool(self.value != p[0], self.expr != p[1], self.tr)

    def __hash__(self) -> int:
        return hash(bool(self))

    def __int__(self) -> int:
        return int(bool(self))

    __index__ = __int__

    def __repr__(self) -> str:
        return f"SymBool({self.value}, {self.expr})"


class SymInt(int):
    """An unsigned ``width``-bit value: concretely the int it is, symbolically ``expr``."""

    # int subclasses cannot have non-empty __slots__; attributes live in __dict__.
    expr: z3.BitVecRef
    width: int
    tr: Tracer

    def __new__(cls, value: int, expr: z3.BitVecRef, tr: Tracer) -> SymInt:
        width = expr.size()
        obj = int.__new__(cls, value & ((1 << width) - 1))
        obj.expr = expr
        obj.width = width
        obj.tr = tr
        return obj

    @property
    def value(self) -> int:
        """The concrete value as a plain int, without recording anything."""
        return int.__int__(self)

    # -- helpers
    def _operand(self, o: Any) -> tuple[int, z3.BitVecRef] | None:
        if isinstance(o, SymInt):
            return o.value, o.expr
        if type(o) is bool:
            o = int(o)
        if type(o) is int:
            return o, _bv(o, self.width, self.expr.ctx)
        return None

    def _make(self, value: int, expr: z3.BitVecRef) -> SymInt:
        return SymInt(value, expr, self.tr)

    def _arith(self, o: Any, zop: Any, pop: Any, reflected: bool = False) -> Any:
        p = self._operand(o)
        if p is None:
            if isinstance(o, float):
                v = float(self.concretize())
                return pop(o, v) if reflected else pop(v, o)
            return NotImplemented
        ov, oe = p
        a, b = _align(self.expr, oe)
        w = a.size()
        mask = (1 << w) - 1
        sv = self.value
        if reflected:
            return SymInt(pop(ov & mask, sv) & mask, zop(b, a), self.tr)
        return SymInt(pop(sv, ov & mask) & mask, zop(a, b), self.tr)

    def __add__(self, o): return self._arith(o, lambda a, b: a + b, lambda a, b: a + b)
    def __radd__(self, o): return self._arith(o, lambda a, b: a + b, lambda a, b: a + b, True)
    def __sub__(self, o): return self._arith(o, lambda a, b: a - b, lambda a, b: a - b)
    def __rsub__(self, o): return self._arith(o, lambda a, b: a - b, lambda a, b: a - b, True)
    def __mul__(self, o): return self._arith(o, lambda a, b: a * b, lambda a, b: a * b)
    def __rmul__(self, o): return self._arith(o, lambda a, b: a * b, lambda a, b: a * b, True)
    def __and__(self, o): return self._arith(o, lambda a, b: a & b, lambda a, b: a & b)
    def __rand__(self, o): return self._arith(o, lambda a, b: a & b, lambda a, b: a & b, True)
    def __or__(self, o): return self._arith(o, lambda a, b: a | b, lambda a, b: a | b)
    def __ror__(self, o): return self._arith(o, lambda a, b: a | b, lambda a, b: a | b, True)
    def __xor__(self, o): return self._arith(o, lambda a, b: a ^ b, lambda a, b: a ^ b)
    def __rxor__(self, o): return self._arith(o, lambda a, b: a ^ b, lambda a, b: a ^ b, True)

    def _div(self, o: Any, reflected: bool, mod: bool) -> Any:
        p = self._operand(o)
        if p is None:
            return NotImplemented
        divisor = self if reflected else o
        # Division by zero raises in Python; the divisor being non-zero is a branch.
        if isinstance(divisor, SymInt):
            if not divisor.tr.branch(divisor.expr != 0, divisor.value != 0):
                raise ZeroDivisionError("integer division or modulo by zero")
        zop = z3.URem if mod else z3.UDiv
        return self._arith(o, zop, (lambda a, b: a % b) if mod else (lambda a, b: a // b), reflected)

    def __floordiv__(self, o): return self._div(o, False, False)
    def __rfloordiv__(self, o): return self._div(o, True, False)
    def __mod__(self, o): return self._div(o, False, True)
    def __rmod__(self, o): return self._div(o, True, True)

    def __divmod__(self, o):
        return self // o, self % o

    def __truediv__(self, o): return self.concretize() / (o.concretize() if isinstance(o, SymInt) else o)
    def __rtruediv__(self, o): return o / self.concretize()
    def __pow__(self, o, mod=None): return pow(self.concretize(), o, mod)

    def _shift(self, o: Any, left: bool, reflected: bool) -> Any:
        p = self._operand(o)
        if p is None:
            return NotImplemented
        ov, oe = p
        if ov < 0 and not reflected:
            raise ValueError("negative shift count")
        a, b = _align(self.expr, oe)
        w = a.size()
        mask = (1 << w) - 1
        sv = self.value
        x, xe, n, ne = (ov & mask, b, sv, a) if reflected else (sv, a, ov, b)
        if left:
            return SymInt((x << n) & mask if n < w else 0, xe << ne, self.tr)
        return SymInt(x >> n, z3.LShR(xe, ne), self.tr)

    def __lshift__(self, o): return self._shift(o, True, False)
    def __rlshift__(self, o): return self._shift(o, True, True)
    def __rshift__(self, o): return self._shift(o, False, False)
    def __rrshift__(self, o): return self._shift(o, False, True)

    def __neg__(self): return SymInt(-self.value, -self.expr, self.tr)
    def __pos__(self): return self
    def __abs__(self): return self  # unsigned
    def __invert__(self): return SymInt(~self.value, ~self.expr, self.tr)

    # -- comparisons (unsigned)
    def _cmp(self, o: Any, zop: Any, pop: Any) -> Any:
        if isinstance(o, SymInt):
            a, b = _align(self.expr, o.expr)
            return SymBool(pop(self.value, o.value), zop(a, b), self.tr)
        if type(o) is bool:
            o = int(o)
        if type(o) is int:
            if 0 <= o < (1 << self.width):
                return SymBool(pop(self.value, o), zop(self.expr, _bv(o, self.width, self.expr.ctx)), self.tr)
            # A constant outside the field's range: the outcome is the same for every value.
            return pop(self.value, o)
        if isinstance(o, float):
            return pop(self.concretize(), o)
        return NotImplemented

    def __eq__(self, o): return self._cmp(o, lambda a, b: a == b, lambda a, b: a == b)
    def __ne__(self, o): return self._cmp(o, lambda a, b: a != b, lambda a, b: a != b)
    def __lt__(self, o): return self._cmp(o, z3.ULT, lambda a, b: a < b)
    def __le__(self, o): return self._cmp(o, z3.ULE, lambda a, b: a <= b)
    def __gt__(self, o): return self._cmp(o, z3.UGT, lambda a, b: a > b)
    def __ge__(self, o): return self._cmp(o, z3.UGE, lambda a, b: a >= b)

    def __bool__(self) -> bool:
        return self.tr.branch(self.expr != 0, self.value != 0)

    # -- concretization (recorded as an equality constraint)
    def concretize(self) -> int:
        """The concrete value; the path now assumes ``expr == value``."""
        v = self.value
        self.tr.record(self.expr == _bv(v, self.width, self.expr.ctx), True, self.tr.pin_kind, v)
        return v

    def __hash__(self) -> int:
        return hash(self.concretize())

    def __index__(self) -> int:
        return self.concretize()

    def __int__(self) -> int:
        return self.concretize()

    def __float__(self) -> float:
        return float(self.concretize())

    def __str__(self) -> str:
        return str(self.concretize())

    def __format__(self, spec: str) -> str:
        return format(self.concretize(), spec)

    def __repr__(self) -> str:
        # Debug output only: does not constrain the path.
        return f"SymInt({self.value:#x}, {self.expr})"

    def to_bytes(self, length: SupportsIndex = 1, byteorder: Literal["little", "big"] = "big", *,
                 signed: bool = False) -> bytes:
        return self.concretize().to_bytes(length, byteorder, signed=signed)

    def bit_length(self) -> int:
        return self.concretize().bit_length()

    def __reduce__(self):
        return (int, (self.value,))  # pickling/copying yields the concrete int

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def is_sym(x: Any) -> bool:
    """Does ``x`` (or a tuple of values) carry a symbolic part?"""
    t = type(x)
    if t is SymInt or t is SymBool:
        return True
    if t is tuple:
        return any(is_sym(y) for y in x)
    return False


def concrete(x: Any) -> Any:
    """The concrete value of ``x`` without recording anything (tuples element-wise)."""
    t = type(x)
    if t is SymInt:
        return x.value
    if t is SymBool:
        return x.value
    if t is tuple:
        return tuple(concrete(y) for y in x)
    return x


def tracer_of(x: Any) -> Tracer | None:
    t = type(x)
    if t is SymInt or t is SymBool:
        return x.tr
    if t is tuple:
        for y in x:
            tr = tracer_of(y)
            if tr is not None:
                return tr
    return None


def sym_eq(a: Any, b: Any) -> z3.BoolRef:
    """The z3 condition ``a == b`` for a symbolic ``a`` and a concrete or symbolic ``b``."""
    ctx = _ctx(a) or _ctx(b)
    false = z3.BoolVal(False, ctx)
    ta = type(a)
    if ta is SymInt:
        if isinstance(b, SymInt):
            x, y = _align(a.expr, b.expr)
            return x == y
        if type(b) is int or type(b) is bool:
            b = int(b)
            return a.expr == _bv(b, a.width, ctx) if 0 <= b < (1 << a.width) else false
        return false
    if ta is SymBool:
        if type(b) is bool or type(b) is SymBool:
            return a.expr == (b.expr if type(b) is SymBool else z3.BoolVal(b, ctx))
        return false
    if ta is tuple:
        if type(b) is not tuple or len(a) != len(b):
            return false
        return z3.And(*[sym_eq(x, y) for x, y in zip(a, b, strict=True)]) if a else z3.BoolVal(True, ctx)
    if is_sym(b):
        return sym_eq(b, a)
    return z3.BoolVal(a == b, ctx)
