"""PEEK (STS thesis, Figure 4.2): infer which original internal events a pruned candidate will still cause.

Replaying a subsequence with the original run's expectations goes wrong in
two ways: events caused by a pruned input never come (each costs a timeout),
and events that do come may be expected in the wrong window (before input k
in the original, after it now) so they time out first and then count as new.
PEEK replaces the original expectations by inferred ones: for each input k
of the candidate it replays the prefix ``candidate[:k]`` from scratch (we
have no checkpoints of a real os-ken process), records the internal events
of the window that follows its last input, and keeps those original events
of window k (recorded between input k-1 and input k of the candidate) that
were seen again, matched by masked fingerprint per channel. Events seen but
not in the original are not expected (they are let through as new anyway).

This module is pure: the prefix replay is a function handed in, so the
policy is tested with synthetic replays. Two things keep its cost down:

* **memo by prefix**: the observation of a prefix (a tuple of input ids) is
  stored and reused by every later candidate that shares it -- delta
  debugging's candidates share long prefixes;
* **original prefixes**: while the candidate still equals the original
  input sequence up to and including input k, nothing was pruned before it
  and window k's original expectations are exact; no replay is needed.

A prefix replay itself waits for the inferred expectations of the earlier
windows (the plan is built incrementally), so it reaches the same state a
checkpoint would have held in STS.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from netsleuth.schedulers.replay import Expected, ReplayPlan, _channel
from netsleuth.trace import schema as ts

Observed = tuple[Hashable, tuple]
"""One observed internal event: (channel, masked fingerprint)."""

PrefixReplay = Callable[[ReplayPlan], Sequence[Observed]]
"""Replays ``plan.inputs`` (a prefix) waiting for ``plan``'s expectations, and returns the internal
events delivered in the window after its last input (for the empty prefix: from the start)."""


@dataclass
class PeekStats:
    prefixes_replayed: int = 0
    memo_hits: int = 0
    original_windows: int = 0     # windows whose expectations were taken from the original (no pruning yet)
    seconds: float = 0.0
    inferred_expected: int = 0    # over all inferred plans
    original_expected: int = 0    # what the original plans would have expected

    def to_json(self) -> dict:
        return {"prefixes_replayed": self.prefixes_replayed, "memo_hits": self.memo_hits,
                "original_windows": self.original_windows, "seconds": round(self.seconds, 3),
                "inferred_expected": self.inferred_expected, "original_expected": self.original_expected}

    def add(self, other: PeekStats) -> None:
        for name in ("prefixes_replayed", "memo_hits", "original_windows", "seconds", "inferred_expected",
                     "original_expected"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def observed_key(e: ts.ControlToSwitch | ts.ControlToController) -> Observed:
    """What a prefix replay reports for a delivered message; the key the Matcher matches on."""
    return (_channel(e), tuple(e.fp))


def match_window(expected: Sequence[Expected], observed: Sequence[Observed]) -> list[Expected]:
    """The expected events of one window that were observed (multiset match per channel+fingerprint,
    earliest expected first), in recorded order."""
    counts: dict[Observed, int] = defaultdict(int)
    for o in observed:
        counts[o] += 1
    kept = []
    for ex in expected:
        key = (ex.channel, ex.fp)
        if counts.get(key, 0) > 0:
            counts[key] -= 1
            kept.append(ex)
    return kept


def plan_from_windows(inputs: Sequence[ts.InputEvent], windows: Sequence[Sequence[Expected]],
                      start_t: float) -> ReplayPlan:
    """A plan expecting ``windows[k]`` before input k (``len(windows) == len(inputs)``)."""
    expected: list[Expected] = []
    before = []
    for w in windows:
        expected.extend(w)
        before.append(len(expected))
    return ReplayPlan(list(inputs), expected, before, start_t)


@dataclass
class Peek:
    """Infers expectation plans for candidates of one original trace; memoizes prefix observations."""

    events: list[ts.Event]
    replay_prefix: PrefixReplay
    memo: dict[tuple[str, ...], tuple[Observed, ...]] = field(default_factory=dict)
    stats: PeekStats = field(default_factory=PeekStats)

    def __post_init__(self) -> None:
        # is_input events are InputEvents, with an id
        self._original_ids = tuple(e.id for e in self.events if e.is_input)  # type: ignore[attr-defined]

    def observe(self, prefix: tuple[ts.InputEvent, ...], plan: ReplayPlan) -> tuple[Observed, ...]:
        key = tuple(e.id for e in prefix)
        if key in self.memo:
            self.stats.memo_hits += 1
            return self.memo[key]
        seen = tuple(self.replay_prefix(plan))
        self.stats.prefixes_replayed += 1
        self.memo[key] = seen
        return seen

    def infer(self, candidate: Sequence[ts.InputEvent]) -> ReplayPlan:
        """The plan to replay ``candidate`` with: per input, the original events PEEK saw again."""
        t0 = time.perf_counter()
        candidate = tuple(candidate)
        original = ReplayPlan.from_trace(self.events, list(candidate))
        windows: list[list[Expected]] = []
        lo = 0
        for k, _inp in enumerate(candidate):
            hi = original.before[k]
            window = original.expected[lo:hi]
            if self._original_ids[:k + 1] == tuple(e.id for e in candidate[:k + 1]):
                windows.append(list(window))
                self.stats.original_windows += 1
            else:
                prefix = candidate[:k]
                seen = self.observe(prefix, plan_from_windows(prefix, windows, original.start_t))
                windows.append(match_window(window, seen))
            lo = hi
        plan = plan_from_windows(candidate, windows, original.start_t)
        self.stats.inferred_expected += len(plan.expected)
        self.stats.original_expected += original.before[-1] if original.before else 0
        self.stats.seconds += time.perf_counter() - t0
        return plan


__all__ = ["Peek", "PeekStats", "Observed", "PrefixReplay", "match_window", "observed_key", "plan_from_windows"]
