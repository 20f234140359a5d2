"""The search algorithms, over atom keys only (no replay, no I/O).

Each algorithm asks one question: ``first(candidates)`` -- the index of the
first candidate *in list order* that reproduces, or None. Asking for a whole
level at once lets an executor replay a level's candidates in parallel,
while the answer -- and so the path of the search -- stays the one a serial
run gives, whatever order the replays complete in.

* :func:`ddmin` -- Zeller & Hildebrandt (TSE 2002): split into n parts, try
  the subsets, then the complements, else double the granularity.
* :func:`binary_split` -- Zeller (ESEC/FSE'99) "dd" with a carry-over set, as
  in the STS thesis (Figure 4.1): try each half with the carry; on
  interference minimize each half with the other as carry. The second half
  is carried with the *minimized* first half (never worse, fewer inputs).
* :func:`one_minimal` -- drop one atom at a time until no single removal
  reproduces, which makes the result 1-minimal.

Every accepted candidate is strictly smaller than the current one in the
shortlex order (:func:`netsleuth.minimize.atoms.shortlex`); that is checked,
and it is what guarantees termination.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from netsleuth.minimize.atoms import Key, shortlex

First = Callable[[Sequence[Key]], "int | None"]
OnIteration = Callable[[Key, dict[str, Any]], None]


def _noop(key: Key, info: dict[str, Any]) -> None:
    pass


def _accept(current: Key, candidate: Key) -> Key:
    if not shortlex(candidate) < shortlex(current):  # pragma: no cover - an algorithm bug
        raise AssertionError(f"shrink step {candidate} is not smaller than {current}")
    return candidate


def union(a: Key, b: Key) -> Key:
    return tuple(sorted(set(a) | set(b)))


def split(c: Key, n: int) -> list[Key]:
    """``c`` in ``n`` contiguous parts whose sizes differ by at most one."""
    n = max(1, min(n, len(c)))
    q, r = divmod(len(c), n)
    parts, start = [], 0
    for i in range(n):
        end = start + q + (1 if i < r else 0)
        parts.append(c[start:end])
        start = end
    return parts


def _starts(parts: list[Key]) -> list[int]:
    out, k = [], 0
    for p in parts:
        out.append(k)
        k += len(p)
    return out


def ddmin(c: Key, first: First, on_iteration: OnIteration = _noop) -> Key:
    """Zeller's ddmin; assumes ``c`` reproduces."""
    n = 2
    it = 0
    while len(c) >= 2:
        subsets = split(c, n)
        complements = [] if n == 2 else [c[:k] + c[k + len(s):] for k, s in zip(_starts(subsets), subsets, strict=True)]
        i = first(subsets + complements)
        it += 1
        if i is not None and i < len(subsets):
            c, how, n = _accept(c, subsets[i]), "subset", 2
        elif i is not None:
            c, how, n = _accept(c, complements[i - len(subsets)]), "complement", max(n - 1, 2)
        elif n < len(c):
            how, n = "refine", min(len(c), 2 * n)
        else:
            on_iteration(c, {"iteration": it, "granularity": n, "step": "done"})
            break
        on_iteration(c, {"iteration": it, "granularity": n, "step": how})
    return c


def binary_split(c: Key, first: First, on_iteration: OnIteration = _noop) -> Key:
    """ESEC'99 dd with a carry-over set; assumes ``c`` reproduces."""
    counter = [0]

    def dd(c: Key, carry: Key) -> Key:
        if len(c) <= 1:
            return c
        half = len(c) // 2
        c1, c2 = c[:half], c[half:]
        i = first([union(c1, carry), union(c2, carry)])
        counter[0] += 1
        if i is not None:
            part = (c1, c2)[i]
            on_iteration(union(part, carry), {"iteration": counter[0], "step": ("first half", "second half")[i],
                                              "carry": len(carry)})
            return dd(part, carry)
        on_iteration(union(c, carry), {"iteration": counter[0], "step": "interference", "carry": len(carry)})
        m1 = dd(c1, union(c2, carry))
        m2 = dd(c2, union(m1, carry))
        return union(m1, m2)

    result = dd(c, ())
    if result != c:
        _accept(c, result)
    return result


def one_minimal(c: Key, first: First, on_iteration: OnIteration = _noop) -> Key:
    """Remove single atoms until none can go; scans resume after the last removal."""
    start = 0
    it = 0
    while c:
        order = [(start + k) % len(c) for k in range(len(c))]
        candidates = [c[:j] + c[j + 1:] for j in order]
        i = first(candidates)
        it += 1
        if i is None:
            on_iteration(c, {"iteration": it, "step": "1-minimal"})
            break
        j = order[i]
        c = _accept(c, candidates[i])
        start = j if j < len(c) else 0
        on_iteration(c, {"iteration": it, "step": "removed"})
    return c


STRATEGIES: dict[str, Callable[[Key, First, OnIteration], Key]] = {"ddmin": ddmin, "binary": binary_split}

__all__ = ["First", "OnIteration", "ddmin", "binary_split", "one_minimal", "split", "union", "STRATEGIES"]
