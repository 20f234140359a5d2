"""Delta debugging of input sequences to a minimal causal sequence (MCS).

``minimize(inputs, oracle, strategy=..., replays=K, executor=..., budget_seconds=...)``
groups inputs into atoms (failure/recovery pairs as one; host migration
chains rewritten when a migration is pruned), runs Zeller's ddmin or the
ESEC'99 binary split with a carry-over set, then a one-at-a-time pass to
1-minimality -- an explicit list of shrink passes run by one loop -- with a
cache, a time budget and per-pass statistics; the
replays of one level run in parallel on a serial, local-pool or Ray executor
with the same result as a serial run for a deterministic oracle.

The names below are imported on first use: a module that needs one part of the package (an
input in plain words, the atoms) does not load the search, its process pools and Ray's glue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from netsleuth import lazy_attribute

if TYPE_CHECKING:
    from netsleuth.minimize.api import MinimizationResult, minimize
    from netsleuth.minimize.atoms import Atom, Atoms, Key, shortlex
    from netsleuth.minimize.errors import (
        ExecutorSpecError,
        MinimizationError,
        NotReproducibleError,
        RayUnavailableError,
        WorkerLostError,
    )
    from netsleuth.minimize.evaluator import PassStats, ShrinkProgress
    from netsleuth.minimize.executors import Executor, LocalPoolExecutor, RayExecutor, SerialExecutor, make_executor
    from netsleuth.minimize.oracle import Oracle, OracleFactory, ReplayVerdict
    from netsleuth.minimize.passes import (
        ConfirmPass,
        FocusPass,
        InitialPass,
        SearchPass,
        ShrinkPass,
        run_passes,
        standard_passes,
    )
    from netsleuth.minimize.words import describe_input

_WHERE = {
    **dict.fromkeys(("MinimizationResult", "minimize"), "api"),
    "describe_input": "words",
    **dict.fromkeys(("Atom", "Atoms", "Key", "shortlex"), "atoms"),
    **dict.fromkeys(("ExecutorSpecError", "MinimizationError", "NotReproducibleError", "RayUnavailableError",
                     "WorkerLostError"), "errors"),
    **dict.fromkeys(("PassStats", "ShrinkProgress"), "evaluator"),
    **dict.fromkeys(("Executor", "LocalPoolExecutor", "RayExecutor", "SerialExecutor", "make_executor"), "executors"),
    **dict.fromkeys(("Oracle", "OracleFactory", "ReplayVerdict"), "oracle"),
    **dict.fromkeys(("ConfirmPass", "FocusPass", "InitialPass", "SearchPass", "ShrinkPass", "run_passes",
                     "standard_passes"), "passes"),
}

__all__ = [
    "minimize", "MinimizationResult", "describe_input", "Atom", "Atoms", "Key", "shortlex",
    "MinimizationError", "NotReproducibleError", "ExecutorSpecError", "RayUnavailableError", "WorkerLostError",
    "Executor", "SerialExecutor", "LocalPoolExecutor", "RayExecutor", "make_executor",
    "Oracle", "OracleFactory", "ReplayVerdict", "PassStats", "ShrinkProgress",
    "ShrinkPass", "InitialPass", "FocusPass", "SearchPass", "ConfirmPass", "standard_passes", "run_passes",
]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _WHERE, name)
