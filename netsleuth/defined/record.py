"""A DEFINED run on disk: the trace of external events that LS replays.

It is a netsleuth v1 trace (JSON Lines, :mod:`netsleuth.trace.io`): the
header's ``extra`` holds what rebuilds the run -- scenario, variant,
topology spec, scenario seed, beacon interval, horizon, hop bound, the
ordering and send tie-breaker RB used -- and every event line is a ``defined_external``: the
node, the group RB stamped, the origin sequence and the event. Nothing
internal is recorded: that is the point of DEFINED.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from netsleuth import __version__
from netsleuth.defined.node_runtime import TIEBREAKS
from netsleuth.defined.scenarios import Scenario, build
from netsleuth.defined.sim import RunResult, SimConfig
from netsleuth.errors import TraceFormatError
from netsleuth.trace.controller_spec import ControllerSpec, Kind
from netsleuth.trace.io import TraceWriter, read_trace
from netsleuth.trace.schema import DefinedExternal, TraceHeader


def write_run(path: str | os.PathLike[str], sc: Scenario, cfg: SimConfig, topo: str | None,
              result: RunResult) -> None:
    header = TraceHeader(
        topology=sc.net.to_json(), topology_spec=sc.net.spec, seed=cfg.seed,
        controller=str(ControllerSpec(Kind.DEFINED, name=sc.name)),
        tool_version=__version__, command="defined run",
        extra={"defined": {"scenario": sc.name, "variant": sc.params.get("variant"), "topo": topo,
                           "scenario_seed": sc.params.get("scenario_seed", 0), "mode": cfg.mode,
                           "ordering": cfg.ordering, "interval": cfg.interval, "horizon": cfg.horizon,
                           "hop_bound": cfg.hop_bound, "tiebreak": cfg.tiebreak}})
    with TraceWriter(path, header) as w:
        for i, x in enumerate(result.externals):
            w.write(DefinedExternal(seq=i, t=float(x["t"]), id=f"x{i}", node=x["node"], group=int(x["group"]),
                                    oseq=int(x["oseq"]), event=x["event"]))


@dataclass
class LoadedRun:
    scenario: Scenario
    externals: list[dict]
    horizon: int
    interval: float
    hop_bound: int
    ordering: str
    mode: str
    tiebreak: str = "send-order"


def load_run(path: str | os.PathLike[str]) -> LoadedRun:
    """Read a run written by :func:`write_run`; anything else is a clear TraceFormatError."""
    tr = read_trace(path)
    meta = tr.header.extra.get("defined")
    if not isinstance(meta, dict) or "scenario" not in meta:
        raise TraceFormatError(f"{path} is not a DEFINED run (its header has no extra.defined)",
                               "record one with: netsleuth defined run --scenario bgp-med --runs 1 --out DIR")
    sc = build(meta["scenario"], meta.get("topo"), meta.get("variant"), int(meta.get("scenario_seed") or 0))
    ext = []
    for ev in tr.events:
        if not isinstance(ev, DefinedExternal):
            raise TraceFormatError(f"{path}: event {ev.seq} is a {ev.kind}, not defined_external",
                                   "pass the trace.jsonl written by netsleuth defined run")
        ext.append({"node": ev.node, "group": ev.group, "oseq": ev.oseq, "event": ev.event, "t": ev.t})
    # Runs recorded before the header named the tie-breaker used the original hash scheme.
    tiebreak = str(meta.get("tiebreak", "hash"))
    if tiebreak not in TIEBREAKS:
        raise TraceFormatError(f"{path}: unknown send tie-breaker {tiebreak!r} in the header",
                               f"use one of: {', '.join(TIEBREAKS)}")
    return LoadedRun(sc, ext, int(meta["horizon"]), float(meta["interval"]), int(meta.get("hop_bound", 64)),
                     str(meta.get("ordering", "defined")), str(meta.get("mode", "rb")),
                     tiebreak)
