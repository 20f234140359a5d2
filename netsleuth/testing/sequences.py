"""Run a sequence of inputs against a real controller and fail with what broke: the oracle of a property test.

:func:`check_inputs` starts a fresh network (its own controller process),
applies the inputs one by one and checks the invariants after each; the
first violation that holds for ``rounds`` consecutive checks stops it and
raises :class:`InvariantViolated`, naming the inputs that led there in plain
words, the trace, and the commands that replay and draw it. A Hypothesis
``@given`` test calls it with a drawn sequence (see ``netsleuth.strategies``);
Hypothesis then shrinks the sequence while the call keeps failing.

Real controllers have timing. With ``reproduce=N`` a violation counts only
when netsleuth's own replay (jobs/replay.py: the recorded inputs re-run
against a fresh controller, each after the control messages that preceded
it) reproduces it in at least ``need`` of ``N`` replays (default: all of
them); otherwise the run passes, so a violation that came from one lucky
interleaving never reaches Hypothesis's shrinker as a failure it cannot
reproduce.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from netsleuth.invariants.forwarding import Finding
from netsleuth.jobs.violations import violation_block
from netsleuth.testing.inputs import NetworkInput, describe_inputs
from netsleuth.testing.network import LiveNetwork, NetworkUseError, resolve_controller

#: the environment variable that sets ``reproduce`` for every check (set by --netsleuth-reproduce)
REPRODUCE_OVERRIDE = "NETSLEUTH_TEST_REPRODUCE"


@dataclass
class Reproduction:
    """What netsleuth's replay made of a violation: reproduced in ``times`` of ``runs`` replays.

    The replays stop as soon as the outcome is decided (``need`` reached, or out of reach).
    """

    runs: int
    times: int
    need: int
    replays: list[Path] = field(default_factory=list)

    @property
    def counts(self) -> bool:
        return self.times >= self.need


class InvariantViolated(AssertionError):
    """Inputs applied to a real controller broke an invariant (an assertion failure, for pytest)."""

    def __init__(self, inputs: Sequence[NetworkInput], violations: list[Finding], net: LiveNetwork,
                 reproduction: Reproduction | None = None) -> None:
        self.inputs = tuple(inputs)
        self.violations = list(violations)
        self.net = net
        self.origin: TracebackType | None = None   # where it was first raised, for a memoized repeat
        self.trace = net.trace_path
        self.controller = net.controller
        self.topo = net.topo
        self.replay_command, self.viz_command = net.commands()
        self.reproduction = reproduction
        super().__init__(self.netsleuth_report())

    def again(self) -> InvariantViolated:
        """The same failure as a new exception (raising one object twice would pile up its traceback and notes)."""
        return InvariantViolated(self.inputs, self.violations, self.net, self.reproduction)

    def netsleuth_report(self) -> str:
        """The failure in plain words: the inputs, the violations, the trace, the commands (the plugin's
        report section shows it too)."""
        spec = self.controller if isinstance(self.controller, str) else " + ".join(self.controller)
        kinds = ", ".join(sorted({v.invariant for v in self.violations}))
        n = len(self.inputs)
        lines = [f"{kinds} after {n} input{'s' if n != 1 else ''} against {spec} on {self.topo}:",
                 describe_inputs(self.inputs), "violations:"]
        lines += violation_block(self.violations, trace=self.trace)
        if self.reproduction is not None:
            r = self.reproduction
            lines.append(f"netsleuth replay reproduced it in {r.times} of {r.runs} replays")
        lines += [f"trace:  {self.trace}", f"replay: {self.replay_command}", f"draw:   {self.viz_command}"]
        return "\n".join(lines)


class UnreproducedViolation(UserWarning):
    """A violation the live run saw but netsleuth's replay did not reproduce often enough to count."""

    def __init__(self, inputs: Sequence[NetworkInput], violations: list[Finding], net: LiveNetwork,
                 reproduction: Reproduction) -> None:
        kinds = ", ".join(sorted({v.invariant for v in violations}))
        super().__init__(f"{kinds} after {len(inputs)} inputs was not counted: netsleuth replay reproduced it in "
                         f"{reproduction.times} of {reproduction.runs} replays, {reproduction.need} needed; "
                         f"trace {net.trace_path}")


def check_inputs(inputs: Sequence[NetworkInput], controller: str | list[str] | None = None,
                 topo: str = "linear,3", *, invariants: Sequence[str] = (), rounds: int = 3,
                 out: str | Path | None = None, reproduce: int | None = None, need: int | None = None,
                 openflow: str = "auto", memo: dict[tuple[Any, ...], InvariantViolated | None] | None = None) -> None:
    """Apply ``inputs`` to a fresh network running ``controller``; raise InvariantViolated on a violation.

    ``invariants`` default to netsleuth's defaults. ``out`` is a directory
    for the runs (default: a temporary one); a run that passes leaves
    nothing behind, a failing one keeps its trace, result.json and logs.
    ``reproduce`` (default: the ``--netsleuth-reproduce`` option, else 0)
    replays a violation that many times before it counts; ``need`` of them
    must reproduce it (default: all).

    ``memo``: a dict kept across the calls of one property test. A run
    stops at the first violation and checks after every input, so its
    outcome also tells that of other sequences: every prefix of a sequence
    that passed passes, and every sequence that starts with the inputs that
    led to a violation fails the same way. Those are given back without a
    run. While Hypothesis shrinks, many of the sequences it tries are such
    (or read as one it tried already), and a run against a real controller
    costs seconds.
    """
    config = (str(controller), topo, tuple(invariants), rounds, openflow, reproduce, need)
    seq = tuple(inputs)
    if memo is not None:
        if (config, seq) in memo and memo[(config, seq)] is None:
            return
        for j in range(1, len(seq) + 1):
            earlier = memo.get((config, seq[:j]))
            if earlier is not None:
                # the traceback of the first time: Hypothesis tells failures apart by where they were raised
                raise earlier.again().with_traceback(earlier.origin)
    try:
        _check_inputs(seq, controller, topo, invariants=invariants, rounds=rounds, out=out,
                      reproduce=reproduce, need=need, openflow=openflow)
    except InvariantViolated as exc:
        if memo is not None:
            exc.origin = exc.__traceback__
            memo[(config, exc.inputs)] = exc
        raise
    if memo is not None:
        for j in range(len(seq) + 1):
            memo[(config, seq[:j])] = None


def _check_inputs(inputs: Sequence[NetworkInput], controller: str | list[str] | None, topo: str, *,
                  invariants: Sequence[str], rounds: int, out: str | Path | None, reproduce: int | None,
                  need: int | None, openflow: str) -> None:
    runs = reproduce if reproduce is not None else int(os.environ.get(REPRODUCE_OVERRIDE, "0") or 0)
    if runs < 0 or (need is not None and not 0 < need <= max(runs, 1)):
        raise NetworkUseError(f"reproduce={runs}, need={need}: need must be between 1 and reproduce",
                              "pass reproduce=N (N >= 0) and need between 1 and N")
    base = Path(out) if out is not None else Path(tempfile.gettempdir()) / "netsleuth-inputs"
    base.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=base))
    applied: list[NetworkInput] = []
    found: list[Finding] = []
    with LiveNetwork(resolve_controller(controller), topo, out=run_dir, openflow=openflow, track=False) as net:
        for inp in inputs:
            net.apply(inp)
            applied.append(inp)
            found = net.check(*invariants, rounds=rounds)
            if found:
                break
    if not found:
        shutil.rmtree(run_dir, ignore_errors=True)
        return
    reproduction = None
    if runs:
        reproduction = _reproduce(net, runs, need if need is not None else runs, rounds)
        if not reproduction.counts:
            warnings.warn(UnreproducedViolation(applied, found, net, reproduction), stacklevel=2)
            return
    raise InvariantViolated(applied, found, net, reproduction)


def _reproduce(net: LiveNetwork, runs: int, need: int, rounds: int) -> Reproduction:
    """Replay the run's trace ``runs`` times against fresh controllers, targeting its first violation."""
    from netsleuth.jobs.replay import find_target, replay_once
    from netsleuth.trace.io import read_trace

    trace = read_trace(net.trace_path)
    target = find_target(trace.events)
    result = Reproduction(runs, 0, need)
    for k in range(runs):
        out = net.out / f"replay-{k + 1}"
        outcome = replay_once(trace.header, trace.events, out, target=target, controller=net.controller,
                              persist=rounds, openflow=net.openflow)
        result.replays.append(out)
        result.times += bool(outcome.reproduced)
        if result.times >= need or result.times + (runs - k - 1) < need:
            break  # decided either way
    result.runs = len(result.replays)
    return result


__all__ = ["check_inputs", "InvariantViolated", "UnreproducedViolation", "Reproduction", "REPRODUCE_OVERRIDE"]
