"""`minimize --localize` against real os-ken controllers: a seeded one-line fault, and simple_switch's own bug.

The seeded fault is a flipped comparison in ``tests/data/localize/moving_switch.py``
(a learning switch that forgets a host's flows when its port is deleted; the
fault makes it act on every port change but deletion), made at test time and
minimized with --localize from a fuzz run that found its violation (recorded once, so
the test does not fuzz): the faulty line must rank in the first block and the top 5.
The unmodified simple_switch's migration blackhole (`make demo`'s fuzz settings) is
localized too: the lines named are those of its port-status handler, which logs a deleted port and leaves the flows that
send to it (where the fix belongs).  Faults in a handler every replay runs
(os-ken's simple_switch, POX's l2_learning) rank per handler call.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from netsleuth.cli import main
from netsleuth.jobs.fuzz import FuzzOptions, fuzz
from netsleuth.jobs.minimize import MinimizeOptions, run_minimize
from netsleuth.schedulers.fuzz import Rates

pytestmark = [pytest.mark.real, pytest.mark.slow]

MOVING = Path(__file__).parent / "data" / "localize" / "moving_switch.py"
FAULTY = "if msg.reason != ofp.OFPPR_DELETE:"
SEEDED = "if msg.reason == ofp.OFPPR_DELETE:"  # moved hosts are never forgotten: the migration blackhole
MIGRATIONS = {"host_migration": 0.03, "traffic": 0.3}
RECORDED = Path(__file__).parent / "data" / "localize" / "moving_switch_flipped.trace.jsonl"  # a fuzz run of it


def seeded_switch(folder: Path) -> tuple[Path, int]:
    """moving_switch.py with the one seeded line; the copy and the faulty line's number."""
    lines = MOVING.read_text().splitlines(keepends=True)
    (i,) = [k for k, line in enumerate(lines) if line.strip() == FAULTY]
    lines[i] = lines[i].replace(FAULTY, SEEDED)
    path = folder / "moving_switch_flipped.py"
    path.write_text("".join(lines))
    return path.resolve(), i + 1


def first_violation(controller: str, out: Path, steps: int, rates: dict, seeds: range) -> Path:
    for seed in seeds:
        r = fuzz(FuzzOptions(controller, "linear,3", out / str(seed), steps=steps, seed=seed, rates=Rates(rates),
                             record_packets=False))
        if any(v["persistent"] for v in r.violations):
            return out / str(seed) / "trace.jsonl"
    pytest.fail(f"no persistent violation with {controller} in seeds {seeds}")


def test_seeded_flipped_comparison_ranks_in_the_top_five(tmp_path: Path, capsys) -> None:
    """From a recorded MCS of this fault (fuzzed once with the benchmark's settings): the minimizer's
    replays and localize's extra ones must put the faulty line in the first block and the top 5."""
    app, line = seeded_switch(tmp_path)
    spec = f"osken:{app}"
    d = run_minimize(MinimizeOptions(trace=RECORDED, out=tmp_path / "min", controller=[spec], jobs=2, budget=150,
                                     localize=True))
    loc = d["localize"]
    assert loc["failing"] >= 1 and loc["passing"] >= 1 and loc["separable"], loc
    ranks = {(t["file"], t["line"]): (t["rank"], t["block"]) for t in loc["top"]}
    rank, block = ranks.get((str(app), line), (None, None))
    with capsys.disabled():
        print(f"seeded fault {app.name}:{line} ranks {rank} (block {block}) of {loc['candidates']} ({loc['formula']}, "
              f"{loc['failing']} failing / {loc['passing']} passing)")
    assert block == 1 and rank is not None and rank <= 5, loc["top"][:5]
    top = next(t for t in loc["top"] if t["line"] == line)
    assert top["source"] == SEEDED and top["function"] == "MovingSwitch.port_status"
    saved = json.loads((tmp_path / "min" / "result.json").read_text())["localize"]
    assert saved["top"] == loc["top"]
    assert "Suspicious lines" in (tmp_path / "min" / "report.html").read_text()
    # the same minimization, ranked again with another formula from the command line
    capsys.readouterr()
    assert main(["localize", str(tmp_path / "min"), "--formula", "dstar", "--no-extra-replays",
                 "--controller", spec]) == 0
    assert f"{app.name}:{line}" in capsys.readouterr().out
    # a controller whose lines cannot be measured: one line, exit 2
    assert main(["localize", str(tmp_path / "min"), "--controller", "cmd:/bin/true {port}"]) == 2
    assert "localization needs a Python controller" in capsys.readouterr().err


def test_migration_blackhole_of_simple_switch_names_the_port_status_handler(tmp_path: Path) -> None:
    spec = "osken:os_ken.app.simple_switch"
    trace = first_violation(spec, tmp_path / "fuzz", 400, MIGRATIONS, range(1, 6))
    d = run_minimize(MinimizeOptions(trace=trace, out=tmp_path / "min", jobs=2, budget=150, localize=True, top=5))
    loc = d["localize"]
    named = [f"{t['short']}:{t['line']} {t['function']}: {t['source']}" for t in loc["top"]]
    print("migration blackhole, lines named:", *named, sep="\n  ")
    assert loc["separable"], loc["message"]
    assert loc["top"][0]["function"] == "SimpleSwitch._port_status_handler", named


def test_a_faucet_replay_keeps_faucets_own_lines_with_its_verdict(tmp_path: Path) -> None:
    trace = first_violation("faucet:auto", tmp_path / "fuzz", 20, {"traffic": 0.5}, range(1, 3))
    assert main(["replay", str(trace), "--out", str(tmp_path / "replay"), "--coverage", "--epsilon", "100",
                 "--no-packet-events"]) in (0, 1)
    cov = json.loads((tmp_path / "replay" / "coverage.json").read_text())
    assert cov["processes"] == 1 and cov["lost"] == 0 and cov["reproduced"] is not None
    (own,) = cov["own"]
    assert own.endswith("/faucet")  # Faucet's package: its own code, not os-ken's
    ran = [f for f in cov["lines"] if f.startswith(own + "/")]
    assert any(f.endswith("/valve.py") for f in ran), sorted(cov["lines"])
    assert not any("/os_ken/" in f for f in cov["lines"])  # the framework is measured only for --all-code


WRONG_PORT = Path(__file__).parent / "data" / "localize" / "windows" / "ss_wrong_out_port.py.txt"  # os-ken's, 77 seeded
WRONG_PORT_TRACE = WRONG_PORT.with_name("ss_wrong_out_port.trace.jsonl")   # a fuzz run of it: the blackhole


def test_a_fault_every_replay_runs_ranks_first_per_handler_call(tmp_path: Path, capsys) -> None:
    """simple_switch sending a known destination back out of its in port: every replay runs the same
    packet-in lines, so whole replays cannot rank; one run per handler call puts the line first."""
    app = tmp_path / "ss_wrong_out_port.py"
    app.write_text(WRONG_PORT.read_text())
    spec = f"osken:{app}"
    d = run_minimize(MinimizeOptions(trace=WRONG_PORT_TRACE, out=tmp_path / "min", controller=[spec], jobs=2,
                                     budget=90, localize=True))
    loc = d["localize"]
    assert loc["spectrum"] == "handler calls" and loc["separable"], loc
    first = loc["top"][0]
    assert (first["file"], first["line"], first["source"]) == (str(app), 77, "out_port = msg.in_port"), first
    capsys.readouterr()
    assert main(["localize", str(tmp_path / "min"), "--spectrum", "replays", "--no-extra-replays",
                 "--controller", spec]) == 0
    whole = json.loads((tmp_path / "min" / "localize.json").read_text())
    with capsys.disabled():
        print(f"per handler call: rank 1 ({loc['failing']} failing / {loc['passing']} passing calls); "
              f"whole replays: {whole['message'] or [t['rank'] for t in whole['top'] if t['line'] == 77]}")
    assert whole["spectrum"] == "replays"
    assert not whole["separable"] or all(t["line"] != 77 or t["rank"] > 5 for t in whole["top"])


POX_FAULTY = "port = self.macToPort[packet.dst]"
POX_SEEDED = "port = self.macToPort[packet.dst] + 1"   # bench/localize.py's pox-port-plus-one
POX_TRACE = WRONG_PORT.with_name("pox_port_plus_one.trace.jsonl")   # a fuzz run of it: a blackhole


def seeded_pox(pox_home: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, int]:
    """A private copy of POX with l2_learning, one line seeded, as the component ``pox_port_plus_one`` in
    its ext/ (POX's own code stays untouched); the component's file and the faulty line's number."""
    home = tmp / "pox"
    shutil.copytree(pox_home, home, ignore=shutil.ignore_patterns("*.pyc", "__pycache__"))
    lines = (home / "pox" / "forwarding" / "l2_learning.py").read_text().splitlines(keepends=True)
    (i,) = [k for k, line in enumerate(lines) if line.strip() == POX_FAULTY]
    lines[i] = lines[i].replace(POX_FAULTY, POX_SEEDED)
    app = home / "ext" / "pox_port_plus_one.py"
    app.write_text("".join(lines))
    monkeypatch.setenv("NETSLEUTH_POX", str(home))
    return app.resolve(), i + 1


def test_a_pox_fault_every_replay_runs_ranks_per_handler_call(pox_home: Path, tmp_path: Path, capsys,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """POX's l2_learning sending a known destination to the port next to the learned one: every replay runs
    the packet-in handler's install path, and whole replays tie the whole handler; each call of a POX
    handler as a run of its own puts the faulty line in the top 2, behind at most the test that leads to it."""
    app, line = seeded_pox(pox_home, tmp_path, monkeypatch)
    spec = "pox:pox_port_plus_one"
    d = run_minimize(MinimizeOptions(trace=POX_TRACE, out=tmp_path / "min", controller=[spec], jobs=2,
                                     budget=90, localize=True))
    loc = d["localize"]
    assert loc["spectrum"] == "handler calls" and loc["separable"], loc
    ranks = {(t["file"], t["line"]): (t["rank"], t["block"]) for t in loc["top"]}
    rank, block = ranks.get((str(app), line), (None, None))
    assert block == 1 and rank is not None and rank <= 2, loc["top"][:3]
    # ahead of it at most the test that leads to it (which ties with it unless a passing call floods)
    assert all(t["source"] == "if packet.dst not in self.macToPort: # 4" for t in loc["top"][:rank - 1]), loc["top"]
    calls = [json.loads(p.read_text()) for p in sorted((tmp_path / "min").glob("*/w*/*/coverage.json"))]
    # every replay with inputs split into POX handler calls, and the sends of a reproducing one noted
    assert all(c["windows"] for c in calls if c["inputs"]) and all(c["sent"] for c in calls if c["reproduced"])
    assert "PacketIn" in {w["event"] for c in calls for w in c["windows"]}
    capsys.readouterr()
    assert main(["localize", str(tmp_path / "min"), "--spectrum", "replays", "--no-extra-replays",
                 "--controller", spec]) == 0
    whole = json.loads((tmp_path / "min" / "localize.json").read_text())
    whole_rank = next((t["rank"] for t in whole["top"] if t["line"] == line), None)
    with capsys.disabled():
        print(f"POX per handler call: rank {rank} ({loc['failing']} failing / {loc['passing']} passing calls); "
              f"whole replays: {whole['message'] or whole_rank}")
    assert whole["spectrum"] == "replays"
    assert not whole["separable"] or whole_rank is None or whole_rank > 5, whole["top"][:10]
