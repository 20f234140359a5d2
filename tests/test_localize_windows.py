"""Spectra per handler call, from the coverage three real replays recorded.

The data: `minimize --localize` on os-ken's simple_switch with line 77 seeded to `out_port = msg.in_port`
(a known destination is sent back out of its in port, a blackhole), replays 1 and 3 reproducing the
violation and replay 2 not.  Each replay's ``coverage.json`` holds its lines per packet-in handler call and
the switch and xid of every message each call sent; its ``trace.jsonl`` the messages the switches got.
Whole replays cannot rank line 77 (every replay runs the same lines); handler calls can.
"""

import json
import shutil
from pathlib import Path

from netsleuth.jobs.localize import LocalizeOptions, load_spectrum
from netsleuth.localize.collect import load_runs, load_window_runs
from netsleuth.localize.source import execution_order
from netsleuth.localize.spectrum import FORMULAS, rank
from netsleuth.localize.windows import ControllerMessage, failing_windows, raising_windows, window_runs

DATA = Path(__file__).parent / "data" / "localize" / "windows"
REPLAYS = ("replay-1", "replay-2", "replay-3")


def _recorded(tmp_path):
    """The recorded replays, with the app's path (``APP`` in the data) pointing at the seeded source."""
    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(DATA / "ss_wrong_out_port.py.txt", app / "ss_wrong_out_port.py")
    paths = []
    for name in REPLAYS:   # laid out as a minimization's replays are
        folder = tmp_path / "min" / "replays" / "w0" / name
        folder.mkdir(parents=True)
        shutil.copy(DATA / name / "trace.jsonl", folder)
        text = (DATA / name / "coverage.json").read_text().replace("APP", str(app))
        (folder / "coverage.json").write_text(text)
        paths.append(folder / "coverage.json")
    return paths, (str(app / "ss_wrong_out_port.py"), 77), json.loads((DATA / "target.json").read_text())


def _ranked(spectrum, formula):
    order = execution_order(sorted({x for r in spectrum.runs if r.failed for x in r.lines}))
    return rank(spectrum.runs, formula, order=lambda x: order.get(x, (0, *x)))


def test_the_call_that_sent_the_violations_rule_is_the_failing_window(tmp_path):
    paths, _, target = _recorded(tmp_path)
    spectrum = load_window_runs(paths, target)
    assert spectrum is not None
    data = [json.loads(p.read_text()) for p in paths]
    assert [len(d["windows"]) for d in data] == [12, 4, 4]
    # one failing window per failing replay: the packet-in call that installed s2's in_port=1 h2->h1 rule
    assert sum(r.failed for r in spectrum.runs) == 2
    assert sum(not r.failed for r in spectrum.runs) == 18
    failing = [r for r in spectrum.runs if r.failed]
    assert all((str(tmp_path / "app" / "ss_wrong_out_port.py"), 77) in r.lines for r in failing)


def test_windows_rank_the_faulty_line_that_whole_replays_cannot(tmp_path):
    paths, faulty, target = _recorded(tmp_path)
    whole = _ranked(load_runs(paths), "ochiai")
    assert not whole.separable   # the failing and passing replays ran the same lines
    windows = load_window_runs(paths, target)
    assert windows is not None
    for formula in FORMULAS:
        ranking = _ranked(windows, formula)
        assert ranking.separable
        assert ranking.block_of(faulty) == 1
        assert ranking.rank_of(faulty) == 1, formula


def test_auto_ranks_with_handler_calls_only_where_they_sharpen_whole_replays(tmp_path):
    paths, faulty, target = _recorded(tmp_path)
    out = tmp_path / "min"
    spectrum, kind = load_spectrum(out, target, LocalizeOptions(out))
    assert kind == "handler calls" and len(spectrum.runs) == 20
    assert load_spectrum(out, target, LocalizeOptions(out, spectrum="replays"))[1] == "replays"
    assert load_spectrum(out, None, LocalizeOptions(out, spectrum="windows"))[1] == "replays"  # no violation


def test_without_the_violation_or_windows_there_is_no_window_spectrum(tmp_path):
    paths, _, target = _recorded(tmp_path)
    assert load_window_runs(paths, None) is None
    data = json.loads(paths[0].read_text())
    del data["windows"]   # a controller that records no handler calls (not os-ken)
    paths[0].write_text(json.dumps(data))
    assert load_window_runs(paths, target) is None


def test_a_violation_naming_no_rule_blames_the_last_message_to_its_switch():
    target = {"switches": ["s2"], "details": {"where": "s2"}}
    messages = [ControllerMessage(2, 10, "FLOW_MOD", {}), ControllerMessage(1, 11, "PACKET_OUT", {}),
                ControllerMessage(2, 12, "PACKET_OUT", {}), ControllerMessage(2, 13, "BARRIER_REQUEST", {})]
    sent_by = {(2, 10): "p:1", (1, 11): "p:2", (2, 12): "p:3", (2, 13): "p:4"}
    assert failing_windows(sent_by, messages, target, {"s1": 1, "s2": 2}) == {"p:3"}
    assert failing_windows(sent_by, messages, {"switches": ["s9"]}, {"s1": 1, "s2": 2}) == set()


def test_window_runs_keep_only_the_files_asked_for():
    windows = [{"key": "a:1", "lines": {"/app/x.py": [1, 2], "/fw/y.py": [3]}}, {"key": "a:2", "lines": {}}]
    runs = window_runs(windows, {"a:1"}, keep=lambda f: f.startswith("/app/"))
    assert [r.failed for r in runs] == [True, False]
    assert runs[0].lines == frozenset({("/app/x.py", 1), ("/app/x.py", 2)})


def test_the_call_an_exception_escaped_is_the_failing_window_of_an_exception_violation(tmp_path):
    """os-ken's simple_switch with its known-destination test flipped raises KeyError on a broadcast: the
    recorded replay of the one-packet MCS notes the packet-in call the exception escaped, which fails."""
    data = DATA / "exception"
    target = json.loads((data / "target.json").read_text())
    assert target["invariant"] == "exceptions" and target["details"]["exception"] == "KeyError"
    paths = []
    for name in ("replay-1", "replay-2"):   # replay-1 reproduced; replay-2, without the packet, did not
        folder = tmp_path / "min" / "replays" / "w0" / name
        folder.mkdir(parents=True)
        shutil.copy(data / name / "trace.jsonl", folder)
        (folder / "coverage.json").write_text((data / name / "coverage.json").read_text().replace("APP", "/app"))
        paths.append(folder / "coverage.json")
    raised = json.loads(paths[0].read_text())["windows"]
    assert raising_windows(raised, target) == {"c0-1:1"}
    assert raising_windows(raised, dict(target, invariant="blackholes")) == set()
    windows = load_window_runs(paths, target)
    assert windows is not None
    (failing,) = [r for r in windows.runs if r.failed]
    assert ("/app/ss_flipped_known.py", 77) in failing.lines   # the line that raised, in the failing call
    assert all(not r.lines for r in windows.runs if not r.failed)   # nothing passing ran the handler
    assert not rank(windows.runs).separable
