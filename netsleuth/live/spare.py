"""Controllers for the next session, started while the current one runs.

A minimizer replays dozens of candidates one after another on each worker,
each against a fresh controller; starting one (a Python controller imports
its framework) takes about a second, in which the replay waits. A spare
takes that second out of the critical path: the next replay's controllers
are launched in a background thread as soon as the current replay has its
own, and the next replay only connects to them.

It is sound because a spare is exactly the controller the next replay
would have started -- same command, its own port, its log in that replay's
folder, no switch connected -- only launched a few seconds earlier: until
a switch connects it has nothing to react to. Reusing one controller for
several replays would not be: it keeps what the previous replay taught it
(learned MAC addresses, installed-flow bookkeeping, timers), so a verdict
would depend on the candidates replayed before it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Sequence
from pathlib import Path

from netsleuth.controllers.external import ControllerProcess
from netsleuth.controllers.spec import as_spec
from netsleuth.errors import NetsleuthError
from netsleuth.model.topology import Topology
from netsleuth.trace.controller_spec import ControllerSpec, Kind


def session_controllers(specs: Sequence[str | ControllerSpec], out: Path, topology: Topology,
                        coverage_dir: Path | None = None, coverage_framework: bool = False) -> list[ControllerProcess]:
    """The controller processes a session in ``out`` runs (not started): one per spec, logs in ``out``."""
    return [ControllerProcess(as_spec(s), out / ("controller.log" if i == 0 else f"controller-c{i}.log"),
                              name=f"c{i}", topology=topology, coverage_dir=coverage_dir,
                              coverage_framework=coverage_framework)
            for i, s in enumerate(specs)]


def can_prestart(specs: Sequence[str | ControllerSpec]) -> bool:
    """Only controllers netsleuth launches on a port of its choice: a fixed port cannot hold two at once."""
    return all(s.kind is not Kind.TCP and not s.port for s in map(as_spec, specs))


class SpareControllers:
    """Keeps the next session's controllers starting in the background; one spare set at a time."""

    def __init__(self, specs: Sequence[str | ControllerSpec], topology: Topology) -> None:
        self.specs = [as_spec(s) for s in specs]
        self.topology = topology
        self._out: Path | None = None
        self._procs: list[ControllerProcess] = []
        self._thread: threading.Thread | None = None
        self._failed = False
        self._closing = False

    def prepare(self, out: Path) -> None:
        """Start launching the controllers of the session that will run in ``out``."""
        self.close()
        Path(out).mkdir(parents=True, exist_ok=True)
        self._out, self._failed, self._closing = Path(out), False, False
        self._procs = session_controllers(self.specs, Path(out), self.topology)
        self._thread = threading.Thread(target=self._start, name="spare-controllers", daemon=True)
        self._thread.start()

    def _start(self) -> None:
        try:
            for c in self._procs:
                if self._closing:
                    break
                c.start()
        except NetsleuthError:
            self._failed = True  # the session starts its own and reports the error properly

    def take(self, out: Path) -> list[ControllerProcess] | None:
        """The controllers prepared for ``out``, listening; None if there are none (the session starts its own)."""
        if self._thread is None or self._out != Path(out):
            return None
        self._thread.join()
        procs, self._procs, self._thread, self._out = self._procs, [], None, None
        if self._failed or not all(c.alive() for c in procs):
            for c in procs:
                c.stop()
            return None
        return procs

    def close(self) -> None:
        """Stop a spare nobody took, without waiting for it to finish starting: killed, its start fails."""
        self._closing = True
        for c in self._procs:
            if c.proc is not None and c.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(c.proc.pid, signal.SIGKILL)
        if self._thread is not None:
            self._thread.join()
        for c in self._procs:
            c.stop()
        self._procs, self._thread, self._out = [], None, None


__all__ = ["SpareControllers", "session_controllers", "can_prestart"]
