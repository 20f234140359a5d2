"""Spectrum-based fault localization: runs' line coverage and verdicts in, ranked lines out.

Sans-I/O and pure: a *spectrum* is a list of runs, each the set of source
lines the controller executed and whether the run failed (the violation
reproduced).  For every line executed by at least one failing run the four
counts of the literature are taken -- ``ef``/``ep`` the failing/passing runs
that executed it, ``nf``/``np`` those that did not -- and scored with a
published suspiciousness formula:

* Ochiai (Abreu, Zoeteweij, van Gemund 2006): ``ef / sqrt((ef + nf) * (ef + ep))``;
* DStar with ``* = 2`` (Wong et al. 2014): ``ef**2 / (ep + nf)``, infinite when
  the line was run by every failing run and by no passing one;
* Tarantula (Jones, Harrold 2002): ``(ef/F) / (ef/F + ep/P)``.

Lines with equal scores are a *tied block* (typically straight-line code
run by exactly the same runs).  Coverage keeps no order of execution, so
the earliest executed line of a block is taken to be the first in source
order: within a function straight-line code runs top-down.  Lines of
different files keep a stable order by file name.

A run may also carry *flows*: pairs (store line, read line) where it read a
value of the program's state that an earlier run (an earlier handler call)
stored.  A wrong value stored in one call and used in another puts the fault
in a line that every call runs, which line coverage cannot rank; the dynamic
data dependence can (dynamic-slicing-aided SBFL: Lei et al. 2012, Ju et al.
2014, who score lines of the failing runs' dynamic slices).  Each pair is
scored with the formula over the runs that read through it, as a line is over
the runs that executed it, and reported as its store line (``read_at`` says
where the value was read).  A pair is exercised when its read executes, so in
a tie it comes right after its read line; a line is listed once, at its best
place.

Lines with the same four counts were executed by exactly the same runs:
no spectrum of these runs can tell them apart, so each such run of
consecutive ranked lines is also numbered as one *block* (``RankedLine.block``).
The block's rank is what the spectrum knows; a line's rank within its block
is only the tie-breaking order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from netsleuth.errors import NetsleuthError

Line = tuple[str, int]  # (file path, line number)
T = TypeVar("T")

FORMULAS = ("ochiai", "dstar", "tarantula")


@dataclass(frozen=True, slots=True)
class Run:
    """One replay: the lines the controller executed, and whether the violation came back."""

    failed: bool
    lines: frozenset[Line]
    flows: frozenset[tuple[Line, Line]] = frozenset()   # (store line, read line) of state an earlier run stored


@dataclass(frozen=True, slots=True)
class Counts:
    ef: int  # failing runs that executed the line
    ep: int  # passing runs that executed it
    nf: int  # failing runs that did not
    np: int  # passing runs that did not


@dataclass(frozen=True, slots=True)
class RankedLine:
    file: str
    line: int
    score: float
    counts: Counts
    rank: int        # 1-based position after tie-breaking
    tied: int        # how many lines share this score (1: none else)
    block: int = 0   # 1-based rank of its block: the consecutive ranked lines with the same counts
    read_at: Line | None = None   # ranked as the store of a value this line read (counts: the reads), not as run


@dataclass(frozen=True, slots=True)
class Ranking:
    formula: str
    failing: int
    passing: int
    lines: tuple[RankedLine, ...]
    separable: bool  # False: the spectrum cannot tell the lines apart (see :func:`rank`)
    reason: str = ""  # why it is not separable, in words

    def rank_of(self, line: Line) -> int | None:
        """The 1-based rank of ``line`` (None if no failing run executed it)."""
        for r in self.lines:
            if (r.file, r.line) == line:
                return r.rank
        return None

    def block_of(self, line: Line) -> int | None:
        """The 1-based rank of the block of lines the runs cannot tell from ``line`` (None: not executed)."""
        for r in self.lines:
            if (r.file, r.line) == line:
                return r.block
        return None


class UnknownFormulaError(NetsleuthError):
    """A formula name that is not one of :data:`FORMULAS`."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown formula {name!r}", f"use --formula with one of {', '.join(FORMULAS)}")


def ochiai(c: Counts) -> float:
    denom = math.sqrt((c.ef + c.nf) * (c.ef + c.ep))
    return c.ef / denom if denom else 0.0


def dstar(c: Counts, star: int = 2) -> float:
    denom = c.ep + c.nf
    if denom == 0:
        return math.inf if c.ef else 0.0
    return c.ef ** star / denom


def tarantula(c: Counts) -> float:
    failed, passed = c.ef + c.nf, c.ep + c.np
    f = c.ef / failed if failed else 0.0
    p = c.ep / passed if passed else 0.0
    return f / (f + p) if f + p else 0.0


_SCORE = {"ochiai": ochiai, "dstar": dstar, "tarantula": tarantula}


def score(formula: str, c: Counts) -> float:
    try:
        return _SCORE[formula](c)
    except KeyError:
        raise UnknownFormulaError(formula) from None


def _counts(runs: Sequence[Run], items: Callable[[Run], Iterable[T]]) -> dict[T, Counts]:
    """The four counts of every item (of ``items(run)``) at least one failing run has."""
    failing = sum(1 for r in runs if r.failed)
    passing = len(runs) - failing
    ef: dict[T, int] = {}
    ep: dict[T, int] = {}
    for r in runs:
        tally = ef if r.failed else ep
        for x in items(r):
            tally[x] = tally.get(x, 0) + 1
    return {x: Counts(n, ep.get(x, 0), failing - n, passing - ep.get(x, 0)) for x, n in ef.items()}


def counts(runs: Sequence[Run]) -> dict[Line, Counts]:
    """The four counts of every line executed by at least one failing run."""
    return _counts(runs, lambda r: r.lines)


def flow_counts(runs: Sequence[Run]) -> dict[tuple[Line, Line], Counts]:
    """The four counts of every (store line, read line) pair some failing run read through (as a line is)."""
    return _counts(runs, lambda r: r.flows)


def _entries(runs: Sequence[Run], formula: str, key: Callable[[Line], tuple]) -> list[tuple]:
    """(score, order, line, counts, read line or None) of the lines and flows, best first, each line once."""
    entries: list[tuple[float, tuple, Line, Counts, Line | None]]
    entries = [(score(formula, c), tuple(key(line)), line, c, None) for line, c in counts(runs).items()]
    entries += [(score(formula, c), (*key(read), 1), store, c, read)
                for (store, read), c in flow_counts(runs).items()]
    entries.sort(key=lambda t: (-t[0], t[1], t[2]))
    seen: set[Line] = set()
    kept = []
    for e in entries:
        if e[2] not in seen:
            seen.add(e[2])
            kept.append(e)
    return kept


def rank(runs: Iterable[Run], formula: str = "ochiai",
         order: Callable[[Line], tuple] | None = None) -> Ranking:
    """Rank the lines failing runs executed, most suspicious first.

    ``order`` sorts the lines of a tied block, earliest executed first (default:
    by file, then line; a caller that knows more, e.g. which function calls
    which, passes its own key).

    ``separable`` is False when the spectrum cannot rank: no failing run, no
    passing run (every line any failing run executed looks the same to the
    formulas' ``ep``), or every candidate line has the same counts (the failing
    and passing runs covered the same lines).  The lines are still returned.
    """
    runs = list(runs)
    if formula not in _SCORE:
        raise UnknownFormulaError(formula)
    failing = sum(1 for r in runs if r.failed)
    passing = len(runs) - failing
    scored = _entries(runs, formula, order or (lambda line: line))
    ties: dict[float, int] = {}
    for s, *_ in scored:
        ties[s] = ties.get(s, 0) + 1
    blocks, previous = 0, None
    ranked = []
    for i, (s, _, line, c, read) in enumerate(scored):
        blocks += c != previous
        previous = c
        ranked.append(RankedLine(line[0], line[1], s, c, i + 1, ties[s], blocks, read))
    lines = tuple(ranked)
    reason = ""
    if failing == 0:
        reason = "no replay reproduced the violation"
    elif passing == 0:
        reason = "no replay passed: every replay reproduced the violation"
    elif len({(r.counts.ef, r.counts.ep) for r in lines}) <= 1:
        reason = "the failing and passing replays executed the same lines"
    return Ranking(formula, failing, passing, lines, separable=not reason, reason=reason)


def score_json(value: float) -> float | str:
    """A score for JSON (which has no infinity): DStar's infinite score as the string ``"inf"``."""
    return "inf" if math.isinf(value) else round(value, 6)


__all__ = ["FORMULAS", "Counts", "Line", "RankedLine", "Ranking", "Run", "UnknownFormulaError", "counts",
           "dstar", "flow_counts", "ochiai", "rank", "score", "score_json", "tarantula"]
