"""`netsleuth reduce TRACE`: the flow_mods that explain the tables at the violation.

A 300-event trace may hold dozens of flow_mods, most of which no longer
matter when the invariant breaks: they were overridden by an identical
match, deleted, expired, or lost when their switch failed. STS's "OpenFlow
reduction" keeps only the ones still in force, so what is left is the
forwarding state the violation is about and where each rule came from.

The tables come from rebuilding the trace headlessly up to (not including)
the chosen violation event, with :class:`~netsleuth.rootcause.tables.TableWalk`
keeping each entry's provenance. A flow_mod is kept when it created or last
changed an entry still installed on a switch that is up at the violation;
every other one is listed with the reason it does not explain anything.

The reduced trace holds the kept flow_mods plus the events that shape the
network around them (connections, failures and recoveries, link changes,
host moves) and the violation itself, so ``netsleuth invariants`` on it
rebuilds exactly the same tables and reports the same violation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netsleuth.model.flowtable import FlowEntry
from netsleuth.model.of13.flowtable import FlowEntry13
from netsleuth.rootcause.tables import TableWalk, flow_mod_command, is_flow_mod, pick_violation
from netsleuth.trace import schema as ts

# What the reduced trace keeps besides flow_mods: the events that change which
# switches are up, which links exist, and which connections are open. Traffic,
# drops and delays leave no trace in the tables; recorded messages already
# carry their effect. Config changes say which host pairs the controller was
# told to keep apart, which the reachability check reads.
CONTEXT_KINDS = frozenset({"switch_connected", "switch_disconnected", "switch_failure", "switch_recovery",
                           "link_failure", "link_recovery", "host_migration", "controller_crash",
                           "controller_recovery", "config_change"})


@dataclass
class KeptFlowMod:
    seq: int
    t: float
    switch: str
    command: str
    entry: str          # the installed entry it explains, ovs-ofctl style
    role: str           # "installed" (created the entry) | "modified" (last changed it)

    def to_json(self) -> dict:
        return {"seq": self.seq, "t": self.t, "switch": self.switch, "command": self.command,
                "entry": self.entry, "role": self.role}


@dataclass
class DroppedFlowMod:
    seq: int
    t: float
    switch: str
    command: str
    reason: str
    by_seq: int | None

    def to_json(self) -> dict:
        return {"seq": self.seq, "t": self.t, "switch": self.switch, "command": self.command,
                "reason": self.reason, "by_seq": self.by_seq}


@dataclass
class Reduction:
    violation: ts.Violation | None
    kept: list[KeptFlowMod]
    dropped: list[DroppedFlowMod]
    tables: dict[str, list[FlowEntry] | list[FlowEntry13]]  # switch -> entries at the violation (up switches)
    down: list[str]                                 # switches down at the violation
    after_violation: int                            # flow_mods recorded after it (not considered)
    trace: ts.Trace                                 # the reduced trace
    extra: dict[str, Any] = field(default_factory=dict)

    def reasons(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for d in self.dropped:
            out[d.reason] = out.get(d.reason, 0) + 1
        return dict(sorted(out.items()))

    def to_json(self) -> dict:
        v = self.violation
        return {
            "violation": None if v is None else {"seq": v.seq, "t": v.t, "invariant": v.invariant,
                                                 "message": v.message},
            "flow_mods": len(self.kept) + len(self.dropped), "kept": [k.to_json() for k in self.kept],
            "dropped": [d.to_json() for d in self.dropped], "dropped_by_reason": self.reasons(),
            "tables": {s: [str(e) for e in es] for s, es in self.tables.items()},
            "switches_down": list(self.down), "flow_mods_after_violation": self.after_violation,
            "reduced_events": len(self.trace.events),
        }

    def summary(self, drop_limit: int = 20) -> list[str]:
        v = self.violation
        at = (f"the violation at seq {v.seq} (t={v.t:.3f}, {v.invariant}: {v.message})" if v is not None
              else "the end of the trace")
        total = len(self.kept) + len(self.dropped)
        lines = [f"flow tables at {at}: {sum(len(es) for es in self.tables.values())} entries on "
                 f"{len(self.tables)} switches up" + (f"; down: {', '.join(self.down)}" if self.down else "")]
        lines.append(f"{total} flow_mods before it -> {len(self.kept)} explain the tables; dropped: "
                     + (", ".join(f"{n} {r}" for r, n in self.reasons().items()) or "none"))
        for k in self.kept:
            lines.append(f"  keep seq {k.seq} t={k.t:.3f} {k.switch} {k.command} ({k.role}): {k.entry}")
        for d in self.dropped[:drop_limit]:
            by = f" by seq {d.by_seq}" if d.by_seq is not None else ""
            lines.append(f"  drop seq {d.seq} t={d.t:.3f} {d.switch} {d.command}: {d.reason}{by}")
        if len(self.dropped) > drop_limit:
            lines.append(f"  ... {len(self.dropped) - drop_limit} more dropped (--json lists them all)")
        return lines


def reduce_trace(trace: ts.Trace, violation: int | None = None, *, at_end: bool = False) -> Reduction:
    """Reduce ``trace`` to the flow_mods that explain its tables at the chosen violation.

    ``violation``: index of the persistent violation (None: the first; negative
    counts from the last); ``at_end``: the tables at the end of the trace instead.
    """
    target = None if at_end else pick_violation(trace.events, violation)
    cut = len(trace.events)
    if target is not None:
        cut = next(i for i, e in enumerate(trace.events) if e is target)
    before = trace.events[:cut]
    walk = TableWalk(trace.header)
    world = walk.run(before)
    names = {s.dpid: s.name for s in world.switches.values()} if world is not None else {}
    up = {n for n, ok in world.switch_up.items() if ok} if world is not None else set()

    explains: dict[int, tuple[str, FlowEntry | FlowEntry13, str]] = {}
    superseded: dict[int, int] = {}   # an intermediate MODIFY -> the later one that overrode it
    tables: dict[str, list[FlowEntry] | list[FlowEntry13]] = {}
    if world is not None:
        for name, switch in world.switches.items():
            if name not in up:
                continue
            tables[name] = switch.flow_entries()
            for entry in tables[name]:
                # The flow_mod that created the entry and the last one that changed it: a
                # MODIFY in between was itself overridden by the later one.
                seqs = walk.origin(name, entry)
                explains[seqs[0]] = (name, entry, "installed")
                if len(seqs) > 1:
                    explains[seqs[-1]] = (name, entry, "modified")
                for seq in seqs[1:-1]:
                    superseded[seq] = seqs[-1]

    removed_by: dict[int, tuple[str, int]] = {}
    for r in walk.removals:
        for seq in r.tracked.flow_mods:
            removed_by[seq] = (r.reason, r.by_seq)   # the last removal of anything it explained
    for name, live in walk.live.items():
        if name not in up:
            for t in live.values():
                for seq in t.flow_mods:
                    removed_by[seq] = ("lost in switch failure", None)  # type: ignore[assignment]  # no removing event

    kept: list[KeptFlowMod] = []
    dropped: list[DroppedFlowMod] = []
    for seq in sorted(walk.flow_mods):
        e = walk.flow_mods[seq]
        sw = names.get(e.dpid, f"dpid {e.dpid}")
        cmd = flow_mod_command(e)
        if seq in explains:
            name, entry, role = explains[seq]
            kept.append(KeptFlowMod(seq, e.t, name, cmd, str(entry), role))
        elif seq in superseded:
            dropped.append(DroppedFlowMod(seq, e.t, sw, cmd, "overridden", superseded[seq]))
        elif seq in removed_by:
            reason, by = removed_by[seq]
            dropped.append(DroppedFlowMod(seq, e.t, sw, cmd, reason, by))
        elif cmd.startswith("DELETE"):
            dropped.append(DroppedFlowMod(seq, e.t, sw, cmd, "delete (installs nothing)", None))
        else:
            dropped.append(DroppedFlowMod(seq, e.t, sw, cmd, "no effect (refused or superseded in place)", None))

    keep_seqs = {k.seq for k in kept}
    events = [e for e in before if e.seq in keep_seqs or e.kind in CONTEXT_KINDS]
    if target is not None:
        events.append(target)
    header = ts.TraceHeader(topology=trace.header.topology, topology_spec=trace.header.topology_spec,
                            controller=trace.header.controller, seed=trace.header.seed,
                            tool_version=trace.header.tool_version, command="reduce",
                            extra={"reduced_from": dict(trace.header.extra), "from_command": trace.header.command,
                                   "violation_seq": None if target is None else target.seq,
                                   "kept_flow_mods": sorted(keep_seqs),
                                   # the Faucet config the isolation/acl invariants read stays checkable
                                   **{k: v for k, v in trace.header.extra.items() if k == "faucet_config"}})
    after = sum(1 for e in trace.events[cut:] if is_flow_mod(e))
    return Reduction(target, kept, dropped, tables, sorted(set(world.switches) - up) if world else [], after,
                     ts.Trace(header, events))


__all__ = ["Reduction", "KeptFlowMod", "DroppedFlowMod", "reduce_trace", "CONTEXT_KINDS"]
