"""replay and minimize refuse a trace whose target violation names an invariant this netsleuth lacks,
before any controller starts: one line naming it and the known ones, exit 2, in well under a second."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from netsleuth.cli import main
from netsleuth.invariants import registry
from netsleuth.model.topo_builders import parse_topo
from netsleuth.trace import schema as ts
from netsleuth.trace.io import write_trace


def trace_targeting(path: Path, invariant: str) -> Path:
    topo = parse_topo("linear,2")
    header = ts.TraceHeader(topology=topo.to_json(), topology_spec="linear,2",
                            controller="osken:os_ken.app.simple_switch", seed=0, tool_version="test",
                            command="fuzz")
    events = [ts.Violation(seq=0, t=0.5, invariant=invariant, message="something broke", persistent=True,
                           hosts=("h1", "h2"), switches=("s1",), details={})]
    write_trace(path, ts.Trace(header, events))
    return path


@pytest.mark.parametrize("command", ["replay", "minimize"])
def test_unknown_target_invariant_refused_before_running(command: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    trace = trace_targeting(tmp_path / "t.jsonl", "no-such-invariant")
    t0 = time.monotonic()
    code = main([command, str(trace), "--out", str(tmp_path / "out")])
    assert time.monotonic() - t0 < 5.0
    assert code == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: ") and " -- fix: " in lines[0]
    assert "'no-such-invariant'" in lines[0]
    for known in registry.REGISTRY:
        assert known in lines[0]
    assert not (tmp_path / "out" / "trace.jsonl").exists()   # no controller ran
