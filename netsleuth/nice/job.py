"""`netsleuth check`: run a search, write counterexamples; replay them deterministically.

A counterexample is a netsleuth trace: the header names the in-process app
(``controller = "app:pyswitch"``), the topology and, under
``extra["nice"]``, the whole model configuration; then one ``mc_step``
event per transition and the ``violation``.  :func:`replay_counterexample`
rebuilds the model from the header alone, fires the recorded transitions
(checking each is enabled and does what the trace says) and checks that the
same property is violated at the end -- deterministic, because the app, the
switches and the hosts are deterministic functions of the state.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netsleuth import __version__
from netsleuth.errors import TraceFormatError
from netsleuth.live.stop import stopped_by
from netsleuth.model.topology import Topology
from netsleuth.nice import bug_scenarios
from netsleuth.nice.errors import CheckError
from netsleuth.nice.explore import Explorer, Found, SearchOptions, SearchResult
from netsleuth.nice.filters import STRATEGIES, parse_strategy
from netsleuth.nice.loading import make_system, normalize_spec
from netsleuth.nice.scenarios import build_config
from netsleuth.nice.system import Config, System
from netsleuth.nice.transitions import transition_from_json, transition_to_json
from netsleuth.trace import schema as ts
from netsleuth.trace.io import TraceWriter

FAULTS = ("expiry", "drop", "duplicate", "link")


@dataclass
class CheckOptions:
    app: str
    scenario: str | None = None
    topo: str | None = None
    hosts: str | None = None
    pings: int | None = None
    strategy: str = "full"
    dpor: bool = False
    order: str = "forward"
    max_depth: int | None = None
    max_transitions: int | None = None
    properties: tuple[str, ...] | None = None
    faults: tuple[str, ...] = ()
    burst: int = 1
    discover: int = 0          # concolic discover_packets: frames each host may send (0: off)
    discover_stats: bool = False
    seed: int = 0
    stop_at_first: bool = False
    out: Path | None = None
    localize: int = 0          # rank the app's lines: the first counterexample against this many random walks
    progress: Callable[[SearchResult], None] | None = None


def check(opts: CheckOptions) -> dict[str, Any]:
    """Run one search; returns the result dict (also written to OUT/result.json)."""
    try:
        parts = parse_strategy(opts.strategy)
    except ValueError as exc:
        raise CheckError(str(exc), f"use one of {', '.join(STRATEGIES)}, or several joined with + "
                                   "(e.g. pkt-seq+no-delay)") from None
    if opts.order not in ("forward", "reverse"):
        raise CheckError(f"unknown order {opts.order!r}", "use forward or reverse")
    bad = [f for f in opts.faults if f not in FAULTS]
    if bad:
        raise CheckError(f"unknown fault {bad[0]!r}", f"use any of {', '.join(FAULTS)}")
    for name, v in (("--max-depth", opts.max_depth), ("--max-transitions", opts.max_transitions)):
        if v is not None and v < 1:
            raise CheckError(f"{name} must be at least 1, got {v}", f"give {name} a positive number")
    if opts.burst < 1:
        raise CheckError(f"--burst must be at least 1, got {opts.burst}", "give --burst a positive number")
    spec = normalize_spec(opts.app)
    bug = bug_scenarios.scenario_for(spec, opts.scenario)
    if bug is not None:  # the load balancer / traffic engineering apps: their bug scenario
        config = bug_scenarios.config_for(bug, spec=spec, properties=opts.properties)
        config.scripts, config.faults = bug.scripts, tuple(opts.faults)
    else:
        config = build_config(spec, scenario=opts.scenario, topo=opts.topo, hosts=opts.hosts, pings=opts.pings,
                              properties=opts.properties, faults=opts.faults)
    config.discover, config.discover_stats = opts.discover, opts.discover_stats
    if "pkt-seq" in parts:
        config.pkt_seq_burst = opts.burst
    if "unusual" in parts:
        config.track_issue_order = True
    system = make_system(config)
    search = SearchOptions(strategy=opts.strategy, dpor=opts.dpor, order=opts.order, max_depth=opts.max_depth,
                           max_transitions=opts.max_transitions, stop_at_first=opts.stop_at_first,
                           seed=opts.seed, progress=opts.progress)
    result = Explorer(system, search).run()
    data: dict[str, Any] = {
        "command": "check", "app": spec,
        "scenario": f"bug-{bug.bug.lower()}" if bug is not None else (opts.scenario or "pings"),
        "topology": config.topology.spec, "hosts": [list(p) for p in config.pings],
        "properties": list(config.properties), "strategy": opts.strategy, "dpor": opts.dpor,
        "order": opts.order, "faults": list(opts.faults), "max_depth": opts.max_depth,
        "max_transitions": opts.max_transitions,
        "transitions": result.transitions, "unique_states": result.unique_states, "revisits": result.revisits,
        "seconds": round(result.seconds, 3), "transitions_per_second": round(result.rate()),
        "depth": result.max_depth, "completed": result.completed, "stopped_by": result.stopped_by,
        "interrupted": result.interrupted, "signal": stopped_by() if result.interrupted else None,
        "violation_counts": dict(sorted(result.violation_counts.items())),
        "violations": [],
    }
    if result.dpor_note:
        data["dpor_note"] = result.dpor_note
    out = Path(opts.out) if opts.out is not None else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    for n, f in enumerate(result.found, 1):
        found: dict[str, Any] = {**f.violation.to_json(), "transitions_to_find": f.transitions,
                                 "seconds_to_find": round(f.seconds, 3), "path_length": len(f.path),
                                 "at_end": f.at_end}
        if out is not None:
            path = out / f"cex-{n}-{f.violation.prop}.jsonl"
            write_counterexample(path, system, f, seed=opts.seed)
            found["counterexample"] = str(path)
        else:
            found["path"] = [transition_to_json(t) for t in f.path]
        data["violations"].append(found)
    _localize(data, opts, config, system, result)
    if out is not None:
        (out / "result.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return data


def _localize(data: dict[str, Any], opts: CheckOptions, config: Config, system: System,
              result: SearchResult) -> None:
    """With --localize, ``data["localize"]``: the app's lines ranked, the first counterexample against
    random walks of the model (nice/localize.py)."""
    if not opts.localize or not result.found:
        return
    from netsleuth.nice.localize import app_files, localize_counterexample, spectrum_json

    found: Found = result.found[0]
    ps = localize_counterexample(lambda: make_system(config), app_files(system), found.path, found.violation.prop,
                                 walks=opts.localize, seed=opts.seed)
    data["localize"] = spectrum_json(ps)


def write_counterexample(path: Path, system: System, found: Found, *, seed: int = 0) -> None:
    """The counterexample as a netsleuth trace (see the module docstring)."""
    cfg = system.config
    header = ts.TraceHeader(topology=cfg.topology.to_json(), topology_spec=cfg.topology.spec,
                            controller=cfg.app_spec, seed=seed, tool_version=__version__, command="check",
                            extra={"nice": cfg.to_json(), "property": found.violation.prop})
    st = system.initial()
    with TraceWriter(path, header) as w:
        seq = 0
        for k, t in enumerate(found.path):
            w.write(ts.McStep(seq=seq, t=0.0, step=k, transition={"kind": str(t[0]), "args": transition_to_json(t)[1:]},
                              what=system.describe(st, t)))
            seq += 1
            st, _ = system.fire(st, t)
        v = found.violation
        w.write(ts.Violation(seq=seq, t=0.0, invariant=v.prop, message=v.message, persistent=True,
                             hosts=v.hosts, switches=v.switches, details={"at_end": found.at_end}))


def load_counterexample(trace: ts.Trace,
                        name: str = "the trace") -> tuple[Config, list[ts.McStep], ts.Violation | None]:
    """The model configuration, the transitions and the violation a `netsleuth check` counterexample holds."""
    nice = trace.header.extra.get("nice")
    if not isinstance(nice, dict):
        raise TraceFormatError(f"{name} is not a model-checking counterexample (its header has no 'nice' "
                               "model configuration)", "use a counterexample written by `netsleuth check --out`")
    try:
        config = Config.from_json(nice, Topology.from_json(trace.header.topology))
    except (KeyError, TypeError) as exc:
        raise TraceFormatError(f"bad model configuration in {name}: {exc}",
                               "use a counterexample written by `netsleuth check --out`") from None
    steps = [e for e in trace.events if isinstance(e, ts.McStep)]
    target = next((e for e in trace.events if isinstance(e, ts.Violation)), None)
    return config, steps, target


def replay_counterexample(trace: ts.Trace, *, times: int = 1) -> dict[str, Any]:
    """Re-execute a counterexample against a fresh model; the dict `netsleuth replay` reports."""
    h = trace.header
    config, steps, target = load_counterexample(trace)
    data: dict[str, Any] = {
        "command": "replay", "mode": "in-process model", "controller": h.controller,
        "target": ({"invariant": target.invariant, "message": target.message, "hosts": list(target.hosts),
                    "switches": list(target.switches)} if target else None),
        "inputs": len(steps), "replays": []}
    for _ in range(max(1, times)):
        data["replays"].append(_replay_once(config, steps, target))
    done = [r for r in data["replays"] if r["reproduced"] is not None]
    data["reproduced"] = any(r["reproduced"] for r in done) if done else None
    data["reproduction_rate"] = (sum(1 for r in done if r["reproduced"]) / len(done)) if done else None
    return data


def _replay_once(config: Config, steps: list[ts.McStep], target: ts.Violation | None) -> dict[str, Any]:
    t0 = time.perf_counter()
    system = make_system(config)
    st = system.initial()
    matched, diverged = 0, []
    found: list = []
    for k, e in enumerate(steps):
        t = transition_from_json([e.transition["kind"], *e.transition["args"]])
        if t not in system.enabled(st):
            diverged.append(f"step {k}: {e.what!r} is not enabled")
            break
        what = system.describe(st, t)
        if what != e.what:
            diverged.append(f"step {k}: expected {e.what!r}, got {what!r}")
        else:
            matched += 1
        st, fx = system.fire(st, t)
        if fx.violations:
            found = fx.violations
            if k != len(steps) - 1:
                diverged.append(f"step {k}: violation before the end of the trace")
            break
    else:
        en = system.enabled(st)
        if all(system.is_fault(x) for x in en):
            found = system.at_end(st)
    reproduced = None
    if target is not None:
        reproduced = not diverged and any(v.prop == target.invariant for v in found)
    return {"reproduced": reproduced, "matched": matched, "timed_out": 0, "new": len(diverged),
            "diverged": diverged, "seconds": round(time.perf_counter() - t0, 3),
            "findings": [v.to_json() for v in found]}
