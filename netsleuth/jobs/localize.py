"""`netsleuth localize MINIMIZE_OUT` and `minimize --localize`: from the minimal trace to the line of code.

Minimization replays many subsets of one run's inputs; some bring the
violation back and some do not.  With coverage on, each replay leaves the
controller's executed lines beside its verdict (``coverage.json``, see
localize/collect.py), which is the pass/fail spectrum spectrum-based fault
localization ranks lines with (localize/spectrum.py).  When the replays the
minimizer ran are too few to separate lines (no passing run, or every
candidate line with the same counts), this job adds replays that differ from
the MCS in exactly one input: the MCS itself, the MCS without each of its
atoms (by 1-minimality those pass) and the MCS with two neighbouring inputs
swapped where happens-before allows (neither depends on the other).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netsleuth.controllers.measure import measurable
from netsleuth.controllers.spec import controllers_for_trace
from netsleuth.errors import NetsleuthError, TraceFormatError
from netsleuth.jobs.replay import find_target, replay_once
from netsleuth.localize.collect import (
    COVERAGE_FILE,
    Spectrum,
    load_raising_calls,
    load_runs,
    load_window_runs,
    under_roots,
)
from netsleuth.localize.crash import KIND as EXCEPTION_SLICE
from netsleuth.localize.crash import FailingCall, exception_ranking, own_frames
from netsleuth.localize.source import (
    by_statement,
    context,
    execution_order,
    function_of,
    line_text,
    short_path,
    statement,
)
from netsleuth.localize.spectrum import FORMULAS, Ranking, UnknownFormulaError, counts, rank, score_json
from netsleuth.minimize.atoms import Atoms
from netsleuth.trace.controller_spec import ControllerSpec, join_all
from netsleuth.trace.io import read_trace
from netsleuth.trace.schema import InputEvent

NOT_PYTHON = "localization needs a Python controller (os-ken, Ryu, Faucet, POX or a cmd: Python program)"


class NotPythonControllerError(NetsleuthError):
    """The controller's lines cannot be measured: it is not a Python program netsleuth launches."""


@dataclass
class LocalizeOptions:
    minimize_out: Path
    formula: str = "ochiai"
    all_code: bool = False
    top: int = 10
    extra_replays: bool = True        # add the MCS and MCS-minus-one replays when the spectrum is thin
    controller: list[str] | None = None
    trust_trace_controller: bool = False
    epsilon: float = 0.1
    spectrum: str = "auto"            # "windows": per handler call, "replays": per replay, "auto": windows if known


def python_controllers(header_controller: str, override: list[str] | None, *, trust: bool,
                       source: str) -> list[ControllerSpec]:
    """The controller specs of the minimization, or NotPythonControllerError when none can be measured."""
    specs = controllers_for_trace(header_controller, override, trust=trust, source=source)
    if not any(measurable(s) for s in specs):
        raise NotPythonControllerError(f"{NOT_PYTHON}; {join_all(specs)} is not one",
                                       "run minimize without --localize, or use a Python controller")
    return specs


def coverage_files(minimize_out: Path) -> list[Path]:
    """Every replay's coverage under a minimization's output (the minimizer's and this job's), in order."""
    return sorted(Path(minimize_out).glob(f"*/w*/*/{COVERAGE_FILE}"))


SPECTRA = ("auto", "windows", "replays")


def load_spectrum(out: Path, target: dict | None, opts: LocalizeOptions) -> tuple[Spectrum, str]:
    """The runs to rank with, and what a run is: one whole replay ("replays") or one handler call
    ("handler calls", when the controller recorded its handler windows and each failing replay's window
    that sent the violation's rule is known).

    Lines are folded into the statements they belong to: one statement is one candidate.

    ``auto`` ranks with handler calls when whole replays cannot separate lines, or when they can but
    only down to lines that are mostly the failing calls' (more than half of their first block), which
    the calls tell apart better (a smaller first block): a fault in a handler every replay runs.
    When whole replays point mostly at lines no failing call ran, they win: the call that sent the
    violation's rule is where a wrong rule was made, not where a missing one (a flow delete a
    port-status handler forgot) should have been, and whole replays, which differ in the inputs that
    run that other handler, see it.
    """
    files = coverage_files(out)
    whole = load_runs(files, all_code=opts.all_code)
    windows = None if opts.spectrum == "replays" else load_window_runs(files, target, all_code=opts.all_code)
    for spectrum in (whole, windows):   # one candidate per statement (see localize.source.statement_of)
        if spectrum is not None:
            spectrum.runs = by_statement(spectrum.runs)
    if windows is None or not any(r.failed for r in windows.runs):
        return whole, "replays"
    if opts.spectrum == "windows" or _windows_refine(whole, windows):
        return windows, "handler calls"
    return whole, "replays"


def ranked(out: Path, target: dict | None, opts: LocalizeOptions) -> tuple[Spectrum, str, Ranking]:
    """The spectrum :func:`load_spectrum` chooses, what a run is, and its ranking; for an exception the
    spectrum cannot rank (one failing call, none passing that ran its handler), the exception's slice
    (localize/crash.py) instead."""
    spectrum, kind = load_spectrum(out, target, opts)
    ranking = _rank(spectrum, opts.formula)
    if not ranking.separable and (target or {}).get("invariant") == "exceptions":
        sliced = _exception_slice(out, target, opts, spectrum, ranking)
        if sliced is not None:
            return spectrum, EXCEPTION_SLICE, sliced
    return spectrum, kind, ranking


def _exception_slice(out: Path, target: dict | None, opts: LocalizeOptions, spectrum: Spectrum,
                     ranking: Ranking) -> Ranking | None:
    calls, own = load_raising_calls(coverage_files(out), target, all_code=opts.all_code)
    calls = [FailingCall(frozenset(map(statement, c.lines)),
                         frozenset((statement(a), statement(b)) for a, b in c.guards),
                         frozenset((statement(a), statement(b)) for a, b in c.flows), c.frames) for c in calls]

    def mine(path: str) -> bool:
        return opts.all_code or under_roots(path, own)

    # the traceback the replays' controller recorded (its paths), else the violation's (the recording's paths)
    recorded = next((c.frames for c in calls if c.frames), None)
    frames = own_frames(recorded or ((target or {}).get("details") or {}).get("frames") or [], mine,
                        lambda f, n: statement((os.path.realpath(f), n)))
    order = execution_order(sorted({line for c in calls for line in c.lines}))
    exception = str(((target or {}).get("details") or {}).get("exception") or "").rsplit(".", 1)[-1]
    return exception_ranking(calls, frames, counts(spectrum.runs), opts.formula,
                             lambda line: order.get(line, (0, *line)), ranking.failing, ranking.passing,
                             missing_key=exception == "KeyError")


def _first_block(ranking: Ranking) -> set:
    return {(r.file, r.line) for r in ranking.lines if r.block == 1}


def _windows_refine(whole: Spectrum, windows: Spectrum) -> bool:
    """Whether the handler calls sharpen what whole replays say (see :func:`load_spectrum`)."""
    by_replay, by_call = rank(whole.runs), rank(windows.runs)
    if not by_call.separable:
        return False
    if not by_replay.separable:
        return True
    ran = set().union(*(r.lines for r in windows.runs if r.failed))
    top = _first_block(by_replay)
    return 2 * len(top & ran) > len(top) and len(_first_block(by_call)) < len(top)


def thin(spectrum: Spectrum, ranking: Ranking) -> bool:
    return not ranking.separable or ranking.passing < 2 or ranking.failing < 2


def localize(opts: LocalizeOptions, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Rank the controller's lines for a finished minimization; write ``localize.json`` and update its
    result.json and report.html."""
    if opts.formula not in FORMULAS:
        raise UnknownFormulaError(opts.formula)
    out = Path(opts.minimize_out)
    result_path = out / "result.json"
    if not result_path.is_file():
        raise TraceFormatError(f"{out} has no result.json of a minimization",
                               "pass the --out folder of `netsleuth minimize`")
    result = json.loads(result_path.read_text())
    trace_path = Path(result.get("trace_path") or result.get("trace", ""))
    if not trace_path.is_file():
        raise TraceFormatError(f"the trace {trace_path} the minimization ran on is gone",
                               "localize on the machine and folder where minimize ran")
    header = read_trace(trace_path).header
    controllers = python_controllers(header.controller, opts.controller, trust=opts.trust_trace_controller,
                                     source=str(trace_path))
    spectrum, kind, ranking = ranked(out, result.get("target"), opts)
    added = 0
    if opts.extra_replays and thin(spectrum, ranking) and (out / "mcs.jsonl").is_file():
        persist = int(header.extra.get("persist", 3) or 3)
        added = _extra_replays(out, result, trace_path, controllers, opts.epsilon, persist, opts.all_code, progress)
        spectrum, kind, ranking = ranked(out, result.get("target"), opts)
    data = ranking_json(ranking, spectrum, top=opts.top, all_code=opts.all_code, added=added)
    data["spectrum"] = kind
    if opts.all_code and not _framework_measured(spectrum):
        data["framework_note"] = ("the framework's lines were not measured in these replays: "
                                  "minimize --localize --all-code measures them")
    (out / "localize.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    result["localize"] = data
    from netsleuth.jobs.minimize_report import write_report

    result["report"] = write_report(out, result)
    result_path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    return data


def _framework_measured(spectrum: Spectrum) -> bool:
    roots = [r.rstrip("/") + "/" for r in spectrum.framework]
    own = [r.rstrip("/") for r in spectrum.own]
    return any(f.startswith(tuple(roots)) and not f.startswith(tuple(own))
               for run in spectrum.runs for f, _ in run.lines)


def _rank(spectrum: Spectrum, formula: str) -> Ranking:
    """Rank with tied blocks in execution order as the source tells it (callers before callees)."""
    order = execution_order(sorted({line for run in spectrum.runs if run.failed for line in run.lines}))
    return rank(spectrum.runs, formula, order=lambda line: order.get(line, (0, *line)))


def reorderings(mcs: list[InputEvent]) -> list[list[InputEvent]]:
    """The MCS with each pair of neighbouring inputs swapped, where happens-before allows it: neither input
    depends on the other (a recovery stays after its failure, a host's moves stay in order). The swapped
    inputs trade their positions in the recording (``seq``, ``t``), so the replay's spacing and its waits for
    recorded messages stay those of the original."""
    out = []
    for i in range(len(mcs) - 1):
        a, b = mcs[i], mcs[i + 1]
        if a.id in b.deps or b.id in a.deps:
            continue
        swapped = [dataclasses.replace(b, seq=a.seq, t=a.t), dataclasses.replace(a, seq=b.seq, t=b.t)]
        out.append([*mcs[:i], *swapped, *mcs[i + 2:]])
    return out


def _extra_replays(out: Path, result: dict, trace_path: Path, controllers: list[ControllerSpec], epsilon: float,
                   persist: int, framework: bool, progress: Callable[[str], None] | None) -> int:
    """Replay the MCS, the MCS without each of its atoms and its reorderings, with coverage; how many ran."""
    trace = read_trace(trace_path)
    target = find_target(trace.events, int(result.get("violation", 0) or 0))
    mcs = [e for e in read_trace(out / "mcs.jsonl").events if isinstance(e, InputEvent)]
    atoms = Atoms(mcs)
    everything = tuple(range(len(atoms)))
    keys = [everything] + [tuple(i for i in everything if i != k) for k in everything]
    candidates = [list(atoms.materialize(key)) for key in keys] + reorderings(mcs)
    for n, inputs in enumerate(candidates, 1):
        if progress is not None:
            progress(f"localize: replay {n}/{len(candidates)} ({len(inputs)} of {len(mcs)} MCS inputs)")
        replay_once(trace.header, trace.events, out / "localize" / "w0" / f"replay-{n}", inputs=inputs,
                    target=target, controller=controllers, epsilon=epsilon, persist=persist, record_packets=False,
                    max_gap=0.05, openflow=result.get("openflow"), coverage=True, coverage_framework=framework)
    return len(candidates)


def ranking_json(ranking: Ranking, spectrum: Spectrum, *, top: int, all_code: bool, added: int = 0) -> dict:
    """The ranking for result.json, the report and the terminal: the top lines with their source, by function."""
    lines = []
    for r in ranking.lines[:top] if ranking.separable else ():   # a spectrum that cannot rank gives no ranking
        lines.append({"file": r.file, "short": short_path(r.file), "line": r.line, "rank": r.rank, "tied": r.tied,
                      "block": r.block,
                      "score": score_json(r.score), "failing": r.counts.ef, "passing": r.counts.ep,
                      "function": function_of(r.file, r.line), "source": line_text(r.file, r.line),
                      "context": [[n, text] for n, text in context(r.file, r.line)],
                      **({"read_at": {"file": r.read_at[0], "short": short_path(r.read_at[0]), "line": r.read_at[1],
                                      "source": line_text(*r.read_at)}} if r.read_at else {})})
    groups: dict[tuple[str, str], list[dict]] = {}
    for item in lines:
        groups.setdefault((str(item["short"]), str(item["function"])), []).append(item)
    message = "" if ranking.separable else f"not enough passing runs to rank: {ranking.reason}"
    return {"formula": ranking.formula, "failing": ranking.failing, "passing": ranking.passing,
            "runs": len(spectrum.runs), "added_replays": added, "separable": ranking.separable,
            "message": message, "scope": "all measured code" if all_code else "the controller's own code",
            "own": spectrum.own, "candidates": len(ranking.lines),
            "blocks": ranking.lines[-1].block if ranking.lines else 0, "lost_processes": spectrum.lost_processes,
            "top": lines,
            "groups": [{"file": f, "function": fn, "lines": [i["line"] for i in items]}
                       for (f, fn), items in groups.items()]}


__all__ = ["SPECTRA", "LocalizeOptions", "load_spectrum", "ranked", "NOT_PYTHON", "NotPythonControllerError",
           "coverage_files", "localize",
           "python_controllers", "ranking_json", "reorderings"]
