"""When no spectrum can rank an exception: the line that raised, then what it depended on.

An exception violation whose minimal causal sequence is one input (a packet whose
handler call raises ``KeyError``) leaves one failing handler call and no passing call
that ran the handler: every line the call ran ties, and spectrum-based localization
has nothing to rank with.  The call itself still says where to look.  Dynamic
slicing from the failure point (Korel and Laski 1988; Agrawal and Horgan 1990)
starts at the statement that raised and follows its dependences backwards; crash-
stack localization (Wu et al. 2014, CrashLocator) starts from the frames of the
traceback.  This module does both with what the controller process recorded
(controllers/covlaunch.py): first the raising line (the innermost frame in the
controller's own code), then what it depended on -- the test of the key its read
looked up (``if key in d`` in the same call: the condition that sent execution to
the read) and the store that left the value it read -- then the callers' lines of the
traceback, then the rest of the failing calls' lines in execution order.  Each of
those four levels is a block of :class:`~netsleuth.localize.spectrum.Ranking`.

One exception is more specific: a ``KeyError`` raised by a read of a key that the
same call had just tested (``if key in d`` ... ``d[key]``).  Had the test been right,
the read could not have raised, since nothing removed the key in between: the test
let a missing key through.  So there the test comes first, then the read.

Sans-I/O: the failing calls (lines, guards, flows), the frames and the spectrum's
counts in; a ranking out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from netsleuth.localize.spectrum import Counts, Line, RankedLine, Ranking, score

KIND = "exception slice"


@dataclass(frozen=True)
class FailingCall:
    """A handler call the violation's exception escaped: its lines and the dependences it recorded."""

    lines: frozenset[Line]
    guards: frozenset[tuple[Line, Line]] = field(default_factory=frozenset)  # (test line, read line)
    flows: frozenset[tuple[Line, Line]] = field(default_factory=frozenset)   # (store line, read line)
    frames: tuple[Line, ...] = ()   # where the exception was raised, outermost first (all code)


def levels(calls: Sequence[FailingCall], frames: Sequence[Line], order: Callable[[Line], tuple],
           missing_key: bool = False) -> list[list[Line]]:
    """The candidate lines by level: raising line; its tests and stores; the callers' frames; the rest.

    ``missing_key`` (the exception is a ``KeyError``): the tests of the key the raising read looked up
    come first, then the raising line, then its stores (see the module's docstring)."""
    if not calls or not frames:
        return []
    raising = frames[0]
    ran = set().union(*(c.lines for c in calls))
    tests = {a for c in calls for a, b in c.guards if b == raising} - {raising}
    stores = {a for c in calls for a, b in c.flows if b == raising} - {raising}
    callers = [f for f in frames[1:] if f in ran]
    if missing_key and tests:
        out = [sorted(tests, key=order), [raising], sorted(stores - tests, key=order), callers]
    else:
        out = [[raising], sorted(tests | stores, key=order), callers]
    seen = {raising, *tests, *stores, *callers}
    out.append(sorted(ran - seen, key=order))
    return [level for level in out if level]


def exception_ranking(calls: Sequence[FailingCall], frames: Sequence[Line], table: Mapping[Line, Counts],
                      formula: str, order: Callable[[Line], tuple], failing: int, passing: int,
                      missing_key: bool = False) -> Ranking | None:
    """The lines of :func:`levels` as a ranking, each level a block (None: no failing call or no frame).

    ``table`` gives each line's spectrum counts (shown beside it; a line no spectrum counted gets those
    of one failing run)."""
    ranked: list[RankedLine] = []
    for block, level in enumerate(levels(calls, frames, order, missing_key), 1):
        for line in level:
            c = table.get(line, Counts(1, 0, 0, 0))
            ranked.append(RankedLine(line[0], line[1], score(formula, c), c, len(ranked) + 1, len(level), block))
    if not ranked:
        return None
    return Ranking(formula, failing, passing, tuple(ranked), separable=True)


def own_frames(frames: Iterable[Sequence], keep: Callable[[str], bool],
               normalize: Callable[[str, int], Line]) -> list[Line]:
    """A violation's traceback frames (``[file, line, function]``, outermost first) in the controller's own
    code, innermost first, each as ``normalize`` makes it (the real path, the statement's first line)."""
    lines = [normalize(str(f[0]), int(f[1])) for f in reversed(list(frames))]
    return [line for line in lines if keep(line[0])]


__all__ = ["KIND", "FailingCall", "exception_ranking", "levels", "own_frames"]
