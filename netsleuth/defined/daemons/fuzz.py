"""``fuzz`` and ``minimize`` over a daemon network, deterministic under the ordering function.

:func:`fuzz` draws a seeded sequence of external events (links fail and
recover, routers crash and restart) and runs it on real daemons
(:func:`~.replay.run_events`), stopping at the first violation that holds
for ``persist`` virtual seconds -- longer than the protocol takes to route
around a failure, so what is left is a bug, not convergence.

:func:`minimize` cuts the recorded events down to those the violation
needs. A candidate is a subset of the events, replayed on a fresh network
at the same virtual times; it *reproduces* when a persistent violation with
the same identity (:func:`netsleuth.invariants.persistence.finding_key`)
appears. Because every message is delivered in the ordering function's
order on the virtual clock, one replay per candidate decides it: the same
subset gives the same answer every time. The search is netsleuth's own
(:mod:`netsleuth.minimize.ddmin`): a ddmin pass, then a 1-minimal pass; each
reports its tests and what it kept.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from netsleuth.defined.daemons.events import ExtEvent, NetSpec, fuzz_workload
from netsleuth.defined.daemons.replay import DaemonRun, Seen, run_events
from netsleuth.invariants.persistence import finding_key
from netsleuth.minimize.ddmin import ddmin, one_minimal

PERSIST = 10.0     # virtual seconds: OSPF notices a cut link after its dead interval (4 s) and reroutes within ~5
START = 15         # the first event comes after the boot has converged


def signature(s: Seen) -> list:
    return [str(x) if not isinstance(x, tuple) else list(x) for x in finding_key(s.finding)]


@dataclass
class FuzzResult:
    events: list[ExtEvent]           # the events that happened before the run stopped
    run: DaemonRun
    found: Seen | None

    def to_json(self, persist: float) -> dict:
        return {"events": [e.to_json() for e in self.events], "run": self.run.to_json(persist),
                "violation": self.found.to_json(self.run.virtual_seconds) if self.found else None,
                "signature": signature(self.found) if self.found else None}


def fuzz(spec: NetSpec, steps: int, seed: int, *, persist: float = PERSIST, ordering: str = "defined",
         rates: dict[str, float] | None = None, on_second: Callable[[int], None] | None = None) -> FuzzResult:
    net = spec.build()
    events = fuzz_workload(net, steps, random.Random(seed), start=START, rates=rates)
    run = run_events(net, events, spec.daemon, seed=spec.seed, ordering=ordering, tail=int(persist) + 2,
                     persist=persist, on_second=on_second)
    found = run.persistent(persist)
    first = min(found, key=lambda s: (s.since, s.after_delivery)) if found else None
    return FuzzResult([e for e in events if e.t <= run.virtual_seconds], run, first)


@dataclass
class EventPass:
    """One pass of the minimization of a daemon network's external events: its replays and what it kept."""

    name: str
    tests: int = 0
    kept: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {"pass": self.name, "tests": self.tests, "kept": self.kept, "seconds": round(self.seconds, 2)}


@dataclass
class MinimizeResult:
    events: list[ExtEvent]
    kept: list[ExtEvent]
    reproduced: bool
    passes: list[EventPass] = field(default_factory=list)
    violation: dict | None = None
    interrupted: bool = False

    def to_json(self) -> dict:
        return {"events": len(self.events), "kept": [e.to_json() for e in self.kept],
                "kept_words": [e.words() for e in self.kept], "reproduced": self.reproduced,
                "passes": [p.to_json() for p in self.passes],
                "tests": sum(p.tests for p in self.passes), "violation": self.violation,
                "interrupted": self.interrupted}


def minimize(spec: NetSpec, events: list[ExtEvent], target: list | None = None, *, persist: float = PERSIST,
             ordering: str = "defined", on_test: Callable[[tuple, bool], None] | None = None) -> MinimizeResult:
    """Shrink ``events`` to a 1-minimal subset that still shows the ``target`` violation.

    ``target`` is a violation's :func:`signature`; without one, the first persistent violation
    of the whole sequence is the target.
    """
    net = spec.build()
    cache: dict[tuple, bool] = {}
    seen: dict[tuple, dict] = {}
    current = EventPass("check")

    def reproduces(key: tuple) -> bool:
        nonlocal target
        if key in cache:
            return cache[key]
        current.tests += 1
        run = run_events(net, [events[i] for i in key], spec.daemon, seed=spec.seed, ordering=ordering,
                         tail=int(persist) + 2, persist=persist, check_invariants=True)
        hits = run.persistent(persist)
        if target is None and hits:
            target = signature(min(hits, key=lambda s: (s.since, s.after_delivery)))
        match = [h for h in hits if signature(h) == target]
        cache[key] = bool(match)
        if match:
            seen[key] = match[0].to_json(run.virtual_seconds)
        if on_test:
            on_test(key, cache[key])
        return cache[key]

    def first(candidates: Sequence[tuple]) -> int | None:
        for i, c in enumerate(candidates):
            if c and reproduces(tuple(c)):
                return i
        return None

    full = tuple(range(len(events)))
    t0 = time.monotonic()
    out = MinimizeResult(events, [], False, [current])
    try:
        ok = reproduces(full)
    except KeyboardInterrupt:
        ok, out.interrupted = False, True
    current.seconds = time.monotonic() - t0
    if not ok:
        return out
    current.kept = len(full)
    best = [full]

    def step(key: tuple, info: dict) -> None:
        best[0] = key

    try:
        for name, algo in (("ddmin", ddmin), ("1-minimal", one_minimal)):
            current = EventPass(name)
            out.passes.append(current)
            t1 = time.monotonic()
            best[0] = algo(best[0], first, step)
            current.kept, current.seconds = len(best[0]), time.monotonic() - t1
    except KeyboardInterrupt:   # stopped: the smallest subset that reproduced so far is the answer
        out.interrupted = True
    key = best[0]
    out.kept, out.reproduced, out.violation = [events[i] for i in key], True, seen.get(key)
    return out
