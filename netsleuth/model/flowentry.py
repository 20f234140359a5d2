"""One OpenFlow 1.0 flow entry, as a frozen snapshot, and the errors a flow_mod can draw.

A flow table stores its entries in columns (:mod:`netsleuth.model.flowindex`);
a :class:`FlowEntry` is what one installation looks like when asked for
(entries, lookups, statistics), so changing one changes nothing: every change
goes through the table, and ``FlowEntry.serial`` says which installation a
snapshot shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from os_ken.ofproto import ofproto_v1_0 as ofp

from netsleuth.errors import NetsleuthError
from netsleuth.model.actions import Action, Enqueue, Output, action_from_json, action_key, action_to_json
from netsleuth.model.match import Match

_INF = float("inf")


class FlowTableError(NetsleuthError):
    """A flow_mod the table refuses; ``err_type``/``err_code`` say which OpenFlow ERROR to reply with."""

    err_type = ofp.OFPET_FLOW_MOD_FAILED
    err_code = ofp.OFPFMFC_UNSUPPORTED


class FlowOverlapError(FlowTableError):
    """ADD with OFPFF_CHECK_OVERLAP hit an overlapping entry of the same priority."""

    err_code = ofp.OFPFMFC_OVERLAP

    def __init__(self, match: Match, priority: int, existing: FlowEntry) -> None:
        super().__init__(
            f"flow priority={priority},{match} overlaps installed flow {existing}",
            "give the new flow a different priority or a disjoint match, or drop OFPFF_CHECK_OVERLAP")
        self.existing = existing


@dataclass(frozen=True, slots=True)
class FlowEntry:
    """One installed flow as the table had it when asked (a snapshot: the table keeps its
    entries in columns, see :class:`PatternIndex`, and changes them only through its own
    methods).  Identity is (match, priority)."""

    match: Match
    priority: int
    actions: tuple[Action, ...]
    cookie: int = 0
    idle_timeout: int = 0
    hard_timeout: int = 0
    flags: int = 0
    installed_at: float = 0.0
    last_used: float = 0.0
    packet_count: int = 0
    byte_count: int = 0
    # Which installation this is: an ADD (also one replacing an identical entry) makes a new
    # serial, MODIFY and traffic keep it.  Snapshots of one installed entry share it, so
    # provenance tools can follow an entry without object identity.  Not part of equality.
    serial: int = field(default=0, compare=False)

    def rank(self) -> tuple[Any, ...]:
        """Position in canonical order; smaller wins a lookup."""
        return (0 if self.match.wildcards == 0 else 1, -self.priority, self.match.sort_key())

    def deadline(self) -> float | None:
        """When this entry expires if it sees no more traffic (None: never)."""
        d = min(self._idle_deadline(), self._hard_deadline())
        return None if d == _INF else d

    def expiry_reason(self, now: float) -> int | None:
        """OFPRR_HARD_TIMEOUT / OFPRR_IDLE_TIMEOUT if expired at ``now``; the earlier deadline
        decides (hard on a tie)."""
        idle, hard = self._idle_deadline(), self._hard_deadline()
        if min(idle, hard) > now:
            return None
        # os-ken's constants are untyped ints
        return ofp.OFPRR_HARD_TIMEOUT if hard <= idle else ofp.OFPRR_IDLE_TIMEOUT  # type: ignore[no-any-return]

    def _idle_deadline(self) -> float:
        return self.last_used + self.idle_timeout if self.idle_timeout else _INF

    def _hard_deadline(self) -> float:
        return self.installed_at + self.hard_timeout if self.hard_timeout else _INF

    def has_output(self, port: int) -> bool:
        """Whether an Output or Enqueue action sends to ``port`` (the out_port filter)."""
        return any(isinstance(a, (Output, Enqueue)) and a.port == port for a in self.actions)

    def duration(self, now: float) -> float:
        return max(0.0, now - self.installed_at)

    def key(self, with_counters: bool = True) -> tuple[Any, ...]:
        """Everything that makes this entry behave as it does, as plain ints and floats."""
        m = self.match
        base = (m.wildcards, m.values, self.priority, tuple(action_key(a) for a in self.actions),
                self.cookie, self.idle_timeout, self.hard_timeout, self.flags, self.installed_at, self.last_used)
        if with_counters:
            return base + (self.packet_count, self.byte_count)
        return base

    def copy(self) -> FlowEntry:
        return FlowEntry(self.match, self.priority, self.actions, self.cookie, self.idle_timeout,
                         self.hard_timeout, self.flags, self.installed_at, self.last_used,
                         self.packet_count, self.byte_count)

    def to_json(self) -> dict[str, Any]:
        return {"match": self.match.to_json(), "priority": self.priority,
                "actions": [action_to_json(a) for a in self.actions], "cookie": self.cookie,
                "idle_timeout": self.idle_timeout, "hard_timeout": self.hard_timeout, "flags": self.flags,
                "installed_at": self.installed_at, "last_used": self.last_used,
                "packet_count": self.packet_count, "byte_count": self.byte_count}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> FlowEntry:
        try:
            return cls(Match.from_json(d["match"]), d["priority"],
                       tuple(action_from_json(a) for a in d["actions"]), d["cookie"], d["idle_timeout"],
                       d["hard_timeout"], d["flags"], d["installed_at"], d["last_used"],
                       d["packet_count"], d["byte_count"])
        except (KeyError, TypeError) as exc:
            raise FlowTableError(f"bad flow entry JSON: missing or malformed {exc}",
                                 "produce it with FlowEntry.to_json()") from None

    def __str__(self) -> str:
        """ovs-ofctl dump-flows style."""
        parts = [f"cookie={self.cookie:#x}", f"n_packets={self.packet_count}", f"n_bytes={self.byte_count}"]
        if self.idle_timeout:
            parts.append(f"idle_timeout={self.idle_timeout}")
        if self.hard_timeout:
            parts.append(f"hard_timeout={self.hard_timeout}")
        match = str(self.match)
        head = f"priority={self.priority}" + (f",{match}" if match else "")
        acts = ",".join(str(a) for a in self.actions) or "drop"
        return ", ".join(parts) + f", {head} actions={acts}"
