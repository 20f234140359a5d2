"""``pox:`` controller specs: what is checked before POX starts, the command line built, traces' trust.

A fake checkout (pox.py and a few component files, never run) is enough
here; tests/test_pox.py runs the real POX.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from netsleuth.cli import main
from netsleuth.controllers.external import ControllerProcess
from netsleuth.controllers.spec import UntrustedControllerError, controllers_for_trace, parse_controller
from netsleuth.errors import ControllerError
from netsleuth.jobs.replay import ReplayOptions, trace_limits
from netsleuth.model.switch_io import SwitchLimits
from netsleuth.model.topo_builders import parse_topo
from netsleuth.trace import schema as ts
from netsleuth.world.rebuild import new_world


@pytest.fixture
def fake_pox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "pox-checkout"
    for rel in ("pox.py", "pox/__init__.py", "pox/forwarding/__init__.py", "pox/forwarding/l2_learning.py",
                "pox/openflow/__init__.py", "pox/openflow/discovery.py", "pox/misc/__init__.py",
                "ext/mine/__init__.py"):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("")
    monkeypatch.setenv("NETSLEUTH_POX", str(home))
    return home


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and " -- fix: " in err, err
    return err


def test_no_checkout_is_one_line_naming_the_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("NETSLEUTH_POX", raising=False)
    argv = ["run", "--controller", "pox:forwarding.l2_learning", "--topo", "linear,2", "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    assert "--pox DIR" in one_error_line(capsys)
    assert main([*argv, "--pox", str(tmp_path)]) == 2   # a folder that is no POX checkout
    assert "not a POX checkout" in one_error_line(capsys)


def test_a_component_that_does_not_exist_is_refused_before_starting(fake_pox: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "--controller", "pox:openflow.discovery forwarding.l2_multy", "--topo", "linear,2",
            "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    assert "forwarding.l2_multy" in one_error_line(capsys)
    assert not (tmp_path / "o" / "controller.log").exists()


@pytest.mark.parametrize("words", ["openflow.of_01 --port=6633 forwarding.l2_learning", "py", "--verbose",
                                   "forwarding/l2_learning.py"])
def test_specs_netsleuth_cannot_run_are_refused(words: str, fake_pox: Path) -> None:
    with pytest.raises(Exception) as err:
        parse_controller(f"pox:{words}")
    assert getattr(err.value, "fix", "")


def test_command_line_adds_of_01_after_pox_options(fake_pox: Path) -> None:
    spec = parse_controller("pox:--verbose openflow.discovery mine forwarding.l2_learning --hold-down")
    argv = ControllerProcess(spec, fake_pox / "c.log", port=4321).argv()
    assert argv[1:] == [str(fake_pox.resolve() / "pox.py"), "--verbose", "openflow.of_01", "--port=4321",
                        "--address=127.0.0.1", "openflow.discovery", "mine", "forwarding.l2_learning",
                        "--hold-down"]


def test_trace_headers_may_name_components_and_plain_options_only(fake_pox: Path) -> None:
    plain = "pox:openflow.discovery --link-timeout=10 forwarding.l2_learning"
    assert [str(s) for s in controllers_for_trace(plain, None)] == [plain]
    with pytest.raises(UntrustedControllerError):
        controllers_for_trace("pox:forwarding.l2_learning --file=/etc/x", None)
    assert controllers_for_trace("pox:forwarding.l2_learning --file=/etc/x", None, trust=True)


def test_model_checker_counterexamples_of_pox_components_are_trusted_as_pox_specs(fake_pox: Path) -> None:
    """``check pox:...`` writes ``app:pox:...`` headers: replayed in the model, under the same trust rules."""
    plain = "app:pox:forwarding.l2_learning"
    assert [str(s) for s in controllers_for_trace(plain, None)] == [plain]
    with pytest.raises(UntrustedControllerError):
        controllers_for_trace("app:pox:forwarding.l2_learning --file=/etc/x", None)
    with pytest.raises(ControllerError, match="does not exist"):
        controllers_for_trace("app:pox:forwarding.l2_lernin", None)


def test_check_names_a_missing_component_before_starting_pox(fake_pox: Path, capsys) -> None:
    assert main(["check", "pox:forwarding.nope", "--scenario", "mobile"]) == 2
    assert one_error_line(capsys).startswith("error: POX component 'forwarding.nope' does not exist in ")


def header(extra: dict) -> ts.TraceHeader:
    return ts.TraceHeader(topology=parse_topo("linear,2").to_json(), topology_spec="linear,2",
                          controller="pox:forwarding.l2_learning", seed=0, tool_version="test", extra=extra)


def test_replays_use_the_trace_switch_limits_unless_told_otherwise() -> None:
    h = header({"switch": {"buffer_packets": 16, "table_size": 25}})
    assert trace_limits(h) == SwitchLimits(16, 25)
    assert trace_limits(header({})) == SwitchLimits()
    opts = ReplayOptions(trace=Path("t"), out=Path("o"), table_size=0)
    assert opts.limits(h) == SwitchLimits(16, 0)
    world = new_world(h)
    assert all(s.buffer_packets == 16 and s.table_size == 25 and s.n_buffers == 16
               for s in world.switches.values())
