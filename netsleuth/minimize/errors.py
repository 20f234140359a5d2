"""Typed errors of the minimizer; each carries the fix and, when there is one, the partial result."""

from __future__ import annotations

from typing import Any

from netsleuth.errors import EnvironmentSetupError, NetsleuthError


class MinimizationError(NetsleuthError):
    """Minimization could not go on; ``result`` holds what was found so far (or None)."""

    def __init__(self, problem: str, fix: str = "", details: str = "", result: Any = None) -> None:
        super().__init__(problem, fix, details)
        self.result = result


class NotReproducibleError(MinimizationError):
    """The full input sequence did not reproduce the violation in any of its K replays."""


class WorkerLostError(MinimizationError):
    """A worker process or Ray actor died (crash, OOM kill) while replaying."""


class ExecutorSpecError(NetsleuthError):
    """An ``--executor`` value that names no executor."""


class RayUnavailableError(EnvironmentSetupError):
    """``--executor ray`` was asked for but Ray is not installed (or cannot start)."""
