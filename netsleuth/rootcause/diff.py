"""`netsleuth diff A B`: which events happened in one trace and not the other.

Comparing a replay with its original, or two runs of the same seed, is how
one sees what a change (a pruned input, a controller patch) actually
changed. Raw trace lines never match across runs (xids, cookies, buffer ids,
clock times all differ), so events are compared by *what* they are:

* internal events (OpenFlow messages, packet hops) by their masked
  fingerprint ``fp`` plus where they happened (switch/controller, node/port);
* inputs by kind and parameters (everything but ``seq``, ``t``, ``id`` and
  ``deps``, which are bookkeeping);
* the rest by their few identifying fields (a violation by invariant,
  persistence, hosts and switches; a ping by src, dst and outcome).

The comparison is a multiset one: an event key that occurs 5 times in A and
3 times in B leaves 2 occurrences "only in A". Occurrences are paired in
order (the i-th in A with the i-th in B), so the unpaired ones are the last
ones, and each is shown with *where* it sits: its own seq and time, and the
seq in the other trace of the last paired event before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from netsleuth.model.freeze import freeze
from netsleuth.rootcause.describe import describe
from netsleuth.trace import schema as ts

_BOOKKEEPING = ("seq", "t", "id", "deps")


def event_key(e: ts.Event) -> tuple:
    """What makes two events "the same" across runs (hashable)."""
    if isinstance(e, (ts.ControlToSwitch, ts.ControlToController)):
        return (e.kind, e.dpid, e.controller, e.fp)
    if isinstance(e, ts.PacketArrival):
        return (e.kind, e.node, e.port, e.fp)
    if e.is_input:
        d = ts.event_to_json(e)
        return (e.kind,) + tuple((k, freeze(d[k])) for k in sorted(d) if k not in _BOOKKEEPING and k != "kind")
    if isinstance(e, (ts.SwitchConnected,)):
        return (e.kind, e.dpid, e.controller)
    if isinstance(e, ts.SwitchDisconnected):
        return (e.kind, e.dpid, e.controller, e.reason)
    if isinstance(e, ts.PingResult):
        return (e.kind, e.src, e.dst, e.ok)
    if isinstance(e, ts.Violation):
        return (e.kind, e.invariant, e.persistent, e.hosts, e.switches)
    if isinstance(e, ts.ControllerEvent):
        return (e.kind, e.controller, e.what)
    d = ts.event_to_json(e)  # a kind registered later: all its fields but the bookkeeping
    return (e.kind,) + tuple((k, freeze(d[k])) for k in sorted(d) if k not in _BOOKKEEPING and k != "kind")


def _what(e: ts.Event) -> str:
    """The event in the words every tool uses, plus the fingerprint it was compared by."""
    words = describe(e)
    if isinstance(e, (ts.ControlToSwitch, ts.ControlToController, ts.PacketArrival)) and e.fp:
        return f"{words} [fp {_fp_text(e.fp)}]"
    return words


def _fp_text(fp: tuple) -> str:
    head, rest = fp[0], fp[1:]
    return str(head) + (" " + " ".join(_compact(x) for x in rest) if rest else "")


def _compact(x: Any) -> str:
    if isinstance(x, tuple):
        return "(" + ",".join(_compact(y) for y in x) + ")"
    return str(x)


@dataclass
class Unmatched:
    """One occurrence with no partner in the other trace."""

    seq: int
    t: float
    kind: str
    what: str
    after_other: int | None  # seq, in the other trace, of the last paired event before this one
    occurrence: int          # 1-based: which occurrence of this key in its own trace

    def to_json(self) -> dict:
        return {"seq": self.seq, "t": self.t, "kind": self.kind, "what": self.what,
                "after_other_seq": self.after_other, "occurrence": self.occurrence}


@dataclass
class TraceDiff:
    a: str
    b: str
    events_a: int
    events_b: int
    common: int
    only_a: list[Unmatched] = field(default_factory=list)
    only_b: list[Unmatched] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.only_a and not self.only_b

    def by_kind(self, side: list[Unmatched]) -> dict[str, int]:
        out: dict[str, int] = {}
        for u in side:
            out[u.kind] = out.get(u.kind, 0) + 1
        return dict(sorted(out.items()))

    def to_json(self) -> dict:
        return {"a": self.a, "b": self.b, "events_a": self.events_a, "events_b": self.events_b,
                "common": self.common, "identical": self.identical,
                "only_in_a": [u.to_json() for u in self.only_a], "only_in_b": [u.to_json() for u in self.only_b],
                "only_in_a_by_kind": self.by_kind(self.only_a), "only_in_b_by_kind": self.by_kind(self.only_b)}

    def summary(self, limit: int = 50) -> list[str]:
        lines = [f"A = {self.a}: {self.events_a} events; B = {self.b}: {self.events_b} events; "
                 f"{self.common} in common"]
        for name, side, other in (("A", self.only_a, "B"), ("B", self.only_b, "A")):
            kinds = ", ".join(f"{k} {n}" for k, n in self.by_kind(side).items()) or "none"
            lines.append(f"only in {name}: {len(side)} ({kinds})")
            for u in side[:limit]:
                where = f"after {other} seq {u.after_other}" if u.after_other is not None else f"before all of {other}"
                lines.append(f"  {name} seq {u.seq} t={u.t:.3f} [{where}] {u.what}")
            if len(side) > limit:
                lines.append(f"  ... {len(side) - limit} more (use --json for all)")
        if self.identical:
            lines.append("the traces contain the same events")
        return lines


def diff_events(a: Sequence[ts.Event], b: Sequence[ts.Event], name_a: str = "A", name_b: str = "B") -> TraceDiff:
    """Multiset difference of two event lists by :func:`event_key`, occurrences paired in order."""
    keys_a = [event_key(e) for e in a]
    keys_b = [event_key(e) for e in b]
    slots: dict[tuple, list[int]] = {}
    for j, k in enumerate(keys_b):
        slots.setdefault(k, []).append(j)
    partner_a: list[int | None] = []  # index in b of each a's partner
    used: dict[tuple, int] = {}
    for k in keys_a:
        n = used.get(k, 0)
        js = slots.get(k, ())
        partner_a.append(js[n] if n < len(js) else None)
        used[k] = n + 1
    partner_b: list[int | None] = [None] * len(b)
    for i, pj in enumerate(partner_a):
        if pj is not None:
            partner_b[pj] = i
    only_a = _unmatched(a, keys_a, partner_a, b)
    only_b = _unmatched(b, keys_b, partner_b, a)
    return TraceDiff(name_a, name_b, len(a), len(b), sum(1 for j in partner_a if j is not None), only_a, only_b)


def _unmatched(mine: Sequence[ts.Event], keys: list[tuple], partner: list[int | None],
               other: Sequence[ts.Event]) -> list[Unmatched]:
    out: list[Unmatched] = []
    last: int | None = None
    seen: dict[tuple, int] = {}
    for i, e in enumerate(mine):
        seen[keys[i]] = seen.get(keys[i], 0) + 1
        if partner[i] is not None:
            last = partner[i]
            continue
        out.append(Unmatched(e.seq, e.t, e.kind, _what(e), other[last].seq if last is not None else None,
                             seen[keys[i]]))
    return out


__all__ = ["TraceDiff", "Unmatched", "diff_events", "event_key"]
