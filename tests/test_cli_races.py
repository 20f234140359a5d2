"""`netsleuth races` on real SDNRacer traces: JSON counts and plain-words output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.real

# the SDNRacer trace corpus beside the checkout
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdnracer"


def races(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netsleuth.cli", "races", *args], capture_output=True,
                          text=True, timeout=120)


def test_races_json_matches_reference_and_text_names_operations() -> None:
    name = "pox_l2_multi-MeshTopology2-steps200"
    ref = json.loads((DATA / "reference.json").read_text())[name]["sdnracer"]
    trace = str(DATA / "traces" / f"{name}.hb.json")
    proc = races(trace, "--json")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert (d["races"], d["commuting"], d["time_filtered_races"], d["harmful"]) == (
        ref["races"], ref["commute"], ref["time_filtered_races"], ref["harmful"])
    assert len(d["race_list"]) == d["harmful"]
    text = races(trace, "--show", "50")
    assert text.returncode == 0
    lines = [line for line in text.stdout.splitlines() if line.startswith("harmful")]
    assert len(lines) == d["harmful"]
    assert all("on switch" in line and "  vs  " in line for line in lines)


def test_races_bad_input_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.hb.json"
    bad.write_text('{"eid": 1, "type": "HbPacketHandle"\n')
    proc = races(str(bad))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "fix:" in proc.stderr


def test_cluster_json_and_html(tmp_path: Path) -> None:
    name = "pox_l2_multi-MeshTopology2-steps200"
    ref = json.loads((DATA / "reference.json").read_text())[name]["bigbug"]
    html = tmp_path / "c.html"
    proc = subprocess.run([sys.executable, "-m", "netsleuth.cli", "cluster", str(DATA / "traces" / f"{name}.hb.json"),
                           "--json", "--html", str(html)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert len(d["clusters"]) == ref["final_clusters"]
    assert sorted((c["size"] for c in d["clusters"]), reverse=True) == sorted(ref["cluster_sizes"], reverse=True)
    assert all("switch" in c["representative"]["text"] for c in d["clusters"])
    page = html.read_text()
    assert page.count("<svg") == len(d["clusters"]) and "http://" not in page.replace("http://www.w3.org", "")
