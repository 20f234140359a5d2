"""Time as an injected dependency.

Flow timeouts, recorded spacing and replay all read time; reading it from
one injected clock is what lets the same code run against the wall clock
with a real controller and against virtual time in the model checker.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...


class VirtualClock:
    """Time that moves only when told to."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("virtual time cannot go backwards")
        self._now += seconds

    def set(self, t: float) -> None:
        if t < self._now:
            raise ValueError("virtual time cannot go backwards")
        self._now = t


class WallClock:
    """Seconds since the clock was made, from the monotonic clock."""

    def __init__(self) -> None:
        self._start = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self._start
