"""`netsleuth defined step|run --daemon` end to end on real BIRD (root, `make debs`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.real, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "netsleuth.cli", *args], input=stdin, capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)


def test_step_console_delivers_reads_the_daemon_and_explores_the_rest_of_the_group():
    r = _cli("defined", "step", "--daemon", "bird", "--scenario", "med",
             stdin="held\nevent\nbest r3\norders\nevent 2\nroutes r3\nstatus\nnonsense\n")
    assert r.returncode == 2, r.stderr            # the unknown command, after everything else ran
    out = r.stdout
    assert "group 0: 3 message(s) held" in out
    # ids number messages by arrival; DEFINED's order is by origin: s1's p1 first
    assert re.search(r"delivered #\d g0 s1->r3: UPDATE announce 203.0.113.0/24 as_path 65001 med 10", out)
    assert "r3: best path to 203.0.113.0/24 is p1" in out
    # after p1, BIRD keeps whichever of p2 and p3 comes last
    assert "order 1/2: p2-p3 -> p3" in out and "order 2/2: p3-p2 -> p2" in out
    assert "depends on the delivery order: p2 / p3" in out
    # DEFINED's order goes on with p2 then p3: the live daemon ends on p3, with all three paths
    best = [ln for ln in out.splitlines() if ln.strip().startswith("203.0.113.0/24")]
    assert len(best) == 3 and sum(" * p3 " in ln for ln in best) == 1, best
    assert "group 0, 3 message(s) delivered, 0 held" in out
    assert "error: unknown command 'nonsense'" in out


def test_run_rip_json_reports_the_timeout_and_one_history(tmp_path):
    r = _cli("defined", "run", "--daemon", "bird", "--scenario", "rip", "--runs", "2", "--json",
             "--out", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["runs"] == 2 and d["distinct_histories"] == 1
    assert [x["held_for"] for x in d["per_run"]] == [180.0, 180.0]
    assert json.loads((tmp_path / "o" / "result.json").read_text())["runs"] == 2


def test_run_all_orders_json_on_bird_and_arrival_order():
    r = _cli("defined", "run", "--daemon", "bird", "--scenario", "med", "--all-orders", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["runs"] == 6 and d["distinct_outcomes"] == 3 and d["outcomes"] == {"p1": 2, "p2": 2, "p3": 2}
    assert all(o["best"] == o["order"][-1] for o in d["per_run"])   # BIRD keeps the last to arrive
    assert d["verdict"].startswith("best path for 203.0.113.0/24 at r3 depends on the delivery order")
    r = _cli("defined", "run", "--daemon", "bird", "--scenario", "med", "--mode", "plain", "--runs", "1", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["mode"] == "arrival order" and d["per_run"][0]["order"] == [] and d["per_run"][0]["best"] in {
        "p1", "p2", "p3"}


def test_run_ospf_records_its_link_events_and_replays_them_from_the_file(tmp_path):
    r = _cli("defined", "run", "--daemon", "bird", "--scenario", "ospf", "--topo", "ring,4", "--link-events", "1",
             "--runs", "2", "--json", "--out", str(tmp_path / "a"))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["routers"] == 4 and d["events"] == 2 and d["runs"] == 2
    assert d["distinct_delivery_sequences"] == 1 and d["distinct_histories"] == 1
    assert d["per_run"][0]["converged_at"] is not None and d["per_run"][0]["deliveries"] > 100
    again = _cli("defined", "run", "--daemon", "bird", "--scenario", "ospf", "--events",
                 str(tmp_path / "a" / "events.jsonl"), "--runs", "1", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["per_run"][0]["deliveries"] == d["per_run"][0]["deliveries"]
    bad = _cli("defined", "run", "--daemon", "bird", "--scenario", "ospf", "--events", str(tmp_path / "none.jsonl"))
    assert bad.returncode == 2 and bad.stderr.startswith("error: cannot read"), bad.stderr
