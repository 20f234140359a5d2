"""The property library: correctness properties as callbacks on a fixed set of events.

A property is a small class.  Its *state* is an immutable value (frozensets,
tuples, ints) returned by :meth:`Property.initial` and by every callback; it
is part of the hashed system state, so two paths that reach the same network
with different property histories are different states (as they must be:
their futures can violate differently).  Callbacks report violations with
``ctx.violation(...)``; the search records a counterexample and stops that
path.

Events (the engine calls only the callbacks a property defines):

* ``on_host_send(ps, ctx, host, pid, frame)``  a host puts ``frame`` on its wire
* ``on_host_receive(ps, ctx, host, pid, frame)``  a host takes a frame off its wire
* ``on_switch_receive(ps, ctx, switch, port, pid, hops, frame)``  a switch gets a frame;
  ``hops`` are the (switch, in_port) pairs this copy visited before
* ``on_packet_in(ps, ctx, switch, pid, msg)``  the controller handles a PACKET_IN
* ``on_host_move(ps, ctx, host, old, new)``  a host moved to ``new`` (switch, port)
* ``on_step(ps, ctx, state)``  after every transition (keep it cheap); a property whose
  ``on_step`` has nothing to do in some of its states says so with ``quiet_step(ps)``
  (True: ``on_step`` would return ``ps`` and report nothing, whatever the network), which
  spares the call in a search without footprints
* ``on_end(ps, ctx, state)``  at a state where nothing but optional faults can happen

``pid`` names a packet without global counters: (sending host, frame, how
many identical frames that host sent before), or None for frames a
controller made up.  Copies made by flooding share their pid.

A user property is a subclass registered with
:func:`netsleuth.nice.property_registry.register` (or passed as
``package.module:Class`` on the command line).  Class attributes say what
lineage the engine must track: ``needs_pid`` and ``needs_hops``.  For
``--dpor``, ``commutes = True`` promises that the callbacks of two
transitions that touch disjoint network objects commute on the property
state (true for per-packet bookkeeping); otherwise every transition that
changes the property's state is treated as dependent on every other.
"""

from __future__ import annotations

from typing import Any

from netsleuth.model.addr import int_to_mac


def _unicast(mac: int) -> bool:
    return not (mac >> 40) & 1


class Property:
    """Base class; see the module docstring."""

    name = "property"
    needs_pid = False
    needs_hops = False
    commutes = True

    def initial(self, system: Any) -> Any:
        return None

    def quiet_step(self, ps: Any) -> bool:
        """Whether ``on_step`` would leave property state ``ps`` as it is and report no violation
        in every state (the module docstring); False, the default, always calls it."""
        return False


class NoForwardingLoops(Property):
    """A packet copy never reaches the same (switch, in_port) twice."""

    name = "NoForwardingLoops"
    needs_pid = True
    needs_hops = True

    def on_switch_receive(self, ps, ctx, switch, port, pid, hops, frame):
        if (switch, port) in hops:
            path = " -> ".join(f"{s}:{p}" for s, p in hops + ((switch, port),))
            ctx.violation(self.name, f"{frame.summary()} loops: {path}", hosts=(), switches=(switch,))
        return ps


class NoBlackHoles(Property):
    """Every packet a host sends to another existing host is delivered (checked at the end)."""

    name = "NoBlackHoles"
    needs_pid = True

    def initial(self, system):
        return frozenset()

    def _track(self, ps, ctx, host, pid, frame):
        dst = ctx.host_of_mac(frame.eth_dst)
        if dst is not None and dst != host and _unicast(frame.eth_dst):
            return ps | {(pid, dst)}
        return ps

    def on_host_send(self, ps, ctx, host, pid, frame):
        return self._track(ps, ctx, host, pid, frame)

    def on_host_receive(self, ps, ctx, host, pid, frame):
        if (pid, host) in ps:
            return ps - {(pid, host)}
        return ps

    def on_end(self, ps, ctx, state):
        if ps:
            lost = sorted(ps, key=repr)
            desc = "; ".join(f"{pid[1].summary()} from {pid[0]} to {dst}" for pid, dst in lost[:3])
            ctx.violation(self.name, f"{len(lost)} packet(s) never delivered: {desc}",
                          hosts=tuple(sorted({pid[0] for pid, _ in lost} | {d for _, d in lost})), switches=())
        return ps


class NoBlackHolesMobile(NoBlackHoles):
    """NoBlackHoles that forgives packets to a host sent during the inevitable blind period of a
    move: from the move until the controller has handled a packet from the new location, every
    rule change it queued is applied, and no packet the host sent from its old location is still
    in the network (a stale packet from the old port would rightly make any learner relearn it)."""

    name = "NoBlackHolesMobile"
    commutes = False  # whether a send is forgiven depends on where the move's bookkeeping stands

    def initial(self, system):
        return (frozenset(), frozenset())  # (outstanding, {(host, status, new location, stale pids)})

    def on_host_send(self, ps, ctx, host, pid, frame):
        out, moving = ps
        dst = ctx.host_of_mac(frame.eth_dst)
        if any(x[0] == dst for x in moving):
            return ps
        return (self._track(out, ctx, host, pid, frame), moving)

    def on_host_receive(self, ps, ctx, host, pid, frame):
        out, moving = ps
        return (NoBlackHoles.on_host_receive(self, out, ctx, host, pid, frame), moving)

    def on_host_move(self, ps, ctx, host, old, new):
        out, moving = ps
        out = frozenset(x for x in out if x[1] != host)
        moving = frozenset(x for x in moving if x[0] != host) | {(host, "moved", new, ctx.in_flight(host))}
        return (out, moving)

    def on_packet_in(self, ps, ctx, switch, pid, msg):
        out, moving = ps
        if not moving:
            return ps
        src = ctx.host_of_mac(msg.packet.eth_src)
        for x in moving:
            h, status, loc, stale = x
            if h != src:
                continue
            # The controller's latest evidence of where h is: a packet from the new
            # location teaches it; a stale one from the old location un-teaches it.
            status2 = "learned" if loc == (switch, msg.in_port) else "moved"
            if status2 != status:
                return (out, (moving - {x}) | {(h, status2, loc, stale)})
        return ps

    def quiet_step(self, ps):
        # on_step only ends the blind period of a host the controller has learned again
        for x in ps[1]:
            if x[1] == "learned":
                return False
        return True

    def on_step(self, ps, ctx, state):
        out, moving = ps
        if not moving:
            return ps
        keep = set(moving)
        changed = False
        for x in moving:
            h, status, loc, stale = x
            if status != "learned" or any(state.to_sw):
                continue
            if stale:
                stale_now = stale & ctx.in_flight(h)
                if stale_now != stale:
                    keep.discard(x)
                    x = (h, status, loc, stale_now)
                    keep.add(x)
                    changed = True
                if stale_now:
                    continue
            keep.discard(x)
            changed = True
        return (out, frozenset(keep)) if changed else ps

    def on_end(self, ps, ctx, state):
        NoBlackHoles.on_end(self, ps[0], ctx, state)
        return ps


class DirectPaths(Property):
    """Once a packet of a flow (src MAC, dst MAC) was delivered, packets of that flow sent
    afterwards never reach the controller."""

    name = "DirectPaths"
    needs_pid = True
    commutes = False  # whether a send must go direct depends on deliveries before it

    def initial(self, system):
        return (frozenset(), frozenset())  # (delivered flows, pids that must go direct)

    def _must(self, delivered, frame) -> bool:
        return (frame.eth_src, frame.eth_dst) in delivered

    def on_host_send(self, ps, ctx, host, pid, frame):
        delivered, must = ps
        if self._must(delivered, frame):
            return (delivered, must | {pid})
        return ps

    def on_host_receive(self, ps, ctx, host, pid, frame):
        delivered, must = ps
        if pid is not None and pid[0] != host and frame.eth_dst == ctx.mac_of(host):
            flow = (frame.eth_src, frame.eth_dst)
            if flow not in delivered:
                return (delivered | {flow}, must)
        return ps

    def on_packet_in(self, ps, ctx, switch, pid, msg):
        if pid is not None and pid in ps[1]:
            f = msg.packet
            ctx.violation(self.name, f"{f.summary()} from {pid[0]} reached the controller at {switch} "
                          f"after its flow had a direct path",
                          hosts=tuple(sorted(h for h in (ctx.host_of_mac(f.eth_src), ctx.host_of_mac(f.eth_dst))
                                             if h)), switches=(switch,))
        return ps


class StrictDirectPaths(DirectPaths):
    """Once two hosts delivered a packet in each direction, none of their later packets
    reaches the controller (NICE's StrictDirectPaths)."""

    name = "StrictDirectPaths"

    def _must(self, delivered, frame) -> bool:
        return (frame.eth_src, frame.eth_dst) in delivered and (frame.eth_dst, frame.eth_src) in delivered


class NoForgottenPackets(Property):
    """At the end, no switch still holds a buffered packet nobody released."""

    name = "NoForgottenPackets"

    def on_end(self, ps, ctx, state):
        for s in state.switches:
            if s.buffers:
                b = s.buffers[min(s.buffers)]
                ctx.violation(self.name, f"{s.name} still buffers {len(s.buffers)} packet(s), "
                              f"e.g. {b.packet.summary()} from port {b.in_port}", hosts=(), switches=(s.name,))
                break
        return ps


def mac_str(mac: int) -> str:
    return int_to_mac(mac)
