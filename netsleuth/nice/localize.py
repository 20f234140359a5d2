"""The model checker's counterexample against passing paths: which lines of the app does the bug live on?

A model-checked app runs in this process, so its lines can be traced
directly (``sys.settrace``, only for frames of the app's own files).  The
spectrum's runs are executions of the model: the counterexample the search
found (failing), and seeded random walks from the initial state to an end
state, each failing if it violates the property the counterexample violated
and passing otherwise.  The walks make the passing runs the spectrum needs:
paths through the same app with the same inputs whose interleavings did not
trigger the bug.  Ranking is localize/spectrum.py's, tied lines in
execution order as for replays.

Memoization is off for these executions (each handler call runs the app's
code) and every run starts from a fresh model, so one run's cached steps
never stand in for another's.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from netsleuth.localize.source import execution_order
from netsleuth.localize.spectrum import Line, Ranking, Run, rank
from netsleuth.nice.system import System, Transition


class LineTracer:
    """Collects the (file, line) pairs executed in ``files`` while active (a context manager)."""

    def __init__(self, files: Iterable[str]) -> None:
        self.files = frozenset(files)
        self.lines: set[Line] = set()
        self._old: Any = None

    def _local(self, frame: FrameType, event: str, arg: object) -> Callable | None:
        if event == "line":
            self.lines.add((frame.f_code.co_filename, frame.f_lineno))
        return self._local

    def _global(self, frame: FrameType, event: str, arg: object) -> Callable | None:
        if frame.f_code.co_filename in self.files:
            self.lines.add((frame.f_code.co_filename, frame.f_lineno))   # the def line: the call itself
            return self._local
        return None

    def __enter__(self) -> LineTracer:
        self._old = sys.gettrace()
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self._old)


@dataclass(frozen=True)
class PathRun:
    """One execution of the model: its transitions, the app lines it ran and the properties it violated."""

    path: tuple[Transition, ...]
    lines: frozenset[Line]
    violated: frozenset[str]


def execute(make_system: Callable[[], System], files: Iterable[str], choose: Callable[[list], Transition | None],
            max_depth: int) -> PathRun:
    """Run the model from its initial state, ``choose`` picking each next transition (None: stop),
    tracing the app's lines; the end-of-execution properties are checked when nothing is left to do."""
    system = make_system()
    system.memo = False
    path: list[Transition] = []
    violated: set[str] = set()
    with LineTracer(files) as tracer:
        st = system.initial()
        while len(path) < max_depth:
            enabled = system.enabled(st)
            t = choose(enabled) if enabled else None
            if t is None:
                break
            st, fx = system.fire(st, t, False)
            path.append(t)
            violated.update(v.prop for v in fx.violations)
            if fx.violations:
                break
        if not violated and not [t for t in system.enabled(st) if not system.is_fault(t)]:
            violated.update(v.prop for v in system.at_end(st))
    return PathRun(tuple(path), frozenset(tracer.lines), frozenset(violated))


def replay_path(path: list[Transition]) -> Callable[[list], Transition | None]:
    """A chooser that fires ``path``'s transitions in order (a counterexample), then stops."""
    todo = iter(list(path))

    def choose(enabled: list) -> Transition | None:
        t = next(todo, None)
        if t is not None and t not in enabled:
            raise ValueError(f"transition {t!r} of the counterexample is not enabled when replayed")
        return t
    return choose


def random_walk(rng: random.Random) -> Callable[[list], Transition | None]:
    def choose(enabled: list) -> Transition | None:
        return enabled[rng.randrange(len(enabled))]
    return choose


@dataclass
class PathSpectrum:
    runs: list[PathRun]
    prop: str
    ranking: Ranking


def localize_counterexample(make_system: Callable[[], System], files: Iterable[str], counterexample: list,
                            prop: str, *, walks: int = 40, seed: int = 0, max_depth: int = 200,
                            formula: str = "ochiai") -> PathSpectrum:
    """Rank the app's lines: the counterexample (which must still violate ``prop``) and ``walks`` seeded
    random walks, each failing if it violates ``prop``."""
    files = list(files)
    rng = random.Random(seed)
    runs = [execute(make_system, files, replay_path(counterexample), max_depth=len(counterexample) + 1)]
    runs += [execute(make_system, files, random_walk(rng), max_depth) for _ in range(walks)]
    spectrum = [Run(prop in r.violated, r.lines) for r in runs]
    order = execution_order(sorted({x for r in spectrum if r.failed for x in r.lines}))
    ranking = rank(spectrum, formula, order=lambda line: order.get(line, (0, *line)))
    return PathSpectrum(runs, prop, ranking)


__all__ = ["LineTracer", "PathRun", "PathSpectrum", "execute", "localize_counterexample", "random_walk",
           "replay_path"]
