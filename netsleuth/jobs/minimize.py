"""`netsleuth minimize TRACE`: delta-debug a failing trace down to a minimal causal sequence.

The minimizer (netsleuth/minimize) knows only an oracle; this job supplies the
real one: each candidate subsequence is replayed (jobs/replay.py) against a
fresh instance of the trace's controller, on its own port, and reproduces if
the trace's target violation comes back. The oracle is built from a picklable
factory so that each worker of a process pool or Ray owns its controllers.
Every replay's trace stays on disk, and ``mcs.jsonl`` is a trace that
``netsleuth replay`` accepts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from netsleuth.errors import TraceFormatError
from netsleuth.jobs.minimize_report import write_report
from netsleuth.jobs.replay import find_target, replay_once
from netsleuth.minimize.api import MinimizationResult, minimize
from netsleuth.minimize.errors import MinimizationError
from netsleuth.minimize.oracle import ReplayOutcome
from netsleuth.trace import schema as ts
from netsleuth.trace.io import read_trace, write_trace


@dataclass(frozen=True)
class ReplayOracleFactory:
    """Picklable: each worker reads the trace itself and writes its replays under ``out/wN``."""

    trace: str
    out: str
    controller: tuple[str, ...] | None
    epsilon: float
    persist: int
    violation: int
    max_gap: float | None

    def __call__(self, worker_id: int) -> "ReplayOracle":
        return ReplayOracle(self, worker_id)


class ReplayOracle:
    def __init__(self, cfg: ReplayOracleFactory, worker_id: int) -> None:
        self.cfg = cfg
        trace = read_trace(cfg.trace)
        self.header, self.events = trace.header, trace.events
        self.target = find_target(self.events, cfg.violation)
        self.dir = Path(cfg.out) / f"w{worker_id}"
        self.n = 0

    def reproduces(self, candidate: tuple[ts.InputEvent, ...]) -> ReplayOutcome:
        self.n += 1
        o = replay_once(self.header, self.events, self.dir / f"replay-{self.n}", inputs=list(candidate),
                        target=self.target, controller=list(self.cfg.controller) if self.cfg.controller else None,
                        epsilon=self.cfg.epsilon, persist=self.cfg.persist, record_packets=False,
                        max_gap=self.cfg.max_gap)
        details = o.to_json()
        details["dir"] = str(self.dir / f"replay-{self.n}")
        return ReplayOutcome(bool(o.reproduced), details)


@dataclass
class MinimizeOptions:
    trace: Path
    out: Path
    controller: list[str] | None = None
    replays: int = 1
    jobs: int | None = None
    executor: str | None = None
    budget: float | None = None
    strategy: str = "ddmin"
    violation: int = 0
    epsilon: float = 0.1
    max_gap: float | None = 0.05
    persist: int | None = None


def run_minimize(opts: MinimizeOptions, progress: Callable[[Any], None] | None = None) -> dict:
    trace = read_trace(opts.trace)
    target = find_target(trace.events, opts.violation)
    if target is None:
        raise TraceFormatError(f"{opts.trace} records no persistent violation to minimize for",
                               "record one with `netsleuth fuzz` (it stops at the first persistent violation)")
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    persist = opts.persist or int(trace.header.extra.get("persist", 3) or 3)
    factory = ReplayOracleFactory(str(Path(opts.trace).resolve()), str((out / "replays").resolve()),
                                  tuple(opts.controller) if opts.controller else None, opts.epsilon, persist,
                                  opts.violation, opts.max_gap)
    inputs = [e for e in trace.events if e.is_input]
    data: dict[str, Any] = {"command": "minimize", "trace": str(opts.trace), "target": target.to_json()}
    result: MinimizationResult | None = None
    try:
        result = minimize(inputs, factory, strategy=opts.strategy, replays=opts.replays, executor=opts.executor,
                          jobs=opts.jobs, budget_seconds=opts.budget, progress=progress)
    except MinimizationError as exc:
        result = getattr(exc, "result", None)
        data["error"] = exc.one_line()
        if result is None:
            raise
        _write(out, trace, data, result)
        raise
    _write(out, trace, data, result)
    return data


def _write(out: Path, trace: ts.Trace, data: dict, result: MinimizationResult) -> None:
    data.update(result.to_json())
    mcs_ids = {e.id for e in result.mcs}
    kept = [e for e in trace.events if not e.is_input or e.id in mcs_ids]
    # migrations may have been rewritten: use the minimizer's versions of the inputs
    rewritten = {e.id: e for e in result.mcs}
    events = [rewritten.get(e.id, e) if e.is_input else e for e in kept]
    write_trace(out / "mcs.jsonl", ts.Trace(trace.header, events))
    data["report"] = write_report(out, data)  # sizes.png, mcs.html (diagram), report.html
    (out / "result.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
