"""Flow tables through a trace, with the provenance of every entry.

``reduce`` must say which flow_mods explain the tables at the violation and
why every other one does not (overridden, deleted, expired, lost in a
reboot); ``trace-packet`` must say which flow_mod installed the rule a packet
matched. Both need the same thing: the switches' state rebuilt headlessly
from the trace (:func:`netsleuth.world.rebuild.replay_states`, reused as is),
plus a ledger that follows each :class:`FlowEntry` object from the flow_mod
that created it, through the MODIFYs that changed it, to the event that
removed it.

A 1.0 entry is followed by its ``FlowEntry.serial``: an ADD installs a new
serial, a MODIFY keeps it (the table hands out snapshots, so the ledger keeps
the latest one it saw). A 1.3 entry is followed by object identity (a MODIFY
changes it in place); ids are only compared while the ledger holds a
reference to the entry, so they are never reused for another one. A reboot
replaces the whole Switch.

Rebuilding does not re-run packets, so by itself it never refreshes idle
timers; :class:`TableWalk` also counts each recorded packet arrival on the
entry it hits (as the live switch did), so idle timeouts expire when they
really did.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeGuard

from os_ken.ofproto import ofproto_v1_0 as ofp

from netsleuth.errors import TraceFormatError
from netsleuth.model.flowtable import FlowEntry
from netsleuth.model.of13.flowtable import FlowEntry13
from netsleuth.model.packet import Packet
from netsleuth.trace import schema as ts
from netsleuth.world.rebuild import replay_states
from netsleuth.world.world import World

FLOW_MOD_COMMANDS = {ofp.OFPFC_ADD: "ADD", ofp.OFPFC_MODIFY: "MODIFY", ofp.OFPFC_MODIFY_STRICT: "MODIFY_STRICT",
                     ofp.OFPFC_DELETE: "DELETE", ofp.OFPFC_DELETE_STRICT: "DELETE_STRICT"}


def behaviour(e: FlowEntry | FlowEntry13) -> tuple:
    """What a flow_mod decides about an entry (no counters, no timers that traffic moves)."""
    if isinstance(e, FlowEntry13):
        return (e.table_id, e.match.sort_key(), e.priority, e.instructions, e.cookie, e.idle_timeout,
                e.hard_timeout, e.flags, e.installed_at)
    return (e.match, e.priority, e.actions, e.cookie, e.idle_timeout, e.hard_timeout, e.flags, e.installed_at)


def is_flow_mod(e: ts.Event) -> TypeGuard[ts.ControlToSwitch]:
    return isinstance(e, ts.ControlToSwitch) and e.msg.get("type") == "FLOW_MOD"


def flow_mod_command(e: ts.ControlToSwitch) -> str:
    body = next(iter(e.msg["body"].values()))
    return FLOW_MOD_COMMANDS.get(body.get("command"), f"command {body.get('command')}")


@dataclass
class TrackedEntry:
    """One installed entry and the flow_mods (seqs) that made it what it is."""

    switch: str
    entry: FlowEntry | FlowEntry13
    flow_mods: list[int]
    shape: tuple


@dataclass
class Removal:
    """A tracked entry that left its table: when, why and by which event."""

    tracked: TrackedEntry
    reason: str     # "overridden" | "deleted" | "expired" | "lost in switch failure"
    by_seq: int
    t: float


@dataclass
class TableWalk:
    """Replays a trace headlessly and keeps the provenance ledger (see the module docstring)."""

    header: ts.TraceHeader
    count_packets: bool = True
    live: dict[str, dict[int, TrackedEntry]] = field(default_factory=dict)
    removals: list[Removal] = field(default_factory=list)
    flow_mods: dict[int, ts.ControlToSwitch] = field(default_factory=dict)
    world: World | None = None
    _switch_obj: dict[str, object] = field(default_factory=dict)

    def walk(self, events: Iterable[ts.Event]) -> Iterator[tuple[ts.Event, World]]:
        """Yield (event, world) after each event is applied.

        For a packet arrival the world is the one the packet met: its lookup
        (which refreshes the hit entry's idle timer) is done only once the
        consumer resumes the generator.
        """
        for e, world in replay_states(self.header, events):
            self.world = world
            if not self._switch_obj:
                self._switch_obj = {n: s for n, s in world.switches.items()}
                self.live = {n: {} for n in world.switches}
            self._account(e, world)
            yield e, world
            if self.count_packets and isinstance(e, ts.PacketArrival):
                hit = _count_lookup(world, e)
                if hit is not None:  # a snapshot: keep the tracked one current (idle timer, counters)
                    t = self.live.get(e.node, {}).get(_entry_key(hit))
                    if t is not None:
                        t.entry = hit

    def run(self, events: Iterable[ts.Event]) -> World | None:
        for _ in self.walk(events):
            pass
        return self.world

    def origin(self, switch: str, entry: FlowEntry | FlowEntry13) -> list[int]:
        """The flow_mod seqs that made ``entry`` (live on ``switch``) what it is."""
        t = self.live.get(switch, {}).get(_entry_key(entry))
        return list(t.flow_mods) if t is not None and _same(t.entry, entry) else []

    # ------------------------------------------------------------------ ledger
    def _account(self, e: ts.Event, world: World) -> None:
        now = world.clock.now()
        if is_flow_mod(e):
            self.flow_mods[e.seq] = e
        for name, switch in world.switches.items():
            live = self.live[name]
            if switch is not self._switch_obj[name]:  # rebooted: everything it held is gone
                self._switch_obj[name] = switch
                self._drop_all(name, "lost in switch failure", e, now)
            if isinstance(e, ts.SwitchFailure) and e.switch == name:
                self._drop_all(name, "lost in switch failure", e, now)
                continue
            touched = is_flow_mod(e) and world.by_dpid.get(e.dpid) is switch
            if not touched and switch.flow_count == len(live):
                continue  # only expiry could have changed this table, and it did not
            current = {_entry_key(x): x for x in switch.flow_entries()}
            for key in [k for k, t in live.items() if not _same(current.get(k), t.entry)]:
                t = live.pop(key)
                self.removals.append(Removal(t, self._why_removed(t, e, touched, now), e.seq, now))
            if not touched:
                continue
            for key, entry in current.items():
                known = live.get(key)
                if known is None:
                    live[key] = TrackedEntry(name, entry, [e.seq], behaviour(entry))
                    continue
                known.entry = entry
                if behaviour(entry) != known.shape:
                    known.flow_mods.append(e.seq)
                    known.shape = behaviour(entry)

    def _why_removed(self, t: TrackedEntry, e: ts.Event, touched: bool, now: float) -> str:
        if t.entry.expiry_reason(now) is not None:
            return "expired"
        if touched:
            cmd = flow_mod_command(e)  # type: ignore[arg-type]  # touched: a flow_mod
            return "deleted" if cmd.startswith("DELETE") else "overridden"
        return "expired"

    def _drop_all(self, name: str, reason: str, e: ts.Event, now: float) -> None:
        live = self.live[name]
        for t in live.values():
            self.removals.append(Removal(t, reason, e.seq, now))
        live.clear()


def _entry_key(x: FlowEntry | FlowEntry13) -> int:
    """What tells one installed entry from another: a 1.0 entry's serial (the table hands
    out snapshots, see ``FlowEntry.serial``), a 1.3 entry's identity."""
    return x.serial if isinstance(x, FlowEntry) else id(x)


def _same(a: FlowEntry | FlowEntry13 | None, b: FlowEntry | FlowEntry13) -> bool:
    """Whether ``a`` is still the installed entry ``b`` (same key assumed)."""
    if a is None:
        return False
    return isinstance(a, FlowEntry) or a is b


def _count_lookup(world: World, e: ts.PacketArrival) -> FlowEntry | None:
    """The lookup the live switch made for this arrival (counters, idle timer); the 1.0 entry hit."""
    switch = world.switches.get(e.node)
    if switch is None or not world.switch_up.get(e.node, False):
        return None
    port = switch.ports.get(e.port)
    if port is None or not port.usable:
        return None
    try:
        packet = Packet.from_json(e.packet)
    except Exception as exc:  # noqa: BLE001 -- a garbled packet is a trace error, said once
        raise TraceFormatError(f"event {e.seq}: the recorded packet cannot be parsed ({exc})",
                               "re-record the trace") from None
    return switch.lookup_recorded(packet, e.port, e.t)


def pick_violation(events: list[ts.Event], index: int | None) -> ts.Violation | None:
    """The ``index``-th persistent violation (None: the first, if any)."""
    found = [e for e in events if isinstance(e, ts.Violation) and e.persistent]
    if index is None:
        return found[0] if found else None
    if not found:
        raise TraceFormatError("the trace has no persistent violation",
                               "drop --violation to use the tables at the end of the trace")
    if not -len(found) <= index < len(found):
        raise TraceFormatError(f"the trace has {len(found)} persistent violation(s); there is no --violation {index}",
                               f"pick --violation between 0 and {len(found) - 1} (or -1 for the last)")
    return found[index]


__all__ = ["TableWalk", "TrackedEntry", "Removal", "behaviour", "is_flow_mod", "flow_mod_command", "pick_violation"]
