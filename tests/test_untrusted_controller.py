"""A shared trace cannot make netsleuth run a command: its header's controller needs the user's consent.

The header names the controller a trace was recorded with; replay,
minimize and live step start it.  A ``cmd:`` spec there is a shell command
chosen by whoever wrote the file, so it runs only with ``--controller``
(which replaces it) or ``--trust-trace-controller``; an ``osken:`` spec
there may only name dotted modules (os-ken also takes file paths and
options in that place).  The command used here is a real, harmless
``touch``: whether its file appears is whether netsleuth ran it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from netsleuth.cli import main
from netsleuth.model.topo_builders import parse_topo
from netsleuth.trace import schema as ts
from netsleuth.trace.io import write_trace

SIMPLE_SWITCH = "osken:os_ken.app.simple_switch"


def trace_with(path: Path, controller: str, extra: dict | None = None) -> Path:
    topo = parse_topo("linear,2")
    write_trace(path, ts.Trace(ts.TraceHeader(topology=topo.to_json(), topology_spec="linear,2",
                                              controller=controller, seed=0, tool_version="test", command="fuzz",
                                              extra=extra or {}), []))
    return path


@pytest.fixture
def touching(tmp_path: Path) -> tuple[Path, Path]:
    """A trace whose controller is `touch RAN ...`, and RAN."""
    ran = tmp_path / "ran"
    return trace_with(tmp_path / "t.jsonl", f"cmd:touch {ran} {tmp_path}/port-{{port}}"), ran


@pytest.mark.parametrize("command", [["replay"], ["minimize"], ["step", "--commands", "/dev/null"]])
def test_a_command_in_the_header_is_not_run(command: list[str], touching: tuple[Path, Path], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    trace, ran = touching
    argv = [command[0], str(trace), *command[1:], "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ")
    assert f"touch {ran}" in err                 # shows what it would have run
    assert "--controller" in err and "--trust-trace-controller" in err
    assert not ran.exists()


@pytest.mark.real
def test_trust_runs_the_header_command(touching: tuple[Path, Path], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    trace, ran = touching
    # touch exits at once, so the replay then fails as for any controller that exits while starting
    assert main(["replay", str(trace), "--out", str(tmp_path / "out"), "--trust-trace-controller"]) == 2
    assert ran.exists()
    assert "exited with code 0 while starting" in capsys.readouterr().err


@pytest.mark.real
def test_controller_option_replaces_the_header_command(touching: tuple[Path, Path], tmp_path: Path) -> None:
    trace, ran = touching
    out = tmp_path / "out"
    assert main(["replay", str(trace), "--out", str(out), "--controller", SIMPLE_SWITCH]) == 0
    assert not ran.exists()
    assert "simple_switch" in (out / "result.json").read_text()


@pytest.mark.parametrize("spec", ["osken:/tmp/evil.py", "app:osken:/tmp/evil.py",
                                  "osken:os_ken.app.simple_switch,--config-file=/tmp/x",
                                  "osken:../app"])
def test_osken_header_must_name_modules(spec: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = trace_with(tmp_path / "t.jsonl", spec)
    assert main(["replay", str(trace), "--out", str(tmp_path / "out")]) == 2
    assert "not a dotted module name" in capsys.readouterr().err
    assert not (tmp_path / "out" / "controller.log").exists()


def test_cex_inputs_checks_the_app_it_would_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = trace_with(tmp_path / "cex.jsonl", "osken:/tmp/evil.py", extra={"nice": {"app": "osken:/tmp/evil.py"}})
    assert main(["cex-inputs", str(trace), "--out", str(tmp_path / "in.jsonl")]) == 2
    assert "not a dotted module name" in capsys.readouterr().err
