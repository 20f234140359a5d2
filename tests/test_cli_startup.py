"""What a `netsleuth` process loads before it works: each command only what it needs.

Every command, ``--help`` and a usage error included, used to import the model checker, the
header-space engine, numpy, networkx and os-ken while building
its argument parser: half a second to a second of CPU per call, paid by every user command and by
the hundreds of CLI calls of the tests and tutorials.  These tests run real `netsleuth` processes
and read ``sys.modules`` at their end, so a module-level import that brings any of it back fails
here, naming the module.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.real

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "tests" / "data" / "localize" / "moving_switch_flipped.trace.jsonl"   # 76 events, 3 switches

# Run the command in a fresh interpreter as `netsleuth ARGS` runs it, then print the loaded modules.
PROBE = """
import contextlib, io, json, sys
from netsleuth.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "stdout": out.getvalue(), "modules": sorted(sys.modules)}))
"""

# What building the parser must not load: the implementations behind the commands.
NOT_FOR_THE_PARSER = ("os_ken", "numpy", "networkx", "z3", "yaml", "netsleuth.model", "netsleuth.world",
                      "netsleuth.invariants", "netsleuth.trace", "netsleuth.openflow.codec", "netsleuth.live.session",
                      "netsleuth.nice.state", "netsleuth.nice.system", "netsleuth.nice.filters",
                      "netsleuth.nice.scenarios", "netsleuth.defined.runs", "netsleuth.races.job")


def probe(*args: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    """The modules (or packages, with their submodules) of ``names`` that were imported."""
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


@pytest.mark.parametrize("args", [("--help",), ("fuzz", "--help"), ("check", "--help"),
                                  ("defined", "run", "--help"), ("run", "--topo", "linear,2")])
def test_the_parser_loads_no_command_implementation(args: tuple[str, ...]) -> None:
    d = probe(*args)
    assert d["code"] == (2 if args[0] == "run" else 0)   # `run` without --controller/--out: a usage error
    assert loaded(d["modules"], NOT_FOR_THE_PARSER) == []
    if args[-1] == "--help":
        assert "usage: netsleuth" in d["stdout"]


def test_check_offers_the_model_checkers_own_strategies_and_scenarios() -> None:
    # the names the parser declares without importing the checker are the ones it accepts
    from netsleuth.nice import filters, names, scenarios

    assert filters.STRATEGIES == names.STRATEGIES and scenarios.SCENARIOS == names.SCENARIOS
    d = probe("check", "--help")
    text = " ".join(d["stdout"].split())
    assert all(s in text for s in names.STRATEGIES) and "mobile" in text


def test_a_trace_command_loads_no_graph_library_and_no_checker() -> None:
    from netsleuth.races.job import detect_races

    d = probe("races", str(TRACE), "--json")
    assert d["code"] == 0
    assert loaded(d["modules"], ("numpy", "networkx", "netsleuth.nice.system")) == []  # no graph, no check
    got, expected = json.loads(d["stdout"]), detect_races(TRACE).to_json(detail="harmful")
    assert got["events"] > 50
    for key in ("events", "races", "commuting", "harmful", "time_filtered_races", "writes", "read"):
        assert got[key] == expected[key], key


def test_importing_the_jobs_loads_no_graph_library() -> None:
    # run, fuzz, replay, minimize and campaign import their checks in every process (minimization and
    # campaign workers too); networkx is loaded by the first check that asks which hosts links connect
    script = ("import sys\n"
              "import netsleuth.cli, netsleuth.jobs.run, netsleuth.jobs.fuzz, netsleuth.jobs.replay\n"
              "import netsleuth.jobs.minimize, netsleuth.campaign.runner, netsleuth.invariants.registry\n"
              "print(' '.join(sorted(sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    modules = proc.stdout.split()
    assert "netsleuth.invariants.forwarding" in modules and "netsleuth.invariants.headerspace.report" in modules
    assert loaded(modules, ("networkx",)) == []
