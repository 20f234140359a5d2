"""``--warmup auto``: the warm-up ends once the network is ready, not after a guessed number of seconds.

A new user runs ``netsleuth run --controller faucet:auto --topo linear,3
--pingall`` without knowing that Faucet's stack needs a few seconds, or POX's
``l2_multi`` without knowing it drops traffic until link discovery has seen
every link. ``run`` waits by default until the controllers stopped changing
tables, their LLDP crossed every link, their spanning tree converged and a
Faucet stack is up; a replay of the run waits the same way.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from netsleuth.cli import main
from netsleuth.live.ready import AUTO_BOUND, Warmup, WarmupError


@pytest.mark.parametrize("text, seconds, auto", [
    ("0", 0.0, False), ("15", 15.0, False), ("2.5", 2.5, False),
    ("auto", AUTO_BOUND, True), ("auto:20", 20.0, True), (" auto ", AUTO_BOUND, True),
])
def test_a_warmup_is_seconds_or_auto_with_a_bound(text: str, seconds: float, auto: bool) -> None:
    w = Warmup.parse(text)
    assert (w.seconds, w.auto) == (seconds, auto)
    assert Warmup.parse(str(w)) == w  # what a result shows parses back to the same warm-up


@pytest.mark.parametrize("text", ["soon", "-1", "inf", "nan", "auto:0", "auto:x", "auto:-3", ""])
def test_a_bad_warmup_is_refused_with_the_fix(text: str) -> None:
    with pytest.raises(WarmupError) as e:
        Warmup.parse(text)
    assert "auto:SECONDS" in e.value.fix


def test_the_cli_refuses_a_bad_warmup_in_one_line_before_starting_anything(tmp_path: Path) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["run", "--controller", "osken:os_ken.app.simple_switch", "--topo", "linear,3",
                     "--out", str(tmp_path / "out"), "--warmup", "soon"])
    assert code == 2
    assert err.getvalue().count("\n") == 1 and "'soon'" in err.getvalue()
    assert not (tmp_path / "out").exists()


@pytest.mark.real
@pytest.mark.parametrize("extra, words", [
    ({"warmup": "soon"}, "warm-up"), ({"warmup": -4}, "warm-up"), ({"warmup": 5, "warmup_auto": "yes"}, "warm-up"),
    ({"switch": {"table_size": "x"}}, "switch limits"), ({"switch": [25]}, "switch limits"),
    ({"switch": {"buffer_packets": -1}}, "switch limits"),
])
def test_a_replay_refuses_a_trace_whose_switch_settings_are_malformed(tools_fuzz_trace: Path, tmp_path: Path,
                                                                     extra: dict, words: str) -> None:
    """The header's warm-up and switch limits are untrusted input too: one line, exit 2, nothing started."""
    lines = tools_fuzz_trace.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header.setdefault("extra", {}).update(extra)
    lines[0] = json.dumps(header, sort_keys=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["replay", str(bad), "--out", str(tmp_path / "replay")])
    assert code == 2, err.getvalue()
    assert words in err.getvalue() and " -- fix: " in err.getvalue()
    assert err.getvalue().count("\n") == 1


@pytest.mark.real
@pytest.mark.slow
def test_run_waits_for_faucet_s_stack_by_default(tmp_path: Path) -> None:
    """Without --warmup, ``run`` on a Faucet stack waits until the stack is up: every ping answers."""
    proc = subprocess.run([sys.executable, "-m", "netsleuth.cli", "run", "--controller", "faucet:auto",
                           "--topo", "linear,3", "--pingall", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=180)
    d = json.loads((tmp_path / "result.json").read_text())
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert d["pingall"]["ok"] == 6
    assert d["warmup_auto"] is True
    assert d["warmup_seconds"] < AUTO_BOUND  # it ended on the condition, not the bound
