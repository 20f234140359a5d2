"""`netsleuth run`: bootstrap a mock network against a real controller, ping, check.

This is the job the CLI and the tests call: it owns the order of things
(start the controller, connect every switch, wait for the handshakes,
pingall, check invariants) and the guarantee that whatever happens
(a controller that dies, Ctrl-C, a handshake that never completes) the trace
and result recorded so far are on disk. It prints nothing; progress goes to
the ``Progress`` callbacks the caller passes.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from netsleuth import __version__
from netsleuth.controllers.external import ControllerProcess
from netsleuth.controllers.spec import parse_controller
from netsleuth.core.clock import WallClock
from netsleuth.core.world import Recorder, World
from netsleuth.errors import ControllerError, NetsleuthError
from netsleuth.invariants import registry
from netsleuth.model.topology import parse_topo
from netsleuth.runtime.driver import PingResult, Runtime
from netsleuth.trace import schema as ts
from netsleuth.trace.io import TraceWriter


class Progress(Protocol):
    def phase(self, name: str, total: int | None) -> None: ...
    def advance(self, completed: int) -> None: ...
    def note(self, text: str) -> None: ...


class _Silent:
    def phase(self, name: str, total: int | None) -> None:
        pass

    def advance(self, completed: int) -> None:
        pass

    def note(self, text: str) -> None:
        pass


@dataclass
class RunOptions:
    controller: str | list[str]   # one spec, or several: every switch connects to each
    topo: str
    out: Path
    pingall: bool = False
    checks: str | None = None
    handshake_timeout: float = 60.0
    ping_timeout: float = 2.0
    seed: int = 0
    record_packets: bool = True
    settle: float = 0.3


@dataclass
class RunResult:
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def violations(self) -> list[dict]:
        return self.data.get("violations", [])

    @property
    def exit_code(self) -> int:
        return 1 if self.violations else 0


def _violation_json(v: Any) -> dict:
    return {"invariant": v.invariant, "message": v.message, "persistent": v.persistent,
            "hosts": list(v.hosts), "switches": list(v.switches), "details": v.details}


def run(opts: RunOptions, progress: Progress | None = None) -> RunResult:
    """Run the whole job; raises NetsleuthError (exit 2) after writing what it recorded."""
    progress = progress or _Silent()
    topo = parse_topo(opts.topo)
    texts = [opts.controller] if isinstance(opts.controller, str) else list(opts.controller)
    specs = [parse_controller(t) for t in texts]
    invariants = registry.resolve(opts.checks)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    result = RunResult({
        "command": "run", "tool_version": __version__, "topology": opts.topo,
        "controller": " + ".join(texts), "switches": len(topo.switches), "hosts": len(topo.hosts),
        "checks": [i.name for i in invariants], "completed": False,
    })
    controllers = [ControllerProcess(spec, out / ("controller.log" if i == 0 else f"controller-c{i}.log"),
                                     name=f"c{i}") for i, spec in enumerate(specs)]
    header = ts.TraceHeader(topology=topo.to_json(), topology_spec=opts.topo, controller=result.data["controller"],
                            seed=opts.seed, tool_version=__version__, command="run")
    clock = WallClock()
    started = time.monotonic()
    with TraceWriter(out / "trace.jsonl", header) as writer:
        recorder = Recorder(clock, writer.write)
        world = World(topo, clock, recorder, record_packets=opts.record_packets)
        try:
            progress.phase("starting controller", None)
            endpoints = {}
            for c in controllers:
                endpoints[c.name] = c.start()
                recorder(ts.ControllerEvent, controller=c.name, what="started",
                         detail=f"{c.spec.text} on {c.host}:{c.port}")
            asyncio.run(_drive(world, controllers, endpoints, opts, invariants,
                               result, recorder, progress))
            result.data["completed"] = True
        except KeyboardInterrupt:
            result.data["interrupted"] = True
            raise
        finally:
            _finish(result, world, controllers, recorder, started)
            (out / "result.json").write_text(json.dumps(result.data, indent=2, sort_keys=True) + "\n")
            for c in controllers:
                c.stop()
    return result


async def _drive(world: World, controllers: list[ControllerProcess], endpoints: dict[str, tuple[str, int]],
                 opts: RunOptions, invariants: list, result: RunResult, recorder: Recorder,
                 progress: Progress) -> None:
    rt = Runtime(world, endpoints)
    try:
        t0 = time.monotonic()
        n_conn = len(world.topology.switches) * len(endpoints)
        progress.phase("connecting switches", n_conn)
        await rt.start(progress.advance)
        progress.phase("handshakes", n_conn)
        done = await rt.wait_handshake(opts.handshake_timeout, progress.advance)
        result.data["bootstrap"] = {"connected": done, "expected": n_conn,
                                    "seconds": round(time.monotonic() - t0, 3)}
        if done < n_conn:
            for controller in controllers:
                if not controller.alive():
                    raise ControllerError(f"controller {controller.spec.text} exited (code "
                                          f"{controller.exit_code()}) during the handshake",
                                          f"see its log {controller.log_path}", details=controller.log_tail())
            controller = controllers[0]
            why = f" ({rt.protocol_errors[0]})" if rt.protocol_errors else ""
            raise ControllerError(f"{n_conn - done} of {n_conn} switches never completed the OpenFlow "
                                  f"handshake{why}",
                                  f"check that the controller speaks OpenFlow 1.0; see {controller.log_path}",
                                  details=controller.log_tail())
        await rt.settle(opts.settle)
        if opts.pingall:
            pairs = len(world.topology.hosts) * (len(world.topology.hosts) - 1)
            progress.phase("pingall", pairs)
            results: list[PingResult] = []

            failed: list[str] = []

            def on_ping(r: PingResult) -> None:
                results.append(r)
                recorder(ts.PingResult, src=r.src, dst=r.dst, ok=r.ok, rtt=r.rtt)
                if not r.ok:
                    failed.append(f"{r.src}->{r.dst}")
                # kept current so an interrupted run still reports the pings done so far
                result.data["pingall"] = {"ok": len(results) - len(failed), "failed": len(failed),
                                          "failed_pairs": list(failed), "pairs": pairs}
                progress.advance(len(results))

            await rt.pingall(opts.ping_timeout, on_ping)
            await rt.settle(opts.settle)
        progress.phase("checking invariants", None)
        for controller in controllers:
            world.set_controller_alive(controller.name, controller.alive())
        for f in registry.check(world.view(), invariants):
            v = recorder(ts.Violation, invariant=f.invariant, message=f.message, persistent=True,
                         hosts=f.hosts, switches=f.switches, details=f.details)
            world.observed_violations.append(v)
    finally:
        await rt.close()


def _finish(result: RunResult, world: World, controllers: list[ControllerProcess], recorder: Recorder,
            started: float) -> None:
    wanted = set(result.data.get("checks", []))
    result.data["violations"] = [_violation_json(v) for v in world.observed_violations
                                 if v is not None and v.invariant in wanted]
    statuses = []
    for c in controllers:
        errors = c.log_errors()
        for e in errors:
            recorder(ts.ControllerEvent, controller=c.name, what="log_error", detail=e)
        statuses.append({"name": c.name, "spec": c.spec.text, "alive": c.alive(), "exit_code": c.exit_code(),
                         "log": str(c.log_path), "logged_errors": errors})
    result.data["controllers"] = statuses
    s = world.stats
    result.data["stats"] = {"events_fired": s.fired, "to_switch": s.to_switch,
                            "to_controller": s.to_controller, "packets": s.packets,
                            "dropped_packets": s.dropped_packets, "loop_drops": s.loop_drops,
                            "trace_events": recorder.seq}
    result.data["seconds"] = round(time.monotonic() - started, 3)
    result.data.setdefault("pingall", None)


__all__ = ["run", "RunOptions", "RunResult", "NetsleuthError"]
