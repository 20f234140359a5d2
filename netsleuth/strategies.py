"""Hypothesis strategies for netsleuth: input sequences whose dependencies hold.

``inputs(topology)`` draws lists of the test inputs of
``netsleuth.testing.inputs`` (Send, Move, FailLink, RecoverLink, FailSwitch,
RecoverSwitch, CrashController, RestartController) that make sense in order,
as the fuzzer's do: a recovery only of something that failed and has not
recovered, a failure only of something up, a migration from where the host
is to another switch, traffic between two different hosts.

How it draws, and why: Hypothesis shrinks best what it draws as a list. So
the strategy draws a plain list of small integer tuples (one per input) and
reads them in order against the state the earlier inputs left: the first
number names an input kind from a fixed list, the others pick its
arguments among the valid ones; an element naming an input that is not
possible at that point (a recovery with nothing failed) stands for nothing.
Deleting an element while shrinking removes one input, and the rest are
re-read against the new state, so every sequence Hypothesis tries, shrunk
or not, still has its dependencies right. An element names its kind from
the fixed list, not from the inputs possible at that point, so it keeps its
meaning when an input before it goes: a recovery stays a recovery with one
failure fewer before it, and Hypothesis's deletions reach the minimal
sequence. Smaller numbers pick the earlier kinds and names, so shrinking
also moves towards the simplest inputs (traffic first, lower-numbered hosts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hypothesis import strategies as st

from netsleuth.model.topo_builders import parse_topo
from netsleuth.model.topology import Topology
from netsleuth.testing.inputs import (
    CrashController,
    FailLink,
    FailSwitch,
    Move,
    NetworkInput,
    RecoverLink,
    RecoverSwitch,
    RestartController,
    Send,
)

#: the kinds ``inputs`` can draw; a failure kind brings its recovery
KINDS = ("traffic", "migration", "link", "switch", "controller")
DEFAULT_KINDS = ("traffic", "migration", "link", "switch")


@dataclass
class _State:
    """Where things stand after the inputs read so far (follows from the inputs alone)."""

    hosts: tuple[str, ...]
    switches: tuple[str, ...]
    links: tuple[tuple[str, str], ...]                 # switch-switch links, as (a, b) with a < b
    host_at: dict[str, str]
    failed_links: list[tuple[str, str]] = field(default_factory=list)
    failed_switches: list[str] = field(default_factory=list)
    crashed: bool = False

    def movable(self) -> dict[str, list[str]]:
        """Host -> the live switches it could move to (not the one it is on)."""
        live = [s for s in self.switches if s not in self.failed_switches]
        out = {h: [s for s in live if s != self.host_at[h]] for h in self.hosts}
        return {h: where for h, where in out.items() if where}

    def options(self, kinds: Sequence[str], traffic: Sequence[str]) -> list[str]:
        """The inputs possible now, in a fixed order (earlier ones are where shrinking goes)."""
        out = []
        if "traffic" in kinds and len(self.hosts) > 1:
            out.append("send")
        if "migration" in kinds and self.movable():
            out.append("move")
        if "link" in kinds:
            if len(self.failed_links) < len(self.links):
                out.append("fail_link")
            if self.failed_links:
                out.append("recover_link")
        if "switch" in kinds:
            if len(self.failed_switches) < len(self.switches):
                out.append("fail_switch")
            if self.failed_switches:
                out.append("recover_switch")
        if "controller" in kinds:
            out.append("restart_controller" if self.crashed else "crash_controller")
        return out

    def read(self, what: str, a: int, b: int, c: int, traffic: Sequence[str]) -> NetworkInput:
        """Turn one drawn tuple into the input ``what``, with valid arguments; update the state."""
        if what == "send":
            src = self.hosts[a % len(self.hosts)]
            others = [h for h in self.hosts if h != src]
            return Send(src, others[b % len(others)], traffic[c % len(traffic)])
        if what == "move":
            movable = self.movable()
            host = list(movable)[a % len(movable)]
            switch = movable[host][b % len(movable[host])]
            self.host_at[host] = switch
            return Move(host, switch)
        if what == "fail_link":
            up = [link for link in self.links if link not in self.failed_links]
            link = up[a % len(up)]
            self.failed_links.append(link)
            return FailLink(*link)
        if what == "recover_link":
            link = self.failed_links.pop(a % len(self.failed_links))
            return RecoverLink(*link)
        if what == "fail_switch":
            up_sw = [s for s in self.switches if s not in self.failed_switches]
            switch = up_sw[a % len(up_sw)]
            self.failed_switches.append(switch)
            return FailSwitch(switch)
        if what == "recover_switch":
            return RecoverSwitch(self.failed_switches.pop(a % len(self.failed_switches)))
        self.crashed = what == "crash_controller"
        return CrashController() if self.crashed else RestartController()


#: every input an element can name, in a fixed order, with the kind that allows it
_OPS = (("send", "traffic"), ("move", "migration"), ("fail_link", "link"), ("recover_link", "link"),
        ("fail_switch", "switch"), ("recover_switch", "switch"), ("crash_controller", "controller"),
        ("restart_controller", "controller"))


def _topology(topology: str | Topology) -> Topology:
    return topology if isinstance(topology, Topology) else parse_topo(topology)


def inputs(topology: str | Topology, kinds: Sequence[str] = DEFAULT_KINDS, max_size: int = 8,
           min_size: int = 1, traffic: Sequence[str] = ("icmp",)) -> st.SearchStrategy[list[NetworkInput]]:
    """Sequences of up to ``max_size`` inputs on ``topology`` (a ``--topo`` spec or a Topology).

    ``kinds`` from ``traffic``, ``migration``, ``link`` (failures and
    recoveries of switch-to-switch links), ``switch`` (switch failures and
    recoveries) and ``controller`` (crash and restart of the controller
    ``c0``); ``traffic`` the packets Send may carry (``icmp``, ``arp``,
    ``tcp_syn``). Every drawn sequence respects the inputs' dependencies.
    """
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise ValueError(f"unknown input kind(s) {bad or kinds!r}: use some of {', '.join(KINDS)}")
    if not set(traffic) <= {"icmp", "arp", "tcp_syn"} or not traffic:
        raise ValueError(f"traffic {traffic!r}: use some of icmp, arp, tcp_syn")
    topo = _topology(topology)
    switches = tuple(s.name for s in topo.switches)
    hosts = tuple(h.name for h in topo.hosts)
    links = tuple(sorted({tuple(sorted((lk.node1, lk.node2))) for lk in topo.links
                          if topo.is_switch(lk.node1) and topo.is_switch(lk.node2)}))
    kinds, traffic = tuple(kinds), tuple(traffic)
    ops = [op for op, kind in _OPS if kind in kinds]
    small = st.integers(min_value=0, max_value=255)
    raw = st.lists(st.tuples(small, small, small, small), min_size=min_size, max_size=max_size)

    def read(drawn: list[tuple[int, int, int, int]]) -> list[NetworkInput]:
        state = _State(hosts, switches, links,  # type: ignore[arg-type]  # sorted pairs of two names
                       {h: topo.host_location(h)[0] for h in hosts})
        out = []
        for k, a, b, c in drawn:
            op = ops[k % len(ops)]
            if op in state.options(kinds, traffic):  # else the element stands for nothing (see the docstring)
                out.append(state.read(op, a, b, c, traffic))
        return out

    drawn = raw.map(read)
    # elements that stand for nothing may leave a list shorter than min_size
    return drawn.filter(lambda seq: len(seq) >= min_size) if min_size else drawn


__all__ = ["inputs", "KINDS", "DEFAULT_KINDS"]
