"""The coverage a replay leaves on disk, and the spectrum read back from many replays.

Each measured controller process writes its lines as JSON when it stops
(controllers/covlaunch.py), one file per process start under the replay's
``coverage/``.  :func:`write_replay_coverage` merges them into the replay's
``coverage.json`` together with its verdict (reproduced or not), and
:func:`load_runs` turns a set of those files into the runs of a spectrum,
keeping only the controller's own code unless ``all_code``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netsleuth.errors import NetsleuthError
from netsleuth.localize.crash import FailingCall
from netsleuth.localize.spectrum import Line, Run
from netsleuth.localize.windows import ControllerMessage, failing_windows, raising_windows, window_runs

COVERAGE_FILE = "coverage.json"


def merge_process_files(folder: Path) -> dict[str, Any]:
    """The union of the lines every process start under ``folder`` wrote, and what was lost."""
    lines: dict[str, set[int]] = {}
    own: set[str] = set()
    framework: set[str] = set()
    windows: list[dict[str, Any]] = []
    sent: list[list[Any]] = []
    windowed = True
    processes = lost = 0
    for marker in sorted(Path(folder).glob("*.json.run")):
        if not marker.with_suffix("").exists():
            lost += 1  # switched to counting, but never wrote its lines: killed (an injected crash)
    for f in sorted(Path(folder).glob("*.json")):
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError):
            lost += 1
            continue
        processes += 1
        windowed = windowed and "windows" in data
        stem = f.name[:-len(".json")]
        windows += [{"key": f"{stem}:{w['id']}", "event": w.get("event", ""), "lines": w.get("lines", {}),
                     **({"raised": w["raised"], "frames": w.get("frames", [])} if w.get("raised") else {}),
                     **({"flows": [[f, n, f"{stem}:{k}", g, m] for f, n, k, g, m in w["flows"]]}
                        if w.get("flows") else {}),
                     **({"guards": w["guards"]} if w.get("guards") else {})}
                    for w in data.get("windows", [])]
        sent += [[dpid, xid, f"{stem}:{w}"] for dpid, xid, w in data.get("sent", [])]
        own.update(data.get("own", []))
        framework.update(data.get("framework", []))
        for name, nums in data.get("lines", {}).items():
            lines.setdefault(name, set()).update(nums)
    merged = {"processes": processes, "lost": lost, "own": sorted(own), "framework": sorted(framework),
              "lines": {name: sorted(nums) for name, nums in sorted(lines.items())}}
    if windowed and processes:
        merged |= {"windows": windows, "sent": sent}
    return merged


def write_replay_coverage(replay_dir: Path, reproduced: bool | None, inputs: int) -> Path | None:
    """Merge the replay's per-process files into ``replay_dir/coverage.json`` with its verdict."""
    folder = Path(replay_dir) / "coverage"
    if not folder.is_dir():
        return None
    merged = merge_process_files(folder)
    if not merged["processes"]:
        return None
    record = {"reproduced": reproduced, "inputs": inputs, **merged}
    path = Path(replay_dir) / COVERAGE_FILE
    path.write_text(json.dumps(record, sort_keys=True) + "\n")
    return path


def under_roots(path: str, roots: list[str]) -> bool:
    """Whether ``path`` is one of ``roots`` (files) or lies inside one (folders)."""
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


@dataclass
class Spectrum:
    """Runs read from replays' coverage files, with where they came from."""

    runs: list[Run] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)   # the coverage.json of each run, in order
    own: list[str] = field(default_factory=list)
    framework: list[str] = field(default_factory=list)
    lost_processes: int = 0
    skipped: int = 0  # replays without a verdict


def load_runs(paths: list[Path], *, all_code: bool = False) -> Spectrum:
    """Runs from ``coverage.json`` files: the controller's own code only, or all measured code."""
    records = []
    spectrum = Spectrum()
    for p in paths:
        data = json.loads(Path(p).read_text())
        if data.get("reproduced") is None:
            spectrum.skipped += 1
            continue
        records.append((str(p), data))
        spectrum.own = sorted(set(spectrum.own) | set(data.get("own", [])))
        spectrum.framework = sorted(set(spectrum.framework) | set(data.get("framework", [])))
        spectrum.lost_processes += int(data.get("lost", 0))
    for source, data in records:
        keep: set[Line] = set()
        for name, nums in data.get("lines", {}).items():
            if all_code or under_roots(name, spectrum.own):
                keep.update((name, n) for n in nums)
        spectrum.runs.append(Run(bool(data["reproduced"]), frozenset(keep)))
        spectrum.sources.append(source)
    return spectrum


def _replay_messages(replay_dir: Path) -> tuple[list[ControllerMessage], dict[str, int]]:
    """The replay's controller->switch messages and its switches' dpids, from its trace."""
    from netsleuth.trace.io import read_trace
    from netsleuth.trace.schema import ControlToSwitch

    trace = read_trace(replay_dir / "trace.jsonl")
    dpids = {str(s["name"]): int(s["dpid"]) for s in trace.header.topology.get("switches", [])}
    messages = [ControllerMessage(e.dpid, int(e.msg.get("xid") or 0), str(e.msg.get("type", "")),
                                  e.msg.get("body") or {})
                for e in trace.events if isinstance(e, ControlToSwitch)]
    return messages, dpids


def load_window_runs(paths: list[Path], target: dict[str, Any] | None, *, all_code: bool = False) -> Spectrum | None:
    """Runs per handler call (see localize/windows.py), or None when some replay cannot be split: its
    controller has no windows (neither os-ken nor POX), its trace is gone or no window of a failing replay is known
    to have sent the violation's rule."""
    if not target:
        return None
    whole = load_runs(paths, all_code=all_code)
    spectrum = Spectrum(own=whole.own, framework=whole.framework, lost_processes=whole.lost_processes,
                        skipped=whole.skipped)

    def keep(name: str) -> bool:
        return all_code or under_roots(name, spectrum.own)

    for source in whole.sources:
        data = json.loads(Path(source).read_text())
        if "windows" not in data:
            return None
        bad: set[str] = set()
        if data["reproduced"]:
            try:
                messages, dpids = _replay_messages(Path(source).parent)
            except (OSError, ValueError, NetsleuthError):
                return None
            sent_by = {(int(d), int(x)): str(w) for d, x, w in data.get("sent", [])}
            bad = raising_windows(data["windows"], target) or failing_windows(sent_by, messages, target, dpids)
            if not bad:
                return None
        for run in window_runs(data["windows"], bad, keep):
            spectrum.runs.append(run)
            spectrum.sources.append(source)
    return spectrum


def load_raising_calls(paths: list[Path], target: dict[str, Any] | None, *,
                       all_code: bool = False) -> tuple[list[FailingCall], list[str]]:
    """The handler calls of reproducing replays that the violation's exception escaped (see localize/crash.py),
    and the controller's own code roots; none for another violation or a controller without windows."""
    calls: list[FailingCall] = []
    own: set[str] = set()
    for p in paths:
        data = json.loads(Path(p).read_text())
        own.update(data.get("own", []))
        if not data.get("reproduced") or not target:
            continue
        bad = raising_windows(data.get("windows", []), target)
        for w in data.get("windows", []):
            if w["key"] not in bad:
                continue
            lines = frozenset((f, int(n)) for f, nums in (w.get("lines") or {}).items() for n in nums)
            guards = frozenset(((a, int(n)), (b, int(m))) for a, n, b, m in w.get("guards") or ())
            flows = frozenset(((a, int(n)), (b, int(m))) for a, n, _, b, m in w.get("flows") or ())
            frames = tuple((str(f), int(n)) for f, n in w.get("frames") or ())
            calls.append(FailingCall(lines, guards, flows, frames))
    roots = sorted(own)
    if not all_code:
        def mine(line: Line) -> bool:
            return under_roots(line[0], roots)
        calls = [FailingCall(frozenset(filter(mine, c.lines)),
                             frozenset(g for g in c.guards if mine(g[0]) and mine(g[1])),
                             frozenset(f for f in c.flows if mine(f[0]) and mine(f[1])), c.frames) for c in calls]
    return calls, roots


__all__ = ["COVERAGE_FILE", "Spectrum", "load_raising_calls", "load_runs", "load_window_runs", "merge_process_files",
           "under_roots", "write_replay_coverage"]
