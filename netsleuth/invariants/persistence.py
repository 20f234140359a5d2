"""Persistence thresholds: tell a bug from a network that is still converging.

Right after a link fails or a host moves, a correct controller needs a few
rounds to fix the tables; checking every round would flag all of that. A
violation counts as persistent only once the same finding (the same
defect: see :func:`finding_key`) has been seen in ``threshold`` consecutive checks.
Findings that disappear earlier are transient: recorded, not reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from netsleuth.invariants.finding import Finding


def finding_key(f: Finding) -> tuple:
    """A finding's identity across rounds: the defect it groups (``details["group"]``: a loop's
    cycle, a blackhole's rule, an unreachable pair's cause) when it has one, so the hosts and
    entry points a grouped violation lists can change without resetting its streak; else
    its invariant, hosts and switches."""
    group = f.details.get("group") if isinstance(f.details, dict) else None
    if group:
        return (f.invariant, "group", tuple(group))
    return (f.invariant, f.hosts, f.switches)


@dataclass(slots=True)
class TrackedFinding:
    finding: Finding
    first_round: int
    streak: int = 1
    reported: bool = False


@dataclass(slots=True)
class RoundOutcome:
    """What one check round changed: findings that just became persistent or just cleared."""

    new_persistent: list[TrackedFinding] = field(default_factory=list)
    new_transient: list[TrackedFinding] = field(default_factory=list)   # seen for the first time this round
    cleared: list[TrackedFinding] = field(default_factory=list)         # gone before (or after) persisting


class PersistenceTracker:
    """Counts, per finding, the consecutive rounds it has been present."""

    def __init__(self, threshold: int) -> None:
        if threshold < 1:
            raise ValueError("a persistence threshold is at least 1 round")
        self.threshold = threshold
        self.active: dict[tuple, TrackedFinding] = {}

    def update(self, round_no: int, findings: list[Finding]) -> RoundOutcome:
        out = RoundOutcome()
        seen: dict[tuple, Finding] = {}
        for f in findings:
            seen.setdefault(finding_key(f), f)
        for key in list(self.active):
            if key not in seen:
                out.cleared.append(self.active.pop(key))
        for key, f in seen.items():
            t = self.active.get(key)
            if t is None:
                t = self.active[key] = TrackedFinding(f, round_no)
                out.new_transient.append(t)
            else:
                t.streak += 1
                t.finding = f
            if not t.reported and t.streak >= self.threshold:
                t.reported = True
                out.new_persistent.append(t)
        return out

    def persistent(self) -> list[TrackedFinding]:
        return [t for t in self.active.values() if t.reported]
