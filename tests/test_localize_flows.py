"""A wrong value stored in one handler call and used in another, localized through the data flow between calls.

os-ken's simple_switch with its learning line seeded to learn every host at port 1
(bench/localize.py's ``ss-learn-constant``): the call that installs the wrong rule
reads the port an earlier call stored, and the storing line runs in every call, so
line coverage alone ranks it behind the whole install path (24th of 34).  The
controller process notes which call stored each value of the app's dictionaries a
call reads (controllers/covlaunch.py, ``--flows``), and the ranking puts the store
right after the read it fed.  The fuzz run is recorded (it found the blackhole with
the benchmark's settings), so the test does not fuzz.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from netsleuth.jobs.minimize import MinimizeOptions, run_minimize

pytestmark = [pytest.mark.real, pytest.mark.slow]

DATA = Path(__file__).parent / "data" / "localize" / "windows"
APP = DATA / "ss_wrong_out_port.py.txt"   # os-ken's simple_switch with line 77 seeded: restored here
TRACE = DATA / "ss_learn_constant.trace.jsonl"
LEARN, SEEDED = "self.mac_to_port[dpid][src] = msg.in_port", "self.mac_to_port[dpid][src] = 1"
READ = "out_port = self.mac_to_port[dpid][dst]"


def learn_constant(folder: Path) -> tuple[Path, int]:
    """simple_switch learning every host at port 1; the copy and the faulty line's number."""
    lines = APP.read_text().replace("out_port = msg.in_port", READ).splitlines(keepends=True)
    (i,) = [k for k, line in enumerate(lines) if line.strip() == LEARN]
    lines[i] = lines[i].replace(LEARN, SEEDED)
    path = folder / "ss_learn_constant.py"
    path.write_text("".join(lines))
    return path.resolve(), i + 1


def test_a_wrong_learned_value_ranks_right_after_the_read_it_fed(tmp_path: Path, capsys) -> None:
    app, line = learn_constant(tmp_path)
    spec = f"osken:{app}"
    d = run_minimize(MinimizeOptions(trace=TRACE, out=tmp_path / "min", controller=[spec], jobs=2, budget=90,
                                     localize=True))
    loc = d["localize"]
    assert loc["spectrum"] == "handler calls" and loc["separable"], loc
    top = loc["top"]
    ranks = {(t["file"], t["line"]): t for t in top}
    found = ranks.get((str(app), line))
    with capsys.disabled():
        print(f"learn-constant: the store ranks {found and found['rank']} "
              f"({loc['failing']} failing / {loc['passing']} passing calls)")
    assert found is not None and found["rank"] <= 2 and found["block"] == 1, top[:4]
    # ranked as the store of the value the failing call read, right after that read (they tie)
    assert [t["source"] for t in top[:2]] == [READ, SEEDED] and found["read_at"]["source"] == READ
    calls = [json.loads(p.read_text()) for p in sorted((tmp_path / "min").glob("*/w*/*/coverage.json"))]
    flows = [f for c in calls for w in c.get("windows", []) for f in w.get("flows", [])]
    assert any(f[0] == str(app) and f[1] == line for f in flows), flows[:5]
    assert all(f[2] != w["key"] for c in calls for w in c.get("windows", []) for f in w.get("flows", []))
    assert "read the value it stored" in (tmp_path / "min" / "report.html").read_text()
