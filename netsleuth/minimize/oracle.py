"""The one thing the minimizer knows about replay: an Oracle.

An oracle answers "does this candidate subsequence of inputs still trigger the
violation?" for one replay. The minimizer calls it up to K times per
candidate (a candidate reproduces if any of its K replays does) and never
looks inside: replay against a real controller (netsleuth.jobs.replay), an
in-process simulation (netsleuth.minimize.synthetic) and test doubles are
interchangeable.

Oracles run in worker processes or Ray actors, so what crosses the process
boundary is kept to plain data:

* an **oracle factory** -- a picklable callable ``factory(worker_id) ->
  Oracle`` (a module-level class instance or a ``functools.partial``) --
  is sent once per worker; each worker builds its own oracle from it, so each
  can own its controller instance and ports (``worker_id`` is 0..J-1 and is
  the natural port offset);
* per candidate, only the atom indices are sent; the worker rebuilds the
  candidate's input events (with host migrations rewritten) itself.

A plain oracle object (anything with ``reproduces``) is accepted too: it is
used as is by the serial executor and pickled once per worker otherwise.
If it has a ``close()`` method, it is called when its worker shuts down.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from netsleuth.trace.schema import InputEvent


@dataclass(frozen=True, slots=True)
class ReplayVerdict:
    """One replay's verdict: did the violation reproduce, and what the replayer saw (JSON-shaped)."""

    reproduced: bool
    details: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Oracle(Protocol):
    """Replays one candidate once. Must be deterministic in the candidate to get serial == parallel."""

    def reproduces(self, candidate: tuple[InputEvent, ...]) -> ReplayVerdict: ...


OracleFactory = Callable[[int], Oracle]
"""``factory(worker_id) -> Oracle``; must be picklable for the local pool and Ray executors."""


@dataclass(frozen=True)
class FixedOracle:
    """Factory that hands every worker (a copy of) the same oracle object."""

    oracle: Oracle

    def __call__(self, worker_id: int) -> Oracle:
        return self.oracle


def as_factory(oracle: Oracle | OracleFactory) -> OracleFactory:
    """An oracle object or a factory -> a factory."""
    if isinstance(oracle, Oracle):  # runtime_checkable: true when it has a .reproduces
        return FixedOracle(oracle)
    if callable(oracle):
        return oracle
    raise TypeError(f"expected an Oracle (with .reproduces) or a factory(worker_id) -> Oracle, got {oracle!r}")


def as_outcome(value: Any) -> ReplayVerdict:
    """Accept a ReplayVerdict, anything with ``.reproduced``/``.details``, or a bare bool."""
    if isinstance(value, ReplayVerdict):
        return value
    if isinstance(value, bool):
        return ReplayVerdict(value, {})
    if hasattr(value, "reproduced"):
        return ReplayVerdict(bool(value.reproduced), dict(getattr(value, "details", None) or {}))
    raise TypeError(f"an oracle must return a ReplayVerdict, got {value!r}")


__all__ = ["ReplayVerdict", "Oracle", "OracleFactory", "FixedOracle", "as_factory", "as_outcome"]
