"""What a replay expects, and how it recognises it: the plan and the matcher.

A real controller never repeats a run byte for byte (xids, buffer ids and
cookies differ), so the replayer compares internal events by their masked
fingerprints, per control channel and in order. Before an input is injected
the replayer waits until every internal event that preceded it in the
original run has happened again in an equivalent form, or its time ran out
(the recorded gap plus epsilon); this is STS's happens-before replay at the
granularity of inputs. Keepalives (echo) are not waited for; messages the
original did not have are let through and counted as new.
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field

from netsleuth.trace import schema as ts

KEEPALIVE = {"ECHO_REQUEST", "ECHO_REPLY"}


def _channel(e: ts.ControlToSwitch | ts.ControlToController) -> tuple[int, str, str]:
    return (e.dpid, e.controller, "to_switch" if isinstance(e, ts.ControlToSwitch) else "to_controller")


@dataclass(frozen=True, slots=True)
class Expected:
    seq: int                    # in the original trace
    t: float
    channel: tuple[int, str, str]
    fp: tuple


@dataclass
class ReplayPlan:
    """The inputs to inject, their recorded times, and the internal events expected before each."""

    inputs: list[ts.InputEvent]
    expected: list[Expected]
    # for input k: indices into ``expected`` of the events recorded before it
    before: list[int] = field(default_factory=list)
    start_t: float = 0.0

    @classmethod
    def from_trace(cls, events: list[ts.Event], inputs: list[ts.InputEvent] | None = None,
                   whitelist: frozenset[str] = frozenset(KEEPALIVE)) -> ReplayPlan:
        """``inputs`` defaults to all inputs of the trace; a subsequence (minimization) may be given."""
        expected = [Expected(e.seq, e.t, _channel(e), tuple(e.fp)) for e in events
                    if isinstance(e, (ts.ControlToSwitch, ts.ControlToController))
                    and e.msg.get("type") not in whitelist]
        chosen = inputs if inputs is not None else [e for e in events if e.is_input]
        before = []
        i = 0
        for inp in chosen:
            while i < len(expected) and expected[i].seq < inp.seq:
                i += 1
            before.append(i)
        start = next((e.t for e in events if isinstance(e, ts.SwitchConnected)), 0.0)
        # only is_input events, all InputEvents
        return cls(list(chosen), expected, before, start)  # type: ignore[arg-type]


class Matcher:
    """Matches delivered messages to expected ones, per channel, in recorded order."""

    def __init__(self, plan: ReplayPlan) -> None:
        self.plan = plan
        self.pending: dict[tuple, deque[int]] = defaultdict(deque)
        for idx, ex in enumerate(plan.expected):
            self.pending[(ex.channel, ex.fp)].append(idx)
        self.matched: set[int] = set()
        self.timed_out: set[int] = set()
        self.new = 0
        self.keepalives = 0

    def observe(self, e: ts.Event) -> None:
        """A control message was delivered in the replay."""
        if not isinstance(e, (ts.ControlToSwitch, ts.ControlToController)):
            return
        if e.msg.get("type") in KEEPALIVE:
            self.keepalives += 1
            return
        q = self.pending.get((_channel(e), tuple(e.fp)))
        while q and q[0] in self.timed_out:
            q.popleft()
        if q:
            self.matched.add(q.popleft())
        else:
            self.new += 1

    def outstanding_before(self, k: int) -> list[int]:
        """Expected events recorded before input ``k`` that have neither matched nor timed out."""
        return [i for i in range(self.plan.before[k]) if i not in self.matched and i not in self.timed_out]

    def time_out(self, indices: list[int]) -> None:
        self.timed_out.update(indices)

    def stats(self) -> dict:
        total = len(self.plan.expected)
        return {"expected": total, "matched": len(self.matched), "timed_out": len(self.timed_out),
                "unreached": total - len(self.matched) - len(self.timed_out), "new": self.new,
                "keepalives": self.keepalives}
