"""Scripted host traffic: each host sends a fixed sequence of concrete frames.

The model's hosts only start pings; the load balancer and the traffic
engineering app need TCP SYNs, ACKs, UDP datagrams and ARP requests for a
virtual IP.  :class:`ScriptedSends` plugs into :attr:`System.generators` (the
seam concolic discovery also uses) and proposes one ``("sendpkt", host,
frame)`` transition per host: the host's next frame.

**Where the script position lives.**  A generator may not keep state of its
own (the search backtracks), so the position is derived from the hashed host
state: ``HostState.sent`` is the multiset of frames the host has put on its
wire (kept whenever packet lineage is on, which :func:`attach` forces), and
the next frame is the first script frame not covered by it.  Scripts may
repeat a frame (a duplicate SYN): the multiset counts it.  (A script frame
identical to one of the host's automatic replies would be miscounted; the
scripts here never coincide with an ARP or echo reply.)

**PKT-SEQ.**  The model's PKT-SEQ credits apply to pings only; for scripts
the same bound is enforced here: when the configuration has
``pkt_seq_burst`` a host may start its next frame only while fewer than
``burst`` of its frames are still in the network (on wires, in switch
buffers or in controller queues).
"""

from __future__ import annotations

from typing import Any

from netsleuth.model.packet import Packet
from netsleuth.nice.errors import ScenarioError
from netsleuth.nice.state import SystemState, pids_in_flight
from netsleuth.nice.transitions import SENDPKT


class ScriptedSends:
    """``System.generators`` entry: every scripted host may send its next frame (see module doc)."""

    def __init__(self, scripts: dict[str, tuple[Packet, ...]] | tuple) -> None:
        items = scripts.items() if isinstance(scripts, dict) else scripts
        # (host name, frames), in a fixed order so the enabled list is reproducible
        self.scripts: tuple[tuple[str, tuple[Packet, ...]], ...] = tuple(
            (h, tuple(frames)) for h, frames in items)

    def next_frame(self, st: SystemState, i: int, frames: tuple[Packet, ...]) -> Packet | None:
        counts = dict(st.hosts[i].sent)
        for f in frames:
            n = counts.get(f, 0)
            if n == 0:
                return f
            counts[f] = n - 1
        return None

    def __call__(self, system: Any, st: SystemState) -> list:
        out = []
        burst = system.config.pkt_seq_burst
        for host, frames in self.scripts:
            i = system.host_index[host]
            f = self.next_frame(st, i, frames)
            if f is None:
                continue
            if burst is not None and len(pids_in_flight(st, host)) >= burst:
                continue
            out.append((SENDPKT, i, f))
        return out


def scripts_to_json(scripts: tuple) -> list:
    """Scripts as JSON (a counterexample's header carries them, so a replay rebuilds the sends)."""
    return [[host, [f.to_json() for f in frames]] for host, frames in scripts]


def scripts_from_json(data: list) -> tuple:
    return tuple((host, tuple(Packet.from_json(f) for f in frames)) for host, frames in data)


def attach(system: Any, scripts: dict[str, tuple[Packet, ...]] | tuple) -> ScriptedSends:
    """Add the scripted sends to ``system`` (before its initial state is built) and turn lineage on."""
    for host, _ in (scripts.items() if isinstance(scripts, dict) else scripts):
        if host not in system.host_index:
            raise ScenarioError(f"script for {host!r}, which is not a host of the topology",
                                f"use hosts {', '.join(system.host_names)}")
    system.lineage = True  # HostState.sent is the script position (see the module docstring)
    gen = ScriptedSends(scripts)
    system.generators.append(gen)
    return gen
