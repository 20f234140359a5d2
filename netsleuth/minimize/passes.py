"""The shrink passes, and the one loop that runs them.

In the style of Hypothesis' shrinker, minimization is an explicit list of
pass objects, each with a name, its own statistics (:class:`PassStats`, kept
by the evaluator while the pass runs) and ``run(current, evaluator) -> new
current``:

* :class:`InitialPass` -- does the full sequence reproduce at all?
* :class:`FocusPass` -- does the part of it the trace points at (the inputs
  on the violation's own hosts) reproduce alone? Then the search starts there;
  if not, it starts from the full sequence as before. One candidate, always
  confirmed by replay, replayed beside the full sequence when a second worker
  is free;
* :class:`SearchPass` -- one search algorithm of :mod:`netsleuth.minimize.ddmin`:
  ``ddmin`` or ``binary`` (the strategy), then ``one-minimal``;
* :class:`ConfirmPass` -- K more replays of the result, for its reproduction rate.

:func:`run_passes` runs them in order. A pass that ends the search early
(the budget runs out, Ctrl-C, a failing oracle, a sequence that does not
reproduce) sets the run's stop reason; the passes after it run only if they
are meant to run after that reason -- the confirmation still runs after an
expired budget, on the best candidate so far, so a cut-short search still
reports how reliably its result reproduces.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from netsleuth.minimize.atoms import Key
from netsleuth.minimize.ddmin import STRATEGIES, First, OnIteration, one_minimal
from netsleuth.minimize.errors import MinimizationError
from netsleuth.minimize.evaluator import AttemptResult, BudgetExpired, Evaluator, PassStats

Algorithm = Callable[[Key, First, OnIteration], Key]

#: Stop reasons: "done" (nothing stopped the passes), "budget", "interrupted", "error", "not-reproduced".
DONE = "done"


class SearchOver(Exception):
    """Raised by a pass that found the search cannot go on (``reason`` becomes the stop reason)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ShrinkPass:
    """One named step of minimization; its statistics are filled in while :func:`run_passes` runs it."""

    name: str = "?"
    #: The stop reasons after which this pass still runs.
    runs_after: frozenset[str] = frozenset({DONE})
    #: Start from the evaluator's best candidate, with no speculative replay left running.
    starts_from_best: bool = False

    def __init__(self) -> None:
        self.stats: PassStats | None = None

    def run(self, current: Key, evaluator: Evaluator) -> Key:
        """The new current candidate (``current`` itself when the pass shrinks nothing)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class InitialPass(ShrinkPass):
    """Replays the full sequence; the search stops with "not-reproduced" unless it reproduces."""

    name = "initial"

    def __init__(self, prefetch: Key | None = None) -> None:
        super().__init__()
        self.reproduced: bool | None = None   # None: not known (the budget ran out first)
        self.prefetch = prefetch              # a candidate the next pass asks about, replayed on a free worker

    def run(self, current: Key, evaluator: Evaluator) -> Key:
        # Asked as one level, the prefetched candidate runs beside the full sequence on a second worker;
        # the answer is still the full sequence's (list order), the other lands in the cache.
        extra = [self.prefetch] if self.prefetch is not None and self.prefetch != current else []
        self.reproduced = evaluator.first([current, *extra]) == 0
        evaluator.on_iteration(current, {"iteration": 0,
                                         "step": "full" if self.reproduced else "does not reproduce"})
        if not self.reproduced:
            raise SearchOver("not-reproduced")
        return current


class FocusPass(ShrinkPass):
    """Jumps to ``focus`` (a sub-candidate the trace points at) when it reproduces alone; else keeps ``current``.

    Sound whatever the hint: the candidate is replayed like any other, and the
    search passes after it still end 1-minimal."""

    name = "focus"

    def __init__(self, focus: Key) -> None:
        super().__init__()
        self.focus = focus

    def run(self, current: Key, evaluator: Evaluator) -> Key:
        if not self.focus or len(self.focus) >= len(current) or not set(self.focus) < set(current):
            return current
        hit = evaluator.first([self.focus]) == 0
        chosen = self.focus if hit else current
        evaluator.on_iteration(chosen, {"iteration": 1, "step": "focused" if hit else "focus did not reproduce"})
        return chosen


class SearchPass(ShrinkPass):
    """One search algorithm over atom keys: it asks the evaluator and accepts only smaller candidates."""

    def __init__(self, name: str, algorithm: Algorithm) -> None:
        super().__init__()
        self.name = name
        self.algorithm = algorithm

    def run(self, current: Key, evaluator: Evaluator) -> Key:
        return self.algorithm(current, evaluator.first, evaluator.on_iteration)


class ConfirmPass(ShrinkPass):
    """K more replays of the best candidate, all of them, for its reproduction rate."""

    name = "confirm"
    runs_after = frozenset({DONE, "budget"})
    starts_from_best = True

    def __init__(self, replays: int) -> None:
        super().__init__()
        self.replays = replays
        self.results: list[AttemptResult] = []

    def run(self, current: Key, evaluator: Evaluator) -> Key:
        self.results = evaluator.run_replays(current, self.replays)
        return current


def standard_passes(strategy: str, replays: int, *, confirm: bool = True,
                    focus: Key | None = None) -> list[ShrinkPass]:
    """``initial``, ``focus`` (when given a candidate to try first), the strategy (a name of
    :data:`netsleuth.minimize.ddmin.STRATEGIES`), ``one-minimal`` and, if asked, ``confirm``."""
    passes: list[ShrinkPass] = [InitialPass(prefetch=focus or None)]
    if focus:
        passes.append(FocusPass(focus))
    passes += [SearchPass(strategy, STRATEGIES[strategy]), SearchPass("one-minimal", one_minimal)]
    if confirm:
        passes.append(ConfirmPass(replays))
    return passes


@dataclass
class PassesRun:
    """How :func:`run_passes` ended."""

    stop_reason: str
    error: MinimizationError | None
    completed: list[ShrinkPass]   # the passes that ran to their end


def run_passes(passes: Sequence[ShrinkPass], start: Key, evaluator: Evaluator) -> PassesRun:
    """Run ``passes`` in order from ``start``, each from where the one before it left the candidate."""
    current, stop, error = start, DONE, None
    completed: list[ShrinkPass] = []
    for p in passes:
        if stop not in p.runs_after:
            continue
        if p.starts_from_best:
            evaluator.finish()
            current = evaluator.best if evaluator.best is not None else start
        p.stats = evaluator.begin(p.name, len(current))
        try:
            current = p.run(current, evaluator)
            completed.append(p)
        except SearchOver as exc:
            stop = exc.reason
        except BudgetExpired:
            stop = "budget"
        except KeyboardInterrupt:
            stop = "interrupted"
        except MinimizationError as exc:
            stop, error = "error", exc
        if stop != DONE and evaluator.best is not None:
            current = evaluator.best  # a search cut short keeps the best candidate so far
        evaluator.end(len(current))
    return PassesRun(stop, error, completed)


__all__ = ["ShrinkPass", "InitialPass", "FocusPass", "SearchPass", "ConfirmPass", "SearchOver", "Algorithm",
           "standard_passes", "PassesRun", "run_passes"]
