"""Exit codes that cannot be confused, and options refused before any work.

0 clean, 1 finding, 2 usage or input error (one line, ``error: ... -- fix:
...``), 3 a bug in netsleuth (one line naming the exception and the log that
holds the traceback), 128+N stopped by signal N (tests/test_signals.py).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from netsleuth.cli import build_parser, main
from netsleuth.model.topo_builders import parse_topo
from netsleuth.trace import schema as ts
from netsleuth.trace.io import write_trace

SIMPLE_SWITCH = "osken:os_ken.app.simple_switch"


def tiny_trace(path: Path, controller: str = SIMPLE_SWITCH) -> Path:
    """A valid trace with no events: enough for commands that read a header first."""
    topo = parse_topo("linear,2")
    write_trace(path, ts.Trace(ts.TraceHeader(topology=topo.to_json(), topology_spec="linear,2",
                                              controller=controller, seed=0, tool_version="test",
                                              command="fuzz"), []))
    return path


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and " -- fix: " in lines[0], lines[0]
    return lines[0]


# ------------------------------------------------------------------ option validation
def bad_options(tmp: Path) -> list[tuple[str, list[str], str]]:
    """(case, argv, words the error names); every argv would start real work if it were accepted."""
    a_file = tmp / "a_file"
    a_file.write_text("x")
    a_dir = tmp / "a_dir"
    a_dir.mkdir()
    trace = str(tiny_trace(tmp / "t.jsonl"))
    new = str(tmp / "new_out")
    fuzz = ["fuzz", "--controller", SIMPLE_SWITCH, "--topo", "linear,2"]
    return [
        ("fuzz --out file", [*fuzz, "--out", str(a_file)], "--out"),
        ("fuzz --out under a file", [*fuzz, "--out", f"{a_file}/sub"], "--out"),
        ("run --out file", ["run", "--controller", SIMPLE_SWITCH, "--topo", "linear,2", "--out", str(a_file)],
         "--out"),
        ("replay --out file", ["replay", trace, "--out", str(a_file)], "--out"),
        ("minimize --out file", ["minimize", trace, "--out", str(a_file)], "--out"),
        ("step --out file", ["step", trace, "--out", str(a_file)], "--out"),
        ("cluster --html dir", ["cluster", trace, "--html", str(a_dir)], "--html"),
        ("viz --html dir", ["viz", trace, "--html", str(a_dir)], "--html"),
        ("pcap --out dir", ["pcap", trace, "--out", str(a_dir)], "--out"),
        ("reduce --out dir", ["reduce", trace, "--out", str(a_dir)], "--out"),
        ("import --out missing dir", ["import", "sts", trace, "--out", f"{tmp}/nope/x.jsonl"], "--out"),
        ("fuzz --persist -1", [*fuzz, "--out", new, "--persist", "-1"], "--persist"),
        ("fuzz --check-every 0", [*fuzz, "--out", new, "--check-every", "0"], "--check-every"),
        ("fuzz --steps -5", [*fuzz, "--out", new, "--steps", "-5"], "--steps"),
        ("fuzz --steps x", [*fuzz, "--out", new, "--steps", "x"], "--steps"),
        ("fuzz --round-seconds -1", [*fuzz, "--out", new, "--round-seconds", "-1"], "--round-seconds"),
        ("fuzz --round-seconds nan", [*fuzz, "--out", new, "--round-seconds", "nan"], "--round-seconds"),
        ("fuzz --rate >1", [*fuzz, "--out", new, "--rate", "traffic=1.5"], "traffic"),
        ("fuzz --rate <0", [*fuzz, "--out", new, "--rate", "traffic=-0.1"], "traffic"),
        ("run --handshake-timeout -1", ["run", "--controller", SIMPLE_SWITCH, "--topo", "linear,2", "--out", new,
                                        "--handshake-timeout", "-1"], "--handshake-timeout"),
        ("run --ping-timeout 0", ["run", "--controller", SIMPLE_SWITCH, "--topo", "linear,2", "--out", new,
                                  "--ping-timeout", "0"], "--ping-timeout"),
        ("replay --times 0", ["replay", trace, "--out", new, "--times", "0"], "--times"),
        ("replay --epsilon -1", ["replay", trace, "--out", new, "--epsilon", "-1"], "--epsilon"),
        ("replay --violation -1", ["replay", trace, "--out", new, "--violation", "-1"], "--violation"),
        ("minimize --budget -1", ["minimize", trace, "--out", new, "--budget", "-1"], "--budget"),
        ("minimize --jobs 0", ["minimize", trace, "--out", new, "--jobs", "0"], "--jobs"),
        ("minimize --replays 0", ["minimize", trace, "--out", new, "--replays", "0"], "--replays"),
        ("invariants --at -1", ["invariants", trace, "--at", "-1"], "--at"),
        ("races --delta -1", ["races", trace, "--delta", "-1"], "--delta"),
        ("races --show -1", ["races", trace, "--show", "-1"], "--show"),
        ("diff --show -1", ["diff", trace, trace, "--show", "-1"], "--show"),
        ("check --max-transitions 0", ["check", "pyswitch", "--max-transitions", "0"], "--max-transitions"),
        ("check --max-depth -1", ["check", "pyswitch", "--max-depth", "-1"], "--max-depth"),
        ("check --pings -1", ["check", "pyswitch", "--pings", "-1"], "--pings"),
        ("check --out file", ["check", "pyswitch", "--out", str(a_file)], "--out"),
        ("cex-inputs --gap -1", ["cex-inputs", trace, "--out", f"{tmp}/x.jsonl", "--gap", "-1"], "--gap"),
        ("defined run --runs 0", ["defined", "run", "--scenario", "bgp-med", "--runs", "0"], "--runs"),
        ("defined run --jitter 1.5", ["defined", "run", "--scenario", "bgp-med", "--jitter", "1.5"], "--jitter"),
        ("unknown option", [*fuzz, "--out", new, "--bogus"], "--bogus"),
        ("missing argument", ["replay"], "trace"),
        ("unknown command", ["frobnicate"], "frobnicate"),
    ]


@pytest.fixture
def cases(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    return {name: (argv, word) for name, argv, word in bad_options(tmp_path)}


def _names() -> list[str]:
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        return [name for name, _, _ in bad_options(Path(d))]


@pytest.mark.parametrize("case", _names())
def test_bad_option_is_one_line_and_exit_2_before_any_work(case: str, cases: dict, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    argv, word = cases[case]
    assert main(argv) == 2
    captured = capsys.readouterr()
    line = one_error_line(captured.err)
    assert word in line
    assert not (tmp_path / "new_out").exists()  # refused before anything was created or started


@pytest.mark.real
def test_every_subcommand_has_help_and_one_line_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    """`netsleuth --help` lists the commands; each one's --help works and its usage errors are one line.

    One command goes through the installed entry point in a process of its own; the others through
    the same ``main`` in this process (a process each cost a second of imports and said nothing more).
    """
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    names = list(sub.choices)
    assert {"run", "fuzz", "replay", "minimize", "check", "viz", "defined"} <= set(names)
    r = subprocess.run([sys.executable, "-m", "netsleuth.cli", "fuzz", "--no-such-option"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert one_error_line(r.stderr).startswith("error: netsleuth fuzz") and "Traceback" not in r.stderr
    for name in names:
        assert main([name, "--no-such-option"]) == 2, name
        err = capsys.readouterr().err
        assert one_error_line(err).startswith(f"error: netsleuth {name}"), (name, err)
        assert "Traceback" not in err
    assert main(["fuzz", "--help"]) == 0


# ------------------------------------------------------------------ exit code 3
def test_internal_error_exits_3_with_the_traceback_in_a_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    import netsleuth.jobs.invariants_on_trace as job

    def broken(*args, **kwargs):
        raise RuntimeError("the rebuilt state is inconsistent")
    monkeypatch.setattr(job, "invariants_on_trace", broken)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # a command without OUT logs to a temp file
    trace = tiny_trace(tmp_path / "t.jsonl")
    assert main(["invariants", str(trace)]) == 3
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith("internal error: RuntimeError: the rebuilt state is inconsistent -- fix: this is a "
                               "bug in netsleuth; please report it with ")
    log = Path(lines[0].rsplit(" ", 1)[1])
    assert log.parent == tmp_path
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "in broken" in text
    assert "RuntimeError: the rebuilt state is inconsistent" in text

    # --debug (anywhere on the line) also shows the traceback on the terminal
    assert main(["invariants", str(trace), "--debug"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("internal error: RuntimeError") and "Traceback (most recent call last)" in err


def test_internal_error_log_goes_to_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    import netsleuth.jobs.replay as job

    def broken(*args, **kwargs):
        raise KeyError("target")
    monkeypatch.setattr(job, "replay", broken)
    out = tmp_path / "out"
    out.mkdir()
    assert main(["--debug", "replay", str(tiny_trace(tmp_path / "t.jsonl")), "--out", str(out)]) == 3
    err = capsys.readouterr().err
    assert err.splitlines()[0].endswith(str(out / "netsleuth-error.log"))
    assert "KeyError" in (out / "netsleuth-error.log").read_text()


def test_user_errors_stay_exit_2_and_findings_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["invariants", str(tmp_path / "missing.jsonl")]) == 2
    one_error_line(capsys.readouterr().err)
    a = tiny_trace(tmp_path / "a.jsonl")
    assert main(["diff", str(a), str(a)]) == 0


def test_jobs_called_directly_refuse_an_out_that_is_a_file(tmp_path: Path) -> None:
    """The same check guards the job functions, for callers that skip the command line."""
    from netsleuth.jobs.minimize import MinimizeOptions, run_minimize
    from netsleuth.jobs.replay import ReplayOptions, replay
    from netsleuth.options import OptionError

    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    trace = tiny_trace(tmp_path / "t.jsonl")
    for call in (lambda: replay(ReplayOptions(trace=trace, out=a_file)),
                 lambda: run_minimize(MinimizeOptions(trace=trace, out=a_file))):
        with pytest.raises(OptionError) as e:
            call()
        assert "is an existing file" in e.value.problem and e.value.exit_code == 2
