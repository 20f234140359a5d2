"""A synthetic minimization case: random inputs and a tiny simulated network with an injected bug.

Used by the tests and ``bench/minimize_synthetic.py``; needs no controller.

:func:`synthetic_inputs` produces a seeded sequence of input events of every
kind, with their ``deps`` made explicit the way the World records them
(failure/recovery, crash/recovery and block/unblock pairs; per-host
migration chains), plus the few inputs an injected bug needs:

* ``"link_then_host"``: the controller crashes when link ``s2:2-s3:1`` has
  failed and later host ``h3`` sends. The MCS is that failure (with its
  recovery, if the trace has one: one atom) and that send.
* ``"migration"``: traffic to ``h2`` is blackholed while ``h2`` sits on
  ``s4`` after migrating (s2 -> s1 -> s5 -> s4 -> s3). The MCS is the
  migration to ``s4`` -- rewritten to start where ``h2`` really is, s2 --
  and the send to ``h2``.

:class:`SimOracle` replays a candidate through :class:`SimNetwork`, which
*rejects* inconsistent inputs (a recovery without its failure, a migration
that does not start where the host is, deps that point at pruned inputs), so
a test passing through it also checks the minimizer's atoms and rewriting.
It can sleep per replay (to emulate a real replay) and be flaky (reproduce
with probability ``p``, seeded by the candidate and the attempt number, so
runs are repeatable).
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from netsleuth.minimize.oracle import ReplayVerdict
from netsleuth.trace import schema as ts

SWITCHES = ("s1", "s2", "s3", "s4", "s5")
LINKS = (("s1", 1, "s2", 1), ("s2", 2, "s3", 1), ("s3", 2, "s4", 1), ("s4", 2, "s5", 1), ("s5", 2, "s1", 2),
         ("s1", 3, "s3", 3))
HOSTS = {"h1": ("s1", 10), "h2": ("s2", 10), "h3": ("s3", 10), "h4": ("s4", 10), "h5": ("s5", 10)}
CONTROLLER = "c0"
TARGET_LINK = ("s2", 2, "s3", 1)
TARGET_HOST = "h3"
MIGRATING_HOST, BLACKHOLE_SWITCH = "h2", "s4"


class InvalidCandidate(AssertionError):
    """The simulated network was given an input sequence that cannot happen."""


class _Gen:
    def __init__(self) -> None:
        self.events: list[ts.InputEvent] = []
        self.link_open: dict[tuple[object, ...], str] = {}
        self.switch_open: dict[str, str] = {}
        self.channel_open: dict[str, str] = {}
        self.ctrl_open: str | None = None
        self.host_at = dict(HOSTS)
        self.last_mig: dict[str, str] = {}
        self.next_port = {s: 11 for s in SWITCHES}

    def add(self, cls: Callable[..., ts.InputEvent], deps: tuple[str, ...] = (), /, **fields: object) -> ts.InputEvent:
        n = len(self.events)
        ev = cls(seq=n, t=round(0.1 * n, 1), id=f"i{n}", deps=deps, **fields)
        self.events.append(ev)
        return ev

    def link(self, link: tuple[object, ...], up: bool) -> None:
        kw: dict[str, object] = dict(node1=link[0], port1=link[1], node2=link[2], port2=link[3])
        if up:
            self.add(ts.LinkRecovery, (self.link_open.pop(link),), **kw)
        else:
            self.link_open[link] = self.add(ts.LinkFailure, (), **kw).id

    def migrate(self, host: str, switch: str) -> None:
        old = self.host_at[host]
        port = self.next_port[switch]
        self.next_port[switch] += 1
        deps = (self.last_mig[host],) if host in self.last_mig else ()
        ev = self.add(ts.HostMigration, deps, host=host, old_switch=old[0], old_port=old[1], new_switch=switch,
                      new_port=port)
        self.last_mig[host] = ev.id
        self.host_at[host] = (switch, port)

    def send(self, src: str, dst: str) -> None:
        self.add(ts.TrafficInjection, host=src, packet={"eth_type": 2048, "src": src, "dst": dst}, dst=dst)


def synthetic_inputs(n: int = 200, seed: int = 0, scenario: str = "link_then_host",
                     recover_target: bool = False) -> list[ts.InputEvent]:
    """``n`` seeded inputs for ``scenario`` ("link_then_host" or "migration")."""
    rng = random.Random(seed)
    g = _Gen()
    if scenario == "link_then_host":
        plan = {int(n * 0.3): "target_fail", int(n * 0.6): "target_send"}
        if recover_target:
            plan[int(n * 0.8)] = "target_recover"
    elif scenario == "migration":
        plan = {int(n * 0.2): "mig:s1", int(n * 0.35): "mig:s5", int(n * 0.5): "mig:s4", int(n * 0.65): "send_h2",
                int(n * 0.8): "mig:s3"}
    else:
        raise ValueError(f"unknown scenario {scenario!r}")
    others = [h for h in HOSTS if h not in (TARGET_HOST, MIGRATING_HOST)]
    kinds = ("link", "link", "switch", "controller", "channel", "migrate", "traffic", "traffic", "traffic", "drop",
             "delay")
    while len(g.events) < n:
        step = plan.get(len(g.events))
        if step == "target_fail":
            g.link(TARGET_LINK, up=False)
        elif step == "target_recover":
            g.link(TARGET_LINK, up=True)
        elif step == "target_send":
            g.send(TARGET_HOST, "h1")
        elif step is not None and step.startswith("mig:"):
            g.migrate(MIGRATING_HOST, step[4:])
        elif step == "send_h2":
            g.send("h1", MIGRATING_HOST)
        else:
            kind = rng.choice(kinds)
            if kind == "link":
                down = [lk for lk in LINKS if lk in g.link_open and lk != TARGET_LINK]
                up = [lk for lk in LINKS if lk not in g.link_open and lk != TARGET_LINK]
                if down and (not up or rng.random() < 0.5):
                    g.link(rng.choice(down), up=True)
                else:
                    g.link(rng.choice(up), up=False)
            elif kind == "switch":
                sw = rng.choice(SWITCHES)
                if sw in g.switch_open:
                    g.add(ts.SwitchRecovery, (g.switch_open.pop(sw),), switch=sw)
                else:
                    g.switch_open[sw] = g.add(ts.SwitchFailure, switch=sw).id
            elif kind == "controller":
                if g.ctrl_open:
                    g.add(ts.ControllerRecovery, (g.ctrl_open,), controller=CONTROLLER)
                    g.ctrl_open = None
                else:
                    g.ctrl_open = g.add(ts.ControllerCrash, controller=CONTROLLER).id
            elif kind == "channel":
                sw = rng.choice(SWITCHES)
                if sw in g.channel_open:
                    g.add(ts.ChannelUnblock, (g.channel_open.pop(sw),), switch=sw, controller=CONTROLLER)
                else:
                    g.channel_open[sw] = g.add(ts.ChannelBlock, switch=sw, controller=CONTROLLER).id
            elif kind == "migrate":
                g.migrate(rng.choice(others), rng.choice([s for s in SWITCHES if s != BLACKHOLE_SWITCH]))
            elif kind == "traffic":
                src = rng.choice(others)
                g.send(src, rng.choice([h for h in others if h != src]))
            elif kind == "drop":
                g.add(ts.DataplaneDrop, node=rng.choice(SWITCHES), port=rng.randint(1, 3), fp=())
            else:
                g.add(ts.ControlDelay, switch=rng.choice(SWITCHES), controller=CONTROLLER,
                      direction=rng.choice(("to_switch", "to_controller")), fp=(), seconds=0.05)
    return g.events


class SimNetwork:
    """Applies inputs in order, rejecting impossible ones; reports the injected bug."""

    def __init__(self, bug: str) -> None:
        self.bug = bug
        self.failed: dict[tuple[object, ...], str] = {}
        self.host_at = dict(HOSTS)
        self.last_mig: dict[str, str] = {}
        self.seen: set[str] = set()
        self.target_failed = False
        self.migrated: set[str] = set()

    def _open(self, what: tuple[object, ...], ev: ts.InputEvent) -> None:
        if what in self.failed:
            raise InvalidCandidate(f"{ev.id}: {what} fails twice")
        self.failed[what] = ev.id

    def _close(self, what: tuple[object, ...], ev: ts.InputEvent) -> None:
        opened = self.failed.pop(what, None)
        if opened is None or ev.deps != (opened,):
            raise InvalidCandidate(f"{ev.id}: {what} recovers without its failure (deps {ev.deps}, open {opened})")

    def apply(self, ev: ts.InputEvent) -> str | None:
        """Apply one input; the violation's description if the bug fires."""
        for d in ev.deps:
            if d not in self.seen:
                raise InvalidCandidate(f"{ev.id} depends on {d}, which is not in the candidate (or comes later)")
        self.seen.add(ev.id)
        if isinstance(ev, ts.LinkFailure):
            self._open(("link", ev.node1, ev.port1, ev.node2, ev.port2), ev)
            if (ev.node1, ev.port1, ev.node2, ev.port2) == TARGET_LINK:
                self.target_failed = True
        elif isinstance(ev, ts.LinkRecovery):
            self._close(("link", ev.node1, ev.port1, ev.node2, ev.port2), ev)
        elif isinstance(ev, ts.SwitchFailure):
            self._open(("switch", ev.switch), ev)
        elif isinstance(ev, ts.SwitchRecovery):
            self._close(("switch", ev.switch), ev)
        elif isinstance(ev, ts.ControllerCrash):
            self._open(("controller", ev.controller), ev)
        elif isinstance(ev, ts.ControllerRecovery):
            self._close(("controller", ev.controller), ev)
        elif isinstance(ev, ts.ChannelBlock):
            self._open(("channel", ev.switch), ev)
        elif isinstance(ev, ts.ChannelUnblock):
            self._close(("channel", ev.switch), ev)
        elif isinstance(ev, ts.HostMigration):
            if self.host_at[ev.host] != (ev.old_switch, ev.old_port):
                raise InvalidCandidate(f"{ev.id}: {ev.host} migrates from {ev.old_switch}:{ev.old_port} but is at "
                                       f"{self.host_at[ev.host]}")
            prev = self.last_mig.get(ev.host)
            if ev.deps != ((prev,) if prev else ()):
                raise InvalidCandidate(f"{ev.id}: migration deps {ev.deps}, expected the previous one {prev}")
            self.host_at[ev.host] = (ev.new_switch, ev.new_port)
            self.last_mig[ev.host] = ev.id
            self.migrated.add(ev.host)
        elif isinstance(ev, ts.TrafficInjection):
            if self.bug == "link_then_host" and ev.host == TARGET_HOST and self.target_failed:
                return f"controller crashed handling {ev.host}'s packet after {TARGET_LINK} failed"
            if (self.bug == "migration" and ev.dst == MIGRATING_HOST and MIGRATING_HOST in self.migrated
                    and self.host_at[MIGRATING_HOST][0] == BLACKHOLE_SWITCH):
                return f"blackhole: {ev.host} -> {ev.dst} at {self.host_at[MIGRATING_HOST]}"
        return None


@dataclass
class SimOracle:
    """Replays a candidate through :class:`SimNetwork`. Picklable; one per worker is fine."""

    bug: str = "link_then_host"
    p: float = 1.0            # probability that a replay shows the bug when it fires
    seed: int = 0
    sleep: float = 0.0        # seconds per replay, to emulate a real one ...
    sleep_per_input: float = 0.0  # ... plus this per input replayed (a real replay is O(inputs))
    attempts: dict[str, int] = field(default_factory=dict, repr=False)

    def reproduces(self, candidate: tuple[ts.InputEvent, ...]) -> ReplayVerdict:
        if self.sleep or self.sleep_per_input:
            time.sleep(self.sleep + self.sleep_per_input * len(candidate))
        net = SimNetwork(self.bug)
        fired = None
        for ev in candidate:
            fired = net.apply(ev)
            if fired:
                break
        ids = ",".join(e.id for e in candidate)
        attempt = self.attempts.get(ids, 0)
        self.attempts[ids] = attempt + 1
        shown = bool(fired)
        if shown and self.p < 1.0:
            digest = hashlib.sha256(f"{self.seed}|{ids}|{attempt}".encode()).digest()
            shown = random.Random(digest).random() < self.p
        return ReplayVerdict(shown, {"fired": fired, "attempt": attempt, "inputs": len(candidate)})


@dataclass(frozen=True)
class SimOracleFactory:
    """``factory(worker_id)``: a fresh SimOracle per worker."""

    bug: str = "link_then_host"
    p: float = 1.0
    seed: int = 0
    sleep: float = 0.0
    sleep_per_input: float = 0.0

    def __call__(self, worker_id: int) -> SimOracle:
        # Each worker draws its own coin flips: the K replays of one candidate may run on different workers.
        seed = self.seed if worker_id == 0 else self.seed * 1_000_003 + worker_id
        return SimOracle(self.bug, self.p, seed, self.sleep, self.sleep_per_input)


__all__ = ["synthetic_inputs", "SimNetwork", "SimOracle", "SimOracleFactory", "InvalidCandidate", "TARGET_LINK",
           "TARGET_HOST", "MIGRATING_HOST", "BLACKHOLE_SWITCH"]
