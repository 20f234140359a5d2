"""`netsleuth defined run`: N runs of a scenario with random link delays, compared.

Each run gets its own seed (``seed + i``) for the link-delay generator, so
runs differ exactly as production executions would. The summary counts, per
node, how many distinct delivery sequences the runs produced, how many
distinct final routing tables, and in how many runs the scenario's bug
showed. Under ``--mode rb`` the first run is also replayed in LS from its
recorded external events and compared, so every RB run checks the paper's
property (i) on itself.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from netsleuth.defined.lockstep import Lockstep
from netsleuth.defined.record import write_run
from netsleuth.defined.scenarios import Scenario, build
from netsleuth.defined.sim import RunResult, SimConfig, simulate
from netsleuth.errors import NetsleuthError


@dataclass
class DefinedRunOptions:
    scenario: str
    runs: int = 50
    mode: str = "rb"
    ordering: str = "defined"
    seed: int = 0
    topo: str | None = None
    variant: str | None = None
    out: Path | None = None
    jitter: float = 0.9
    scenario_seed: int = 0
    processes: bool = False   # every node an OS process over loopback TCP (real time: slow)


def config_for(opts: DefinedRunOptions, sc: Scenario, seed: int) -> SimConfig:
    return SimConfig(mode=opts.mode, ordering=opts.ordering, seed=seed, horizon=sc.horizon, jitter=opts.jitter)


def run_many(opts: DefinedRunOptions, on_run: Callable[[int, RunResult], None] | None = None) -> dict:
    """Run, compare, write ``trace.jsonl`` (run 0) and ``result.json``; return the summary.

    A KeyboardInterrupt stops after the current run; the summary of the runs
    done so far is still written, with ``interrupted: true``.
    """
    if opts.runs < 1:
        raise NetsleuthError(f"--runs must be at least 1, got {opts.runs}", "pass --runs 50")
    if not 0.0 <= opts.jitter < 1.0:
        raise NetsleuthError(f"--jitter must be in [0, 1), got {opts.jitter}",
                             "pass e.g. --jitter 0.5 (delay = mean * U(0.5, 1.5))")
    sc = build(opts.scenario, opts.topo, opts.variant, opts.scenario_seed)
    if opts.out is not None:
        opts.out.mkdir(parents=True, exist_ok=True)
    seqs: dict[str, set[str]] = {n: set() for n in sc.net.nodes}
    tables: set[str] = set()
    whole: set[str] = set()
    bug_runs = 0
    done = 0
    interrupted = False
    totals: dict[str, int] = {}
    first: RunResult | None = None
    started = time.perf_counter()
    try:
        for i in range(opts.runs):
            cfg = config_for(opts, sc, opts.seed + i)
            if opts.processes:
                from netsleuth.defined.procs import run_processes
                r = run_processes(sc, cfg)
            else:
                r = simulate(sc.net, sc.factory, sc.externals, cfg)
            r.bug = bool(sc.bug(r.states))
            for n, seq in r.deliveries.items():
                seqs[n].add(json.dumps(seq))
            tables.add(json.dumps(r.routes, sort_keys=True))
            whole.add(json.dumps(r.deliveries, sort_keys=True))
            bug_runs += r.bug
            for k, v in r.totals().items():
                totals[k] = totals.get(k, 0) + v
            if first is None:
                first = r
                if opts.out is not None:
                    write_run(opts.out / "trace.jsonl", sc, cfg, opts.topo, r)
            done += 1
            if on_run:
                on_run(i, r)
    except KeyboardInterrupt:
        interrupted = True
    per_node = {n: len(s) for n, s in seqs.items()}
    summary = {
        "scenario": sc.name, "variant": sc.params.get("variant"), "topology": sc.net.spec,
        "nodes": len(sc.net.nodes), "mode": opts.mode, "processes": opts.processes,
        "ordering": opts.ordering if opts.mode == "rb" else "arrival",
        "seed": opts.seed, "runs": done, "requested_runs": opts.runs, "interrupted": interrupted,
        "distinct_delivery_sequences": max(per_node.values()) if done else 0,
        "distinct_delivery_sequences_per_node": per_node,
        "distinct_executions": len(whole), "distinct_routing_tables": len(tables),
        "bug_runs": bug_runs, "bug": sc.bug_words,
        "per_run_mean": {k: v / max(done, 1) for k, v in sorted(totals.items())},
        "seconds": round(time.perf_counter() - started, 3),
    }
    if first is not None:
        summary["first_run"] = {"routes": first.routes, "bug": first.bug, "externals": first.externals}
        if opts.mode == "rb":
            ls = Lockstep(sc.net, sc.factory, first.externals, ordering=opts.ordering, horizon=sc.horizon)
            ls.run()
            summary["ls_reproduces_first_run"] = ls.deliveries() == first.deliveries and ls.routes() == first.routes
    if opts.out is not None:
        (opts.out / "result.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return summary
