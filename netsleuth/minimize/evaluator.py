"""The evaluator every shrink pass asks: cache, parallel levels, budget, statistics.

The passes themselves (``initial``, ``ddmin`` or ``binary``, ``one-minimal``,
``confirm``) live in :mod:`netsleuth.minimize.passes`; each asks this
evaluator about candidates and it records, per pass, what that cost
(:class:`PassStats`): candidates tried, cache hits, replays, reproductions,
seconds and the size of the current candidate after each iteration.

:class:`Evaluator` answers the algorithms' one question, "which is the first
candidate of this level, in list order, that reproduces?":

* a **cache** keyed by the canonical candidate key answers repeats without a
  replay (and duplicates within one level);
* the unit of work is **one replay** of one candidate: up to ``workers``
  replays are in flight, taken in list order of the candidates (a candidate's
  K replays before the next candidate's), so a level of many candidates, or
  one candidate that needs K replays, both keep every worker busy;
* a candidate is answered "yes" by its first reproducing replay and "no"
  once all K replays failed; answers are consumed strictly in list order,
  so the answer to the level does not depend on which replay finishes first.
  Replays still running when the answer is known were speculative: their
  results still land in the cache (a later level that asks for the same
  candidate uses them, or waits on them instead of starting others);
* a **deadline** stops submitting replays; the search then ends with the best
  candidate so far -- the shortlex-smallest reproducing candidate consumed
  (at most one replay per worker overruns it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future
from concurrent.futures import wait as wait_futures
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from netsleuth.errors import NetsleuthError
from netsleuth.minimize.atoms import Atoms, Key, shortlex
from netsleuth.minimize.errors import MinimizationError, WorkerLostError
from netsleuth.minimize.executors import Executor
from netsleuth.minimize.oracle import OracleFactory, as_outcome
from netsleuth.trace.schema import InputEvent


# ------------------------------------------------------------------ worker side
@dataclass(frozen=True)
class WorkerInit:
    """Sent once to each worker: the oracle factory and the inputs (plain, picklable data)."""

    factory: OracleFactory
    inputs: tuple[InputEvent, ...]
    fixed_ids: frozenset[str]

    def __call__(self, worker_id: int) -> WorkerState:
        return WorkerState(self.factory(worker_id), Atoms(self.inputs, self.fixed_ids), worker_id)


@dataclass
class WorkerState:
    oracle: Any
    atoms: Atoms
    worker_id: int

    def close(self) -> None:
        close = getattr(self.oracle, "close", None)
        if callable(close):
            close()


@dataclass(frozen=True)
class Job:
    """Replay the candidate ``key`` once (its ``attempt``-th replay)."""

    key: Key
    attempt: int


@dataclass(frozen=True)
class AttemptResult:
    key: Key
    attempt: int
    reproduced: bool
    details: dict[str, Any]
    seconds: float
    worker_id: int


def run_job(state: WorkerState, job: Job) -> AttemptResult:
    """Task run on a worker: materialize the candidate, replay it once."""
    t0 = time.perf_counter()
    out = as_outcome(state.oracle.reproduces(state.atoms.materialize(job.key)))
    return AttemptResult(job.key, job.attempt, out.reproduced, out.details, time.perf_counter() - t0, state.worker_id)


# ------------------------------------------------------------------ statistics
@dataclass
class PassStats:
    """What one shrink pass cost and achieved."""

    name: str
    candidates: int = 0      # candidates the pass asked about
    cache_hits: int = 0      # ... answered without a new replay (cache, duplicate, or already running)
    reproduced: int = 0      # ... that reproduced
    replays: int = 0         # oracle replays that finished during the pass (speculative ones included)
    inputs_replayed: int = 0  # sum over those replays of the inputs each one injected
    seconds: float = 0.0
    size_before: int = 0     # atoms
    size_after: int = 0
    sizes: list[int] = field(default_factory=list)  # atoms of the current candidate after each iteration

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "candidates": self.candidates, "cache_hits": self.cache_hits,
                "reproduced": self.reproduced, "replays": self.replays,
                "inputs_replayed": self.inputs_replayed,
                "seconds": round(self.seconds, 4), "size_before": self.size_before,
                "size_after": self.size_after, "sizes": list(self.sizes)}


@dataclass(frozen=True)
class ShrinkProgress:
    """Where the shrink stands: handed to the ``progress`` callback after every consumed candidate and iteration."""

    pass_name: str
    atoms: int               # atoms in the best candidate so far
    inputs: int              # inputs in the best candidate so far
    atoms_before: int
    candidates: int          # candidates asked about, all passes
    replays: int             # replays done, all passes
    elapsed: float
    budget_seconds: float | None


class BudgetExpired(Exception):
    """Raised inside the search when the time budget is spent."""


@dataclass
class _Candidate:
    """Replays of one candidate: started, finished, reproduced; answered once known."""

    key: Key
    started: int = 0
    finished: int = 0
    reproduced: int = 0
    details: dict[str, Any] | None = None  # of the first reproducing replay, else of the last one

    def answer(self, k: int) -> bool | None:
        if self.reproduced:
            return True
        return False if self.finished >= k else None


# ------------------------------------------------------------------ evaluator
class Evaluator:
    """Answers the passes' questions about candidates, replaying each at most K times; keeps the statistics."""

    def __init__(self, atoms: Atoms, executor: Executor, replays: int, *, deadline: float | None,
                 progress: Callable[[ShrinkProgress], None] | None, budget_seconds: float | None) -> None:
        self.atoms = atoms
        self.executor = executor
        self.replays = replays
        self.deadline = deadline  # time.time()
        self.budget_seconds = budget_seconds
        self.progress = progress
        self.t0 = time.perf_counter()
        self.cands: dict[Key, _Candidate] = {}   # the cache: every candidate ever replayed
        self.running: dict[Future[AttemptResult], Job] = {}
        self.consumed: set[Key] = set()
        self.best: Key | None = None
        self.passes: list[PassStats] = []
        self.current: PassStats | None = None
        self.iterations: list[dict[str, Any]] = []
        self.total_replays = 0
        self.total_inputs_replayed = 0
        self.total_candidates = 0
        self.unused_jobs = 0
        self._pass_t0 = self.t0

    # -- passes
    def begin(self, name: str, size: int) -> PassStats:
        self.current = PassStats(name, size_before=size, size_after=size)
        self.passes.append(self.current)
        self._pass_t0 = time.perf_counter()
        return self.current

    def end(self, size: int) -> None:
        if self.current is not None:
            self.current.size_after = size
            self.current.seconds = time.perf_counter() - self._pass_t0
            self.current = None

    def on_iteration(self, key: Key, info: dict[str, Any]) -> None:
        p = self.current
        assert p is not None
        p.sizes.append(len(key))
        self.iterations.append({"pass": p.name, **info, "atoms": len(key), "inputs": self.atoms.inputs_in(key),
                                "seconds": round(time.perf_counter() - self.t0, 4)})
        self._report()

    def _report(self) -> None:
        if self.progress is None:
            return
        best = self.best if self.best is not None else self.atoms.prunable
        self.progress(ShrinkProgress(self.current.name if self.current else "", len(best), self.atoms.inputs_in(best),
                               len(self.atoms.prunable), self.total_candidates, self.total_replays,
                               time.perf_counter() - self.t0, self.budget_seconds))

    # -- the one question
    def first(self, candidates: Sequence[Key], submit_order: Sequence[int] | None = None) -> int | None:
        """Index of the first candidate (in list order) that reproduces in any of K replays, or None.

        ``submit_order`` (a permutation of positions) only changes which replays a parallel run starts
        first -- a scheduling hint -- never the answer; a serial run always goes in list order.
        """
        n, k = len(candidates), self.replays
        order = range(n) if submit_order is None or self.executor.workers == 1 else submit_order
        mine: set[Key] = set()       # candidates this call started replays for (the rest are cache hits)
        answered: set[Key] = set()   # consumed in this call (a repeat is a cache hit)
        lo = 0
        while True:
            self._harvest()
            # Consume the known answers strictly in list order.
            while lo < n:
                key = candidates[lo]
                st = self.cands.get(key)
                if st is None or st.answer(k) is None:
                    break
                if key in answered or key not in mine:
                    self._hit()
                answered.add(key)
                if self._consume(st):
                    return lo
                lo += 1
            if lo >= n:
                return None
            # Keep every worker busy with the next replays in list order.
            for p in order:
                if len(self.running) >= self.executor.workers:
                    break
                if p < lo:
                    continue
                st = self.cands.setdefault(candidates[p], _Candidate(candidates[p]))
                while st.answer(k) is None and st.started < k and len(self.running) < self.executor.workers:
                    self._submit(st)
                    mine.add(st.key)
            self._wait()

    def run_replays(self, key: Key, k: int) -> list[AttemptResult]:
        """K independent replays of ``key``, all of them (for the reproduction rate)."""
        futs = [self.executor.submit(run_job, Job(key, i)) for i in range(k)]
        out: list[AttemptResult] = []
        for f in futs:
            res = self._result(key, f)
            self._count(res)
            out.append(res)
        return out

    # -- internals
    def _submit(self, st: _Candidate) -> None:
        self._check_time()
        job = Job(st.key, st.started)
        try:
            fut = self.executor.submit(run_job, job)
        except RuntimeError as exc:  # BrokenProcessPool, or a pool already shut down
            fut = Future[AttemptResult]()
            fut.set_exception(exc)
            self._result(st.key, fut)
        st.started += 1
        self.running[fut] = job

    def _hit(self) -> None:
        if self.current is not None:
            self.current.cache_hits += 1

    def _consume(self, st: _Candidate) -> bool:
        self.consumed.add(st.key)
        p = self.current
        assert p is not None
        p.candidates += 1
        self.total_candidates += 1
        ok = bool(st.reproduced)
        if ok:
            p.reproduced += 1
            if self.best is None or shortlex(st.key) < shortlex(self.best):
                self.best = st.key
        self._report()
        return ok

    def _count(self, res: AttemptResult) -> None:
        self.total_replays += 1
        injected = self.atoms.inputs_in(res.key)
        self.total_inputs_replayed += injected
        if self.current is not None:
            self.current.replays += 1
            self.current.inputs_replayed += injected

    def _result(self, key: Key, fut: Future[AttemptResult]) -> AttemptResult:
        try:
            return fut.result()
        except BrokenProcessPool as exc:
            raise WorkerLostError(f"a worker process died while replaying a candidate of "
                                  f"{self.atoms.inputs_in(key)} inputs ({exc})",
                                  "look for a crash or the OOM killer in the system log; retry with "
                                  "--executor serial to see the error") from None
        except NetsleuthError:
            raise
        except Exception as exc:
            raise MinimizationError(f"the oracle failed while replaying a candidate of "
                                    f"{self.atoms.inputs_in(key)} inputs: {type(exc).__name__}: {exc}",
                                    "fix the replay error above; the partial result is kept") from exc

    def _harvest(self) -> None:
        for fut in [f for f in self.running if f.done()]:
            job = self.running.pop(fut)
            if fut.cancelled():
                self.cands[job.key].started -= 1
                continue
            res = self._result(job.key, fut)
            self._count(res)
            st = self.cands[job.key]
            st.finished += 1
            if not st.reproduced:
                st.details = res.details
            st.reproduced += res.reproduced
        self._check_time()

    def _wait(self) -> None:
        timeout = None if self.deadline is None else max(0.0, self.deadline - time.time())
        wait_futures(list(self.running), timeout=timeout, return_when=FIRST_COMPLETED)

    def _check_time(self) -> None:
        if self.deadline is not None and time.time() > self.deadline:
            raise BudgetExpired()

    def finish(self) -> None:
        """Cancel replays that have not started; count answers nobody asked for."""
        for fut in list(self.running):
            fut.cancel()
        self.running.clear()
        self.unused_jobs = sum(1 for st in self.cands.values() if st.key not in self.consumed and st.finished)


__all__ = ["WorkerInit", "WorkerState", "Job", "AttemptResult", "run_job", "PassStats", "ShrinkProgress", "Evaluator",
           "BudgetExpired"]
