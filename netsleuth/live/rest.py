"""When a replay's outcome is decided without waiting out its whole deadline: the network at rest.

A replay judges its target violation for some rounds after its last input,
and before calling it "not reproduced" it waits as long as the recorded run
took to show the violation plus a slack for a loaded machine. On a
candidate that does not reproduce -- most of what a minimizer replays --
that slack is pure waiting. It can end early once nothing can change the
network any more:

* the World has nothing pending and no controller spoke for the round's
  quiet period (the caller says so: ``network_quiet``);
* every controller process is asleep (not runnable: a controller starved of
  CPU on a loaded machine is runnable, so it never counts as idle) and used
  no CPU over a whole ``window``: it is not half-way through handling
  something, and any bytes the switches sent it would have woken it.

What is left that could still act is a timer (the controller's or a
switch's); a replay only judges at rest after the recorded reaction time,
by which the recorded run had shown the violation. A controller netsleuth
does not run (``tcp:``) cannot be watched: never at rest, the deadline
stands.

:class:`RestJudge` is the decision, fed samples (pure);
:class:`ControllerSampler` reads the processes (psutil, the edge).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psutil

#: Seconds the network and the controllers must stay at rest before a replay may call it.
REST_WINDOW = 0.3
#: CPU seconds an idle controller may still use in that window (one 10 ms scheduler tick of an event loop).
IDLE_CPU = 0.011


@dataclass(frozen=True, slots=True)
class Sample:
    """The controllers as seen at one instant: CPU seconds used so far, and whether any is runnable."""

    cpu: float
    runnable: bool


@dataclass
class RestJudge:
    """Says whether the network has been at rest for ``window`` seconds, from samples taken as it goes."""

    window: float = REST_WINDOW
    idle_cpu: float = IDLE_CPU
    since: float | None = None       # when the current run of quiet samples began
    base: Sample | None = None       # the first sample of that run
    history: list[float] = field(default_factory=list)  # the CPU seconds of each run's end, for the report

    def update(self, now: float, sample: Sample | None, network_quiet: bool) -> bool:
        """Add one observation; True once quiet, asleep and CPU-idle for the whole window.

        ``sample`` None: the controllers cannot be watched, never at rest."""
        if sample is None or not network_quiet or sample.runnable:
            self.since, self.base = None, None
            return False
        if self.base is None or sample.cpu - self.base.cpu > self.idle_cpu:
            self.since, self.base = now, sample  # (re)start the window at this sample
            return False
        assert self.since is not None
        return now - self.since >= self.window


def network_settled(world: Any, horizon: float) -> bool:
    """The World has nothing to fire and no timer of its own falls due in the next ``horizon`` seconds."""
    return bool(world.settled_until(world.clock.now() + max(0.0, horizon)))


class ControllerSampler:
    """Reads the controller processes' CPU time and run state (each controller with its children)."""

    def __init__(self, controllers: Sequence[Any]) -> None:
        self.controllers = list(controllers)
        self._procs: dict[int, psutil.Process] = {}   # guard pid -> the controller's own process

    def sample(self) -> Sample | None:
        """None when some controller cannot be watched (external, or gone mid-run)."""
        cpu, runnable = 0.0, False
        for c in self.controllers:
            if getattr(c, "external", False):
                return None
            if not c.alive():
                continue  # a crashed controller does nothing more; a restart brings a new guard
            try:
                root = self._procs.get(c.proc.pid)
                if root is None:
                    pid = c.pid
                    if pid is None:
                        return None
                    root = self._procs[c.proc.pid] = psutil.Process(pid)
                for p in (root, *root.children(recursive=True)):
                    t = p.cpu_times()
                    cpu += t.user + t.system
                    runnable = runnable or p.status() in (psutil.STATUS_RUNNING, psutil.STATUS_DISK_SLEEP)
            except psutil.Error:
                return None
        return Sample(cpu, runnable)


__all__ = ["REST_WINDOW", "IDLE_CPU", "Sample", "RestJudge", "ControllerSampler", "network_settled"]
