"""Which controllers localization can measure, and the spectrum read back from replays' coverage files."""

import json
import sys

from netsleuth.controllers.measure import coverage_argv, measurable, python_program
from netsleuth.controllers.spec import parse_controller
from netsleuth.localize.collect import load_runs, merge_process_files, write_replay_coverage
from netsleuth.localize.source import execution_order, function_of


def test_python_programs_are_recognised(tmp_path):
    assert python_program(["python3", "ctl.py", "{port}"]) == ("python3", ["ctl.py", "{port}"])
    assert python_program(["/usr/bin/python3.11", "-u", "-m", "pox", "x"]) == ("/usr/bin/python3.11",
                                                                               ["-m", "pox", "x"])
    assert python_program(["python3", "-c", "print(1)"]) is None
    script = tmp_path / "ctl"
    script.write_text("#!/usr/bin/env python3\nprint(1)\n")
    assert python_program([str(script), "--port", "1"]) == ("python3", [str(script), "--port", "1"])
    binary = tmp_path / "ryu-like"
    binary.write_bytes(b"\x7fELF\x02\x01")
    assert python_program([str(binary)]) is None
    assert python_program(["/usr/sbin/ovs-testcontroller", "ptcp:{port}"]) is None


def test_which_specs_are_measurable():
    assert measurable(parse_controller("osken:os_ken.app.simple_switch"))
    assert measurable(parse_controller("faucet:auto"))
    assert measurable(parse_controller(f"cmd:{sys.executable} ctl.py {{port}}"))
    assert not measurable(parse_controller("cmd:ovs-testcontroller ptcp:{port}"))
    assert not measurable(parse_controller("tcp:127.0.0.1:6633"))


def test_coverage_argv_puts_the_launcher_before_the_program(tmp_path):
    spec = parse_controller("osken:os_ken.app.simple_switch")
    argv = coverage_argv(spec, ["/venv/bin/python", "/x/osken_main.py", "--apps", "a"], tmp_path / "c.json",
                         run_now=False)
    assert argv[0] == "/venv/bin/python" and argv[1].endswith("covlaunch.py")
    cut = argv.index("--")
    assert argv[cut + 1:] == ["/x/osken_main.py", "--apps", "a"]
    assert "--own-module" in argv and "os_ken.app.simple_switch" in argv and "--run-now" not in argv
    assert argv[argv.index("--source-pkg") + 1] == "os_ken.app.simple_switch"  # own code only, unless asked
    framework = coverage_argv(spec, ["/venv/bin/python", "/x/osken_main.py"], tmp_path / "c.json", run_now=False,
                              framework=True)
    assert "os_ken" in [framework[i + 1] for i, a in enumerate(framework) if a == "--source-pkg"]
    pox = coverage_argv(parse_controller("cmd:python3 /p/pox.py forwarding.l2_learning --port={port}"),
                        ["python3", "/p/pox.py", "forwarding.l2_learning"], tmp_path / "p.json", run_now=True)
    assert "pox.forwarding.l2_learning" in pox and "--run-now" in pox
    assert coverage_argv(parse_controller("cmd:ovs-testcontroller ptcp:{port}"), ["ovs-testcontroller"],
                         tmp_path / "n.json", run_now=False) is None


def _process(folder, name, lines, own):
    (folder / name).write_text(json.dumps({"own": own, "framework": ["/fw"], "lines": lines}))


def test_a_replays_processes_merge_and_a_killed_one_is_counted_lost(tmp_path):
    cov = tmp_path / "coverage"
    cov.mkdir()
    _process(cov, "c0-1.json", {"/app/a.py": [1, 2], "/fw/x.py": [5]}, ["/app"])
    _process(cov, "c0-2.json", {"/app/a.py": [2, 3]}, ["/app"])
    (cov / "c0-2.json.run").touch()
    (cov / "c0-3.json.run").touch()  # switched, never wrote: SIGKILLed
    merged = merge_process_files(cov)
    assert merged["lines"] == {"/app/a.py": [1, 2, 3], "/fw/x.py": [5]}
    assert (merged["processes"], merged["lost"]) == (2, 1)
    path = write_replay_coverage(tmp_path, True, 4)
    assert json.loads(path.read_text())["reproduced"] is True


def test_load_runs_keeps_the_controllers_own_code_unless_all_code(tmp_path):
    files = []
    for i, (ok, lines) in enumerate([(True, {"/app/a.py": [1, 2], "/fw/x.py": [5]}),
                                     (False, {"/app/a.py": [1]}), (None, {"/app/a.py": [9]})]):
        f = tmp_path / f"{i}.json"
        f.write_text(json.dumps({"reproduced": ok, "own": ["/app"], "framework": ["/fw"], "lines": lines}))
        files.append(f)
    own = load_runs(files)
    assert [r.failed for r in own.runs] == [True, False] and own.skipped == 1
    assert own.runs[0].lines == frozenset({("/app/a.py", 1), ("/app/a.py", 2)})
    assert ("/fw/x.py", 5) in load_runs(files, all_code=True).runs[0].lines


def test_a_handlers_lines_come_before_the_helper_it_calls(tmp_path):
    src = tmp_path / "app.py"
    src.write_text("class S:\n"
                   "    def helper(self):\n"
                   "        return 1\n"
                   "\n"
                   "    def handler(self):\n"
                   "        x = 2\n"
                   "        self.helper()\n")
    f = str(src)
    assert function_of(f, 3) == "S.helper" and function_of(f, 6) == "S.handler"
    order = execution_order([(f, 3), (f, 6), (f, 7)])
    assert sorted([(f, 3), (f, 6), (f, 7)], key=order.__getitem__) == [(f, 6), (f, 7), (f, 3)]


def test_ranking_json_and_the_report_section_show_each_line_with_its_source(tmp_path):
    from netsleuth.jobs.localize import ranking_json
    from netsleuth.jobs.minimize_report import localize_html
    from netsleuth.localize.collect import Spectrum
    from netsleuth.localize.spectrum import Run, rank

    src = tmp_path / "app.py"
    src.write_text("def handler(x):\n    if x < 1:\n        return '<drop>'\n    return x\n")
    f = str(src)
    runs = [Run(True, frozenset({(f, 2), (f, 3)})), Run(False, frozenset({(f, 2), (f, 4)}))]
    loc = ranking_json(rank(runs), Spectrum(runs=runs, own=[str(tmp_path)]), top=5, all_code=False)
    assert [(t["line"], t["function"], t["failing"], t["passing"]) for t in loc["top"]] == [(3, "handler", 1, 0),
                                                                                         (2, "handler", 1, 1)]
    assert loc["top"][0]["source"] == "return '<drop>'" and loc["separable"] and loc["message"] == ""
    assert loc["groups"] == [{"file": loc["top"][0]["short"], "function": "handler", "lines": [3, 2]}]
    page = localize_html(loc)
    assert "return &#x27;&lt;drop&gt;&#x27;" in page and "1 failing / 0 passing" in page
    thin = ranking_json(rank(runs[:1]), Spectrum(runs=runs[:1]), top=5, all_code=False)
    assert thin["message"].startswith("not enough passing runs to rank")
    assert "not enough passing runs" in localize_html(thin)


def test_minimize_localize_with_a_controller_that_is_not_python_is_a_note_not_a_failure(tmp_path):
    from pathlib import Path

    from netsleuth.jobs.minimize import MinimizeOptions, _localize_preflight

    opts = MinimizeOptions(trace=Path("t.jsonl"), out=tmp_path, localize=True,
                           controller=["cmd:/usr/sbin/ovs-testcontroller ptcp:{port}"])
    assert _localize_preflight(opts, "osken:os_ken.app.simple_switch").startswith(
        "localization needs a Python controller")
    opts.controller = ["osken:os_ken.app.simple_switch"]
    assert _localize_preflight(opts, "osken:os_ken.app.simple_switch") == ""
    opts.localize = False
    assert _localize_preflight(opts, "tcp:127.0.0.1:6633") == ""


def test_reorderings_swap_neighbours_that_do_not_depend_on_each_other():
    from netsleuth.jobs.localize import reorderings
    from netsleuth.trace.schema import HostMigration, LinkFailure, LinkRecovery, TrafficInjection

    ping = TrafficInjection(seq=10, t=1.0, id="i1", host="h1", packet={}, dst="h2")
    move = HostMigration(seq=20, t=2.0, id="i2", host="h1", old_switch="s1", old_port=1, new_switch="s3",
                         new_port=3)
    fail = LinkFailure(seq=30, t=3.0, id="i3", node1="s1", port1=2, node2="s2", port2=2)
    recover = LinkRecovery(seq=40, t=4.0, id="i4", node1="s1", port1=2, node2="s2", port2=2, deps=("i3",))
    orders = reorderings([ping, move, fail, recover])
    assert [[e.id for e in o] for o in orders] == [["i2", "i1", "i3", "i4"], ["i1", "i3", "i2", "i4"]]
    first = orders[0]
    assert (first[0].seq, first[0].t, first[1].seq, first[1].t) == (10, 1.0, 20, 2.0)  # positions traded
    assert first[0].host == "h1" and first[0].new_switch == "s3"


def test_a_recorded_spectrum_that_cannot_separate_lines_says_so_and_ranks_nothing(tmp_path, capsys):
    """Real replays of simple_switch with a seeded wrong output port: the passing replays that ran the
    packet-in handler ran exactly the failing replays' lines, so no formula can rank; the user is told why."""
    from pathlib import Path

    from netsleuth.jobs.localize import _rank, ranking_json
    from netsleuth.jobs.localize_cli import print_localization

    recorded = json.loads((Path(__file__).parent / "data" / "localize" / "ss_wrong_out_port_spectrum.json").read_text())
    app = str(tmp_path / recorded["file"])
    for k, run in enumerate(recorded["runs"]):
        (tmp_path / f"{k}.json").write_text(json.dumps({"reproduced": run["reproduced"], "own": [str(tmp_path)],
                                                        "lines": {app: run["lines"]}}))
    spectrum = load_runs(sorted(tmp_path.glob("*.json")))
    assert sum(r.failed for r in spectrum.runs) == 5 and len(spectrum.runs) == 9
    ranking = _rank(spectrum, "ochiai")
    assert not ranking.separable and ranking.block_of((app, recorded["faulty_line"])) == 1
    assert {r.block for r in ranking.lines} == {1}   # one block: every executed line has the same counts
    loc = ranking_json(ranking, spectrum, top=5, all_code=False)
    assert loc["message"] == "not enough passing runs to rank: the failing and passing replays executed the same lines"
    assert loc["top"] == [] and loc["groups"] == [] and loc["candidates"] == 35
    print_localization(loc)
    shown = capsys.readouterr().out
    assert "not enough passing runs to rank" in shown and "#1" not in shown


def test_a_windows_flows_guards_and_frames_survive_the_merge_and_become_runs_and_failing_calls(tmp_path):
    from netsleuth.localize.collect import load_raising_calls
    from netsleuth.localize.windows import window_runs

    cov = tmp_path / "coverage"
    cov.mkdir()
    windows = [{"id": 1, "event": "EventOFPPacketIn", "lines": {"/app/a.py": [74]}},
               {"id": 2, "event": "EventOFPPacketIn", "lines": {"/app/a.py": [74, 76, 77]}, "raised": "KeyError",
                "flows": [["/app/a.py", 74, 1, "/app/a.py", 77]], "guards": [["/app/a.py", 76, "/app/a.py", 77]],
                "frames": [["/fw/loop.py", 290], ["/app/a.py", 77]]}]
    (cov / "c0-1.json").write_text(json.dumps({"own": ["/app"], "framework": ["/fw"], "lines": {"/app/a.py": [74]},
                                               "windows": windows, "sent": []}))
    path = write_replay_coverage(tmp_path, True, 1)
    merged = json.loads(path.read_text())["windows"]
    assert merged[1]["flows"] == [["/app/a.py", 74, "c0-1:1", "/app/a.py", 77]]   # the storing window's key
    assert merged[1]["frames"] == [["/fw/loop.py", 290], ["/app/a.py", 77]] and "frames" not in merged[0]
    target = {"invariant": "exceptions", "details": {"exception": "builtins.KeyError"}}
    runs = window_runs(merged, {"c0-1:2"})
    assert [r.failed for r in runs] == [False, True]
    assert runs[1].flows == frozenset({(("/app/a.py", 74), ("/app/a.py", 77))}) and not runs[0].flows
    assert not window_runs(merged, (), keep=lambda f: f.startswith("/fw"))[1].flows   # both ends must be kept
    (call,), own = load_raising_calls([path], target)
    assert own == ["/app"] and call.guards == frozenset({(("/app/a.py", 76), ("/app/a.py", 77))})
    assert call.frames == (("/fw/loop.py", 290), ("/app/a.py", 77))
