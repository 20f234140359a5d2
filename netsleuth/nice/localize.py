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

from netsleuth.localize.source import execution_order, function_of, line_text, short_path
from netsleuth.localize.spectrum import Line, Ranking, Run, rank, score_json
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


def app_files(system: System) -> list[str]:
    """The source files of the app's classes (its variant and the classes it extends), not the model's."""
    app = system.initial().app
    files = []
    for cls in type(app).__mro__:
        module = sys.modules.get(cls.__module__)
        path = getattr(module, "__file__", None)
        if not path or cls.__module__ == "builtins":
            continue
        if cls.__module__.startswith("netsleuth.nice.") and not cls.__module__.startswith("netsleuth.nice.apps."):
            continue   # the model checker's App base and adapters: the framework, not the app
        if path not in files:
            files.append(path)
    return files


def spectrum_json(ps: PathSpectrum, top: int = 10) -> dict[str, Any]:
    """For check's result.json and summary: the counts, and the top lines unless the spectrum cannot rank."""
    r = ps.ranking
    lines = [{"file": x.file, "short": short_path(x.file), "line": x.line, "rank": x.rank, "block": x.block,
              "score": score_json(x.score), "failing": x.counts.ef, "passing": x.counts.ep,
              "function": function_of(x.file, x.line), "source": line_text(x.file, x.line)}
             for x in (r.lines[:top] if r.separable else ())]
    return {"property": ps.prop, "formula": r.formula, "runs": len(ps.runs), "failing": r.failing,
            "passing": r.passing, "separable": r.separable,
            "message": "" if r.separable else f"not enough passing runs to rank: {r.reason}", "top": lines}


__all__ = ["LineTracer", "PathRun", "PathSpectrum", "app_files", "execute", "localize_counterexample",
           "random_walk", "replay_path", "spectrum_json"]
