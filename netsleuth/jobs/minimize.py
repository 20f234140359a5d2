"""`netsleuth minimize TRACE`: delta-debug a failing trace down to a minimal causal sequence.

The minimizer (netsleuth/minimize) knows only an oracle; this job supplies the
real one: each candidate subsequence is replayed (jobs/replay.py) against a
fresh instance of the trace's controller, on its own port, and reproduces if
the trace's target violation comes back. The oracle is built from a picklable
factory so that each worker of a process pool or Ray owns its controllers.
Every replay's trace stays on disk (its matcher counts in ``wN/replays.jsonl``),
and ``mcs.jsonl`` is a trace that ``netsleuth replay`` accepts. With ``peek``
each worker's oracle infers every candidate's expectations first
(schedulers/peek.py), replaying prefixes it has not seen; their cost is summed
into result.json's ``peek``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netsleuth.controllers.external import share_warm_start
from netsleuth.controllers.spec import controllers_for_trace
from netsleuth.errors import TraceFormatError
from netsleuth.jobs.minimize_remote import ray_setup
from netsleuth.jobs.minimize_report import write_report
from netsleuth.jobs.replay import Target, check_target_known, find_target, replay_once, trace_limits
from netsleuth.live.spare import SpareControllers, can_prestart
from netsleuth.live.stop import stopped_by
from netsleuth.minimize.api import MinimizationResult, minimize
from netsleuth.minimize.errors import MinimizationError
from netsleuth.minimize.oracle import ReplayVerdict
from netsleuth.model.switch_io import SwitchLimits
from netsleuth.model.topology import Topology
from netsleuth.options import check_out_dir
from netsleuth.schedulers.peek import Observed, Peek, PeekStats
from netsleuth.schedulers.replay import ReplayPlan
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
    peek: bool = False
    openflow: str | None = None  # None: what the trace's switches negotiated
    limits: SwitchLimits | None = None  # None: the trace's
    coverage: bool = False  # keep the controller's lines beside each replay (fault localization)
    coverage_framework: bool = False  # ... and the framework's (--all-code)
    prestart: bool = True  # start the next replay's controllers while the current replay runs (live/spare.py)
    early_end: bool = True  # a candidate not showing the target ends once the network is at rest (live/rest.py)

    def __call__(self, worker_id: int) -> ReplayOracle:
        return ReplayOracle(self, worker_id)


class ReplayOracle:
    def __init__(self, cfg: ReplayOracleFactory, worker_id: int) -> None:
        self.cfg = cfg
        trace = read_trace(cfg.trace)
        self.header, self.events = trace.header, trace.events
        self.target = find_target(self.events, cfg.violation)
        self.dir = Path(cfg.out) / f"w{worker_id}"
        self.n = 0
        self.peek = Peek(self.events, self._replay_prefix) if cfg.peek else None
        self._inputs = [e for e in self.events if e.is_input]
        specs = controllers_for_trace(self.header.controller, list(cfg.controller) if cfg.controller else None)
        # Measured controllers start under coverage with their folder cleared first: no spares for them.
        self.spare = SpareControllers(specs, Topology.from_json(self.header.topology)) \
            if cfg.prestart and not cfg.coverage and can_prestart(specs) else None
        if self.spare is not None:
            self.spare.prepare(self.dir / "replay-1")  # the first replay's, while the pool starts

    def reproduces(self, candidate: tuple[ts.InputEvent, ...]) -> ReplayVerdict:
        plan = self.peek.infer(candidate) if self.peek is not None else None
        self.n += 1
        here = self.dir / f"replay-{self.n}"
        ready, t0 = None, time.monotonic()
        if self.spare is not None:
            ready = self.spare.take(here)
        waited = time.monotonic() - t0
        if self.spare is not None:
            self.spare.prepare(self.dir / f"replay-{self.n + 1}")  # the next replay's, while this one runs
        o = replay_once(self.header, self.events, here, inputs=list(candidate),
                        target=self.target, controller=list(self.cfg.controller) if self.cfg.controller else None,
                        epsilon=self.cfg.epsilon, persist=self.cfg.persist, record_packets=False,
                        max_gap=self.cfg.max_gap, plan=plan, openflow=self.cfg.openflow, limits=self.cfg.limits,
                        coverage=self.cfg.coverage, coverage_framework=self.cfg.coverage_framework,
                        prestarted=ready, early_end=self.cfg.early_end)
        details = o.to_json()
        details["dir"] = str(self.dir / f"replay-{self.n}")
        self._log({"replay": self.n, "inputs": len(candidate), "reproduced": bool(o.reproduced),
                   "seconds": round(o.seconds, 3), "controller_wait_s": round(waited, 3),
                   "wall_s": round(time.monotonic() - t0, 3), **{k: o.stats.get(k) for k in _STATS}})
        if self.peek is not None:
            details["peek"] = self.peek.stats.to_json()
            (self.dir / "peek.json").write_text(json.dumps(details["peek"], sort_keys=True) + "\n")
        return ReplayVerdict(bool(o.reproduced), details)

    def close(self) -> None:
        """The worker ends: stop the spare controllers nobody will use."""
        if self.spare is not None:
            self.spare.close()

    def _replay_prefix(self, plan: ReplayPlan) -> list[Observed]:
        """PEEK's prefix replay: ``plan.inputs`` with the inferred waits, then record one input window."""
        gap = self.cfg.max_gap
        if gap is None:  # the recorded gap to the original input after the prefix's last one
            last = plan.inputs[-1].t if plan.inputs else plan.start_t
            gap = min((e.t - last for e in self._inputs if e.t > last), default=0.0)
        m = self.peek.stats.prefixes_replayed + 1 if self.peek is not None else 0
        o = replay_once(self.header, self.events, self.dir / f"peek-{m}", plan=plan, record_packets=False,
                        controller=list(self.cfg.controller) if self.cfg.controller else None,
                        epsilon=self.cfg.epsilon, max_gap=self.cfg.max_gap, observe_window=gap + self.cfg.epsilon,
                        openflow=self.cfg.openflow, limits=self.cfg.limits)
        self._log({"peek": m, "inputs": len(plan.inputs), "seconds": round(o.seconds, 3),
                   **{k: o.stats.get(k) for k in _STATS}})
        return o.observed

    def _log(self, row: dict) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / "replays.jsonl", "a") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")


_STATS = ("expected", "matched", "timed_out", "new", "timeout_wait_s", "judge_rounds", "ended_at_rest")


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
    peek: bool = False   # infer expectations per candidate with PEEK (schedulers/peek.py)
    openflow: str | None = None  # None: what the trace's switches negotiated
    trust_trace_controller: bool = False  # run a cmd: controller named by the trace's header
    buffer_packets: int | None = None     # None: the trace's (its header's switch limits)
    table_size: int | None = None         # None: the trace's
    localize: bool = False       # measure the controller's lines in every replay and rank them (jobs/localize.py)
    formula: str = "ochiai"
    all_code: bool = False
    top: int = 10
    spectrum: str = "auto"       # localize's run: "windows" (handler calls), "replays" or "auto"
    focus: bool = True           # try the inputs on the violation's own hosts alone first (see focus_on)
    prestart: bool = True        # the next replay's controllers start while the current replay runs
    early_end: bool = True       # a replay ends once the network is at rest past the recorded reaction time


def run_minimize(opts: MinimizeOptions, progress: Callable[[Any], None] | None = None) -> dict:
    check_out_dir(opts.out)
    trace = read_trace(opts.trace)
    controllers = controllers_for_trace(trace.header.controller, opts.controller,
                                        trust=opts.trust_trace_controller, source=str(opts.trace))
    target = find_target(trace.events, opts.violation)
    if target is None:
        raise TraceFormatError(f"{opts.trace} records no persistent violation to minimize for",
                               "record one with `netsleuth fuzz` (it stops at the first persistent violation)")
    check_target_known(target, str(opts.trace))
    localize_note = _localize_preflight(opts, trace.header.controller)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    persist = opts.persist or int(trace.header.extra.get("persist", 3) or 3)
    factory = ReplayOracleFactory(str(Path(opts.trace).resolve()), str((out / "replays").resolve()),
                                  tuple(map(str, controllers)), opts.epsilon, persist,
                                  opts.violation, opts.max_gap, opts.peek, opts.openflow,
                                  trace_limits(trace.header).overridden(opts.buffer_packets, opts.table_size),
                                  coverage=opts.localize and not localize_note, coverage_framework=opts.all_code,
                                  prestart=opts.prestart, early_end=opts.early_end)
    for stale in (*out.glob("replays/w*/replays.jsonl"), *out.glob("replays/w*/peek.json")):
        stale.unlink()  # a previous run into the same --out: its logs must not be added to this one's
    factory, executor = ray_setup(factory, opts.executor, opts.jobs, opts.trace, out,
                                    [str(c) for c in controllers])
    if executor is None or isinstance(executor, str):  # the replays run in this process or its pool's workers
        share_warm_start(controllers)
    inputs = [e for e in trace.events if e.is_input]
    data: dict[str, Any] = {"command": "minimize", "trace": str(opts.trace), "target": target.to_json(),
                            "trace_path": str(Path(opts.trace).resolve()), "violation": opts.violation,
                            "openflow": opts.openflow}
    result: MinimizationResult | None = None
    try:
        result = minimize(inputs, factory, strategy=opts.strategy, replays=opts.replays, executor=executor,
                          jobs=opts.jobs, budget_seconds=opts.budget, progress=progress,
                          # localization ranks lines by the replays' spectrum: it wants them all
                          focus=focus_on(target) if opts.focus and not opts.localize else None)
    except MinimizationError as exc:
        result = getattr(exc, "result", None)
        data["error"] = exc.one_line()
        if result is None:
            raise
        _write(out, trace, data, result, opts.peek)
        raise
    _write(out, trace, data, result, opts.peek)
    if opts.localize:
        data["localize"] = _localize_after(opts, localize_note, progress)
    return data


def focus_on(target: Target) -> Callable[[ts.InputEvent], bool] | None:
    """The inputs a violation between hosts points at: traffic among its hosts and their moves.

    A blackhole or lost reachability between two hosts is usually made by
    what those two did (a packet that taught the controller where one was, a
    move that made it wrong), not by the other hosts' traffic in between; the
    minimizer tries these inputs alone first and keeps them only if a replay
    says they reproduce. None (no focus) for a violation that names no host."""
    hosts = frozenset(target.hosts)
    if not hosts:
        return None

    def on_target(e: ts.InputEvent) -> bool:
        if isinstance(e, ts.TrafficInjection):
            return e.host in hosts and e.dst in hosts
        return isinstance(e, ts.HostMigration) and e.host in hosts

    return on_target


def _localize_preflight(opts: MinimizeOptions, header_controller: str) -> str:
    """Before any replay: a note when the controller cannot be measured (then minimize runs without)."""
    if not opts.localize:
        return ""
    from netsleuth.jobs.localize import NotPythonControllerError, python_controllers
    from netsleuth.localize.spectrum import FORMULAS, UnknownFormulaError

    if opts.formula not in FORMULAS:
        raise UnknownFormulaError(opts.formula)
    try:
        python_controllers(header_controller, opts.controller, trust=opts.trust_trace_controller,
                           source=str(opts.trace))
    except NotPythonControllerError as exc:
        return exc.problem
    return ""


def _localize_after(opts: MinimizeOptions, note: str, progress: Callable[[Any], None] | None) -> dict:
    from netsleuth.jobs.localize import LocalizeOptions, localize

    if note:
        return {"note": note}
    return localize(LocalizeOptions(opts.out, formula=opts.formula, all_code=opts.all_code, top=opts.top,
                                    spectrum=opts.spectrum, controller=opts.controller,
                                    trust_trace_controller=opts.trust_trace_controller,
                                    epsilon=opts.epsilon))


def peek_totals(replays_dir: Path) -> dict:
    """PEEK's cost summed over the workers' ``peek.json`` (prefixes replayed, memo hits, seconds)."""
    total = PeekStats()
    for f in sorted(Path(replays_dir).glob("w*/peek.json")):
        d = json.loads(f.read_text())
        total.add(PeekStats(**{k: d.get(k, 0) for k in PeekStats().to_json()}))
    return total.to_json()


def _write(out: Path, trace: ts.Trace, data: dict, result: MinimizationResult, peek: bool = False) -> None:
    data.update(result.to_json())
    data["completed"] = result.stop_reason != "interrupted"
    if not data["completed"]:
        data["stopped_by"] = stopped_by()
    if peek:
        data["peek"] = peek_totals(out / "replays")
    mcs_ids = {e.id for e in result.mcs}
    # inputs carry an id
    kept = [e for e in trace.events if not e.is_input or e.id in mcs_ids]  # type: ignore[attr-defined]
    # migrations may have been rewritten: use the minimizer's versions of the inputs
    rewritten = {e.id: e for e in result.mcs}
    # inputs carry an id
    events = [rewritten.get(e.id, e) if e.is_input else e for e in kept]  # type: ignore[attr-defined]
    write_trace(out / "mcs.jsonl", ts.Trace(trace.header, events))
    data["report"] = write_report(out, data)  # sizes.png, mcs.html (diagram), report.html
    (out / "result.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
