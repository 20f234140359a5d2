"""Delta debugging of input sequences to a minimal causal sequence (MCS).

``minimize(inputs, oracle, strategy=..., replays=K, executor=..., budget_seconds=...)``
groups inputs into atoms (failure/recovery pairs as one; host migration
chains rewritten when a migration is pruned), runs Zeller's ddmin or the
ESEC'99 binary split with a carry-over set, then a one-at-a-time pass to
1-minimality -- an explicit list of shrink passes run by one loop -- with a
cache, a time budget and per-pass statistics; the
replays of one level run in parallel on a serial, local-pool or Ray executor
with the same result as a serial run for a deterministic oracle.
"""

from netsleuth.minimize.api import MinimizationResult, describe_input, minimize
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

__all__ = [
    "minimize", "MinimizationResult", "describe_input", "Atom", "Atoms", "Key", "shortlex",
    "MinimizationError", "NotReproducibleError", "ExecutorSpecError", "RayUnavailableError", "WorkerLostError",
    "Executor", "SerialExecutor", "LocalPoolExecutor", "RayExecutor", "make_executor",
    "Oracle", "OracleFactory", "ReplayVerdict", "PassStats", "ShrinkProgress",
    "ShrinkPass", "InitialPass", "FocusPass", "SearchPass", "ConfirmPass", "standard_passes", "run_passes",
]
