"""Stepping a trace against a real controller: ``netsleuth step TRACE`` without ``--headless``.

A fresh controller (the trace's, or ``--controller``) is started and the
mock network bootstrapped as in a replay (live/session.py). A step injects
the trace's next *input* -- after the control messages that preceded it in
the recording have come back, matched by fingerprint (schedulers/replay.py,
the replayer's happens-before rule) or a short wait ran out -- and lets the
network and the controller run until quiet. What the controller did in
response is printed as the step's events, so an injected what-if input
(link failure, traffic, migration) meets the real controller's reaction.

The network lives on an asyncio loop in a background thread
(live/background.py); the console stays synchronous. Every access to the World --
steps, checks, and the console's reads for rendering -- runs *on that loop*
(:meth:`LiveStepper.read`), so the console never sees a state the runtime is
halfway through changing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from netsleuth.controllers.spec import controllers_for_trace
from netsleuth.invariants import registry
from netsleuth.invariants.forwarding import Finding
from netsleuth.live.background import BackgroundSession
from netsleuth.live.driver import Runtime
from netsleuth.live.session import Session
from netsleuth.model.topology import Topology
from netsleuth.rootcause.stack_state import StackWatch
from netsleuth.rootcause.stepper import EventFilter, Injected, StepError, StepperBase, inject_into
from netsleuth.schedulers.replay import Matcher, ReplayPlan
from netsleuth.trace import schema as ts
from netsleuth.world.rebuild import trace_openflow

R = TypeVar("R")

HB_WAIT = 0.5  # seconds to wait for the messages that preceded an input in the recording


class LiveStepper(StepperBase):
    """The trace's inputs injected one by one into a network driven by a real controller."""

    unit = "inputs"

    def __init__(self, trace: ts.Trace, out: Path, controller: list[str] | None = None,
                 *, drain_limit: int = 10_000, trust_trace_controller: bool = False,
                 openflow: str | None = None) -> None:
        self.trace = trace
        self.out = Path(out)
        self.filter = EventFilter()
        self.drain_limit = drain_limit
        self.target = next((e for e in trace.events if isinstance(e, ts.Violation) and e.persistent), None)
        self.plan = ReplayPlan.from_trace(trace.events)
        self.matcher = Matcher(self.plan)
        self.pos = 0                                   # inputs applied so far
        self.injected: list[tuple[int, ts.Event]] = []
        self._seen: list[ts.Event] = []                # events of the live run since the last command
        self._stack = StackWatch(by_dpid={s.dpid: s.name for s in Topology.from_json(trace.header.topology).switches})
        h = trace.header
        # the header's controller only if it is no command, or the user trusts it (controllers/spec.py)
        controllers = controllers_for_trace(h.controller, controller, trust=trust_trace_controller)
        self.session = Session("step", h.topology_spec, controllers, self.out,
                               seed=h.seed, record_packets=True, checks=list(registry.DEFAULT),
                               topology=Topology.from_json(h.topology), header_extra={"step_of": h.command},
                               openflow=openflow or trace_openflow(h))
        self.network = BackgroundSession(self.session, observers=(self.matcher.observe, self._seen.append,
                                                                    self._stack.observe),
                                         on_ready=self._ready, stopped=self._stopped,
                                         name="netsleuth-step-network")
        self.loop, self.rt, self.world = self.network.loop, self.network.rt, self.network.world

    async def _ready(self, s: Session, rt: Runtime) -> None:
        await rt.settle(0.1)
        self._seen.clear()

    def _stopped(self) -> StepError:
        return StepError("the network stopped (the controller exited?)",
                         f"see {self.out / 'controller.log'} and start `netsleuth step` again")

    def _call(self, coro_fn: Callable[[], Any]) -> Any:
        return self.network.call(coro_fn)

    def read(self, fn: Callable[..., R], *args: Any) -> R:
        """Run ``fn`` on the network's loop, between two of its events (for consistent reads)."""
        return self.network.read(fn, *args)

    def close(self) -> None:
        """Stop the network and the controller; the live trace stays in ``out``."""
        self.network.close()

    # ------------------------------------------------------------ position
    @property
    def total(self) -> int:
        return len(self.plan.inputs)

    @property
    def done(self) -> bool:
        return self.pos >= len(self.plan.inputs)

    def restart(self) -> None:
        raise StepError("restart needs a fresh controller",
                        "quit and run `netsleuth step` again (or step headlessly with --headless)")

    def peek(self, n: int = 1, filt: EventFilter | None = None) -> list[ts.Event]:
        filt = filt or EventFilter()
        upcoming: list[ts.Event] = [e for e in self.plan.inputs[self.pos:] if filt.matches(e)]
        return upcoming[:n]

    async def _step(self) -> None:
        k = self.pos
        loop = asyncio.get_running_loop()
        deadline = loop.time() + HB_WAIT
        while self.matcher.outstanding_before(k) and loop.time() < deadline:
            await asyncio.sleep(0.005)
        self.matcher.time_out(self.matcher.outstanding_before(k))
        self.rt.apply(await self.session.apply_input(self.plan.inputs[k]))
        self.rt.kick()
        self.pos += 1
        await self.rt.settle(quiet=0.05, timeout=3.0)

    def stack_watch(self) -> StackWatch:
        """The LLDP beacons of the live run so far (its own, not the trace's)."""
        return self._stack

    def _drain_seen(self) -> list[ts.Event]:
        out, self._seen[:] = list(self._seen), []
        return out

    def step_n(self, n: int, filt: EventFilter | None = None) -> list[ts.Event]:
        """Inject ``n`` more inputs; return the live events (that ``filt`` accepts) they caused."""
        filt = filt or self.filter

        async def go() -> list[ts.Event]:
            self._drain_seen()
            for _ in range(n):
                if self.done:
                    break
                await self._step()
            return [e for e in self._drain_seen() if filt.matches(e)]
        return self._call(go)

    def run_until(self, stop_before: Callable[[ts.Event], bool]) -> ts.Event | None:
        async def go() -> ts.Event | None:
            while not self.done:
                nxt = self.plan.inputs[self.pos]
                if stop_before(nxt):
                    return nxt
                await self._step()
            return None
        return self._call(go)

    def until_violation(self, invariants: list[registry.Invariant]) -> tuple[ts.Event | None, list[Finding]]:
        async def go() -> tuple[ts.Event | None, list[Finding]]:
            last = self.plan.inputs[self.pos - 1] if self.pos else None
            findings = self._check(invariants)
            while not findings and not self.done:
                await self._step()
                last = self.plan.inputs[self.pos - 1]
                findings = self._check(invariants)
            return last, findings
        return self._call(go)

    # ------------------------------------------------------------ state
    def _check(self, invariants: list[registry.Invariant]) -> list[Finding]:
        self.session.note_controller_deaths()
        return registry.check(self.world.view(), [i for i in invariants if i.check is not None])

    def check(self, invariants: list[registry.Invariant]) -> list[Finding]:
        return self.read(self._check, invariants)

    def inject(self, kind: str, args: list[str]) -> Injected:
        """Apply a what-if input on the live network, let the controller react, return what happened."""
        async def go() -> Injected:
            self._drain_seen()
            effects = inject_into(self.world, kind, args)
            self.rt.apply(effects)
            self.rt.kick()
            await self.rt.settle(quiet=0.05, timeout=3.0)
            return Injected(self._drain_seen())
        got = self._call(go)
        self.injected.extend((self.pos, e) for e in got.events if e.is_input)
        return got
