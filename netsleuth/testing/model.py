"""Model-check a controller app from a test: `assert_model` fails with the counterexample in plain words.

It runs the model checker of `netsleuth check` (nice/job.py) on the app and
scenario given, stops at the first violation, and raises
:class:`ModelViolated` -- an AssertionError, so pytest reports it as a
failed assertion -- naming the property, what went wrong, every step of the
counterexample as the checker describes it ("h1 sends ping 1 to h2", "s1
applies FLOW_MOD ..."), and the `netsleuth replay` command that re-executes
the saved counterexample.
"""

from __future__ import annotations

import shlex
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from netsleuth.nice.job import CheckOptions, check
from netsleuth.trace import schema as ts
from netsleuth.trace.io import read_trace


class ModelViolated(AssertionError):
    """The model checker found a path of the app's network that violates a property."""

    def __init__(self, app: str, found: dict[str, Any], steps: list[str], result: dict[str, Any]) -> None:
        self.app = app
        self.property = found["property"]
        self.message = found["message"]
        self.steps = steps
        self.counterexample = Path(found["counterexample"])
        self.result = result
        super().__init__(self.netsleuth_report())

    @property
    def replay_command(self) -> str:
        cex = self.counterexample
        return f"netsleuth replay {shlex.quote(str(cex))} --out {shlex.quote(str(cex.parent / 'replay'))}"

    def netsleuth_report(self) -> str:
        r = self.result
        lines = [f"{self.app} violates {self.property} (scenario {r['scenario']}, topology {r['topology']}, "
                 f"strategy {r['strategy']}, found after {r['transitions']:,} transitions):",
                 f"  {self.message}", f"counterexample, {len(self.steps)} steps:"]
        lines += [f"  {k}. {what}" for k, what in enumerate(self.steps, 1)]
        lines += [f"trace:  {self.counterexample}", f"replay: {self.replay_command}"]
        return "\n".join(lines)


def assert_model(app: str, scenario: str | None = None, properties: str | Sequence[str] | None = None, *,
                 strategy: str = "full", out: str | Path | None = None, **options: Any) -> dict[str, Any]:
    """Model-check ``app`` (``pyswitch``, ``package.module:Class``, ``osken:APP``, ...) in ``scenario``.

    ``properties`` (a name or several; default: the scenario's) must hold on
    every path the search explores; the first violation raises
    ModelViolated. Other keywords are `netsleuth check`'s options
    (``topo``, ``hosts``, ``pings``, ``dpor``, ``max_transitions``, ``faults``,
    ...). ``out`` keeps the result and counterexample (default: a temporary
    directory). Returns the checker's result when nothing is violated.
    """
    props = (properties,) if isinstance(properties, str) else (tuple(properties) if properties else None)
    where = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="netsleuth-check-"))
    result = check(CheckOptions(app=app, scenario=scenario, properties=props, strategy=strategy,
                                stop_at_first=True, out=where, **options))
    if result["violations"]:
        found = result["violations"][0]
        trace = read_trace(found["counterexample"])
        steps = [e.what for e in trace.events if isinstance(e, ts.McStep)]
        raise ModelViolated(app, found, steps, result)
    return result


__all__ = ["assert_model", "ModelViolated"]
