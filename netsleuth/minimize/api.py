"""``minimize()``: from a sequence of inputs that triggers a violation to a small one that still does.

Job-independent: it knows nothing of traces on disk, controllers or replay
-- only an :class:`~netsleuth.minimize.oracle.Oracle` (or a factory of
them) that says whether a candidate reproduces. ``netsleuth minimize``
wraps it with the real-controller replay oracle, the trace I/O and the
progress bar.
"""

from __future__ import annotations

import json
import pickle
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from netsleuth.minimize.atoms import Atoms, Key, fixed_ids_of
from netsleuth.minimize.ddmin import STRATEGIES
from netsleuth.minimize.errors import MinimizationError, NotReproducibleError
from netsleuth.minimize.evaluator import AttemptResult, Evaluator, PassStats, ShrinkProgress, WorkerInit
from netsleuth.minimize.executors import Executor, make_executor
from netsleuth.minimize.oracle import Oracle, OracleFactory, as_factory
from netsleuth.minimize.passes import ConfirmPass, InitialPass, run_passes, standard_passes
from netsleuth.minimize.words import describe_input
from netsleuth.trace import schema as ts
from netsleuth.trace.schema import InputEvent, event_to_json


@dataclass
class MinimizationResult:
    """What minimization found and what it cost. ``mcs`` is a valid input sequence (migrations rewritten)."""

    strategy: str
    executor: str
    workers: int
    replays_per_candidate: int
    inputs_before: int
    inputs_after: int
    atoms_before: int
    atoms_after: int
    mcs: tuple[InputEvent, ...]
    mcs_atoms: tuple[tuple[str, ...], ...]   # input ids, grouped by atom
    replays: int                              # all replays, all passes (speculative ones included)
    inputs_replayed: int                      # inputs injected over all those replays
    reproduction_rate: float | None           # of the K confirmation replays of the MCS
    reproduction: dict[str, int]              # {"reproduced": r, "replays": K}
    seconds: float
    executor_start_seconds: float
    executor_stop_seconds: float
    iterations: list[dict[str, Any]]
    passes: list[PassStats]
    one_minimal: bool
    stop_reason: str                          # "done" | "budget" | "interrupted" | "error" | "not-reproduced"
    candidates: int                           # candidates asked about, all passes
    cache_hits: int
    unused_candidates: int                    # replayed speculatively; answer never needed
    mcs_details: list[dict[str, Any]] = field(default_factory=list)  # the oracle's details per confirmation replay

    @property
    def search_seconds(self) -> float:
        """Seconds spent in the passes (search and confirmation), without executor start and stop."""
        return sum(p.seconds for p in self.passes)

    def describe_mcs(self) -> list[str]:
        return [describe_input(e) for e in self.mcs]

    def to_json(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy, "executor": self.executor, "workers": self.workers,
            "replays_per_candidate": self.replays_per_candidate,
            "inputs_before": self.inputs_before, "inputs_after": self.inputs_after,
            "atoms_before": self.atoms_before, "atoms_after": self.atoms_after,
            "replays": self.replays, "inputs_replayed": self.inputs_replayed,
            "reproduction_rate": self.reproduction_rate,
            "reproduction": dict(self.reproduction), "seconds": round(self.seconds, 4),
            "search_seconds": round(self.search_seconds, 4),
            "executor_start_seconds": round(self.executor_start_seconds, 4),
            "executor_stop_seconds": round(self.executor_stop_seconds, 4),
            "one_minimal": self.one_minimal, "stop_reason": self.stop_reason,
            "candidates": self.candidates, "cache_hits": self.cache_hits,
            "unused_candidates": self.unused_candidates,
            "sizes": [it["inputs"] for it in self.iterations],
            "iterations": list(self.iterations), "passes": [p.to_json() for p in self.passes],
            "mcs_atoms": [list(a) for a in self.mcs_atoms],
            "mcs": [event_to_json(e) for e in self.mcs], "mcs_in_words": self.describe_mcs(),
            "mcs_details": _jsonable(self.mcs_details),
        }


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=repr))


def minimize(inputs: Iterable[ts.Event], oracle: Oracle | OracleFactory, *, strategy: str = "ddmin",
             replays: int = 1, executor: str | Executor | None = None, jobs: int | None = None,
             budget_seconds: float | None = None, progress: Callable[[ShrinkProgress], None] | None = None,
             keep: Callable[[InputEvent], bool] | None = None, confirm: bool = True,
             focus: Callable[[InputEvent], bool] | None = None) -> MinimizationResult:
    """Delta-debug ``inputs`` down to a 1-minimal subsequence that still reproduces.

    ``inputs``: events in trace order (non-input events are ignored).
    ``oracle``: an Oracle, or a picklable ``factory(worker_id) -> Oracle``
    (one oracle per worker). ``strategy``: ``"ddmin"`` (Zeller) or
    ``"binary"`` (ESEC'99 split with a carry-over set); either is followed by
    a one-at-a-time pass to 1-minimality. ``replays``: K replays per candidate,
    which reproduces if any does; the MCS is then replayed K more times for
    its reproduction rate (``confirm``). ``executor``: ``"serial"``,
    ``"local"`` (default, ``jobs`` processes), ``"ray"``, ``"ray:ADDRESS"`` or
    an Executor (started and closed here). ``budget_seconds``: counted from
    the call (executor start-up included); no replay starts after it and the
    search returns the best candidate so far (``stop_reason="budget"``, not
    1-minimal) -- its K confirmation replays still run. ``keep``: inputs never
    pruned. ``progress``: called with a :class:`ShrinkProgress` as the search moves.
    ``focus``: the inputs the caller suspects (e.g. those on the violation's hosts): the atoms holding
    them are tried alone first and, if they reproduce, the search starts from them (the ``focus`` pass).

    The passes (:mod:`netsleuth.minimize.passes`): ``initial``, ``focus`` (with ``focus``), the strategy,
    ``one-minimal`` and ``confirm``, run in that order by one loop.

    Raises NotReproducibleError (with ``.result``) if the full sequence does
    not reproduce, MinimizationError (with the partial ``.result``) if the
    oracle or a worker fails. Ctrl-C ends the search with the best so far.
    """
    if strategy not in STRATEGIES:
        raise MinimizationError(f"unknown strategy {strategy!r}", f"use one of {', '.join(STRATEGIES)}")
    if replays < 1:
        raise MinimizationError(f"replays must be at least 1, got {replays}", "pass --replays 1 or more")
    if budget_seconds is not None and budget_seconds <= 0:
        raise MinimizationError(f"the budget must be positive, got {budget_seconds}", "pass --budget SECONDS > 0")
    events = tuple(e for e in inputs if isinstance(e, InputEvent))
    fixed = fixed_ids_of(events, keep)
    try:
        atoms = Atoms(events, fixed)
    except ValueError as exc:
        raise MinimizationError(f"cannot minimize these inputs: {exc}", "re-record the trace") from None
    init = WorkerInit(as_factory(oracle), events, fixed)
    ex = make_executor(executor, jobs)
    if ex.name == "local":
        try:
            pickle.dumps(init)
        except Exception as exc:
            raise MinimizationError(f"the oracle cannot be sent to worker processes ({exc})",
                                    "pass a picklable oracle or factory (a module-level class or "
                                    "functools.partial), or use --executor serial") from None

    t0 = time.perf_counter()
    deadline = None if budget_seconds is None else time.time() + budget_seconds
    try:
        ex.start(init)
    except MinimizationError:
        raise
    except Exception as exc:
        ex.close()
        if hasattr(exc, "fix"):
            raise
        raise MinimizationError(f"could not start {ex.describe()}: {type(exc).__name__}: {exc}",
                                "the oracle factory failed in a worker; run with --executor serial "
                                "to see the full error") from exc
    start_seconds = time.perf_counter() - t0

    ev = Evaluator(atoms, ex, replays, deadline=deadline, progress=progress, budget_seconds=budget_seconds)
    full: Key = atoms.prunable
    focused = tuple(a.index for a in atoms.all if a.prunable and focus is not None and any(map(focus, a.events)))
    passes = standard_passes(strategy, replays, confirm=confirm, focus=focused if focused != full else None)
    try:
        run = run_passes(passes, full, ev)
    finally:
        ev.finish()
        t_stop = time.perf_counter()
        ex.close()
        stop_seconds = time.perf_counter() - t_stop
    stop, error = run.stop_reason, run.error
    one_min = any(p.name == "one-minimal" for p in run.completed)
    initial = next(p for p in passes if isinstance(p, InitialPass))
    reproduced_full = initial.reproduced
    confirmation: list[AttemptResult] = [r for p in passes if isinstance(p, ConfirmPass) for r in p.results]
    best = ev.best if ev.best is not None else full

    hits = sum(bool(r.reproduced) for r in confirmation)
    mcs = atoms.materialize(best)
    result = MinimizationResult(
        strategy=strategy, executor=ex.describe(), workers=ex.workers, replays_per_candidate=replays,
        inputs_before=len(events), inputs_after=len(mcs), atoms_before=len(full), atoms_after=len(best),
        mcs=mcs, mcs_atoms=tuple(atoms.all[i].ids for i in sorted((*atoms.fixed, *best))),
        replays=ev.total_replays, inputs_replayed=ev.total_inputs_replayed,
        reproduction_rate=(hits / len(confirmation)) if confirmation else None,
        reproduction={"reproduced": hits, "replays": len(confirmation)},
        seconds=time.perf_counter() - t0, executor_start_seconds=start_seconds,
        executor_stop_seconds=stop_seconds, iterations=ev.iterations,
        passes=ev.passes, one_minimal=one_min, stop_reason=stop, candidates=ev.total_candidates,
        cache_hits=sum(p.cache_hits for p in ev.passes), unused_candidates=ev.unused_jobs,
        mcs_details=[r.details for r in confirmation])
    if error is not None:
        error.result = result
        raise error
    if reproduced_full is False:
        raise NotReproducibleError(
            f"the full sequence of {len(events)} inputs did not reproduce the violation in {replays} "
            f"replay{'s' if replays != 1 else ''}",
            "replay the trace with more --replays (the bug may be nondeterministic) or check that the "
            "controller and topology are the ones that recorded it", result=result)
    return result


__all__ = ["minimize", "MinimizationResult", "describe_input"]
