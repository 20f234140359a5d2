"""A live network for a test: a real controller in its own process, driven step by step.

`LiveNetwork` is what the pytest fixture `netsleuth_network` hands a test,
and a context manager for code without the fixture. It is the runtime every
command uses (live/session.py: controllers, trace, World, bootstrap) run
in a background thread (live/background.py), with one synchronous method
per thing a test does: ping, send, fail and recover links and switches,
move hosts, crash and restart the controller, settle, check invariants.
Each of them applies the World's input (recorded in the trace with its
dependencies) and then lets the network and the controller run until quiet,
so the next line of the test sees the controller's reaction.

The controller never outlives the handle: :meth:`close` (the fixture's
teardown, the ``with`` block's end) stops it; handles a test forgot are
closed when the interpreter exits; and should the test process die outright,
the guard process each controller runs under takes it down.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shlex
import tempfile
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from netsleuth.errors import NetsleuthError
from netsleuth.invariants import registry
from netsleuth.invariants.forwarding import Finding
from netsleuth.jobs.violations import violation_block
from netsleuth.live.background import BackgroundSession
from netsleuth.live.driver import PingOutcome, Runtime
from netsleuth.live.findings import OBSERVED
from netsleuth.live.session import Session
from netsleuth.testing.inputs import TRAFFIC_KINDS, NetworkInput
from netsleuth.trace import schema as ts

R = TypeVar("R")

#: the environment variable that replaces the controller every test names (set by --netsleuth-controller)
CONTROLLER_OVERRIDE = "NETSLEUTH_TEST_CONTROLLER"

_LIVE: set[LiveNetwork] = set()      # handles not closed yet: closed at interpreter exit
OPENED: list[LiveNetwork] = []       # handles a test opened, in order: the pytest plugin reports them on failure


class NetworkUseError(NetsleuthError):
    """A test asked the live network for something it cannot do (unknown host, no such link, ...)."""


def resolve_controller(controller: str | list[str] | None) -> str | list[str]:
    """The controller to run: ``--netsleuth-controller`` (via its variable) wins over the test's own."""
    override = os.environ.get(CONTROLLER_OVERRIDE)
    if override:
        return override
    if not controller:
        raise NetworkUseError("no controller to test",
                               "pass controller='osken:APP' (or any --controller spec), mark the test "
                               "@pytest.mark.netsleuth(controller=...), or run pytest --netsleuth-controller SPEC")
    return controller


@dataclass(frozen=True)
class PingallResult:
    """Every host pinged every other; true when all of them answered."""

    outcomes: tuple[PingOutcome, ...]
    failed: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "failed", tuple(f"{o.src}->{o.dst}" for o in self.outcomes if not o.ok))

    @property
    def ok(self) -> int:
        return len(self.outcomes) - len(self.failed)

    def __bool__(self) -> bool:
        return not self.failed

    def __repr__(self) -> str:
        lost = f"; no answer: {', '.join(self.failed)}" if self.failed else ""
        return f"<pingall {self.ok}/{len(self.outcomes)} answered{lost}>"


class LiveNetwork:
    """A mock OpenFlow network with a real controller, for one test (a context manager too)."""

    def __init__(self, controller: str | list[str] | None = None, topo: str = "linear,3", *,
                 openflow: str = "auto", out: str | Path | None = None, checks: list[str] | None = None,
                 seed: int = 0, warmup: float | str = 0.0, handshake_timeout: float = 60.0, track: bool = True) -> None:
        """Start the controller, connect every switch and wait for the handshakes.

        ``out`` (default: a new temporary directory) gets the trace, result.json
        and the controller's log. ``checks`` are the invariants :meth:`check`
        runs when it names none (default: netsleuth's defaults). ``track=False``
        keeps the handle out of the plugin's failure report (for handles a
        helper opens and reports itself).
        """
        self.controller = resolve_controller(controller)
        self.topo = topo
        self.openflow = openflow
        self.out = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="netsleuth-"))
        self.default_checks = list(checks) if checks is not None else list(registry.DEFAULT)
        registry.resolve(self.default_checks)  # an unknown name fails here, before a controller starts
        self.inputs: list[NetworkInput] = []    # the inputs applied through apply(), in order
        self.violations: list[Finding] = []     # what check() found, in order
        self._ping_seq = 0
        self._loops_seen = 0
        self._observed_seen: set[int] = set()   # trace seqs of the observed violations check() returned
        self.session = Session("test", topo, self.controller, self.out, seed=seed, checks=self.default_checks,
                               openflow=openflow, warmup=warmup, handshake_timeout=handshake_timeout)
        self._net = BackgroundSession(self.session, on_ready=self._ready, stopped=self._stopped,
                                      name=f"netsleuth-test-network-{topo}")
        self.closed = False
        _LIVE.add(self)
        if track:
            OPENED.append(self)

    # ------------------------------------------------------------ lifecycle
    @staticmethod
    async def _ready(s: Session, rt: Runtime) -> None:
        await rt.settle(0.1)

    def _stopped(self) -> NetworkUseError:
        return NetworkUseError("the live network has stopped (closed, or the controller exited)",
                                f"see {self.out / 'controller.log'}; open a new network for each test")

    def close(self) -> None:
        """Stop the network and the controller; the trace and result.json stay in ``out``."""
        if self.closed:
            return
        self.closed = True
        _LIVE.discard(self)
        self._net.close()

    def __enter__(self) -> LiveNetwork:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __hash__(self) -> int:
        return id(self)

    @property
    def trace_path(self) -> Path:
        """The trace this network records (`netsleuth replay`, `viz`, `step` read it)."""
        return self.out / "trace.jsonl"

    @property
    def process_ids(self) -> list[int]:
        """Process ids of what this network runs now: each controller and the guard it runs under."""
        pids = []
        for c in self.session.controllers:
            if c.alive() and c.proc is not None:
                pids += [c.proc.pid] + ([c.pid] if c.pid is not None else [])
        return pids

    def _run(self, coro_fn: Callable[[], Coroutine[Any, Any, R]]) -> R:
        return self._net.call(coro_fn)

    def _act(self, change: Callable[[], list]) -> None:
        """Apply one input on the loop, hand its effects to the edge, let the network run until quiet."""
        async def go() -> None:
            rt = self._net.rt
            rt.apply(change())
            rt.kick()
            await rt.settle(quiet=0.05, timeout=3.0)
        self._run(go)

    # ------------------------------------------------------------ traffic
    def ping(self, src: str, dst: str, timeout: float = 2.0) -> PingOutcome:
        """``src`` pings ``dst`` once (ARP first if needed); ``.ok`` says whether the reply came."""
        self._host(src)
        self._host(dst)
        self._ping_seq += 1
        seq = self._ping_seq

        async def go() -> PingOutcome:
            r = await self._net.rt.ping(src, dst, seq, timeout)
            self.session.recorder(ts.PingResult, src=r.src, dst=r.dst, ok=r.ok, rtt=r.rtt)
            return r
        return self._run(go)

    def pingall(self, timeout: float = 2.0) -> PingallResult:
        """Every host pings every other, one at a time, as Mininet's pingall does."""
        hosts = [h.name for h in self._net.world.topology.hosts]
        outcomes = tuple(self.ping(a, b, timeout) for a in hosts for b in hosts if a != b)
        result = PingallResult(outcomes)
        self.session.result.data["pingall"] = {"ok": result.ok, "failed": len(result.failed),
                                               "failed_pairs": list(result.failed), "pairs": len(outcomes)}
        return result

    def send(self, src: str, dst: str, what: str = "icmp") -> str:
        """``src`` sends ``dst`` one packet (``icmp``, ``arp`` or ``tcp_syn``); returns the input's id."""
        self._host(src)
        self._host(dst)
        if what not in TRAFFIC_KINDS:
            raise NetworkUseError(f"unknown traffic kind {what!r}", f"use one of {', '.join(TRAFFIC_KINDS)}")
        ids: list[str] = []

        def inject() -> list:
            ids.append(self._net.world.inject_traffic(src, dst, what))
            return []  # the packet waits in the World's channels; nothing for the edge to do
        self._act(inject)
        return ids[0]

    # ------------------------------------------------------------ failures and moves
    def fail_link(self, a: str, b: str) -> None:
        """The link between adjacent nodes ``a`` and ``b`` goes down."""
        node, port = self._link_end(a, b)
        self._act(lambda: self._net.world.fail_link(node, port))

    def recover_link(self, a: str, b: str) -> None:
        node, port = self._link_end(a, b)
        self._act(lambda: self._net.world.recover_link(node, port))

    def fail_switch(self, switch: str) -> None:
        """``switch`` powers off: its control connections drop and its flow table is lost."""
        self._switch(switch)
        self._act(lambda: self._net.world.fail_switch(switch))

    def recover_switch(self, switch: str, timeout: float = 10.0) -> None:
        """``switch`` powers on; returns once it has reconnected to every live controller."""
        self._switch(switch)
        self._act(lambda: self._net.world.recover_switch(switch))
        self._await_connections(timeout)

    def migrate(self, host: str, switch: str, port: int | None = None) -> int:
        """Move ``host`` to ``switch``; returns the port it is plugged into.

        A moved host takes the switch's next free port (what a replay gives
        it again); ``port``, when given, must be that port.
        """
        self._host(host)
        self._switch(switch)
        free = self._net.read(self._net.world.free_port, switch)
        if port is not None and port != free:
            raise NetworkUseError(f"cannot plug {host} into {switch} port {port}: a moved host takes the "
                                   f"switch's next free port, {free}",
                                   f"leave port out (or pass port={free})")
        self._act(lambda: self._net.world.migrate_host(host, switch))
        return free

    def crash_controller(self, controller: str = "c0") -> None:
        """Kill the controller process (SIGKILL); its connections drop."""
        self._controller(controller)
        self._apply_recorded(ts.ControllerCrash(seq=0, t=0.0, id="planned", controller=controller))

    def restart_controller(self, controller: str = "c0", timeout: float = 30.0) -> None:
        """Start the crashed controller again; returns once the live switches have reconnected."""
        self._controller(controller)
        self._apply_recorded(ts.ControllerRecovery(seq=0, t=0.0, id="planned", controller=controller))
        self._await_connections(timeout)

    def _apply_recorded(self, e: ts.InputEvent) -> None:
        """As a replay applies a recorded input: the Session also acts on the controller's process."""
        async def go() -> None:
            rt = self._net.rt
            rt.apply(await self.session.apply_input(e))
            rt.kick()
            await rt.settle(quiet=0.05, timeout=3.0)
        self._run(go)

    def apply(self, *inputs: NetworkInput) -> None:
        """Apply input values (Send, Move, FailLink, ...) in order, each followed by a settle."""
        for i in inputs:
            i.apply(self)
            self.inputs.append(i)

    def host_location(self, host: str) -> tuple[str, int]:
        """The (switch, port) ``host`` is plugged into now."""
        self._host(host)
        return self._net.read(lambda: self._net.world.host_at[host])

    # ------------------------------------------------------------ waiting and checking
    def settle(self, quiet: float = 0.15, timeout: float = 10.0) -> bool:
        """Wait until nothing is pending and the controller has been quiet for ``quiet`` seconds."""
        async def go() -> bool:
            return await self._net.rt.settle(quiet, timeout)
        return self._run(go)

    def check(self, *invariants: str, rounds: int = 1) -> list[Finding]:
        """Run invariants (names; none: the network's checks) on the network now; the violations found.

        With ``rounds`` > 1 only violations present in that many consecutive
        checks, 0.1 s apart, count (a transient state during convergence
        does not). Each one is recorded in the trace as a persistent
        violation, so `netsleuth replay` of the trace targets it.
        """
        names = list(invariants) or self.default_checks
        chosen = registry.resolve(names)

        async def go() -> list[Finding]:
            rt, s = self._net.rt, self.session
            seen: list[list[Finding]] = []
            for r in range(max(1, rounds)):
                await (asyncio.sleep(0.1) if r else asyncio.sleep(0))
                await rt.settle(quiet=0.05, timeout=3.0)
                s.note_controller_deaths()
                found = registry.check(s.world.view(), [i for i in chosen if i.check is not None])
                if "dataplane-loops" in names:  # observed on real packets as they loop, not computed
                    loops = [v for v in s.world.observed_violations if v.invariant == "dataplane-loops"]
                    found += [Finding(v.invariant, v.message, tuple(v.hosts), tuple(v.switches), dict(v.details))
                              for v in loops[self._loops_seen:]]
                    self._loops_seen = len(loops)
                if set(names) & set(OBSERVED):  # tracebacks and refused messages, recorded as they happen
                    s.observed.poll()
                    found += [Finding(v.invariant, v.message, tuple(v.hosts), tuple(v.switches),
                                      dict(v.details, seq=v.seq))
                              for v in s.observed.found() if v.seq not in self._observed_seen and v.invariant in names]
                seen.append(found)
                if not found:
                    return []
            keys = [{_key(f) for f in round_} for round_ in seen]
            lasting = [f for f in seen[-1] if all(_key(f) in k for k in keys)]
            self._observed_seen.update(f.details["seq"] for f in lasting if f.invariant in OBSERVED)
            for f in lasting:
                if f.invariant not in ("dataplane-loops", *OBSERVED):  # those are in the trace already
                    s.record_finding(f, persistent=True)
            s.writer.flush()
            return lasting
        found = self._run(go)
        self.violations.extend(found)
        return found

    def _await_connections(self, timeout: float) -> None:
        """Wait until every live switch has a completed handshake with every live controller."""
        async def go() -> None:
            loop = asyncio.get_running_loop()
            w, deadline = self._net.world, loop.time() + timeout
            while loop.time() < deadline:
                live = {w.switches[s].dpid for s, up in w.switch_up.items() if up}
                ready = {(c.dpid, c.controller) for c in w.connections.values() if c.up and c.features_replied}
                alive = [c for c, a in w.controllers_alive.items() if a]
                if all((d, c) in ready for d in live for c in alive):
                    break
                await asyncio.sleep(0.02)
            await self._net.rt.settle(quiet=0.05, timeout=3.0)
        self._run(go)

    # ------------------------------------------------------------ names
    def _host(self, name: str) -> None:
        if name not in self._net.world.hosts:
            raise NetworkUseError(f"no host {name!r} in {self.topo}",
                                   f"use one of {', '.join(sorted(self._net.world.hosts))}")

    def _switch(self, name: str) -> None:
        if name not in self._net.world.switches:
            raise NetworkUseError(f"no switch {name!r} in {self.topo}",
                                   f"use one of {', '.join(sorted(self._net.world.switches))}")

    def _controller(self, name: str) -> None:
        names = [c.name for c in self.session.controllers]
        if name not in names:
            raise NetworkUseError(f"no controller {name!r}", f"use one of {', '.join(names)}")

    def _link_end(self, a: str, b: str) -> tuple[str, int]:
        def find() -> tuple[str, int] | None:
            return next(((end, port) for (end, port), (other, _) in sorted(self._net.world.peer.items())
                         if end == a and other == b), None)
        end = self._net.read(find)
        if end is None:
            links = sorted({f"{x}-{y}" for (x, _), (y, _) in self._net.world.peer.items() if x < y})
            raise NetworkUseError(f"no link between {a} and {b} in {self.topo}",
                                   f"name two adjacent nodes: {', '.join(links)}")
        return end

    # ------------------------------------------------------------ report
    def commands(self) -> tuple[str, str]:
        """The shell commands that replay this network's trace and draw it."""
        spec = self.controller if isinstance(self.controller, str) else ",".join(self.controller)
        trace = shlex.quote(str(self.trace_path))
        replay = (f"netsleuth replay {trace} --controller {shlex.quote(spec)} "
                  f"--out {shlex.quote(str(self.out / 'replay'))}")
        viz = f"netsleuth viz {trace} --html {shlex.quote(str(self.out / 'trace.html'))}"
        return replay, viz

    def report(self) -> str:
        """What a failing test's report shows: the trace, the violations in plain words, the commands."""
        spec = self.controller if isinstance(self.controller, str) else " + ".join(self.controller)
        lines = [f"netsleuth: {spec} on {self.topo}", f"  trace:   {self.trace_path}"]
        if self.violations:
            lines.append("  violations:")
            lines += violation_block(self.violations, trace=self.trace_path, indent="    ")
        else:
            lines.append("  violations: none found by check() (the test failed on its own assertion)")
        replay, viz = self.commands()
        lines += [f"  replay:  {replay}", f"  draw:    {viz}"]
        return "\n".join(lines)


def _key(f: Finding) -> tuple:
    """A violation's identity across checks: the persistence tracker's (a grouped violation is one
    defect whichever hosts it reaches in each check)."""
    from netsleuth.invariants.persistence import finding_key

    return finding_key(f)


@atexit.register
def _close_forgotten() -> None:
    """Handles a test never closed: stop their controllers before the interpreter goes."""
    for net in list(_LIVE):
        net.close()


__all__ = ["LiveNetwork", "PingallResult", "NetworkUseError", "resolve_controller", "CONTROLLER_OVERRIDE",
           "OPENED"]
