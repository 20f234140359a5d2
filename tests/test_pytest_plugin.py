"""The pytest plugin, as a user meets it: test files run by a real pytest (pytester, in a subprocess).

The inner test files start real os-ken controllers through the plugin's
fixture; the outer tests read what pytest printed and what the inner tests
left on disk, and check that no controller process outlives its test.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

pytest_plugins = ["pytester"]

SIMPLE_SWITCH = "osken:os_ken.app.simple_switch"
SIMPLE_SWITCH_13 = "osken:os_ken.app.simple_switch_13"
NETSLEUTH = str(Path(sys.executable).parent / "netsleuth")


def _gone(pids: list[int], wait: float = 10.0) -> bool:
    """True once none of ``pids`` runs (zombies of other parents count as gone)."""
    _, alive = psutil.wait_procs([p for p in (_proc(pid) for pid in pids) if p is not None], timeout=wait)
    return all(p.status() == psutil.STATUS_ZOMBIE for p in alive if p.is_running())


def _proc(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


def _section(output: str) -> str:
    """The plugin's report section of a failed test (from its header to the next one)."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip("- ") == "netsleuth")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(("---", "===", "___"))), len(lines))
    return "\n".join(lines[start + 1:end])


@pytest.mark.real
@pytest.mark.slow
def test_failure_report_shows_trace_violations_and_working_commands(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_blackhole=f"""
        import json

        def test_moved_host_stays_reachable(netsleuth_network):
            net = netsleuth_network(controller="{SIMPLE_SWITCH}", topo="linear,3")
            open("pids.json", "w").write(json.dumps(net.process_ids))
            assert net.ping("h1", "h2").ok
            net.migrate("h2", "s3")
            assert net.check("blackholes", rounds=3) == []

        def test_next_test_runs_after_the_controller_stopped():
            import psutil
            pids = json.loads(open("pids.json").read())
            assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=1)
    out = result.stdout.str()
    section = _section(out)
    trace = Path(section.split("trace:", 1)[1].split()[0])
    assert trace.exists() and trace.name == "trace.jsonl"
    assert f"netsleuth: {SIMPLE_SWITCH} on linear,3" in section
    assert "- blackholes: traffic h" in section and "forwards to no live port" in section
    assert "example: ICMP echo request" in section and "netsleuth trace-packet" in section
    replay = next(line.split("replay:", 1)[1].strip() for line in section.splitlines() if "replay:" in line)
    viz = next(line.split("draw:", 1)[1].strip() for line in section.splitlines() if "draw:" in line)
    assert replay.startswith("netsleuth replay ") and viz.startswith("netsleuth viz ")
    pids = json.loads((pytester.path / "pids.json").read_text())
    assert len(pids) == 2 and _gone(pids)  # the controller and its guard, stopped although the test failed
    # the commands do what the report says: the replay reproduces the violation, viz draws the trace
    done = subprocess.run([NETSLEUTH, *shlex.split(replay)[1:]], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    replayed = json.loads((trace.parent / "replay" / "replay.json").read_text())
    assert replayed["reproduced"] is True and replayed["target"]["invariant"] == "blackholes"
    done = subprocess.run([NETSLEUTH, *shlex.split(viz)[1:]], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and (trace.parent / "trace.html").exists()


@pytest.mark.real
@pytest.mark.slow
def test_marker_sets_the_network_and_the_option_replaces_the_controller(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_marked=f"""
        import json
        import pytest

        @pytest.mark.netsleuth(controller="{SIMPLE_SWITCH}", topo="linear,2")
        def test_pingall(netsleuth_network, netsleuth_controller):
            net = netsleuth_network()
            result = net.pingall()
            seen = {{"controller": net.controller, "fixture": netsleuth_controller,
                     "hosts": len(result.outcomes), "ok": result.ok,
                     "openflow": net.session.world.openflow_versions()}}
            open("seen.json", "w").write(json.dumps(seen))
            assert result
    """)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    seen = json.loads((pytester.path / "seen.json").read_text())
    assert seen == {"controller": SIMPLE_SWITCH, "fixture": SIMPLE_SWITCH, "hosts": 2, "ok": 2,
                    "openflow": {"s1": "1.0", "s2": "1.0"}}
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--netsleuth-controller", SIMPLE_SWITCH_13)
    result.assert_outcomes(passed=1)
    seen = json.loads((pytester.path / "seen.json").read_text())
    # the same test, against the other controller: it is the one that ran (it speaks OpenFlow 1.3)
    assert seen == {"controller": SIMPLE_SWITCH_13, "fixture": SIMPLE_SWITCH_13, "hosts": 2, "ok": 2,
                    "openflow": {"s1": "1.3", "s2": "1.3"}}


@pytest.mark.real
@pytest.mark.slow
def test_controller_is_stopped_when_the_run_is_interrupted(pytester: pytest.Pytester) -> None:
    """Ctrl-C in the middle of a test: pytest stops, and the controller goes with it."""
    pytester.makepyfile(test_interrupted=f"""
        import json

        from netsleuth.testing import LiveNetwork

        def test_interrupted(netsleuth_network):
            net = netsleuth_network(controller="{SIMPLE_SWITCH}", topo="linear,2")
            other = LiveNetwork("{SIMPLE_SWITCH}", "linear,2")  # opened without the fixture, never closed
            open("pids.json", "w").write(json.dumps(net.process_ids + other.process_ids))
            raise KeyboardInterrupt
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    pids = json.loads((pytester.path / "pids.json").read_text())
    assert len(pids) == 4 and _gone(pids)


@pytest.mark.real
@pytest.mark.slow
def test_a_violated_sequence_reports_its_inputs_and_the_reproduce_option_replays_it(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_sequence=f"""
        from netsleuth.testing import Move, Send, check_inputs

        def test_ping_then_move():
            check_inputs([Send("h1", "h2"), Move("h2", "s3")], "{SIMPLE_SWITCH}", "linear,3",
                         invariants=("blackholes",))
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--netsleuth-reproduce", "2")
    result.assert_outcomes(failed=1)
    section = _section(result.stdout.str())
    assert "blackholes after 2 inputs against osken:os_ken.app.simple_switch on linear,3" in section
    assert "1. h1 pings h2\n  2. h2 moves to s3" in section
    assert "netsleuth replay reproduced it in 2 of 2 replays" in section
    trace = Path(section.split("trace:", 1)[1].split()[0])
    assert [json.loads((trace.parent / f"replay-{k}" / "result.json").read_text())["command"] for k in (1, 2)] \
        == ["replay", "replay"]


@pytest.mark.real
def test_plugin_loads_nothing_until_a_test_uses_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="""
        import sys

        def test_plain():
            assert "netsleuth.pytest_plugin" in sys.modules
            assert not [m for m in sys.modules if m.startswith(("netsleuth.testing", "netsleuth.live",
                                                                "netsleuth.invariants", "hypothesis"))]
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest")
    result.assert_outcomes(passed=1)
    pytester.makepyfile(test_plain="""
        import sys

        def test_plain():
            assert "netsleuth.pytest_plugin" not in sys.modules
    """)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:netsleuth").assert_outcomes(passed=1)


@pytest.mark.real
def test_a_test_that_names_no_controller_gets_one_clear_error(pytester: pytest.Pytester,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_unnamed="""
        import pytest

        def test_no_controller(netsleuth_network):
            netsleuth_network(topo="linear,2")

        @pytest.mark.netsleuth(controler="osken:os_ken.app.simple_switch")
        def test_misspelled_marker(netsleuth_network):
            netsleuth_network()
    """)
    monkeypatch.delenv("NETSLEUTH_TEST_CONTROLLER", raising=False)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, errors=1)
    out = result.stdout.str()
    assert "NetworkUseError: no controller to test" in out
    assert "@pytest.mark.netsleuth takes controller, topo, openflow as keywords, not controler" in out


class _ControllerDiesOnItsOwn:
    """Not a netsleuth input: the controller process is killed behind netsleuth's back.

    The live run sees the controller gone (liveness); its trace has no input
    that kills it, so netsleuth's replay of that trace cannot reproduce it --
    a failure that came from outside the inputs, as a timing accident does.
    """

    def words(self) -> str:
        return "the controller dies on its own"

    def apply(self, net) -> None:
        import signal
        controller = net.session.controllers[0]
        os.kill(controller.pid, signal.SIGKILL)
        controller.wait_exit(5.0)


@pytest.mark.real
@pytest.mark.slow
def test_a_violation_the_replay_cannot_reproduce_does_not_count_with_reproduce(tmp_path: Path) -> None:
    from netsleuth.testing import InvariantViolated, Send, UnreproducedViolation, check_inputs

    seq = [Send("h1", "h2"), _ControllerDiesOnItsOwn()]
    with pytest.raises(InvariantViolated) as seen:
        check_inputs(seq, SIMPLE_SWITCH, "linear,2", invariants=("liveness",), out=tmp_path / "once",
                     reproduce=0)
    assert seen.value.violations[0].invariant == "liveness"
    with pytest.warns(UnreproducedViolation, match=r"liveness after 2 inputs was not counted: netsleuth replay "
                                                   r"reproduced it in 0 of 1 replays, 2 needed"):
        check_inputs(seq, SIMPLE_SWITCH, "linear,2", invariants=("liveness",), out=tmp_path / "confirmed",
                     reproduce=2)
    run = next((tmp_path / "confirmed").iterdir())
    replayed = sorted(p.name for p in run.iterdir() if p.name.startswith("replay-"))
    assert replayed == ["replay-1"]  # the first replay did not reproduce it: with need=2 of 2 it cannot count
