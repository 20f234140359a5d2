"""`netsleuth run`: bootstrap a mock network against a real controller, ping, check.

The set-up, bootstrap and the guarantee that trace and result survive any
ending are the Session's; this job adds pingall (one ping at a time, as
Mininet's pingall does) and one invariant check at the end. It prints
nothing; progress goes to the callbacks the caller passes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from netsleuth.invariants import registry
from netsleuth.jobs.ping_why import explain
from netsleuth.live.driver import PingOutcome, Runtime
from netsleuth.live.ready import ReadyCondition, Warmup
from netsleuth.live.session import JobProgress, JobResult, Session
from netsleuth.model.switch_io import SwitchLimits
from netsleuth.trace import schema as ts
from netsleuth.world.fates import FateLog

RunResult = JobResult


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
    isolation: Path | None = None
    openflow: str = "auto"
    warmup: float | str | Warmup = 0.0  # seconds, or "auto" (see live/ready.py)
    limits: SwitchLimits = field(default_factory=SwitchLimits)
    warmup_ready: ReadyCondition | None = None   # ends the warm-up early (see live/ready.py)


def run(opts: RunOptions, progress: JobProgress | None = None) -> JobResult:
    """Run the whole job; raises NetsleuthError (exit 2) after writing what it recorded."""
    invariants = registry.resolve(opts.checks)
    session = Session("run", opts.topo, opts.controller, Path(opts.out), seed=opts.seed,
                      record_packets=opts.record_packets, handshake_timeout=opts.handshake_timeout,
                      checks=[i.name for i in invariants], isolation=opts.isolation,
                      openflow=opts.openflow, warmup=opts.warmup, limits=opts.limits,
                      warmup_ready=opts.warmup_ready)
    session.result.data.setdefault("pingall", None)

    async def body(s: Session, rt: Runtime) -> None:
        await rt.settle(opts.settle)
        if opts.pingall:
            await _pingall(s, rt, opts)
            await rt.settle(opts.settle)
        s.progress.phase("checking invariants", None)
        for c in s.controllers:
            s.world.set_controller_alive(c.name, c.alive())
        for f in registry.check(s.world.view(), invariants):
            s.record_finding(f, persistent=True)

    return session.execute(body, progress)


async def _pingall(s: Session, rt: Runtime, opts: RunOptions) -> None:
    hosts = s.world.topology.hosts
    pairs = len(hosts) * (len(hosts) - 1)
    s.progress.phase("pingall", pairs)
    results: list[PingOutcome] = []
    failed: list[str] = []
    why: dict[str, dict] = {}
    expected: list[str] = []
    # explain failed pings: what became of each frame, and the ERRORs switches answered with
    s.world.fates = FateLog()
    if s.world.rejections is None:
        s.world.rejections = []
    since = [s.world.clock.now()]

    def on_ping(r: PingOutcome) -> None:
        results.append(r)
        s.recorder(ts.PingResult, src=r.src, dst=r.dst, ok=r.ok, rtt=r.rtt)
        if not r.ok:
            pair = f"{r.src}->{r.dst}"
            failed.append(pair)
            apart = s.world.separated()
            if (r.src, r.dst) in apart or (r.dst, r.src) in apart:
                # the controller's own configuration keeps them apart (VLANs, an ACL; a ping needs both
                # directions): expected, not a failure
                a, b = (r.src, r.dst) if (r.src, r.dst) in apart else (r.dst, r.src)
                expected.append(pair)
                why[pair] = {"cause": "separated", "frame": "", "why": f"the controller's configuration keeps "
                             f"{a}'s traffic from {b} on purpose (different VLANs, or an ACL)"}
            else:
                for c in s.controllers:
                    s.world.set_controller_alive(c.name, c.alive())
                why[pair] = explain(s.world, r.src, r.dst, since[0]).to_json()
        since[0] = s.world.clock.now()
        # kept current so an interrupted run still reports the pings done so far
        s.result.data["pingall"] = {"ok": len(results) - len(failed), "failed": len(failed),
                                    "failed_pairs": list(failed), "pairs": pairs, "failed_why": dict(why),
                                    "failed_on_purpose": list(expected)}
        s.progress.advance(len(results))

    await rt.pingall(opts.ping_timeout, on_ping)
    s.world.fates = None


__all__ = ["run", "RunOptions", "RunResult"]
