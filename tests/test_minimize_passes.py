"""The shrink passes as objects run by one loop (netsleuth.minimize.passes), on the simulated network.

The oracle is :class:`netsleuth.minimize.synthetic.SimOracle` (200 seeded
inputs, a bug that needs exactly two of them), replayed serially so every
count is exact.
"""

from __future__ import annotations

from netsleuth.minimize import (
    Atoms,
    ConfirmPass,
    InitialPass,
    SearchPass,
    SerialExecutor,
    ShrinkPass,
    run_passes,
    standard_passes,
)
from netsleuth.minimize.atoms import Key
from netsleuth.minimize.ddmin import ddmin, one_minimal
from netsleuth.minimize.evaluator import Evaluator, ShrinkProgress, WorkerInit
from netsleuth.minimize.oracle import FixedOracle
from netsleuth.minimize.synthetic import SimOracle, synthetic_inputs


def evaluator(bug: str = "link_then_host") -> tuple[Evaluator, Atoms, list[ShrinkProgress]]:
    inputs = tuple(synthetic_inputs(200, seed=7))
    atoms = Atoms(inputs)
    ex = SerialExecutor()
    ex.start(WorkerInit(FixedOracle(SimOracle(bug)), inputs, frozenset()))
    seen: list[ShrinkProgress] = []
    return Evaluator(atoms, ex, 1, deadline=None, progress=seen.append, budget_seconds=None), atoms, seen


def test_each_pass_carries_its_own_statistics_and_hands_on_its_result() -> None:
    ev, atoms, seen = evaluator()
    passes = standard_passes("ddmin", 2)
    run = run_passes(passes, atoms.prunable, ev)
    assert run.stop_reason == "done" and run.error is None and run.completed == passes
    initial, search, one_min, confirm = passes
    assert isinstance(initial, InitialPass) and initial.reproduced is True
    assert [p.stats.name for p in passes if p.stats] == ["initial", "ddmin", "one-minimal", "confirm"]
    assert [p.stats for p in passes] == ev.passes
    assert initial.stats and initial.stats.candidates == 1 and initial.stats.size_after == len(atoms.prunable)
    # each pass starts where the one before it left the candidate
    assert search.stats and one_min.stats and confirm.stats
    assert search.stats.size_after == one_min.stats.size_before == 2
    assert isinstance(confirm, ConfirmPass) and len(confirm.results) == 2
    assert all(r.reproduced for r in confirm.results) and confirm.stats.replays == 2
    assert seen and {p.pass_name for p in seen} >= {"initial", "ddmin", "one-minimal"}


def test_a_sequence_that_does_not_reproduce_stops_before_the_search_and_the_confirmation() -> None:
    ev, atoms, _ = evaluator(bug="none")
    passes = standard_passes("binary", 1)
    run = run_passes(passes, atoms.prunable, ev)
    assert run.stop_reason == "not-reproduced" and run.completed == []
    assert [p.stats is not None for p in passes] == [True, False, False, False]


class Halve(ShrinkPass):
    """A pass of our own: keep the first half of the atoms when that still reproduces."""

    name = "halve"

    def run(self, current: Key, evaluator: Evaluator) -> Key:
        half = current[: len(current) // 2]
        return half if evaluator.first([half]) == 0 else current


def test_a_custom_pass_list_runs_in_the_given_order() -> None:
    ev, atoms, _ = evaluator()
    passes = [InitialPass(), Halve(), SearchPass("ddmin", ddmin), SearchPass("one-minimal", one_minimal)]
    run = run_passes(passes, atoms.prunable, ev)
    assert run.stop_reason == "done"
    assert [p.name for p in ev.passes] == ["initial", "halve", "ddmin", "one-minimal"]
    assert ev.best is not None and len(ev.best) == 2
