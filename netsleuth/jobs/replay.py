"""`netsleuth replay TRACE`: re-run a trace's inputs against a fresh network and controller.

Inputs keep their recorded spacing. Before each input the replayer waits
until the internal events that preceded it in the original have happened
again (matched by fingerprint, see schedulers/replay.py) or their time ran
out (recorded gap + epsilon). At the end the trace's target violation (its
first persistent one, or the one chosen) is checked for the same number of
rounds it had to persist. The minimizer calls :func:`replay_once` with
subsequences of the inputs.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netsleuth.controllers.external import ControllerProcess
from netsleuth.controllers.spec import check_trace_spec, controllers_for_trace
from netsleuth.errors import TraceFormatError
from netsleuth.invariants import registry
from netsleuth.live.driver import Runtime
from netsleuth.live.ready import Warmup
from netsleuth.live.rest import ControllerSampler, RestJudge, network_settled
from netsleuth.live.session import JobProgress, Session, SilentProgress
from netsleuth.live.stop import stopped_by
from netsleuth.localize.collect import write_replay_coverage
from netsleuth.model.switch_io import SwitchLimits
from netsleuth.model.topology import Topology
from netsleuth.options import check_out_dir
from netsleuth.schedulers.peek import observed_key
from netsleuth.schedulers.replay import KEEPALIVE, Matcher, ReplayPlan
from netsleuth.trace import schema as ts
from netsleuth.trace.controller_spec import ControllerSpec
from netsleuth.trace.io import read_trace
from netsleuth.world.rebuild import trace_openflow


@dataclass(frozen=True)
class Target:
    """The violation a replay must reproduce."""

    invariant: str
    hosts: tuple[str, ...]
    switches: tuple[str, ...]
    message: str = ""
    group: tuple[str, ...] = ()   # the grouped identity (a loop's cycle, a blackhole's rule, ...)
    details: dict = field(default_factory=dict, compare=False)   # the violation's details, to print it

    def found_in(self, findings: list[Any]) -> bool:
        for f in findings:
            if f.invariant != self.invariant:
                continue
            fg = tuple((f.get("details", {}) if isinstance(f, dict) else f.details).get("group") or ())
            if self.group and fg:
                if fg == self.group:  # the same defect, whichever hosts it reaches this time
                    return True
            elif self.invariant == "dataplane-loops":  # a loop may be entered at another hop
                if set(f.switches) & set(self.switches):
                    return True
            elif tuple(f.hosts) == self.hosts and tuple(f.switches) == self.switches:
                return True
        return False

    def to_json(self) -> dict:
        return {"invariant": self.invariant, "hosts": list(self.hosts), "switches": list(self.switches),
                "message": self.message, "group": list(self.group), "details": self.details}


def find_target(events: list[ts.Event], index: int = 0) -> Target | None:
    """The trace's ``index``-th persistent violation (0: the first), or None."""
    found = [e for e in events if isinstance(e, ts.Violation) and e.persistent]
    if not found:
        return None
    if index >= len(found):
        raise TraceFormatError(f"the trace has {len(found)} persistent violation(s), not {index + 1}",
                               f"pick --violation between 0 and {len(found) - 1}")
    v = found[index]
    return Target(v.invariant, tuple(v.hosts), tuple(v.switches), v.message, tuple(v.details.get("group") or ()),
                  dict(v.details))


DELIVERY_GRACE = 1.0  # seconds: Network.undelivered's default grace
REACTION_CAP = 10.0  # seconds: the longest a replay waits after its last input for the controller to react
ANSWER_QUIET = 0.03  # seconds without a controller message that count as its answer to an input being complete
REACTION_SLACK = 3.0  # seconds a replay's controller may react later than the recorded one did (a loaded machine)


def check_target_known(target: Target | None, source: str) -> None:
    """Refuse, before anything starts, a target violation of an invariant this netsleuth does not have
    (a trace from another version, an edited one): the replay could never judge it, only run for nothing."""
    if target is not None and target.invariant not in registry.REGISTRY:
        raise registry.UnknownInvariantError(
            f"{source} targets a violation of invariant '{target.invariant}', which this netsleuth does not "
            f"have (it knows {', '.join(registry.REGISTRY)})",
            "pick another violation with --violation, or replay it with the netsleuth version that recorded it")


def reaction_time(events: list[ts.Event], target: Target | None) -> float:
    """How long the recorded run took from its last input before the target violation to the violation's
    first sighting (transient or not): a replay waits that long before it judges, so a violation that
    needs time to show (a switch its controller keeps turning away) is not judged too early."""
    if target is None:
        return 0.0
    last_input = None
    for e in events:
        if e.is_input:
            last_input = e.t
        elif isinstance(e, ts.Violation) and e.invariant == target.invariant \
                and tuple(e.hosts) == target.hosts and tuple(e.switches) == target.switches:
            return min(max(0.0, e.t - last_input), REACTION_CAP) if last_input is not None else 0.0
    return 0.0


@dataclass
class ReplayOptions:
    trace: Path
    out: Path
    controller: str | list[str] | None = None
    times: int = 1
    epsilon: float = 0.5
    violation: int = 0
    persist: int | None = None
    record_packets: bool = True
    openflow: str | None = None   # None: what the trace's switches negotiated
    trust_trace_controller: bool = False  # run a cmd: controller named by the trace's header
    buffer_packets: int | None = None     # None: the trace's (its header's switch limits)
    table_size: int | None = None         # None: the trace's
    coverage: bool = False        # keep the controller's line coverage beside each replay

    def limits(self, header: ts.TraceHeader) -> SwitchLimits:
        return trace_limits(header).overridden(self.buffer_packets, self.table_size)


def trace_limits(header: ts.TraceHeader) -> SwitchLimits:
    """The switch limits (packet buffering, table size) a trace was recorded with."""
    return SwitchLimits.from_json(header.extra.get("switch"))


def trace_warmup(header: ts.TraceHeader) -> Warmup:
    """The warm-up a trace was recorded with (its bound in seconds, and whether it ended once ready)."""
    seconds, auto = header.extra.get("warmup", 0.0) or 0.0, header.extra.get("warmup_auto", False)
    if (not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not 0 <= seconds < float("inf")
            or not isinstance(auto, bool)):
        raise TraceFormatError(f"the trace header's warm-up ({seconds!r}, auto {auto!r}) is not a number of "
                               "seconds >= 0 with auto true or false",
                               "record the trace again, or fix 'warmup' / 'warmup_auto' in its first line")
    return Warmup(float(seconds), auto)


@dataclass
class ReplayOutcome:
    reproduced: bool | None
    stats: dict = field(default_factory=dict)
    seconds: float = 0.0
    findings: list[dict] = field(default_factory=list)
    observed: list[tuple] = field(default_factory=list)  # PEEK prefix replays only (observe_window)

    def to_json(self) -> dict:
        return {"reproduced": self.reproduced, "seconds": round(self.seconds, 3), **self.stats,
                "findings": self.findings}


def replay_once(header: ts.TraceHeader, events: list[ts.Event], out: Path, *,
                inputs: list[ts.InputEvent] | None = None, target: Target | None = None,
                controller: str | Sequence[str | ControllerSpec] | None = None, epsilon: float = 0.5, persist: int = 3,
                record_packets: bool = True, progress: JobProgress | None = None,
                max_gap: float | None = None, plan: ReplayPlan | None = None,
                observe_window: float | None = None, openflow: str | None = None,
                limits: SwitchLimits | None = None, coverage: bool = False,
                coverage_framework: bool = False, early_end: bool = True,
                prestarted: list[ControllerProcess] | None = None) -> ReplayOutcome:
    """One replay of ``inputs`` (default: all of the trace's) against a fresh controller.

    ``max_gap`` caps the idle time between two inputs (the happens-before
    wait still applies): a fuzz trace is mostly idle rounds, and a minimizer
    replaying it dozens of times need not sit through them.
    ``plan`` replaces the expectations derived from the trace (PEEK's
    inferred plan, schedulers/peek.py; its inputs win over ``inputs``).
    ``observe_window``: a PEEK prefix replay -- after the last input, record
    the internal events delivered for this many seconds into
    ``outcome.observed`` and check no invariants.
    ``coverage``: measure the controller's lines after the handshakes and
    keep them beside the replay with its verdict (``coverage.json``);
    ``coverage_framework`` measures the framework's too (slower).
    ``early_end``: a replay whose target has not shown ends once the network is at rest past the
    recorded reaction time (live/rest.py) instead of waiting out the slack for a loaded machine.
    ``prestarted``: the controllers, already listening with their logs in ``out`` (live/spare.py).
    """
    plan = plan if plan is not None else ReplayPlan.from_trace(events, inputs)
    # Without an explicit controller, the header's -- which must not be a command (controllers/spec.py).
    controllers = controllers_for_trace(header.controller, [controller] if isinstance(controller, str)
                                        else controller)
    checks = sorted({"liveness", "loops", "blackholes", "reachability", "dataplane-loops"}
                    | ({target.invariant} if target else set()))
    session = Session("replay", header.topology_spec, controllers, Path(out), seed=header.seed,
                      record_packets=record_packets, checks=checks, topology=Topology.from_json(header.topology),
                      header_extra={"replay_of": header.command, "inputs": len(plan.inputs)},
                      openflow=openflow or trace_openflow(header),
                      warmup=trace_warmup(header),
                      limits=limits if limits is not None else trace_limits(header),
                      coverage_dir=Path(out) / "coverage" if coverage else None,
                      coverage_framework=coverage_framework, prestarted=prestarted)
    if coverage:  # a replay into a used folder: the lines of earlier processes are not this one's
        shutil.rmtree(Path(out) / "coverage", ignore_errors=True)
    outcome = ReplayOutcome(None)
    reaction = reaction_time(events, target)
    matcher = Matcher(plan)
    watching = [observe_window is not None and not plan.inputs]

    def watch(e: ts.Event) -> None:
        if watching[0] and isinstance(e, (ts.ControlToSwitch, ts.ControlToController)) \
                and e.msg.get("type") not in KEEPALIVE:
            outcome.observed.append(observed_key(e))

    async def body(s: Session, rt: Runtime) -> None:
        loop = asyncio.get_running_loop()
        await rt.settle(0.1)
        s.progress.phase("replaying inputs", len(plan.inputs))
        last_t, last_at = plan.start_t, loop.time()
        timeout_wait = 0.0
        for k, inp in enumerate(plan.inputs):
            recorded_gap = max(0.0, inp.t - last_t)
            gap = min(recorded_gap, max_gap) if max_gap is not None else recorded_gap
            due = last_at + gap
            while matcher.outstanding_before(k) and loop.time() < due + epsilon:
                await asyncio.sleep(0.005)
            late = matcher.outstanding_before(k)
            if late:  # the input waited past its due time for events that never came
                timeout_wait += max(0.0, loop.time() - due)
            matcher.time_out(late)
            if loop.time() < due:
                await asyncio.sleep(due - loop.time())
            if recorded_gap > gap:
                # The cap cuts idle time only: a controller still answering the last input (a pruned
                # candidate's new events are expected by nobody) is given up to the recorded gap, as the
                # recording gave it, or the next input overtakes its answer on a slow machine.
                await rt.until_answered(ANSWER_QUIET, last_at + recorded_gap)
            if observe_window is not None and k == len(plan.inputs) - 1:
                watching[0] = True
            rt.apply(await s.apply_input(inp))
            last_t, last_at = inp.t, loop.time()
            s.progress.advance(k + 1)
        if observe_window is not None:
            await asyncio.sleep(observe_window)
            outcome.stats = {**matcher.stats(), "timeout_wait_s": round(timeout_wait, 3)}
            return
        await rt.settle(quiet=0.05, timeout=2.0)
        if "delivery" in checks:
            # a packet counts as undelivered only after the grace period: give the last one that long
            await asyncio.sleep(DELIVERY_GRACE)
        invariants = registry.resolve(checks)
        # The target must hold for ``persist`` consecutive rounds, as it did when recorded; it may take
        # as long to show as the recorded run took to react to its last input (plus some slack).
        # The slack is for a controller slowed by a loaded machine: a network at rest (live/rest.py)
        # has nothing left to show, so once past the recorded reaction time the replay ends there.
        deadline = last_at + reaction + REACTION_SLACK
        rest, sampler = RestJudge(), ControllerSampler(s.controllers) if early_end else None
        streak, n_rounds, last = 0, 0, []
        while True:
            await asyncio.sleep(0.1)
            quiet = await rt.settle(quiet=0.03, timeout=1.0)
            s.note_controller_deaths()
            s.observed.poll()
            findings = registry.check(s.world.view(), invariants)
            findings += [v for v in s.world.observed_violations if v.invariant == "dataplane-loops"]
            findings += s.observed.found()
            last, n_rounds = findings, n_rounds + 1
            streak = streak + 1 if target is not None and target.found_in(findings) else 0
            at_rest = sampler is not None and rest.update(loop.time(), sampler.sample(),
                                                          quiet and network_settled(s.world, deadline - loop.time()))
            if streak >= max(1, persist):
                break
            if n_rounds >= max(1, persist) and (loop.time() >= deadline or (
                    at_rest and streak == 0 and loop.time() >= last_at + reaction)):
                outcome.stats["ended_at_rest"] = loop.time() < deadline
                break
        for f in last:
            if not isinstance(f, ts.Violation):
                s.record_finding(f, persistent=True)
        if target is not None:
            outcome.reproduced = streak >= max(1, persist)
        outcome.stats = {**matcher.stats(), "timeout_wait_s": round(timeout_wait, 3),
                         "judge_rounds": n_rounds, **outcome.stats}
        outcome.findings = [{"invariant": f.invariant, "message": f.message, "hosts": list(f.hosts),
                             "switches": list(f.switches), "details": dict(f.details)} for f in last]

    try:
        result = session.execute(body, progress, observers=(matcher.observe, watch))
    finally:
        if coverage:  # the controllers have stopped: their lines are on disk
            write_replay_coverage(Path(out), outcome.reproduced, len(plan.inputs))
    outcome.seconds = result.data.get("seconds", 0.0)
    crashed_on_purpose = {e.controller for e in plan.inputs if isinstance(e, ts.ControllerCrash)}
    died = [f"controller {c['name']} ({c['spec']}) exited with code {c['exit_code']} during the replay; "
            f"see {c['log']}" for c in result.data.get("controllers", [])
            if not c["alive"] and c["name"] not in crashed_on_purpose]
    if died:
        outcome.stats["controller_died"] = died
    return outcome


def replay(opts: ReplayOptions, progress: JobProgress | None = None) -> dict:
    """``netsleuth replay``: ``times`` replays; result.json with the reproduction rate."""
    progress = progress or SilentProgress()
    check_out_dir(opts.out)
    trace = read_trace(opts.trace)
    controllers = controllers_for_trace(trace.header.controller, opts.controller if not isinstance(
        opts.controller, str) else [opts.controller], trust=opts.trust_trace_controller, source=str(opts.trace))
    nice = trace.header.extra.get("nice")
    if isinstance(nice, dict) and isinstance(nice.get("app"), str):  # the model checker's app spec
        check_trace_spec(nice["app"], str(opts.trace), trust=opts.trust_trace_controller)
    if controllers[0].in_model and opts.controller is None:
        # A model-checking counterexample: re-execute it deterministically in-process.
        from netsleuth.nice.job import replay_counterexample
        data = replay_counterexample(trace, times=opts.times)
        data["trace"] = str(opts.trace)
        Path(opts.out).mkdir(parents=True, exist_ok=True)
        (Path(opts.out) / "replay.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        return data
    target = find_target(trace.events, opts.violation)
    check_target_known(target, str(opts.trace))
    persist = opts.persist or int(trace.header.extra.get("persist", 3) or 3)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    data = {"command": "replay", "trace": str(opts.trace),
            "target": target.to_json() if target else None,
            "inputs": sum(1 for e in trace.events if e.is_input), "replays": []}
    try:
        for i in range(opts.times):
            sub = out if opts.times == 1 else out / f"replay-{i + 1}"
            o = replay_once(trace.header, trace.events, sub, target=target, controller=controllers,
                            epsilon=opts.epsilon, persist=persist, record_packets=opts.record_packets,
                            progress=progress, openflow=opts.openflow, limits=opts.limits(trace.header),
                            coverage=opts.coverage)
            data["replays"].append(o.to_json())
        data["completed"] = True
    except KeyboardInterrupt:
        data["completed"] = False
        data["stopped_by"] = stopped_by()
        raise
    finally:
        done = [r for r in data["replays"] if r["reproduced"] is not None]
        data["reproduced"] = any(r["reproduced"] for r in done) if done else None
        data["reproduction_rate"] = (sum(1 for r in done if r["reproduced"]) / len(done)) if done else None
        (out / "replay.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return data
