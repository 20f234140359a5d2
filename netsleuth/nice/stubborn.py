"""Persistent (stubborn) sets for DPOR: which enabled transitions suffice at a state.

Sleep sets (explore.py) prune transitions but never states.  To prune states
the search must fire only a *persistent* subset P of the enabled transitions:
one such that no sequence of transitions outside P, starting here, contains
a transition dependent on a member of P.  Then every path that the full
search takes from this state can be reordered to start with a member of P
and reach the same state with the same property events (Godefroid, Valmari).

P is computed as a stubborn set over transition *names* (``(PKT, s)``,
``(RECV, h)``, ... -- the names that are stable from state to state, see
system.py) with a conservative "may touch" footprint predicted for every name,
enabled or not, before anything fires:

* an enabled member t brings in every name that could ever be dependent on
  t while t waits (``_conflicts``);  a host's own transitions are split
  finer than one object: taking a frame off the wire appends to the outbox,
  which commutes with sending the outbox's head, and a scripted send does not
  depend on what the host received (a ping does: ARP, PKT-SEQ credits);
* a disabled member brings in a necessary enabling set: names one of which
  must fire before it can become enabled (``_enablers``).

The shared objects are the ones ``Effects`` records at run time: a node's
input queue (a pop of the head of a non-empty FIFO commutes with pushes to
its tail; a switch's process_pkt also reads which of its inputs are *empty*,
so it conflicts with pushes to an input that is empty now -- inputs only grow
while it waits), a switch's flow table and buffers (all of one switch's
transitions conflict: buffer ids are the lowest free ones), a host's state,
the controller as one object (every handler and timer), and the state of a
property that does not promise to commute (``Property.commutes = False``):
every name whose event that property watches conflicts with every other.

:func:`stubborn_applies` says when the prediction is complete: not with
optional faults, input-discovery generators (scripted sends are a host's
sends; under PKT-SEQ their bound counts the host's packets anywhere in the
network, so a disabled one may be enabled by any consumer), a non-commuting
``on_step`` (it may read anything), or strategy filters that look beyond one
host (the caller checks those).  Host moves change the wiring, so an enabled move
conflicts with everything.
"""

from __future__ import annotations

from typing import Any

from netsleuth.nice.state import SystemState
from netsleuth.nice.transitions import CTL, MOVE, OF, OUT, PKT, RECV, SEND, SENDPKT, TIMER

_EVENT_KINDS = {"on_host_send": (SEND, OUT, MOVE), "on_host_receive": (RECV,),
                "on_switch_receive": (PKT,), "on_packet_in": (CTL,), "on_host_move": (MOVE,)}


class Stubborn:
    """Persistent-set computation for one :class:`~netsleuth.nice.system.System` (see the module docstring)."""

    def __init__(self, system: Any) -> None:
        self.system = system
        s0 = system.initial()
        self.n_hosts = len(s0.hosts)
        self.n_sw = len(s0.switches)
        self.sw_names = list(system.sw_names)
        self.sw_ports = [tuple(s.ports) for s in s0.switches]
        # (switch, port) -> (peer switch index, peer port) for switch-switch links
        self.sw_peer: dict[tuple[int, int], tuple[int, int]] = {}
        for (n1, p1), (n2, p2) in system.peer.items():
            self.sw_peer[(system.sw_index[n1], p1)] = (system.sw_index[n2], p2)
        self.scripted_seq = bool(system.generators) and system.config.pkt_seq_burst is not None
        self._memo: dict[tuple, set | None] = {}
        # kinds whose transitions touch the state of some non-commuting property
        self.prop_kinds: list[frozenset] = []
        for p in system.props:
            if p.commutes:
                continue
            kinds: set = set()
            for ev, ks in _EVENT_KINDS.items():
                if hasattr(p, ev):
                    if ev == "on_switch_receive" and not system.lineage:
                        continue
                    kinds.update(ks)
            if kinds:
                self.prop_kinds.append(frozenset(kinds))

    # ------------------------------------------------------------------ per-state wiring
    def _wiring(self, st: SystemState) -> tuple[dict, list]:
        """(switch idx, port) -> hosts that are or may come to be there; host -> its possible switches."""
        at: dict[tuple[int, int], list[int]] = {}
        host_sw: list[list[int]] = []
        idx = self.system.sw_index
        for i, hs in enumerate(st.hosts):
            sws = []
            for name, port in (hs.location,) + tuple(hs.moves_left):
                j = idx.get(name)
                if j is None:
                    continue
                lst = at.setdefault((j, port), [])
                if i not in lst:
                    lst.append(i)
                if j not in sws:
                    sws.append(j)
            host_sw.append(sws)
        return at, host_sw

    # ------------------------------------------------------------------ footprints
    def _pushers_of_input(self, j: int, p: int, at: dict) -> list:
        """Names that may push a packet onto switch j's input queue at port p."""
        out = []
        peer = self.sw_peer.get((j, p))
        if peer is not None:
            out += [(PKT, peer[0]), (OF, peer[0])]
        for h in at.get((j, p), ()):
            out += [(SEND, h), (OUT, h), (MOVE, h)]
        return out

    def _output_conflicts(self, j: int, at: dict, host_sw: list) -> list:
        """Names that conflict with switch j pushing onto the queues its ports lead to."""
        out = []
        for p in self.sw_ports[j]:
            peer = self.sw_peer.get((j, p))
            if peer is not None:
                out.append((PKT, peer[0]))       # reads whether that input is empty
            for h in at.get((j, p), ()):
                for k in host_sw[h]:               # other switches that may push to h's wire
                    if k != j:
                        out += [(PKT, k), (OF, k)]
        return out

    def _prop_conflicts(self, kind: str) -> list:
        out = []
        for kinds in self.prop_kinds:
            if kind in kinds:
                for k in kinds:
                    out += self._names_of_kind(k)
        return out

    def _names_of_kind(self, kind: str) -> list:
        if kind in (SEND, OUT, RECV, MOVE):
            return [(kind, i) for i in range(self.n_hosts)]
        if kind in (PKT, OF, CTL):
            return [(kind, j) for j in range(self.n_sw)]
        return []

    def _controller(self, st: SystemState) -> list:
        return [(CTL, j) for j in range(self.n_sw)] + [(TIMER, n) for n in st.timers]

    def _conflicts(self, st: SystemState, t: tuple, at: dict, host_sw: list) -> list | None:
        """Names possibly dependent on enabled ``t`` while it waits; None: everything."""
        kind = t[0]
        if kind in (SEND, OUT):
            i = t[1]
            out = [(SEND, i), (OUT, i), (MOVE, i)]
            if kind == SEND and st.hosts[i].to_send:
                out.append((RECV, i))  # a received ARP may change the MAC a ping goes to
            for j in host_sw[i]:
                out.append((PKT, j))
            loc = st.hosts[i].location
            for name, port in (loc,) + tuple(st.hosts[i].moves_left):
                j = self.system.sw_index.get(name)
                for h in at.get((j, port), ()):
                    if h != i:
                        out += [(SEND, h), (OUT, h), (MOVE, h)]
            return out + self._prop_conflicts(kind)
        if kind == RECV:
            # Appending replies to the outbox commutes with sending its head; scripted
            # frames do not depend on what the host received; pings do (ARP, credits).
            i = t[1]
            out = [(MOVE, i)]
            if st.hosts[i].to_send:
                out.append((SEND, i))
            return out + self._prop_conflicts(kind)
        if kind == PKT:
            j = t[1]
            out = [(OF, j)]
            name = self.sw_names[j]
            for p in self.sw_ports[j]:
                if not st.inq.get((name, p)):
                    out += self._pushers_of_input(j, p, at)
            return out + self._output_conflicts(j, at, host_sw) + self._prop_conflicts(kind)
        if kind == OF:
            j = t[1]
            return [(PKT, j)] + self._output_conflicts(j, at, host_sw)
        if kind in (CTL, TIMER):
            return self._controller(st) + self._prop_conflicts(kind)
        return None  # move (changes the wiring) or anything unknown

    def _enablers(self, st: SystemState, t: tuple, at: dict, host_sw: list) -> list:
        """A necessary enabling set for disabled ``t``: names one of which must fire first."""
        kind = t[0]
        if kind == SEND:
            if self.scripted_seq:
                # PKT-SEQ bounds a script by the host's packets still anywhere in the
                # network: whatever consumes or drops one of them may enable the send.
                return [(k, j) for k in (RECV,) for j in range(self.n_hosts)] + \
                       [(k, j) for k in (PKT, OF, CTL) for j in range(self.n_sw)]
            return [(RECV, t[1])]   # PKT-SEQ credits come back (a script never restarts: harmless)
        if kind == OUT:
            return [(RECV, t[1])]
        if kind == MOVE:
            return [(OUT, t[1])] if st.hosts[t[1]].moves_left else []
        if kind == RECV:
            out = []
            for j in host_sw[t[1]]:
                out += [(PKT, j), (OF, j)]
            return out
        if kind == PKT:
            j = t[1]
            out = []
            for p in self.sw_ports[j]:
                out += self._pushers_of_input(j, p, at)
            return out
        if kind == OF:
            return self._controller(st)
        if kind == CTL:
            return [(PKT, t[1]), (OF, t[1])]
        return []  # a timer not posted yet: only the controller posts it (already conflicting)

    # ------------------------------------------------------------------ the set
    def persistent(self, st: SystemState, en: list) -> list:
        """The smallest persistent subset of ``en`` found by trying every seed, in ``en``'s order.

        The choice depends only on the enabled names (in order) and the few things the
        footprints read: where hosts are and may move, whether they have pings left,
        which wire queues are non-empty, the posted timers.  It is memoized on exactly
        those: the same combination recurs in most states of a search.
        """
        if len(en) <= 1:
            return en
        names = [_name(t) for t in en]
        key = (tuple(names), tuple([(hs.location, hs.moves_left, not hs.to_send) for hs in st.hosts]),
               frozenset([w for w, q in st.inq.items() if q]), st.timers)
        best = self._memo.get(key, _MISSING)
        if best is _MISSING:
            best = self._memo[key] = self._smallest(st, names)
        if best is None:
            return en
        return [t for t, n in zip(en, names, strict=True) if n in best]

    def _smallest(self, st: SystemState, names: list) -> set | None:
        enabled = set(names)
        at, host_sw = self._wiring(st)
        best: set | None = None
        cache: dict = {}
        for seed in names:
            stub = {seed}
            work = [seed]
            n_en = 1
            full = False
            while work:
                t = work.pop()
                nxt = cache.get(t)
                if nxt is None:
                    if t in enabled:
                        nxt = self._conflicts(st, t, at, host_sw)
                        if nxt is None:
                            full = True
                            break
                    else:
                        nxt = self._enablers(st, t, at, host_sw)
                    cache[t] = nxt
                for u in nxt:
                    if u not in stub:
                        stub.add(u)
                        work.append(u)
                        if u in enabled:
                            n_en += 1
                if best is not None and n_en >= len(best):
                    full = True
                    break
            if full:
                continue
            best = stub & enabled
            if len(best) == 1:
                break
        return best


_MISSING: Any = object()


def _name(t: tuple) -> tuple:
    """A scripted send is its host's send: same host state, same wire (scripted.py)."""
    return (SEND, t[1]) if t[0] == SENDPKT else t


def stubborn_applies(system: Any) -> str:
    """"" when persistent sets are sound for this model, else why not."""
    if system.faults:
        return "optional faults"
    from netsleuth.nice.scripted import ScriptedSends

    if any(not isinstance(g, ScriptedSends) for g in system.generators) or system.sendpkt_reads_ctl:
        return "input discovery"
    for p in system.props:
        if not p.commutes and hasattr(p, "on_step"):
            return f"property {p.name} is non-commuting and watches every step"
    return ""
